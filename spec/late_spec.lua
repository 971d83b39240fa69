-- Nothing is sent for a request after its response: not even a log from a
-- <close> variable that runs once the handler has failed (stdio and HTTP).
local H = require "spec.helper"
local HH = require "spec.http_helper"

describe("after the response", function()
  after_each(function() HH.cleanup() H.cleanup() end)

  it("a <close> that logs after a handler's error sends nothing on stdio", function()
    local c = H.session { plugins = { "spec/fixtures/late" } }
    local resp = c:call("fail_then_log")
    assert.is_true(resp.result.isError)
    c:expect_stderr("fixture: late close ran", 5, { plain = true })
    assert.are.same({}, c:request("ping").result)
    for _, m in ipairs(c.history) do
      assert.are_not.equal("notifications/message", m.msg.method, "a log after the response")
    end
  end)

  it("a <close> that logs after a handler's error does not touch the answered HTTP stream", function()
    local srv = HH.start { plugins = { "spec/fixtures/late" } }
    local s = HH.initialize(srv, "2025-11-25")
    local resp, r = s:call("fail_then_log")
    assert.are.equal(200, r.status)
    assert.is_true(resp.result.isError)
    assert.are.equal("application/json", r:header("content-type"))
    srv:expect_stderr("fixture: late close ran", 5, { plain = true })
    local again = s:call("fail_then_log")                        -- still serving
    assert.is_true(again.result.isError)
  end)
end)
