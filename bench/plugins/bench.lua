-- The benchmark's tools for luamcp (bench/run.sh serves this directory with
-- `luamcp --plugins bench/plugins --log-level warning`).  bench/ts-server.mjs
-- has the same three tools on the TypeScript SDK.
local mcp = require "mcp"

return mcp.plugin {
  name = "bench",
  -- no timeout: a sleeping call waits until the driver cancels it
  defaults = { timeout = 0 },
  tools = {
    mcp.tool {
      name = "echo",
      description = "Echo the text back",
      inputSchema = {
        type = "object",
        properties = { text = { type = "string" } },
        required = { "text" },
      },
      handler = function(args)
        return mcp.text(args.text)
      end,
    },

    mcp.tool {
      name = "sleep",
      description = "Sleep; on a cancel, log \"stopped\" and return",
      inputSchema = {
        type = "object",
        properties = { seconds = { type = "number", minimum = 0 } },
        required = { "seconds" },
      },
      handler = function(args, ctx)
        local ok = ctx:sleep(args.seconds)
        if not ok then
          ctx:log("info", "stopped")
          return
        end
        return mcp.text("slept")
      end,
    },

    mcp.tool {
      name = "spin",
      description = "Busy-loop for the given seconds, never yielding",
      inputSchema = {
        type = "object",
        properties = { seconds = { type = "number", minimum = 0 } },
        required = { "seconds" },
      },
      -- runs its full time: the bench measures pings served meanwhile
      cancel = "ignore",
      handler = function(args)
        local stop = mcp.now() + args.seconds
        local n = 0
        while mcp.now() < stop do n = n + 1 end
        return mcp.text("spun " .. n)
      end,
    },
  },
}
