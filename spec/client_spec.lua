-- mcp.connect: a handler calling another MCP server (lua/mcp/client.lua).
-- The upstream is luamcp itself (spec/fixtures/upstream) over stdio and
-- Streamable HTTP, at 2026-07-28 (found by server/discover) and at a pinned
-- session revision, and the official TypeScript SDK servers (spec/sdk_server/).
-- The tools of spec/fixtures/client_tools take the upstream in args.conn.
--
-- Every cancellation path is shown stopping the far side: the upstream
-- handler says "fixture: slow stopped TAG reason=..." on its stderr (which a
-- stdio upstream's client forwards to our log as "upstream NAME: fixture: ...").
local H = require "spec.helper"
local N = require "spec.node_helper"
local uv, cjson = H.uv, H.cjson

local PLUGINS = { "spec/fixtures/client_tools" }
local UP = H.fixtures .. "/upstream"

local function stdio_conn(protocol)
  return { command = { H.binary(), "--plugins", UP }, protocol = protocol, name = "up" }
end

local http_servers = {}

-- luamcp --http with the upstream fixture: the server and its URL.
local function http_upstream(addr)
  local srv = H.start { plugins = { UP }, args = { "--http", addr or "127.0.0.1:0" } }
  http_servers[#http_servers + 1] = srv
  local line = srv:expect_stderr("listening on http://127%.0%.0%.1:%d+/mcp")
  return srv, line:match("(http://127%.0%.0%.1:%d+/mcp)")
end

local function stop_http()
  for _, srv in ipairs(http_servers) do
    if srv:alive() then srv:kill("sigterm"); srv:wait_exit(10) end
  end
  http_servers = {}
end

-- Our server with the client tools, initialized (capabilities: what it declares).
local function gateway(capabilities, opts)
  opts = opts or {}
  local c = H.start { plugins = PLUGINS, args = opts.args }
  local resp = c:request("initialize", { protocolVersion = H.LATEST, capabilities = capabilities or {},
                                        clientInfo = { name = "spec", version = "0" } })
  assert(resp.result, cjson.encode(resp))
  c:send { jsonrpc = "2.0", method = "notifications/initialized" }
  return c
end

local function result_of(resp)
  assert(resp.result, "not a result: " .. cjson.encode(resp))
  return resp.result
end

local function call(c, conn, tool, args, extra)
  local p = { conn = conn, tool = tool, args = args or {} }
  for k, v in pairs(extra or {}) do p[k] = v end
  return result_of(c:call("call", p))
end

local function alive(pid) return uv.fs_stat(string.format("/proc/%d", pid)) ~= nil end
local function state(pid)
  local f = io.open(string.format("/proc/%d/stat", pid))
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s:match("^%d+ %b() (%a)")
end

-- Start `slow` through tool `via` with a progress token; wait for its first
-- progress (the upstream runs). Returns the request id.
local next_id = 100
local function start_slow(c, conn, tag, via, extra)
  next_id = next_id + 1
  local args = { conn = conn, tool = "slow", args = { tag = tag, steps = 400, delay = 0.05 } }
  for k, v in pairs(extra or {}) do args[k] = v end
  c:send { jsonrpc = "2.0", id = next_id, method = "tools/call",
           params = { name = via or "call", arguments = args, _meta = { progressToken = "p" .. next_id } } }
  local n = c:wait_notification("notifications/progress", function(p) return p.progressToken == "p" .. next_id end)
  assert(n, "no progress from the upstream; stderr:\n" .. c:stderr_text())
  return next_id
end

describe("mcp.connect", function()
  after_each(function()
    stop_http()
    H.cleanup()
  end)

  describe("to luamcp over stdio", function()
    it("finds 2026-07-28 by server/discover, and lists and calls", function()
      local c = gateway()
      local r = call(c, stdio_conn(), "echo", { text = "hi" })
      assert.are.equal("echo: hi", r.content[1].text)
      assert.are.equal("2026-07-28", r.structuredContent.revision)
      assert.are.equal("luamcp", r.structuredContent.server.name)
      local l = result_of(c:call("lists", { conn = stdio_conn() })).structuredContent
      assert.are.equal(5, #l.tools)
      local echo
      for _, t in ipairs(l.tools) do if t.name == "echo" then echo = t end end
      assert.are.same({ "text" }, echo.inputSchema.required)
      assert.is_true(echo.annotations.readOnlyHint)
      assert.are.equal("up://readme", l.resources[1].uri)
      assert.are.equal("up://item/{id}", l.templates[1].uriTemplate)
      assert.are.equal("greet", l.prompts[1].name)
      assert.are.equal("2026-07-28", l.server.revision)
      assert.are.equal("upstream readme", H.text(c:call("read", { conn = stdio_conn(), uri = "up://readme" })))
      assert.are.equal("item 7", H.text(c:call("read", { conn = stdio_conn(), uri = "up://item/7" })))
      assert.are.equal("hello you", H.text(c:call("prompt", { conn = stdio_conn(), name = "greet", args = { who = "you" } })))
      -- one child for all of it
      assert.are.equal(1, c:count_stderr("upstream up: connected", true))
    end)

    for _, rev in ipairs { "2025-11-25", "2024-11-05" } do
      it("pins revision " .. rev .. " (initialize)", function()
        local c = gateway()
        local r = call(c, stdio_conn(rev), "echo", { text = "hi" })
        assert.are.equal("echo: hi", r.content[1].text)
        assert.are.equal(rev, r.structuredContent.revision)
        c:expect_stderr("session initialized: protocol " .. rev, nil, { plain = true })
      end)
    end

    it("passes an upstream JSON-RPC error on, and a tool error result as a result", function()
      local c = gateway()
      local r = call(c, stdio_conn(), "fail")
      assert.is_true(r.isError)
      assert.matches("custom failure", r.content[1].text, 1, true)
      assert.matches("[rpc -32099]", r.content[1].text, 1, true)
      r = call(c, stdio_conn(), "nope")
      assert.matches("Unknown tool: nope", r.content[1].text, 1, true)
      assert.matches("[rpc -32602]", r.content[1].text, 1, true)
    end)

    it("runs several calls at once under mcp.all", function()
      local c = gateway()
      local t0 = H.now()
      assert.are.equal("done a, done b", H.text(c:call("both", { conn = stdio_conn() })))
      assert.is_true(H.now() - t0 < 1.5)
    end)

    it("relays progress to the calling request", function()
      local c = gateway()
      c:send { jsonrpc = "2.0", id = 7, method = "tools/call", params = { name = "call",
               arguments = { conn = stdio_conn(), tool = "slow", args = { steps = 3, delay = 0.01 } },
               _meta = { progressToken = "tok" } } }
      local resp, notes = c:take(function(m) return m.id == 7 end)
      assert.are.equal("done -", resp.result.content[1].text)
      local seen = {}
      for _, n in ipairs(c.notes) do
        if n.method == "notifications/progress" and n.params.progressToken == "tok" then
          seen[#seen + 1] = n.params
        end
      end
      assert.are.equal(3, #seen)
      assert.are.same({ progressToken = "tok", progress = 3, total = 3, message = "step 3" }, seen[3])
    end)

    for _, rev in ipairs { "auto", "2025-11-25" } do
      local conn = stdio_conn(rev)
      describe("(" .. rev .. ") cancels upstream", function()
        it("when its client cancels", function()
          local c = gateway()
          local id = start_slow(c, conn, "c1")
          c:send(H.cancel_msg(id, "enough"))
          c:expect_stderr("upstream up: fixture: slow stopped c1 reason=enough", nil, { plain = true })
          c:expect_stderr("fixture: call slow returned false cancelled: enough [cancelled]", nil, { plain = true })
          c:no_response(0.2)
        end)

        it("when its client cancels a tool whose policy is abort", function()
          local c = gateway()
          local id = start_slow(c, conn, "a1", "call_abort")
          c:send(H.cancel_msg(id, "abort it"))
          c:expect_stderr("upstream up: fixture: slow stopped a1 reason=abort it", nil, { plain = true })
        end)

        it("when the tool times out", function()
          local c = gateway()
          start_slow(c, conn, "t1", "call_t1")
          c:expect_stderr("upstream up: fixture: slow stopped t1 reason=timeout", nil, { plain = true })
          c:expect_stderr("fixture: call slow returned false cancelled: timeout [cancelled]", nil, { plain = true })
          local resp = c:take(function(m) return m.id == next_id end)
          assert.is_true(resp.result.isError)
        end)

        it("when opts.timeout passes", function()
          local c = gateway()
          local resp = c:call("call", { conn = conn, tool = "slow", args = { tag = "o1" }, timeout = 0.3 })
          assert.matches("timeout: tools/call slow took longer than 0.3 s", H.text(resp), 1, true)
          c:expect_stderr("upstream up: fixture: slow stopped o1 reason=timeout", nil, { plain = true })
        end)

        it("at shutdown, and the child is reaped", function()
          local c = gateway()
          local pid = call(c, conn, "echo", { text = "x" }).structuredContent.pid
          assert.is_true(alive(pid))
          start_slow(c, conn, "s1")
          assert.are.equal(0, c:close())
          assert.truthy(c:wait_stderr("upstream up: fixture: slow stopped s1 reason=shutdown", 1, { plain = true }),
                        c:stderr_text())
          assert.is_false(alive(pid), "the upstream child is still there after the server exited")
        end)
      end)
    end

    it("reconnects after its child died, which is reaped, never a zombie", function()
      local c = gateway()
      local pid = call(c, stdio_conn(), "echo", { text = "x" }).structuredContent.pid
      local r = call(c, stdio_conn(), "die")
      assert.is_true(r.isError)
      assert.matches("exited with code 3.*%[closed%]", r.content[1].text)
      assert.is_true(H.run_until(function() return not alive(pid) end, 2), "pid " .. pid .. " state " .. tostring(state(pid)))
      local r2 = call(c, stdio_conn(), "echo", { text = "again" })
      assert.are.equal("echo: again", r2.content[1].text)
      assert.are_not.equal(pid, r2.structuredContent.pid)
      -- killed from outside: reaped too, and replaced on next use
      uv.kill(math.tointeger(r2.structuredContent.pid), "sigkill")
      assert.is_true(H.run_until(function() return not alive(r2.structuredContent.pid) end, 2))
      assert.are.equal("echo: 3", call(c, stdio_conn(), "echo", { text = "3" }).content[1].text)
      assert.is_true(c:alive())
    end)

    it("relays the upstream's requests to its client through the calling request", function()
      local c = gateway({ sampling = {} })
      for _, rev in ipairs { "auto", "2025-11-25" } do
        c:send { jsonrpc = "2.0", id = 50, method = "tools/call",
                 params = { name = "call", arguments = { conn = stdio_conn(rev), tool = "ask" } } }
        local req = c:take(function(m) return m.method == "sampling/createMessage" end)
        assert(req, "no sampling request reached the client; stderr:\n" .. c:stderr_text())
        assert.are.equal("say hi", req.params.messages[1].content.text)
        c:send { jsonrpc = "2.0", id = req.id, result = { role = "assistant", model = "m",
                                                         content = { type = "text", text = "hi " .. rev } } }
        local resp = c:take(function(m) return m.id == 50 end)
        assert.are.equal("sampled: hi " .. rev, H.text(resp))
      end
    end)

    -- between the upstream's request and our client's answer no wait of the
    -- upstream request is pending: a cancel (or an abort) then still reaches it
    for _, tool in ipairs { "call", "call_abort" } do
      it("cancels upstream when its client cancels while the upstream's request to it waits (" .. tool .. ")",
         function()
        local c = gateway({ sampling = {} })
        c:send { jsonrpc = "2.0", id = 51, method = "tools/call",
                 params = { name = tool, arguments = { conn = stdio_conn("2025-11-25"), tool = "ask" } } }
        local req = c:take(function(m) return m.method == "sampling/createMessage" end)
        assert(req, "no sampling request reached the client; stderr:\n" .. c:stderr_text())
        c:send(H.cancel_msg(51, "no sample"))
        c:expect_stderr("upstream up: luamcp: info: request %d+ cancelled: no sample")
        c:no_response(0.2)
      end)
    end

    it("answers -32601 to the upstream where its client lacks the capability", function()
      local c = gateway()
      local r = call(c, stdio_conn("2025-11-25"), "ask")
      assert.matches("no sample:.*Method not found", r.content[1].text)
      r = call(c, stdio_conn(), "ask")              -- 2026-07-28: an input-required round it cannot answer
      assert.matches("the client does not offer sampling", r.content[1].text, 1, true)
      assert.matches("[unsupported]", r.content[1].text, 1, true)
    end)

    it("starts the upstream with env added to the server's environment (false removes a name)", function()
      local c = gateway()
      local conn = { command = { H.binary(), "--plugins", H.fixtures .. "/upstream_env" },
                     env = { SPEC_ADDED = "yes", HOME = false } }
      local text = call(c, conn, "getenv", { names = { "SPEC_ADDED", "HOME", "PATH" } }).content[1].text
      assert.matches("^SPEC_ADDED=yes HOME=unset PATH=", text)
      assert.is_nil(text:find("PATH=unset", 1, true), text)
    end)

    it("gives nil, message, code for an upstream that is not MCP", function()
      local c = gateway()
      local r = call(c, { command = { "sh", "-c", "echo garbage" } }, "echo", { text = "x" })
      assert.is_true(r.isError)
      assert.matches("it wrote: garbage", r.content[1].text, 1, true)
      assert.matches("[protocol]", r.content[1].text, 1, true)
      r = call(c, { command = { "cat" } }, "echo", { text = "x" })
      assert.matches("initialize: Method not found", r.content[1].text, 1, true)
      assert.matches("[protocol]", r.content[1].text, 1, true)
      r = call(c, { command = { "/nonexistent/server" } }, "echo", { text = "x" })
      assert.matches("cannot start /nonexistent/server", r.content[1].text, 1, true)
      assert.matches("[unreachable]", r.content[1].text, 1, true)
      r = call(c, { command = { "sh", "-c", "read line; exit 0" } }, "echo", { text = "x" })
      assert.matches("exited with code 0.*%[closed%]", r.content[1].text)
      r = call(c, { command = { "sleep", "30" }, connect_timeout = 0.3 }, "echo", { text = "x" })
      assert.matches("timeout.*%[timeout%]", r.content[1].text)
      assert.is_true(c:alive())
    end)
  end)

  describe("to luamcp over Streamable HTTP", function()
    it("finds 2026-07-28, or pins a session revision", function()
      local _, url = http_upstream()
      local c = gateway()
      local r = call(c, { url = url }, "echo", { text = "hi" })
      assert.are.equal("echo: hi", r.content[1].text)
      assert.are.equal("2026-07-28", r.structuredContent.revision)
      r = call(c, { url = url, protocol = "2025-11-25" }, "echo", { text = "ho" })
      assert.are.equal("echo: ho", r.content[1].text)
      assert.are.equal("2025-11-25", r.structuredContent.revision)
      local l = result_of(c:call("lists", { conn = { url = url } })).structuredContent
      assert.are.equal(5, #l.tools)
      assert.are.equal("hello x", H.text(c:call("prompt", { conn = { url = url }, name = "greet", args = { who = "x" } })))
    end)

    it("sends its headers (a bearer token)", function()
      local srv = H.start { plugins = { UP }, args = { "--http", "127.0.0.1:0", "--token", "s3cret" } }
      http_servers[#http_servers + 1] = srv
      local url = srv:expect_stderr("listening on http://127%.0%.0%.1:%d+/mcp"):match("(http://[^ ]+/mcp)")
      local c = gateway()
      local r = call(c, { url = url, headers = { Authorization = "Bearer s3cret" } }, "echo", { text = "in" })
      assert.are.equal("echo: in", r.content[1].text)
      r = call(c, { url = url }, "echo", { text = "out" })
      assert.is_true(r.isError)
      assert.matches("HTTP 401.*%[denied%]", r.content[1].text)
    end)

    it("relays progress", function()
      local _, url = http_upstream()
      local c = gateway()
      c:send { jsonrpc = "2.0", id = 8, method = "tools/call", params = { name = "call",
               arguments = { conn = { url = url }, tool = "slow", args = { steps = 3, delay = 0.01 } },
               _meta = { progressToken = "t8" } } }
      local resp = c:take(function(m) return m.id == 8 end)
      assert.are.equal("done -", H.text(resp))
      local n = 0
      for _, m in ipairs(c.notes) do
        if m.method == "notifications/progress" and m.params.progressToken == "t8" then n = n + 1 end
      end
      assert.are.equal(3, n)
    end)

    -- 2026-07-28: the POST's stream closed; a session: notifications/cancelled.
    for _, case in ipairs { { "auto", "client disconnected", "client disconnected", "client disconnected" },
                            { "2025-11-25", "enough", "timeout", "timeout" } } do
      local rev, on_cancel, on_timeout, on_opts = case[1], case[2], case[3], case[4]
      describe("(" .. rev .. ") cancels upstream", function()
        it("when its client cancels", function()
          local srv, url = http_upstream()
          local c = gateway()
          local id = start_slow(c, { url = url, protocol = rev }, "h1")
          c:send(H.cancel_msg(id, "enough"))
          srv:expect_stderr("fixture: slow stopped h1 reason=" .. on_cancel, nil, { plain = true })
          c:expect_stderr("fixture: call slow returned false cancelled: enough [cancelled]", nil, { plain = true })
        end)

        it("when the tool times out", function()
          local srv, url = http_upstream()
          local c = gateway()
          start_slow(c, { url = url, protocol = rev }, "h2", "call_t1")
          srv:expect_stderr("fixture: slow stopped h2 reason=" .. on_timeout, nil, { plain = true })
        end)

        it("when opts.timeout passes", function()
          local srv, url = http_upstream()
          local c = gateway()
          local resp = c:call("call", { conn = { url = url, protocol = rev }, tool = "slow", args = { tag = "h3" },
                                        timeout = 0.3 })
          assert.matches("timeout", H.text(resp), 1, true)
          srv:expect_stderr("fixture: slow stopped h3 reason=" .. on_opts, nil, { plain = true })
        end)
      end)
    end

    it("cancels upstream at shutdown (a session: notifications/cancelled during the shutdown)", function()
      local srv, url = http_upstream()
      local c = gateway()
      start_slow(c, { url = url, protocol = "2025-11-25" }, "h4")
      assert.are.equal(0, c:close())
      srv:expect_stderr("fixture: slow stopped h4 reason=", nil, { plain = true })
    end)

    it("reconnects when its session is gone (HTTP 404)", function()
      local srv, url = http_upstream()
      local conn = { url = url, protocol = "2025-11-25" }
      local c = gateway()
      assert.are.equal("echo: 1", call(c, conn, "echo", { text = "1" }).content[1].text)
      srv:kill("sigterm")
      srv:wait_exit(10)
      http_upstream(url:match("//([^/]+)/"))         -- the same port: the old session is unknown there
      assert.are.equal("echo: 2", call(c, conn, "echo", { text = "2" }).content[1].text)
      c:expect_stderr("session is gone", nil, { plain = true })
    end)

    it("gives nil, message for what is not an MCP endpoint", function()
      local _, url = http_upstream()
      local c = gateway()
      local r = call(c, { url = url:gsub("/mcp$", "/nope") }, "echo", { text = "x" })
      assert.is_true(r.isError)
      assert.matches("Not Found: the MCP endpoint is /mcp", r.content[1].text, 1, true)
      assert.matches("[protocol]", r.content[1].text, 1, true)
      local port = url:match(":(%d+)/")
      stop_http()                                    -- nothing listens there now
      r = call(c, { url = "http://127.0.0.1:" .. port .. "/mcp" }, "echo", { text = "x" })
      assert.is_true(r.isError)
      assert.matches("server/discover.*%[unreachable%]", r.content[1].text)
      assert.is_true(c:alive())
    end)
  end)
end)

---------------------------------------------------------------------------
-- The official TypeScript SDK servers as upstreams (spec/sdk_server/*.mjs).

if N.skipped then
  describe("mcp.connect to the TypeScript SDK servers", function()
    pending("skipped: LUAMCP_SKIP_NODE=1 (needs Node 22 and the SDK from npm)")
  end)
  return
end

local ENV

-- A node server in the background: its stderr lines, and the port it says it listens on.
local function node_http(script, args)
  local p = { stderr = {}, out = {} }
  local stdout, stderr = uv.new_pipe(false), uv.new_pipe(false)
  local argv = { ENV.dir .. "/" .. script }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  p.proc = assert(uv.spawn(ENV.node, { args = argv, stdio = { nil, stdout, stderr } },
                           function(code) p.exited, p.code = true, code end))
  local buf = ""
  stderr:read_start(function(_, d)
    if not d then return end
    buf = buf .. d
    for line in buf:gmatch("([^\n]*)\n") do p.stderr[#p.stderr + 1] = line end
    buf = buf:match("[^\n]*$")
  end)
  stdout:read_start(function() end)
  p.pipes = { stdout, stderr }
  local port
  H.run_until(function()
    for _, l in ipairs(p.stderr) do port = port or l:match("listening on (%d+)") end
    return port ~= nil or p.exited
  end, 20)
  assert(port, "the node server did not listen: " .. table.concat(p.stderr, "\n"))
  p.url = "http://127.0.0.1:" .. port .. "/mcp"
  function p.wait_stderr(text)
    return H.run_until(function()
      for _, l in ipairs(p.stderr) do if l:find(text, 1, true) then return true end end
      return false
    end, 10)
  end
  function p.stop()
    if not p.exited then p.proc:kill("sigterm") end
    H.run_until(function() return p.exited end, 5)
    for _, h in ipairs { stdout, stderr, p.proc } do if not h:is_closing() then h:close() end end
  end
  return p
end

describe("mcp.connect to the TypeScript SDK servers", function()
  local nodes = {}
  setup(function() ENV = N.prepare("sdk_server") end)
  teardown(function() N.remove(ENV) end)
  after_each(function()
    for _, p in ipairs(nodes) do p.stop() end
    nodes = {}
    H.cleanup()
  end)

  -- v1 (@modelcontextprotocol/sdk): 2025-11-25 sessions; v2 (@modelcontextprotocol/server): 2026-07-28.
  for _, case in ipairs { { "v1", "server_v1.mjs", "2025-11-25" }, { "v2", "server_v2.mjs", "2026-07-28" } } do
    local name, script, rev = case[1], case[2], case[3]

    it(name .. " over stdio: lists, calls, relays progress, and a client cancel stops its handler", function()
      local c = gateway()
      local conn = { command = { ENV.node, ENV.dir .. "/" .. script, "stdio" }, name = "sdk" }
      local r = call(c, conn, "echo", { text = "hi" })
      assert.are.equal("echo: hi", r.content[1].text, cjson.encode(r) .. c:stderr_text())
      assert.are.equal(rev, r.structuredContent.revision)
      local id = start_slow(c, conn, "n1")
      c:send(H.cancel_msg(id, "enough"))
      c:expect_stderr("upstream sdk: sdk: slow aborted n1", nil, { plain = true })
    end)

    it(name .. " over Streamable HTTP: calls, and cancels on opts.timeout", function()
      local p = node_http(script, { "http" })
      nodes[#nodes + 1] = p
      local c = gateway()
      local r = call(c, { url = p.url }, "echo", { text = "hi" })
      assert.are.equal("echo: hi", r.content[1].text, cjson.encode(r) .. c:stderr_text())
      assert.are.equal(rev, r.structuredContent.revision)
      local resp = c:call("call", { conn = { url = p.url }, tool = "slow", args = { tag = "n2" }, timeout = 0.5 })
      assert.matches("timeout", H.text(resp), 1, true)
      assert.is_true(p.wait_stderr("sdk: slow aborted n2"), table.concat(p.stderr, "\n"))
    end)
  end
end)
