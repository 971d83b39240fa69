-- A slow tool: progress, cooperative cancellation and a timeout policy.
local mcp = require "mcp"

return mcp.plugin {
  name = "slow",
  defaults = { timeout = 30, cancel = "cooperative", grace = 2 },
  tools = {
    mcp.tool {
      name = "count",
      description = "Count to n slowly, reporting progress; stops when cancelled",
      inputSchema = {
        type = "object",
        properties = {
          n = { type = "integer", minimum = 1, maximum = 1000 },
          delay = { type = "number", minimum = 0, maximum = 10, description = "seconds per step" },
        },
        required = { "n" },
      },
      handler = function(args, ctx)
        local delay = args.delay or 0.1
        for i = 1, args.n do
          if ctx:cancelled() then
            ctx:log("info", "stopped at " .. i .. ": " .. tostring(ctx.reason))
            return
          end
          ctx:progress(i, args.n, "counting")
          ctx:sleep(delay)
        end
        return mcp.text("counted to " .. args.n)
      end,
    },
  },
}
