-- Nothing is sent for a request after its response, not even a log from a
-- <close> variable (stdio and HTTP). A handler's error unwinds its <close>
-- variables before the response, as Lua's pcall does, a timed-out
-- cooperative handler's run as it stops, an aborted one's as it is reset:
-- what they log goes first.
local H = require "spec.helper"
local HH = require "spec.http_helper"

-- The history's index of the first log and of the response to id.
local function order(c, id)
  local log, answer
  for i, m in ipairs(c.history) do
    if m.msg.method == "notifications/message" then log = log or i end
    if m.msg.id == id and (m.msg.result or m.msg.error) then answer = i end
  end
  return log, answer
end

describe("after the response", function()
  after_each(function() HH.cleanup() H.cleanup() end)

  for _, tool in ipairs { "fail_then_log", "timeout_then_log", "abort_then_log" } do
    it(tool .. ": a <close> that logs is sent before the response, nothing after it, on stdio", function()
      local c = H.session { plugins = { "spec/fixtures/late" } }
      local resp = c:call(tool)
      assert.is_true(resp.result.isError)
      c:expect_stderr("fixture: late close ran", 5, { plain = true })
      assert.are.same({}, c:request("ping").result)
      local log, answer = order(c, resp.id)
      assert.truthy(log, "the <close>'s log")
      assert.is_true(log < answer, "a log after the response")
      for i = answer + 1, #c.history do
        assert.are_not.equal("notifications/message", c.history[i].msg.method, "a log after the response")
      end
    end)
  end

  it("a <close> that logs as a handler's error unwinds goes on the call's HTTP stream before its answer", function()
    local srv = HH.start { plugins = { "spec/fixtures/late" } }
    local s = HH.initialize(srv, "2025-11-25")
    local resp, r = s:call("fail_then_log")
    assert.are.equal(200, r.status)
    assert.is_true(resp.result.isError)
    assert.are.equal("text/event-stream", r:header("content-type"))     -- the log, then the answer
    srv:expect_stderr("fixture: late close ran", 5, { plain = true })
    local again = s:call("fail_then_log")                        -- still serving
    assert.is_true(again.result.isError)
  end)
end)
