-- Clients that reset their connections (RST, SO_LINGER 0) at every point of
-- an exchange. The server's next write on such a connection fails; whatever
-- it was writing, the server keeps serving everybody else (issue 14: a reset
-- during a JSON answer freed the answer's stream twice and killed it).
--
-- The `block` tool (spec/fixtures/resets) holds the server's loop in a
-- blocking call while the client resets: the server reads nothing meanwhile,
-- so its next write, made before its next poll, meets the reset socket.
local HH = require "spec.http_helper"
local H = HH.H

local PLUGINS = { "spec/fixtures/http", "spec/fixtures/resets" }

-- The server still answers a ping on a fresh connection, and has not exited.
local function assert_serving(srv, s)
  local resp = s:rpc("ping", {}, { fresh = true })
  assert.is_table(resp, "no answer to a ping; stderr:\n" .. srv:stderr_text())
  assert.is_table(resp.result, srv:stderr_text())
  assert.is_true(srv:alive(), "the server exited; stderr:\n" .. srv:stderr_text())
  assert.is_nil(srv:stderr_text():find("AddressSanitizer", 1, true), srv:stderr_text())
end

local function block_args(seconds, extra)
  local a = { seconds = seconds }
  for k, v in pairs(extra or {}) do a[k] = v end
  return { name = "block", arguments = a }
end

-- Wait for the block call to return (its stderr line), then a little more for
-- the loop to make the writes it owed.
local function wait_block_done(srv)
  srv:expect_stderr("fixture: block done", 5)
  H.pump(0.1)
end

describe("HTTP: a client that resets its connection", function()
  local srv
  before_each(function() srv = HH.start{ plugins = PLUGINS } end)
  after_each(HH.cleanup)

  describe("in a 2025-11-25 session", function()
    local s
    before_each(function() s = HH.initialize(srv, "2025-11-25") end)

    it("before the answer: the call goes on, the server serves", function()
      local _, c = s:post(s:req("tools/call", { name = "quiet", arguments = { seconds = 0.3 } }),
                          { fresh = true, nowait = true })
      H.pump(0.1)
      c:reset()
      srv:expect_stderr("quiet finished", 5)
      assert_serving(srv, s)
    end)

    it("during a JSON answer: the server serves", function()
      local _, c = s:post(s:req("tools/call", block_args(0.4)), { fresh = true, nowait = true })
      H.pump(0.15)
      c:reset()
      wait_block_done(srv)
      assert_serving(srv, s)
    end)

    it("during an SSE answer: the stream stays resumable, the server serves", function()
      local r, c = s:post(s:req("tools/call", block_args(0.4, { log = true })), { fresh = true })
      local first, ev = r:next_message()
      assert.equal("notifications/message", first and first.method, r:describe())
      c:reset()
      wait_block_done(srv)
      assert_serving(srv, s)
      -- Not a cancellation: the rest of the stream is there for a resumption.
      local r2 = s:get{ last_event_id = ev.id }
      local msgs = {}
      for _ = 1, 2 do msgs[#msgs + 1] = assert(r2:next_message(), r2:describe()) end
      assert.equal("after the block", msgs[1].params.data)
      assert.equal("blocked", msgs[2].result.content[1].text)
    end)

    it("of the GET stream: the server serves", function()
      local g, gc = s:get()
      assert.equal(200, g.status)
      s:post(s:req("tools/call", block_args(0.4, { notify = true })), { fresh = true, nowait = true })
      H.pump(0.15)
      gc:reset()
      wait_block_done(srv)
      assert_serving(srv, s)
      -- Another GET stream can be opened.
      local g2 = s:get()
      assert.equal(200, g2.status, g2:describe())
    end)

    it("during a pipelined sequence: the requests after the answer are not served", function()
      local c = HH.connect(srv)
      local text = {}
      for i, msg in ipairs{ s:req("tools/call", block_args(0.4)), s:req("ping"), s:req("ping") } do
        local body = H.cjson.encode(msg)
        local h = s:headers()
        h[#h + 1] = { "Content-Length", tostring(#body) }
        text[i] = HH.request_text{ method = "POST", headers = h, body = body }
      end
      c:send(table.concat(text))
      H.pump(0.15)
      c:reset()
      wait_block_done(srv)
      assert_serving(srv, s)
    end)
  end)

  describe("of a 2026-07-28 request", function()
    it("before the answer: the call is cancelled as a disconnect", function()
      local _, c = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "tools/call",
                                    params = HH.params_rev2026{ name = "quiet", arguments = { seconds = 2 } } },
                             { nowait = true })
      H.pump(0.1)
      c:reset()
      srv:expect_stderr("quiet stopped .*reason=client disconnected", 5)
      assert_serving(srv, HH.initialize(srv, "2025-11-25"))
    end)

    it("during a JSON answer: the server serves", function()
      local _, c = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 2, method = "tools/call",
                                    params = HH.params_rev2026(block_args(0.4)) }, { nowait = true })
      H.pump(0.15)
      c:reset()
      wait_block_done(srv)
      assert_serving(srv, HH.initialize(srv, "2025-11-25"))
    end)

    it("during an SSE answer: the server serves", function()
      local r, c = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 3, method = "tools/call",
                                    params = HH.params_rev2026(block_args(0.4, { log = true }), nil,
                                                        { ["io.modelcontextprotocol/logLevel"] = "info" }) })
      assert.is_table(r:next_message(), r:describe())
      c:reset()
      wait_block_done(srv)
      assert_serving(srv, HH.initialize(srv, "2025-11-25"))
    end)
  end)

  -- Resets at random moments of many exchanges, beside a CPU-busy call (the
  -- loop turns in short slices): every write meets a socket in some state.
  it("at random moments of many exchanges: the server serves", function()
    local seed = tonumber(os.getenv("LUAMCP_SPEC_SEED") or "") or os.time()
    math.randomseed(seed)
    local s = HH.initialize(srv, "2025-11-25")
    local why = "seed " .. seed .. " (LUAMCP_SPEC_SEED)"
    for round = 1, 6 do
      local conns = {}
      s:post(s:req("tools/call", { name = "spin", arguments = { seconds = 0.15 } }),
             { fresh = true, nowait = true })
      for i = 1, 16 do
        local call
        if i % 3 == 0 then
          call = { name = "steps", arguments = { n = 3, delay = math.random() * 0.02 } }
        else
          call = { name = "quiet", arguments = { seconds = math.random() * 0.05 } }
        end
        local msg = s:req("tools/call", call)
        if round % 2 == 0 then
          local _, c = HH.post_rev2026(srv, { jsonrpc = "2.0", id = i, method = "tools/call",
                                        params = HH.params_rev2026(call) }, { nowait = true })
          conns[i] = c
        else
          local _, c = s:post(msg, { fresh = true, nowait = true })
          conns[i] = c
        end
        conns[i].reset_at = H.now() + math.random() * 0.08
      end
      H.run_until(function()
        local left = false
        for _, c in ipairs(conns) do
          if not c.closed then
            if H.now() >= c.reset_at then c:reset() else left = true end
          end
        end
        return not left
      end, 5)
      assert.is_true(srv:alive(), why .. "; round " .. round .. "; stderr:\n" .. srv:stderr_text())
    end
    assert_serving(srv, s)
  end)
end)
