-- Per-tool limits (docs/operations/limits.md): max_concurrent and its FIFO
-- queue, "busy" past it, cancels and timeouts of queued calls, the rate's
-- token bucket, progress heartbeats, and the configuration file's limits.
local H = require "spec.helper"
local esc = H.esc

local FIX = "spec/fixtures/limits"

local function call(c, key, tool, a, meta)
  local p = { name = tool, arguments = a }
  if meta then p._meta = meta end
  c:send('{"jsonrpc":"2.0","id":' .. key .. ',"method":"tools/call","params":' .. H.cjson.encode(p) .. "}\n")
end

local function response(c, key, timeout)
  local m = c:take(function(msg, raw) return H.is_response(msg) and H.raw_member(raw, "id") == key end, timeout)
  assert(m, "no response to " .. key .. "\nstderr:\n" .. c:stderr_text())
  return m
end

local function started(c, tag)
  assert(c:wait_log("^started " .. esc(tag) .. "$"), tag .. " never started\n" .. c:stderr_text())
end

local function advance(c, seconds)
  c:send(H.line{ jsonrpc = "2.0", method = "notifications/luamcp/advance", params = { seconds = seconds } })
end

describe("per-tool limits", function()
  after_each(H.cleanup)

  it("queued calls start in the order they arrived, each when a slot frees", function()
    local c = H.session{ plugins = { FIX } }
    call(c, "1", "gate", { tag = "a", hold = 30 })
    call(c, "2", "gate", { tag = "b" })
    call(c, "3", "gate", { tag = "c" })
    started(c, "a")
    c:no_response()                                  -- b and c wait behind a
    assert.equals(0, c:count_logs("^started [bc]$"))
    c:send(H.cancel_raw("1", "let the queue go"))
    assert.equals("done b", H.text(response(c, "2")))
    assert.equals("done c", H.text(response(c, "3")))
    local order = {}
    for _, n in ipairs(c.notes) do
      if n.method == "notifications/message" then order[#order + 1] = n.params.data end
    end
    assert.same({ "started a", "started b", "started c" }, order)
  end)

  it("a call past the queue gets an isError result at once: busy: N running, M queued", function()
    local c = H.session{ plugins = { FIX } }
    call(c, "1", "gate", { tag = "a", hold = 30 })
    call(c, "2", "gate", { tag = "b" })
    call(c, "3", "gate", { tag = "c" })
    call(c, "4", "gate", { tag = "d" })
    local r = response(c, "4")
    assert.is_true(r.result.isError)
    assert.equals("busy: 1 running, 2 queued", H.text(r))
    assert.equals(0, c:count_logs("^started d$"))
  end)

  it("a queued call cancelled by the client leaves the queue with no response and never starts", function()
    local c = H.session{ plugins = { FIX }, args = { "--log-level", "debug" } }
    call(c, "1", "gate", { tag = "a", hold = 30 })
    call(c, "2", "gate", { tag = "b" })
    call(c, "3", "gate", { tag = "c" })
    started(c, "a")
    c:send(H.cancel_raw("2", "changed my mind"))
    c:expect_stderr("request 2: queued %-> cancelled")
    c:send(H.cancel_raw("1", "next"))
    assert.equals("done c", H.text(response(c, "3")))
    c:no_response()                                  -- none for 2, ever
    assert.equals(0, c:count_logs("^started b$"))
    -- and its place is free again: two may wait once more
    call(c, "5", "gate", { tag = "e", hold = 30 })
    call(c, "6", "gate", { tag = "f" })
    call(c, "7", "gate", { tag = "g" })
    started(c, "e")
    c:no_response()
  end)

  it("a queued call's timeout counts from its arrival: it times out while waiting", function()
    local c = H.session{ plugins = { FIX }, args = { "--test-clock" } }
    call(c, "1", "stubborn", { tag = "a", hold = 1000 })
    started(c, "a")
    call(c, "2", "stubborn", { tag = "b" })
    c:no_response()
    advance(c, 6)                                    -- past both deadlines; a ignores its own
    local r = response(c, "2")
    assert.is_true(r.result.isError)
    assert.matches('Tool "stubborn" timed out after 5 seconds', H.text(r), 1, true)
    assert.equals(0, c:count_logs("^started b$"))
    -- the queue is empty again: one more may wait, the next is busy
    call(c, "3", "stubborn", { tag = "c" })
    call(c, "4", "stubborn", { tag = "d" })
    assert.equals("busy: 1 running, 1 queued", H.text(response(c, "4")))
  end)

  it("past the rate (a token bucket) a call gets an isError result: rate limit: R/m", function()
    local c = H.session{ plugins = { FIX }, args = { "--test-clock" } }
    assert.equals("done 1", H.text(c:request("tools/call", { name = "rated", arguments = { tag = "1" } })))
    assert.equals("done 2", H.text(c:request("tools/call", { name = "rated", arguments = { tag = "2" } })))
    local r = c:request("tools/call", { name = "rated", arguments = { tag = "3" } })
    assert.is_true(r.result.isError)
    assert.equals("rate limit: 2/m", H.text(r))
    advance(c, 31)                                   -- one token back (2 a minute)
    assert.equals("done 4", H.text(c:request("tools/call", { name = "rated", arguments = { tag = "4" } })))
    assert.equals("rate limit: 2/m",
                  H.text(c:request("tools/call", { name = "rated", arguments = { tag = "5" } })))
  end)

  it("a call with a progressToken that reports nothing gets heartbeats: its last progress again", function()
    local c = H.session{ plugins = { FIX }, args = { "--test-clock" } }
    call(c, "1", "beating", { tag = "progress", hold = 100 }, { progressToken = "p1" })
    call(c, "2", "beating", { tag = "silent", hold = 100 }, { progressToken = "p2" })
    call(c, "3", "beating", { tag = "untokened", hold = 100 })
    started(c, "progress"); started(c, "silent"); started(c, "untokened")
    local first = c:wait_notification("notifications/progress", function(p) return p.progressToken == "p1" end)
    assert.equals(5, first.params.progress)
    local seen = #c.notes
    advance(c, 2.5)
    local beat = c:wait_notification("notifications/progress", function(p) return p.progressToken == "p1" end,
                                     nil, seen)
    assert.equals(5, beat.params.progress)
    assert.is_nil(beat.params.total)
    local zero = c:wait_notification("notifications/progress", function(p) return p.progressToken == "p2" end,
                                     nil, seen)
    assert.equals(0, zero.params.progress)
    seen = #c.notes
    advance(c, 2.5)                                  -- and again, every 2 s of silence
    assert.truthy(c:wait_notification("notifications/progress", function(p) return p.progressToken == "p2" end,
                                      nil, seen))
    c:no_response()
  end)

  it("a configuration file's limits.TOOL override the tool's", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write('return {\n  limits = {\n    gate = { queue = 0 },\n  },\n}\n')
    f:close()
    local c = H.session{ plugins = { FIX }, args = { "--config", path } }
    call(c, "1", "gate", { tag = "a", hold = 30 })
    started(c, "a")
    call(c, "2", "gate", { tag = "b" })
    assert.equals("busy: 1 running, 0 queued", H.text(response(c, "2")))
    os.remove(path)
  end)

  it("a bad limit in the configuration file is refused at its line", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write('return {\n  limits = {\n    gate = {\n      rate = "fast",\n    },\n  },\n}\n')
    f:close()
    local c = H.start{ plugins = { FIX }, args = { "--config", path } }
    assert.equals(2, (c:wait_exit()))
    assert.truthy(c:stderr_text():find(path .. ':4: limits.gate.rate must be "R/s" or "R/m"', 1, true),
                  c:stderr_text())
    os.remove(path)
  end)
end)
