-- Injected faults over stdio: the Lua allocator failing at each allocation of
-- a call in turn, a client that stops reading, input that ends mid-line,
-- SIGTERM with 10,000 calls in flight, children that ignore SIGTERM.
-- Fixture: spec/fixtures/faults/. The HTTP ones: spec/faults_http_spec.lua.
local H = require "spec.helper"
local cjson = H.cjson
local uv = H.uv

local FIX = { "spec/fixtures/faults" }

local function fail_alloc(c, n)
  c:send(H.line{ jsonrpc = "2.0", method = "notifications/luamcp/fail_alloc", params = { n = n } })
end

local function pid_alive(pid)
  return uv.kill(pid, 0) == 0
end

-- The state letter of a process ("Z" for a zombie), or nil when it is gone.
local function proc_state(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s:match("^%d+ %b() (%a)")
end

-- The children of pid (from /proc/PID/task/*/children).
local function children(pid)
  local out = {}
  local f = io.open("/proc/" .. pid .. "/task/" .. pid .. "/children")
  if f then
    for p in f:read("a"):gmatch("%d+") do out[#out + 1] = tonumber(p) end
    f:close()
  end
  return out
end

describe("injected faults over stdio", function()
  after_each(H.cleanup)

  -- Walks n = 1.. until the call succeeds; returns the response and how many failed.
  local function walk(c, name, args)
    local failures, n = 0, 0
    while n < 5000 do
      n = n + 1
      fail_alloc(c, n)
      local resp = c:call(name, args, { timeout = 30 })
      assert(resp.result or resp.error, "neither result nor error: " .. cjson.encode(resp))
      -- it keeps serving
      fail_alloc(c, 0)
      assert.are.same({}, c:request("ping").result)
      if not (resp.error or resp.result.isError) then return resp, failures end
      failures = failures + 1
    end
    error(name .. ": no call succeeded in 5000 allocations")
  end

  it("the allocator failing at each allocation of a tools/call in turn: an error each time, then success", function()
    local c = H.session{ plugins = FIX, args = { "--test-clock" } }
    local ok_resp, failures = walk(c, "work", { text = "a" })
    assert(failures >= 10, "only " .. failures .. " allocations failed: the hook did not fire")
    assert.are.equal("a1,a2,a3,ac!?k.", H.text(ok_resp))
    assert.are.same({ n = 20, ok = false, err = "inner" }, ok_resp.result.structuredContent)
    assert.are.equal("slept s", H.text((walk(c, "sleep", { seconds = 0, tag = "s" }))))
    assert.are.equal("flooded", H.text((walk(c, "flood", { n = 3, kb = 1 }))))
    -- a handler that raises: every answer is an error, then the hook is no longer reached
    fail_alloc(c, 1)
    assert.is_true(c:call("raise").result.isError)
    fail_alloc(c, 0)
    assert.are.equal("quick 1", H.text(c:call("quick", { tag = 1 })))
    assert.are.equal(0, (c:close(30)))
  end)

  -- How many stderr lines match pattern (plain), counted incrementally.
  local function counter(c, pattern)
    local n, seen = 0, 0
    return function()
      for i = seen + 1, #c.stderr do
        if c.stderr[i]:find(pattern, 1, true) then n = n + 1 end
      end
      seen = #c.stderr
      return n
    end
  end

  it("input that ends mid-line: the last line is read as a message, a truncated one answered -32700, exit 0", function()
    local c = H.session{ plugins = FIX }
    c:send('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}')
    assert.are.same({}, c:take(function(m) return H.is_response(m) and m.id == 1 end).result)
    c:close(10)
    assert.are.same({}, c:take(function(m) return H.is_response(m) and m.id == 2 end).result)
    assert.are.equal(0, c.exit_code)

    c = H.session{ plugins = FIX }
    c:send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"quick","argu')
    assert.are.equal(0, (c:close(10)))
    local resp = c:take(function(m) return H.is_response(m) end)
    assert.are.equal(-32700, resp.error.code)
    assert.are.equal(cjson.null, resp.id)
    assert.are.equal(0, c:count_stderr("fixture:", true))
  end)

  it("a client that stops reading stdout: stdin is paused, memory stays bounded, every call is answered later", function()
    local c = H.session{ plugins = FIX, args = { "--log-level", "debug" } }
    assert.are.equal("quick 0", H.text(c:call("quick", { tag = 0 })))
    local warm = H.rss_kb(c.pid)
    c:stop_reading()
    local N, KB = 2400, 32                     -- 75 MiB of answers, more than the 64 MiB cap
    local parts = {}
    for i = 1, N do parts[i] = H.call_raw(tostring(i), "big", { kb = KB }) end
    c:send(table.concat(parts))
    c:expect_stderr("stdin paused", 30, { plain = true })
    H.pump(0.5)
    local rss = H.rss_kb(c.pid)
    assert(rss - warm < 160 * 1024, ("the server grew by %d KiB"):format(rss - warm))
    assert.are.equal(0, c:count_stderr("taken for gone", true))
    c:resume_reading()
    local got = {}
    local ok = H.run_until(function()
      while #c.inbox > 0 do
        local e = table.remove(c.inbox, 1)
        local id = e.msg.id
        assert(id and not got[id], "an unexpected or second response: " .. e.raw:sub(1, 200))
        assert.are.equal(KB * 1024, #H.text(e.msg))
        got[id] = true
        got.n = (got.n or 0) + 1
      end
      return got.n == N
    end, 120)
    assert(ok, ("%d of %d answers"):format(got.n or 0, N))
    assert.are.equal(0, (c:close(30)))
  end)

  it("a client that reads nothing while calls write past 64 MiB is taken for gone: output dropped, exit 0", function()
    local c = H.session{ plugins = FIX }
    c:stop_reading()
    local parts = {}
    for i = 1, 100 do parts[i] = H.call_raw(tostring(i), "big", { kb = 1024 }) end
    c:send(table.concat(parts))
    c:expect_stderr("taken for gone", 60, { plain = true })
    assert.are.equal(0, (c:wait_exit(30)))
  end)

  it("SIGTERM with 10,000 calls in flight: every call cancelled with reason shutdown, cleanups run, exit 0", function()
    local c = H.session{ plugins = FIX }
    local N = 10000
    local parts = {}
    for i = 1, N do parts[i] = H.call_raw(tostring(i), "sleep", { seconds = 600, tag = i }) end
    c:send(table.concat(parts))
    local started = counter(c, "fixture: started ")
    assert(H.run_until(function() return started() == N end, 120),
           ("%d of %d calls started"):format(started(), N))
    c:kill("sigterm")
    assert.are.equal(0, (c:wait_exit(120)))
    assert.are.equal(N, c:count_stderr("reason=shutdown", true))
    assert.are.equal(N, c:count_stderr("fixture: cleanup ", true))
    for _, e in ipairs(c.inbox) do
      assert(not H.is_response(e.msg), "a response after SIGTERM: " .. e.raw)
    end
  end)
end)
