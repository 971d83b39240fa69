-- Resources: a static resource, a resource template with completion, and a
-- tool that changes a note and tells subscribers (resources/subscribe).
local mcp = require "mcp"

local notes = {            -- the plugin's state, kept in the Lua state
  todo = "buy milk",
  ideas = "a Lua MCP server",
}

local function names()
  local list = {}
  for name in pairs(notes) do list[#list + 1] = name end
  table.sort(list)
  return list
end

return mcp.plugin {
  name = "notes",
  resources = {
    -- A static resource: read(ctx) returns a string (text contents).
    mcp.resource {
      uri = "note://index",
      name = "index",
      title = "All notes",
      description = "The names of every note, one per line",
      mimeType = "text/plain",
      read = function() return table.concat(names(), "\n") end,
    },
    -- A template: read(params, ctx) gets the variables matched in the URI.
    -- Returning nil means "no such resource" (-32002 Resource not found).
    mcp.resource_template {
      uriTemplate = "note://{name}",
      name = "note",
      title = "A note",
      description = "One note by name",
      mimeType = "text/plain",
      read = function(params, ctx)
        local text = notes[params.name]
        if not text then return nil end
        return { text = text, uri = ctx.uri }
      end,
      -- completion/complete for {name}: the note names starting with the typed text
      complete = {
        name = function(value)
          local out = {}
          for _, n in ipairs(names()) do
            if n:sub(1, #value) == value then out[#out + 1] = n end
          end
          return out
        end,
      },
    },
  },
  tools = {
    mcp.tool {
      name = "write_note",
      description = "Write a note; subscribers of note://NAME are notified",
      inputSchema = {
        type = "object",
        properties = { name = { type = "string", pattern = "^[A-Za-z0-9_-]+$" }, text = { type = "string" } },
        required = { "name", "text" },
      },
      handler = function(args)
        notes[args.name] = args.text
        local n = mcp.notify_resource_updated("note://" .. args.name)
        return mcp.text(("saved note %s (%d subscriber(s) notified)"):format(args.name, n))
      end,
    },
  },
}
