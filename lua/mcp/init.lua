-- The mcp module: what plugins use to declare tools and talk to the server.
local core = require "mcp.core"

local mcp = {}

local array_mt = core.array_mt
local CANCELLED = setmetatable({}, { __tostring = function() return "request cancelled" end })

mcp.null = core.null
mcp.CANCELLED = CANCELLED          -- the error value of ctx:check()
mcp.version = core.version
mcp.now = core.now
mcp.cancelled = core.cancelled
local await = require "mcp.await"
mcp.sleep = await.sleep
-- Operations (HTTP, SQL, futures): wait for one; run several functions at once.
mcp.await = await.wait
mcp.all = await.all
mcp.json = { encode = core.encode, decode = core.decode, null = core.null }
mcp.http = require("mcp.http").request
-- A client of another MCP server (lua/mcp/client.lua; README "Calling other MCP servers").
mcp.connect = require("mcp.client").connect
mcp.encode = core.encode
mcp.decode = core.decode
-- Yielding: a child process, whole-file reads and directory listings (README).
mcp.spawn = core.spawn
mcp.read_file = core.read_file
mcp.list_dir = core.list_dir
mcp.realpath = core.realpath
mcp.sqlite = require "mcp.sqlite"   -- SQLite on the thread pool (README "SQLite")
-- The string of a secret (env() and file() of the configuration file); any
-- other value as it is. mcp.settings is per plugin (lua/mcp/config.lua).
mcp.reveal = require("mcp.secret").reveal

-- Mark a table as a JSON array (an empty table is an object otherwise).
function mcp.array(t)
  return setmetatable(t or {}, array_mt)
end
mcp.json.array = mcp.array

function mcp.is_array(t)
  return getmetatable(t) == array_mt
end

-- Log messages name the running tool's plugin as their logger.
mcp.log = core.log

function mcp.text(s)
  return { content = mcp.array { { type = "text", text = tostring(s) } } }
end

function mcp.error(msg)
  local r = mcp.text(msg)
  r.isError = true
  return r
end

function mcp.image(data, mimeType)
  return { content = mcp.array { { type = "image", data = data, mimeType = mimeType } } }
end

-- Declarations: checked here so that a plugin's mistakes are reported at load.
local function check_policy(t, where)
  if t.timeout ~= nil and (type(t.timeout) ~= "number" or t.timeout < 0) then
    error(where .. ": timeout must be a number of seconds >= 0 (0 = none)", 3)
  end
  if t.grace ~= nil and (type(t.grace) ~= "number" or t.grace < 0) then
    error(where .. ": grace must be a number of seconds >= 0", 3)
  end
  if t.cancel ~= nil and t.cancel ~= "cooperative" and t.cancel ~= "abort" and t.cancel ~= "ignore" then
    error(where .. ': cancel must be "cooperative", "abort" or "ignore"', 3)
  end
  -- limits (src/core/limit.c): the same checks as a configuration file's limits = {...}
  for _, k in ipairs { "max_concurrent", "queue" } do
    if t[k] ~= nil and (math.type(t[k]) ~= "integer" or t[k] < 0) then
      error(where .. ": " .. k .. " must be an integer >= 0 (0 = no limit)", 3)
    end
  end
  if t.rate ~= nil and not mcp._rate_ok(t.rate) then
    error(where .. ': rate must be "R/s" or "R/m" (R > 0: calls per second or minute)', 3)
  end
  if t.heartbeat ~= nil and (type(t.heartbeat) ~= "number" or t.heartbeat <= 0) then
    error(where .. ": heartbeat must be a number of seconds > 0", 3)
  end
end

-- "R/s" or "R/m", R > 0.
function mcp._rate_ok(r)
  local n = type(r) == "string" and tonumber(r:match("^%s*([%d%.]+)%s*/[sm]$"))
  return n ~= nil and n > 0
end

local TOOL = {}

-- x-mcp-header (2026-07-28, Streamable HTTP): a property may be mirrored by
-- clients into an Mcp-Param-{Name} header when it is reached from the schema
-- root through `properties` alone, is of type string, integer or boolean,
-- and its name is an HTTP token, unique among the tool's headers in any
-- case. The declarations of a tool, {name =, path = {property, ...}}, go in
-- a side table (a field of the tool would be a field luamcp check reports).
local param_headers = setmetatable({}, { __mode = "k" })
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

-- The tool's Mcp-Param header declarations, or nil.
function mcp._param_headers(tool) return param_headers[tool] end

function mcp.tool(t)
  if type(t) ~= "table" then error("mcp.tool: expects a table", 2) end
  if type(t.name) ~= "string" or t.name == "" then error("mcp.tool: name must be a non-empty string", 2) end
  local where = "tool " .. t.name
  if type(t.handler) ~= "function" then error(where .. ": handler must be a function", 2) end
  if t.inputSchema ~= nil and type(t.inputSchema) ~= "table" then
    error(where .. ": inputSchema must be a table", 2)
  end
  check_policy(t, where)
  if t.task ~= nil and t.task ~= "forbidden" and t.task ~= "optional" and t.task ~= "required" then
    error(where .. ': task must be "forbidden", "optional" or "required"', 2)
  end
  if t.defer_task ~= nil and type(t.defer_task) ~= "boolean" then
    error(where .. ": defer_task must be a boolean", 2)
  end
  if t.defer_task and (t.task == nil or t.task == "forbidden") then
    error(where .. ': defer_task needs task = "optional" or "required"', 2)
  end
  if t.scopes ~= nil then
    if type(t.scopes) ~= "table" then error(where .. ": scopes must be a list of strings", 2) end
    for i, sc in ipairs(t.scopes) do
      -- RFC 6749 scope-token: %x21 / %x23-5B / %x5D-7E
      if type(sc) ~= "string" or sc == "" or sc:find("[^\33-\126]") or sc:find('["\\]') then
        error(string.format("%s: scopes[%d] must be an OAuth scope token (no space, quote or backslash)", where, i), 2)
      end
    end
    if #t.scopes == 0 then t.scopes = nil end
  end
  local schema = t.inputSchema or { type = "object" }
  if schema.type == nil then schema.type = "object" end
  t.inputSchema = schema
  local ok, decls = pcall(header_decls, schema, where)
  if not ok then error(decls, 2) end     -- at the plugin's line
  param_headers[t] = decls
  return setmetatable(t, TOOL)
end

-- Resources, resource templates and prompts (served by mcp.server).
local uri_template = require "mcp.uri_template"

local RESOURCE, TEMPLATE, PROMPT = {}, {}, {}

local function check_fields(t, where, fields)
  for k, want in pairs(fields) do
    if t[k] ~= nil and type(t[k]) ~= want then error(where .. ": " .. k .. " must be a " .. want, 3) end
  end
end

-- complete = { arg = function(value, ctx) ... end | { "value", ... } } or function(arg, value, ctx)
local function check_complete(c, where)
  if c == nil or type(c) == "function" then return end
  if type(c) ~= "table" then error(where .. ": complete must be a function or a table", 3) end
  for k, v in pairs(c) do
    if type(k) ~= "string" or (type(v) ~= "function" and type(v) ~= "table") then
      error(where .. ": complete." .. tostring(k) .. " must be a function or a list of values", 3)
    end
  end
end

local resource_fields = { name = "string", title = "string", description = "string",
                          mimeType = "string", size = "number", annotations = "table", _meta = "table" }

function mcp.resource(t)
  if type(t) ~= "table" then error("mcp.resource: expects a table", 2) end
  if type(t.uri) ~= "string" or t.uri == "" then error("mcp.resource: uri must be a non-empty string", 2) end
  local where = "resource " .. t.uri
  if type(t.read) ~= "function" then error(where .. ": read must be a function", 2) end
  check_fields(t, where, resource_fields)
  if t.name == nil then t.name = t.uri end
  return setmetatable(t, RESOURCE)
end

function mcp.resource_template(t)
  if type(t) ~= "table" then error("mcp.resource_template: expects a table", 2) end
  if type(t.uriTemplate) ~= "string" or t.uriTemplate == "" then
    error("mcp.resource_template: uriTemplate must be a non-empty string", 2)
  end
  local where = "resource template " .. t.uriTemplate
  local tpl, err = uri_template.parse(t.uriTemplate)
  if not tpl then error(where .. ": " .. err, 2) end
  if type(t.read) ~= "function" then error(where .. ": read must be a function", 2) end
  check_fields(t, where, resource_fields)
  check_complete(t.complete, where)
  if type(t.complete) == "table" then
    local vars = {}
    for _, v in ipairs(tpl.vars) do vars[v] = true end
    for k in pairs(t.complete) do
      if not vars[k] then error(where .. ": complete." .. k .. " is not a variable of the template", 2) end
    end
  end
  if t.name == nil then t.name = t.uriTemplate end
  t.template = tpl
  return setmetatable(t, TEMPLATE)
end

function mcp.prompt(t)
  if type(t) ~= "table" then error("mcp.prompt: expects a table", 2) end
  if type(t.name) ~= "string" or t.name == "" then error("mcp.prompt: name must be a non-empty string", 2) end
  local where = "prompt " .. t.name
  if type(t.get) ~= "function" then error(where .. ": get must be a function", 2) end
  check_fields(t, where, { title = "string", description = "string", arguments = "table", _meta = "table" })
  local declared = {}
  for i, a in ipairs(t.arguments or {}) do
    if type(a) ~= "table" or type(a.name) ~= "string" or a.name == "" then
      error(where .. ": arguments[" .. i .. "] needs a name", 2)
    end
    if declared[a.name] then error(where .. ": argument " .. a.name .. " is declared twice", 2) end
    declared[a.name] = true
  end
  check_complete(t.complete, where)
  if type(t.complete) == "table" then
    for k in pairs(t.complete) do
      if not declared[k] then error(where .. ": complete." .. k .. " is not a declared argument", 2) end
    end
  end
  t.arguments = mcp.array(t.arguments or {})
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

local PLUGIN = {}

function mcp.plugin(p)
  if type(p) ~= "table" then error("mcp.plugin: expects a table", 2) end
  if type(p.name) ~= "string" or p.name == "" then error("mcp.plugin: name must be a non-empty string", 2) end
  local where = "plugin " .. p.name
  p.defaults = p.defaults or {}
  check_policy(p.defaults, where .. " defaults")
  p.tools = p.tools or {}
  for i, tool in ipairs(p.tools) do
    if getmetatable(tool) ~= TOOL then
      error(where .. ": tools[" .. i .. "] is not an mcp.tool{...}", 2)
    end
  end
  p.resources = p.resources or {}
  for i, r in ipairs(p.resources) do
    local mt = getmetatable(r)
    if mt ~= RESOURCE and mt ~= TEMPLATE then
      error(where .. ": resources[" .. i .. "] is not an mcp.resource{...} or mcp.resource_template{...}", 2)
    end
  end
  if p.http_allow ~= nil then
    if type(p.http_allow) ~= "table" then error(where .. ": http_allow must be a list of HOST[:PORT]", 2) end
    for i, h in ipairs(p.http_allow) do
      if type(h) ~= "string" or h == "" then error(where .. ": http_allow[" .. i .. "] must be HOST[:PORT]", 2) end
    end
  end
  p.prompts = p.prompts or {}
  for i, pr in ipairs(p.prompts) do
    if getmetatable(pr) ~= PROMPT then
      error(where .. ": prompts[" .. i .. "] is not an mcp.prompt{...}", 2)
    end
  end
  -- another server's tools, resources and prompts as this plugin's (lua/mcp/mount.lua)
  if p.mount ~= nil then require("mcp.mount").attach(p, where) end
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
Ctx.__index = function(_, k)
  local f = ctx_fields[k]
  if f then return f() end
  return Ctx[k]
end

function Ctx.cancelled() return core.cancelled() end
function Ctx.check()
  if core.cancelled() then error(CANCELLED, 0) end
end
-- C functions called as methods: their errors name the plugin's line.
Ctx.progress = core.progress       -- a value that does not increase is dropped (debug log)
Ctx.log = core.log
Ctx.sleep = core.sleep             -- true, or nil, "cancelled: <reason>", "cancelled"
Ctx.on_cancel = core.on_cancel
-- Over HTTP: close the connection under this request's SSE stream without
-- ending the stream (SSE polling); the client resumes it with Last-Event-ID.
function Ctx.close_connection() return core.close_connection() end
-- ctx:spawn{ command = {"prog", "arg", ...}, cwd =, env =, stdin =, stdout =,
-- stderr =, timeout =, max_bytes = } (src/lua/spawn.h).
Ctx.spawn = core.spawn
Ctx.read_file = core.read_file
Ctx.list_dir = core.list_dir
Ctx.realpath = core.realpath
function Ctx.http(_, req) return mcp.http(req) end

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
  if self._input then                 -- 2026-07-28: an input-required round, or a task's input
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
-- gathered synchronously, say). Returns the task id, or false where there
-- can be no task (not a 2026-07-28 request that declares the extension, or
-- a tool without task support).
function Ctx.task()
  if not core.modern() then return false end
  return core.task_create()
end
function Ctx.remaining()
  local d = core.deadline()
  if d == nil then return nil end
  local left = d - core.now()
  return left > 0 and left or 0
end

-- The ctx of a request: its id; the rest comes from the call (ctx_fields).
function mcp._ctx(id)
  return setmetatable({ id = id }, Ctx)
end

-- Coroutines a handler creates still see its request (mcp.cancelled() and
-- logs work in them); they cannot wait with mcp.sleep.
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
