-- The checks of declarations (mcp.tool, mcp.plugin, mcp.resource,
-- mcp.resource_template, mcp.prompt in lua/mcp/init.lua; mount = {...} in
-- lua/mcp/mount.lua), and what the library keeps off the public tables
-- (nothing starting with "_" is on mcp or ctx).
--
-- A mistake refuses the plugin at load, at the plugin's line. While a
-- plugin file runs under D.collect (server.lua, cli.lua's check), the
-- problems are collected and the declarations go on, so that every problem
-- of a file is reported; elsewhere the first one raises.
local D = {}

local collected                        -- the problems of the file running, or nil

-- Run fn(...) through xpcall(fn, handler, ...), collecting the problems of
-- its declarations: the list of problems ({at = "file:line: ", msg =,
-- field =}), then xpcall's results.
function D.collect(fn, handler, ...)
  local prev = collected
  collected = {}
  local r = table.pack(xpcall(fn, handler, ...))
  local list = collected
  collected = prev
  return list, table.unpack(r, 1, r.n)
end

-- The library's own files: a problem is reported at the first line outside them.
local LIB = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "\0"

local function is_lib(info)
  return info.what == "C" or info.source:sub(1, #LIB + 1) == "@" .. LIB
end

-- The stack level (from D.problem's caller's caller) of the code that made
-- the declaration, and its "file:line: ".
local function origin()
  local level = 3
  while true do
    local info = debug.getinfo(level + 1, "Sl")
    if info == nil then return 0, "" end
    if not is_lib(info) then
      local src = info.source:sub(1, 1) == "@" and info.source:sub(2) or info.short_src
      return level, info.currentline > 0 and (src .. ":" .. info.currentline .. ": ") or ""
    end
    level = level + 1
  end
end

-- The directory of the file making the declaration (".", for a file named
-- without one), or nil when it was not made from a file.
function D.source_dir()
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if info == nil then return nil end
    if not is_lib(info) then
      if info.source:sub(1, 1) ~= "@" then return nil end
      return info.source:sub(2):match("^(.*)/[^/]*$") or "."
    end
    level = level + 1
  end
end

-- A mistake in a declaration: collected, or raised at the plugin's line.
-- field: the dotted path of the field it is about (lua/mcp/load_errors.lua
-- finds the line it is written on).
function D.problem(msg, field)
  local level, at = origin()
  if collected == nil then error(msg, level) end
  collected[#collected + 1] = { at = at, msg = msg, field = field }
end

-- Levenshtein distance, stopping early past limit.
local function distance(a, b, limit)
  if math.abs(#a - #b) > limit then return limit + 1 end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur, best = { [0] = i }, i
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      if cur[j] < best then best = cur[j] end
    end
    if best > limit then return limit + 1 end
    prev = cur
  end
  return prev[#b]
end

local function squash(s) return (s:lower():gsub("_", "")) end

-- The known field k may have meant: equal but for case and "_", else the
-- only one it begins (4 letters or more), else the nearest at edit distance
-- 2 or less.
function D.suggest(k, known)
  local names = {}
  for name in pairs(known) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    if squash(name) == squash(k) then return name end
  end
  local sk, prefixed = squash(k), {}
  for _, name in ipairs(names) do
    if #sk >= 4 and squash(name):sub(1, #sk) == sk then prefixed[#prefixed + 1] = name end
  end
  if #prefixed == 1 then return prefixed[1] end
  local best, bestd = nil, 3
  for _, name in ipairs(names) do
    local d = distance(k, name, 2)
    if d < bestd then best, bestd = name, d end
  end
  return best
end

-- Every field of t not in known is a problem: "WHERE: unknown field PREFIXk
-- (did you mean PREFIXname?)".
function D.fields(t, known, where, prefix)
  prefix = prefix or ""
  local unknown = {}
  for k in pairs(t) do
    if not known[k] then unknown[#unknown + 1] = k end
  end
  table.sort(unknown, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(unknown) do
    local msg = ("%s: unknown field %s%s"):format(where, prefix, tostring(k))
    local hint = type(k) == "string" and D.suggest(k, known)
    if hint then msg = msg .. (" (did you mean %s%s?)"):format(prefix, hint) end
    D.problem(msg, prefix .. tostring(k))
  end
end

-- "R/s" or "R/m", R > 0.
function D.rate_ok(r)
  local n = type(r) == "string" and tonumber(r:match("^%s*([%d%.]+)%s*/[sm]$"))
  return n ~= nil and n > 0
end

-- The methods middleware may name (mcp.middleware{methods = ...}): those the
-- plugins serve, which the C core hands to lua/mcp/server.lua.
D.MIDDLEWARE_METHODS = {
  ["tools/list"] = true, ["tools/call"] = true,
  ["resources/list"] = true, ["resources/templates/list"] = true, ["resources/read"] = true,
  ["resources/subscribe"] = true, ["resources/unsubscribe"] = true,
  ["prompts/list"] = true, ["prompts/get"] = true,
  ["completion/complete"] = true, ["tasks/result"] = true,
}

-- A tool's Mcp-Param header declarations (init.lua), by tool.
D.param_headers = setmetatable({}, { __mode = "k" })

-- The state of a request's input (lua/mcp/input.lua), by ctx. D.ctx(id), the
-- ctx of a request, is set by init.lua.
D.input_of = setmetatable({}, { __mode = "k" })

return D
