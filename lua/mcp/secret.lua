-- Secrets: the values a configuration file reads with env() and file().
-- A secret is an empty table whose string is kept apart, in a weak table
-- only this module sees: tostring gives "<secret>", concatenation and
-- comparison with a string raise, the JSON encoder sees an empty object, so
-- a log line, an error message or a listing cannot show it by accident.
-- reveal(v) gives the string.
local M = {}

local values = setmetatable({}, { __mode = "k" })   -- secret -> its string

local SECRET = {
  __name = "secret",
  __tostring = function() return "<secret>" end,
  __concat = function() error("a secret cannot be concatenated (mcp.reveal gives its string)", 2) end,
  __index = function(_, k) error("a secret has no field " .. tostring(k) .. " (mcp.reveal gives its string)", 2) end,
  __newindex = function() error("a secret is read-only", 2) end,
  __metatable = "secret",
}

function M.new(s)
  local t = setmetatable({}, SECRET)
  values[t] = s
  return t
end

function M.is(v)
  return values[v] ~= nil
end

-- The string of a secret; any other value as it is.
function M.reveal(v)
  local s = values[v]
  if s ~= nil then return s end
  return v
end

return M
