-- The example MCP App (plugins/weather_app.lua) rendered in Chromium by a web
-- host made of the official pieces: the SDK v2 client over Streamable HTTP
-- and @modelcontextprotocol/ext-apps's AppBridge, the view in a sandboxed
-- iframe behind a sandbox proxy on another origin (spec/apps/host.mjs,
-- host.html, sandbox.html). The view calls weather_series through the host
-- and draws it; the DOM is checked against what luamcp answers a client of
-- its own, and a screenshot is kept (build/artifacts/apps/). A client that
-- does not declare the extension is not shown weather_series.
--
-- Node 22, the client, ext-apps and puppeteer-core come from npm
-- (test/node-env.sh, through spec/node_helper.lua); the browser is Debian's
-- /usr/bin/chromium. LUAMCP_SKIP_NODE=1 makes these pending.
local H = require "spec.helper"
local N = require "spec.node_helper"
local cjson, uv = H.cjson, H.uv

if N.skipped then
  describe("MCP Apps in a browser", function()
    pending("skipped: LUAMCP_SKIP_NODE=1 (needs Node 22, ext-apps and puppeteer-core from npm)")
  end)
  return
end

local ARTIFACTS = H.root .. "/build/artifacts/apps"

describe("MCP Apps in a browser", function()
  local env
  setup(function() env = N.prepare("apps") end)
  teardown(function() N.remove(env) end)
  after_each(H.cleanup)

  -- luamcp serving the example alone (plugins/weather_app.lua and its HTML)
  local function render(revision, shot)
    local dir = H.tmpdir()
    for _, name in ipairs { "weather_app.lua", "weather_app.html" } do
      assert(uv.fs_copyfile(H.root .. "/plugins/" .. name, dir .. "/" .. name))
    end
    local srv = H.start{ plugins = { dir }, args = { "--http", "127.0.0.1:0" } }
    local line = srv:wait_stderr("listening on http://127%.0%.0%.1:%d+/mcp")
    assert(line, srv:stderr_text())
    local url = line:match("(http://127%.0%.0%.1:%d+/mcp)")
    local rep = N.run(env, "host.mjs", nil, { SDK_URL = url, SDK_REVISION = revision, APPS_CITY = "Lisbon",
                                             APPS_SHOT = ARTIFACTS .. "/" .. shot })
    os.execute("rm -rf '" .. dir .. "'")
    return rep, srv
  end

  local function check(rep, srv, version)
    local host, dom = rep.host, rep.dom
    assert.are.same({}, host.errors, cjson.encode(rep))
    assert.are.equal(version, host.protocolVersion)
    assert.are.same({}, host.serverExtensions["io.modelcontextprotocol/ui"])
    assert.are.same({ uri = "ui://weather/view", mimeType = "text/html;profile=mcp-app",
                      ui = { prefersBorder = true } }, host.view)
    assert.are.same({ name = "weather-view", version = "1.0.0" }, host.appVersion)
    -- the view drew what weather_series answers, having asked through the host
    assert.truthy(dom, "no view frame drew; console:\n" .. table.concat(rep.console, "\n"))
    assert.are.equal("drawn", dom.state, dom.values)
    assert.are.same({ { name = "weather_series", arguments = { city = "Lisbon", hours = 24 } } }, host.forwarded)
    assert.are.equal(24, #dom.points)
    assert.are.equal(24, dom.polyline)
    local temps = {}
    for i, p in ipairs(rep.reference.points) do
      assert.are.same(p, dom.points[i])
      temps[i] = ("%.1f"):format(p.temp)
    end
    assert.are.equal(table.concat(temps, " · ") .. " °C", dom.values)
    assert.are.equal("Weather in Lisbon", dom.title)
    assert.are.equal(host.toolResult.content[1].text, dom.summary)
    assert.truthy(dom.summary:find("^Lisbon: [%d.]+ °C now"))
    assert.truthy(dom.sandboxed)
    assert.truthy(dom.origin:find("^http://localhost:%d+$"), dom.origin)   -- not the host's origin
    -- the host renders apps: it is shown both tools; a client that does not, weather alone
    local shown = {}
    for _, t in ipairs(host.tools) do shown[#shown + 1] = t.name end
    table.sort(shown)
    assert.are.equal("weather weather_series", table.concat(shown, " "))
    assert.are.equal("weather", table.concat(rep.plainTools, " "))
    local f = assert(io.open(rep.shot, "rb"))
    assert.are.equal("\137PNG", f:read(4))
    f:close()
    srv:kill("sigterm")
    assert.are.equal(0, srv:wait_exit(10), srv:stderr_text())
  end

  it("a 2025-11-25 session: the view calls weather_series through the host and draws it", function()
    local rep, srv = render("default", "weather-2025-11-25.png")
    check(rep, srv, "2025-11-25")
  end)

  it("2026-07-28: the same with the extension declared in every request's _meta", function()
    local rep, srv = render("2026-07-28", "weather-2026-07-28.png")
    check(rep, srv, "2026-07-28")
  end)
end)
