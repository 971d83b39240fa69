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

local poll_until = H.poll_until

-- The state letter of a process ("Z" for a zombie), or nil when it is gone.
local function proc_state(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s:match("^%d+ %b() (%a)")
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
    -- (mcp.json.encode leaked its buffer when Lua ran out of memory inside it)
    local ok_resp, failures = walk(c, "work", { text = "a" })
    assert(failures >= 10, "only " .. failures .. " allocations failed: the hook did not fire")
    assert.are.equal("a1,a2,a3,ac!?k.", H.text(ok_resp))
    assert.are.same({ n = 20, ok = false, err = "inner" }, ok_resp.result.structuredContent)
    assert.are.equal("slept s", H.text((walk(c, "sleep", { seconds = 0, tag = "s" }))))
    assert.are.equal("flooded", H.text((walk(c, "flood", { n = 3, kb = 1 }))))
    -- the C-backed waits: a child, SQLite, file reads, mcp.all (an SQLite job
    -- whose Lua handle could not be allocated was leaked)
    assert.truthy(H.text((walk(c, "ops", {}))):find("^hi\n"))
    -- a handler that raises: every answer is an error, then the hook is no longer reached
    fail_alloc(c, 1)
    assert.is_true(c:call("raise").result.isError)
    fail_alloc(c, 0)
    assert.are.equal("quick 1", H.text(c:call("quick", { tag = 1 })))
    assert.are.equal(0, (c:close(30)))
  end)

  local counter = H.stderr_counter

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

  -- (ASan keeps freed memory in quarantine, 256 MiB by default: keep it small here)
  local ASAN = { ASAN_OPTIONS = (os.getenv("ASAN_OPTIONS") or "detect_leaks=1") .. ":quarantine_size_mb=16" }

  it("a client that stops reading stdout: past 4 MiB unread, stdin is paused; every call is answered later", function()
    local c = H.session{ plugins = FIX, args = { "--log-level", "debug" }, env = ASAN }
    c:stop_reading()
    local N, KB = 200, 32                      -- 6.25 MiB of answers
    local parts = {}
    for i = 1, N do parts[i] = H.call_raw(tostring(i), "big", { kb = KB }) end
    c:send(table.concat(parts))
    c:expect_stderr("stdin paused", 30, { plain = true })
    c:resume_reading()
    local got, n = {}, 0
    local ok = H.run_until(function()
      while #c.inbox > 0 do
        local e = table.remove(c.inbox, 1)
        local id = e.msg.id
        assert(id and not got[id], "an unexpected or second response: " .. e.raw:sub(1, 200))
        assert.are.equal(KB * 1024, #H.text(e.msg))
        got[id], n = true, n + 1
      end
      return n == N
    end, 60)
    assert(ok, ("%d of %d answers"):format(n, N))
    assert.are.same({}, c:request("ping").result)
    assert.are.equal(0, c:count_stderr("taken for gone", true))
    assert.are.equal(0, (c:close(30)))
  end)

  it("a client that reads nothing while a call writes 400 MiB: memory stays bounded, it is taken for gone, exit 0", function()
    local c = H.session{ plugins = FIX, env = ASAN }
    assert.are.equal("quick 0", H.text(c:call("quick", { tag = 0 })))
    local warm, peak = H.rss_kb(c.pid), 0
    c:stop_reading()
    c:send(H.call_raw("1", "flood", { n = 25600, kb = 16 }))      -- 25,600 log lines of 16 KiB
    local sampler = uv.new_timer()
    sampler:start(0, 20, function() peak = math.max(peak, H.rss_kb(c.pid) or 0) end)
    c:expect_stderr("taken for gone", 60, { plain = true })
    H.run_until(function() return c.exited end, 30)
    sampler:stop(); sampler:close()
    c:resume_reading()                       -- the end of its stdout: what is left in the pipe
    assert.are.equal(0, (c:wait_exit(30)))
    assert(#c.history < 100, #c.history .. " messages reached the client")
    -- 64 MiB unread, 1 MiB more, a message, the Lua state: far below the 400 MiB written
    assert(peak - warm < 160 * 1024, ("the server grew by %d KiB"):format(peak - warm))
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

  it("a ctx:spawn child that ignores SIGTERM: killed after the grace on a cancel and at shutdown, never a zombie", function()
    local c = H.session{ plugins = FIX, args = { "--grace", "0.5" } }
    c:send(H.call_raw("1", "stubborn_child", { tag = "a" }))
    local line = c:expect_stderr("fixture: child a pid %d+")
    local pid = tonumber(line:match("pid (%d+)"))
    c:send(H.cancel_raw("1", "changed my mind"))
    c:expect_stderr("fixture: spawn returned a cancelled", nil, { plain = true })
    assert(poll_until(function() return proc_state(pid) == nil end, 10),
           "the child is still there: state " .. tostring(proc_state(pid)))
    c:no_response()
    -- at shutdown
    c:send(H.call_raw("2", "stubborn_child", { tag = "b" }))
    line = c:expect_stderr("fixture: child b pid %d+")
    local pid2 = tonumber(line:match("pid (%d+)"))
    assert.are.equal(0, (c:close(30)))
    c:expect_stderr("fixture: spawn returned b cancelled", nil, { plain = true })
    assert.is_nil(proc_state(pid2))
  end)

  it("an mcp.connect stdio upstream that ignores SIGTERM: killed after 2 s at shutdown, never a zombie", function()
    local c = H.session{ plugins = { "spec/fixtures/client_tools" } }
    local cmd = ("trap '' TERM; %s --plugins %s/faults 2>/dev/null; exec sleep 300"):format(H.binary(), H.fixtures)
    local r = c:call("call", { conn = { command = { "sh", "-c", cmd } }, tool = "quick", args = { tag = "up" } })
    assert.are.equal("quick up", H.text(r), require("cjson").encode(r))
    local pid = math.tointeger(r.result.structuredContent.pid)
    assert(pid and proc_state(pid), "no upstream pid")
    assert.are.equal(0, (c:close(30)))
    assert.is_nil(proc_state(pid))
  end)

  it("a hot-reload storm under traffic: every call gets exactly one answer, the server keeps serving", function()
    local dir = assert(uv.fs_mkdtemp("/tmp/luamcp-storm-XXXXXX"))
    local src = assert(io.open(H.fixtures .. "/faults/faults.lua")):read("a")
    local function write(n)
      local f = assert(io.open(dir .. "/faults.lua", "w"))
      f:write(src, "\n-- edit ", n, "\n")
      f:close()
    end
    write(0)
    local ok, err = pcall(function()
      local c = H.session{ plugins = { dir }, args = { "--watch" } }
      local answers, sent, edits = {}, 0, 0
      local tools = { { "quick", {} }, { "sleep", { seconds = 0.05, quiet = true } }, { "spin", { seconds = 0.01 } } }
      local traffic = uv.new_timer()
      traffic:start(0, 10, function()
        for _ = 1, 3 do
          sent = sent + 1
          local t = tools[sent % #tools + 1]
          c:send(H.call_raw(tostring(sent), t[1], t[2]))
        end
      end)
      local editor = uv.new_timer()
      -- (--watch waits for 100 ms without a change before it reloads)
      editor:start(0, 150, function() edits = edits + 1; write(edits) end)
      local function collect()
        while #c.inbox > 0 do
          local e = table.remove(c.inbox, 1)
          if H.is_response(e.msg) then
            local id = e.msg.id
            assert(not answers[id], "a second answer to " .. tostring(id) .. ": " .. e.raw)
            answers[id] = e.msg
          end
        end
      end
      H.run_until(function() collect(); return false end, 3)
      traffic:stop(); traffic:close()
      editor:stop(); editor:close()
      assert(H.run_until(function()
        collect()
        for i = 1, sent do if not answers[i] then return false end end
        return true
      end, 60), "calls without an answer")
      H.pump(0.3)
      collect()
      for i = 1, sent do
        local r = answers[i]
        assert(r.result or r.error, cjson.encode(r))
      end
      assert(c:count_stderr("loaded plugin faults", true) > 3, "too few reloads:\n" .. c:stderr_text())
      assert.are.equal("quick end", H.text(c:call("quick", { tag = "end" })))
      assert.are.equal(0, (c:close(30)))
    end)
    os.remove(dir .. "/faults.lua")
    uv.fs_rmdir(dir)
    if not ok then error(err, 0) end
  end)
end)
