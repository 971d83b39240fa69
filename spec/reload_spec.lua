-- Hot reload (--watch): edits served, clients told, calls in flight finish
-- on the code they started with, broken edits kept out and reported.
local H = require "spec.helper"
local write, rmdir = H.edit_file, H.rmdir
local HH = require "spec.http_helper"
local uv = require "luv"

local function tool_plugin(name, tool, body, extra)
  return ([[
local mcp = require "mcp"
%s
return mcp.plugin { name = %q, tools = {
  mcp.tool { name = %q, inputSchema = { type = "object" }, handler = function(args, ctx)
    %s
  end },
} }
]]):format(extra or "", name, tool, body)
end

local dirs = {}
local function plugin_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(uv.fs_mkdir(dir, 493))
  assert(uv.fs_mkdir(dir .. "/lib", 493))
  dirs[#dirs + 1] = dir
  return dir
end

local function session(dir, extra_args)
  local args = { "--watch", "--log-level", "debug" }
  for _, a in ipairs(extra_args or {}) do args[#args + 1] = a end
  return H.session { plugins = { dir }, args = args }
end

local function wait_changed(c, method)
  local m = c:take(function(m) return m.method == (method or "notifications/tools/list_changed") end, 5)
  assert(m, "no " .. (method or "tools/list_changed") .. "\n" .. c:stderr_text())
  return m
end

describe("hot reload", function()
  after_each(function()
    HH.cleanup()
    H.cleanup()
    for _, d in ipairs(dirs) do rmdir(d) end
    dirs = {}
  end)

  it("with --watch, initialize declares listChanged for tools, resources and prompts", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'v1'"))
    local c = session(dir)
    assert.is_true(c.init_result.capabilities.tools.listChanged)
    assert.is_true(c.init_result.capabilities.resources.listChanged)
    assert.is_true(c.init_result.capabilities.prompts.listChanged)
  end)

  it("an edited plugin is served at once and clients get tools/list_changed", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'v1'"))
    local c = session(dir)
    assert.are.equal("v1", H.text(c:call("ver")))
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'v2'"))
    wait_changed(c)
    assert.are.equal("v2", H.text(c:call("ver")))
  end)

  it("a new file is loaded and a deleted one's tools are removed", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'a'"))
    local c = session(dir)
    write(dir .. "/b.lua", tool_plugin("b", "other", "return 'b'"))
    wait_changed(c)
    assert.are.equal("b", H.text(c:call("other")))
    os.remove(dir .. "/b.lua")
    wait_changed(c)
    local resp = c:call("other")
    assert.are.equal(-32602, resp.error.code)
    local names = {}
    for _, t in ipairs(c:request("tools/list").result.tools) do names[#names + 1] = t.name end
    assert.are.same({ "ver" }, names)
  end)

  it("a helper module in lib/ is reloaded with its plugin, not left stale", function()
    local dir = plugin_dir()
    write(dir .. "/lib/helper.lua", "return { tag = 'h1' }")
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return h.tag", "local h = require 'helper'"))
    local c = session(dir)
    assert.are.equal("h1", H.text(c:call("ver")))
    write(dir .. "/lib/helper.lua", "return { tag = 'h2' }")
    wait_changed(c)
    assert.are.equal("h2", H.text(c:call("ver")))
  end)

  it("a broken edit keeps the last good version serving and is reported with file:line", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'good'"))
    local c = session(dir)
    write(dir .. "/a.lua", "local mcp = require 'mcp'\nreturn mcp.plugin { name = 'a', tools = {\n")
    local m = c:take(function(m) return m.method == "notifications/message" end, 5)
    assert(m, c:stderr_text())
    assert.are.equal("error", m.params.level)
    assert.truthy(m.params.data:find("a.lua:3:", 1, true), m.params.data)
    c:expect_stderr("plugin not reloaded: " .. dir .. "/a.lua:3:", 5, { plain = true })
    assert.are.equal("good", H.text(c:call("ver")))
  end)

  it("a reload is logged as one, with the tools added, removed and changed", function()
    local dir = plugin_dir()
    local function notes(tools)
      local out = { 'local mcp = require "mcp"\nreturn mcp.plugin { name = "notes", tools = {' }
      for _, t in ipairs(tools) do
        out[#out + 1] = ('  mcp.tool { name = %q, description = %q, handler = function() return %q end },')
          :format(t[1], t[2], t[3] or "x")
      end
      out[#out + 1] = "} }\n"
      return table.concat(out, "\n")
    end
    write(dir .. "/notes.lua", notes { { "search", "finds" }, { "old", "old" } })
    local c = session(dir)
    c:expect_stderr("loaded plugin notes from " .. dir .. "/notes.lua (2 tools, 0 resources, 0 prompts)", 5,
                    { plain = true })
    write(dir .. "/notes.lua", notes { { "search", "finds notes" }, { "add", "adds" } })
    c:expect_stderr("reloaded plugin notes from " .. dir .. "/notes.lua: tools +add -old ~search", 5, { plain = true })
    write(dir .. "/notes.lua", notes { { "search", "finds notes", "y" }, { "add", "adds", "y" } })
    c:expect_stderr("reloaded plugin notes from " .. dir .. "/notes.lua: no tool, resource or prompt changed", 5,
                    { plain = true })
    assert.are.equal(1, c:count_stderr("info: loaded plugin notes", true), c:stderr_text())
    assert.are.equal("y", H.text(c:call("add")))
  end)

  it("a load error is one line, file:line: message, at the first load and on reload", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'good'"))
    write(dir .. "/b.lua", 'local mcp = require "mcp"\n\nerror("no position", 0)\n')
    local port = H.free_port()
    local c = session(dir, { "--metrics", "127.0.0.1:" .. port })
    c:expect_stderr("plugin not loaded: " .. dir .. "/b.lua:3: no position", 5, { plain = true })
    write(dir .. "/a.lua", "local mcp = require 'mcp'\nlocal t\nt.x = mcp.tool { name = 'ver', nmae = 1, handler = print }\n")
    local _, first = c:expect_stderr("plugin not reloaded: " .. dir .. "/a.lua:3: tool ver: unknown field nmae " ..
                                     "(did you mean name?)", 5, { plain = true })
    local _, second = c:expect_stderr("plugin not reloaded: " .. dir .. "/a.lua:3: attempt to index a nil value " ..
                                      "(local 't')", 5, { plain = true })
    assert.are.equal(first + 1, second, c:stderr_text())
    local p = io.popen("curl -s --max-time 5 http://127.0.0.1:" .. port .. "/metrics")
    local text = p:read("a")
    p:close()                                      -- two files failed (a and b, again), not three lines
    assert.matches('luamcp_plugin_reloads_total{outcome="failed"} 2\n', text, 1, true)
    for _, l in ipairs(c.stderr) do
      assert(not l:find("traceback", 1, true) and not l:find("lua/mcp/", 1, true) and l:find("^luamcp: "),
             c:stderr_text())
    end
    assert.are.equal("good", H.text(c:call("ver")))                -- the last good version goes on
  end)

  it("an edit that raises at load, or declares a tool another plugin has, is kept out", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "one", "return 'a1'"))
    write(dir .. "/b.lua", tool_plugin("b", "two", "return 'b2'"))
    local c = session(dir)
    write(dir .. "/b.lua", "error('boom at load')")
    c:expect_stderr("boom at load", 5, { plain = true })
    write(dir .. "/b.lua", tool_plugin("b", "one", "return 'clash'"))
    c:expect_stderr('tool "one" is already defined by plugin "a"', 5, { plain = true })
    assert.are.equal("a1", H.text(c:call("one")))
    assert.are.equal("b2", H.text(c:call("two")))
  end)

  it("a call in flight finishes on the code it started with; new calls get the new code", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "slow", "ctx:sleep(0.6) return 'old'"))
    local c = session(dir)
    c:send(H.call_raw("77", "slow"))
    c:expect_stderr("request 77: queued -> running", 5, { plain = true })
    write(dir .. "/a.lua", tool_plugin("a", "slow", "return 'new'"))
    wait_changed(c)
    assert.are.equal("new", H.text(c:call("slow")))
    local old = c:take(function(m) return m.id == 77 end, 5)
    assert.are.equal("old", old.result.content[1].text)
  end)

  it("a reload storm neither stalls calls nor grows memory", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'v0'"))
    write(dir .. "/mem.lua", tool_plugin("mem", "mem",
      "collectgarbage() collectgarbage() return tostring(collectgarbage('count'))"))
    local c = session(dir)
    local function storm(n)
      for i = 1, n do
        write(dir .. "/a.lua", tool_plugin("a", "ver", ("return 'v%d'"):format(i)))
        if i % 20 == 0 then
          local t0 = H.now()
          assert.are.same({}, c:request("ping").result)
          assert.is_true(H.now() - t0 < 1, "a ping waited on reloads")
        end
      end
      H.pump(0.4)
    end
    storm(100)
    local before = tonumber(H.text(c:call("mem")))
    storm(300)
    local after = tonumber(H.text(c:call("mem")))
    assert.are.equal("v300", H.text(c:call("ver")))
    assert.is_true(after < before * 1.5 + 64, ("Lua memory grew from %.0f to %.0f KB"):format(before, after))
  end)

  it("over HTTP, tools/list_changed arrives on the session's GET stream", function()
    local dir = plugin_dir()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'v1'"))
    local srv = HH.start { plugins = { dir }, args = { "--watch" } }
    local s = HH.initialize(srv, "2025-11-25")
    local g = s:get()
    write(dir .. "/a.lua", tool_plugin("a", "ver", "return 'v2'"))
    local m = g:next_message(5)
    assert(m, "nothing on the GET stream\n" .. srv:stderr_text())
    assert.are.equal("notifications/tools/list_changed", m.method)
  end)
end)
