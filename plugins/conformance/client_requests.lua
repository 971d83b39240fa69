-- Conformance fixtures: tools that call the client back (tools-call-sampling,
-- tools-call-elicitation, elicitation-sep1034-defaults,
-- elicitation-sep1330-enums). ctx:sample, ctx:elicit and ctx:roots wait for
-- the client's answer and return its result, or nil and an error.
local mcp = require "mcp"

local no_args = { type = "object", properties = {} }

-- ctx[method](ctx, params), or nil and a message when the server or the
-- client cannot do it.
local function ask(ctx, method, params)
  if type(ctx[method]) ~= "function" then return nil, "ctx:" .. method .. " is not available" end
  return ctx[method](ctx, params)
end

local function failed(what, err)
  return mcp.error(what .. " failed: " .. (type(err) == "table" and mcp.json.encode(err) or tostring(err)))
end

-- "action=accept, content={...}"
local function describe(result)
  local content = result.content ~= nil and mcp.json.encode(result.content) or "{}"
  return ("action=%s, content=%s"):format(tostring(result.action), content)
end

return mcp.plugin {
  name = "conformance-client-requests",
  tools = {
    -- tools-call-sampling
    mcp.tool {
      name = "test_sampling",
      description = "Asks the client's model to answer a prompt (sampling/createMessage)",
      inputSchema = {
        type = "object",
        properties = { prompt = { type = "string", description = "The prompt to send to the LLM" } },
        required = { "prompt" },
      },
      handler = function(args, ctx)
        local result, err = ask(ctx, "sample", {
          messages = mcp.array { { role = "user", content = { type = "text", text = args.prompt } } },
          maxTokens = 100,
        })
        if not result then return failed("Sampling", err) end
        local content = result.content
        if type(content) == "table" and content.type == nil then content = content[1] end  -- a list (2025-11-25)
        local text = type(content) == "table" and content.text or mcp.json.encode(result)
        return mcp.text("LLM response: " .. tostring(text))
      end,
    },
    -- tools-call-elicitation
    mcp.tool {
      name = "test_elicitation",
      description = "Asks the user for a username and an email (elicitation/create)",
      inputSchema = {
        type = "object",
        properties = { message = { type = "string", description = "The message to show the user" } },
        required = { "message" },
      },
      handler = function(args, ctx)
        local result, err = ask(ctx, "elicit", {
          message = args.message,
          requestedSchema = {
            type = "object",
            properties = {
              username = { type = "string", description = "User's response" },
              email = { type = "string", description = "User's email address" },
            },
            required = mcp.array { "username", "email" },
          },
        })
        if not result then return failed("Elicitation", err) end
        return mcp.text("User response: " .. describe(result))
      end,
    },
    -- elicitation-sep1034-defaults
    mcp.tool {
      name = "test_elicitation_sep1034_defaults",
      description = "Elicitation with a default for every primitive type (SEP-1034)",
      inputSchema = no_args,
      handler = function(_, ctx)
        local result, err = ask(ctx, "elicit", {
          message = "Please review and update the form fields with defaults",
          requestedSchema = {
            type = "object",
            properties = {
              name = { type = "string", description = "User name", default = "John Doe" },
              age = { type = "integer", description = "User age", default = 30 },
              score = { type = "number", description = "User score", default = 95.5 },
              status = { type = "string", description = "User status",
                         enum = mcp.array { "active", "inactive", "pending" }, default = "active" },
              verified = { type = "boolean", description = "Verification status", default = true },
            },
            required = mcp.array(),
          },
        })
        if not result then return failed("Elicitation", err) end
        return mcp.text("Elicitation completed: " .. describe(result))
      end,
    },
    -- elicitation-sep1330-enums
    mcp.tool {
      name = "test_elicitation_sep1330_enums",
      description = "Elicitation with the five enum schema variants (SEP-1330)",
      inputSchema = no_args,
      handler = function(_, ctx)
        local result, err = ask(ctx, "elicit", {
          message = "Please select options from the enum fields",
          requestedSchema = {
            type = "object",
            properties = {
              untitledSingle = { type = "string", description = "Untitled single-select",
                                 enum = mcp.array { "option1", "option2", "option3" } },
              titledSingle = { type = "string", description = "Titled single-select",
                               oneOf = mcp.array {
                                 { const = "value1", title = "First Option" },
                                 { const = "value2", title = "Second Option" },
                                 { const = "value3", title = "Third Option" },
                               } },
              legacyEnum = { type = "string", description = "Legacy titled enum",
                             enum = mcp.array { "opt1", "opt2", "opt3" },
                             enumNames = mcp.array { "Option One", "Option Two", "Option Three" } },
              untitledMulti = { type = "array", description = "Untitled multi-select",
                                items = { type = "string", enum = mcp.array { "option1", "option2", "option3" } } },
              titledMulti = { type = "array", description = "Titled multi-select",
                              items = { anyOf = mcp.array {
                                { const = "value1", title = "First Choice" },
                                { const = "value2", title = "Second Choice" },
                                { const = "value3", title = "Third Choice" },
                              } } },
            },
            required = mcp.array(),
          },
        })
        if not result then return failed("Elicitation", err) end
        return mcp.text("Elicitation completed: " .. describe(result))
      end,
    },
    -- No 2025-11-25 server scenario asks for roots; this tool shows ctx:roots().
    mcp.tool {
      name = "test_roots",
      description = "Lists the client's roots (roots/list)",
      inputSchema = no_args,
      handler = function(_, ctx)
        local result, err = ask(ctx, "roots")
        if not result then return failed("roots/list", err) end
        return mcp.text("Roots: " .. mcp.json.encode(result.roots or mcp.array()))
      end,
    },
  },
}
