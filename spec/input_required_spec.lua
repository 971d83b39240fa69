-- Input from the client under both revisions: ctx:elicit / ctx:sample /
-- ctx:roots / ctx:input are requests to the client in a session, and
-- input-required results (multi round-trip requests) for a 2026-07-28
-- request, whose requestState is sealed: changed, moved to another request,
-- or expired, it is refused.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local cjson = H.cjson

local FIX = "spec/fixtures/input_required"
local V = "2026-07-28"

-- params with the 2026-07-28 _meta; caps: the client capabilities (default:
-- elicitation, sampling and roots).
local function params(p, caps)
  return HH.params_rev2026(p, caps or { elicitation = {}, sampling = {}, roots = {} })
end

local function call(c, name, extra, caps)
  local p = { name = name, arguments = extra and extra.arguments or {} }
  for k, v in pairs(extra or {}) do if k ~= "arguments" then p[k] = v end end
  return c:request("tools/call", params(p, caps))
end

local function accept(fields) return { action = "accept", content = fields } end

local function text(resp) return resp.result and resp.result.content and resp.result.content[1].text end

describe("input-required results (2026-07-28)", function()
  after_each(function() H.cleanup() end)

  it("end the request with the input requests and a sealed state; the retry completes it", function()
    local c = H.start{ plugins = { FIX } }
    local r1 = call(c, "greet", { arguments = { greeting = "Hi" } })
    local res = r1.result
    assert.are.equal("input_required", res.resultType)
    assert.are.equal("elicitation/create", res.inputRequests.name.method)
    assert.are.equal("Your name?", res.inputRequests.name.params.message)
    assert.are.equal("string", type(res.requestState))
    assert.is_nil(res.content)
    -- the handler stopped at the input; its <close> variables ran
    assert.truthy(c:wait_stderr("fixture: greet closed"))
    local r2 = call(c, "greet", { arguments = { greeting = "Hi" }, requestState = res.requestState,
                                  inputResponses = { name = accept{ name = "Ada" } } })
    assert.are.equal("complete", r2.result.resultType)
    assert.are.equal("Hi, Ada! (resumed)", text(r2))
    assert.are.equal(2, c:count_stderr("fixture: greet runs", true))     -- run again from the start
  end)

  it("take answers without a requestState in the first retry, and ignore answers nobody asked for", function()
    local c = H.start{ plugins = { FIX } }
    local r = call(c, "greet", { inputResponses = { name = accept{ name = "Bo" }, extra = 42, other = { x = 1 } } })
    assert.are.equal("Hello, Bo! (first)", text(r))
  end)

  it("ask again for an input the retry did not answer", function()
    local c = H.start{ plugins = { FIX } }
    local r = call(c, "greet", { inputResponses = { wrong_key = accept{ name = "X" } } })
    assert.are.equal("input_required", r.result.resultType)
    assert.truthy(r.result.inputRequests.name)
  end)

  it("carry earlier answers through several rounds, under the handler's default keys", function()
    local c = H.start{ plugins = { FIX } }
    local r1 = call(c, "two_steps")
    assert.truthy(r1.result.inputRequests.elicitation_1)
    local r2 = call(c, "two_steps", { requestState = r1.result.requestState,
                                      inputResponses = { elicitation_1 = accept{ name = "Ada" } } })
    assert.are.equal("input_required", r2.result.resultType)
    assert.truthy(r2.result.inputRequests.elicitation_2)
    assert.is_nil(r2.result.inputRequests.elicitation_1)
    assert.are_not.equal(r1.result.requestState, r2.result.requestState)
    -- round 3 answers only the new input; an attempt to change the first answer is ignored
    local r3 = call(c, "two_steps", { requestState = r2.result.requestState,
                                      inputResponses = { elicitation_2 = accept{ color = "blue" },
                                                         elicitation_1 = accept{ name = "Mallory" } } })
    assert.are.equal("Ada likes blue", text(r3))
  end)

  it("refuse a changed requestState, and say why on stderr", function()
    local c = H.start{ plugins = { FIX } }
    local r1 = call(c, "greet")
    local s = r1.result.requestState
    local flipped = s:sub(1, 5) .. (s:sub(6, 6) == "A" and "B" or "A") .. s:sub(7)
    for _, bad in ipairs{ s .. "-TAMPERED", flipped, "not-a-state", "" } do
      local r = call(c, "greet", { requestState = bad, inputResponses = { name = accept{ name = "Eve" } } })
      assert.are.equal(-32602, r.error and r.error.code, cjson.encode(r))
      assert.truthy(r.error.message:find("requestState failed verification", 1, true))
    end
    assert.truthy(c:wait_stderr("requestState rejected: not sealed by this server, or changed"))
    local r = call(c, "greet", { requestState = 12 })
    assert.are.equal(-32602, r.error.code)
  end)

  it("refuse a requestState presented on another request (other tool, other arguments)", function()
    local c = H.start{ plugins = { FIX } }
    local s = call(c, "greet", { arguments = { greeting = "Hi" } }).result.requestState
    local other_args = call(c, "greet", { arguments = { greeting = "Yo" }, requestState = s,
                                          inputResponses = { name = accept{ name = "Eve" } } })
    assert.are.equal(-32602, other_args.error.code)
    assert.truthy(other_args.error.message:find("belongs to another request", 1, true))
    local other_tool = call(c, "two_steps", { requestState = s })
    assert.are.equal(-32602, other_tool.error.code)
    -- the same arguments in another key order are the same request
    local c2 = H.start{ plugins = { FIX } }
    local s2 = call(c2, "greet", { arguments = { greeting = "Hi" } }).result.requestState
    local again = c2:request("tools/call",
      '{"arguments":{"greeting":"Hi"},"requestState":' .. cjson.encode(s2) ..
      ',"inputResponses":{"name":{"action":"accept","content":{"name":"Al"}}},"name":"greet","_meta":' ..
      '{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},' ..
      '"io.modelcontextprotocol/protocolVersion":"' .. V .. '"}}')
    assert.are.equal("Hi, Al! (resumed)", text(again))
  end)

  it("refuse an expired requestState (--state-ttl, moved with the test clock)", function()
    local c = H.start{ plugins = { FIX }, args = { "--test-clock", "--state-ttl", "30" } }
    local s = call(c, "greet").result.requestState
    c:send{ jsonrpc = "2.0", method = "notifications/luamcp/advance", params = { seconds = 20 } }
    local ok = call(c, "greet", { requestState = s, inputResponses = { name = accept{ name = "A" } } })
    assert.are.equal("complete", ok.result.resultType)
    c:send{ jsonrpc = "2.0", method = "notifications/luamcp/advance", params = { seconds = 15 } }
    local late = call(c, "greet", { requestState = s, inputResponses = { name = accept{ name = "A" } } })
    assert.are.equal(-32602, late.error.code)
    assert.truthy(late.error.message:find("has expired", 1, true))
  end)

  it("are accepted by another process that shares LUAMCP_STATE_KEY, and refused by one that does not", function()
    local a = H.start{ plugins = { FIX }, env = { LUAMCP_STATE_KEY = "shared secret" } }
    local b = H.start{ plugins = { FIX }, env = { LUAMCP_STATE_KEY = "shared secret" } }
    local other = H.start{ plugins = { FIX } }
    local s = call(a, "greet").result.requestState
    local retry = { requestState = s, inputResponses = { name = accept{ name = "Lin" } } }
    assert.are.equal("Hello, Lin! (resumed)", text(call(b, "greet", retry)))
    assert.are.equal(-32602, call(other, "greet", retry).error.code)
  end)

  it("check the answers: -32602 naming the input when one is not a result of its method", function()
    local c = H.start{ plugins = { FIX } }
    for _, bad in ipairs{ 12345, "yes", { content = { name = "no action" } }, { action = "maybe" } } do
      local r = call(c, "greet", { inputResponses = { name = bad } })
      assert.are.equal(-32602, r.error and r.error.code, cjson.encode(r))
      assert.truthy(r.error.message:find("inputResponses.name", 1, true), r.error.message)
    end
    local r = c:request("tools/call", '{"name":"greet","arguments":{},"inputResponses":null,"_meta":' ..
      '{"io.modelcontextprotocol/protocolVersion":"' .. V .. '","io.modelcontextprotocol/clientCapabilities":{}}}')
    assert.are.equal(-32602, r.error.code)
    assert.truthy(r.error.message:find("inputResponses must be an object", 1, true))
    local sampled = call(c, "everything", { inputResponses = {
      name = accept{ name = "A" }, answer = { role = "assistant" }, roots = { roots = {} } } })
    assert.are.equal(-32602, sampled.error.code)
    assert.truthy(sampled.error.message:find("inputResponses.answer needs a role and a content", 1, true))
  end)

  it("cannot be caught by a pcall in the handler", function()
    local c = H.start{ plugins = { FIX } }
    local r = call(c, "in_pcall")
    assert.are.equal("input_required", r.result.resultType)
    local done = call(c, "in_pcall", { inputResponses = { name = accept{ name = "Q" } } })
    assert.are.equal("Q", text(done))
    assert.are.equal(1, c:count_stderr("fixture: in_pcall after pcall ok=true", true))
    assert.are.equal(0, c:count_stderr("ok=false", true))
  end)

  it("ask several inputs at once, only those the client declared", function()
    local c = H.start{ plugins = { FIX } }
    local all = call(c, "everything")
    local ir = all.result.inputRequests
    assert.are.equal("elicitation/create", ir.name.method)
    assert.are.equal("sampling/createMessage", ir.answer.method)
    assert.are.equal("roots/list", ir.roots.method)
    assert.are.equal("{}", cjson.encode(ir.roots.params))
    local some = call(c, "everything", nil, { sampling = {} })
    assert.is_nil(some.result.inputRequests.name)
    assert.is_nil(some.result.inputRequests.roots)
    assert.truthy(some.result.inputRequests.answer)
    local none = call(c, "everything", nil, {})
    assert.are.equal("complete", none.result.resultType)
    assert.truthy(text(none):find("name=the client does not offer elicitation", 1, true))
    local done = call(c, "everything", { requestState = all.result.requestState, inputResponses = {
      name = accept{ name = "A" },
      answer = { role = "assistant", content = { type = "text", text = "4" }, model = "m" },
      roots = { roots = { { uri = "file:///r" } } } } })
    assert.are.equal("answer=ok; name=ok; roots=ok", text(done))
  end)

  it("come from prompts/get and resources/read too, and never from a list", function()
    local c = H.start{ plugins = { FIX } }
    local p = c:request("prompts/get", params{ name = "topic" })
    assert.are.equal("input_required", p.result.resultType)
    assert.truthy(p.result.inputRequests.topic)
    local p2 = c:request("prompts/get", params{ name = "topic", requestState = p.result.requestState,
                                               inputResponses = { topic = accept{ topic = "owls" } } })
    assert.are.equal("Write about owls", p2.result.messages[1].content.text)
    local r = c:request("resources/read", params{ uri = "input://greeting" })
    assert.are.equal("input_required", r.result.resultType)
    assert.is_nil(r.result.ttlMs)                      -- an input-required result is not cached
    local r2 = c:request("resources/read", params{ uri = "input://greeting", requestState = r.result.requestState,
                                                  inputResponses = { who = accept{ name = "Kim" } } })
    assert.are.equal("Hello, Kim", r2.result.contents[1].text)
    assert.are.equal("complete", r2.result.resultType)
    local l = c:request("tools/list", params{})
    assert.are.equal("complete", l.result.resultType)
  end)

  it("a handler that asks after its timeout gets the timeout's result, with its resultType", function()
    local c = H.start{ plugins = { FIX } }
    local r = call(c, "late_ask")
    assert.truthy(c:wait_stderr("fixture: late_ask asks after timeout"))
    assert.is_true(r.result.isError, cjson.encode(r))
    assert.truthy(text(r):find("timed out", 1, true))
    assert.are.equal("complete", r.result.resultType)
    assert.is_nil(r.result.inputRequests)
  end)

  it("gather input first, then hand the rest to a task (defer_task): no requestState in the task", function()
    local c = H.start{ plugins = { FIX } }
    local caps = { elicitation = {}, extensions = { ["io.modelcontextprotocol/tasks"] = {} } }
    local r1 = call(c, "then_task", nil, caps)
    assert.are.equal("input_required", r1.result.resultType)
    assert.is_nil(r1.result.taskId)
    local r2 = call(c, "then_task", { requestState = r1.result.requestState,
                                      inputResponses = { name = accept{ name = "Tia" } } }, caps)
    assert.are.equal("task", r2.result.resultType, cjson.encode(r2))
    assert.is_nil(r2.result.requestState)
    assert.is_nil(r2.result.inputRequests)
    local done
    assert.truthy(H.run_until(function()
      done = c:request("tasks/get", params({ taskId = r2.result.taskId }, caps)).result
      return done.status == "completed"
    end, H.WAIT))
    assert.are.equal("done for Tia", done.result.content[1].text)
  end)

  it("ctx:require ends the request with -32021 naming the capabilities the client lacks", function()
    local c = H.start{ plugins = { FIX } }
    local r = call(c, "needs_sampling", nil, { roots = {} })
    assert.are.equal(-32021, r.error and r.error.code, cjson.encode(r))
    assert.are.same({ sampling = {} }, r.error.data.requiredCapabilities)
    assert.are.equal("Missing required client capability: sampling", r.error.message)
    assert.are.equal(0, c:count_stderr("fixture: needs_sampling ran on", true))
    assert.are.equal("has sampling and roots", text(call(c, "needs_sampling", nil, { sampling = {}, roots = {} })))
  end)
end)

describe("the same handlers in a 2025-11-25 session", function()
  after_each(function() H.cleanup() end)

  it("send the inputs to the client as requests and wait for the answers", function()
    local c = H.start{ plugins = { FIX } }
    local init = c:request("initialize", { protocolVersion = "2025-11-25", clientInfo = { name = "s", version = "0" },
                                           capabilities = { elicitation = {}, sampling = {} } })
    assert.truthy(init.result)
    c:send{ jsonrpc = "2.0", method = "notifications/initialized" }
    c:send{ jsonrpc = "2.0", id = 1, method = "tools/call", params = { name = "greet", arguments = {} } }
    local q = c:take(function(m) return m.method == "elicitation/create" end)
    assert.are.equal("Your name?", q.params.message)
    c:send{ jsonrpc = "2.0", id = q.id, result = accept{ name = "Sam" } }
    local r = c:take(function(m) return m.id == 1 end)
    assert.are.equal("Hello, Sam! (first)", r.result.content[1].text)
    assert.is_nil(r.result.resultType)
    -- ctx:input asks one input after the other; roots is not offered by this client
    c:send{ jsonrpc = "2.0", id = 2, method = "tools/call", params = { name = "everything", arguments = {} } }
    local q1 = c:take(function(m) return m.method == "sampling/createMessage" end)
    c:send{ jsonrpc = "2.0", id = q1.id, result = { role = "assistant", content = { type = "text", text = "4" }, model = "m" } }
    local q2 = c:take(function(m) return m.method == "elicitation/create" end)
    c:send{ jsonrpc = "2.0", id = q2.id, result = accept{ name = "Sam" } }
    local r2 = c:take(function(m) return m.id == 2 end)
    assert.are.equal("answer=ok; name=ok; roots=the client does not offer roots (no roots capability)",
                     r2.result.content[1].text)
    -- ctx:require: -32021 in a session too
    local nr = c:request("tools/call", { name = "needs_sampling", arguments = {} })
    assert.are.equal(-32021, nr.error.code)
    assert.are.same({ roots = {} }, nr.error.data.requiredCapabilities)
  end)
end)

describe("input-required results over Streamable HTTP", function()
  after_each(function() HH.cleanup() end)

  -- A 2026-07-28 tools/call. Returns the response and its JSON-RPC message.
  local function post(srv, id, p)
    return HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = id, method = "tools/call", params = p })
  end

  it("round-trip over two independent POSTs; -32021 is a 400", function()
    local srv = HH.start{ plugins = { FIX } }
    local r1, a = post(srv, 1, params{ name = "greet", arguments = {} })
    assert.are.equal(200, r1.status)
    assert.are.equal("input_required", a.result.resultType)
    local _, b = post(srv, 2, params{ name = "greet", arguments = {}, requestState = a.result.requestState,
                                      inputResponses = { name = accept{ name = "Ann" } } })
    assert.are.equal("Hello, Ann! (resumed)", b.result.content[1].text)
    local r3, e = post(srv, 3, params({ name = "needs_sampling", arguments = {} }, {}))
    assert.are.equal(400, r3.status, r3:describe())
    assert.are.equal(-32021, e.error.code)
  end)
end)
