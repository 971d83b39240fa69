-- Operating it (docs/operations/observability.md): --access-log, --log-format json, /healthz and
-- /readyz, /metrics behind the token, --metrics's own listener, and the
-- drain on SIGTERM over HTTP.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local uv, cjson = H.uv, H.cjson

local FIX = "spec/fixtures/ops"

local function tmpfile()
  local p = os.tmpname()
  os.remove(p)
  return p
end

local function read_lines(path)
  local f = io.open(path, "r")
  if not f then return {} end
  local t = {}
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

-- The access log's entries once it has n of them (a bounded wait).
local function entries(path, n)
  H.run_until(function() return #read_lines(path) >= n end)
  local out = {}
  for i, l in ipairs(read_lines(path)) do
    local ok, e = pcall(cjson.decode, l)
    assert(ok, "access log line " .. i .. " is not JSON: " .. l)
    out[#out + 1] = e
  end
  return out
end

local function get(port, path, headers)
  local c = HH.connect(port)
  local r = c:exchange{ method = "GET", path = path, headers = headers }
  c:close()
  return r
end

local RFC3339_MS = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$"

describe("operating it", function()
  after_each(HH.cleanup)

  it("--access-log writes one JSON line per finished request: outcome, cancel reason, sizes", function()
    local log = tmpfile()
    local srv = HH.start{ plugins = { FIX }, args = { "--access-log", log } }
    local s = HH.initialize(srv)
    local body = cjson.encode(s:req("tools/call", { name = "quick", arguments = { tag = "q" } }, 7))
    local r = s:post(body)
    r:wait_done()
    assert.equals(200, r.status)
    local _, c = s:post(s:req("tools/call", { name = "wait", arguments = { tag = "w" } }, 8),
                        { fresh = true, nowait = true })
    srv:expect_stderr("fixture: started w", nil, { plain = true })
    s:notify("notifications/cancelled", { requestId = 8, reason = "no longer needed" })
    c:response():wait_done()
    assert.is_true(s:call("late", { tag = "t" }, { id = 9 }).result.isError)
    local e = entries(log, 3)
    assert.equals(3, #e)
    table.sort(e, function(a, b) return a.id < b.id end)
    for _, x in ipairs(e) do
      assert.matches(RFC3339_MS, x.time)
      assert.equals(s.id:sub(1, 8), x.session)
      assert.equals("tools/call", x.method)
      assert.is_true(x.duration_ms >= 0)
    end
    assert.same({ 7, "quick", "ok", cjson.null, #body, #r.body },
                { e[1].id, e[1].tool, e[1].outcome, e[1].cancel_reason, e[1].bytes_in, e[1].bytes_out })
    assert.same({ 8, "wait", "cancelled", "client", 0 },
                { e[2].id, e[2].tool, e[2].outcome, e[2].cancel_reason, e[2].bytes_out })
    assert.same({ 9, "late", "cancelled", "timeout" }, { e[3].id, e[3].tool, e[3].outcome, e[3].cancel_reason })
    assert.is_true(e[3].bytes_out > 0)                -- the timeout result was sent
    os.remove(log)
  end)

  it("--access-log - writes to stderr (stdout is the protocol over stdio)", function()
    local c = H.session{ plugins = { FIX }, args = { "--access-log", "-" } }
    c:request("tools/call", { name = "quick", arguments = { tag = "x" } }, { id = 5 })
    local line = c:expect_stderr('^{"time":')
    local e = cjson.decode(line)
    assert.same({ "stdio", 5, "quick", "ok" }, { e.session, e.id, e.tool, e.outcome })
  end)

  it("--log-format json writes the stderr log as one JSON object a line", function()
    local c = H.session{ plugins = { FIX }, args = { "--log-format", "json" } }
    c:request("tools/call", { name = "quick", arguments = { tag = "x" } })
    c:close()
    local n = 0
    for _, l in ipairs(c.stderr) do
      local ok, e = pcall(cjson.decode, l)
      assert(ok and type(e) == "table", "not JSON: " .. l)
      assert.matches(RFC3339_MS, e.time)
      assert.is_string(e.level)
      assert.is_string(e.msg)
      if e.msg:find("^serving on stdio") then n = n + 1 end
    end
    assert.equals(1, n)
  end)

  it("/healthz and /readyz answer without the token; /metrics needs it like /mcp", function()
    local srv = HH.start{ plugins = { FIX }, args = { "--token", "s3cret" } }
    local r = get(srv.port, "/healthz")
    assert.same({ 200, "ok\n" }, { r.status, r.body })
    r = get(srv.port, "/readyz")
    assert.same({ 200, "ready\n" }, { r.status, r.body })
    assert.equals(401, get(srv.port, "/metrics").status)
    r = get(srv.port, "/metrics", { Authorization = "Bearer s3cret" })
    assert.equals(200, r.status)
    assert.matches("# TYPE luamcp_requests_total counter", r.body, 1, true)
  end)

  it("--metrics serves /metrics, /healthz and /readyz on a listener of its own, next to stdio", function()
    local c = H.session{ plugins = { FIX }, args = { "--metrics", "127.0.0.1:0" } }
    local line = c:expect_stderr("metrics on http://127%.0%.0%.1:%d+/metrics")
    local port = tonumber(line:match(":(%d+)/metrics"))
    c:request("tools/call", { name = "quick", arguments = { tag = "x" } })
    local r = get(port, "/metrics")
    assert.equals(200, r.status)
    assert.matches('luamcp_requests_total{method="tools/call",tool="quick",outcome="ok"} 1\n', r.body, 1, true)
    assert.matches("luamcp_sessions 1\n", r.body, 1, true)
    assert.equals(200, get(port, "/healthz").status)
    assert.equals(200, get(port, "/readyz").status)
    assert.equals(404, get(port, "/mcp").status)
  end)

  it("SIGTERM drains: new requests 503, readyz 503, a call that ends in time answers, the rest stop with reason shutdown", function()
    local log = tmpfile()
    local srv = HH.start{ plugins = { FIX }, args = { "--drain", "4", "--test-clock", "--timeout", "0", "--access-log", log } }
    local s = HH.initialize(srv)
    local probe = HH.connect(srv.port)                -- open before the drain: existing connections go on
    local _, ca = s:post(s:req("tools/call", { name = "wait", arguments = { tag = "a", seconds = 100 } }, 1),
                         { fresh = true, nowait = true })
    local _, cb = s:post(s:req("tools/call", { name = "wait", arguments = { tag = "b", seconds = 100000 } }, 2),
                         { fresh = true, nowait = true })
    srv:expect_stderr("fixture: started a", nil, { plain = true })
    srv:expect_stderr("fixture: started b", nil, { plain = true })
    srv:kill("sigterm")
    srv:expect_stderr("draining", nil, { plain = true })
    local r = probe:exchange{ method = "GET", path = "/readyz" }
    assert.same({ 503, "not ready\n" }, { r.status, r.body })
    assert.equals(200, probe:exchange{ method = "GET", path = "/healthz" }.status)
    assert.is_false(pcall(HH.connect, srv.port, { timeout = 5 }))   -- no new connection
    r = s:post(s:req("tools/call", { name = "quick", arguments = { tag = "late" } }, 3))
    r:wait_done()
    assert.equals(503, r.status)
    local msg = r:json()
    assert.equals(3, msg.id)
    assert.equals(-32000, msg.error.code)
    s:notify("notifications/luamcp/advance", { seconds = 200 })   -- a notification still goes in: a ends
    local ra = ca:response()
    assert.equals("slept a", HH.rpc_response(ra).result.content[1].text)
    srv:expect_stderr("fixture: stopped b reason=shutdown", 30, { plain = true })
    assert.equals(0, (srv:wait_exit(30)))
    local rb = cb:response()
    assert.is_nil(HH.rpc_response(rb))                -- cancelled: no response
    local e = entries(log, 2)
    table.sort(e, function(x, y) return x.id < y.id end)
    assert.same({ "ok", cjson.null }, { e[1].outcome, e[1].cancel_reason })
    assert.same({ "cancelled", "shutdown" }, { e[2].outcome, e[2].cancel_reason })
    os.remove(log)
  end)
end)
