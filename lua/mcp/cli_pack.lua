-- luamcp pack: an MCP Bundle (NAME.mcpb: a zip with manifest.json,
-- manifest_version 0.3, server.type "binary") that runs on Linux x86-64
-- without luamcp installed. Its layout is an installed tree's:
--
--   manifest.json
--   bin/luamcp                  this binary, as it is
--   lib/luamcp/*.so.*           what it links beyond glibc (ldd), found
--                               through its DT_RPATH $ORIGIN/../lib/luamcp
--   share/luamcp/lua/mcp/       the Lua library, at BINDIR/LUAMCP_LUA_REL
--   plugins/DIR/, sandbox/DIR/  each --plugins and --sandbox directory
--   luamcp.conf                 the --config file, as it is
--
-- The configuration file's env("NAME") secrets become user_config entries
-- (sensitive) that mcp_config passes as environment variables, so a secret
-- is never on a command line nor in the bundle. cli.lua runs pack as a
-- request (luamcp/pack), as list, so that a mount's tools are listed.
local core = require "mcp.core"
local config = require "mcp.config"
local secret = require "mcp.secret"
local apps = require "mcp.apps"
local file = require "mcp.file"

local M = {}

local function say(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

-- glibc's own libraries: the bundle relies on the machine's.
local GLIBC = {}
for n in ([[libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libanl.so.1
            libutil.so.1 libmvec.so.1 libnsl.so.1 libBrokenLocale.so.1 libthread_db.so.1
            libcrypt.so.1]]):gmatch("%S+") do GLIBC[n] = true end

local function basename(p) return (p:gsub("/+$", "")):match("([^/]*)$") end

-- a/b/../c -> a/c; nil if it climbs out.
local function normalize(p)
  local out = {}
  for part in p:gmatch("[^/]+") do
    if part == ".." then
      if #out == 0 then return nil end
      out[#out] = nil
    elseif part ~= "." then
      out[#out + 1] = part
    end
  end
  return table.concat(out, "/")
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Every file under dir (but dot files) into entries as prefix/..., in name order.
local function add_tree(cli, entries, dir, prefix, only_lua)
  local items, err = cli.scandir(dir)
  if not items then error(err, 0) end
  local names = {}
  for name in pairs(items) do
    if name:sub(1, 1) ~= "." then names[#names + 1] = name end
  end
  table.sort(names)
  for _, name in ipairs(names) do
    local path, kind = dir .. "/" .. name, items[name]
    if kind == "dir" then
      add_tree(cli, entries, path, prefix .. "/" .. name, only_lua)
    elseif kind == "file" and (not only_lua or name:find("%.lua$")) then
      local data, rerr = file.read(path)
      if not data then error(rerr, 0) end
      entries[#entries + 1] = { prefix .. "/" .. name, data, 420 }   -- 0644
    end
  end
end

-- The shared libraries exe needs beyond glibc: {{soname, path}, ...}, as
-- the dynamic loader finds them here (ldd).
local function shared_libs(exe)
  local p = io.popen("ldd " .. shell_quote(exe) .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  if not ok then error("ldd " .. exe .. " failed: " .. out, 0) end
  local libs = {}
  for line in out:gmatch("[^\n]+") do
    local soname, path = line:match("^%s*(%S+)%s+=>%s+(.-)%s+%(0x%x+%)%s*$")
    if soname == nil and line:find("=> not found") then
      error("ldd " .. exe .. ": " .. line:gsub("^%s+", ""), 0)
    end
    if soname and not GLIBC[soname] and not soname:find("^ld%-linux") and not soname:find("^libnss_") then
      libs[#libs + 1] = { soname, path }
    end
  end
  table.sort(libs, function(a, b) return a[1] < b[1] end)
  return libs
end

-- The env() calls of the configuration file, from cli.lua's load on:
-- {name = {default =, value =}} and the order they came in.
local seen = { order = {}, by = {}, files = {} }

function M.watch_config()
  config.on_env = function(name, default, value)
    if not seen.by[name] then
      seen.order[#seen.order + 1] = name
      seen.by[name] = { default = default }
    end
    if secret.is(value) then seen.by[name].value = value end
  end
  config.on_file = function(p) seen.files[#seen.files + 1] = p end
end

-- Where in the settings each env() secret went: {name = "plugins.weather.api_key"}.
local function settings_paths(cfg)
  local of, at = {}, {}
  for name, s in pairs(seen.by) do
    if s.value then of[s.value] = name end
  end
  local function walk(t, path)
    for k, v in pairs(t) do
      local sub = path .. "." .. tostring(k)
      if of[v] and not at[of[v]] then at[of[v]] = sub
      elseif type(v) == "table" and not secret.is(v) then walk(v, sub) end
    end
  end
  for plugin, t in pairs(cfg.settings) do walk(t, "plugins." .. plugin) end
  return at
end

-- user_config and mcp_config.env of the configuration file's env() calls.
local function user_config(opts)
  if not opts.config then return nil, nil end
  if #seen.files > 0 then
    error(string.format("%s: file(%q) reads a secret from a file the bundle would not carry; "
      .. "read it with env(\"NAME\") and the bundle asks its user for it", opts.config, seen.files[1]), 0)
  end
  if #seen.order == 0 then return nil, nil end
  local at = settings_paths(config.read(opts.config))
  local uc, env, keys = {}, {}, {}
  for _, name in ipairs(seen.order) do
    local key = name:lower():gsub("[^%w_]", "_")
    if keys[key] then error(string.format("%s: env(%q) and env(%q) make the same user_config key %s",
                                          opts.config, keys[key], name, key), 0) end
    keys[key] = name
    local default = seen.by[name].default
    local where = at[name]
    local item = {
      type = "string",
      title = where and where:gsub("^plugins%.", "") or name,
      description = string.format("%s, read by the bundle's configuration file as env(%q)",
                                  where or "A secret", name),
      sensitive = true,
      required = default == nil,
    }
    local dt = type(default)
    if dt == "string" or dt == "number" or dt == "boolean" then item.default = tostring(default) end
    uc[key] = item
    env[name] = "${user_config." .. key .. "}"
  end
  return uc, env
end

-- The bundle's name: NAME, else the current directory's, made of a-z 0-9 -.
local function bundle_name(opts)
  local name = opts.pack.name
  if not name then
    local p = io.popen("pwd")
    name = basename(p:read("l") or "luamcp")
    p:close()
    name = name:lower():gsub("[^%w%-]+", "-"):gsub("^%-+", ""):gsub("%-+$", "")
    if name == "" then name = "luamcp" end
  end
  return name
end

function M.pack(opts, server, cli)
  local tools = cli.all_pages(server, "tools/list", "tools")
  local n = #tools + #cli.all_pages(server, "resources/list", "resources")
          + #cli.all_pages(server, "resources/templates/list", "resourceTemplates")
          + #cli.all_pages(server, "prompts/list", "prompts")
  local all = {}
  for _, d in ipairs(opts.dirs) do all[#all + 1] = d end
  for _, d in ipairs(opts.dirs.sandbox) do all[#all + 1] = d end
  if n == 0 then
    say("luamcp: pack: no tools, resources or prompts in %s", table.concat(all, ", "))
    return 1, ""
  end
  if cli.bundle_libs == "" then
    say("luamcp: pack: this luamcp was built without the bundle's library path (its DT_RPATH)")
    return 1, ""
  end
  local uc, env = user_config(opts)
  local name = bundle_name(opts)
  local output = opts.pack.output or name .. ".mcpb"
  local exe = assert(cli.exe())
  local lua_dir = assert(cli.share_dir("lua"))
  local lua_at = normalize("bin/" .. cli.lua_rel)
  local lib_at = normalize("bin/" .. cli.bundle_libs)
  if not lua_at or not lib_at then error("the library paths leave the bundle: " .. cli.lua_rel, 0) end

  local entries = {}
  local bin = assert(file.read(exe))
  entries[#entries + 1] = { "bin/luamcp", bin, 493 }                 -- 0755
  local libs = shared_libs(exe)
  for _, l in ipairs(libs) do
    local data, err = file.read(l[2])
    if not data then error(err, 0) end
    entries[#entries + 1] = { lib_at .. "/" .. l[1], data, 420 }
  end
  add_tree(cli, entries, lua_dir, lua_at, true)
  local args, used = {}, {}
  local function add_dirs(flag, top, dirs)
    for _, d in ipairs(dirs) do
      local base = basename(d):gsub("[^%w_%-%.]", "_")
      if base == "" or base == "." or base == ".." then base = top end
      local at, i = top .. "/" .. base, 1
      while used[at] do i = i + 1; at = string.format("%s/%s-%d", top, base, i) end
      used[at] = true
      add_tree(cli, entries, d, at, false)
      args[#args + 1] = flag
      args[#args + 1] = "${__dirname}/" .. at
    end
  end
  add_dirs("--plugins", "plugins", opts.dirs)
  add_dirs("--sandbox", "sandbox", opts.dirs.sandbox)
  if opts.config then
    entries[#entries + 1] = { "luamcp.conf", assert(file.read(opts.config)), 420 }
    args[#args + 1] = "--config"
    args[#args + 1] = "${__dirname}/luamcp.conf"
  end

  local tool_list, names = {}, {}
  for _, t in ipairs(tools) do
    if not apps.app_only(t) then        -- the model's tools: one only an app's view calls is not
      tool_list[#tool_list + 1] = { name = t.name, description = t.description }
      names[#names + 1] = t.name
    end
  end
  local manifest = {
    manifest_version = "0.3",
    name = name,
    version = opts.pack.version or "0.1.0",
    description = opts.pack.description or (#names > 0 and "Tools: " .. table.concat(names, ", ")
                                            or "MCP server built with luamcp"),
    long_description = string.format("Lua plugins served by luamcp %s. Runs on Linux x86-64 with glibc %s "
      .. "or newer; the bundle carries luamcp's other libraries.", core.version or "", cli.libc_version),
    author = { name = opts.pack.author or os.getenv("USER") or "unknown" },
    server = {
      type = "binary",
      entry_point = "bin/luamcp",
      mcp_config = { command = "${__dirname}/bin/luamcp", args = setmetatable(args, core.array_mt), env = env },
    },
    tools = setmetatable(tool_list, core.array_mt),
    compatibility = { platforms = setmetatable({ "linux" }, core.array_mt) },
    user_config = uc,
  }
  local text = cli.pretty(manifest) .. "\n"
  table.insert(entries, 1, { "manifest.json", text, 420 })
  local epoch = tonumber(os.getenv("SOURCE_DATE_EPOCH") or "")
  local ok, err = cli.zip(output, entries, epoch and math.tointeger(epoch))
  if not ok then error(err, 0) end
  local size = 0
  for _, e in ipairs(entries) do size = size + #e[2] end
  say("luamcp: pack: wrote %s: %d tool%s, %d libraries, %d files (%.1f MB unpacked)",
      output, #tool_list, #tool_list == 1 and "" or "s", #libs, #entries, size / 1048576)
  return 0, ""
end

return M
