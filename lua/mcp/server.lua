-- The server side of the Lua layer: loads plugins, keeps the registry of
-- tools, and serves the methods the C core hands to Lua. Each call runs in
-- its own coroutine: dispatch(method, params, id) returns a result table, or
-- nil, code, message for a JSON-RPC error.
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local input = require "mcp.input"
local client = require "mcp.client"
local mount = require "mcp.mount"
local decl = require "mcp.decl"
local config = require "mcp.config"

local M = {}
local tools, tool_list = {}, {}
local resources, resource_list = {}, {}       -- by uri; in load order
local templates, template_list = {}, {}       -- by uriTemplate; in load order (the order of matching)
local prompts, prompt_list = {}, {}           -- by name; in load order
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

local function register(plugin, path, quiet)
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
      plugin.name, tool.task or "forbidden")
    set_limits(tool, d)
  end
  if not quiet then
    log("info", "loaded plugin %s from %s (%d tools, %d resources, %d prompts)", plugin.name, path,
        #plugin.tools, #plugin.resources, #plugin.prompts)
  end
end

-- Empty the registry in place. Calls in flight hold their handler already:
-- they finish on the code they started with; new calls see the new registry.
local function reset_registry()
  for _, t in ipairs { tools, tool_list, resources, resource_list, templates, template_list,
                       prompts, prompt_list } do
    for k in pairs(t) do t[k] = nil end
  end
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

local function read_source(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local src = f:read("a")
  f:close()
  return src
end

local clients_of = setmetatable({}, { __mode = "k" })   -- plugin -> its mcp.connect clients

-- --config FILE (set by the C side): the last good configuration read from
-- it, whose plugins = {NAME = {...}} the plugin files see as mcp.settings.
M.config_file = nil    -- its configuration: cfg, declared above set_limits

-- Run a plugin file: the plugin, or nil and an error with file:line.
local function load_file(path, dir, source)
  local env = setmetatable({}, { __index = _G })
  env.require = plugin_require(dir, env, config.plugin_mcp(cfg, path))
  local chunk, err = load(source, "@" .. path, "t", env)
  if not chunk then return nil, err end
  local clients = {}                    -- mcp.connect clients it makes
  local prev = client.collect(clients)
  local problems, ok, plugin = decl.collect(chunk, debug.traceback)
  client.collect(prev)
  if ok and not mcp.is_plugin(plugin) then ok, plugin = false, path .. ": a plugin file must return mcp.plugin{...}" end
  if #problems > 0 then                 -- mistakes in its declarations: every one, and any error after them
    local lines = {}
    for i, p in ipairs(problems) do lines[i] = decl.where(p, path, source) .. p.msg end
    if not ok then lines[#lines + 1] = tostring(plugin) end
    ok, plugin = false, table.concat(lines, "\n")
  end
  if not ok then
    for _, c in ipairs(clients) do c:close() end
    plugin = tostring(plugin)
    -- an error raised in a tail call (return mcp.plugin{...}) has no position
    if not plugin:find(path, 1, true) then plugin = path .. ": " .. plugin end
    return nil, plugin
  end
  clients_of[plugin] = clients
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

-- Register every unit; a unit that cannot be registered (a name taken by
-- another plugin) is reported and left out.
local function rebuild(list, fresh)
  reset_registry()
  local kept = {}
  mounts = 0
  for _, u in ipairs(list) do
    local ok, err = pcall(register, u.plugin, u.path, not fresh[u])
    if not ok and mount.of(u.plugin) and mount.unmount(u.plugin) then
      -- its mounted part clashes with another plugin: its own part, and the
      -- upstream's lists fetched again (without the names taken)
      log("warning", "plugin %s: its mounted part is left out: %s", u.plugin.name, err)
      ok, err = pcall(register, u.plugin, u.path, not fresh[u])
    end
    if ok then
      kept[#kept + 1] = u
      if mount.of(u.plugin) then mounts = mounts + 1 end
    else
      u.error = u.path .. ": " .. err
    end
  end
  return kept
end

local function scan(dir)
  local files, err = core.listdir(dir)
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
  for _, t in ipairs { cfg.settings, new.settings } do
    for name in pairs(t) do
      if not seen[name] and config.fingerprint(cfg, name .. ".lua") ~= config.fingerprint(new, name .. ".lua") then
        plugins[#plugins + 1] = name
      end
      seen[name] = true
    end
  end
  cfg = new
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
  dirs_loaded = dirs
  if M.config_file then cfg = config.read(M.config_file) end
  local list, fresh = {}, {}
  for _, dir in ipairs(dirs) do
    for _, name in ipairs(scan(dir)) do
      local path = dir .. "/" .. name
      local source = read_source(path) or ""
      local plugin, err = load_file(path, dir, source)
      if plugin then
        local u = { path = path, dir = dir, plugin = plugin, source = source,
                    settings = config.fingerprint(cfg, path) }
        list[#list + 1] = u
        fresh[u] = true
      else
        log("error", "plugin not loaded: %s", err)
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
end

M.watching = false

local function kinds(plugin, into)
  if plugin == nil then return end
  if mount.of(plugin) then into.tools, into.resources, into.prompts = true, true, true end
  if #plugin.tools > 0 then into.tools = true end
  if #plugin.resources > 0 then into.resources = true end
  if #plugin.prompts > 0 then into.prompts = true end
end

-- Hot reload: look at every plugin file again. A new file is loaded, a
-- changed one (or one whose DIR/lib or settings changed) reloaded, a deleted one's
-- tools, resources and prompts removed. A broken edit keeps the last good
-- version serving; its error (file:line) goes to the log and to clients.
-- lib_changed: set of dirs whose lib/ changed.
function M.rescan(lib_changed)
  lib_changed = lib_changed or {}
  reread_config()
  local before = units
  local by_path = {}
  for _, u in ipairs(units) do by_path[u.path] = u end
  local list, fresh, changed, errors = {}, {}, {}, {}
  for _, dir in ipairs(dirs_loaded) do
    for _, name in ipairs(scan(dir)) do
      local path = dir .. "/" .. name
      local old, source = by_path[path], read_source(path)
      by_path[path] = nil
      if source == nil then
        if old then list[#list + 1] = old end
      elseif old and old.source == source and not lib_changed[dir] and
             old.settings == config.fingerprint(cfg, path) then
        list[#list + 1] = old
      else
        local plugin, err = load_file(path, dir, source)
        if plugin then
          local u = { path = path, dir = dir, plugin = plugin, source = source, old = old,
                      settings = config.fingerprint(cfg, path) }
          list[#list + 1] = u
          fresh[u] = true
          kinds(plugin, changed)
          kinds(old and old.plugin, changed)
        else
          errors[#errors + 1] = err
          if old then list[#list + 1] = old end      -- the last good version goes on
        end
      end
    end
  end
  for path, old in pairs(by_path) do                -- deleted files
    log("info", "plugin %s removed (%s deleted)", old.plugin.name, path)
    kinds(old.plugin, changed)
  end
  local kept = rebuild(list, fresh)
  for _, u in ipairs(list) do
    if u.error then
      errors[#errors + 1] = u.error
      if u.old then                                 -- a new version clashes: keep the old one
        u.old.error = nil
        for i, x in ipairs(list) do if x == u then list[i] = u.old end end
      end
    end
  end
  if #kept ~= #list then                            -- put the replaced versions back
    kept = rebuild(list, {})
    for _, u in ipairs(list) do
      if u.error then errors[#errors + 1] = u.error end
    end
  end
  units = kept
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
  for _, err in ipairs(errors) do
    log("error", "reload: %s", err)
    core.log("error", "luamcp: plugin not reloaded: " .. err)
  end
  if changed.tools then core.notify(nil, "notifications/tools/list_changed") end
  if changed.resources then core.notify(nil, "notifications/resources/list_changed") end
  if changed.prompts then core.notify(nil, "notifications/prompts/list_changed") end
  return #errors == 0
end

local methods = {}
M.methods = methods

function methods.tools_list(params)
  local start = 1
  if params.cursor ~= nil then
    start = type(params.cursor) == "string" and tonumber(params.cursor:match("^%d+$") or "")
    if not start or start < 1 or start > #tool_list + 1 then
      return nil, -32602, "Invalid params: invalid cursor"
    end
  end
  local page, stop = mcp.array(), math.min(#tool_list, start + core.config.page_size - 1)
  for i = start, stop do
    local t = tool_list[i]
    page[#page + 1] = {
      name = t.name, title = t.title, description = t.description,
      inputSchema = t.inputSchema, outputSchema = t.outputSchema, annotations = t.annotations,
      execution = t.task and { taskSupport = t.task } or nil, icons = t.icons, _meta = t._meta,
    }
  end
  return { tools = page, nextCursor = stop < #tool_list and tostring(stop + 1) or nil }
end

-- The checks before a handler runs: tool, args; or nil, code, message for a
-- JSON-RPC error; or false, result for an isError result. A frame of its own,
-- so that the handler's coroutine stack stays small (10,000 may be waiting).
-- A call that becomes a task is answered here with its task (core.task_create);
-- what follows, the handler's result included, goes to the task. In a
-- session (2025-11-25) the client asks with params.task; for a 2026-07-28
-- request the server decides (the tasks extension): a tool with task support
-- runs as a task when the request declares the extension (a task-only tool
-- without it was refused with -32021 before the call started; one with
-- defer_task starts its task itself, ctx:task()), and params.task is ignored.
local function prepare(params)
  local name = params.name
  if type(name) ~= "string" then return nil, -32602, "Invalid params: name must be a string" end
  local tool = tools[name]
  if not tool then return nil, -32602, "Unknown tool: " .. name end
  local args = params.arguments
  if args == nil then args = {} end
  if type(args) ~= "table" or mcp.is_array(args) then
    return nil, -32602, "Invalid params: arguments must be an object"
  end
  local task, support = params.task, tool.task or "forbidden"
  -- without the tasks capability (no tool offers tasks), params.task is ignored
  if not methods["tasks/result"] then task = nil end
  if core.modern() then                     -- the tasks extension: params.task means nothing
    if not tool.defer_task then
      local ok, err = core.task_create()       -- false: no task support, or the extension is not declared
      if ok == nil then return nil, -32603, "Internal error: " .. err end
    end
  elseif task ~= nil then
    if type(task) ~= "table" or mcp.is_array(task) then
      return nil, -32602, "Invalid params: task must be an object"
    end
    if support == "forbidden" then
      return nil, -32601, "Method not found: tool " .. name .. " does not support task-augmented calls"
    end
    local ok, err = core.task_create(task.ttl)
    if ok == nil then return nil, -32603, "Internal error: " .. err end
  elseif support == "required" then
    return nil, -32601, "Method not found: tool " .. name .. " must be called as a task (params.task)"
  end
  if tool.mounted then return tool, args end    -- the upstream checks its arguments
  local ok, err = core.validate(tool.inputSchema, args)   -- compiled once per schema (schema.c)
  if not ok then return false, mcp.error("Invalid arguments: " .. err) end
  return tool, args
end

-- The handler runs unprotected: an error (or ctx:check()'s cancellation)
-- ends the coroutine, and the C core turns it into an isError result (or no
-- response, once cancelled). No pcall here, so that <close> variables of an
-- aborted handler run when the core resets the coroutine, under its limits.
--
-- The setup (open_call: argument checks, the ctx) runs on the main thread
-- (core.on_main): it goes deeper than the handler's waits, and on the
-- coroutine it would double the stack every waiting call keeps (Lua grows a
-- stack past its first 40 slots to 80 and keeps it while in use).
local function open_call(params, id, session)
  local tool, args, msg = prepare(params)
  if not tool then
    if tool == nil then return nil, args, msg end
    return false, args
  end
  local ctx = decl.ctx(id)
  if tool.scopes then                -- the transport answered 403 already; this is for any other way in
    local auth = ctx.auth
    if auth then
      local have = {}
      for _, sc in ipairs(auth.scopes) do have[sc] = true end
      for _, sc in ipairs(tool.scopes) do
        if not have[sc] then return nil, -32600, "Forbidden: insufficient scope (needs " .. sc .. ")" end
      end
    end
  end
  local ok, code, emsg = input.open(ctx, "tools/call", params, tool.name, args)
  if not ok then return nil, code, emsg end
  return tool, args, ctx
end

function methods.tools_call(params, id, session)
  local tool, args, ctx = core.on_main(open_call, params, id, session)
  if not tool then
    if tool == nil then return nil, args, ctx end
    return args                      -- an isError result
  end
  params = nil                       -- not kept alive while the handler waits
  return outcome.tool(tool, tool.handler(args, ctx))
end

-- The Mcp-Param headers (x-mcp-header) of a tool, for the HTTP transport's
-- check of a 2026-07-28 tools/call: a list of {name =, path =}, or nil.
-- The scopes a tool asks for (--auth-*), space-separated, or nil; with no
-- name, every tool's (scopes_supported), or nil.
function M.tool_scopes(name)
  if name == nil then
    local seen, all = {}, {}
    for _, t in ipairs(tool_list) do
      for _, sc in ipairs(t.scopes or {}) do
        if not seen[sc] then seen[sc], all[#all + 1] = true, sc end
      end
    end
    table.sort(all)
    return #all > 0 and table.concat(all, " ") or nil
  end
  local tool = tools[name]
  return tool and tool.scopes and table.concat(tool.scopes, " ")
end

function M.param_headers(name)
  local tool = tools[name]
  return tool and decl.param_headers[tool]
end

-- tasks/result (2025-11-25) waits until the task is terminal; tasks/get,
-- tasks/list, tasks/cancel and the extension's tasks/update are answered by
-- the C core (task.c).
methods["tasks/result"] = function(params)
  if type(params.taskId) ~= "string" then return nil, -32602, "Invalid params: taskId must be a string" end
  return core.task_result(params.taskId)
end

methods["tools/list"], methods["tools/call"] = methods.tools_list, methods.tools_call
methods.tools_list, methods.tools_call = nil, nil

---------------------------------------------------------------------------
-- Resources, prompts and completion.

-- One page of list (cursor: the 1-based index of the page's first item, as
-- a string): page, nextCursor; or nil, code, message for a bad cursor.
local function paginate(list, params, entry)
  local start = 1
  if params.cursor ~= nil then
    start = type(params.cursor) == "string" and tonumber(params.cursor:match("^%d+$") or "")
    if not start or start < 1 or start > #list + 1 then
      return nil, -32602, "Invalid params: invalid cursor"
    end
  end
  local page, stop = mcp.array(), math.min(#list, start + core.config.page_size - 1)
  for i = start, stop do page[#page + 1] = entry(list[i]) end
  return page, stop < #list and tostring(stop + 1) or nil
end

local function not_found(uri, reason)
  return nil, -32002, "Resource not found", { uri = uri, reason = reason }
end

-- A failure of get or a completion function as a JSON-RPC error.
local function invalid_or_internal(msg, code)
  if code == "invalid" or code == "not_found" then return nil, -32602, "Invalid params: " .. msg end
  return nil, -32603, "Internal error: " .. msg
end

-- The resource or template serving uri: resource, nil; template, params; or nil.
local function find_resource(uri)
  local r = resources[uri]
  if r then return r end
  for _, t in ipairs(template_list) do
    local vars = t.template:match(uri)
    if vars then return t, vars end
  end
end

methods["resources/list"] = function(params)
  local page, next_cursor, msg = paginate(resource_list, params, function(r)
    return { uri = r.uri, name = r.name, title = r.title, description = r.description,
             mimeType = r.mimeType, size = r.size, annotations = r.annotations, icons = r.icons, _meta = r._meta }
  end)
  if not page then return nil, next_cursor, msg end
  return { resources = page, nextCursor = next_cursor }
end

methods["resources/templates/list"] = function(params)
  local page, next_cursor, msg = paginate(template_list, params, function(t)
    return { uriTemplate = t.uriTemplate, name = t.name, title = t.title, description = t.description,
             mimeType = t.mimeType, annotations = t.annotations, icons = t.icons, _meta = t._meta }
  end)
  if not page then return nil, next_cursor, msg end
  return { resourceTemplates = page, nextCursor = next_cursor }
end

-- What read returned, as ReadResourceResult contents; or nil, message.
local function content_item(item, uri, mimeType)
  local t = type(item)
  if t == "string" or t == "number" then return { uri = uri, mimeType = mimeType, text = tostring(item) } end
  if t ~= "table" then return nil, "read returned a " .. t end
  local text, blob = item.text, item.blob
  if text ~= nil and type(text) ~= "string" then return nil, "read returned a non-string text" end
  if blob ~= nil and type(blob) ~= "string" then return nil, "read returned a non-string blob" end
  if (text == nil) == (blob == nil) then return nil, "read returned an item without text or blob (or with both)" end
  return { uri = item.uri or uri, mimeType = item.mimeType or mimeType, text = text, blob = blob,
           _meta = item._meta }
end

local function read_result(res, uri, mimeType)
  local items = res
  if type(res) == "table" and res.contents ~= nil then
    items = res.contents
    if type(items) ~= "table" then return nil, "read returned contents that is not a list" end
  elseif type(res) ~= "table" or res.text ~= nil or res.blob ~= nil then
    items = { res }
  elseif #res == 0 then
    return nil, "read returned a table without text, blob or contents"
  end
  local contents = mcp.array()
  for _, item in ipairs(items) do
    local c, err = content_item(item, uri, mimeType)
    if not c then return nil, err end
    contents[#contents + 1] = c
  end
  return { contents = contents }
end

-- read runs unprotected, like a tool handler: a Lua error in it becomes a
-- -32603 internal error with the message (from the C core).
methods["resources/read"] = function(params, id, session)
  local uri = params.uri
  if type(uri) ~= "string" then return nil, -32602, "Invalid params: uri must be a string" end
  local r, vars = find_resource(uri)
  if not r then return not_found(uri) end
  core.set_logger(r.plugin.name)
  local ctx = decl.ctx(id)
  ctx.uri = uri
  local ok, code0, emsg = input.open(ctx, "resources/read", params, uri)
  if not ok then return nil, code0, emsg end
  params = nil
  local res, msg, code
  if vars then res, msg, code = r.read(vars, ctx) else res, msg, code = r.read(ctx) end
  if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
  local fmsg, fcode = outcome.failure(r, "the read of ", uri, res, msg, code)
  if fmsg then
    if fcode == nil or fcode == "not_found" then return not_found(uri, fmsg) end
    return nil, -32603, "Internal error: " .. fmsg
  end
  if res == nil then return not_found(uri) end    -- nil: there is no such resource
  local result, err = read_result(res, uri, r.mimeType)
  if not result then return nil, -32603, "Internal error: resource " .. uri .. ": " .. err end
  return result
end

-- Subscriptions: subs[session][uri] = true.
local subs = {}

methods["resources/subscribe"] = function(params, _, session)
  local uri = params.uri
  if type(uri) ~= "string" then return nil, -32602, "Invalid params: uri must be a string" end
  if not find_resource(uri) then return not_found(uri) end
  local set = subs[session]
  if not set then set = {}; subs[session] = set end
  set[uri] = true
  return {}
end

methods["resources/unsubscribe"] = function(params, _, session)
  local uri = params.uri
  if type(uri) ~= "string" then return nil, -32602, "Invalid params: uri must be a string" end
  local set = subs[session]
  if set then
    set[uri] = nil
    if next(set) == nil then subs[session] = nil end
  end
  return {}
end

function M.notify_resource_updated(uri)
  local n = 0
  for session, set in pairs(subs) do
    if set[uri] then n = n + core.notify(session, "notifications/resources/updated", { uri = uri }) end
  end
  -- 2026-07-28 clients: subscriptions/listen streams with this URI in resourceSubscriptions
  return n + core.notify_listeners("notifications/resources/updated", { uri = uri })
end

methods["prompts/list"] = function(params)
  local page, next_cursor, msg = paginate(prompt_list, params, function(p)
    local args = mcp.array()
    for i, a in ipairs(p.arguments) do
      args[i] = { name = a.name, title = a.title, description = a.description,
                  required = a.required and true or nil }
    end
    return { name = p.name, title = p.title, description = p.description, arguments = args, icons = p.icons,
             _meta = p._meta }
  end)
  if not page then return nil, next_cursor, msg end
  return { prompts = page, nextCursor = next_cursor }
end

-- A prompt message: a string is a user text message; content may be a string.
local function message(m)
  if type(m) == "string" then return { role = "user", content = { type = "text", text = m } } end
  if type(m) ~= "table" then return nil, "a message is a " .. type(m) end
  local role = m.role or "user"
  if role ~= "user" and role ~= "assistant" then return nil, "role must be \"user\" or \"assistant\"" end
  local content = m.content
  if type(content) == "string" or type(content) == "number" then
    content = { type = "text", text = tostring(content) }
  elseif type(content) == "table" and content.type == nil and type(content.text) == "string" then
    content = { type = "text", text = content.text, annotations = content.annotations }
  elseif type(content) ~= "table" or type(content.type) ~= "string" then
    return nil, "a message needs content (a string or a content object with a type)"
  end
  return { role = role, content = content }
end

local function prompt_result(res)
  local description, list
  if type(res) == "string" then
    list = { res }
  elseif type(res) == "table" and res.messages ~= nil then
    description, list = res.description, res.messages
    if type(list) ~= "table" then return nil, "messages is not a list" end
  elseif type(res) == "table" and (res.role ~= nil or res.content ~= nil) then
    list = { res }
  elseif type(res) == "table" then
    list = res
  else
    return nil, "get returned a " .. type(res)
  end
  local messages = mcp.array()
  for i, m in ipairs(list) do
    local msg, err = message(m)
    if not msg then return nil, "messages[" .. i .. "]: " .. err end
    messages[i] = msg
  end
  return { description = description, messages = messages, _meta = type(res) == "table" and res._meta or nil }
end

-- The checks before get runs: prompt, args; or nil, code, message.
local function prepare_prompt(params)
  local name = params.name
  if type(name) ~= "string" then return nil, -32602, "Invalid params: name must be a string" end
  local p = prompts[name]
  if not p then return nil, -32602, "Invalid params: unknown prompt: " .. name end
  local args = params.arguments
  if args == nil then args = {} end
  if type(args) ~= "table" or mcp.is_array(args) then
    return nil, -32602, "Invalid params: arguments must be an object"
  end
  for k, v in pairs(args) do
    if type(v) ~= "string" then
      return nil, -32602, "Invalid params: argument " .. tostring(k) .. " must be a string"
    end
  end
  for _, a in ipairs(p.arguments) do
    if a.required and args[a.name] == nil then
      return nil, -32602, "Invalid params: missing required argument: " .. a.name
    end
  end
  return p, args
end

methods["prompts/get"] = function(params, id, session)
  local p, args, msg = prepare_prompt(params)
  if not p then return nil, args, msg end
  core.set_logger(p.plugin.name)
  local ctx = decl.ctx(id)
  ctx.prompt = p.name
  local ok, code0, emsg = input.open(ctx, "prompts/get", params, p.name, args)
  if not ok then return nil, code0, emsg end
  params = nil
  local res, emsg, code = p.get(args, ctx)
  if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
  local fmsg, fcode = outcome.failure(p, "the get of prompt ", p.name, res, emsg, code)
  if fmsg then return invalid_or_internal(fmsg, fcode) end
  local result, err = prompt_result(res)
  if not result then return nil, -32603, "Internal error: prompt " .. p.name .. ": " .. err end
  return result
end

-- completion/complete: the completer of a prompt argument or template variable.
local function completer_of(owner, arg)
  local c = owner.complete
  if type(c) == "function" then
    return function(value, ctx) return c(arg, value, ctx) end
  end
  if type(c) == "table" then return c[arg] end
end

-- A list of values as a completer: the values starting with the typed text.
local function by_prefix(list, value)
  local out, low = {}, value:lower()
  for _, v in ipairs(list) do
    v = tostring(v)
    if v:sub(1, #low):lower() == low then out[#out + 1] = v end
  end
  return out
end

local MAX_VALUES = 100

local function completion_result(res)
  local values, total, has_more = res, nil, nil
  if type(res) == "table" and res.values ~= nil then
    values, total, has_more = res.values, res.total, res.hasMore
  end
  if values == nil then values = {} end
  if type(values) ~= "table" then return nil, "complete returned a " .. type(values) end
  local out = mcp.array()
  for i, v in ipairs(values) do
    if i > MAX_VALUES then
      has_more = true
      break
    end
    out[i] = tostring(v)
  end
  if #values > MAX_VALUES and total == nil then total = #values end
  if total ~= nil and math.type(total) ~= "integer" then total = math.tointeger(total) end
  return { completion = { values = out, total = total, hasMore = has_more and true or false } }
end

local function prepare_complete(params)
  local ref, arg = params.ref, params.argument
  if type(ref) ~= "table" or type(ref.type) ~= "string" then
    return nil, -32602, "Invalid params: ref must be an object with a type"
  end
  if type(arg) ~= "table" or type(arg.name) ~= "string" or type(arg.value) ~= "string" then
    return nil, -32602, "Invalid params: argument must be an object with a name and a string value"
  end
  local context = params.context
  local cargs = type(context) == "table" and type(context.arguments) == "table" and context.arguments or {}
  local owner
  if ref.type == "ref/prompt" then
    if type(ref.name) ~= "string" then return nil, -32602, "Invalid params: ref.name must be a string" end
    owner = prompts[ref.name]
    if not owner then return nil, -32602, "Invalid params: unknown prompt: " .. ref.name end
  elseif ref.type == "ref/resource" then
    if type(ref.uri) ~= "string" then return nil, -32602, "Invalid params: ref.uri must be a string" end
    owner = templates[ref.uri] or resources[ref.uri]
    if not owner then return nil, -32602, "Invalid params: unknown resource template: " .. ref.uri end
  else
    return nil, -32602, "Invalid params: unknown ref type: " .. ref.type
  end
  return true, completer_of(owner, arg.name), arg, cargs
end

methods["completion/complete"] = function(params, id, session)
  local ok, fn, arg, cargs = prepare_complete(params)
  if not ok then return nil, fn, arg end
  params = nil
  local res
  if type(fn) == "function" then
    local ctx = decl.ctx(id)
    ctx.arguments = cargs
    local msg, code
    res, msg, code = fn(arg.value, ctx)
    if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
    local fmsg, fcode = outcome.failure(fn, "the completion of ", arg.name, res, msg, code)
    if fmsg then return invalid_or_internal(fmsg, fcode) end
  elseif type(fn) == "table" then
    res = by_prefix(fn, arg.value)
  end
  local result, err = completion_result(res)
  if not result then return nil, -32603, "Internal error: " .. err end
  return result
end

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
  local changed = false
  for _, u in ipairs(units) do
    if mount.of(u.plugin) and mount.refresh(u.plugin, taken(u.plugin)) then changed = true end
  end
  if not changed then return end
  units = rebuild(units, {})
  M.sync_methods()
end

local function unknown(method, params)
  if method == "tools/call" then return type(params.name) == "string" and tools[params.name] == nil end
  if method == "prompts/get" then return type(params.name) == "string" and prompts[params.name] == nil end
  if method == "resources/read" then return type(params.uri) == "string" and find_resource(params.uri) == nil end
  return LISTS[method]
end

function M.dispatch(method, params, id, session)
  if mounts > 0 and unknown(method, params) then M.refresh_mounts() end
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

function M.sync_methods()
  local caps = M.capabilities()
  for m, cap in pairs(optional) do
    methods[m] = caps[cap] and optional_fn[m] or nil
  end
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
  return caps
end

-- A session ended (its subscriptions go with it).
function M.session_closed(session)
  subs[session] = nil
end

-- What is loaded, in load order (luamcp list): each item's .plugin has .file.
function M.list()
  return { tools = tool_list, resources = resource_list, templates = template_list, prompts = prompt_list }
end

-- What a handler raised, for the C core (sched.c): code, message, data.
M.raised = outcome.raised

M.sync_methods()
M.tools = tools
M.resources, M.templates, M.prompts = resources, templates, prompts
return M
