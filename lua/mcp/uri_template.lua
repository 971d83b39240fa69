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
Template.__index = Template

local VARNAME = "^[%w_][%w_%.]*$"   -- varchar *( ["."] varchar ), pct-encoded names not supported

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
  -- The Lua pattern used by match: a simple value stops at '/', '?' and '#';
  -- reserved and fragment values take anything.
  local pat = { "^" }
  for _, p in ipairs(parts) do
    if type(p) == "string" then
      pat[#pat + 1] = (p:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"))
    elseif p.op == "" then
      pat[#pat + 1] = "([^/%?#]+)"
    elseif p.op == "+" then
      pat[#pat + 1] = "(.+)"
    else
      pat[#pat + 1] = "#(.+)"
    end
  end
  pat[#pat + 1] = "$"
  return setmetatable({ text = text, parts = parts, vars = vars, pattern = table.concat(pat) }, Template)
end

local function pct_decode(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- match(uri): the variables' values (percent-decoded), or nil.
function Template:match(uri)
  if type(uri) ~= "string" then return nil end
  local caps = { uri:match(self.pattern) }
  if caps[1] == nil then return nil end
  local out = {}
  for k, name in ipairs(self.vars) do out[name] = pct_decode(caps[k]) end
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
