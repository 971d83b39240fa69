-- Conformance fixtures for protocol revision 2026-07-28: the tools the
-- server-stateless and http-custom-header-server-validation scenarios call.
local mcp = require "mcp"

return mcp.plugin {
  name = "conformance-rev2026-tools",
  tools = {
    -- server-stateless: logs at every level while it runs; a request that
    -- set no _meta["io.modelcontextprotocol/logLevel"] gets none of them
    -- (one that did gets those at or above its level).
    mcp.tool {
      name = "test_logging_tool",
      description = "Sends log messages (debug to error) while it runs",
      inputSchema = { type = "object", properties = {} },
      handler = function(_, ctx)
        for _, level in ipairs { "debug", "info", "notice", "warning", "error" } do
          ctx:log(level, "test_logging_tool: a " .. level .. " message")
          ctx:sleep(0.01)
        end
        return mcp.text("test_logging_tool: logged at debug, info, notice, warning and error")
      end,
    },
    -- http-custom-header-server-validation: its arguments are mirrored into
    -- Mcp-Param-Region, Mcp-Param-Priority and Mcp-Param-Verbose headers,
    -- which the transport checks against the body before the call runs.
    mcp.tool {
      name = "test_param_headers",
      description = "Echoes its arguments; region, priority and verbose travel as Mcp-Param-* headers too",
      inputSchema = {
        type = "object",
        properties = {
          region = { type = "string", description = "Where to run", ["x-mcp-header"] = "Region" },
          priority = { type = "integer", description = "How urgent", ["x-mcp-header"] = "Priority" },
          verbose = { type = "boolean", description = "Say more", ["x-mcp-header"] = "Verbose" },
          query = { type = "string", description = "Not mirrored" },
        },
        required = { "region" },
      },
      handler = function(args) return { structuredContent = args } end,
    },
  },
}
