-- What a handler returns or raises, as what the client gets: the table of
-- README's "Writing a tool" (spec/returns_spec.lua). A tool's returns become a CallToolResult (or,
-- from mcp.rpc_error only, a JSON-RPC error); read, get and the completion
-- functions fail as nil, message [, code] too (server.lua maps the code).
local core = require "mcp.core"

local M = {}

local RAW_MT = getmetatable(core.json_raw("{}"))
local RPC_ERROR = {
  __name = "mcp.rpc_error",
  __tostring = function(e) return string.format("JSON-RPC error %d: %s", e.code, e.message) end,
}

local function log(level, fmt, ...)
  core.log_stderr(level, string.format(fmt, ...))
end

-- mcp.rpc_error(code, message [, data]): a JSON-RPC error, returned or raised.
function M.rpc_error(code, message, data)
  if math.type(code) ~= "integer" then
    error("bad argument #1 to 'rpc_error' (integer expected, got " .. (math.type(code) or type(code)) .. ")", 2)
  end
  if type(message) ~= "string" then
    error("bad argument #2 to 'rpc_error' (string expected, got " .. type(message) .. ")", 2)
  end
  return setmetatable({ code = code, message = message, data = data }, RPC_ERROR)
end

function M.is_rpc_error(v) return getmetatable(v) == RPC_ERROR end

-- The text of an error value: a string as is; a table's message, else what
-- its __tostring says, else its JSON; anything else through tostring.
function M.message_of(v)
  if type(v) == "string" then return v end
  if type(v) ~= "table" then return tostring(v) end
  if type(v.message) == "string" then return v.message end
  local mt = getmetatable(v)
  if type(mt) == "table" and mt.__tostring then return tostring(v) end
  return core.encode(v) or tostring(v)
end

-- A message without the "file.lua:12: " that error() put in front (each of
-- them, when an error was raised again with its position).
function M.strip_position(msg)
  while true do
    local rest = msg:match("^[^\n]-%.lua:%d+: (.*)$") or msg:match('^%[string ".-"%]:%d+: (.*)$')
    if not rest then return msg end
    msg = rest
  end
end

-- What a handler raised: code, message, data for a JSON-RPC error (an
-- mcp.rpc_error); nil, message for anything else. Called by the C core
-- (sched.c), which logs the position and the traceback.
function M.raised(err)
  if M.is_rpc_error(err) then return err.code, err.message, err.data end
  if type(err) == "string" then return nil, M.strip_position(err) end
  return nil, M.message_of(err)
end

local function tool_error(msg)
  return { content = setmetatable({ { type = "text", text = msg } }, core.array_mt), isError = true }
end

local function is_list(t)
  if getmetatable(t) == core.array_mt then return true end
  local n = #t
  if n == 0 then return false end
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 or k > n then return false end
  end
  return true
end

local CONTENT_TYPES = { text = true, image = true, audio = true, resource_link = true, resource = true }

-- A list of content items (not rows that happen to have a type column).
local function is_content_list(t)
  if #t == 0 then return false end
  for _, item in ipairs(t) do
    if type(item) ~= "table" or not CONTENT_TYPES[item.type] then return false end
  end
  return true
end

local function text_of(v)
  local text, err = core.encode(v)
  if not text then return nil, "result cannot be encoded: " .. err end
  return setmetatable({ { type = "text", text = text } }, core.array_mt)
end

-- A table the handler returned, as a CallToolResult.
local function table_result(res)
  if res.content ~= nil or res.structuredContent ~= nil or res.isError ~= nil then
    if res.structuredContent ~= nil and type(res.structuredContent) == "table"
        and is_list(res.structuredContent) then
      return tool_error("structuredContent must be an object, not a list")
    end
    if res.content == nil then
      res.content = setmetatable({}, core.array_mt)
      if res.structuredContent ~= nil then
        local content, err = text_of(res.structuredContent)
        if not content then return tool_error(err) end
        res.content = content
      end
    elseif getmetatable(res.content) ~= core.array_mt then
      setmetatable(res.content, core.array_mt)
    end
    return res
  end
  if is_content_list(res) then return { content = setmetatable(res, core.array_mt) } end
  local content, err = text_of(res)
  if not content then return tool_error(err) end
  if is_list(res) then return { content = content } end   -- an object is required there
  return { content = content, structuredContent = res }
end

local warned = setmetatable({}, { __mode = "k" })   -- told about the old JSON-RPC form, by key

-- What a handler, read, get or a completion function returned, when it is
-- a failure (nil or false, message [, code]): the message and the code; nil
-- otherwise. The old nil, code, message takes the message, with a warning
-- once per key that names what (kind .. name).
function M.failure(key, kind, name, res, msg, code)
  if res ~= nil and res ~= false then return nil end
  if res == nil and msg == nil and code == nil then return nil end
  if math.type(msg) == "integer" and type(code) == "string" then
    if not warned[key] then
      warned[key] = true
      log("warning", "%s%s returned nil, %d, message: use mcp.rpc_error for a JSON-RPC error", kind, name, msg)
    end
    msg, code = code, nil
  end
  if msg == nil then return "failed", code end
  return M.message_of(msg), code
end

-- A success checked against the tool's outputSchema (a mounted tool's
-- upstream checks its own).
local function check_output(tool, result)
  local schema = tool.outputSchema
  if schema == nil or result.isError == true or tool.mounted then return result end
  local sc, err = result.structuredContent, nil
  if sc == nil then
    err = "structuredContent is missing"
  else
    local ok, why = core.validate(schema, sc)
    if not ok then err = why end
  end
  if not err then return result end
  log("warning", "tool %s: output does not match its outputSchema: %s", tool.name, err)
  return tool_error("Output does not match outputSchema: " .. err)
end

-- What tool's handler returned: a CallToolResult; or nil, code, message,
-- data for a JSON-RPC error (the C core's dispatch protocol).
function M.tool(tool, res, msg, code)
  local t = type(res)
  local result
  local fmsg, fcode = M.failure(tool, "tool ", tool.name, res, msg, code)
  if fmsg then
    if fcode ~= nil then log("debug", "tool %s failed (%s): %s", tool.name, tostring(fcode), fmsg) end
    return tool_error(fmsg)
  end
  if res == nil then
    result = { content = setmetatable({}, core.array_mt) }
  elseif t == "string" or t == "number" or t == "boolean" then
    result = { content = setmetatable({ { type = "text", text = tostring(res) } }, core.array_mt) }
  elseif M.is_rpc_error(res) then
    return nil, res.code, res.message, res.data
  elseif tool.mounted and getmetatable(res) == RAW_MT then
    return res                       -- the upstream's result, as it wrote it (mount.lua)
  elseif t == "table" then
    result = table_result(res)
  else
    log("error", "tool %s: the handler returned a %s", tool.name, t)
    return tool_error("handler returned a " .. t)
  end
  return check_output(tool, result)
end

return M
