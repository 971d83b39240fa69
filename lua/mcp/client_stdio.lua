-- The stdio transport of mcp.connect (lua/mcp/client.lua): the upstream is
-- our child (core.proc, src/lua/proc.c), one JSON-RPC message per line on its
-- stdin and stdout; its stderr goes to our log. The child belongs to the
-- connection: stopped (stdin closed, SIGTERM, SIGKILL after 2 s) when the
-- connection ends, and at shutdown by the core.
local core = require "mcp.core"

local S = { name = "stdio" }

local function exit_text(code, signal)
  if signal ~= 0 then return ("was killed by signal %d"):format(signal) end
  return ("exited with code %d"):format(code)
end

function S.open(conn)
  local o, client = conn.client.opts, conn.client
  local proc, err = core.proc {
    argv = o.command, env = o.env, cwd = o.cwd,
    on_line = function(line) conn:on_line(line) end,
    on_stderr = o.stderr ~= "inherit" and function(line)
      core.log_stderr(o.stderr_level or "info", line, client.name)
    end or nil,
    on_exit = function(code, signal) conn:fail("the upstream " .. exit_text(code, signal), "closed") end,
  }
  if not proc then return nil, err end
  conn.proc = proc
  client.pid = proc:pid()
  return true
end

-- A message on its way; false when the child is gone.
function S.send(conn, msg)
  local text, err = core.encode(msg)
  if not text then return nil, "cannot encode the message: " .. tostring(err) end
  if not conn.proc:write(text, "\n") then return nil, "the upstream is gone" end
  return true
end

function S.start(conn, _, msg) return S.send(conn, msg) end
S.notify = S.send

function S.close(conn)
  if conn.proc then conn.proc:stop(2) end
end

-- Notifications come on stdout anyway; a 2026-07-28 upstream sends them on
-- a subscriptions/listen request that stays in flight.
function S.watch(conn)
  if conn.rev2026 then conn:listen() end
end

function S.refresh() end
function S.initialized() end
function S.finish() return true end

return S
