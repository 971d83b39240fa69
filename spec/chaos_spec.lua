-- A chaos client: for LUAMCP_CHAOS_SECONDS (default 60) several sessions at
-- once -- two stdio servers, and on one HTTP server three 2025-11-25 sessions
-- and 2026-07-28 stateless requests -- make random tools/call of the fixture
-- tools (quick, sleeping, spinning, erroring, progress, timing out), random
-- cancels, disconnects and DELETEs, and check as they go:
--   * at most one response per request id, and none for an id never sent;
--   * nothing for a request (its progress) after its response;
--   * every ping answered within LUAMCP_CHAOS_PING seconds (default 0.05),
--     less the time this client itself was kept from reading (a 2 ms timer
--     that fires late says so: a busy or starved client reads answers late,
--     while a server that stalls leaves the timer on time);
-- and at the end, that every call not cancelled got its answer, that each
-- server's live calls (/metrics: luamcp_tool_in_flight + luamcp_tool_queued)
-- are back to zero and its open fds back to the warm level.
-- Seeded: LUAMCP_SPEC_SEED replays the choices (the timing is the machine's);
-- a failure prints the seed. `make chaos MINUTES=N` runs it longer.
local HH = require "spec.http_helper"
local H = HH.H
local uv, cjson = H.uv, H.cjson

local FIX = { "spec/fixtures/faults" }
local SEED = tonumber(os.getenv("LUAMCP_SPEC_SEED") or "") or (os.time() * 1000 + uv.hrtime() % 1000)
local SECONDS = tonumber(os.getenv("LUAMCP_CHAOS_SECONDS") or "") or 60
local PING_LIMIT = tonumber(os.getenv("LUAMCP_CHAOS_PING") or "") or 0.05
local TICK, NTICKS = 0.002, 4096       -- the client's own clock: 8 s of ticks

local rand = math.random

-- A random tool call: name, arguments.
local function pick_call(n)
  local r = rand(7)
  if r == 1 then return "quick", { tag = n }
  elseif r == 2 then return "sleep", { seconds = rand() * 0.5, quiet = true }
  elseif r == 3 then return "spin", { seconds = rand() * 0.03 }
  elseif r == 4 then return "raise", {}
  elseif r == 5 then return "slow_t", { seconds = rand() * 0.6 }
  elseif r == 6 then return "work", { text = "w" .. n }
  else return "steps", { n = rand(5), d = rand() * 0.05 } end
end

local poll_until = H.poll_until

-- Live calls of a server, from its /metrics (port): running + queued.
local function live_calls(port)
  local ok, c = pcall(HH.connect, port)
  if not ok then return nil end
  c:request{ method = "GET", path = "/metrics" }
  local r = c:response()
  if not r then c:close(); return nil end
  r:wait_done()
  c:close()
  local n = 0
  for name, v in r.body:gmatch("\n(luamcp_tool_[a-z_]+){[^}]*} ([%d.e+-]+)") do
    if name == "luamcp_tool_in_flight" or name == "luamcp_tool_queued" then n = n + tonumber(v) end
  end
  return n
end

---------------------------------------------------------------------------
-- Bookkeeping shared by every actor.

local World = {}
World.__index = World

local function new_world()
  local w = setmetatable({ violations = {}, pings = 0, max_ping = 0, max_ping_raw = 0, calls = 0,
                           responses = 0, cancels = 0, disconnects = 0, deletes = 0,
                           ticks = {}, nticks = 0 }, World)
  w.timer = uv.new_timer()
  w.timer:start(0, TICK * 1000, function()
    w.nticks = w.nticks + 1
    w.ticks[w.nticks % NTICKS] = H.now()
  end)
  return w
end

function World:close() self.timer:close() end

-- The longest time within [from, to] that this client's loop did not run
-- (beyond the tick itself): an answer may have waited that long unread.
-- Nil when the ticks kept no longer reach back to from.
function World:stalled(from, to)
  local worst, later = 0, nil
  for k = self.nticks, math.max(1, self.nticks - NTICKS + 1), -1 do
    local t = self.ticks[k % NTICKS]
    if later and later > from and t < to then
      local gap = math.min(later, to) - math.max(t, from)
      if gap > worst then worst = gap end
    end
    if t <= from then return math.max(0, worst - TICK) end
    later = t
  end
  return nil
end

function World:violate(fmt, ...)
  local msg = fmt:format(...)
  if #self.violations < 20 then self.violations[#self.violations + 1] = msg end
end

-- sent and arrived: H.now() when the ping went and when its answer was read
-- (not when the driver looked: it may have been busy connecting)
function World:ping_answered(sent, arrived)
  local raw = arrived - sent
  local d = raw - (self:stalled(sent, arrived) or 0)
  self.pings = self.pings + 1
  if raw > self.max_ping_raw then self.max_ping_raw = raw end
  if d > self.max_ping then self.max_ping = d end
  if d > PING_LIMIT then
    self:violate("a ping took %.3f s (%.3f s with the time this client did not read)", d, raw)
  end
end

---------------------------------------------------------------------------
-- A stdio server with one session; its stdout is one ordered stream.

local Stdio = {}
Stdio.__index = Stdio

local function new_stdio(world, name)
  local c = H.session{ plugins = FIX, args = { "--metrics", "127.0.0.1:0", "--grace", "0.5" } }
  local line = c:expect_stderr("metrics on http://127%.0%.0%.1:%d+/metrics")
  local on_stdout = c._on_stdout
  c._on_stdout = function(self, l)                 -- when each message was read
    on_stdout(self, l)
    self.history[#self.history].at = H.now()
  end
  return setmetatable({
    world = world, name = name, c = c, next_id = 0, pending = {}, done = {}, pings = {},
    metrics_port = tonumber(line:match(":(%d+)/metrics")),
  }, Stdio)
end

function Stdio:pid() return self.c.pid end

function Stdio:step()
  local r = rand(100)
  if r <= 60 then
    self.next_id = self.next_id + 1
    local id = self.next_id
    local name, args = pick_call(id)
    self.pending[id] = { name = name }
    self.world.calls = self.world.calls + 1
    self.c:send(H.line{ jsonrpc = "2.0", id = id, method = "tools/call",
                        params = { name = name, arguments = args, _meta = { progressToken = id } } })
  elseif r <= 75 then
    local ids = {}
    for id, p in pairs(self.pending) do if not p.cancelled then ids[#ids + 1] = id end end
    if #ids > 0 then
      table.sort(ids)
      local id = ids[rand(#ids)]
      self.pending[id].cancelled = true
      self.world.cancels = self.world.cancels + 1
      self.c:send(H.cancel_msg(id, "chaos"))
    end
  elseif r <= 90 then
    self.next_id = self.next_id + 1
    self.pings[self.next_id] = H.now()
    self.c:send(H.line{ jsonrpc = "2.0", id = self.next_id, method = "ping" })
  end
end

function Stdio:check()
  local w, inbox = self.world, self.c.inbox
  self.c.inbox = {}
  for _, e in ipairs(inbox) do
    local m = e.msg
    if H.is_response(m) then
      local id = m.id
      if self.pings[id] then
        w:ping_answered(self.pings[id], e.at)
        self.pings[id] = nil
      elseif self.done[id] then
        w:violate("%s: a second response to %s: %s", self.name, tostring(id), e.raw:sub(1, 200))
      elseif not self.pending[id] then
        w:violate("%s: a response to an unknown id: %s", self.name, e.raw:sub(1, 200))
      else
        self.pending[id] = nil
        self.done[id] = true
        w.responses = w.responses + 1
      end
    elseif m.method == "notifications/progress" then
      local id = m.params and m.params.progressToken
      if self.done[id] then
        w:violate("%s: progress after the response to %s", self.name, tostring(id))
      end
    end
  end
end

-- Calls that must still be answered (not cancelled); pings not answered.
function Stdio:owed()
  local n = 0
  for _, p in pairs(self.pending) do if not p.cancelled then n = n + 1 end end
  for _ in pairs(self.pings) do n = n + 1 end
  return n
end

function Stdio:finish()
  assert.are.equal(0, (self.c:close(30)), self.c:stderr_text():sub(-2000))
end

---------------------------------------------------------------------------
-- Streamable HTTP: each call on a connection of its own.

local Http = {}
Http.__index = Http

-- mode "session" (2025-11-25) or "stateless" (2026-07-28).
local function new_http(world, srv, name, mode)
  local a = setmetatable({ world = world, srv = srv, name = name, mode = mode, next_id = 0,
                           flights = {} }, Http)
  if mode == "session" then a:open() end
  return a
end

function Http:open()
  self.s = HH.initialize(self.srv, "2025-11-25")
  self.s.conn:close()                          -- every request on a fresh connection
end

function Http:post(msg)
  if self.mode == "session" then
    local _, c = self.s:post(msg, { fresh = true, nowait = true })
    return c
  end
  local _, c = HH.post_rev2026(self.srv, msg, { nowait = true })
  return c
end

function Http:step()
  local r = rand(100)
  if r <= 55 then
    self.next_id = self.next_id + 1
    local id = self.next_id
    local name, args = pick_call(id)
    local params = { name = name, arguments = args }
    if self.mode == "session" then params._meta = { progressToken = id }
    else params = HH.params_rev2026(params, nil, { progressToken = id }) end
    local c = self:post{ jsonrpc = "2.0", id = id, method = "tools/call", params = params }
    self.flights[#self.flights + 1] = { id = id, conn = c, kind = "call" }
    self.world.calls = self.world.calls + 1
  elseif r <= 65 and self.mode == "session" then
    local f = self.flights[rand(math.max(1, #self.flights))]
    if f and f.kind == "call" and not f.cancelled then
      f.cancelled = true
      self.world.cancels = self.world.cancels + 1
      local c = self:post(H.cancel_msg(f.id, "chaos"))
      self.flights[#self.flights + 1] = { conn = c, kind = "notification" }
    end
  elseif r <= 75 then
    local f = self.flights[rand(math.max(1, #self.flights))]
    if f and f.kind == "call" and not f.conn.closed then
      f.cancelled = true                         -- its answer may no longer come
      self.world.disconnects = self.world.disconnects + 1
      f.conn:close()
    end
  elseif r <= 90 and self.mode == "session" then
    self.next_id = self.next_id + 1
    local c = self:post{ jsonrpc = "2.0", id = self.next_id, method = "ping" }
    self.flights[#self.flights + 1] = { id = self.next_id, conn = c, kind = "ping", sent = H.now() }
  elseif r <= 92 and self.mode == "session" then
    -- DELETE: the session's calls end with it; a new session goes on
    for _, f in ipairs(self.flights) do if f.kind == "call" then f.cancelled = true end end
    self.world.deletes = self.world.deletes + 1
    local resp, c = self.s:delete{ fresh = true }
    c:close()
    if resp.status ~= 200 and resp.status ~= 204 then
      self.world:violate("%s: DELETE answered %s", self.name, tostring(resp.status))
    end
    self:open()
  end
end

-- Checks what the streams carried so far; retires the flights that ended.
function Http:check()
  local w, keep = self.world, {}
  for _, f in ipairs(self.flights) do
    local c = f.conn
    local r = c.responses[1]
    local ended = c.closed or c.eof or (r and r.done)
    if r and (r.done or r:is_sse()) then
      local msgs
      if r:is_sse() then msgs = r:messages()
      elseif r.done and #r.body > 0 then
        local ok, m = pcall(cjson.decode, r.body)
        msgs = ok and { m } or {}
        if not ok then w:violate("%s: not JSON: %s", self.name, r.body:sub(1, 200)) end
      else msgs = {} end
      local answered = 0
      for _, m in ipairs(msgs) do
        if H.is_response(m) then
          if m.id ~= f.id then
            w:violate("%s: a response to %s on the stream of %s", self.name, tostring(m.id), tostring(f.id))
          end
          answered = answered + 1
        elseif m.method == "notifications/progress" and answered > 0 then
          w:violate("%s: progress after the response to %s", self.name, tostring(f.id))
        end
      end
      if answered > 1 then w:violate("%s: %d responses to %s", self.name, answered, tostring(f.id)) end
      if r.done and f.kind ~= "notification" and answered == 0 and not f.cancelled
         and r.status == 200 then
        w:violate("%s: the stream of %s ended without its response", self.name, tostring(f.id))
      end
      if answered == 1 and not f.answered then
        f.answered = true
        if f.kind == "ping" then w:ping_answered(f.sent, r.done_at or H.now())
        else w.responses = w.responses + 1 end
      end
    end
    if ended then
      f.ended = true
      if r and f.kind == "call" and not f.cancelled and r.status ~= 200 then
        w:violate("%s: call %s answered HTTP %s", self.name, tostring(f.id), tostring(r.status))
      end
      c:close()
    else
      keep[#keep + 1] = f
    end
  end
  self.flights = keep
end

function Http:owed()
  local n = 0
  for _, f in ipairs(self.flights) do if not f.cancelled then n = n + 1 end end
  return n
end

function Http:close_all()
  for _, f in ipairs(self.flights) do f.conn:close() end
  self.flights = {}
end

---------------------------------------------------------------------------

describe("chaos", function()
  after_each(HH.cleanup)

  it(("%g s of random calls, cancels, disconnects and DELETEs over stdio and HTTP keep every invariant")
     :format(SECONDS), function()
    math.randomseed(SEED)
    local world = new_world()
    local ok, err = pcall(function()
      local srv = HH.start{ plugins = FIX, args = { "--drain", "0", "--grace", "0.5", "--max-connections", "1024" } }
      local http_warm = H.fd_count(srv.pid)
      local actors = {
        new_stdio(world, "stdio1"), new_stdio(world, "stdio2"),
        new_http(world, srv, "session1", "session"), new_http(world, srv, "session2", "session"),
        new_http(world, srv, "session3", "session"), new_http(world, srv, "stateless", "stateless"),
      }
      local warm = {}
      for i = 1, 2 do
        assert.are.equal("quick w", H.text(actors[i].c:call("quick", { tag = "w" })))
        warm[i] = H.fd_count(actors[i]:pid())
      end

      local function check_all()
        for _, a in ipairs(actors) do a:check() end
        return false
      end
      local stop_at, steps = H.now() + SECONDS, 0
      while H.now() < stop_at and #world.violations == 0 do
        local a = actors[rand(#actors)]
        a:step()
        H.run_until(check_all, rand() * 0.02)
        steps = steps + 1
        if steps % 1000 == 0 then          -- a long run: forget the connections closed
          local open = {}
          for _, c in ipairs(HH.conns) do if not c.closed then open[#open + 1] = c end end
          HH.conns = open
        end
      end
      -- every call not cancelled gets its answer
      local function owed()
        local n = 0
        check_all()
        for _, a in ipairs(actors) do n = n + a:owed() end
        return n
      end
      assert(poll_until(function() return owed() == 0 end, 60), owed() .. " calls never answered")
      for i = 3, #actors do actors[i]:close_all() end
      assert.are.same({}, world.violations)

      -- every server's live calls back to zero, its fds back to the warm level
      for i = 1, 2 do
        local port = actors[i].metrics_port
        assert(poll_until(function() return live_calls(port) == 0 end, 30),
               actors[i].name .. ": live calls " .. tostring(live_calls(port)))
        assert(poll_until(function() return H.fd_count(actors[i]:pid()) <= warm[i] end, 10),
               ("%s: %d fds, %d warm"):format(actors[i].name, H.fd_count(actors[i]:pid()), warm[i]))
      end
      assert(poll_until(function() return live_calls(srv.port) == 0 end, 30),
             "http: live calls " .. tostring(live_calls(srv.port)))
      for _, c in ipairs(HH.conns) do c:close() end
      assert(poll_until(function() return H.fd_count(srv.pid) <= http_warm end, 10),
             ("http: %d fds, %d warm"):format(H.fd_count(srv.pid), http_warm))
      print(("\nchaos seed %d: %d calls, %d responses, %d cancels, %d disconnects, %d DELETEs, %d pings (slowest %.3f s; %.3f s with the time this client did not read)")
            :format(SEED, world.calls, world.responses, world.cancels, world.disconnects, world.deletes,
                    world.pings, world.max_ping, world.max_ping_raw))
      actors[1]:finish()
      actors[2]:finish()
      srv:kill("sigterm")
      assert.are.equal(0, (srv:wait_exit(30)), srv:stderr_text():sub(-2000))
    end)
    world:close()
    if not ok then
      error(tostring(err) .. ("\n(chaos seed %d: replay with LUAMCP_SPEC_SEED=%d)"):format(SEED, SEED), 0)
    end
  end)
end)
