-- What the trace specs share: the environment that points luamcp at a
-- collector (spec/origin.lua's /status/200 takes the exports), and the spans
-- of OTLP requests, as OTLP JSON gives them and as decode.mjs decodes the
-- protobuf ones (the same shape: ids in hex, 64-bit integers as strings).
local cjson = require "cjson"

local M = {}

M.TRACE = "0af7651916cd43dd8448eb211c80319c"
M.PARENT = "b7ad6b7169203331"
M.TP = "00-" .. M.TRACE .. "-" .. M.PARENT .. "-01"

-- protocol: "http/json" (default) or "http/protobuf"; extra: more variables.
function M.env(url, extra, protocol)
  local env = {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = url,
    OTEL_EXPORTER_OTLP_PROTOCOL = protocol or "http/json",
    OTEL_BSP_SCHEDULE_DELAY = "50",
  }
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end

-- The POSTs with a body the collector o received.
function M.posts(o)
  local out = {}
  for _, r in ipairs(o.requests) do
    if r.method == "POST" and r.body and #r.body > 0 then out[#out + 1] = r end
  end
  return out
end

-- Every span of the decoded requests (each with .resource, .scope and .request,
-- the HTTP request it came in when given).
function M.spans(decoded, http_requests)
  local out = {}
  for i, body in ipairs(decoded) do
    for _, rs in ipairs(body.resourceSpans or {}) do
      for _, ss in ipairs(rs.scopeSpans or {}) do
        for _, s in ipairs(ss.spans or {}) do
          s.resource, s.scope, s.request = rs.resource, ss.scope, http_requests and http_requests[i]
          out[#out + 1] = s
        end
      end
    end
  end
  return out
end

-- Spans of the http/json exports o received.
function M.json_spans(o)
  local posts, decoded = M.posts(o), {}
  for i, r in ipairs(posts) do decoded[i] = cjson.decode(r.body) end
  return M.spans(decoded, posts)
end

-- An attribute list as a table key -> value.
function M.attrs(list)
  local t = {}
  for _, a in ipairs(list or {}) do
    local v = a.value or {}
    t[a.key] = v.stringValue or v.intValue or v.doubleValue
    if v.boolValue ~= nil then t[a.key] = v.boolValue end
  end
  return t
end

function M.find(spans, name)
  for _, s in ipairs(spans) do if s.name == name then return s end end
end

-- The span's event of that name: other events (queued, preempted under a
-- slow build) may come before it.
function M.event(span, name)
  for _, e in ipairs(span.events or {}) do if e.name == name then return e end end
  error("span " .. span.name .. " has no event " .. name)
end

return M
