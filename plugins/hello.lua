-- The smallest useful plugin: one tool that echoes its input.
local mcp = require "mcp"

return mcp.plugin {
  name = "hello",
  tools = {
    mcp.tool {
      name = "echo",
      title = "Echo",
      description = "Return the text it is given",
      inputSchema = {
        type = "object",
        properties = { text = { type = "string", description = "what to echo" } },
        required = { "text" },
      },
      handler = function(args) return mcp.text(args.text) end,
    },
  },
}
