-- What a handler returns or raises, and what the client gets: the table of
-- README's "Writing a tool", row by row, over stdio and over HTTP
-- (fixture: spec/fixtures/returns/, one tool per row); outputSchema; and
-- read, get and completion functions failing every way.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local cjson = H.cjson

local PLUGINS = { "spec/fixtures/returns" }

local function text(s) return { content = { { type = "text", text = s } } } end
local function tool_error(s) return { content = { { type = "text", text = s } }, isError = true } end

local function json_text(r)
  assert.are.equal(1, #r.content)
  assert.are.equal("text", r.content[1].type)
  return cjson.decode(r.content[1].text)
end

-- Each row: the tool, and the result (or error) the client gets exactly, or
-- a check of it; log: a pattern the server's stderr must show.
local ROWS = {
  { "nothing", result = { content = {} } },
  { "explicit_nil", result = { content = {} } },
  { "string", result = text("text") },
  { "number", result = text("42") },
  { "true", result = text("true") },
  { "nil_message", result = tool_error("city not found") },
  { "nil_message_code", result = tool_error("open /x: no such file or directory (ENOENT)") },
  { "false", result = tool_error("failed") },
  { "false_message", result = tool_error("msg") },
  { "text", result = text("hello") },
  { "text_nothing", result = tool_error("bad argument #1 to 'text' (value expected)") },
  { "text_number", result = text("42") },
  { "text_tostring", result = text("<s>") },
  { "error_string", result = tool_error("it failed") },
  { "error_table", result = tool_error("from a table") },
  { "error_table_json", result = tool_error('{"reason":"x"}') },
  { "rpc_error", error = { code = -32001, message = "custom error", data = { detail = 1 } } },
  { "raise_rpc_error", error = { code = -32002, message = "raised custom" } },
  { "result", result = { content = { { type = "text", text = "a" } }, structuredContent = { a = 1 } } },
  { "result_is_error", result = tool_error("bad") },
  { "content_list", result = { content = { { type = "text", text = "one" }, { type = "text", text = "two" } } } },
  { "object", check = function(r)
      assert.are.same({ city = "Paris", temp = 21 }, r.structuredContent)
      assert.are.same(r.structuredContent, json_text(r))
      assert.is_nil(r.isError)
    end },
  { "rows", check = function(r)
      assert.are.same({ { type = "fruit", name = "apple" } }, json_text(r))
      assert.is_nil(r.structuredContent)
    end },
  { "list", result = text("[1,2,3]") },                 -- no structuredContent
  { "array", result = text('["a"]') },
  { "empty", result = { content = { { type = "text", text = "{}" } }, structuredContent = {} } },
  { "raise_string", result = tool_error("the handler broke"),
    log = "%(tools/call raise_string%) failed: [^\n]*returns%.lua:%d+: the handler broke\nstack traceback" },
  { "raise_table", result = tool_error("a table error"),
    log = "%(tools/call raise_table%) failed: a table error\nstack traceback:\n[^\n]*\n[^\n]*returns%.lua:%d+" },
  { "raise_table_json", result = tool_error('{"reason":"no message"}') },
  { "raise_other", result = tool_error("42") },
  { "raise_again", result = tool_error("inner"),
    log = "returns%.lua:%d+: [^\n]*returns%.lua:%d+: inner\nstack traceback" },
  { "raise_runtime", result = tool_error("attempt to index a nil value (local 't')"),
    log = "returns%.lua:%d+: attempt to index a nil value" },
  { "function", result = tool_error("handler returned a function"),
    log = "error: tool function %(plugin returns, [^)\n]*returns%.lua:%d+%): the handler returned a function" },
  { "old_rpc", result = tool_error("x"),
    log = "warning: tool old_rpc returned nil, %-32602, message: use mcp.rpc_error for a JSON%-RPC error" },
  -- outputSchema
  { "out_valid", check = function(r)
      assert.is_nil(r.isError)
      assert.are.same({ x = 1, y = 2 }, r.structuredContent)
    end },
  { "out_wrong_type", result = tool_error("Output does not match outputSchema: x: expected integer, got string"),
    log = "warning: tool out_wrong_type: output does not match its outputSchema: x: expected integer" },
  { "out_missing", result = tool_error("Output does not match outputSchema: structuredContent is missing"),
    log = "warning: tool out_missing: output does not match its outputSchema: structuredContent is missing" },
  { "out_list", result = tool_error("Output does not match outputSchema: structuredContent is missing") },
  { "out_is_error", result = tool_error("failed before any output") },   -- isError: not checked
  { "explicit_list", result = tool_error("structuredContent must be an object, not a list") },
  -- a mount forwards an upstream's JSON-RPC error (lua/mcp/mount.lua)
  { "mount_rpc", error = { code = -32003, message = "no" } },
  { "mount_closed", result = tool_error("the upstream exited") },
}

-- What ret's code returns (its one argument: hostile(t), t with every
-- metamethod a loop), and what the client gets: a malformed result is a tool
-- error in the author's words (log: the warning naming the tool); a hostile
-- one ends at once, read raw, the server answering a ping right after.
local WARNED = "warning: tool ret %(plugin returns, [^)\n]*returns%.lua:%d+%): "
local MALFORMED = {
  { 'return { content = "oops" }',
    tool_error('content is a string ("oops"): expected a list of content items, such as ' ..
               '{ { type = "text", text = "..." } }'),
    log = WARNED .. 'returned a malformed result: content is a string %("oops"%)' },
  { "return { content = { a = 1 } }", tool_error("content has the key a: expected a list of content items") },
  { 'return { content = { "hello" } }',
    tool_error('content[1] is a string ("hello"): expected a content item, such as { type = "text", text = "..." }') },
  { 'return { content = { { type = "txt", text = "x" } } }',
    tool_error('content[1]\'s type is "txt": expected one of text, image, audio, resource_link or resource') },
  { 'return { content = { { text = "x" } } }',
    tool_error("content[1] has no type: expected one of text, image, audio, resource_link or resource") },
  { 'return { content = { { type = "text", text = 42 } } }',
    tool_error('content[1] (type "text") needs text, a string; it has a number (42)') },
  { 'return { content = require("mcp").array { { type = "image", data = "AA==" } } }',
    tool_error('content[1] (type "image") needs mimeType, a string; it has none') },
  { 'return { content = require("mcp").array { { type = "text", text = "x" } }, isError = "yes" }',
    tool_error('isError is a string ("yes"): expected true or false'),
    log = WARNED .. 'returned a malformed result: isError is a string' },
  { 'return { structuredContent = "x" }',
    tool_error('structuredContent is a string ("x"): expected an object (a table with string keys)') },
  { "return { structuredContent = { 1, 2, a = 3 } }",
    tool_error("structuredContent mixes a list (1 to 2) and keys (a): expected an object (string keys) or a list, " ..
               "not both") },
  { "return { 1, 2, a = 3 }",
    tool_error("the result mixes a list (1 to 2) and keys (a): expected an object (string keys) or a list, not both") },
  -- a value after a success: the documented contract keeps the first (string.gsub's count is one)
  { 'return "a", "b"', text("a"),
    log = WARNED .. 'returned more than one value: the first is the result, the second %(a string %("b"%)%) is ignored' },
  { 'return ("aXb"):gsub("X", "-")', text("a-b") },
}
local GUARDED = "(an error object, a table, whose __tostring did not return within 50 ms)"
local HOSTILE = {
  { "the result table", "return (...)()", { content = { { type = "text", text = "{}" } }, structuredContent = {} } },
  { "its content list", 'return { content = (...){ { type = "text", text = "x" } } }', text("x") },
  { "a content item", "return { content = { (...)() } }",
    tool_error("content[1] has no type: expected one of text, image, audio, resource_link or resource") },
  { "a list of content items", 'return { (...){ type = "text", text = "y" } }', text("y") },
  { "structuredContent", "return { structuredContent = (...){ a = 1 } }",
    { content = { { type = "text", text = '{"a":1}' } }, structuredContent = { a = 1 } } },
  { "a __metatable answering __eq", "return setmetatable({ 1, 2 }, { __metatable = (...)() })", text("[1,2]") },
  { "isError", 'return { content = {}, isError = (...)() }',
    tool_error("isError is a table: expected true or false") },
  { "an error object's __tostring", "error((...)())", tool_error(GUARDED) },
  { "a failure's message", "return nil, (...)()", tool_error(GUARDED) },
  { "a second value", 'return "a", (...)()', text("a") },
  { "an mcp.rpc_error look-alike",
    'return setmetatable({ code = 1, message = "m" }, { __metatable = getmetatable(require("mcp").rpc_error(1, "x")), ' ..
    '__index = function() while true do end end })',
    { content = { { type = "text", text = '{"code":1,"message":"m"}' } }, structuredContent = { code = 1, message = "m" } },
    json = true },
}

-- read, get and the completion function end as args.how says.
local READ = {
  ["nil"] = { code = -32002, message = "Resource not found", data = { uri = "returns://read/nil" } },
  message = { code = -32002, message = "Resource not found",
              data = { uri = "returns://read/message", reason = "no such thing here" } },
  not_found = { code = -32002, message = "Resource not found", data = { uri = "returns://read/not_found", reason = "gone" } },
  invalid = { code = -32603, message = "Internal error: bad value" },
  io = { code = -32603, message = "Internal error: disk on fire (EIO)" },
  ["false"] = { code = -32002, message = "Resource not found", data = { uri = "returns://read/false", reason = "refused" } },
  rpc = { code = -32001, message = "custom", data = { why = "because" } },
  raise_rpc = { code = -32042, message = "raised rpc" },
  old = { code = -32002, message = "Resource not found", data = { uri = "returns://read/old", reason = "old form" } },
  error = { code = -32603, message = "Internal error: read blew up" },
  error_table = { code = -32603, message = "Internal error: table blew up" },
}
local GET = {
  message = { code = -32603, message = "Internal error: no such thing here" },
  not_found = { code = -32602, message = "Invalid params: gone" },
  invalid = { code = -32602, message = "Invalid params: bad value" },
  io = { code = -32603, message = "Internal error: disk on fire (EIO)" },
  ["false"] = { code = -32603, message = "Internal error: refused" },
  rpc = { code = -32001, message = "custom", data = { why = "because" } },
  raise_rpc = { code = -32042, message = "raised rpc" },
  old = { code = -32603, message = "Internal error: old form" },
  error = { code = -32603, message = "Internal error: read blew up" },
  error_table = { code = -32603, message = "Internal error: table blew up" },
}

-- The server's stderr shows pattern (over lines), within the usual wait.
local function logged(srv, pattern)
  return H.run_until(function() return srv:stderr_text():find(pattern) ~= nil end)
end

local function no_path(resp)
  local s = cjson.encode(resp)
  assert.is_nil(s:find("returns.lua", 1, true), s)
  assert.is_nil(s:find("/spec/", 1, true), s)
end

local TRANSPORTS = {
  stdio = function()
    local c = H.start { plugins = PLUGINS }
    c:initialize()
    return c, function(method, params) return (c:request(method, params)) end
  end,
  http = function()
    local srv = HH.start { plugins = PLUGINS }
    local s = HH.initialize(srv, "2025-11-25")
    return srv, function(method, params)
      return (assert(s:rpc(method, params), "no response to " .. method))
    end
  end,
}

for _, name in ipairs { "stdio", "http" } do
  describe("what a handler returns, over " .. name, function()
    local srv, request
    setup(function() srv, request = TRANSPORTS[name]() end)
    teardown(function()
      H.cleanup()
      HH.cleanup()
    end)

    for _, row in ipairs(ROWS) do
      it(row[1], function()
        local resp = request("tools/call", { name = row[1], arguments = {} })
        if row.error then
          assert.is_nil(resp.result, cjson.encode(resp))
          assert.are.same(row.error, resp.error)
        else
          assert.is_nil(resp.error, cjson.encode(resp))
          if row.check then row.check(resp.result) else assert.are.same(row.result, resp.result) end
        end
        no_path(resp)
        if row.log then assert.truthy(logged(srv, row.log), srv:stderr_text()) end
      end)
    end

    for _, row in ipairs(MALFORMED) do
      it("malformed: " .. row[1], function()
        local resp = request("tools/call", { name = "ret", arguments = { code = row[1] } })
        assert.are.same(row[2], resp.result, cjson.encode(resp))
        no_path(resp)
        assert.is_nil(cjson.encode(resp):find("bad argument", 1, true))
        if row.log then assert.truthy(logged(srv, row.log), srv:stderr_text()) end
      end)
    end

    for _, row in ipairs(HOSTILE) do
      it("a metamethod that loops, on " .. row[1] .. ", ends the call, not the server", function()
        local resp = request("tools/call", { name = "ret", arguments = { code = row[2] } })
        local got, want = resp.result, row[3]
        if row.json then   -- the text's key order is the encoder's
          got.content[1].text = cjson.decode(got.content[1].text)
          want = { content = { { type = "text", text = cjson.decode(want.content[1].text) } },
                   structuredContent = want.structuredContent }
        end
        assert.are.same(want, got, cjson.encode(resp))
        local t0 = os.clock()
        assert.truthy(request("ping").result)
        assert.is_true(os.clock() - t0 < 1)
      end)
    end

    it("a metamethod that loops, on what read, get and complete return, ends the request, not the server", function()
      local want = { code = -32603, message = "Internal error: resource returns://read/hostile: " ..
                                              "read returned a table without text, blob or contents" }
      local resp = request("resources/read", { uri = "returns://read/hostile" })
      assert.are.same(want, resp.error, cjson.encode(resp))
      resp = request("resources/read", { uri = "returns://read/hostile_error" })
      assert.are.same({ code = -32603, message = "Internal error: " .. GUARDED }, resp.error, cjson.encode(resp))
      resp = request("prompts/get", { name = "get", arguments = { how = "hostile" } })
      assert.are.same({}, resp.result.messages, cjson.encode(resp))
      for _, how in ipairs { "hostile_error", "hostile_message" } do
        assert.are.same({ code = -32603, message = "Internal error: " .. GUARDED },
                        request("prompts/get", { name = "get", arguments = { how = how } }).error)
        assert.are.same({ code = -32603, message = "Internal error: " .. GUARDED },
                        request("completion/complete", { ref = { type = "ref/prompt", name = "get" },
                                                         argument = { name = "how", value = how } }).error)
      end
      resp = request("completion/complete", { ref = { type = "ref/prompt", name = "get" },
                                              argument = { name = "how", value = "hostile" } })
      assert.are.same({ values = {}, hasMore = false }, resp.result.completion)
      assert.truthy(request("ping").result)
    end)

    it("warns once per tool about the old nil, code, message", function()
      request("tools/call", { name = "old_rpc", arguments = {} })
      request("tools/call", { name = "old_rpc", arguments = {} })
      assert.are.equal(1, select(2, srv:stderr_text():gsub("tool old_rpc returned nil, %-32602", "")))
    end)

    it("resources/read: nil, message [, code], false, mcp.rpc_error and error()", function()
      for how, want in pairs(READ) do
        local resp = request("resources/read", { uri = "returns://read/" .. how })
        assert.are.same(want, resp.error, how .. ": " .. cjson.encode(resp))
        no_path(resp)
      end
      assert.truthy(logged(srv, "%(resources/read%) failed: [^\n]*returns%.lua:%d+: read blew up"))
      assert.truthy(logged(srv, "warning: the read of returns://read/old returned nil, %-32602, message: " ..
                                "use mcp.rpc_error"))
    end)

    it("prompts/get and completion/complete: the same codes", function()
      for how, want in pairs(GET) do
        local resp = request("prompts/get", { name = "get", arguments = { how = how } })
        assert.are.same(want, resp.error, "get " .. how .. ": " .. cjson.encode(resp))
        no_path(resp)
        resp = request("completion/complete", { ref = { type = "ref/prompt", name = "get" },
                                                argument = { name = "how", value = how } })
        assert.are.same(want, resp.error, "complete " .. how .. ": " .. cjson.encode(resp))
        no_path(resp)
      end
      -- nil alone: no values (a completion), a refusal (a prompt needs messages)
      local resp = request("completion/complete", { ref = { type = "ref/prompt", name = "get" },
                                                    argument = { name = "how", value = "nil" } })
      assert.are.same({ values = {}, hasMore = false }, resp.result.completion)
      assert.truthy(logged(srv, "warning: the get of prompt get returned nil, %-32602"))
      assert.truthy(logged(srv, "warning: the completion of how returned nil, %-32602"))
    end)
  end)
end

-- What a middleware returns is read as a handler's result is (server/middleware.lua's shape, chain.c).
describe("what a middleware returns", function()
  local c
  setup(function()
    c = H.start { plugins = { "spec/fixtures/returns", "spec/fixtures/returns_mw" } }
    c:initialize()
  end)
  teardown(H.cleanup)

  local function ret(code)
    local resp = c:request("tools/call", { name = "mw_ret", arguments = { code = code } })
    assert.truthy(c:request("ping").result)
    return resp
  end

  it("a metamethod that loops, on its result, its content or its error object, ends the call, not the server", function()
    assert.are.same({ content = { { type = "text", text = "{}" } }, structuredContent = {} }, ret("return (...)()").result)
    assert.are.same(text("x"), ret('return { content = (...){ { type = "text", text = "x" } } }').result)
    assert.are.same(tool_error("content[1] has no type: expected one of text, image, audio, resource_link or resource"),
                    ret("return { content = { (...)() } }").result)
    assert.are.same(tool_error(GUARDED), ret("error((...)())").result)
    assert.are.same(tool_error(GUARDED), ret("return nil, (...)()").result)
    assert.are.same(text("the tool's"), ret("local _, next, req = ...; local r = next(req); return r, (...)()").result)
  end)

  it("a req whose params only a metamethod gives is refused by next", function()
    local resp = ret("local H, next = ...; return next(H())")
    assert.are.same(tool_error("code:1: bad argument #1 to 'next' (a req with params expected)"), resp.result, H.cjson.encode(resp))
  end)

  it("a malformed result is the author's mistake, in the author's words", function()
    assert.are.same(tool_error('content is a string ("oops"): expected a list of content items, such as ' ..
                               '{ { type = "text", text = "..." } }'), ret('return { content = "oops" }').result)
  end)
end)
