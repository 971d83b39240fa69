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
