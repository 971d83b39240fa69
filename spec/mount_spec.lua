-- mcp.plugin{mount = ...}: another MCP server's tools, resources and prompts
-- served as the plugin's own (lua/mcp/mount.lua). The upstream is luamcp
-- itself (spec/fixtures/upstream) over stdio, and the reference server
-- @modelcontextprotocol/server-everything (npm, through test/node-env.sh).
-- The mounting plugins are written into a temporary directory per test.
local H = require "spec.helper"
local N = require "spec.node_helper"
local O = require "spec.origin"
local OH = require "spec.otel_helper"
local uv, cjson = H.uv, H.cjson

local UP = H.fixtures .. "/upstream"
local dirs = {}

local function tmpdir()
  local d = assert(uv.fs_mkdtemp("/tmp/luamcp-mount-XXXXXX"))
  dirs[#dirs + 1] = d
  return d
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function lua_list(t)
  local out = {}
  for i, v in ipairs(t) do out[i] = string.format("%q", v) end
  return "{ " .. table.concat(out, ", ") .. " }"
end

-- A plugin directory with one mounting plugin: mount = { command = cmd, <fields> }.
local function gateway_dir(cmd, fields, name)
  local d = tmpdir()
  write(d .. "/" .. (name or "gw") .. ".lua", string.format([[
local mcp = require "mcp"
return mcp.plugin { name = "up", mount = { command = %s, %s } }
]], lua_list(cmd), fields or 'prefix = "up_"'))
  return d
end

local function upstream_cmd(...)
  local cmd = { H.binary(), "--plugins", UP }
  for _, a in ipairs { ... } do cmd[#cmd + 1] = a end
  return cmd
end

local function serve(dir, args)
  local a = {}
  for _, x in ipairs(args or {}) do a[#a + 1] = x end
  local c = H.start { plugins = { dir }, args = a }
  c:initialize()
  return c
end

local function names(list, field)
  local out = {}
  for _, x in ipairs(list) do out[#out + 1] = x[field or "name"] end
  table.sort(out)
  return out
end

local function find(list, name, field)
  for _, x in ipairs(list) do if x[field or "name"] == name then return x end end
end

local function alive(pid) return uv.fs_stat(string.format("/proc/%d", pid)) ~= nil end

-- The pid of the child our server started (its debug line), and the line's index.
local function child_pid(c, since)
  local line, idx = c:expect_stderr("debug: started .* %(pid %d+%)$", nil, { since = since })
  return tonumber(line:match("%(pid (%d+)%)$")), idx
end

describe("mount", function()
  after_each(function()
    H.cleanup()
    for _, d in ipairs(dirs) do os.execute("rm -rf '" .. d .. "'") end
    dirs = {}
  end)

  it("serves the upstream's tools, resources and prompts as its own, names prefixed", function()
    local c = serve(gateway_dir(upstream_cmd()))
    assert.is_true(c.init_result.capabilities.tools.listChanged)
    local tools = c:request("tools/list", {}).result.tools
    assert.are.same({ "up_ask", "up_die", "up_echo", "up_fail", "up_slow" }, names(tools))
    local echo = find(tools, "up_echo")
    assert.are.equal("Echo", echo.title)
    assert.are.equal("Echoes its text", echo.description)
    assert.are.same({ "text" }, echo.inputSchema.required)
    assert.are.equal("what to echo", echo.inputSchema.properties.text.description)
    assert.are.same({ readOnlyHint = true, title = "Echo it" }, echo.annotations)
    assert.are.equal("echo: hi", H.text(c:call("up_echo", { text = "hi" })))
    -- the upstream checks the arguments; its JSON-RPC errors are passed on
    local bad = c:call("up_echo", {})
    assert.is_true(bad.result.isError)
    assert.matches("text", H.text(bad))
    assert.are.same({ code = -32099, message = "custom failure" }, c:call("up_fail", {}).error)

    local res = c:request("resources/list", {}).result.resources
    assert.are.equal("up://readme", res[1].uri)
    assert.are.equal("up_readme", res[1].name)
    assert.are.equal("up://item/{id}", c:request("resources/templates/list", {}).result.resourceTemplates[1].uriTemplate)
    assert.are.equal("upstream readme", c:request("resources/read", { uri = "up://readme" }).result.contents[1].text)
    assert.are.equal("item 42", c:request("resources/read", { uri = "up://item/42" }).result.contents[1].text)

    local prompts = c:request("prompts/list", {}).result.prompts
    assert.are.equal("up_greet", prompts[1].name)
    assert.are.same({ { name = "who", required = true } }, prompts[1].arguments)
    local got = c:request("prompts/get", { name = "up_greet", arguments = { who = "all" } }).result
    assert.are.equal("hello all", got.messages[1].content.text)
  end)

  it("connects on first use, even when a call comes before any list", function()
    local c = serve(gateway_dir(upstream_cmd()))
    assert.are.equal(0, c:count_stderr("upstream up: connected", true))
    assert.are.equal("echo: first", H.text(c:call("up_echo", { text = "first" })))
    assert.are.equal(1, c:count_stderr("upstream up: connected", true))
  end)

  it("answers every call that came while its lists were first fetched (thousands of them)", function()
    -- the fetcher wakes the calls that waited for it only once the registry
    -- has the tools: its time slice may end while it wakes thousands
    local c = serve(gateway_dir(upstream_cmd(), 'prefix = "up_", timeout = 0'), { "--log-level", "warning" })
    local n, parts = 3000, {}
    for i = 1, n do parts[i] = H.call_raw(tostring(1000 + i), "up_echo", { text = "x" }) end
    c:send(table.concat(parts))
    local bad = 0
    for _ = 1, n do
      local m = assert(c:take(function(msg) return H.is_response(msg) end, 30))
      if m.error or m.result.isError then bad = bad + 1 end
    end
    assert.are.equal(0, bad)
  end)

  it("passes the upstream's result on as it wrote it, without what a 2026-07-28 result says about itself", function()
    local up = tmpdir()
    write(up .. "/data.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "data", tools = { mcp.tool {
  name = "data", outputSchema = { type = "object", properties = { n = { type = "integer" } } },
  handler = function() return { content = { { type = "text", text = "n=1" } }, structuredContent = { n = 1 },
                                _meta = { ["x/y"] = "z" } } end } } }
]])
    local c = serve(gateway_dir({ H.binary(), "--plugins", up }, 'prefix = "up_"'))
    local _, _, raw = c:request("tools/call", { name = "up_data", arguments = {} })
    local r = cjson.decode(raw).result
    assert.are.same({ n = 1 }, r.structuredContent)
    assert.are.same({ ["x/y"] = "z" }, r._meta)
    assert.are.equal("n=1", r.content[1].text)
    assert.is_nil(r.resultType)
    assert.is_nil(raw:find("ttlMs", 1, true))
    -- a 2026-07-28 client of ours gets our one resultType
    local meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
                   ["io.modelcontextprotocol/clientCapabilities"] = {} }
    _, _, raw = c:request("tools/call", { name = "up_data", arguments = {}, _meta = meta })
    assert.are.equal("complete", cjson.decode(raw).result.resultType)
    assert.are.equal(1, select(2, raw:gsub('"resultType"', "")))
  end)

  it("keeps only the tools it is told to (a list, or a function)", function()
    local c = serve(gateway_dir(upstream_cmd(), 'prefix = "a_", tools = { "echo", "slow" }'))
    assert.are.same({ "a_echo", "a_slow" }, names(c:request("tools/list", {}).result.tools))
    c = serve(gateway_dir(upstream_cmd(), 'tools = function(t) return t.name:find("^[ef]") ~= nil end'))
    assert.are.same({ "echo", "fail" }, names(c:request("tools/list", {}).result.tools))
    assert.are.equal(-32602, c:call("die", {}).error.code)
  end)

  it("leaves out the names another plugin has, with a warning", function()
    local d = gateway_dir(upstream_cmd(), 'prefix = ""')
    write(d .. "/own.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "own", tools = { mcp.tool { name = "echo", handler = function() return "mine" end } } }
]])
    local c = serve(d)
    assert.are.same({ "ask", "die", "echo", "fail", "slow" }, names(c:request("tools/list", {}).result.tools))
    c:expect_stderr('tool "echo" is already defined by plugin "own": left out', nil, { plain = true })
    assert.are.equal("mine", H.text(c:call("echo", { text = "x" })))
    assert.are.equal("done -", H.text(c:call("slow", { steps = 1, delay = 0 })))
  end)

  it("starts the upstream with env added to the server's environment (false removes a name)", function()
    local cmd = { H.binary(), "--plugins", H.fixtures .. "/upstream_env" }
    local c = serve(gateway_dir(cmd, 'prefix = "up_", env = { SPEC_ADDED = "yes", HOME = false }'))
    c:request("tools/list", {})
    local text = H.text(c:call("up_getenv", { names = { "SPEC_ADDED", "HOME", "PATH" } }))
    assert.matches("^SPEC_ADDED=yes HOME=unset PATH=", text)
    assert.is_nil(text:find("PATH=unset", 1, true), text)
  end)

  it("forwards arguments as they came, and a middleware still rewrites them", function()
    local c = serve(gateway_dir(upstream_cmd()))
    -- without wrap the arguments go on as the JSON text they came as (fastpath.c)
    local text = "a \"quoted\" \\ caf\u{e9} \u{1F600} \n end"
    assert.are.equal("echo: " .. text, H.text(c:call("up_echo", { text = text })))
    c:close()
    local d = gateway_dir(upstream_cmd())
    write(d .. "/mw.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "mw", middleware = { mcp.middleware {
  name = "upper", methods = { "tools/call" },
  handler = function(req, ctx, next)
    if req.params.name == "up_echo" then req.params.arguments.text = req.params.arguments.text:upper() end
    return next(req)
  end } } }
]])
    c = serve(d)
    assert.are.equal("echo: HELLO", H.text(c:call("up_echo", { text = "hello" })))
  end)

  it("lets wrap check and rewrite arguments and results", function()
    local c = serve(gateway_dir(upstream_cmd(), [[prefix = "w_",
      wrap = function(name, args, ctx, call)
        if args.text == "forbidden" then return mcp.error(name .. ": not allowed") end
        if args.text == "nil" then return nil, "refused by wrap", "denied" end
        if args.text == "rpc" then return mcp.rpc_error(-32010, "wrap says no") end
        if args.text then args.text = args.text:upper() end
        local r, msg, err = call(args)
        if not r then return mcp.error(msg) end
        r.content[1].text = r.content[1].text .. " (via " .. name .. ")"
        return r
      end]]))
    assert.are.equal("echo: LOUD (via w_echo)", H.text(c:call("w_echo", { text = "loud" })))
    local r = c:call("w_echo", { text = "forbidden" })
    assert.is_true(r.result.isError)
    assert.are.equal("w_echo: not allowed", H.text(r))
    r = c:call("w_echo", { text = "nil" })           -- wrap returns what a handler returns
    assert.is_true(r.result.isError)
    assert.are.equal("refused by wrap", H.text(r))
    assert.are.same({ code = -32010, message = "wrap says no" }, c:call("w_echo", { text = "rpc" }).error)
  end)

  it("reads what wrap returns raw, and says what is malformed in it", function()
    local c = serve(gateway_dir(upstream_cmd(), [[prefix = "w_",
      wrap = function(name, args, ctx, call)
        local function loop() while true do end end
        local M = { __index = loop, __len = loop, __pairs = loop, __eq = loop, __tostring = loop }
        if args.text == "hostile" then return { content = setmetatable({ { type = "text", text = "h" } }, M) } end
        if args.text == "hostile_error" then error(setmetatable({}, M)) end
        if args.text == "oops" then return { content = "oops" } end
        return call(args)
      end]]))
    assert.are.equal("h", H.text(c:call("w_echo", { text = "hostile" })))
    local r = c:call("w_echo", { text = "hostile_error" })
    assert.is_true(r.result.isError)
    assert.are.equal("(an error object, a table, whose __tostring did not return within 50 ms)", H.text(r))
    r = c:call("w_echo", { text = "oops" })
    assert.is_true(r.result.isError)
    assert.are.equal('content is a string ("oops"): expected a list of content items, such as ' ..
                     '{ { type = "text", text = "..." } }', H.text(r))
    assert.truthy(c:request("ping").result)
    assert.truthy(c:stderr_text():find("warning: tool w_echo (plugin ", 1, true), c:stderr_text())
  end)

  it("forwards progress, and a cancel stops the upstream handler", function()
    local c = serve(gateway_dir(upstream_cmd()))
    c:request("tools/list", {})
    c:send { jsonrpc = "2.0", id = 9, method = "tools/call",
             params = { name = "up_slow", arguments = { tag = "m1", delay = 0.05 }, _meta = { progressToken = "pm" } } }
    local p = c:wait_notification("notifications/progress", function(x) return x.progressToken == "pm" end)
    assert(p, c:stderr_text())
    assert.are.equal(200, p.params.total)
    assert.are.equal("step 1", p.params.message)
    c:send(H.cancel_msg(9, "stop it"))
    c:expect_stderr("upstream up: fixture: slow stopped m1 reason=stop it", nil, { plain = true })
    c:no_response(0.2)
  end)

  it("applies its timeout to the mounted tools, which stops the upstream handler", function()
    local c = serve(gateway_dir(upstream_cmd(), 'prefix = "up_", timeout = 0.5'))
    local r = c:call("up_slow", { tag = "m2" })         -- before any list: not known when it arrived
    assert.is_true(r.result.isError)
    c:expect_stderr("upstream up: fixture: slow stopped m2 reason=timeout", nil, { plain = true })
    r = c:call("up_slow", { tag = "m3" })               -- known: the tool's own policy
    assert.is_true(r.result.isError)
    assert.matches("timed out", H.text(r))
    c:expect_stderr("upstream up: fixture: slow stopped m3 reason=timeout", nil, { plain = true })
  end)

  it("re-announces the upstream's list_changed, and lists the new tools", function()
    local updir = tmpdir()
    os.execute(string.format("cp '%s/upstream.lua' '%s/'", UP, updir))
    local c = serve(gateway_dir({ H.binary(), "--plugins", updir, "--watch" }))
    assert.are.equal(5, #c:request("tools/list", {}).result.tools)
    local seen = #c.notes
    write(updir .. "/extra.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "extra", tools = { mcp.tool { name = "extra", handler = function() return "more" end } } }
]])
    assert(c:wait_notification("notifications/tools/list_changed", nil, 5, seen), c:stderr_text())
    local tools = c:request("tools/list", {}).result.tools
    assert.is_not_nil(find(tools, "up_extra"), cjson.encode(names(tools)))
    assert.are.equal("more", H.text(c:call("up_extra", {})))
  end)

  for _, rev in ipairs { "auto", "2025-11-25" } do
    it("re-announces list_changed from an HTTP upstream (" .. rev .. ")", function()
      local updir = tmpdir()
      os.execute(string.format("cp '%s/upstream.lua' '%s/'", UP, updir))
      local up = H.start { plugins = { updir }, args = { "--http", "127.0.0.1:0", "--watch" } }
      local url = up:expect_stderr("listening on http://127%.0%.0%.1:%d+/mcp"):match("(http://[^ ]+/mcp)")
      local d = tmpdir()
      write(d .. "/gw.lua", string.format([[
local mcp = require "mcp"
return mcp.plugin { name = "up", mount = { url = %q, protocol = %q, prefix = "h_" } }
]], url, rev))
      local c = serve(d)
      assert.are.equal(5, #c:request("tools/list", {}).result.tools)
      assert.are.equal("echo: over http", H.text(c:call("h_echo", { text = "over http" })))
      local seen = #c.notes
      H.pump(0.2)                                 -- the notification stream is open
      write(updir .. "/extra.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "extra", tools = { mcp.tool { name = "extra", handler = function() return "more" end } } }
]])
      assert(c:wait_notification("notifications/tools/list_changed", nil, 5, seen), c:stderr_text())
      assert.is_not_nil(find(c:request("tools/list", {}).result.tools, "h_extra"))
      c:close()
      up:kill("sigterm")
      assert.are.equal(0, up:wait_exit(10))
    end)
  end

  it("reconnects after its child died (and the child is reaped)", function()
    local c = serve(gateway_dir(upstream_cmd()), { "--log-level", "debug" })
    c:request("tools/list", {})
    local pid, idx = child_pid(c)
    local r = c:call("up_die", {})
    assert.is_true(r.result.isError)
    assert.matches("exited with code 3", H.text(r))
    assert.is_true(H.run_until(function() return not alive(pid) end, 2))
    assert.are.equal("echo: back", H.text(c:call("up_echo", { text = "back" })))
    assert.are_not.equal(pid, (child_pid(c, idx)))
  end)

  it("reconnects when its plugin file is reloaded; the old child is stopped", function()
    local d = gateway_dir(upstream_cmd())
    local c = serve(d, { "--watch", "--log-level", "debug" })
    assert.are.equal("echo: 1", H.text(c:call("up_echo", { text = "1" })))
    local pid = child_pid(c)
    local seen = #c.notes
    write(d .. "/gw.lua", string.format([[
local mcp = require "mcp"
return mcp.plugin { name = "up", mount = { command = %s, prefix = "up2_" } }
]], lua_list(upstream_cmd())))
    assert(c:wait_notification("notifications/tools/list_changed", nil, 5, seen), c:stderr_text())
    assert.is_true(H.run_until(function() return not alive(pid) end, 3), "the old child still runs")
    assert.are.same({ "up2_ask", "up2_die", "up2_echo", "up2_fail", "up2_slow" },
                    names(c:request("tools/list", {}).result.tools))
    assert.are.equal("echo: 2", H.text(c:call("up2_echo", { text = "2" })))
  end)

  it("stops the child at shutdown: its handler stops, nothing is left behind", function()
    local c = serve(gateway_dir(upstream_cmd()), { "--log-level", "debug" })
    c:request("tools/list", {})
    local pid = child_pid(c)
    c:send { jsonrpc = "2.0", id = 5, method = "tools/call",
             params = { name = "up_slow", arguments = { tag = "m3" }, _meta = { progressToken = 5 } } }
    assert(c:wait_notification("notifications/progress"))
    assert.are.equal(0, c:close())
    assert.truthy(c:wait_stderr("upstream up: fixture: slow stopped m3 reason=shutdown", 1, { plain = true }))
    assert.is_false(alive(pid))
  end)

  it("serves its own part when the upstream is not MCP, and never crashes", function()
    local d = tmpdir()
    write(d .. "/gw.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "bad", mount = { command = { "sh", "-c", "echo garbage; sleep 5" }, connect_timeout = 1 },
  tools = { mcp.tool { name = "own", handler = function() return "mine" end } } }
]])
    local c = serve(d)
    assert.are.same({ "own" }, names(c:request("tools/list", {}).result.tools))
    c:expect_stderr("plugin bad: mount:", nil, { plain = true })
    assert.are.equal("mine", H.text(c:call("own", {})))
    assert.are.equal(-32602, c:call("nope", {}).error.code)
    assert.is_true(c:alive())
  end)

  it("shows in luamcp list", function()
    local d = gateway_dir(upstream_cmd())
    local p = io.popen(string.format("'%s' list --plugins '%s' 2>&1", H.binary(), d))
    local out = p:read("a")
    p:close()
    assert.matches("Tools %(5%)", out)
    assert.matches("\nup_echo %(Echo%)\n  Echoes its text\n  plugin: up ", out)
    assert.matches("    text: string %(required%) %- what to echo", out)
    assert.matches("Resources %(1%)", out)
    assert.matches("up_greet", out, 1, true)
  end)
end)

---------------------------------------------------------------------------

if N.skipped then
  describe("mount of server-everything", function()
    pending("skipped: LUAMCP_SKIP_NODE=1 (needs Node 22 and @modelcontextprotocol/server-everything from npm)")
  end)
  return
end

describe("mount of @modelcontextprotocol/server-everything", function()
  local ENV
  setup(function() ENV = N.prepare("sdk_server") end)
  teardown(function() N.remove(ENV) end)
  after_each(function()
    H.cleanup()
    for _, d in ipairs(dirs) do os.execute("rm -rf '" .. d .. "'") end
    dirs = {}
  end)

  it("serves its tools, prompts and resources; calls go through with progress", function()
    local everything = ENV.cache .. "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    local c = serve(gateway_dir({ ENV.node, everything, "stdio" }, 'prefix = "ev_"'))
    local tools = c:request("tools/list", {}).result.tools
    for _, n in ipairs { "ev_echo", "ev_get-sum", "ev_trigger-long-running-operation" } do
      assert.is_not_nil(find(tools, n), n .. " not in " .. cjson.encode(names(tools)) .. "\n" .. c:stderr_text())
    end
    assert.are.equal("Echo: hi", H.text(c:call("ev_echo", { message = "hi" })))
    assert.matches("5", H.text(c:call("ev_get-sum", { a = 2, b = 3 })))

    c:send { jsonrpc = "2.0", id = 77, method = "tools/call", params = { name = "ev_trigger-long-running-operation",
             arguments = { duration = 0.3, steps = 3 }, _meta = { progressToken = "ev" } } }
    local resp = c:take(function(m) return m.id == 77 end)
    assert(resp and resp.result, cjson.encode(resp))
    local n = 0
    for _, m in ipairs(c.notes) do
      if m.method == "notifications/progress" and m.params.progressToken == "ev" then n = n + 1 end
    end
    assert.are.equal(3, n)

    local prompts = c:request("prompts/list", {}).result.prompts
    assert.is_not_nil(find(prompts, "ev_simple-prompt"))
    local got = c:request("prompts/get", { name = "ev_simple-prompt", arguments = {} }).result
    assert.is_true(#got.messages >= 1)
    local tpls = c:request("resources/templates/list", {}).result.resourceTemplates
    assert.is_true(#tpls >= 1, c:stderr_text())
    local read = c:request("resources/read", { uri = "demo://resource/dynamic/text/1" })
    assert(read.result, cjson.encode(read))
    assert.is_true(#read.result.contents >= 1)
  end)

  -- it does not speak 2026-07-28: server/discover gets -32601, then initialize
  it("traced: its refused server/discover is the expected fallback, not an error span", function()
    local o = O.start()
    finally(function() o:stop() end)
    local everything = ENV.cache .. "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    local port = H.free_port()
    local c = H.start { plugins = { gateway_dir({ ENV.node, everything, "stdio" }, 'prefix = "ev_"') },
                        args = { "--metrics", "127.0.0.1:" .. port }, env = OH.env(o.url .. "/status/200") }
    c:initialize()
    assert.is_table(c:request("tools/list", {}).result)
    local spans
    H.poll_until(function()
      spans = OH.json_spans(o)
      return OH.find(spans, "tools/list") and OH.find(spans, "initialize") and OH.find(spans, "server/discover")
    end, 10)
    local discover = assert(OH.find(spans, "server/discover"), "no server/discover span")
    local init = assert(OH.find(spans, "initialize"), "no initialize span")
    local a = OH.attrs(discover.attributes)
    assert.are.equal(0, discover.status.code or 0, discover.status.message)
    assert.is_nil(a["error.type"])
    assert.are.equal("-32601", a["rpc.response.status_code"])
    local ev = assert(OH.event(discover, "fallback"), "no fallback event")
    assert.are.equal("initialize", OH.attrs(ev.attributes)["fallback.to"])
    assert.matches("Method not found", OH.attrs(ev.attributes).reason)
    -- one discover, then one initialize: no retry
    local n = 0
    for _, s in ipairs(spans) do
      if s.name == "server/discover" or s.name == "initialize" then n = n + 1 end
      assert.are_not.equal(2, s.status.code or 0, s.name .. " is in error")
    end
    assert.are.equal(2, n)
    assert.is_true(tonumber(init.startTimeUnixNano) >= tonumber(discover.endTimeUnixNano))
    local text = H.metrics(port)
    assert.truthy(text:find('mcp_client_operation_duration_seconds_count{mcp_method_name="server/discover",'
                            .. 'gen_ai_tool_name="",error_type=""} 1', 1, true), text)
    assert.is_nil(text:find('luamcp_upstream_requests_total{outcome="error"} [1-9]'), text)
    c:close()
  end)
end)
