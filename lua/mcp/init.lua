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
mcp.sleep = core.sleep
mcp.encode = core.encode
mcp.decode = core.decode

-- Mark a table as a JSON array (an empty table is an object otherwise).
function mcp.array(t)
  return setmetatable(t or {}, array_mt)
end

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
end

local TOOL = {}

function mcp.tool(t)
  if type(t) ~= "table" then error("mcp.tool: expects a table", 2) end
  if type(t.name) ~= "string" or t.name == "" then error("mcp.tool: name must be a non-empty string", 2) end
  local where = "tool " .. t.name
  if type(t.handler) ~= "function" then error(where .. ": handler must be a function", 2) end
  if t.inputSchema ~= nil and type(t.inputSchema) ~= "table" then
    error(where .. ": inputSchema must be a table", 2)
  end
  check_policy(t, where)
  local schema = t.inputSchema or { type = "object" }
  if schema.type == nil then schema.type = "object" end
  t.inputSchema = schema
  return setmetatable(t, TOOL)
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
  return setmetatable(p, PLUGIN)
end

function mcp.is_plugin(p)
  return getmetatable(p) == PLUGIN
end

-- ctx, the handler's second argument.
local Ctx = {}
local ctx_fields = {
  reason = core.reason,
  deadline = core.deadline,
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
function Ctx.progress(_, progress, total, message) return core.progress(progress, total, message) end
function Ctx.log(_, level, data) return core.log(level, data) end
function Ctx.sleep(_, seconds) return core.sleep(seconds) end
function Ctx.on_cancel(_, fn) return core.on_cancel(fn) end
function Ctx.remaining()
  local d = core.deadline()
  if d == nil then return nil end
  local left = d - core.now()
  return left > 0 and left or 0
end

function mcp._ctx(id, tool, session)
  return setmetatable({ id = id, tool = tool, session = session }, Ctx)
end

-- Coroutines a handler creates still see its request (mcp.cancelled() and
-- logs work in them); they cannot wait with mcp.sleep.
local create, nested = coroutine.create, core.nested
coroutine.create = function(f)
  local co = create(f)
  local tok = core.token()
  if tok then nested[co] = tok end
  return co
end
coroutine.wrap = function(f)
  local co = coroutine.create(f)
  return function(...)
    local r = table.pack(coroutine.resume(co, ...))
    if not r[1] then error(r[2], 0) end
    return table.unpack(r, 2, r.n)
  end
end

return mcp
