-- Conformance fixtures: the prompts the server scenarios get (prompts-*) and
-- the completion of completion-complete.
local mcp = require "mcp"
local media = require "media"

return mcp.plugin {
  name = "conformance-prompts",
  prompts = {
    -- prompts-get-simple
    mcp.prompt {
      name = "test_simple_prompt",
      description = "A simple prompt without arguments",
      get = function() return "This is a simple prompt for testing." end,
    },
    -- prompts-get-with-args, completion-complete (arg1)
    mcp.prompt {
      name = "test_prompt_with_arguments",
      description = "A prompt with two required arguments",
      arguments = {
        { name = "arg1", description = "First test argument", required = true },
        { name = "arg2", description = "Second test argument", required = true },
      },
      get = function(args)
        return ("Prompt with arguments: arg1='%s', arg2='%s'"):format(args.arg1, args.arg2)
      end,
      complete = {
        arg1 = { "paris", "park", "party", "test", "testing", "value1", "value2" },
        arg2 = { "hello", "world" },
      },
    },
    -- prompts-get-embedded-resource
    mcp.prompt {
      name = "test_prompt_with_embedded_resource",
      description = "A prompt that embeds a resource",
      arguments = {
        { name = "resourceUri", description = "URI of the resource to embed", required = true },
      },
      get = function(args)
        return {
          { role = "user", content = { type = "resource", resource = {
            uri = args.resourceUri, mimeType = "text/plain",
            text = "Embedded resource content for testing." } } },
          { role = "user", content = "Please process the embedded resource above." },
        }
      end,
    },
    -- prompts-get-with-image
    mcp.prompt {
      name = "test_prompt_with_image",
      description = "A prompt with image content",
      get = function()
        return {
          { role = "user", content = { type = "image", data = media.png, mimeType = "image/png" } },
          { role = "user", content = "Please analyze the image above." },
        }
      end,
    },
  },
}
