-- MCP Apps (io.modelcontextprotocol/ui, 2026-01-26): tools that name their
-- view, the ui:// resource serving it, the extension negotiated per session
-- and per 2026-07-28 request, UI-only tools kept from clients without it,
-- the declarations' checks, and hot reload of a view's HTML. The example
-- plugins/weather_app.lua (copied with its HTML into a temporary directory)
-- is the plugin under test; spec/apps_browser_spec.lua renders it.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local cjson = H.cjson

local UI = "io.modelcontextprotocol/ui"
local MIME = "text/html;profile=mcp-app"
local VIEW = "ui://weather/view"
local RENDERS = { extensions = { [UI] = { mimeTypes = { MIME } } } }

local function slurp(path) return (assert(H.read_file(path))) end
local write = H.write_file

-- A directory with the example plugin and its HTML.
local function example_dir()
  local dir = H.tmpdir()
  for _, name in ipairs { "weather_app.lua", "weather_app.html" } do
    write(dir .. "/" .. name, slurp(H.root .. "/plugins/" .. name))
  end
  return dir
end

local function rm(dir) os.execute("rm -rf '" .. dir .. "'") end

local function names(tools)
  local out = {}
  for _, t in ipairs(tools) do out[#out + 1] = t.name end
  table.sort(out)
  return table.concat(out, " ")
end

local function find(list, key, value)
  for _, x in ipairs(list) do if x[key] == value then return x end end
end

-- A stdio session that declares caps at initialize.
local function session(dir, caps, args)
  local c = H.start{ plugins = { dir }, args = args }
  local resp = c:request("initialize", { protocolVersion = H.LATEST, capabilities = caps or {},
                                         clientInfo = { name = "apps-spec", version = "0" } })
  assert(resp.result, cjson.encode(resp))
  c:send({ jsonrpc = "2.0", method = "notifications/initialized" })
  c.init_result = resp.result
  return c
end

describe("MCP Apps", function()
  local dir
  before_each(function() dir = example_dir() end)
  after_each(function() HH.cleanup() H.cleanup() rm(dir) end)

  it("reads a tool's _meta.ui raw: a table with metamethods put there later runs nothing on the loop", function()
    write(dir .. "/later.lua", [[
local mcp = require "mcp"
local loop = function() while true do end end
local T
T = mcp.tool { name = "later", description = "puts a hostile _meta.ui on itself",
  handler = function()
    T._meta = { ui = setmetatable({}, { __index = loop, __len = loop }) }
    return "armed"
  end }
return mcp.plugin { name = "later", tools = { T } }
]])
    -- beside weather_series (only a view calls it), a call on the Lua path asks whether T is one too
    local c = H.start{ plugins = { dir }, env = { LUAMCP_LUA_PATH = "1" } }
    assert.truthy(c:request("initialize", { protocolVersion = H.LATEST, capabilities = {},
                                            clientInfo = { name = "apps-spec", version = "0" } }).result)
    c:send({ jsonrpc = "2.0", method = "notifications/initialized" })
    assert.are.equal("armed", H.text(c:call("later", {})))
    assert.are.equal("armed", H.text(c:call("later", {}, { timeout = 10 })))
    assert.truthy(c:request("ping", {}, { timeout = 5 }).result)
  end)

  it("initialize declares the extension, and a tool's view is its _meta.ui", function()
    local c = session(dir, RENDERS)
    assert.are.same({}, c.init_result.capabilities.extensions[UI])
    local tools = c:request("tools/list", {}).result.tools
    assert.are.equal("weather weather_series", names(tools))
    assert.are.same({ resourceUri = VIEW }, find(tools, "name", "weather")._meta.ui)
    assert.are.same({ resourceUri = VIEW, visibility = { "app" } }, find(tools, "name", "weather_series")._meta.ui)
  end)

  it("a client without the extension is not shown the UI-only tool, and its call is refused as unknown", function()
    local c = session(dir, {})
    local tools = c:request("tools/list", {}).result.tools
    assert.are.equal("weather", names(tools))
    local resp = c:call("weather_series", { city = "Lisbon" })
    assert.are.equal(-32602, resp.error.code)
    assert.are.equal("Unknown tool: weather_series", resp.error.message)
    -- the tool with a view answers it with text all the same
    local r = c:call("weather", { city = "Lisbon" }).result
    assert.truthy(r.content[1].text:find("^Lisbon: [%d.]+ °C now"))
  end)

  it("the extension without our MIME type in mimeTypes is no support", function()
    local c = session(dir, { extensions = { [UI] = { mimeTypes = { "text/uri-list" } } } })
    assert.are.equal("weather", names(c:request("tools/list", {}).result.tools))
    local c2 = session(dir, RENDERS)
    local r = c2:call("weather_series", { city = "Lisbon", hours = 3 }).result
    assert.are.equal(3, #r.structuredContent.points)
  end)

  it("the view is served with the MCP App MIME type and its _meta.ui, from the file next to the plugin", function()
    local c = session(dir, RENDERS)
    local listed = find(c:request("resources/list", {}).result.resources, "uri", VIEW)
    assert.are.equal(MIME, listed.mimeType)
    assert.are.same({ ui = { prefersBorder = true } }, listed._meta)
    local item = c:request("resources/read", { uri = VIEW }).result.contents[1]
    assert.are.same({ uri = VIEW, mimeType = MIME, text = slurp(dir .. "/weather_app.html"),
                      _meta = { ui = { prefersBorder = true } } }, item)
  end)

  it("csp, permissions, domain and prefers_border go on the wire by their spec names; a plugin may write _meta.ui itself", function()
    write(dir .. "/weather_app.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "meta",
  tools = {
    mcp.tool { name = "raw", _meta = { ui = { resourceUri = "ui://m/v" } }, handler = function() return "ok" end },
    mcp.tool { name = "both", app = "ui://m/v", visibility = { "model", "app" }, handler = function() return "ok" end },
  },
  resources = { mcp.resource { uri = "ui://m/v", app = {
    html = "<!DOCTYPE html><p>hi</p>", domain = "v.example", prefers_border = false,
    csp = { connect_domains = { "https://api.example" }, resource_domains = { "https://cdn.example" },
            frame_domains = { "https://f.example" }, base_uri_domains = { "https://b.example" } },
    permissions = { "camera", "clipboard_write" } } } } }
]])
    local c = session(dir, RENDERS)
    local tools = c:request("tools/list", {}).result.tools
    assert.are.same({ resourceUri = "ui://m/v" }, find(tools, "name", "raw")._meta.ui)
    assert.are.same({ resourceUri = "ui://m/v", visibility = { "model", "app" } }, find(tools, "name", "both")._meta.ui)
    local item = c:request("resources/read", { uri = "ui://m/v" }).result.contents[1]
    assert.are.equal("<!DOCTYPE html><p>hi</p>", item.text)
    assert.are.same({
      csp = { connectDomains = { "https://api.example" }, resourceDomains = { "https://cdn.example" },
              frameDomains = { "https://f.example" }, baseUriDomains = { "https://b.example" } },
      permissions = { camera = {}, clipboardWrite = {} }, domain = "v.example", prefersBorder = false,
    }, item._meta.ui)
  end)

  it("refuses bad declarations at their fields' lines", function()
    local bad = H.tmpdir()
    write(bad .. "/bad.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "bad",
  tools = {
    mcp.tool { name = "a", app = "https://x/view", handler = function() end },
    mcp.tool { name = "b", visibility = { "user" }, handler = function() end },
    mcp.tool { name = "c", visibility = {}, handler = function() end },
  },
  resources = {
    mcp.resource { uri = "ui://x/1", app = { file = "missing.html" } },
    mcp.resource { uri = "ui://x/2", app = { file = "../secret.html" } },
    mcp.resource { uri = "ui://x/3",
      app = { html = "<p>", csp = { connectDomains = { "https://a" } } } },
    mcp.resource { uri = "ui://x/4", app = { html = "<p>" }, read = function() end },
    mcp.resource { uri = "x://5", app = { html = "<p>", permissions = { "usb" } } },
    mcp.resource { uri = "ui://x/6", mimeType = "text/html", app = { html = "<p>", file = "a.html" } },
  } }
]])
    local r = H.start{ no_plugins = true, args = { "check", "--plugins", bad } }
    assert.truthy(r:wait_exit(10))
    local p = bad .. "/bad.lua:"
    local want = {
      p .. "4: tool a: app must be a ui:// URI (the resource that serves the tool's view)",
      p .. '5: tool b: visibility[1] must be "model" or "app"',
      p .. '6: tool c: visibility must name "model", "app" or both',
      p .. "9: resource ui://x/1: app.file: cannot read " .. bad .. "/missing.html: No such file or directory",
      p .. "10: resource ui://x/2: app.file must be a path below the plugin's directory (no leading / nor ..)",
      p .. "12: resource ui://x/3: unknown field app.csp.connectDomains (did you mean app.csp.connect_domains?)",
      p .. "13: resource ui://x/4: app serves the resource: no read",
      p .. "14: resource x://5: an app's uri must be a ui:// URI",
      p .. '14: resource x://5: app.permissions[1] must be "camera", "microphone", "geolocation" or "clipboard_write"',
      p .. "15: resource ui://x/6: an app's mimeType is " .. MIME,
      p .. "15: resource ui://x/6: app needs html (the page) or file (a file next to the plugin), one of them",
      "11 problems (1 plugin, 3 tools, 6 resources, 0 resource templates, 0 prompts)",
    }
    assert.are.equal(table.concat(want, "\n"), table.concat(r.bad_lines, "\n"))
    r.bad_lines = {}                     -- luamcp check's report, not a server's stdout
    rm(bad)
  end)

  it("luamcp call runs a UI-only tool (its session declares the extension); luamcp list says which have views", function()
    local r = H.start{ no_plugins = true, args = { "call", "weather_series", '{"city":"Oslo","hours":2}',
                                                   "--plugins", dir } }
    assert.are.equal(0, r:wait_exit(10), r:stderr_text())
    assert.truthy(r.bad_lines[1]:find("^Oslo, hourly °C: [%d.]+, [%d.]+$"), r.bad_lines[1])
    r.bad_lines = {}                     -- the command's output, not a server's stdout
    local l = H.start{ no_plugins = true, args = { "list", "--plugins", dir } }
    assert.are.equal(0, l:wait_exit(10), l:stderr_text())
    local out = table.concat(l.bad_lines, "\n")
    l.bad_lines = {}
    assert.truthy(out:find("  app: ui://weather/view\n  input:", 1, true), out)
    assert.truthy(out:find("  app: ui://weather/view (only a view calls it)\n", 1, true), out)
  end)

  it("ctx:supports and ctx:require take the extension's name", function()
    write(dir .. "/weather_app.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "asks", tools = { mcp.tool { name = "needs_ui", handler = function(_, ctx)
  local ui = "io.modelcontextprotocol/ui"
  local before = ctx:supports(ui)
  ctx:require(ui)
  return tostring(before)
end } } }
]])
    local with = session(dir, RENDERS)
    assert.are.equal("true", H.text(with:call("needs_ui")))
    local without = session(dir, {})
    local err = without:call("needs_ui").error
    assert.are.equal(-32021, err.code)
    assert.are.equal("Missing required client capability: " .. UI, err.message)
    assert.are.same({ requiredCapabilities = { extensions = { [UI] = {} } } }, err.data)
  end)

  it("a tool with a view that returns no text is logged once", function()
    write(dir .. "/weather_app.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "mute",
  tools = { mcp.tool { name = "pic", app = "ui://m/v",
                       handler = function() return mcp.image("AAAA", "image/png") end } },
  resources = { mcp.resource { uri = "ui://m/v", app = { html = "<p>" } } } }
]])
    local c = session(dir, RENDERS)
    assert.is_nil(c:call("pic").error)
    assert.is_nil(c:call("pic").error)
    assert.truthy(c:wait_stderr("tool pic has a view %(ui://m/v%) but returned no text content"))
    c:request("ping", {})
    local n = 0
    for _, l in ipairs(c.stderr) do if l:find("returned no text content", 1, true) then n = n + 1 end end
    assert.are.equal(1, n)
  end)

  it("an edit of the view's HTML sends notifications/resources/updated to its subscribers (--watch)", function()
    local c = session(dir, RENDERS, { "--watch" })
    assert.is_nil(c:request("resources/subscribe", { uri = VIEW }).error)
    local html = slurp(dir .. "/weather_app.html"):gsub("<h1 id=\"title\">Weather</h1>", "<h1 id=\"title\">Wetter</h1>")
    write(dir .. "/weather_app.html", html)
    local note = c:wait_notification("notifications/resources/updated", nil, 10)
    assert.truthy(note, c:stderr_text())
    assert.are.same({ uri = VIEW }, note.params)
    assert.are.equal(html, c:request("resources/read", { uri = VIEW }).result.contents[1].text)
    assert.truthy(c:wait_stderr("app ui://weather/view: its HTML changed"))
  end)

  it("a mount of a server with apps: its view and UI-only tool pass through, listed by our client's support", function()
    local gw = H.tmpdir()
    write(gw .. "/gw.lua", ([[
local mcp = require "mcp"
return mcp.plugin { name = "gw", mount = { command = { %q, "--plugins", %q } } }
]]):format(H.binary(), dir))
    local c = session(gw, RENDERS)
    assert.are.equal("weather weather_series", names(c:request("tools/list", {}).result.tools))
    local r = c:call("weather_series", { city = "Oslo", hours = 2 }).result
    assert.are.equal(2, #r.structuredContent.points, cjson.encode(r))
    assert.are.equal(MIME, c:request("resources/read", { uri = VIEW }).result.contents[1].mimeType)
    local plain = session(gw, {})
    assert.are.equal("weather", names(plain:request("tools/list", {}).result.tools))
    assert.are.equal(-32602, plain:call("weather_series", { city = "Oslo" }).error.code)
    rm(gw)
  end)

  describe("over HTTP", function()
    it("a 2025-11-25 session: the list follows the session's capabilities", function()
      local srv = HH.start{ plugins = { dir } }
      local with = HH.initialize(srv, "2025-11-25", { capabilities = RENDERS })
      assert.are.same({}, with.init.capabilities.extensions[UI])
      assert.are.equal("weather weather_series", names(with:rpc("tools/list", {}).result.tools))
      local without = HH.initialize(srv, "2025-11-25")
      assert.are.equal("weather", names(without:rpc("tools/list", {}).result.tools))
      assert.are.equal(-32602, without:call("weather_series", { city = "Oslo" }).error.code)
    end)

    it("2026-07-28: a saved view reaches a subscriptions/listen stream that named its URI", function()
      local srv = HH.start{ plugins = { dir }, args = { "--watch" } }
      local r = HH.post_rev2026(srv, { jsonrpc = "2.0", id = "L", method = "subscriptions/listen",
        params = HH.params_rev2026({ notifications = { resourceSubscriptions = { VIEW } } }, RENDERS) })
      assert.are.equal("notifications/subscriptions/acknowledged", r:next_message().method)
      write(dir .. "/weather_app.html", slurp(dir .. "/weather_app.html") .. "<!-- edited -->\n")
      local up = r:next_message(10)
      assert.are.equal("notifications/resources/updated", up and up.method, srv:stderr_text())
      assert.are.equal(VIEW, up.params.uri)
    end)

    it("2026-07-28: each request's own capabilities decide; server/discover declares the extension beside tasks", function()
      write(dir .. "/tasks.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "tasks", tools = { mcp.tool { name = "later", task = "optional",
  handler = function() return "done" end } } }
]])
      local srv = HH.start{ plugins = { dir } }
      local list = { jsonrpc = "2.0", id = 1, method = "tools/list" }
      list.params = HH.params_rev2026({}, RENDERS)
      local _, resp = HH.rpc_rev2026(srv, list)
      assert.are.equal("later weather weather_series", names(resp.result.tools))
      list.params = HH.params_rev2026({}, {})
      _, resp = HH.rpc_rev2026(srv, list)
      assert.are.equal("later weather", names(resp.result.tools))
      local call = { jsonrpc = "2.0", id = 2, method = "tools/call",
                     params = HH.params_rev2026({ name = "weather_series", arguments = { city = "Oslo", hours = 2 } }, RENDERS) }
      _, resp = HH.rpc_rev2026(srv, call)
      assert.are.equal(2, #resp.result.structuredContent.points)
      call.params._meta = HH.meta_rev2026({})
      _, resp = HH.rpc_rev2026(srv, call)
      assert.are.equal(-32602, resp.error.code)
      local _, disc = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = 3, method = "server/discover",
                                            params = HH.params_rev2026({}, {}) })
      assert.are.same({ [UI] = {}, ["io.modelcontextprotocol/tasks"] = {} }, disc.result.capabilities.extensions)
    end)
  end)
end)
