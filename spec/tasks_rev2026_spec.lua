-- The tasks extension (io.modelcontextprotocol/tasks, SEP-2663) for
-- 2026-07-28 requests: capability negotiation, server-directed
-- CreateTaskResult, tasks/get with the outcome or inputRequests inline,
-- tasks/update, tasks/cancel as an ack on the cancellation state machine,
-- notifications/tasks on subscriptions/listen, ttl and the limit per scope,
-- -32021 without the extension, Mcp-Name over HTTP. stdio servers run with
-- --test-clock: time moves only when a spec says so.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local cjson = H.cjson

local FIX = { "spec/fixtures/tasks_rev2026" }
local EXT = "io.modelcontextprotocol/tasks"
local SUB = "io.modelcontextprotocol/subscriptionId"
local ISO = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$"

local TASKS = { extensions = { [EXT] = {} } }
local ASKING = { elicitation = {}, sampling = {}, extensions = { [EXT] = {} } }
local NONE = {}                      -- no capabilities ({} in JSON)

-- params with the 2026-07-28 _meta (and the fields of a _meta it has); caps:
-- the request's client capabilities (default: the tasks extension only).
local function params(p, caps)
  p = p or {}
  return HH.params_rev2026(p, caps or TASKS, p._meta)
end

---------------------------------------------------------------------------
-- stdio

local function server(extra)
  local args = { "--test-clock", "--log-level", "debug" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  return H.start { plugins = FIX, args = args }
end

local advance, advance_until = H.advance, H.advance_until

local function call(c, tool, args, caps, opts)
  return c:request("tools/call", params({ name = tool, arguments = args or {} }, caps), opts)
end

-- A tools/call answered with a task: the CreateTaskResult.
local function start_task(c, tool, args, caps, opts)
  local resp = call(c, tool, args, caps, opts)
  assert(resp.result and resp.result.resultType == "task", "no task: " .. cjson.encode(resp))
  return resp.result
end

local function get(c, id, caps) return c:request("tasks/get", params({ taskId = id }, caps)) end

-- Poll tasks/get until the task has this status (the handler runs between polls).
local function until_status(c, id, status)
  local r
  for _ = 1, 200 do
    r = get(c, id).result
    if r and r.status == status then return r end
    H.pump(0.01)
  end
  error(("task %s never became %s: %s\nstderr:\n%s"):format(id, status, cjson.encode(r), c:stderr_text()), 2)
end

local function keys(t)
  local out = {}
  for k in pairs(t or {}) do out[#out + 1] = k end
  table.sort(out)
  return out
end

describe("tasks extension over stdio", function()
  after_each(H.cleanup)

  it("server/discover declares the extension, not the 2025-11-25 tasks capability", function()
    local c = server()
    local caps = c:request("server/discover", params()).result.capabilities
    assert.are.same({ [EXT] = {} }, caps.extensions)
    assert.is_nil(caps.tasks)
    -- a session client in the same process still gets the 2025-11-25 capability
    c:initialize("2025-11-25")
    assert.are.same({ list = {}, cancel = {}, requests = { tools = { call = {} } } },
                    c.init_result.capabilities.tasks)
  end)

  it("without a tool that offers tasks: no extension, and tasks/get is -32601", function()
    local c = H.start { plugins = { "spec/fixtures/paging" } }
    local caps = c:request("server/discover", params()).result.capabilities
    assert.is_nil(caps.extensions)
    assert.are.equal(-32601, get(c, "0123").error.code)
  end)

  it("a tool with task support answers a declaring request with a flat CreateTaskResult", function()
    local c = server()
    local t = start_task(c, "slow", { seconds = 30, tag = "a" })
    assert.truthy(t.taskId:match("^%x+$") and #t.taskId == 32, t.taskId)
    assert.are.equal("working", t.status)
    assert.truthy(t.createdAt:match(ISO), t.createdAt)
    assert.truthy(t.lastUpdatedAt:match(ISO), t.lastUpdatedAt)
    assert.are.equal(3600000, t.ttlMs)
    assert.are.equal(1000, t.pollIntervalMs)
    for _, k in ipairs { "task", "ttl", "pollInterval", "result", "error", "inputRequests", "requestState" } do
      assert.is_nil(t[k], k)
    end
    -- durably created: tasks/get resolves at once, in the same shape plus resultType complete
    local r = get(c, t.taskId).result
    assert.are.equal("complete", r.resultType)
    assert.are.equal(t.taskId, r.taskId)
    assert.are.equal("working", r.status)
    c:expect_stderr("fixture: slow started a", nil, { plain = true })
  end)

  it("without the extension, the same tool answers synchronously; params.task means nothing", function()
    local c = server()
    local r = call(c, "slow", { seconds = 0, tag = "s" }, NONE).result
    assert.are.equal("complete", r.resultType)
    assert.are.equal("slept s", r.content[1].text)
    assert.is_nil(r.taskId)
    -- the 2025-11-25 task parameter neither creates a task nor is an error
    local legacy = c:request("tools/call", params({ name = "never", arguments = {}, task = { ttl = 1000 } })).result
    assert.are.equal("never done", legacy.content[1].text)
    assert.are.equal("complete", legacy.resultType)
    local ignored = c:request("tools/call", params({ name = "slow", arguments = { seconds = 0, tag = "x" },
                                                      task = { ttl = 5 } }, NONE)).result
    assert.are.equal("slept x", ignored.content[1].text)
  end)

  it("a tool without task support never runs as a task", function()
    local c = server()
    local r = call(c, "never").result
    assert.are.equal("never done", r.content[1].text)
    assert.is_nil(r.taskId)
    assert.are.equal("task=unsupported", call(c, "no_task").result.content[1].text)   -- ctx:task() cannot either
  end)

  it("a task-only tool called without the extension is -32021 with requiredCapabilities", function()
    local c = server()
    local resp = call(c, "must", {}, NONE)
    assert.are.equal(-32021, resp.error.code)
    assert.are.same({ extensions = { [EXT] = {} } }, resp.error.data.requiredCapabilities)
    c:expect_stderr("refused: Missing required client capability", nil, { plain = true })
    assert.are.equal("task", call(c, "must").result.resultType)
  end)

  it("tasks/get shows working, then completed with the result inline as the call would return it", function()
    local c = server()
    local t = start_task(c, "slow", { seconds = 10, tag = "p" })
    c:expect_stderr("fixture: slow started p", nil, { plain = true })
    local r = get(c, t.taskId).result
    assert.are.equal("working", r.status)
    assert.is_nil(r.result)
    advance_until(c, 11, "fixture: slow finished p")
    r = until_status(c, t.taskId, "completed")
    assert.are.same({ resultType = "complete", content = { { type = "text", text = "slept p" } } }, r.result)
    assert.are.equal(t.createdAt, r.createdAt)
    assert.are.equal(-32602, get(c, "0123456789abcdef0123456789abcdef").error.code)
  end)

  it("a tool error is a completed task with isError; a JSON-RPC error a failed one with the error", function()
    local c = server()
    local f = until_status(c, start_task(c, "fails").taskId, "completed")
    assert.is_true(f.result.isError)
    assert.are.equal("it broke", f.result.content[1].text)
    local raised = until_status(c, start_task(c, "raises").taskId, "completed")
    assert.is_true(raised.result.isError)
    assert.truthy(raised.result.content[1].text:find("boom", 1, true))
    local p = until_status(c, start_task(c, "protocol").taskId, "failed")
    assert.are.same({ code = -32000, message = "custom failure", data = { why = "test" } }, p.error)
    assert.are.equal("custom failure", p.statusMessage)
    assert.is_nil(p.result)
    p = until_status(c, start_task(c, "raises_rpc").taskId, "failed")
    assert.are.same({ code = -32001, message = "raised failure" }, p.error)
    assert.is_nil(p.result)
  end)

  it("outside a task, a handler's mcp.rpc_error is the call's JSON-RPC error", function()
    local c = server()
    local resp = call(c, "protocol", {}, NONE)
    assert.are.same({ code = -32000, message = "custom failure", data = { why = "test" } }, resp.error)
    c:initialize("2025-11-25")
    assert.are.equal(-32000, c:request("tools/call", { name = "protocol", arguments = {} }).error.code)
  end)

  it("tasks/cancel is an ack; the handler is cancelled with reason task cancelled and the task stays cancelled", function()
    local c = server()
    local t = start_task(c, "slow", { seconds = 30, tag = "c" })
    c:expect_stderr("fixture: slow started c", nil, { plain = true })
    local ack = c:request("tasks/cancel", params { taskId = t.taskId }).result
    assert.are.same({ resultType = "complete" }, ack)
    c:expect_stderr("fixture: slow stopped c reason=task cancelled", nil, { plain = true })
    c:expect_stderr("request %d+ cancelled: task cancelled")
    local r = get(c, t.taskId).result
    assert.are.equal("cancelled", r.status)
    assert.is_nil(r.result)
    for _, e in ipairs(c.history) do
      assert.is_nil(e.raw:find("returned after cancel", 1, true), "a cancelled task's result went out")
    end
  end)

  it("a task whose handler ignores the cancel completes its work, and stays cancelled", function()
    local c = server()
    local t = start_task(c, "stubborn", { seconds = 5 })
    c:expect_stderr("fixture: stubborn started", nil, { plain = true })
    assert.are.same({ resultType = "complete" }, c:request("tasks/cancel", params { taskId = t.taskId }).result)
    advance(c, 6)
    c:expect_stderr("fixture: stubborn finished", nil, { plain = true })
    c:expect_stderr("result dropped, already cancelled", nil, { plain = true })
    assert.are.equal("cancelled", get(c, t.taskId).result.status)
  end)

  it("cancelling a terminal task is an ack that changes nothing; an unknown task is -32602", function()
    local c = server()
    local t = start_task(c, "slow", { seconds = 0, tag = "done" })
    until_status(c, t.taskId, "completed")
    assert.are.same({ resultType = "complete" }, c:request("tasks/cancel", params { taskId = t.taskId }).result)
    c:expect_stderr("cancel ignored: already completed", nil, { plain = true })
    assert.are.equal("completed", get(c, t.taskId).result.status)
    local resp = c:request("tasks/cancel", params { taskId = "nope" })
    assert.are.equal(-32602, resp.error.code)
    assert.are.equal("Failed to retrieve task: Task not found", resp.error.message)
  end)

  it("notifications/cancelled for the creating request does not reach its task", function()
    local c = server()
    local t = start_task(c, "slow", { seconds = 10, tag = "n" }, nil, { id = 4242 })
    c:expect_stderr("fixture: slow started n", nil, { plain = true })
    c:send(H.cancel_msg(4242, "client gave up"))
    advance_until(c, 11, "fixture: slow finished n")
    -- its time slice may end between that line and its return
    assert.are.equal("completed", H.until_equal(function() return get(c, t.taskId).result.status end, "completed"))
    -- and the id is free again
    assert.are.equal("never done", call(c, "never", {}, nil, { id = 4242 }).result.content[1].text)
  end)

  it("tasks/get, tasks/update and tasks/cancel need the extension (-32021); tasks/result and tasks/list are gone", function()
    local c = server()
    local t = start_task(c, "slow", { seconds = 30 })
    for _, m in ipairs { "tasks/get", "tasks/update", "tasks/cancel" } do
      local resp = c:request(m, params({ taskId = t.taskId, inputResponses = {} }, NONE))
      assert.are.equal(-32021, resp.error.code, m)
      assert.are.same({ extensions = { [EXT] = {} } }, resp.error.data.requiredCapabilities)
    end
    assert.are.equal("working", get(c, t.taskId).result.status)
    for _, m in ipairs { "tasks/result", "tasks/list" } do
      assert.are.equal(-32601, c:request(m, params { taskId = t.taskId }).error.code, m)
    end
  end)

  it("malformed tasks requests are -32602, each with its reason", function()
    local c = server()
    local t = start_task(c, "asks", {}, ASKING)
    local cases = {
      { "tasks/get", { taskId = 7 }, "taskId must be a string" },
      { "tasks/update", { taskId = t.taskId }, "inputResponses must be an object" },
      { "tasks/update", { taskId = t.taskId, inputResponses = { ["input-1"] = 12345 } },
        "inputResponses[\"input-1\"] must be an object" },
      { "tasks/update", { taskId = "nope", inputResponses = {} }, "Task not found" },
    }
    for _, k in ipairs(cases) do
      local resp = c:request(k[1], params(k[2]))
      assert.are.equal(-32602, resp.error.code, k[3])
      assert.truthy(resp.error.message:find(k[3], 1, true), resp.error.message)
      c:expect_stderr(k[3], nil, { plain = true })
    end
    assert.are.equal("input_required", get(c, t.taskId).result.status)   -- untouched
  end)

  it("an elicitation makes the task input_required with inputRequests; tasks/update resumes it", function()
    local c = server()
    local t = start_task(c, "asks", {}, ASKING)
    local r = until_status(c, t.taskId, "input_required")
    assert.are.same({ "input-1" }, keys(r.inputRequests))
    local ir = r.inputRequests["input-1"]
    assert.are.equal("elicitation/create", ir.method)
    assert.are.equal("Your name?", ir.params.message)
    assert.is_nil(ir.params._meta)                  -- no progressToken, no related-task
    assert.truthy(r.statusMessage:find("elicitation/create", 1, true))
    -- polling again shows the same outstanding request
    assert.are.same(r.inputRequests, get(c, t.taskId).result.inputRequests)
    local ack = c:request("tasks/update", params { taskId = t.taskId, inputResponses = {
      ["input-1"] = { action = "accept", content = { name = "Luca" } } } }).result
    assert.are.same({ resultType = "complete" }, ack)
    local done = until_status(c, t.taskId, "completed")
    assert.are.equal("answer Luca", done.result.content[1].text)
    assert.is_nil(done.inputRequests)
    -- nothing was sent to the client as a request of its own
    for _, e in ipairs(c.history) do assert.is_nil(e.msg.method, e.raw) end
  end)

  it("input request keys are unique over the task's life; answered and unknown keys are ignored", function()
    local c = server()
    local t = start_task(c, "twice", {}, ASKING)
    until_status(c, t.taskId, "input_required")
    c:request("tasks/update", params { taskId = t.taskId, inputResponses = {
      ["input-1"] = { action = "accept", content = { v = "one" } } } })
    local r
    for _ = 1, 200 do
      r = get(c, t.taskId).result
      if r.inputRequests and r.inputRequests["input-2"] then break end
      H.pump(0.01)
    end
    assert.are.same({ "input-2" }, keys(r.inputRequests))
    assert.are.equal("Second?", r.inputRequests["input-2"].params.message)
    -- the old key again, and one never issued: ignored (and said so)
    local ack = c:request("tasks/update", params { taskId = t.taskId, inputResponses = {
      ["input-1"] = { action = "accept", content = { v = "stale" } },
      ["made-up"] = { action = "accept", content = {} } } }).result
    assert.are.same({ resultType = "complete" }, ack)
    c:expect_stderr('inputResponses["made-up"] ignored', nil, { plain = true })
    assert.are.equal("input_required", get(c, t.taskId).result.status)
    c:request("tasks/update", params { taskId = t.taskId, inputResponses = {
      ["input-2"] = { action = "accept", content = { v = "two" } } } })
    assert.are.equal("one then two", until_status(c, t.taskId, "completed").result.content[1].text)
  end)

  it("requests outstanding at once can be answered one at a time", function()
    local c = server()
    local t = start_task(c, "both", {}, ASKING)
    local r = until_status(c, t.taskId, "input_required")
    assert.are.same({ "input-1", "input-2" }, keys(r.inputRequests))
    assert.are.equal("sampling/createMessage", r.inputRequests["input-2"].method)
    c:request("tasks/update", params { taskId = t.taskId, inputResponses = {
      ["input-2"] = { role = "assistant", model = "m1", content = { type = "text", text = "yo" } } } })
    r = get(c, t.taskId).result
    assert.are.equal("input_required", r.status)
    assert.are.same({ "input-1" }, keys(r.inputRequests))
    c:request("tasks/update", params { taskId = t.taskId, inputResponses = {
      ["input-1"] = { action = "accept", content = { name = "Ann" } } } })
    assert.are.equal("name=Ann model=m1", until_status(c, t.taskId, "completed").result.content[1].text)
  end)

  it("a task asks only what the request's client capabilities allow, and only input requests", function()
    local c = server()
    local t = start_task(c, "asks", {}, TASKS)      -- no elicitation capability
    local r = until_status(c, t.taskId, "completed")
    assert.truthy(r.result.content[1].text:find("no elicitation capability", 1, true), r.result.content[1].text)
    local o = until_status(c, start_task(c, "odd", {}, ASKING).taskId, "completed")
    assert.truthy(o.result.content[1].text:find("refused: a task can ask the client for", 1, true),
                  o.result.content[1].text)
  end)

  it("a cancel wakes a handler waiting for input, whatever its cancel policy", function()
    local c = server()
    local t = start_task(c, "asks", {}, ASKING)
    until_status(c, t.taskId, "input_required")
    c:request("tasks/cancel", params { taskId = t.taskId })
    c:expect_stderr("fixture: asks got nil: cancelled: task cancelled", nil, { plain = true })
    local r = get(c, t.taskId).result
    assert.are.equal("cancelled", r.status)
    assert.is_nil(r.inputRequests)
    local s = start_task(c, "asks_stubborn", {}, ASKING)
    until_status(c, s.taskId, "input_required")
    c:request("tasks/cancel", params { taskId = s.taskId })
    c:expect_stderr("fixture: asks_stubborn got nil: the task was cancelled", nil, { plain = true })
    c:expect_stderr("fixture: asks_stubborn then got nil: the task has ended", nil, { plain = true })
    -- a late answer changes nothing
    assert.are.same({ resultType = "complete" }, c:request("tasks/update", params { taskId = s.taskId,
      inputResponses = { ["input-1"] = { action = "accept", content = {} } } }).result)
    assert.are.equal("cancelled", get(c, s.taskId).result.status)
  end)

  it("a task's input works under mcp.all, and a cancel wakes it with nil, \"cancelled: <reason>\", \"cancelled\"", function()
    local c = server()
    local t = start_task(c, "asks_all", {}, ASKING)
    local r = until_status(c, t.taskId, "input_required")
    local key = next(r.inputRequests)
    c:request("tasks/update", params { taskId = t.taskId,
      inputResponses = { [key] = { action = "accept", content = { name = "Ada" } } } })
    c:expect_stderr("fixture: asks_all got n=1 table | nil | nil", nil, { plain = true })
    assert.are.equal("answer Ada", until_status(c, t.taskId, "completed").result.content[1].text)
    local s = start_task(c, "asks_all", {}, ASKING)
    until_status(c, s.taskId, "input_required")
    c:request("tasks/cancel", params { taskId = s.taskId })
    c:expect_stderr("fixture: asks_all got n=3 nil | cancelled: task cancelled | cancelled", nil, { plain = true })
  end)

  it("an answer that is not a result of its method reaches the handler as an error", function()
    local c = server()
    local t = start_task(c, "asks", {}, ASKING)
    until_status(c, t.taskId, "input_required")
    c:request("tasks/update", params { taskId = t.taskId, inputResponses = { ["input-1"] = { bogus = 1 } } })
    c:expect_stderr('fixture: asks got nil: the client\'s answer needs an action', nil, { plain = true })
    local done = until_status(c, t.taskId, "completed")
    assert.is_true(done.result.isError)
  end)

  it("a handler whose task expired while it waits for input gets nil at each later input", function()
    local c = server()
    local t = start_task(c, "asks_stubborn", {}, ASKING)
    until_status(c, t.taskId, "input_required")
    advance(c, 3700)
    c:expect_stderr("fixture: asks_stubborn got nil: the task expired", nil, { plain = true })
    -- the next input is not an input-required round of a request long answered
    c:expect_stderr("fixture: asks_stubborn then got nil: the task has ended", nil, { plain = true })
  end)

  it("an input request times out after its timeout; the task works on", function()
    local c = server()
    local t = start_task(c, "asks", { timeout = 5 }, ASKING)
    until_status(c, t.taskId, "input_required")
    advance(c, 6)
    c:expect_stderr("fixture: asks got nil: the client gave no input in time (timeout)", nil, { plain = true })
    local r = until_status(c, t.taskId, "completed")
    assert.are.equal("no answer: the client gave no input in time (timeout)", r.result.content[1].text)
  end)

  it("a task's logs and progress are not sent (the extension has none for tasks)", function()
    local c = server()
    local resp, notes = c:request("tools/call", params({ name = "slow", arguments = { seconds = 0, tag = "q" },
      _meta = { progressToken = "pt", ["io.modelcontextprotocol/logLevel"] = "debug" } }))
    assert.are.equal("task", resp.result.resultType)
    assert.are.same({}, notes)
    until_status(c, resp.result.taskId, "completed")
    c:expect_stderr("a task's message dropped", nil, { plain = true })
    assert.are.same({}, c.notes)
  end)

  it("a tool with defer_task runs synchronously until ctx:task() answers with the task", function()
    local c = server()
    local t = start_task(c, "deferred")
    c:expect_stderr("fixture: deferred sync part", nil, { plain = true })
    c:expect_stderr("fixture: deferred task=" .. t.taskId, nil, { plain = true })
    c:expect_stderr("fixture: deferred again=true", nil, { plain = true })
    advance(c, 2)
    assert.are.equal("deferred done", until_status(c, t.taskId, "completed").result.content[1].text)
    -- without the extension ctx:task() is nil, message, "unsupported" and the call answers itself
    local r = call(c, "deferred", {}, NONE).result
    assert.are.equal("deferred done", r.content[1].text)
    c:expect_stderr("fixture: deferred task=unsupported", nil, { plain = true })
  end)

  it("ctx:task() once the request is cancelled fails as unsupported, and nothing is sent", function()
    local c = server()
    c:send { jsonrpc = "2.0", id = 77, method = "tools/call", params = params { name = "deferred_late", arguments = {} } }
    c:expect_stderr("fixture: late started", nil, { plain = true })
    c:send(H.cancel_msg(77, "no thanks"))
    c:expect_stderr("fixture: late task=unsupported", nil, { plain = true })
    c:no_response(0.3)
  end)

  it("a task is freed when its ttl passes; a running one is cancelled", function()
    local c = server { "--timeout", "0" }          -- no tool timeout: the ttl ends it
    local done = start_task(c, "slow", { seconds = 0, tag = "t1" })
    until_status(c, done.taskId, "completed")
    local running = start_task(c, "slow", { seconds = 7200, tag = "t2" })
    c:expect_stderr("fixture: slow started t2", nil, { plain = true })
    advance(c, 3599)
    assert.are.equal("completed", get(c, done.taskId).result.status)      -- not before its ttl
    advance(c, 2)
    assert.are.equal(-32602, get(c, done.taskId).error.code)
    c:expect_stderr("fixture: slow stopped t2 reason=task expired", nil, { plain = true })
    assert.are.equal(-32602, get(c, running.taskId).error.code)
  end)

  it("at most 1000 tasks per scope: a finished one makes room; when all 1000 run, -32603", function()
    local c = server()
    local lines = {}
    for i = 1, 1000 do
      lines[i] = H.line { jsonrpc = "2.0", id = 5000 + i, method = "tools/call",
                          params = params { name = "slow", arguments = { seconds = 3000 } } }
    end
    c:send(table.concat(lines))
    local first
    for i = 1, 1000 do
      local m = c:take(function(m) return H.is_response(m) and m.id == 5000 + i end)
      assert(m and m.result and m.result.taskId, "no task for call " .. i)
      first = first or m.result.taskId
    end
    local full = call(c, "slow", { seconds = 0 })
    assert.are.equal(-32603, full.error.code)
    assert.truthy(full.error.message:find("at most 1000", 1, true))
    -- the 2025-11-25 tasks of a session on the same stdio are counted apart
    c:initialize("2025-11-25")
    assert.truthy(c:request("tools/call", { name = "slow", arguments = { seconds = 0 }, task = {} }).result.task)
    c:request("tasks/cancel", params { taskId = first })
    c:expect_stderr("request 5001: cancelling -> cancelled", nil, { plain = true })
    local t = start_task(c, "slow", { seconds = 0 })
    assert.are.equal(-32602, get(c, first).error.code)             -- evicted
    assert.are.equal(t.taskId, get(c, t.taskId).result.taskId)
  end)

  it("a 2025-11-25 session and 2026-07-28 requests do not see each other's tasks", function()
    local c = server()
    local modern = start_task(c, "slow", { seconds = 30 })
    c:initialize("2025-11-25")
    local old = c:request("tools/call", { name = "slow", arguments = { seconds = 30 }, task = { ttl = 60000 } })
                 .result.task
    assert.are.equal(-32602, c:request("tasks/get", { taskId = modern.taskId }).error.code)
    assert.are.same({ old.taskId }, (function()
      local ids = {}
      for _, x in ipairs(c:request("tasks/list", {}).result.tasks) do ids[#ids + 1] = x.taskId end
      return ids
    end)())
    assert.are.equal(-32602, get(c, old.taskId).error.code)
    assert.are.equal("working", get(c, modern.taskId).result.status)
  end)

  it("end of input cancels running tasks with reason shutdown", function()
    local c = server()
    start_task(c, "slow", { seconds = 30, tag = "z" })
    c:expect_stderr("fixture: slow started z", nil, { plain = true })
    assert.are.equal(0, c:close())
    c:expect_stderr("fixture: slow stopped z reason=shutdown", nil, { plain = true })
  end)
end)

---------------------------------------------------------------------------
-- Streamable HTTP

-- A 2026-07-28 request on a fresh connection, with the headers the method
-- needs (HH.post_rev2026; headers: overrides, false drops one). Returns the
-- JSON-RPC response and the HTTP response.
local next_id = 0
local function rpc(srv, method, p, headers)
  next_id = next_id + 1
  local r, resp = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = next_id, method = method, params = p },
                           { headers = headers })
  return resp, r
end

local function http_until(srv, id, status)
  local r
  for _ = 1, 300 do
    r = rpc(srv, "tasks/get", params { taskId = id }).result
    if r and r.status == status then return r end
    H.pump(0.01)
  end
  error(("task %s never became %s: %s"):format(id, status, cjson.encode(r)), 2)
end

describe("tasks extension over Streamable HTTP", function()
  local srv
  before_each(function() srv = HH.start { plugins = FIX, args = { "--log-level", "debug" } } end)
  after_each(HH.cleanup)

  it("creates a task, serves tasks/get with Mcp-Name = taskId, and completes it", function()
    local resp, r = rpc(srv, "tools/call", params { name = "slow", arguments = { seconds = 0.2, tag = "h" } })
    assert.are.equal(200, r.status, r:describe())
    assert.are.equal("task", resp.result.resultType)
    local id = resp.result.taskId
    local done = http_until(srv, id, "completed")
    assert.are.equal("slept h", done.result.content[1].text)
  end)

  it("checks Mcp-Name against params.taskId on tasks/get, tasks/update and tasks/cancel (-32020)", function()
    local id = rpc(srv, "tools/call", params { name = "slow", arguments = { seconds = 30 } }).result.taskId
    for _, m in ipairs { "tasks/get", "tasks/update", "tasks/cancel" } do
      for _, bad in ipairs { false, "someone-else", "=?base64?" .. "!!" .. "?=" } do
        local resp, r = rpc(srv, m, params { taskId = id, inputResponses = {} }, { ["Mcp-Name"] = bad })
        assert.are.equal(400, r.status, r:describe())
        assert.are.equal(-32020, resp.error.code, m .. " " .. tostring(bad))
      end
    end
    assert.are.equal("working", rpc(srv, "tasks/get", params { taskId = id }).result.status)
  end)

  it("answers -32021 with HTTP 400, and tasks/result, tasks/list with 404", function()
    local resp, r = rpc(srv, "tools/call", params({ name = "must", arguments = {} }, NONE))
    assert.are.equal(400, r.status, r:describe())
    assert.are.equal(-32021, resp.error.code)
    assert.are.same({ extensions = { [EXT] = {} } }, resp.error.data.requiredCapabilities)
    resp, r = rpc(srv, "tasks/get", params({ taskId = "x" }, NONE))
    assert.are.equal(400, r.status, r:describe())
    assert.are.equal(-32021, resp.error.code)
    for _, m in ipairs { "tasks/result", "tasks/list" } do
      resp, r = rpc(srv, m, params { taskId = "x" })
      assert.are.equal(404, r.status, r:describe())
      assert.are.equal(-32601, resp.error.code)
    end
  end)

  it("a closed connection does not cancel a task: its request was answered with the task", function()
    local r, c = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "tools/call",
                                 params = params { name = "slow", arguments = { seconds = 0.3, tag = "d" } } })
    r:wait_done()
    local id = HH.rpc_response(r).result.taskId
    c:drop()
    assert.truthy(srv:wait_stderr("fixture: slow finished d"), srv:stderr_text())
    assert.are.equal(0, srv:count_stderr("slow stopped d", true))
    assert.are.equal("completed", rpc(srv, "tasks/get", params { taskId = id }).result.status)
  end)

  it("tasks of stateless requests belong to HTTP's stateless requests, not to a session", function()
    local id = rpc(srv, "tools/call", params { name = "slow", arguments = { seconds = 30 } }).result.taskId
    local s = HH.initialize(srv, "2025-11-25")
    assert.are.equal(-32602, s:rpc("tasks/get", { taskId = id }).error.code)
    assert.are.same({}, s:rpc("tasks/list", {}).result.tasks)
    local old = s:rpc("tools/call", { name = "slow", arguments = { seconds = 30 }, task = { ttl = 60000 } }).result.task
    assert.are.equal(-32602, rpc(srv, "tasks/get", params { taskId = old.taskId }).error.code)
    -- any stateless request that holds the id reaches the task (each POST is its own connection here)
    assert.are.equal(id, rpc(srv, "tasks/get", params { taskId = id }).result.taskId)
  end)

  it("subscriptions/listen with taskIds: ack, the current state, then each change, as tasks/get shows it", function()
    local id = rpc(srv, "tools/call", params({ name = "asks", arguments = {} }, ASKING)).result.taskId
    http_until(srv, id, "input_required")
    local r = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 77, method = "subscriptions/listen", params = params {
      notifications = { taskIds = { id, "not-a-task" } } } })
    assert.is_true(r:is_sse(), r:describe())
    local ack = r:next_message()
    assert.are.equal("notifications/subscriptions/acknowledged", ack.method)
    assert.are.same({ id }, ack.params.notifications.taskIds)
    local now = r:next_message()
    assert.are.equal("notifications/tasks", now.method)
    assert.are.equal("input_required", now.params.status)
    assert.are.equal("elicitation/create", now.params.inputRequests["input-1"].method)
    assert.are.equal(77, now.params._meta[SUB])
    rpc(srv, "tasks/update", params { taskId = id, inputResponses = {
      ["input-1"] = { action = "accept", content = { name = "Zoe" } } } })
    local working, done = r:next_message(), r:next_message()
    assert.are.equal("working", working.params.status)
    assert.are.equal("completed", done.params.status)
    assert.are.equal("answer Zoe", done.params.result.content[1].text)
    assert.are.equal(id, done.params.taskId)
    done.params._meta = nil
    local polled = rpc(srv, "tasks/get", params { taskId = id }).result
    polled.resultType = nil
    assert.are.same(polled, done.params)
  end)

  it("subscriptions/listen for task notifications without the extension is -32021", function()
    local resp, r = rpc(srv, "subscriptions/listen", params({ notifications = { taskIds = { "x" } } }, NONE))
    assert.are.equal(400, r.status, r:describe())
    assert.are.equal(-32021, resp.error.code)
    resp, r = rpc(srv, "subscriptions/listen", params { notifications = { taskIds = "x" } })
    assert.are.equal(-32602, resp.error.code, r:describe())
  end)
end)

---------------------------------------------------------------------------
-- plugins/conformance/tasks_rev2026.lua: the fixtures the suite's tasks-* scenarios call

describe("conformance fixtures of the tasks extension", function()
  after_each(H.cleanup)

  local function conf()
    return H.start { plugins = { "plugins/conformance" }, args = { "--log-level", "debug" } }
  end

  it("greet never runs as a task; slow_compute does; failing_job only as one", function()
    local c = conf()
    local g = call(c, "greet", { name = "World" }).result
    assert.are.equal("Hello, World!", g.content[1].text)
    assert.is_nil(g.taskId)
    local t = start_task(c, "slow_compute", { seconds = 0, label = "x" })
    assert.are.equal("computed x in 0 s", until_status(c, t.taskId, "completed").result.content[1].text)
    assert.are.equal(-32021, call(c, "failing_job", {}, NONE).error.code)
    local f = until_status(c, start_task(c, "failing_job").taskId, "completed")
    assert.is_true(f.result.isError)
  end)

  it("protocol_error_job fails its task with a JSON-RPC error", function()
    local c = conf()
    local p = until_status(c, start_task(c, "protocol_error_job").taskId, "failed")
    assert.are.equal(-32603, p.error.code)
    assert.is_nil(p.result)
  end)

  it("confirm_delete asks once and multi_input twice at once, then complete with the answers", function()
    local c = conf()
    local t = start_task(c, "confirm_delete", { filename = "a.txt" }, ASKING)
    local r = until_status(c, t.taskId, "input_required")
    assert.are.same({ "input-1" }, keys(r.inputRequests))
    c:request("tasks/update", params { taskId = t.taskId, inputResponses = {
      ["input-1"] = { action = "accept", content = { confirm = true } } } })
    assert.are.equal("Deleted a.txt", until_status(c, t.taskId, "completed").result.content[1].text)
    local m = start_task(c, "multi_input", {}, ASKING)
    r = until_status(c, m.taskId, "input_required")
    assert.are.same({ "input-1", "input-2" }, keys(r.inputRequests))
    c:request("tasks/update", params { taskId = m.taskId, inputResponses = {
      ["input-1"] = { action = "accept", content = { name = "Bo" } },
      ["input-2"] = { action = "accept", content = { confirm = true } } } })
    assert.are.equal("name=Bo, confirm=true", until_status(c, m.taskId, "completed").result.content[1].text)
  end)
end)
