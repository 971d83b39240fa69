-- mcp.test: test your plugins from busted (or any Lua 5.4 script).
--
-- It runs your plugins in the real luamcp binary, over stdio, with a test
-- clock: the same request table, state machine and scheduler as in
-- production, and timeouts you can move forward instead of waiting for.
--
--   local T = require "mcp.test"
--   local srv = T.start { plugins = { "plugins" } }
--   assert.are.equal("hi", T.text(srv:call("echo", { text = "hi" })))
--   local c = srv:start("count", { n = 100 })      -- a call in flight
--   c:wait_progress(1)
--   c:cancel("enough")
--   assert.is_nil(c:wait())                        -- no response after a cancel
--   srv:stop()
--
-- Needs lua-cjson and lua-luv (both Debian packages). The binary is
-- opts.bin, else $LUAMCP_BIN, else build/luamcp, else luamcp on PATH.
local uv = require "luv"
local cjson = require "cjson"

local M = {}
M.null = cjson.null

local Server, Call = {}, {}
Server.__index, Call.__index = Server, Call

local function exists(path)
  return uv.fs_stat(path) ~= nil
end

local function find_binary(opts)
  if opts.bin then return opts.bin end
  local env = os.getenv("LUAMCP_BIN")
  if env and env ~= "" then return env end
  if exists("build/luamcp") then return "build/luamcp" end
  return "luamcp"
end

-- Run the loop until pred() or the timeout (seconds); true if pred held.
local function run_until(pred, timeout)
  if pred() then return true end
  local done = false
  uv.update_time()    -- the loop's clock stood still while the caller blocked
  local t = uv.new_timer()
  -- uv.stop, or a timer that fires before uv.run("once") polls would leave
  -- that poll waiting for the next event, however late
  t:start(math.floor((timeout or 10) * 1000), 0, function()
    done = true
    uv.stop()
  end)
  while not done and not pred() do uv.run("once") end
  t:stop()
  t:close()
  return pred()
end
M.run_until = run_until

-- The server's environment as uv.spawn takes it: this process's, with the
-- names of env added (a string or number) or removed (false); nil (inherit
-- it as it is) without env.
local function environment(env)
  if env == nil then return nil end
  if type(env) ~= "table" then error("mcp.test: env must be a table of NAME = value", 3) end
  local vars = uv.os_environ()
  for k, v in pairs(env) do
    if type(k) ~= "string" or k == "" or k:find("=", 1, true) then
      error("mcp.test: env: " .. tostring(k) .. " is not a variable name", 3)
    end
    if v == false then
      vars[k] = nil
    elseif type(v) == "string" or type(v) == "number" then
      vars[k] = tostring(v)
    else
      error("mcp.test: env." .. k .. " must be a string, a number or false (got " .. type(v) .. ")", 3)
    end
  end
  local list = {}
  for k, v in pairs(vars) do list[#list + 1] = k .. "=" .. v end
  table.sort(list)
  return list
end

-- opts: plugins = {dir...}, args = {extra flags}, env = {NAME = value |
-- false} (added to this process's environment; false removes a name), bin,
-- timeout (default wait, seconds; 10), version (protocol revision),
-- capabilities (client's).
function M.start(opts)
  opts = opts or {}
  local args = { "--test-clock" }
  local env = environment(opts.env)
  for _, d in ipairs(opts.plugins or { "plugins" }) do
    args[#args + 1] = "--plugins"
    args[#args + 1] = d
  end
  for _, a in ipairs(opts.args or {}) do args[#args + 1] = tostring(a) end
  local s = setmetatable({
    wait = opts.timeout or 10, next_id = 0, calls = {}, logs = {}, stderr = {},
    notifications = {}, out = "", err = "",
  }, Server)
  s.stdin, s.stdout, s.stderr_pipe = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local bin = find_binary(opts)
  s.proc, s.pid = uv.spawn(bin, { args = args, env = env, stdio = { s.stdin, s.stdout, s.stderr_pipe } },
    function(code, signal) s.exit_code, s.exit_signal, s.exited = code, signal, true end)
  if not s.proc then error("mcp.test: cannot start " .. bin .. ": " .. tostring(s.pid), 2) end
  s.stdout:read_start(function(err, data)
    if err or not data then s.eof = true return end
    s.out = s.out .. data
    for line in s.out:gmatch("([^\n]*)\n") do s:_message(line) end
    s.out = s.out:match("[^\n]*$")
  end)
  s.stderr_pipe:read_start(function(err, data)
    if err or not data then return end
    s.err = s.err .. data
    for line in s.err:gmatch("([^\n]*)\n") do s.stderr[#s.stderr + 1] = line end
    s.err = s.err:match("[^\n]*$")
  end)
  local init = s:request("initialize", {
    protocolVersion = opts.version or "2025-11-25",
    capabilities = opts.capabilities or {},
    clientInfo = { name = "mcp.test", version = "1" },
  })
  if not init.result then
    error("mcp.test: initialize failed: " .. cjson.encode(init) .. "\n" .. table.concat(s.stderr, "\n"), 2)
  end
  s.info = init.result
  s:notify("notifications/initialized")
  return s
end

function Server:_message(line)
  local ok, m = pcall(cjson.decode, line)
  if not ok then return end
  if m.id ~= nil and m.method == nil then          -- a response
    local c = self.calls[m.id]
    if c then c.response = m end
    return
  end
  self.notifications[#self.notifications + 1] = m
  local p = m.params or {}
  if m.method == "notifications/progress" then
    local c = self.calls[p.progressToken]
    if c then c.progress[#c.progress + 1] = p end
  elseif m.method == "notifications/message" then
    self.logs[#self.logs + 1] = p
    for _, c in pairs(self.calls) do
      if not c.response then c.logs[#c.logs + 1] = p end
    end
  end
end

function Server:send(msg)
  self.stdin:write(cjson.encode(msg) .. "\n")
end

function Server:notify(method, params)
  self:send { jsonrpc = "2.0", method = method, params = params }
end

-- Send a request; returns its call (not waited for).
function Server:begin(method, params)
  self.next_id = self.next_id + 1
  local c = setmetatable({ server = self, id = self.next_id, progress = {}, logs = {} }, Call)
  self.calls[c.id] = c
  params = params or {}
  if method == "tools/call" then
    params._meta = params._meta or {}
    params._meta.progressToken = c.id
  end
  self:send { jsonrpc = "2.0", id = c.id, method = method, params = params }
  return c
end

-- A request, waited for: the response ({result=...} or {error=...}).
function Server:request(method, params)
  local c = self:begin(method, params)
  local resp = c:wait()
  if resp == nil then error("mcp.test: no response to " .. method .. " within " .. self.wait .. " s", 2) end
  return resp
end

-- A tool call in flight.
function Server:start(tool, args)
  return self:begin("tools/call", { name = tool, arguments = args or {} })
end

-- A tool call, waited for: its result (content, structuredContent, isError).
function Server:call(tool, args)
  local resp = self:start(tool, args):wait()
  if resp == nil then error("mcp.test: no response from tool " .. tool, 2) end
  if resp.error then error("mcp.test: " .. tool .. ": " .. resp.error.message, 2) end
  return resp.result
end

-- Move the server's clock forward: timeouts, graces and sleeps that fall due
-- fire now. Waits until the server has handled it.
function Server:advance(seconds)
  self:notify("notifications/luamcp/advance", { seconds = seconds })
  self:request("ping")
end

-- Pump the loop for a while (seconds), e.g. to let handlers run.
function Server:pump(seconds)
  local t0 = uv.hrtime()
  run_until(function() return uv.hrtime() - t0 >= seconds * 1e9 end, seconds + 1)
end

-- Lines the server wrote on stderr matching a Lua pattern.
function Server:stderr_lines(pattern)
  local out = {}
  for _, l in ipairs(self.stderr) do
    if not pattern or l:find(pattern) then out[#out + 1] = l end
  end
  return out
end

-- End the server (end of input): in-flight calls are cancelled ("shutdown").
-- Returns its exit code.
function Server:stop()
  if not self.stdin:is_closing() then self.stdin:close() end
  run_until(function() return self.exited end, self.wait)
  if not self.exited then self.proc:kill("sigkill") end
  for _, h in ipairs { self.stdout, self.stderr_pipe, self.proc } do
    if not h:is_closing() then h:close() end
  end
  uv.run("nowait")
  return self.exit_code
end

-- The response, waited for (timeout in seconds, default the server's), or
-- nil when none comes (a cancelled call sends none).
function Call:wait(timeout)
  run_until(function() return self.response ~= nil or self.server.exited end,
            timeout or self.server.wait)
  return self.response
end

-- The result of a tools/call, waited for; nil, why when there is none.
function Call:result(timeout)
  local r = self:wait(timeout)
  if r == nil then return nil, "no response" end
  if r.error then return nil, r.error.message, r.error end
  return r.result
end

function Call:cancel(reason)
  self.server:notify("notifications/cancelled", { requestId = self.id, reason = reason })
end

-- Wait until n progress notifications arrived; true if they did.
function Call:wait_progress(n, timeout)
  return run_until(function() return #self.progress >= n end, timeout or self.server.wait)
end

-- Wait for a log message whose data matches a Lua pattern (strings only).
function Call:wait_log(pattern, timeout)
  local found
  run_until(function()
    for _, l in ipairs(self.logs) do
      if type(l.data) == "string" and l.data:find(pattern) then found = l return true end
    end
  end, timeout or self.server.wait)
  return found
end

-- The text of a result's first content item.
function M.text(result)
  local item = result and result.content and result.content[1]
  return item and item.text
end

return M
