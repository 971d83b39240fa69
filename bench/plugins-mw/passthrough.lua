-- One pass-through middleware on tools/call, for bench/instructions.sh's
-- "with middleware" figure (BENCH_PLUGINS=bench/plugins-mw): served beside
-- bench/plugins, it makes every echo call take the Lua chain.
local mcp = require "mcp"

return mcp.plugin {
  name = "passthrough",
  middleware = {
    mcp.middleware {
      name = "passthrough",
      methods = { "tools/call" },
      handler = function(req, ctx, next) return next(req) end,
    },
  },
}
