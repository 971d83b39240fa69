-- The configuration file (luamcp --config FILE): a Lua file that returns a
-- table. Its keys are the command-line flags, spelled without the leading
-- "--" and with "_" for "-" (--max-line is max_line); `plugins` holds both
-- the plugin directories (its list part, --plugins) and each plugin's
-- settings (NAME = {...}, read by the plugin file NAME.lua as mcp.settings);
-- `limits` overrides tools' limits (TOOL = {max_concurrent=, queue=, rate=,
-- heartbeat=}), over what the tool and its plugin declare. `auth` = {issuer=,
-- jwks=, audience=, introspect=} is the --auth-* flags (auth_issuer= too).
-- `server_card` = {name=, description=, ...} is who the server is (its card,
-- luamcp registry's server.json): checked by lua/mcp/server_card.lua.
-- env("NAME") and file("PATH") read secrets (lua/mcp/secret.lua).
--
-- Every problem is raised as "FILE:LINE: message", LINE being the line of
-- the offending key, found by a scan of the source (key_lines). No message
-- shows a value: any of them may be a secret.
local secret = require "mcp.secret"
local file = require "mcp.file"
local lex = require "mcp.lex"

local M = {}

-- The flags, by key, and the type each takes ("number", "string", "boolean",
-- "list"): from their table in C (src/flags.c), which the host opens.
local FLAGS = require "mcp.flags"
M.FLAGS = FLAGS

local function kind_of(v)
  if secret.is(v) then return "a secret" end
  return type(v)
end

local function dirname(path) return path:match("^(.*)/[^/]*$") or "." end

local function join(base, p)
  if p:sub(1, 1) == "/" or base == "." then return p end
  return base .. "/" .. p
end

---------------------------------------------------------------------------
-- Where each key is: a scan of the source's tokens (lex.lua) for `key =`
-- and `["key"] =` in table constructors. Paths are dotted
-- ("plugins.weather.api_key"); every constructor outside another one is a
-- root (the returned table, or a local one it is built from). A key written
-- by code rather than in a constructor is not found: its error goes to the
-- line of the nearest enclosing key found, else of the `return`.

local function key_lines(src)
  local at, frames = {}, {}            -- path -> line; open constructors' paths (false: none)
  local item_start, cand, cand_line, after_eq, ret_line = false, nil, nil, nil, nil
  local bracket                        -- inside [ "key" ]: the string, once read
  local function token(kind, text, line)
    local opens = after_eq
    after_eq = nil
    if kind == "{" then
      local parent = frames[#frames]
      local path = false
      if #frames == 0 then path = ""
      elseif opens and parent then path = parent == "" and opens or parent .. "." .. opens end
      frames[#frames + 1] = path
      item_start = true
      return
    elseif kind == "}" then
      frames[#frames] = nil
      item_start = false
      return
    elseif kind == "=" and cand then
      local top = frames[#frames]
      if top then at[top == "" and cand or top .. "." .. cand] = cand_line end
      after_eq, cand = cand, nil
      item_start = false
      return
    end
    cand = nil
    if item_start and kind == "name" then
      cand, cand_line = text, line
    elseif item_start and kind == "[" then
      bracket = true
      item_start = false
      return
    elseif bracket == true and kind == "str" then
      bracket = text
      return
    elseif type(bracket) == "string" and kind == "]" then
      cand, cand_line = bracket, line
    elseif kind == "name" and text == "return" and #frames == 0 then
      ret_line = line
    end
    bracket = nil
    item_start = #frames > 0 and (kind == "," or kind == ";")
  end
  for _, t in ipairs(lex.tokens(src)) do
    if t.kind == "op" then token(#t.value == 1 and t.value or "op", nil, t.line)
    elseif t.kind == "string" then token("str", t.value, t.line)
    else token(t.kind, t.value, t.line) end
  end
  return at, ret_line or 1
end

-- The line of path, else of its nearest parent found, else of the return.
local function line_of(cfg, path)
  while path do
    if cfg.at[path] then return cfg.at[path] end
    path = path:match("^(.*)%.[^%.]*$")
  end
  return cfg.ret_line
end

local function fail(cfg, path, fmt, ...)
  error(string.format("%s:%d: " .. fmt, cfg.path, line_of(cfg, path), ...), 0)
end

---------------------------------------------------------------------------
-- Running the file: an environment with env(), file(), a few basic
-- functions, and the string, table, math and utf8 libraries (os.getenv too):
-- enough to compute values, nothing that writes (not even print: stdout is
-- the protocol's) or runs programs.

local BASICS = { "assert", "error", "ipairs", "next", "pairs", "pcall", "select", "tonumber",
                 "tostring", "type", "math", "string", "table", "utf8" }

-- on_env(name, default, value) and on_file(path), when set, see each env() and
-- file() the file calls (luamcp pack makes its user_config of them).
M.on_env, M.on_file = nil, nil

local function sandbox(base)
  local env = {}
  for _, k in ipairs(BASICS) do env[k] = _G[k] end
  env.os = { getenv = os.getenv }
  -- env(NAME [, default]): the variable, as a secret; unset is an error
  -- unless a default is given (returned as it is).
  function env.env(name, default)
    if type(name) ~= "string" then error("env: the variable's name must be a string", 2) end
    local v = os.getenv(name)
    if v == nil and default == nil then error(string.format("env(%q): not set", name), 2) end
    if v ~= nil then v = secret.new(v) else v = default end
    if M.on_env then M.on_env(name, default, v) end
    return v
  end
  -- file(PATH): the file's content without its last newline, as a secret;
  -- a relative path is relative to the configuration file.
  function env.file(p)
    if type(p) ~= "string" then error("file: the path must be a string", 2) end
    if M.on_file then M.on_file(p) end
    local s, err = file.read(join(base, p))
    if not s then error(string.format("file(%q): %s", p, err:match(": ([^:]*)$") or err), 2) end
    return secret.new((s:gsub("\r?\n$", "")))
  end
  return env
end

-- Lua shortens long chunk names to "...tail": put the path back.
local function full_path(msg, path)
  return (msg:gsub("^%.%.%.([^:\n]*):(%d+):", function(tail, l)
    if path:sub(-#tail) == tail then return path .. ":" .. l .. ":" end
  end))
end

local function evaluate(cfg)
  local src, err = file.read(cfg.path)
  if not src then error(string.format("%s: cannot read: %s", cfg.path, err:match(": ([^:]*)$") or err), 0) end
  cfg.at, cfg.ret_line = key_lines(src)
  local chunk, lerr = load(src, "@" .. cfg.path, "t", sandbox(dirname(cfg.path)))
  if not chunk then error(full_path(lerr, cfg.path), 0) end
  local ok, res = pcall(chunk)
  if not ok then
    if type(res) ~= "string" then
      res = string.format("%s:%d: error object is %s", cfg.path, cfg.ret_line,
                          secret.is(res) and "a secret" or "a " .. type(res) .. " value")
    end
    error(full_path(res, cfg.path), 0)
  end
  if type(res) ~= "table" or secret.is(res) then
    fail(cfg, nil, "a configuration file must return a table (got %s)", kind_of(res))
  end
  return res
end

---------------------------------------------------------------------------
-- Checking: flags become {key, flag, value (a string, nil for a boolean
-- flag), line}; settings are copied.

local function number_text(v)
  if math.type(v) == "integer" then return string.format("%d", v) end
  return string.format("%.17g", v)
end

local function add_flag(cfg, key, value, path)
  cfg.flags[#cfg.flags + 1] = { key = key, flag = "--" .. key:gsub("_", "-"), value = value,
                                line = line_of(cfg, path or key) }
end

local function is_list(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

local function check_flag(cfg, key, v)
  local kind = FLAGS[key]
  if kind == "number" then
    if type(v) ~= "number" then fail(cfg, key, "%s must be a number (got %s)", key, kind_of(v)) end
    add_flag(cfg, key, number_text(v))
  elseif kind == "string" then
    if type(v) ~= "string" and not secret.is(v) then
      fail(cfg, key, "%s must be a string (got %s)", key, kind_of(v))
    end
    add_flag(cfg, key, secret.reveal(v))
  elseif kind == "boolean" then
    if type(v) ~= "boolean" then fail(cfg, key, "%s must be true or false (got %s)", key, kind_of(v)) end
    if v then add_flag(cfg, key, nil) end
  elseif kind == "list" then
    if type(v) == "string" then v = { v } end
    if type(v) ~= "table" or secret.is(v) or not is_list(v) then
      fail(cfg, key, "%s must be a string or a list of strings (got %s)", key, kind_of(v))
    end
    for i, item in ipairs(v) do
      if type(item) ~= "string" then fail(cfg, key, "%s[%d] must be a string (got %s)", key, i, kind_of(item)) end
      add_flag(cfg, key, item)
    end
  end
end

-- A copy of a plugin's settings: strings, numbers, booleans, secrets and
-- tables of them, under string or integer keys.
local function copy_settings(cfg, t, path, seen)
  if seen[t] then fail(cfg, path, "%s: a table may not contain itself", path) end
  seen[t] = true
  local out = {}
  for k, v in pairs(t) do
    local kt = math.type(k) == "integer" and string.format("[%d]", k) or k
    if type(k) ~= "string" and math.type(k) ~= "integer" then
      fail(cfg, path, "%s: a settings key must be a string or an integer (got %s)", path, kind_of(k))
    end
    local sub = type(kt) == "string" and kt:sub(1, 1) == "[" and path .. kt or path .. "." .. kt
    local tv = type(v)
    if secret.is(v) or tv == "string" or tv == "number" or tv == "boolean" then
      out[k] = v
    elseif tv == "table" then
      out[k] = copy_settings(cfg, v, sub, seen)
    else
      fail(cfg, sub, "%s must be a string, number, boolean, secret or table (got %s)", sub, tv)
    end
  end
  seen[t] = nil
  return out
end

local function check_plugins(cfg, v)
  if type(v) == "string" then v = { v } end
  if type(v) ~= "table" or secret.is(v) then
    fail(cfg, "plugins", "plugins must be a directory, or a table of directories and NAME = {settings} (got %s)",
         kind_of(v))
  end
  local n = #v
  for i = 1, n do
    if type(v[i]) ~= "string" then
      fail(cfg, "plugins", "plugins[%d] must be a directory (a string; got %s)", i, kind_of(v[i]))
    end
    add_flag(cfg, "plugins", join(dirname(cfg.path), v[i]))
  end
  for k, s in pairs(v) do
    if math.type(k) == "integer" and k >= 1 and k <= n then
      -- a directory, done above
    elseif type(k) ~= "string" then
      fail(cfg, "plugins", "plugins: a key that is a %s is neither a directory nor a plugin's name", kind_of(k))
    elseif not k:find("^[%w_%-%.]+$") then
      fail(cfg, "plugins", "plugins: %q is not a plugin's name (its file's name without .lua)", k)
    elseif type(s) ~= "table" or secret.is(s) then
      fail(cfg, "plugins." .. k, "plugins.%s must be a table of settings (got %s)", k, kind_of(s))
    else
      cfg.settings[k] = copy_settings(cfg, s, "plugins." .. k, {})
    end
  end
end

local LIMITS = { max_concurrent = "count", queue = "count", rate = "rate", heartbeat = "seconds" }

-- limits = { TOOL = { max_concurrent = N, queue = M, rate = "R/s", heartbeat = S } }
local function check_limits(cfg, v)
  if type(v) ~= "table" or secret.is(v) then
    fail(cfg, "limits", "limits must be a table of TOOL = {max_concurrent=, queue=, rate=, heartbeat=} (got %s)",
         kind_of(v))
  end
  for tool, l in pairs(v) do
    local path = "limits." .. tostring(tool)
    if type(tool) ~= "string" then fail(cfg, "limits", "limits: a key that is a %s is not a tool's name", kind_of(tool)) end
    if type(l) ~= "table" or secret.is(l) then fail(cfg, path, "%s must be a table (got %s)", path, kind_of(l)) end
    local out = {}
    for k, x in pairs(l) do
      local want, sub = LIMITS[k], path .. "." .. tostring(k)
      if want == nil then
        fail(cfg, sub, "%s: unknown key (max_concurrent, queue, rate, heartbeat)", sub)
      elseif want == "count" and (math.type(x) ~= "integer" or x < 0) then
        fail(cfg, sub, "%s must be an integer >= 0 (0 = no limit)", sub)
      elseif want == "rate" and not (type(x) == "string" and (tonumber(x:match("^%s*([%d%.]+)%s*/[sm]$")) or 0) > 0) then
        fail(cfg, sub, '%s must be "R/s" or "R/m" (R > 0: calls per second or minute)', sub)
      elseif want == "seconds" and (type(x) ~= "number" or x <= 0) then
        fail(cfg, sub, "%s must be a number of seconds > 0", sub)
      end
      out[k] = x
    end
    cfg.limits[tool] = out
  end
end

-- What a sandboxed plugin may be granted (lua/mcp/sandbox.lua, src/lua/sandbox.c):
-- lists of strings, and two numbers.
local GRANT_LISTS = { http = "HOST[:PORT]", read = "path prefix", write = "path prefix",
                      exec = "absolute program path", sqlite = "database path", connect = "command or URL",
                      env = "variable name" }
local GRANT_NUMBERS = { memory_mb = true, cpu_ms = true }
local PATH_GRANTS = { read = true, write = true, sqlite = true }

local function check_grant(cfg, name, g)
  local path = "sandbox.grants." .. name
  if type(g) ~= "table" or secret.is(g) then fail(cfg, path, "%s must be a table (got %s)", path, kind_of(g)) end
  local out = {}
  for k, v in pairs(g) do
    local sub = path .. "." .. tostring(k)
    if GRANT_NUMBERS[k] then
      if type(v) ~= "number" or v <= 0 then fail(cfg, sub, "%s must be a number > 0", sub) end
    elseif GRANT_LISTS[k] then
      if type(v) == "string" then v = { v } end
      if type(v) ~= "table" or secret.is(v) or not is_list(v) then
        fail(cfg, sub, "%s must be a list of strings (%s)", sub, GRANT_LISTS[k])
      end
      local list = {}
      for i, item in ipairs(v) do
        if type(item) ~= "string" then fail(cfg, sub, "%s[%d] must be a string (got %s)", sub, i, kind_of(item)) end
        if k == "exec" and item:sub(1, 1) ~= "/" then fail(cfg, sub, "%s[%d] must be an absolute path", sub, i) end
        list[i] = PATH_GRANTS[k] and join(dirname(cfg.path), item) or item
      end
      v = list
    else
      fail(cfg, sub, "%s: unknown grant (http, read, write, exec, sqlite, connect, env, memory_mb, cpu_ms)", sub)
    end
    out[k] = v
  end
  return out
end

-- sandbox = {dirs = {...}, grants = {NAME = {...}}}: the --sandbox dirs, and
-- what each sandboxed plugin (by its file's name) may use.
local function check_sandbox(cfg, v)
  if type(v) ~= "table" or secret.is(v) then
    fail(cfg, "sandbox", "sandbox must be a table {dirs = {...}, grants = {NAME = {...}}} (got %s)", kind_of(v))
  end
  for k in pairs(v) do
    if k ~= "dirs" and k ~= "grants" then
      fail(cfg, "sandbox." .. tostring(k), "sandbox.%s: unknown key (dirs, grants)", tostring(k))
    end
  end
  local dirs = v.dirs or {}
  if type(dirs) == "string" then dirs = { dirs } end
  if type(dirs) ~= "table" or secret.is(dirs) or not is_list(dirs) then
    fail(cfg, "sandbox.dirs", "sandbox.dirs must be a directory or a list of them")
  end
  for i, d in ipairs(dirs) do
    if type(d) ~= "string" then fail(cfg, "sandbox.dirs", "sandbox.dirs[%d] must be a string (got %s)", i, kind_of(d)) end
    add_flag(cfg, "sandbox", join(dirname(cfg.path), d), "sandbox.dirs")
  end
  local grants = v.grants or {}
  if type(grants) ~= "table" or secret.is(grants) then
    fail(cfg, "sandbox.grants", "sandbox.grants must be a table of NAME = {...} (got %s)", kind_of(grants))
  end
  for name, g in pairs(grants) do
    if type(name) ~= "string" or not name:find("^[%w_%-%.]+$") then
      fail(cfg, "sandbox.grants", "sandbox.grants: %s is not a plugin's name (its file's name without .lua)",
           tostring(name))
    end
    cfg.grants[name] = check_grant(cfg, name, g)
  end
end

-- A table's keys as strings, sorted: its mistakes reported in one order.
local function sorted_keys(v)
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  return keys
end

-- auth = {issuer=, jwks=, audience=, introspect=}: the --auth-* flags.
local function check_auth(cfg, v)
  if type(v) ~= "table" or secret.is(v) then fail(cfg, "auth", "auth must be a table (got %s)", kind_of(v)) end
  local keys = sorted_keys(v)
  for _, k in ipairs(keys) do
    local x, sub = v[k], "auth." .. k
    if FLAGS["auth_" .. k] ~= "string" then
      fail(cfg, sub, "%s: unknown key (issuer, jwks, audience, introspect)", sub)
    end
    if type(x) ~= "string" and not secret.is(x) then fail(cfg, sub, "%s must be a string (got %s)", sub, kind_of(x)) end
    add_flag(cfg, "auth_" .. k, secret.reveal(x), sub)
  end
end

-- otel = {endpoint=, protocol=, headers=, service_name=, sampler=, ...}: the
-- OTEL_* variables (lower case, without OTEL_, OTEL_EXPORTER_OTLP_ and
-- OTEL_BSP_), which the file's values override. Numbers are written as text;
-- headers and resource_attributes may be a table {name = value}.
local function otel_value(cfg, sub, x)
  if math.type(x) ~= nil then return number_text(x) end
  if type(x) == "boolean" then return tostring(x) end
  if type(x) == "string" or secret.is(x) then return secret.reveal(x) end
  if type(x) == "table" and (sub == "otel.headers" or sub == "otel.resource_attributes") then
    local names, parts = {}, {}
    for name in pairs(x) do
      if type(name) ~= "string" then fail(cfg, sub, "%s: a key that is a %s is not a name", sub, kind_of(name)) end
      names[#names + 1] = name
    end
    table.sort(names)
    for i, name in ipairs(names) do
      local v = x[name]
      if type(v) ~= "string" and not secret.is(v) then
        fail(cfg, sub, "%s.%s must be a string (got %s)", sub, name, kind_of(v))
      end
      parts[i] = name .. "=" .. secret.reveal(v)
    end
    return table.concat(parts, ",")
  end
  fail(cfg, sub, "%s must be a string, a number or a boolean (got %s)", sub, kind_of(x))
end

local function check_otel(cfg, v)
  if type(v) ~= "table" or secret.is(v) then fail(cfg, "otel", "otel must be a table (got %s)", kind_of(v)) end
  local keys = sorted_keys(v)
  for _, k in ipairs(keys) do
    local sub = "otel." .. k
    if FLAGS["otel_" .. k] ~= "string" then
      fail(cfg, sub, "%s: unknown key (endpoint, traces_endpoint, protocol, headers, service_name, "
        .. "resource_attributes, sampler, sampler_arg, schedule_delay, max_queue_size, export_timeout, "
        .. "db_statement)", sub)
    end
    add_flag(cfg, "otel_" .. k, otel_value(cfg, sub, v[k]), sub)
  end
end

-- read(path): the configuration, {path, flags = {...}, settings = {NAME =
-- table}, limits = {TOOL = table}}; raises "FILE:LINE: message".
function M.read(path)
  local cfg = { path = path, flags = {}, settings = {}, limits = {}, grants = {} }
  local t = evaluate(cfg)
  local keys = {}
  for k in pairs(t) do
    if math.type(k) == "integer" then fail(cfg, nil, "a value without a key (the keys are the flags' names)") end
    if type(k) ~= "string" then fail(cfg, nil, "a key that is a %s (the keys are the flags' names)", kind_of(k)) end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if k == "limits" then
      check_limits(cfg, t[k])
    elseif k == "auth" then
      check_auth(cfg, t[k])
    elseif k == "sandbox" then
      check_sandbox(cfg, t[k])
    elseif k == "otel" then
      check_otel(cfg, t[k])
    elseif k == "server_card" then
      cfg.server_card = require("mcp.server_card").check(t[k], function(sub, fmt, ...) fail(cfg, sub, fmt, ...) end)
    elseif not FLAGS[k] then
      local as = k:gsub("^%-%-", ""):gsub("%-", "_")
      if FLAGS[as] then
        fail(cfg, k, "unknown key %q: flags are spelled with _ in a configuration file (%s)", k, as)
      end
      fail(cfg, k, "unknown key %q", k)
    elseif k == "plugins" then
      check_plugins(cfg, t[k])
    else
      check_flag(cfg, k, t[k])
    end
  end
  return cfg
end

-- For the C side (src/lua/conffile.c): {{flag, value, where}, ...}.
function M.flags(path)
  local out = {}
  for i, f in ipairs(M.read(path).flags) do
    out[i] = { f.flag, f.value, string.format("%s:%d", path, f.line) }
  end
  return out
end

-- Where plugins.NAME is, for messages.
function M.where(cfg, name)
  return string.format("%s:%d", cfg.path, line_of(cfg, "plugins." .. name))
end

---------------------------------------------------------------------------
-- What the plugins see.

-- A read-only view of t: writes raise, nested tables are views too.
local function readonly(t, views)
  local function wrap(v)
    if type(v) ~= "table" or secret.is(v) then return v end
    local view = views[v]
    if not view then
      view = readonly(v, views)
      views[v] = view
    end
    return view
  end
  return setmetatable({}, {
    __index = function(_, k) return wrap(t[k]) end,
    __newindex = function(_, k) error("mcp.settings is read-only (" .. tostring(k) .. ")", 2) end,
    __pairs = function()
      return function(_, k)
        local nk, nv = next(t, k)
        if nk ~= nil then return nk, wrap(nv) end
      end, nil, nil
    end,
    __len = function() return #t end,
    __metatable = "read-only",
  })
end

-- The plugin file's name without .lua: the key of its settings.
function M.name_of(path)
  return path:match("([^/]+)%.lua$") or path
end

-- The mcp module as the plugin file at path sees it: mcp.settings is its
-- own section of plugins = {...} (an empty table without one), read-only.
function M.plugin_mcp(cfg, path)
  local mcp = require "mcp"
  local settings = readonly(cfg and cfg.settings[M.name_of(path)] or {}, setmetatable({}, { __mode = "k" }))
  return setmetatable({}, {
    __index = function(_, k)
      if k == "settings" then return settings end
      return mcp[k]
    end,
    __newindex = function(t, k, v)
      if k == "settings" then error("mcp.settings is read-only", 2) end
      rawset(t, k, v)
    end,
  })
end

-- The settings of a plugin as a string, to see whether they changed (secrets
-- by value: this string is compared, never shown).
local function dump(v, out)
  if secret.is(v) then
    out[#out + 1] = "secret" .. string.format("%q", secret.reveal(v))
  elseif type(v) == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) ~= type(b) then return type(a) < type(b) end
      return a < b
    end)
    out[#out + 1] = "{"
    for _, k in ipairs(keys) do
      out[#out + 1] = string.format("%q=", k)
      dump(v[k], out)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  else
    out[#out + 1] = string.format("%q", v)
  end
  return out
end

function M.fingerprint(cfg, path)
  local s = cfg and cfg.settings[M.name_of(path)]
  local g = cfg and cfg.grants[M.name_of(path)]
  return (s and table.concat(dump(s, {})) or "") .. (g and "grants" .. table.concat(dump(g, {})) or "")
end

-- What the configuration grants the sandboxed plugin file at path ({} if nothing).
function M.grants(cfg, path)
  return cfg and cfg.grants[M.name_of(path)] or {}
end

-- The keys of the flags that differ between two configurations.
function M.changed_flags(a, b)
  local function by_key(cfg)
    local t = {}
    for _, f in ipairs(cfg.flags) do
      t[f.key] = (t[f.key] or "") .. string.format("%q;", f.value or true)
    end
    return t
  end
  local ta, tb, keys = by_key(a), by_key(b), {}
  for k in pairs(FLAGS) do
    if ta[k] ~= tb[k] then keys[#keys + 1] = k end
  end
  table.sort(keys)
  return keys
end

return M
