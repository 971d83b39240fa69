-- subscriptions/listen (2026-07-28): a long-lived request on which a
-- stateless client gets the change notifications it opted in to
-- (list_changed from hot reload, resources/updated), each tagged with the
-- listen request's id in _meta; acknowledged first; ended by the client
-- (disconnect over HTTP, notifications/cancelled on stdio) or gracefully by
-- the server at shutdown: notifications/cancelled referencing the listen
-- request (the one notifications/cancelled a 2026-07-28 server sends), then
-- the response {resultType: "complete"}.
local H = require "spec.helper"
local write, rmdir = H.edit_file, H.rmdir
local HH = require "spec.http_helper"
local uv = require "luv"

local SUB = "io.modelcontextprotocol/subscriptionId"

-- params with the 2026-07-28 _meta (no client capabilities).
local function params(p) return HH.params_rev2026(p) end

-- A plugin with a tool, a resource and a tool that reports a resource updated.
local function plugin(tag)
  return ([[
local mcp = require "mcp"
return mcp.plugin { name = "p", tools = {
  mcp.tool { name = "ver", inputSchema = { type = "object" }, handler = function() return %q end },
  mcp.tool { name = "touch", inputSchema = { type = "object" }, handler = function(args)
    return mcp.text(tostring(mcp.notify_resource_updated(args.uri)))
  end },
}, resources = {
  mcp.resource { uri = "mem://a", name = "a", read = function() return "a" end },
  mcp.resource { uri = "mem://b", name = "b", read = function() return "b" end },
} }
]]):format(tag)
end

local prompt_plugin = [[
local mcp = require "mcp"
return mcp.plugin { name = "q", prompts = {
  mcp.prompt { name = "hello", get = function() return "hi" end },
} }
]]

local dirs = {}
local function plugin_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(uv.fs_mkdir(dir, 493))
  assert(uv.fs_mkdir(dir .. "/lib", 493))
  dirs[#dirs + 1] = dir
  write(dir .. "/p.lua", plugin("v1"))
  return dir
end

local function cleanup()
  HH.cleanup()
  H.cleanup()
  for _, d in ipairs(dirs) do rmdir(d) end
  dirs = {}
end

---------------------------------------------------------------------------
-- Streamable HTTP

local function listen(srv, id, filter)
  local r, c = HH.post_rev2026(srv, { jsonrpc = "2.0", id = id, method = "subscriptions/listen",
                               params = params{ notifications = filter } })
  assert.are.equal(200, r.status, r:describe())
  assert.is_true(r:is_sse(), r:describe())
  return r, c
end

local function call(srv, id, name, args)
  local _, resp = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = id, method = "tools/call",
                                 params = params{ name = name, arguments = args or {} } })
  return resp
end

describe("subscriptions/listen over Streamable HTTP", function()
  after_each(cleanup)

  it("acknowledges first, then delivers only what the filter asked for, tagged in _meta", function()
    local dir = plugin_dir()
    local srv = HH.start{ plugins = { dir }, args = { "--watch", "--log-level", "debug" } }
    local r = listen(srv, "L1", { toolsListChanged = true, resourceSubscriptions = { "mem://a" } })
    local ack = r:next_message()
    assert.are.equal("notifications/subscriptions/acknowledged", ack.method)
    assert.are.equal("L1", ack.params._meta[SUB])
    assert.is_true(ack.params.notifications.toolsListChanged)
    assert.is_nil(ack.params.notifications.promptsListChanged)
    assert.are.same({ "mem://a" }, ack.params.notifications.resourceSubscriptions)
    -- a second listener wanting only resources/list_changed and mem://b
    local r2 = listen(srv, 7, { resourcesListChanged = true, resourceSubscriptions = { "mem://b" } })
    local ack2 = r2:next_message()
    assert.are.equal(7, ack2.params._meta[SUB])
    assert.is_nil(ack2.params.notifications.toolsListChanged)
    -- resources/updated for mem://a reaches L1 only
    local res = call(srv, 2, "touch", { uri = "mem://a" })
    assert.are.equal("1", res.result.content[1].text)
    local up = r:next_message()
    assert.are.equal("notifications/resources/updated", up.method)
    assert.are.equal("mem://a", up.params.uri)
    assert.are.equal("L1", up.params._meta[SUB])
    -- hot reload: tools and resources list_changed, each to whom asked
    write(dir .. "/p.lua", plugin("v2"))
    local tl = r:next_message(5)
    assert.are.equal("notifications/tools/list_changed", tl and tl.method, srv:stderr_text())
    assert.are.equal("L1", tl.params._meta[SUB])
    local rl = r2:next_message(5)
    assert.are.equal("notifications/resources/list_changed", rl and rl.method, srv:stderr_text())
    assert.are.equal(7, rl.params._meta[SUB])
    -- nothing else on either stream
    assert.are.equal("timeout", select(2, r:next_message(0.4)))
    assert.are.equal("timeout", select(2, r2:next_message(0.1)))
  end)

  it("ends a listener whose client disconnects (logged), and delivers nothing more to it", function()
    local dir = plugin_dir()
    local srv = HH.start{ plugins = { dir }, args = { "--log-level", "debug" } }
    local r, c = listen(srv, 1, { resourceSubscriptions = { "mem://a" } })
    assert.are.equal("notifications/subscriptions/acknowledged", r:next_message().method)
    c:close()
    assert.truthy(srv:wait_stderr("subscriptions/listen 1 ended: client disconnected"), srv:stderr_text())
    local res = call(srv, 2, "touch", { uri = "mem://a" })
    assert.are.equal("0", res.result.content[1].text)
  end)

  it("ends a listener at shutdown with notifications/cancelled, then resultType complete", function()
    local dir = plugin_dir()
    local srv = HH.start{ plugins = { dir }, args = { "--log-level", "debug" } }
    local r = listen(srv, "s", { toolsListChanged = true })
    assert.are.equal("notifications/subscriptions/acknowledged", r:next_message().method)
    srv:kill("sigterm")
    local cancel = r:next_message()
    assert.are.equal("notifications/cancelled", cancel and cancel.method, srv:stderr_text())
    assert.are.equal("s", cancel.params.requestId)
    assert.are.equal("s", cancel.params._meta[SUB])
    assert.is_string(cancel.params.reason)
    local last = r:next_message()
    assert.is_table(last, srv:stderr_text())
    assert.are.equal("s", last.id)
    assert.are.equal("complete", last.result.resultType)
    assert.are.equal("s", last.result._meta[SUB])
    r:wait_done()
    assert.is_true(r.done)
    assert.are.equal(0, (srv:wait_exit(5)))
  end)

  it("server/discover states listChanged (with --watch) and subscribe", function()
    local srv = HH.start{ plugins = { plugin_dir() }, args = { "--watch" } }
    local r = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "server/discover", params = params() })
    r:wait_done()
    local caps = HH.rpc_response(r).result.capabilities
    assert.is_true(caps.tools.listChanged)
    assert.is_true(caps.resources.listChanged)
    assert.is_true(caps.resources.subscribe)
  end)

  it("rejects a listen without a notifications filter with -32602", function()
    local srv = HH.start{ plugins = { plugin_dir() } }
    local r = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "subscriptions/listen", params = params() })
    r:wait_done()
    assert.are.equal(-32602, HH.rpc_response(r).error.code)
  end)

  it("leaves a 2025-11-25 session as it was: list_changed on its GET stream, no _meta tag", function()
    local dir = plugin_dir()
    local srv = HH.start{ plugins = { dir }, args = { "--watch" } }
    local s = HH.initialize(srv, "2025-11-25")
    local g = s:get()
    local r = listen(srv, "L", { toolsListChanged = true })
    assert.are.equal("notifications/subscriptions/acknowledged", r:next_message().method)
    write(dir .. "/p.lua", plugin("v2"))
    local m = g:next_message(5)
    assert.are.equal("notifications/tools/list_changed", m and m.method, srv:stderr_text())
    assert.is_nil(m.params and m.params._meta)
    assert.are.equal("L", r:next_message(5).params._meta[SUB])
  end)
end)

---------------------------------------------------------------------------
-- stdio

describe("subscriptions/listen over stdio", function()
  after_each(cleanup)

  local function start(dir, watch)
    local args = { "--log-level", "debug" }
    if watch then args[#args + 1] = "--watch" end
    return H.start{ plugins = { dir }, args = args }
  end

  local function open(c, id, filter)
    c:send{ jsonrpc = "2.0", id = id, method = "subscriptions/listen", params = params{ notifications = filter } }
    local ack = c:take(function(m) return m.method == "notifications/subscriptions/acknowledged" end)
    assert(ack, c:stderr_text())
    assert.are.equal(id, ack.params._meta[SUB])
    return ack
  end

  it("acknowledges, delivers filtered list_changed with the subscriptionId, honours only what exists", function()
    local dir = plugin_dir()
    local c = start(dir, true)
    local ack = open(c, 10, { promptsListChanged = true, toolsListChanged = false })
    assert.is_true(ack.params.notifications.promptsListChanged)   -- with --watch, prompts may come
    assert.is_nil(ack.params.notifications.toolsListChanged)
    write(dir .. "/q.lua", prompt_plugin)
    local m = c:take(function(m) return m.method and m.method:find("list_changed") end, 5)
    assert.are.equal("notifications/prompts/list_changed", m and m.method, c:stderr_text())
    assert.are.equal(10, m.params._meta[SUB])
    assert.is_nil(c:take(function(x) return x.method == "notifications/tools/list_changed" end, 0.3))
  end)

  it("is ended by notifications/cancelled: no response, nothing more delivered", function()
    local dir = plugin_dir()
    local c = start(dir)
    open(c, "x", { resourceSubscriptions = { "mem://a" } })
    local dup = c:request("tools/list", params(), { id = "x" })
    assert.are.equal(-32600, dup.error.code)                       -- its id is in flight
    local res, notes = c:request("tools/call", params{ name = "touch", arguments = { uri = "mem://a" } })
    assert.are.equal("1", res.result.content[1].text)
    local up = notes[1]
    assert.are.equal("notifications/resources/updated", up and up.method)
    assert.are.equal("x", up.params._meta[SUB])
    c:send(H.cancel_msg("x", "done listening"))
    assert.truthy(c:wait_stderr("subscriptions/listen \"x\" ended: done listening"))
    res = c:request("tools/call", params{ name = "touch", arguments = { uri = "mem://a" } })
    assert.are.equal("0", res.result.content[1].text)
    c:no_response(0.2)
  end)

  it("is ended at shutdown (end of input) with notifications/cancelled, then resultType complete", function()
    local c = start(plugin_dir())
    open(c, 3, { toolsListChanged = true })
    c.stdin_closed = true
    c.stdin:shutdown()
    local cancel = c:take(function(m) return m.method == "notifications/cancelled" end)
    assert(cancel, c:stderr_text())
    assert.are.equal(3, cancel.params.requestId)
    local last = c:take(function(m) return m.id == 3 end)
    assert(last, c:stderr_text())
    assert.are.equal("complete", last.result.resultType)
    assert.are.equal(3, last.result._meta[SUB])
    assert.are.equal(0, (c:wait_exit(5)))
  end)

  it("does not reach an initialized 2025 session, which keeps its own notifications", function()
    local dir = plugin_dir()
    local c = H.session{ plugins = { dir }, args = { "--watch" } }
    local sub = c:request("resources/subscribe", { uri = "mem://a" })
    assert.is_table(sub.result)
    local res, notes = c:call("touch", { uri = "mem://a" })
    assert.are.equal("1", H.text(res))
    local up = notes[1]
    assert.are.equal("notifications/resources/updated", up and up.method)
    assert.is_nil(up.params._meta)
    write(dir .. "/p.lua", plugin("v2"))
    local m = c:take(function(x) return x.method == "notifications/tools/list_changed" end, 5)
    assert.truthy(m, c:stderr_text())
    assert.is_nil(m.params and m.params._meta)
  end)
end)
