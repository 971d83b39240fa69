-- Whole files, for luamcp's own Lua (a sandboxed plugin has no io): the
-- text, or nil and io's message (which names the path).
local M = {}

function M.read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  f:close()
  return text
end

-- true, or nil and a message.
function M.write(path, text)
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(text)
  local cok, cerr = f:close()
  if not ok or not cok then return nil, path .. ": " .. tostring(werr or cerr) end
  return true
end

return M
