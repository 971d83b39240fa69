-- Middleware: which tools a caller may see and call, by the OAuth scopes of
-- its token (luamcp --auth-*: ctx.auth.scopes). The configuration file names
-- the scopes each tool needs:
--
--   return { plugins = { "plugins", visibility = { tools = { run = { "shell" } } } } }
--
-- tools/list leaves out the tools the token's scopes do not cover, and a call
-- of one is answered as for a tool that does not exist. Without a token
-- (stdio, or HTTP without --auth-*) every tool is visible, as with a tool's
-- own `scopes`. Without tools named, no middleware.
local mcp = require "mcp"

local needs = {}                  -- tool -> list of scopes
for name, scopes in pairs(mcp.settings.tools or {}) do
  needs[name] = {}
  for i, sc in ipairs(scopes) do needs[name][i] = sc end
end

local function visible(name, auth)
  local want = needs[name]
  if not want or not auth then return true end
  local have = {}
  for _, sc in ipairs(auth.scopes) do have[sc] = true end
  for _, sc in ipairs(want) do
    if not have[sc] then return false end
  end
  return true
end

local function filter(req, ctx, next)
  if req.method == "tools/call" then
    if not visible(req.params.name, ctx.auth) then
      return mcp.rpc_error(-32602, "Unknown tool: " .. tostring(req.params.name))
    end
    return next(req)
  end
  local result, msg, code, err = next(req)       -- tools/list
  if not result then return result, msg, code, err end
  local kept = mcp.array()
  for _, tool in ipairs(result.tools) do
    if visible(tool.name, ctx.auth) then kept[#kept + 1] = tool end
  end
  result.tools = kept
  return result
end

return mcp.plugin {
  name = "visibility",
  middleware = next(needs) and {
    mcp.middleware { name = "visibility", methods = { "tools/list", "tools/call" }, handler = filter },
  } or nil,
}
