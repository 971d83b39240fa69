-- Waiting on operations (src/core/op.c): every wait of a handler (ctx:sleep,
-- ctx:http, ctx:spawn, ctx:read_file, SQL statements, client calls, input
-- from the client) is an operation of its call, one at a time or in several
-- functions at once (mcp.all).
--
-- A handler's own coroutine waits in the scheduler (core.await, core.wait).
-- A function that mcp.all runs is a coroutine of its own: its waits yield
-- (AWAIT, ops) to the mcp.all that runs it, C functions included
-- (mcp_op_wait), which waits for the ops of all its functions at once
-- (itself, through its parent, when mcp.all is nested). A cancel of the
-- request cancels every op, so each wait returns nil, "cancelled: <reason>",
-- "cancelled".
local core = require "mcp.core"
local fail = require "mcp.fail"

local M = {}

local AWAIT = core.AWAIT                 -- what a function of mcp.all yields to wait
local children = core.all_children       -- the coroutines mcp.all runs (weak keys)

-- Is the running code a function under mcp.all?
function M.nested() return children[coroutine.running()] == true end

-- Wait until one of ops (a list) is done; returns its index.
local function any(ops)
  if children[coroutine.running()] then return coroutine.yield(AWAIT, ops) end
  return core.await(table.unpack(ops))
end
M.any = any

-- Wait for op; returns its outcome (op:result()).
M.wait = core.wait

-- ctx:sleep(seconds): true, or nil, "cancelled: <reason>", "cancelled".
M.sleep = core.sleep

-- Give up on the functions still running (another failed): their waits are
-- cancelled and their coroutines closed, so that their <close> variables
-- run (a client request still in flight upstream is cancelled there).
local function abandon(cos, waits, why)
  for _, w in pairs(waits) do
    for _, op in ipairs(w) do op:cancel(why) end
  end
  for _, co in ipairs(cos) do
    if coroutine.status(co) == "suspended" then coroutine.close(co) end
  end
end

-- Run each function of fns at once; returns one table per function, in
-- order, with every value it returned (table.pack: {n = k, ...}). An error
-- in one cancels the waits of the others, closes them, and is raised.
function M.all(fns)
  if type(fns) ~= "table" then
    fail.raise(("bad argument #1 to 'all' (table expected, got %s)"):format(type(fns)))
  end
  local n = #fns
  local cos, results, waits, live = {}, {}, {}, 0

  local function step(i, ...)
    local r = table.pack(coroutine.resume(cos[i], ...))
    waits[i] = nil
    if not r[1] then
      abandon(cos, waits, "another function of mcp.all failed")
      error(r[2], 0)
    end
    if coroutine.status(cos[i]) == "dead" then
      results[i] = table.pack(table.unpack(r, 2, r.n))
      live = live - 1
    elseif r[2] == AWAIT then
      waits[i] = r[3]
    else
      abandon(cos, waits, "another function of mcp.all failed")
      error(("mcp.all: function %d yielded; only waits (ctx:http, ctx:sleep, db:query...) may"):format(i), 0)
    end
  end

  for i = 1, n do
    if type(fns[i]) ~= "function" then
      fail.raise(("bad argument #1 to 'all' (item %d is not a function)"):format(i))
    end
    cos[i] = coroutine.create(fns[i])
    children[cos[i]] = true
    live = live + 1
  end
  for i = 1, n do step(i) end
  while live > 0 do
    local ops = {}
    for _, w in pairs(waits) do
      for _, op in ipairs(w) do ops[#ops + 1] = op end
    end
    any(ops)
    local ready = {}
    for i, w in pairs(waits) do
      for k, op in ipairs(w) do
        if op:done() then ready[#ready + 1] = { i, k }; break end
      end
    end
    table.sort(ready, function(a, b) return a[1] < b[1] end)
    for _, r in ipairs(ready) do step(r[1], r[2]) end
  end
  return table.unpack(results, 1, n)
end

return M
