-- The server side of the Lua layer: loads plugins, keeps the registry of
-- tools, and serves the methods the C core hands to Lua. Each call runs in
-- its own coroutine: dispatch(method, params, id) returns a result table, or
-- nil, code, message for a JSON-RPC error.
local core = require "mcp.core"
local mcp = require "mcp"
local schema = require "mcp.schema"

local M = {}
local tools, tool_list = {}, {}

local function log(level, fmt, ...)
  core.log_stderr(level, string.format(fmt, ...))
end

local function register(plugin, path)
  for _, tool in ipairs(plugin.tools) do
    if tools[tool.name] then
      error(string.format("tool %q is already defined by plugin %q", tool.name, tools[tool.name].plugin.name), 0)
    end
  end
  local d = plugin.defaults
  for _, tool in ipairs(plugin.tools) do
    tool.plugin = plugin
    tools[tool.name] = tool
    tool_list[#tool_list + 1] = tool
    core.set_policy(tool.name,
      tool.cancel or d.cancel or "cooperative",
      tool.timeout or d.timeout or core.config.timeout,
      tool.grace or d.grace or core.config.grace,
      plugin.name)
  end
  log("info", "loaded plugin %s from %s (%d tools)", plugin.name, path, #plugin.tools)
end

local function load_file(path)
  local env = setmetatable({}, { __index = _G })
  local chunk, err = loadfile(path, "t", env)
  if not chunk then return nil, err end
  local ok, plugin = xpcall(chunk, debug.traceback)
  if not ok then return nil, plugin end
  if not mcp.is_plugin(plugin) then
    return nil, path .. ": a plugin file must return mcp.plugin{...}"
  end
  ok, err = pcall(register, plugin, path)
  if not ok then return nil, path .. ": " .. err end
  return plugin
end

-- load{dir, ...}: every dir/*.lua, in name order. A broken plugin is logged
-- and skipped; the others still load.
function M.load(dirs)
  for _, dir in ipairs(dirs) do
    package.path = dir .. "/lib/?.lua;" .. dir .. "/lib/?/init.lua;" .. package.path
  end
  for _, dir in ipairs(dirs) do
    local files, err = core.listdir(dir)
    if not files then
      log("warning", "plugins: %s", err)
    else
      for _, name in ipairs(files) do
        local _, lerr = load_file(dir .. "/" .. name)
        if lerr then log("error", "plugin not loaded: %s", lerr) end
      end
    end
  end
end

local methods = {}
M.methods = methods

function methods.tools_list(params)
  local start = 1
  if params.cursor ~= nil then
    start = type(params.cursor) == "string" and tonumber(params.cursor:match("^%d+$") or "")
    if not start or start < 1 or start > #tool_list + 1 then
      return nil, -32602, "Invalid params: invalid cursor"
    end
  end
  local page, stop = mcp.array(), math.min(#tool_list, start + core.config.page_size - 1)
  for i = start, stop do
    local t = tool_list[i]
    page[#page + 1] = {
      name = t.name, title = t.title, description = t.description,
      inputSchema = t.inputSchema, outputSchema = t.outputSchema, annotations = t.annotations,
    }
  end
  return { tools = page, nextCursor = stop < #tool_list and tostring(stop + 1) or nil }
end

-- What a handler returned, as a CallToolResult.
local function is_content_list(t)
  if #t == 0 then return false end
  for _, item in ipairs(t) do
    if type(item) ~= "table" or type(item.type) ~= "string" then return false end
  end
  return true
end

local function normalize(res)
  local t = type(res)
  if res == nil then return { content = mcp.array() } end
  if t == "string" or t == "number" or t == "boolean" then return mcp.text(tostring(res)) end
  if t ~= "table" then return mcp.error("handler returned a " .. t) end
  if res.content ~= nil or res.structuredContent ~= nil or res.isError ~= nil then
    if res.content == nil then
      res.content = mcp.array()
      if res.structuredContent ~= nil then
        res.content[1] = { type = "text", text = core.encode(res.structuredContent) }
      end
    elseif not mcp.is_array(res.content) then
      mcp.array(res.content)
    end
    return res
  end
  if is_content_list(res) then return { content = mcp.array(res) } end
  local text, err = core.encode(res)
  if not text then return mcp.error("result cannot be encoded: " .. err) end
  return { content = mcp.array { { type = "text", text = text } }, structuredContent = res }
end

-- The checks before a handler runs: tool, args; or nil, code, message for a
-- JSON-RPC error; or false, result for an isError result. A frame of its own,
-- so that the handler's coroutine stack stays small (10,000 may be waiting).
local function prepare(params)
  local name = params.name
  if type(name) ~= "string" then return nil, -32602, "Invalid params: name must be a string" end
  local tool = tools[name]
  if not tool then return nil, -32602, "Unknown tool: " .. name end
  local args = params.arguments
  if args == nil then args = {} end
  if type(args) ~= "table" or mcp.is_array(args) then
    return nil, -32602, "Invalid params: arguments must be an object"
  end
  local ok, err = schema.validate(tool.inputSchema, args)
  if not ok then return false, mcp.error("Invalid arguments: " .. err) end
  return tool, args
end

-- The handler runs unprotected: an error (or ctx:check()'s cancellation)
-- ends the coroutine, and the C core turns it into an isError result (or no
-- response, once cancelled). No pcall here, so that <close> variables of an
-- aborted handler run when the core resets the coroutine, under its limits.
function methods.tools_call(params, id, session)
  local tool, args, msg = prepare(params)
  if not tool then
    if tool == nil then return nil, args, msg end
    return args
  end
  params = nil                       -- not kept alive while the handler waits
  return normalize(tool.handler(args, mcp._ctx(id, tool.name, session)))
end

methods["tools/list"], methods["tools/call"] = methods.tools_list, methods.tools_call
methods.tools_list, methods.tools_call = nil, nil

function M.dispatch(method, params, id, session)
  return methods[method](params, id, session)
end

-- The capabilities initialize declares, from what the plugins offer.
function M.capabilities()
  return { logging = {}, tools = { listChanged = false } }
end

-- A session ended (its subscriptions go with it).
function M.session_closed(session)
end

M.tools = tools
return M
