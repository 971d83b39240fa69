-- stdout is the protocol's: what a plugin writes (print, io.write, io.stdout,
-- Lua's C print, children of os.execute and io.popen, ctx:spawn), at load, in
-- a call and on reload, goes to stderr and never to the client, and what the
-- client sends is read by luamcp alone (stdin is /dev/null to the rest); a plugin's
-- log (mcp.server_log, and print) names the plugin and the tool, in the text
-- and the JSON log formats, trusted and sandboxed.
local H = require "spec.helper"
local write, rmdir = H.edit_file, H.rmdir
local uv = require "luv"
local cjson = require "cjson"

local dirs = {}
local function plugin_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(uv.fs_mkdir(dir, 493))
  dirs[#dirs + 1] = dir
  return dir
end

-- A plugin that writes to stdout every way it can; V marks its version.
local NOISY = [==[
local mcp = require "mcp"
local V = "@V@"
print("top print " .. V)
io.write("top write ", V, "\n")
io.stdout:write("top stdout " .. V .. "\n")
_G.print("top C print " .. V)                  -- Lua's own print: C's stdout, fd 1
os.execute("echo top child " .. V)
return mcp.plugin { name = "noisy", tools = {
  mcp.tool { name = "shout", inputSchema = { type = "object" }, handler = function(args, ctx)
    print("call print", V)
    io.write("call write ", V, "\n")
    io.stdout:write("call stdout "):write(V, "\n")
    io.output():write("call output " .. V .. "\n")
    _G.print("call C print " .. V)
    io.output(io.stdout)
    io.output():flush()
    os.execute("echo call child " .. V .. "; printf 'call printf %s\\n' " .. V .. " >&1")
    local r = io.popen("echo call popen " .. V)
    local got = r:read("a")
    r:close()
    local w = io.popen("cat", "w")
    w:write("call popen-w " .. V .. "\n")
    w:close()
    assert(ctx:spawn { command = { "/bin/sh", "-c", "echo call spawn " .. V }, stdout = "ignore" })
    return "done " .. got
  end },
} }
]==]

local function noisy(v) return (NOISY:gsub("@V@", v)) end

-- What stderr must show for version v: the plugin's own writes as its log
-- lines, at load (no tool) and in the call; the rest as it was written.
local function expect_lines(c, v, since)
  local opts = { plain = true, since = since }
  for _, l in ipairs {
    "luamcp: info: noisy: top print " .. v, "luamcp: info: noisy: top write " .. v,
    "luamcp: info: noisy: top stdout " .. v, "top C print " .. v, "top child " .. v,
  } do c:expect_stderr(l, 5, opts) end
end

local function expect_call_lines(c, v, since)
  local opts = { plain = true, since = since }
  for _, l in ipairs {
    "luamcp: info: noisy: shout: call print\t" .. v, "luamcp: info: noisy: shout: call write " .. v,
    "luamcp: info: noisy: shout: call stdout " .. v, "luamcp: info: noisy: shout: call output " .. v,
    "call C print " .. v, "call child " .. v, "call printf " .. v, "call popen-w " .. v,
  } do c:expect_stderr(l, 5, opts) end
end

-- Run the binary to its end: code, stdout text, stderr text.
local function run(args)
  local out, err = os.tmpname(), os.tmpname()
  local quoted = {}
  for i, a in ipairs(args) do quoted[i] = "'" .. a:gsub("'", "'\\''") .. "'" end
  local ok, _, code = os.execute(("%s %s >%s 2>%s"):format(H.binary(), table.concat(quoted, " "), out, err))
  local function slurp(p)
    local f = assert(io.open(p))
    local s = f:read("a")
    f:close()
    os.remove(p)
    return s
  end
  return ok and 0 or code, slurp(out), slurp(err)
end

describe("stdout is the protocol's", function()
  after_each(function()
    H.cleanup()
    for _, d in ipairs(dirs) do rmdir(d) end
    dirs = {}
  end)

  it("over stdio, nothing a plugin writes reaches the client: at load, in a call, on reload", function()
    local dir = plugin_dir()
    write(dir .. "/noisy.lua", noisy("v1"))
    local c = H.session { plugins = { dir }, args = { "--watch" } }
    expect_lines(c, "v1")
    local resp = c:call("shout", {})
    assert.equal("done call popen v1\n", H.text(resp))
    expect_call_lines(c, "v1")
    assert.same({}, c.bad_lines)

    local since = #c.stderr
    write(dir .. "/noisy.lua", noisy("v2"))
    assert(c:take(function(m) return m.method == "notifications/tools/list_changed" end, 5),
           "no tools/list_changed\n" .. c:stderr_text())
    expect_lines(c, "v2", since)
    assert.equal("done call popen v2\n", H.text(c:call("shout", {})))
    expect_call_lines(c, "v2", since)
    assert.equal("pong", c:request("ping", {}) and "pong")
    assert.same({}, c.bad_lines)
    for _, e in ipairs(c.history) do assert.equal("2.0", e.msg.jsonrpc, e.raw) end
  end)

  it("over stdio, neither a plugin nor its children read the client's messages", function()
    local dir = plugin_dir()
    write(dir .. "/reader.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "reader", tools = {
  mcp.tool { name = "read", inputSchema = { type = "object" }, handler = function()
    local line = io.read("l")
    -- the loop is held while the child reads: what the client sends meanwhile waits in the pipe
    os.execute("sleep 1; head -n 1 | sed 's/^/child read: /' >&2")
    return "read " .. tostring(line)
  end },
} }
]])
    local c = H.session { plugins = { dir } }
    c:send(H.call_raw("7", "read", {}))
    H.pump(0.3)
    local pong = c:request("ping", {})               -- sent while the child reads
    assert.same({}, pong.result)
    local resp = c:take(function(m) return m.id == 7 end, 5)
    assert.equal("read nil", resp and H.text(resp))
    assert.equal(0, c:count_stderr("child read: ", true))
  end)

  it("luamcp call prints the result alone on stdout; the plugin's writes go to stderr", function()
    local dir = plugin_dir()
    write(dir .. "/noisy.lua", noisy("v1"))
    local code, out, err = run { "call", "shout", "--plugins", dir }
    assert.equal(0, code, err)
    assert.equal("done call popen v1\n", out)
    for _, l in ipairs { "luamcp: info: noisy: top print v1", "luamcp: info: noisy: shout: call print\tv1",
                         "top C print v1", "call child v1", "call popen-w v1" } do
      assert.truthy(err:find(l, 1, true), l .. " not in:\n" .. err)
    end
    assert.falsy(err:find("loaded plugin", 1, true))      -- the server's own lines stay hidden

    code, out, err = run { "list", "--plugins", dir }
    assert.equal(0, code, err)
    assert.truthy(out:find("shout", 1, true))
    assert.falsy(out:find("top", 1, true), out)
    assert.truthy(err:find("luamcp: info: noisy: top print v1", 1, true), err)
  end)
end)

-- A plugin that logs at each level, at load and in a call.
local LOGS = [==[
local mcp = require "mcp"
mcp.server_log("notice", "loaded %s", "once")
local LEVELS = { "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency" }
return mcp.plugin { name = "logs", tools = {
  mcp.tool { name = "levels", inputSchema = { type = "object" }, handler = function()
    for i, level in ipairs(LEVELS) do mcp.server_log(level, "at %s %d", level, i) end
    mcp.server_log("info", "100% plain")
    print("printed", 1, true)
    local _, bad = pcall(function() mcp.server_log("loud", "x") end)
    local _, badfmt = pcall(function() mcp.server_log("info", "%d", "x") end)
    io.write("in ", "pieces")
    io.write(" and lines\nnext ")
    io.stdout:write("line\n"):write("unended")
    io.stdout:flush()
    return bad .. " | " .. badfmt
  end },
} }
]==]

local LEVELS = { "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency" }

describe("a plugin's log", function()
  after_each(function()
    H.cleanup()
    for _, d in ipairs(dirs) do rmdir(d) end
    dirs = {}
  end)

  it("mcp.server_log writes at each level, naming the plugin and the tool (text)", function()
    local dir = plugin_dir()
    write(dir .. "/logfile.lua", LOGS)     -- named by its file until it declared its name
    local c = H.session { plugins = { dir }, args = { "--log-level", "debug" } }
    c:expect_stderr("luamcp: notice: logfile: loaded once", 5, { plain = true })
    local text = H.text(c:call("levels", {}))
    assert.matches('^[^:]*:%d+: mcp.server_log: unknown level "loud" %(debug, info, notice', text)
    assert.matches(" | [^:]*:%d+: bad argument #3 to 'mcp.server_log' %(number expected, got string%)$", text)
    for i, level in ipairs(LEVELS) do
      c:expect_stderr(("luamcp: %s: logs: levels: at %s %d"):format(level, level, i), 5, { plain = true })
    end
    c:expect_stderr("luamcp: info: logs: levels: 100% plain", 5, { plain = true })
    c:expect_stderr("luamcp: info: logs: levels: printed\t1\ttrue", 5, { plain = true })
    -- io.write and io.stdout:write: a log line per line written, whatever the pieces
    for _, l in ipairs { "in pieces and lines", "next line", "unended" } do
      c:expect_stderr("luamcp: info: logs: levels: " .. l, 5, { plain = true })
    end
    -- the client's log is another thing: nothing of it went there
    assert.equal(0, c:count_logs("at info"))
  end)

  it("--log-level keeps lines below it out", function()
    local dir = plugin_dir()
    write(dir .. "/logs.lua", LOGS)
    local c = H.session { plugins = { dir }, args = { "--log-level", "warning" } }
    c:call("levels", {})
    c:expect_stderr("luamcp: emergency: logs: levels: at emergency 8", 5, { plain = true })
    assert.equal(0, c:count_stderr("at info 2", true))
    assert.equal(0, c:count_stderr("at notice 3", true))
    assert.equal(0, c:count_stderr("printed", true))
    assert.equal(1, c:count_stderr("at warning 4", true))
  end)

  it("--log-format json: logger is the plugin, tool the tool, msg the text", function()
    local dir = plugin_dir()
    write(dir .. "/logs.lua", LOGS)
    local c = H.session { plugins = { dir }, args = { "--log-level", "debug", "--log-format", "json" } }
    c:call("levels", {})
    c:expect_stderr("printed", 5, { plain = true })
    local got = {}
    for _, line in ipairs(c.stderr) do
      local ok, o = pcall(cjson.decode, line)
      assert(ok, "not JSON: " .. line)
      if o.logger == "logs" then got[#got + 1] = o end
    end
    assert.same({ level = "notice", msg = "loaded once" }, { level = got[1].level, msg = got[1].msg })
    assert.is_nil(got[1].tool)                        -- at load: no call
    for i, level in ipairs(LEVELS) do
      local o = got[i + 1]
      assert.same({ level = level, logger = "logs", tool = "levels", msg = ("at %s %d"):format(level, i) },
                  { level = o.level, logger = o.logger, tool = o.tool, msg = o.msg })
      assert.matches("^%d%d%d%d%-%d%d%-%d%dT", o.time)
    end
    assert.same({ level = "info", tool = "levels", msg = "printed\t1\ttrue" },
                { level = got[11].level, tool = got[11].tool, msg = got[11].msg })
  end)

  it("a sandboxed plugin's print and mcp.server_log name it and its tool", function()
    local dir = plugin_dir()
    write(dir .. "/boxed.lua", [[
local mcp = require "mcp"
print("boxed at load")
return mcp.plugin { name = "boxed", tools = {
  mcp.tool { name = "speak", inputSchema = { type = "object" }, handler = function()
    print("boxed", "in call")
    mcp.server_log("warning", "boxed %s", "warns")
    return tostring(io) .. " " .. tostring(rawget(_G, "io"))
  end },
} }
]])
    local c = H.session { no_plugins = true, args = { "--sandbox", dir } }
    c:expect_stderr("luamcp: info: boxed: boxed at load", 5, { plain = true })
    assert.equal("nil nil", H.text(c:call("speak", {})))
    c:expect_stderr("luamcp: info: boxed: speak: boxed\tin call", 5, { plain = true })
    c:expect_stderr("luamcp: warning: boxed: speak: boxed warns", 5, { plain = true })
    assert.same({}, c.bad_lines)
  end)
end)
