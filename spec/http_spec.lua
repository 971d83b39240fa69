-- The Streamable HTTP transport (revisions 2025-03-26, 2025-06-18, 2025-11-25),
-- over real TCP: `luamcp --http 127.0.0.1:0` and spec/http_helper.lua's raw
-- HTTP/1.1 client. Fixture tools: spec/fixtures/http/http.lua.
local HH = require "spec.http_helper"
local H = HH.H
local cjson = H.cjson

local function start(args, opts)
  opts = opts or {}
  opts.args = args
  return HH.start(opts)
end

local function text_of(resp)
  assert.is_table(resp, "no JSON-RPC response")
  return H.text(resp)
end

-- The server still answers a new client: initialize and ping on a new connection.
local function assert_serves(srv)
  local s = HH.initialize(srv, "2025-11-25")
  local resp, r = s:rpc("ping")
  assert.equal(200, r.status, r:describe())
  assert.same({}, resp.result)
end

-- Messages of an SSE answer that are JSON-RPC responses.
local function responses_in(r)
  local out = {}
  for _, m in ipairs(r:messages()) do
    if m.method == nil then out[#out + 1] = m end
  end
  return out
end

local function log_texts(r)
  local out = {}
  for _, m in ipairs(r:messages()) do
    if m.method == "notifications/message" then out[#out + 1] = m.params.data end
  end
  return out
end

local function has_log(r, text)
  for _, d in ipairs(log_texts(r)) do if d == text then return true end end
  return false
end

-- The "N-M" parts of an event id, as numbers.
local function id_parts(id)
  local a, b = tostring(id):match("^(%d+)%-(%d+)$")
  return tonumber(a), tonumber(b)
end

-- A raw POST on a connection of its own with the given headers (a map) and body.
local function raw_post(srv, headers, body, path)
  local c = HH.connect(srv)
  local h = {
    Accept = HH.ACCEPT, ["Content-Type"] = "application/json",
  }
  for k, v in pairs(headers or {}) do h[k] = v end
  local r = c:exchange{ method = "POST", path = path, headers = h, body = body }
  return r, c
end

local INIT = cjson.encode(HH.init_msg("2025-11-25"))

describe("Streamable HTTP", function()
  after_each(function() HH.cleanup() end)

  describe("POST", function()
    it("initialize is answered 200 application/json with a 32-hex Mcp-Session-Id, new each time", function()
      local srv = start()
      local a = HH.initialize(srv, "2025-11-25")
      local b = HH.initialize(srv, "2025-11-25")
      assert.equal(200, a.init_resp.status)
      assert.truthy(a.init_resp:header("content-type"):find("application/json", 1, true))
      assert.equal("2025-11-25", a.init.protocolVersion)
      assert.is_string(a.id)
      assert.truthy(a.id:match("^%x+$") and #a.id == 32, a.id)
      assert.truthy(b.id:match("^%x+$") and #b.id == 32, b.id)
      assert.are_not.equal(a.id, b.id)
    end)

    it("a notification is accepted with 202 and an empty body", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25", { no_initialized = true })
      local r = s:notify("notifications/initialized"):wait_done()
      assert.equal(202, r.status, r:describe())
      assert.equal("", r.body)
      assert.equal("0", r:header("content-length"))
      assert.is_nil(r:header("content-type"))
    end)

    it("a JSON-RPC response from the client is accepted with 202 and an empty body", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local r = s:post({ jsonrpc = "2.0", id = "srv-1", result = {} }):wait_done()
      assert.equal(202, r.status, r:describe())
      assert.equal("", r.body)
      -- and the session goes on
      local resp = s:rpc("ping")
      assert.same({}, resp.result)
    end)

    it("a quick request (ping, a tool that answers at once) is answered with application/json", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local resp, r = s:rpc("ping")
      assert.equal(200, r.status)
      assert.truthy(r:header("content-type"):find("application/json", 1, true), r:describe())
      assert.same({}, resp.result)
      assert.equal(s.last_id, resp.id)
      resp, r = s:call("echo", { text = "hi" })
      assert.equal(200, r.status)
      assert.truthy(r:header("content-type"):find("application/json", 1, true), r:describe())
      assert.equal("hi", text_of(resp))
    end)

    it("a request that notifies first is answered as SSE: priming event (2025-11-25), events, response last, stream end", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local resp, r = s:call("steps", { n = 2, delay = 0.02 }, { progress = "tok" })
      assert.equal(200, r.status)
      assert.truthy(r:is_sse(), r:describe())
      assert.is_true(r.done and r.terminated, "the stream did not end with the chunked terminator")
      assert.is_nil(r.chunk_error)
      local first = r.events[1]
      assert.truthy(first, "no event")
      assert.truthy(first.id and first.id ~= "", "priming event has no id")
      assert.equal("", first.data)
      assert.truthy(tonumber(first.retry), "priming event has no retry field")
      assert.is_nil(first.msg)
      local kinds = {}
      for i = 2, #r.events do
        local m = r.events[i].msg
        assert.truthy(m, "an event after the priming one carries no message: " .. tostring(r.events[i].data))
        kinds[#kinds + 1] = m.method or "response"
      end
      assert.same({ "notifications/message", "notifications/progress",
                    "notifications/message", "notifications/progress", "response" }, kinds)
      assert.same({ "step 1", "step 2" }, log_texts(r))
      assert.equal("done 2", text_of(resp))
      assert.equal(s.last_id, resp.id)
      assert.equal(r.events[#r.events].msg, resp)
    end)

    it("the connection of an ended SSE answer is kept alive and serves the next request", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local resp, r = s:call("steps", { n = 1 }, { conn = c })
      assert.truthy(r:is_sse(), r:describe())
      assert.is_true(r.terminated)
      assert.is_nil(r:header("connection"))
      local resp2, r2, c2 = s:rpc("ping", nil, { conn = c })
      assert.equal(c, c2)
      assert.equal(200, r2.status)
      assert.same({}, resp2.result)
      assert.equal("done 1", text_of(resp))
      assert.is_false(c.eof)
      assert.equal(2, #c.responses)
    end)

    it("under 2025-06-18 an SSE answer has no priming event", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-06-18")
      assert.equal("2025-06-18", s.version)
      local resp, r = s:call("steps", { n = 1 })
      assert.truthy(r:is_sse(), r:describe())
      assert.is_true(r.terminated)
      assert.truthy(r.events[1].msg, "first event carries no message (a priming event?)")
      assert.equal("notifications/message", r.events[1].msg.method)
      for _, ev in ipairs(r.events) do
        assert.is_nil(ev.retry)
        assert.truthy(ev.id and ev.id ~= "", "an event without id")
      end
      assert.equal("done 1", text_of(resp))
    end)

    it("Content-Type application/json with parameters is accepted", function()
      local srv = start()
      local r = raw_post(srv, { ["Content-Type"] = "application/json; charset=utf-8" }, INIT)
      assert.equal(200, r.status, r:describe())
    end)

    -- media types are case-insensitive: the checks find them in lower case
    -- first and look again in any case only on a miss
    it("Content-Type and Accept are matched in any case", function()
      local srv = start()
      local r = raw_post(srv, { ["Content-Type"] = "Application/JSON",
                                Accept = "Application/Json, TEXT/Event-Stream" }, INIT)
      assert.equal(200, r.status, r:describe())
      r = raw_post(srv, { ["Content-Type"] = "Text/Plain" }, INIT)
      assert.equal(415, r.status, r:describe())
      r = raw_post(srv, { Accept = "Application/Json" }, INIT)
      assert.equal(406, r.status, r:describe())
    end)

    it("a large JSON answer arrives whole", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local resp, r = s:call("big", { bytes = 1500000 })
      assert.equal(200, r.status)
      assert.equal(#r.body, tonumber(r:header("content-length")))
      local text = text_of(resp)
      assert.equal(1500000, #text)
      assert.equal(string.rep("0123456789abcdef", 2), text:sub(1, 32))
    end)

    it("a large SSE event arrives whole", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local resp, r = s:call("big", { bytes = 1500000, sse = true })
      assert.truthy(r:is_sse(), r:describe())
      assert.is_true(r.terminated)
      assert.equal(1500000, #text_of(resp))
    end)

    it("a request split across many small writes is read whole", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local body = cjson.encode(s:req("tools/call", { name = "echo", arguments = { text = "split" } }))
      local h = s:headers()
      h[#h + 1] = { "Content-Length", tostring(#body) }
      local text = HH.request_text{ method = "POST", headers = h, body = body }
      local step = math.ceil(#text / 12)
      for i = 1, #text, step do
        c:send(text:sub(i, i + step - 1))
        H.pump(0.01)
      end
      local r = assert(c:response()):wait_done()
      assert.equal(200, r.status, r:describe())
      assert.equal("split", text_of(r:json()))
    end)

    it("a client that drops the connection while its JSON answer is pending does not cancel the call", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local body = cjson.encode(s:req("tools/call", { name = "quiet", arguments = { seconds = 0.2 } }))
      local h = s:headers()
      h[#h + 1] = { "Content-Length", tostring(#body) }
      c:send(HH.request_text{ method = "POST", headers = h, body = body })
      H.pump(0.05)
      c:drop()
      srv:expect_stderr("quiet finished " .. s.last_id, 3)
      assert.equal(0, srv:count_stderr("cancelled", true), srv:stderr_text())
      assert.same({}, s:rpc("ping").result)
    end)

    it("a chunked request body is read whole", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local body = cjson.encode(s:req("tools/call", { name = "echo", arguments = { text = "chunked" } }))
      local headers = s:headers({ ["Transfer-Encoding"] = "chunked" })
      local a, b = body:sub(1, 10), body:sub(11)
      c:send(HH.request_text{ method = "POST", headers = headers,
        body = ("%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"):format(#a, a, #b, b) })
      local r = assert(c:response()):wait_done()
      assert.equal(200, r.status, r:describe())
      assert.equal("chunked", text_of(r:json()))
    end)
  end)

  describe("event ids and the GET stream", function()
    it("every event carries an id, unique across the session's streams", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g = s:get()
      local a = s:post(s:req("tools/call", { name = "steps", arguments = { n = 3, delay = 0.02 } }), { fresh = true })
      local b = s:post(s:req("tools/call", { name = "steps", arguments = { n = 3, delay = 0.02 } }), { fresh = true })
      local _, bc = s:call("broadcast", { tag = "ids" }, { fresh = true })
      a:wait_done(); b:wait_done()
      assert.truthy(g:next_message(), "nothing on the GET stream")
      local seen, count = {}, 0
      for _, r in ipairs({ g, a, b, bc }) do
        assert.truthy(#r.events > 0)
        for _, ev in ipairs(r.events) do
          assert.truthy(ev.id and ev.id ~= "", "an event without id: " .. tostring(ev.data))
          assert.is_nil(seen[ev.id], "event id used twice: " .. ev.id)
          seen[ev.id] = true
          count = count + 1
        end
      end
      assert.equal(2 + 5 + 5 + 3, count)   -- priming events, logs, responses
    end)

    it("GET opens the standalone stream as text/event-stream", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g, gc = s:get()
      assert.equal(200, g.status, g:describe())
      assert.truthy(g:is_sse(), g:describe())
      assert.is_true(g.chunked)
      local ev = g:next_event(2)
      assert.truthy(ev, "no priming event on the GET stream")
      assert.truthy(ev.id and ev.id ~= "")
      H.pump(0.1)
      assert.is_false(g.done)          -- it stays open
      assert.is_false(gc.eof)
    end)

    it("a second GET while the stream is open is 409", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g = s:get()
      assert.equal(200, g.status)
      local g2 = s:get():wait_done()
      assert.equal(409, g2.status, g2:describe())
      assert.is_false(g.done)
    end)

    it("GET without text/event-stream in Accept is 406", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g = s:get({ headers = { Accept = "application/json" } }):wait_done()
      assert.equal(406, g.status, g:describe())
    end)

    it("a notification tied to no request goes on the GET stream and on no other stream", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g = s:get()
      assert.truthy(g:next_event(2))   -- priming
      local other = s:post(s:req("tools/call", { name = "slow", arguments = { seconds = 0.4 } }), { fresh = true })
      assert.truthy(other:next_message(), "the slow call's stream did not start")
      local resp, r = s:call("broadcast", { tag = "b1" }, { fresh = true })
      assert.equal("broadcast b1", text_of(resp))
      srv:expect_stderr("broadcast b1 sent to 1")
      local m = g:next_message(2)
      assert.truthy(m, "the notification did not arrive on the GET stream")
      assert.equal("notifications/message", m.method)
      assert.equal("broadcast b1", m.params.data)
      other:wait_done()
      assert.is_true(other.terminated)
      assert.truthy(has_log(r, "before b1"))
      assert.is_false(has_log(r, "broadcast b1"), "the notification went on the calling request's stream")
      assert.is_false(has_log(other, "broadcast b1"), "the notification went on another request's stream")
    end)

    it("without a GET stream a notification tied to no request goes on no POST stream", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local resp, r = s:call("broadcast", { tag = "b2" })
      assert.equal("broadcast b2", text_of(resp))
      assert.truthy(has_log(r, "before b2"))
      assert.is_false(has_log(r, "broadcast b2"))
    end)

    it("GET without Mcp-Session-Id is 400", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g = s:get({ headers = { ["Mcp-Session-Id"] = false } }):wait_done()
      assert.equal(400, g.status, g:describe())
    end)

    it("DELETE ends the session's open GET stream", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g, gc = s:get()
      assert.truthy(g:next_event(2))
      assert.equal(200, s:delete().status)
      g:wait_done(2)
      assert.truthy(g.terminated or gc.eof, "the GET stream stayed open")
    end)

    it("notifications sent while the GET stream has no connection arrive when it is opened again", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g, gc = s:get()
      assert.truthy(g:next_event(2))
      gc:close()
      H.pump(0.1)                      -- the server sees the connection go
      s:call("broadcast", { tag = "b3" })
      local g2 = s:get()
      assert.equal(200, g2.status, g2:describe())
      local m = g2:next_message(2)
      assert.truthy(m, "the notification was lost")
      assert.equal("broadcast b3", m.params.data)
    end)
  end)

  describe("resumption", function()
    it("a dropped SSE connection does not cancel the call; GET with Last-Event-ID replays the rest and the response, then ends", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local r, c = s:post(s:req("tools/call", { name = "steps", arguments = { n = 6, delay = 0.08 },
                                                _meta = { progressToken = "p" } }), { fresh = true })
      local id = s.last_id
      assert.truthy(r:is_sse(), r:describe())
      assert.truthy(r:next_event())                 -- priming
      local m1 = r:next_message()
      local m2, ev2 = r:next_message()
      assert.equal("step 1", m1.params.data)
      assert.equal("notifications/progress", m2.method)
      local last = ev2.id
      c:drop()
      H.pump(0.1)
      local g = s:get({ last_event_id = last })
      assert.equal(200, g.status, g:describe())
      assert.truthy(g:is_sse())
      g:wait_done()
      assert.is_true(g.terminated, "the resumed stream did not end")
      local no, seq = id_parts(last)
      for _, ev in ipairs(g.events) do
        local n2, s2 = id_parts(ev.id)
        assert.equal(no, n2, "an event of another stream: " .. tostring(ev.id))
        seq = seq + 1
        assert.equal(seq, s2, "events missing or out of order")
      end
      local logs = log_texts(g)
      assert.same({ "step 2", "step 3", "step 4", "step 5", "step 6" }, logs)
      local resps = responses_in(g)
      assert.equal(1, #resps)
      assert.equal(id, resps[1].id)
      assert.equal("done 6", text_of(resps[1]))
      assert.equal(resps[1], g:messages()[#g:messages()])
      srv:expect_stderr("steps done " .. id)
      assert.equal(0, srv:count_stderr("cancelled", true), srv:stderr_text())
      assert.equal(0, srv:count_stderr("steps stopped", true))
    end)

    it("resuming a stream whose call has finished replays the rest and ends at once", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local r, c = s:post(s:req("tools/call", { name = "steps", arguments = { n = 3, delay = 0.05 } }), { fresh = true })
      local id = s.last_id
      local prime = r:next_event()
      assert.truthy(prime and prime.id)
      c:drop()
      srv:expect_stderr("steps done " .. id)
      local g = s:get({ last_event_id = prime.id }):wait_done(2)
      assert.equal(200, g.status, g:describe())
      assert.is_true(g.terminated)
      assert.same({ "step 1", "step 2", "step 3" }, log_texts(g))
      local resps = responses_in(g)
      assert.equal(1, #resps)
      assert.equal("done 3", text_of(resps[1]))
    end)

    it("GET with a Last-Event-ID of the standalone stream resumes it after that event", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g, gc = s:get()
      local prime = g:next_event(2)
      assert.truthy(prime and prime.id)
      s:call("broadcast", { tag = "r1" })
      local m1, ev1 = g:next_message(2)
      assert.equal("broadcast r1", m1 and m1.params.data)
      gc:drop()
      H.pump(0.05)
      s:call("broadcast", { tag = "r2" })
      s:call("broadcast", { tag = "r3" })
      local g2 = s:get({ last_event_id = ev1.id })
      assert.equal(200, g2.status, g2:describe())
      local a, b = g2:next_message(2), g2:next_message(2)
      assert.equal("broadcast r2", a and a.params.data)
      assert.equal("broadcast r3", b and b.params.data)
      for _, ev in ipairs(g2.events) do assert.are_not.equal(ev1.id, ev.id) end
      H.pump(0.05)
      assert.is_false(g2.done)         -- the standalone stream stays open
    end)

    it("resuming a stream that still has its connection is 409", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local r = s:post(s:req("tools/call", { name = "slow", arguments = { seconds = 0.3 } }), { fresh = true })
      local ev = r:next_event()
      assert.truthy(ev and ev.id)
      local g = s:get({ last_event_id = ev.id }):wait_done()
      assert.equal(409, g.status, g:describe())
      r:wait_done()
      assert.equal(1, #responses_in(r))
    end)

    it("resuming a stream that has sent no event yet (Last-Event-ID N-0) gives a well-formed SSE answer or 404", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local body = cjson.encode(s:req("tools/call", { name = "quiet", arguments = { seconds = 0.3 } }))
      local h = s:headers()
      h[#h + 1] = { "Content-Length", tostring(#body) }
      c:send(HH.request_text{ method = "POST", headers = h, body = body })
      H.pump(0.05)
      c:drop()                         -- before its answer: the stream has no event id yet
      H.pump(0.05)
      -- streams of this session: 1 initialize, 2 initialized, 3 this call
      local g, gc = s:get({ last_event_id = "3-0" })
      if g.status == 404 then return end
      assert.equal(200, g.status, g:describe())
      assert.truthy(g:is_sse(), g:describe())
      g:wait_done(3)
      assert.is_nil(g.chunk_error, "the stream is corrupt; bytes received:\n" .. gc.raw)
      assert.is_true(g.terminated, "the stream did not end; bytes received:\n" .. gc.raw)
      local resps = responses_in(g)
      assert.equal(1, #resps, gc.raw)
      assert.equal("quiet 0.3", text_of(resps[1]))
    end)

    it("a stream longer than the replay buffer resumes to its response, events in order", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local r, c = s:post(s:req("tools/call", { name = "steps", arguments = { n = 300 },
                                                _meta = { progressToken = 1 } }), { fresh = true })
      local id = s.last_id
      local prime = r:next_event()
      assert.truthy(prime and prime.id)
      c:drop()
      srv:expect_stderr("steps done " .. id)
      local g = s:get({ last_event_id = prime.id }):wait_done()
      assert.equal(200, g.status, g:describe())
      assert.is_true(g.terminated)
      assert.truthy(#g.events > 0 and #g.events <= 601)
      local prev = select(2, id_parts(prime.id))
      for _, ev in ipairs(g.events) do
        local _, seq = id_parts(ev.id)
        assert.truthy(seq > prev, "events out of order")
        prev = seq
      end
      local resps = responses_in(g)
      assert.equal(1, #resps)
      assert.equal("done 300", text_of(resps[1]))
      assert.equal(resps[1], g.events[#g.events].msg)
    end)

    it("old ended streams are forgotten (404) while the latest still resume", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local firsts = {}
      for i = 1, 20 do
        local _, r = s:call("steps", { n = 1 })
        assert.is_true(r.terminated)
        firsts[i] = r.events[1].id
      end
      local old = s:get({ last_event_id = firsts[1] }):wait_done()
      assert.equal(404, old.status, old:describe())
      local new = s:get({ last_event_id = firsts[20] }):wait_done()
      assert.equal(200, new.status, new:describe())
      assert.is_true(new.terminated)
      assert.equal("done 1", text_of(responses_in(new)[1]))
    end)

    it("an unknown Last-Event-ID is 404", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g = s:get({ last_event_id = "999-1" }):wait_done()
      assert.equal(404, g.status, g:describe())
    end)

    it("a malformed Last-Event-ID is 400", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g = s:get({ last_event_id = "not-an-id" }):wait_done()
      assert.equal(400, g.status, g:describe())
    end)
  end)

  describe("sessions", function()
    it("a POST without Mcp-Session-Id that is not initialize is 400", function()
      local srv = start()
      HH.initialize(srv, "2025-11-25")
      local r = raw_post(srv, { ["MCP-Protocol-Version"] = "2025-11-25" },
                         '{"jsonrpc":"2.0","id":1,"method":"ping"}')
      assert.equal(400, r.status, r:describe())
    end)

    it("an unknown Mcp-Session-Id is 404", function()
      local srv = start()
      HH.initialize(srv, "2025-11-25")
      local r = raw_post(srv, { ["Mcp-Session-Id"] = string.rep("0", 32), ["MCP-Protocol-Version"] = "2025-11-25" },
                         '{"jsonrpc":"2.0","id":1,"method":"ping"}')
      assert.equal(404, r.status, r:describe())
    end)

    it("DELETE ends the session: 200, then its requests are 404", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local other = HH.initialize(srv, "2025-11-25")
      local d = s:delete()
      assert.equal(200, d.status, d:describe())
      local resp, r = s:rpc("ping")
      assert.equal(404, r.status, r:describe())
      assert.equal(404, s:get():wait_done().status)
      assert.equal(404, s:delete().status)
      -- the other session is untouched
      local resp2 = other:rpc("ping")
      assert.same({}, resp2.result)
    end)

    it("DELETE cancels the session's calls in flight with reason \"session ended\"", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local r = s:post(s:req("tools/call", { name = "slow", arguments = { seconds = 5 } }), { fresh = true })
      local id = s.last_id
      assert.truthy(r:next_message(), "the call did not start")
      local d = s:delete()
      assert.equal(200, d.status, d:describe())
      srv:expect_stderr("slow stopped " .. id .. " reason=session ended", 3)
      srv:expect_stderr("cancelled: session ended", 3)
      srv:expect_stderr("closed slow " .. id, 3)
      r:wait_done(3)
      assert.truthy(r.terminated or r.conn.eof, "the call's stream did not end")
      assert.equal(0, #responses_in(r), "a response was sent for a cancelled call")
    end)

    it("MCP-Protocol-Version missing on a 2025-06-18 or later session is 400", function()
      local srv = start()
      for _, v in ipairs({ "2025-06-18", "2025-11-25" }) do
        local s = HH.initialize(srv, v)
        local _, r = s:rpc("ping", nil, { headers = { ["MCP-Protocol-Version"] = false } })
        assert.equal(400, r.status, v .. ": " .. r:describe())
      end
    end)

    it("an unsupported MCP-Protocol-Version is 400", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local _, r = s:rpc("ping", nil, { headers = { ["MCP-Protocol-Version"] = "1999-01-01" } })
      assert.equal(400, r.status, r:describe())
    end)

    it("MCP-Protocol-Version missing on a 2025-03-26 session is accepted", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-03-26")
      assert.equal("2025-03-26", s.version)
      local resp, r = s:rpc("ping")
      assert.is_nil(r.headers["mcp-protocol-version"])
      assert.equal(200, r.status, r:describe())
      assert.same({}, resp.result)
    end)

    it("a failed initialize starts no session", function()
      local srv = start()
      local r = raw_post(srv, {}, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
      assert.is_nil(r:header("mcp-session-id"), r:describe())
      local body = r:json()
      assert.truthy(body.error, r:describe())
    end)
  end)

  describe("cancellation", function()
    it("notifications/cancelled in another POST stops the handler; the cancelled stream ends without a response", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local r = s:post(s:req("tools/call", { name = "slow", arguments = { seconds = 5 } }), { fresh = true })
      local id = s.last_id
      assert.truthy(r:next_message(), "the call did not start")
      local n = s:notify("notifications/cancelled", { requestId = id, reason = "user" }):wait_done()
      assert.equal(202, n.status, n:describe())
      srv:expect_stderr("slow stopped " .. id .. " reason=user", 3)
      r:wait_done(3)
      assert.is_true(r.terminated, "the cancelled request's stream did not end")
      assert.equal(0, #responses_in(r), "a response was sent for a cancelled request")
      assert.is_false(r.conn.eof)
    end)
  end)

  describe("cancellation of a request that sent nothing", function()
    it("its POST is answered with a stream that ends without a response, and the connection goes on", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local body = cjson.encode(s:req("tools/call", { name = "quiet", arguments = { seconds = 3 } }))
      local h = s:headers()
      h[#h + 1] = { "Content-Length", tostring(#body) }
      c:send(HH.request_text{ method = "POST", headers = h, body = body })
      local id = s.last_id
      H.pump(0.1)
      local n = s:notify("notifications/cancelled", { requestId = id }):wait_done()
      assert.equal(202, n.status)
      local r = c:response(2)
      assert.truthy(r, "the cancelled request's POST got no answer")
      r:wait_done(2)
      assert.equal(200, r.status, r:describe())
      assert.is_true(r.done, "its answer did not end")
      assert.equal(0, #responses_in(r), r.body)
      assert.same({}, s:rpc("ping", nil, { conn = c }).result)
      srv:expect_stderr("quiet stopped " .. id, 2)
    end)
  end)

  describe("batches", function()
    it("under 2025-03-26 a POSTed batch is answered with one JSON array", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-03-26")
      local r = s:post('[{"jsonrpc":"2.0","id":1,"method":"ping"},' ..
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]')
      r:wait_done()
      assert.equal(200, r.status, r:describe())
      assert.truthy(r:header("content-type"):find("application/json", 1, true))
      local arr = r:json()
      assert.equal(2, #arr, r.body)
      local by_id = {}
      for _, m in ipairs(arr) do by_id[m.id] = m end
      assert.same({}, by_id[1].result)
      assert.equal("b", text_of(by_id[2]))
    end)

    it("under 2025-03-26 a batch whose call notifies first is an SSE stream with the array last", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-03-26")
      local r = s:post('[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"steps","arguments":{"n":2}}},' ..
                       '{"jsonrpc":"2.0","id":2,"method":"ping"}]'):wait_done()
      assert.equal(200, r.status, r:describe())
      assert.truthy(r:is_sse(), r:describe())
      assert.is_true(r.terminated)
      assert.same({ "step 1", "step 2" }, log_texts(r))
      local last = r.events[#r.events].msg
      assert.equal(2, #last, r.body)
      local by_id = {}
      for _, m in ipairs(last) do by_id[m.id] = m end
      assert.equal("done 2", text_of(by_id[1]))
      assert.same({}, by_id[2].result)
    end)

    it("under 2025-03-26 a batch of notifications only is accepted with 202", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-03-26")
      local r = s:post('[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}]')
      r:wait_done()
      assert.equal(202, r.status, r:describe())
      assert.equal("", r.body)
    end)
  end)

  describe("HTTP checks", function()
    it("POST with an Accept that lacks text/event-stream is 406", function()
      local srv = start()
      local r = raw_post(srv, { Accept = "application/json" }, INIT)
      assert.equal(406, r.status, r:describe())
    end)

    it("POST with a Content-Type that is not JSON is 415", function()
      local srv = start()
      local r = raw_post(srv, { ["Content-Type"] = "text/plain" }, INIT)
      assert.equal(415, r.status, r:describe())
    end)

    it("another path is 404", function()
      local srv = start()
      local r = raw_post(srv, {}, INIT, "/other")
      assert.equal(404, r.status, r:describe())
    end)

    it("PUT is 405 with Allow", function()
      local srv = start()
      local c = HH.connect(srv)
      local r = c:exchange{ method = "PUT", body = INIT,
                            headers = { ["Content-Type"] = "application/json", Accept = HH.ACCEPT } }
      assert.equal(405, r.status, r:describe())
      local allow = r:header("allow")
      assert.truthy(allow, r:describe())
      for _, m in ipairs({ "GET", "POST", "DELETE" }) do assert.truthy(allow:find(m, 1, true), allow) end
    end)

    it("Origin http://evil.example is 403", function()
      local srv = start()
      local r = raw_post(srv, { Origin = "http://evil.example" }, INIT)
      assert.equal(403, r.status, r:describe())
      assert.is_nil(r:header("mcp-session-id"))
    end)

    it("Origin http://localhost:1234 is allowed", function()
      local srv = start()
      local r = raw_post(srv, { Origin = "http://localhost:1234" }, INIT)
      assert.equal(200, r.status, r:describe())
      assert.truthy(r:header("mcp-session-id"))
    end)

    it("--allow-origin https://app.example allows that origin (and no other)", function()
      local srv = start({ "--allow-origin", "https://app.example" })
      local r = raw_post(srv, { Origin = "https://app.example" }, INIT)
      assert.equal(200, r.status, r:describe())
      local r2 = raw_post(srv, { Origin = "https://app.example.evil.example" }, INIT)
      assert.equal(403, r2.status, r2:describe())
      local r3 = raw_post(srv, { Origin = "http://evil.example" }, INIT)
      assert.equal(403, r3.status, r3:describe())
    end)

    it("Host evil.example is 421", function()
      local srv = start()
      local r = raw_post(srv, { Host = "evil.example" }, INIT)
      assert.equal(421, r.status, r:describe())
      local r2 = raw_post(srv, { Host = "localhost:" .. srv.port }, INIT)
      assert.equal(200, r2.status, r2:describe())
    end)

    it("--token: no or a wrong Authorization is 401 with WWW-Authenticate; Bearer TOKEN is served", function()
      local srv = start({ "--token", "s3cret" })
      local r = raw_post(srv, {}, INIT)
      assert.equal(401, r.status, r:describe())
      assert.truthy((r:header("www-authenticate") or ""):find("^Bearer"), r:describe())
      for _, bad in ipairs({ "Bearer wrong", "Bearer s3cretX", "Bearer s3cre", "Basic czNjcmV0", "s3cret" }) do
        local rb = raw_post(srv, { Authorization = bad }, INIT)
        assert.equal(401, rb.status, bad .. ": " .. rb:describe())
        assert.truthy(rb:header("www-authenticate"))
      end
      local s = HH.initialize(srv, "2025-11-25", { token = "s3cret" })
      local resp = s:rpc("ping")
      assert.same({}, resp.result)
      -- every request of the session needs it
      local _, r2 = s:rpc("ping", nil, { headers = { Authorization = false } })
      assert.equal(401, r2.status)
    end)

    it("LUAMCP_TOKEN sets the token", function()
      local srv = start(nil, { env = { LUAMCP_TOKEN = "envtok" } })
      assert.equal(401, raw_post(srv, {}, INIT).status)
      local s = HH.initialize(srv, "2025-11-25", { token = "envtok" })
      assert.same({}, s:rpc("ping").result)
    end)
  end)

  describe("limits", function()
    it("a body over --max-body is 413 and the server goes on", function()
      local srv = start({ "--max-body", "2048" })
      local big = cjson.encode({ jsonrpc = "2.0", id = 1, method = "ping", params = { pad = string.rep("x", 3000) } })
      local r, c = raw_post(srv, {}, big)
      assert.equal(413, r.status, r:describe())
      assert.truthy(c:wait_eof(2), "the connection stayed open")
      assert_serves(srv)
    end)

    it("headers over 16 KiB are 431 and the server goes on", function()
      local srv = start()
      local r, c = raw_post(srv, { ["X-Filler"] = string.rep("a", 17 * 1024) }, INIT)
      assert.equal(431, r.status, r:describe())
      assert.truthy(c:wait_eof(2), "the connection stayed open")
      assert_serves(srv)
    end)

    it("at --max-connections the oldest idle connection gives its slot up to a new one", function()
      local srv = start({ "--max-connections", "2" })
      local a = HH.connect(srv)
      H.pump(0.05)
      local b = HH.connect(srv)
      H.pump(0.05)
      local s = HH.initialize(srv, "2025-11-25")   -- a third connection: served
      assert.truthy(a:wait_eof(2), "the oldest idle connection was not closed")
      assert.equal("", a.raw)
      assert.is_false(b.eof)
      local resp, r = s:rpc("ping")
      assert.equal(200, r.status, r:describe())
      assert.same({}, resp.result)
      b:close()
    end)

    it("more connections than --max-connections, all busy, get 503 and the server goes on", function()
      local srv = start({ "--max-connections", "2" })
      local s = HH.initialize(srv, "2025-11-25")
      -- two connections serving something: a call in progress and an SSE stream
      local _, busy = s:post(s:req("tools/call", { name = "quiet", arguments = { seconds = 30 } }),
                             { fresh = true, nowait = true })
      local stream, sc = s:get()
      assert.equal(200, stream.status, stream:describe())
      H.run_until(function() return s.conn.eof end, 2)    -- the idle one made room for the stream
      assert.truthy(s.conn.eof, "the idle session connection was kept")
      local c = HH.connect(srv)
      local r = c:response(2)
      assert.truthy(r, "no answer on the connection over the limit")
      r:wait_done(2)
      assert.equal(503, r.status, r:describe())
      assert.truthy(c:wait_eof(2))
      assert.is_false(busy.eof)
      assert.is_false(sc.eof)
      busy:close(); sc:close()
      H.pump(0.05)
      assert_serves(srv)
    end)

    it("--idle-timeout 0.3 closes an idle keep-alive connection", function()
      local srv = start({ "--idle-timeout", "0.3" })
      local s = HH.initialize(srv, "2025-11-25")
      local c = s.conn
      local t0 = H.now()
      local resp = s:rpc("ping")
      assert.same({}, resp.result)
      assert.is_false(c.eof)
      assert.truthy(c:wait_eof(3), "the idle connection was not closed")
      local idle = c.eof_at - t0
      assert.truthy(idle >= 0.25 and idle < 2, ("closed after %.2f s"):format(idle))
      assert_serves(srv)
    end)

    -- the connection's deadline moves with each request; its timer is not
    -- restarted for each, so it fires at the first deadline and must re-arm
    it("a keep-alive connection in use for longer than --idle-timeout stays open", function()
      local srv = start({ "--idle-timeout", "0.3" })
      local s = HH.initialize(srv, "2025-11-25")
      local c = s.conn
      local t0, n = H.now(), 0
      while H.now() - t0 < 1.2 do
        local resp = s:rpc("ping")
        assert.same({}, resp.result)
        assert.is_false(c.eof, "closed while in use")
        n = n + 1
      end
      assert.truthy(n > 1)
      assert.truthy(c:wait_eof(3), "the idle connection was not closed")
      assert_serves(srv)
    end)

    it("an idle keep-alive connection is closed without an unsolicited answer", function()
      local srv = start({ "--idle-timeout", "0.3" })
      local s = HH.initialize(srv, "2025-11-25")
      local c = s.conn
      s:rpc("ping")
      local n = #c.responses
      assert.truthy(c:wait_eof(3), "the idle connection was not closed")
      local extra = c.responses[n + 1]
      assert.is_nil(extra, extra and ("an answer to no request: " .. extra:describe()))
    end)

    it("a body that stops coming is 408 after --idle-timeout", function()
      local srv = start({ "--idle-timeout", "0.3" })
      local c = HH.connect(srv)
      c:send("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" ..
             "Accept: " .. HH.ACCEPT .. "\r\nContent-Length: 100\r\n\r\n{")
      local r = c:response(3)
      assert.truthy(r, "no answer")
      assert.equal(408, r.status)
      assert.truthy(c:wait_eof(2))
      assert_serves(srv)
    end)

    it("headers that trickle in are cut off with 408 after 10 s", function()
      local srv = start({ "--idle-timeout", "2" })
      local c = HH.connect(srv)
      local t0 = H.now()
      c:send("POST /mcp HTTP/1.1\r\n")
      -- a header line every 0.5 s: each read is well inside --idle-timeout
      for i = 1, 23 do
        if H.run_until(function() return c.eof or #c.responses > 0 end, 0.5) then break end
        c:send("X-Slow-" .. i .. ": y\r\n")
      end
      local r = c.responses[1]
      assert.truthy(r, ("no 408 after %.1f s of trickling headers"):format(H.now() - t0))
      assert.equal(408, r.status)
      assert.truthy(H.now() - t0 >= 9.5)
    end)

    it("--idle-timeout does not close an open SSE stream", function()
      local srv = start({ "--idle-timeout", "0.3" })
      local s = HH.initialize(srv, "2025-11-25")
      local g, gc = s:get()
      assert.truthy(g:next_event(2))
      H.pump(0.7)
      assert.is_false(gc.eof, "the GET stream was closed as idle")
      s:call("broadcast", { tag = "late" })
      local m = g:next_message(2)
      assert.truthy(m)
      assert.equal("broadcast late", m.params.data)
    end)

    it("pipelined requests in one write are answered in order", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local function post(msg)
        local body = cjson.encode(msg)
        local h = s:headers()
        h[#h + 1] = { "Content-Length", tostring(#body) }
        return HH.request_text{ method = "POST", headers = h, body = body }
      end
      c:send(post({ jsonrpc = "2.0", id = 1, method = "ping" }) ..
             post({ jsonrpc = "2.0", id = 2, method = "tools/call",
                    params = { name = "steps", arguments = { n = 2, delay = 0.02 } } }) ..
             post({ jsonrpc = "2.0", id = 3, method = "tools/call",
                    params = { name = "echo", arguments = { text = "third" } } }) ..
             post({ jsonrpc = "2.0", method = "notifications/initialized" }))
      local r1 = assert(c:response()); r1:wait_done()
      local r2 = assert(c:response()); r2:wait_done()
      local r3 = assert(c:response()); r3:wait_done()
      local r4 = assert(c:response()); r4:wait_done()
      assert.equal(1, r1:json().id)
      assert.truthy(r2:is_sse(), r2:describe())
      assert.is_true(r2.terminated)
      assert.equal(2, responses_in(r2)[1].id)
      assert.equal("done 2", text_of(responses_in(r2)[1]))
      assert.equal(3, r3:json().id)
      assert.equal("third", text_of(r3:json()))
      assert.equal(202, r4.status)
      assert.is_false(c.eof)
    end)

    it("garbage that is not HTTP is 400 and the connection is closed", function()
      local srv = start()
      local c = HH.connect(srv)
      c:send("\1\2\3 this is not HTTP \255\254\r\n\r\n")
      local r = c:response(2)
      assert.truthy(r, "no answer to garbage")
      r:wait_done(2)
      assert.equal(400, r.status, r:describe())
      assert.truthy(c:wait_eof(2), "the connection stayed open")
      assert_serves(srv)
    end)

    it("a call that answers later than --idle-timeout still gets its answer", function()
      local srv = start({ "--idle-timeout", "0.3" })
      local s = HH.initialize(srv, "2025-11-25")
      local resp, r = s:call("quiet", { seconds = 0.6 })
      assert.equal(200, r.status, r:describe())
      assert.equal("quiet 0.6", text_of(resp))
    end)

    it("Connection: close is honoured", function()
      local srv = start()
      local r, c = raw_post(srv, { Connection = "close" }, INIT)
      assert.equal(200, r.status, r:describe())
      assert.truthy(c:wait_eof(2), "the connection stayed open")
    end)
  end)

  describe("HTTP/1.1 conformance", function()
    it("an HTTP/1.1 request without Host is 400 (RFC 9112 3.2)", function()
      local srv = start()
      local c = HH.connect(srv)
      c:send("POST /mcp HTTP/1.1\r\nAccept: " .. HH.ACCEPT ..
             "\r\nContent-Type: application/json\r\nContent-Length: " .. #INIT .. "\r\n\r\n" .. INIT)
      local r = assert(c:response(2), "no answer"):wait_done()
      assert.equal(400, r.status, r:describe())
    end)

    it("an HTTP/1.0 client gets its SSE answer without chunked encoding, ended by close (RFC 9112 6.1)", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local body = cjson.encode(s:req("tools/call", { name = "steps", arguments = { n = 1 } }))
      local h = s:headers()
      h[#h + 1] = { "Content-Length", tostring(#body) }
      c:send((HH.request_text{ method = "POST", headers = h, body = body }:gsub("HTTP/1%.1", "HTTP/1.0", 1)))
      local r = assert(c:response(2), "no answer")
      assert.truthy(c:wait_eof(2), "the connection stayed open")
      assert.truthy(r:is_sse(), r:describe())
      assert.is_nil(r:header("transfer-encoding"), "Transfer-Encoding sent to an HTTP/1.0 client")
      local resps = responses_in(r)
      assert.equal(1, #resps, r.body)
      assert.equal("done 1", text_of(resps[1]))
    end)

    it("Expect: 100-continue gets 100 Continue before the body is sent (RFC 9110 10.1.1)", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local c = HH.connect(srv)
      local body = cjson.encode(s:req("ping"))
      local h = s:headers({ Expect = "100-continue" })
      h[#h + 1] = { "Content-Length", tostring(#body) }
      c:send(HH.request_text{ method = "POST", headers = h })
      local r = c:response(1)
      c:send(body)
      local final = r and r.status == 100 and c:response(2) or r
      assert.truthy(r, "no 100 Continue within 1 s")
      assert.equal(100, r.status, r:describe())
      assert.truthy(final, "no final answer")
      final:wait_done()
      assert.equal(200, final.status)
      assert.same({}, final:json().result)
    end)
  end)

  describe("shutdown", function()
    it("SIGTERM with an open GET stream and an idle connection exits 0", function()
      local srv = start()
      local s = HH.initialize(srv, "2025-11-25")
      local g, gc = s:get()
      assert.truthy(g:next_event(2))
      local idle = HH.connect(srv)
      H.pump(0.05)
      srv:kill("sigterm")
      local code = srv:wait_exit(3)
      assert.equal(0, code, srv:stderr_text())
      assert.truthy(gc:wait_eof(1))
      assert.truthy(idle:wait_eof(1))
    end)

    it("SIGTERM with an SSE call in flight exits 0 and the handler's <close> ran", function()
      local srv = start{ "--drain", "0" }             -- no drain: shutdown cancels the call (ops_spec drains)
      local s = HH.initialize(srv, "2025-11-25")
      local r = s:post(s:req("tools/call", { name = "slow", arguments = { seconds = 5 } }), { fresh = true })
      local id = s.last_id
      assert.truthy(r:next_message(), "the call did not start")
      local g = s:get()
      assert.equal(200, g.status)
      srv:kill("sigterm")
      local code, sig = srv:wait_exit(5)
      assert.equal(0, code, srv:stderr_text())
      assert.equal(0, sig)
      assert.truthy(srv:wait_stderr("closed slow " .. id, 1), srv:stderr_text())
      assert.truthy(r.conn:wait_eof(2), "the call's connection stayed open")
      assert.equal(0, #responses_in(r))
    end)
  end)
end)
