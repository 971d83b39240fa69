-- Tools of the handler-I/O benchmark (bench/httpc.lua).
local mcp = require "mcp"

return mcp.plugin {
  name = "io",
  defaults = { timeout = 0 },
  tools = {
    -- n GETs of url, par at a time (par functions under mcp.all, each taking
    -- the next request until n are done); returns how many got a 200.
    mcp.tool {
      name = "get_many", description = "n GETs, par at a time",
      handler = function(args, ctx)
        local next_i, ok = 0, 0
        local workers = {}
        for w = 1, args.par do
          workers[w] = function()
            while next_i < args.n do
              next_i = next_i + 1
              local res = ctx:http{ url = args.url }
              if res and res.status == 200 then ok = ok + 1 end
            end
          end
        end
        mcp.all(workers)
        return mcp.text(tostring(ok))
      end,
    },
    -- One GET that the origin never answers: cancelled by the driver.
    mcp.tool {
      name = "hang", description = "a GET that waits",
      handler = function(args, ctx)
        local _, err = ctx:http{ url = args.url }
        return mcp.text(tostring(err))
      end,
    },
  },
}
