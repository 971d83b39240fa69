-- luamcp new NAME: the plugin and spec templates it fills in, the .busted
-- that puts mcp.test on the specs' path, and the .luarc.json it writes for
-- LuaLS (cli.lua's new runs it).
local core = require "mcp.core"
local file = require "mcp.file"

local M = {}

local function say(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
            repeat return then true until while]]):gmatch("%a+") do KEYWORDS[w] = true end

local PLUGIN_TEMPLATE = [==[
-- The @NAME@ plugin. Try it:
--   luamcp list --plugins @DIR@
--   luamcp call @NAME@ '{"n": 5}' --plugins @DIR@      (Ctrl-C cancels it)
--   luamcp check --plugins @DIR@
-- test it with `busted` (@SPEC@), and serve it with `luamcp --plugins @DIR@`
-- (stdio) or add `--http 127.0.0.1:8931`.
local mcp = require "mcp"

return mcp.plugin {
  name = "@NAME@",
  -- The policy of every tool here, unless a tool sets its own:
  --   timeout: seconds before the call is cancelled with reason "timeout" (0 = none);
  --   cancel:  "cooperative" (the handler sees ctx:cancelled() and stops itself),
  --            "abort" (stopped at once) or "ignore" (runs to completion);
  --   grace:   seconds a cancelled cooperative handler may go on before it is aborted.
  defaults = { timeout = 30, cancel = "cooperative", grace = 2 },
  tools = {
    mcp.tool {
      name = "@NAME@",
      title = "@NAME@",
      description = "Counts from `from` to n, one step every delay seconds, reporting progress",
      -- Arguments are checked against inputSchema before the handler runs.
      inputSchema = {
        type = "object",
        properties = {
          n = { type = "integer", minimum = 1, maximum = 1000, description = "how far to count" },
          from = { type = "integer", minimum = 1, description = "where to start (1)" },
          delay = { type = "number", minimum = 0, maximum = 10, description = "seconds per step (0.1)" },
        },
        required = { "n" },
      },
      timeout = 60,   -- this tool's own timeout, in seconds
      handler = function(args, ctx)
        local from, delay = args.from or 1, args.delay or 0.1
        -- What the schema cannot say: `nil, message` is a tool error (the
        -- client gets isError and the message), as io.open fails.
        if from > args.n then
          return nil, string.format("from (%d) is past n (%d)", from, args.n)
        end
        -- <close> variables run however the handler ends: returned, raised,
        -- cancelled, or aborted by force after its grace.
        local cleanup <close> = setmetatable({}, { __close = function()
          ctx:log("debug", "cleaned up")
        end })
        for i = from, args.n do
          ctx:progress(i, args.n, "step " .. i)   -- sent when the client asked for progress
          -- A wait yields to the server. A cancel (the client's, or the
          -- timeout) wakes it at once: nil, "cancelled: <reason>", "cancelled".
          local ok, err = ctx:sleep(delay)
          if not ok then
            ctx:log("info", "stopped at " .. i .. ": " .. tostring(err))
            return nil, err     -- no response is sent for a cancelled request
          end
        end
        return "counted to " .. args.n   -- a string: one text item
      end,
    },
  },
}
]==]

local SPEC_TEMPLATE = [==[
-- The spec of the @NAME@ plugin: the tool in the real server over stdio
-- (mcp.test, with a clock the spec moves), and through `luamcp call`. Run
-- `busted` in the project's directory (or `busted -C DIR` from anywhere).
-- luamcp is the one on PATH, or $LUAMCP_BIN.
local BIN = os.getenv("LUAMCP_BIN") or "luamcp"
local HERE = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local PLUGINS = @PLUGINS@

-- mcp.test comes with luamcp: the project's .busted puts its directory on
-- package.path for every spec (`busted -C DIR` runs them from elsewhere).
local T = require "mcp.test"

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- luamcp call TOOL ARGS --plugins PLUGINS ...: stdout, exit code, stderr.
local function call(tool, args, ...)
  local errfile = os.tmpname()
  local cmd = { quote(BIN), "call", quote(tool), quote(args), "--plugins", quote(PLUGINS) }
  for _, a in ipairs({ ... }) do cmd[#cmd + 1] = quote(a) end
  local p = assert(io.popen(table.concat(cmd, " ") .. " 2>" .. quote(errfile)))
  local out = p:read("a")
  local _, _, code = p:close()
  local f = assert(io.open(errfile))
  local err = f:read("a")
  f:close()
  os.remove(errfile)
  return out, code, err
end

describe("@NAME@ in the server", function()
  local srv
  before_each(function() srv = T.start { plugins = { PLUGINS }, bin = BIN } end)
  after_each(function() srv:stop() end)

  it("fails with a message when from is past n", function()
    local result = srv:call("@NAME@", { n = 3, from = 5 })
    assert.is_true(result.isError)
    assert.are.equal("from (5) is past n (3)", T.text(result))
  end)

  it("stops when the client cancels", function()
    local c = srv:start("@NAME@", { n = 100, delay = 1 })
    assert.is_true(c:wait_progress(1))
    c:cancel("enough")
    assert.truthy(c:wait_log("stopped at"))
    assert.is_nil(c:wait(0.3))                  -- no response to a cancelled request
  end)

  it("times out after its 60 s, on the test clock", function()
    local c = srv:start("@NAME@", { n = 1000, delay = 1 })
    assert.is_true(c:wait_progress(1))
    srv:advance(61)                             -- no minute spent waiting
    local result = assert(c:result())
    assert.is_true(result.isError)
  end)
end)

describe("@NAME@ through luamcp call", function()
  it("counts to n and reports progress", function()
    local out, code, err = call("@NAME@", '{"n": 3, "delay": 0.01}')
    assert.are.equal(0, code, err)
    assert.are.equal("counted to 3\n", out)
    assert.truthy(err:find("progress: 3/3", 1, true), err)   -- a line per update off a terminal
  end)

  it("refuses arguments the input schema does not allow", function()
    local out, code, err = call("@NAME@", '{"n": 0}')
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.truthy(err:find("Invalid arguments", 1, true), err)   -- a tool error: on stderr
  end)
end)
]==]

-- busted's settings: mcp.test on package.path for every spec of the project,
-- whatever order busted loads them in, from the luamcp that runs them (asked
-- at each run, so a moved or upgraded install is followed).
local BUSTED_TEMPLATE = [==[
-- busted's settings, written by `luamcp new`: the directory of luamcp's Lua
-- library (`luamcp path`), where `require "mcp.test"` finds it, on
-- package.path for every spec. luamcp is the one on PATH, or $LUAMCP_BIN.
local bin = os.getenv("LUAMCP_BIN") or "luamcp"
local p = io.popen("'" .. bin:gsub("'", "'\\''") .. "' path")
local dir = p and p:read("l")
if not (p and p:close() and dir) then
  error("cannot run `" .. bin .. " path` for mcp.test's directory: is luamcp on PATH (or $LUAMCP_BIN set)?", 0)
end
return {
  default = {
    ROOT = { @ROOT@ },
    lpath = dir .. "/?.lua;./src/?.lua;./src/?/?.lua;./src/?/init.lua",   -- and busted's own
  },
}
]==]

-- LuaLS (editors) settings: the annotations of luamcp's API, and busted's globals.
local function luarc(types_dir)
  return string.format([[
{
  "runtime.version": "Lua 5.4",
  "workspace.library": [%s],
  "diagnostics.globals": ["describe", "it", "pending", "before_each", "after_each", "setup", "teardown",
                          "finally", "spy", "stub", "mock"]
}
]], core.encode(types_dir))
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

local function fill(template, vars)
  return (template:gsub("@(%u+)@", function(k) return vars[k] end))
end

-- The spec's PLUGINS: relative to the spec file when both directories are
-- relative and the spec's goes down only (busted may then run anywhere),
-- else the directory as given.
local function plugins_expr(spec_dir, dir)
  local depth = 0
  if dir:sub(1, 1) == "/" or spec_dir:sub(1, 1) == "/" then return string.format("%q", dir) end
  for part in spec_dir:gmatch("[^/]+") do
    if part == ".." then return string.format("%q", dir) end
    if part ~= "." then depth = depth + 1 end
  end
  return string.format("HERE .. %q", "/" .. ("../"):rep(depth) .. dir)
end

-- A file of the project's (.luarc.json, .busted) written with text: "wrote
-- PATH", or nil (and a message on stderr) when it could not be.
local function write_file(path, text)
  local ok, err = file.write(path, text)
  if not ok then
    say("luamcp: new: %s", err)
    return nil
  end
  return "wrote " .. path
end

-- .luarc.json for LuaLS, unless there is one: the line `new` reports about
-- it, or nil (and a message on stderr) when it could not be written.
local function write_luarc(path, cli)
  local types, terr = cli.share_dir("types")
  if exists(path) then
    return string.format("kept %s (it exists; the annotations of mcp are in %s)", path, types or terr)
  end
  if not types then
    say("luamcp: new: %s not written: no LuaLS annotations: %s", path, terr)
    return nil
  end
  return write_file(path, luarc(types))
end

-- .busted, unless there is one; the line says what a kept one lacks (the
-- lpath of mcp.test, the spec directory in ROOT).
local function write_busted(path, spec_dir, cli)
  local root, f = string.format("%q", spec_dir), io.open(path, "r")
  if f then
    local text = f:read("a") or ""
    f:close()
    if not text:find("luamcp path", 1, true) then
      local lua = cli.share_dir("lua") or "$(luamcp path)"
      return string.format("kept %s (it exists; for mcp.test its lpath needs %s/?.lua)", path, lua)
    elseif not text:find(root, 1, true) then
      return string.format("kept %s (it exists; add %s to its ROOT for busted to run %s)", path, root, spec_dir)
    end
    return "kept " .. path
  end
  return write_file(path, fill(BUSTED_TEMPLATE, { ROOT = root }))
end

-- cli: the cli module (cli.lua), whose mkdir and share_dir src/cli.c sets.
function M.new(opts, cli)
  local name = opts.name
  if not name:find("^[%a_][%w_]*$") or KEYWORDS[name] then
    say("luamcp: new: %q is not an identifier (letters, digits and _, not starting with a digit)", name)
    return 2, ""
  end
  local dir, spec_dir = opts.dir or "plugins", opts.spec_dir or "spec"
  local plugin_path = dir .. "/" .. name .. ".lua"
  local spec_path = spec_dir .. "/" .. name .. "_spec.lua"
  for _, p in ipairs({ plugin_path, spec_path }) do
    if exists(p) then
      say("luamcp: new: %s already exists; not overwriting it", p)
      return 1, ""
    end
  end
  local vars = { NAME = name, DIR = dir, SPEC = spec_path, PLUGINS = plugins_expr(spec_dir, dir) }
  for _, f in ipairs({ { dir, plugin_path, PLUGIN_TEMPLATE }, { spec_dir, spec_path, SPEC_TEMPLATE } }) do
    local ok, err = cli.mkdir(f[1])
    if not ok then
      say("luamcp: new: %s", err)
      return 1, ""
    end
    if not write_file(f[2], fill(f[3], vars)) then return 1, "" end
  end
  local report = { "wrote " .. plugin_path, "wrote " .. spec_path }
  report[#report + 1] = write_busted(".busted", spec_dir, cli)
  report[#report + 1] = write_luarc(".luarc.json", cli)
  report[#report + 1] = string.format("try: luamcp call %s '{\"n\": 5}' --plugins %s\n", name, dir)
  return 0, table.concat(report, "\n")
end


return M
