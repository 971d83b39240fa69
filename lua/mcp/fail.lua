-- Failures as luamcp's functions return them, the Lua side of
-- src/lua/fail.h: nil, message, code, where code is one word of the list in
-- docs/reference/lua-api.md and the message keeps the original system name.
local core = require "mcp.core"

local M = {}

-- An outcome passed on as it came: res on success; a failure as nil,
-- message, code, and the error object only when there is one (so that a
-- cancelled wait stays exactly three values).
function M.pass(res, message, code, obj)
  if res ~= nil or obj == nil then return res, message, code end
  return nil, message, code, obj
end

-- Raise message as a programming mistake of the plugin: at the line of the
-- first frame outside luamcp's library (none when a tail call replaced it).
M.raise = core.raise

-- The triple of a wait a cancel of the running request ended.
function M.cancelled()
  return nil, "cancelled: " .. (core.reason() or "request stopped"), "cancelled"
end

return M
