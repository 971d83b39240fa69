-- Tasks (MCP 2025-11-25, basic/utilities/tasks): task-augmented tools/call,
-- tasks/get, tasks/result, tasks/list, tasks/cancel, ttl, taskSupport.
-- Servers run with --test-clock: time moves only when a spec says so.
local H = require "spec.helper"

local FIXTURES = { "spec/fixtures/tasks" }

local function session(extra)
  local args = { "--test-clock", "--log-level", "debug" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  return H.session { plugins = FIXTURES, args = args }
end

local advance, advance_until = H.advance, H.advance_until

-- A task-augmented tools/call: the CreateTaskResult's task.
local function start_task(c, tool, args, ttl, opts)
  local resp = c:request("tools/call", { name = tool, arguments = args or {}, task = { ttl = ttl } }, opts)
  assert(resp.result and resp.result.task, "no task: " .. require("cjson").encode(resp))
  return resp.result.task
end

local function get(c, id) return c:request("tasks/get", { taskId = id }) end

local function status_note(c, id, status)
  return c:wait_notification("notifications/tasks/status", function(p)
    return p.taskId == id and p.status == status
  end)
end

local ISO = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$"

describe("tasks", function()
  after_each(H.cleanup)

  it("declares the tasks capability and each tool's execution.taskSupport", function()
    local c = session()
    assert.are.same({ list = {}, cancel = {}, requests = { tools = { call = {} } } },
                    c.init_result.capabilities.tasks)
    local support = {}
    for _, t in ipairs(c:request("tools/list").result.tools) do
      support[t.name] = t.execution and t.execution.taskSupport or "absent"
    end
    assert.are.same({ slow = "optional", stubborn = "optional", fails = "optional", nil_message = "optional", rpc = "optional",
                      asks = "optional", must = "required",
                      never = "forbidden", plain = "absent" }, support)
  end)

  it("a task-augmented call returns the task at once; the handler runs on", function()
    local c = session()
    local t = start_task(c, "slow", { seconds = 30, tag = "a" }, 60000)
    assert.truthy(t.taskId:match("^%x+$") and #t.taskId == 32, t.taskId)
    assert.are.equal("working", t.status)
    assert.truthy(t.createdAt:match(ISO), t.createdAt)
    assert.truthy(t.lastUpdatedAt:match(ISO), t.lastUpdatedAt)
    assert.are.equal(60000, t.ttl)
    assert.are.equal(1000, t.pollInterval)
    c:expect_stderr("fixture: slow started a", nil, { plain = true })
    local other = start_task(c, "slow", { seconds = 30, tag = "b" }, 60000)
    assert.are_not.equal(t.taskId, other.taskId)
  end)

  it("the handler's logs and progress reach the client, with related-task in _meta", function()
    local c = session()
    local resp = c:request("tools/call", { name = "slow", arguments = { seconds = 30, tag = "m" },
                                          task = { ttl = 60000 }, _meta = { progressToken = "pt" } })
    local id = resp.result.task.taskId
    local log = c:wait_log("^slow started m$")
    assert(log, "no log from the task's handler:\n" .. c:stderr_text())
    assert.are.equal(id, log.params._meta["io.modelcontextprotocol/related-task"].taskId)
    local p = c:wait_notification("notifications/progress", function(q) return q.progressToken == "pt" end)
    assert(p, "no progress from the task's handler")
    assert.are.equal(id, p.params._meta["io.modelcontextprotocol/related-task"].taskId)
  end)

  it("a request to the client makes the task input_required, with related-task; the answer resumes it", function()
    local c = session()
    local t = start_task(c, "asks", {}, 60000)
    local ask = c:take(function(m) return m.method == "test/ask" and m.id ~= nil end)
    assert(ask, "no request to the client:\n" .. c:stderr_text())
    assert.are.equal(t.taskId, ask.params._meta["io.modelcontextprotocol/related-task"].taskId)
    assert.truthy(status_note(c, t.taskId, "input_required"), "no input_required notification")
    local r = get(c, t.taskId).result
    assert.are.equal("input_required", r.status)
    assert.truthy(r.statusMessage:find("test/ask", 1, true), r.statusMessage)
    c:send { jsonrpc = "2.0", id = ask.id, result = { name = "bob" } }
    assert.are.equal("answer bob", c:request("tasks/result", { taskId = t.taskId }).result.content[1].text)
    assert.truthy(status_note(c, t.taskId, "working"), "no notification of working again")
    assert.are.equal("completed", get(c, t.taskId).result.status)
  end)

  it("tasks/get polls the status: working, then completed", function()
    local c = session()
    local t = start_task(c, "slow", { seconds = 10, tag = "p" }, 60000)
    c:expect_stderr("fixture: slow started p", nil, { plain = true })
    local r = get(c, t.taskId).result
    assert.are.equal("working", r.status)
    assert.are.equal(t.taskId, r.taskId)
    advance_until(c, 11, "fixture: slow finished p")
    assert.truthy(status_note(c, t.taskId, "completed"), "no notifications/tasks/status")
    r = get(c, t.taskId).result
    assert.are.equal("completed", r.status)
    assert.are.equal(t.createdAt, r.createdAt)
    local bad = get(c, "0123456789abcdef0123456789abcdef")
    assert.are.equal(-32602, bad.error.code)
  end)

  it("tasks/result blocks until the task is terminal, then returns the tool's result", function()
    local c = session()
    local t = start_task(c, "slow", { seconds = 30, tag = "r" }, 60000)
    c:expect_stderr("fixture: slow started r", nil, { plain = true })
    c:send(H.line { jsonrpc = "2.0", id = 77, method = "tasks/result", params = { taskId = t.taskId } })
    c:no_response(0.5)                 -- blocked while the handler sleeps
    assert.are.equal("working", get(c, t.taskId).result.status)   -- polling goes on meanwhile
    advance_until(c, 31, "fixture: slow finished r")
    local resp = c:take(function(m) return H.is_response(m) and m.id == 77 end)
    assert(resp, "tasks/result never answered:\n" .. c:stderr_text())
    assert.are.equal("slept r", resp.result.content[1].text)
    assert.are.equal(t.taskId, resp.result._meta["io.modelcontextprotocol/related-task"].taskId)
    -- once terminal, at once
    local again = c:request("tasks/result", { taskId = t.taskId })
    assert.are.equal("slept r", again.result.content[1].text)
  end)

  it("an isError result makes the task failed; tasks/result returns that result", function()
    local c = session()
    local t = start_task(c, "fails", {}, 60000)
    local resp = c:request("tasks/result", { taskId = t.taskId })
    assert.is_true(resp.result.isError)
    assert.are.equal("it broke", resp.result.content[1].text)
    local r = get(c, t.taskId).result
    assert.are.equal("failed", r.status)
    assert.are.equal("it broke", r.statusMessage)
  end)

  it("nil, message is a failed task with that isError result; mcp.rpc_error a failed one with the error", function()
    local c = session()
    local t = start_task(c, "nil_message", {}, 60000)
    local resp = c:request("tasks/result", { taskId = t.taskId })
    assert.is_true(resp.result.isError)
    assert.are.equal("no such city", resp.result.content[1].text)
    assert.are.equal("failed", get(c, t.taskId).result.status)
    t = start_task(c, "rpc", {}, 60000)
    resp = c:request("tasks/result", { taskId = t.taskId })
    assert.are.same({ code = -32001, message = "refused", data = { why = "test" } }, resp.error)
    assert.are.equal("failed", get(c, t.taskId).result.status)
  end)

  it("tasks/list pages through the session's tasks", function()
    local c = session { "--page-size", "2" }
    local ids = {}
    for i = 1, 3 do ids[i] = start_task(c, "slow", { seconds = 30, tag = "l" .. i }, 60000).taskId end
    local p1 = c:request("tasks/list", {}).result
    assert.are.equal(2, #p1.tasks)
    assert.are.equal(ids[1], p1.tasks[1].taskId)
    assert.are.equal(ids[2], p1.tasks[2].taskId)
    assert.is_string(p1.nextCursor)
    local p2 = c:request("tasks/list", { cursor = p1.nextCursor }).result
    assert.are.equal(1, #p2.tasks)
    assert.are.equal(ids[3], p2.tasks[1].taskId)
    assert.is_nil(p2.nextCursor)
    assert.are.equal(-32602, c:request("tasks/list", { cursor = "bogus" }).error.code)
  end)

  it("tasks/cancel stops the handler; the task is cancelled before the reply and stays so", function()
    local c = session()
    local t = start_task(c, "slow", { seconds = 30, tag = "c" }, 60000)
    c:expect_stderr("fixture: slow started c", nil, { plain = true })
    c:send(H.line { jsonrpc = "2.0", id = 88, method = "tasks/result", params = { taskId = t.taskId } })
    local resp = c:request("tasks/cancel", { taskId = t.taskId })
    assert.are.equal("cancelled", resp.result.status)
    assert.are.equal(t.taskId, resp.result.taskId)
    c:expect_stderr("fixture: slow stopped c reason=task cancelled", nil, { plain = true })
    c:expect_stderr("request %d+ cancelled: task cancelled")
    assert.are.equal("cancelled", get(c, t.taskId).result.status)
    -- the blocked tasks/result gets an error, never the dropped result
    local waiting = c:take(function(m) return H.is_response(m) and m.id == 88 end)
    assert(waiting and waiting.error, "tasks/result not answered with an error")
    assert.are.equal(-32800, waiting.error.code)
    for _, e in ipairs(c.history) do
      assert.is_nil(e.raw:find("returned after cancel", 1, true), "a cancelled task's result went out")
    end
  end)

  it("a cancelled task stays cancelled even when its handler ignores the cancel and completes", function()
    local c = session()
    local t = start_task(c, "stubborn", { seconds = 5 }, 60000)
    c:expect_stderr("fixture: stubborn started", nil, { plain = true })
    assert.are.equal("cancelled", c:request("tasks/cancel", { taskId = t.taskId }).result.status)
    advance_until(c, 6, "fixture: stubborn finished")
    assert.are.same({}, c:request("ping").result)
    assert.are.equal("cancelled", get(c, t.taskId).result.status)
    assert.are.equal(-32800, c:request("tasks/result", { taskId = t.taskId }).error.code)
  end)

  it("cancelling a task in a terminal status is -32602", function()
    local c = session()
    local t = start_task(c, "slow", { seconds = 0, tag = "done" }, 60000)
    assert.are.equal("slept done", c:request("tasks/result", { taskId = t.taskId }).result.content[1].text)
    local resp = c:request("tasks/cancel", { taskId = t.taskId })
    assert.are.equal(-32602, resp.error.code)
    assert.truthy(resp.error.message:find("completed", 1, true))
    assert.are.equal("completed", get(c, t.taskId).result.status)
    -- and twice: the second cancel finds it cancelled
    local t2 = start_task(c, "slow", { seconds = 30, tag = "twice" }, 60000)
    assert.are.equal("cancelled", c:request("tasks/cancel", { taskId = t2.taskId }).result.status)
    assert.are.equal(-32602, c:request("tasks/cancel", { taskId = t2.taskId }).error.code)
  end)

  it("notifications/cancelled does not cancel a task-augmented request", function()
    local c = session()
    start_task(c, "slow", { seconds = 10, tag = "n" }, 60000, { id = 4242 })
    local t = c:request("tasks/list", {}).result.tasks[1]
    c:expect_stderr("fixture: slow started n", nil, { plain = true })
    c:send(H.cancel_msg(4242, "client gave up"))
    assert.are.same({}, c:request("ping").result)
    assert.are.equal("working", get(c, t.taskId).result.status)
    advance_until(c, 11, "fixture: slow finished n")
    -- its time slice may end between that line and its return
    assert.are.equal("completed", H.until_equal(function() return get(c, t.taskId).result.status end, "completed"))
    assert.are.equal(0, c:count_stderr("slow stopped n", true))
    -- the request id is free again once the task is created
    assert.are.equal("plain done", H.text(c:call("plain", {}, { id = 4242 })))
  end)

  it("a task is freed when its ttl passes; a running one is cancelled", function()
    local c = session()
    local done = start_task(c, "slow", { seconds = 0, tag = "t1" }, 2000)
    assert.truthy(c:request("tasks/result", { taskId = done.taskId }).result)
    local running = start_task(c, "slow", { seconds = 30, tag = "t2" }, 5000)
    c:expect_stderr("fixture: slow started t2", nil, { plain = true })
    advance(c, 3)
    assert.are.equal(-32602, get(c, done.taskId).error.code)
    c:expect_stderr("task " .. done.taskId .. " freed: task expired", nil, { plain = true })
    assert.are.equal("working", get(c, running.taskId).result.status)
    advance(c, 3)
    c:expect_stderr("fixture: slow stopped t2 reason=task expired", nil, { plain = true })
    assert.are.equal(-32602, get(c, running.taskId).error.code)
    assert.are.same({}, c:request("tasks/list", {}).result.tasks)
  end)

  it("at most 1000 tasks per session: a finished one makes room; when all 1000 run, -32603", function()
    local c = session()
    local lines = {}
    for i = 1, 1000 do
      lines[i] = H.line { jsonrpc = "2.0", id = 5000 + i, method = "tools/call",
                          params = { name = "slow", arguments = { seconds = 300 }, task = { ttl = 600000 } } }
    end
    c:send(table.concat(lines))
    local first
    for i = 1, 1000 do
      local m = c:take(function(m) return H.is_response(m) and m.id == 5000 + i end)
      assert(m and m.result and m.result.task, "no task for call " .. i)
      first = first or m.result.task.taskId
    end
    local full = c:request("tools/call", { name = "slow", arguments = { seconds = 0 }, task = { ttl = 1000 } })
    assert.are.equal(-32603, full.error.code)
    assert.are.equal("cancelled", c:request("tasks/cancel", { taskId = first }).result.status)
    c:expect_stderr("request 5001 cancelled: task cancelled", nil, { plain = true })
    c:expect_stderr("request 5001: cancelling -> cancelled", nil, { plain = true })
    local t = start_task(c, "slow", { seconds = 0 }, 1000)
    assert.are.equal(-32602, get(c, first).error.code)             -- evicted
    assert.are.equal(t.taskId, get(c, t.taskId).result.taskId)
  end)

  it("the ttl is capped at 24 hours and defaults to 1 hour", function()
    local c = session()
    assert.are.equal(86400000, start_task(c, "slow", { seconds = 0 }, 1e12).ttl)
    assert.are.equal(3600000, start_task(c, "slow", { seconds = 0 }, nil).ttl)
  end)

  it("taskSupport: required without a task and forbidden with one are -32601", function()
    local c = session()
    assert.are.equal(-32601, c:call("must", {}).error.code)
    assert.are.equal("working", start_task(c, "must", {}, 60000).status)
    for _, name in ipairs { "never", "plain" } do
      local resp = c:request("tools/call", { name = name, arguments = {}, task = { ttl = 1000 } })
      assert.are.equal(-32601, resp.error.code, name)
      assert.are.equal(name .. " done", H.text(c:call(name, {})))
    end
    assert.are.equal("slept x", H.text(c:call("slow", { seconds = 0, tag = "x" })))   -- optional: both
  end)

  it("over HTTP, tasks belong to their session and end with it", function()
    local HH = require "spec.http_helper"
    local ok, err = pcall(function()
      local srv = HH.start { plugins = FIXTURES, args = { "--log-level", "debug" } }
      local a, b = HH.initialize(srv, "2025-11-25"), HH.initialize(srv, "2025-11-25")
      local t = a:rpc("tools/call", { name = "slow", arguments = { seconds = 30, tag = "h" },
                                      task = { ttl = 60000 } }).result.task
      assert.are.equal("working", a:rpc("tasks/get", { taskId = t.taskId }).result.status)
      assert.are.equal(-32602, b:rpc("tasks/get", { taskId = t.taskId }).error.code)
      assert.are.equal(-32602, b:rpc("tasks/cancel", { taskId = t.taskId }).error.code)
      assert.are.same({}, b:rpc("tasks/list", {}).result.tasks)
      srv:expect_stderr("fixture: slow started h", nil, { plain = true })
      assert.are.equal(200, a:delete().status)
      srv:expect_stderr("fixture: slow stopped h reason=session ended", nil, { plain = true })
      srv:expect_stderr("task " .. t.taskId .. " freed: session ended", nil, { plain = true })
    end)
    HH.cleanup()
    assert(ok, err)
  end)

  it("tasks/* are method not found when no tool offers tasks", function()
    local c = H.session { plugins = { "spec/fixtures/paging" } }
    assert.is_nil(c.init_result.capabilities.tasks)
    assert.are.equal(-32601, c:request("tasks/list", {}).error.code)
    assert.are.equal(-32601, c:request("tasks/result", { taskId = "x" }).error.code)
    -- without the capability, params.task is ignored: the call runs normally
    local resp = c:request("tools/call", { name = "page_tool_1", arguments = {}, task = { ttl = 1000 } })
    assert.are.equal("tool 1", H.text(resp))
  end)
end)
