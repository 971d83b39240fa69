-- bench/httpc.lua: handler I/O figures (ctx:http), with curl as the
-- reference measured in the same run against the same origin
-- (bench/origin.c). A report, never a test.
--
--   lua5.4 bench/httpc.lua LUAMCP_BIN ORIGIN_BIN OUT_DIR
--
-- Environment: BENCH_HTTPC_N (GETs, default 10000), BENCH_HTTPC_PAR (default
-- 64), BENCH_HTTPC_ROUNDS (best of, default 3), BENCH_CANCELS (default 300).
local uv = require "luv"
local cjson = require "cjson"

local BIN, ORIGIN, OUT = arg[1], arg[2], arg[3]
local N = tonumber(os.getenv("BENCH_HTTPC_N") or "") or 10000
local PAR = tonumber(os.getenv("BENCH_HTTPC_PAR") or "") or 64
local ROUNDS = tonumber(os.getenv("BENCH_HTTPC_ROUNDS") or "") or 3
local CANCELS = tonumber(os.getenv("BENCH_CANCELS") or "") or 300
local ROOT = debug.getinfo(1, "S").source:gsub("^@", ""):match("^(.*)/bench/[^/]*$") or "."

local function now_ns() return uv.hrtime() end

local function run_until(pred, seconds)
  local expired = false
  local t = uv.new_timer()
  t:start(math.floor(seconds * 1000), 0, function()
    expired = true
    uv.stop()                -- ends the poll of uv.run("once") too
  end)
  while not pred() and not expired do uv.run("once") end
  t:stop()
  t:close()
  return pred()
end

local function lines_of(pipe, on_line)
  local buf = ""
  pipe:read_start(function(err, data)
    if err or not data then return end
    buf = buf .. data
    for line in buf:gmatch("([^\n]*)\n") do on_line(line) end
    buf = buf:match("[^\n]*$")
  end)
end

-- The origin.
local origin = { lines = {} }
do
  local out = uv.new_pipe(false)
  origin.proc = uv.spawn(ORIGIN, { args = {}, stdio = { nil, out, 2 } }, function() origin.exited = true end)
  lines_of(out, function(l)
    local port = l:match("^port (%d+)")
    if port then origin.port = tonumber(port) else origin.lines[#origin.lines + 1] = l end
  end)
  assert(run_until(function() return origin.port end, 5), "the origin did not start")
end
local URL = "http://127.0.0.1:" .. origin.port

-- luamcp over stdio.
local srv = { inbox = {}, next_id = 1 }
do
  local sin, sout = uv.new_pipe(false), uv.new_pipe(false)
  srv.proc = uv.spawn(BIN, { args = { "--plugins", ROOT .. "/bench/plugins-io", "--log-level", "warning" },
                             stdio = { sin, sout, 2 } }, function() srv.exited = true end)
  srv.stdin = sin
  lines_of(sout, function(l)
    local ok, m = pcall(cjson.decode, l)
    if ok and m.id then srv.inbox[m.id] = m end
  end)
end

local function send(t) srv.stdin:write(cjson.encode(t) .. "\n") end
local function call_async(name, args)
  local id = srv.next_id
  srv.next_id = id + 1
  send{ jsonrpc = "2.0", id = id, method = "tools/call", params = { name = name, arguments = args } }
  return id
end
local function wait_reply(id, seconds)
  run_until(function() return srv.inbox[id] end, seconds or 120)
  local m = srv.inbox[id]
  srv.inbox[id] = nil
  return m
end

send{ jsonrpc = "2.0", id = 0, method = "initialize", params = {
  protocolVersion = "2025-11-25", capabilities = {}, clientInfo = { name = "bench", version = "0" } } }
assert(wait_reply(0, 10), "luamcp did not initialize")
send{ jsonrpc = "2.0", method = "notifications/initialized" }

-- Throughput: N GETs, PAR at a time.
local function luamcp_rate()
  local t0 = now_ns()
  local r = wait_reply(call_async("get_many", { url = URL .. "/hello", n = N, par = PAR }))
  local dt = (now_ns() - t0) / 1e9
  local ok = r and r.result and tonumber(r.result.content[1].text)
  if ok ~= N then io.stderr:write("bench: luamcp got ", tostring(ok), " of ", N, "\n") end
  return N / dt
end

local function curl_rate()
  local cfg = OUT .. "/curl-urls.txt"
  local f = assert(io.open(cfg, "w"))
  for _ = 1, N do f:write('url = "', URL, '/hello"\noutput = "/dev/null"\n') end
  f:close()
  local t0 = now_ns()
  local ok = os.execute(("curl -s --no-progress-meter -Z --parallel-max %d -K %s"):format(PAR, cfg))
  local dt = (now_ns() - t0) / 1e9
  if not ok then return nil end
  return N / dt
end

wait_reply(call_async("get_many", { url = URL .. "/hello", n = 1000, par = PAR }))   -- warm-up
local best_l, best_c = 0, 0
for _ = 1, ROUNDS do
  best_l = math.max(best_l, luamcp_rate())
  best_c = math.max(best_c, curl_rate() or 0)
end

-- Cancel -> the origin sees its connection closed.
local lat = {}
for i = 1, CANCELS do
  local seen = #origin.lines
  local id = call_async("hang", { url = URL .. "/hang?" .. i })
  run_until(function()
    for k = seen + 1, #origin.lines do if origin.lines[k]:match("^open") then return true end end
  end, 5)
  seen = #origin.lines
  local t0 = now_ns()
  send{ jsonrpc = "2.0", method = "notifications/cancelled", params = { requestId = id, reason = "bench" } }
  local closed
  run_until(function()
    for k = seen + 1, #origin.lines do
      local ns = origin.lines[k]:match("^closed (%d+)")
      if ns then closed = tonumber(ns); return true end
    end
  end, 5)
  if closed then lat[#lat + 1] = (closed - t0) / 1e3 end
end
table.sort(lat)
local function pct(p) return lat[math.max(1, math.ceil(#lat * p))] or 0 end

local res = io.open(OUT .. "/results/httpc.txt", "w")
res:write(("gets_per_s %.0f\ncurl_gets_per_s %.0f\ncancel_close_p50_us %.0f\ncancel_close_p99_us %.0f\n")
  :format(best_l, best_c, pct(0.5), pct(0.99)))
res:close()

srv.stdin:close()
run_until(function() return srv.exited end, 10)
uv.process_kill(origin.proc, "sigterm")
run_until(function() return origin.exited end, 5)

local function mark(cond) return cond and " [met]" or " [missed]" end
print()
print(("luamcp handler I/O benchmark (ctx:http)  %s"):format(os.date("!%Y-%m-%d %H:%M UTC")))
print(("origin: bench/origin.c on 127.0.0.1; reference: curl %s, -Z --parallel-max %d, best of %d")
  :format((io.popen("curl --version"):read("l") or ""):match("curl (%S+)") or "?", PAR, ROUNDS))
print()
print(("%-36s %11s %11s %10s  %s"):format("scenario", "luamcp", "curl", "luamcp/curl", "target"))
print(("%-36s %11.0f %11.0f %10.2f  %s"):format(("%d GETs, %d at a time (req/s)"):format(N, PAR), best_l, best_c,
  best_c > 0 and best_l / best_c or 0, ">= 0.7x curl" .. mark(best_c > 0 and best_l >= 0.7 * best_c)))
print(("%-36s %11.0f %11s %10s  %s"):format("cancel -> origin closed p50 (us)", pct(0.5), "-", "-", ""))
print(("%-36s %11.0f %11s %10s  %s"):format("cancel -> origin closed p99 (us)", pct(0.99), "-", "-",
  "<= 1000 us" .. mark(pct(0.99) <= 1000)))
print(("cancel: %d calls each waiting on a GET the origin never answers; from writing notifications/cancelled"):format(#lat))
print("  to the origin reading EOF on that connection (both on CLOCK_MONOTONIC).")

-- Close every handle and let the loop finish before Lua closes its state:
-- luv crashes collecting handles still open at exit.
uv.walk(function(h) if not h:is_closing() then h:close() end end)
uv.run()
