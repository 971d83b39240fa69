-- An MCP client for handlers: mcp.connect(opts) talks to another MCP server
-- over stdio (our child, lua/mcp/client_stdio.lua) or Streamable HTTP
-- (lua/mcp/client_http.lua), at revision 2026-07-28 (stateless requests
-- found by server/discover) or a session revision (initialize, 2025-11-25
-- down to 2024-11-05).
--
-- A client is shared by every call of its plugin: it connects on first use
-- (inside a call, since connecting waits), and again after its child died or
-- its session was gone. Every wait is an operation of the calling request
-- (src/core/op.h): a future the transport completes, the request's own HTTP
-- transfer, a timer for opts.timeout. Whatever stops the calling request
-- cancels them, and the wait's future then cancels the upstream request the
-- way its revision says (Conn:cancel); a request still in flight when its
-- caller is gone (aborted between waits) is cancelled by its <close>.
local core = require "mcp.core"
local await = require "mcp.await"
local fail = require "mcp.fail"

local M = {}

local REV2026 = "2026-07-28"
local SESSION_REVISIONS = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }
local SESSION = {}
for _, r in ipairs(SESSION_REVISIONS) do SESSION[r] = true end
M.REVISIONS = { REV2026, table.unpack(SESSION_REVISIONS) }

-- The client capability an upstream's request needs.
local CAPABILITY = {
  ["sampling/createMessage"] = "sampling",
  ["elicitation/create"] = "elicitation",
  ["roots/list"] = "roots",
}
local MAX_JUNK = 20            -- non-JSON-RPC lines before a connection is given up
local MAX_ROUNDS = 16          -- input-required rounds of one request

local array_mt = core.array_mt
local RAW_MT = getmetatable(core.json_raw("{}"))
local function array(t) return setmetatable(t or {}, array_mt) end

local function log(level, fmt, ...) core.log_stderr(level, string.format(fmt, ...)) end

-- The message of a wait a cancel ended: "cancelled: <reason>".
local function cancelled(why)
  why = tostring(why or core.reason() or "request stopped")
  return why:find("^cancelled: ") and why or "cancelled: " .. why
end

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return setmetatable(c, getmetatable(t))
end

---------------------------------------------------------------------------
-- A connection: one child process, one HTTP session, or (2026-07-28) the
-- stateless requests to one server.

local Conn = {}
-- a function, not the table itself: obj.__index must not hand a sandboxed
-- plugin the methods every plugin shares
Conn.__index = function(_, k) return Conn[k] end

-- The request being answered is woken: its wait future completes.
local function wake(rq)
  local f = rq.waiter
  if f and not f:done() then f:complete() end
end

local function push(rq, item)
  local inbox = rq.inbox
  if inbox == nil then inbox = {} rq.inbox = inbox end
  inbox[#inbox + 1] = item
  wake(rq)
end

-- The connection is over: every request in flight fails with why.
function Conn:fail(why, kind)
  if self.closed then return end
  self.closed = why
  log(self.handshake and "warning" or "info", "%s: %s", self.client.name, why)
  local pending = self.pending
  self.pending, self.by_token = {}, {}
  if self.fwd then core.forward_fail(self.fwd, why) end   -- the requests forward.c sent
  for _, rq in pairs(pending) do
    rq.gone, rq.gone_kind = why, kind or "closed"
    wake(rq)
  end
  if self.client.conn == self then self.client.conn = nil end
  self.transport.close(self)
end

function Conn:on_line(line)
  if self.closed then return end
  local msg = core.decode_response(line)       -- a result stays JSON text until asked for
  if type(msg) ~= "table" then
    if line:find("^%s*$") then return end
    self.junk = self.junk or line:sub(1, 200)
    self.njunk = (self.njunk or 0) + 1
    if self.njunk <= 5 then
      log("info", "%s: not JSON-RPC on its stdout: %s", self.client.name, line:sub(1, 200))
    end
    if self.handshake and self.njunk >= MAX_JUNK then
      self:fail(("the upstream wrote %d lines that are not JSON-RPC"):format(self.njunk), "protocol")
    end
    return
  end
  self:on_message(msg)
end

-- A message from the upstream; hint: the request whose HTTP stream it came on.
function Conn:on_message(msg, hint)
  if getmetatable(msg) == array_mt then            -- a batch (2025-03-26)
    for _, m in ipairs(msg) do self:on_message(m, hint) end
    return
  end
  if type(msg) ~= "table" or msg.jsonrpc ~= "2.0" then
    self.junk = self.junk or core.encode(msg)
    log("info", "%s: not a JSON-RPC message: %s", self.client.name, tostring(core.encode(msg)):sub(1, 200))
    return
  end
  if msg.method == nil then                        -- a response
    local rq = self.pending[msg.id]
    if rq == nil then
      log("debug", "%s: a response to no request in flight (id %s)", self.client.name, tostring(msg.id))
      return
    end
    self.pending[msg.id], self.by_token[msg.id] = nil, nil
    if getmetatable(msg.result) == RAW_MT and (not rq.raw or msg.result_type == "input_required") then
      msg.result = core.decode(msg.result[1])
      msg.result.resultType = msg.result_type
    end
    rq.response = msg
    wake(rq)
  elseif msg.id ~= nil then
    self:on_request(msg, hint)
  else
    self:on_notification(msg, hint)
  end
end

-- The request the upstream's request belongs to: the one whose stream it
-- came on (HTTP), else the latest one in flight (stdio says nothing).
function Conn:latest()
  local best
  for _, rq in pairs(self.pending) do
    if not rq.listen and (best == nil or rq.id > best.id) then best = rq end
  end
  return best
end

function Conn:on_request(msg, hint)
  if msg.method == "ping" then return self:reply(msg.id, {}) end
  -- it asks during calls: they go through client.lua from now on (forward.c
  -- cannot tell which call a request belongs to)
  if self.fwd then core.forward_stop(self.fwd) end
  if not CAPABILITY[msg.method] then
    return self:reply(msg.id, nil, { code = -32601, message = "Method not found: " .. tostring(msg.method) })
  end
  local rq = hint and hint.response == nil and not hint.cancelled and hint or self:latest()
  if rq == nil then
    return self:reply(msg.id, nil, { code = -32601,
      message = "Method not found: no request in flight to ask its client (" .. msg.method .. ")" })
  end
  push(rq, { kind = "request", msg = msg })
end

function Conn:on_notification(msg, hint)
  local m, p = msg.method, type(msg.params) == "table" and msg.params or {}
  if m == "notifications/progress" then
    local rq = p.progressToken ~= nil and self.by_token[p.progressToken]
    if rq then push(rq, { kind = "progress", params = p }) end
  elseif m == "notifications/message" then
    if hint and hint.response == nil then push(hint, { kind = "log", params = p })
    else log("debug", "%s: log: %s", self.client.name, tostring(core.encode(p.data))) end
  elseif m == "notifications/cancelled" or m == "notifications/subscriptions/acknowledged" then
    return                                         -- nothing of ours runs on its behalf
  else
    self.client:_notified(m, p)
  end
end

function Conn:reply(id, result, err)
  local ok, why = self.transport.send(self, { jsonrpc = "2.0", id = id, result = result, error = err })
  if not ok then log("info", "%s: cannot answer its request: %s", self.client.name, why) end
end

function Conn:notify(method, params)
  return self.transport.notify(self, { jsonrpc = "2.0", method = method, params = params })
end

-- Stop the upstream request: notifications/cancelled with the reason, or,
-- for a 2026-07-28 request over HTTP, the POST's stream closed.
function Conn:cancel(rq, reason)
  if rq.response or rq.cancelled or rq.gone or rq.id == nil then return end
  rq.cancelled = true
  self.pending[rq.id], self.by_token[rq.id] = nil, nil
  if self.closed then return end
  if not (self.rev2026 and self.transport.stream_cancels) then
    self:notify("notifications/cancelled", { requestId = rq.id, reason = reason })
  end
  if rq.op and not rq.op:done() then rq.op:cancel(reason) end
  log("debug", "%s: request %s (%s) cancelled upstream: %s", self.client.name, tostring(rq.id), rq.method, reason)
end

-- 2026-07-28: what every request says about us, in its _meta; encoded once
-- per connection (a core.json_raw).
local function meta_raw(conn)
  conn.meta_raw = conn.meta_raw or core.json_raw(core.encode {
    ["io.modelcontextprotocol/protocolVersion"] = REV2026,
    ["io.modelcontextprotocol/clientCapabilities"] = conn.client.capabilities,
    ["io.modelcontextprotocol/clientInfo"] = conn.client.info,
  })
  return conn.meta_raw
end

-- The same in a request's params, as it is when they have no _meta of their own.
function Conn:meta(params)
  if not self.rev2026 then return end
  if params._meta == nil then
    params._meta = meta_raw(self)
    return
  end
  local meta = copy(params._meta)
  meta["io.modelcontextprotocol/protocolVersion"] = REV2026
  meta["io.modelcontextprotocol/clientCapabilities"] = self.client.capabilities
  meta["io.modelcontextprotocol/clientInfo"] = self.client.info
  params._meta = meta
end

-- Send rq (a new id for each round).
function Conn:send_request(rq)
  if self.closed then return nil, self.closed end
  self.next_id = self.fwd and core.forward_id(self.fwd) or self.next_id + 1   -- forward.c's ids too
  rq.id, rq.response, rq.op = self.next_id, nil, nil
  local params = rq.params
  if rq.on_progress then
    params._meta = copy(params._meta)
    params._meta.progressToken = rq.id
    self.by_token[rq.id] = rq
  end
  -- tracing on: the upstream request's span names itself (before meta(),
  -- which sends a _meta-less request's shared, encoded-once _meta as it is)
  local tp, ts = core.traceparent()
  if tp then
    params._meta = copy(params._meta)
    params._meta.traceparent, params._meta.tracestate = tp, ts
  end
  self:meta(params)
  self.pending[rq.id] = rq
  -- the message table is the connection's: start encodes it at once
  local msg = self.msg or { jsonrpc = "2.0" }
  self.msg = nil
  msg.id, msg.method, msg.params = rq.id, rq.method, params
  local ok, err = self.transport.start(self, rq, msg)
  msg.params = nil
  self.msg = msg
  if not ok then
    self.pending[rq.id], self.by_token[rq.id] = nil, nil
    return nil, err
  end
  return true
end

-- Ask our own client what the upstream asked (sampling, elicitation,
-- roots) through the calling request: result, or nil, message, code, and
-- the JSON-RPC error object to answer the upstream with.
function Conn:ask_client(rq, method, params, key)
  local cap = CAPABILITY[method]
  if cap == nil then
    return nil, "unknown request " .. tostring(method), "unsupported", { code = -32601, message = "Method not found" }
  end
  if not core.client_supports(cap) then
    local why = ("the client does not offer %s"):format(cap)
    return nil, why, "unsupported", { code = -32601, message = "Method not found: " .. why }
  end
  local ok, result, msg, code, obj
  if rq.ctx then
    ok, result, msg, code, obj = pcall(rq.ctx.request, rq.ctx, method, params, { key = key })
  else
    ok, result, msg, code, obj = pcall(core.request, method, params or {})
  end
  if not ok then return nil, tostring(result), "io", { code = -32603, message = tostring(result) } end
  if result ~= nil then return result end
  if type(code) == "table" then code, obj = "rpc", code end     -- nil, message, error object
  if code == "cancelled" then msg = cancelled(msg) end
  return nil, msg or "no answer", code or "io",
         type(obj) == "table" and obj or { code = -32603, message = tostring(msg) }
end

function Conn:handle(rq, item)
  if item.kind == "progress" then
    local p = item.params
    if rq.on_progress and type(p.progress) == "number" then
      local ok, err = pcall(rq.on_progress, p.progress, p.total, p.message)
      if not ok then log("debug", "%s: on_progress: %s", self.client.name, tostring(err)) end
    end
  elseif item.kind == "log" then
    local p = item.params
    if rq.relay_logs and type(p.level) == "string" then pcall(core.log, p.level, p.data) end
  elseif item.kind == "request" then
    local msg = item.msg
    local guard = core.future(rq.stop)           -- the wait's role while our client is asked
    local result, _, _, err = self:ask_client(rq, msg.method, msg.params)
    if not guard:done() then guard:complete() end
    if not self.closed then self:reply(msg.id, result, result == nil and err or nil) end
  end
end

local function finish_op(self, rq)
  local op = rq.op
  rq.op = nil
  local ok, msg, kind = self.transport.finish(self, rq, op)
  if not ok and rq.response == nil then
    self.pending[rq.id], self.by_token[rq.id] = nil, nil
    if kind == "timeout" then self:cancel(rq, "timeout") end
    rq.gone, rq.gone_kind = msg, kind
  end
end

-- Wait until f, the timer, the request's transfer or the grace is done
-- (core.await waits under mcp.all too).
local function wait_for(f, timer, op, grace)
  if timer == nil and op == nil and grace == nil then return core.await(f) end
  if op == nil and grace == nil then return core.await(f, timer) end
  local ops = { f }
  if timer then ops[#ops + 1] = timer end
  if op then ops[#ops + 1] = op end
  if grace then ops[#ops + 1] = grace end
  return core.await(table.unpack(ops))
end

-- Wait for rq's response, meanwhile relaying what comes for it. Returns
-- the response message, or nil, message, kind. Each wait's future is the
-- request's guard while it waits: a cancel of the calling request (a
-- cancel, a timeout, an abort) cancels it, and its rq.stop the upstream
-- request.
function Conn:await_response(rq, timer)
  local grace
  while true do
    local inbox = rq.inbox
    while inbox and #inbox > 0 do self:handle(rq, table.remove(inbox, 1)) end
    if rq.op and rq.op:done() then finish_op(self, rq) end
    if rq.response and (rq.op == nil or (grace and grace:done())) then
      if rq.op then rq.op:cancel("answered") end   -- a stream left open after its response
      return rq.response
    end
    if rq.gone then return nil, rq.gone, rq.gone_kind end
    if core.cancelled() then
      local why = core.reason() or "request stopped"
      self:cancel(rq, why)
      return nil, cancelled(why), "cancelled"
    end
    local f = core.future(rq.stop)
    rq.waiter = f
    if rq.response then                            -- the response came on a stream still open
      grace = grace or core.timer(2)
    end
    wait_for(f, timer, rq.op, rq.response and grace or nil)
    rq.waiter = nil
    if f:done() then
      local _, why = f:result()
      if why then return nil, cancelled(why), "cancelled" end -- the calling request stopped: the guard cancelled upstream
    else
      f:complete()                                 -- retired
    end
    if timer and timer:done() and rq.response == nil and (rq.inbox == nil or #rq.inbox == 0) and not rq.gone then
      self:cancel(rq, "timeout")
      return nil, ("timeout: %s took longer than %g s"):format(rq.what, rq.timeout), "timeout"
    end
  end
end

-- Strip what a 2026-07-28 result says about itself, so that the result can
-- be passed on to a client of any revision.
local function plain(result)
  result.resultType, result.ttlMs, result.cacheScope = nil, nil, nil
  return result
end

local function error_text(what, e)
  if type(e) ~= "table" then return what .. ": error " .. tostring(e) end
  return ("%s: %s (%s)"):format(what, tostring(e.message), tostring(e.code))
end

-- A request still in flight upstream when it is closed (its caller aborted
-- between waits, or a raise) is cancelled there.
local RQ = { __close = function(rq)
  local conn = rq.conn
  if rq.id ~= nil and conn.pending[rq.id] == rq then conn:cancel(rq, core.reason() or "request aborted") end
end }

-- A request and its response: result, or nil, message, code (README
-- "Calling other MCP servers": "timeout", "cancelled", "closed",
-- "unreachable", "protocol", "denied", "unsupported", or "rpc" with the
-- upstream's JSON-RPC error object as a 4th value; "session" inside this
-- module: the session is gone and the request may be sent again).
-- o: timeout, on_progress, ctx, relay_logs, what, raw (a result over stdio
-- may stay JSON text: a core.json_raw, passed on as is), owned (params is
-- the caller's to give: sent without a copy), answered (the response of its
-- first round, which forward.c sent: an input_required result).
local function request(self, method, params, o)
  o = o or {}
  local meta = type(params) == "table" and params._meta or nil    -- what a retry starts from
  local rq <close> = setmetatable({
    method = method, params = o.owned and params or copy(params), ctx = o.ctx, conn = self,
    on_progress = o.on_progress, relay_logs = o.relay_logs, timeout = o.timeout, what = o.what or method, raw = o.raw,
  }, RQ)
  -- the wait's on_cancel: a cancel of the calling request cancels upstream
  rq.stop = function(reason) self:cancel(rq, reason) end
  local timer = o.timeout and o.timeout > 0 and core.timer(o.timeout) or nil
  local res, msg, kind = o.answered, nil, nil
  for _ = 1, MAX_ROUNDS do
    if res == nil then
      local ok, err = self:send_request(rq)
      if not ok then return nil, rq.what .. ": " .. err, "closed" end
      res, msg, kind = self:await_response(rq, timer)
      if res == nil then return nil, msg, kind end
    end
    if res.error ~= nil then return nil, error_text(rq.what, res.error), "rpc", res.error end
    local result = res.result
    if type(result) ~= "table" then return nil, rq.what .. ": the upstream's result is not an object", "protocol" end
    if result.resultType ~= "input_required" then return plain(result) end
    -- 2026-07-28: answer its inputRequests through our client, then retry
    local answers = {}
    for key, ir in pairs(type(result.inputRequests) == "table" and result.inputRequests or {}) do
      local ans, why, code, obj = self:ask_client(rq, type(ir) == "table" and ir.method, type(ir) == "table" and ir.params,
                                                  "upstream_" .. key)
      if ans == nil and code == "cancelled" then return nil, why, code end
      if ans == nil then
        return nil, ("%s: the upstream needs %s: %s"):format(rq.what, tostring(ir.method), why), code, obj
      end
      answers[key] = ans
    end
    if core.cancelled() then return nil, cancelled(), "cancelled" end
    rq.params = copy(params)
    rq.params._meta = meta
    rq.params.inputResponses = answers
    rq.params.requestState = result.requestState
    res = nil
  end
  return nil, rq.what .. ": too many input-required rounds", "protocol"
end

-- Does a failed server/discover let the handshake fall back to initialize?
-- Yes when the upstream answered it (a pre-2026 one refuses it); not when
-- the connection closed or the request timed out or was cancelled.
local function falls_back(conn, kind)
  return not conn.closed and (kind == "rpc" or kind == "protocol")
end

-- A request's outcome for /metrics: its error.type (nil when it did well,
-- or failed as expected: handled).
local function counted(method, name, t0, res, kind, obj, handled)
  local outcome = (res ~= nil or handled) and "ok" or (kind == "timeout" or kind == "cancelled") and kind or "error"
  core.count("luamcp_upstream_requests_total", outcome)
  local etype
  if handled then
    etype = nil
  elseif res == nil then
    etype = kind == "rpc" and type(obj) == "table" and math.type(obj.code) and tostring(obj.code) or kind or "error"
  elseif method == "tools/call" and res.isError == true then
    etype = "tool_error"
  end
  core.client_duration(method, name, etype, core.mono() - t0)
  return etype
end

-- The CLIENT span of a request (tracing on): "tools/call NAME"; nil when off.
local function span_of(self, method, params)
  if not core.traced() then return nil end
  local target = type(params) == "table" and (params.name or params.uri) or nil
  local url = self.client.opts.url
  local attrs = { ["mcp.method.name"] = method, ["network.transport"] = url and "tcp" or "pipe",
                  ["server.address"] = url and url:match("^https?://%[?([^/%]]-)%]?:?%d*/") or nil }
  if method == "tools/call" then attrs["gen_ai.tool.name"] = target end
  if type(target) ~= "string" then target = nil end
  return core.span_begin(target and method .. " " .. target or method, attrs, "client")
end

-- The same, in its span, counted by outcome for /metrics. o.fallback
-- (the handshake's server/discover): the method the client falls back to
-- when the upstream refuses this one; such a refusal is handled, not an
-- error (OpenTelemetry's "Recording errors"): the span's status stays
-- unset, with the code (rpc.response.status_code) and an event "fallback".
function Conn:request(method, params, o)
  local span = span_of(self, method, params)   -- not <close>: a raise leaves it to its __gc
  local t0 = core.mono()
  local res, msg, kind, obj = request(self, method, params, o)
  local handled = res == nil and o ~= nil and o.fallback ~= nil and falls_back(self, kind)
  local etype = counted(method, method == "tools/call" and type(params) == "table" and type(params.name) == "string"
                        and params.name or nil, t0, res, kind, obj, handled)
  if span and handled then
    local code = type(obj) == "table" and math.type(obj.code) and tostring(obj.code) or nil
    if code then span:set{ ["rpc.response.status_code"] = code } end
    span:event("fallback", { ["fallback.to"] = o.fallback, reason = msg })
  end
  if span and etype then span:fail(etype, msg) end
  if span then span:finish() end
  return res, msg, kind, obj
end

-- A tools/call the forward path in C sent (src/lua/forward.c, mount.lua)
-- whose outcome is not a result passed on: m is the response (decoded), or
-- why the request ended (kind "closed" or "cancelled"); t0 in seconds. As
-- request() and Conn:request give it, counted alike.
function M.forwarded(what, name, m, kind, t0)
  local res, msg, obj
  if kind == "line" then
    if m.error ~= nil then msg, kind, obj = error_text(what, m.error), "rpc", m.error
    elseif type(m.result) ~= "table" then msg, kind = what .. ": the upstream's result is not an object", "protocol"
    else res, kind = plain(m.result), nil end
  else
    msg = m
  end
  counted("tools/call", name, t0, res, kind, obj)
  return res, msg, kind, obj
end

-- 2026-07-28: a subscriptions/listen request that stays in flight (stdio).
function Conn:listen()
  local rq = { method = "subscriptions/listen", listen = true,
               params = { notifications = { toolsListChanged = true, promptsListChanged = true,
                                            resourcesListChanged = true } } }
  self:send_request(rq)
end

---------------------------------------------------------------------------
-- The client.

local Client = {}
-- a function, not the table itself: obj.__index must not hand a sandboxed
-- plugin the methods every plugin shares
Client.__index = function(_, k) return Client[k] end

local function result_server(conn, res)
  local meta = type(res._meta) == "table" and res._meta or {}
  return {
    revision = conn.revision,
    capabilities = type(res.capabilities) == "table" and res.capabilities or {},
    serverInfo = res.serverInfo or meta["io.modelcontextprotocol/serverInfo"],
    instructions = res.instructions,
    supportedVersions = res.supportedVersions,
  }
end

local function has(list, v)
  for _, x in ipairs(type(list) == "table" and list or {}) do if x == v then return true end end
  return false
end

-- Open a connection and agree on a revision: conn, or nil, message, kind.
function Client:_open()
  local T = self.transport
  local conn = setmetatable({ client = self, transport = T, pending = {}, by_token = {}, next_id = 0,
                              handshake = true }, Conn)
  local ok, err = T.open(conn)
  if not ok then return nil, self.name .. ": " .. err, "unreachable" end
  local proto, ct = self.protocol, self.opts.connect_timeout or 30
  local function give_up(msg, kind)
    conn:fail(msg, kind)
    if kind == "cancelled" then return nil, cancelled(msg), kind end
    if conn.junk then
      msg = msg .. "; it does not speak MCP (it wrote: " .. conn.junk .. ")"
      if kind == "closed" then kind = "protocol" end
    end
    if kind == "session" or kind == "rpc" then kind = "protocol" end
    return nil, self.name .. ": " .. msg, kind
  end
  if proto == "auto" or proto == REV2026 then
    conn.rev2026, conn.revision = true, REV2026
    local res, msg, kind = conn:request("server/discover", {}, { timeout = ct,
                                                                 fallback = proto == "auto" and "initialize" or nil })
    if res and has(res.supportedVersions, REV2026) then
      conn.server = result_server(conn, res)
      conn.handshake = false
      return conn
    end
    if proto == REV2026 then
      return give_up("does not speak " .. REV2026 .. ": " .. (msg or "server/discover does not list it"), "protocol")
    end
    if not falls_back(conn, kind) then
      return give_up(msg or conn.closed, kind)              -- not an answer: no point asking again
    end
    conn.rev2026, conn.revision = false, nil
  end
  local first
  for _, v in ipairs(proto == "auto" and SESSION_REVISIONS or { proto }) do
    local res, msg, kind = conn:request("initialize", {
      protocolVersion = v, capabilities = self.capabilities, clientInfo = self.info,
    }, { timeout = ct })
    if res then
      local rev = res.protocolVersion
      if not SESSION[rev] or (proto ~= "auto" and rev ~= proto) then
        return give_up(("initialize: the upstream answered revision %s (%s wanted)"):format(tostring(rev),
                       proto == "auto" and "2024-11-05 to 2025-11-25" or proto), "protocol")
      end
      conn.revision = rev
      conn.server = result_server(conn, res)
      T.initialized(conn, res)
      local sent, why = conn:notify("notifications/initialized")
      if not sent then return give_up(why, "closed") end
      conn.handshake = false
      return conn
    end
    first = first or msg
    if conn.closed or kind ~= "rpc" then return give_up(msg or conn.closed, kind) end
  end
  return give_up(first, "protocol")
end

-- The live connection, connecting first if need be: conn, or nil, message, kind.
function Client:_use()
  for _ = 1, 3 do
    if self.closed then return nil, self.name .. ": the client is closed", "closed" end
    local conn = self.conn
    if conn and not conn.closed then
      self.transport.refresh(conn)
      return conn
    end
    local pending = self.connecting
    if pending then                                -- another call connects: wait for it
      local f = core.future()
      pending.waiters[#pending.waiters + 1] = f
      local _, why = await.wait(f)
      if why then return nil, cancelled(why), "cancelled" end
      if pending.failed and pending.kind ~= "cancelled" then return nil, pending.failed, pending.kind end
    else
      pending = { waiters = {} }
      self.connecting = pending
      local c, msg, kind = self:_open()
      self.connecting = nil
      pending.failed, pending.kind = msg, kind
      for _, f in ipairs(pending.waiters) do if not f:done() then f:complete() end end
      if not c then return nil, msg, kind end
      self.conn, self.server = c, c.server
      if self.link and c.rev2026 and not c.closed then   -- its tools/calls may go from C now (forward.c)
        c.fwd = core.forward_attach(self.link, c.proc, meta_raw(c)[1], c.next_id, self.name)
      end
      self.generation = self.generation + 1
      log("info", "%s: connected (revision %s%s)", self.name, c.revision,
          c.server.serverInfo and (", " .. tostring(c.server.serverInfo.name) .. " " ..
                                   tostring(c.server.serverInfo.version)) or "")
      if self.watching then self.transport.watch(c) end
      if self.generation > 1 then self:_notified("connected", { generation = self.generation }) end
      return c
    end
  end
  return nil, self.name .. ": cannot connect", "unreachable"
end

-- One request, reconnecting once when the session was gone.
function Client:_request(method, params, o)
  local owned = o and o.owned                       -- params goes out as is: its _meta put back for a retry
  local meta = owned and params._meta or nil
  for attempt = 1, 2 do
    local conn, msg, kind = self:_use()
    if not conn then return nil, msg, kind end
    if attempt == 2 and owned then params._meta = meta end
    local res, emsg, code, obj = conn:request(method, params, o)
    if code == "session" and attempt == 2 then code = "closed" end
    if res ~= nil or code ~= "session" then return fail.pass(res, emsg, code, obj) end
  end
end

function Client:_notified(method, params)
  local fn = self.on_notification
  if fn then
    local ok, err = pcall(fn, method, params)
    if not ok then log("warning", "%s: on_notification: %s", self.name, tostring(err)) end
  end
end

-- Every page of a list method: the items, or nil, message, code.
function Client:_list(method, field, o)
  local items, cursor = array(), nil
  for _ = 1, 1000 do
    local res, msg, code, obj = self:_request(method, { cursor = cursor }, o)
    if not res then return fail.pass(nil, msg, code, obj) end
    for _, item in ipairs(type(res[field]) == "table" and res[field] or {}) do items[#items + 1] = item end
    cursor = res.nextCursor
    if cursor == nil or cursor == core.null then return items end
  end
  return nil, method .. ": too many pages", "protocol"
end

local function req_opts(self, o, what)
  o = o or {}
  return { timeout = o.timeout or self.opts.timeout, on_progress = o.on_progress, ctx = o.ctx,
           relay_logs = o.relay_logs, what = what, raw = o.raw, owned = false }
end

function Client:connect()
  local conn, msg, code = self:_use()
  if not conn then return nil, msg, code end
  return conn.server
end

function Client:list_tools(o)
  local tools, msg, code, obj = self:_list("tools/list", "tools", req_opts(self, o, "tools/list"))
  if tools then self.tools = {} for _, t in ipairs(tools) do self.tools[t.name] = t end end
  return tools, msg, code, obj
end

function Client:call(name, args, o)
  if type(name) ~= "string" then fail.raise("client:call: name must be a string") end
  if args ~= nil and type(args) ~= "table" then fail.raise("client:call: args must be a table") end
  local opts = req_opts(self, o, "tools/call " .. name)
  opts.owned = true
  return self:_request("tools/call", { name = name, arguments = args or {} }, opts)
end

-- A mounted tool's call (mount.lua): o is req_opts' table, made once per
-- call by the mount, with what = "tools/call NAME".
function Client:_forward(name, args, o)
  return self:_request("tools/call", { name = name, arguments = args or {} }, o)
end

function Client:list_resources(o)
  return self:_list("resources/list", "resources", req_opts(self, o, "resources/list"))
end

function Client:list_resource_templates(o)
  return self:_list("resources/templates/list", "resourceTemplates", req_opts(self, o, "resources/templates/list"))
end

function Client:read(uri, o)
  if type(uri) ~= "string" then fail.raise("client:read: uri must be a string") end
  return self:_request("resources/read", { uri = uri }, req_opts(self, o, "resources/read " .. uri))
end

function Client:list_prompts(o)
  return self:_list("prompts/list", "prompts", req_opts(self, o, "prompts/list"))
end

function Client:get_prompt(name, args, o)
  if type(name) ~= "string" then fail.raise("client:get_prompt: name must be a string") end
  return self:_request("prompts/get", { name = name, arguments = args },
                       req_opts(self, o, "prompts/get " .. name))
end

-- Any other request: result, or nil, message, code [, error object].
function Client:request(method, params, o)
  return self:_request(method, params or {}, req_opts(self, o, method))
end

-- End the connection (the child is stopped, the HTTP session deleted); the
-- client cannot be used afterwards.
function Client:close()
  self.closed = true
  if self.conn then self.conn:fail("closed by its owner", "closed") end
end

-- Ended and reconnected on next use (a mount's reload, a test).
function Client:reset(why)
  if self.conn then self.conn:fail(why or "reset", "closed") end
end

---------------------------------------------------------------------------

-- Clients made while a plugin file runs are recorded for it (server.lua
-- closes them when the file is reloaded or removed).
local collecting

function M.collect(list)
  local prev = collecting
  collecting = list
  return prev
end

local function check(opts)
  if type(opts) ~= "table" then fail.raise("mcp.connect: expects a table") end
  local cmd, url = opts.command, opts.url
  if (cmd == nil) == (url == nil) then fail.raise("mcp.connect: give command = {...} or url = \"...\"") end
  if cmd ~= nil then
    if type(cmd) == "string" then cmd = { cmd } end
    if type(cmd) ~= "table" or #cmd == 0 then fail.raise("mcp.connect: command must be a list {\"prog\", \"arg\", ...}") end
    for i, a in ipairs(cmd) do
      if type(a) ~= "string" and type(a) ~= "number" then fail.raise("mcp.connect: command[" .. i .. "] must be a string") end
    end
  elseif type(url) ~= "string" or not url:find("^https?://") then
    fail.raise("mcp.connect: url must be an http:// or https:// URL")
  end
  local proto = opts.protocol or "auto"
  if proto ~= "auto" and proto ~= REV2026 and not SESSION[proto] then
    fail.raise("mcp.connect: protocol must be \"auto\" or one of " .. table.concat(M.REVISIONS, ", "))
  end
  for _, k in ipairs { "timeout", "connect_timeout" } do
    if opts[k] ~= nil and (type(opts[k]) ~= "number" or opts[k] < 0) then
      fail.raise("mcp.connect: " .. k .. " must be a number of seconds")
    end
  end
  for _, k in ipairs { "env", "headers", "capabilities" } do
    if opts[k] ~= nil and type(opts[k]) ~= "table" then fail.raise("mcp.connect: " .. k .. " must be a table") end
  end
  return cmd, proto
end

-- mcp.connect(opts): a client; nothing happens until its first use.
function M.connect(opts)
  local cmd, proto = check(opts)
  opts = copy(opts)
  opts.command = cmd
  local name = opts.name
  if name == nil then
    name = cmd and tostring(cmd[1]):match("[^/]*$") or opts.url:match("^https?://([^/]+)")
  end
  local client = setmetatable({
    opts = opts, name = "upstream " .. name, protocol = proto, generation = 0,
    transport = require(cmd and "mcp.client_stdio" or "mcp.client_http"),
    capabilities = opts.capabilities or { sampling = {}, elicitation = {}, roots = {} },
    info = { name = "luamcp", version = core.version },
    on_notification = opts.on_notification, watching = opts.on_notification ~= nil,
    link = cmd and core.forward_link() or nil,     -- a mount's calls may go on its connection from C
  }, Client)
  if collecting then collecting[#collecting + 1] = client end
  return client
end

M.Client = Client
return M
