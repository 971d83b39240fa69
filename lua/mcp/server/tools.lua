-- The tools family: tools/list, tools/call (its checks and its ctx), the
-- tasks/result of a task-augmented call, and what the transport asks of a
-- tool (its scopes, its Mcp-Param headers).
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local input = require "mcp.input"
local decl = require "mcp.decl"
local reg = require "mcp.server.registry"
local apps = require "mcp.apps"

local M = {}
local methods = reg.methods
local tools, tool_list = reg.tools, reg.tool_list

-- The scopes a tool asks for, read raw: the plugin's list, on the main thread.
local function scopes_of(t)
  local list, scopes = {}, rawget(t, "scopes")
  if type(scopes) ~= "table" then return list end
  for i = 1, rawlen(scopes) do
    local sc = rawget(scopes, i)
    if type(sc) == "string" then list[#list + 1] = sc end
  end
  return list
end

local function tool_entry(t)
  return {
    name = t.name, title = t.title, description = t.description,
    inputSchema = t.inputSchema, outputSchema = t.outputSchema, annotations = t.annotations,
    execution = t.task and { taskSupport = t.task } or nil, icons = t.icons, _meta = t._meta,
  }
end

-- The tools a client that renders no MCP Apps is shown (apps.lua): set by
-- sync_c when some tool only a view may call, else nil. Their entries are
-- then listed here, from the JSON sync_c encoded (tool -> text).
local model_tools, encoded = nil, setmetatable({}, { __mode = "k" })

local function encoded_entry(t)
  local text = encoded[t]
  if text then return core.json_raw(text) end
  return tool_entry(t)
end

function methods.tools_list(params)
  local list, entry = tool_list, tool_entry
  if model_tools then
    entry = encoded_entry
    if not apps.client_renders() then list = model_tools end
  end
  local page, next_cursor, msg = reg.paginate(list, params, entry)
  if not page then return nil, next_cursor, msg end
  return { tools = page, nextCursor = next_cursor }
end

-- The checks before a handler runs: tool, args; or nil, code, message for a
-- JSON-RPC error; or false, result for an isError result. A frame of its own,
-- so that the handler's coroutine stack stays small (10,000 may be waiting).
-- A call that becomes a task is answered here with its task (core.task_create);
-- what follows, the handler's result included, goes to the task. In a
-- session (2025-11-25) the client asks with params.task; for a 2026-07-28
-- request the server decides (the tasks extension): a tool with task support
-- runs as a task when the request declares the extension (a task-only tool
-- without it was refused with -32021 before the call started; one with
-- defer_task starts its task itself, ctx:task()), and params.task is ignored.
local function prepare(params)
  local tool, args, msg = reg.named(params, tools, "Unknown tool: ")
  if not tool then return nil, args, msg end
  local name = tool.name
  -- only a view calls it, through a host that renders apps: to others it is not there
  if model_tools and apps.app_only(tool) and not apps.client_renders() then
    return nil, -32602, "Unknown tool: " .. name
  end
  local task, support = params.task, tool.task or "forbidden"
  -- without the tasks capability (no tool offers tasks), params.task is ignored
  if not methods["tasks/result"] then task = nil end
  if core.rev2026() then                     -- the tasks extension: params.task means nothing
    if not tool.defer_task then
      local ok, err = core.task_create()       -- false: no task support, or the extension is not declared
      if ok == nil then return nil, -32603, "Internal error: " .. err end
    end
  elseif task ~= nil then
    if type(task) ~= "table" or mcp.is_array(task) then
      return nil, -32602, "Invalid params: task must be an object"
    end
    if support == "forbidden" then
      return nil, -32601, "Method not found: tool " .. name .. " does not support task-augmented calls"
    end
    local ok, err = core.task_create(task.ttl)
    if ok == nil then return nil, -32603, "Internal error: " .. err end
  elseif support == "required" then
    return nil, -32601, "Method not found: tool " .. name .. " must be called as a task (params.task)"
  end
  if tool.mounted then return tool, args end    -- the upstream checks its arguments
  local ok, err = core.validate(tool.inputSchema, args)   -- compiled once per schema (schema.c)
  if not ok then return false, mcp.error("Invalid arguments: " .. err) end
  return tool, args
end

-- No pcall here: an error (or ctx:check()'s cancellation) reaches the one at
-- the bottom of the coroutine (sched.c's run), which runs the handler's
-- <close> variables under the limits of an abort, and the C core turns it
-- into an isError result (or no response, once cancelled).
--
-- The setup (open_call: argument checks, the ctx) runs on the main thread
-- (core.on_main): it goes deeper than the handler's waits, and on the
-- coroutine it would double the stack every waiting call keeps (Lua grows a
-- stack past its first 40 slots to 80 and keeps it while in use).
local function open_call(params, id, ctx)
  local tool, args, msg = prepare(params)
  if not tool then
    if tool == nil then return nil, args, msg end
    return false, args
  end
  ctx = ctx or decl.ctx(id)             -- a middleware chain's (server/middleware.lua), else its own
  if tool.scopes then                -- the transport answered 403 already; this is for any other way in
    local auth = ctx.auth
    if auth then
      local have = {}
      for _, sc in ipairs(auth.scopes) do have[sc] = true end
      for _, sc in ipairs(scopes_of(tool)) do
        if not have[sc] then return nil, -32600, "Forbidden: insufficient scope (needs " .. sc .. ")" end
      end
    end
  end
  local ok, code, emsg = input.open(ctx, "tools/call", params, tool.name, args)
  if not ok then return nil, code, emsg end
  return tool, args, ctx
end

function methods.tools_call(params, id, _, ctx)
  local tool, args
  tool, args, ctx = core.on_main(open_call, params, id, ctx)
  if not tool then
    if tool == nil then return nil, args, ctx end
    return args                      -- an isError result
  end
  params = nil                       -- not kept alive while the handler waits
  return outcome.tool(tool, tool.handler(args, ctx))
end

-- What the C path (src/lua/fastpath.c) serves from, handed over at every
-- registry change: each tool's handler, schema and policy, and its
-- tools/list entry encoded once.
function M.sync_c()
  local list = {}
  model_tools = nil
  for _, t in ipairs(tool_list) do
    if apps.app_only(t) then model_tools = apps.model_tools(tool_list) break end
  end
  for i, t in ipairs(tool_list) do
    local app_only = apps.app_only(t)      -- Lua asks whether the client renders apps
    local entry = core.encode(tool_entry(t))
    encoded[t] = entry
    list[i] = {
      name = t.name, tool = t, handler = t.handler,
      schema = not t.mounted and t.inputSchema or nil,      -- the upstream checks a mounted tool's
      output = t.outputSchema ~= nil and not t.mounted,
      lua_only = t.task == "required" or app_only, scopes = t.scopes ~= nil,
      tasks = t.task ~= nil and t.task ~= "forbidden",
      forward = t.mounted and t.forward,       -- its arguments may stay JSON text (mount.lua)
      upstream = t.mounted and t.forward and t.upstream or nil,   -- and C may forward its call
      -- nil: tools/list stays Lua's (which says why, or lists by client)
      entry = not model_tools and entry or nil,
    }
  end
  core.fast_tools(list, getmetatable(decl.ctx(0)), outcome.tool, input.open)
end

-- The Mcp-Param headers (x-mcp-header) of a tool, for the HTTP transport's
-- check of a 2026-07-28 tools/call: a list of {name =, path =}, or nil.
-- The scopes a tool asks for (--auth-*), space-separated, or nil; with no
-- name, every tool's (scopes_supported), or nil.
function M.tool_scopes(name)
  if name == nil then
    local seen, all = {}, {}
    for _, t in ipairs(tool_list) do
      for _, sc in ipairs(scopes_of(t)) do
        if not seen[sc] then seen[sc], all[#all + 1] = true, sc end
      end
    end
    table.sort(all)
    return #all > 0 and table.concat(all, " ") or nil
  end
  local tool = tools[name]
  local list = tool and scopes_of(tool)
  return list and #list > 0 and table.concat(list, " ") or nil
end

function M.param_headers(name)
  local tool = tools[name]
  return tool and decl.param_headers[tool]
end

-- tasks/result (2025-11-25) waits until the task is terminal; tasks/get,
-- tasks/list, tasks/cancel and the extension's tasks/update are answered by
-- the C core (task.c).
methods["tasks/result"] = function(params)
  if type(params.taskId) ~= "string" then return nil, -32602, "Invalid params: taskId must be a string" end
  return core.task_result(params.taskId)
end

methods["tools/list"], methods["tools/call"] = methods.tools_list, methods.tools_call
methods.tools_list, methods.tools_call = nil, nil

return M
