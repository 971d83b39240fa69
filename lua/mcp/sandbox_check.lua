-- luamcp check, for a sandboxed plugin: what its source uses that the
-- sandbox does not offer or its grants do not give (a static pass over its
-- tokens, lua/mcp/lex.lua: what strings and comments say is not read;
-- literal URLs, paths, programs, databases and variables are checked
-- against the grants; a use whose target is computed is reported only when
-- nothing of its kind is granted). What is denied at run time is in the log
-- and in /metrics (luamcp_sandbox_denied_total).
local lex = require "mcp.lex"

local M = {}

-- Not in a sandboxed plugin's environment at all: these libraries, whatever
-- is taken from them; these functions.
local ABSENT_LIB = { io = true, debug = true, package = true }
local ABSENT = {
  loadfile = true, dofile = true, ["string.dump"] = true, ["math.randomseed"] = true,
  ["os.execute"] = true, ["os.remove"] = true, ["os.rename"] = true, ["os.exit"] = true,
  ["os.tmpname"] = true, ["os.setlocale"] = true,
}

-- The methods of ctx that use a capability: the key of their table argument
-- naming the target ({url = ...}), or the string they take first.
local METHODS = {
  http = { cap = "http", key = "url" }, spawn = { cap = "exec", key = "command" },
  read_file = { cap = "read" }, list_dir = { cap = "read" }, realpath = { cap = "read" },
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

local is = lex.is

-- Is toks[i] a name read as a variable (not a field, a key or a keyword)?
local KEYWORDS = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return then "
          .. "true until while"):gmatch("%a+") do KEYWORDS[w] = true end

local function variable(toks, i)
  local t, prev = toks[i], toks[i - 1]
  if t.kind ~= "name" or KEYWORDS[t.value] then return false end
  if prev and (is(prev, ".") or is(prev, ":") or is(prev, "::") or prev.value == "goto"
               or (prev.kind == "name" and (prev.value == "local" or prev.value == "function"))) then
    return false
  end
  local key = is(toks[i + 1], "=") and (is(prev, "{") or is(prev, ",") or is(prev, ";"))
  return not key
end

-- The name read from toks[i] on: its parts ("os", "getenv"), _ENV. and _G.
-- dropped, and the index of the token after it.
local function dotted(toks, i)
  local parts, j = { toks[i].value }, i + 1
  while true do
    if is(toks[j], ".") and toks[j + 1] and toks[j + 1].kind == "name" then
      parts[#parts + 1], j = toks[j + 1].value, j + 2
    elseif is(toks[j], "[") and toks[j + 1] and toks[j + 1].kind == "string" and is(toks[j + 2], "]") then
      parts[#parts + 1], j = toks[j + 1].value, j + 3
    else
      break
    end
  end
  while #parts > 1 and (parts[1] == "_ENV" or parts[1] == "_G") do table.remove(parts, 1) end
  return parts, j
end

-- The call whose arguments start at toks[j]: is it one, and the string it
-- passes first, f("x") or f "x" (its token), if any.
local function call_at(toks, j)
  local t = toks[j]
  if t and t.kind == "string" then return true, t end
  if is(t, "(") then return true, toks[j + 1] and toks[j + 1].kind == "string" and toks[j + 1] or nil end
  return is(t, "{"), nil
end

-- The value of key in the table constructor opening at toks[j] (or in
-- the one f({...}) passes): its first string token, {"x", ...} read as "x".
local function field_string(toks, j, key)
  if is(toks[j], "(") then j = j + 1 end
  if not is(toks[j], "{") then return nil end
  local depth = 0
  for i = j, #toks do
    local t = toks[i]
    if t.kind == "op" and (t.value == "{" or t.value == "(" or t.value == "[") then depth = depth + 1
    elseif t.kind == "op" and (t.value == "}" or t.value == ")" or t.value == "]") then
      depth = depth - 1
      if depth == 0 then return nil end
    elseif depth == 1 and t.value == key and t.kind == "name" and is(toks[i + 1], "=") then
      local v = toks[i + 2]
      if is(v, "{") then v = toks[i + 3] end
      return v and v.kind == "string" and v or nil
    end
  end
end

-- The findings of the plugin file named name, whose source is given, under
-- grants: {line, message}, in line order, each once.
function M.findings(name, source, grants)
  local out, seen = {}, {}
  local function add(n, msg)
    if seen[n .. msg] then return end
    seen[n .. msg] = true
    out[#out + 1] = { n, msg }
  end
  local function absent(n, what) add(n, ("sandbox: %s is not available to a sandboxed plugin"):format(what)) end
  local function use(n, cap, target)       -- target: its string token, or nil when computed
    if target then
      if not granted(grants, cap, target.value) then
        local t = shown(cap, target.value)
        add(target.line, ('sandbox: %s uses %s %s, not granted (grant %s = {"%s"})'):format(name, cap, t, cap, t))
      end
    elseif not grants[cap] and not (cap == "exec" and grants.connect) then
      add(n, ("sandbox: %s uses %s but is granted none (grant %s = {...})"):format(name, cap, cap))
    end
  end
  local toks = lex.tokens(source)
  for i, t in ipairs(toks) do
    local n = t.line
    if variable(toks, i) then
      local parts, j = dotted(toks, i)
      local full, last = table.concat(parts, "."), parts[#parts]
      local is_call, first = call_at(toks, j)
      if ABSENT_LIB[parts[1]] and (#parts > 1 or is(toks[j], "[") or is(toks[j], ":")) then
        absent(n, parts[1])
      elseif ABSENT[full] then
        absent(n, full)
      elseif full == "collectgarbage" and first and first.value ~= "count" then
        add(n, ('sandbox: collectgarbage("%s") is not available (only "count")'):format(first.value))
      elseif full == "os.getenv" and is_call then
        use(n, "env", first)
      elseif last == "open" and parts[#parts - 1] == "sqlite" and is_call then
        use(n, "sqlite", first)
      elseif last == "connect" and parts[#parts - 1] == "mcp" and is_call and not first then
        use(n, "connect", nil)
      end
    elseif is(t, ":") and toks[i + 1] and toks[i + 1].kind == "name" then
      local method, j = toks[i + 1].value, i + 2
      local is_call, first = call_at(toks, j)
      local m = METHODS[method]
      if method == "dump" and is_call then
        absent(n, "string.dump")
      elseif m and is_call and m.key then
        if not field_string(toks, j, m.key) then use(n, m.cap, nil) end   -- a literal: below
      elseif m and is_call then
        use(n, m.cap, first)
      end
    elseif t.kind == "name" and (t.value == "url" or t.value == "command") and is(toks[i + 1], "=") then
      local v = toks[i + 2]                  -- url = "http://...", command = {"/bin/x", ...}
      if t.value == "command" and is(v, "{") then v = toks[i + 3] end
      if v and v.kind == "string" and (t.value == "command" or v.value:find("^https?://")) then
        use(n, t.value == "url" and "http" or "exec", v)
      end
    end
  end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  return out
end

return M
