-- The official TypeScript SDK v2 client (@modelcontextprotocol/client 2.x, on
-- Node 22) against luamcp over Streamable HTTP, at both revisions it speaks:
--
-- * 2025-11-25, its default (no `versionNegotiation` option): initialize, a
--   session, and an aborted call cancelled with notifications/cancelled;
-- * 2026-07-28, with `versionNegotiation: {mode: {pin: "2026-07-28"}}` (or
--   `mode: "auto"`, which probes with server/discover): no initialize, no
--   session, per-request `_meta` and headers, and an aborted call cancelled by
--   closing its HTTP stream, which luamcp takes for a cancel with reason
--   "client disconnected".
--
-- The client side is the small ESM scripts in spec/sdk2/; each prints a JSON
-- report (what it got, every message and HTTP request) that the specs below
-- check, together with the server's stderr (the fixture spec/fixtures/sdk
-- says there when its handler stops, and why).
--
-- Node 22 and the client come from npm into a cache outside the repository
-- (test/node-env.sh, through spec/node_helper.lua; LUAMCP_NODE_CACHE). If they
-- cannot be installed these specs fail; LUAMCP_SKIP_NODE=1 turns them into
-- pending ones (offline use).
local H = require "spec.helper"
local N = require "spec.node_helper"
local cjson = H.cjson

local PLUGINS = "spec/fixtures/sdk"

if N.skipped then
  describe("the TypeScript SDK v2 client", function()
    pending("skipped: LUAMCP_SKIP_NODE=1 (needs Node 22 and @modelcontextprotocol/client from npm)")
  end)
  return
end

local ENV
local SERVER   -- the running server, ended by stop() or after_each

-- Starts a server on a free port, runs spec/sdk2/SCRIPT against it with
-- SDK_REVISION = revision; returns the report and the server.
local function over_http(script, revision)
  local srv = H.start{ plugins = { PLUGINS }, args = { "--http", "127.0.0.1:0" } }
  SERVER = srv
  local line = srv:wait_stderr("listening on http://127%.0%.0%.1:%d+/mcp")
  if not line then error("the server did not listen; stderr:\n" .. srv:stderr_text(), 2) end
  local url = line:match("(http://127%.0%.0%.1:%d+/mcp)")
  local rep = N.run(ENV, script, nil, { SDK_URL = url, SDK_REVISION = revision })
  return rep, srv
end

-- SIGTERM: the server exits 0, with no sanitizer report on its stderr.
local function stop(srv)
  srv:kill("sigterm")
  local code = srv:wait_exit(10)
  assert.are.equal(0, code, "the server's exit status; stderr:\n" .. srv:stderr_text())
  for _, l in ipairs(srv.stderr) do
    assert.is_nil(l:find("Sanitizer", 1, true) or l:find("runtime error:", 1, true),
                  "sanitizer report:\n" .. srv:stderr_text())
  end
end

local function find_event(rep, pred)
  for _, e in ipairs(rep.events) do if e.msg and pred(e.msg, e) then return e end end
end

local function find_mark(rep, what)
  for _, e in ipairs(rep.events) do if e.dir == "mark" and e.what == what then return e end end
end

local function dump(rep, srv)
  return "\nwire:\n" .. cjson.encode(rep.events) .. "\nhttp:\n" .. cjson.encode(rep.http) ..
         "\nserver stderr:\n" .. (srv and srv:stderr_text() or "")
end

local function tool_names(rep)
  local names = {}
  for _, t in ipairs(rep.tools) do names[#names + 1] = t.name end
  table.sort(names)
  return names
end

-- What every revision shares: the tools, the echo call, the unknown tool.
local function check_list_call(rep, srv)
  assert.are.same({ "echo", "point", "steps", "wait" }, tool_names(rep), dump(rep, srv))
  for _, t in ipairs(rep.tools) do
    if t.name == "echo" then
      assert.are.equal("Echo", t.title)
      assert.are.same({ "text" }, t.inputSchema.required)
    end
  end
  assert.are.same({ { type = "text", text = "echo: hi from the sdk v2" } }, rep.result.content)
  assert.is_not_true(rep.result.isError)
  assert.are.equal(-32602, rep.unknown.error and rep.unknown.error.code,
                   "an unknown tool: " .. cjson.encode(rep.unknown))
  assert.are.same({}, rep.errors, dump(rep, srv))
end

-- A 2026-07-28 exchange: no initialize, server/discover first, every POST
-- with MCP-Protocol-Version: 2026-07-28 and Mcp-Method, none with a session.
local function check_stateless_wire(rep, srv)
  assert.are.equal("modern", rep.era, dump(rep, srv))
  assert.are.equal("2026-07-28", rep.protocolVersion)
  assert.is_nil(find_event(rep, function(m, e) return e.dir == "out" and m.method == "initialize" end),
                "the client sent initialize" .. dump(rep, srv))
  local first = find_event(rep, function(_, e) return e.dir == "out" end)
  assert.are.equal("server/discover", first.msg.method)
  assert.is_true(#rep.http > 0)
  for _, h in ipairs(rep.http) do
    assert.are.equal("POST", h.method, dump(rep, srv))
    assert.are.equal("2026-07-28", h.protocolVersion, dump(rep, srv))
    assert.is_truthy(h.mcpMethod, dump(rep, srv))
    assert.are.equal(cjson.null, h.sessionId, "a session id on a 2026-07-28 request" .. dump(rep, srv))
  end
  for _, e in ipairs(rep.events) do
    if e.dir == "out" and e.msg.id ~= nil and e.msg.method then
      assert.are.equal("2026-07-28", e.msg.params._meta["io.modelcontextprotocol/protocolVersion"])
    end
  end
  assert.are.equal(0, srv:count_stderr("session initialized", true), "a session was initialized" .. dump(rep, srv))
end

-- After the abort of the `wait` call: the handler said it stopped with
-- `reason`, and nothing for the call (no response, no progress) came after
-- the abort. The client still works.
local function check_aborted(rep, srv, reason)
  local call = assert(find_event(rep, function(m, e)
    return e.dir == "out" and m.method == "tools/call" and m.params.name == "wait"
  end), "no tools/call wait was sent" .. dump(rep, srv))
  local id = call.msg.id
  local token = call.msg.params._meta and call.msg.params._meta.progressToken
  assert.is_not_nil(token, "the client sent no progressToken")
  local abort = assert(find_mark(rep, "abort"), "the script never aborted" .. dump(rep, srv))
  assert.are.equal(1, #rep.progress)

  -- the call rejected with the abort's reason; it did not resolve
  assert.is_table(rep.error, "the aborted call did not reject" .. dump(rep, srv))
  assert.matches("spec abort", rep.error.message, 1, true)
  assert.is_true(rep.result == nil or rep.result == cjson.null, "the aborted call resolved" .. dump(rep, srv))

  -- the handler stopped, with the reason the server was given
  srv:expect_stderr("fixture: wait " .. H.id_text(id) .. " stopped reason=" .. reason, nil, { plain = true })

  -- nothing for the call after the abort, however long the handler took to stop
  for _, e in ipairs(rep.events) do
    if e.dir == "in" and e.seq > abort.seq then
      assert.is_false(e.msg.id == id and e.msg.method == nil,
                      "a response for the aborted call: " .. cjson.encode(e.msg) .. dump(rep, srv))
      assert.is_false(e.msg.method == "notifications/progress" and e.msg.params.progressToken == token,
                      "progress after the abort: " .. cjson.encode(e.msg) .. dump(rep, srv))
    end
  end
  assert.are.same({}, rep.errors, "the client reported errors" .. dump(rep, srv))
  assert.are.equal("echo: still there", rep.after.content[1].text)
  return call, abort
end

describe("the TypeScript SDK v2 client over Streamable HTTP", function()
  setup(function() ENV = N.prepare("sdk2") end)
  teardown(function() N.remove(ENV) end)
  after_each(function()
    -- the HTTP transport ignores stdin: end a server a failed spec left running by SIGTERM
    if SERVER and SERVER:alive() then SERVER:kill("sigterm"); SERVER:wait_exit(10) end
    SERVER = nil
    H.cleanup()
  end)

  describe("by default (2025-11-25, a session)", function()
    it("initializes, lists the tools and calls one", function()
      local rep, srv = over_http("list_call.mjs", "default")
      assert.are.equal("legacy", rep.era, dump(rep, srv))
      assert.are.equal("2025-11-25", rep.protocolVersion)
      assert.are.equal("luamcp", rep.server.name)
      local init = find_event(rep, function(_, e) return e.dir == "out" end)
      assert.are.equal("initialize", init.msg.method)
      assert.are.equal("2025-11-25", init.msg.params.protocolVersion)
      -- after initialize, every request carries the session and the version
      for i, h in ipairs(rep.http) do
        if i > 1 then
          assert.are.equal("2025-11-25", h.protocolVersion, dump(rep, srv))
          assert.matches("^%x+$", h.sessionId, dump(rep, srv))
        end
      end
      check_list_call(rep, srv)
      srv:expect_stderr("session initialized: protocol 2025-11-25", nil, { plain = true })
      stop(srv)
    end)

    it("aborting a call through an AbortSignal sends notifications/cancelled: the handler stops, " ..
       "nothing more comes for the call", function()
      local rep, srv = over_http("cancel.mjs", "default")
      assert.are.equal("2025-11-25", rep.protocolVersion, dump(rep, srv))
      local call, abort = check_aborted(rep, srv, "spec abort")
      local cancel = find_event(rep, function(m, e)
        return e.dir == "out" and m.method == "notifications/cancelled" and m.params.requestId == call.msg.id
      end)
      assert.is_not_nil(cancel, "no notifications/cancelled for the call" .. dump(rep, srv))
      assert.are.equal("spec abort", cancel.msg.params.reason)
      assert.is_true(cancel.seq > abort.seq)
      stop(srv)
    end)
  end)

  describe("pinned to 2026-07-28 (stateless)", function()
    it("lists the tools and calls one, without initialize or a session", function()
      local rep, srv = over_http("list_call.mjs", "2026-07-28")
      check_stateless_wire(rep, srv)
      assert.are.equal("luamcp", rep.server.name)   -- from server/discover's _meta
      check_list_call(rep, srv)
      -- tools/call names its tool in Mcp-Name
      local names = {}
      for _, h in ipairs(rep.http) do
        if h.mcpMethod == "tools/call" then names[#names + 1] = h.mcpName end
      end
      assert.are.same({ "echo", "no_such_tool" }, names)
      for _, e in ipairs(rep.events) do
        if e.dir == "in" and e.msg.result then
          assert.are.equal("complete", e.msg.result.resultType, dump(rep, srv))
        end
      end
      stop(srv)
    end)

    it("aborting a call through an AbortSignal closes its HTTP stream: the handler stops with reason " ..
       "'client disconnected', nothing more comes for the call", function()
      local rep, srv = over_http("cancel.mjs", "2026-07-28")
      check_stateless_wire(rep, srv)
      local call, abort = check_aborted(rep, srv, "client disconnected")
      assert.is_nil(find_event(rep, function(m, e) return e.dir == "out" and m.method == "notifications/cancelled" end),
                    "a 2026-07-28 client cancels by closing the stream, not with notifications/cancelled" ..
                    dump(rep, srv))
      -- the call's own POST was aborted at the abort, before the linger ended
      local post
      for _, h in ipairs(rep.httpAfterAbort) do
        if h.mcpMethod == "tools/call" and h.mcpName == "wait" then post = h end
      end
      assert.is_not_nil(post, "no POST for the call" .. dump(rep, srv))
      assert.is_true(post.aborted, "the call's POST was not aborted" .. dump(rep, srv))
      assert.is_true(post.abortedAt > abort.seq)
      srv:expect_stderr("request " .. H.id_text(call.msg.id) .. " cancelled: client disconnected", nil,
                        { plain = true })
      stop(srv)
    end)
  end)

  it("with versionNegotiation 'auto' it finds 2026-07-28 through server/discover", function()
    local rep, srv = over_http("list_call.mjs", "auto")
    check_stateless_wire(rep, srv)
    local discover = find_event(rep, function(m, e) return e.dir == "in" and m.result and m.result.supportedVersions end)
    assert.are.equal("2026-07-28", discover.msg.result.supportedVersions[1])
    check_list_call(rep, srv)
    stop(srv)
  end)
end)
