-- The stdio transport: framing, limits, stdout purity, EOF and signals.
local H = require "spec.helper"

describe("stdio", function()
  after_each(H.cleanup)

  it("a message split across two writes is read whole", function()
    local c = H.session()
    c:send('{"jsonrpc":"2.0","id":21,"met')
    H.pump(0.1)
    c:send('hod":"ping"}\n')
    local m, raw = c:recv()
    assert(m, raw)
    assert.are.equal("21", H.raw_member(raw, "id"))
    assert.are.same({}, m.result)
  end)

  it("a message written one byte at a time is read whole", function()
    local c = H.session()
    local line = '{"jsonrpc":"2.0","id":22,"method":"ping"}\n'
    for i = 1, #line do
      c:send(line:sub(i, i))
      if i % 8 == 0 then H.pump(0.005) end
    end
    local m, raw = c:recv()
    assert(m, raw)
    assert.are.equal("22", H.raw_member(raw, "id"))
  end)

  it("several messages in one write are each answered, in order", function()
    local c = H.session()
    c:send('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n' ..
           '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"}}}\n')
    local ids = {}
    for i = 1, 3 do
      local _, raw = c:recv()
      assert(raw, "missing response " .. i)
      ids[i] = H.raw_member(raw, "id")
    end
    table.sort(ids)
    assert.are.same({ "1", "2", "3" }, ids)
  end)

  it("CRLF line endings are accepted", function()
    local c = H.start()
    c:send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",' ..
           '"capabilities":{},"clientInfo":{"name":"crlf","version":"0"}}}\r\n')
    local m = c:recv()
    assert.are.equal("2025-11-25", m.result and m.result.protocolVersion)
    c:send('{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n')
    c:send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"crlf"}}}\r\n')
    m = c:recv()
    assert.are.equal("crlf", H.text(m))
  end)

  it("blank lines between messages are skipped without a response", function()
    local c = H.session()
    c:send('\n\r\n{"jsonrpc":"2.0","id":4,"method":"ping"}\n\n')
    local m, raw = c:recv()
    assert.are.equal("4", H.raw_member(raw, "id"))
    c:no_message()
  end)

  it("a line over --max-line is answered -32600 and the next line is still served", function()
    local c = H.session{ args = { "--max-line", "1024" } }
    local big = '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
                .. string.rep("x", 4000) .. '"}}}\n'
    -- in pieces, as a pipe delivers it
    for i = 1, #big, 700 do c:send(big:sub(i, i + 699)) end
    local m, raw = c:recv()
    assert(m, raw)
    assert.are.equal(-32600, m.error and m.error.code, raw)
    local resp = c:call("echo", { text = "after" }, { id = 6 })
    assert.are.equal("after", H.text(resp))
    c:no_message()
  end)

  it("a line just under --max-line is served", function()
    local c = H.session{ args = { "--max-line", "1024" } }
    local head = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
    local tail = '"}}}'
    local text = string.rep("y", 1000 - #head - #tail)
    c:send(head .. text .. tail .. "\n")
    local m, raw = c:recv()
    assert(m, raw)
    assert.are.equal(text, H.text(m))
  end)

  it("stdin and stdout may be regular files (luamcp < in.jsonl > out.jsonl)", function()
    local uv = H.uv
    local inpath, outpath = os.tmpname(), os.tmpname()
    local f = assert(io.open(inpath, "w"))
    f:write('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' ..
            '"capabilities":{},"clientInfo":{"name":"file","version":"0"}}}\n',
            '{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from a file"}}}\n',
            '{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
    f:close()
    local infd = assert(uv.fs_open(inpath, "r", 0))
    local outfd = assert(uv.fs_open(outpath, "w", tonumber("644", 8)))
    local errpipe = uv.new_pipe(false)
    local exited, code, errtext = false, nil, {}
    local proc = assert(uv.spawn(H.binary(), {
      args = { "--plugins", H.fixtures .. "/plugins" },
      stdio = { infd, outfd, errpipe }, cwd = H.root,
    }, function(c) exited, code = true, c end))
    errpipe:read_start(function(err, data) if data then errtext[#errtext + 1] = data end end)
    local ok = H.run_until(function() return exited end, H.WAIT)
    if not ok then proc:kill("sigkill") end
    H.run_until(function() return exited end, 5)
    uv.fs_close(infd)
    uv.fs_close(outfd)
    errpipe:close()
    proc:close()
    local out = assert(io.open(outpath)):read("a")
    os.remove(inpath)
    os.remove(outpath)
    assert.is_true(ok, "did not exit: " .. table.concat(errtext))
    assert.are.equal(0, code, table.concat(errtext))
    local ids = {}
    for line in out:gmatch("[^\n]+") do
      ids[#ids + 1] = H.raw_member(line, "id")
      if ids[#ids] == "2" then assert.truthy(line:find("from a file", 1, true), line) end
    end
    table.sort(ids)   -- responses need not come in request order
    assert.are.same({ "1", "2", "3" }, ids, out)
  end)

  it("stdout carries only JSON-RPC messages", function()
    local c = H.session{ args = { "--log-level", "debug" } }
    c:send('garbage\n')
    c:recv()
    c:call("logs", {})
    c:call("fail", {})
    c:call("nothing", {})
    c:request("tools/call", { name = "progress", arguments = { n = 3 }, _meta = { progressToken = "p" } })
    c:request("tools/list", {})
    c:send(H.cancel_msg(12345, "nobody"))
    c:request("ping")
    c:close()
    assert.is_true(#c.history > 5)
    for _, e in ipairs(c.history) do
      assert.are.equal("table", type(e.msg), e.raw)
      assert.is_nil(e.msg._undecodable, e.raw)
      assert.are.equal("2.0", e.msg.jsonrpc, e.raw)
    end
    assert.are.same({}, c.bad_lines)
  end)

  it("a plugin's print() does not write to stdout", function()
    local c = H.session()
    local resp = c:call("printer", {})
    assert.are.equal("printed", H.text(resp))
    c:close()
    local bad = c.bad_lines
    c.bad_lines = {}   -- reported here, not again by the cleanup
    assert.are.same({}, bad)
  end)

  it("end of input with no requests in flight exits 0", function()
    local c = H.session()
    local code, sig = c:close()
    assert.are.equal(0, code)
    assert.are.equal(0, sig)
  end)

  it("end of input cancels sleeping requests, runs their cleanups and exits 0 promptly", function()
    -- a long grace: only waking the sleeps (not grace expiry) makes the exit prompt
    local c = H.session{ args = { "--grace", "20" } }
    c:send(H.call_raw("1", "sleep", { seconds = 30 }))
    c:send(H.call_raw("2", "sleep", { seconds = 30 }))
    assert(c:wait_log("^started 1$") and c:wait_log("^started 2$"), c:stderr_text())
    local t0 = H.now()
    local code, sig = c:close()
    local took = H.now() - t0
    assert.are.equal(0, code, c:stderr_text())
    assert.are.equal(0, sig)
    assert.is_true(took < 5, "exit took " .. took .. " s")
    assert.truthy(c:wait_stderr("fixture: closed sleep 1 ", 0, { plain = true }), c:stderr_text())
    assert.truthy(c:wait_stderr("fixture: closed sleep 2 ", 0, { plain = true }), c:stderr_text())
    assert.truthy(c:wait_stderr("fixture: sleep stopped 1 ok=nil why=cancelled: shutdown", 0, { plain = true }),
                  c:stderr_text())
  end)

  it("end of input with a client that reads nothing more: the output is dropped after 2 s, exit 0", function()
    local c = H.session()
    c.stdout:read_stop()                        -- the client stops reading its stdout
    local text = string.rep("x", 100000)
    for i = 1, 4 do c:send(H.call_raw(tostring(i), "echo", { text = text })) end
    H.pump(0.3)                                 -- answers fill the pipe and queue up
    local t0 = H.now()
    c.stdin:close()
    c.stdin_closed = true
    assert.is_true(H.run_until(function() return c.exited end, 6), "still running; " .. c:stderr_text())
    assert.is_true(H.now() - t0 < 4, "exit took " .. (H.now() - t0) .. " s")
    assert.are.equal(0, c.exit_code, c:stderr_text())
    c.stdout:read_start(function(err, data)     -- the end, for the helper's cleanup
      if err or not data then c.stdout_eof = true end
    end)
    assert.truthy(c:wait_stderr("stdout: the client reads nothing", 0, { plain = true }), c:stderr_text())
  end)

  it("end of input stops a spinning handler and exits 0", function()
    local c = H.session()
    c:send(H.call_raw("3", "spin", {}))
    c:expect_stderr("fixture: spin started 3", nil, { plain = true })
    local code = c:close()
    assert.are.equal(0, code, c:stderr_text())
    assert.truthy(c:wait_stderr("fixture: closed spin 3 ", 0, { plain = true }), c:stderr_text())
  end)

  it("end of input stops a cancel=\"ignore\" handler (shutdown still stops it)", function()
    local c = H.session()
    c:send(H.call_raw("4", "ignore_sleep", { seconds = 30 }))
    assert(c:wait_log("^started 4$"), c:stderr_text())
    local t0 = H.now()
    local code = c:close()
    assert.are.equal(0, code, c:stderr_text())
    assert.is_true(H.now() - t0 < 8)
  end)

  for _, sig in ipairs { "sigterm", "sigint" } do
    it(sig:upper() .. " cancels in-flight requests, runs their cleanups and exits 0", function()
      local c = H.session{ args = { "--grace", "20" } }
      c:send(H.call_raw("1", "sleep", { seconds = 30 }))
      assert(c:wait_log("^started 1$"), c:stderr_text())
      local t0 = H.now()
      c:kill(sig)
      local code, signal = c:wait_exit()
      assert.are.equal(0, code, c:stderr_text())
      assert.are.equal(0, signal)
      assert.is_true(H.now() - t0 < 5)
      assert.truthy(c:wait_stderr("fixture: closed sleep 1 ", 0, { plain = true }), c:stderr_text())
    end)
  end

  it("no response is written for requests cut off by end of input", function()
    local c = H.session()
    c:send(H.call_raw("1", "sleep", { seconds = 30 }))
    assert(c:wait_log("^started 1$"))
    c:close()
    for _, e in ipairs(c.history) do
      assert.are_not.equal("1", H.raw_member(e.raw, "id"), e.raw)
    end
  end)

  it("a client that stops reading and goes away does not crash the server", function()
    local c = H.session()
    c.stdout:read_stop()
    c:send(H.call_raw("1", "echo", { text = string.rep("z", 100000) }))
    c:send('{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    c.stdout:close()
    H.pump(0.2)
    c.stdout_eof = true
    local code, sig = c:close()
    assert.are.equal(0, sig, "killed by signal " .. tostring(sig))
  end)
end)
