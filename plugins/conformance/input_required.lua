-- Conformance fixtures for input-required results (2026-07-28, multi
-- round-trip requests: the input-required-result-* scenarios) and for
-- server-stateless's capability and streaming checks. The handlers use the
-- same ctx:elicit / ctx:sample / ctx:roots as under the session revisions;
-- opts.key names each input in the result, as the scenarios expect.
local mcp = require "mcp"

local no_args = { type = "object", properties = {} }

local function ask_name(message)
  return {
    message = message,
    requestedSchema = {
      type = "object",
      properties = { name = { type = "string" } },
      required = mcp.array { "name" },
    },
  }
end

local function question(text, max)
  return {
    messages = mcp.array { { role = "user", content = { type = "text", text = text } } },
    maxTokens = max,
  }
end

local confirm = {
  message = "Please confirm",
  requestedSchema = {
    type = "object",
    properties = { ok = { type = "boolean" } },
    required = mcp.array { "ok" },
  },
}

-- The text of a sampling answer (content is one block, or a list of them).
local function sampled(result)
  local c = result.content
  if type(c) == "table" and c.type == nil then c = c[1] end
  return type(c) == "table" and tostring(c.text) or mcp.json.encode(result)
end

local function failed(what, err) return mcp.error(what .. " failed: " .. tostring(err)) end

-- Asks for a confirmation; says state-ok when resumed from a verified
-- requestState (a changed one never gets here: the core refuses it).
local function confirmed(_, ctx)
  local r, err = ctx:elicit(confirm, { key = "confirm" })
  if not r then return failed("Elicitation", err) end
  return mcp.text((ctx.resumed and "state-ok" or "no state") .. ": confirmed=" .. tostring(r.content and r.content.ok))
end

return mcp.plugin {
  name = "conformance-input-required",
  tools = {
    mcp.tool {
      name = "test_input_required_result_elicitation",
      description = "Asks the user's name (elicitation), then greets them",
      inputSchema = no_args,
      handler = function(_, ctx)
        local r, err = ctx:elicit(ask_name("What is your name?"), { key = "user_name" })
        if not r then return failed("Elicitation", err) end
        if r.action ~= "accept" then return mcp.text("No name given (" .. r.action .. ")") end
        return mcp.text("Hello, " .. tostring(r.content and r.content.name) .. "!")
      end,
    },
    mcp.tool {
      name = "test_input_required_result_sampling",
      description = "Asks the client's model a question (sampling)",
      inputSchema = no_args,
      handler = function(_, ctx)
        local r, err = ctx:sample(question("What is the capital of France?", 100), { key = "capital_question" })
        if not r then return failed("Sampling", err) end
        return mcp.text("The model says: " .. sampled(r))
      end,
    },
    mcp.tool {
      name = "test_input_required_result_list_roots",
      description = "Lists the client's roots",
      inputSchema = no_args,
      handler = function(_, ctx)
        local roots, err = ctx:roots { key = "client_roots" }
        if not roots then return failed("roots/list", err) end
        local uris = {}
        for _, r in ipairs(roots) do uris[#uris + 1] = tostring(r.uri) end
        return mcp.text("Roots: " .. table.concat(uris, ", "))
      end,
    },
    mcp.tool {
      name = "test_input_required_result_request_state",
      description = "Asks for a confirmation; says state-ok when resumed from a verified requestState",
      inputSchema = no_args,
      handler = confirmed,
    },
    mcp.tool {
      name = "test_input_required_result_tampered_state",
      description = "Asks for a confirmation; a changed requestState is refused by the core",
      inputSchema = no_args,
      handler = confirmed,
    },
    mcp.tool {
      name = "test_input_required_result_multiple_inputs",
      description = "Asks for a name, a greeting from the model and the roots at once",
      inputSchema = no_args,
      handler = function(_, ctx)
        local r, errs = ctx:input {
          user_name = { method = "elicitation/create", params = ask_name("What is your name?") },
          greeting = { method = "sampling/createMessage", params = question("Generate a greeting", 50) },
          client_roots = { method = "roots/list" },
        }
        for k, e in pairs(errs) do return failed(k, e) end
        return mcp.text(string.format("%s, %s (%d roots)", sampled(r.greeting),
          tostring(r.user_name.content and r.user_name.content.name), #r.client_roots.roots))
      end,
    },
    mcp.tool {
      name = "test_input_required_result_multi_round",
      description = "Asks for a name, then for a favourite colour: two rounds",
      inputSchema = no_args,
      handler = function(_, ctx)
        local a, err = ctx:elicit(ask_name("Step 1: What is your name?"), { key = "step1" })
        if not a then return failed("Step 1", err) end
        local b, err2 = ctx:elicit({
          message = "Step 2: What is your favourite colour?",
          requestedSchema = { type = "object", properties = { color = { type = "string" } },
                              required = mcp.array { "color" } },
        }, { key = "step2" })
        if not b then return failed("Step 2", err2) end
        return mcp.text(string.format("%s likes %s", tostring(a.content and a.content.name),
                                      tostring(b.content and b.content.color)))
      end,
    },
    mcp.tool {
      name = "test_input_required_result_capabilities",
      description = "Asks for a name and a model answer, each only if the client can give it",
      inputSchema = no_args,
      handler = function(_, ctx)
        local r, errs = ctx:input {
          user_name = { method = "elicitation/create", params = ask_name("What is your name?") },
          capital_question = { method = "sampling/createMessage", params = question("What is the capital of France?", 100) },
        }
        local got = {}
        for k in pairs(r) do got[#got + 1] = k end
        for k, e in pairs(errs) do got[#got + 1] = k .. " unavailable (" .. e .. ")" end
        table.sort(got)
        return mcp.text(table.concat(got, "; "))
      end,
    },
    -- server-stateless: -32021 when the client did not declare sampling
    mcp.tool {
      name = "test_missing_capability",
      description = "Needs sampling: refused with -32021 when the client does not declare it",
      inputSchema = no_args,
      handler = function(_, ctx)
        ctx:require("sampling")
        local r, err = ctx:sample(question("Say hello", 20), { key = "hello" })
        if not r then return failed("Sampling", err) end
        return mcp.text(sampled(r))
      end,
    },
    -- server-stateless: the request's stream carries notifications and the
    -- result only, never a request of the server's
    mcp.tool {
      name = "test_streaming_elicitation",
      description = "Reports progress, then asks the user (an input-required result, not a request)",
      inputSchema = no_args,
      handler = function(_, ctx)
        ctx:log("info", "about to ask the user")
        ctx:progress(1, 2, "asking")
        local r, err = ctx:elicit(ask_name("What is your name?"), { key = "user_name" })
        if not r then return failed("Elicitation", err) end
        return mcp.text("Hello, " .. tostring(r.content and r.content.name) .. "!")
      end,
    },
  },
  prompts = {
    mcp.prompt {
      name = "test_input_required_result_prompt",
      description = "A prompt that asks the user for its context first",
      get = function(_, ctx)
        local r, err = ctx:elicit({
          message = "What context should the prompt use?",
          requestedSchema = { type = "object", properties = { context = { type = "string" } },
                              required = mcp.array { "context" } },
        }, { key = "user_context" })
        if not r then error("elicitation failed: " .. tostring(err)) end
        return "Use this context: " .. tostring(r.content and r.content.context)
      end,
    },
  },
}
