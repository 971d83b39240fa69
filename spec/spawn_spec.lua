-- ctx:spawn: a child process per call, its output, and what a cancel does to it.
--
-- The fixture (spec/fixtures/spawn/spawn.lua) returns what spawn returned as
-- JSON text and logs each streamed line as "stdout: LINE". The server logs
-- (stderr) "request KEY: CMD (pid N) is stopped: WHY: SIGTERM" and
-- "... outlived its grace of G s: SIGKILL".
local H = require "spec.helper"
local cjson = H.cjson

local FIX = "spec/fixtures/spawn"

local function session(opts)
  opts = opts or {}
  opts.plugins = opts.plugins or { FIX }
  return H.session(opts)
end

-- What the fixture's spawn returned: result, err, code, partial, and how
-- many values there were.
local function outcome(resp)
  local text = assert(H.text(resp), cjson.encode(resp))
  local t = cjson.decode(text)
  local function v(x) if x == false then return nil end return x end
  return v(t.result), v(t.err), v(t.code), v(t.partial), t.n
end

local function run(c, tool, args) return outcome(c:call(tool, args)) end

-- The state letter of /proc/PID/stat (R, S, Z, ...), or nil when the pid is gone.
local function proc_state(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s and s:match("^%d+ %b() (%a)")
end

local function kill0(pid) return os.execute("kill -0 " .. pid .. " 2>/dev/null") == true end
local function alive(pid) return kill0(pid) and proc_state(pid) ~= "Z" end
-- Gone and reaped: no /proc entry at all (a zombie still has one).
local function reaped(pid, timeout)
  return H.run_until(function() return proc_state(pid) == nil end, timeout or H.WAIT)
end

-- Start a tool whose child prints its pid first (streamed); returns the pid.
local function start_child(c, key, tool, script)
  c:send(H.call_raw(key, tool, { cmd = "/bin/sh", args = { "-c", script }, stdout = "lines" }))
  local note = c:wait_log("^stdout: %d+$")
  assert(note, "the child never printed its pid:\n" .. c:stderr_text())
  return tonumber(note.params.data:match("%d+"))
end

local function response_for(c, key, timeout)
  return c:take(function(m, raw) return H.is_response(m) and H.raw_member(raw, "id") == key end, timeout)
end

describe("ctx:spawn", function()
  after_each(H.cleanup)

  it("captures stdout, stderr and the exit code", function()
    local c = session()
    local r, err = run(c, "run", { cmd = "/bin/sh", args = { "-c", "echo out; echo err >&2; exit 3" } })
    assert.is_nil(err)
    assert.are.equal("out\n", r.stdout)
    assert.are.equal("err\n", r.stderr)
    assert.are.equal(3, r.code)
    assert.are.equal(0, r.signal)
    assert.is_true(r.pid > 0)
  end)

  it("reports the signal that ended the child", function()
    local c = session()
    local r = run(c, "run", { cmd = "/bin/sh", args = { "-c", "kill -USR1 $$" } })
    assert.are.equal(10, r.signal)              -- SIGUSR1 on Linux
  end)

  it("finds the program on PATH and passes arguments without a shell", function()
    local c = session()
    local r = run(c, "run", { cmd = "echo", args = { "a b", "$HOME", "*", ";" } })
    assert.are.equal("a b $HOME * ;\n", r.stdout)
  end)

  it("writes opts.stdin to the child and closes it (1 MiB through cat)", function()
    local c = session()
    local data = string.rep("0123456789abcdef\n", 65536)
    local r, err = run(c, "run", { cmd = "cat", stdin = data })
    assert.is_nil(err)
    assert.are.equal(#data, #r.stdout)
    assert.is_true(r.stdout == data)
    -- without opts.stdin the child reads /dev/null, never the protocol's stdin
    r = run(c, "run", { cmd = "cat" })
    assert.are.equal("", r.stdout)
  end)

  it("opts.env adds to the server's environment (false removes a name); opts.cwd sets the directory", function()
    local c = session { env = { LUAMCP_SPAWN_KEEP = "kept", LUAMCP_SPAWN_DROP = "dropped" } }
    local r = run(c, "run", { cmd = "/usr/bin/env", env = { FOO = "bar", N = 5, LUAMCP_SPAWN_DROP = false } })
    local vars = {}
    for name, value in r.stdout:gmatch("([^\n=]+)=([^\n]*)") do vars[name] = value end
    assert.are.equal("bar", vars.FOO)
    assert.are.equal("5", vars.N)
    assert.are.equal("kept", vars.LUAMCP_SPAWN_KEEP)
    assert.is_nil(vars.LUAMCP_SPAWN_DROP)
    assert.is_not_nil(vars.PATH)
    r = run(c, "run", { cmd = "/bin/pwd", cwd = "/tmp" })
    assert.are.equal("/tmp\n", r.stdout)
  end)

  it("a program that does not exist: nil, a message naming ENOENT, not_found", function()
    local c = session()
    local r, err, code = run(c, "run", { cmd = "/nonexistent/program" })
    assert.is_nil(r)
    assert.are.equal("spawn /nonexistent/program: no such file or directory (ENOENT)", err)
    assert.are.equal("not_found", code)
    r, err = run(c, "run", { cmd = "/bin/true", cwd = "/nonexistent" })
    assert.is_nil(r)
    assert.matches("no such file", err)
  end)

  it("streams lines to a function as they arrive, the last one without a newline too", function()
    local c = session()
    local t0 = H.now()
    c:send(H.call_raw("5", "run", { cmd = "/bin/sh", args = { "-c", "echo first; sleep 1.5; printf second" },
                                     stdout = "lines" }))
    assert(c:wait_log("^stdout: first$", 1.2), "the first line was not streamed before the child ended")
    assert.is_true(H.now() - t0 < 1.2)
    assert.is_nil(response_for(c, "5", 0.05))
    local resp = assert(response_for(c, "5"))
    assert(c:wait_log("^stdout: second$", 0))
    local r = outcome(resp)
    assert.is_nil(r.stdout)                      -- streamed, not captured
    assert.are.equal(0, r.code)
  end)

  it("output past max_bytes stops the child: nil, message, too_large, the partial result", function()
    local c = session()
    local t0 = H.now()
    local r, err, code, partial, n = run(c, "run", { cmd = "/bin/sh", max_bytes = 1000,
                                                    args = { "-c", "while :; do echo xxxxxxxxxxxxxxx; done" } })
    assert.is_nil(r)
    assert.are.equal("stdout of /bin/sh exceeded max_bytes (1000)", err)
    assert.are.equal("too_large", code)
    assert.are.equal(4, n)
    assert.are_not.equal(0, partial.signal)
    assert.is_true(#partial.stdout <= 1000)
    assert.is_true(H.now() - t0 < 3)
  end)

  it("the old max_output is refused, naming max_bytes", function()
    local c = session()
    local resp = c:call("run", { cmd = "/bin/true", max_output = 10 })
    assert.is_true(resp.result.isError)
    assert.matches("max_output is now opts.max_bytes", H.text(resp), 1, true)
  end)

  it("opts.timeout stops the child with SIGTERM: nil, message, timeout, the partial result", function()
    local c = session()
    local t0 = H.now()
    local r, err, code, partial, n = run(c, "run", { cmd = "sleep", args = { "30" }, timeout = 0.3 })
    assert.is_nil(r)
    assert.are.equal("sleep ran longer than 0.3 s (timeout)", err)
    assert.are.equal("timeout", code)
    assert.are.equal(4, n)
    assert.are.equal(15, partial.signal)
    assert.is_true(H.now() - t0 < 3)
    assert.is_false(alive(partial.pid))
  end)

  it("the deprecated mcp.spawn(cmd, args, opts) runs as before: env replaces, max_output caps", function()
    local c = session()
    local t = cjson.decode(H.text(c:call("old_form", {})))
    assert.are.equal("FOO=bar\n", t.env)
    assert.is_true(t.big)
    assert.are.equal("too_large", t.code)
    assert.matches("exceeded max_bytes %(12%)", t.err)
  end)

  it("cannot be called from a coroutine the handler created", function()
    local c = session()
    local resp = c:call("nested", {})
    assert.matches("false .*spawn%.lua:%d+: spawn: call it from the handler's coroutine", H.text(resp))
  end)

  describe("cancellation", function()
    it("a cooperative cancel: spawn returns nil, \"cancelled: REASON\", the child is killed and reaped", function()
      local c = session()
      local pid = start_child(c, "7", "run", "echo $$; exec sleep 30")
      assert.is_true(alive(pid))
      c:send(H.cancel_raw("7", "user stop"))
      assert(c:wait_log("^stopped 7: cancelled: user stop$"), c:stderr_text())
      c:expect_stderr("request 7: /bin/sh (pid " .. pid .. ") is stopped: cancelled: user stop: SIGTERM",
                      nil, { plain = true })
      assert.is_true(reaped(pid, 0.9), "child still there (state " .. tostring(proc_state(pid)) .. ")")
      assert.is_false(kill0(pid))
      assert.are.same({}, c:request("ping").result)
      assert.is_nil(response_for(c, "7", 0.1))
    end)

    it("cancel = \"abort\": the child is killed when the handler is stopped", function()
      local c = session()
      local pid = start_child(c, "8", "run_abort", "echo $$; exec sleep 30")
      c:send(H.cancel_raw("8", "abort it"))
      assert.is_true(reaped(pid, 0.9))
      assert.are.equal(0, c:count_stderr("fixture: spawn 8 returned", true))   -- never resumed
    end)

    it("the call's timeout cancels the spawn; the client gets the timeout result", function()
      local c = session()
      local t0 = H.now()
      local pid = start_child(c, "9", "run_short", "echo $$; exec sleep 30")
      local resp = assert(response_for(c, "9"))
      assert.is_true(resp.result.isError)
      assert.matches("timed out", H.text(resp))
      c:expect_stderr("fixture: spawn 9 returned nil cancelled: timeout", nil, { plain = true })
      assert.is_true(reaped(pid, 1))
      assert.is_true(H.now() - t0 < 3)
    end)

    it("a child that ignores SIGTERM gets SIGKILL after the call's grace (1 s)", function()
      local c = session()
      local pid = start_child(c, "10", "run", "trap '' TERM; echo $$; exec sleep 30")
      local t0 = H.now()
      c:send(H.cancel_raw("10", "stop"))
      c:expect_stderr("fixture: spawn 10 returned nil cancelled: stop", nil, { plain = true })
      H.pump(0.5)
      assert.is_true(alive(pid), "killed before its grace")
      c:expect_stderr("(pid " .. pid .. ") outlived its grace of 1 s: SIGKILL", 3, { plain = true })
      assert.is_true(reaped(pid, 1))
      local dt = H.now() - t0
      assert.is_true(dt >= 0.9 and dt < 2.5, "SIGKILL after " .. dt .. " s")
    end)

    it("shutdown with a running child: exit 0, no child left", function()
      local c = session()
      local pid = start_child(c, "11", "run", "echo $$; exec sleep 30")
      local pid2 = start_child(c, "12", "run", "trap '' TERM; echo $$; exec sleep 30")
      local code = c:close()
      assert.are.equal(0, code)
      assert.is_nil(proc_state(pid))
      assert.is_nil(proc_state(pid2))
    end)
  end)

  it("leaves no file descriptor behind", function()
    local c = session()
    run(c, "run", { cmd = "/bin/true" })       -- the first spawn sets up libuv's SIGCHLD pipe
    local before = H.fd_count(c.pid)
    for i = 1, 3 do
      run(c, "run", { cmd = "cat", stdin = "x" })
      run(c, "run", { cmd = "/bin/sh", args = { "-c", "echo a; echo b >&2" }, stdout = "lines", stderr = "lines" })
      run(c, "run", { cmd = "/nonexistent" })
      run(c, "run", { cmd = "sleep", args = { "5" }, timeout = 0.05, stdin = "" })
      run(c, "run", { cmd = "echo", stdout = "ignore", stderr = "ignore" })
      local pid = start_child(c, tostring(100 + i), "run", "echo $$; exec sleep 30")
      c:send(H.cancel_raw(tostring(100 + i), "go"))
      assert.is_true(reaped(pid, 2))
    end
    assert.is_true(H.run_until(function() return H.fd_count(c.pid) == before end, 2),
                   ("fds: %d before, %d after"):format(before, H.fd_count(c.pid)))
  end)
end)

describe("plugins/shell.lua", function()
  after_each(H.cleanup)

  it("runs an allowed command and streams its lines as log messages", function()
    local c = H.session { plugins = { "plugins" } }
    local resp = c:call("run_command", { command = "echo", args = { "hello", "world" } })
    assert.is_nil(resp.result.isError)
    assert.are.equal("hello world", H.text(resp))
    assert(c:wait_log("^hello world$", 0))
    resp = c:call("run_command", { command = "wc", args = { "-l" }, stdin = "a\nb\nc\n" })
    assert.are.equal("3", H.text(resp):match("%d+"))
  end)

  it("refuses a command outside its allow-list", function()
    local c = H.session { plugins = { "plugins" } }
    local resp = c:call("run_command", { command = "rm", args = { "-rf", "/tmp/x" } })
    assert.is_true(resp.result.isError)
  end)

  it("a cancel stops the running command", function()
    local c = H.session { plugins = { "plugins" }, args = { "--log-level", "debug" } }
    c:send(H.call_raw("3", "run_command", { command = "sleep", args = { "30" } }))
    local line = c:expect_stderr("request 3: spawned sleep %(pid %d+%)")
    local pid = tonumber(line:match("pid (%d+)"))
    c:send(H.cancel_raw("3", "enough"))
    assert.is_true(reaped(pid, 1.5))
    assert.is_nil(response_for(c, "3", 0.2))
  end)
end)
