-- Several luamcp instances behind HAProxy (deploy/haproxy.cfg), with a
-- redis-server beside them, all on loopback.
--
--   local C = require "spec.cluster_helper"
--   local cl = C.start{ instances = 3, redis = true,
--                       args = function(i, cl) return { "--store", cl.redis.url } end }
--   local srv = cl.front                 -- HAProxy, as http_helper's servers: HH.initialize(srv)
--   cl:kill(2)                           -- SIGKILL instance 2 (cl:kill(2, "sigterm"): drain)
--   cl:wait_status(2, "DOWN")            -- HAProxy's health check took it out
--   cl:restart(2)                        -- on the same port; cl:wait_status(2, "UP")
--   cl:kill_redis(); cl:restart_redis()  -- same port, empty (--save '')
--   C.cleanup()                          -- after_each: everything stopped, the temp dir gone
--
-- HAProxy runs deploy/haproxy.cfg itself, not a copy: the instances' and the
-- front's addresses go in through the environment (LUAMCP_1.., LUAMCP_BIND),
-- LUAMCP_HAPROXY_DIR selects the unprivileged settings and puts the admin
-- socket in the cluster's temporary directory (cl:stat() reads it).
--
-- haproxy and redis-server are required: without them C.start raises with
-- the fix (scripts/deps.sh installs both); nothing is skipped.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local uv = H.uv

local C = { H = H, HH = HH }

C.CONFIG = H.root .. "/deploy/haproxy.cfg"
C.MAX_INSTANCES = 8            -- the slots LUAMCP_1..LUAMCP_8 of deploy/haproxy.cfg
C.clusters = {}

---------------------------------------------------------------------------
-- Small helpers

-- The path of an executable named name (PATH, then the sbin directories
-- Debian puts haproxy in), or nil.
function C.which(name)
  local path = (os.getenv("PATH") or "") .. ":/usr/sbin:/sbin:/usr/local/sbin"
  for dir in path:gmatch("[^:]+") do
    local p = dir .. "/" .. name
    if uv.fs_access(p, "X") then return p end
  end
  return nil
end

-- The executables or an error naming what is missing and how to get it.
function C.need(names)
  local found, missing = {}, {}
  for _, n in ipairs(names) do
    found[n] = C.which(n)
    if not found[n] then missing[#missing + 1] = n end
  end
  if #missing > 0 then
    error(("the cluster specs need %s, not found in PATH or /usr/sbin: " ..
           "install with `sh scripts/deps.sh` (apt-get install haproxy redis-server)")
          :format(table.concat(missing, " and ")), 0)
  end
  return found
end

C.free_port = H.free_port     -- a TCP port on 127.0.0.1 that was free a moment ago

local function rm_tree(path)
  local st = uv.fs_lstat(path)
  if not st then return end
  if st.type == "directory" then
    local req = uv.fs_scandir(path)
    while req do
      local name = uv.fs_scandir_next(req)
      if not name then break end
      rm_tree(path .. "/" .. name)
    end
    uv.fs_rmdir(path)
  else
    uv.fs_unlink(path)
  end
end
C.rm_tree = rm_tree

---------------------------------------------------------------------------
-- A child process other than luamcp (redis-server, haproxy): its output
-- kept as lines, SIGTERM then SIGKILL to stop it.

local Proc = {}
Proc.__index = Proc

local function spawn(name, bin, args, env)
  local p = setmetatable({ name = name, lines = {}, buf = "" }, Proc)
  local envl
  if env then
    local base = uv.os_environ()
    for k, v in pairs(env) do base[k] = v end
    envl = {}
    for k, v in pairs(base) do envl[#envl + 1] = k .. "=" .. v end
  end
  p.out, p.err = uv.new_pipe(false), uv.new_pipe(false)
  local handle, pid = uv.spawn(bin, { args = args, env = envl, stdio = { nil, p.out, p.err }, cwd = H.root },
    function(code, signal) p.exited, p.code, p.signal = true, code, signal end)
  if not handle then
    p.out:close(); p.err:close()
    error("cannot start " .. bin .. ": " .. tostring(pid), 2)
  end
  p.proc, p.pid, p.open = handle, pid, 2
  local function on_read(err, data)   -- stdout and stderr, as lines, in arrival order
    if err or not data then p.open = p.open - 1; p.eof = p.open == 0; return end
    p.buf = p.buf .. data
    for line in p.buf:gmatch("([^\n]*)\n") do
      if H.verbose then io.stderr:write("  [", name, "] ", line, "\n") end
      p.lines[#p.lines + 1] = line
    end
    p.buf = p.buf:match("[^\n]*$")
  end
  p.out:read_start(on_read)
  p.err:read_start(on_read)
  return p
end

function Proc:text() return table.concat(self.lines, "\n") .. self.buf end

-- Signal it and wait for the exit (SIGKILL after timeout seconds).
function Proc:stop(sig, timeout)
  if not self.exited then
    self.proc:kill(sig or "sigterm")
    if not H.run_until(function() return self.exited end, timeout or 5) then
      self.proc:kill("sigkill")
      H.run_until(function() return self.exited end, 5)
    end
  end
  H.run_until(function() return self.eof end, 2)
  for _, h in ipairs({ self.out, self.err, self.proc }) do
    if not h:is_closing() then h:close() end
  end
  uv.run("nowait")
end

---------------------------------------------------------------------------
-- The cluster

local Cluster = {}
Cluster.__index = Cluster

-- A port taken between C.free_port and the bind (other suites run on the
-- machine too): the process said so and exited.
local function port_taken(text) return text:lower():find("address already in use", 1, true) ~= nil end
local ATTEMPTS = 5

-- redis-server on the cluster's redis port, nothing saved, in the temp dir;
-- another port if that one was taken meanwhile, unless fixed (a restart:
-- the instances know the port).
function Cluster:start_redis(fixed)
  local r = self.redis
  for attempt = 1, ATTEMPTS do
    r.url = "redis://127.0.0.1:" .. r.port .. "/0"
    r.proc = spawn("redis", self.bins["redis-server"], {
      "--port", tostring(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
      "--dir", self.dir, "--daemonize", "no", "--protected-mode", "yes",
    })
    -- its own word, not a connection: on a taken port another process accepts
    local function ready() return r.proc:text():find("Ready to accept connections", 1, true) end
    if H.poll_until(function() return r.proc.exited or ready() end, H.WAIT)
       and not r.proc.exited then
      return
    end
    r.proc:stop("sigkill")
    if fixed or attempt == ATTEMPTS or not port_taken(r.proc:text()) then
      error("redis-server did not start on port " .. r.port .. ":\n" .. r.proc:text(), 2)
    end
    r.port = C.free_port()
  end
end

function Cluster:kill_redis(sig) self.redis.proc:stop(sig or "sigkill") end

function Cluster:restart_redis()
  if not self.redis.proc.exited then self.redis.proc:stop("sigkill") end
  self:start_redis(true)
end

-- The arguments of instance i: --http on its port, the plugins, the
-- cluster's args, then its own (opts.args may be a function(i, cluster)).
function Cluster:instance_args(i)
  local o = self.opts
  local args = { "--http", "127.0.0.1:" .. self.ports[i] }
  local function add(list)
    if type(list) == "function" then list = list(i, self) end
    for _, a in ipairs(list or {}) do args[#args + 1] = tostring(a) end
  end
  add(o.args)
  add(o.instance_args and o.instance_args[i])
  return args
end

-- Start instance i (a spec.helper client, also in H.clients) on its port;
-- another port if that one was taken meanwhile, unless fixed (a restart:
-- HAProxy knows the port).
function Cluster:start_instance(i, fixed)
  local srv
  for attempt = 1, ATTEMPTS do
    srv = H.start{ plugins = self.opts.plugins or { "spec/fixtures/cluster" },
                   args = self:instance_args(i), env = self.opts.env, bin = self.opts.bin }
    if srv:wait_stderr("listening on http://127%.0%.0%.1:%d+/mcp") then break end
    srv:wait_exit(5)
    if fixed or attempt == ATTEMPTS or not port_taken(srv:stderr_text()) then
      error("instance " .. i .. " did not listen on port " .. self.ports[i] .. "; stderr:\n" ..
            srv:stderr_text(), 2)
    end
    self.ports[i] = C.free_port()
  end
  srv.port, srv.host, srv.index = self.ports[i], "127.0.0.1:" .. self.ports[i], i
  srv.close = function(s, timeout)     -- as http_helper's: SIGTERM ends an HTTP server
    s:kill("sigterm")
    return s:wait_exit(timeout)
  end
  self.instances[i] = srv
  return srv
end

-- Stop instance i: SIGKILL by default (crash); "sigterm" drains with --drain.
function Cluster:kill(i, sig)
  self.instances[i]:kill(sig or "sigkill")
end

-- Start instance i again on the same port (after it exited).
function Cluster:restart(i)
  local old = self.instances[i]
  if old and not old.exited then
    old:kill("sigkill")
    H.run_until(function() return old.exited end, 5)
  end
  return self:start_instance(i, true)
end

-- One command on HAProxy's admin socket; its answer.
function Cluster:admin(cmd)
  local pipe, out, done = uv.new_pipe(false), {}, false
  pipe:connect(self.dir .. "/admin.sock", function(err)
    if err then done = true; return end
    pipe:read_start(function(e, data)
      if e or not data then done = true else out[#out + 1] = data end
    end)
    pipe:write(cmd .. "\n")
  end)
  H.run_until(function() return done end, H.WAIT)
  if not pipe:is_closing() then pipe:close() end
  return table.concat(out)
end

-- HAProxy's view of the backend: status ("UP", "DOWN", "MAINT", "UP 1/2"...)
-- of each instance, by index.
function Cluster:stat()
  local out, cols = {}, nil
  for line in self:admin("show stat"):gmatch("[^\n]+") do
    local f = {}
    for v in (line .. ","):gmatch("([^,]*),") do f[#f + 1] = v end
    if line:sub(1, 2) == "# " then
      cols = {}
      f[1] = f[1]:sub(3)
      for k, name in ipairs(f) do cols[name] = k end
    elseif cols and f[cols.pxname] == "luamcp" then
      local i = tonumber((f[cols.svname] or ""):match("^luamcp(%d+)$"))
      if i then out[i] = f[cols.status] end
    end
  end
  return out
end

-- Wait until HAProxy reports instance i as exactly status ("UP" after a
-- passed check; "UP 1/2" is one failed check away from it). Returns true,
-- or false and the last status.
function Cluster:wait_status(i, status, timeout)
  local last
  local ok = H.poll_until(function()
    last = self:stat()[i]
    return last == status
  end, timeout or 30)
  return ok, last
end

-- haproxy -db (foreground) on deploy/haproxy.cfg; another front port if
-- that one was taken meanwhile.
function Cluster:start_haproxy()
  for attempt = 1, ATTEMPTS do
    local env = {
      LUAMCP_HAPROXY_DIR = self.dir,
      LUAMCP_BIND = "127.0.0.1:" .. self.front_port,
    }
    for i = 1, self.n do env["LUAMCP_" .. i] = "127.0.0.1:" .. self.ports[i] end
    self.haproxy = spawn("haproxy", self.bins.haproxy, { "-db", "-f", C.CONFIG }, env)
    -- its admin socket answers once every listener is bound (on a taken
    -- port it exits instead; another process may accept there meanwhile)
    local pid = "Pid: " .. self.haproxy.pid
    local function ready() return self:admin("show info"):find(pid, 1, true) end
    if H.poll_until(function() return self.haproxy.exited or ready() end, H.WAIT)
       and not self.haproxy.exited then
      break
    end
    self.haproxy:stop("sigkill")
    if attempt == ATTEMPTS or not port_taken(self.haproxy:text()) then
      error("haproxy did not start on port " .. self.front_port .. ":\n" .. self.haproxy:text(), 2)
    end
    self.front_port = C.free_port()
  end
  self:set_front()
  for i = 1, self.n do
    local ok, last = self:wait_status(i, "UP")
    if not ok then
      error(("haproxy does not see instance %d UP (%s):\n%s"):format(i, tostring(last),
            self.haproxy:text()), 2)
    end
  end
end

-- Everything stopped, the temporary directory removed. Raises the first
-- problem an instance's cleanup found (a sanitizer report, stdout noise).
function Cluster:stop()
  if self.stopped then return end
  self.stopped = true
  if self.haproxy then self.haproxy:stop("sigterm") end
  local ok, err = pcall(HH.cleanup)              -- connections, then the instances
  if self.redis and self.redis.proc then self.redis.proc:stop("sigterm") end
  rm_tree(self.dir)
  if not ok then error(err, 0) end
end

-- opts: instances (default 3, at most 8), plugins (default
-- spec/fixtures/cluster), args (a list, or function(i, cluster) -> list:
-- every instance's extra args), instance_args ({[i] = list or function}),
-- env, bin, redis (start redis-server first; cl.redis.url is
-- redis://127.0.0.1:PORT/0).
-- Returns the cluster: .front (HAProxy as an http_helper server: .port,
-- .host, .stderr_text()), .url, .instances[i], .ports[i], .dir, .redis.
function C.start(opts)
  opts = opts or {}
  local n = opts.instances or 3
  assert(n >= 1 and n <= C.MAX_INSTANCES, "instances: 1 to " .. C.MAX_INSTANCES)
  local need = { "haproxy" }
  if opts.redis then need[#need + 1] = "redis-server" end
  local cl = setmetatable({
    opts = opts, n = n, bins = C.need(need), instances = {}, ports = {},
    dir = H.tmpdir(), front_port = C.free_port(),
  }, Cluster)
  C.clusters[#C.clusters + 1] = cl
  for i = 1, n do cl.ports[i] = C.free_port() end
  if opts.redis then
    cl.redis = { port = C.free_port() }
    cl:start_redis()
  end
  for i = 1, n do cl:start_instance(i) end
  cl:start_haproxy()
  return cl
end

-- cl.front, cl.url: where clients reach HAProxy.
function Cluster:set_front()
  self.url = "http://127.0.0.1:" .. self.front_port .. "/mcp"
  self.front = {
    port = self.front_port, host = "127.0.0.1:" .. self.front_port,
    stderr_text = function() return self:logs() end,
  }
end

-- Every process's output, for a failure message.
function Cluster:logs()
  local t = { "haproxy:", self.haproxy and self.haproxy:text() or "" }
  for i = 1, self.n do
    local s = self.instances[i]
    t[#t + 1] = ("instance %d (pid %s):"):format(i, s and s.pid or "-")
    t[#t + 1] = s and s:stderr_text() or ""
  end
  if self.redis and self.redis.proc then t[#t + 1] = "redis:"; t[#t + 1] = self.redis.proc:text() end
  return table.concat(t, "\n")
end

-- Stop every cluster started so far (after_each; also when a spec failed).
function C.cleanup()
  local list = C.clusters
  C.clusters = {}
  local first
  for _, cl in ipairs(list) do
    local ok, err = pcall(cl.stop, cl)
    if not ok and not first then first = err end
  end
  if #list == 0 then HH.cleanup() end
  if first then error(first, 0) end
end

C.Cluster = Cluster
return C
