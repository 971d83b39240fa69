-- One member of a JSON object two levels down ({"mcpServers": {"NAME": ...}})
-- set or removed in the file's text, the rest of the text kept byte for
-- byte: other members, their order and layout, unknown keys, and the
-- comments and trailing commas of JSONC (VS Code's mcp.json). luamcp install
-- uses it (cli_install.lua); decoding and encoding the whole file would
-- reorder and reformat what the user wrote.
local core = require "mcp.core"

local M = {}

-- A scanner over text: pos is the next byte. Errors are raised as
-- {msg = "..."} and turned into nil, message by the public functions.
local function fail(s, msg)
  local line = select(2, s.text:sub(1, s.pos - 1):gsub("\n", "")) + 1
  error({ msg = string.format("line %d: %s", line, msg) }, 0)
end

-- Skips whitespace and comments.
local function skip(s)
  local text = s.text
  while true do
    local _, e = text:find("^[ \t\r\n]+", s.pos)
    if e then s.pos = e + 1 end
    if text:sub(s.pos, s.pos + 1) == "//" then
      s.pos = (text:find("\n", s.pos, true) or #text) + 1
    elseif text:sub(s.pos, s.pos + 1) == "/*" then
      local _, ce = text:find("*/", s.pos + 2, true)
      if not ce then fail(s, "unterminated comment") end
      s.pos = ce + 1
    else
      return
    end
  end
end

local function scan_string(s)
  local text, i = s.text, s.pos + 1
  while true do
    local c = text:find('["\\]', i)
    if not c then fail(s, "unterminated string") end
    if text:sub(c, c) == '"' then
      local raw = text:sub(s.pos, c)
      local ok, v = pcall(core.decode, raw)
      if not ok or type(v) ~= "string" then fail(s, "bad string " .. raw) end
      s.pos = c + 1
      return v
    end
    i = c + 2
  end
end

-- After a member or an item: its comma (and what follows it skipped), or the
-- closing bracket next.
local function separator(s, close)
  skip(s)
  local c = s.text:sub(s.pos, s.pos)
  if c == "," then
    s.pos = s.pos + 1
    skip(s)
  elseif c ~= close then
    fail(s, "expected , or " .. close)
  end
end

local scan_value

-- An object from its "{": its members, each {key, kstart, vstart, vend}
-- (vend: the last byte of the value), and the positions of its braces.
local function scan_object(s)
  local obj = { open = s.pos, members = {} }
  s.pos = s.pos + 1
  skip(s)
  while s.text:sub(s.pos, s.pos) ~= "}" do
    if s.text:sub(s.pos, s.pos) ~= '"' then fail(s, "expected a key or }") end
    local m = { kstart = s.pos }
    m.key = scan_string(s)
    skip(s)
    if s.text:sub(s.pos, s.pos) ~= ":" then fail(s, "expected : after the key") end
    s.pos = s.pos + 1
    skip(s)
    m.vstart = s.pos
    m.value = scan_value(s)
    m.vend = s.pos - 1
    obj.members[#obj.members + 1] = m
    separator(s, "}")
  end
  obj.close = s.pos
  s.pos = s.pos + 1
  return obj
end

local function scan_array(s)
  s.pos = s.pos + 1
  skip(s)
  while s.text:sub(s.pos, s.pos) ~= "]" do
    scan_value(s)
    separator(s, "]")
  end
  s.pos = s.pos + 1
  return true
end

function scan_value(s)
  local c = s.text:sub(s.pos, s.pos)
  if c == "{" then return scan_object(s) end
  if c == "[" then return scan_array(s) end
  if c == '"' then scan_string(s); return true end
  local _, e = s.text:find("^%-?%d+%.?%d*[eE]?[-+]?%d*", s.pos)
  if not e then _, e = s.text:find("^true", s.pos) end
  if not e then _, e = s.text:find("^false", s.pos) end
  if not e then _, e = s.text:find("^null", s.pos) end
  if not e then fail(s, "expected a value") end
  s.pos = e + 1
  return true
end

-- The top object of text, or raises.
local function scan(text)
  local s = { text = text, pos = text:sub(1, 3) == "\239\187\191" and 4 or 1 }   -- a UTF-8 BOM stays as it was
  skip(s)
  if text:sub(s.pos, s.pos) ~= "{" then fail(s, "expected an object") end
  local obj = scan_object(s)
  skip(s)
  if s.pos <= #text then fail(s, "text after the object") end
  return obj
end

local function find(obj, key)
  for i, m in ipairs(obj.members) do
    if m.key == key then return m, i end
  end
end

-- The indentation of the line pos is on.
local function indent_at(text, pos)
  local bol = pos
  while bol > 1 and text:sub(bol - 1, bol - 1) ~= "\n" do bol = bol - 1 end
  return text:match("^[ \t]*", bol)
end

-- The file's indent unit: its first member's, or two spaces.
local function unit_of(text, top)
  local m = top.members[1]
  if m then
    local ind = indent_at(text, m.kstart)
    if ind ~= "" then return ind end
  end
  return "  "
end

-- value: a JSON value written by encode (below) at indent.
local encode

local function encode_list(v, indent, unit, out)
  if #v == 0 then out[#out + 1] = "[]"; return end
  out[#out + 1] = "["
  for i, item in ipairs(v) do
    out[#out + 1] = "\n" .. indent .. unit
    encode(item, indent .. unit, unit, out)
    if i < #v then out[#out + 1] = "," end
  end
  out[#out + 1] = "\n" .. indent .. "]"
end

-- An ordered object: {{key, value}, ...} with .object = true.
local function encode_object(v, indent, unit, out)
  if #v == 0 then out[#out + 1] = "{}"; return end
  out[#out + 1] = "{"
  for i, kv in ipairs(v) do
    out[#out + 1] = "\n" .. indent .. unit .. core.encode(kv[1]) .. ": "
    encode(kv[2], indent .. unit, unit, out)
    if i < #v then out[#out + 1] = "," end
  end
  out[#out + 1] = "\n" .. indent .. "}"
end

function encode(v, indent, unit, out)
  if type(v) ~= "table" then out[#out + 1] = core.encode(v)
  elseif v.object then encode_object(v, indent, unit, out)
  else encode_list(v, indent, unit, out) end
end

-- An ordered object for encode: M.object{{"command", "x"}, {"args", {...}}}.
function M.object(pairs_)
  pairs_.object = true
  return pairs_
end

function M.encode(v, indent, unit)
  local out = {}
  encode(v, indent or "", unit or "  ", out)
  return table.concat(out)
end

local function splice(text, from, to, with)   -- text[from..to] replaced
  return text:sub(1, from - 1) .. with .. text:sub(to + 1)
end

-- obj gains the member key: value (an encode value) as its last member.
local function append_member(text, obj, key, value, unit)
  local last = obj.members[#obj.members]
  local indent = last and indent_at(text, last.kstart) or indent_at(text, obj.open) .. unit
  local member = core.encode(key) .. ": " .. M.encode(value, indent, unit)
  if last then
    -- right after the last value (a trailing comma of JSONC then follows the new one)
    return splice(text, last.vend + 1, last.vend, ",\n" .. indent .. member)
  end
  return splice(text, obj.open + 1, obj.close - 1,
                "\n" .. indent .. member .. "\n" .. indent_at(text, obj.open))
end

-- obj loses its member i.
local function remove_member(text, obj, i)
  local m, n = obj.members[i], #obj.members
  if n == 1 then return splice(text, obj.open + 1, obj.close - 1, "") end
  if i < n then return splice(text, m.kstart, obj.members[i + 1].kstart - 1, "") end
  -- the last: from the end of the one before it (append_member's inverse)
  return splice(text, obj.members[i - 1].vend + 1, m.vend, "")
end

-- The text with outer[name] set to value (an encode value): in place when it
-- is there, else appended to outer (made when missing); text nil or blank:
-- a new file. Returns the text, whether the member was there; or nil, message.
function M.set(text, outer, name, value)
  if text == nil or text:match("^%s*$") then
    local doc = M.object { { outer, M.object { { name, value } } } }
    return M.encode(doc) .. "\n", false
  end
  local ok, top = pcall(scan, text)
  if not ok then return nil, top.msg or tostring(top) end
  local unit = unit_of(text, top)
  local o = find(top, outer)
  if o == nil then
    return append_member(text, top, outer, M.object { { name, value } }, unit), false
  end
  if type(o.value) ~= "table" then return nil, string.format("%q is not an object", outer) end
  local m = find(o.value, name)
  if m == nil then return append_member(text, o.value, name, value, unit), false end
  return splice(text, m.vstart, m.vend, M.encode(value, indent_at(text, m.kstart), unit)), true
end

-- The text without outer[name]; the text unchanged and false when it is not
-- there; or nil, message.
function M.remove(text, outer, name)
  if text == nil or text:match("^%s*$") then return text, false end
  local ok, top = pcall(scan, text)
  if not ok then return nil, top.msg or tostring(top) end
  local o = find(top, outer)
  if o == nil or type(o.value) ~= "table" then return text, false end
  local m, i = find(o.value, name)
  if m == nil then return text, false end
  return remove_member(text, o.value, i), true
end

return M
