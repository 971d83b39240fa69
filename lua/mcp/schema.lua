-- A JSON Schema subset for tool input: type, properties, required,
-- additionalProperties, enum, const, items, minimum, maximum,
-- exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems.
local core = require "mcp.core"

local array_mt, null = core.array_mt, core.null
local M = {}

local function is_array(v)
  if getmetatable(v) == array_mt then return true end
  if next(v) == nil then return false end
  local n = #v
  if n == 0 then return false end
  local count = 0
  for _ in pairs(v) do count = count + 1 end
  return count == n
end

local function json_type(v)
  local t = type(v)
  if t == "table" then return is_array(v) and "array" or "object" end
  if t == "number" then return math.type(v) == "integer" and "integer" or "number" end
  if t == "string" or t == "boolean" then return t end
  if v == null then return "null" end
  return t
end

local function type_ok(want, have, v)
  if want == have then return true end
  if want == "number" and have == "integer" then return true end
  if want == "integer" and have == "number" and v == math.floor(v) then return true end
  -- an empty table is both an empty object and an empty array
  if want == "array" and have == "object" and next(v) == nil then return true end
  return false
end

local function equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do if not equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function where(path) return path == "" and "arguments" or path end

local function validate(s, v, path)
  if type(s) ~= "table" then return true end
  local have = json_type(v)
  if s.type ~= nil then
    local ok = false
    if type(s.type) == "table" then
      for _, t in ipairs(s.type) do if type_ok(t, have, v) then ok = true break end end
    else
      ok = type_ok(s.type, have, v)
    end
    if not ok then
      local want = type(s.type) == "table" and table.concat(s.type, " or ") or s.type
      return nil, where(path) .. ": expected " .. want .. ", got " .. have
    end
  end
  if s.const ~= nil and not equal(s.const, v) then
    return nil, where(path) .. ": must be " .. tostring(core.encode(s.const))
  end
  if s.enum ~= nil then
    local ok = false
    for _, e in ipairs(s.enum) do if equal(e, v) then ok = true break end end
    if not ok then
      return nil, where(path) .. ": must be one of " .. tostring(core.encode(s.enum))
    end
  end
  if have == "integer" or have == "number" then
    if s.minimum and v < s.minimum then return nil, where(path) .. ": must be >= " .. s.minimum end
    if s.maximum and v > s.maximum then return nil, where(path) .. ": must be <= " .. s.maximum end
    if s.exclusiveMinimum and v <= s.exclusiveMinimum then
      return nil, where(path) .. ": must be > " .. s.exclusiveMinimum
    end
    if s.exclusiveMaximum and v >= s.exclusiveMaximum then
      return nil, where(path) .. ": must be < " .. s.exclusiveMaximum
    end
  elseif have == "string" then
    local n = utf8.len(v) or #v
    if s.minLength and n < s.minLength then
      return nil, where(path) .. ": must be at least " .. s.minLength .. " characters"
    end
    if s.maxLength and n > s.maxLength then
      return nil, where(path) .. ": must be at most " .. s.maxLength .. " characters"
    end
  elseif have == "array" or (have == "object" and next(v) == nil and s.type == "array") then
    local n = #v
    if s.minItems and n < s.minItems then return nil, where(path) .. ": needs at least " .. s.minItems .. " items" end
    if s.maxItems and n > s.maxItems then return nil, where(path) .. ": allows at most " .. s.maxItems .. " items" end
    if s.items then
      for i = 1, n do
        local ok, err = validate(s.items, v[i], path .. "[" .. (i - 1) .. "]")
        if not ok then return nil, err end
      end
    end
  end
  if have == "object" then
    local prefix = path == "" and "" or path .. "."
    if s.required then
      for _, k in ipairs(s.required) do
        if v[k] == nil then return nil, prefix .. k .. ": required" end
      end
    end
    local props = s.properties or {}
    for k, x in pairs(v) do
      local ps = props[k]
      if ps ~= nil then
        local ok, err = validate(ps, x, prefix .. tostring(k))
        if not ok then return nil, err end
      elseif s.additionalProperties == false then
        return nil, prefix .. tostring(k) .. ": unknown property"
      elseif type(s.additionalProperties) == "table" then
        local ok, err = validate(s.additionalProperties, x, prefix .. tostring(k))
        if not ok then return nil, err end
      end
    end
  end
  return true
end

-- validate(schema, value): true, or nil and a message naming the field.
function M.validate(schema, value)
  return validate(schema, value, "")
end

M.json_type = json_type
return M
