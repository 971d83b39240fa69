-- Injected faults over Streamable HTTP: a client that stops reading its SSE
-- stream, SIGTERM with 10,000 calls in flight, 1,000 slowloris connections
-- beside a normal client, a client killed in the middle of an SSE stream.
-- Fixture: spec/fixtures/faults/. The stdio ones: spec/faults_spec.lua.
local HH = require "spec.http_helper"
local H = HH.H
local uv, cjson = H.uv, H.cjson

local FIX = { "spec/fixtures/faults" }
local ASAN = { ASAN_OPTIONS = (os.getenv("ASAN_OPTIONS") or "detect_leaks=1") .. ":quarantine_size_mb=16" }

local counter = H.stderr_counter

local poll_until = H.poll_until

local function assert_serving(srv, s)
  local resp = s:rpc("ping", {}, { fresh = true })
  assert.is_table(resp and resp.result, "no answer to a ping; stderr:\n" .. srv:stderr_text())
  assert.is_true(srv:alive(), "the server exited; stderr:\n" .. srv:stderr_text())
end

-- SIGTERM, exit 0, no sanitizer report.
local function stop(srv)
  srv:kill("sigterm")
  assert.are.equal(0, (srv:wait_exit(60)), srv:stderr_text():sub(-3000))
end

describe("injected faults over HTTP", function()
  after_each(HH.cleanup)

  it("a client that stops reading its SSE stream: dropped past 8 MiB pending, memory bounded, the server serves", function()
    local srv = HH.start{ plugins = FIX, env = ASAN, args = { "--drain", "0" } }
    local s = HH.initialize(srv, "2025-11-25")
    local warm, peak = H.rss_kb(srv.pid), 0
    local r, c = s:post(s:req("tools/call", { name = "flood", arguments = { n = 25600, kb = 16 } }),
                        { fresh = true })
    assert.is_true(r:is_sse(), r:describe())
    c.tcp:read_stop()
    local sampler = uv.new_timer()
    sampler:start(0, 20, function() peak = math.max(peak, H.rss_kb(srv.pid) or 0) end)
    srv:expect_stderr("a client reads too slowly", 60, { plain = true })
    sampler:stop(); sampler:close()
    assert_serving(srv, s)
    assert(peak - warm < 100 * 1024, ("the server grew by %d KiB"):format(peak - warm))
    stop(srv)
  end)

  it("SIGTERM with 10,000 calls in flight (--drain 0): every call cancelled with reason shutdown, cleanups run, exit 0", function()
    local srv = HH.start{ plugins = FIX, args = { "--drain", "0", "--max-body", "8000000" } }
    local s = HH.initialize(srv, "2025-03-26")          -- the last revision with batches
    local N = 10000
    local batch = {}
    for i = 1, N do
      batch[i] = { jsonrpc = "2.0", id = i, method = "tools/call",
                   params = { name = "sleep", arguments = { seconds = 600, tag = i } } }
    end
    local _, c = s:post(batch, { fresh = true, nowait = true })
    local started = counter(srv, "fixture: started ")
    assert(H.run_until(function() return started() == N end, 120),
           ("%d of %d calls started"):format(started(), N))
    stop(srv)
    assert.are.equal(N, srv:count_stderr("reason=shutdown", true))
    assert.are.equal(N, srv:count_stderr("fixture: cleanup ", true))
    -- the stream ends without a response to any of them
    H.run_until(function() return c.eof end, 10)
    assert.is_nil(c.raw:find('"result"', 1, true), c.raw:sub(1, 500))
  end)

  it("1,000 slowloris connections (headers never finished) beside a normal client, at the default --max-connections 256: it is served, they get 408", function()
    local srv = HH.start{ plugins = FIX, args = { "--drain", "0" } }
    local s = HH.initialize(srv, "2025-11-25")
    local slow = {}
    for i = 1, 1000 do
      local c = HH.connect(srv)
      c:send("POST /mcp HTTP/1.1\r\nHost: " .. srv.host .. "\r\nContent-Type: application/js")
      slow[i] = c
    end
    for i = 1, 20 do
      local resp = s:call("quick", { tag = i }, { fresh = (i % 2 == 0) })
      assert.are.equal("quick " .. i, resp.result.content[1].text)
    end
    -- each newcomer over the limit took the oldest one's slot, the header
    -- timeout (10 s from the request's first byte) ends the last 256: all 408
    local function closed()
      for _, c in ipairs(slow) do if not c.eof then return false end end
      return true
    end
    assert(H.run_until(closed, 60), "a slow connection is still open")
    for _, c in ipairs(slow) do
      assert.truthy(c.raw:find("^HTTP/1.1 408"), c.raw:sub(1, 100))
    end
    assert_serving(srv, s)
    stop(srv)
  end)

  -- A client in a process of its own (lua5.4 and luv): sends the request in
  -- file, copies what it reads to its stdout. Returns the process and a
  -- function giving what it read so far.
  local CLIENT = [[
local uv = require "luv"
local f = assert(io.open(arg[2], "rb")); local req = f:read("a"); f:close()
local tcp = uv.new_tcp()
tcp:connect("127.0.0.1", tonumber(arg[1]), function(err)
  assert(not err, err)
  tcp:write(req)
  tcp:read_start(function(_, d) if d then io.stdout:write(d); io.stdout:flush() else os.exit(0) end end)
end)
uv.run()
]]
  local function client_process(port, request)
    local file, script = os.tmpname(), os.tmpname()
    local f = assert(io.open(file, "wb")); f:write(request); f:close()
    f = assert(io.open(script, "wb")); f:write(CLIENT); f:close()
    local out = uv.new_pipe(false)
    local got = ""
    local proc = assert(uv.spawn("lua5.4", { args = { script, tostring(port), file },
                                             stdio = { nil, out, 2 } }, function() end))
    out:read_start(function(_, d) if d then got = got .. d end end)
    return proc, function() return got end, function()
      out:close(); proc:close(); os.remove(file); os.remove(script)
    end
  end

  it("a client killed in the middle of an SSE stream: the server serves; a 2026-07-28 call is cancelled (disconnect)", function()
    local srv = HH.start{ plugins = FIX, args = { "--drain", "0" } }
    local s = HH.initialize(srv, "2025-11-25")
    -- a session's stream: the client process dies while the call logs to it
    local body = cjson.encode(s:req("tools/call", { name = "flood", arguments = { n = 2000, kb = 4 } }))
    local h = s:headers()
    h[#h + 1] = { "Content-Length", tostring(#body) }
    local proc, got, done = client_process(srv.port, HH.request_text{ method = "POST", headers = h, body = body })
    assert(H.run_until(function() return got():find("data: ", 1, true) end, 10),
           "no SSE event reached the client: " .. got())
    proc:kill("sigkill")
    H.pump(0.2)
    done()
    assert_serving(srv, s)
    -- 2026-07-28: the request's stream is the request; closing it cancels the call
    local msg = { jsonrpc = "2.0", id = 7, method = "tools/call",
                  params = HH.params_rev2026({ name = "sleep", arguments = { seconds = 600, tag = "k" } }) }
    body = cjson.encode(msg)
    h = { { "Host", srv.host }, { "Accept", HH.ACCEPT }, { "Content-Type", "application/json" },
          { "MCP-Protocol-Version", HH.REV2026 }, { "Mcp-Method", "tools/call" }, { "Mcp-Name", "sleep" },
          { "Content-Length", tostring(#body) } }
    proc, got, done = client_process(srv.port, HH.request_text{ method = "POST", headers = h, body = body })
    srv:expect_stderr("fixture: started k", nil, { plain = true })
    proc:kill("sigkill")
    srv:expect_stderr("fixture: cleanup k reason=client disconnected", nil, { plain = true })
    done()
    assert_serving(srv, s)
    stop(srv)
  end)
end)
