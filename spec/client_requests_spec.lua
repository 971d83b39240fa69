-- Requests from a handler to the client (sampling, elicitation, roots) over
-- stdio: answers, errors, timeouts, cancellation in both directions.
local H = require "spec.helper"
local cjson = require "cjson"

local function session(caps)
  local c = H.start { plugins = { "spec/fixtures/client" }, args = { "--log-level", "debug" } }
  local resp = c:request("initialize", {
    protocolVersion = H.LATEST, clientInfo = { name = "specs", version = "0" },
    capabilities = caps or { sampling = {}, elicitation = {}, roots = {} },
  })
  assert(resp.result, cjson.encode(resp))
  c:send({ jsonrpc = "2.0", method = "notifications/initialized" })
  return c
end

-- The next request the server sends to the client.
local function server_request(c, method)
  local m = c:take(function(m) return m.method == method and m.id ~= nil end, 5)
  assert(m, "no " .. method .. " request from the server")
  return m
end

local function answer(c, id, result)
  c:send({ jsonrpc = "2.0", id = id, result = result })
end

describe("requests to the client", function()
  after_each(H.cleanup)

  it("ctx:sample sends sampling/createMessage and returns the client's result", function()
    local c = session()
    c:send(H.call_raw("7", "sample"))
    local req = server_request(c, "sampling/createMessage")
    assert.are.equal(5, req.params.maxTokens)
    assert.is_not_nil(req.params._meta.progressToken, "the request carries a progress token")
    answer(c, req.id, { role = "assistant", model = "m", content = { type = "text", text = "hello" } })
    local resp = c:take(function(m) return m.id == 7 end, 5)
    assert.are.equal("hello", resp.result.content[1].text)
  end)

  it("a JSON-RPC error from the client surfaces as nil, message and the error object", function()
    local c = session()
    c:send(H.call_raw("7", "sample"))
    local req = server_request(c, "sampling/createMessage")
    c:send({ jsonrpc = "2.0", id = req.id, error = { code = -1, message = "user declined" } })
    local resp = c:take(function(m) return m.id == 7 end, 5)
    assert.is_true(resp.result.isError)
    assert.are.equal("no sample: user declined (rpc) code -1", resp.result.content[1].text)
  end)

  it("a request the client does not answer times out, is cancelled at the client, and a late answer is dropped", function()
    local c = session()
    c:send(H.call_raw("7", "sample", { timeout = 0.3 }))
    local req = server_request(c, "sampling/createMessage")
    local cancel = c:take(function(m) return m.method == "notifications/cancelled" end, 5)
    assert.are.equal(req.id, cancel.params.requestId)
    assert.are.equal("timeout", cancel.params.reason)
    local resp = c:take(function(m) return m.id == 7 end, 5)
    assert.are.equal("no sample: the client did not answer sampling/createMessage within 0.3 s (timeout) (timeout)",
                     resp.result.content[1].text)
    answer(c, req.id, { role = "assistant", model = "m", content = { type = "text", text = "late" } })
    c:expect_stderr("late response to cancelled request " .. math.tointeger(req.id) .. " dropped", 5,
                    { plain = true })
    assert.are.same({}, c:request("ping").result)
  end)

  it("progress from the client restarts the timeout, up to the maximum total", function()
    local c = session()
    c:send(H.call_raw("7", "sample", { timeout = 0.4, max_total = 5 }))
    local req = server_request(c, "sampling/createMessage")
    local token = req.params._meta.progressToken
    for i = 1, 4 do                      -- 1.2 s of progress, past three timeouts
      H.pump(0.3)
      c:send({ jsonrpc = "2.0", method = "notifications/progress",
               params = { progressToken = token, progress = i } })
    end
    answer(c, req.id, { role = "assistant", model = "m", content = { type = "text", text = "slow but there" } })
    local resp = c:take(function(m) return m.id == 7 end, 5)
    assert.are.equal("slow but there", resp.result.content[1].text)
  end)

  it("the maximum total holds even while progress keeps coming", function()
    local c = session()
    c:send(H.call_raw("7", "sample", { timeout = 0.3, max_total = 0.6 }))
    local req = server_request(c, "sampling/createMessage")
    local token = req.params._meta.progressToken
    for i = 1, 5 do
      H.pump(0.2)
      c:send({ jsonrpc = "2.0", method = "notifications/progress",
               params = { progressToken = token, progress = i } })
    end
    local resp = c:take(function(m) return m.id == 7 end, 5)
    assert.matches("^no sample: the client did not answer sampling/createMessage within 0.3 s %(timeout%) %(timeout%)$",
                   resp.result.content[1].text)
  end)

  it("cancelling the calling request cancels its request to the client, and no response is sent", function()
    local c = session()
    c:send(H.call_raw("7", "sample"))
    local req = server_request(c, "sampling/createMessage")
    c:send(H.cancel_msg(7, "user stop"))
    local cancel = c:take(function(m) return m.method == "notifications/cancelled" end, 5)
    assert.are.equal(req.id, cancel.params.requestId)
    assert.are.equal("user stop", cancel.params.reason)
    c:expect_stderr("fixture: sample 7: nil cancelled: user stop cancelled", 5, { plain = true })
    c:no_response(0.3)
    assert.are.same({}, c:request("ping").result)
  end)

  it("a client without the capability gets no request; the handler gets nil and why", function()
    local c = session({})
    local resp = c:call("sample", {})
    assert.is_true(resp.result.isError)
    assert.truthy(resp.result.content[1].text:find("no sampling capability", 1, true))
    for _, m in ipairs(c.history) do assert.is_nil(m.method == "sampling/createMessage" or nil) end
  end)

  it("ctx:elicit and ctx:roots send elicitation/create and roots/list", function()
    local c = session()
    c:send(H.call_raw("7", "elicit"))
    local req = server_request(c, "elicitation/create")
    answer(c, req.id, { action = "decline" })
    assert.are.equal("decline", c:take(function(m) return m.id == 7 end, 5).result.content[1].text)
    c:send(H.call_raw("8", "roots"))
    req = server_request(c, "roots/list")
    answer(c, req.id, { roots = { { uri = "file:///tmp", name = "tmp" } } })
    assert.are.equal("1 file:///tmp", c:take(function(m) return m.id == 8 end, 5).result.content[1].text)
  end)
end)
