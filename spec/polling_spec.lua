-- SSE polling (2025-11-25): ctx:close_connection() ends the HTTP answer under
-- a request's stream without ending the stream; the client resumes it.
local HH = require "spec.http_helper"
local H = HH.H

describe("SSE polling", function()
  after_each(function() HH.cleanup() H.cleanup() end)

  it("the answer ends after the priming event; GET with Last-Event-ID brings the response", function()
    local srv = HH.start { plugins = { "spec/fixtures/polling" } }
    local s = HH.initialize(srv, "2025-11-25")
    local _, r = s:call("polled")
    assert.is_true(r:is_sse(), r:describe())
    r:wait_done(5)
    local events = r.events
    assert.truthy(#events >= 1, "no priming event")
    assert.are.equal("", events[1].data)
    assert.truthy(events[1].retry, "no retry field")
    for _, m in ipairs(r:messages()) do assert.is_nil(m.result, "the response came on the first answer") end
    local g = s:get { last_event_id = events[#events].id }
    local m = g:next_message(5)
    assert(m, "nothing on the resumed stream")
    assert.are.equal("answered after closing=true", m.result.content[1].text)
  end)

  it("over stdio there is no connection to close: the call just answers", function()
    local c = H.session { plugins = { "spec/fixtures/polling" } }
    assert.are.equal("answered after closing=unsupported", H.text(c:call("polled")))
  end)
end)
