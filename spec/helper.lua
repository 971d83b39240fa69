-- Drives the real luamcp binary over stdio with luv.
--
--   local H = require "spec.helper"
--   local c = H.start{ plugins = { "spec/fixtures/plugins" }, args = { "--log-level", "debug" } }
--   c:initialize("2025-11-25")
--   local resp, notes = c:request("tools/call", { name = "echo", arguments = { text = "hi" } })
--   H.cleanup()   -- in after_each: ends every server this module started
--
-- Every wait drives the uv loop with uv.run("once") under a deadline timer, so
-- nothing here can hang. cjson decodes numbers as floats (14 digits): compare
-- exact ids through the raw line (H.raw_member, opts.raw_id).
local uv = require "luv"
local cjson = require "cjson"

local H = {}

local function script_dir()
  local src = debug.getinfo(1, "S").source:gsub("^@", "")
  local dir = src:match("^(.*)/[^/]*$") or "."
  if dir:sub(1, 1) ~= "/" then dir = uv.cwd() .. "/" .. dir end
  return dir
end

H.spec_dir = script_dir()
H.spec_dir = H.spec_dir:gsub("/%./", "/")
H.root = H.spec_dir:gsub("/spec$", "")
H.fixtures = H.spec_dir .. "/fixtures"
H.verbose = os.getenv("LUAMCP_SPEC_VERBOSE") ~= nil
-- Default waits: generous, they only run out when something is wrong.
H.WAIT = tonumber(os.getenv("LUAMCP_SPEC_WAIT") or "") or 10
-- The window in which "nothing arrives" is checked.
H.QUIET = tonumber(os.getenv("LUAMCP_SPEC_QUIET") or "") or 0.3

local function abspath(p)
  if p:sub(1, 1) == "/" then return p end
  return H.root .. "/" .. p
end

function H.binary()
  local bin = os.getenv("LUAMCP_BIN") or "build/luamcp"
  return abspath(bin)
end

-- A client that writes to a closed pipe must not be killed by SIGPIPE.
local sigpipe = uv.new_signal()
sigpipe:start("sigpipe", function() end)
sigpipe:unref()

H.clients = {}

local function now() return uv.hrtime() / 1e9 end
H.now = now

-- Run the loop until pred() is true or timeout seconds pass. Returns pred().
-- pred is called until it returns true, and never again after that.
function H.run_until(pred, timeout)
  if pred() then return true end
  local expired, done = false, false
  -- the loop's clock stands still while the spec blocks (io.popen, os.execute:
  -- npm installing Node on a first run took longer than the next wait, whose
  -- timer then was due at once)
  uv.update_time()
  local t = uv.new_timer()
  -- uv.stop: a timer that fires before the poll of uv.run("once") would not
  -- end that poll, which then waits for the next event however late (a
  -- server busy elsewhere for 30 s kept a 0.004 s pump waiting 30 s)
  t:start(math.max(0, math.floor((timeout or H.WAIT) * 1000)), 0, function()
    expired = true
    uv.stop()
  end)
  while not done and not expired do
    uv.run("once")
    done = pred() and true or false
  end
  t:stop()
  t:close()
  return done
end

-- Run the loop for seconds (used only where a delay is the point: a split write,
-- a window in which nothing may arrive).
function H.pump(seconds)
  H.run_until(function() return false end, seconds)
end

-- A new empty directory of the spec's own (mode 0700); the caller removes it.
-- mkdtemp makes it in one call and needs no descriptor (os.tmpname opens a
-- file first: a late spec of a full ASan run once got "unable to generate a
-- unique filename" from it).
function H.tmpdir()
  return assert(uv.fs_mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/luamcp-spec-XXXXXX"))
end

-- A file's whole text, or nil and io.open's message.
function H.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("a")
  f:close()
  return s
end

-- Write text as the whole of the file at path.
function H.write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- Replace a file's text as editors do: write beside it, then rename (a
-- watcher sees one change).
function H.edit_file(path, text)
  H.write_file(path .. ".tmp", text)
  assert(os.rename(path .. ".tmp", path))
end

-- Remove a plugin directory of the spec's own: its files, its lib/, itself.
function H.rmdir(dir)
  for _, sub in ipairs { dir .. "/lib", dir } do
    local req = uv.fs_scandir(sub)
    while req do
      local name = uv.fs_scandir_next(req)
      if not name then break end
      os.remove(sub .. "/" .. name)
    end
    uv.fs_rmdir(sub)
  end
end

-- run_until for a condition no event announces: checked every 20 ms.
function H.poll_until(pred, timeout)
  local t = uv.new_timer()
  t:start(20, 20, function() end)
  local ok = H.run_until(pred, timeout)
  t:stop(); t:close()
  return ok
end

-- Calls f (which may wait itself, e.g. for a request's answer) every 10 ms
-- until it returns want, for at most timeout seconds (H.WAIT). Returns the
-- A TCP port on 127.0.0.1 that was free a moment ago.
function H.free_port()
  local t = uv.new_tcp()
  assert(t:bind("127.0.0.1", 0))
  local port = t:getsockname().port
  t:close()
  uv.run("nowait")
  return port
end

-- last value f returned.
function H.until_equal(f, want, timeout)
  local deadline, v = H.now() + (timeout or H.WAIT)
  repeat
    v = f()
    if v == want then return v end
    H.pump(0.01)
  until H.now() > deadline
  return v
end

-- How many stderr lines of c contain text (plain), counted incrementally.
function H.stderr_counter(c, text)
  local n, seen = 0, 0
  return function()
    for i = seen + 1, #c.stderr do
      if c.stderr[i]:find(text, 1, true) then n = n + 1 end
    end
    seen = #c.stderr
    return n
  end
end

-- Move a --test-clock server's clock; done when the ping after it is answered.
function H.advance(c, seconds)
  c:send { jsonrpc = "2.0", method = "notifications/luamcp/advance", params = { seconds = seconds } }
  local r = c:request("ping").result                -- the advance is done when ping answers
  assert(type(r) == "table" and next(r) == nil, "the ping after an advance was not answered {}")
end

-- A handler that printed "started" may not be in its sleep yet: on a loaded
-- machine its time slice can end between the two, and an advance that
-- overtakes it moves the clock before the sleep begins. Advance until the
-- line comes (the specs' point is what happens, not in which advance).
function H.advance_until(c, seconds, line)
  for _ = 1, 3 do
    H.advance(c, seconds)
    if c:wait_stderr(line, 2, { plain = true }) then return end
  end
  c:expect_stderr(line, nil, { plain = true })
end

---------------------------------------------------------------------------
-- Raw JSON: the text of a top-level member, so ids are compared exactly.

local function scan_string(s, i)     -- s[i] == '"'; returns the index of the closing quote
  local j = i + 1
  while true do
    local k = s:find('[\\"]', j)
    if not k then error("unterminated string in " .. s) end
    if s:sub(k, k) == "\\" then j = k + 2 else return k end
  end
end

local function scan_value(s, i)      -- returns the index of the value's last character
  local c = s:sub(i, i)
  if c == '"' then return scan_string(s, i) end
  if c == "{" or c == "[" then
    local depth, j = 0, i
    while j <= #s do
      local d = s:sub(j, j)
      if d == '"' then j = scan_string(s, j)
      elseif d == "{" or d == "[" then depth = depth + 1
      elseif d == "}" or d == "]" then
        depth = depth - 1
        if depth == 0 then return j end
      end
      j = j + 1
    end
    error("unterminated value in " .. s)
  end
  local k = s:find("[,}%]%s]", i)
  return (k or #s + 1) - 1
end

-- The exact JSON text of member `name` of the object in `line`, or nil.
function H.raw_member(line, name)
  local i = line:find("%S")
  if not i or line:sub(i, i) ~= "{" then return nil end
  i = i + 1
  local function ws() i = line:find("[^ \t\r\n]", i) or #line + 1 end
  while true do
    ws()
    local c = line:sub(i, i)
    if c == "}" or c == "" then return nil end
    if c ~= '"' then return nil end
    local kend = scan_string(line, i)
    local ok, key = pcall(cjson.decode, line:sub(i, kend))
    i = kend + 1
    ws()
    if line:sub(i, i) ~= ":" then return nil end
    i = i + 1
    ws()
    local vend = scan_value(line, i)
    if ok and key == name then return line:sub(i, vend) end
    i = vend + 1
    ws()
    if line:sub(i, i) == "," then i = i + 1 end
  end
end

-- The JSON text of an id given as a Lua value: integers exactly, strings quoted.
function H.id_text(id)
  if type(id) == "string" then return cjson.encode(id) end
  if math.type(id) == "integer" then return string.format("%d", id) end
  if math.type(id) == "float" and id == math.floor(id) and math.abs(id) < 2^53 then
    return string.format("%d", math.tointeger(id))
  end
  return cjson.encode(id)
end

---------------------------------------------------------------------------
-- Client

local Client = {}
Client.__index = Client

local function split_lines(buf, data, on_line)
  buf = buf .. data
  while true do
    local nl = buf:find("\n", 1, true)
    if not nl then break end
    on_line(buf:sub(1, nl - 1))
    buf = buf:sub(nl + 1)
  end
  return buf
end

-- opts: plugins = {dir...} (default spec/fixtures/plugins), args = {...}, env = {K=V},
--       bin = path, cwd = dir, no_plugins = true (no --plugins at all)
function H.start(opts)
  opts = opts or {}
  local args = {}
  if not opts.no_plugins then
    for _, d in ipairs(opts.plugins or { "spec/fixtures/plugins" }) do
      args[#args + 1] = "--plugins"
      args[#args + 1] = abspath(d)
    end
  end
  for _, a in ipairs(opts.args or {}) do args[#args + 1] = tostring(a) end

  local c = setmetatable({
    inbox = {},          -- {msg=, raw=} not consumed yet
    history = {},        -- every stdout message, in order
    notes = {},          -- every notification, in order
    bad_lines = {},      -- stdout lines that are not JSON-RPC
    stderr = {},         -- stderr lines
    next_id = 1000,
    out_buf = "", err_buf = "",
    args = args,
  }, Client)

  c.stdin = uv.new_pipe(false)
  c.stdout = uv.new_pipe(false)
  c.stderr_pipe = uv.new_pipe(false)

  local env
  if opts.env then
    env = {}
    local base = opts.bare_env and {} or uv.os_environ()   -- bare_env: opts.env only (env -i)
    for k, v in pairs(opts.env) do base[k] = v end
    for k, v in pairs(base) do env[#env + 1] = k .. "=" .. v end
  end

  local bin = opts.bin or H.binary()
  local handle, pid_or_err = uv.spawn(bin, {
    args = args,
    stdio = { c.stdin, c.stdout, c.stderr_pipe },
    env = env,
    cwd = opts.cwd or H.root,
  }, function(code, signal)
    c.exit_code, c.exit_signal, c.exited = code, signal, true
  end)
  if not handle then
    c.stdin:close(); c.stdout:close(); c.stderr_pipe:close()
    error("cannot start " .. bin .. ": " .. tostring(pid_or_err) ..
          " (set LUAMCP_BIN to the luamcp binary)", 2)
  end
  c.proc, c.pid = handle, pid_or_err
  c.started_at = now()
  H.clients[#H.clients + 1] = c

  c.out_cb = function(err, data)
    if err or not data then c.stdout_eof = true; return end
    c.out_buf = split_lines(c.out_buf, data, function(line) c:_on_stdout(line) end)
  end
  c.stdout:read_start(c.out_cb)
  c.stderr_pipe:read_start(function(err, data)
    if err or not data then c.stderr_eof = true; return end
    c.err_buf = split_lines(c.err_buf, data, function(line)
      if H.verbose then io.stderr:write("  [", c.pid, " err] ", line, "\n") end
      c.stderr[#c.stderr + 1] = line
    end)
  end)
  return c
end

-- start + initialize + notifications/initialized
function H.session(opts)
  opts = opts or {}
  local c = H.start(opts)
  c:initialize(opts.version)
  return c
end

function Client:_on_stdout(line)
  if H.verbose then io.stderr:write("  [", self.pid, " out] ", line, "\n") end
  local ok, msg = pcall(cjson.decode, line)
  if not ok or type(msg) ~= "table" then
    self.bad_lines[#self.bad_lines + 1] = line
    msg = { _undecodable = true }
  elseif msg[1] == nil and msg.jsonrpc ~= "2.0" then
    self.bad_lines[#self.bad_lines + 1] = line
  end
  local e = { msg = msg, raw = line, seq = #self.history + 1 }
  self.history[#self.history + 1] = e
  self.inbox[#self.inbox + 1] = e
  if type(msg) == "table" and msg.method ~= nil and msg.id == nil then
    self.notes[#self.notes + 1] = msg
  end
end

local function is_notification(m) return type(m) == "table" and m.method ~= nil and m.id == nil end
local function is_response(m)
  return type(m) == "table" and m[1] == nil and (m.result ~= nil or m.error ~= nil)
end
H.is_notification, H.is_response = is_notification, is_response

-- Send a table (encoded, "\n" appended) or a raw string (as is).
function Client:send(x)
  local data = type(x) == "table" and (cjson.encode(x) .. "\n") or x
  if H.verbose then io.stderr:write("  [", self.pid, " in ] ", (data:gsub("\n$", "")), "\n") end
  if self.stdin_closed then error("stdin already closed", 2) end
  self.stdin:write(data)
end

function Client:alive() return not self.exited end

-- Stop reading the server's stdout (its writes then back up), and start again.
function Client:stop_reading() self.stdout:read_stop() end
function Client:resume_reading() self.stdout:read_start(self.out_cb) end

-- The first unconsumed message for which pred(msg, raw) holds; removed from the
-- inbox. Returns msg, raw or nil, "timeout" / nil, "exited".
function Client:take(pred, timeout)
  local found
  local function scan()
    for i, e in ipairs(self.inbox) do
      if pred(e.msg, e.raw) then
        found = e
        table.remove(self.inbox, i)
        return true
      end
    end
    return self.stdout_eof and self.exited
  end
  H.run_until(scan, timeout or H.WAIT)
  if found then self.last_taken = found; return found.msg, found.raw end
  if self.exited then return nil, "exited" end
  return nil, "timeout"
end

-- The next stdout message, decoded, and its raw line.
function Client:recv(timeout)
  return self:take(function() return true end, timeout)
end

-- Send a request and wait for its response. opts: id (any JSON value), raw_id
-- (exact JSON text of the id), timeout. params may be a table or raw JSON text.
-- Returns the response, the notifications that arrived before it, and the raw line.
function Client:request(method, params, opts)
  opts = opts or {}
  local id = opts.id
  if id == nil and opts.raw_id == nil then
    id = self.next_id
    self.next_id = self.next_id + 1
  end
  local key = opts.raw_id or H.id_text(id)
  local text = '{"jsonrpc":"2.0","id":' .. key .. ',"method":' .. cjson.encode(method)
  if params ~= nil then
    text = text .. ',"params":' .. (type(params) == "string" and params or cjson.encode(params))
  end
  self:send(text .. "}\n")
  local resp, raw = self:take(function(m, r)
    return is_response(m) and H.raw_member(r, "id") == key
  end, opts.timeout)
  if not resp then
    error(("no response to %s (id %s): %s\nstderr:\n%s"):format(method, key, raw,
          table.concat(self.stderr, "\n")), 2)
  end
  -- hand over the notifications that arrived before the response
  local notes, keep = {}, {}
  local seq = self.last_taken.seq
  for _, e in ipairs(self.inbox) do
    if is_notification(e.msg) and e.seq < seq then notes[#notes + 1] = e.msg
    else keep[#keep + 1] = e end
  end
  self.inbox = keep
  return resp, notes, raw
end

-- A notification (method and optional predicate on params); consumed from the
-- inbox. Searches every notification received since index `since` of self.notes
-- (default: from the start), so one that a request() already collected is found too.
function Client:wait_notification(method, pred, timeout, since)
  local found
  local function scan()
    for i = (since or 0) + 1, #self.notes do
      local n = self.notes[i]
      if n.method == method and (pred == nil or pred(n.params or {})) then
        found = n
        return true
      end
    end
    return self.stdout_eof and self.exited
  end
  H.run_until(scan, timeout or H.WAIT)
  if found then
    for i, e in ipairs(self.inbox) do
      if e.msg == found then table.remove(self.inbox, i); break end
    end
    return found
  end
  return nil, self.exited and "exited" or "timeout"
end

-- A notifications/message whose data (a string) matches a Lua pattern.
function Client:wait_log(pattern, timeout, since)
  return self:wait_notification("notifications/message", function(p)
    return type(p.data) == "string" and p.data:find(pattern) ~= nil
  end, timeout, since)
end

-- How many notifications/message so far have string data matching pattern.
function Client:count_logs(pattern)
  local n = 0
  for _, m in ipairs(self.notes) do
    if m.method == "notifications/message" and type(m.params) == "table"
       and type(m.params.data) == "string" and m.params.data:find(pattern) then
      n = n + 1
    end
  end
  return n
end

-- Asserts nothing at all arrives on stdout (and nothing is left unconsumed)
-- within timeout seconds. With opts.responses_only, notifications are allowed.
function Client:no_message(timeout, opts)
  opts = opts or {}
  local function offending()
    for _, e in ipairs(self.inbox) do
      if not opts.responses_only or not is_notification(e.msg) then return e end
    end
  end
  H.run_until(function() return offending() ~= nil end, timeout or H.QUIET)
  local e = offending()
  if e then error("unexpected message on stdout: " .. e.raw, 2) end
  return true
end

-- Asserts no response arrives (notifications may) within timeout seconds.
function Client:no_response(timeout)
  local ok, err = pcall(self.no_message, self, timeout, { responses_only = true })
  if not ok then error(err, 2) end
  return true
end

-- Waits for a stderr line matching a Lua pattern (opts.plain: plain text;
-- pattern may also be a function(line)). opts.since: only lines after that index.
-- Returns the line and its index, or nil.
function Client:wait_stderr(pattern, timeout, opts)
  opts = opts or {}
  local found, idx
  local function match(line)
    if type(pattern) == "function" then return pattern(line) end
    return line:find(pattern, 1, opts.plain) ~= nil
  end
  local function scan()
    for i = (opts.since or 0) + 1, #self.stderr do
      if match(self.stderr[i]) then found, idx = self.stderr[i], i; return true end
    end
    return self.stderr_eof
  end
  H.run_until(scan, timeout or H.WAIT)
  return found, idx
end

-- Like wait_stderr, but raises with the whole stderr when the line does not come.
function Client:expect_stderr(pattern, timeout, opts)
  local line, idx = self:wait_stderr(pattern, timeout, opts)
  if not line then
    error(("stderr never matched %q; stderr was:\n%s"):format(
      tostring(pattern), table.concat(self.stderr, "\n")), 2)
  end
  return line, idx
end

function Client:count_stderr(pattern, plain)
  local n = 0
  for _, l in ipairs(self.stderr) do if l:find(pattern, 1, plain) then n = n + 1 end end
  return n
end

function Client:stderr_text() return table.concat(self.stderr, "\n") end

-- Close stdin and wait for the exit. Returns code, signal (nil, "timeout" if
-- it did not exit; it is then killed).
function Client:close(timeout)
  if not self.stdin_closed then
    self.stdin_closed = true
    self.stdin:shutdown(function() if not self.stdin:is_closing() then self.stdin:close() end end)
  end
  return self:wait_exit(timeout)
end

-- The exit status as a shell gives it (128 + the signal for a process a
-- signal killed: luv says 0 then, and `equal(0, code)` would pass), and the
-- signal; nil, "timeout" when it did not exit in time (then it is killed).
function Client:wait_exit(timeout)
  H.run_until(function() return self.exited and self.stdout_eof and self.stderr_eof end,
              timeout or H.WAIT)
  if not self.exited then
    self:kill("sigkill")
    H.run_until(function() return self.exited end, 5)
    return nil, "timeout"
  end
  if self.exit_signal ~= 0 then return 128 + self.exit_signal, self.exit_signal end
  return self.exit_code, self.exit_signal
end

function Client:kill(sig)
  if not self.exited then self.proc:kill(sig or "sigterm") end
end

local sanitizer_patterns = {
  "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer",
}

-- Ends the server (gracefully if it can, so sanitizers report leaks) and frees
-- the handles. Raises if the server wrote a sanitizer report or non-JSON-RPC
-- text on stdout.
function Client:cleanup()
  if self.cleaned then return end
  self.cleaned = true
  if not self.exited then
    local code, sig = self:close(5)
    if code == nil then self.killed_in_cleanup = true end
  end
  H.run_until(function() return self.stdout_eof and self.stderr_eof end, 2)
  for _, h in ipairs({ self.stdin, self.stdout, self.stderr_pipe, self.proc }) do
    if h and not h:is_closing() then h:close() end
  end
  uv.run("nowait")
  local problems = {}
  for _, l in ipairs(self.stderr) do
    for _, p in ipairs(sanitizer_patterns) do
      if l:find(p, 1, true) then problems[#problems + 1] = l end
    end
  end
  if #problems > 0 then
    error("sanitizer report on stderr:\n" .. self:stderr_text(), 0)
  end
  if #self.bad_lines > 0 then
    error("stdout carried non-JSON-RPC text:\n" .. table.concat(self.bad_lines, "\n"), 0)
  end
end

-- End every server started so far. Call it in after_each.
-- The open file descriptors of process pid, and its resident memory (KB).
-- The text of GET /metrics on 127.0.0.1:port (curl; empty when refused).
function H.metrics(port)
  local p = io.popen("curl -s http://127.0.0.1:" .. port .. "/metrics")
  local text = p:read("a")
  p:close()
  return text
end

function H.fd_count(pid)
  local req = uv.fs_scandir("/proc/" .. pid .. "/fd")
  local n = 0
  while req and uv.fs_scandir_next(req) do n = n + 1 end
  return n
end

function H.rss_kb(pid)
  local f = io.open("/proc/" .. pid .. "/status")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)"))
end

function H.cleanup()
  local clients = H.clients
  H.clients = {}
  local t0 = now()
  local first_err
  for _, c in ipairs(clients) do
    local ok, err = pcall(c.cleanup, c)
    if not ok and not first_err then first_err = err end
  end
  if H.verbose then io.stderr:write(("  [cleanup took %.2f s]\n"):format(now() - t0)) end
  if first_err then error(first_err, 0) end
end

---------------------------------------------------------------------------
-- Protocol shorthands

H.LATEST = "2025-11-25"
H.VERSIONS = { "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25" }

function Client:initialize(version, opts)
  opts = opts or {}
  local resp = self:request("initialize", {
    protocolVersion = version or H.LATEST,
    capabilities = {},
    clientInfo = { name = "luamcp-specs", version = "0" },
  }, opts)
  if not resp.result then
    error("initialize failed: " .. cjson.encode(resp) .. "\n" .. self:stderr_text(), 2)
  end
  self:send({ jsonrpc = "2.0", method = "notifications/initialized" })
  self.init_result = resp.result
  return resp.result, resp
end

function Client:call(name, arguments, opts)
  return self:request("tools/call", { name = name, arguments = arguments or {} }, opts)
end

-- The text of a tools/call result's first content item.
function H.text(resp)
  local r = assert(resp.result, "not a result: " .. cjson.encode(resp))
  local item = r.content and r.content[1]
  return item and item.text
end

function H.cancel_msg(id, reason)
  local params = { requestId = id }
  if reason then params.reason = reason end
  return { jsonrpc = "2.0", method = "notifications/cancelled", params = params }
end

-- Raw JSON line of a cancel for an id given as exact JSON text.
function H.cancel_raw(key, reason)
  local s = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":' .. key
  if reason then s = s .. ',"reason":' .. cjson.encode(reason) end
  return s .. "}}\n"
end

function H.line(t) return cjson.encode(t) .. "\n" end

-- A raw tools/call request line with an exact id text.
function H.call_raw(key, name, arguments)
  return '{"jsonrpc":"2.0","id":' .. key .. ',"method":"tools/call","params":' ..
         cjson.encode({ name = name, arguments = arguments or {} }) .. "}\n"
end

-- Escapes a string for use as a plain-text part of a Lua pattern.
function H.esc(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end

H.cjson = cjson
H.uv = uv
return H
