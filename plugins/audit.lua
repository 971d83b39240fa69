-- Middleware: an audit log. Each request of the methods the configuration
-- file names is one line on the server's stderr: the method, what it names
-- (tool, prompt or URI), who asked (the OAuth subject, with --auth-*), how it
-- ended and how long it took:
--
--   return { plugins = { "plugins", audit = { methods = { "tools/call" } } } }
--
--   audit: tools/call echo by - ok in 0.2 ms
--
-- methods = "all" logs every method plugins serve. Without it, no middleware.
local mcp = require "mcp"

local methods = mcp.settings.methods
if type(methods) == "table" then
  local list = {}
  for i, m in ipairs(methods) do list[i] = m end
  methods = list
end

-- How the request ended, from what next returned.
local function outcome(result, msg, code, err)
  if result == nil then
    if code == "rpc" then return "error " .. err.code .. " (" .. msg .. ")" end
    return tostring(code or "failed") .. " (" .. tostring(msg) .. ")"
  end
  if result.isError then return "tool error" end
  return "ok"
end

local function audit(req, ctx, next)
  local started = mcp.now()
  local p = req.params
  local result, msg, code, err = next(req)
  local who = ctx.auth and ctx.auth.subject or "-"
  io.stderr:write(string.format("audit: %s %s by %s %s in %.1f ms\n", req.method,
                                tostring(p.name or p.uri or "-"), who, outcome(result, msg, code, err),
                                (mcp.now() - started) * 1000))
  return result, msg, code, err
end

return mcp.plugin {
  name = "audit",
  middleware = methods and {
    mcp.middleware {
      name = "audit",
      methods = methods ~= "all" and methods or nil,
      order = -100,                -- outermost: it sees what the others answer too
      handler = audit,
    },
  } or nil,
}
