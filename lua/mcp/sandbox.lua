-- The environment of a sandboxed plugin (issue 23; docs/guide/12-untrusted-plugins.md):
-- the safe part of the base library, copies of string, table, math, utf8 and
-- coroutine, a few of os, and an mcp table of its own. What it may reach
-- outside (HTTP, files, programs, databases, other servers, variables) is
-- checked in C against the configuration's grants (src/lua/sandbox.c);
-- memory and CPU are counted by the scheduler (src/core/sched.c).
--
-- Nothing here hands out a table another plugin or the host uses: what it
-- changes stays its own. Functions are shared, tables are copied.
local core = require "mcp.core"
local mcp = require "mcp"
local plugin_log = require "mcp.plugin_log"
local file = require "mcp.file"

local M = {}

local BASE = { "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "select", "tonumber",
               "tostring", "type", "rawequal", "rawlen", "rawget", "rawset", "_VERSION" }
local OS = { "clock", "time", "date", "difftime" }
local NOT_IN_STRING = { dump = true }
local NOT_IN_MATH = { randomseed = true }           -- the generator is the host's and others'
local MAX_LOAD = 1 << 20
-- The host's own Lua files (lua/mcp/): the load-time hook never raises in
-- them, and a measure of what a plugin keeps does not follow their functions.
local LIB = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "\0"

local kept = setmetatable({}, { __mode = "k" })   -- env -> what a measure of its plugin starts from
local due = {}                                    -- name -> true: to be loaded afresh (M.take_due)
local adopted = setmetatable({}, { __mode = "k" })   -- plugin -> its env's kept[] (M.measure_due)
-- The tables of the plugins' declarations (the plugin, its lists, each tool,
-- resource, prompt and middleware, their schemas...): the host reads them on
-- the loop, where no limit of the plugin's applies, so none may take a
-- metatable of the plugin's once declared (ARCHITECTURE.md, "What the host
-- reads from a plugin").
local declared = setmetatable({}, { __mode = "k" })

local function refuse(what, hint)
  error("sandbox: " .. what .. " is not available to a sandboxed plugin" .. (hint and " (" .. hint .. ")" or ""), 3)
end

-- A copy of a library table, without the names in leave_out.
local function lib_copy(t, leave_out)
  local c = {}
  for k, v in pairs(t) do
    if not (leave_out and leave_out[k]) then c[k] = v end
  end
  return c
end

-- A copy of the mcp module: its tables copied (recursively), its functions
-- and its sentinels (tables with a metatable: mcp.CANCELLED) shared.
local function own_copy(t, seen)
  if seen[t] then return seen[t] end
  local c = {}
  seen[t] = c
  for k, v in pairs(t) do
    if type(v) == "table" and getmetatable(v) == nil then v = own_copy(v, seen) end
    c[k] = v
  end
  return c
end

-- A raw copy of mcp.connect / mount options, command copied too: what is
-- checked is what is used (no __index of the plugin's answers twice).
local function plain(opts)
  if type(opts) ~= "table" then return opts end
  local c = {}
  for k, v in next, opts do c[k] = v end
  local cmd = rawget(opts, "command")
  if type(cmd) == "table" then
    c.command = {}
    for i = 1, rawlen(cmd) do c.command[i] = rawget(cmd, i) end
  end
  return c
end

-- The target of mcp.connect / mount options: the program, or the URL.
local function connect_target(opts)
  if type(opts) ~= "table" then return nil end
  if type(opts.command) == "table" then return tostring(opts.command[1]) end
  if type(opts.url) == "string" then return opts.url end
end

-- fn as a callback the host runs for no call (mcp.connect's on_notification):
-- under the plugin's memory and 50 ms of CPU, as its file's loading is.
local function no_call(name, grants, fn)
  if type(fn) ~= "function" then return fn end
  local limits = { cpu_ms = 50, memory_mb = grants.memory_mb }
  return function(...) return M.run(name, limits, fn, ...) end
end

local function own_mcp(view, name, grants)
  local m = own_copy(mcp, {})
  m.settings = view.settings
  m.server_log = plugin_log.open(name).server_log
  function m.connect(opts)
    opts = plain(opts)
    if type(opts) == "table" then opts.on_notification = no_call(name, grants, opts.on_notification) end
    local target = connect_target(opts)
    if target then
      local ok, msg, code = core.sandbox_check("connect", target)
      if not ok then return nil, msg, code end
    end
    return mcp.connect(opts)
  end
  -- resources/updated only for its own resources (or URIs nobody serves)
  function m.notify_resource_updated(uri)
    local r = type(uri) == "string" and require("mcp.server.registry").find_resource(uri)
    if r and r.plugin and r.plugin.name ~= name then
      local msg = ("sandbox: %s may not notify updates of %s, a resource of plugin %s"):format(name, uri, r.plugin.name)
      core.log_stderr("warning", msg, name)
      return nil, msg, "denied"
    end
    return mcp.notify_resource_updated(uri)
  end
  function m.plugin(p)
    if type(p) == "table" and rawget(p, "mount") ~= nil then rawset(p, "mount", plain(rawget(p, "mount"))) end
    local target = type(p) == "table" and connect_target(rawget(p, "mount"))
    if target then
      local ok, msg = core.sandbox_check("connect", target)
      if not ok then error(msg, 2) end
    end
    return mcp.plugin(p)
  end
  return m
end

-- The string library as the plugin sees it, and the string metatable's
-- stand-in that getmetatable("") gives it (the real one stays the host's).
local function own_string()
  local s = lib_copy(string, NOT_IN_STRING)   -- find, gsub, rep...: bounded for it (src/lua/sandbox_lib.c)
  local mt = setmetatable({}, { __index = { __index = s }, __metatable = false,
    __newindex = function() error("sandbox: the string metatable is read-only", 2) end })
  return s, mt
end

-- require of DIR/lib/NAME.lua (or NAME/init.lua), loaded into env; "mcp"
-- is its own mcp. Nothing else: no C modules, no files elsewhere.
local function sandbox_require(dir, env)
  local cache = { mcp = env.mcp, string = env.string, table = env.table, math = env.math, utf8 = env.utf8,
                  coroutine = env.coroutine, os = env.os }
  return function(name)
    if type(name) ~= "string" then error("sandbox: require expects a module name", 2) end
    if cache[name] ~= nil then return cache[name] end
    if not name:find("^[%w_%.]+$") or name:find("%.%.") or name:find("^%.") or name:find("%.$") then
      error(("sandbox: require %q refused: a module is a name like a.b (a file in %s/lib)"):format(name, dir), 2)
    end
    local rel = name:gsub("%.", "/")
    for _, path in ipairs { dir .. "/lib/" .. rel .. ".lua", dir .. "/lib/" .. rel .. "/init.lua" } do
      local src = file.read(path)
      if src then
        local chunk, err = load(src, "@" .. path, "t", env)
        if not chunk then error(err, 2) end
        local v = chunk(name, path)
        if v == nil then v = true end
        cache[name] = v
        return v
      end
    end
    error(("sandbox: require %q refused: no %s/lib/%s.lua (a sandboxed plugin may require only its own modules)")
          :format(name, dir, rel), 2)
  end, cache
end

-- The environment of the sandboxed plugin file at path, named name, in dir,
-- under grants; view: its mcp as config.plugin_mcp gives it (mcp.settings).
function M.env(name, dir, view, grants)
  local env = {}
  for _, k in ipairs(BASE) do env[k] = _G[k] end
  local own_mt = setmetatable({}, { __mode = "k" })   -- metatables it set: the ones it may read back
  local str, str_mt = own_string()
  env.string, env.table, env.math, env.utf8 = str, lib_copy(table), lib_copy(math, NOT_IN_MATH), lib_copy(utf8)
  env.coroutine = lib_copy(coroutine)
  env.os = {}
  for _, k in ipairs(OS) do env.os[k] = os[k] end
  function env.os.getenv(var)
    if type(var) ~= "string" then error("bad argument #1 to 'getenv' (string expected)", 2) end
    local ok, msg, code = core.sandbox_check("env", var)
    if not ok then return nil, msg, code end
    return os.getenv(var)
  end
  function env.setmetatable(t, mt)
    -- a finalizer runs where the collector happens to run, with hooks off:
    -- nothing could stop one that loops
    if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
      error("sandbox: __gc (a finalizer) is not available to a sandboxed plugin", 2)
    end
    if declared[t] then error("sandbox: a declaration's table cannot take a metatable once declared", 2) end
    local r = setmetatable(t, mt)
    if type(mt) == "table" then own_mt[mt] = true end
    return r
  end
  function env.getmetatable(v)
    if type(v) == "string" then return str_mt end
    local mt = getmetatable(v)
    if type(mt) ~= "table" or own_mt[mt] then return mt end
    return nil                                      -- the host's: not its to see or change
  end
  local loads = setmetatable({}, { __mode = "k" })   -- function it loaded -> its source's length
  function env.load(chunk, chunkname, mode, ...)
    if mode ~= nil and mode ~= "t" then
      return nil, "sandbox: load of binary chunks is refused (mode \"t\" only)"
    end
    local too_big = ("sandbox: load of a chunk over %d bytes is refused"):format(MAX_LOAD)
    if type(chunk) == "string" and #chunk > MAX_LOAD then return nil, too_big end   -- the parser cannot be preempted
    local total = type(chunk) == "string" and #chunk or 0
    if type(chunk) == "function" then
      local read = chunk
      chunk = function()
        local piece = read()
        if type(piece) == "string" then
          total = total + #piece
          if total > MAX_LOAD then error(too_big, 0) end
        end
        return piece
      end
    end
    -- its chunks are never named as the host's files (whose code the CPU hook and the measure pass by)
    if type(chunkname) == "string" and chunkname:sub(1, #LIB + 1) == "@" .. LIB then chunkname = "=" .. chunkname end
    local fn, err
    if select("#", ...) > 0 then fn, err = load(chunk, chunkname, "t", ...)
    else fn, err = load(chunk, chunkname, "t", env) end
    if fn then loads[fn] = total end
    return fn, err
  end
  function env.collectgarbage(opt)
    if opt == "count" then return collectgarbage("count") end
    refuse(("collectgarbage(%q)"):format(tostring(opt)), 'only collectgarbage("count")')
  end
  env.print = plugin_log.open(name).print
  for _, k in ipairs { "dofile", "loadfile", "io", "debug", "package", "warn" } do
    env[k] = nil
  end
  env.mcp = own_mcp(view, name, grants or {})
  env._G = env
  local modules
  env.require, modules = sandbox_require(dir, env)
  kept[env] = { name = name, roots = { env, env.mcp, modules }, own_mt = own_mt, loads = loads,
                limit = (grants and grants.memory_mb or 16) * (1 << 20) }
  return env
end

-- What the plugin of st keeps across calls, measured when its code has
-- allocated a step since the last measure (src/core/alloc.c): over its
-- memory_mb, the call ends with an error naming the limit and the plugin is
-- loaded afresh once this loop turn's calls have run (server.reset_due),
-- its memory released.
local sandbox_due = core.sandbox_due

local function measure(st)
  if st.over then return end
  local bytes = core.sandbox_measure(st.name, st.roots, st.own_mt, st.loads, LIB)
  if bytes > st.limit then
    st.over = ("sandbox: plugin %s holds %.1f MB, over its memory limit (memory_mb = %g)")
              :format(st.name, bytes / (1 << 20), st.limit / (1 << 20))
    due[st.name] = true
    core.sandbox_over_memory(st.name, st.over .. ": it is loaded afresh")
  end
end

local function check_kept(st)
  measure(st)
  if st.over then error(st.over, 0) end
end

-- The measure of a sandboxed plugin that is due and that no guard made (its
-- call ended by a limit, a cancel or its timeout: src/core/sched.c asks for
-- server.reset_due); before M.take_due.
function M.measure_due(plugin)
  local st = adopted[plugin]
  if st and sandbox_due(st.name) then measure(st) end
end

-- The names of the plugins to load afresh (their memory over their limit).
function M.take_due()
  local names = due
  due = {}
  return names
end

-- fn as a sandboxed declaration's function: an error that is not a string
-- (nor an mcp.rpc_error, nor ctx:check()'s) becomes one here, in the call,
-- so that no __tostring of its runs later on the host's main thread.
local function guard(fn, st)
  if type(fn) ~= "function" then return fn end
  if st then st.roots[#st.roots + 1] = fn end
  return function(...)
    local r = table.pack(pcall(fn, ...))
    if st and (st.over or sandbox_due(st.name)) then check_kept(st) end
    if r[1] then return table.unpack(r, 2, r.n) end
    local e = r[2]
    if type(e) ~= "string" and not rawequal(e, mcp.CANCELLED) and not require("mcp.result").is_rpc_error(e) then
      e = "(error object is a " .. type(e) .. " value)"
    end
    error(e, 0)
  end
end

function M.guard_complete(c, st)
  if type(c) == "table" then
    for k, f in pairs(c) do c[k] = guard(f, st) end
    return c
  end
  return guard(c, st)
end

-- The functions of a sandboxed plugin's declarations, guarded; its name is
-- its file's (the name its grants and its calls are known by in C). env:
-- the environment its file ran in (what it keeps is measured from there).
-- Walk the declarations of plugin raw (nothing of the plugin's runs): each
-- table met is declared; one with a metatable the plugin set is refused.
local function declare(plugin, own_mt)
  local kinds = { [core.array_mt] = true, [debug.getmetatable(plugin)] = true }
  for _, list in ipairs { "tools", "resources", "prompts", "middleware" } do
    local l = rawget(plugin, list)
    for i = 1, type(l) == "table" and rawlen(l) or 0 do
      local mt = debug.getmetatable(rawget(l, i))
      if mt and not own_mt[mt] then kinds[mt] = true end
    end
  end
  local function walk(t, path)
    if type(t) ~= "table" or declared[t] then return end
    local mt = debug.getmetatable(t)
    if mt ~= nil and not kinds[mt] then
      if own_mt[mt] then
        error(("sandbox: %s has a metatable of the plugin's: a declaration's tables must stay plain"):format(path), 0)
      end
      return                                       -- the host's (a client's, a mount's): not the plugin's
    end
    declared[t] = true
    for k, v in next, t do
      walk(v, path .. (type(k) == "string" and "." .. k or "[" .. (math.type(k) and tostring(k) or type(k)) .. "]"))
    end
  end
  walk(plugin, "plugin")
end

function M.adopt(plugin, name, env)
  local st = kept[env]
  declare(plugin, st and st.own_mt or {})
  if plugin.name ~= name then
    core.log_stderr("warning", ("sandbox: plugin %q (file %s.lua) is named %s: a sandboxed plugin's name is its file's")
                    :format(tostring(plugin.name), name, name))
    plugin.name = name
  end
  for _, t in ipairs(plugin.tools) do
    t.own_handler = t.own_handler or t.handler   -- where the plugin wrote it, for the log (result.lua)
    t.handler = guard(t.handler, st)
  end
  for _, r in ipairs(plugin.resources) do
    r.read = guard(r.read, st)
    r.complete = M.guard_complete(r.complete, st)
  end
  for _, p in ipairs(plugin.prompts) do
    p.get = guard(p.get, st)
    p.complete = M.guard_complete(p.complete, st)
  end
  for _, mw in ipairs(plugin.middleware) do
    if st and type(mw.handler) == "function" then st.roots[#st.roots + 1] = mw.handler end
  end
  plugin.sandboxed = true
  adopted[plugin] = st
  return plugin
end

-- Run the plugin file's chunk for plugin name under its grants: its
-- checks and its memory are its own while it runs (core.sandbox_loading),
-- and a count hook holds it to its cpu_ms: past it, every instruction of
-- the plugin's own code raises (so its pcall cannot hold it), the host's
-- code (decl.collect around it) unwinds as usual. run(...) -> its results.
function M.run(name, grants, run, ...)
  local limit = grants.cpu_ms or 1000
  local deadline, expired = os.clock() + limit / 1000, false
  local msg = ("sandbox: plugin %s passed its CPU limit while loading (cpu_ms = %g)"):format(name, limit)
  local function tick()
    if not expired then
      if os.clock() <= deadline then return end
      expired = true
      debug.sethook(tick, "", 1)
    end
    local info = debug.getinfo(2, "S")
    if info and info.what ~= "C" and info.source:sub(1, #LIB + 1) ~= "@" .. LIB then error(msg, 2) end
  end
  core.sandbox_loading(name)
  debug.sethook(tick, "", 1000)
  local r = table.pack(pcall(run, ...))
  debug.sethook()
  core.sandbox_loading(nil)
  local memory = ("sandbox: plugin %s passed its memory limit while loading (memory_mb = %g)"):format(name,
                 grants.memory_mb or 16)
  for i = 2, r.n do
    if type(r[i]) == "string" and r[i]:find("not enough memory", 1, true) then r[i] = memory end
  end
  if not r[1] then error(type(r[2]) == "string" and r[2] or "(error object is a " .. type(r[2]) .. " value)", 0) end
  return table.unpack(r, 2, r.n)
end

return M
