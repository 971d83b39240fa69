-- URI templates (RFC 6570) for resource templates: simple string expansion
-- `{var}` (level 1), reserved expansion `{+var}` and fragment expansion
-- `{#var}` (level 2), one variable per expression.
--
--   local T = assert(uri_template.parse("note://{name}"))
--   T:match("note://todo")          --> { name = "todo" }
--   T:expand{ name = "a b" }        --> "note://a%20b"
--   T.vars                          --> { "name" }
local M = {}

local Template = {}
-- a function, not the table itself: obj.__index must not hand a sandboxed
-- plugin the methods every plugin shares
Template.__index = function(_, k) return Template[k] end

local VARNAME = "^[%w_][%w_%.]*$"   -- varchar *( ["."] varchar ), pct-encoded names not supported
local MAX_URI = 65536                -- a longer URI matches no template (match's work is bounded)

-- parse(text): a template, or nil and a message.
function M.parse(text)
  if type(text) ~= "string" or text == "" then return nil, "URI template must be a non-empty string" end
  local parts, vars, seen = {}, {}, {}
  local i = 1
  while i <= #text do
    local open = text:find("{", i, true)
    local close = text:find("}", i, true)
    if close and (not open or close < open) then
      return nil, "unmatched '}' at position " .. close
    end
    if not open then
      parts[#parts + 1] = text:sub(i)
      break
    end
    if open > i then parts[#parts + 1] = text:sub(i, open - 1) end
    if not close then return nil, "unclosed '{' at position " .. open end
    local expr = text:sub(open + 1, close - 1)
    local op = expr:match("^[%+#]") or ""
    local name = expr:sub(#op + 1)
    if name:find(",", 1, true) then
      return nil, "{" .. expr .. "}: one variable per expression is supported"
    end
    if expr:match("^[%./;%?&=,!@|]") then
      return nil, "{" .. expr .. "}: only {var}, {+var} and {#var} are supported"
    end
    if not name:match(VARNAME) then return nil, "{" .. expr .. "}: invalid variable name" end
    if seen[name] then return nil, "variable " .. name .. " appears twice" end
    seen[name] = true
    vars[#vars + 1] = name
    parts[#parts + 1] = { op = op, name = name }
    i = close + 1
  end
  -- Adjacent expressions cannot be told apart when matching.
  for k = 2, #parts do
    if type(parts[k]) == "table" and type(parts[k - 1]) == "table" then
      return nil, "two expressions side by side cannot be matched"
    end
  end
  -- What match reads: literal strings, and values that are simple (stop at
  -- '/', '?' and '#') or reserved (take anything); "{#x}" is "#" then {+x}.
  local seq = {}
  for _, p in ipairs(parts) do
    local lit = type(p) == "string" and p or p.op == "#" and "#" or nil
    if lit and type(seq[#seq]) == "string" then seq[#seq] = seq[#seq] .. lit
    elseif lit then seq[#seq + 1] = lit end
    if type(p) == "table" then seq[#seq + 1] = { name = p.name, simple = p.op == "" } end
  end
  return setmetatable({ text = text, parts = parts, vars = vars, seq = seq }, Template)
end

local function pct_decode(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- match(uri): the variables' values (percent-decoded), or nil. Each value
-- is the longest that lets the rest match (as the Lua pattern
-- ^lit([^/?#]+)lit(.+)...$ would take them), found in time linear in #uri
-- for each part: backtracking took time polynomial in #uri, one power per
-- variable, so that a crafted URI stopped the server.
--
-- ok[i][p]: the parts from the i-th on match uri from byte p to its end.
function Template:match(uri)
  if type(uri) ~= "string" or #uri > MAX_URI then return nil end
  local seq, n, ok = self.seq, #uri, {}
  ok[#seq + 1] = { [n + 1] = true }
  for i = #seq, 1, -1 do
    local part, after, here = seq[i], ok[i + 1], {}
    if type(part) == "string" then
      local len = #part
      for q in pairs(after) do
        if q > len and uri:sub(q - len, q - 1) == part then here[q - len] = true end
      end
    else
      -- from p, a value may end at any q in after with p < q <= stop, where
      -- stop is the first byte a simple value cannot take (n + 1: none)
      local next_q, stop = nil, n + 1
      for p = n, 1, -1 do
        if after[p + 1] then next_q = p + 1 end
        if part.simple and uri:find("^[/%?#]", p) then stop = p end
        if next_q and next_q <= stop then here[p] = true end
      end
    end
    ok[i] = here
  end
  if not ok[1][1] then return nil end
  local out, p = {}, 1
  for i, part in ipairs(seq) do
    if type(part) == "string" then
      p = p + #part
    else
      local after, q = ok[i + 1], n + 1
      if part.simple then q = (uri:find("[/%?#]", p) or n + 1) end
      while not after[q] do q = q - 1 end           -- the longest value; ok[i][p] says there is one
      out[part.name] = pct_decode(uri:sub(p, q - 1))
      p = q
    end
  end
  return out
end

local function encode(s, allow_reserved)
  local keep = allow_reserved and "[%w%-%._~:/%?#%[%]@!%$&'%(%)%*%+,;=]" or "[%w%-%._~]"
  local out, i = {}, 1
  while i <= #s do
    local c = s:sub(i, i)
    if allow_reserved and s:find("^%%%x%x", i) then      -- pct-encoded triplets pass through
      out[#out + 1] = s:sub(i, i + 2)
      i = i + 3
    else
      out[#out + 1] = c:match(keep) and c or string.format("%%%02X", c:byte())
      i = i + 1
    end
  end
  return table.concat(out)
end

-- expand(vars): the URI; undefined variables expand to nothing.
function Template:expand(vars)
  local out = {}
  for _, p in ipairs(self.parts) do
    if type(p) == "string" then
      out[#out + 1] = p
    else
      local v = vars and vars[p.name]
      if v ~= nil then
        v = tostring(v)
        if p.op == "#" then out[#out + 1] = "#" end
        out[#out + 1] = encode(v, p.op ~= "")
      end
    end
  end
  return table.concat(out)
end

Template.__tostring = function(t) return t.text end

return M
