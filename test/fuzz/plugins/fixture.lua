-- The fuzz targets' plugin (fuzz_headers, fuzz_session): tools, with
-- x-mcp-header arguments and input from the client, a resource, a
-- template and a prompt. Nothing waits on time, so every call ends within
-- a few loop turns (but those waiting on the client, which the target
-- cancels at the end).
local mcp = require "mcp"

local function ask(field)
  return {
    message = "Your " .. field .. "?",
    requestedSchema = { type = "object", properties = { [field] = { type = "string" } },
                        required = mcp.array { field } },
  }
end

return mcp.plugin {
  name = "fixture",
  tools = {
    mcp.tool {
      name = "mirror", description = "Echoes its arguments; four of them are mirrored in headers",
      inputSchema = {
        type = "object",
        properties = {
          region = { type = "string", ["x-mcp-header"] = "Region" },
          count = { type = "integer", ["x-mcp-header"] = "Count" },
          ratio = { type = "number" },
          flag = { type = "boolean", ["x-mcp-header"] = "Flag" },
          opts = {
            type = "object",
            properties = { tenant = { type = "string", ["x-mcp-header"] = "Tenant" } },
          },
          note = { type = "string" },
        },
      },
      handler = function(args) return mcp.text(mcp.json.encode(args)) end,
    },
    mcp.tool {
      name = "echo", description = "Returns its text",
      inputSchema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
      handler = function(args) return mcp.text(args.text) end,
    },
    mcp.tool {
      name = "structured", description = "Returns structured content",
      inputSchema = { type = "object", properties = { n = { type = "integer" } } },
      outputSchema = { type = "object", properties = { n = { type = "integer" } } },
      handler = function(args) return { structuredContent = { n = args.n or 0 } } end,
    },
    mcp.tool {
      name = "fail", description = "Raises an error",
      inputSchema = { type = "object" },
      handler = function() error("fixture failure") end,
    },
    mcp.tool {
      name = "ask", description = "Asks the client for a name (input-required in 2026-07-28)",
      inputSchema = { type = "object" },
      handler = function(_, ctx)
        local r, err = ctx:elicit(ask("name"), { key = "name" })
        if not r then return mcp.error(err) end
        return mcp.text(tostring(r.content and r.content.name))
      end,
    },
  },
  resources = {
    mcp.resource {
      uri = "fixture://index", name = "index", mimeType = "text/plain",
      read = function() return "index" end,
    },
    mcp.resource_template {
      uriTemplate = "fixture://item/{name}.{ext}", name = "item", mimeType = "text/plain",
      complete = { ext = function(prefix) return { "txt", "md" } end },
      read = function(params) return params.name .. "." .. params.ext end,
    },
  },
  prompts = {
    mcp.prompt {
      name = "greet", description = "Greets someone",
      arguments = { { name = "who", required = true } },
      get = function(args) return "Hello, " .. args.who end,
    },
  },
}
