-- plugins/conformance (the fixtures the official conformance suite calls) and
-- the example plugins in plugins/, over stdio: exact names and results.
local H = require "spec.helper"
local cjson = H.cjson

local CONF = { "plugins/conformance" }

describe("conformance fixtures", function()
  after_each(H.cleanup)

  it("every fixture plugin loads and every capability is declared", function()
    local c = H.session{ plugins = CONF }
    local caps = c.init_result.capabilities
    assert.truthy(caps.tools and caps.resources and caps.prompts and caps.completions and caps.logging)
    assert.are.equal(0, c:count_stderr("plugin not loaded", true), c:stderr_text())
  end)

  it("test_simple_text returns the expected text", function()
    local c = H.session{ plugins = CONF }
    assert.are.equal("This is a simple text response for testing.", H.text(c:call("test_simple_text")))
  end)

  it("test_error_handling returns isError with the message", function()
    local c = H.session{ plugins = CONF }
    local r = c:call("test_error_handling").result
    assert.is_true(r.isError)
    assert.are.equal("This tool intentionally returns an error for testing", r.content[1].text)
  end)

  it("test_tool_with_progress sends 0, 50 and 100 of 100", function()
    local c = H.session{ plugins = CONF }
    local _, notes = c:request("tools/call", { name = "test_tool_with_progress", arguments = {},
                                               _meta = { progressToken = "p" } })
    local seen = {}
    for _, n in ipairs(notes) do
      if n.method == "notifications/progress" then seen[#seen + 1] = n.params.progress end
    end
    assert.are.same({ 0, 50, 100 }, seen)
  end)

  it("json_schema_2020_12_tool keeps $schema, $defs, additionalProperties and the SEP-2106 keywords in tools/list", function()
    local c = H.session{ plugins = CONF }
    local tool
    for _, t in ipairs(c:request("tools/list", {}).result.tools) do
      if t.name == "json_schema_2020_12_tool" then tool = t end
    end
    assert.are.equal("https://json-schema.org/draft/2020-12/schema", tool.inputSchema["$schema"])
    assert.truthy(tool.inputSchema["$defs"].address)
    assert.is_false(tool.inputSchema.additionalProperties)
    -- SEP-2106 (2026-07-28): composition, conditional and reference keywords too
    assert.are.same({ { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
                    tool.inputSchema.allOf)
    assert.are.same({ required = { "phone" } }, tool.inputSchema["then"])
    assert.are.same({ required = { "email" } }, tool.inputSchema["else"])
    assert.are.equal("phone", tool.inputSchema["if"].properties.contactMethod.const)
    assert.are.equal("addressDef", tool.inputSchema["$defs"].address["$anchor"])
  end)

  it("test_logging_tool logs only to a 2026-07-28 request that set a log level", function()
    local c = H.start{ plugins = CONF }
    local meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
                   ["io.modelcontextprotocol/clientCapabilities"] = {} }   -- cjson: {} is an object
    local r, notes = c:request("tools/call", { name = "test_logging_tool", arguments = {}, _meta = meta })
    assert.are.equal("complete", r.result.resultType)
    assert.are.equal(0, #notes, cjson.encode(notes))
    meta["io.modelcontextprotocol/logLevel"] = "warning"
    local _, logged = c:request("tools/call", { name = "test_logging_tool", arguments = {}, _meta = meta })
    local levels = {}
    for _, n in ipairs(logged) do
      if n.method == "notifications/message" then levels[#levels + 1] = n.params.level end
    end
    assert.are.same({ "warning", "error" }, levels)
  end)

  it("test://static-text and the template test://template/123/data read as specified", function()
    local c = H.session{ plugins = CONF }
    assert.are.same({ uri = "test://static-text", mimeType = "text/plain",
                      text = "This is the content of the static text resource." },
                    c:request("resources/read", { uri = "test://static-text" }).result.contents[1])
    local item = c:request("resources/read", { uri = "test://template/123/data" }).result.contents[1]
    assert.are.same({ id = "123", templateTest = true, data = "Data for ID: 123" }, cjson.decode(item.text))
  end)

  it("test_prompt_with_arguments substitutes both arguments", function()
    local c = H.session{ plugins = CONF }
    local r = c:request("prompts/get", { name = "test_prompt_with_arguments",
                                         arguments = { arg1 = "hello", arg2 = "world" } }).result
    assert.are.equal("Prompt with arguments: arg1='hello', arg2='world'", r.messages[1].content.text)
  end)

  it("completion of test_prompt_with_arguments arg1 answers a values list", function()
    local c = H.session{ plugins = CONF }
    local r = c:request("completion/complete", {
      ref = { type = "ref/prompt", name = "test_prompt_with_arguments" },
      argument = { name = "arg1", value = "test" },
    }).result
    assert.are.same({ "test", "testing" }, r.completion.values)
  end)
end)

describe("example plugins", function()
  after_each(H.cleanup)

  it("notes.lua: a note read through note://{name}, and write_note notifies its subscriber", function()
    local c = H.session{ plugins = { "plugins" } }
    assert.are.equal("buy milk", c:request("resources/read", { uri = "note://todo" }).result.contents[1].text)
    c:request("resources/subscribe", { uri = "note://todo" })
    c:call("write_note", { name = "todo", text = "buy bread" })
    assert.are.same({ uri = "note://todo" }, c:wait_notification("notifications/resources/updated").params)
    assert.are.equal("buy bread", c:request("resources/read", { uri = "note://todo" }).result.contents[1].text)
  end)

  it("notes.lua: an unknown note is -32002", function()
    local c = H.session{ plugins = { "plugins" } }
    assert.are.equal(-32002, c:request("resources/read", { uri = "note://nope" }).error.code)
  end)

  it("prompts.lua: code_review embeds the code and completes the language", function()
    local c = H.session{ plugins = { "plugins" } }
    local r = c:request("prompts/get", { name = "code_review", arguments = { code = "x = 1", language = "lua" } }).result
    assert.are.equal("Please review this lua:\nx = 1", r.messages[1].content.text)
    local comp = c:request("completion/complete", { ref = { type = "ref/prompt", name = "code_review" },
                                                    argument = { name = "language", value = "py" } }).result
    assert.are.same({ "python" }, comp.completion.values)
  end)
end)
