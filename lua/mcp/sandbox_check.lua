-- luamcp check, for a sandboxed plugin: what its source uses that the
-- sandbox does not offer or its grants do not give (a static pass over its
-- lines: literal URLs, paths, programs, databases and variables are checked
-- against the grants; a use whose target is computed is reported only when
-- nothing of its kind is granted). What is denied at run time is in the log
-- and in /metrics (luamcp_sandbox_denied_total).
local M = {}

local ABSENT = {              -- not in a sandboxed plugin's environment at all
  { "%f[%w_]io%.[%a_]+", "io" }, { "%f[%w_]debug%.[%a_]+", "debug" }, { "%f[%w_]package%.[%a_]+", "package" },
  { "%f[%w_]loadfile%f[^%w_]", "loadfile" }, { "%f[%w_]dofile%f[^%w_]", "dofile" },
  { "string%.dump", "string.dump" }, { ":dump%s*%(", "string.dump" }, { "math%.randomseed", "math.randomseed" },
  { "os%.execute", "os.execute" }, { "os%.remove", "os.remove" }, { "os%.rename", "os.rename" },
  { "os%.exit", "os.exit" }, { "os%.tmpname", "os.tmpname" }, { "os%.setlocale", "os.setlocale" },
}

-- Each use of a capability: a pattern capturing its literal target, and
-- one finding the use whatever its target.
local USES = {
  { cap = "http", literal = "url%s*=%s*[\"'](https?://[^\"']+)[\"']", any = ":http%s*[{(]" },
  { cap = "read", literal = "read_file%s*%(%s*[\"']([^\"']+)[\"']", any = ":read_file%s*%(" },
  { cap = "read", literal = "list_dir%s*%(%s*[\"']([^\"']+)[\"']", any = ":list_dir%s*%(" },
  { cap = "read", literal = "realpath%s*%(%s*[\"']([^\"']+)[\"']", any = ":realpath%s*%(" },
  { cap = "exec", literal = "command%s*=%s*{%s*[\"']([^\"']+)[\"']", any = ":spawn%s*[{(]" },
  { cap = "sqlite", literal = "sqlite%.open%s*%(%s*[\"']([^\"']+)[\"']", any = "sqlite%.open%s*%(" },
  { cap = "connect", any = "mcp%.connect%s*[{(]" },
  { cap = "env", literal = "os%.getenv%s*%(?%s*[\"']([%w_]+)[\"']", any = "os%.getenv%s*%(" },
}

local function host_port(url)
  local scheme, host = url:match("^(%a+)://([^/?#]+)")
  if not host then return nil end
  if not host:find(":%d+$") then host = host .. (scheme == "https" and ":443" or ":80") end
  return host
end

local function under(path, prefix)
  if prefix == "/" then return true end
  return path == prefix or path:sub(1, #prefix + 1) == prefix .. "/"
end

-- Does grants give cap on target?
local function granted(grants, cap, target)
  for _, g in ipairs(grants[cap] or {}) do
    if cap == "http" then
      local hp = host_port(target)
      if hp == g or (hp and not g:find(":%d+$") and hp:match("^(.*):%d+$") == g) then return true end
    elseif cap == "read" or cap == "sqlite" then
      if under(target, g) then return true end
    elseif g == target then
      return true
    end
  end
  if cap == "http" then                   -- a connect URL grants HTTP to its host
    for _, g in ipairs(grants.connect or {}) do
      if host_port(g) == host_port(target) then return true end
    end
  elseif cap == "exec" then               -- mcp.connect{command = {...}}: a connect grant
    for _, g in ipairs(grants.connect or {}) do
      if g == target then return true end
    end
  end
  return false
end

local function shown(cap, target)
  if cap == "http" then return host_port(target) or target end
  return target
end

-- The findings of the plugin file named name, whose lines are given, under
-- grants: {line, message}, in line order.
function M.findings(name, lines, grants)
  local out, seen = {}, {}
  local function add(n, msg)
    if seen[n .. msg] then return end
    seen[n .. msg] = true
    out[#out + 1] = { n, msg }
  end
  for n, line in ipairs(lines) do
    local code = line:gsub("%-%-.*$", "")
    for _, a in ipairs(ABSENT) do
      if code:find(a[1]) then add(n, ("sandbox: %s is not available to a sandboxed plugin"):format(a[2])) end
    end
    local cg = code:match("collectgarbage%s*%(%s*[\"'](%a+)[\"']")
    if cg and cg ~= "count" then add(n, ('sandbox: collectgarbage("%s") is not available (only "count")'):format(cg)) end
    for _, u in ipairs(USES) do
      local target = u.literal and code:match(u.literal)
      if target then
        if not granted(grants, u.cap, target) then
          local t = shown(u.cap, target)
          add(n, ('sandbox: %s uses %s %s, not granted (grant %s = {"%s"})'):format(name, u.cap, t, u.cap, t))
        end
      elseif code:find(u.any) and not grants[u.cap] and not (u.cap == "exec" and grants.connect) then
        add(n, ("sandbox: %s uses %s but is granted none (grant %s = {...})"):format(name, u.cap, u.cap))
      end
    end
  end
  return out
end

return M
