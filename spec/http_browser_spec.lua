-- Browser clients (CORS) and the cap on HTTP sessions.
local HH = require "spec.http_helper"
local H = HH.H

local function start(args) return HH.start { args = args } end

describe("Streamable HTTP for browsers", function()
  after_each(function() HH.cleanup() H.cleanup() end)

  it("a preflight from an allowed origin is answered 204 with the methods and headers MCP needs", function()
    local srv = start { "--allow-origin", "https://app.example", "--token", "s3cret" }
    local c = HH.connect(srv)
    local r = c:exchange { method = "OPTIONS", headers = {
      Origin = "https://app.example", ["Access-Control-Request-Method"] = "POST",
      ["Access-Control-Request-Headers"] = "content-type, mcp-session-id, authorization" } }
    assert.are.equal(204, r.status, r:describe())
    assert.are.equal("https://app.example", r:header("access-control-allow-origin"))
    assert.truthy(r:header("access-control-allow-methods"):find("POST", 1, true))
    local allow = r:header("access-control-allow-headers"):lower()
    for _, h in ipairs { "content-type", "mcp-session-id", "mcp-protocol-version", "authorization", "last-event-id" } do
      assert.truthy(allow:find(h, 1, true), "missing " .. h)
    end
  end)

  it("a preflight from another origin is refused with 403", function()
    local srv = start()
    local c = HH.connect(srv)
    local r = c:exchange { method = "OPTIONS", headers = { Origin = "https://evil.example" } }
    assert.are.equal(403, r.status)
    assert.is_nil(r:header("access-control-allow-origin"))
  end)

  it("answers to an allowed origin name it and expose Mcp-Session-Id", function()
    local srv = start { "--allow-origin", "https://app.example" }
    local s = HH.initialize(srv, "2025-11-25", { headers = { Origin = "https://app.example" } })
    local r = s.init_resp
    assert.are.equal("https://app.example", r:header("access-control-allow-origin"))
    assert.truthy(r:header("access-control-expose-headers"):lower():find("mcp-session-id", 1, true))
    local _, pr = s:rpc("ping", nil, { headers = { Origin = "https://app.example" } })
    assert.are.equal("https://app.example", pr:header("access-control-allow-origin"))
    local _, nr = s:rpc("ping")                       -- no Origin: no CORS headers
    assert.is_nil(nr:header("access-control-allow-origin"))
  end)
end)

describe("HTTP sessions", function()
  after_each(function() HH.cleanup() H.cleanup() end)

  it("past --max-sessions, initialize gets 503; ending one makes room", function()
    local srv = start { "--max-sessions", "2" }
    local a = HH.initialize(srv, "2025-11-25")
    HH.initialize(srv, "2025-11-25")
    local s = setmetatable({ srv = srv }, getmetatable(a))
    local r = s:post(HH.init_msg("2025-11-25"))
    r:wait_done()
    assert.are.equal(503, r.status, r:describe())
    assert.truthy(r:header("retry-after"))
    assert.are.equal(200, a:delete().status)
    assert.truthy(HH.initialize(srv, "2025-11-25").id)
  end)
end)
