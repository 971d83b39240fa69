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

-- What the host reads from a plugin it reads raw: rawget, rawlen, next,
-- rawequal and the real metatable (debug.getmetatable), never through a
-- metamethod, so that no code of the plugin's runs here, where no slice or
-- deadline of its call may reach it (the C core reads a raised error after
-- the handler's coroutine died). The one exception is an error object's
-- __tostring, run under core.guarded_tostring's time limit (guard.c).
-- ARCHITECTURE.md, "What the host reads from a plugin".
local rawget, rawlen, rawequal, next, type, mtype = rawget, rawlen, rawequal, next, type, math.type
local realmt = debug.getmetatable

function M.is_rpc_error(v) return rawequal(realmt(v), RPC_ERROR) end

-- tostring(v) where v may have a __tostring of a plugin's.
local function guarded_tostring(v)
  local s, why = core.guarded_tostring(v)
  return s or "(an error object, a " .. type(v) .. ", whose __tostring " .. why .. ")"
end

-- The text of an error value: a string as is; a table's message, else what
-- its __tostring says, else its JSON; anything else through tostring.
function M.message_of(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" or t == "boolean" or t == "nil" then return tostring(v) end
  if t == "table" then
    local m = rawget(v, "message")
    if type(m) == "string" then return m end
    local mt = realmt(v)
    if not (mt and rawget(mt, "__tostring") ~= nil) then
      local text = core.encode(v)
      if text then return text end
    end
  end
  return guarded_tostring(v)
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
  if M.is_rpc_error(err) then return rawget(err, "code"), rawget(err, "message"), rawget(err, "data") end
  if type(err) == "string" then return nil, M.strip_position(err) end
  return nil, M.message_of(err)
end

local function array(t) return setmetatable(t, core.array_mt) end

local function tool_error(msg)
  return { content = array { { type = "text", text = msg } }, isError = true }
end

-- v as the author wrote it, for a message: a string ("oops"), a number (42), a table.
local function describe(v)
  local t = type(v)
  if t == "string" then
    if #v > 40 then v = v:sub(1, 37) .. "..." end
    return 'a string ("' .. v .. '")'
  end
  if t == "number" or t == "boolean" then return "a " .. t .. " (" .. tostring(v) .. ")" end
  return "a " .. t
end

-- The keys of t: the length of its list part (1 to n), and the first key
-- beside it (nil when it is a list).
local function shape_of(t)
  local n = rawlen(t)
  for k in next, t do
    if mtype(k) ~= "integer" or k < 1 or k > n then return n, k end
  end
  return n, nil
end

local function key_text(k)
  if type(k) == "string" then return k end
  return "[" .. (type(k) == "number" and tostring(k) or type(k)) .. "]"
end

local function is_list(t)
  if rawequal(realmt(t), core.array_mt) then return true end
  local n, other = shape_of(t)
  return n > 0 and other == nil
end

-- What an item of each content type needs: its fields and their Lua type.
local CONTENT_TYPES = {
  text = { "text", "string" },
  image = { "data", "string", "mimeType", "string" },
  audio = { "data", "string", "mimeType", "string" },
  resource_link = { "uri", "string", "name", "string" },
  resource = { "resource", "table" },
}
local TYPE_NAMES = "text, image, audio, resource_link or resource"

-- What is wrong with content item i, or nil.
local function bad_item(i, item)
  local at = "content[" .. i .. "]"
  if type(item) ~= "table" then
    return at .. " is " .. describe(item) .. ': expected a content item, such as { type = "text", text = "..." }'
  end
  local ty = rawget(item, "type")
  local needs = type(ty) == "string" and CONTENT_TYPES[ty]
  if not needs then
    if ty == nil then return at .. " has no type: expected one of " .. TYPE_NAMES end
    return at .. "'s type is " .. (type(ty) == "string" and '"' .. ty .. '"' or describe(ty)) ..
           ": expected one of " .. TYPE_NAMES
  end
  for j = 1, #needs, 2 do
    local field, want = needs[j], needs[j + 1]
    local v = rawget(item, field)
    if type(v) ~= want then
      return at .. ' (type "' .. ty .. '") needs ' .. field .. ", a " .. want .. "; it has " ..
             (v == nil and "none" or describe(v))
    end
  end
end

-- content as the list the client gets (an mcp.array of its items, the
-- author's table left as it is); or nil, what is wrong with it.
local function content_list(content)
  if type(content) ~= "table" then
    return nil, "content is " .. describe(content) ..
                ': expected a list of content items, such as { { type = "text", text = "..." } }'
  end
  local n, other = shape_of(content)
  if other ~= nil then
    return nil, "content has the key " .. key_text(other) .. ": expected a list of content items"
  end
  local out = array {}
  for i = 1, n do
    local item = rawget(content, i)
    local err = bad_item(i, item)
    if err then return nil, err end
    out[i] = item
  end
  return out
end

-- A list of content items (not rows that happen to have a type column).
local function is_content_list(t)
  local n, other = shape_of(t)
  if n == 0 or other ~= nil then return false end
  for i = 1, n do
    local item = rawget(t, i)
    if type(item) ~= "table" or bad_item(i, item) then return false end
  end
  return true
end

local function text_of(v)
  local text, err = core.encode(v)
  if not text then return nil, "result cannot be encoded: " .. err end
  return array { { type = "text", text = text } }
end

-- What is wrong with a table as structured content (an object), or nil.
local function bad_object(t, what)
  if rawequal(realmt(t), core.array_mt) then return what .. " must be an object, not a list" end
  local n, other = shape_of(t)
  if n > 0 and other == nil then return what .. " must be an object, not a list" end
  if n > 0 then
    return what .. " mixes a list (1 to " .. n .. ") and keys (" .. key_text(other) ..
           "): expected an object (string keys) or a list, not both"
  end
end

-- A table with content, structuredContent or isError: that CallToolResult,
-- in a table of its own; or nil, what is wrong with it.
local function call_result(res)
  local sc, is_error = rawget(res, "structuredContent"), rawget(res, "isError")
  if is_error ~= nil and type(is_error) ~= "boolean" then
    return nil, "isError is " .. describe(is_error) .. ": expected true or false"
  end
  if sc ~= nil then
    if type(sc) ~= "table" then
      return nil, "structuredContent is " .. describe(sc) .. ": expected an object (a table with string keys)"
    end
    local err = bad_object(sc, "structuredContent")
    if err then return nil, err end
  end
  local out = {}
  for k, v in next, res do out[k] = v end
  local content, err = rawget(res, "content"), nil
  if content == nil then
    content = array {}
    if sc ~= nil then content, err = text_of(sc) end
  else
    content, err = content_list(content)
  end
  if not content then return nil, err end
  out.content = content
  return out
end

-- A table the handler returned, as a CallToolResult; or nil, what is wrong.
local function table_result(res)
  if rawget(res, "content") ~= nil or rawget(res, "structuredContent") ~= nil or rawget(res, "isError") ~= nil then
    return call_result(res)
  end
  if is_content_list(res) then
    local out = array {}
    for i = 1, rawlen(res) do out[i] = rawget(res, i) end
    return { content = out }
  end
  local content, err = text_of(res)
  if not content then return nil, err end
  if is_list(res) then return { content = content } end   -- an object is required there
  err = bad_object(res, "the result")
  if err then return nil, err end
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
  if schema == nil or rawget(result, "isError") == true or tool.mounted then return result end
  local sc, err = rawget(result, "structuredContent"), nil
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

-- Where tool's handler is: "plugin P, FILE:LINE" (a mounted tool's is the
-- mount's: its plugin only; a sandboxed one's, the plugin's function, not
-- the sandbox's wrapper of it).
local function where(tool)
  local plugin = type(tool.plugin) == "table" and tool.plugin.name
  local handler, at = tool.own_handler or tool.handler, ""
  if not tool.mounted and type(handler) == "function" then
    local info = debug.getinfo(handler, "S")
    if info.what == "Lua" then at = info.short_src .. ":" .. info.linedefined end
  end
  if plugin and at ~= "" then return " (plugin " .. plugin .. ", " .. at .. ")" end
  if plugin then return " (plugin " .. plugin .. ")" end
  return at ~= "" and " (" .. at .. ")" or ""
end

local told = setmetatable({}, { __mode = "k" })   -- tool -> {message = true}: warned once each

local function warn_once(tool, msg)
  local seen = told[tool]
  if not seen then
    seen = {}
    told[tool] = seen
  end
  if seen[msg] then return end
  seen[msg] = true
  log("warning", "tool %s%s: %s", tool.name, where(tool), msg)
end

-- A result the author wrote wrong: a tool error saying what is wrong, and a
-- warning naming the tool (once per tool and mistake).
local function malformed(tool, msg)
  warn_once(tool, "returned a malformed result: " .. msg)
  return tool_error(msg)
end

-- What tool's handler returned: a CallToolResult; or nil, code, message,
-- data for a JSON-RPC error (the C core's dispatch protocol). A value after
-- a success is the author's mistake (only a failure has a message) or a
-- Lua function's extra (string.gsub's count): warned about, not sent.
function M.tool(tool, res, msg, code)
  local t = type(res)
  local result, err
  local fmsg, fcode = M.failure(tool, "tool ", tool.name, res, msg, code)
  if fmsg then
    if fcode ~= nil then log("debug", "tool %s failed (%s): %s", tool.name, describe(fcode), fmsg) end
    return tool_error(fmsg)
  end
  if res ~= nil and msg ~= nil then
    warn_once(tool, "returned more than one value: the first is the result, the second (" .. describe(msg) ..
                    ") is ignored (a message goes with nil or false: return nil, \"message\")")
  end
  if res == nil then
    result = { content = array {} }
  elseif t == "string" or t == "number" or t == "boolean" then
    result = { content = array { { type = "text", text = tostring(res) } } }
  elseif M.is_rpc_error(res) then
    return nil, rawget(res, "code"), rawget(res, "message"), rawget(res, "data")
  elseif tool.mounted and rawequal(realmt(res), RAW_MT) then
    return res                       -- the upstream's result, as it wrote it (mount.lua)
  elseif t == "table" then
    result, err = table_result(res)
    if not result then return malformed(tool, err) end
  else
    log("error", "tool %s%s: the handler returned a %s", tool.name, where(tool), t)
    return tool_error("handler returned a " .. t)
  end
  return check_output(tool, result)
end

return M
