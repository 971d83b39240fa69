-- mcp.sqlite: SQLite databases for handlers (src/lua/sqlite.c; README "SQLite").
--
-- A statement runs on libuv's thread pool, one at a time per db, and the
-- handler waits for it as an operation (lua/mcp/await.lua): so it works under
-- mcp.all, and a cancel of the request interrupts it. SQL errors are
-- returned as nil, message, code ("constraint", with "(SQLITE_CONSTRAINT)" at
-- the end of the message...), never raised.
local core = require "mcp.core"
local await = require "mcp.await"
local fail = require "mcp.fail"

local C = core.sqlite

-- C.run gives an op, or nil, "cancelled: ...", "cancelled" once the request
-- is stopped.
local function wait(op, err, code)
  if not op then return nil, err, code end
  return await.wait(op)
end
local Db = C.methods                     -- a db's methods; close and info are C's

local M = { open = C.open, blob = C.blob, version = C.version }

-- {changes =, last_insert_id =}, or nil, message, code. sql may hold
-- several statements (each gets params).
function Db:exec(sql, params)
  return wait(C.run(self, sql, params, "exec"))
end

-- The rows of one statement: a list of tables column name = value (a NULL
-- column is absent), or nil, message, code.
function Db:query(sql, params)
  return wait(C.run(self, sql, params, "query"))
end

-- An iterator over the rows of one statement (all read by one job, then
-- iterated here), or nil, message, code.
function Db:rows(sql, params)
  local rows, err, code = wait(C.run(self, sql, params, "rows"))
  if not rows then return nil, err, code end
  local i = 0
  return function()
    i = i + 1
    return rows[i]
  end
end

local BEGIN = { deferred = "BEGIN DEFERRED", immediate = "BEGIN IMMEDIATE", exclusive = "BEGIN EXCLUSIVE" }

-- BEGIN; fn(db); COMMIT. When fn raises, ROLLBACK and raise again; when it
-- returns nil, err (or COMMIT fails), ROLLBACK and return that. Otherwise
-- fn's values (true when none). While it is open, other requests'
-- statements on this db wait.
function Db:transaction(fn, mode)
  if type(fn) ~= "function" then
    fail.raise(("bad argument #1 to 'transaction' (function expected, got %s)"):format(type(fn)))
  end
  local begin = BEGIN[mode or "deferred"]
  if not begin then
    fail.raise(("bad argument #2 to 'transaction' (deferred, immediate or exclusive expected, got %s)")
          :format(tostring(mode)))
  end
  local ok, err, code = wait(C.run(self, begin, nil, "transaction"))
  if not ok then return nil, err, code end
  local r = table.pack(pcall(fn, self))
  if not r[1] then
    wait(C.run(self, "ROLLBACK", nil, "transaction"))   -- fails when SQLite rolled back already
    error(r[2], 0)
  end
  if r.n >= 3 and r[2] == nil then
    wait(C.run(self, "ROLLBACK", nil, "transaction"))
    return table.unpack(r, 2, r.n)
  end
  ok, err, code = wait(C.run(self, "COMMIT", nil, "transaction"))
  if not ok then
    wait(C.run(self, "ROLLBACK", nil, "transaction"))
    -- a cancel of the request has rolled it back already (src/lua/sqlite.c, tx_cancel)
    if core.cancelled() then return fail.cancelled() end
    return nil, err, code
  end
  if r.n == 1 then return true end
  return table.unpack(r, 2, r.n)
end

return M
