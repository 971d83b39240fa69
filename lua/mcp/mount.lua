-- Mounting a server (a gateway in one line):
--
--   mcp.plugin { name = "up", mount = { command = {...} or url = "...",
--     prefix = "up_", tools = {"a", "b"} or function(tool) return keep end,
--     timeout =, cancel =, grace =, wrap = function(name, args, ctx, call) ... end } }
--
-- The upstream's tools, resources and prompts become the plugin's own: tool
-- and prompt names (and resource names) prefixed, URIs kept, schemas and
-- annotations passed through, calls forwarded (mcp.connect's client, with
-- the calling request's progress, cancellation and requests to its client).
-- What the upstream offers is fetched inside a call, when a client lists
-- (or names something not known yet; server.lua's dispatch), and fetched
-- again after the upstream says its lists changed (re-announced to our
-- clients) or after a reconnect.
local core = require "mcp.core"
local await = require "mcp.await"

local M = {}
local states = setmetatable({}, { __mode = "k" })  -- plugin -> mount state

local FIELDS = {
  command = true, url = true, env = true, cwd = true, headers = true, protocol = true,
  connect_timeout = true, prefix = true, tools = true, resources = true, prompts = true,
  timeout = true, cancel = true, grace = true, wrap = true, call_timeout = true, stderr = true,
}
local RETRY = 2                                -- seconds between failed fetches
local LIST_OF = { tool = "tools", resource = "resources", template = "resources", prompt = "prompts" }

local function log(level, fmt, ...) core.log_stderr(level, string.format(fmt, ...)) end

local function list_copy(t)
  local c = {}
  for i, v in ipairs(t or {}) do c[i] = v end
  return c
end

function M.of(plugin) return states[plugin] end

-- The upstream's JSON-RPC error object in a client call's failure (nil,
-- message, "rpc", error object), or nil.
local function rpc_object(code, obj)
  if code == "rpc" and type(obj) == "table" and math.type(obj.code) == "integer" then return obj end
end

-- A tool call's outcome as a handler's return: the upstream's result as
-- is, its JSON-RPC error as ours, anything else an isError result.
function M.result(res, msg, code, obj)
  if res ~= nil then return res end
  local mcp = require "mcp"
  local e = rpc_object(code, obj)
  if e then return mcp.rpc_error(e.code, tostring(e.message or msg), e.data) end
  if code == "cancelled" then return nil end   -- no response goes out anyway
  return mcp.error(msg or "the upstream failed")
end

-- What forward.c's call gives the handler when it is not the upstream's
-- result passed on: the line of another response, or why it ended ("closed",
-- "cancelled"). An input_required result goes to the handler, whose
-- client.lua answers its rounds from it (the request is not sent again).
core.forward_outcome(function(handler, up, args, ctx, line, kind, t0)
  local msg = line
  if kind == "line" then
    msg = core.decode_response(line) or core.decode(line)
    local r = msg.result
    if msg.error == nil and (msg.result_type == "input_required"
                             or type(r) == "table" and r.resultType == "input_required") then
      return handler(args, ctx, core.decode(line))
    end
  end
  return M.result(require("mcp.client").forwarded(up.what, up.name, msg, kind, t0 / 1e9))
end)

local function notified(st, method, params)
  if method == "notifications/tools/list_changed" or method == "notifications/resources/list_changed"
     or method == "notifications/prompts/list_changed" then
    st.stale = true
    core.notify(nil, method)
  elseif method == "notifications/resources/updated" and type(params.uri) == "string" then
    require("mcp.server").notify_resource_updated(params.uri)
  elseif method == "connected" then            -- a reconnect: the lists may differ
    st.stale = true
    core.notify(nil, "notifications/tools/list_changed")
  end
end

-- mcp.plugin{mount = ...}: checks it and makes the plugin's client (no I/O).
function M.attach(p, where)
  local decl = require "mcp.decl"
  local m = p.mount
  if type(m) ~= "table" then return decl.problem(where .. ": mount must be a table", "mount") end
  decl.fields(m, FIELDS, where, "mount.")
  local function bad(k, msg) decl.problem(where .. ": mount." .. k .. msg, "mount." .. k) end
  if m.prefix ~= nil and type(m.prefix) ~= "string" then bad("prefix", " must be a string") end
  if m.tools ~= nil and type(m.tools) ~= "table" and type(m.tools) ~= "function" then
    bad("tools", " must be a list of tool names or a function(tool)")
  end
  if m.wrap ~= nil and type(m.wrap) ~= "function" then bad("wrap", " must be a function") end
  for _, k in ipairs { "timeout", "cancel", "grace" } do
    if m[k] ~= nil and p.defaults[k] == nil then p.defaults[k] = m[k] end
  end
  local keep = m.tools
  if type(keep) == "table" then
    local set = {}
    for _, n in ipairs(keep) do set[n] = true end
    keep = function(tool) return set[tool.name] end
  end
  local st = {
    prefix = m.prefix or "", keep = keep, wrap = m.wrap, call_timeout = m.call_timeout,
    timeout = p.defaults.timeout,
    resources = m.resources ~= false, prompts = m.prompts ~= false,
    own = { tools = list_copy(p.tools), resources = list_copy(p.resources), prompts = list_copy(p.prompts) },
    stale = true, retry_at = 0, plugin = p,
  }
  local ok, client = pcall(require("mcp.client").connect, {
    command = m.command, url = m.url, env = m.env, cwd = m.cwd, headers = m.headers,
    protocol = m.protocol, connect_timeout = m.connect_timeout, stderr = m.stderr, name = p.name,
    on_notification = function(method, params) notified(st, method, params) end,
    -- a host of MCP Apps toward the upstream: its UI-only tools are listed to us, and we
    -- list them to our clients by theirs (apps.lua)
    capabilities = { sampling = {}, elicitation = {}, roots = {}, extensions = {
      ["io.modelcontextprotocol/ui"] = { mimeTypes = { "text/html;profile=mcp-app" } } } },
  })
  if not ok then
    return decl.problem(where .. ": mount: " .. tostring(client):gsub("^[^\n]-mcp%.connect: ", ""), "mount")
  end
  client.sandbox = p.name                      -- its HTTP held to p's http grant if p is sandboxed (client_http.lua)
  st.client = client
  states[p] = st
end

---------------------------------------------------------------------------
-- What the upstream offers, as mcp.tool, mcp.resource, mcp.prompt objects.

-- A read or get of the upstream as ours: its JSON-RPC error as ours, any
-- other failure an internal error.
local function upstream_error(res, msg, code, obj)
  local mcp = require "mcp"
  if res ~= nil then return res end
  local e = rpc_object(code, obj)
  if e then return mcp.rpc_error(e.code, tostring(e.message or msg), e.data) end
  return mcp.rpc_error(-32603, "Internal error: " .. tostring(msg))
end

local function make_tool(st, t)
  local mcp = require "mcp"
  local name, up = st.prefix .. t.name, t.name
  local what = "tools/call " .. up
  local client, wrap = st.client, st.wrap
  local ok, tool = pcall(mcp.tool, {
    name = name, title = t.title, description = t.description,
    inputSchema = type(t.inputSchema) == "table" and t.inputSchema or { type = "object" },
    outputSchema = type(t.outputSchema) == "table" and t.outputSchema or nil,
    annotations = type(t.annotations) == "table" and t.annotations or nil,
    _meta = type(t._meta) == "table" and t._meta or nil,   -- its MCP App's _meta.ui among it
    -- answered: the upstream's input_required answer to the call forward.c
    -- sent (forward_outcome above), its first round's
    handler = function(args, ctx, answered)
      -- A call that came before the tool was known ran under the server's
      -- default policy: the mount's timeout is applied here instead.
      local timeout = st.call_timeout
      if st.timeout and st.timeout > 0 then
        local left = ctx:remaining()
        if left == nil or left > st.timeout + 0.1 then timeout = math.min(timeout or st.timeout, st.timeout) end
      end
      -- progress is asked of the upstream only when our client asked for it
      local on_progress = core.wants_progress() and function(progress, total, message)
        ctx:progress(progress, total, message)
      end or nil
      if wrap == nil then                        -- its result passed on as the upstream wrote it
        return M.result(client:_forward(up, args, {
          ctx = ctx, timeout = timeout or client.opts.timeout, relay_logs = true, on_progress = on_progress,
          raw = true, what = what, owned = true, answered = answered }))
      end
      return wrap(name, args, ctx, function(a, raw)
        return client:call(up, a, { ctx = ctx, timeout = timeout, relay_logs = true, on_progress = on_progress,
                                    raw = raw })
      end)
    end,
  })
  if not ok then return nil, tool end
  tool.mounted = true                          -- the upstream checks its own arguments
  -- without wrap nothing reads them: the C path hands them over as the JSON
  -- text they came as (a core.json_raw; fastpath.c)
  tool.forward = wrap == nil
  -- with no timeout either, its call may be forwarded from C (forward.c):
  -- mcp.connect's client over stdio, in the plain case
  if wrap == nil and client.link and (st.timeout == nil or st.timeout <= 0) and st.call_timeout == nil
     and client.opts.timeout == nil then
    tool.upstream = { link = client.link, name = up, what = what }
  end
  return tool
end

local function make_resource(st, r, template)
  local mcp = require "mcp"
  local client = st.client
  local function read(uri, ctx) return upstream_error(client:read(uri, { ctx = ctx })) end
  local t = {
    name = st.prefix .. tostring(r.name or r.uri or r.uriTemplate), title = r.title,
    description = r.description, mimeType = r.mimeType,
    size = math.type(r.size) and r.size or nil,
    annotations = type(r.annotations) == "table" and r.annotations or nil,
    _meta = type(r._meta) == "table" and r._meta or nil,
  }
  if template then
    t.uriTemplate = r.uriTemplate
    t.read = function(_, ctx) return read(ctx.uri, ctx) end
    return pcall(mcp.resource_template, t)
  end
  t.uri = r.uri
  t.read = function(ctx) return read(r.uri, ctx) end
  return pcall(mcp.resource, t)
end

local function make_prompt(st, pr)
  local mcp = require "mcp"
  local client, up = st.client, pr.name
  local args = {}
  for i, a in ipairs(type(pr.arguments) == "table" and pr.arguments or {}) do
    args[i] = { name = a.name, title = a.title, description = a.description, required = a.required == true }
  end
  return pcall(mcp.prompt, {
    name = st.prefix .. pr.name, title = pr.title, description = pr.description, arguments = args,
    get = function(a, ctx) return upstream_error(client:get_prompt(up, a, { ctx = ctx })) end,
  })
end

-- Fetch the lists and make the plugin's: true, or nil, message. taken(kind,
-- key): the plugin that has that name already, if another one.
local function fetch(st, p, taken)
  local c = st.client
  local server, msg = c:connect()
  if not server then return nil, msg end
  local caps = server.capabilities or {}
  local items = { tools = {}, resources = {}, prompts = {} }
  local seen = {}
  local function add(kind, key, obj, what)
    local owner = taken(kind, key)
    if owner then
      log("warning", "plugin %s: mount: %s %q is already defined by plugin %q: left out", p.name, what, key, owner)
    elseif seen[kind .. "\0" .. key] then
      log("warning", "plugin %s: mount: the upstream has %s %q twice: the second is left out", p.name, what, key)
    else
      seen[kind .. "\0" .. key] = true
      local list = items[LIST_OF[kind]]
      list[#list + 1] = obj
    end
  end
  if caps.tools then
    local tools, emsg = c:list_tools()
    if not tools then return nil, emsg end
    for _, t in ipairs(tools) do
      if type(t) == "table" and type(t.name) == "string" and (st.keep == nil or st.keep(t)) then
        local tool, err = make_tool(st, t)
        if tool then add("tool", tool.name, tool, "tool")
        else log("warning", "plugin %s: mount: tool %s left out: %s", p.name, t.name, tostring(err)) end
      end
    end
  end
  if caps.resources and st.resources then
    local list, emsg = c:list_resources()
    if not list then return nil, emsg end
    for _, r in ipairs(list) do
      local ok, res = make_resource(st, r, false)
      if ok then add("resource", res.uri, res, "resource")
      else log("warning", "plugin %s: mount: resource %s left out: %s", p.name, tostring(r.uri), tostring(res)) end
    end
    local tpls = c:list_resource_templates() or {}        -- not every server has templates/list
    for _, r in ipairs(tpls) do
      local ok, res = make_resource(st, r, true)
      if ok then add("template", res.uriTemplate, res, "resource template")
      else log("warning", "plugin %s: mount: template %s left out: %s", p.name, tostring(r.uriTemplate), tostring(res)) end
    end
  end
  if caps.prompts and st.prompts then
    local list, emsg = c:list_prompts()
    if not list then return nil, emsg end
    for _, pr in ipairs(list) do
      local ok, prompt = false, "no name"
      if type(pr) == "table" and type(pr.name) == "string" then ok, prompt = make_prompt(st, pr) end
      if ok then add("prompt", prompt.name, prompt, "prompt")
      else log("warning", "plugin %s: mount: prompt %s left out: %s", p.name, tostring(pr.name), tostring(prompt)) end
    end
  end
  for kind, list in pairs(items) do
    local all = list_copy(st.own[kind])
    for _, x in ipairs(list) do all[#all + 1] = x end
    p[kind] = all
  end
  log("info", "plugin %s: mounted %d tools, %d resources, %d prompts from %s", p.name, #items.tools,
      #items.resources, #items.prompts, c.name)
  return true
end

-- Inside a call: fetch what the mount offers if it is stale. Returns true
-- when the plugin's lists changed (the registry is to be rebuilt, then
-- M.settle called).
function M.refresh(p, taken)
  local st = states[p]
  if st == nil or st.client.closed then return false end
  if st.fetching then                          -- another call fetches: wait for it
    local f = core.future()
    st.fetching[#st.fetching + 1] = f
    await.wait(f)
    return false
  end
  if not st.stale or core.now() < st.retry_at then return false end
  st.fetching, st.stale = {}, false
  local ok, done, msg = pcall(fetch, st, p, taken)
  if ok and done then return true end          -- the waiters wake once it is registered (M.settle)
  M.settle(p)
  st.stale = true
  if not (ok and tostring(msg):find("cancelled", 1, true)) then st.retry_at = core.now() + RETRY end
  log("warning", "plugin %s: mount: %s", p.name, tostring(ok and msg or done))
  return false
end

-- The calls that waited for the fetch go on (after the registry was
-- rebuilt with it: a waiter woken earlier would find its tool unknown; the
-- fetcher's slice may end while it wakes thousands).
function M.settle(p)
  local st = states[p]
  local waiters = st and st.fetching
  if not waiters then return end
  st.fetching = nil
  for _, f in ipairs(waiters) do if not f:done() then f:complete() end end
end

-- The plugin's lists back to its own (its mounted part could not be
-- registered), to be fetched again. false when there was nothing mounted.
function M.unmount(p)
  local st = states[p]
  if not st then return false end
  local had = #p.tools ~= #st.own.tools or #p.resources ~= #st.own.resources or #p.prompts ~= #st.own.prompts
  for kind, list in pairs(st.own) do p[kind] = list_copy(list) end
  st.stale = true
  return had
end

return M
