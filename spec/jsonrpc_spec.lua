-- JSON-RPC 2.0 envelope: errors, ids, batches.
local H = require "spec.helper"
local cjson = H.cjson

-- The next message, which must be an error response; returns it and its raw line.
local function expect_error(c, code)
  local m, raw = c:take(function(msg) return not H.is_notification(msg) end)
  assert(m, "no response: " .. tostring(raw) .. "\n" .. c:stderr_text())
  assert.is_nil(m.result, raw)
  assert.are.equal("table", type(m.error), raw)
  assert.are.equal(code, m.error.code, raw)
  assert.are.equal("string", type(m.error.message), raw)
  return m, raw
end

describe("JSON-RPC", function()
  after_each(H.cleanup)

  describe("parse errors", function()
    it("invalid JSON is answered -32700 with id null and the next line is served", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":1,"method":"ping"\n')
      local _, raw = expect_error(c, -32700)
      assert.are.equal("null", H.raw_member(raw, "id"))
      assert.are.same({}, c:request("ping").result)
    end)

    it("invalid UTF-8 bytes are answered -32700 with id null", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\xff\xfe"}}\n')
      local _, raw = expect_error(c, -32700)
      assert.are.equal("null", H.raw_member(raw, "id"))
      assert.are.same({}, c:request("ping").result)
    end)

    it("a truncated UTF-8 sequence in a string is answered -32700", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"\xc3"}}\n')
      expect_error(c, -32700)
    end)
  end)

  describe("invalid requests", function()
    it("a JSON value that is not an object is answered -32600", function()
      local c = H.session()
      c:send('42\n')
      expect_error(c, -32600)
      c:send('"ping"\n')
      expect_error(c, -32600)
      assert.are.same({}, c:request("ping").result)
    end)

    it("a message without \"jsonrpc\":\"2.0\" is answered -32600", function()
      local c = H.session()
      c:send('{"id":5,"method":"ping"}\n')
      expect_error(c, -32600)
      c:send('{"jsonrpc":"1.0","id":6,"method":"ping"}\n')
      expect_error(c, -32600)
    end)

    it("a float id is answered -32600", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n')
      expect_error(c, -32600)
    end)

    it("a boolean id is answered -32600", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":true,"method":"ping"}\n')
      expect_error(c, -32600)
    end)

    it("an object id is answered -32600", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n')
      expect_error(c, -32600)
    end)

    it("an array id is answered -32600", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":[1],"method":"ping"}\n')
      expect_error(c, -32600)
    end)

    it("a null id is answered -32600 (MCP: the id MUST NOT be null)", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":null,"method":"ping"}\n')
      expect_error(c, -32600)
    end)

    it("a method that is not a string is answered -32600", function()
      local c = H.session()
      c:send('{"jsonrpc":"2.0","id":9,"method":42}\n')
      expect_error(c, -32600)
    end)

    it("a bad request does not disturb a request in flight", function()
      local c = H.session()
      c:send(H.call_raw("31", "sleep", { seconds = 0.3 }))
      c:send('{"jsonrpc":"2.0","id":true,"method":"ping"}\n')
      expect_error(c, -32600)
      local resp = c:take(function(m, raw) return H.raw_member(raw, "id") == "31" end)
      assert.are.equal("slept 31", H.text(resp))
    end)
  end)

  describe("methods", function()
    it("an unknown method is answered -32601 with its id", function()
      local c = H.session()
      local resp, _, raw = c:request("no/such/method", {}, { id = 12 })
      assert.are.equal(-32601, resp.error.code)
      assert.are.equal("12", H.raw_member(raw, "id"))
    end)

    it("an unknown notification gets no response", function()
      local c = H.session()
      c:send({ jsonrpc = "2.0", method = "notifications/no_such_thing", params = {} })
      c:no_message()
      assert.are.same({}, c:request("ping").result)
    end)

    it("tools/call of an unknown tool is answered -32602", function()
      local c = H.session()
      local resp = c:call("no_such_tool", {})
      assert.is_nil(resp.result)
      assert.are.equal(-32602, resp.error.code)
    end)

    it("tools/call without a tool name is answered -32602", function()
      local c = H.session()
      local resp = c:request("tools/call", { arguments = {} })
      assert.are.equal(-32602, resp.error.code)
    end)
  end)

  describe("batches", function()
    it("under 2025-03-26 a batch is answered with one array of the responses", function()
      local c = H.session{ version = "2025-03-26" }
      c:send('[{"jsonrpc":"2.0","id":1,"method":"ping"},' ..
             '{"jsonrpc":"2.0","method":"notifications/progress_not_real"},' ..
             '{"jsonrpc":"2.0","id":"two","method":"tools/call",' ..
             '"params":{"name":"echo","arguments":{"text":"in a batch"}}}]\n')
      local m, raw = c:recv()
      assert(m, raw)
      assert.are.equal(2, #m, raw)
      local byid = {}
      for _, r in ipairs(m) do byid[H.id_text(r.id)] = r end
      assert.are.same({}, byid["1"].result)
      assert.are.equal("in a batch", byid['"two"'].result.content[1].text)
      c:no_message()
    end)

    it("under 2025-03-26 a batch with an invalid member answers that member with an error", function()
      local c = H.session{ version = "2025-03-26" }
      c:send('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"nope"},5]\n')
      local m, raw = c:recv()
      assert(m, raw)
      assert.are.equal(3, #m, raw)
      local codes = {}
      for _, r in ipairs(m) do if r.error then codes[#codes + 1] = r.error.code end end
      table.sort(codes)
      assert.are.same({ -32601, -32600 }, codes)
    end)

    it("under 2025-03-26 a batch of notifications only gets nothing back", function()
      local c = H.session{ version = "2025-03-26" }
      c:send('[{"jsonrpc":"2.0","method":"notifications/initialized"},' ..
             '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}]\n')
      local resp = c:request("ping", nil, { id = 50 })
      assert.are.same({}, resp.result)
      c:no_message()
    end)

    it("an empty batch [] is answered -32600", function()
      local c = H.session{ version = "2025-03-26" }
      c:send('[]\n')
      expect_error(c, -32600)
    end)

    for _, version in ipairs { "2024-11-05", "2025-06-18", "2025-11-25" } do
      it("under " .. version .. " a batch is rejected with one -32600 error", function()
        local c = H.session{ version = version }
        c:send('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]\n')
        local m, raw = expect_error(c, -32600)
        assert.is_nil(m[1], raw)
        c:no_message()
      end)
    end
  end)

  describe("ids", function()
    it("7 and \"7\" in flight at the same time are two requests, each answered with its own id", function()
      local c = H.session()
      c:send(H.call_raw("7", "whoami", { seconds = 0.3 }))
      c:send(H.call_raw('"7"', "whoami", { seconds = 0.3 }))
      local a, araw = c:take(function(m, raw) return H.raw_member(raw, "id") == "7" end)
      local b, braw = c:take(function(m, raw) return H.raw_member(raw, "id") == '"7"' end)
      assert(a and b, "missing response:\n" .. c:stderr_text())
      assert.are.equal("integer:7", H.text(a), araw)
      assert.are.equal("string:7", H.text(b), braw)
    end)

    for _, key in ipairs { "9007199254740993", "9223372036854775807", "-9223372036854775808" } do
      it("integer id " .. key .. " is echoed digit for digit", function()
        local c = H.session()
        local _, _, raw = c:request("ping", nil, { raw_id = key })
        assert.are.equal(key, H.raw_member(raw, "id"))
        local resp
        resp, _, raw = c:request("tools/call", { name = "whoami", arguments = {} }, { raw_id = key })
        assert.are.equal(key, H.raw_member(raw, "id"))
        assert.are.equal("integer:" .. key, H.text(resp))
      end)
    end

    it("9007199254740992 and 9007199254740993 are different requests", function()
      local c = H.session()
      c:send(H.call_raw("9007199254740992", "whoami", { seconds = 0.2 }))
      c:send(H.call_raw("9007199254740993", "whoami", { seconds = 0.2 }))
      local a = c:take(function(_, raw) return H.raw_member(raw, "id") == "9007199254740992" end)
      local b = c:take(function(_, raw) return H.raw_member(raw, "id") == "9007199254740993" end)
      assert(a and b, c:stderr_text())
      assert.are.equal("integer:9007199254740992", H.text(a))
      assert.are.equal("integer:9007199254740993", H.text(b))
    end)

    it("a string id is echoed exactly, escapes included", function()
      local c = H.session()
      local key = cjson.encode("id \"quoted\" \\ é")
      local _, _, raw = c:request("ping", nil, { raw_id = key })
      assert.are.equal("id \"quoted\" \\ é", cjson.decode(H.raw_member(raw, "id")))
    end)

    it("a duplicate in-flight id is answered -32600 and the first request still completes", function()
      local c = H.session()
      c:send(H.call_raw("42", "sleep", { seconds = 0.5 }))
      assert(c:wait_log("^started 42$"), c:stderr_text())
      c:send(H.call_raw("42", "echo", { text = "second" }))
      local first, raw1 = c:take(function(m, raw) return H.raw_member(raw, "id") == "42" end)
      assert.are.equal(-32600, first.error and first.error.code, raw1)
      local second, raw2 = c:take(function(m, raw) return H.raw_member(raw, "id") == "42" end)
      assert(second, c:stderr_text())
      assert.are.equal("slept 42", H.text(second), raw2)
      c:no_message()
    end)

    it("an id may be reused once its request has completed", function()
      local c = H.session()
      local r1 = c:call("echo", { text = "one" }, { id = 8 })
      local r2 = c:call("echo", { text = "two" }, { id = 8 })
      assert.are.equal("one", H.text(r1))
      assert.are.equal("two", H.text(r2))
    end)
  end)
end)
