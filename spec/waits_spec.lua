-- One wait mechanism: every wait of a handler (ctx:sleep, read_file,
-- list_dir, realpath, ctx:spawn, ctx:http, SQLite, ctx:elicit, a client
-- call) returns its value called directly and under mcp.all, and a cancel
-- wakes it the same way in both: exactly nil, "cancelled: <reason>",
-- "cancelled" (three values). The fixture (spec/fixtures/waits) reports
-- "fixture: got KEY WHAT MODE n=N V1 | V2 | V3".
local H = require "spec.helper"

local FIX = "spec/fixtures/waits"
local UP = H.fixtures .. "/upstream"
local uv = H.uv

-- A TCP server that accepts and never answers: an HTTP request to it waits.
local silent
local function silent_url()
  if not silent then
    silent = { held = {}, tcp = uv.new_tcp() }
    assert(silent.tcp:bind("127.0.0.1", 0))
    assert(silent.tcp:listen(16, function()
      local cl = uv.new_tcp()
      silent.tcp:accept(cl)
      silent.held[#silent.held + 1] = cl
    end))
  end
  return ("http://127.0.0.1:%d/"):format(silent.tcp:getsockname().port)
end

-- A tiny HTTP server that answers 200 "ok" to anything.
local ok_srv
local function ok_url()
  if not ok_srv then
    ok_srv = uv.new_tcp()
    assert(ok_srv:bind("127.0.0.1", 0))
    assert(ok_srv:listen(16, function()
      local cl = uv.new_tcp()
      ok_srv:accept(cl)
      cl:read_start(function(err, data)
        if err or not data then cl:close() return end
        if data:find("\r\n\r\n", 1, true) then
          cl:write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", function() cl:close() end)
        end
      end)
    end))
  end
  return ("http://127.0.0.1:%d/"):format(ok_srv:getsockname().port)
end

local function session(env)
  local c = H.start { plugins = { FIX }, env = env }
  local resp = c:request("initialize", {
    protocolVersion = H.LATEST, clientInfo = { name = "specs", version = "0" },
    capabilities = { elicitation = {} },
  })
  assert(resp.result, H.cjson.encode(resp))
  c:send({ jsonrpc = "2.0", method = "notifications/initialized" })
  return c
end

local function args_for(what, all, long)
  local a = { what = what, all = all or nil, long = long or nil }
  if what == "http" then a.url = long and silent_url() or ok_url() end
  if what == "client" then a.conn = { command = { H.binary(), "--plugins", UP }, name = "up" } end
  return a
end

-- Answer the elicitation the server sends, when it is one.
local function answer_elicit(c)
  local req = c:take(function(m) return m.method == "elicitation/create" and m.id ~= nil end, 5)
  assert(req, "no elicitation/create from the server")
  c:send({ jsonrpc = "2.0", id = req.id, result = { action = "decline" } })
end

local SUCCESS = {
  sleep = "n=1 true", read_file = "n=1 %-%- Fixture", list_dir = "n=1 table", realpath = "n=1 /.*/spec/fixtures/waits",
  spawn = "n=1 table", http = "n=1 table", sqlite = "n=1 table", elicit = "n=1 table",
  client = "n=%d table",                     -- client:call (lua/mcp/client.lua) returns more than one
}
local KINDS = { "sleep", "read_file", "list_dir", "realpath", "spawn", "http", "sqlite", "elicit", "client" }
-- Waits that do not end by themselves; file reads are held behind a blocked thread pool.
local POOLED = { read_file = true, list_dir = true, realpath = true }

describe("every wait", function()
  after_each(function()
    H.cleanup()
    if silent then
      for _, cl in ipairs(silent.held) do cl:close() end
      silent.tcp:close()
      silent = nil
    end
    if ok_srv then ok_srv:close() ok_srv = nil end
  end)

  for _, all in ipairs { false, true } do
    local mode = all and "all" or "direct"
    for _, what in ipairs(KINDS) do
      it(("%s (%s) returns its value"):format(what, mode), function()
        local c = session()
        c:send(H.call_raw("7", "wait", args_for(what, all)))
        if what == "elicit" then answer_elicit(c) end
        local resp = c:take(function(m, raw) return H.is_response(m) and H.raw_member(raw, "id") == "7" end, 15)
        assert(resp and resp.result, "no result:\n" .. c:stderr_text())
        local text = H.text(resp)
        assert.matches("^" .. what .. " " .. mode .. " " .. SUCCESS[what], text)
        if all then assert(c:wait_stderr("fixture: other 7 n=1 true", 0, { plain = true })) end
      end)

      it(("%s (%s) is woken by a cancel: nil, \"cancelled: <reason>\", \"cancelled\""):format(what, mode), function()
        local c = session(POOLED[what] and { UV_THREADPOOL_SIZE = "1" } or nil)
        if POOLED[what] then
          c:send(H.call_raw("1", "block", {}))
          assert(c:wait_stderr("fixture: blocking 1", 5, { plain = true }), c:stderr_text())
        end
        c:send(H.call_raw("7", "wait", args_for(what, all, true)))
        assert(c:wait_stderr("fixture: waiting 7", 10, { plain = true }), c:stderr_text())
        if what == "elicit" then assert(c:take(function(m) return m.method == "elicitation/create" end, 5)) end
        if what == "client" then H.pump(0.3) end      -- the upstream's call is under way
        H.pump(0.05)
        c:send(H.cancel_raw("7", "user stop"))
        local line = c:wait_stderr("fixture: got 7 ", 5, { plain = true })
        assert(line, "the wait was not woken:\n" .. c:stderr_text())
        assert.are.equal(("fixture: got 7 %s %s n=3 nil | cancelled: user stop | cancelled"):format(what, mode), line)
        if all then assert(c:wait_stderr("fixture: other 7 n=3 nil", 0, { plain = true })) end
        c:no_response(0.1)
      end)
    end
  end
end)

describe("around the waits", function()
  after_each(H.cleanup)

  local function json(c, tool, args, opts)
    local resp = c:call(tool, args or {}, opts)
    assert(resp.result and not resp.result.isError, H.cjson.encode(resp))
    return H.cjson.decode(H.text(resp))
  end

  it("mcp.all returns one packed table per function, every value kept", function()
    local c = session()
    local out = json(c, "packed")
    assert.are.same({ n = 3, v = { "1", "nil", "3" } }, out[1])
    assert.are.same({ n = 3, v = { "nil", "read_file /nonexistent/file: no such file or directory (ENOENT)",
                                   "not_found" } }, out[2])
    assert.are.same({ n = 0, v = {} }, out[3])
  end)

  it("ctx:progress with a value that does not increase, or is not finite, is dropped, the call goes on", function()
    local c = session()
    local resp, notes = c:request("tools/call", { name = "progress", arguments = {}, _meta = { progressToken = "p" } })
    assert.is_nil(resp.result.isError, H.cjson.encode(resp))
    assert.are.equal("done", H.text(resp))
    local sent = {}
    for _, n in ipairs(notes or c.notes) do
      if n.method == "notifications/progress" then sent[#sent + 1] = n.params.progress end
    end
    assert.are.same({ 1, 2 }, sent)
  end)

  it("errors raised by luamcp's functions name the plugin's line", function()
    local c = session()
    local out = json(c, "mistakes")
    local here = ".*/spec/fixtures/waits/waits%.lua:%d+: "
    assert.matches("^" .. here .. "bad argument #1 to 'sleep' %(number expected, got string%)$", out.sleep)
    assert.matches("^" .. here .. "bad argument #1 to 'read_file' %(string expected, got nil%)$", out.read_file)
    assert.matches("^" .. here .. "spawn: opts.command must be a non%-empty list of strings$", out.spawn)
    assert.matches("^" .. here .. "spawn: opts.env must map names", out.spawn_env)
    assert.matches("^" .. here .. "bad argument #1 to 'progress' %(number expected, got string%)$", out.progress)
    assert.matches("^" .. here .. "http: req.timeout must be a number >= 0$", out.http)
    assert.matches("^" .. here .. "bad argument #1 to 'all' %(table expected, got number%)$", out.all)
    assert.matches("^" .. here .. "sleep: call it from the handler's coroutine or a function of mcp.all", out.nested)
    assert.matches("^" .. here .. "bad argument #1 to 'request' %(string expected, got number%)$", out.request)
    assert.matches("^" .. here .. "bad argument #1 to 'log' %(unknown log level%)$", out.log)
    assert.matches("^" .. here .. "bad argument #1 to 'on_cancel' %(function expected, got string%)$", out.on_cancel)
  end)

  it("mcp.all closes the functions it gives up on when one fails (their <close> variables run)", function()
    local c = session()
    local out = json(c, "all_abandon")
    assert.is_false(out.ok)
    assert.are.equal("boom", out.err)
    assert.are.same({ 2, 3 }, out.closed)
  end)

  it("coroutine.wrap closes a coroutine that fails (its <close> variables run) and raises its error", function()
    local c = session()
    local out = json(c, "wrap_close")
    assert.is_true(out.closed)
    assert.is_false(out.ok)
    assert.matches("waits%.lua:%d+: boom$", out.err)
    assert.is_false(out.dead_ok)
    assert.are.equal("cannot resume dead coroutine", out.dead)
  end)
end)
