-- luamcp install CLIENT / uninstall CLIENT: the server's entry in a client's
-- configuration (install_clients.lua says where and how), through the
-- client's own CLI when it is on PATH, else spliced into its file
-- (json_splice.lua, toml_splice.lua) with the old file kept beside it as
-- FILE.luamcp-backup. The entry runs this binary by its real path with
-- absolute directories; --env values go where the client keeps a server's
-- environment, never on the server's command line.
local clients = require "mcp.install_clients"
local J = require "mcp.json_splice"
local T = require "mcp.toml_splice"
local file = require "mcp.file"

local M = {}

local BACKUP = ".luamcp-backup"

local function say(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

local function usage_error(cmd, fmt, ...)
  say("luamcp: %s: " .. fmt, cmd, ...)
  say("(luamcp %s --help for the usage)", cmd)
  return 2, ""
end

local function sh_quote(s)
  if s:match("^[%w%%+,./:=@_-]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function command_line(argv)
  local q = {}
  for i, a in ipairs(argv) do q[i] = sh_quote(a) end
  return table.concat(q, " ")
end

local function on_path(bin)
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local f = io.open(dir .. "/" .. bin, "rb")
    if f then
      f:close()
      if os.execute("test -x " .. sh_quote(dir .. "/" .. bin)) then return dir .. "/" .. bin end
    end
  end
end

-- The server's name: --name, else the project's directory (the one holding
-- plugins/, or the plugin directory itself), else the config file's.
local function default_name(cli, opts)
  local dir = opts.plugins[1] or (opts.dirs.sandbox or {})[1]
  local base
  if dir then
    local real = cli.realpath(dir) or dir
    base = real:match("([^/]+)/plugins/*$") or real:match("([^/]+)/*$")
  elseif opts.config then
    base = opts.config:match("([^/]+)$"):gsub("%.lua$", "")
  else
    base = (cli.realpath(".") or "."):match("([^/]+)/*$")
  end
  base = (base or "luamcp"):gsub("[^%w_-]", "-")
  return base ~= "" and base or "luamcp"
end

-- The entry e (see install_clients.lua), or nil, message.
local function make_entry(cli, opts)
  local env = {}
  for _, kv in ipairs(opts.env) do
    local k, v = kv:match("^([%a_][%w_]*)=(.*)$")
    if not k then return nil, "bad --env " .. kv .. " (want NAME=VALUE)", 2 end
    env[#env + 1] = { k, v }
  end
  if opts.url then
    if #env > 0 or #opts.plugins > 0 or #(opts.dirs.sandbox or {}) > 0 or opts.config then
      return nil, "--url names a remote server: --env, --plugins, --sandbox and --config are the local one's", 2
    end
    if opts.bearer_env and not opts.bearer_env:match("^[%a_][%w_]*$") then
      return nil, "bad --bearer-env " .. opts.bearer_env .. " (want a variable's name)", 2
    end
    return { url = opts.url, bearer_env = opts.bearer_env, env = {} }
  end
  if opts.bearer_env then return nil, "--bearer-env goes with --url", 2 end
  local exe, err = cli.exe_path()
  if not exe then return nil, err end
  local args = {}
  local function add(flag, path)
    local real, perr = cli.realpath(path)
    if not real then return nil, perr end
    args[#args + 1] = flag
    args[#args + 1] = real
    return true
  end
  local dirs = opts.plugins
  if #dirs == 0 and #(opts.dirs.sandbox or {}) == 0 and not opts.config then
    if not cli.realpath("plugins") then
      return nil, "no plugins: ./plugins is not there (give --plugins DIR or --config FILE)"
    end
    dirs = { "plugins" }
  end
  for _, d in ipairs(dirs) do
    local ok, perr = add("--plugins", d)
    if not ok then return nil, perr end
  end
  for _, d in ipairs(opts.dirs.sandbox or {}) do
    local ok, perr = add("--sandbox", d)
    if not ok then return nil, perr end
  end
  if opts.config then
    local ok, perr = add("--config", opts.config)
    if not ok then return nil, perr end
  end
  return { command = exe, args = args, env = env }
end

---------------------------------------------------------------------------
-- What would change: a diff of the lines that differ, with context.

local function lines_of(text)
  local t = {}
  for l in (text or ""):gmatch("([^\n]*)\n") do t[#t + 1] = l end
  local tail = (text or ""):match("([^\n]*)$")
  if tail ~= "" then t[#t + 1] = tail end
  return t
end

function M.diff(path, old, new)
  local a, b = lines_of(old), lines_of(new)
  local first = 1
  while first <= #a and first <= #b and a[first] == b[first] do first = first + 1 end
  local ea, eb = #a, #b
  while ea >= first and eb >= first and a[ea] == b[eb] do ea, eb = ea - 1, eb - 1 end
  local out = { "--- " .. path .. (old and "" or " (new)"), "+++ " .. path }
  local from = math.max(1, first - 3)
  out[#out + 1] = string.format("@@ line %d @@", from)
  for i = from, first - 1 do out[#out + 1] = "  " .. a[i] end
  for i = first, ea do out[#out + 1] = "- " .. a[i] end
  for i = first, eb do out[#out + 1] = "+ " .. b[i] end
  for i = ea + 1, math.min(#a, ea + 3) do out[#out + 1] = "  " .. a[i] end
  return table.concat(out, "\n") .. "\n"
end

---------------------------------------------------------------------------

-- The file's new text (install: entry e; uninstall: e nil) and whether the
-- name was there; or nil, message.
local function change_text(client, text, name, e)
  if client.format == "toml" then
    if e then return T.set(text, name, client.block(name, e)) end
    return T.remove(text, name)
  end
  if e then
    local entry, err = client.entry(e)
    if not entry then return nil, err end
    return J.set(text, client.outer, name, entry)
  end
  return J.remove(text, client.outer, name)
end

local function change_file(cli, opts, client, path, name, e)
  local cmd = opts.cmd
  local old = file.read(path)
  if old == nil and not e then return 0, string.format("%s: not in %s; nothing changed\n", name, path) end
  local new, was = change_text(client, old, name, e)
  if new == nil then
    say("luamcp: %s: %s: %s", cmd, path, was)
    return 1, ""
  end
  if new == old then
    return 0, string.format("%s: %s %s; nothing changed\n", name,
                            e and "already so in" or "not in", path)
  end
  if opts.dry_run then return 0, M.diff(path, old, new) end
  if old then
    -- the backup empty first, with the file's mode, then written: a 0600
    -- file's secrets (other servers' env) are never readable in its copy
    local ok, err = file.write(path .. BACKUP, "")
    if ok then ok, err = cli.copy_mode(path, path .. BACKUP) end
    if ok then ok, err = file.write(path .. BACKUP, old) end
    if not ok then say("luamcp: %s: %s", cmd, err); return 1, "" end
  else
    local dir = path:match("^(.*)/[^/]*$")
    if dir and dir ~= "" then
      local ok, err = cli.mkdir(dir)
      if not ok then say("luamcp: %s: %s", cmd, err); return 1, "" end
    end
  end
  local ok, err = file.write(path, new)
  if not ok then say("luamcp: %s: %s", cmd, err); return 1, "" end
  local verb = not e and "removed from" or was and "updated in" or "added to"
  return 0, string.format("%s: %s %s%s\n", name, verb, path,
                          old and " (the old file is " .. path .. BACKUP .. ")" or "")
end

local function run(argv, quiet)
  local line = command_line(argv)
  if quiet then line = line .. " >/dev/null 2>&1" end
  local ok, _, code = os.execute(line)
  return ok, code
end

local function change_by_cli(opts, client, scope, name, e)
  local c = client.cli
  local steps = {}
  if not e or c.remove_first then steps[#steps + 1] = { c.remove(name, scope), quiet = e ~= nil } end
  if e then steps[#steps + 1] = { c.add(name, e, scope) } end
  if opts.dry_run then
    local out = {}
    for _, s in ipairs(steps) do
      out[#out + 1] = "would run: " .. command_line(s[1]) .. (s.quiet and "   (if it is there)" or "")
    end
    return 0, table.concat(out, "\n") .. "\n"
  end
  for _, s in ipairs(steps) do
    local ok, code = run(s[1], s.quiet)
    if not ok and not s.quiet then
      say("luamcp: %s: %s failed (exit %s)", opts.cmd, command_line(s[1]), tostring(code))
      return 1, ""
    end
  end
  return 0, ""
end

-- install and uninstall: opts from cli.c (push_install_opts).
function M.run(opts, cli)
  local cmd = opts.cmd
  local client = clients[opts.client]
  if not client then
    return usage_error(cmd, "unknown client %s (%s)", opts.client, table.concat(clients.names, ", "))
  end
  local scope = opts.scope or client.default_scope
  if opts.scope and not client.scopes[opts.scope] then
    return usage_error(cmd, "%s has no %s scope", opts.client, opts.scope)
  end
  local name = opts.install_name or default_name(cli, opts)
  local e
  if cmd == "install" then
    local err, code
    e, err, code = make_entry(cli, opts)
    if not e then
      if code == 2 then return usage_error(cmd, "%s", err) end
      say("luamcp: %s: %s", cmd, err)
      return 1, ""
    end
  end
  if client.format == "print" then
    if not e then return usage_error(cmd, "mcp-json has nothing to uninstall: install only prints the entry") end
    local entry, err = client.entry(e)
    if not entry then say("luamcp: %s: %s", cmd, err); return 1, "" end
    return 0, J.encode(J.object { { "mcpServers", J.object { { name, entry } } } }) .. "\n"
  end
  if e and client.entry then
    local _, err = client.entry(e)
    if err then say("luamcp: %s: %s", cmd, err); return 1, "" end
  end
  if client.cli and not opts.config_path and on_path(client.cli.bin) then
    return change_by_cli(opts, client, scope, name, e)
  end
  local path = opts.config_path or client.scopes[scope](cli.sysname())
  return change_file(cli, opts, client, path, name, e)
end

return M
