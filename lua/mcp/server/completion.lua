-- The completion family: completion/complete, from the completer of a
-- prompt argument or a resource template variable.
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local decl = require "mcp.decl"
local reg = require "mcp.server.registry"

local methods = reg.methods
local resources, templates, prompts = reg.resources, reg.templates, reg.prompts
local invalid_or_internal = reg.invalid_or_internal

-- completion/complete: the completer of a prompt argument or template variable.
local function completer_of(owner, arg)
  local c = owner.complete
  if type(c) == "function" then
    return function(value, ctx) return c(arg, value, ctx) end
  end
  if type(c) == "table" then return c[arg] end
end

-- A list of values as a completer: the values starting with the typed text.
local function by_prefix(list, value)
  local out, low = {}, value:lower()
  for i = 1, rawlen(list) do
    local v = rawget(list, i)
    if type(v) == "string" or type(v) == "number" then
      v = tostring(v)
      if v:sub(1, #low):lower() == low then out[#out + 1] = v end
    end
  end
  return out
end

local MAX_VALUES = 100

-- What complete returned, read raw (result.lua: no metamethod of the
-- plugin's runs in the host's reading).
local function completion_result(res)
  local values, total, has_more = res, nil, nil
  if type(res) == "table" and rawget(res, "values") ~= nil then
    values, total, has_more = rawget(res, "values"), rawget(res, "total"), rawget(res, "hasMore")
  end
  if values == nil then values = {} end
  if type(values) ~= "table" then return nil, "complete returned a " .. type(values) end
  local out, n = mcp.array(), rawlen(values)
  for i = 1, n do
    local v = rawget(values, i)
    if i > MAX_VALUES then
      has_more = true
      break
    end
    if type(v) ~= "string" and type(v) ~= "number" then
      return nil, "complete returned a " .. type(v) .. " as value " .. i .. ": expected a string"
    end
    out[i] = tostring(v)
  end
  if n > MAX_VALUES and total == nil then total = n end
  if total ~= nil and math.type(total) ~= "integer" then total = math.tointeger(total) end
  return { completion = { values = out, total = total, hasMore = has_more and true or false } }
end

local function prepare_complete(params)
  local ref, arg = params.ref, params.argument
  if type(ref) ~= "table" or type(ref.type) ~= "string" then
    return nil, -32602, "Invalid params: ref must be an object with a type"
  end
  if type(arg) ~= "table" or type(arg.name) ~= "string" or type(arg.value) ~= "string" then
    return nil, -32602, "Invalid params: argument must be an object with a name and a string value"
  end
  local context = params.context
  local cargs = type(context) == "table" and type(context.arguments) == "table" and context.arguments or {}
  local owner
  if ref.type == "ref/prompt" then
    if type(ref.name) ~= "string" then return nil, -32602, "Invalid params: ref.name must be a string" end
    owner = prompts[ref.name]
    if not owner then return nil, -32602, "Invalid params: unknown prompt: " .. ref.name end
  elseif ref.type == "ref/resource" then
    if type(ref.uri) ~= "string" then return nil, -32602, "Invalid params: ref.uri must be a string" end
    owner = templates[ref.uri] or resources[ref.uri]
    if not owner then return nil, -32602, "Invalid params: unknown resource template: " .. ref.uri end
  else
    return nil, -32602, "Invalid params: unknown ref type: " .. ref.type
  end
  if owner.plugin then core.set_logger(owner.plugin.name) end
  return true, completer_of(owner, arg.name), arg, cargs
end

methods["completion/complete"] = function(params, id, _, ctx)
  local ok, fn, arg, cargs = prepare_complete(params)
  if not ok then return nil, fn, arg end
  params = nil
  local res
  if type(fn) == "function" then
    ctx = ctx or decl.ctx(id)
    ctx.arguments = cargs
    local msg, code
    res, msg, code = fn(arg.value, ctx)
    if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
    local fmsg, fcode = outcome.failure(fn, "the completion of ", arg.name, res, msg, code)
    if fmsg then return invalid_or_internal(fmsg, fcode) end
  elseif type(fn) == "table" then
    res = by_prefix(fn, arg.value)
  end
  local result, err = completion_result(res)
  if not result then return nil, -32603, "Internal error: " .. err end
  return result
end
