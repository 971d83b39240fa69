-- The official TypeScript SDK client (@modelcontextprotocol/sdk 1.x, on Node 22)
-- against luamcp, over stdio and over Streamable HTTP. The client side is the
-- small ESM scripts in spec/sdk/; each prints a JSON report (what it got, and
-- every message on the wire) that the specs below check.
--
-- Node 22 and the SDK come from npm into a cache outside the repository
-- (test/node-env.sh, through spec/node_helper.lua; LUAMCP_NODE_CACHE). If they
-- cannot be installed these specs fail; LUAMCP_SKIP_NODE=1 turns them into
-- pending ones (offline use).
local H = require "spec.helper"
local N = require "spec.node_helper"
local cjson = H.cjson

local PLUGINS = "spec/fixtures/sdk"

if N.skipped then
  describe("the TypeScript SDK client", function()
    pending("skipped: LUAMCP_SKIP_NODE=1 (needs Node 22 and @modelcontextprotocol/sdk from npm)")
  end)
  return
end

local ENV
local HTTP_SERVER   -- the running HTTP server, ended by stop_http or after_each

local function run_node(script, args, env) return N.run(ENV, script, args, env) end

-- The transports: each runs a script against a fresh server and returns its
-- report and the server's stderr lines.
local transports = {
  stdio = function(script, args)
    local rep = run_node(script, args, {
      SDK_TRANSPORT = "stdio",
      SDK_COMMAND = H.binary(),
      SDK_ARGS = cjson.encode({ "--plugins", H.root .. "/" .. PLUGINS }),
    })
    return rep, rep.stderr
  end,
  http = function(script, args)
    local srv = H.start{ plugins = { PLUGINS }, args = { "--http", "127.0.0.1:0" } }
    HTTP_SERVER = srv
    local line = srv:wait_stderr("listening on http://127%.0%.0%.1:%d+/mcp")
    if not line then error("the server did not listen; stderr:\n" .. srv:stderr_text(), 2) end
    local url = line:match("(http://127%.0%.0%.1:%d+/mcp)")
    local rep = run_node(script, args, { SDK_TRANSPORT = "http", SDK_URL = url })
    return rep, srv.stderr, srv
  end,
}

local function stop_http(srv)
  if not srv then return end
  srv:kill("sigterm")
  local code = srv:wait_exit(10)
  assert.are.equal(0, code, "the HTTP server's exit status; stderr:\n" .. srv:stderr_text())
end

local function find_event(rep, pred)
  for _, e in ipairs(rep.events) do if pred(e.msg, e) then return e end end
end

local function dump(rep, stderr)
  return "\nwire:\n" .. cjson.encode(rep.events) .. "\nserver stderr:\n" .. table.concat(stderr or {}, "\n")
end

local function no_sanitizer_report(stderr)
  for _, l in ipairs(stderr or {}) do
    assert.is_nil(l:find("Sanitizer", 1, true) or l:find("runtime error:", 1, true),
                  "sanitizer report:\n" .. table.concat(stderr, "\n"))
  end
end

-- client.onerror calls, less the SDK's SSE reconnection attempts. Over HTTP the
-- server ends a cancelled call's POST stream with no response (there is none
-- to send); the SDK (SEP-1699) takes that for a poll and reconnects with GET and
-- Last-Event-ID, then once more without it, which meets the open standalone
-- GET stream: 409, "Failed to open SSE stream: Conflict". That is the client
-- polling a stream that has ended, not the server answering the cancelled call.
local function real_errors(rep)
  local out = {}
  for _, e in ipairs(rep.errors or {}) do
    if not (e:find("SSE stream", 1, true) or e:find("reconnect", 1, true)) then out[#out + 1] = e end
  end
  return out
end

-- After the SDK cancelled the `wait` call: it sent notifications/cancelled for
-- that id with `reason`, the handler said it stopped with that reason, and no
-- response and no progress for the call came after the cancel.
local function check_cancelled(rep, stderr, srv, reason)
  local call = assert(find_event(rep, function(m, e)
    return e.dir == "out" and m.method == "tools/call" and m.params.name == "wait"
  end), "no tools/call wait was sent" .. dump(rep, stderr))
  local id, token = call.msg.id, call.msg.params._meta and call.msg.params._meta.progressToken
  assert.is_not_nil(token, "the SDK sent no progressToken")
  local cancel = find_event(rep, function(m, e)
    return e.dir == "out" and m.method == "notifications/cancelled" and m.params.requestId == id
  end)
  assert.is_not_nil(cancel, "the SDK sent no notifications/cancelled for id " .. H.id_text(id) .. dump(rep, stderr))
  assert.are.equal(reason, cancel.msg.params.reason)
  assert.is_true(cancel.seq > call.seq)

  -- the handler stopped, with the client's reason
  local key = H.id_text(id)
  local stopped = "fixture: wait " .. key .. " stopped reason=" .. reason
  if srv then
    srv:expect_stderr(stopped, nil, { plain = true })
  else
    local seen = false
    for _, l in ipairs(stderr) do if l == stopped then seen = true end end
    assert.is_true(seen, "no line '" .. stopped .. "' on the server's stderr" .. dump(rep, stderr))
  end

  -- no response for the call at all, no progress after the cancel
  for _, e in ipairs(rep.events) do
    if e.dir == "in" then
      assert.is_false(e.msg.id == id and e.msg.method == nil,
                      "a response for the cancelled call: " .. cjson.encode(e.msg) .. dump(rep, stderr))
      if e.msg.method == "notifications/progress" and e.msg.params.progressToken == token then
        assert.is_true(e.seq < cancel.seq,
                       "progress after the cancel: " .. cjson.encode(e.msg) .. dump(rep, stderr))
      end
    end
  end
  assert.are.same({}, real_errors(rep), "the SDK client reported errors" .. dump(rep, stderr))
  -- the connection is still usable afterwards
  assert.are.equal("echo: still there", rep.after.content[1].text)
  assert.is_true(rep.result == nil or rep.result == cjson.null, "the cancelled call resolved" .. dump(rep, stderr))
end

describe("the TypeScript SDK client", function()
  setup(function() ENV = N.prepare("sdk") end)
  teardown(function() N.remove(ENV) end)
  after_each(function()
    -- the HTTP transport ignores stdin: end a server a failed spec left running by SIGTERM
    if HTTP_SERVER and HTTP_SERVER:alive() then HTTP_SERVER:kill("sigterm"); HTTP_SERVER:wait_exit(10) end
    HTTP_SERVER = nil
    H.cleanup()
  end)

  for _, tname in ipairs({ "stdio", "http" }) do
    local over = transports[tname]
    describe("over " .. tname, function()
      it("lists the tools and calls one", function()
        local rep, stderr, srv = over("list_call.mjs")
        assert.are.equal("luamcp", rep.server.name)
        local names = {}
        for _, t in ipairs(rep.tools) do names[#names + 1] = t.name end
        table.sort(names)
        assert.are.same({ "echo", "point", "steps", "wait" }, names)
        for _, t in ipairs(rep.tools) do
          if t.name == "echo" then
            assert.are.equal("Echo", t.title)
            assert.are.same({ "text" }, t.inputSchema.required)
          end
        end
        assert.are.same({ { type = "text", text = "echo: hi from the sdk" } }, rep.result.content)
        assert.is_not_true(rep.result.isError)
        -- an outputSchema: the SDK validates structuredContent; a wrong one is an isError result
        assert.are.same({ x = 1, y = 2 }, rep.point.structuredContent)
        assert.is_not_true(rep.point.isError)
        assert.is_nil(rep.badPoint.error, "the SDK threw: " .. cjson.encode(rep.badPoint))
        assert.is_true(rep.badPoint.result.isError)
        assert.are.equal("Output does not match outputSchema: x: expected integer, got string",
                         rep.badPoint.result.content[1].text)
        assert.are.equal(-32602, rep.unknown.error and rep.unknown.error.code,
                         "an unknown tool: " .. cjson.encode(rep.unknown))
        assert.are.same({}, rep.errors)
        no_sanitizer_report(stderr)
        stop_http(srv)
      end)

      it("delivers progress notifications to onprogress, before the result", function()
        local rep, stderr, srv = over("progress.mjs")
        assert.are.equal(rep.n, #rep.progress, "progress seen" .. dump(rep, stderr))
        for i, p in ipairs(rep.progress) do
          assert.are.equal(i, p.progress)
          assert.are.equal(rep.n, p.total)
          assert.are.equal("step " .. i, p.message)
          assert.is_true(p.beforeResult)
        end
        assert.are.equal(("did %d steps"):format(rep.n), rep.result.content[1].text)
        assert.are.same({}, rep.errors)
        no_sanitizer_report(stderr)
        stop_http(srv)
      end)

      it("cancels through an AbortSignal: the handler stops and nothing more is sent for the call", function()
        local rep, stderr, srv = over("cancel.mjs", { "abort" })
        assert.are.equal("McpError", rep.error and rep.error.name, dump(rep, stderr))
        assert.matches("spec abort", rep.error.message, 1, true)
        assert.are.equal(1, #rep.progress)
        check_cancelled(rep, stderr, srv, "spec abort")
        no_sanitizer_report(stderr)
        stop_http(srv)
      end)

      it("cancels on the request's timeout option: the handler stops and nothing more is sent for the call", function()
        local rep, stderr, srv = over("cancel.mjs", { "timeout" })
        assert.are.equal(-32001, rep.error and rep.error.code, dump(rep, stderr))   -- RequestTimeout
        assert.matches("Request timed out", rep.error.message, 1, true)
        assert.is_true(rep.rejectedAfterMs >= 250, "rejected after " .. tostring(rep.rejectedAfterMs) .. " ms")
        check_cancelled(rep, stderr, srv, "McpError: MCP error -32001: Request timed out")
        no_sanitizer_report(stderr)
        stop_http(srv)
      end)
    end)
  end
end)
