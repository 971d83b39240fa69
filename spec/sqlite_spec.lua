-- mcp.sqlite: statements on the thread pool, waited on as operations, and
-- what a cancel, a timeout, an abort and shutdown do to a running one.
--
-- The fixture (spec/fixtures/sqlite/sqlite.lua) shares one db, opened at its
-- top level, between every call. Tools answer JSON text; the slow ones write
-- "fixture: slow KEY started" and "fixture: slow KEY returned ..." on stderr.
local H = require "spec.helper"
local cjson = H.cjson

local FIX = "spec/fixtures/sqlite"

local function session(opts)
  opts = opts or {}
  opts.plugins = opts.plugins or { FIX }
  return H.session(opts)
end

local function json(resp)
  local text = assert(H.text(resp), cjson.encode(resp))
  local ok, v = pcall(cjson.decode, text)
  assert(ok, "not JSON: " .. text)
  return v
end

-- The fixture's {r, err, code}, nulls as nil.
local function outcome(resp)
  local t = json(resp)
  local function v(x) if x == cjson.null then return nil end return x end
  return v(t.r), v(t.err), v(t.code)
end

local function call(c, tool, args) return outcome(c:call(tool, args)) end

local function response_for(c, key, timeout)
  return c:take(function(m, raw) return H.is_response(m) and H.raw_member(raw, "id") == key end, timeout)
end

-- Start the never-ending query in tool (slow, slow_abort, all_slow) as
-- request key and wait until the handler is in it.
local function start_slow(c, key, tool)
  c:send(H.call_raw(key, tool or "slow", {}))
  c:expect_stderr("fixture: [%w_]+ " .. key .. " started")
  H.pump(0.05)                           -- well inside sqlite3_step on a pool thread
end

describe("mcp.sqlite", function()
  after_each(H.cleanup)

  it("runs statements at a plugin's top level at once", function()
    local c = session()
    local t = json(c:call("top"))
    assert.are.equal(0, t.n)
    assert.matches("^3%.", t.version)
  end)

  it("exec, query and rows", function()
    local c = session()
    local r, err = call(c, "exec", { sql = "INSERT INTO t (name, v) VALUES (?, ?)", params = { "one", 1.5 } })
    assert.is_nil(err)
    assert.are.same({ changes = 1, last_insert_id = 1 }, r)
    r = call(c, "exec", { sql = "INSERT INTO t (name, v) VALUES ('two', 2), ('three', 'x')" })
    assert.are.same({ changes = 2, last_insert_id = 3 }, r)
    r = call(c, "query", { sql = "SELECT id, name, v FROM t ORDER BY id" })
    assert.are.same({ { id = 1, name = "one", v = 1.5 }, { id = 2, name = "two", v = 2 },
                      { id = 3, name = "three", v = "x" } }, r)
    r = call(c, "rows", { sql = "SELECT name FROM t WHERE id > ? ORDER BY id", params = { 1 } })
    assert.are.same({ { name = "two" }, { name = "three" } }, r)
    r = call(c, "query", { sql = "SELECT * FROM t WHERE id < 0" })
    assert.are.same({}, r)
    -- a script: several statements, changes counted over all
    r = call(c, "exec", { sql = "UPDATE t SET v = 0; DELETE FROM t WHERE id = 3;" })
    assert.are.equal(4, r.changes)
  end)

  it("binds parameters by position and by name (:a, @b, $c, with or without the prefix)", function()
    local c = session()
    assert.are.same({ a = 1, b = "two", c = 3.25 }, json(c:call("named")))   -- :missing is NULL: absent
    local r = call(c, "query", { sql = "SELECT ?2 AS second, ?1 AS first", params = { "x", "y" } })
    assert.are.same({ { first = "x", second = "y" } }, r)
    local _, err, code = call(c, "query", { sql = "SELECT ?", params = { 1, 2 } })
    assert.are.equal("invalid", code)
    assert.are.equal("2 parameters given, the statement takes 1 (SQLITE_RANGE)", err)
    _, err, code = call(c, "query", { sql = "SELECT ?", params = { x = 1 } })
    assert.are.equal("invalid", code)
    assert.matches("no name", err)
  end)

  it("keeps 64-bit integers exact (9007199254740993) in both directions", function()
    local c = session()
    for _, v in ipairs(json(c:call("int64"))) do
      assert.is_true(v.ok, cjson.encode(v))
    end
    assert.are.equal("9007199254740993", json(c:call("int64"))[1].text)
  end)

  it("maps NULL, floats, booleans, text, binary strings and blobs", function()
    local c = session()
    local t = json(c:call("types"))
    -- nil and mcp.null bind NULL, and a NULL column is absent from the row
    assert.are.equal("c,d,e,f,g,h,hl,ht,i,j,k", t.keys)
    assert.are.equal(1.5, t.c)
    assert.are.equal("float", t.c_type)
    assert.are.equal(1, t.d)
    assert.are.equal(0, t.e)
    assert.is_true(t.f_same)                 -- text with NULs and bytes >= 0x80 round-trips
    assert.are.equal("héllo", t.g)
    assert.is_true(t.h_same)                 -- mcp.sqlite.blob(s)
    assert.are.equal("blob", t.ht)
    assert.are.equal(0, t.hl)
    assert.are.equal("", t.i)                -- an empty string is not NULL
    assert.are.equal("", t.j)
    assert.is_true(t.k_same)                 -- a blob column comes back as a string
  end)

  it("returns SQL errors as nil, message (with SQLite's name), code and goes on serving", function()
    local c = session()
    local r, err, code = call(c, "query", { sql = "SELEC 1" })
    assert.is_nil(r)
    assert.matches("syntax error.*%(SQLITE_ERROR%)$", err)
    assert.are.equal("invalid", code)
    call(c, "exec", { sql = "INSERT INTO t (name) VALUES ('u')" })
    r, err, code = call(c, "exec", { sql = "INSERT INTO t (name) VALUES ('u')" })
    assert.is_nil(r)
    assert.are.equal("UNIQUE constraint failed: t.name (SQLITE_CONSTRAINT)", err)
    assert.are.equal("constraint", code)
    _, err, code = call(c, "query", { sql = "SELECT 1; SELECT 2" })
    assert.are.equal("invalid", code)
    assert.matches("one statement .*%(SQLITE_MISUSE%)$", err)
    _, _, code = call(c, "query", { sql = "SELECT * FROM nowhere" })
    assert.are.equal("invalid", code)
    assert.are.same({ { n = 1 } }, (call(c, "query", { sql = "SELECT count(*) AS n FROM t" })))
  end)

  it("raises for bad arguments: a tool error naming the argument", function()
    local c = session()
    local cases = {
      ["function"] = "bad argument #2 to 'query' (params[2]: cannot bind function)",
      table = "bad argument #2 to 'query' (params.x: cannot bind a table",
      string = "bad argument #2 to 'query' (table of parameters expected, got string)",
      mixed = "bad argument #2 to 'query' (params: positions and names mixed)",
      sql = "bad argument #1 to 'query' (string expected, got number)",
    }
    for which, msg in pairs(cases) do
      local resp = c:call("bad_params", { which = which })
      assert.is_true(resp.result.isError, which)
      local text = H.text(resp)
      assert.truthy(text:find(msg, 1, true), text)
      assert.is_nil(text:find("sqlite.lua", 1, true), text)   -- the position goes to the log
      c:expect_stderr("sqlite%.lua:%d+: " .. H.esc(msg))      -- the plugin's line
    end
    local resp = c:call("closed")
    assert.is_true(resp.result.isError)
    assert.matches("attempt to use a closed database", H.text(resp))
  end)

  it("transaction: commits, or rolls back when fn raises, returns nil, err or a statement fails", function()
    local c = session()
    local t = json(c:call("tx", { how = "commit" }))
    assert.are.same({ ok = true, a = "done", b = 7, n = 1 }, t)
    t = json(c:call("tx", { how = "raise" }))
    assert.is_false(t.ok)
    assert.matches("sqlite%.lua:%d+: boom$", t.a)
    assert.are.equal(0, t.n)
    t = json(c:call("tx", { how = "nil_err" }))
    assert.are.same({ ok = true, a = cjson.null, b = "changed my mind", n = 0 }, t)
    t = json(c:call("tx", { how = "sql_err" }))
    assert.are.same({ ok = true, a = cjson.null, b = "UNIQUE constraint failed: t.name (SQLITE_CONSTRAINT)", n = 0 }, t)
  end)

  it("prepares a statement once and keeps at most 64", function()
    local c = session()
    local t = json(c:call("cache", { n = 500 }))
    assert.are.equal(500, t.n)
    assert.are.equal(1, t.prepared)          -- the INSERT; the count query below it too
    assert.is_true(t.hits >= 499, cjson.encode(t))
    t = json(c:call("cache", { n = 10, distinct = 100 }))
    assert.are.equal(100, t.prepared)        -- INSERT and count were cached already
    assert.are.equal(64, t.statements)       -- the least recently used went
  end)

  it("shares a db between calls; a transaction holds the others' statements back", function()
    local c = session()
    c:send(H.call_raw("21", "hold", { name = "a", hold = 0.3, how = "rollback" }))
    c:expect_stderr("hold 21 open")
    local t0 = H.now()
    c:send(H.call_raw("22", "exec", { sql = "INSERT INTO t (name) VALUES ('b')" }))
    local b = assert(response_for(c, "22"))
    assert.is_true(H.now() - t0 > 0.2, "the insert did not wait for the transaction")
    local _, idx = c:wait_stderr("hold 21 done nil rolled back", 0)
    assert.truthy(idx, c:stderr_text())
    assert.are.equal(1, (outcome(b)).changes)
    assert(response_for(c, "21"))
    -- a's insert was rolled back, b's (after it) stays
    local r = call(c, "query", { sql = "SELECT name FROM t ORDER BY name" })
    assert.are.same({ { name = "b" } }, r)
    -- and without a transaction, two calls' statements simply interleave
    c:send(H.call_raw("23", "all", { n = 50000 }))
    c:send(H.call_raw("24", "all", { n = 50000 }))
    assert.are.equal(50000, json(assert(response_for(c, "23"))).a)
    assert.are.equal(50000, json(assert(response_for(c, "24"))).a)
  end)

  it("a cancel stops a running recursive query within 50 ms; the db serves the next statement", function()
    local c = session()
    start_slow(c, "31")
    c:send(H.call_raw("32", "after", {}))    -- queued behind it, another call's
    local t0 = H.now()
    c:send(H.cancel_msg(31, "enough"))
    local line = c:expect_stderr("slow 31 returned")
    local woke = H.now() - t0
    assert.matches("returned nil cancelled: enough cancelled", line)
    local r = json(assert(response_for(c, "32")))
    local freed = H.now() - t0
    assert.are.equal(10, r.n)                -- not interrupted itself
    assert.is_true(woke < 0.05, ("handler woke %.1f ms after the cancel"):format(woke * 1000))
    assert.is_true(freed < 0.05, ("the next statement ended %.1f ms after the cancel"):format(freed * 1000))
    assert.is_nil(response_for(c, "31", 0.1))   -- no response to a cancelled request
    -- later statements on the db are not hit by the interrupt
    for _ = 1, 3 do assert.are.equal(10, json(c:call("after")).n) end
  end)

  it("a timeout stops it too, within 50 ms of the deadline", function()
    local c = session()
    local resp = c:call("slow_short")
    assert.is_true(resp.result.isError)
    assert.matches("timed out after 0.3 seconds", H.text(resp))
    local line = c:expect_stderr("slow %d+ returned")
    local deadline, now = line:match("deadline ([%d.]+) now ([%d.]+)")
    assert.matches("cancelled: timeout cancelled", line)
    local late = tonumber(now) - tonumber(deadline)
    assert.is_true(late < 0.05, ("woke %.1f ms after the deadline"):format(late * 1000))
    local r = json(c:call("after"))
    assert.are.equal(10, r.n)
    assert.is_true(r.ms < 50, r.ms)
  end)

  it("an abort (cancel = abort) and a cancel under mcp.all stop it as well", function()
    local c = session()
    start_slow(c, "41", "slow_abort")
    c:send(H.cancel_msg(41, "stop"))
    local t0 = H.now()
    local r = json(c:call("after"))
    assert.are.equal(10, r.n)
    assert.is_true(H.now() - t0 < 0.1)
    -- two never-ending queries in one handler, on two dbs
    start_slow(c, "42", "all_slow")
    t0 = H.now()
    c:send(H.cancel_msg(42, "stop"))
    local line = c:expect_stderr("all_slow 42 returned")
    assert.is_true(H.now() - t0 < 0.05)
    assert.matches("returned cancelled: stop | cancelled: stop", line, 1, true)
    assert.are.equal(10, json(c:call("after")).n)
  end)

  it("a queued statement is dropped when cancelled; the running one is not hit", function()
    local c = session()
    start_slow(c, "51")
    c:send(H.call_raw("52", "slow", {}))     -- queued behind 51
    c:expect_stderr("slow 52 started")
    local t0 = H.now()
    c:send(H.cancel_msg(52, "not you"))
    c:expect_stderr("slow 52 returned nil cancelled: not you")
    assert.is_true(H.now() - t0 < 0.05)
    H.pump(0.1)
    assert.are.equal(0, c:count_stderr("slow 51 returned", true))   -- still running
    c:send(H.cancel_msg(51, "now you"))
    c:expect_stderr("slow 51 returned nil cancelled: now you")
    assert.are.equal(10, json(c:call("after")).n)
  end)

  it("cancels landing at any moment never lose the interrupt nor hit another statement", function()
    local c = session()
    math.randomseed(os.time())
    for i = 1, 250 do
      local key = tostring(1000 + i)
      c:send(H.call_raw(key, "slow", {}))
      if i % 2 == 0 then c:send(H.call_raw("9" .. key, "after", {})) end
      H.pump(math.random() * 0.004)
      c:send(H.cancel_msg(tonumber(key), "race"))
      if i % 2 == 0 then
        local r = json(assert(response_for(c, "9" .. key, 2), "a statement after a cancel never ran"))
        assert.are.equal(10, r.n)
      end
    end
    local r = json(c:call("after", {}, { timeout = 2 }))
    assert.are.equal(10, r.n)
    assert.is_true(H.run_until(function()
      return c:count_stderr("fixture: slow %d+ started") == c:count_stderr("fixture: slow %d+ returned")
    end, 5), "a slow handler never returned")
  end)

  it("a handler that goes on after a cancel starts no new statement", function()
    local c = session()
    c:send(H.call_raw("71", "spin_then_query", {}))
    c:expect_stderr("spin_then_query 71 started")
    local t0 = H.now()
    c:send(H.cancel_msg(71, "enough"))
    c:expect_stderr("spin_then_query 71 returned cancelled: enough cancelled", 2)
    assert.is_true(H.now() - t0 < 0.5)
    assert.are.equal(10, json(c:call("after", {}, { timeout = 2 })).n)   -- the db is free
  end)

  it("a cancel rolls back the call's open transaction and lets the others through", function()
    local c = session()
    c:send(H.call_raw("61", "hold", { name = "c", hold = 10, how = "commit" }))
    c:expect_stderr("hold 61 open")
    c:send(H.call_raw("62", "exec", { sql = "INSERT INTO t (name) VALUES ('d')" }))
    assert.is_nil(response_for(c, "62", 0.1))   -- waits for the transaction
    local t0 = H.now()
    c:send(H.cancel_msg(61, "changed"))
    local r = outcome(assert(response_for(c, "62")))
    assert.is_true(H.now() - t0 < 0.1)
    assert.are.equal(1, r.changes)
    c:expect_stderr("hold 61 done nil cancelled: changed")
    r = call(c, "query", { sql = "SELECT name FROM t ORDER BY name" })
    assert.are.same({ { name = "d" } }, r)
  end)

  it("rolls back a transaction its call left open when the call ends", function()
    local c = session()
    assert.is_true(json(c:call("begin_only", { name = "e" })).transaction)
    local r = call(c, "query", { sql = "SELECT count(*) AS n FROM t WHERE name = 'e'" })
    assert.are.same({ { n = 0 } }, r)
    assert.are.equal(1, (call(c, "exec", { sql = "INSERT INTO t (name) VALUES ('e')" })).changes)
  end)

  it("close cancels the queued statements; the running one finishes first", function()
    local c = session()
    assert.are.same({ running = 200000, queued = "cancelled: database closed", closed = true, usable = false,
                      text = "mcp.sqlite.db (closed)" }, json(c:call("close_busy")))
  end)

  it("runs queries under mcp.all", function()
    local c = session()
    local t = json(c:call("all", { n = 1000 }))
    assert.are.equal(1000, t.a)
    assert.are.equal(1001, t.b)
  end)

  it("shutdown interrupts a running query and exits cleanly", function()
    local c = session()
    start_slow(c, "71")
    local t0 = H.now()
    local code = c:close(5)
    assert.are.equal(0, code)
    assert.is_true(H.now() - t0 < 1)
    assert.truthy(c:wait_stderr("slow 71 returned nil cancelled: shutdown", 0))
  end)

  it("keeps fds and memory flat over many opens and closes (and dropped dbs)", function()
    local dir = os.tmpname()
    os.remove(dir)
    local path = dir .. "-churn.db"
    local c = session()
    finally(function() os.remove(path) end)
    for _, close in ipairs { true, false } do
      json(c:call("churn", { n = 100, path = path, close = close }))   -- warm-up
      local fd0 = H.fd_count(c.pid)
      local m0 = json(c:call("churn", { n = 300, path = path, close = close }))
      local m1 = json(c:call("churn", { n = 300, path = path, close = close }))
      local fd1 = H.fd_count(c.pid)
      local why = ("close %s: fds %d -> %d, Lua %.0f -> %.0f KB, heap %s -> %s"):format(
        tostring(close), fd0, fd1, m0.lua, m1.lua, tostring(m0.heap), tostring(m1.heap))
      assert.are.equal(fd0, fd1, why)
      assert.is_true(m1.lua - m0.lua < 64, why)
      -- malloc's bytes in use (not under ASan, whose LeakSanitizer checks at exit)
      if m0.heap ~= cjson.null then assert.is_true(m1.heap - m0.heap < 256 * 1024, why) end
    end
  end)
end)

describe("plugins/notes_db.lua", function()
  after_each(H.cleanup)

  it("adds, searches and lists notes", function()
    local path = os.tmpname()
    finally(function() os.remove(path) end)
    os.remove(path)
    local c = H.session { plugins = { "plugins" }, env = { LUAMCP_NOTES_DB = path } }
    assert.are.equal("added note #1", H.text(c:call("add_note", { title = "milk", body = "buy 2% milk", tags = { "shop" } })))
    assert.are.equal("added note #2", H.text(c:call("add_note", { title = "lua", body = "read PiL" })))
    assert.are.equal("#2 lua\nread PiL\n\n#1 milk [shop]\nbuy 2% milk", H.text(c:call("list_notes")))
    assert.are.equal("#1 milk [shop]\nbuy 2% milk", H.text(c:call("search_notes", { text = "2%" })))
    assert.are.equal("no notes", H.text(c:call("search_notes", { text = "_" })))   -- LIKE's wildcards are literal
    assert.are.equal("#1 milk [shop]\nbuy 2% milk", H.text(c:call("search_notes", { tag = "shop" })))
    c:close()
    -- the notes outlive the server
    c = H.session { plugins = { "plugins" }, env = { LUAMCP_NOTES_DB = path } }
    assert.matches("^#2 lua", H.text(c:call("list_notes", { limit = 1 })))
  end)
end)
