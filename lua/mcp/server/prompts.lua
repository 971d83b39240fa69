-- The prompts family: prompts/list, and prompts/get with its checks and
-- the messages it returns.
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local input = require "mcp.input"
local decl = require "mcp.decl"
local reg = require "mcp.server.registry"

local methods = reg.methods
local prompts, prompt_list = reg.prompts, reg.prompt_list
local paginate, invalid_or_internal = reg.paginate, reg.invalid_or_internal

methods["prompts/list"] = function(params)
  local page, next_cursor, msg = paginate(prompt_list, params, function(p)
    local args = mcp.array()
    for i, a in ipairs(p.arguments) do
      args[i] = { name = a.name, title = a.title, description = a.description,
                  required = a.required and true or nil }
    end
    return { name = p.name, title = p.title, description = p.description, arguments = args, icons = p.icons,
             _meta = p._meta }
  end)
  if not page then return nil, next_cursor, msg end
  return { prompts = page, nextCursor = next_cursor }
end

-- A prompt message: a string is a user text message; content may be a string.
-- What get returned is read raw (result.lua: no metamethod of the plugin's
-- runs in the host's reading).
local function message(m)
  if type(m) == "string" then return { role = "user", content = { type = "text", text = m } } end
  if type(m) ~= "table" then return nil, "a message is a " .. type(m) end
  local role = rawget(m, "role") or "user"
  if role ~= "user" and role ~= "assistant" then return nil, "role must be \"user\" or \"assistant\"" end
  local content = rawget(m, "content")
  if type(content) == "string" or type(content) == "number" then
    content = { type = "text", text = tostring(content) }
  elseif type(content) == "table" and rawget(content, "type") == nil and type(rawget(content, "text")) == "string" then
    content = { type = "text", text = rawget(content, "text"), annotations = rawget(content, "annotations") }
  elseif type(content) ~= "table" or type(rawget(content, "type")) ~= "string" then
    return nil, "a message needs content (a string or a content object with a type)"
  end
  return { role = role, content = content }
end

local function prompt_result(res)
  local description, list
  if type(res) == "string" then
    list = { res }
  elseif type(res) == "table" and rawget(res, "messages") ~= nil then
    description, list = rawget(res, "description"), rawget(res, "messages")
    if type(list) ~= "table" then return nil, "messages is not a list" end
  elseif type(res) == "table" and (rawget(res, "role") ~= nil or rawget(res, "content") ~= nil) then
    list = { res }
  elseif type(res) == "table" then
    list = res
  else
    return nil, "get returned a " .. type(res)
  end
  local messages = mcp.array()
  for i = 1, rawlen(list) do
    local msg, err = message(rawget(list, i))
    if not msg then return nil, "messages[" .. i .. "]: " .. err end
    messages[i] = msg
  end
  return { description = description, messages = messages, _meta = type(res) == "table" and rawget(res, "_meta") or nil }
end

-- The checks before get runs: prompt, args; or nil, code, message.
local function prepare_prompt(params)
  local p, args, msg = reg.named(params, prompts, "Invalid params: unknown prompt: ")
  if not p then return nil, args, msg end
  for k, v in pairs(args) do
    if type(v) ~= "string" then
      return nil, -32602, "Invalid params: argument " .. tostring(k) .. " must be a string"
    end
  end
  for _, a in ipairs(p.arguments) do
    if a.required and args[a.name] == nil then
      return nil, -32602, "Invalid params: missing required argument: " .. a.name
    end
  end
  return p, args
end

methods["prompts/get"] = function(params, id, _, ctx)
  local p, args, msg = prepare_prompt(params)
  if not p then return nil, args, msg end
  core.set_logger(p.plugin.name)
  ctx = ctx or decl.ctx(id)
  ctx.prompt = p.name
  local ok, code0, emsg = input.open(ctx, "prompts/get", params, p.name, args)
  if not ok then return nil, code0, emsg end
  params = nil
  local res, emsg, code = p.get(args, ctx)
  if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
  local fmsg, fcode = outcome.failure(p, "the get of prompt ", p.name, res, emsg, code)
  if fmsg then return invalid_or_internal(fmsg, fcode) end
  local result, err = prompt_result(res)
  if not result then return nil, -32603, "Internal error: prompt " .. p.name .. ": " .. err end
  return result
end
