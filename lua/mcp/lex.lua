-- A Lua source's tokens, to read it without running it: the lines of the
-- configuration file's keys (lua/mcp/config.lua), luamcp check's sandbox
-- pass (lua/mcp/sandbox_check.lua) and the line a declaration's field is
-- written on (lua/mcp/load_errors.lua). Comments and white space are
-- skipped; strings are one token whatever they hold.
local L = {}

local SYMBOLS = { "...", "==", "~=", "<=", ">=", "//", "::", "<<", ">>", ".." }

-- The string literal text (quotes included) as Lua reads it, else its raw body.
local function unquote(text)
  local f = load("return " .. text, "=string", "t", {})
  local ok, v = pcall(f or error)
  return ok and type(v) == "string" and v or text:sub(2, -2)
end

-- tokens(source): the list of {kind = "name" | "string" | "number" | "op",
-- value =, line =}; keywords are names, a string's value is its contents.
function L.tokens(src)
  local out, i, line, n = {}, 1, 1, #src
  local function add(kind, value, at) out[#out + 1] = { kind = kind, value = value, line = at } end
  local function lines_in(s) return select(2, s:gsub("\n", "")) end
  -- the long bracket opening at p ([[, [==[): its body and the position after it
  local function long(p)
    local eq = src:match("^%[(=*)%[", p)
    if not eq then return nil end
    local open = p + #eq + 2
    local close = src:find("]" .. eq .. "]", open, true) or n + 1
    return src:sub(open, close - 1), close + #eq + 2
  end
  if src:sub(1, 1) == "#" then i = src:find("\n", 1, true) or n + 1 end   -- #! line
  while i <= n do
    local c = src:sub(i, i)
    if c == "\n" then
      line, i = line + 1, i + 1
    elseif c:find("%s") then
      i = i + 1
    elseif src:sub(i, i + 1) == "--" then
      local body, after = long(i + 2)
      if body then
        line, i = line + lines_in(body), after
      else
        i = src:find("\n", i, true) or n + 1
      end
    elseif c:find("[%a_]") then
      local w = src:match("^[%w_]+", i)
      add("name", w, line)
      i = i + #w
    elseif c:find("%d") or (c == "." and src:sub(i + 1, i + 1):find("%d")) then
      local j, exp = i, src:sub(i, i + 1):lower() == "0x" and "p" or "e"
      repeat
        j = j + #src:match("^[%w%.]*", j)
        local more = src:sub(j - 1, j - 1):lower() == exp and src:sub(j, j):find("[%+%-]")
        if more then j = j + 1 end
      until not more
      add("number", src:sub(i, j - 1), line)
      i = j
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = src:sub(j, j)
        if d == "\\" then j = src:sub(j + 1, j + 1) == "z" and src:find("[^%s]", j + 2) or j + 2
        elseif d == c or d == "\n" then break
        else j = j + 1 end
      end
      local text = src:sub(i, j)
      add("string", unquote(text), line)
      line, i = line + lines_in(text), j + 1
    elseif c == "[" and long(i) then
      local body, after = long(i)
      add("string", (body:gsub("^\r?\n", "")), line)
      line, i = line + lines_in(body), after
    else
      local sym = c
      for _, s in ipairs(SYMBOLS) do
        if src:sub(i, i + #s - 1) == s then sym = s; break end
      end
      add("op", sym, line)
      i = i + #sym
    end
  end
  return out
end

-- Is token t the symbol v?
function L.is(t, v) return t ~= nil and t.kind == "op" and t.value == v end

local OPEN, CLOSE = { ["{"] = 1, ["("] = 1, ["["] = 1 }, { ["}"] = 1, [")"] = 1, ["]"] = 1 }

-- The key written at toks[i] of the table constructor it is in: NAME = or
-- ["NAME"] =, and the index of the value after "=".
local function key_at(toks, i)
  local t, prev = toks[i], toks[i - 1]
  if t.kind == "name" and L.is(toks[i + 1], "=") and (L.is(prev, "{") or L.is(prev, ",") or L.is(prev, ";")) then
    return t.value, i + 2
  end
  if L.is(t, "[") and toks[i + 1] and toks[i + 1].kind == "string" and L.is(toks[i + 2], "]")
     and L.is(toks[i + 3], "=") then
    return toks[i + 1].value, i + 4
  end
end

-- The key keys[k] among the fields of the constructor opening at toks[open],
-- then keys[k + 1] in its value, and so on: the last one found, and how many.
local function find_keys(toks, open, keys, k)
  local depth, i = 0, open
  while toks[i] do
    local t = toks[i]
    if depth == 1 then
      local key, value = key_at(toks, i)
      if key == keys[k] then
        if keys[k + 1] and L.is(toks[value], "{") then
          local at, found = find_keys(toks, value, keys, k + 1)
          if at then return at, found + 1 end
        end
        return t.line, 1
      end
    end
    if t.kind == "op" and OPEN[t.value] then depth = depth + 1
    elseif t.kind == "op" and CLOSE[t.value] then
      depth = depth - 1
      if depth == 0 then return nil, 0 end
    end
    i = i + 1
  end
  return nil, 0
end

local function split(field)
  local keys = {}
  for key in field:gmatch("[^%.]+") do keys[#keys + 1] = key end
  return keys
end

-- The line a field is written on, in a declaration made on line `line` of
-- toks: field is a dotted path of keys ("defaults.timeout"), looked for in
-- each table constructor that opens on that line (or in the first one
-- after it); the line of its last key found, else line.
function L.field_line(toks, line, field)
  local keys = split(field)
  local best, most = line, 0
  for i, t in ipairs(toks) do
    if t.line > line and most > 0 then break end
    if t.line >= line and L.is(t, "{") then
      local at, found = find_keys(toks, i, keys, 1)
      if found > most then best, most = at, found end
      if t.line > line then break end
    end
  end
  return best
end

-- The line of field (a dotted path of keys) in the table constructor
-- opening at toks[open]: that of its last key found, or nil.
function L.key_line(toks, open, field)
  return (find_keys(toks, open, split(field), 1))
end

-- The last key = "value" written on or before line `before` (or anywhere):
-- the index of the "{" of the constructor it is in, and its line.
function L.declared(toks, key, value, before)
  local found
  for i, t in ipairs(toks) do
    if before and t.line > before then break end
    local k, v = key_at(toks, i)
    if k == key and toks[v] and toks[v].kind == "string" and toks[v].value == value then found = i end
  end
  if not found then return nil end
  local depth = 0
  for i = found - 1, 1, -1 do
    local t = toks[i]
    if t.kind == "op" and CLOSE[t.value] then depth = depth + 1
    elseif t.kind == "op" and OPEN[t.value] then
      if depth == 0 then return i, toks[found].line end
      depth = depth - 1
    end
  end
end

-- The line of the last `mcp.plugin` (a declaration made in a tail call,
-- return mcp.plugin{...}, has no line of its own), or nil.
function L.plugin_line(toks)
  local line
  for i = 1, #toks - 2 do
    local a, b, c = toks[i], toks[i + 1], toks[i + 2]
    if a.value == "mcp" and L.is(b, ".") and c.value == "plugin" then line = a.line end
  end
  return line
end

return L
