-- The server side of the Lua layer: loads and reloads the plugins into the
-- registry (server/registry.lua), and dispatches the methods the C core hands
-- to Lua to their families (server/tools.lua, resources.lua, prompts.lua,
-- completion.lua). Each call runs in its own coroutine: dispatch(method,
-- params, id) returns a result table, or nil, code, message for a JSON-RPC error.
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local client = require "mcp.client"
local mount = require "mcp.mount"
local decl = require "mcp.decl"
local load_errors = require "mcp.load_errors"
local config = require "mcp.config"
local plugin_log = require "mcp.plugin_log"
local reg = require "mcp.server.registry"
local tools_family = require "mcp.server.tools"
local resources_family = require "mcp.server.resources"
local middleware = require "mcp.server.middleware"
local apps = require "mcp.apps"
local file = require "mcp.file"
require "mcp.server.prompts"
require "mcp.server.completion"

local M = {}
local tools, tool_list = reg.tools, reg.tool_list
local resources, resource_list = reg.resources, reg.resource_list
local templates, template_list = reg.templates, reg.template_list
local prompts, prompt_list = reg.prompts, reg.prompt_list
local completers = 0                          -- prompts and templates with a complete
local mounts = 0                              -- plugins that mount another server (mount.lua)

local function log(level, fmt, ...)
  core.log_stderr(level, string.format(fmt, ...))
end

-- Duplicate URIs, templates and prompt names: the later plugin is refused whole.
local function check_unique(plugin)
  local uris, tpls, names = {}, {}, {}
  local function dup(kind, key, owner)
    error(string.format("%s %q is already defined by plugin %q", kind, key, owner), 0)
  end
  for _, r in ipairs(plugin.resources) do
    if mcp.is_resource(r) then
      if resources[r.uri] then dup("resource", r.uri, resources[r.uri].plugin.name) end
      if uris[r.uri] then dup("resource", r.uri, plugin.name) end
      uris[r.uri] = true
    else
      local t = r.uriTemplate
      if templates[t] then dup("resource template", t, templates[t].plugin.name) end
      if tpls[t] then dup("resource template", t, plugin.name) end
      tpls[t] = true
    end
  end
  for _, pr in ipairs(plugin.prompts) do
    if prompts[pr.name] then dup("prompt", pr.name, prompts[pr.name].plugin.name) end
    if names[pr.name] then dup("prompt", pr.name, plugin.name) end
    names[pr.name] = true
  end
end

local function register_more(plugin)
  for _, r in ipairs(plugin.resources) do
    r.plugin = plugin
    if mcp.is_resource(r) then
      resources[r.uri] = r
      resource_list[#resource_list + 1] = r
    else
      templates[r.uriTemplate] = r
      template_list[#template_list + 1] = r
      if r.complete then completers = completers + 1 end
    end
  end
  for _, pr in ipairs(plugin.prompts) do
    pr.plugin = plugin
    prompts[pr.name] = pr
    prompt_list[#prompt_list + 1] = pr
    if pr.complete then completers = completers + 1 end
  end
end

local cfg                -- the configuration file's, read by M.load (below)

-- A tool's limits: the configuration file's limits.TOOL, else the tool's,
-- else its plugin's defaults (src/core/limit.c keeps them).
local function set_limits(tool, d)
  local o = cfg and cfg.limits[tool.name] or {}
  local function pick(k) return o[k] or tool[k] or d[k] end
  local rate = pick("rate")
  core.set_limits(tool.name, pick("max_concurrent") or 0, pick("queue") or 0,
                  rate and (rate:gsub("%s", "")) or nil, pick("heartbeat") or 0)
end

local function register(plugin, path)
  plugin.file = path
  for _, tool in ipairs(plugin.tools) do
    if tools[tool.name] then
      error(string.format("tool %q is already defined by plugin %q", tool.name, tools[tool.name].plugin.name), 0)
    end
  end
  check_unique(plugin)
  core.http_allow(plugin.name, plugin.http_allow)
  register_more(plugin)
  local d = plugin.defaults
  for _, tool in ipairs(plugin.tools) do
    tool.plugin = plugin
    tools[tool.name] = tool
    tool_list[#tool_list + 1] = tool
    core.set_policy(tool.name,
      tool.cancel or d.cancel or "cooperative",
      tool.timeout or d.timeout or core.config.timeout,
      tool.grace or d.grace or core.config.grace,
      plugin.name, tool.task or "forbidden", decl.param_headers[tool] ~= nil)
    set_limits(tool, d)
  end
  middleware.add(plugin)
end

-- Are two declarations the same, but for their functions (a reload's are
-- new ones) and the plugin they belong to? Read raw: they are the plugin's.
local function same(a, b, depth)
  if type(a) ~= type(b) then return false end
  if type(a) == "function" then return true end
  if type(a) ~= "table" then return rawequal(a, b) end
  if rawequal(a, b) or depth > 32 then return true end
  for k, v in next, a do
    if k ~= "plugin" and not same(v, rawget(b, k), depth + 1) then return false end
  end
  for k in next, b do
    if k ~= "plugin" and rawget(a, k) == nil then return false end
  end
  return true
end

-- What a reload changed, by kind: "tools +new -gone ~changed; prompts +p".
local function changes(old, new)
  local said = {}
  for _, kind in ipairs { "tools", "resources", "prompts" } do
    local function key(d)
      if kind == "resources" then return rawget(d, "uri") or rawget(d, "uriTemplate") end
      return rawget(d, "name")
    end
    local before, now, added, gone, changed = {}, {}, {}, {}, {}
    for _, d in ipairs(old[kind]) do before[key(d)] = d end
    for _, d in ipairs(new[kind]) do
      local was = before[key(d)]
      now[key(d)] = true
      if was == nil then added[#added + 1] = "+" .. tostring(key(d))
      elseif not same(was, d, 0) then changed[#changed + 1] = "~" .. tostring(key(d)) end
    end
    for _, d in ipairs(old[kind]) do
      if not now[key(d)] then gone[#gone + 1] = "-" .. tostring(key(d)) end
    end
    local marks = {}
    for _, l in ipairs { added, gone, changed } do table.move(l, 1, #l, #marks + 1, marks) end
    if #marks > 0 then said[#said + 1] = kind .. " " .. table.concat(marks, " ") end
  end
  return #said > 0 and table.concat(said, "; ") or "no tool, resource or prompt changed"
end

-- The log line of a unit loaded (u.old: the version it replaces).
local last_reload = {}                  -- plugin name -> {time =, changes =} (the console's)
local last_failure                      -- the last failed reload: {time =, message =}

local function announce(u)
  local p = u.plugin
  if u.old then
    local what = changes(u.old.plugin, p)
    last_reload[p.name] = { time = os.time(), changes = what }
    log("info", "reloaded plugin %s from %s: %s", p.name, u.path, what)
  else
    log("info", "loaded plugin %s from %s (%d tools, %d resources, %d prompts)", p.name, u.path,
        #p.tools, #p.resources, #p.prompts)
  end
end

-- Empty the registry in place. Calls in flight hold their handler already:
-- they finish on the code they started with; new calls see the new registry.
local function reset_registry()
  for _, t in ipairs { tools, tool_list, resources, resource_list, templates, template_list,
                       prompts, prompt_list } do
    for k in pairs(t) do t[k] = nil end
  end
  middleware.reset()
  completers = 0
end

-- A plugin file runs in its own environment. Its helper modules (DIR/lib)
-- are loaded afresh for each load of the file, so that an edit to a helper
-- is seen on reload and never left stale in package.loaded. Its "mcp" is
-- its own view of the module, with its mcp.settings.
local function plugin_require(dir, env, own_mcp)
  local cache = { mcp = own_mcp }
  return function(name)
    if cache[name] ~= nil then return cache[name] end
    local rel = name:gsub("%.", "/")
    for _, path in ipairs { dir .. "/lib/" .. rel .. ".lua", dir .. "/lib/" .. rel .. "/init.lua" } do
      local f = io.open(path, "r")
      if f then
        f:close()
        local chunk = assert(loadfile(path, "t", env))
        local v = chunk(name, path)
        if v == nil then v = true end
        cache[name] = v
        return v
      end
    end
    return require(name)
  end
end

local clients_of = setmetatable({}, { __mode = "k" })   -- plugin -> its mcp.connect clients

-- --config FILE (set by the C side): the last good configuration read from
-- it, whose plugins = {NAME = {...}} the plugin files see as mcp.settings.
M.config_file = nil    -- its configuration: cfg, declared above set_limits

local sandboxed = {}                    -- dir -> true: its plugins run sandboxed (--sandbox)
local logs_of = setmetatable({}, { __mode = "k" })   -- a trusted plugin's env -> its log (plugin_log.lua)

-- A plugin file's environment and how its chunk runs: trusted, or
-- sandboxed (lua/mcp/sandbox.lua) under the grants of its file's name.
local function environment(path, dir)
  local view = config.plugin_mcp(cfg, path)
  if not sandboxed[dir] then
    local env, log = setmetatable({}, { __index = _G }), plugin_log.open(config.name_of(path))
    view.server_log, env.print, env.io = log.server_log, log.print, log.io   -- to the log, never stdout
    logs_of[env] = log
    env.require = plugin_require(dir, env, view)
    return env, function(chunk) return decl.collect(chunk, load_errors.handler) end
  end
  local sandbox = require "mcp.sandbox"    -- loaded only when there are sandboxed plugins
  local name, grants = config.name_of(path), config.grants(cfg, path)
  core.sandbox_set(name, grants)
  return sandbox.env(name, dir, view, grants), function(chunk)
    return sandbox.run(name, grants, function(c) return decl.collect(c, load_errors.handler) end, chunk)
  end
end

-- Run a plugin file: the plugin, or nil and its errors, one "file:line:
-- message" each, in source order (lua/mcp/load_errors.lua).
local function load_file(path, dir, source)
  local env, run = environment(path, dir)
  local chunk, err = load(source, "@" .. path, "t", env)
  if not chunk then return nil, load_errors.lines(path, source, {}, err) end
  local clients = {}                    -- mcp.connect clients it makes
  local prev = client.collect(clients)
  local cok, problems, ok, plugin = pcall(run, chunk)
  client.collect(prev)
  if not cok then problems, ok, plugin = {}, false, problems end
  if #problems > 0 or not ok or not mcp.is_plugin(plugin) then
    for _, c in ipairs(clients) do c:close() end
    return nil, load_errors.lines(path, source, problems, not ok and plugin or nil, ok and not mcp.is_plugin(plugin))
  end
  clients_of[plugin] = clients
  if logs_of[env] then logs_of[env].name = plugin.name end   -- its lines name it as its tools do
  if sandboxed[dir] then
    local aok, aerr = pcall(require("mcp.sandbox").adopt, plugin, config.name_of(path), env)
    if not aok then
      for _, c in ipairs(clients) do c:close() end
      return nil, { path .. ": " .. tostring(aerr) }
    end
  end
  return plugin
end

-- A plugin that goes (reloaded, removed) takes its clients with it: their
-- children are stopped, their sessions ended.
local function close_clients(plugin)
  for _, c in ipairs(clients_of[plugin] or {}) do c:close() end
  clients_of[plugin] = nil
end

-- The plugins loaded, one unit per file, in directory then name order.
local units, dirs_loaded = {}, {}

-- What a sandboxed plugin declares under a name a trusted plugin serves is
-- refused (logged), the rest of it kept; a sandboxed plugin named as a
-- trusted one is refused whole (its calls would be known by that name).
local function sandbox_admit(plugin, trusted)
  if trusted[plugin.name] then
    return false, string.format("sandbox: plugin %s has the name of a trusted plugin", plugin.name)
  end
  local function keep(list, index, key)
    local out = {}
    for _, d in ipairs(list) do
      local owner = index[d[key]]
      if owner and owner.plugin and not owner.plugin.sandboxed then
        log("warning", "sandbox: plugin %s: %s is the trusted plugin %s's: its declaration is refused",
            plugin.name, tostring(d[key]), owner.plugin.name)
      else
        out[#out + 1] = d
      end
    end
    return out
  end
  plugin.tools = keep(plugin.tools, tools, "name")
  plugin.prompts = keep(plugin.prompts, prompts, "name")
  local res = {}
  for _, r in ipairs(plugin.resources) do
    local index, key = resources, "uri"
    if not mcp.is_resource(r) then index, key = templates, "uriTemplate" end
    if #keep({ r }, index, key) == 1 then res[#res + 1] = r end
  end
  plugin.resources = res
  local mws = {}
  for _, mw in ipairs(plugin.middleware) do   -- it sees only its own tools' calls
    local others = {}
    for _, m in ipairs(mw.methods or {}) do
      if m ~= "tools/call" then others[#others + 1] = m end
    end
    if #others > 0 then
      log("warning", "sandbox: plugin %s: middleware %s may cover only its own tools' calls (tools/call), "
          .. "not %s: its declaration is refused", plugin.name, tostring(mw.name), table.concat(others, ", "))
    else
      mws[#mws + 1] = mw
    end
  end
  plugin.middleware = mws
  return true
end

-- Register every unit; a unit that cannot be registered (a name taken by
-- another plugin) is reported and left out.
local function rebuild(list, fresh)
  reset_registry()
  local kept, trusted = {}, {}
  mounts = 0
  for _, u in ipairs(list) do
    if not u.plugin.sandboxed then
      trusted[u.plugin.name] = true
      core.sandbox_set(u.plugin.name, nil)        -- a name once sandboxed is a trusted plugin's now
    end
  end
  for _, u in ipairs(list) do
    local ok, err = true, nil
    if u.plugin.sandboxed then ok, err = sandbox_admit(u.plugin, trusted) end
    if ok then ok, err = pcall(register, u.plugin, u.path) end
    if not ok and mount.of(u.plugin) and mount.unmount(u.plugin) then
      -- its mounted part clashes with another plugin: its own part, and the
      -- upstream's lists fetched again (without the names taken)
      log("warning", "plugin %s: its mounted part is left out: %s", u.plugin.name, err)
      ok, err = pcall(register, u.plugin, u.path)
    end
    if ok then
      kept[#kept + 1] = u
      if fresh[u] then announce(u) end
      if mount.of(u.plugin) then mounts = mounts + 1 end
    else
      u.error = u.path .. ": " .. err
    end
  end
  middleware.build()
  return kept
end

local function scan(dir)
  local files, err = core.plugin_files(dir)
  if not files then
    log("warning", "plugins: %s", err)
    return {}
  end
  return files
end

-- Settings for a plugin that no directory has a file for: a typo, likely.
local function warn_unmatched()
  if not cfg then return end
  local files, names = {}, {}
  for _, dir in ipairs(dirs_loaded) do
    for _, name in ipairs(scan(dir)) do files[config.name_of(name)] = true end
  end
  for name in pairs(cfg.settings) do
    if not files[name] then names[#names + 1] = name end
  end
  table.sort(names)
  for _, name in ipairs(names) do
    log("warning", "%s: plugins.%s: no plugin file %s.lua in %s", config.where(cfg, name), name, name,
        table.concat(dirs_loaded, ", "))
  end
end

-- With --watch, the configuration is read again before each rescan. A
-- broken one keeps the last good one, with its error logged and sent to
-- clients, as a broken plugin's is; flags that changed need a restart.
local function reread_config()
  if not M.config_file then return end
  local ok, new = pcall(config.read, M.config_file)
  if not ok then
    log("error", "configuration not reloaded, the last good one stays: %s", tostring(new))
    core.log("error", "luamcp: configuration not reloaded: " .. tostring(new))
    return
  end
  local flags, plugins, seen = config.changed_flags(cfg, new), {}, {}
  for _, t in ipairs { cfg.settings, new.settings, cfg.grants, new.grants } do
    for name in pairs(t) do
      if not seen[name] and config.fingerprint(cfg, name .. ".lua") ~= config.fingerprint(new, name .. ".lua") then
        plugins[#plugins + 1] = name
      end
      seen[name] = true
    end
  end
  cfg = new
  core.server_card(cfg.server_card)
  if #flags > 0 then
    log("warning", "%s: %s changed: restart luamcp to apply", M.config_file, table.concat(flags, ", "))
  end
  if #plugins > 0 then
    table.sort(plugins)
    log("info", "%s: settings of %s changed", M.config_file, table.concat(plugins, ", "))
    warn_unmatched()
  end
end

-- load{dir, ...}: every dir/*.lua, in name order. A broken plugin is logged
-- and skipped; the others still load.
function M.load(dirs)
  local all = {}
  for _, d in ipairs(dirs) do all[#all + 1] = d end
  for _, d in ipairs(dirs.sandbox or {}) do
    if not sandboxed[d] then all[#all + 1] = d end
    sandboxed[d] = true
  end
  dirs = all
  dirs_loaded = dirs
  if M.config_file then cfg = config.read(M.config_file) end
  core.server_card(cfg and cfg.server_card)
  local list, fresh = {}, {}
  for _, dir in ipairs(dirs) do
    for _, name in ipairs(scan(dir)) do
      local path = dir .. "/" .. name
      local source = (file.read(path)) or ""
      local plugin, err = load_file(path, dir, source)
      if plugin then
        local u = { path = path, dir = dir, plugin = plugin, source = source,
                    settings = config.fingerprint(cfg, path) }
        list[#list + 1] = u
        fresh[u] = true
      else
        for _, e in ipairs(err) do log("error", "plugin not loaded: %s", e) end
      end
    end
  end
  units = rebuild(list, fresh)
  for _, u in ipairs(list) do
    if u.error then
      log("error", "plugin not loaded: %s", u.error)
      close_clients(u.plugin)
    end
  end
  warn_unmatched()
  M.sync_methods()
  apps.refresh(resource_list, M.watching)
end

M.watching = false

local function kinds(plugin, into)
  if plugin == nil then return end
  if mount.of(plugin) then into.tools, into.resources, into.prompts = true, true, true end
  if #plugin.tools > 0 then into.tools = true end
  if #plugin.resources > 0 then into.resources = true end
  if #plugin.prompts > 0 then into.prompts = true end
  for _, mw in ipairs(plugin.middleware) do       -- a list it filters may change
    for _, m in ipairs(mw.methods or { "tools/list", "resources/list", "prompts/list" }) do
      if m == "tools/list" then into.tools = true end
      if m == "resources/list" or m == "resources/templates/list" then into.resources = true end
      if m == "prompts/list" then into.prompts = true end
    end
  end
end

-- Hot reload: look at every plugin file again. A new file is loaded, a
-- changed one (or one whose DIR/lib or settings changed) reloaded, a deleted one's
-- tools, resources and prompts removed. A broken edit keeps the last good
-- version serving; its error (file:line) goes to the log and to clients.
-- lib_changed: set of dirs whose lib/ changed. afresh (M.reset_due): set of
-- paths whose plugins are loaded again from the source they were loaded
-- from, nothing else looked at (no configuration read, no file scanned).
function M.rescan(lib_changed, afresh)
  lib_changed = lib_changed or {}
  local before = units
  local list, fresh, changed, errors = {}, {}, {}, {}  -- errors: each failed file's lines
  local function load_unit(path, dir, source, old)
    local plugin, err = load_file(path, dir, source)
    if plugin then
      local u = { path = path, dir = dir, plugin = plugin, source = source, old = old,
                  settings = config.fingerprint(cfg, path) }
      list[#list + 1] = u
      fresh[u] = true
      kinds(plugin, changed)
      kinds(old and old.plugin, changed)
    else
      errors[#errors + 1] = err                   -- its lines
      if old then list[#list + 1] = old end      -- the last good version goes on
    end
  end
  if afresh then
    for _, u in ipairs(units) do
      if afresh[u.path] then load_unit(u.path, u.dir, u.source, u) else list[#list + 1] = u end
    end
  else
    reread_config()
    local by_path = {}
    for _, u in ipairs(units) do by_path[u.path] = u end
    for _, dir in ipairs(dirs_loaded) do
      for _, name in ipairs(scan(dir)) do
        local path = dir .. "/" .. name
        local old, source = by_path[path], (file.read(path))
        by_path[path] = nil
        if source == nil then
          if old then list[#list + 1] = old end
        elseif old and old.source == source and not lib_changed[dir] and
               old.settings == config.fingerprint(cfg, path) then
          list[#list + 1] = old
        else
          load_unit(path, dir, source, old)
        end
      end
    end
    for path, old in pairs(by_path) do              -- deleted files
      log("info", "plugin %s removed (%s deleted)", old.plugin.name, path)
      kinds(old.plugin, changed)
    end
  end
  local kept = rebuild(list, fresh)
  for _, u in ipairs(list) do
    if u.error then
      errors[#errors + 1] = { u.error }
      if u.old then                                 -- a new version clashes: keep the old one
        u.old.error = nil
        for i, x in ipairs(list) do if x == u then list[i] = u.old end end
      end
    end
  end
  if #kept ~= #list then                            -- put the replaced versions back
    kept = rebuild(list, {})
    for _, u in ipairs(list) do
      if u.error then errors[#errors + 1] = { u.error } end
    end
  end
  units = kept
  for _, u in ipairs(units) do u.old = nil end      -- the replaced versions go: nothing keeps them
  local live = {}
  for _, u in ipairs(units) do live[u.plugin] = true end
  for _, l in ipairs { before, list } do
    for _, u in ipairs(l) do
      if not live[u.plugin] then close_clients(u.plugin) end
    end
  end
  M.sync_methods()
  local reloaded = 0
  for _, u in ipairs(units) do if fresh[u] then reloaded = reloaded + 1 end end
  core.count("luamcp_plugin_reloads_total", "ok", reloaded)
  core.count("luamcp_plugin_reloads_total", "failed", #errors)
  for _, lines in ipairs(errors) do                -- a file's lines
    for _, err in ipairs(lines) do
      log("error", "plugin not reloaded: %s", err)
      last_failure = { time = os.time(), message = err }
      core.log("error", "luamcp: plugin not reloaded: " .. err)
    end
  end
  if changed.tools then core.notify(nil, "notifications/tools/list_changed") end
  if changed.resources then core.notify(nil, "notifications/resources/list_changed") end
  if changed.prompts then core.notify(nil, "notifications/prompts/list_changed") end
  -- an MCP App's HTML edited (its file, or the plugin's html): its subscribers hear
  for _, uri in ipairs(apps.refresh(resource_list, M.watching)) do
    log("info", "app %s: its HTML changed", uri)
    M.notify_resource_updated(uri)
  end
  return #errors == 0
end

-- Sandboxed plugins over their memory_mb (lua/mcp/sandbox.lua; measured
-- here if a call that ended by a limit, a cancel or its timeout left a
-- measure due), loaded afresh as hot reload does: a new environment, their
-- file run again; what the old one held becomes garbage, collected now. Run
-- by the core once a loop turn's calls have run (mcp_sched_reset_due).
function M.reset_due()
  local sandbox, afresh = require "mcp.sandbox", {}
  for _, u in ipairs(units) do
    if u.plugin.sandboxed then sandbox.measure_due(u.plugin) end
  end
  local names = sandbox.take_due()
  for _, u in ipairs(units) do
    if u.plugin.sandboxed and names[u.plugin.name] then
      afresh[u.path] = true
      log("warning", "sandbox: plugin %s over its memory limit: loaded afresh from %s", u.plugin.name, u.path)
    end
  end
  if next(afresh) then
    M.rescan(nil, afresh)
    collectgarbage()
  end
end

local methods = reg.methods
M.methods = methods
M.tool_scopes, M.param_headers = tools_family.tool_scopes, tools_family.param_headers
M.notify_resource_updated = resources_family.notify_resource_updated
local find_resource = reg.find_resource

-- Mounts: the lists of a plugin that mounts another server are fetched
-- inside a call (they wait), when a client lists them or names something
-- not known yet; the registry is then rebuilt with them.
local LISTS = { ["tools/list"] = true, ["resources/list"] = true, ["resources/templates/list"] = true,
                ["prompts/list"] = true }

local function taken(plugin)
  local by_kind = { tool = tools, resource = resources, template = templates, prompt = prompts }
  return function(kind, key)
    local owner = by_kind[kind][key]
    if owner and owner.plugin ~= plugin then return owner.plugin.name end
  end
end

function M.refresh_mounts()
  local changed = {}
  for _, u in ipairs(units) do
    if mount.of(u.plugin) and mount.refresh(u.plugin, taken(u.plugin)) then changed[#changed + 1] = u.plugin end
  end
  if #changed == 0 then return end
  local ok, err = pcall(function()
    units = rebuild(units, {})
    M.sync_methods()
  end)
  for _, p in ipairs(changed) do mount.settle(p) end
  if not ok then error(err, 0) end
end

local function unknown(method, params)
  if method == "tools/call" then return type(params.name) == "string" and tools[params.name] == nil end
  if method == "prompts/get" then return type(params.name) == "string" and prompts[params.name] == nil end
  if method == "resources/read" then return type(params.uri) == "string" and find_resource(params.uri) == nil end
  return LISTS[method]
end

-- A method some middleware covers goes through its chain (server/middleware.lua).
local chains, tool_chains, run_chain = middleware.chains, middleware.tool_chains, middleware.run

function M.dispatch(method, params, id, session)
  if mounts > 0 and unknown(method, params) then M.refresh_mounts() end
  local chain = chains[method]
  if method == "tools/call" then chain = tool_chains[params.name] or chain end
  if chain then return run_chain(chain, method, params, id, session) end
  return methods[method](params, id, session)
end

-- The capabilities initialize declares, from what the plugins offer.
-- The methods of a capability no plugin offers are left out, so that the
-- C core answers them -32601 (method not found).
local optional = {
  ["resources/list"] = "resources", ["resources/templates/list"] = "resources",
  ["resources/read"] = "resources", ["resources/subscribe"] = "resources",
  ["resources/unsubscribe"] = "resources",
  ["prompts/list"] = "prompts", ["prompts/get"] = "prompts",
  ["completion/complete"] = "completions",
  ["tasks/result"] = "tasks",
}
local optional_fn = {}
for m in pairs(optional) do optional_fn[m] = methods[m] end

-- The methods the C core may run without this dispatch (src/lua/fastpath.c),
-- when nothing in Lua must see them. LUAMCP_LUA_PATH=1 (read once) keeps
-- every method on the Lua path, for tests of that path.
local C_METHODS = { "tools/call", "tools/list" }
local lua_path_only = os.getenv("LUAMCP_LUA_PATH") == "1"

-- May C run method? Not when a middleware covers it: its chain is Lua's.
local function fast_ok(method)
  return not middleware.covers(method)
end

-- A tools/call under a middleware: C starts its chain, and the chain's
-- next runs the method's own step in C (fastpath.c).
local c_chains = { calls = middleware.chains, tool_calls = middleware.tool_chains, run = middleware.run }

local function sync_fast()
  tools_family.sync_c()
  local fast = {}
  for _, m in ipairs(C_METHODS) do
    -- a mount's lists are fetched by the Lua dispatch (refresh_mounts)
    if not lua_path_only and fast_ok(m) and not (mounts > 0 and LISTS[m]) then fast[#fast + 1] = m end
  end
  core.fast_methods(fast, not lua_path_only and c_chains or nil)
end

function M.sync_methods()
  local caps = M.capabilities()
  for m, cap in pairs(optional) do
    methods[m] = caps[cap] and optional_fn[m] or nil
  end
  sync_fast()
end

function M.capabilities()
  local caps, watch = { logging = {} }, M.watching
  -- with hot reload, anything may come later: declare it all, with listChanged
  -- so does a mount: its lists come later, and change with the upstream's
  local any = watch or mounts > 0
  if #tool_list > 0 or any then caps.tools = { listChanged = any } end
  if #resource_list > 0 or #template_list > 0 or any then
    caps.resources = { subscribe = true, listChanged = any }
  end
  if #prompt_list > 0 or any then caps.prompts = { listChanged = any } end
  if completers > 0 or watch then caps.completions = {} end
  local tasks = watch
  for _, t in ipairs(tool_list) do tasks = tasks or (t.task ~= nil and t.task ~= "forbidden") end
  if tasks then caps.tasks = { list = {}, cancel = {}, requests = { tools = { call = {} } } } end
  -- MCP Apps (SEP-1724 extensions; rev2026.c adds the tasks extension beside it)
  if watch or apps.in_use(tool_list, resource_list) then caps.extensions = { [apps.EXTENSION] = {} } end
  return caps
end

-- A session ended (its subscriptions go with it).
M.session_closed = resources_family.session_closed

-- What is loaded, in load order (luamcp list): each item's .plugin has .file.
function M.list()
  return { tools = tool_list, resources = resource_list, templates = template_list, prompts = prompt_list }
end

M.middleware = middleware

-- What the console's Plugins panel shows: each loaded plugin (trusted or
-- sandboxed with its grants, its tools and middleware, its mount's upstream
-- state, its last reload) and the last failed reload.
local function plain(v, depth)               -- no secret, no function: what JSON shows
  local k = type(v)
  if k == "string" or k == "number" or k == "boolean" then return v end
  if k ~= "table" or depth > 4 or getmetatable(v) ~= nil then return nil end
  local t = {}
  for key, x in pairs(v) do
    if type(key) == "string" or math.type(key) == "integer" then t[key] = plain(x, depth + 1) end
  end
  return t
end

function M.plugins()
  local out = {}
  for _, u in ipairs(units) do
    local p, names, mws = u.plugin, {}, {}
    for _, t in ipairs(p.tools) do names[#names + 1] = t.name end
    for _, mw in ipairs(p.middleware) do mws[#mws + 1] = tostring(mw.name or "?") end
    local st, upstream = mount.of(p), nil
    if st then upstream = { stale = st.stale, fetching = st.fetching ~= nil, prefix = st.prefix } end
    out[#out + 1] = {
      name = p.name, file = u.path, sandboxed = p.sandboxed and true or false,
      grants = p.sandboxed and plain(config.grants(cfg, u.path), 0) or nil,
      tools = names, middleware = mws, mount = upstream, reload = last_reload[p.name],
      resources = #p.resources, prompts = #p.prompts,
    }
  end
  return { plugins = out, failed = last_failure }
end

-- What a handler raised, for the C core (sched.c): code, message, data.
M.raised = outcome.raised

M.sync_methods()
M.tools = tools
M.resources, M.templates, M.prompts = resources, templates, prompts
return M
