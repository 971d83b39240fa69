-- The console (--console): its safety over plain HTTP (the token, Host and
-- Origin, the CSP, no console beyond loopback without OAuth's scope, the
-- audit line, nothing built while nobody watches), and its page in a real
-- browser (Debian's Chromium driven by puppeteer-core, spec/console/*.mjs,
-- Node 22 from the test cache): run a tool from its form, cancel calls, see
-- a reload and a sandbox limit, the charts; one screenshot per panel goes
-- to build/artifacts/console/.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local N = require "spec.node_helper"
local cjson = H.cjson

local FIX = "spec/fixtures/console"
local CLIENT = "luamcp-http-specs"      -- http_helper's clientInfo.name

local function start(extra)
  local args = { "--console", "--sandbox", H.root .. "/" .. FIX .. "/sandboxed",
                 "--config", H.root .. "/" .. FIX .. "/luamcp.conf.lua" }
  for _, a in ipairs(extra and extra.args or {}) do args[#args + 1] = a end
  local srv = HH.start{ plugins = extra and extra.plugins or { FIX .. "/trusted" }, args = args,
                        env = extra and extra.env }
  local line = srv:wait_stderr("console: http://")
  assert(line, "no console URL on stderr:\n" .. srv:stderr_text())
  srv.console_url = line:match("(http://%S+)")
  srv.token = line:match("token=(%x+)")
  return srv
end

local function get(srv, path, headers)
  local c = HH.connect(srv)
  local r = c:exchange({ method = "GET", path = path, headers = headers })
  c:close()
  return r
end

local function metric(srv, name)
  local r = get(srv, "/console/api/metrics?token=" .. srv.token)
  return tonumber(r.body:match("\n" .. name .. " ([%d.e+]+)"))
end

describe("the console over HTTP", function()
  local srv
  after_each(function()
    if srv then srv:close() end
    srv = nil
    HH.cleanup()
  end)

  it("is off by default", function()
    srv = HH.start{ plugins = { FIX .. "/trusted" } }
    assert.are.equal(404, get(srv, "/console/").status)
  end)

  it("prints its URL on loopback and wants its token on every request", function()
    srv = start()
    assert.truthy(srv.console_url:find("^http://127%.0%.0%.1:" .. srv.port .. "/console%?token=%x+$"))
    assert.are.equal(401, get(srv, "/console/").status)
    assert.are.equal(401, get(srv, "/console/events").status)
    assert.are.equal(401, get(srv, "/console/api/calls").status)
    assert.are.equal(403, get(srv, "/console/api/calls?token=" .. string.rep("0", 32)).status)
    assert.are.equal(403, get(srv, "/console/", { Cookie = "luamcp_console_" .. srv.port .. "=" .. string.rep("a", 32) }).status)
    -- the token's first use: a cookie, and a URL without it
    local r = get(srv, "/console?token=" .. srv.token)
    assert.are.equal(303, r.status)
    assert.are.equal("/console/", r:header("location"))
    local cookie = r:header("set-cookie")
    -- named by the port: a browser sends a host's cookies to all its ports
    assert.truthy(cookie:find("luamcp_console_" .. srv.port .. "=" .. srv.token, 1, true))
    assert.truthy(cookie:find("HttpOnly", 1, true) and cookie:find("SameSite=Strict", 1, true))
    local page = get(srv, "/console/", { Cookie = "luamcp_console_" .. srv.port .. "=" .. srv.token })
    assert.are.equal(200, page.status)
    assert.truthy(page.body:find('<script type="module" src="console.js">', 1, true))
    assert.are.equal(200, get(srv, "/console/console.js", { Cookie = "luamcp_console_" .. srv.port .. "=" .. srv.token }).status)
    -- another console's cookie on the same host is not this one's
    assert.are.equal(401, get(srv, "/console/", { Cookie = "luamcp_console_1=" .. srv.token }).status)
    assert.are.equal(404, get(srv, "/console/../luamcp.conf.lua?token=" .. srv.token).status)
  end)

  it("answers with a strict Content-Security-Policy", function()
    srv = start()
    for _, path in ipairs { "/console/", "/console/console.js", "/console/api/calls", "/console/nope.html" } do
      local r = get(srv, path .. "?token=" .. srv.token)
      local csp = r:header("content-security-policy") or ""
      assert.truthy(csp:find("default-src 'self'", 1, true), path .. ": " .. csp)
      assert.truthy(csp:find("frame-ancestors 'none'", 1, true), path)
      assert.falsy(csp:find("unsafe", 1, true), path)
      assert.are.equal("nosniff", r:header("x-content-type-options"))
    end
  end)

  it("keeps /mcp's Host and Origin checks", function()
    srv = start()
    assert.are.equal(421, get(srv, "/console/?token=" .. srv.token, { Host = "evil.example:" .. srv.port }).status)
    assert.are.equal(403, get(srv, "/console/?token=" .. srv.token, { Origin = "http://evil.example" }).status)
    -- an action must come from the console's own origin
    local c = HH.connect(srv)
    local r = c:exchange({ method = "POST", path = "/console/api/calls/1.1/cancel?token=" .. srv.token, body = "",
                           headers = { Origin = "http://localhost:1" } })
    c:close()
    assert.are.equal(403, r.status)
  end)

  it("prints its URL whatever the log level", function()
    local c = H.start{ plugins = { FIX .. "/trusted" }, args = { "--http", "127.0.0.1:0", "--console", "--log-level", "error" } }
    local line = c:wait_stderr("console: http://127%.0%.0%.1:%d+/console%?token=%x+")
    c:kill("sigterm")
    c:wait_exit(10)
    assert.truthy(line, c:stderr_text())
    assert.falsy(c:stderr_text():find("listening on", 1, true))      -- the threshold holds for the rest
  end)

  it("refuses a non-loopback address without OAuth and console_scope", function()
    local c = H.start{ plugins = { FIX .. "/trusted" }, args = { "--http", "0.0.0.0:0", "--console" } }
    local code = c:wait_exit(10)
    assert.are_not.equal(0, code)
    assert.truthy(c:stderr_text():find("needs OAuth (--auth-*) and --console-scope", 1, true), c:stderr_text())
  end)

  it("cancels a call from any session, with an audit line, and builds nothing while nobody watches", function()
    srv = start()
    local s = HH.initialize(srv, "2025-11-25")
    s:rpc("tools/call", { name = "greet", arguments = { name = "x" } })
    assert.are.equal(0, metric(srv, "luamcp_console_events_total"))
    assert.are.equal(0, metric(srv, "luamcp_console_streams"))
    -- a watcher: events are built
    local w = HH.connect(srv)
    w:request({ method = "GET", path = "/console/events?token=" .. srv.token })
    local ev = assert(w:response())
    assert.are.equal("text/event-stream", ev:header("content-type"))
    local long = HH.connect(srv)
    long:request({ method = "POST", path = "/mcp", body = cjson.encode({ jsonrpc = "2.0", id = "long",
      method = "tools/call", params = { name = "slow", arguments = { steps = 100 } } }),
      headers = { ["Content-Type"] = "application/json", Accept = HH.ACCEPT, ["Mcp-Session-Id"] = s.id,
                  ["MCP-Protocol-Version"] = s.version } })
    local id, client
    H.run_until(function()
      for _, e in ipairs(ev.events) do
        if e.event == "call" and e.msg and e.msg.state == "running" and e.msg.tool == "slow" then
          id, client = e.msg.id, e.msg.client
        end
      end
      return id ~= nil
    end, 10)
    assert.truthy(id, "no running call event")
    assert.are.equal('%22long%22', id:match("%.(.*)$"))
    assert.are.equal(CLIENT, client)
    local c = HH.connect(srv)
    local r = c:exchange({ method = "POST", path = "/console/api/calls/" .. id .. "/cancel?token=" .. srv.token,
                           body = "", headers = { Origin = "http://" .. srv.host } })
    c:close()
    assert.are.equal(200, r.status, r.body)
    assert.truthy(srv:wait_stderr("console: audit: the console token's holder cancels call " .. id, nil, { plain = true }))
    assert.truthy(srv:wait_stderr("slow stopped at step %d+ of 100: cancelled from the console"))
    H.run_until(function()
      for _, e in ipairs(ev.events) do
        if e.event == "call" and e.msg and e.msg.id == id and e.msg.state == "cancelled" then return true end
      end
    end, 10)
    local seen = {}
    for _, e in ipairs(ev.events) do seen[e.event or "message"] = true end
    assert.truthy(seen.calls and seen.call and seen.log)
    assert.is_true(metric(srv, "luamcp_console_events_total") > 0)
    w:close()
    long:close()
    H.run_until(function() return metric(srv, "luamcp_console_streams") == 0 end, 10)
    local built = metric(srv, "luamcp_console_events_total")
    s:rpc("tools/call", { name = "greet", arguments = { name = "y" } })
    assert.are.equal(built, metric(srv, "luamcp_console_events_total"))
    -- no such call
    c = HH.connect(srv)
    r = c:exchange({ method = "POST", path = "/console/api/calls/9.9/cancel?token=" .. srv.token, body = "",
                     headers = { Origin = "http://" .. srv.host } })
    c:close()
    assert.are.equal(404, r.status)
  end)

  it("lists the plugins, sandboxed ones with their grants", function()
    srv = start()
    local r = get(srv, "/console/api/plugins?token=" .. srv.token)
    local v = cjson.decode(r.body)
    local by = {}
    for _, p in ipairs(v.plugins) do by[p.name] = p end
    assert.is_false(by.desk.sandboxed)
    assert.is_true(by.hog.sandboxed)
    assert.are.equal(200, by.hog.grants.cpu_ms)
  end)
end)

describe("the console in Chromium", function()
  if N.skipped then
    pending("skipped: LUAMCP_SKIP_NODE=1 (needs Node 22 and puppeteer-core from npm)")
    return
  end
  local env, srv, dir
  setup(function() env = N.prepare("console") end)
  teardown(function() N.remove(env) end)
  after_each(function()
    if srv then srv:close() end
    if dir then os.execute("rm -rf '" .. dir .. "'") end
    HH.cleanup()
  end)

  it("runs tools, cancels calls, shows reloads, limits and charts, with no error and no CSP violation", function()
    dir = H.tmpdir()
    local file = dir .. "/desk.lua"
    assert(H.uv.fs_copyfile(H.root .. "/" .. FIX .. "/trusted/desk.lua", file))
    -- tracing on, for the waterfall: the spans go nowhere (a port nobody listens on)
    srv = start{ plugins = { dir }, args = { "--watch" },
                 env = { OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:" .. H.free_port() } }
    local shots = H.root .. "/build/artifacts/console"
    local rep = N.run(env, "console.mjs", {}, {
      CONSOLE_URL = srv.console_url, BASE = "http://" .. srv.host, PLUGIN_FILE = file, SHOTS = shots,
    })
    local k = rep.checks
    assert.is_true(rep.ok, cjson.encode(rep))
    assert.are.same({}, rep.console_errors)
    assert.are.same({}, rep.csp)
    assert.are.equal(401, k.without_token)
    assert.are.equal(200, k.with_token)
    assert.are.equal("http://" .. srv.host .. "/console/", k.url_after)   -- the token left the URL
    table.sort(k.fields)    -- a Lua table's keys: any order
    assert.are.same({ "city", "floor", "loud", "mood", "name", "place", "ratio", "tags", "times" }, k.fields)
    assert.are.equal(1, k.required)
    assert.are.equal("2", k.default_times)
    assert.are.equal('"calm"', k.mood_default)
    assert.truthy(k.greet_result:find("HELLO Ada, HELLO Ada", 1, true), k.greet_result)
    assert.truthy(k.greet_result:find("London", 1, true), k.greet_result)      -- structuredContent's tree
    assert.truthy(k.progress_seen:find("progress 2 / 4: step 2", 1, true), k.progress_seen)
    assert.truthy(k.slow_result:find("counted to 4", 1, true), k.slow_result)
    assert.truthy(k.tools_cancel_after:find("slow stopped at step", 1, true), k.tools_cancel_after)
    assert.truthy(k.tools_cancel_after:find("the call ended: cancelled", 1, true), k.tools_cancel_after)
    assert.truthy(k.calls_cancelled_row:find("cancelled from the console", 1, true), k.calls_cancelled_row)
    assert.truthy(k.spin_row:find("limit: cpu", 1, true), k.spin_row)
    local stop_line
    for _, l in ipairs(k.log_lines) do if l:find("stopped at step", 1, true) then stop_line = l end end
    assert.truthy(stop_line, cjson.encode(k.log_lines))
    assert.truthy(k.reload_line:find("reloaded plugin desk from " .. file .. ": tools +wave", 1, true), k.reload_line)
    assert.truthy(k.failed:find(file .. ":6: '}' expected", 1, true), k.failed)
    assert.truthy(k.desk_card:find("wave", 1, true), k.desk_card)
    assert.truthy(k.hog_card:find("sandboxed", 1, true) and k.hog_card:find('"cpu_ms":200', 1, true), k.hog_card)
    assert.truthy(k.greet_numbers:find("calls/s", 1, true), k.greet_numbers)
    assert.truthy(k.cancelled_trace:find("tools/call slow", 1, true), k.cancelled_trace)
    assert.truthy(k.cancelled_trace:find("cancelled", 1, true), k.cancelled_trace)
    assert.truthy(k.cancelled_trace:find("step", 1, true), k.cancelled_trace)         -- ctx:span's children
    for _, name in ipairs { "tools", "tools-form", "tools-progress", "tools-cancel", "calls", "logs", "plugins", "numbers", "traces" } do
      assert.truthy(H.uv.fs_stat(shots .. "/" .. name .. ".png"), name .. ".png")
    end
  end)
end)

describe("the console behind OAuth", function()
  if N.skipped then
    pending("skipped: LUAMCP_SKIP_NODE=1 (the authorization server runs on Node 22)")
    return
  end
  local A = require "spec.auth_helper"
  local as, env, srv
  setup(function() as, env = A.auth_server() end)
  teardown(function() A.stop(as, env) end)
  after_each(function()
    if srv then srv:close() end
    srv = nil
    HH.cleanup()
  end)

  it("takes a bearer token with console_scope for its own token", function()
    srv = A.start(as, { "--console", "--console-scope", "console:admin" }, nil, { FIX .. "/trusted" })
    local function claims(scope) return { sub = "ann", scope = scope, aud = srv.aud, client_id = "spec" } end
    local admin, other = as:mint(claims("console:admin")), as:mint(claims("tools:read"))
    assert.are.equal(200, A.http(srv.port, "GET", "/console/api/calls", nil, A.bearer(admin)).status)
    assert.are.equal(403, A.http(srv.port, "GET", "/console/api/calls", nil, A.bearer(other)).status)
    assert.are.equal(401, A.http(srv.port, "GET", "/console/api/calls").status)
    local r = A.http(srv.port, "POST", "/console/api/calls/1.1/cancel", "",
                     { Authorization = "Bearer " .. admin, Origin = "http://127.0.0.1:" .. srv.port })
    assert.are.equal(404, r.status)                         -- allowed, but no such call
    assert.truthy(srv:wait_stderr("console: audit: ann cancels call 1.1", nil, { plain = true }))
  end)

  it("on loopback, takes its own token too: a browser sends no bearer token", function()
    srv = A.start(as, { "--console" }, nil, { FIX .. "/trusted" })
    local line = assert(srv:wait_stderr("console: http://"))
    local token = line:match("token=(%x+)")
    assert.are.equal(200, A.http(srv.port, "GET", "/console/api/calls?token=" .. token).status)
    assert.are.equal(401, A.http(srv.port, "GET", "/console/api/calls").status)
    assert.are.equal(403, A.http(srv.port, "GET", "/console/api/calls?token=" .. string.rep("0", 32)).status)
    -- a request that brings a bearer token is checked as one
    assert.are.equal(401, A.http(srv.port, "GET", "/console/api/calls?token=" .. token, nil,
                                 A.bearer("not-a-token")).status)
  end)
end)
