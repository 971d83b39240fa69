-- The Streamable HTTP transport of mcp.connect (lua/mcp/client.lua), on
-- core.http (src/lua/httpc.c).
--
-- Each request is a POST whose answer is JSON or an SSE stream carrying the
-- request's progress, logs, requests to the client and its response. The
-- POST is an operation of the calling request, so a stopped call closes its
-- stream: for a 2026-07-28 request that is the cancellation itself; in a
-- session (2025 revisions) notifications/cancelled says it as well. The
-- session's id and revision go in the Mcp-Session-Id and
-- MCP-Protocol-Version headers; a 404 means the session is gone (the client
-- reconnects). Notifications tied to no request come on a GET stream
-- (sessions) or a subscriptions/listen POST (2026-07-28), which belong to no
-- call (background transfers).
local core = require "mcp.core"

local H = { name = "http", stream_cancels = true }

local REV2026 = "2026-07-28"
local NAMED = { ["tools/call"] = "name", ["prompts/get"] = "name", ["resources/read"] = "uri" }

-- core.http for conn: a mount's requests held to its sandboxed plugin's
-- grants, whether or not a call of it is running (client.sandbox, mount.lua).
local function http(conn, req)
  req.sandbox = conn.client.sandbox
  return core.http(req)
end

-- A header value: visible ASCII as is, anything else as =?base64?...?=.
local function header_value(v)
  v = tostring(v)
  if v:find("^[\x21-\x7e][\x20-\x7e]*$") and not v:find("%s$") then return v end
  local mcp = require "mcp"
  return "=?base64?" .. mcp.base64(v) .. "?="
end

-- The x-mcp-header properties of a tool's input schema: {name, path}.
local function param_headers(schema, path, out)
  if type(schema) ~= "table" or type(schema.properties) ~= "table" then return out end
  for k, p in pairs(schema.properties) do
    if type(p) == "table" then
      local sub = { table.unpack(path) }
      sub[#sub + 1] = k
      if type(p["x-mcp-header"]) == "string" then out[#out + 1] = { name = p["x-mcp-header"], path = sub } end
      param_headers(p, sub, out)
    end
  end
  return out
end

local function add_param_headers(conn, h, params)
  local tool = conn.client.tools and conn.client.tools[params.name]
  if not tool then return end
  for _, d in ipairs(param_headers(tool.inputSchema, {}, {})) do
    local v = params.arguments
    for _, k in ipairs(d.path) do v = type(v) == "table" and v[k] or nil end
    if v ~= nil and v ~= core.null then
      if type(v) == "boolean" then v = v and "true" or "false"
      elseif math.type(v) == "float" and v == math.floor(v) then v = string.format("%d", v) end
      h["Mcp-Param-" .. d.name] = header_value(v)
    end
  end
end

local function headers(conn, msg, accept)
  local h = { ["Accept"] = accept or "application/json, text/event-stream" }
  if msg then h["Content-Type"] = "application/json" end
  for k, v in pairs(conn.client.opts.headers or {}) do h[k] = v end
  if conn.rev2026 then
    h["MCP-Protocol-Version"] = REV2026
    if msg and msg.method then
      h["Mcp-Method"] = msg.method
      local field = NAMED[msg.method]
      local params = msg.params or {}
      if field and params[field] ~= nil then h["Mcp-Name"] = header_value(params[field]) end
      if msg.method == "tools/call" then add_param_headers(conn, h, params) end
    end
  else
    if conn.session_id then h["Mcp-Session-Id"] = conn.session_id end
    if conn.revision and conn.revision >= "2025-06-18" then h["MCP-Protocol-Version"] = conn.revision end
  end
  return h
end

local function on_event(conn, ev, rq)
  if ev.data == nil or ev.data == "" then return end   -- a priming event
  local msg, err = core.decode(ev.data)
  if msg == nil then
    conn.junk = conn.junk or ev.data:sub(1, 200)
    core.log_stderr("info", conn.client.name .. ": an SSE event that is not JSON: " .. tostring(err))
    return
  end
  conn:on_message(msg, rq)
end

-- Transfers of no call (notifications, answers, streams) are kept here
-- until done: a dropped handle would cancel its transfer.
local function keep(conn, op)
  for o in pairs(conn.bg) do if o:done() then conn.bg[o] = nil end end
  conn.bg[op] = true
end

function H.open(conn)
  conn.bg = {}
  return true
end

function H.start(conn, rq, msg)
  local body, err = core.encode(msg)
  if not body then return nil, "cannot encode the request: " .. tostring(err) end
  local op, emsg = http(conn, {
    url = conn.client.opts.url, method = "POST", headers = headers(conn, msg), body = body,
    timeout = 0, max_bytes = conn.client.opts.max_bytes,
    on_sse = function(ev) on_event(conn, ev, rq) end,
  })
  if not op then return nil, emsg end
  rq.op = op
  return true
end

-- A transfer's failure code as a client's: the contract's words pass, curl's
-- names are mapped, anything else ended the connection.
local TRANSFER_CODE = {
  couldnt_resolve_host = "unreachable", couldnt_resolve_proxy = "unreachable", couldnt_connect = "unreachable",
  peer_failed_verification = "tls", ssl_connect_error = "tls", ssl_cacert_badfile = "tls",
  got_nothing = "protocol", weird_server_reply = "protocol", too_many_redirects = "protocol",
}
local PASSED = { unreachable = true, tls = true, too_large = true, denied = true, protocol = true, closed = true }

local function transfer_code(code)
  return TRANSFER_CODE[code] or PASSED[code] and code or "closed"
end

local function snippet(s)
  s = tostring(s or ""):gsub("%s+", " ")
  return #s > 200 and s:sub(1, 200) .. "..." or s
end

-- The POST of rq is done: its answer. true, or nil, message, kind.
function H.finish(conn, rq, op)
  local res, msg, code = op:result()
  if not res then
    if code == "cancelled" then return nil, msg, "cancelled" end
    if code == "timeout" then return nil, "timeout: " .. rq.what, "timeout" end
    return nil, ("%s: %s"):format(rq.what, msg), transfer_code(code)
  end
  local st, ct = res.status, res.headers["content-type"] or ""
  if st == 404 and conn.session_id then
    conn:fail("its session is gone (HTTP 404)", "session")
    return nil, rq.what .. ": the upstream session is gone", "session"
  end
  if st >= 200 and st < 300 then
    if rq.method == "initialize" then conn.session_id = res.headers["mcp-session-id"] end
    if ct:find("text/event-stream", 1, true) then
      if rq.response == nil then return nil, rq.what .. ": the upstream's stream ended without a response", "closed" end
      return true
    end
    if st == 202 then return nil, rq.what .. ": HTTP 202 and no response", "protocol" end
    local m, err = core.decode(res.body)
    if m == nil then return nil, rq.what .. ": the answer is not JSON: " .. tostring(err), "protocol" end
    conn:on_message(m, rq)
    if rq.response == nil then return nil, rq.what .. ": the answer is not its response: " .. snippet(res.body), "protocol" end
    return true
  end
  local m = core.decode(res.body or "")            -- a JSON-RPC error with a 4xx
  if st == 401 or st == 403 then
    local why = type(m) == "table" and type(m.error) == "table" and m.error.message or snippet(res.body)
    return nil, ("%s: HTTP %d: %s"):format(rq.what, st, tostring(why)), "denied"
  end
  if type(m) == "table" and type(m.error) == "table" then
    rq.response = { jsonrpc = "2.0", id = rq.id, error = m.error }
    return true
  end
  return nil, ("%s: HTTP %d: %s"):format(rq.what, st, snippet(res.body)), "protocol"
end

-- A message that is not a request (a notification, an answer): a POST of
-- no call, not waited for.
function H.send(conn, msg)
  local body = core.encode(msg)
  local op, err = http(conn, {
    url = conn.client.opts.url, method = "POST", headers = headers(conn, msg), body = body,
    background = true, timeout = 30,
  })
  if not op then return nil, err end
  keep(conn, op)
  return true
end

-- A notification waited for (notifications/initialized: the session is
-- ready once it is accepted).
function H.notify(conn, msg)
  if msg.method ~= "notifications/initialized" then return H.send(conn, msg) end
  local await = require "mcp.await"
  local op, err = http(conn, {
    url = conn.client.opts.url, method = "POST", headers = headers(conn, msg), body = core.encode(msg),
    timeout = 30,
  })
  if not op then return nil, err end
  local res, emsg = await.wait(op)
  if not res then return nil, emsg end
  if res.status >= 300 then return nil, ("notifications/initialized: HTTP %d"):format(res.status) end
  return true
end

function H.initialized() end                      -- the session id came with the answer (H.finish)

-- The stream of notifications tied to no request.
local function open_stream(conn)
  conn.watch_at = core.now()
  local o, op = conn.client.opts
  local function on_sse(ev) on_event(conn, ev, nil) end
  if conn.rev2026 then
    local params = { notifications = { toolsListChanged = true, promptsListChanged = true,
                                       resourcesListChanged = true } }
    conn:meta(params)
    local msg = { jsonrpc = "2.0", id = "listen", method = "subscriptions/listen", params = params }
    op = http(conn, { url = o.url, method = "POST", headers = headers(conn, msg), body = core.encode(msg),
                      background = true, timeout = 0, on_sse = on_sse })
  else
    op = http(conn, { url = o.url, method = "GET", headers = headers(conn, nil, "text/event-stream"),
                      background = true, timeout = 0, on_sse = on_sse })
  end
  conn.watch_op = op
end

function H.watch(conn)
  conn.watching = true
  open_stream(conn)
end

-- Before each use: a notification stream that ended is opened again (not
-- more than once a second; never when the server refused it).
function H.refresh(conn)
  local op = conn.watch_op
  if not conn.watching or op == nil or not op:done() or conn.no_stream then return end
  local res = op:result()
  if res and (res.status == 405 or res.status == 404 or res.status == 400) then
    conn.no_stream = true
    return
  end
  if core.now() - (conn.watch_at or 0) >= 1 then open_stream(conn) end
end

function H.close(conn)
  if conn.watch_op and not conn.watch_op:done() then conn.watch_op:cancel("connection closed") end
  conn.watch_op = nil
  if conn.session_id and not conn.rev2026 then          -- end the session
    local op = http(conn, { url = conn.client.opts.url, method = "DELETE", headers = headers(conn, nil),
                            background = true, timeout = 5 })
    if op then keep(conn, op) end
  end
end

return H
