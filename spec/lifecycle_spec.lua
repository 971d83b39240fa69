-- Lifecycle: initialize, version negotiation, what is allowed before it.
local H = require "spec.helper"

describe("lifecycle", function()
  after_each(H.cleanup)

  for _, version in ipairs(H.VERSIONS) do
    it("initialize with protocolVersion " .. version .. " answers the same version", function()
      local c = H.start()
      local result = c:initialize(version)
      assert.are.equal(version, result.protocolVersion)
    end)
  end

  it("initialize with an unknown protocolVersion answers the newest, 2025-11-25", function()
    local c = H.start()
    local result = c:initialize("1999-01-01")
    assert.are.equal("2025-11-25", result.protocolVersion)
  end)

  it("initialize result has serverInfo and the tools and logging capabilities", function()
    local c = H.start()
    local result = c:initialize()
    assert.are.equal("table", type(result.serverInfo))
    assert.are.equal("string", type(result.serverInfo.name))
    assert.are.equal("string", type(result.serverInfo.version))
    assert.are.equal("table", type(result.capabilities))
    assert.are.equal("table", type(result.capabilities.tools))
    assert.are.equal("table", type(result.capabilities.logging))
  end)

  it("a request other than ping before initialize is answered -32600 with its id", function()
    local c = H.start()
    local resp, _, raw = c:request("tools/list", {}, { id = 5 })
    assert.is_nil(resp.result)
    assert.are.equal(-32600, resp.error.code)
    assert.are.equal("5", H.raw_member(raw, "id"))
    -- and the server still accepts initialize afterwards
    assert.are.equal(H.LATEST, c:initialize().protocolVersion)
  end)

  it("a tools/call before initialize is rejected and its handler never runs", function()
    local c = H.start()
    local resp = c:call("marker", {}, { id = 6 })
    assert.are.equal(-32600, resp.error.code)
    c:initialize()
    c:request("ping")
    assert.are.equal(0, c:count_stderr("fixture: marker ran", true))
  end)

  it("ping is answered with an empty result before initialize", function()
    local c = H.start()
    local resp, _, raw = c:request("ping", nil, { id = 1 })
    assert.are.same({}, resp.result)
    assert.is_nil(resp.error)
    assert.truthy(raw:find('"result":{}', 1, true))
  end)

  it("ping is answered after initialize", function()
    local c = H.session()
    local resp = c:request("ping", {})
    assert.are.same({}, resp.result)
  end)

  it("a second initialize is an error and the session keeps its version", function()
    local c = H.start()
    c:initialize("2025-06-18")
    local resp = c:request("initialize", {
      protocolVersion = "2024-11-05", capabilities = {},
      clientInfo = { name = "again", version = "0" },
    })
    assert.is_nil(resp.result)
    assert.are.equal("number", type(resp.error.code))
    assert.is_true(resp.error.code < 0 and resp.error.code == math.floor(resp.error.code))
    -- still the 2025-06-18 session: a batch is still rejected
    c:send('[{"jsonrpc":"2.0","id":77,"method":"ping"}]\n')
    local m = c:recv()
    assert.is_nil(m[1], "batch answered as an array under 2025-06-18")
    assert.are.equal(-32600, m.error.code)
  end)

  it("notifications/initialized gets no response", function()
    local c = H.start()
    c:request("initialize", { protocolVersion = H.LATEST, capabilities = {},
                              clientInfo = { name = "x", version = "0" } })
    c:send({ jsonrpc = "2.0", method = "notifications/initialized" })
    c:no_message()
  end)
end)

-- Supervisors send SIGTERM more than once: `timeout` sends it to the process
-- and then to its group, systemd and shells may repeat it. One that comes
-- while the server shuts down, or after, must not kill it by the signal.
describe("SIGTERM sent again and again until the server is gone", function()
  local HH = require "spec.http_helper"
  after_each(function() H.cleanup(); HH.cleanup() end)

  -- Another process sends SIGTERM 20,000 times as fast as it can. This one
  -- does not run its loop meanwhile, so it does not reap the server: once
  -- the server exits its pid stays a zombie's, never another process's.
  local function flood(c)
    os.execute(("i=0; while [ $i -lt 20000 ] && kill -TERM %d 2>/dev/null; do i=$((i+1)); done"):format(c.pid))
    return c:wait_exit(10)
  end

  for _, mode in ipairs { "stdio", "http" } do
    it(mode .. ": exit status 0 each time, never death by SIGTERM", function()
      for _ = 1, 10 do
        local c
        if mode == "http" then c = HH.start{}
        else c = H.start(); c:initialize() end
        local code, sig = flood(c)
        local why = ("exit %s, signal %s; stderr:\n%s"):format(tostring(code), tostring(sig),
                                                             c:stderr_text():sub(-1500))
        assert.are.equal(0, code, why)
      end
    end)
  end
end)
