-- The example plugins in plugins/ do what their comments say. Written with
-- mcp.test, the way a plugin author would test them.
package.path = "lua/?.lua;" .. package.path
local T = require "mcp.test"
local H = require "spec.helper"

describe("example plugins", function()
  local srv
  before_each(function() srv = T.start { plugins = { "plugins" }, bin = H.binary() } end)
  after_each(function() srv:stop() end)

  it("hello.lua: echo returns its text", function()
    assert.are.equal("hi there", T.text(srv:call("echo", { text = "hi there" })))
  end)

  it("hello.lua: echo without text is refused, naming the field", function()
    local r = srv:call("echo", {})
    assert.is_true(r.isError)
    assert.truthy(T.text(r):find("text: required", 1, true), T.text(r))
  end)

  it("slow.lua: count reports progress and counts to n", function()
    local c = srv:start("count", { n = 3, delay = 0 })
    local r = assert(c:result())
    assert.are.equal("counted to 3", T.text(r))
    assert.are.equal(3, #c.progress)
    assert.are.equal(3, c.progress[3].progress)
    assert.are.equal(3, c.progress[3].total)
  end)

  it("slow.lua: count stops when cancelled, says where, and sends no response", function()
    local c = srv:start("count", { n = 1000, delay = 0.05 })
    assert.is_true(c:wait_progress(2))
    c:cancel("enough")
    local log = c:wait_log("^stopped at %d+: enough$")
    assert.truthy(log, "no 'stopped at' log")
    assert.are.equal("slow", log.logger)
    assert.is_nil(c:wait(0.3))
  end)

  it("slow.lua: count times out after the plugin's 30 s", function()
    local c = srv:start("count", { n = 1000, delay = 10 })
    assert.is_true(c:wait_progress(1))
    srv:advance(30)
    local r = assert(c:result())
    assert.is_true(r.isError)
    assert.truthy(T.text(r):find("timed out after 30 seconds", 1, true), T.text(r))
  end)

  it("web.lua: fetch_url returns the status, type and body, with progress", function()
    local o = require("spec.origin").start()
    local c = srv:start("fetch_url", { url = o.url .. "/hello" })
    local r = assert(c:result())
    o:stop()
    assert.are.equal("200 text/plain\n\nhello", T.text(r))
    assert.are.equal(5, c.progress[#c.progress].progress)
  end)

  it("web.lua: a cancel closes the connection to the server at once", function()
    local o = require("spec.origin").start()
    local c = srv:start("fetch_url", { url = o.url .. "/hang" })
    assert.is_true(H.run_until(function() return #o.requests == 1 end, 5))
    c:cancel("changed my mind")
    assert.is_true(H.run_until(function() return o:open_count() == 0 end, 1))
    assert.is_nil(c:wait(0.3))
    o:stop()
  end)

  it("gateway.lua: mounts luamcp's own plugins, prefixed self_", function()
    assert.are.equal("via the gateway", T.text(srv:call("self_echo", { text = "via the gateway" })))
  end)
end)
