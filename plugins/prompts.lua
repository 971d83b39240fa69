-- Prompts: a prompt with arguments, one of them completed from a list.
local mcp = require "mcp"

return mcp.plugin {
  name = "prompts",
  prompts = {
    mcp.prompt {
      name = "code_review",
      title = "Request Code Review",
      description = "Asks the model to review a piece of code",
      arguments = {
        { name = "code", description = "The code to review", required = true },
        { name = "language", description = "The language it is written in" },
      },
      -- get(args, ctx): args are strings; required ones are checked before.
      -- Return a string (one user message), a list of messages, or
      -- { description = ..., messages = { ... } }.
      get = function(args)
        local lang = args.language or "code"
        return {
          description = "Review of some " .. lang,
          messages = {
            { role = "user", content = "Please review this " .. lang .. ":\n" .. args.code },
          },
        }
      end,
      -- A list completes by prefix; a function(value, ctx) may do anything.
      complete = { language = { "c", "go", "javascript", "lua", "python", "rust", "typescript" } },
    },
  },
}
