-- Drives luamcp's Streamable HTTP transport over real TCP with luv.
--
--   local HH = require "spec.http_helper"
--   local srv = HH.start{ args = { "--token", "s3cret" } }     -- --http 127.0.0.1:0
--   local s = HH.initialize(srv, "2025-11-25")                 -- POST initialize + initialized
--   local resp, r = s:rpc("tools/call", { name = "echo", arguments = { text = "hi" } })
--   local r, msg = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "tools/list",  -- 2026-07-28
--                                  params = HH.params_rev2026() })
--   local c = HH.connect(srv); c:send("GET /mcp HTTP/1.1\r\n...\r\n\r\n"); local r = c:response()
--   HH.cleanup()                                               -- after_each
--
-- A connection parses what it reads as it arrives (in the read callback):
-- responses in order, each with status, headers (lower-case names), body
-- (Content-Length or chunked, de-chunked) and, for text/event-stream, the SSE
-- events parsed incrementally. Every wait is bounded (H.WAIT by default).
local H = require "spec.helper"
local uv, cjson = H.uv, H.cjson

local M = { H = H }

M.ACCEPT = "application/json, text/event-stream"

---------------------------------------------------------------------------
-- The server

-- opts: plugins = {dir...} (default spec/fixtures/http), args = {...}, env = {K=V}.
-- Returns spec.helper's client, with .port and .base; ends by SIGTERM.
function M.start(opts)
  opts = opts or {}
  local args = { "--http", "127.0.0.1:0" }
  for _, a in ipairs(opts.args or {}) do args[#args + 1] = a end
  local srv = H.start{ plugins = opts.plugins or { "spec/fixtures/http" }, args = args,
                      env = opts.env, bin = opts.bin }
  local line = srv:wait_stderr("listening on http://127%.0%.0%.1:%d+/mcp")
  if not line then
    error("the server did not say where it listens; stderr:\n" .. srv:stderr_text(), 2)
  end
  srv.port = tonumber(line:match("127%.0%.0%.1:(%d+)/mcp"))
  srv.host = "127.0.0.1:" .. srv.port
  -- stdin means nothing to the HTTP transport: end the server with SIGTERM.
  srv.close = function(self, timeout)
    self:kill("sigterm")
    return self:wait_exit(timeout)
  end
  return srv
end

---------------------------------------------------------------------------
-- SSE (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)

-- Feeds decoded body bytes to r's SSE parser; complete events go to r.events.
local function sse_feed(r, data)
  r.sse_buf = r.sse_buf .. data
  while true do
    local s2 = r.sse_buf:find("[\r\n]")
    if not s2 then break end
    local e = s2
    if r.sse_buf:sub(s2, s2) == "\r" then
      -- a "\r" at the very end might be the first half of "\r\n": wait
      if s2 == #r.sse_buf then break end
      if r.sse_buf:sub(s2 + 1, s2 + 1) == "\n" then e = s2 + 1 end
    end
    local line = r.sse_buf:sub(1, s2 - 1)
    r.sse_buf = r.sse_buf:sub(e + 1)
    local ev = r.sse_cur
    if line == "" then
      if ev then
        ev.seq = #r.events + 1
        r.events[#r.events + 1] = ev
        if ev.data and ev.data ~= "" then
          local ok, msg = pcall(cjson.decode, ev.data)
          if ok then ev.msg = msg end
        end
      end
      r.sse_cur = nil
    elseif line:sub(1, 1) == ":" then
      r.comments[#r.comments + 1] = line
    else
      local field, value = line:match("^([^:]*):? ?(.*)$")
      if not line:find(":", 1, true) then field, value = line, "" end
      ev = ev or { fields = {} }
      r.sse_cur = ev
      ev.fields[#ev.fields + 1] = { field, value }
      if field == "data" then
        ev.data = ev.data and (ev.data .. "\n" .. value) or value
      elseif field == "id" then
        ev.id = value
        r.last_event_id = value
      elseif field == "retry" then
        ev.retry = value
      elseif field == "event" then
        ev.event = value
      end
    end
  end
end

---------------------------------------------------------------------------
-- A response

local Resp = {}
Resp.__index = Resp

function Resp:header(name) return self.headers[name:lower()] end

function Resp:is_sse()
  return (self:header("content-type") or ""):find("text/event-stream", 1, true) ~= nil
end

-- Wait until the whole body is in (the chunked terminator for a stream).
-- Returns self; self.done tells whether it completed (false: timeout or EOF).
function Resp:wait_done(timeout)
  H.run_until(function() return self.done or self.conn.eof end, timeout or H.WAIT)
  return self
end

-- The next SSE event not taken yet, or nil, "timeout" / "ended" / "eof".
function Resp:next_event(timeout)
  H.run_until(function()
    return #self.events > self.ev_taken or self.done or self.conn.eof
  end, timeout or H.WAIT)
  if #self.events > self.ev_taken then
    self.ev_taken = self.ev_taken + 1
    return self.events[self.ev_taken]
  end
  if self.done then return nil, "ended" end
  if self.conn.eof then return nil, "eof" end
  return nil, "timeout"
end

-- The next SSE event carrying a message (the priming event has none).
function Resp:next_message(timeout)
  local deadline = H.now() + (timeout or H.WAIT)
  while true do
    local ev, why = self:next_event(math.max(0, deadline - H.now()))
    if not ev then return nil, why end
    if ev.msg then return ev.msg, ev end
  end
end

-- Messages of every event so far (events without a message are left out).
function Resp:messages()
  local out = {}
  for _, ev in ipairs(self.events) do if ev.msg then out[#out + 1] = ev.msg end end
  return out
end

-- The decoded JSON body (a whole application/json answer).
function Resp:json()
  local ok, v = pcall(cjson.decode, self.body)
  if not ok then error("not JSON (status " .. tostring(self.status) .. "): " .. self.body, 2) end
  return v
end

function Resp:describe()
  local t = { ("%s %s"):format(tostring(self.status), tostring(self.reason)) }
  for _, h in ipairs(self.header_list) do t[#t + 1] = h[1] .. ": " .. h[2] end
  t[#t + 1] = ""
  t[#t + 1] = self.body
  return table.concat(t, "\n")
end

---------------------------------------------------------------------------
-- A connection

local Conn = {}
Conn.__index = Conn
M.conns = {}

local function parse_head(head)
  local lines = {}
  for l in (head .. "\r\n"):gmatch("(.-)\r\n") do lines[#lines + 1] = l end
  local version, status, reason = lines[1]:match("^(HTTP/%d%.%d) (%d%d%d) ?(.*)$")
  local r = setmetatable({
    version = version, status = tonumber(status), reason = reason, status_line = lines[1],
    headers = {}, header_list = {}, body = "", chunks = {}, events = {}, ev_taken = 0,
    sse_buf = "", comments = {}, done = false, raw_head = head,
  }, Resp)
  for i = 2, #lines do
    local k, v = lines[i]:match("^([^:]+):%s*(.-)%s*$")
    if k then
      r.header_list[#r.header_list + 1] = { k, v }
      local lk = k:lower()
      r.headers[lk] = r.headers[lk] and (r.headers[lk] .. ", " .. v) or v
    else
      r.bad_header_lines = (r.bad_header_lines or 0) + 1
    end
  end
  return r
end

function Conn:_body_data(r, data)
  r.body = r.body .. data
  if r:is_sse() then sse_feed(r, data) end
end

function Conn:_finish(r)
  r.done = true
  r.done_at = H.now()
  self.cur = nil
end

-- Parse as much of the read buffer as possible.
function Conn:_parse()
  while true do
    local r = self.cur
    if not r then
      local e = self.buf:find("\r\n\r\n", 1, true)
      if not e then return end
      r = parse_head(self.buf:sub(1, e - 1))
      r.conn = self
      self.buf = self.buf:sub(e + 4)
      if not r.status then
        self.garbage = (self.garbage or "") .. r.raw_head
        return
      end
      self.responses[#self.responses + 1] = r
      self.cur = r
      local te = (r.headers["transfer-encoding"] or ""):lower()
      if te:find("chunked", 1, true) then
        r.chunked, r.cstate = true, "size"
      elseif r.headers["content-length"] then
        r.length = tonumber(r.headers["content-length"])
      elseif r.status == 204 or r.status == 304 or r.status < 200 then
        r.length = 0
      else
        r.to_close = true
      end
      if r.length == 0 then self:_finish(r) end
    elseif r.length then
      local need = r.length - #r.body
      if #self.buf == 0 then return end
      local take = self.buf:sub(1, need)
      self.buf = self.buf:sub(#take + 1)
      self:_body_data(r, take)
      if #r.body < r.length then return end
      self:_finish(r)
    elseif r.to_close then
      if #self.buf == 0 then return end
      self:_body_data(r, self.buf)
      self.buf = ""
      return
    elseif r.cstate == "size" then
      local e = self.buf:find("\r\n", 1, true)
      if not e then return end
      local size_text = self.buf:sub(1, e - 1)
      self.buf = self.buf:sub(e + 2)
      local hex = size_text:match("^%x+")
      local size = hex and tonumber(hex, 16)
      if not size then
        r.chunk_error = "bad chunk size " .. size_text
        self:_finish(r)
        return
      end
      if size == 0 then r.cstate = "trailer" else r.cstate, r.csize = "data", size end
    elseif r.cstate == "data" then
      if #self.buf < r.csize + 2 then return end
      local data = self.buf:sub(1, r.csize)
      if self.buf:sub(r.csize + 1, r.csize + 2) ~= "\r\n" then
        r.chunk_error = "chunk not followed by CRLF"
      end
      self.buf = self.buf:sub(r.csize + 3)
      r.chunks[#r.chunks + 1] = data
      r.cstate = "size"
      self:_body_data(r, data)
    elseif r.cstate == "trailer" then
      local e = self.buf:find("\r\n", 1, true)
      if not e then return end
      local line = self.buf:sub(1, e - 1)
      self.buf = self.buf:sub(e + 2)
      if line == "" then
        r.terminated = true     -- the zero chunk and the empty trailer
        self:_finish(r)
      end
    end
  end
end

-- Open a TCP connection to the server (or a port). Returns the connection,
-- connected, or raises.
function M.connect(srv, opts)
  opts = opts or {}
  local port = type(srv) == "table" and srv.port or srv
  local c = setmetatable({
    port = port, host = "127.0.0.1:" .. port, buf = "", raw = "", responses = {},
    taken = 0, eof = false, srv = type(srv) == "table" and srv or nil,
  }, Conn)
  c.tcp = uv.new_tcp()
  M.conns[#M.conns + 1] = c
  local done, err
  c.tcp:connect("127.0.0.1", port, function(e)
    err = e
    done = true
  end)
  H.run_until(function() return done end, opts.timeout or H.WAIT)
  if not done or err then error("cannot connect to port " .. port .. ": " .. tostring(err), 2) end
  c.opened_at = H.now()
  c.tcp:read_start(function(e, data)
    if e or not data then
      c.eof = true
      c.eof_at = c.eof_at or H.now()
      c.read_error = e
      if c.cur and c.cur.to_close then c:_finish(c.cur) end
      if c.cur then c.cur.truncated = true end
      return
    end
    c.raw = c.raw .. data
    c.buf = c.buf .. data
    c:_parse()
  end)
  return c
end

-- Write raw bytes.
function Conn:send(bytes)
  if self.closed then error("connection already closed", 2) end
  if H.verbose then io.stderr:write("  [http ", self.port, " >] ", bytes:sub(1, 2000), "\n") end
  self.tcp:write(bytes, function(e) if e then self.write_error = e end end)
end

-- The text of a request. opts: method, path, headers (list of {name, value},
-- sent in order), body.
function M.request_text(opts)
  local t = { ("%s %s HTTP/1.1\r\n"):format(opts.method or "POST", opts.path or "/mcp") }
  for _, h in ipairs(opts.headers or {}) do t[#t + 1] = h[1] .. ": " .. h[2] .. "\r\n" end
  t[#t + 1] = "\r\n"
  t[#t + 1] = opts.body or ""
  return table.concat(t)
end

-- headers: a list of {name, value} defaults; over: a map name -> value or
-- false (drop it); names compared case-insensitively. Returns the list.
-- The =?base64?...?= form of s, as a header value that is not plain text
-- (the 2026-07-28 Mcp-Name and Mcp-Param headers).
function M.header_b64(s)
  local B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local v = a << 16 | (b or 0) << 8 | (c or 0)
    local function d(k) return B:sub((v >> k & 63) + 1, (v >> k & 63) + 1) end
    out[#out + 1] = d(18) .. d(12) .. (b and d(6) or "=") .. (c and d(0) or "=")
  end
  return "=?base64?" .. table.concat(out) .. "?="
end

function M.merge_headers(defaults, over)
  local out, seen = {}, {}
  over = over or {}
  local lower = {}
  for k, v in pairs(over) do lower[k:lower()] = { k, v } end
  for _, h in ipairs(defaults) do
    local o = lower[h[1]:lower()]
    if o then
      seen[h[1]:lower()] = true
      if o[2] ~= false then out[#out + 1] = { h[1], o[2] } end
    else
      out[#out + 1] = h
    end
  end
  local extra = {}
  for lk, o in pairs(lower) do
    if not seen[lk] and o[2] ~= false then extra[#extra + 1] = o end
  end
  table.sort(extra, function(a, b) return a[1] < b[1] end)
  for _, h in ipairs(extra) do out[#out + 1] = h end
  return out
end

-- Send a request: opts.method, path, headers (map of overrides of Host and,
-- with a body, Content-Length), body. Returns nothing: read with :response().
function Conn:request(opts)
  local defaults = { { "Host", self.host } }
  if opts.body then defaults[#defaults + 1] = { "Content-Length", tostring(#opts.body) } end
  self:send(M.request_text{
    method = opts.method, path = opts.path, body = opts.body,
    headers = M.merge_headers(defaults, opts.headers),
  })
end

-- The next response (its head has arrived; the body may still be coming), or
-- nil, "timeout" / "eof".
function Conn:response(timeout)
  H.run_until(function() return #self.responses > self.taken or self.eof end, timeout or H.WAIT)
  if #self.responses > self.taken then
    self.taken = self.taken + 1
    local r = self.responses[self.taken]
    if H.verbose then io.stderr:write("  [http ", self.port, " <] ", r.status_line, "\n") end
    return r
  end
  return nil, self.eof and "eof" or "timeout"
end

-- request + response + wait_done; raises when no response comes.
function Conn:exchange(opts, timeout)
  self:request(opts)
  local r, why = self:response(timeout)
  if not r then error("no response: " .. why, 2) end
  return r:wait_done(timeout)
end

-- Wait until the server closes the connection. Returns true when it did.
function Conn:wait_eof(timeout)
  return H.run_until(function() return self.eof end, timeout or H.WAIT)
end

function Conn:close()
  if self.closed then return end
  self.closed = true
  if not self.tcp:is_closing() then self.tcp:close() end
end

-- Reset the connection: SO_LINGER 0, so the peer gets RST rather than FIN
-- and its next write fails (ECONNRESET, EPIPE).
function Conn:reset()
  if self.closed then return end
  self.closed = true
  pcall(function() self.tcp:read_stop() end)
  if not self.tcp:is_closing() then self.tcp:close_reset() end
end

-- Close the connection without reading what is left.
function Conn:drop()
  if self.closed then return end
  self.closed = true
  pcall(function() self.tcp:read_stop() end)
  if not self.tcp:is_closing() then self.tcp:close() end
end

---------------------------------------------------------------------------
-- MCP sessions

local Session = {}
Session.__index = Session

-- Headers of a POST of this session: Accept, Content-Type and, once known,
-- Mcp-Session-Id and MCP-Protocol-Version.
function Session:headers(over)
  local h = {
    { "Host", self.srv.host },
    { "Accept", M.ACCEPT },
    { "Content-Type", "application/json" },
  }
  if self.id then h[#h + 1] = { "Mcp-Session-Id", self.id } end
  if self.version and self.version >= "2025-06-18" then
    h[#h + 1] = { "MCP-Protocol-Version", self.version }
  end
  if self.token then h[#h + 1] = { "Authorization", "Bearer " .. self.token } end
  return M.merge_headers(h, over)
end

-- The connection to use: opts.conn, a fresh one (opts.fresh), or the session's.
function Session:conn_for(opts)
  if opts.conn then return opts.conn end
  if opts.fresh or not self.conn or self.conn.eof or self.conn.closed then
    local c = M.connect(self.srv)
    if not opts.fresh then self.conn = c end
    return c
  end
  return self.conn
end

-- POST a message (a table, encoded, or raw text). opts: conn, fresh, headers
-- (overrides; false drops one), nowait. Returns the response (head read) and
-- the conn; with nowait, only the conn (nil, c).
function Session:post(msg, opts)
  opts = opts or {}
  local c = self:conn_for(opts)
  local body = type(msg) == "table" and cjson.encode(msg) or msg
  local headers = self:headers(opts.headers)
  table.insert(headers, { "Content-Length", tostring(#body) })
  c:send(M.request_text{ method = "POST", headers = headers, body = body })
  if opts.nowait then return nil, c end
  local r, why = c:response(opts.timeout)
  if not r then error("no response to POST " .. body .. ": " .. why, 2) end
  return r, c
end

function Session:next_id()
  self.last_id = (self.last_id or 0) + 1
  return self.last_id
end

-- A JSON-RPC request table.
function Session:req(method, params, id)
  return { jsonrpc = "2.0", id = id or self:next_id(), method = method, params = params }
end

-- The JSON-RPC response to a request answered on r (a JSON body, or the last
-- message of an SSE stream), after the answer ended; nil when there is none.
function M.rpc_response(r, timeout)
  r:wait_done(timeout)
  if r:is_sse() then
    local msgs = r:messages()
    local last = msgs[#msgs]
    if last and last.method == nil then return last end
    return nil
  end
  if #r.body == 0 then return nil end
  return r:json()
end

-- Send a request and wait for its whole answer. Returns the JSON-RPC
-- response, the HTTP response and the connection. opts as for post; opts.id.
function Session:rpc(method, params, opts)
  opts = opts or {}
  local r, c = self:post(self:req(method, params, opts.id), opts)
  local resp = M.rpc_response(r, opts.timeout)
  return resp, r, c
end

function Session:call(name, arguments, opts)
  local p = { name = name, arguments = arguments or {} }
  if opts and opts.progress then p._meta = { progressToken = opts.progress } end
  return self:rpc("tools/call", p, opts)
end

function Session:notify(method, params, opts)
  return self:post({ jsonrpc = "2.0", method = method, params = params }, opts)
end

-- GET the standalone stream (or resume with opts.last_event_id). Returns the
-- response (head read) and its connection (a fresh one unless opts.conn).
function Session:get(opts)
  opts = opts or {}
  local c = opts.conn or M.connect(self.srv)
  local over = { Accept = "text/event-stream", ["Content-Type"] = false }
  if opts.last_event_id then over["Last-Event-ID"] = opts.last_event_id end
  for k, v in pairs(opts.headers or {}) do over[k] = v end
  c:send(M.request_text{ method = "GET", headers = self:headers(over) })
  local r, why = c:response(opts.timeout)
  if not r then error("no response to GET: " .. why, 2) end
  return r, c
end

function Session:delete(opts)
  opts = opts or {}
  local c = self:conn_for(opts)
  local over = { Accept = false, ["Content-Type"] = false }
  for k, v in pairs(opts.headers or {}) do over[k] = v end
  c:send(M.request_text{ method = "DELETE", headers = self:headers(over) })
  local r, why = c:response(opts.timeout)
  if not r then error("no response to DELETE: " .. why, 2) end
  return r:wait_done(), c
end

-- The initialize request (a table), declaring the client capabilities caps (default none).
function M.init_msg(version, id, caps)
  return {
    jsonrpc = "2.0", id = id or 0, method = "initialize",
    params = {
      protocolVersion = version or H.LATEST, capabilities = caps or {},
      clientInfo = { name = "luamcp-http-specs", version = "0" },
    },
  }
end

-- POST initialize (and, unless opts.no_initialized, notifications/initialized).
-- opts: token, conn, capabilities (the client's). Returns the session; s.init
-- (the result), s.init_resp (the HTTP response). Raises when it fails.
function M.initialize(srv, version, opts)
  opts = opts or {}
  local s = setmetatable({ srv = srv, token = opts.token }, Session)
  local r = s:post(M.init_msg(version, nil, opts.capabilities), opts)
  r:wait_done()
  local ok, resp = pcall(cjson.decode, r.body)
  if r.status ~= 200 or not ok or type(resp) ~= "table" or not resp.result then
    error("initialize failed:\n" .. r:describe() .. "\nstderr:\n" .. srv:stderr_text(), 2)
  end
  s.id = r:header("mcp-session-id")
  s.version = resp.result.protocolVersion
  s.init, s.init_resp = resp.result, r
  if not opts.no_initialized then
    local n = s:notify("notifications/initialized")
    n:wait_done()
    if n.status ~= 202 then error("notifications/initialized: " .. n:describe(), 2) end
  end
  return s
end

---------------------------------------------------------------------------
-- Stateless requests (protocol revision 2026-07-28): no session, each POST
-- carries its protocol version and client capabilities in params._meta and
-- the request metadata headers.

M.REV2026 = "2026-07-28"

-- The _meta of a 2026-07-28 request: the protocol version, the client
-- capabilities caps (default none: cjson writes {} for the empty table), then
-- the fields of extra (which may replace those two).
function M.meta_rev2026(caps, extra)
  local m = {
    ["io.modelcontextprotocol/protocolVersion"] = M.REV2026,
    ["io.modelcontextprotocol/clientCapabilities"] = caps or {},
  }
  for k, v in pairs(extra or {}) do m[k] = v end
  return m
end

-- params (default {}) with _meta = meta_rev2026(caps, extra). Returns params.
function M.params_rev2026(p, caps, extra)
  p = p or {}
  p._meta = M.meta_rev2026(caps, extra)
  return p
end

-- The Mcp-Name of a request: what its method names (a tool or prompt, a
-- resource, a task), or nil.
local function mcp_name(method, p)
  if type(p) ~= "table" then return nil end
  if method == "tools/call" or method == "prompts/get" then return p.name end
  if method == "resources/read" then return p.uri end
  if type(method) == "string" and method:find("^tasks/") then return p.taskId end
  return nil
end

-- POST one message (a table) as a 2026-07-28 client on a fresh connection,
-- with Host, Accept, Content-Type, MCP-Protocol-Version, Mcp-Method and, as
-- the method names one, Mcp-Name (params.name, .uri or .taskId). opts:
-- headers (a map of overrides; false drops one), extra (a list of {name,
-- value} sent after those, in order), body (the text to send instead of msg
-- encoded; msg still gives the headers), nowait, timeout. Returns the
-- response (head read) and the conn; with nowait, only the conn (nil, c): a
-- JSON answer has no head before the answer.
function M.post_rev2026(srv, msg, opts)
  opts = opts or {}
  local h = {
    { "Host", srv.host },
    { "Accept", M.ACCEPT },
    { "Content-Type", "application/json" },
    { "MCP-Protocol-Version", M.REV2026 },
    { "Mcp-Method", msg.method },
  }
  local name = mcp_name(msg.method, msg.params)
  if name then h[#h + 1] = { "Mcp-Name", name } end
  h = M.merge_headers(h, opts.headers)
  for _, x in ipairs(opts.extra or {}) do h[#h + 1] = x end
  local body = opts.body or cjson.encode(msg)
  h[#h + 1] = { "Content-Length", tostring(#body) }
  local c = M.connect(srv)
  c:send(M.request_text{ method = "POST", headers = h, body = body })
  if opts.nowait then return nil, c end
  local r, why = c:response(opts.timeout)
  if not r then
    error("no response to POST " .. body .. ": " .. why .. "\nstderr:\n" .. srv:stderr_text(), 2)
  end
  return r, c
end

-- post_rev2026, then wait for the whole answer. Returns the response and its
-- JSON-RPC message (nil when there is none), then the conn. opts as for post_rev2026.
function M.rpc_rev2026(srv, msg, opts)
  local r, c = M.post_rev2026(srv, msg, opts)
  return r, M.rpc_response(r, opts and opts.timeout), c
end

---------------------------------------------------------------------------

-- Close every connection, then end every server (SIGTERM). after_each.
function M.cleanup()
  local conns = M.conns
  M.conns = {}
  for _, c in ipairs(conns) do c:close() end
  uv.run("nowait")
  H.cleanup()
end

M.Conn, M.Session, M.Resp = Conn, Session, Resp
return M
