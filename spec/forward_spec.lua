-- A mounted tool's call forwarded from C (src/lua/forward.c): on the C path,
-- a mount with no wrap and no timeout over a stdio upstream at 2026-07-28
-- writes the call upstream and splices the answer without Lua; the answers
-- are the Lua path's (LUAMCP_LUA_PATH=1 runs this spec there too). The
-- upstream is luamcp itself (spec/fixtures/upstream).
local H = require "spec.helper"
local uv = H.uv

local UP = H.fixtures .. "/upstream"
local dirs = {}

-- mount: more of the mount's fields, as Lua text
local function serve(args, caps, mount)
  local d = assert(uv.fs_mkdtemp("/tmp/luamcp-fwd-XXXXXX"))
  dirs[#dirs + 1] = d
  local f = assert(io.open(d .. "/gw.lua", "w"))
  f:write(string.format([[
local mcp = require "mcp"
return mcp.plugin { name = "up", mount = { command = { %q, "--plugins", %q }, prefix = "up_", %s } }
]], H.binary(), UP, mount or ""))
  f:close()
  local c = H.start { plugins = { d }, args = args or {} }
  local resp = c:request("initialize", { protocolVersion = H.LATEST, capabilities = caps or {},
                                         clientInfo = { name = "spec", version = "0" } })
  assert(resp.result, c:stderr_text())
  c:send { jsonrpc = "2.0", method = "notifications/initialized" }
  assert.are.equal(5, #c:request("tools/list", {}).result.tools)   -- the tools known: the C path
  return c
end

local metrics = H.metrics

-- The value of a sample of /metrics (0 when it is not there).
local function sample(text, name)
  return tonumber(text:match("\n" .. H.esc(name) .. " (%d+)")) or 0
end

local function slow(c, id, tag, meta)
  c:send { jsonrpc = "2.0", id = id, method = "tools/call",
           params = { name = "up_slow", arguments = { tag = tag, delay = 0.05, steps = 10 }, _meta = meta } }
end

local function response(c, id)
  return assert(c:take(function(m) return m.id == id and m.method == nil end, 10), c:stderr_text())
end

describe("forward (a mounted tool's call written upstream from C)", function()
  after_each(function()
    H.cleanup()
    for _, d in ipairs(dirs) do os.execute("rm -rf '" .. d .. "'") end
    dirs = {}
  end)

  it("answers with the upstream's result, its isError result and its JSON-RPC error as they were", function()
    local c = serve()
    for i = 1, 3 do assert.are.equal("echo: hi " .. i, H.text(c:call("up_echo", { text = "hi " .. i }))) end
    local text = "a \"quoted\" \\ caf\u{e9} \u{1F600} \n end"
    assert.are.equal("echo: " .. text, H.text(c:call("up_echo", { text = text })))
    local bad = c:call("up_echo", {})                 -- the upstream's own argument check
    assert.is_true(bad.result.isError)
    assert.matches("text", H.text(bad))
    assert.are.same({ code = -32099, message = "custom failure" }, c:call("up_fail", {}).error)
  end)

  it("forwards our client's cancel with its reason; no response goes out", function()
    local c = serve({ "--log-level", "debug" })
    slow(c, 7, "c1")
    c:expect_stderr("upstream up: fixture: slow started c1", nil, { plain = true })
    c:send(H.cancel_msg(7, "stop it"))
    c:expect_stderr("upstream up: fixture: slow stopped c1 reason=stop it", nil, { plain = true })
    c:expect_stderr("upstream up: request %d+ %(tools/call%) cancelled upstream: stop it")
    c:no_response(0.2)
    assert.are.equal("echo: after", H.text(c:call("up_echo", { text = "after" })))
  end)

  it("tells the upstream of a call's timeout and answers it timed out", function()
    local c = serve({ "--timeout", "0.3" })
    slow(c, 8, "t1")
    local r = response(c, 8)
    assert.is_true(r.result.isError)
    assert.matches("timed out after 0.3 seconds", H.text(r))
    c:expect_stderr("upstream up: fixture: slow stopped t1 reason=timeout", nil, { plain = true })
    assert.are.equal("echo: after", H.text(c:call("up_echo", { text = "after" })))
  end)

  it("keeps the mount's cancel policy: ignore answers all the same, abort stops at once", function()
    local c = serve(nil, nil, 'cancel = "ignore"')
    slow(c, 9, "i1")
    c:expect_stderr("upstream up: fixture: slow started i1", nil, { plain = true })
    c:send(H.cancel_msg(9, "no matter"))
    assert.are.equal("done i1", H.text(response(c, 9)))
    H.cleanup()
    c = serve({ "--log-level", "debug" }, nil, 'cancel = "abort"')
    slow(c, 10, "a1")
    if os.getenv("LUAMCP_LUA_PATH") ~= "1" then            -- held: no coroutine (sched.c)
      c:expect_stderr("request 10: running -> held (hold)", nil, { plain = true })
    end
    c:expect_stderr("upstream up: fixture: slow started a1", nil, { plain = true })
    c:send(H.cancel_msg(10, "now"))
    c:expect_stderr("upstream up: fixture: slow stopped a1 reason=now", nil, { plain = true })
    c:no_response(0.2)
    assert.are.equal("echo: after", H.text(c:call("up_echo", { text = "after" })))
  end)

  it("fails every call in flight as the Lua path does when the upstream dies, then reconnects", function()
    local c = serve()
    slow(c, 11, "k1")
    slow(c, 12, "k2")
    c:expect_stderr("upstream up: fixture: slow started k2", nil, { plain = true })
    c:send { jsonrpc = "2.0", id = 13, method = "tools/call", params = { name = "up_die", arguments = {} } }
    for id = 11, 13 do
      local r = response(c, id)
      assert.is_true(r.result.isError)
      assert.are.equal("the upstream exited with code 3", H.text(r))
    end
    assert.are.equal("echo: back", H.text(c:call("up_echo", { text = "back" })))
  end)

  it("answers a call in flight when its mount goes (the plugin removed) as the Lua path does", function()
    local c = serve({ "--watch" })
    c:send { jsonrpc = "2.0", id = 51, method = "tools/call",
             params = { name = "up_slow", arguments = { tag = "g1", delay = 0.05, steps = 100 } } }
    c:expect_stderr("upstream up: fixture: slow started g1", nil, { plain = true })
    os.remove(dirs[#dirs] .. "/gw.lua")
    local r = response(c, 51)
    assert.is_true(r.result.isError, c:stderr_text())
    assert.are.equal("closed by its owner", H.text(r))
  end)

  it("forwards no call from C once the upstream sent us a request (which call it is for is client.lua's to find)",
     function()
    local d = assert(uv.fs_mkdtemp("/tmp/luamcp-fwd-XXXXXX"))
    dirs[#dirs + 1] = d
    local f = assert(io.open(d .. "/gw.lua", "w"))
    f:write(string.format([[
local mcp = require "mcp"
return mcp.plugin { name = "up", mount = { command = { "lua5.4", %q }, prefix = "up_" } }
]], H.fixtures .. "/fake_upstream/asks.lua"))
    f:close()
    local c = H.start { plugins = { d }, args = { "--log-level", "debug" } }
    assert(c:request("initialize", { protocolVersion = H.LATEST, capabilities = {},
                                     clientInfo = { name = "spec", version = "0" } }).result, c:stderr_text())
    c:send { jsonrpc = "2.0", method = "notifications/initialized" }
    assert.are.equal(2, #c:request("tools/list", {}).result.tools)
    assert.are.equal("asked: error", H.text(c:call("up_asker", {})))
    assert.are.equal("plain", H.text(c:call("up_plain", {})))
    assert.are.equal("plain", H.text(c:call("up_plain", {})))
    local held = select(2, c:stderr_text():gsub("running %-> held", ""))
    assert.are.equal(os.getenv("LUAMCP_LUA_PATH") == "1" and 0 or 1, held, c:stderr_text())
  end)

  it("takes ids from the connection's own counter: a Lua-path call in flight on it never clashes", function()
    local c = serve()
    slow(c, 21, "lua", { progressToken = "p" })       -- a progressToken: the Lua path (client.lua)
    assert(c:wait_notification("notifications/progress", function(x) return x.progressToken == "p" end),
           c:stderr_text())
    for i = 1, 20 do
      c:send(H.call_raw(tostring(100 + i), "up_echo", { text = "n" .. i }))
    end
    for i = 1, 20 do assert.are.equal("echo: n" .. i, H.text(response(c, 100 + i))) end
    assert.are.equal("done lua", H.text(response(c, 21)))
  end)

  it("answers an upstream's input round (sampling) through our client, without sending the call again", function()
    local c = serve(nil, { sampling = {} })
    c:send { jsonrpc = "2.0", id = 31, method = "tools/call", params = { name = "up_ask", arguments = {} } }
    local req = assert(c:take(function(m) return m.method == "sampling/createMessage" end, 10), c:stderr_text())
    c:send { jsonrpc = "2.0", id = req.id, result = { role = "assistant", model = "m",
                                                     content = { type = "text", text = "hi" } } }
    assert.are.equal("sampled: hi", H.text(response(c, 31)))
    -- the upstream's handler ran twice: asking, then answered (the first request is not sent again)
    local function runs() return select(2, c:stderr_text():gsub("fixture: ask runs", "")) end
    H.until_equal(runs, 2)
    assert.are.equal("echo: then", H.text(c:call("up_echo", { text = "then" })))
    assert.are.equal(2, runs(), c:stderr_text())
  end)

  it("counts its upstream requests in /metrics as the Lua path does", function()
    local port = H.free_port()
    local c = serve({ "--metrics", "127.0.0.1:" .. port })
    local R, D = "luamcp_upstream_requests_total", "mcp_client_operation_duration_seconds_count"
    local function tool(name, etype)
      return ('%s{mcp_method_name="tools/call",gen_ai_tool_name="%s",error_type="%s"}'):format(D, name, etype)
    end
    local before = metrics(port)
    c:call("up_echo", { text = "1" })
    c:call("up_echo", { text = "2" })
    c:call("up_fail", {})
    slow(c, 41, "m1")
    c:expect_stderr("upstream up: fixture: slow started m1", nil, { plain = true })
    c:send(H.cancel_msg(41, "enough"))
    local text
    assert.truthy(H.poll_until(function()
      text = metrics(port)
      return sample(text, tool("slow", "cancelled")) > 0
    end, 5), text)
    local function delta(name) return sample(text, name) - sample(before, name) end
    assert.are.equal(2, delta(R .. '{outcome="ok"}'))
    assert.are.equal(1, delta(R .. '{outcome="error"}'))
    assert.are.equal(1, delta(R .. '{outcome="cancelled"}'))
    assert.are.equal(2, delta(tool("echo", "")))
    assert.are.equal(1, delta(tool("fail", "-32099")))
    assert.are.equal(1, delta(tool("slow", "cancelled")))
  end)
end)
