-- The shared task store (--store redis://HOST:PORT/DB): redis-server on a
-- free loopback port (its own temporary directory, nothing saved), luamcp
-- instances with --store, and each task operation of the tasks extension
-- across instances, each POST straight to one instance: a task made on A is
-- got, updated and cancelled on B, the cancel stopping A's handler; A killed
-- -> the task failed with a reason on B; subscriptions/listen on B hears A's
-- notifications; Redis killed and restarted under load. Then through HAProxy
-- (deploy/haproxy.cfg, spec/cluster_helper.lua) with the SDK v2 client.
-- redis-server and haproxy are required: the specs fail without them.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local C = require "spec.cluster_helper"
local cjson = H.cjson

local EXT = "io.modelcontextprotocol/tasks"
local TASKS = { extensions = { [EXT] = {} } }
local ASKING = { elicitation = {}, extensions = { [EXT] = {} } }

local function params(p, caps) return HH.params_rev2026(p or {}, caps or TASKS) end

local next_id = 0
local function rpc(srv, method, p, opts)
  next_id = next_id + 1
  local r, resp, c = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = next_id, method = method, params = p }, opts)
  c:close()                            -- polls make many: each on its own connection
  return resp, r
end

local function start_task(srv, tool, args, caps)
  local resp = rpc(srv, "tools/call", params({ name = tool, arguments = args or {} }, caps))
  assert(resp and resp.result and resp.result.resultType == "task", "no task: " .. cjson.encode(resp))
  return resp.result.taskId
end

local function get(srv, id) return rpc(srv, "tasks/get", params { taskId = id }) end

-- Poll tasks/get on srv until the task has this status.
local function until_status(cl, srv, id, status, timeout)
  local last
  local ok = H.poll_until(function()
    last = get(srv, id)
    if last.result ~= nil and last.result.status == status then return true end
    H.pump(0.02)
  end, timeout or H.WAIT)
  if not ok then
    error(("task %s never became %s on %s: %s\n%s"):format(id, status, srv.host, cjson.encode(last),
          cl:logs()), 2)
  end
  return last.result
end

local function cluster(n, extra)
  return C.start {
    instances = n or 2, redis = true, plugins = { "spec/fixtures/tasks_rev2026" },
    args = function(_, cl)
      local a = { "--store", cl.redis.url, "--log-level", "debug" }
      for _, x in ipairs(extra or {}) do a[#a + 1] = x end
      return a
    end,
  }
end

describe("--store: tasks shared through Redis", function()
  after_each(C.cleanup)

  it("a task made on A is got on B, completes there with its result", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "slow", { seconds = 1.5, tag = "shared" })
    local now = get(B, id).result
    assert.are.equal("working", now.status)
    assert.are.equal("complete", now.resultType)
    assert.are.equal(60 * 60 * 1000, now.ttlMs)
    local done = until_status(cl, B, id, "completed")
    assert.are.equal("slept shared", done.result.content[1].text)
    -- A answers the same, from the same record
    local onA = get(A, id).result
    assert.are.same(done, onA)
  end)

  it("a cancel on B stops the handler on A", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "slow", { seconds = 30, tag = "c" })
    assert.is_truthy(A:wait_stderr("fixture: slow started c"))
    local resp = rpc(B, "tasks/cancel", params { taskId = id })
    assert.are.same({ resultType = "complete" }, resp.result)
    -- the record says so at once, on any instance
    local r = get(B, id).result
    assert.are.equal("cancelled", r.status)
    assert.are.equal("The task was cancelled by request.", r.statusMessage)
    assert.is_truthy(A:wait_stderr("fixture: slow stopped c reason=task cancelled"), A:stderr_text())
    assert.is_truthy(A:wait_stderr("cancelled through the store"))
    assert.are.equal("cancelled", get(A, id).result.status)
    -- a second cancel, of a terminal task: an ack, nothing changes
    assert.are.same({ resultType = "complete" }, rpc(A, "tasks/cancel", params { taskId = id }).result)
    assert.are.equal("cancelled", get(B, id).result.status)
  end)

  it("a cancel racing the completion: one outcome wins everywhere, the other is dropped", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    for i = 1, 8 do
      local id = start_task(A, "slow", { seconds = 0.05 * (i % 3), tag = "r" .. i })
      rpc(B, "tasks/cancel", params { taskId = id })
      local final
      H.poll_until(function()
        final = get(B, id).result
        return final.status == "completed" or final.status == "cancelled"
      end)
      assert.is_truthy(final.status == "completed" or final.status == "cancelled", cjson.encode(final))
      H.pump(0.2)
      assert.are.same(final, get(A, id).result)      -- both agree, and it stays
      assert.are.same(final, get(B, id).result)
    end
  end)

  it("tasks/update on B answers the input request of the handler on A", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "asks", {}, ASKING)
    local r = until_status(cl, B, id, "input_required")
    assert.are.equal("elicitation/create", r.inputRequests["input-1"].method)
    local resp = rpc(B, "tasks/update", params { taskId = id, inputResponses = {
      ["input-1"] = { action = "accept", content = { name = "Zoe" } } } })
    assert.are.same({ resultType = "complete" }, resp.result)
    assert.are.equal("answer Zoe", until_status(cl, B, id, "completed").result.content[1].text)
    assert.is_truthy(A:wait_stderr("fixture: asks got accept"))
  end)

  it("unknown tasks are not found on any instance; bad ids are refused", function()
    local cl = cluster(2)
    local B = cl.instances[2]
    local resp = get(B, "0123456789abcdef0123456789abcdef")
    assert.are.equal(-32602, resp.error.code)
    assert.are.equal("Failed to retrieve task: Task not found", resp.error.message)
    assert.are.equal(-32602, rpc(B, "tasks/cancel", params { taskId = "nope" }).error.code)
    assert.are.equal(-32602, rpc(B, "tasks/update", params { taskId = "nope", inputResponses = {} }).error.code)
    -- a 2025-11-25 session's task is its session's, not the stateless scope's
    local s = HH.initialize(B, "2025-11-25")
    local old = s:rpc("tools/call", { name = "slow", arguments = { seconds = 30 }, task = { ttl = 60000 } }).result.task
    assert.are.equal(-32602, get(cl.instances[1], old.taskId).error.code)
    assert.are.equal("working", s:rpc("tasks/get", { taskId = old.taskId }).result.status)
  end)

  it("subscriptions/listen on B hears the notifications of A's task", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "asks", {}, ASKING)
    until_status(cl, A, id, "input_required")
    local r = HH.post_rev2026(B, { jsonrpc = "2.0", id = 77, method = "subscriptions/listen", params = params {
      notifications = { taskIds = { id } } } })
    assert.is_true(r:is_sse(), r:describe())
    local ack = r:next_message()
    assert.are.equal("notifications/subscriptions/acknowledged", ack.method)
    assert.are.same({ id }, ack.params.notifications.taskIds)
    local now = r:next_message()                       -- the state now, from the store
    assert.are.equal("notifications/tasks", now.method)
    assert.are.equal("input_required", now.params.status)
    assert.are.equal(77, now.params._meta["io.modelcontextprotocol/subscriptionId"])
    rpc(A, "tasks/update", params { taskId = id, inputResponses = {
      ["input-1"] = { action = "accept", content = { name = "Ann" } } } })
    local working, done = r:next_message(), r:next_message()
    assert.are.equal("working", working.params.status, cl:logs())
    assert.are.equal("completed", done.params.status)
    assert.are.equal("answer Ann", done.params.result.content[1].text)
    done.params._meta = nil
    local polled = get(B, id).result
    polled.resultType = nil
    assert.are.same(polled, done.params)
  end)

  it("a listener on B hears a task that finished on A while Redis was away, once it is back", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "slow", { seconds = 3, tag = "away" })
    local r = HH.post_rev2026(B, { jsonrpc = "2.0", id = 78, method = "subscriptions/listen", params = params {
      notifications = { taskIds = { id } } } })
    assert.are.equal("notifications/subscriptions/acknowledged", r:next_message().method)
    assert.are.equal("working", r:next_message().params.status)
    cl:kill_redis()
    assert.is_truthy(A:wait_stderr("fixture: slow finished away"))
    cl:restart_redis()
    local done = r:next_message(20)
    assert.are.equal("completed", done and done.params.status, cl:logs())
    assert.are.equal("slept away", done.params.result.content[1].text)
  end)

  it("an instance killed: its running task is failed with the reason, on B", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "slow", { seconds = 60, tag = "k" })
    local done = start_task(A, "slow", { seconds = 0, tag = "kd" })
    until_status(cl, B, done, "completed")
    cl:kill(1)
    H.run_until(function() return A.exited end, 5)
    local r = until_status(cl, B, id, "failed", 20)
    assert.matches("the instance running the task %(.*%) stopped: no heartbeat", r.statusMessage)
    assert.are.equal(-32603, r.error.code)
    assert.are.equal(r.statusMessage, r.error.message)
    -- what A finished stays as it was
    assert.are.equal("slept kd", get(B, done).result.result.content[1].text)
  end)

  it("an instance cut off past its heartbeat: its task fails on B, and it stops the handler when back", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "slow", { seconds = 60, tag = "cut" })
    assert.is_truthy(A:wait_stderr("fixture: slow started cut"))
    A.proc:kill("sigstop")                         -- alive, but silent: its heartbeat expires
    local r = until_status(cl, B, id, "failed", 20)
    assert.matches("stopped: no heartbeat", r.statusMessage)
    A.proc:kill("sigcont")
    assert.is_truthy(A:wait_stderr("the store has it failed"), A:stderr_text())
    assert.is_truthy(A:wait_stderr("fixture: slow stopped cut"), A:stderr_text())
    -- the store's word stands: the task stays failed, on both
    H.pump(1.5)
    assert.are.equal("failed", get(A, id).result.status)
    assert.are.equal("failed", get(B, id).result.status)
  end)

  -- Redis restarted empty: until A is back and has written its tasks again,
  -- B cannot find A's task; "not found" would end the client's wait for it
  it("while Redis refills after a restart, another's task is 'retry' (-32603), not 'not found'", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "slow", { seconds = 1, tag = "refill" })
    H.uv.kill(A.pid, "sigstop")                     -- A cannot come back until SIGCONT
    cl:restart_redis()
    assert.is_truthy(B:wait_stderr("task store redis://.*: connected again"), cl:logs())
    local resp = get(B, id)
    H.uv.kill(A.pid, "sigcont")
    assert.are.equal(-32603, resp.error and resp.error.code, cjson.encode(resp))
    assert.matches("being written again; retry", resp.error.message, 1, true)
    assert.is_truthy(A:wait_stderr("task store redis://.*: connected again"), cl:logs())
    assert.are.equal("slept refill", until_status(cl, B, id, "completed").result.content[1].text)
  end)

  it("Redis killed and restarted under load: precise errors, handlers go on, state comes back", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local ids = {}
    for i = 1, 6 do ids[i] = start_task(A, "slow", { seconds = 2, tag = "l" .. i }) end
    cl:kill_redis()
    -- requests that need the store fail at once, and say why
    local resp = get(B, ids[1])
    assert.are.equal(-32603, resp.error.code)
    assert.matches("task store unavailable", resp.error.message)
    assert.are.equal(-32603, rpc(B, "tasks/cancel", params { taskId = ids[2] }).error.code)
    -- tasks are still made (written when the store is back); tools without one answer as ever
    local late = start_task(A, "slow", { seconds = 0.5, tag = "late" })
    assert.are.equal("never done",
                     rpc(B, "tools/call", params { name = "never", arguments = {} }).result.content[1].text)
    assert.is_truthy(A:wait_stderr("task store redis://.*: connect"))
    -- under load: every request is answered (a result, or the store's error), none hangs
    local answered, failed = 0, 0
    for i = 1, 30 do
      local srv = i % 2 == 0 and A or B
      local r = i % 3 == 0 and rpc(srv, "tools/call", params { name = "never", arguments = {} })
                or get(srv, ids[i % 6 + 1])
      answered = answered + 1
      if r.error then
        failed = failed + 1
        assert.are.equal(-32603, r.error.code)
      end
      if i == 10 then cl:restart_redis() end
    end
    assert.are.equal(30, answered)
    assert.is_true(failed >= 6, "requests before the restart fail: " .. failed)
    -- the handlers went on; the restarted (empty) Redis learns every task again
    for i = 1, 6 do
      assert.are.equal("slept l" .. i, until_status(cl, B, ids[i], "completed", 20).result.content[1].text)
    end
    assert.are.equal("slept late", until_status(cl, B, late, "completed").result.content[1].text)
    assert.is_truthy(A:wait_stderr("task store redis://.*: connected again"))
    -- and new tasks work across instances again
    local id = start_task(B, "slow", { seconds = 0, tag = "after" })
    assert.are.equal("slept after", until_status(cl, A, id, "completed").result.content[1].text)
  end)
end)

describe("--store: configuration, stdio, metrics", function()
  after_each(C.cleanup)

  it("takes the store key of --config; reports the store in /metrics", function()
    local cl = cluster(1)
    local dir = H.tmpdir()
    local conf = dir .. "/luamcp.conf"
    local f = assert(io.open(conf, "w"))
    f:write(('return { store = "%s", http = "127.0.0.1:0" }\n'):format(cl.redis.url))
    f:close()
    local srv = HH.start { plugins = { "spec/fixtures/tasks_rev2026" }, args = { "--config", conf } }
    assert.is_truthy(srv:wait_stderr("task store redis://.*: connected"))
    -- a task made on the cluster's instance is known to the one configured by file
    local id = start_task(cl.instances[1], "slow", { seconds = 0, tag = "conf" })
    assert.are.equal("slept conf", until_status(cl, srv, id, "completed").result.content[1].text)
    local c = HH.connect(srv.port)
    local r = c:exchange { method = "GET", path = "/metrics" }
    c:close()
    assert.matches("\nluamcp_task_store_up 1\n", r.body)
    assert.matches("\nluamcp_task_store_commands_total %d+", r.body)
    os.remove(conf)
    os.remove(dir)
  end)

  it("a stdio server's tasks are its own scope: in the store, not visible over HTTP", function()
    local cl = cluster(1)
    local c = H.start { plugins = { "spec/fixtures/tasks_rev2026" }, args = { "--store", cl.redis.url } }
    assert.is_truthy(c:wait_stderr("task store redis://.*: connected"))
    local resp = c:request("tools/call", params { name = "slow", arguments = { seconds = 0, tag = "io" } })
    local id = resp.result.taskId
    local done
    H.poll_until(function()
      done = c:request("tasks/get", params { taskId = id }).result
      if done and done.status == "completed" then return true end
      H.pump(0.02)
    end)
    assert.are.equal("slept io", done.result.content[1].text)
    assert.are.equal(-32602, get(cl.instances[1], id).error.code)
  end)
end)

describe("--store: a Redis that stops answering", function()
  after_each(function()
    C.cleanup()
  end)

  it("is given up after 3 s: requests get the store's error instead of hanging, and it comes back", function()
    local cl = cluster(2)
    local A, B = cl.instances[1], cl.instances[2]
    local id = start_task(A, "slow", { seconds = 1, tag = "stop" })
    cl.redis.proc.proc:kill("sigstop")
    local t0 = H.now()
    local resp = get(B, id)
    local waited = H.now() - t0
    assert.are.equal(-32603, resp.error.code, cjson.encode(resp))
    assert.matches("task store unavailable", resp.error.message)
    assert.is_true(waited < 8, "answered after " .. waited .. " s")   -- 3 s, and a beat to see it
    assert.is_truthy(B:wait_stderr("Redis stopped answering"))
    cl.redis.proc.proc:kill("sigcont")
    assert.are.equal("slept stop", until_status(cl, B, id, "completed", 20).result.content[1].text)
  end)
end)

describe("--store: bad values", function()
  after_each(H.cleanup)

  it("refuses a URL that is not redis://HOST:PORT/DB, and an unknown host, on the command line and in --config", function()
    for _, bad in ipairs { "http://x", "redis://", "redis://h:0/0", "redis://h:99999", "redis://h:1/x",
                           "redis://user:pw@h:1/0" } do
      local c = H.start { args = { "--http", "127.0.0.1:0", "--store", bad } }
      c:wait_exit()
      assert.are.equal(2, c.exit_code, bad .. ": " .. c:stderr_text())
      assert.matches("store", c:stderr_text())
    end
    local dir = H.tmpdir()
    local conf = dir .. "/bad.conf"
    local f = assert(io.open(conf, "w"))
    f:write('return {\n  store = "http://x",\n}\n')
    f:close()
    local cf = H.start { args = { "--config", conf } }
    cf:wait_exit()
    assert.are.equal(2, cf.exit_code)
    assert.matches("bad%.conf:2: bad value for store %(want redis://HOST:PORT/DB%)", cf:stderr_text())
    os.remove(conf)
    os.remove(dir)
    local c = H.start { args = { "--http", "127.0.0.1:0", "--store", "redis://no-such-host.invalid:6379/0" } }
    c:wait_exit()
    assert.are.equal(2, c.exit_code)
    assert.matches("cannot resolve no%-such%-host%.invalid", c:stderr_text())
  end)

  it("starts without Redis and says why tasks cannot be read", function()
    local port = C.free_port()
    local srv = HH.start { plugins = { "spec/fixtures/tasks_rev2026" },
                           args = { "--store", "redis://127.0.0.1:" .. port .. "/3" } }
    assert.is_truthy(srv:wait_stderr("task store redis://127%.0%.0%.1:%d+/3: connect: Connection refused"))
    local resp = get(srv, "x")
    assert.are.equal(-32603, resp.error.code)
    assert.matches("task store unavailable: connect: Connection refused", resp.error.message)
  end)
end)

---------------------------------------------------------------------------
-- Through HAProxy (deploy/haproxy.cfg): the SDK v2 client at 2026-07-28

local N = require "spec.node_helper"

describe("--store behind HAProxy, with the SDK v2 client at 2026-07-28", function()
  local ENV
  setup(function() if not N.skipped then ENV = N.prepare("sdk2") end end)
  teardown(function() if ENV then N.remove(ENV) end end)
  after_each(C.cleanup)

  it("makes a task through HAProxy and cancels it on another instance, which stops the handler", function()
    if N.skipped then pending("LUAMCP_SKIP_NODE=1: needs Node 22 and @modelcontextprotocol/client") return end
    local cl = cluster(3)
    local rep = N.run(ENV, "store_task.mjs", nil, { SDK_URL = cl.url, SDK_REVISION = "2026-07-28" })
    local why = cjson.encode(rep) .. "\n" .. cl:logs()
    assert.is_nil(rep.crashed, why)
    assert.are.equal(cjson.null, rep.error, why)
    assert.are.equal("modern", rep.era, why)
    local created, got, cancel, after = rep.steps[1], rep.steps[2], rep.steps[3], rep.steps[4]
    assert.are.equal("task", created.msg.result.resultType, why)
    local id = created.msg.result.taskId
    assert.are.equal("working", got.msg.result.status, why)
    assert.are.same({ resultType = "complete" }, cancel.msg.result, why)
    assert.are.equal("cancelled", after.msg.result.status, why)
    -- the handler ran on one instance, the cancel arrived on another, and stopped it there
    local runner, canceller
    for i = 1, 3 do
      local text = cl.instances[i]:stderr_text()
      if text:find("fixture: slow started sdk", 1, true) then runner = i end
      if text:find("tasks/cancel " .. id .. ", through the store", 1, true) then canceller = i end
    end
    assert.is_not_nil(runner, why)
    assert.is_not_nil(canceller, why)
    assert.are_not.equal(runner, canceller, why)
    assert.is_truthy(cl.instances[runner]:wait_stderr("fixture: slow stopped sdk reason=task cancelled"), why)
    -- and the client goes on with ordinary calls
    assert.are.equal("never done", rep.after.content[1].text, why)
  end)
end)
