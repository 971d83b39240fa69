-- One trace end to end (issue 21): a TypeScript SDK client inside an
-- OpenTelemetry JS SDK span (spec/otel/e2e.mjs) calls a gateway luamcp over
-- Streamable HTTP: `trip` does ctx:http to an origin, `up_echo` and `up_slow`
-- go to an upstream luamcp through a mount, and the client cancels `up_slow`.
-- Both luamcp export to the spec's collector (spec/origin.lua, which is also
-- the origin); the spans must form one tree under the client's span.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local N = require "spec.node_helper"
local O = require "spec.origin"
local OH = require "spec.otel_helper"

local describe_node = N.skipped and pending or describe

describe_node("one trace from an SDK client to an upstream", function()
  local env, o, dir
  setup(function() env = N.prepare("otel") end)
  teardown(function() N.remove(env) end)
  before_each(function()
    o = O.start()
    dir = H.tmpdir()
  end)
  after_each(function()
    HH.cleanup()
    H.cleanup()
    o:stop()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("has the right parents, the origin saw the traceparent, and the cancel shows", function()
    local collector = o.url .. "/status/200"
    local up = HH.start{ plugins = { H.fixtures .. "/upstream" },
                         env = OH.env(collector, { OTEL_SERVICE_NAME = "upstream" }, "http/protobuf") }
    local f = assert(io.open(dir .. "/up.lua", "w"))
    f:write(('local mcp = require "mcp"\nreturn mcp.plugin { name = "up", mount = { url = %q, prefix = "up_" } }\n')
            :format("http://127.0.0.1:" .. up.port .. "/mcp"))
    f:close()
    f = assert(io.open(dir .. "/trip.lua", "w"))
    f:write([[
local mcp = require "mcp"
return mcp.plugin { name = "trip", tools = { mcp.tool {
  name = "trip", inputSchema = { type = "object", properties = { url = { type = "string" } } },
  handler = function(args, ctx)
    local res = assert(ctx:http{ url = args.url })
    return mcp.text(res.body)
  end } } }
]])
    f:close()
    local gw = HH.start{ plugins = { dir }, env = OH.env(collector, { OTEL_SERVICE_NAME = "gateway" }) }
    local rep = N.run(env, "e2e.mjs", {}, { E2E_URL = "http://127.0.0.1:" .. gw.port .. "/mcp",
                                            E2E_ORIGIN = o.url .. "/echo" })
    assert.is_table(rep.trip.content)
    assert.are.equal("echo: through the mount", rep.echo.content[1].text)
    assert.is_string(rep.cancelError)
    assert.are.equal(1, #rep.ended)
    assert.truthy(gw:wait_stderr("request %S+ cancelled: e2e cancel"))
    assert.truthy(up:wait_stderr("fixture: slow stopped e2e"))
    gw:close(10)
    up:close(10)

    -- the gateway's spans are JSON, the upstream's protobuf: read both
    local spans = {}
    local protobuf = {}
    for _, r in ipairs(OH.posts(o)) do
      if r.headers["content-type"] == "application/json" then
        for _, s in ipairs(OH.spans{ H.cjson.decode(r.body) }) do spans[#spans + 1] = s end
      else
        protobuf[#protobuf + 1] = r
      end
    end
    local files = {}
    for i, r in ipairs(protobuf) do
      files[i] = env.dir .. "/e2e" .. i .. ".bin"
      local g = assert(io.open(files[i], "wb"))
      g:write(r.body)
      g:close()
    end
    local dec = N.run(env, "decode.mjs", files)
    for _, q in ipairs(dec.requests) do
      for _, s in ipairs(OH.spans{ q.request }) do spans[#spans + 1] = s end
    end
    local function service(s) return OH.attrs(s.resource.attributes)["service.name"] end
    local function one(name, kind, svc)
      local found
      for _, s in ipairs(spans) do
        if s.name == name and s.kind == kind and service(s) == svc then
          assert.is_nil(found, "two spans " .. name)
          found = s
        end
      end
      return assert(found, "no span " .. name .. " of " .. svc)
    end
    for _, s in ipairs(spans) do assert.are.equal(rep.traceId, s.traceId, s.name) end

    local trip = one("tools/call trip", 2, "gateway")
    assert.are.equal(rep.spanId, trip.parentSpanId)
    local get = one("GET", 3, "gateway")
    assert.are.equal(trip.spanId, get.parentSpanId)
    local seen = H.cjson.decode(rep.trip.content[1].text)
    assert.are.equal("00-" .. rep.traceId .. "-" .. get.spanId .. "-01", seen.headers.traceparent)

    local echo = one("tools/call up_echo", 2, "gateway")
    assert.are.equal(rep.spanId, echo.parentSpanId)
    local echo_out = one("tools/call echo", 3, "gateway")
    assert.are.equal(echo.spanId, echo_out.parentSpanId)
    local echo_up = one("tools/call echo", 2, "upstream")
    assert.are.equal(echo_out.spanId, echo_up.parentSpanId)

    local slow = one("tools/call up_slow", 2, "gateway")
    local slow_out = one("tools/call slow", 3, "gateway")
    local slow_up = one("tools/call slow", 2, "upstream")
    assert.are.equal(rep.spanId, slow.parentSpanId)
    assert.are.equal(slow.spanId, slow_out.parentSpanId)
    assert.are.equal(slow_out.spanId, slow_up.parentSpanId)
    for _, s in ipairs{ slow, slow_out, slow_up } do
      assert.are.equal("cancelled", OH.attrs(s.attributes)["error.type"], s.name .. " of " .. service(s))
      assert.are.equal(2, s.status.code)
    end
    local cancelled = OH.event(slow, "cancelled")
    assert.are.equal("e2e cancel", OH.attrs(cancelled.attributes).reason)
    assert.are.equal("client", OH.attrs(cancelled.attributes)["cancelled.by"])
    OH.event(slow_up, "cancelled")
  end)
end)
