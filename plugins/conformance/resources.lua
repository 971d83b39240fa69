-- Conformance fixtures: the resources the server scenarios read and
-- subscribe to (resources-*).
local mcp = require "mcp"
local media = require "media"

return mcp.plugin {
  name = "conformance-resources",
  resources = {
    -- resources-read-text
    mcp.resource {
      uri = "test://static-text",
      name = "static-text",
      description = "A static text resource",
      mimeType = "text/plain",
      read = function() return "This is the content of the static text resource." end,
    },
    -- resources-read-binary
    mcp.resource {
      uri = "test://static-binary",
      name = "static-binary",
      description = "A static binary resource (a 1x1 red PNG)",
      mimeType = "image/png",
      read = function() return { blob = media.png } end,
    },
    -- resources-subscribe, resources-unsubscribe
    mcp.resource {
      uri = "test://watched-resource",
      name = "watched-resource",
      description = "A resource to subscribe to",
      mimeType = "text/plain",
      read = function() return "Watched resource content." end,
    },
    -- resources-templates-read
    mcp.resource_template {
      uriTemplate = "test://template/{id}/data",
      name = "template-data",
      description = "Data for an id, from a template",
      mimeType = "application/json",
      read = function(params)
        return mcp.json.encode { id = params.id, templateTest = true, data = "Data for ID: " .. params.id }
      end,
    },
  },
}
