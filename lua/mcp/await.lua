-- Waiting on operations (src/core/op.c: HTTP transfers, SQL statements, timers,
-- futures), one at a time or in several functions at once (mcp.all).
--
-- A handler's own coroutine waits in core.await. A function that mcp.all
-- runs is a coroutine of its own: its waits yield (AWAIT, ops) to the
-- mcp.all that runs it, which waits for the ops of all its functions at once
-- (itself, through its parent, when mcp.all is nested).
local core = require "mcp.core"

local M = {}

local AWAIT = setmetatable({}, { __tostring = function() return "mcp.await" end })
local children = setmetatable({}, { __mode = "k" })   -- coroutines mcp.all runs

-- Is the running code a function under mcp.all?
function M.nested() return children[coroutine.running()] == true end

-- Wait until one of ops (a list) is done; returns its index.
local function any(ops)
  if children[coroutine.running()] then return coroutine.yield(AWAIT, ops) end
  return core.await(table.unpack(ops))
end
M.any = any

-- Wait for op; returns its outcome (op:result()).
function M.wait(op)
  local one = { op }
  while not op:done() do any(one) end
  return op:result()
end

-- Sleep that works under mcp.all too (a timer op there; core.sleep, which
-- follows the server's clock, elsewhere). Returns false when cancelled.
-- Its own errors name the caller's line (a C function called from here
-- would name this file).
function M.sleep(seconds)
  local co = coroutine.running()
  if not children[co] then
    if not core.in_request() then
      error("mcp.sleep: not inside a request (a plugin's top level cannot wait)", 2)
    elseif core.nested[co] then
      error("mcp.sleep: call it from the handler's coroutine (or a function of mcp.all), not one it created", 2)
    end
    return core.sleep(seconds)
  end
  if core.cancelled() then return false end
  local ok = M.wait(core.timer(seconds))
  return ok == true
end

local function cancel_all(waits, why)
  for _, w in pairs(waits) do
    for _, op in ipairs(w) do op:cancel(why) end
  end
end

-- Run each function of fns at once; returns the first value each returned,
-- in order. An error in one cancels the waits of the others and is raised.
function M.all(fns)
  local n = #fns
  local cos, results, waits, live = {}, {}, {}, 0

  local function step(i, ...)
    local r = table.pack(coroutine.resume(cos[i], ...))
    waits[i] = nil
    if not r[1] then
      cancel_all(waits, "another function of mcp.all failed")
      error(r[2], 0)
    end
    if coroutine.status(cos[i]) == "dead" then
      results[i] = r[2]
      live = live - 1
    elseif r[2] == AWAIT then
      waits[i] = r[3]
    else
      cancel_all(waits, "another function of mcp.all failed")
      error(("mcp.all: function %d yielded; only waits (ctx:http, mcp.sleep, db:query...) may"):format(i), 0)
    end
  end

  for i = 1, n do
    if type(fns[i]) ~= "function" then error(("mcp.all: item %d is not a function"):format(i), 2) end
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
