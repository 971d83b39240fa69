-- OAuth for the specs: a real authorization server from npm
-- (oauth2-mock-server, spec/auth/auth_server.mjs, on Node through
-- spec/node_helper.lua) that mints signed tokens with given claims, and
-- luamcp started as its resource server. auth_spec.lua and the specs that
-- need a ctx.auth (middleware_spec.lua) use it.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local N = require "spec.node_helper"
local uv, cjson = H.uv, H.cjson
local assert = require "luassert"

-- One HTTP exchange on a fresh connection. headers: a map. Returns the response.
local function http(port, method, path, body, headers)
  local c = HH.connect(port)
  local h = { { "Host", "127.0.0.1:" .. port } }
  for k, v in pairs(headers or {}) do h[#h + 1] = { k, v } end
  if body then h[#h + 1] = { "Content-Length", tostring(#body) } end
  c:send(HH.request_text { method = method, path = path, headers = h, body = body })
  local r, why = c:response()
  if not r then error(method .. " " .. path .. ": no response: " .. tostring(why), 2) end
  r:wait_done()
  c:close()
  return r
end

-- The authorization server (a node process; its admin listener mints tokens).
local AS = {}
AS.__index = AS

local function as_start(env)
  local stdin, stdout = uv.new_pipe(false), uv.new_pipe(false)
  local out, exited = "", false
  local proc = assert(uv.spawn(env.node, { args = { env.dir .. "/auth_server.mjs" }, cwd = env.dir,
                                           stdio = { stdin, stdout, 2 } },
                               function() exited = true end))
  stdout:read_start(function(_, d) if d then out = out .. d end end)
  H.run_until(function() return out:find("\n") or exited end, 30)
  local ok, info = pcall(cjson.decode, out:match("[^\n]+") or "")
  if not ok or type(info) ~= "table" then
    error("the authorization server did not start: " .. out, 2)
  end
  info.port = tonumber(info.issuer:match(":(%d+)$"))
  info.admin_port = tonumber(info.admin:match(":(%d+)$"))
  info.proc, info.stdin, info.stdout = proc, stdin, stdout
  info.exited = function() return exited end
  return setmetatable(info, AS)
end

function AS:stop()
  if not self.exited() then self.proc:kill("sigterm") end
  H.run_until(self.exited, 5)
  for _, h in ipairs { self.stdin, self.stdout, self.proc } do if not h:is_closing() then h:close() end end
  uv.run("nowait")
end

function AS:post(path, t)
  local r = http(self.admin_port, "POST", path, cjson.encode(t or {}), { ["Content-Type"] = "application/json" })
  assert.are.equal(200, r.status, r.body)
  return cjson.decode(r.body)
end

-- A token signed by the authorization server with these claims (nil: left
-- out); kid: one of its keys.
function AS:mint(claims, opts)
  opts = opts or {}
  return self:post("/mint", { claims = claims, kid = opts.kid, expiresIn = opts.expiresIn }).token
end

function AS:hits(path) return self:post("/hits")[path] or 0 end

-- luamcp behind OAuth, on a port known in advance (the audience names it).
-- plugins: the directories to serve.
local function start(as, extra, opts, plugins)
  local port = H.free_port()
  local aud = "http://127.0.0.1:" .. port .. "/mcp"
  local args = { "--http", "127.0.0.1:" .. port, "--auth-audience", aud, "--log-level", "debug" }
  if as then args[#args + 1] = "--auth-issuer"; args[#args + 1] = as.issuer end
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  local srv = HH.start { plugins = plugins, args = args, bin = opts and opts.bin }
  srv.aud = aud
  srv.prm = "http://127.0.0.1:" .. port .. "/.well-known/oauth-protected-resource/mcp"
  return srv
end

local function bearer(tok) return { Authorization = "Bearer " .. tok } end

-- The authorization server, for a describe's setup: as, env (stop it with
-- stop(as, env) in its teardown).
local function auth_server()
  local env = N.prepare("auth")
  local ok, as = pcall(as_start, env)
  if not ok then
    N.remove(env)
    error(as, 0)
  end
  return as, env
end

local function stop(as, env)
  if as then as:stop() end
  N.remove(env)
end

return { http = http, start = start, bearer = bearer, auth_server = auth_server, stop = stop }
