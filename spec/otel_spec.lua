-- OpenTelemetry traces (docs/operations/tracing.md): SERVER spans exported
-- over OTLP/HTTP to a collector the spec runs on loopback (spec/origin.lua:
-- /status/200 takes them, /status/503 refuses them, /silent never answers),
-- here as http/json; spec/otel_proto_spec.lua decodes http/protobuf with the
-- official definitions.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local O = require "spec.origin"

local OH = require "spec.otel_helper"
local TRACE, PARENT, TP = OH.TRACE, OH.PARENT, OH.TP
local env_for, attrs = OH.env, OH.attrs
local spans_of = OH.json_spans

local metrics = H.metrics

local function wait_span(o, name, timeout)
  local found
  H.poll_until(function()
    found = OH.find(spans_of(o), name)
    return found ~= nil
  end, timeout or 5)
  return found
end

describe("traces", function()
  local o
  before_each(function() o = O.start() end)
  after_each(function()
    H.cleanup()
    HH.cleanup()
    o:stop()
  end)

  it("are off unless configured", function()
    local c = H.session{}
    H.text(c:call("echo", { text = "hi" }))
    c:close()
    assert.are.equal(0, #o.requests)
  end)

  it("give a tools/call a SERVER span under the _meta traceparent, with the semconv attributes", function()
    local c = H.session{ env = env_for(o.url .. "/status/200", {
      OTEL_SERVICE_NAME = "spec-svc", OTEL_RESOURCE_ATTRIBUTES = "deployment.environment=test,team=a%20b",
      OTEL_EXPORTER_OTLP_HEADERS = "x-collector-key=k1%3Dv",
    }) }
    local resp = c:request("tools/call", { name = "echo", arguments = { text = "hi" },
                                           _meta = { traceparent = TP, tracestate = "vendor=x" } })
    assert.is_table(resp.result)
    local s = assert(wait_span(o, "tools/call echo"), "no span exported")
    assert.are.equal(TRACE, s.traceId)
    assert.are.equal(PARENT, s.parentSpanId)
    assert.matches("^%x+$", s.spanId)
    assert.are.equal(16, #s.spanId)
    assert.are.equal(2, s.kind)
    assert.are.equal("vendor=x", s.traceState)
    assert.is_string(s.startTimeUnixNano)
    assert.is_true(tonumber(s.endTimeUnixNano) >= tonumber(s.startTimeUnixNano))
    local a = attrs(s.attributes)
    assert.are.equal("tools/call", a["mcp.method.name"])
    assert.are.equal("echo", a["gen_ai.tool.name"])
    assert.are.equal("execute_tool", a["gen_ai.operation.name"])
    assert.are.equal(string.format("%d", resp.id), a["jsonrpc.request.id"])
    assert.are.equal("2025-11-25", a["mcp.protocol.version"])
    assert.are.equal("pipe", a["network.transport"])
    assert.is_nil(a["error.type"])
    assert.are.equal(0, s.status.code)
    local r = attrs(s.resource.attributes)
    assert.are.equal("spec-svc", r["service.name"])
    assert.are.equal("test", r["deployment.environment"])
    assert.are.equal("a b", r["team"])
    assert.are.equal("luamcp", s.scope.name)
    assert.are.equal("k1=v", s.request.headers["x-collector-key"])
    assert.are.equal("application/json", s.request.headers["content-type"])
    assert.are.equal("/status/200", s.request.path)
    c:close()
  end)

  -- a plain tools/call is read from its text (no JSON tree), as is a
  -- 2026-07-28 one whose _meta a request before it had (session.c's
  -- quick_call): their spans are the parsed requests'
  it("give a tools/call read from its text the same span: its name, its tool, a _meta traceparent", function()
    local c = H.session{ env = env_for(o.url .. "/status/200") }
    c:send('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}\n')
    local meta = H.cjson.encode(HH.meta_rev2026(nil, { ["io.modelcontextprotocol/clientInfo"] = { name = "spec", version = "1" },
                                                       traceparent = TP })):gsub("\\/", "/")   -- no escape: a plain line
    for id = 2, 3 do                               -- the second's _meta is one kept: read from its text
      c:send(('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"},"_meta":%s}}\n')
             :format(id, meta))
    end
    for id = 1, 3 do
      local r = assert(c:take(function(m) return m.id == id and m.method == nil end, 10), c:stderr_text())
      assert.is_table(r.result, H.cjson.encode(r))
    end
    local spans
    H.poll_until(function()
      spans = {}
      for _, sp in ipairs(spans_of(o)) do if sp.name == "tools/call echo" then spans[#spans + 1] = sp end end
      return #spans == 3
    end, 5)
    assert.are.equal(3, #spans)
    local parented = 0
    for _, sp in ipairs(spans) do
      local a = attrs(sp.attributes)
      assert.are.equal("echo", a["gen_ai.tool.name"])
      assert.are.equal("execute_tool", a["gen_ai.operation.name"])
      if sp.parentSpanId ~= nil then
        assert.are.equal(PARENT, sp.parentSpanId)
        assert.are.equal(TRACE, sp.traceId)
        parented = parented + 1
      end
    end
    assert.are.equal(2, parented)
  end)

  it("start a new trace for a request without a context, or with a malformed one", function()
    local c = H.session{ env = env_for(o.url .. "/status/200") }
    c:request("tools/list", {})
    c:request("tools/call", { name = "echo", arguments = { text = "x" }, _meta = { traceparent = TP:upper() } })
    local a = assert(wait_span(o, "tools/list"))
    local b = assert(wait_span(o, "tools/call echo"))
    assert.is_nil(a.parentSpanId)
    assert.is_nil(b.parentSpanId)
    assert.are_not.equal(TRACE, b.traceId)
    assert.are_not.equal(a.traceId, b.traceId)
    c:close()
  end)

  it("say tool_error for an isError result and the code for a JSON-RPC error", function()
    local c = H.session{ env = env_for(o.url .. "/status/200") }
    c:call("soft_error", {})
    local resp = c:request("tools/call", { name = "no_such_tool", arguments = {} })
    local s = assert(wait_span(o, "tools/call soft_error"))
    assert.are.equal("tool_error", attrs(s.attributes)["error.type"])
    assert.are.equal(2, s.status.code)
    local r = assert(wait_span(o, "tools/call no_such_tool"))
    assert.are.equal(string.format("%d", resp.error.code), attrs(r.attributes)["error.type"])
    assert.are.equal(2, r.status.code)
    c:close()
  end)

  it("end a cancelled request's span when it stops, with the cancelled event", function()
    local c = H.session{ plugins = { "spec/fixtures/plugins" }, env = env_for(o.url .. "/status/200") }
    local id = c.next_id
    c.next_id = id + 1
    c:send{ jsonrpc = "2.0", id = id, method = "tools/call",
            params = { name = "sleep", arguments = { seconds = 30 }, _meta = { traceparent = TP } } }
    assert.truthy(c:wait_stderr("sleep started"))
    c:send(H.cancel_msg(id, "user pressed stop"))
    local s = assert(wait_span(o, "tools/call sleep"))
    assert.are.equal("cancelled", attrs(s.attributes)["error.type"])
    assert.are.equal(2, s.status.code)
    local ev
    for _, e in ipairs(s.events) do if e.name == "cancelled" then ev = e end end
    assert.is_table(ev, "no cancelled event")
    local ea = attrs(ev.attributes)
    assert.are.equal("user pressed stop", ea.reason)
    assert.are.equal("client", ea["cancelled.by"])
    assert.is_true(tonumber(ev.timeUnixNano) <= tonumber(s.endTimeUnixNano))
    c:close()
  end)

  it("show the time a call queued under max_concurrent as an event", function()
    local c = H.session{ plugins = { "spec/fixtures/limits" }, env = env_for(o.url .. "/status/200") }
    for i, tag in ipairs{ "first", "second" } do
      c:send{ jsonrpc = "2.0", id = i, method = "tools/call", params = { name = "gate", arguments = { tag = tag, hold = 0.2 } } }
    end
    for i = 1, 2 do assert.truthy(c:take(function(m) return m.id == i end)) end
    local first, second
    assert.truthy(H.poll_until(function()
      for _, s in ipairs(spans_of(o)) do
        if s.name == "tools/call gate" then
          if attrs(s.attributes)["jsonrpc.request.id"] == "1" then first = s else second = s end
        end
      end
      return first and second
    end, 5))
    for _, e in ipairs(first.events or {}) do assert.are_not.equal("queued", e.name) end
    assert.is_true(attrs(OH.event(second, "queued").attributes)["mcp.queue.wait_seconds"] >= 0.15)
    c:close()
  end)

  it("show the slices a spinning handler gave back as one preempted event", function()
    local c = H.session{ env = env_for(o.url .. "/status/200") }
    c:call("crunch", { seconds = 0.1 })
    local s = assert(wait_span(o, "tools/call crunch"))
    assert.are.equal(1, #s.events)
    assert.are.equal("preempted", s.events[1].name)
    assert.is_true(tonumber(attrs(s.events[1].attributes)["mcp.slices"]) >= 10)   -- 2 ms slices
    c:close()
  end)

  it("stay off with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none", function()
    for _, extra in ipairs{ { OTEL_SDK_DISABLED = "true" }, { OTEL_TRACES_EXPORTER = "none" } } do
      local c = H.session{ env = env_for(o.url .. "/status/200", extra) }
      c:call("echo", { text = "x" })
      c:close()
    end
    assert.are.equal(0, #OH.posts(o))
  end)

  it("follow the sampler: always_off exports nothing; parentbased follows an unsampled parent", function()
    local c = H.session{ env = env_for(o.url .. "/status/200", { OTEL_TRACES_SAMPLER = "always_off" }) }
    c:request("tools/list", {})
    c:close()
    local d = H.session{ env = env_for(o.url .. "/status/200") }
    d:request("tools/list", { _meta = { traceparent = TP:sub(1, -3) .. "00" } })
    d:call("echo", { text = "x" })
    assert.truthy(wait_span(o, "tools/call echo"))
    d:close()
    for _, s in ipairs(spans_of(o)) do assert.are_not.equal("tools/list", s.name) end
  end)

  it("are configured by otel = {...} in --config, over the variables", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/luamcp.lua", "w"))
    f:write(([[return { otel = { traces_endpoint = %q, protocol = "http/json", schedule_delay = 50,
      service_name = "from-file", headers = { ["x-key"] = "v1" } } }]]):format(o.url .. "/status/200"))
    f:close()
    local c = H.session{ args = { "--config", dir .. "/luamcp.lua" },
                         env = { OTEL_SERVICE_NAME = "from-env", OTEL_EXPORTER_OTLP_PROTOCOL = "http/protobuf" } }
    c:request("tools/list", {})
    local s = assert(wait_span(o, "tools/list"))
    assert.are.equal("from-file", attrs(s.resource.attributes)["service.name"])
    assert.are.equal("v1", s.request.headers["x-key"])
    c:close()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("refuse a bad value at startup", function()
    local c = H.start{ env = env_for(o.url, { OTEL_TRACES_SAMPLER = "sometimes" }) }
    assert.are.equal(2, c:wait_exit(5))
    assert.truthy(c:expect_stderr("otel: the sampler must be"))
  end)

  it("over HTTP read the traceparent header, say tcp and a digest of the session id", function()
    local srv = HH.start{ env = env_for(o.url .. "/status/200") }
    local s = HH.initialize(srv, "2025-11-25")
    local resp = s:rpc("tools/list", {}, { headers = { traceparent = TP } })
    assert.is_table(resp.result)
    local span = assert(wait_span(o, "tools/list"))
    assert.are.equal(TRACE, span.traceId)
    assert.are.equal(PARENT, span.parentSpanId)
    local a = attrs(span.attributes)
    assert.are.equal("tcp", a["network.transport"])
    assert.are.equal("http", a["network.protocol.name"])
    assert.matches("^%x+$", a["mcp.session.id"])
    assert.are.equal(16, #a["mcp.session.id"])
    assert.is_nil(s.id:find(a["mcp.session.id"], 1, true))
    assert.are_not.equal(s.id, a["mcp.session.id"])
  end)

  it("keep memory bounded while the collector never answers", function()
    -- (ASan's quarantine holds freed memory: a small one, in the ASan build)
    local c = H.session{ env = env_for(o.url .. "/silent", { OTEL_BSP_MAX_QUEUE_SIZE = "100",
      ASAN_OPTIONS = (os.getenv("ASAN_OPTIONS") or "detect_leaks=1") .. ":quarantine_size_mb=1" }) }
    local function burst(from, n)
      for i = from, from + n - 1 do
        c:send{ jsonrpc = "2.0", id = i, method = "tools/call", params = { name = "echo", arguments = { text = "x" } } }
      end
      for i = from, from + n - 1 do assert.truthy(c:take(function(m) return m.id == i end)) end
    end
    burst(1, 2000)
    local before = H.rss_kb(c.pid)
    for k = 1, 4 do burst(k * 2000 + 1, 2000) end
    local after = H.rss_kb(c.pid)
    assert.is_true(after - before < 2048, ("RSS grew %d KB over 8000 calls"):format(after - before))
    local t0 = H.now()
    assert.are.equal(0, c:close(10))          -- the last export gives up after two seconds
    assert.is_true(H.now() - t0 < 4, "shutdown took " .. (H.now() - t0) .. " s")
  end)

  -- a stdio read hands the server hundreds of calls at once: a burst in one
  -- write finishes thousands of spans before the first export is answered
  it("lose none of a pipelined burst of 10,000 calls at the default settings", function()
    local N, port = 10000, H.free_port()
    local c = H.session{ args = { "--metrics", "127.0.0.1:" .. port },
                         env = env_for(o.url .. "/status/200", { OTEL_BSP_SCHEDULE_DELAY = "5000" }) }
    local lines = {}
    for i = 1, N do
      lines[i] = '{"jsonrpc":"2.0","id":' .. i .. ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}\n'
    end
    c:send(table.concat(lines))
    assert.truthy(H.run_until(function() return #c.inbox >= N end, 60), "answered " .. #c.inbox)
    local text = metrics(port)
    assert.are.equal("0", text:match('luamcp_otel_spans_total{outcome="dropped"} (%d+)'), text)
    assert.are.equal(0, c:close(30))            -- the last 272 leave at shutdown
    local received = 0
    for _, r in ipairs(OH.posts(o)) do received = received + select(2, r.body:gsub('"spanId":', "")) end
    assert.are.equal(N, received)
    assert.are.equal(0, c:count_stderr("dropped", true))
    -- the collector's answer is not written to the log (a line without its end, in err_buf)
    assert.is_nil((table.concat(c.stderr, "\n") .. c.err_buf):find("status 200", 1, true))
  end)

  it("log how many spans a small queue dropped, why, and the setting to raise", function()
    local port = H.free_port()
    local c = H.session{ args = { "--metrics", "127.0.0.1:" .. port },
                         env = env_for(o.url .. "/silent", { OTEL_BSP_MAX_QUEUE_SIZE = "20",
                                                             OTEL_EXPORTER_OTLP_TIMEOUT = "30000" }) }
    for i = 1, 200 do
      c:send{ jsonrpc = "2.0", id = i, method = "tools/call", params = { name = "echo", arguments = { text = "x" } } }
    end
    for i = 1, 200 do assert.truthy(c:take(function(m) return m.id == i end)) end
    c:expect_stderr("warning: otel: 1 span dropped: the export queue was full %(max_queue_size 20%); the collector at "
                    .. H.esc(o.url) .. "/silent did not keep up %-%- raise OTEL_BSP_MAX_QUEUE_SIZE")
    local dropped = tonumber(metrics(port):match('luamcp_otel_spans_total{outcome="dropped"} (%d+)'))
    assert.is_true(dropped > 100, dropped)
    assert.are.equal(0, c:close(30))          -- two seconds for the export in flight, then none left
    assert.is_true(c:count_stderr("dropped", true) <= 3)    -- rate-limited, not a line a span: the rest at close
    local told = 0
    for _, l in ipairs(c.stderr) do told = told + tonumber(l:match("otel: (%d+) spans? dropped") or 0) end
    assert.are.equal(dropped, told)
  end)

  it("have the semantic conventions' duration histograms in /metrics, traced or not", function()
    local port = H.free_port()
    local conn = { command = { H.binary(), "--plugins", H.fixtures .. "/upstream" }, name = "up" }
    local c = H.session{ plugins = { "spec/fixtures/plugins", "spec/fixtures/client_tools" },
                         args = { "--metrics", "127.0.0.1:" .. port } }
    c:call("echo", { text = "x" })
    c:call("soft_error", {})
    c:request("tools/call", { name = "no_such_tool", arguments = {} })
    c:call("call", { conn = conn, tool = "echo", args = { text = "hi" } })
    c:call("call", { conn = conn, tool = "fail", args = {} })
    local id = c.next_id
    c.next_id = id + 1
    c:send{ jsonrpc = "2.0", id = id, method = "tools/call", params = { name = "sleep", arguments = { seconds = 30 } } }
    assert.truthy(c:wait_stderr("sleep started"))
    c:send(H.cancel_msg(id, "stop"))
    assert.truthy(c:wait_stderr("sleep stopped"))
    local text
    assert.truthy(H.poll_until(function()
      text = metrics(port)
      return text:find('error_type="cancelled"', 1, true) ~= nil
    end, 5), text)
    local function count(name, labels)
      return tonumber(text:match(H.esc(name .. "_count{" .. labels .. "}") .. " (%d+)"))
    end
    local S = "mcp_server_operation_duration_seconds"
    assert.are.equal(1, count(S, 'mcp_method_name="tools/call",gen_ai_tool_name="echo",error_type=""'))
    assert.are.equal(1, count(S, 'mcp_method_name="tools/call",gen_ai_tool_name="soft_error",error_type="tool_error"'))
    assert.are.equal(1, count(S, 'mcp_method_name="tools/call",gen_ai_tool_name="",error_type="-32602"'))
    assert.are.equal(1, count(S, 'mcp_method_name="tools/call",gen_ai_tool_name="sleep",error_type="cancelled"'))
    assert.truthy(text:find(S .. '_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",error_type="",le="0.01"}', 1, true))
    assert.truthy(text:find(S .. '_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",error_type="",le="300"}', 1, true))
    local C = "mcp_client_operation_duration_seconds"
    assert.are.equal(1, count(C, 'mcp_method_name="tools/call",gen_ai_tool_name="echo",error_type=""'))
    assert.are.equal(1, count(C, 'mcp_method_name="tools/call",gen_ai_tool_name="fail",error_type="-32099"'))
    assert.are.equal(1, count(C, 'mcp_method_name="server/discover",gen_ai_tool_name="",error_type=""'), text)
    c:close()
  end)

  describe("of what a handler waits on", function()
    local PLUGINS = { "spec/fixtures/otel" }
    local function by_id(spans)
      local t = {}
      for _, s in ipairs(spans) do t[s.spanId] = s end
      return t
    end

    it("give ctx:http a CLIENT span, named by the traceparent the origin saw", function()
      local c = H.session{ plugins = PLUGINS, env = env_for(o.url .. "/status/200") }
      local resp = c:request("tools/call", { name = "fetch", arguments = { url = o.url .. "/echo?secret=1" },
                                             _meta = { traceparent = TP } })
      local seen = H.cjson.decode(H.cjson.decode(H.text(resp)).body)
      local server = assert(wait_span(o, "tools/call fetch"))
      local client = assert(wait_span(o, "GET"))
      assert.are.equal(TRACE, client.traceId)
      assert.are.equal(server.spanId, client.parentSpanId)
      assert.are.equal(3, client.kind)
      assert.are.equal("00-" .. TRACE .. "-" .. client.spanId .. "-01", seen.headers.traceparent)
      local a = attrs(client.attributes)
      assert.are.equal("GET", a["http.request.method"])
      assert.are.equal(o.url .. "/echo", a["url.full"])
      assert.are.equal("127.0.0.1", a["server.address"])
      assert.are.equal(tostring(o.port), a["server.port"])
      assert.are.equal("200", a["http.response.status_code"])
      c:close()
    end)

    it("nest SQL, process and HTTP spans under a plugin's ctx:span", function()
      local c = H.session{ plugins = PLUGINS, env = env_for(o.url .. "/status/200") }
      c:call("work", { url = o.url .. "/hello" })
      local server = assert(wait_span(o, "tools/call work"))
      local work = assert(wait_span(o, "work"))
      local sql = assert(wait_span(o, "SELECT"))
      local proc = assert(wait_span(o, "true"))
      local get = assert(wait_span(o, "GET"))
      assert.are.equal(server.spanId, work.parentSpanId)
      assert.are.equal(1, work.kind)
      assert.are.equal("1", attrs(work.attributes)["app.step"])
      assert.are.equal(true, attrs(work.attributes)["app.fast"])
      for _, s in ipairs{ sql, proc, get } do
        assert.are.equal(work.spanId, s.parentSpanId, s.name)
        assert.are.equal(3, s.kind)
      end
      assert.are.equal("sqlite", attrs(sql.attributes)["db.system.name"])
      assert.are.equal("SELECT", attrs(sql.attributes)["db.operation.name"])
      assert.is_nil(attrs(sql.attributes)["db.query.text"])
      assert.are.equal("0", attrs(proc.attributes)["process.exit.code"])
      c:close()
    end)

    it("say the statement's text only when asked", function()
      local c = H.session{ plugins = PLUGINS, env = env_for(o.url .. "/status/200", { LUAMCP_OTEL_DB_STATEMENT = "true" }) }
      c:call("work", { url = o.url .. "/hello" })
      local sql = assert(wait_span(o, "SELECT"))
      assert.are.equal("SELECT 1 AS one", attrs(sql.attributes)["db.query.text"])
      c:close()
    end)

    it("end a ctx:span whose function raised in error", function()
      local c = H.session{ plugins = PLUGINS, env = env_for(o.url .. "/status/200") }
      c:call("raises", {})
      local s = assert(wait_span(o, "doomed"))
      assert.are.equal(2, s.status.code)
      assert.are.equal("error", attrs(s.attributes)["error.type"])
      assert.matches("it broke", s.status.message)
      c:close()
    end)

    it("carry the context to an upstream MCP server in _meta, naming the CLIENT span", function()
      local conn = { command = { H.binary(), "--plugins", H.fixtures .. "/upstream" }, name = "up" }
      local c = H.session{ plugins = { "spec/fixtures/client_tools" }, env = env_for(o.url .. "/status/200") }
      c:request("tools/call", { name = "call", arguments = { conn = conn, tool = "echo", args = { text = "hi" } },
                                _meta = { traceparent = TP } })
      local gw, spans
      assert.truthy(H.poll_until(function()
        spans = spans_of(o)
        gw = OH.find(spans, "tools/call call")
        local n = 0
        for _, s in ipairs(spans) do if s.name == "tools/call echo" then n = n + 1 end end
        return gw and n == 2
      end, 5))
      local client, upstream
      for _, s in ipairs(spans) do
        if s.name == "tools/call echo" and s.kind == 3 then client = s end
        if s.name == "tools/call echo" and s.kind == 2 then upstream = s end
      end
      assert.are.equal(TRACE, gw.traceId)
      assert.are.equal(gw.spanId, client.parentSpanId)
      assert.are.equal("echo", attrs(client.attributes)["gen_ai.tool.name"])
      assert.are.equal("pipe", attrs(client.attributes)["network.transport"])
      assert.are.equal(TRACE, upstream.traceId)
      assert.are.equal(client.spanId, upstream.parentSpanId)
      c:close()
    end)

    it("end the waits a cancel interrupted with it", function()
      local c = H.session{ plugins = PLUGINS, env = env_for(o.url .. "/status/200") }
      local id = c.next_id
      c.next_id = id + 1
      c:send{ jsonrpc = "2.0", id = id, method = "tools/call",
              params = { name = "fetch", arguments = { url = o.url .. "/silent" } } }
      assert.truthy(H.poll_until(function() return #o:conns_of("/silent") > 0 end, 5))
      c:send(H.cancel_msg(id, "changed my mind"))
      local server = assert(wait_span(o, "tools/call fetch"))
      local get = assert(wait_span(o, "GET"))
      assert.are.equal(server.spanId, get.parentSpanId)
      assert.are.equal("cancelled", attrs(get.attributes)["error.type"])
      assert.are.equal("cancelled", get.events[1].name)
      assert.are.equal("changed my mind", attrs(get.events[1].attributes).reason)
      assert.is_true(tonumber(get.endTimeUnixNano) <= tonumber(server.endTimeUnixNano))
      c:close()
    end)
  end)

  describe("when the collector fails", function()
    local function counter(text, outcome)
      return tonumber(text:match('luamcp_otel_spans_total{outcome="' .. outcome .. '"} (%d+)'))
    end

    for _, case in ipairs{
      { "is down", function() return "http://127.0.0.1:" .. H.free_port() .. "/v1/traces" end, "failed" },
      { "returns 503", function() return o.url .. "/status/503" end, "failed" },
      { "never answers", function() return o.url .. "/silent" end, "dropped" },
    } do
      it(case[1] .. ": luamcp serves on, the queue stays bounded and the loss is counted", function()
        local port = H.free_port()
        local c = H.session{ args = { "--metrics", "127.0.0.1:" .. port },
                             env = env_for(case[2](), { OTEL_BSP_MAX_QUEUE_SIZE = "20",
                                                        OTEL_EXPORTER_OTLP_TIMEOUT = "30000" }) }
        local t0 = H.now()
        for i = 1, 200 do
          c:send{ jsonrpc = "2.0", id = i, method = "tools/call", params = { name = "echo", arguments = { text = "x" } } }
        end
        for i = 1, 200 do
          local resp = c:take(function(m) return m.id == i end)
          assert.is_table(resp and resp.result, "no answer to " .. i)
        end
        assert.is_true(H.now() - t0 < 5, "served 200 calls in " .. (H.now() - t0) .. " s")
        local text
        assert.truthy(H.poll_until(function()
          text = metrics(port)
          return (counter(text, case[3]) or 0) > 0
        end, 5), text)
        assert.is_true(tonumber(text:match("luamcp_otel_queue_spans (%d+)")) <= 20)
        assert.is_true(counter(text, "dropped") + counter(text, "failed") + counter(text, "exported") +
                       tonumber(text:match("luamcp_otel_queue_spans (%d+)")) <= 200)
        local ping = c:request("ping", {})
        assert.is_table(ping.result)
        c:close()
      end)
    end
  end)
end)
