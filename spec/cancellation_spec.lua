-- Cancellation, named after the requirements of the MCP cancellation pages
-- (2024-11-05 .. 2025-11-25) and the policies of docs/guide/03-cancellation-and-timeouts.md.
--
-- stderr lines the server writes (luamcp: LEVEL: message):
--   debug: request KEY: FROM -> TO (EVENT[: REASON])
--   info:  request KEY cancelled: REASON
--   debug: cancel ignored: unknown request KEY | request KEY already STATE |
--          initialize cannot be cancelled | malformed notification: WHY
local H = require "spec.helper"
local esc = H.esc

local function debug_session(opts)
  opts = opts or {}
  opts.args = opts.args or {}
  table.insert(opts.args, "--log-level")
  table.insert(opts.args, "debug")
  return H.session(opts)
end

-- Start a tool with the exact id text `key` and wait until its handler says "started KEY".
local function start(c, key, tool, args)
  c:send(H.call_raw(key, tool, args or {}))
  local ok = c:wait_log("^started " .. esc(key) .. "$")
  assert(ok, "handler " .. tool .. " " .. key .. " never started:\n" .. c:stderr_text())
end

local function cancel(c, key, reason) c:send(H.cancel_raw(key, reason)) end

-- A response with this exact id, if one is waiting or arrives within timeout.
local function response_for(c, key, timeout)
  return c:take(function(m, raw) return H.is_response(m) and H.raw_member(raw, "id") == key end, timeout)
end

-- No response with id `key` was ever written, and none comes after a ping round trip.
local function assert_never_answered(c, key)
  assert.are.same({}, c:request("ping").result)
  c:no_response()
  for _, e in ipairs(c.history) do
    assert.are_not.equal(key, H.raw_member(e.raw, "id"), "response for a cancelled request: " .. e.raw)
  end
end

describe("cancellation", function()
  after_each(H.cleanup)

  describe("Receivers SHOULD stop processing the cancelled request", function()
    it("a sleeping cooperative handler is woken at once and sees ctx:cancelled() and the reason", function()
      local c = debug_session()
      start(c, "7", "sleep", { seconds = 30 })
      local t0 = H.now()
      cancel(c, "7", "user stop")
      assert(c:wait_log("^stopped 7 reason=user stop$"), c:stderr_text())
      assert.is_true(H.now() - t0 < 5, "sleep was not woken early")
      c:expect_stderr("^fixture: sleep stopped 7 ok=nil why=cancelled: user stop reason=user stop cancelled=true$")
    end)

    it("ctx:check() raises the cancellation and unwinds the handler", function()
      local c = debug_session()
      start(c, "8", "check")
      c:expect_stderr("fixture: check looping 8", nil, { plain = true })
      cancel(c, "8", "stop checking")
      c:expect_stderr("fixture: closed check 8 cancelled=true", nil, { plain = true })
      assert_never_answered(c, "8")
      assert.are.equal(0, c:count_stderr("fixture: check fell through", true))
    end)

    it("cancel=\"abort\" stops the handler at once and runs its <close>", function()
      local c = debug_session()
      start(c, "9", "abort_sleep")
      cancel(c, "9", "abort it")
      c:expect_stderr("^fixture: closed abort_sleep 9 ")
      assert_never_answered(c, "9")
      assert.are.equal(0, c:count_stderr("fixture: abort_sleep ran on", true))
    end)

    it("ctx:on_cancel callbacks run with the reason", function()
      local c = debug_session()
      start(c, "12", "on_cancel", { seconds = 30 })
      cancel(c, "12", "callback reason")
      c:expect_stderr("fixture: on_cancel 12 reason=callback reason", nil, { plain = true })
      assert_never_answered(c, "12")
    end)

    it("a request with a string id is cancelled by a cancel with the same string id", function()
      local c = debug_session()
      start(c, '"abc"', "sleep", { seconds = 30 })
      cancel(c, '"abc"', "by string")
      assert(c:wait_log('^stopped "abc" reason=by string$'), c:stderr_text())
      assert_never_answered(c, '"abc"')
    end)

    -- More lines than one read takes (stdio reads 256 KiB), and more output
    -- than stdio.c holds before writing (64 KiB): each cancel reaches its
    -- own handler, and every handler's line goes out.
    it("3,000 sleeping calls cancelled in one write stop, each with its reason, and none is answered", function()
      local c = H.session()
      local calls, cancels, N, K = {}, {}, 3000, 100000     -- ids apart from the helper's
      for i = 1, N do
        calls[i] = H.call_raw(tostring(K + i), "sleep", { seconds = 60 })
        cancels[i] = H.cancel_raw(tostring(K + i), "storm " .. i)
      end
      c:send(table.concat(calls))
      assert(H.run_until(function() return c:count_logs("^started ") == N end, 60),
             c:count_logs("^started ") .. " of " .. N .. " started")
      c:send(table.concat(cancels))
      assert(H.run_until(function() return c:count_logs("^stopped ") == N end, 60),
             c:count_logs("^stopped ") .. " of " .. N .. " stopped")
      for i = 1, N, 499 do
        assert.are.equal(1, c:count_logs("^stopped " .. (K + i) .. " reason=storm " .. i .. "$"))
      end
      assert.are.same({}, c:request("ping").result)
      c:no_response()
      for _, e in ipairs(c.history) do
        local id = tonumber(H.raw_member(e.raw, "id") or "")
        assert(not (id and id > K and id <= K + N), "response for a cancelled request: " .. e.raw)
      end
    end)
  end)

  describe("Receivers SHOULD free associated resources", function()
    it("the cancelled handler's <close> variables run", function()
      local c = debug_session()
      start(c, "7", "sleep", { seconds = 30 })
      cancel(c, "7", "free it")
      c:expect_stderr("fixture: closed sleep 7 cancelled=true", nil, { plain = true })
    end)

    it("the request goes running -> cancelling -> cancelled and leaves the table", function()
      local c = debug_session()
      start(c, "7", "sleep", { seconds = 30 })
      cancel(c, "7", "done with it")
      c:expect_stderr("luamcp: debug: request 7: running -> cancelling (cancel: done with it)", nil, { plain = true })
      c:expect_stderr("^luamcp: debug: request 7: cancelling %-> cancelled %(return")
    end)

    it("after a cancelled request has finished, its id can be reused for a new request", function()
      local c = debug_session()
      start(c, "11", "sleep", { seconds = 30 })
      cancel(c, "11", "reuse")
      c:expect_stderr("^luamcp: debug: request 11: cancelling %-> cancelled")
      local resp = c:call("echo", { text = "again" }, { id = 11 })
      assert.is_nil(resp.error)
      assert.are.equal("again", H.text(resp))
    end)
  end)

  describe("Receivers SHOULD not send a response for the cancelled request", function()
    it("no response ever arrives for a cancelled sleeping request, not even its return value", function()
      local c = debug_session()
      start(c, "7", "sleep", { seconds = 30 })
      cancel(c, "7", "no answer please")
      assert(c:wait_log("^stopped 7 "), c:stderr_text())
      c:expect_stderr("fixture: closed sleep 7", nil, { plain = true })
      assert_never_answered(c, "7")
    end)

    it("no progress notification is sent after the cancel", function()
      local c = debug_session()
      c:send('{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"stubborn_progress",' ..
             '"arguments":{},"_meta":{"progressToken":"pt"}}}\n')
      assert(c:wait_notification("notifications/progress"), c:stderr_text())
      cancel(c, "13", "enough progress")
      local line = c:expect_stderr("^fixture: progress saw cancel at %d+$")
      local seen_at = tonumber(line:match("(%d+)$"))
      c:expect_stderr("fixture: progress done at", nil, { plain = true })
      assert_never_answered(c, "13")
      local last = 0
      for _, n in ipairs(c.notes) do
        if n.method == "notifications/progress" then
          assert.is_true(n.params.progress < seen_at,
            ("progress %s sent after the handler saw the cancel at %d"):format(n.params.progress, seen_at))
          assert.is_true(n.params.progress > last)
          last = n.params.progress
        end
      end
      assert.is_true(last >= 1)
    end)

    it("a request and its cancel in one write: no response and the handler never ran", function()
      local c = debug_session()
      c:send(H.call_raw("9", "marker") .. H.cancel_raw("9", "too early") ..
             '{"jsonrpc":"2.0","id":10,"method":"ping"}\n')
      local m, raw = c:recv()
      assert.are.equal("10", H.raw_member(raw, "id"), raw)
      c:expect_stderr("luamcp: debug: request 9: queued -> cancelled (cancel: too early)", nil, { plain = true })
      c:no_message()
      assert.are.equal(0, c:count_stderr("fixture: marker ran", true), c:stderr_text())
    end)

    it("a cancel for a cancel=\"ignore\" request not yet started drops it", function()
      local c = debug_session()
      c:send(H.call_raw("14", "ignore_sleep", { seconds = 0.1 }) .. H.cancel_raw("14", "before start"))
      c:expect_stderr("luamcp: debug: request 14: queued -> cancelled (cancel: before start)", nil, { plain = true })
      assert_never_answered(c, "14")
      assert.are.equal(0, c:count_logs("^started 14$"))
    end)
  end)

  describe("Both parties SHOULD log cancellation reasons", function()
    it("an accepted cancel is logged at info with its reason", function()
      local c = H.session()   -- default level: info
      start(c, "7", "sleep", { seconds = 30 })
      cancel(c, "7", "because tests")
      c:expect_stderr("luamcp: info: request 7 cancelled: because tests", nil, { plain = true })
    end)

    it("the cancel of a string id is logged with the id's JSON text", function()
      local c = H.session()
      start(c, '"7"', "sleep", { seconds = 30 })
      cancel(c, '"7"', "quoted")
      c:expect_stderr('luamcp: info: request "7" cancelled: quoted', nil, { plain = true })
    end)

    it("ctx.reason is set for a cancel without a reason", function()
      local c = debug_session()
      start(c, "7", "sleep", { seconds = 30 })
      cancel(c, "7")
      local line = c:expect_stderr("^fixture: sleep stopped 7 ")
      assert.is_nil(line:find("reason=nil", 1, true), line)
    end)
  end)

  describe("The initialize request MUST NOT be cancelled by clients", function()
    for _, key in ipairs { "0", '"init"' } do
      it("a cancel for initialize (id " .. key .. ") in the same write is ignored and logged", function()
        local c = H.start{ args = { "--log-level", "debug" } }
        c:send('{"jsonrpc":"2.0","id":' .. key .. ',"method":"initialize","params":{"protocolVersion":' ..
               '"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}\n' ..
               H.cancel_raw(key, "try to cancel initialize"))
        local m, raw = c:recv()
        assert.are.equal(key, H.raw_member(raw, "id"), raw)
        assert.are.equal("2025-11-25", m.result and m.result.protocolVersion, raw)
        c:expect_stderr("luamcp: debug: cancel ignored: initialize cannot be cancelled", nil, { plain = true })
        c:send({ jsonrpc = "2.0", method = "notifications/initialized" })
        local list = c:request("tools/list", {})
        assert.is_truthy(list.result and list.result.tools)
        c:no_message()
      end)
    end
  end)

  describe("Receivers MAY ignore cancellation notifications if the referenced request is unknown", function()
    it("a cancel for an unknown id is ignored, logged at debug, and the server keeps serving", function()
      local c = debug_session()
      cancel(c, "999", "who?")
      c:expect_stderr("luamcp: debug: cancel ignored: unknown request 999", nil, { plain = true })
      assert.are.same({}, c:request("ping").result)
      c:no_message()
    end)

    it("a cancel for the string id \"7\" does not cancel the integer id 7", function()
      local c = debug_session()
      start(c, "7", "sleep", { seconds = 0.5 })
      cancel(c, '"7"', "wrong type")
      c:expect_stderr('luamcp: debug: cancel ignored: unknown request "7"', nil, { plain = true })
      local resp = response_for(c, "7")
      assert(resp, c:stderr_text())
      assert.are.equal("slept 7", H.text(resp))
    end)

    it("a cancel for the integer id 7 does not cancel the string id \"7\"", function()
      local c = debug_session()
      start(c, '"7"', "sleep", { seconds = 0.5 })
      cancel(c, "7", "wrong type")
      c:expect_stderr("luamcp: debug: cancel ignored: unknown request 7", nil, { plain = true })
      local resp = response_for(c, '"7"')
      assert(resp, c:stderr_text())
      assert.are.equal('slept "7"', H.text(resp))
    end)
  end)

  describe("Receivers MAY ignore cancellation notifications if processing has already completed", function()
    it("a cancel after the response changes nothing and is logged as already completed", function()
      local c = debug_session()
      local resp = c:call("echo", { text = "done" }, { id = 5 })
      assert.are.equal("done", H.text(resp))
      cancel(c, "5", "too late")
      c:expect_stderr("luamcp: debug: cancel ignored: request 5 already completed", nil, { plain = true })
      assert.are.same({}, c:request("ping").result)
      c:no_message()
    end)

    it("a cancel after an isError response from a raising handler is ignored", function()
      local c = debug_session()
      local resp = c:call("fail", {}, { id = 6 })
      assert.is_true(resp.result.isError)
      cancel(c, "6", "too late")
      c:expect_stderr("^luamcp: debug: cancel ignored: request 6 already %a+$")
      assert.are.same({}, c:request("ping").result)
      c:no_message()
    end)

    it("a second cancel for the same request is harmless", function()
      local c = debug_session()
      start(c, "7", "sleep", { seconds = 30 })
      cancel(c, "7", "once")
      cancel(c, "7", "twice")
      assert(c:wait_log("^stopped 7 reason=once$"), c:stderr_text())
      c:expect_stderr("fixture: closed sleep 7", nil, { plain = true })
      assert_never_answered(c, "7")
      assert.are.equal(1, c:count_stderr("request 7 cancelled:", true))
      assert.are.equal(1, c:count_logs("^stopped 7 "))
      assert.are.equal(1, c:count_stderr("fixture: closed sleep 7", true))
      cancel(c, "7", "thrice")
      c:expect_stderr("luamcp: debug: cancel ignored: request 7 already cancelled", nil, { plain = true })
    end)
  end)

  describe("Receivers MAY ignore cancellation notifications if the request cannot be cancelled", function()
    it("cancel=\"ignore\": the cancel is logged, the handler runs to completion and its response is sent", function()
      local c = debug_session()
      start(c, "15", "ignore_sleep", { seconds = 0.5 })
      cancel(c, "15", "please stop")
      local resp = response_for(c, "15")
      assert(resp, c:stderr_text())
      assert.are.equal("ignored done sleep=true cancelled=false", H.text(resp))
      assert.is_truthy(c:wait_stderr("^luamcp: debug: request 15:? .*ignored.*: please stop$", 0),
                       "the ignored cancel was not logged with its reason:\n" .. c:stderr_text())
      assert.are.equal(0, c:count_stderr("request 15 cancelled:", true))
    end)

    it("cancel=\"ignore\": the timeout is ignored too", function()
      local c = debug_session()
      local resp = c:call("ignore_timeout", {})
      assert.is_not_true(resp.result.isError)
      assert.are.equal("outlived timeout sleep=true", H.text(resp))
    end)
  end)

  -- A plain cancel is read from its text (session.c's quick_cancel), the
  -- others (escapes, a repeated member, -0) are parsed whole: the same effect.
  describe("a cancel read from its text or parsed whole has the same effect", function()
    local cases = {
      { "an escaped reason", "21", "stop! now",
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":21,"reason":"stop\\u0021 now"}}' },
      { "an escaped string id", '"abc"', "esc",
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\\u0061bc","reason":"esc"}}' },
      { "requestId given twice (the last counts)", "23", "twice",
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,"requestId":23,"reason":"twice"}}' },
      { "requestId -0", "0", "zero",
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":-0,"reason":"zero"}}' },
      { "members in another order, spaced, with _meta", "24", "spaced",
        '{ "params" : { "_meta" : {"k":[1,2]}, "reason" : "spaced", "requestId" : 24 }, ' ..
        '"method" : "notifications/cancelled", "jsonrpc" : "2.0" }' },
    }
    for _, case in ipairs(cases) do
      it("with " .. case[1], function()
        local c = debug_session()
        start(c, case[2], "sleep", { seconds = 30 })
        c:send(case[4] .. "\n")
        assert(c:wait_log("^stopped " .. esc(case[2]) .. " reason=" .. esc(case[3]) .. "$"), c:stderr_text())
        assert_never_answered(c, case[2])
      end)
    end
  end)

  describe("Invalid cancellation notifications SHOULD be ignored: malformed notifications", function()
    local malformed = {
      { "without params", '{"jsonrpc":"2.0","method":"notifications/cancelled"}' },
      { "with params an array", '{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}' },
      { "without requestId", '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"x"}}' },
      { "with a boolean requestId", '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":true}}' },
      { "with an object requestId", '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"id":1}}}' },
      { "with a float requestId", '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}' },
      { "with a null requestId", '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}' },
    }
    for _, case in ipairs(malformed) do
      it("a cancel " .. case[1] .. " is ignored, logged at debug with why, and work in flight goes on", function()
        local c = debug_session()
        start(c, "1", "sleep", { seconds = 0.25 })
        c:send(case[2] .. "\n")
        c:expect_stderr("^luamcp: debug: cancel ignored: malformed notification: %S")
        local resp = response_for(c, "1")
        assert(resp, c:stderr_text())
        assert.are.equal("slept 1", H.text(resp))
        assert.are.same({}, c:request("ping").result)
        c:no_message()
      end)
    end
  end)

  describe("Both parties MUST handle race conditions gracefully", function()
    it("every request reaches exactly one terminal state whatever the order of events", function()
      local c = debug_session()
      local n = 30
      for i = 1, n do
        local key = tostring(100 + i)
        c:send(H.call_raw(key, "sleep", { seconds = (i % 4) * 0.01 }))
        if i % 3 == 0 then H.pump(0.005 * (i % 5)) end
        if i % 2 == 0 then cancel(c, key, "race " .. i) end
      end
      assert.are.same({}, c:request("ping", nil, { timeout = 10 }).result)
      local terminal = { completed = true, failed = true, cancelled = true, timed_out = true }
      for i = 1, n do
        local key = tostring(100 + i)
        local count, final
        -- wait until the request has left the table
        H.run_until(function()
          count = 0
          for _, l in ipairs(c.stderr) do
            local to = l:match("^luamcp: debug: request " .. key .. ": [%a_]+ %-> ([%a_]+) ")
            if to and terminal[to] then count, final = count + 1, to end
          end
          return count > 0
        end, 5)
        assert.are.equal(1, count, "request " .. key .. " terminal transitions: " .. count)
        if final == "completed" then response_for(c, key, 5) end
        local answers = 0
        for _, e in ipairs(c.history) do
          if H.raw_member(e.raw, "id") == key then answers = answers + 1 end
        end
        if final == "completed" then
          assert.are.equal(1, answers, "completed request " .. key .. " answered " .. answers .. " times")
        else
          assert.are.equal("cancelled", final, key)
          assert.are.equal(0, answers, "cancelled request " .. key .. " was answered")
        end
        if i % 2 == 1 then assert.are.equal("completed", final, "uncancelled request " .. key) end
      end
      c:no_response()
    end)
  end)

  describe("grace and forced abort", function()
    it("grace expiry aborts a cooperative handler that ignores the cancelled flag", function()
      local c = debug_session()
      start(c, "3", "grace_sleeper")
      cancel(c, "3", "stop now")
      c:expect_stderr("fixture: grace_sleeper ignores the cancel 3", nil, { plain = true })
      c:expect_stderr("fixture: closed grace_sleeper 3 cancelled=true", 5, { plain = true })
      c:expect_stderr("^luamcp: debug: request 3: cancelling %-> cancelled %(grace")
      assert_never_answered(c, "3")
    end)

    it("a while-true handler is aborted by force after the grace; its <close> runs with ctx:cancelled() true", function()
      local c = debug_session()
      c:send(H.call_raw("4", "spin"))
      c:expect_stderr("fixture: spin started 4", nil, { plain = true })
      cancel(c, "4", "spin no more")
      c:expect_stderr("fixture: closed spin 4 cancelled=true", 5, { plain = true })
      assert_never_answered(c, "4")
    end)

    it("pcall in the handler cannot swallow the forced abort", function()
      local c = debug_session()
      c:send(H.call_raw("5", "spin_pcall"))
      c:expect_stderr("fixture: spin_pcall started 5", nil, { plain = true })
      cancel(c, "5", "no escape")
      c:expect_stderr("fixture: closed spin_pcall 5 cancelled=true", 5, { plain = true })
      assert_never_answered(c, "5")
      -- and the server is not left spinning: a call still completes promptly
      local t0 = H.now()
      assert.are.equal("fine", H.text(c:call("echo", { text = "fine" })))
      assert.is_true(H.now() - t0 < 2)
    end)

    it("a handler spinning under pcall where it cannot yield is stopped by its timeout and its <close> runs", function()
      local c = debug_session()
      local resp = c:call("spin_sort_pcall", {}, { id = 8, timeout = 10 })
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):lower():find("time[d ]*%s*out"), H.text(resp))
      c:expect_stderr("fixture: closed spin_sort_pcall 8 cancelled=true", 5, { plain = true })
      assert.are.equal(0, c:count_stderr("fixture: spin_sort_pcall escaped", true))
      assert.are.equal("still serving", H.text(c:call("echo", { text = "still serving" })))
    end)

    it("a handler spinning in a coroutine it created is stopped by its timeout and grace, and its <close> runs", function()
      local c = debug_session()
      c:send(H.call_raw("10", "spin_nested"))
      c:expect_stderr("fixture: spin_nested started 10", nil, { plain = true })
      local resp = c:take(function(m) return m.id == 10 end, 10)
      assert.is_true(resp.result.isError, H.cjson.encode(resp))
      c:expect_stderr("fixture: closed spin_nested 10 cancelled=true", 5, { plain = true })
      assert.are.equal(0, c:count_stderr("fixture: spin_nested escaped", true))
      assert.are.equal("still serving", H.text(c:call("echo", { text = "still serving" })))
    end)

    -- The hook's kill raised where hooks are off (Lua restores them only in
    -- a pcall): a <close> run after it ran unbounded, and one that looped
    -- stopped the server. It now runs for 1 s at most, as after any abort.
    it("a <close> that loops after its handler was killed where it cannot yield is ended; the server serves on", function()
      local c = debug_session()
      local resp = c:call("spin_sort_close", { loop = true }, { id = 11, timeout = 10 })
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):lower():find("time[d ]*%s*out"), H.text(resp))
      c:expect_stderr("fixture: spin_sort_close closing 11", 5, { plain = true })
      c:expect_stderr("request 11: a <close> method failed: cleanup after abort took longer than 1 s", 5,
                      { plain = true })
      assert.are.same({}, c:request("ping", nil, { timeout = 5 }).result)
      assert.are.equal(0, c:count_stderr("fixture: spin_sort_close closed 11", true))
    end)

    it("a <close> that works and returns after its handler was killed where it cannot yield runs to its end", function()
      local c = debug_session()
      local resp = c:call("spin_sort_close", {}, { id = 12, timeout = 10 })
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):lower():find("time[d ]*%s*out"), H.text(resp))
      c:expect_stderr("fixture: spin_sort_close closed 12 after 100000", 5, { plain = true })
      assert.are.equal(0, c:count_stderr("a <close> method failed", true))
    end)

    -- Regression: an error raised from the count hook leaves the thread with
    -- hooks off; reusing it made the next spinning handler unpreemptable.
    it("after a handler is killed where it cannot yield, the next spinning handler is still time-sliced", function()
      local c = debug_session()
      local resp = c:call("spin_sort_pcall", {}, { id = 8, timeout = 10 })
      assert.is_true(resp.result.isError)
      c:send(H.call_raw("9", "spin"))
      c:expect_stderr("fixture: spin started 9", nil, { plain = true })
      assert.are.same({}, c:request("ping", nil, { timeout = 5 }).result)
      cancel(c, "9", "done")
      c:expect_stderr("fixture: closed spin 9", 5, { plain = true })
    end)

    it("in the <close> of a forced abort, ctx:cancelled() is true and ctx:log does not raise", function()
      local c = debug_session()
      c:send(H.call_raw("6", "spin_close"))
      c:expect_stderr("fixture: spin_close started 6", nil, { plain = true })
      cancel(c, "6", "close it")
      c:expect_stderr("fixture: closed spin_close 6 cancelled=true log=ok", 5, { plain = true })
      assert_never_answered(c, "6")
    end)

    it("a ping is answered while a handler spins (time slices)", function()
      local c = debug_session()
      c:send(H.call_raw("7", "spin"))
      c:expect_stderr("fixture: spin started 7", nil, { plain = true })
      local t0 = H.now()
      assert.are.same({}, c:request("ping", nil, { timeout = 5 }).result)
      assert.are.equal("between slices", H.text(c:call("echo", { text = "between slices" }, { timeout = 5 })))
      assert.is_true(H.now() - t0 < 3)
      cancel(c, "7", "cleanup")
      c:expect_stderr("fixture: closed spin 7", 5, { plain = true })
    end)

    it("a CPU-bound handler that finishes on its own is answered", function()
      local c = debug_session()
      local resp = c:call("crunch", { seconds = 0.3 })
      assert.are.equal("crunched", H.text(resp))
    end)
  end)

  describe("timeouts", function()
    it("a timed-out request gets an isError result saying it timed out", function()
      local c = debug_session()
      local t0 = H.now()
      local resp = c:call("timeout_sleep", {}, { id = 20 })
      assert.is_nil(resp.error)
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):lower():find("time[d ]*%s*out"), H.text(resp))
      assert.is_true(H.now() - t0 < 5)
      c:expect_stderr("^luamcp: debug: request 20: running %-> timing_out %(timeout")
      c:expect_stderr("^luamcp: debug: request 20: timing_out %-> timed_out")
    end)

    it("a timed-out handler is woken and sees ctx.reason \"timeout\"", function()
      local c = debug_session()
      c:call("timeout_sleep", {}, { id = 21 })
      c:expect_stderr("^fixture: timeout_sleep woke 21 ok=nil why=cancelled: timeout reason=timeout cancelled=true$")
      c:expect_stderr("fixture: closed timeout_sleep 21", nil, { plain = true })
    end)

    it("a spinning handler past its timeout is aborted after the grace and gets the timeout result", function()
      local c = debug_session()
      local resp = c:call("spin_timeout", {}, { id = 22 })
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):lower():find("time[d ]*%s*out"), H.text(resp))
      c:expect_stderr("fixture: closed spin_timeout 22 cancelled=true", nil, { plain = true })
      c:no_message()
    end)

    it("a client cancel while a timed-out handler cleans up means no response at all", function()
      local c = debug_session()
      c:send(H.call_raw("23", "spin_timeout_grace"))
      c:expect_stderr("^luamcp: debug: request 23: running %-> timing_out")
      cancel(c, "23", "never mind")
      c:expect_stderr("^luamcp: debug: request 23: timing_out %-> cancelling")
      c:expect_stderr("fixture: closed spin_timeout_grace 23", 5, { plain = true })
      assert_never_answered(c, "23")
    end)

    it("--timeout sets the default timeout of tools without their own", function()
      local c = debug_session{ args = { "--timeout", "0.2" } }
      local t0 = H.now()
      local resp = c:call("sleep", { seconds = 30 }, { id = 24 })
      assert.is_true(resp.result.isError)
      assert.truthy(H.text(resp):lower():find("time[d ]*%s*out"), H.text(resp))
      assert.is_true(H.now() - t0 < 5)
    end)
  end)
end)
