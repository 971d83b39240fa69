-- /metrics (docs/operations/observability.md), read by a real Prometheus (Debian's
-- prometheus package; scripts/deps.sh installs it): known traffic, then
-- the values through Prometheus's HTTP API. And /metrics scraped during a
-- hot-reload storm: every scrape parses (promtool check metrics), no
-- counter goes down.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local uv, cjson = H.uv, H.cjson

local FIX = "spec/fixtures/ops"
local PROMETHEUS, PROMTOOL = "/usr/bin/prometheus", "/usr/bin/promtool"
local have_prometheus = uv.fs_stat(PROMETHEUS) ~= nil and uv.fs_stat(PROMTOOL) ~= nil

local function get(port, path, headers)
  local c = HH.connect(port)
  local r = c:exchange{ method = "GET", path = path, headers = headers }
  c:close()
  return r
end

local function urlencode(s)
  return (s:gsub("[^%w%-%._~]", function(ch) return ("%%%02X"):format(ch:byte()) end))
end

-- The value of an instant query with exactly one series, or nil.
local function query(port, q)
  local r = get(port, "/api/v1/query?query=" .. urlencode(q))
  local ok, res = pcall(cjson.decode, r.body)
  if not ok or res.status ~= "success" or #res.data.result ~= 1 then return nil, r.body end
  return tonumber(res.data.result[1].value[2])
end

local function spawn_prometheus(target_port)
  local dir = H.tmpdir()
  local conf = dir .. "/prometheus.yml"
  local f = assert(io.open(conf, "w"))
  f:write(([[
global:
  scrape_interval: 3s
  scrape_timeout: 3s
  evaluation_interval: 3s
scrape_configs:
  - job_name: luamcp
    static_configs:
      - targets: ['127.0.0.1:%d']
]]):format(target_port))
  f:close()
  local port = H.free_port()
  local p = H.start{ bin = PROMETHEUS, no_plugins = true, args = {
    "--config.file=" .. conf, "--storage.tsdb.path=" .. dir .. "/data",
    "--web.listen-address=127.0.0.1:" .. port, "--log.level=warn",
  } }
  p.port, p.dir = port, dir
  return p
end

-- Prometheus, ready (its /-/ready answers 200). Started again on another
-- port when it exits or is not ready in 20 s: a full suite under load once
-- saw one that never listened, with nothing on its stderr.
local function start_prometheus(target_port)
  local why = {}
  for attempt = 1, 3 do
    local p = spawn_prometheus(target_port)
    local wake = uv.new_timer()                  -- run_until looks again on each tick
    wake:start(250, 250, function() end)
    local ready = H.run_until(function()
      if not p:alive() then return true end
      local ok, r = pcall(get, p.port, "/-/ready")
      return ok and r and r.status == 200
    end, 20)
    wake:stop(); wake:close()
    if ready and p:alive() then return p end
    why[#why + 1] = ("attempt %d (port %d): %s; stderr:\n%s"):format(attempt, p.port,
      p:alive() and "not ready in 20 s" or "exited", p:stderr_text())
    p:kill("sigkill")
    p:wait_exit(10)
    os.execute("rm -rf '" .. p.dir .. "'")
  end
  error("Prometheus did not start:\n" .. table.concat(why, "\n"))
end

local function stop_prometheus(p)
  p:kill("sigterm")
  p:wait_exit(30)
  os.execute("rm -rf '" .. p.dir .. "'")
end

describe("/metrics", function()
  after_each(HH.cleanup)

  local it_prom = have_prometheus and it or pending

  it_prom("Prometheus scrapes the counts of known traffic: ok, cancelled by the client, a timeout", function()
    local srv = HH.start{ plugins = { FIX } }
    local s = HH.initialize(srv)
    for i = 1, 5 do
      local resp = s:call("quick", { tag = tostring(i) })
      assert.equals("quick " .. i, resp.result.content[1].text)
    end
    local streams = {}
    for i = 1, 3 do
      local id = 100 + i
      local _, c = s:post(s:req("tools/call", { name = "wait", arguments = { tag = "w" .. i } }, id),
                          { fresh = true, nowait = true })
      streams[#streams + 1] = c
      srv:expect_stderr("fixture: started w" .. i, nil, { plain = true })
      s:notify("notifications/cancelled", { requestId = id, reason = "spec cancels" })
      srv:expect_stderr("fixture: stopped w" .. i .. " reason=spec cancels", nil, { plain = true })
    end
    local late = s:call("late", { tag = "t" })
    assert.is_true(late.result.isError)
    for _, c in ipairs(streams) do                    -- each cancelled stream ended with no response
      local r = c:response()
      r:wait_done()
      assert.same({}, r:messages())
    end

    -- A scrape that takes longer than its timeout counts as down: on a
    -- loaded machine 1 s was not always enough (a CI run under stress).
    local prom = start_prometheus(srv.port)
    local up
    -- asked every 0.5 s: run_until looks again only when an event wakes the
    -- loop, and nothing else would (it asked at the start and at the end)
    local wake = uv.new_timer()
    wake:start(500, 500, function() end)
    H.run_until(function()
      local ok, v = pcall(query, prom.port, 'up{job="luamcp"}')
      up = ok and v
      return up == 1
    end, 60)
    wake:stop(); wake:close()
    assert.equals(1, up, "Prometheus never scraped luamcp; its stderr:\n" .. prom:stderr_text())
    local function q(expr) return (query(prom.port, expr)) end
    local sel = 'luamcp_requests_total{method="tools/call",tool="%s",outcome="%s"%s}'
    assert.equals(5, q(sel:format("quick", "ok", "")))
    assert.equals(3, q(sel:format("wait", "cancelled", ',reason="client"')))
    assert.equals(1, q(sel:format("late", "cancelled", ',reason="timeout"')))
    assert.equals(0, q(sel:format("wait", "ok", "")))
    assert.equals(5, q('luamcp_handler_duration_seconds_count{tool="quick"}'))
    assert.equals(5, q('luamcp_handler_duration_seconds_bucket{tool="quick",le="+Inf"}'))
    assert.equals(4, q("luamcp_cancel_stop_seconds_count"))     -- 3 cancels and a timeout
    assert.equals(1, q("luamcp_sessions"))
    assert.equals(0, q('luamcp_tool_in_flight{tool="wait"}'))
    assert.equals(0, q('luamcp_tasks{state="working"}'))
    assert.is_true(q("luamcp_lua_memory_bytes") > 0)
    assert.is_true(q('luamcp_http_responses_total{code="200"}') >= 5)
    assert.equals(0, q('luamcp_plugin_reloads_total{outcome="failed"}'))
    stop_prometheus(prom)
  end)

  it_prom("every scrape during a hot-reload storm parses, and no counter goes down", function()
    local dir = H.tmpdir()
    local file = dir .. "/storm.lua"
    local function write(n, broken)
      local f = assert(io.open(file .. ".tmp", "w"))
      f:write(([[
local mcp = require "mcp"
return mcp.plugin { name = "storm", tools = {
  mcp.tool { name = "v", handler = function() return mcp.text("%d") end },
} }%s
]]):format(n, broken and "\nthis is not Lua" or ""))
      f:close()
      assert(os.rename(file .. ".tmp", file))
    end
    write(0)
    local srv = HH.start{ plugins = { dir }, args = { "--watch" } }
    local s = HH.initialize(srv)
    local seen, scrapes = {}, 0
    local function scrape()
      local r = get(srv.port, "/metrics")
      assert.equals(200, r.status)
      assert.matches("^text/plain; version=0.0.4", r:header("content-type"))
      local tmp = os.tmpname()
      local f = assert(io.open(tmp, "w"))
      f:write(r.body)
      f:close()
      local p = io.popen(PROMTOOL .. " check metrics < '" .. tmp .. "' 2>&1; echo rc=$?")
      local out = p:read("a")
      p:close()
      os.remove(tmp)
      assert.matches("rc=0\n$", out, 1, false)
      for line in r.body:gmatch("[^\n]+") do
        local name, value = line:match("^([%w_]+[^ ]*) (%S+)$")
        if name and (name:find("_total[{ ]") or name:find("_total$") or name:find("_count")
                     or name:find("_bucket")) then
          local v = tonumber(value)
          assert(v and v >= (seen[name] or 0), "counter went down: " .. line .. " (was " .. tostring(seen[name]) .. ")")
          seen[name] = v
        end
      end
      scrapes = scrapes + 1
    end
    for n = 1, 12 do
      write(n, n % 4 == 0)                            -- every 4th edit is broken
      for _ = 1, 3 do
        scrape()
        s:call("v", {})
        H.pump(0.05)
      end
    end
    write(99)
    srv:expect_stderr("loaded plugin storm", nil, { plain = true })
    H.run_until(function()
      scrape()
      return (seen['luamcp_plugin_reloads_total{outcome="failed"}'] or 0) >= 1
         and (seen['luamcp_plugin_reloads_total{outcome="ok"}'] or 0) >= 2
    end, 30)
    assert.is_true(seen['luamcp_plugin_reloads_total{outcome="ok"}'] >= 2)
    assert.is_true(seen['luamcp_plugin_reloads_total{outcome="failed"}'] >= 1)
    assert.is_true(scrapes >= 36)
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)
