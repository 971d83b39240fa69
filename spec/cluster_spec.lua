-- Many instances behind HAProxy (deploy/haproxy.cfg;
-- docs/operations/many-instances.md): three luamcp processes and haproxy on loopback, started by
-- spec/cluster_helper.lua. 2025-era sessions stick to the instance that
-- created them (the stick table on Mcp-Session-Id), stateless 2026-07-28
-- requests go round-robin, a killed instance takes only its own sessions and
-- running calls with it, a draining one leaves the rotation while its calls
-- finish. Which instance ran a call: the fixture's `whoami` answers with the
-- instance's pid (spec/fixtures/cluster/).
--
-- haproxy and redis-server must be installed (scripts/deps.sh): without them
-- these specs fail, saying so. The SDK parts need Node (spec/node_helper.lua;
-- LUAMCP_SKIP_NODE=1 makes just those pending).
local C = require "spec.cluster_helper"
local N = require "spec.node_helper"
local H, HH = C.H, C.HH
local uv, cjson = H.uv, H.cjson

local ENV                         -- Node and the SDK v1 scripts (spec/sdk/)

local function read_lines(path)
  local t, f = {}, io.open(path)
  if not f then return t end
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

-- Every instance keeps an access log in the cluster's directory.
local function access_log(cl, i) return cl.dir .. "/access-" .. i .. ".log" end

local function start(opts)
  opts = opts or {}
  local extra = opts.args or {}
  opts.args = function(i, cl)
    local a = { "--access-log", access_log(cl, i) }
    for _, x in ipairs(extra) do a[#a + 1] = x end
    return a
  end
  return C.start(opts)
end

-- pid (text) -> instance index
local function by_pid(cl)
  local t = {}
  for i, s in ipairs(cl.instances) do t[tostring(s.pid)] = i end
  return t
end

local function whoami(s)
  local resp, r = s:call("whoami")
  assert(r.status == 200 and resp and resp.result,
         "whoami: " .. r:describe())
  return resp.result.content[1].text
end

-- A stateless 2026-07-28 tools/call whoami through the front: the pid.
local function whoami26(cl)
  local r, msg = HH.rpc_rev2026(cl.front, { jsonrpc = "2.0", id = 1, method = "tools/call",
                                      params = HH.params_rev2026{ name = "whoami", arguments = {} } })
  assert(r.status == 200 and msg and msg.result, "stateless whoami: " .. r:describe())
  assert.is_nil(r:header("mcp-session-id"))
  return msg.result.content[1].text
end

local function count(list)
  local t = {}
  for _, v in ipairs(list) do t[v] = (t[v] or 0) + 1 end
  return t
end

local function run_node(script, args, vars)
  return N.run(ENV, script, args, vars)
end

describe("many instances behind HAProxy", function()
  after_each(C.cleanup)

  it("stateless 2026-07-28 requests go round-robin over the three instances", function()
    local cl = start()
    local idx = by_pid(cl)
    local pids = {}
    for k = 1, 9 do pids[k] = whoami26(cl) end
    for k = 1, 9 do assert.is_not_nil(idx[pids[k]], "not an instance's pid: " .. pids[k]) end
    -- round-robin: each run of three requests meets the three instances
    for k = 1, 9, 3 do
      local t = count{ pids[k], pids[k + 1], pids[k + 2] }
      for _, s in ipairs(cl.instances) do
        assert.equals(1, t[tostring(s.pid)], "requests " .. k .. ".." .. k + 2 .. ": " .. cjson.encode(pids))
      end
    end
    -- no session: nothing was learned by the stick table
    assert.matches("used:0", cl:admin("show table luamcp"), 1, true)
  end)

  it("an event stream passes through as it comes; GET with Last-Event-ID resumes it on the session's instance", function()
    local cl = start{ args = { "--test-clock", "--timeout", "0" } }
    local idx = by_pid(cl)
    local s = HH.initialize(cl.front)
    local pid = whoami(s)
    local srv = cl.instances[idx[pid]]
    local r, c = s:post(s:req("tools/call", { name = "progress", arguments = { tag = "p", seconds = 1000 },
                                              _meta = { progressToken = "p" } }), { fresh = true })
    local id = s.last_id
    assert.truthy(r:is_sse(), r:describe())
    -- the progress, while the call sleeps (until the clock moves): HAProxy
    -- holds nothing back
    local m, ev = r:next_message()
    assert.equals("notifications/progress", m and m.method, r:describe())
    assert.equals("started " .. pid, m.params.message)
    c:drop()                                    -- the connection goes, the call goes on
    s:notify("notifications/luamcp/advance", { seconds = 2000 })    -- through HAProxy, sticky
    srv:expect_stderr("fixture: progress p done", nil, { plain = true })
    local g = s:get({ last_event_id = ev.id }):wait_done()
    assert.equals(200, g.status, g:describe())
    local msgs = g:messages()
    local last = msgs[#msgs]
    assert.equals(id, last and last.id, g:describe())
    assert.equals("progressed p " .. pid, last.result.content[1].text)
  end)

  it("with --token on every instance: HAProxy's checks need none, every request through it does", function()
    local cl = start{ instances = 2, args = { "--token", "s3cret" } }     -- C.start waited for UP
    local r = HH.post_rev2026(cl.front, { jsonrpc = "2.0", id = 1, method = "tools/list", params = HH.params_rev2026() })
    r:wait_done()
    assert.equals(401, r.status, r:describe())
    local s = HH.initialize(cl.front, nil, { token = "s3cret" })
    assert.is_not_nil(by_pid(cl)[whoami(s)])
    -- only /mcp goes through: the probes and /metrics are the instances' own
    local c = HH.connect(cl.front)
    for _, path in ipairs({ "/metrics", "/readyz", "/healthz", "/" }) do
      assert.equals(404, c:exchange{ method = "GET", path = path }.status, path)
    end
  end)

  it("with --auth-*: the Protected Resource Metadata and the 401 challenge come through HAProxy", function()
    local aud = "https://mcp.example.test/mcp"
    local cl = start{ instances = 2, args = { "--auth-issuer", "http://127.0.0.1:1", "--auth-audience", aud } }
    local c = HH.connect(cl.front)
    for _, path in ipairs({ "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp" }) do
      local r = c:exchange{ method = "GET", path = path }
      assert.equals(200, r.status, path .. ": " .. r:describe())
      assert.equals(aud, r:json().resource, path)
    end
    local r = HH.post_rev2026(cl.front, { jsonrpc = "2.0", id = 1, method = "tools/list", params = HH.params_rev2026() })
    r:wait_done()
    assert.equals(401, r.status, r:describe())
    assert.truthy((r:header("www-authenticate") or ""):find('resource_metadata="', 1, true), r:describe())
  end)

  it("a 2026-07-28 request whose client goes away is cancelled on its instance", function()
    local cl = start{ args = { "--timeout", "0" } }
    local _, c = HH.post_rev2026(cl.front, { jsonrpc = "2.0", id = 1, method = "tools/call",
      params = HH.params_rev2026{ name = "wait", arguments = { tag = "gone", seconds = 1000 } } }, { nowait = true })
    local srv
    H.poll_until(function()
      for _, s in ipairs(cl.instances) do
        if s:count_stderr("fixture: started gone", true) > 0 then srv = s; return true end
      end
    end)
    assert(srv, "no instance started the call:\n" .. cl:logs())
    c:close()                 -- a 2026-07-28 client cancels by closing its request
    srv:expect_stderr("fixture: stopped gone reason=client disconnected", nil, { plain = true })
  end)

  it("a 2026-07-28 input-required retry is accepted by the next instance when all share LUAMCP_STATE_KEY", function()
    local cl = start{ plugins = { "spec/fixtures/cluster", "spec/fixtures/input_required" },
                      env = { LUAMCP_STATE_KEY = "the cluster's key" } }
    local caps = { elicitation = {} }
    local function greet(extra)
      local p = { name = "greet", arguments = {} }
      for k, v in pairs(extra or {}) do p[k] = v end
      local r, msg = HH.rpc_rev2026(cl.front, { jsonrpc = "2.0", id = 1, method = "tools/call",
                                          params = HH.params_rev2026(p, caps) })
      assert(r.status == 200 and msg, r:describe())
      return msg
    end
    local first = greet().result
    assert.equals("input_required", first.resultType)
    local done = greet{ requestState = first.requestState,
                        inputResponses = { name = { action = "accept", content = { name = "Lin" } } } }
    assert.equals("Hello, Lin! (resumed)", done.result and done.result.content[1].text)
    -- the two requests met two instances (round-robin): each logged one greet
    local served, lines = {}, {}
    H.poll_until(function()     -- a log line is written when its request is done: soon after the answer
      served, lines = {}, {}
      for i = 1, 3 do
        for _, l in ipairs(read_lines(access_log(cl, i))) do
          lines[#lines + 1] = l
          if cjson.decode(l).tool == "greet" then served[#served + 1] = i end
        end
      end
      return #served >= 2
    end)
    assert.equals(2, #served, table.concat(lines, "\n"))
    assert.is_true(served[1] ~= served[2])
  end)

  it("the harness restarts redis-server on its port, empty, and an instance on its port", function()
    local cl = start{ redis = true, instances = 2 }
    local function redis(cmd)
      local c = HH.connect(cl.redis.port)
      c:send(cmd .. "\r\n")
      H.run_until(function() return c.raw:find("\r\n", 1, true) ~= nil or c.eof end)
      c:close()
      return c.raw
    end
    assert.equals("+PONG\r\n", redis("PING"))
    assert.equals("+OK\r\n", redis("SET k v"))
    assert.equals("$1\r\nv\r\n", redis("GET k"))
    local old = cl.redis.proc.pid
    cl:restart_redis()
    assert.is_true(old ~= cl.redis.proc.pid)
    assert.equals("$-1\r\n", redis("GET k"))     -- nothing saved
    local pid = cl.instances[2].pid
    cl:kill(2)
    assert.is_true(cl:wait_status(2, "DOWN"))
    cl:restart(2)
    assert.is_true(cl:wait_status(2, "UP"))
    assert.is_true(pid ~= cl.instances[2].pid)
    local seen = count{ whoami26(cl), whoami26(cl) }
    assert.equals(1, seen[tostring(cl.instances[2].pid)])
  end)

  it("a killed instance loses its running calls, and only those; HAProxy's check takes it out", function()
    local cl = start{ args = { "--timeout", "0", "--test-clock" } }
    local idx = by_pid(cl)
    -- three sessions, one on each instance (initialize goes round-robin)
    local sessions, on = {}, {}
    for k = 1, 3 do
      local s = HH.initialize(cl.front)
      s.instance = idx[whoami(s)]
      sessions[k], on[s.instance] = s, s
    end
    for i = 1, 3 do assert.is_not_nil(on[i], "no session on instance " .. i) end
    -- a running call on each (asleep until its instance's clock moves)
    local calls = {}
    for i, s in ipairs(on) do
      local _, c = s:post(s:req("tools/call", { name = "wait", arguments = { tag = "t" .. i, seconds = 1000 } }),
                          { fresh = true, nowait = true })
      calls[i] = c
      cl.instances[i]:expect_stderr("fixture: started t" .. i, nil, { plain = true })
    end
    local victim = 2
    local victim_pid = tostring(cl.instances[victim].pid)
    cl:kill(victim)
    H.run_until(function() return cl.instances[victim].exited end)
    -- its call is lost: no answer comes through (HAProxy says 502, or the
    -- response is cut), never a result
    local r = calls[victim]:response(30)
    if r then
      r:wait_done(30)
      assert.is_nil(r.status == 200 and HH.rpc_response(r) or nil, "the killed instance's call answered")
    end
    -- the others' calls still run, and finish with their instance's result
    for _, i in ipairs({ 1, 3 }) do
      assert.equals(0, cl.instances[i]:count_stderr("fixture: stopped", true))
      on[i]:notify("notifications/luamcp/advance", { seconds = 2000 })
      local ri = assert(calls[i]:response(30), "no answer to the call on instance " .. i)
      local resp = HH.rpc_response(ri, 30)
      assert.equals("slept t" .. i .. " " .. cl.instances[i].pid, resp and resp.result.content[1].text)
    end
    -- the killed instance's session: 404 from the instance the request met
    -- instead (the client must initialize again); the other sessions go on
    -- where they were
    local dead = on[victim]
    local resp, rd = dead:call("whoami")
    assert.equals(404, rd.status, rd:describe())
    assert.equals(-32001, resp and resp.error and resp.error.code)
    for _, i in ipairs({ 1, 3 }) do assert.equals(tostring(cl.instances[i].pid), whoami(on[i])) end
    local ok, last = cl:wait_status(victim, "DOWN")
    assert.is_true(ok, "HAProxy still says " .. tostring(last) .. " for the killed instance")
    -- out of rotation: new sessions and stateless requests meet the other two
    for _ = 1, 4 do
      assert.is_true(whoami26(cl) ~= victim_pid)
      assert.is_true(whoami(HH.initialize(cl.front)) ~= victim_pid)
    end
  end)

  it("a draining instance (SIGTERM, --drain) leaves the rotation while it finishes its calls", function()
    local cl = start{ args = { "--test-clock", "--drain", "60", "--timeout", "0" } }
    local idx = by_pid(cl)
    local s = HH.initialize(cl.front)
    local k = idx[whoami(s)]
    local srv = cl.instances[k]
    -- a connection straight to the instance, opened before the drain (a
    -- draining instance accepts none): the clock is moved through it
    local direct = HH.connect(srv.port)
    local _, c = s:post(s:req("tools/call", { name = "wait", arguments = { tag = "d", seconds = 1000 } }),
                        { fresh = true, nowait = true })
    srv:expect_stderr("fixture: started d", nil, { plain = true })
    srv:kill("sigterm")
    srv:expect_stderr("draining", nil, { plain = true })
    -- the session's new requests go elsewhere at once, to an instance that
    -- does not know the session: 404. On the connection it used before,
    -- HAProxy's server connection is still open and the instance answers
    -- 503 (retried elsewhere: retry-on 503); on a new one, the instance
    -- refuses the connection (retried elsewhere: conn-failure)
    for _, fresh in ipairs({ false, true }) do
      local gone, rg = s:call("whoami", nil, { fresh = fresh })
      assert.equals(404, rg.status, rg:describe())
      assert.equals(-32001, gone and gone.error and gone.error.code)
    end
    local ok, last = cl:wait_status(k, "DOWN")
    assert.is_true(ok, "HAProxy still says " .. tostring(last) .. " for the draining instance")
    -- out of rotation, still running its call
    for _ = 1, 6 do assert.is_true(whoami26(cl) ~= tostring(srv.pid)) end
    assert.is_falsy(srv.exited)
    s:notify("notifications/luamcp/advance", { seconds = 2000 }, { conn = direct })
    local r = assert(c:response(30), "no answer to the draining instance's call")
    local resp = HH.rpc_response(r, 30)
    assert.equals("slept d " .. srv.pid, resp and resp.result.content[1].text, r:describe())
    assert.equals(0, (srv:wait_exit(30)))
    -- back on the same port, back in the rotation
    cl:restart(k)
    assert.is_true(cl:wait_status(k, "UP"))
    local seen = {}
    for _ = 1, 3 do seen[whoami26(cl)] = true end
    assert.is_true(seen[tostring(cl.instances[k].pid)])
  end)

  describe("with the TypeScript SDK v1 client", function()
    if N.skipped then
      pending("skipped: LUAMCP_SKIP_NODE=1 (needs Node 22 and @modelcontextprotocol/sdk from npm)")
      return
    end
    setup(function() ENV = N.prepare("sdk") end)
    teardown(function() N.remove(ENV) end)

    it("a session's every request reaches one instance; sessions spread over all three", function()
      local cl = start()
      local idx = by_pid(cl)
      local rep = run_node("cluster_sessions.mjs", { "6", "20" }, { SDK_TRANSPORT = "http", SDK_URL = cl.url })
      assert.equals(6, #rep.sessions)
      local per_instance = {}
      for _, s in ipairs(rep.sessions) do
        assert.same({}, s.errors, cjson.encode(s.errors))
        table.sort(s.tools)
        assert.same({ "progress", "wait", "whoami" }, s.tools)
        assert.equals(20, #s.pids)
        local i = idx[s.pids[1]]
        assert.is_not_nil(i, "session " .. tostring(s.id) .. ": " .. cjson.encode(s.pids))
        for _, p in ipairs(s.pids) do assert.equals(s.pids[1], p, "session " .. s.id .. " moved") end
        per_instance[i] = (per_instance[i] or 0) + 1
        s.instance = i
      end
      assert.same({ 2, 2, 2 }, per_instance)      -- the initializes went round-robin
      -- the instances' access logs agree: each session's requests are in the
      -- log of its instance only
      for i = 1, 3 do
        local mine = {}
        for _, s in ipairs(rep.sessions) do if s.instance == i then mine[s.id:sub(1, 8)] = true end end
        local lines
        H.poll_until(function()   -- 2 sessions x 20 calls, logged as each is done
          lines = read_lines(access_log(cl, i))
          return #lines >= 40
        end)
        assert.is_true(#lines >= 40, "instance " .. i .. " logged " .. #lines .. " requests")
        for _, l in ipairs(lines) do
          local e = cjson.decode(l)
          assert.is_true(mine[e.session] == true, "instance " .. i .. " served another's session: " .. l)
        end
      end
    end)

    it("a killed instance loses only its sessions: 404, and the SDK client initializes again elsewhere", function()
      local cl = start()
      local idx = by_pid(cl)
      local rep = run_node("cluster_sessions.mjs", { "3", "2" }, { SDK_TRANSPORT = "http", SDK_URL = cl.url })
      local victim = idx[rep.sessions[2].pids[1]]
      local victim_pid = tostring(cl.instances[victim].pid)
      cl:kill(victim)
      H.run_until(function() return cl.instances[victim].exited end)
      local list = {}
      for _, s in ipairs(rep.sessions) do list[#list + 1] = { id = s.id, version = s.version } end
      local back = run_node("cluster_resume.mjs", {}, { SDK_URL = cl.url, CLUSTER_SESSIONS = cjson.encode(list) })
      for k, s in ipairs(back.sessions) do
        local was = rep.sessions[k]
        assert.equals(was.id, s.id)
        if was.pids[1] == victim_pid then
          assert.equals(404, s.error and s.error.code, cjson.encode(s))
          assert.is_string(s.newId)
          assert.is_true(s.newId ~= s.id)
          assert.is_not_nil(idx[s.newPid])
          assert.is_true(s.newPid ~= victim_pid)
        else
          assert.is_nil(s.error, cjson.encode(s))
          assert.same({ was.pids[1], was.pids[1] }, { s.pid, s.again })   -- untouched, where it was
        end
      end
      local ok, last = cl:wait_status(victim, "DOWN")
      assert.is_true(ok, "HAProxy still says " .. tostring(last) .. " for the killed instance")
    end)
  end)
end)
