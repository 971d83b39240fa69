-- require "mcp.test": the helper plugin authors use from busted. These specs
-- use it the way a plugin author would.
package.path = "lua/?.lua;" .. package.path
local T = require "mcp.test"
local H = require "spec.helper"

describe("mcp.test", function()
  local srv
  after_each(function() if srv then srv:stop() srv = nil end end)

  local function start()
    srv = T.start { plugins = { "spec/fixtures/mcptest", "spec/fixtures/plugins" }, bin = H.binary() }
    return srv
  end

  it("calls a tool and returns its result", function()
    start()
    assert.are.equal("hello", T.text(srv:call("echo", { text = "hello" })))
  end)

  it("moves the server's clock: a 50 s sleep ends when the clock is advanced, at once", function()
    start()
    local c = srv:start("nap", { seconds = 50 })
    -- an advance that overtook the handler would move the clock before its
    -- sleep (a fixed pump let it, on a loaded machine)
    assert.truthy(c:wait_log("^napping$"))
    local t0 = H.now()
    srv:advance(50)
    local r = assert(c:result(5))
    local ok, dt = T.text(r):match("^slept (%a+) ([%d.]+)$")
    assert.are.equal("true", ok, T.text(r))
    assert.is_true(tonumber(dt) >= 50 and tonumber(dt) < 52, T.text(r))
    assert.is_true(H.now() - t0 < 2, "it waited in real time")
  end)

  it("advancing past a tool's timeout gives the timeout result", function()
    start()
    local c = srv:start("slow")
    srv:pump(0.1)
    srv:advance(30)
    local r = assert(c:result(5))
    assert.is_true(r.isError)
    assert.truthy(T.text(r):find("timed out after 30 seconds", 1, true), T.text(r))
    assert.truthy(c:wait_log("woke: cancelled: timeout"))
  end)

  it("reads progress and logs, and a cancelled call gets no response", function()
    start()
    local c = srv:start("steps", { n = 10 })
    assert.is_true(c:wait_progress(1))
    srv:advance(1)
    assert.is_true(c:wait_progress(2))
    assert.are.equal(2, c.progress[2].progress)
    c:cancel("enough")
    assert.truthy(c:wait_log("stopped at 3"))
    assert.is_nil(c:wait(0.3))
  end)

  it("env adds to the server's environment, and false removes a name", function()
    local uv = require "luv"
    assert.truthy(uv.os_getenv("PATH") and uv.os_getenv("HOME"), "PATH and HOME are set for this spec")
    srv = T.start { plugins = { "spec/fixtures/mcptest" }, bin = H.binary(),
                    env = { LUAMCP_TEST_A = "one two", LUAMCP_TEST_N = 42, HOME = false } }
    local text = T.text(srv:call("getenv", { names = { "LUAMCP_TEST_A", "LUAMCP_TEST_N", "HOME", "PATH" } }))
    assert.are.equal("LUAMCP_TEST_A=one two LUAMCP_TEST_N=42 HOME=(unset) PATH=" .. uv.os_getenv("PATH"), text)
  end)

  it("without env the server inherits the environment as it is", function()
    start()
    local uv = require "luv"
    assert.are.equal("HOME=" .. uv.os_getenv("HOME"), T.text(srv:call("getenv", { names = { "HOME" } })))
  end)

  it("env refuses what is not a variable or a value, at the spec's line", function()
    local line = debug.getinfo(1, "l").currentline
    local ok, err = pcall(function() T.start { bin = H.binary(), env = { A = {} } } end)
    assert.is_false(ok)
    local want = ("mcp_test_spec.lua:%d: mcp.test: env.A must be a string, a number or false (got table)")
                 :format(line + 1)
    assert.are.equal(want, err:sub(-#want), err)   -- busted names the file as it was given, relative or not
    assert.truthy(err:find("spec/" .. want, 1, true), err)
    ok, err = pcall(function() T.start { bin = H.binary(), env = { ["A=B"] = "x" } } end)
    assert.is_false(ok)
    assert.truthy(err:find("A=B is not a variable name", 1, true), err)
  end)

  it("stop ends the server with exit code 0", function()
    start()
    srv:start("slow")
    assert.are.equal(0, srv:stop())
    srv = nil
  end)
end)
