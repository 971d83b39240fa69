-- Middleware: a cache of tool results, with a time to live per tool. A tool
-- takes part when the configuration file gives it one, in seconds:
--
--   return { plugins = { "plugins", cache = { ttl = { fetch = 60 } } } }
--
-- A call of such a tool with the same arguments as one answered less than
-- its TTL ago gets that answer again, and the tool's handler does not run.
-- Only successes are kept. Without a TTL for any tool, no middleware at all.
local mcp = require "mcp"

local ttl, max_entries = {}, mcp.settings.max_entries or 1000
for name, seconds in pairs(mcp.settings.ttl or {}) do ttl[name] = seconds end

local entries, count = {}, 0     -- key -> { result =, expires = }

-- The JSON of v with the keys of each object sorted: equal arguments give
-- one key whatever order the client wrote them in.
local function canonical(v)
  if type(v) ~= "table" then return mcp.json.encode(v) end
  local parts = {}
  if mcp.is_array(v) or #v > 0 then
    for i, x in ipairs(v) do parts[i] = canonical(x) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  for i, k in ipairs(keys) do parts[i] = mcp.json.encode(k) .. ":" .. canonical(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function store(key, result, now, seconds)
  if count >= max_entries then                 -- full: drop what has expired
    for k, e in pairs(entries) do
      if e.expires <= now then entries[k], count = nil, count - 1 end
    end
    if count >= max_entries then return end
  end
  if not entries[key] then count = count + 1 end
  entries[key] = { result = result, expires = now + seconds }
end

local function cached(req, ctx, next)
  local name = req.params.name
  local seconds = ttl[name]
  if not seconds then return next(req) end
  local key = name .. "\0" .. canonical(req.params.arguments or {})
  local now, hit = mcp.now(), entries[key]
  if hit and hit.expires > now then
    ctx:log("debug", "cache: " .. name .. " answered from the cache")
    return hit.result
  end
  local result, msg, code, err = next(req)
  if result and not result.isError then store(key, result, now, seconds) end
  return result, msg, code, err
end

return mcp.plugin {
  name = "cache",
  middleware = next(ttl) and {
    mcp.middleware { name = "cache", methods = { "tools/call" }, handler = cached },
  } or nil,
}
