-- Protocol revision 2026-07-28 (stateless) beside the session revisions, in
-- one process: server/discover, the per-request protocol version in _meta,
-- the HTTP request metadata headers, and a closed response stream as the
-- cancellation of its request (2026-07-28 only).
local H = require "spec.helper"
local HH = require "spec.http_helper"
local cjson = H.cjson

local FIX = "spec/fixtures/rev2026"
local V = "2026-07-28"

-- params with _meta (clientInfo too); extra: more _meta fields, or replacements.
local function params(p, extra)
  local m = { ["io.modelcontextprotocol/clientInfo"] = { name = "spec", version = "1" } }
  for k, v in pairs(extra or {}) do m[k] = v end
  return HH.params_rev2026(p, nil, m)
end

local function proc_state(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s and s:match("^%d+ %b() (%a)")
end

---------------------------------------------------------------------------
-- Streamable HTTP

local function req(id, method, p) return { jsonrpc = "2.0", id = id, method = method, params = p } end

-- A 2026-07-28 request on a fresh connection (HH.post_rev2026; headers: overrides,
-- false drops one). Returns the whole response and its JSON-RPC message.
local function rpc(srv, id, method, p, headers)
  return HH.rpc_rev2026(srv, req(id, method, p), { headers = headers })
end

describe("2026-07-28 over Streamable HTTP", function()
  local srv
  before_each(function() srv = HH.start{ plugins = { FIX }, args = { "--log-level", "debug" } } end)
  after_each(function() HH.cleanup() end)

  it("answers server/discover without initialize, and no session is minted", function()
    local r, resp = rpc(srv, 1, "server/discover", params())
    assert.are.equal(200, r.status, r:describe())
    assert.is_nil(r:header("mcp-session-id"))
    local res = resp.result
    assert.are.equal("complete", res.resultType)
    assert.are.equal(V, res.supportedVersions[1])
    assert.truthy(table.concat(res.supportedVersions, " "):find("2025-11-25", 1, true))
    assert.is_table(res.capabilities.tools)
    assert.is_nil(res.capabilities.tools.listChanged)
    assert.are.equal("luamcp", res._meta["io.modelcontextprotocol/serverInfo"].name)
    assert.is_number(res.ttlMs)
    assert.is_string(res.cacheScope)
  end)

  it("serves a tools/call statelessly, with resultType, ignoring Mcp-Session-Id", function()
    local r, resp = rpc(srv, 1, "tools/call", params{ name = "echo", arguments = { text = "hi" } },
                        { ["Mcp-Session-Id"] = "0123456789abcdef0123456789abcdef" })
    assert.are.equal(200, r.status, r:describe())
    assert.is_nil(r:header("mcp-session-id"))
    assert.are.equal("complete", resp.result.resultType)
    assert.are.equal("hi", resp.result.content[1].text)
    local _, list = rpc(srv, 2, "tools/list", params())
    assert.are.equal("complete", list.result.resultType)
    assert.are.equal(0, list.result.ttlMs)
    assert.is_table(list.result.tools)
  end)

  it("rejects an unsupported version with 400 and -32022 listing the supported ones", function()
    local r, resp = rpc(srv, 1, "tools/list",
                        { _meta = { ["io.modelcontextprotocol/protocolVersion"] = "2099-01-01" } },
                        { ["MCP-Protocol-Version"] = "2099-01-01" })
    assert.are.equal(400, r.status, r:describe())
    assert.are.equal(-32022, resp.error.code)
    assert.are.equal(V, resp.error.data.supported[1])
    assert.are.equal("2099-01-01", resp.error.data.requested)
    assert.are.equal(1, resp.id)
  end)

  it("refuses a request without the required _meta fields with 400 and -32602, discover too", function()
    local VERSION, CAPS = "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"
    local cases = {
      { {}, "params._meta is required" },
      { { _meta = "x" }, "params._meta must be an object" },
      { { _meta = { [CAPS] = {} } }, VERSION },                   -- the header alone does not do
      { { _meta = { [VERSION] = V } }, CAPS },
      { { _meta = { [VERSION] = V, [CAPS] = "all" } }, CAPS },
    }
    for _, method in ipairs{ "server/discover", "tools/list", "tools/call" } do
      for i, case in ipairs(cases) do
        local p = case[1]
        if method == "tools/call" then p.name = "echo" end
        local r, resp = rpc(srv, i, method, p)
        assert.are.equal(400, r.status, method .. " " .. i .. ": " .. r:describe())
        assert.are.equal(-32602, resp.error.code, r.body)
        assert.are.equal(i, resp.id)
        assert.truthy(resp.error.message:find(case[2], 1, true), resp.error.message)
      end
    end
    -- no params at all
    local r, resp = rpc(srv, 7, "server/discover", nil)
    assert.are.equal(400, r.status, r:describe())
    assert.are.equal(-32602, resp.error.code)
    -- clientInfo is optional
    local ok = rpc(srv, 8, "server/discover", { _meta = { [VERSION] = V, [CAPS] = {} } })
    assert.are.equal(200, ok.status, ok:describe())
    -- a 2025-11-25 session's requests carry no such _meta
    local s = HH.initialize(srv, "2025-11-25")
    assert.is_table(s:rpc("tools/list", {}).result.tools)
  end)

  it("checks MCP-Protocol-Version, Mcp-Method and Mcp-Name against the body (-32020)", function()
    local call = params{ name = "echo", arguments = { text = "x" } }
    local cases = {
      { ["Mcp-Method"] = false },
      { ["Mcp-Method"] = "tools/list" },
      { ["Mcp-Name"] = false },
      { ["Mcp-Name"] = "other" },
      { ["MCP-Protocol-Version"] = false },
    }
    for i, h in ipairs(cases) do
      local r, resp = rpc(srv, i, "tools/call", call, h)
      assert.are.equal(400, r.status, r:describe())
      assert.are.equal(-32020, resp.error.code, r.body)
    end
    -- the body says another version than the header
    local r, resp = rpc(srv, 9, "tools/list",
                        { _meta = { ["io.modelcontextprotocol/protocolVersion"] = "2025-11-25" } })
    assert.are.equal(400, r.status, r:describe())
    assert.are.equal(-32020, resp.error.code)
    -- a base64 Mcp-Name is decoded before the comparison ("echo")
    local r2, resp2 = rpc(srv, 10, "tools/call", call, { ["Mcp-Name"] = "=?base64?ZWNobw==?=" })
    assert.are.equal(200, r2.status, r2:describe())
    assert.are.equal("x", resp2.result.content[1].text)
  end)

  it("answers an unknown or removed method with 404 and -32601", function()
    for i, m in ipairs{ "no/such", "ping", "logging/setLevel", "initialize" } do
      local r, resp = rpc(srv, i, m, params())
      assert.are.equal(404, r.status, r:describe())
      assert.are.equal(-32601, resp.error.code)
    end
  end)

  it("refuses GET and DELETE with 405 for a 2026-07-28 client", function()
    for _, m in ipairs{ "GET", "DELETE" } do
      local c = HH.connect(srv)
      local r = c:exchange{ method = m, headers = { ["Accept"] = "text/event-stream",
                                                    ["MCP-Protocol-Version"] = V } }
      assert.are.equal(405, r.status, r:describe())
      assert.are.equal("POST", r:header("allow"))
    end
  end)

  it("sends logs only to a request that asked for them, on its own SSE stream", function()
    local r = HH.post_rev2026(srv, req(1, "tools/call", params({ name = "slow", arguments = { seconds = 0.1 } },
                                                        { ["io.modelcontextprotocol/logLevel"] = "info" })))
    r:wait_done()
    assert.is_true(r:is_sse(), r:describe())
    assert.are.equal("no", r:header("x-accel-buffering"))
    local msgs = r:messages()
    assert.are.equal("notifications/message", msgs[1].method)
    for _, e in ipairs(r.events) do assert.is_nil(e.id) end       -- no resumption
    assert.are.equal("complete", msgs[#msgs].result.resultType)
    local r2, resp2 = rpc(srv, 2, "tools/call", params{ name = "slow", arguments = { seconds = 0.1 } })
    assert.is_false(r2:is_sse())
    assert.are.equal("slept 2", resp2.result.content[1].text)
  end)

  it("cancels a request whose connection closes: the handler sees ctx:cancelled()", function()
    local _, c = HH.post_rev2026(srv, req(41, "tools/call", params{ name = "slow", arguments = { seconds = 20 } }),
                           { nowait = true })
    assert.truthy(srv:wait_stderr("fixture: slow started 41"))
    c:close()
    assert.truthy(srv:wait_stderr("fixture: slow cancelled 41 reason=client disconnected"),
                  srv:stderr_text())
    assert.are.equal(1, srv:count_stderr("request 41 cancelled: client disconnected", true))   -- logged once
  end)

  it("cancels a request whose SSE stream closes after its first message", function()
    local r, c = HH.post_rev2026(srv, req(43, "tools/call", params({ name = "slow", arguments = { seconds = 20 } },
                                                           { ["io.modelcontextprotocol/logLevel"] = "debug" })))
    assert.is_true(r:is_sse(), r:describe())
    local m = r:next_message()
    assert.are.equal("notifications/message", m and m.method)
    c:drop()
    assert.truthy(srv:wait_stderr("fixture: slow cancelled 43 reason=client disconnected"),
                  srv:stderr_text())
    -- the server goes on serving
    local _, resp = rpc(srv, 44, "tools/call", params{ name = "echo", arguments = { text = "ok" } })
    assert.are.equal("ok", resp.result.content[1].text)
  end)

  it("accepts a notification with 202 and cancels nothing with it", function()
    local _, c = HH.post_rev2026(srv, req(45, "tools/call", params{ name = "slow", arguments = { seconds = 0.3 } }),
                           { nowait = true })
    assert.truthy(srv:wait_stderr("fixture: slow started 45"))
    local r = HH.post_rev2026(srv, { jsonrpc = "2.0", method = "notifications/cancelled",
                              params = { requestId = 45, reason = "no" } })
    r:wait_done()
    assert.are.equal(202, r.status, r:describe())
    local a = c:response()
    a:wait_done()
    assert.are.equal("slept 45", HH.rpc_response(a).result.content[1].text)
  end)

  it("kills the child process of a request whose connection closes", function()
    local _, c = HH.post_rev2026(srv, req(42, "tools/call", params{ name = "sleeper", arguments = {} }),
                           { nowait = true })
    local line = srv:wait_stderr("spawned sleep %(pid %d+%)")
    assert.truthy(line, srv:stderr_text())
    local pid = tonumber(line:match("pid (%d+)"))
    assert.is_not_nil(proc_state(pid))
    c:drop()
    assert.truthy(srv:wait_stderr("fixture: sleeper spawn returned 42 .* cancelled=true"), srv:stderr_text())
    assert.is_true(H.run_until(function() return proc_state(pid) == nil end, H.WAIT), "pid still there")
  end)

  it("serves a 2025-11-25 session and 2026-07-28 requests side by side, each by its rules", function()
    local s = HH.initialize(srv, "2025-11-25")
    -- the session's request survives a dropped connection
    local c1 = HH.connect(srv)
    local body = cjson.encode(s:req("tools/call", { name = "slow", arguments = { seconds = 0.5 } }, 7))
    local h = s:headers()
    h[#h + 1] = { "Content-Length", tostring(#body) }
    c1:send(HH.request_text{ method = "POST", headers = h, body = body })
    assert.truthy(srv:wait_stderr("fixture: slow started 7"))
    -- a 2026-07-28 request with the same id, on its own connection
    local _, c2 = HH.post_rev2026(srv, req(7, "tools/call", params{ name = "slow", arguments = { seconds = 20 } }),
                            { nowait = true })
    assert.truthy(H.run_until(function() return srv:count_stderr("fixture: slow started 7", true) == 2 end))
    c1:drop()
    c2:drop()
    assert.truthy(srv:wait_stderr("fixture: slow cancelled 7 reason=client disconnected"))
    assert.truthy(srv:wait_stderr("fixture: slow finished 7"), srv:stderr_text())
    assert.are.equal(1, srv:count_stderr("fixture: slow cancelled 7", true))
    -- the session goes on, legacy rules (no resultType), and a modern request too
    local resp = s:rpc("tools/call", { name = "echo", arguments = { text = "old" } })
    assert.are.equal("old", resp.result.content[1].text)
    assert.is_nil(resp.result.resultType)
    local _, modern = rpc(srv, 8, "tools/call", params{ name = "echo", arguments = { text = "new" } })
    assert.are.equal("complete", modern.result.resultType)
  end)

  it("sends no request to a 2026-07-28 client: input it can give comes in an input-required result", function()
    local r, resp = rpc(srv, 1, "tools/call",
                        params({ name = "ask", arguments = {} },
                               { ["io.modelcontextprotocol/clientCapabilities"] = { roots = {} } }))
    assert.are.equal("input_required", resp.result.resultType, cjson.encode(resp))
    assert.are.equal("roots/list", resp.result.inputRequests.roots_1.method)
    for _, m in ipairs(r:is_sse() and r:messages() or {}) do assert.is_nil(m.method, cjson.encode(m)) end
    local _, none = rpc(srv, 2, "tools/call", params{ name = "ask", arguments = {} })
    assert.are.equal("the client does not offer roots (no roots capability)", none.result.content[1].text)
  end)
end)

---------------------------------------------------------------------------
-- stdio

describe("2026-07-28 over stdio", function()
  after_each(function() H.cleanup() end)

  it("answers discover and stateless requests without initialize", function()
    local c = H.start{ plugins = { FIX } }
    local d = c:request("server/discover", params())
    assert.are.equal("complete", d.result.resultType)
    assert.are.equal(V, d.result.supportedVersions[1])
    local r = c:request("tools/call", params{ name = "echo", arguments = { text = "hi" } })
    assert.are.equal("complete", r.result.resultType)
    assert.are.equal("hi", r.result.content[1].text)
    local bad = c:request("tools/list", { _meta = { ["io.modelcontextprotocol/protocolVersion"] = "1900-01-01" } })
    assert.are.equal(-32022, bad.error.code)
    assert.are.equal("1900-01-01", bad.error.data.requested)
    local legacy = c:request("tools/list", {})
    assert.are.equal(-32600, legacy.error.code)        -- a session request still needs initialize
  end)

  it("refuses a stateless request without the required _meta fields (-32602), not a session's", function()
    local c = H.start{ plugins = { FIX }, args = { "--log-level", "debug" } }
    local d = c:request("server/discover", {})
    assert.are.equal(-32602, d.error.code)
    assert.truthy(d.error.message:find("params._meta is required", 1, true), d.error.message)
    local r = c:request("tools/call", { name = "echo", arguments = {},
                                        _meta = { ["io.modelcontextprotocol/protocolVersion"] = V } })
    assert.are.equal(-32602, r.error.code)
    assert.truthy(r.error.message:find("io.modelcontextprotocol/clientCapabilities", 1, true), r.error.message)
    assert.truthy(c:wait_stderr("request %d+ refused: .*clientCapabilities"), c:stderr_text())
    c:initialize("2025-11-25")
    local old = c:request("tools/call", { name = "echo", arguments = { text = "old" } })
    assert.are.equal("old", old.result.content[1].text)
  end)

  -- rev2026_meta.c keeps the _meta of the last four clients: each request
  -- still gets its own client's capabilities, whichever are kept.
  it("gives each request its own client's capabilities, from more clients than are kept", function()
    local c = H.start{ plugins = { FIX } }
    local sets = { {}, { "roots" }, { "sampling" }, { "elicitation", "roots" }, { "roots", "sampling" },
                   { "elicitation", "roots", "sampling" }, { "elicitation" } }
    for round = 1, 3 do
      for i, set in ipairs(sets) do
        local caps = {}
        for _, cap in ipairs(set) do caps[cap] = {} end
        local r = c:request("tools/call", HH.params_rev2026({ name = "supports", arguments = {} }, caps))
        assert.are.equal(table.concat(set, ","), r.result.content[1].text, "round " .. round .. ", client " .. i)
      end
    end
  end)

  it("cancels a stateless request on notifications/cancelled, and refuses a duplicate id", function()
    local c = H.start{ plugins = { FIX } }
    c:send{ jsonrpc = "2.0", id = 5, method = "tools/call",
                   params = params{ name = "slow", arguments = { seconds = 20 } } }
    assert.truthy(c:wait_stderr("fixture: slow started 5"))
    local dup = c:request("tools/call", params{ name = "echo", arguments = {} }, { id = 5 })
    assert.are.equal(-32600, dup.error.code)
    c:send(H.cancel_msg(5, "user gave up"))
    assert.truthy(c:wait_stderr("fixture: slow cancelled 5 reason=user gave up"))
    c:no_response(0.3)
  end)

  it("finds a stateless request by its id among thousands in flight (an index, not a walk)", function()
    local c = H.start{ plugins = { FIX } }
    local lines = {}
    for i = 1, 3000 do
      lines[i] = cjson.encode{ jsonrpc = "2.0", id = i, method = "tools/call",
                               params = params{ name = "slow", arguments = { seconds = 60 } } } .. "\n"
    end
    c:send(table.concat(lines))
    assert.truthy(c:wait_stderr("fixture: slow started 3000", 20))
    local dup = c:request("tools/call", params{ name = "echo", arguments = {} }, { id = 1234 })
    assert.are.equal(-32600, dup.error.code)
    local other = c:request("tools/call", params{ name = "echo", arguments = { text = "x" } }, { id = 3001 })
    assert.are.equal("x", other.result.content[1].text)
    c:send(H.cancel_msg(2345, "just this one"))
    assert.truthy(c:wait_stderr("fixture: slow cancelled 2345 reason=just this one"))
    assert.are.equal(1, c:count_stderr("fixture: slow cancelled", true))
  end)

  it("sends log messages only to a request that names a log level", function()
    local c = H.start{ plugins = { FIX } }
    local _, notes = c:request("tools/call", params({ name = "slow", arguments = { seconds = 0.05 } },
                                                    { ["io.modelcontextprotocol/logLevel"] = "info" }))
    assert.are.equal("notifications/message", notes[1] and notes[1].method)
    local _, none = c:request("tools/call", params{ name = "slow", arguments = { seconds = 0.05 } })
    assert.are.equal(0, #none)
  end)

  it("serves an initialized session and stateless requests in one process", function()
    local c = H.start{ plugins = { FIX } }
    c:initialize("2025-11-25")
    local old = c:request("tools/call", { name = "echo", arguments = { text = "old" } })
    assert.is_nil(old.result.resultType)
    local new = c:request("tools/call", params{ name = "echo", arguments = { text = "new" } })
    assert.are.equal("complete", new.result.resultType)
    assert.are.equal("new", new.result.content[1].text)
  end)
end)
