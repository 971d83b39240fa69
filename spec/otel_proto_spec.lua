-- Traces as http/protobuf (the default protocol), decoded with the official
-- OTLP definitions: the opentelemetry-proto messages that npm's
-- @opentelemetry/otlp-transformer ships (spec/otel/decode.mjs, on Node 22
-- through spec/node_helper.lua). Each body must decode, verify, and encode
-- again to the same bytes.
local H = require "spec.helper"
local N = require "spec.node_helper"
local O = require "spec.origin"
local OH = require "spec.otel_helper"

local describe_node = N.skipped and pending or describe

describe_node("traces as http/protobuf", function()
  local env, o
  setup(function() env = N.prepare("otel") end)
  teardown(function() N.remove(env) end)
  before_each(function() o = O.start() end)
  after_each(function()
    H.cleanup()
    o:stop()
  end)

  -- Decode every body o received; returns the spans and the reports.
  local function decode_all()
    local posts, files = OH.posts(o), {}
    for i, r in ipairs(posts) do
      files[i] = env.dir .. "/body" .. i .. ".bin"
      local f = assert(io.open(files[i], "wb"))
      f:write(r.body)
      f:close()
    end
    local rep = N.run(env, "decode.mjs", files)
    for _, f in ipairs(files) do os.remove(f) end
    local decoded = {}
    for i, q in ipairs(rep.requests) do
      assert.is_false(q.problem, "verify: " .. tostring(q.problem))
      assert.is_true(q.same_bytes, "body " .. i .. " does not encode again to the same bytes")
      decoded[i] = q.request
    end
    return OH.spans(decoded, posts), posts
  end

  it("decode to the spans, attributes, events and resource luamcp sent", function()
    local c = H.session{ plugins = { "spec/fixtures/plugins" },
                         env = OH.env(o.url .. "/status/200", { OTEL_SERVICE_NAME = "proto-svc",
                                                               OTEL_RESOURCE_ATTRIBUTES = "k8s.pod.name=p1" },
                                      "http/protobuf") }
    c:request("tools/call", { name = "echo", arguments = { text = ("x"):rep(300) },
                              _meta = { traceparent = OH.TP, tracestate = "vendor=x" } })
    c:call("soft_error", {})
    local id = c.next_id
    c.next_id = id + 1
    c:send{ jsonrpc = "2.0", id = id, method = "tools/call", params = { name = "sleep", arguments = { seconds = 30 } } }
    assert.truthy(c:wait_stderr("sleep started"))
    c:send(H.cancel_msg(id, "enough"))
    assert.truthy(H.poll_until(function()
      local n = 0
      for _, r in ipairs(OH.posts(o)) do n = n + #r.body end
      return n > 0 and c:wait_stderr("sleep stopped", 0.01)
    end, 5))
    c:close()                        -- what is queued goes at shutdown
    local spans, posts = decode_all()
    assert.are.equal("application/x-protobuf", posts[1].headers["content-type"])
    local echo = assert(OH.find(spans, "tools/call echo"))
    assert.are.equal(OH.TRACE, echo.traceId)
    assert.are.equal(OH.PARENT, echo.parentSpanId)
    assert.are.equal(16, #echo.spanId)
    assert.are.equal("vendor=x", echo.traceState)
    assert.are.equal(2, echo.kind)
    assert.are.equal(0x301, echo.flags)                   -- sampled, the parent known to be remote
    assert.is_true(tonumber(echo.endTimeUnixNano) >= tonumber(echo.startTimeUnixNano))
    local a = OH.attrs(echo.attributes)
    assert.are.equal("tools/call", a["mcp.method.name"])
    assert.are.equal("echo", a["gen_ai.tool.name"])
    assert.are.equal("pipe", a["network.transport"])
    local r = OH.attrs(echo.resource.attributes)
    assert.are.equal("proto-svc", r["service.name"])
    assert.are.equal("p1", r["k8s.pod.name"])
    assert.are.equal("luamcp", echo.scope.name)
    local soft = assert(OH.find(spans, "tools/call soft_error"))
    assert.are.equal("tool_error", OH.attrs(soft.attributes)["error.type"])
    assert.are.equal(2, soft.status.code)
    local sleep = assert(OH.find(spans, "tools/call sleep"))
    assert.is_nil(sleep.parentSpanId)
    assert.are.equal(0x101, sleep.flags)
    assert.are.equal("cancelled", OH.attrs(sleep.attributes)["error.type"])
    local cancelled = OH.event(sleep, "cancelled")
    assert.are.equal("enough", OH.attrs(cancelled.attributes).reason)
    assert.are.equal("client", OH.attrs(cancelled.attributes)["cancelled.by"])
  end)

  it("decode a batch of many spans in one request", function()
    local c = H.session{ env = OH.env(o.url .. "/status/200", { OTEL_BSP_SCHEDULE_DELAY = "60000" },
                                      "http/protobuf") }
    for i = 1, 600 do
      c:send{ jsonrpc = "2.0", id = i, method = "tools/call", params = { name = "echo", arguments = { text = "x" } } }
    end
    for i = 1, 600 do assert.truthy(c:take(function(m) return m.id == i end)) end
    -- 512 make a full batch, which leaves at once; the rest at shutdown
    assert.truthy(H.poll_until(function() return #OH.posts(o) >= 1 end, 5))
    c:close()
    local spans, posts = decode_all()
    assert.are.equal(2, #posts)
    assert.are.equal(600, #spans)
    local ids = {}
    for _, s in ipairs(spans) do
      assert.is_nil(ids[s.spanId], "a span id twice")
      ids[s.spanId] = true
    end
  end)
end)
