-- Conformance fixtures: the tools the server scenarios of
-- @modelcontextprotocol/conformance call (content types, logging, errors,
-- progress, JSON Schema 2020-12 keywords, SSE polling).
local mcp = require "mcp"
local media = require "media"

local no_args = { type = "object", properties = {} }

return mcp.plugin {
  name = "conformance-tools",
  tools = {
    -- tools-call-simple-text
    mcp.tool {
      name = "test_simple_text",
      description = "Returns simple text content",
      inputSchema = no_args,
      handler = function() return mcp.text("This is a simple text response for testing.") end,
    },
    -- tools-call-image
    mcp.tool {
      name = "test_image_content",
      description = "Returns image content (a 1x1 red PNG)",
      inputSchema = no_args,
      handler = function() return mcp.image(media.png, "image/png") end,
    },
    -- tools-call-audio
    mcp.tool {
      name = "test_audio_content",
      description = "Returns audio content (a short silent WAV)",
      inputSchema = no_args,
      handler = function()
        return { content = mcp.array { { type = "audio", data = media.wav, mimeType = "audio/wav" } } }
      end,
    },
    -- tools-call-embedded-resource
    mcp.tool {
      name = "test_embedded_resource",
      description = "Returns an embedded resource",
      inputSchema = no_args,
      handler = function()
        return { content = mcp.array { {
          type = "resource",
          resource = { uri = "test://embedded-resource", mimeType = "text/plain",
                       text = "This is an embedded resource content." },
        } } }
      end,
    },
    -- tools-call-mixed-content
    mcp.tool {
      name = "test_multiple_content_types",
      description = "Returns text, image and resource content together",
      inputSchema = no_args,
      handler = function()
        return { content = mcp.array {
          { type = "text", text = "Multiple content types test:" },
          { type = "image", data = media.png, mimeType = "image/png" },
          { type = "resource", resource = { uri = "test://mixed-content-resource",
            mimeType = "application/json", text = '{"test":"data","value":123}' } },
        } }
      end,
    },
    -- tools-call-with-logging: three info messages, 50 ms apart
    mcp.tool {
      name = "test_tool_with_logging",
      description = "Sends three log messages while it runs",
      inputSchema = no_args,
      handler = function(_, ctx)
        ctx:log("info", "Tool execution started")
        ctx:sleep(0.05)
        ctx:log("info", "Tool processing data")
        ctx:sleep(0.05)
        ctx:log("info", "Tool execution completed")
        return mcp.text("Tool with logging executed successfully")
      end,
    },
    -- tools-call-error: the handler raises; the core makes it an isError result
    mcp.tool {
      name = "test_error_handling",
      description = "Always fails",
      inputSchema = no_args,
      handler = function() error("This tool intentionally returns an error for testing", 0) end,
    },
    -- tools-call-with-progress: 0, 50, 100 of 100, 50 ms apart
    mcp.tool {
      name = "test_tool_with_progress",
      description = "Reports progress 0, 50 and 100 of 100",
      inputSchema = no_args,
      handler = function(_, ctx)
        ctx:progress(0, 100)
        ctx:sleep(0.05)
        ctx:progress(50, 100)
        ctx:sleep(0.05)
        ctx:progress(100, 100)
        return mcp.text("Tool with progress executed successfully")
      end,
    },
    -- json-schema-2020-12 (run, not scored, by both requirement sets): the
    -- keywords must pass through tools/list, SEP-2106's too ($anchor,
    -- allOf/anyOf, if/then/else)
    mcp.tool {
      name = "json_schema_2020_12_tool",
      description = "Tool with JSON Schema 2020-12 features",
      inputSchema = {
        ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
        type = "object",
        ["$defs"] = {
          address = {
            ["$anchor"] = "addressDef",
            type = "object",
            properties = { street = { type = "string" }, city = { type = "string" } },
          },
        },
        properties = {
          name = { type = "string" },
          address = { ["$ref"] = "#/$defs/address" },
          contactMethod = { type = "string", enum = { "phone", "email" } },
          phone = { type = "string" },
          email = { type = "string" },
        },
        allOf = { { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
        ["if"] = { properties = { contactMethod = { const = "phone" } }, required = { "contactMethod" } },
        ["then"] = { required = { "phone" } },
        ["else"] = { required = { "email" } },
        additionalProperties = false,
      },
      handler = function(args) return mcp.text("received: " .. mcp.json.encode(args)) end,
    },
    -- server-sse-polling (2025-11-25, not scored: pending): over Streamable HTTP the transport
    -- is expected to close the POST stream before the result and deliver it
    -- after the client reconnects; the tool itself only takes a moment.
    mcp.tool {
      name = "test_reconnection",
      description = "Closes its stream's connection mid-call; the client resumes the stream (SSE polling)",
      inputSchema = no_args,
      handler = function(_, ctx)
        ctx:close_connection()
        ctx:sleep(0.2)
        return mcp.text("Reconnection test completed successfully")
      end,
    },
  },
}
