-- The mcp module: what plugins use to declare tools and talk to the server.
local core = require "mcp.core"
local outcome = require "mcp.result"

local mcp = {}

local array_mt = core.array_mt
local CANCELLED = setmetatable({}, { __tostring = function() return "request cancelled" end })

mcp.null = core.null
mcp.CANCELLED = CANCELLED          -- the error value of ctx:check()
mcp.version = core.version
mcp.now = core.now
local await = require "mcp.await"
local http = require "mcp.http"
mcp.all = await.all                -- run several functions at once, each may wait
mcp.json = { encode = core.encode, decode = core.decode }
mcp.url = { escape = core.url_escape }  -- a path segment or query value, percent-encoded
-- A client of another MCP server (lua/mcp/client.lua; README "Calling other MCP servers").
mcp.connect = require("mcp.client").connect
mcp.sqlite = require "mcp.sqlite"   -- SQLite on the thread pool (README "SQLite")
-- The string of a secret (env() and file() of the configuration file); any
-- other value as it is. mcp.settings is per plugin (lua/mcp/config.lua).
mcp.reveal = require("mcp.secret").reveal
-- A line in the server's log naming the running call's plugin; each plugin
-- file's own mcp names it (lua/mcp/plugin_log.lua).
mcp.server_log = require("mcp.plugin_log").server_log

-- Mark a table as a JSON array (an empty table is an object otherwise).
function mcp.array(t)
  return setmetatable(t or {}, array_mt)
end

function mcp.is_array(t)
  return getmetatable(t) == array_mt
end

-- The old names of ctx's methods: they work, and say once that they are deprecated.
local function deprecated(name, fn)
  local warned = false
  mcp[name] = function(...)
    if not warned then
      warned = true
      core.log_stderr("warning", ("mcp.%s is deprecated: use ctx:%s"):format(name, name))
    end
    return fn(...)
  end
end
deprecated("sleep", await.sleep)
deprecated("cancelled", core.cancelled)
deprecated("log", core.log)
deprecated("http", http.request)
deprecated("spawn", core.spawn)
deprecated("read_file", core.read_file)
deprecated("list_dir", core.list_dir)
deprecated("realpath", core.realpath)

-- { content = mcp.array { { type = "text", text = tostring(s) } } }, made in C
mcp.text = core.text

-- An isError result: a string, or a table's message (else its JSON).
function mcp.error(msg)
  local r = mcp.text(outcome.message_of(msg))
  r.isError = true
  return r
end

-- A JSON-RPC error, returned or raised by a handler (lua/mcp/result.lua).
mcp.rpc_error = outcome.rpc_error

function mcp.image(data, mimeType)
  return { content = mcp.array { { type = "image", data = data, mimeType = mimeType } } }
end

-- Declarations: checked here so that a plugin's mistakes are reported at
-- load (lua/mcp/decl.lua: each problem at the plugin's line; all of a file's
-- under luamcp check).
local decl = require "mcp.decl"
local problem = decl.problem

local POLICY_FIELDS = { timeout = true, cancel = true, grace = true, max_concurrent = true, queue = true,
                        rate = true, heartbeat = true }

local function check_policy(t, where, prefix)
  prefix = prefix or ""
  local function bad(k, msg) problem(where .. ": " .. prefix .. k .. msg, prefix .. k) end
  if t.timeout ~= nil and (type(t.timeout) ~= "number" or t.timeout < 0) then
    bad("timeout", " must be a number of seconds >= 0 (0 = none)")
  end
  if t.grace ~= nil and (type(t.grace) ~= "number" or t.grace < 0) then
    bad("grace", " must be a number of seconds >= 0")
  end
  if t.cancel ~= nil and t.cancel ~= "cooperative" and t.cancel ~= "abort" and t.cancel ~= "ignore" then
    bad("cancel", ' must be "cooperative", "abort" or "ignore"')
  end
  -- limits (src/core/limit.c): the same checks as a configuration file's limits = {...}
  for _, k in ipairs { "max_concurrent", "queue" } do
    if t[k] ~= nil and (math.type(t[k]) ~= "integer" or t[k] < 0) then
      bad(k, " must be an integer >= 0 (0 = no limit)")
    end
  end
  if t.rate ~= nil and not decl.rate_ok(t.rate) then
    bad("rate", ' must be "R/s" or "R/m" (R > 0: calls per second or minute)')
  end
  if t.heartbeat ~= nil and (type(t.heartbeat) ~= "number" or t.heartbeat <= 0) then
    bad("heartbeat", " must be a number of seconds > 0")
  end
end

local TOOL = {}

-- x-mcp-header (2026-07-28, Streamable HTTP): a property may be mirrored by
-- clients into an Mcp-Param-{Name} header when it is reached from the schema
-- root through `properties` alone, is of type string, integer or boolean,
-- and its name is an HTTP token, unique among the tool's headers in any
-- case. The declarations of a tool, {name =, path = {property, ...}}, go in
-- a side table (a field of the tool would be a field luamcp check reports).
local HEADER_TOKEN = "^[A-Za-z0-9!#$%%&'*+.^_`|~-]+$"
local HEADER_TYPES = { string = true, integer = true, boolean = true }
local DATA_KEYWORDS = { enum = true, const = true, default = true, examples = true }

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

local function type_name(t)
  if t == nil then return "no type" end
  return type(t) == "string" and t or "a list of types"
end

-- The x-mcp-header declarations of an input schema, or nil; raises (level
-- 0) on an invalid one, naming where it is.
local function header_decls(schema, where)
  local decls, taken = {}, {}
  local function declare(s, at, path)
    local h = s["x-mcp-header"]
    local here = string.format('%s: %s["x-mcp-header"]: ', where, at)
    if path == nil or #path == 0 then
      error(here .. "only a property reached from the schema root through properties alone may be " ..
            "mirrored into a header (not the root, nor under items, anyOf, if, $defs, ...)", 0)
    end
    if type(h) ~= "string" or h == "" then error(here .. "must be a non-empty string", 0) end
    if not h:find(HEADER_TOKEN) then
      error(here .. string.format("%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~: " ..
                                  "no space, colon, control or non-ASCII character)", h), 0)
    end
    if not HEADER_TYPES[s.type] then
      error(here .. "the property must be of type string, integer or boolean (got " ..
            type_name(s.type) .. ")", 0)
    end
    local other = taken[h:lower()]
    if other then
      error(here .. string.format("Mcp-Param-%s is the header of %s already (Mcp-Param-%s; " ..
                                  "header names ignore case)", h, other.at, other.name), 0)
    end
    taken[h:lower()] = { at = at, name = h }
    decls[#decls + 1] = { name = h, path = mcp.array(table.move(path, 1, #path, 1, {})) }
  end
  -- path: the property names from the root, or nil once off the properties chain
  local open = {}                       -- the tables being walked: a cycle is not walked twice
  local function walk(s, at, path)
    if open[s] then return end
    open[s] = true
    if s["x-mcp-header"] ~= nil then declare(s, at, path) end
    for _, k in ipairs(sorted_keys(s)) do
      local v = s[k]
      if type(v) == "table" and k == "properties" then
        for _, name in ipairs(sorted_keys(v)) do
          if type(v[name]) == "table" then
            local sub = path and table.move(path, 1, #path, 1, {})
            if sub then sub[#sub + 1] = tostring(name) end
            walk(v[name], at .. ".properties." .. tostring(name), sub)
          end
        end
      elseif type(v) == "table" and not DATA_KEYWORDS[k] then
        walk(v, at .. "." .. tostring(k), nil)
      end
    end
    open[s] = nil
  end
  walk(schema, "inputSchema", {})
  return #decls > 0 and decls or nil
end

local TOOL_FIELDS = { name = true, title = true, description = true, inputSchema = true,
                      outputSchema = true, annotations = true, icons = true, _meta = true,
                      handler = true, task = true, defer_task = true, scopes = true,
                      app = true, visibility = true }     -- MCP Apps (lua/mcp/apps.lua)
for k in pairs(POLICY_FIELDS) do TOOL_FIELDS[k] = true end
local apps = require "mcp.apps"

local function non_empty(v) return type(v) == "string" and v ~= "" end
-- "tool NAME", or "tool" when it has no name (reported already).
local function named(kind, name) return non_empty(name) and kind .. " " .. name or kind end

function mcp.tool(t)
  if type(t) ~= "table" then error("mcp.tool: expects a table", 2) end
  if not non_empty(t.name) then problem("mcp.tool: name must be a non-empty string", t.name ~= nil and "name" or nil) end
  local where = named("tool", t.name)
  decl.fields(t, TOOL_FIELDS, where)
  if type(t.handler) ~= "function" then problem(where .. ": handler must be a function", t.handler ~= nil and "handler" or nil) end
  for _, k in ipairs { "inputSchema", "outputSchema", "annotations", "icons", "_meta" } do
    if t[k] ~= nil and type(t[k]) ~= "table" then problem(where .. ": " .. k .. " must be a table", k) end
  end
  check_policy(t, where)
  if t.task ~= nil and t.task ~= "forbidden" and t.task ~= "optional" and t.task ~= "required" then
    problem(where .. ': task must be "forbidden", "optional" or "required"', "task")
  end
  if t.defer_task ~= nil and type(t.defer_task) ~= "boolean" then
    problem(where .. ": defer_task must be a boolean", "defer_task")
  end
  if t.defer_task and (t.task == nil or t.task == "forbidden") then
    problem(where .. ': defer_task needs task = "optional" or "required"', "defer_task")
  end
  if t.scopes ~= nil then
    if type(t.scopes) ~= "table" then
      problem(where .. ": scopes must be a list of strings", "scopes")
    else
      for i, sc in ipairs(t.scopes) do
        -- RFC 6749 scope-token: %x21 / %x23-5B / %x5D-7E
        if type(sc) ~= "string" or sc == "" or sc:find("[^\33-\126]") or sc:find('["\\]') then
          problem(string.format("%s: scopes[%d] must be an OAuth scope token (no space, quote or backslash)",
                                where, i), "scopes")
        end
      end
      if #t.scopes == 0 then t.scopes = nil end
    end
  end
  apps.check_tool(t, where)
  if apps.view_of(t) and type(t.handler) == "function" then apps.watch_text(t) end
  local schema = type(t.inputSchema) == "table" and t.inputSchema or { type = "object" }
  if schema.type == nil then schema.type = "object" end
  t.inputSchema = schema
  local ok, decls = pcall(header_decls, schema, where)
  if ok then decl.param_headers[t] = decls else problem(decls) end
  return setmetatable(t, TOOL)
end

-- Resources, resource templates and prompts (served by mcp.server).
local uri_template = require "mcp.uri_template"

local RESOURCE, TEMPLATE, PROMPT = {}, {}, {}

local function check_types(t, where, types)
  for k, want in pairs(types) do
    if t[k] ~= nil and type(t[k]) ~= want then problem(where .. ": " .. k .. " must be a " .. want, k) end
  end
end

-- complete = { arg = function(value, ctx) ... end | { "value", ... } } or function(arg, value, ctx)
local function check_complete(c, where, known, what)
  if c == nil or type(c) == "function" then return end
  if type(c) ~= "table" then return problem(where .. ": complete must be a function or a table", "complete") end
  for k, v in pairs(c) do
    if type(k) ~= "string" or (type(v) ~= "function" and type(v) ~= "table") then
      problem(where .. ": complete." .. tostring(k) .. " must be a function or a list of values", "complete")
    elseif known and not known[k] then
      problem(where .. ": complete." .. k .. " is not " .. what, "complete")
    end
  end
end

local RESOURCE_TYPES = { name = "string", title = "string", description = "string", mimeType = "string",
                         size = "number", annotations = "table", icons = "table", _meta = "table" }
local RESOURCE_FIELDS = { uri = true, read = true, app = true }
for k in pairs(RESOURCE_TYPES) do RESOURCE_FIELDS[k] = true end
local TEMPLATE_FIELDS = { uriTemplate = true, read = true, complete = true }
for k in pairs(RESOURCE_TYPES) do TEMPLATE_FIELDS[k] = k ~= "size" or nil end

function mcp.resource(t)
  if type(t) ~= "table" then error("mcp.resource: expects a table", 2) end
  if not non_empty(t.uri) then problem("mcp.resource: uri must be a non-empty string", t.uri ~= nil and "uri" or nil) end
  local where = named("resource", t.uri)
  decl.fields(t, RESOURCE_FIELDS, where)
  if t.app ~= nil then apps.check_resource(t, where)     -- it reads itself
  elseif type(t.read) ~= "function" then problem(where .. ": read must be a function", t.read ~= nil and "read" or nil) end
  check_types(t, where, RESOURCE_TYPES)
  if t.name == nil then t.name = t.uri end
  return setmetatable(t, RESOURCE)
end

function mcp.resource_template(t)
  if type(t) ~= "table" then error("mcp.resource_template: expects a table", 2) end
  local where = named("resource template", t.uriTemplate)
  decl.fields(t, TEMPLATE_FIELDS, where)
  local tpl, err
  if not non_empty(t.uriTemplate) then
    problem("mcp.resource_template: uriTemplate must be a non-empty string", t.uriTemplate ~= nil and "uriTemplate" or nil)
  else
    tpl, err = uri_template.parse(t.uriTemplate)
    if not tpl then problem(where .. ": " .. err, "uriTemplate") end
  end
  if type(t.read) ~= "function" then problem(where .. ": read must be a function", t.read ~= nil and "read" or nil) end
  check_types(t, where, RESOURCE_TYPES)
  local vars
  if tpl then
    vars = {}
    for _, v in ipairs(tpl.vars) do vars[v] = true end
  end
  check_complete(t.complete, where, vars, "a variable of the template")
  if t.name == nil then t.name = t.uriTemplate end
  t.template = tpl
  return setmetatable(t, TEMPLATE)
end

local PROMPT_FIELDS = { name = true, title = true, description = true, arguments = true, get = true,
                        complete = true, icons = true, _meta = true }
local ARGUMENT_FIELDS = { name = true, title = true, description = true, required = true }

function mcp.prompt(t)
  if type(t) ~= "table" then error("mcp.prompt: expects a table", 2) end
  if not non_empty(t.name) then problem("mcp.prompt: name must be a non-empty string", t.name ~= nil and "name" or nil) end
  local where = named("prompt", t.name)
  decl.fields(t, PROMPT_FIELDS, where)
  if type(t.get) ~= "function" then problem(where .. ": get must be a function", t.get ~= nil and "get" or nil) end
  check_types(t, where, { title = "string", description = "string", arguments = "table", icons = "table",
                          _meta = "table" })
  local declared = {}
  local args = type(t.arguments) == "table" and t.arguments or {}
  for i, a in ipairs(args) do
    local at = where .. ": arguments[" .. i .. "]"
    if type(a) ~= "table" or not non_empty(a.name) then
      problem(at .. " needs a name", "arguments")
    else
      decl.fields(a, ARGUMENT_FIELDS, at)
      if declared[a.name] then problem(where .. ": argument " .. a.name .. " is declared twice", "arguments") end
      declared[a.name] = true
    end
  end
  check_complete(t.complete, where, declared, "a declared argument")
  t.arguments = mcp.array(args)
  return setmetatable(t, PROMPT)
end

function mcp.is_resource(t) return getmetatable(t) == RESOURCE end
function mcp.is_resource_template(t) return getmetatable(t) == TEMPLATE end
function mcp.is_prompt(t) return getmetatable(t) == PROMPT end

-- Base64 (RFC 4648, with padding) of a byte string.
local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
function mcp.base64(s)
  local out, n = {}, #s
  for i = 1, n, 3 do
    local a, b, c = s:byte(i, i + 2)
    local v = a << 16 | (b or 0) << 8 | (c or 0)
    local k1, k2, k3, k4 = v >> 18 & 63, v >> 12 & 63, v >> 6 & 63, v & 63
    out[#out + 1] = B64:sub(k1 + 1, k1 + 1) .. B64:sub(k2 + 1, k2 + 1) ..
      (b and B64:sub(k3 + 1, k3 + 1) or "=") .. (c and B64:sub(k4 + 1, k4 + 1) or "=")
  end
  return table.concat(out)
end

-- Binary resource contents: read may return mcp.blob(bytes [, mimeType]).
function mcp.blob(bytes, mimeType)
  if type(bytes) ~= "string" then error("mcp.blob: expects a string of bytes", 2) end
  return { blob = mcp.base64(bytes), mimeType = mimeType }
end

-- Sends notifications/resources/updated {uri} to every session subscribed to
-- uri; returns how many it went to.
function mcp.notify_resource_updated(uri)
  if type(uri) ~= "string" then error("mcp.notify_resource_updated: uri must be a string", 2) end
  return require("mcp.server").notify_resource_updated(uri)
end

-- Middleware: a step every request of its methods goes through before the
-- method itself (lua/mcp/server/middleware.lua runs the chain).
local MIDDLEWARE = {}
local MIDDLEWARE_FIELDS = { name = true, methods = true, order = true, handler = true }

local function check_methods(list, where)
  if type(list) ~= "table" or list[1] == nil then
    return problem(where .. ": methods must be a non-empty list of method names", "methods")
  end
  for i, m in ipairs(list) do
    if not decl.MIDDLEWARE_METHODS[m] then
      local msg = ("%s: methods[%d]: %s is not a method middleware applies to"):format(where, i, tostring(m))
      local hint = type(m) == "string" and decl.suggest(m, decl.MIDDLEWARE_METHODS)
      problem(msg .. (hint and " (did you mean " .. hint .. "?)" or ""), "methods")
    end
  end
end

function mcp.middleware(t)
  if type(t) ~= "table" then error("mcp.middleware: expects a table", 2) end
  if not non_empty(t.name) then problem("mcp.middleware: name must be a non-empty string", t.name ~= nil and "name" or nil) end
  local where = named("middleware", t.name)
  decl.fields(t, MIDDLEWARE_FIELDS, where)
  if type(t.handler) ~= "function" then problem(where .. ": handler must be a function", t.handler ~= nil and "handler" or nil) end
  if t.order ~= nil and type(t.order) ~= "number" then problem(where .. ": order must be a number", "order") end
  if t.methods ~= nil then check_methods(t.methods, where) end
  return setmetatable(t, MIDDLEWARE)
end

local PLUGIN = {}
local PLUGIN_FIELDS = { name = true, tools = true, resources = true, prompts = true, defaults = true,
                        http_allow = true, mount = true, middleware = true }

local function check_list(p, where, key, ok, what)
  if type(p[key]) ~= "table" then
    problem(where .. ": " .. key .. " must be a list", key)
    p[key] = {}
  end
  for i, v in ipairs(p[key]) do
    if not ok[getmetatable(v) or false] then problem(("%s: %s[%d] is not %s"):format(where, key, i, what), key) end
  end
end

function mcp.plugin(p)
  if type(p) ~= "table" then error("mcp.plugin: expects a table", 2) end
  if not non_empty(p.name) then problem("mcp.plugin: name must be a non-empty string", p.name ~= nil and "name" or nil) end
  local where = named("plugin", p.name)
  decl.fields(p, PLUGIN_FIELDS, where)
  p.defaults = p.defaults or {}
  if type(p.defaults) ~= "table" then
    problem(where .. ": defaults must be a table", "defaults")
    p.defaults = {}
  end
  decl.fields(p.defaults, POLICY_FIELDS, where, "defaults.")
  check_policy(p.defaults, where, "defaults.")
  p.tools, p.resources, p.prompts = p.tools or {}, p.resources or {}, p.prompts or {}
  check_list(p, where, "tools", { [TOOL] = true }, "an mcp.tool{...}")
  check_list(p, where, "resources", { [RESOURCE] = true, [TEMPLATE] = true },
             "an mcp.resource{...} or mcp.resource_template{...}")
  check_list(p, where, "prompts", { [PROMPT] = true }, "an mcp.prompt{...}")
  p.middleware = p.middleware or {}
  check_list(p, where, "middleware", { [MIDDLEWARE] = true }, "an mcp.middleware{...}")
  if p.http_allow ~= nil then
    if type(p.http_allow) ~= "table" then
      problem(where .. ": http_allow must be a list of HOST[:PORT]", "http_allow")
    else
      for i, h in ipairs(p.http_allow) do
        if type(h) ~= "string" or h == "" then problem(where .. ": http_allow[" .. i .. "] must be HOST[:PORT]", "http_allow") end
      end
    end
  end
  -- another server's tools, resources and prompts as this plugin's (lua/mcp/mount.lua)
  if p.mount ~= nil then
    if type(p.mount) == "table" then check_policy(p.mount, where, "mount.") end
    require("mcp.mount").attach(p, where)
  end
  return setmetatable(p, PLUGIN)
end

function mcp.is_plugin(p)
  return getmetatable(p) == PLUGIN
end

-- ctx, the handler's second argument.
local Ctx = {}
local ctx_fields = {                  -- read from the call, not kept in each ctx
  reason = core.reason,
  deadline = core.deadline,
  tool = core.tool,
  session = core.session,
  auth = core.auth,                   -- {subject=, client_id=, scopes=, claims=} with --auth-*
}
Ctx.__index = core.ctx_index(ctx_fields, Ctx)   -- ctx_fields[k](), else Ctx[k]

function Ctx.cancelled() return core.cancelled() end
function Ctx.check()
  if core.cancelled() then error(CANCELLED, 0) end
end
-- C functions called as methods: their errors name the plugin's line.
Ctx.progress = core.progress       -- a value that does not increase is dropped (debug log)
Ctx.log = core.log
Ctx.sleep = core.sleep             -- true, or nil, "cancelled: <reason>", "cancelled"
Ctx.on_cancel = core.on_cancel

-- ctx:span(name [, attrs], fn, ...): fn(...) inside a span of its own, a child
-- of the request's (docs/operations/tracing.md); fn's results. The span ends
-- when fn returns or raises (its status is then an error), and whatever fn
-- waits on meanwhile is under it. Without tracing, just fn(...).
function Ctx:span(name, attrs, fn, ...)
  if type(attrs) == "function" then return self:span(name, nil, attrs, fn, ...) end
  if type(fn) ~= "function" then core.raise("ctx:span(name, attrs, fn): fn must be a function") end
  local s <close> = core.span_begin(name, attrs)
  return fn(...)
end
-- Over HTTP: close the connection under this request's SSE stream without
-- ending the stream (SSE polling); the client resumes it with Last-Event-ID.
function Ctx.close_connection()
  if core.close_connection() then return true end
  return nil, "close_connection: no HTTP connection under an SSE stream to close", "unsupported"
end
-- ctx:spawn{ command = {"prog", "arg", ...}, cwd =, env =, stdin =, stdout =,
-- stderr =, timeout =, max_bytes = } (src/lua/spawn.h).
Ctx.spawn = core.spawn
Ctx.read_file = core.read_file
Ctx.list_dir = core.list_dir
Ctx.realpath = core.realpath
function Ctx.http(_, req) return http.request(req) end

-- Input from the client (lua/mcp/input.lua): in a session, requests to the
-- client that yield until the answer; for a 2026-07-28 request, input
-- requests in an input-required result, answered when the client retries;
-- in a task of the tasks extension, its inputRequests, answered by tasks/update.
-- Each returns the result, or nil and a message (and, in a session, the
-- JSON-RPC error object when the client sent one). opts: key (names the
-- input in an input-required result; default "<capability>_<n>"), timeout
-- (seconds, default core.config.request_timeout) and max_total (progress
-- from the client restarts the timeout, up to this): both in a session only.
local function input() return require "mcp.input" end

function Ctx.request(self, method, params, opts)
  opts = opts or {}
  if decl.input_of[self] then         -- 2026-07-28: an input-required round, or a task's input
    local key = opts.key or input().key(self, method)
    local results, errors, codes = input().ask(self, { [key] = { method = method, params = params } }, opts)
    if results[key] == nil then return nil, errors[key], codes[key] end
    return results[key]
  end
  return core.request(method, params or {}, opts.timeout, opts.max_total)
end
function Ctx.sample(self, params, opts) return self:request("sampling/createMessage", params, opts) end
function Ctx.elicit(self, params, opts) return self:request("elicitation/create", params, opts) end
function Ctx.roots(self, opts)
  local result, err, code, obj = self:request("roots/list", {}, opts)
  if not result then return nil, err, code, obj end
  return result.roots, result
end
-- Several inputs at once: { key = { method = ..., params = ... } } -> results, errors by key.
function Ctx.input(self, requests, opts) return input().ask(self, requests, opts) end
-- Did the client declare this capability?
function Ctx.supports(_, capability) return core.client_supports(capability) end
-- End the request with -32021 (missing required client capability) unless
-- the client declared every capability named.
function Ctx.require(self, ...) return input().require(self, ...) end
-- The tasks extension: the rest of this call runs as a task; the request is
-- answered now with the task (CreateTaskResult). For a tool with
-- defer_task = true, once it has what it needs to go on alone (input
-- gathered synchronously, say). Returns the task id; or nil, message,
-- "unsupported" where there can be no task (not a 2026-07-28 request that
-- declares the extension, a tool without task support, a request already
-- cancelled), "busy" when the scope holds too many tasks.
function Ctx.task()
  local id, err = false, nil
  if core.rev2026() then id, err = core.task_create() end
  if id then return id end
  if id == nil then return nil, "task: " .. err, "busy" end
  return nil, "task: no task here (a 2026-07-28 request declaring the tasks extension, to a tool " ..
              "with task support, still running)", "unsupported"
end
function Ctx.remaining()
  local d = core.deadline()
  if d == nil then return nil end
  local left = d - core.now()
  return left > 0 and left or 0
end

-- The ctx of a request: its id; the rest comes from the call (ctx_fields).
function decl.ctx(id)
  return setmetatable({ id = id }, Ctx)
end

-- Coroutines a handler creates still see its request (ctx:cancelled() and
-- logs work in them); they cannot wait with ctx:sleep.
local create, nested = coroutine.create, core.nested
coroutine.create = function(f)
  local co = create(f)
  local tok = core.token()
  if tok then
    nested[co] = tok
    core.watch(co)
  end
  return co
end
-- As lcorolib's auxwrap: a coroutine that fails is closed (its pending
-- <close> variables run) and its error (or a <close> method's) raised again
-- as it is (auxwrap's luaL_where names a C function: nothing is prepended).
coroutine.wrap = function(f)
  local co = coroutine.create(f)
  return function(...)
    local r = table.pack(coroutine.resume(co, ...))
    if r[1] then return table.unpack(r, 2, r.n) end
    local err = r[2]
    if coroutine.status(co) == "dead" then
      local ok, cerr = coroutine.close(co)
      if not ok then err = cerr end
    end
    error(err, 0)
  end
end

return mcp
