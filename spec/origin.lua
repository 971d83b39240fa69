-- A real HTTP/1.1 server on loopback, in the spec's own process (luv), for
-- the specs of ctx:http: it serves while the spec waits on the server under
-- test, and records every connection it accepted and when it closed.
--
--   local O = require "spec.origin"
--   local o = O.start()              -- o.url "http://127.0.0.1:PORT"
--   ... o.conns (each {opened=, closed=, paths={...}}), o.requests ...
--   o:stop()
-- A request in absolute form (the origin used as a proxy) is served by its
-- path, with req.proxied set to the target.
--
-- Paths:
--   /hello                 "hello" (text/plain)
--   /json                  {"n": 9007199254740993, "s": "x"}
--   /echo, /echo/...       the request as JSON: method, path (as sent), query, headers, body
--   /status/N              status N, body "status N"
--   /slow?n=&delay=        n chunks "chunk i\n", delay seconds apart (chunked)
--   /hang                  the headers of a chunked answer, then nothing
--   /silent                nothing at all (the request is read)
--   /redirect?n=           302 to /redirect?n=n-1, then to /hello at 0
--   /redirect-to?url=      302 to url
--   /gzip                  "hello gzip " x 100, Content-Encoding: gzip
--   /huge?bytes=           that many bytes
--   /sse?n=&delay=         n SSE events (event: tick, id: i, data: {"i": i}), then the end
local uv = require "luv"
local cjson = require "cjson"

local O = {}
O.__index = O

local function now() return uv.hrtime() / 1e9 end

local function parse_query(q)
  local t = {}
  for k, v in (q or ""):gmatch("([^&=]+)=?([^&]*)") do
    v = v:gsub("+", " "):gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
    k = k:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
    if t[k] then
      if type(t[k]) ~= "table" then t[k] = { t[k] } end
      table.insert(t[k], v)
    else
      t[k] = v
    end
  end
  return t
end

local gzipped
local function gzip_body()
  if not gzipped then
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "wb"))
    f:write(("hello gzip "):rep(100))
    f:close()
    local p = assert(io.popen("gzip -c " .. tmp, "r"))
    gzipped = p:read("a")
    p:close()
    os.remove(tmp)
  end
  return gzipped
end

local function head(status, headers, len)
  local t = { ("HTTP/1.1 %d X\r\n"):format(status) }
  for k, v in pairs(headers or {}) do t[#t + 1] = k .. ": " .. v .. "\r\n" end
  if len then t[#t + 1] = "Content-Length: " .. len .. "\r\n" end
  t[#t + 1] = "\r\n"
  return table.concat(t)
end

-- One connection: requests parsed in order, answered one at a time.
local function serve(o, tcp)
  local conn = { opened = now(), paths = {}, tcp = tcp }
  o.conns[#o.conns + 1] = conn
  local buf, busy = "", false
  local timers = {}

  local function write(s)
    if not conn.closed and not tcp:is_closing() then tcp:write(s) end
  end
  local function after(seconds, fn)
    local t = uv.new_timer()
    timers[#timers + 1] = t
    t:start(math.floor(seconds * 1000), 0, function()
      t:close()
      if not conn.closed then fn() end
    end)
  end
  local function close()
    if conn.closed then return end
    conn.closed = now()
    for _, t in ipairs(timers) do if not t:is_closing() then t:close() end end
    if not tcp:is_closing() then tcp:close() end
  end
  conn.close = close

  local next_request
  local function done()
    busy = false
    next_request()
  end

  local function answer(req)
    local target = req.target
    if target:match("^https?://") then          -- absolute form: we are the proxy
      req.proxied = target
      target = target:match("^https?://[^/]*(.*)$")
      if target == "" then target = "/" end
    end
    local path, q = target:match("^([^?]*)%??(.*)$")
    q = parse_query(q)
    req.path, req.query = path, q
    conn.paths[#conn.paths + 1] = path
    o.requests[#o.requests + 1] = req
    if path == "/hello" then
      write(head(200, { ["Content-Type"] = "text/plain" }, 5) .. "hello")
      return done()
    elseif path == "/json" then
      local b = '{"n": 9007199254740993, "s": "x"}'
      write(head(200, { ["Content-Type"] = "application/json" }, #b) .. b)
      return done()
    elseif path == "/echo" or path:find("^/echo/") then
      local b = cjson.encode{ method = req.method, path = path, query = q, headers = req.headers,
                              body = req.body }
      write(head(200, { ["Content-Type"] = "application/json", ["X-Twice"] = "a" }, #b):gsub(
        "X%-Twice: a\r\n", "X-Twice: a\r\nX-Twice: b\r\n") .. b)
      return done()
    elseif path:match("^/status/%d+$") then
      local n = tonumber(path:match("%d+"))
      local b = "status " .. n
      write(head(n, { ["Content-Type"] = "text/plain" }, #b) .. b)
      return done()
    elseif path == "/slow" or path == "/sse" then
      local n, delay = tonumber(q.n or "3"), tonumber(q.delay or "0.05")
      local sse = path == "/sse"
      write(head(200, { ["Content-Type"] = sse and "text/event-stream" or "text/plain",
                        ["Transfer-Encoding"] = "chunked" }))
      local i = 0
      local function step()
        i = i + 1
        if i > n then write("0\r\n\r\n"); return done() end
        local piece = sse and ("event: tick\nid: %d\ndata: {\"i\": %d}\n\n"):format(i, i)
                      or ("chunk %d\n"):format(i)
        write(("%x\r\n%s\r\n"):format(#piece, piece))
        after(delay, step)
      end
      step()
      return
    elseif path == "/hang" then
      write(head(200, { ["Content-Type"] = "text/plain", ["Transfer-Encoding"] = "chunked" }))
      return
    elseif path == "/silent" then
      return
    elseif path == "/redirect" then
      local n = tonumber(q.n or "1")
      local loc = n <= 0 and "/hello" or ("/redirect?n=" .. (n - 1))
      write(head(302, { Location = loc }, 0))
      return done()
    elseif path == "/redirect-to" then
      write(head(302, { Location = q.url }, 0))
      return done()
    elseif path == "/gzip" then
      local b = gzip_body()
      write(head(200, { ["Content-Type"] = "text/plain", ["Content-Encoding"] = "gzip" }, #b) .. b)
      return done()
    elseif path == "/huge" then
      local n = tonumber(q.bytes or "1048576")
      write(head(200, { ["Content-Type"] = "application/octet-stream" }, n))
      local block = ("x"):rep(65536)
      local sent = 0
      while sent < n do
        local k = math.min(#block, n - sent)
        write(k == #block and block or block:sub(1, k))
        sent = sent + k
      end
      return done()
    end
    write(head(404, { ["Content-Type"] = "text/plain" }, 9) .. "not found")
    return done()
  end

  next_request = function()
    if busy or conn.closed then return end
    local e = buf:find("\r\n\r\n", 1, true)
    if not e then return end
    local headtext = buf:sub(1, e - 1)
    local method, target = headtext:match("^(%u+) (%S+) HTTP/1%.%d")
    local req = { method = method, target = target, headers = {}, at = now(), conn = conn }
    for line in headtext:gmatch("\r\n([^\r\n]+)") do
      local k, v = line:match("^([^:]+):%s*(.-)%s*$")
      if k then req.headers[k:lower()] = v end
    end
    local len = tonumber(req.headers["content-length"] or "0")
    if #buf < e + 3 + len then return end
    req.body = buf:sub(e + 4, e + 3 + len)
    buf = buf:sub(e + 4 + len)
    busy = true
    answer(req)
  end

  tcp:read_start(function(err, data)
    if err or not data then close(); return end
    buf = buf .. data
    next_request()
  end)
end

function O.start()
  local o = setmetatable({ conns = {}, requests = {} }, O)
  o.server = uv.new_tcp()
  assert(o.server:bind("127.0.0.1", 0))
  o.port = o.server:getsockname().port
  o.url = "http://127.0.0.1:" .. o.port
  o.server:listen(128, function(err)
    if err then return end
    local tcp = uv.new_tcp()
    o.server:accept(tcp)
    serve(o, tcp)
  end)
  return o
end

-- The connections that served path, in order.
function O:conns_of(path)
  local out = {}
  for _, c in ipairs(self.conns) do
    for _, p in ipairs(c.paths) do
      if p == path then out[#out + 1] = c; break end
    end
  end
  return out
end

-- Connections not closed yet.
function O:open_count()
  local n = 0
  for _, c in ipairs(self.conns) do if not c.closed then n = n + 1 end end
  return n
end

function O:stop()
  for _, c in ipairs(self.conns) do c.close() end
  if not self.server:is_closing() then self.server:close() end
  uv.run("nowait")
end

return O
