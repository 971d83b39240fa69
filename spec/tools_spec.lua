-- tools/list and tools/call: results, errors, validation, progress, logging, limits.
local H = require "spec.helper"
local cjson = H.cjson

local function list_all(c, params)
  local names, pages, cursor = {}, 0, nil
  repeat
    local resp = c:request("tools/list", cursor and { cursor = cursor } or (params or {}))
    assert(resp.result, cjson.encode(resp))
    pages = pages + 1
    for _, t in ipairs(resp.result.tools) do names[#names + 1] = t.name end
    cursor = resp.result.nextCursor
    assert(pages < 50, "pagination does not end")
  until cursor == nil
  return names, pages
end

local function find_tool(c, name)
  local resp = c:request("tools/list", {})
  for _, t in ipairs(resp.result.tools) do if t.name == name then return t end end
end

describe("tools", function()
  after_each(H.cleanup)

  describe("tools/list", function()
    it("lists every fixture tool with a name, a description and an object inputSchema", function()
      local c = H.session()
      local resp = c:request("tools/list", {})
      local seen = {}
      for _, t in ipairs(resp.result.tools) do
        seen[t.name] = true
        assert.are.equal("string", type(t.description), t.name)
        assert.are.equal("table", type(t.inputSchema), t.name)
        assert.are.equal("object", t.inputSchema.type, t.name)
      end
      for _, name in ipairs { "echo", "structured", "nothing", "sleep", "spin", "progress", "validate", "hog" } do
        assert.is_true(seen[name] == true, "missing tool " .. name)
      end
    end)

    it("a tool declared without inputSchema is listed with {\"type\":\"object\"}", function()
      local c = H.session()
      local t = find_tool(c, "nothing")
      assert.are.equal("object", t.inputSchema.type)
    end)

    it("title, outputSchema and annotations pass through", function()
      local c = H.session()
      local t = find_tool(c, "structured")
      assert.are.equal("Structured Result", t.title)
      assert.are.equal("object", t.outputSchema.type)
      assert.are.same({ "answer" }, t.outputSchema.required)
      assert.are.same({ readOnlyHint = true, idempotentHint = true }, t.annotations)
    end)

    it("schema arrays stay arrays and unchecked keywords pass through", function()
      local c = H.session()
      local t = find_tool(c, "validate")
      local _, _, raw = c:request("tools/list", {})
      assert.are.same({ "name", "count" }, t.inputSchema.required)
      assert.are.same({ "string", "integer" }, t.inputSchema.properties.either.type)
      assert.are.equal("^[0-9]+$", t.inputSchema.properties.code.pattern)
      assert.is_false(t.inputSchema.additionalProperties)
      assert.truthy(raw:find('"required":["name","count"]', 1, true), raw)
    end)

    it("with --page-size 2, five tools come in pages of 2, 2 and 1 with nextCursor", function()
      local c = H.session{ plugins = { "spec/fixtures/paging" }, args = { "--page-size", "2" } }
      local r1 = c:request("tools/list", {}).result
      assert.are.equal(2, #r1.tools)
      assert.are.equal("string", type(r1.nextCursor))
      local r2 = c:request("tools/list", { cursor = r1.nextCursor }).result
      assert.are.equal(2, #r2.tools)
      assert.are.equal("string", type(r2.nextCursor))
      local r3 = c:request("tools/list", { cursor = r2.nextCursor }).result
      assert.are.equal(1, #r3.tools)
      assert.is_nil(r3.nextCursor)
      local names = {}
      for _, r in ipairs { r1, r2, r3 } do
        for _, t in ipairs(r.tools) do names[#names + 1] = t.name end
      end
      table.sort(names)
      assert.are.same({ "page_tool_1", "page_tool_2", "page_tool_3", "page_tool_4", "page_tool_5" }, names)
    end)

    it("with the default page size all five tools come in one page without nextCursor", function()
      local c = H.session{ plugins = { "spec/fixtures/paging" } }
      local r = c:request("tools/list", {}).result
      assert.are.equal(5, #r.tools)
      assert.is_nil(r.nextCursor)
    end)

    it("pagination over all fixtures lists every tool exactly once", function()
      local c = H.session{ args = { "--page-size", "3" } }
      local names, pages = list_all(c)
      assert.is_true(pages > 1)
      local seen = {}
      for _, n in ipairs(names) do
        assert.is_nil(seen[n], "listed twice: " .. n)
        seen[n] = true
      end
      local big = H.session{ args = { "--page-size", "1000" } }
      local every = big:request("tools/list", {}).result
      assert.is_nil(every.nextCursor)
      assert.are.equal(#every.tools, #names)
    end)

    it("an invalid cursor is answered -32602", function()
      local c = H.session{ plugins = { "spec/fixtures/paging" }, args = { "--page-size", "2" } }
      local resp = c:request("tools/list", { cursor = "not-a-cursor" })
      assert.is_nil(resp.result)
      assert.are.equal(-32602, resp.error.code)
    end)
  end)

  describe("tools/call results", function()
    it("mcp.text returns one text content item and isError absent or false", function()
      local c = H.session()
      local resp = c:call("echo", { text = "hello" })
      assert.are.same({ { type = "text", text = "hello" } }, resp.result.content)
      assert.is_not_true(resp.result.isError)
    end)

    it("a string return becomes one text content item", function()
      local c = H.session()
      local resp = c:call("echo_string", { text = "s" })
      assert.are.same({ { type = "text", text = "string:s" } }, resp.result.content)
    end)

    it("a full result table passes through, structuredContent included", function()
      local c = H.session()
      local resp, _, raw = c:call("structured", {})
      local r = resp.result
      assert.are.same({ { type = "text", text = '{"answer":42}' } }, r.content)
      assert.are.equal(42, r.structuredContent.answer)
      assert.are.equal(0.5, r.structuredContent.ratio)
      assert.are.same({ "a", "b" }, r.structuredContent.words)
      assert.are.same({ ok = true }, r.structuredContent.nested)
      assert.are.equal(cjson.null, r.structuredContent.nothing)
      assert.truthy(raw:find('"empty":[]', 1, true), raw)
      assert.truthy(raw:find('"answer":42[,}]'), raw)
      assert.truthy(raw:find('"ratio":0.5[,}]'), raw)
    end)

    it("returning nothing gives \"content\":[]", function()
      local c = H.session()
      local resp, _, raw = c:call("nothing", {})
      assert.are.equal("table", type(resp.result.content))
      assert.truthy(raw:find('"content":[]', 1, true), raw)
    end)

    it("mcp.error gives isError true with the message", function()
      local c = H.session()
      local resp = c:call("soft_error", {})
      assert.is_true(resp.result.isError)
      assert.are.equal("soft failure", H.text(resp))
    end)

    it("a Lua error in a handler is an isError result with the message, and the traceback is logged", function()
      local c = H.session()
      local resp = c:call("fail", {})
      assert.is_nil(resp.error)
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):find("boom", 1, true), H.text(resp))
      c:expect_stderr("traceback", 5)
    end)

    it("a helper module from the plugin directory's lib/ is found", function()
      local c = H.session()
      assert.are.equal("LOUD", H.text(c:call("shout", { text = "loud" })))
    end)

    it("arguments may be omitted when the schema requires nothing", function()
      local c = H.session()
      local resp = c:request("tools/call", { name = "nothing" })
      assert.is_nil(resp.error)
      assert.is_not_true(resp.result.isError)
    end)
  end)

  describe("input validation", function()
    local function validate(c, json_args)
      return c:request("tools/call", '{"name":"validate","arguments":' .. json_args .. '}')
    end

    it("valid arguments reach the handler, bounds inclusive where the schema says so", function()
      local c = H.session()
      for _, args in ipairs {
        '{"name":"ab","count":1}',
        '{"name":"abcde","count":10,"ratio":0.5,"flag":false,"nothing":null,"either":"s",' ..
          '"color":"red","fixed":"k","tags":["x","y","z"],"extra":{"a":1,"b":2}}',
        '{"name":"ab","count":3,"either":3,"tags":["one"]}',
        '{"name":"ab","count":3,"code":"not digits: pattern is not checked"}',
      } do
        local resp = validate(c, args)
        assert.is_not_true(resp.result.isError, args .. " -> " .. tostring(H.text(resp)))
        assert.truthy(H.text(resp):find("^valid ab"), args)
      end
    end)

    local cases = {
      { "required", '{"name":"ab"}', "count" },
      { "type string", '{"name":12,"count":1}', "name" },
      { "minLength", '{"name":"a","count":1}', "name" },
      { "maxLength", '{"name":"abcdef","count":1}', "name" },
      { "type integer", '{"name":"ab","count":1.5}', "count" },
      { "minimum", '{"name":"ab","count":0}', "count" },
      { "maximum", '{"name":"ab","count":11}', "count" },
      { "exclusiveMinimum", '{"name":"ab","count":1,"ratio":0}', "ratio" },
      { "exclusiveMaximum", '{"name":"ab","count":1,"ratio":1}', "ratio" },
      { "type number", '{"name":"ab","count":1,"ratio":"half"}', "ratio" },
      { "type boolean", '{"name":"ab","count":1,"flag":"yes"}', "flag" },
      { "type null", '{"name":"ab","count":1,"nothing":0}', "nothing" },
      { "type list", '{"name":"ab","count":1,"either":true}', "either" },
      { "enum", '{"name":"ab","count":1,"color":"blue"}', "color" },
      { "const", '{"name":"ab","count":1,"fixed":"j"}', "fixed" },
      { "type array", '{"name":"ab","count":1,"tags":"x"}', "tags" },
      { "items", '{"name":"ab","count":1,"tags":["x",2]}', "tags" },
      { "minItems", '{"name":"ab","count":1,"tags":[]}', "tags" },
      { "maxItems", '{"name":"ab","count":1,"tags":["a","b","c","d"]}', "tags" },
      { "additionalProperties schema", '{"name":"ab","count":1,"extra":{"a":"x"}}', "extra" },
      { "additionalProperties false", '{"name":"ab","count":1,"bogus":1}', "bogus" },
      { "type object (arguments)", '[1,2]', nil },
    }
    for _, case in ipairs(cases) do
      local keyword, args, field = case[1], case[2], case[3]
      it(keyword .. " failure is an isError result" .. (field and (" naming " .. field) or "") ..
         " and the handler does not run", function()
        local c = H.session()
        local resp = validate(c, args)
        if resp.error then
          -- arguments that are not an object may also be refused as invalid params
          assert.is_nil(field, "JSON-RPC error instead of an isError result: " .. cjson.encode(resp))
          assert.are.equal(-32602, resp.error.code)
          return
        end
        assert.is_true(resp.result.isError, args .. " was accepted: " .. tostring(H.text(resp)))
        local text = H.text(resp)
        assert.is_nil(text:find("^valid"), text)
        if field then assert.truthy(text:find(field, 1, true), "message does not name " .. field .. ": " .. text) end
      end)
    end
  end)

  describe("progress", function()
    it("with _meta.progressToken, progress notifications carry the token and increase", function()
      local c = H.session()
      local resp = c:request("tools/call", { name = "progress", arguments = { n = 5 },
                                              _meta = { progressToken = "tok-1" } })
      assert.are.equal("progressed 5", H.text(resp))
      local seen = {}
      for _, n in ipairs(c.notes) do
        if n.method == "notifications/progress" then seen[#seen + 1] = n.params end
      end
      assert.are.equal(5, #seen)
      for i, p in ipairs(seen) do
        assert.are.equal("tok-1", p.progressToken)
        assert.are.equal(i, p.progress)
        assert.are.equal(5, p.total)
        assert.are.equal("step " .. i, p.message)
        if i > 1 then assert.is_true(p.progress > seen[i - 1].progress) end
      end
    end)

    it("an integer progressToken is echoed exactly", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress",' ..
             '"arguments":{"n":2},"_meta":{"progressToken":9007199254740993}}}\n')
      local tokens = {}
      for _ = 1, 3 do
        local m, raw = c:recv()
        assert(m, raw)
        if m.method == "notifications/progress" then
          tokens[#tokens + 1] = H.raw_member(H.raw_member(raw, "params"), "progressToken")
        end
      end
      assert.are.same({ "9007199254740993", "9007199254740993" }, tokens)
    end)

    it("progress notifications come before the response", function()
      local c = H.session()
      local _, notes = c:request("tools/call", { name = "progress", arguments = { n = 3 },
                                                  _meta = { progressToken = 7 } })
      local n = 0
      for _, m in ipairs(notes) do if m.method == "notifications/progress" then n = n + 1 end end
      assert.are.equal(3, n)
      c:no_message()
    end)

    it("without _meta.progressToken no progress notification is sent", function()
      local c = H.session()
      local resp = c:call("progress", { n = 3 })
      assert.are.equal("progressed 3", H.text(resp))
      c:request("ping")
      for _, n in ipairs(c.notes) do assert.are_not.equal("notifications/progress", n.method) end
    end)
  end)

  describe("logging", function()
    local function levels_logged(c, since)
      local got = {}
      for i = since + 1, #c.notes do
        local n = c.notes[i]
        if n.method == "notifications/message" and type(n.params.data) == "string" then
          got[#got + 1] = n.params.level
        end
      end
      return got
    end

    it("ctx:log sends notifications/message at info and above by default, logger = plugin name", function()
      local c = H.session()
      c:call("logs", {})
      assert.are.same({ "info", "notice", "warning", "error", "critical", "alert", "emergency" },
                      levels_logged(c, 0))
      for _, n in ipairs(c.notes) do
        if n.method == "notifications/message" then assert.are.equal("basic", n.params.logger) end
      end
    end)

    it("ctx:log sends structured data as JSON", function()
      local c = H.session()
      c:call("logs", {})
      local found
      for _, n in ipairs(c.notes) do
        if n.method == "notifications/message" and type(n.params.data) == "table" then found = n.params.data end
      end
      assert.are.same({ structured = true, n = 1 }, found)
    end)

    it("logging/setLevel error filters out levels below error", function()
      local c = H.session()
      local resp = c:request("logging/setLevel", { level = "error" })
      assert.are.same({}, resp.result)
      local mark = #c.notes
      c:call("logs", {})
      assert.are.same({ "error", "critical", "alert", "emergency" }, levels_logged(c, mark))
    end)

    it("logging/setLevel debug lets debug through", function()
      local c = H.session()
      c:request("logging/setLevel", { level = "debug" })
      c:call("logs", {})
      assert.are.same({ "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency" },
                      levels_logged(c, 0))
    end)

    it("logging/setLevel with an unknown level is answered -32602", function()
      local c = H.session()
      local resp = c:request("logging/setLevel", { level = "verbose" })
      assert.are.equal(-32602, resp.error and resp.error.code)
    end)
  end)

  describe("memory limit", function()
    it("a handler over --memory-limit gets an isError result and the server keeps serving", function()
      local c = H.session{ args = { "--memory-limit", "32" } }
      local resp = c:call("hog", {}, { timeout = 30 })
      assert.is_nil(resp.error)
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):lower():find("memory"), H.text(resp))
      assert.are.equal("still alive", H.text(c:call("echo", { text = "still alive" })))
      -- the memory came back: the limit can be hit again the same way
      local again = c:call("hog", {}, { timeout = 30 })
      assert.is_true(again.result.isError)
      assert.are.equal("alive again", H.text(c:call("echo", { text = "alive again" })))
    end)
  end)

  describe("limits of the yielding calls", function()
    for _, tool in ipairs { "sleep_in_coroutine", "sleep_in_sort" } do
      it(tool .. ": ctx:sleep where it cannot yield raises an error (isError), not a hang", function()
        local c = H.session()
        local resp = c:call(tool, {}, { timeout = 5 })
        assert.is_nil(resp.error)
        assert.is_true(resp.result.isError, H.text(resp))
        assert.are.equal("ok", H.text(c:call("echo", { text = "ok" })))
      end)
    end

    it("a handler's own coroutines yield and resume normally", function()
      local c = H.session()
      assert.are.equal("123", H.text(c:call("own_coroutines", {})))
    end)
  end)

  describe("policy", function()
    it("a tool with a timeout sees ctx.deadline and ctx:remaining()", function()
      local c = H.session()
      local text = H.text(c:call("deadline", {}))
      local deadline, remaining = text:match("^deadline=(%S+) remaining=(%S+)")
      assert.is_truthy(tonumber(deadline), text)
      assert.is_true(tonumber(remaining) > 4 and tonumber(remaining) <= 5, text)
    end)

    it("timeout = 0 means no deadline", function()
      local c = H.session()
      assert.are.equal("deadline=nil remaining=nil", H.text(c:call("no_deadline", {})))
    end)
  end)
end)
