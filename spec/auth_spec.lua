-- OAuth (the MCP authorization spec, 2025-06-18 and later): luamcp as a
-- resource server, against a real authorization server from npm
-- (oauth2-mock-server, spec/auth/auth_server.mjs: OpenID discovery, JWKS,
-- token and introspection endpoints) issuing real signed tokens. Checks
-- the Protected Resource Metadata, the 401 and 403 challenges, ctx.auth,
-- that sessions, tasks and requestState belong to the token's subject, the
-- JWKS refetch on a new kid (and its rate limit), expired, forged and
-- misdirected tokens, introspection of opaque tokens (cached), and a down
-- issuer (503, no hang: at most the 5 s fetch timeout, other requests going
-- on meanwhile, a client gone while it waits).
local H = require "spec.helper"
local HH = require "spec.http_helper"
local N = require "spec.node_helper"
local uv, cjson = H.uv, H.cjson

local FIX = { "spec/fixtures/auth" }
local V25 = "2025-06-18"
local TASKS = { extensions = { ["io.modelcontextprotocol/tasks"] = {} } }
local ASKING = { elicitation = {} }

local A = require "spec.auth_helper"
local http, bearer = A.http, A.bearer
local function start(as, extra, opts) return A.start(as, extra, opts, FIX) end

-- In a describe: the authorization server for its tests, handed to set
-- (with the Node environment) once started, stopped after the last.
local function with_auth_server(set)
  local env, as
  setup(function()
    as, env = A.auth_server()
    set(as, env)
  end)
  teardown(function() A.stop(as, env) end)
  after_each(HH.cleanup)
end

-- A 2026-07-28 request with a token. Returns the JSON-RPC response, the HTTP response.
local rid = 0
local function rpc_rev2026(srv, tok, method, p, caps)
  rid = rid + 1
  local r, resp = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = rid, method = method, params = HH.params_rev2026(p, caps) },
                           { headers = tok and bearer(tok) or nil })
  return resp, r
end

local function text(resp) return resp and resp.result and resp.result.content and resp.result.content[1].text end

-- The parameters of a Bearer challenge.
local function challenge(r)
  local h = r:header("www-authenticate")
  assert.is_string(h, "no WWW-Authenticate: " .. r:describe())
  assert.truthy(h:match("^Bearer "), h)
  local p = {}
  for k, v in h:gmatch('([%w_]+)="([^"]*)"') do p[k] = v end
  return p
end

describe("OAuth resource server", function()
  local env, as
  with_auth_server(function(a, e) as, env = a, e end)

  local function claims(sub, scope, extra, srv)
    local c = { sub = sub, scope = scope, aud = srv.aud, client_id = "spec-client" }
    for k, v in pairs(extra or {}) do c[k] = v end
    return c
  end

  it("serves the Protected Resource Metadata at the root and the path-suffixed URL", function()
    local srv = start(as)
    for _, path in ipairs { "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp" } do
      local r = http(srv.port, "GET", path)
      assert.are.equal(200, r.status, r:describe())
      assert.are.equal("*", r:header("access-control-allow-origin"))
      local doc = r:json()
      assert.are.equal(srv.aud, doc.resource)
      assert.are.same({ as.issuer }, doc.authorization_servers)
      assert.are.same({ "notes:admin", "notes:write" }, doc.scopes_supported)
      assert.are.same({ "header" }, doc.bearer_methods_supported)
    end
    assert.are.equal(405, http(srv.port, "POST", "/.well-known/oauth-protected-resource", "{}").status)
  end)

  it("answers 401 without a token, with resource_metadata and scope, on every method and revision", function()
    local srv = start(as)
    local resp = http(srv.port, "POST", "/mcp", cjson.encode(HH.init_msg(V25)),
                      { ["Content-Type"] = "application/json", Accept = HH.ACCEPT })
    assert.are.equal(401, resp.status)
    local p = challenge(resp)
    assert.are.equal(srv.prm, p.resource_metadata)
    assert.are.equal("notes:admin notes:write", p.scope)
    assert.is_nil(p.error)                                  -- no credentials: no error code (RFC 6750 3.1)
    -- the metadata URL it names is served
    assert.are.equal(200, http(srv.port, "GET", "/.well-known/oauth-protected-resource/mcp").status)
    -- a tools/call of a tool with scopes names that tool's
    local resp26, r26 = rpc_rev2026(srv, nil, "tools/call", { name = "write", arguments = {} })
    assert.are.equal(401, r26.status)
    assert.are.equal("notes:write", challenge(r26).scope)
    assert.are.equal(-32600, resp26.error.code)
    -- GET and DELETE too; and a scheme other than Bearer is invalid_request
    assert.are.equal(401, http(srv.port, "GET", "/mcp", nil, { Accept = "text/event-stream" }).status)
    local basic = http(srv.port, "DELETE", "/mcp", nil, { Authorization = "Basic YTpi" })
    assert.are.equal(401, basic.status)
    assert.are.equal("invalid_request", challenge(basic).error)
  end)

  it("accepts a token from the token endpoint (RFC 8707 resource) and gives ctx.auth to handlers", function()
    local srv = start(as)
    local form = "grant_type=password&username=alice&scope=notes%3Aread&client_id=cli-1&resource=" ..
                 srv.aud:gsub("[^%w]", function(ch) return ("%%%02X"):format(ch:byte()) end)
    local tr = http(as.port, "POST", "/token", form, { ["Content-Type"] = "application/x-www-form-urlencoded" })
    assert.are.equal(200, tr.status, tr.body)
    local tok = tr:json().access_token
    local s = HH.initialize(srv, V25, { token = tok })
    local resp = s:call("whoami", {})
    local me = cjson.decode(text(resp))
    assert.are.equal("alice", me.subject)
    assert.are.equal("cli-1", me.client_id)
    assert.are.same({ "notes:read" }, me.scopes)
    assert.are.equal(as.issuer, me.claims.iss)
    assert.are.equal(srv.aud, me.claims.aud)
    -- a 2026-07-28 request too
    me = cjson.decode(text(rpc_rev2026(srv, tok, "tools/call", { name = "whoami", arguments = {} })))
    assert.are.equal("alice", me.subject)
    assert.truthy(srv:wait_stderr("auth: 1 key%(s%) from " .. as.issuer:gsub("%p", "%%%0") .. "/jwks"))
  end)

  it("answers 403 insufficient_scope with the scopes to ask for; a token with them calls the tool", function()
    local srv = start(as)
    local tok = as:mint(claims("bob", "notes:read", nil, srv))
    local s = HH.initialize(srv, V25, { token = tok })
    local resp, r = s:rpc("tools/call", { name = "admin", arguments = {} })
    assert.are.equal(403, r.status)
    local p = challenge(r)
    assert.are.equal("insufficient_scope", p.error)
    assert.are.equal("notes:read notes:write notes:admin", p.scope)   -- granted + needed
    assert.are.equal(srv.prm, p.resource_metadata)
    assert.are.equal(-32600, resp.error.code)
    assert.truthy(resp.error.message:find("notes:write notes:admin", 1, true))
    -- the same for a 2026-07-28 client, and for a tool needing one scope
    local _, r26 = rpc_rev2026(srv, tok, "tools/call", { name = "write", arguments = {} })
    assert.are.equal(403, r26.status)
    assert.are.equal("notes:read notes:write", challenge(r26).scope)
    -- step-up: a new token of the same subject with the scope, same session
    s.token = as:mint(claims("bob", "notes:read notes:write", nil, srv))
    assert.are.equal("written by bob: hi", text(s:call("write", { text = "hi" })))
    -- tools/list and tools without scopes need none
    assert.are.equal(5, #s:rpc("tools/list", {}).result.tools)
    -- /metrics (behind the same checks): the refusals, and what was asked of the issuer
    local m = http(srv.port, "GET", "/metrics", nil, bearer(s.token))
    assert.are.equal(200, m.status, m:describe())
    for _, line in ipairs {
      'luamcp_auth_checks_total{outcome="insufficient_scope"} 2',
      'luamcp_auth_fetches_total{what="metadata",outcome="failed"} 1',   -- RFC 8414's: the mock has OpenID's only
      'luamcp_auth_fetches_total{what="metadata",outcome="ok"} 1',
      'luamcp_auth_fetches_total{what="jwks",outcome="ok"} 1',
    } do
      assert.truthy(m.body:find(line, 1, true), line .. "\n" .. m.body:match("luamcp_auth.*") )
    end
  end)

  it("refuses expired, forged, misdirected and alg-none tokens with invalid_token and a reason", function()
    local srv = start(as)
    local good = as:mint(claims("carol", "", nil, srv))
    local h, p, sig = good:match("^([^.]+)%.([^.]+)%.([^.]+)$")
    local function try(tok)
      local r = http(srv.port, "POST", "/mcp", cjson.encode(HH.init_msg(V25)),
                     { ["Content-Type"] = "application/json", Accept = HH.ACCEPT, Authorization = "Bearer " .. tok })
      return r
    end
    local cases = {
      { as:mint(claims("carol", "", { exp = os.time() - 120 }, srv)), "expired" },
      { as:mint(claims("carol", "", { aud = "http://127.0.0.1:1/other" }, srv)), "audience" },
      { as:mint(claims("carol", "", { iss = "http://evil.example" }, srv)), "issuer" },
      { as:mint(claims("carol", "", { nbf = os.time() + 600 }, srv)), "not valid yet" },
      { h .. "." .. p .. "." .. sig:sub(1, -6) .. (sig:sub(-5, -5) == "A" and "B" or "A") .. sig:sub(-4), "signature" },
      { "eyJhbGciOiJub25lIn0." .. p .. ".", "algorithm" },       -- {"alg":"none"}
      { "not-a-jwt", "not a JWT" },
    }
    for _, c in ipairs(cases) do
      local r = try(c[1])
      assert.are.equal(401, r.status, c[2] .. ": " .. r:describe())
      local ch = challenge(r)
      assert.are.equal("invalid_token", ch.error, c[2])
      assert.truthy(ch.error_description:find(c[2], 1, true), c[2] .. " / " .. tostring(ch.error_description))
      assert.are.equal(srv.prm, ch.resource_metadata)
    end
    assert.are.equal(200, try(good).status)
  end)

  it("refuses an access token in the query string (400 invalid_request)", function()
    local srv = start(as)
    local tok = as:mint(claims("dave", "", nil, srv))
    local r = http(srv.port, "POST", "/mcp?access_token=" .. tok, cjson.encode(HH.init_msg(V25)),
                   { ["Content-Type"] = "application/json", Accept = HH.ACCEPT })
    assert.are.equal(400, r.status)
    assert.are.equal("invalid_request", challenge(r).error)
  end)

  it("keeps a session its subject's: another subject's token gets 404, the same subject's goes on", function()
    local srv = start(as)
    local s = HH.initialize(srv, V25, { token = as:mint(claims("erin", "", nil, srv)) })
    assert.are.equal("erin", cjson.decode(text(s:call("whoami", {}))).subject)
    local mine = s.token
    s.token = as:mint(claims("frank", "", nil, srv))
    local resp, r = s:rpc("tools/call", { name = "whoami", arguments = {} })
    assert.are.equal(404, r.status)
    assert.are.equal(-32001, resp.error.code)
    local d = s:delete()
    assert.are.equal(404, d.status)                         -- nor can frank end it
    s.token = as:mint(claims("erin", "notes:write", nil, srv))   -- a new token of erin's
    assert.are.equal("written by erin: x", text(s:call("write", { text = "x" })))
    s.token = mine
    assert.truthy(srv:wait_stderr("belongs to another subject"))
  end)

  it("keeps tasks their subject's (2026-07-28: -32602 for another subject, one task scope per subject)", function()
    local srv = start(as)
    local alice, bob = as:mint(claims("alice", "", nil, srv)), as:mint(claims("bob", "", nil, srv))
    local created = rpc_rev2026(srv, alice, "tools/call", { name = "slow", arguments = { seconds = 0.2 } }, TASKS)
    assert.are.equal("task", created.result.resultType, cjson.encode(created))
    local id = created.result.taskId
    local theirs = rpc_rev2026(srv, bob, "tasks/get", { taskId = id }, TASKS)
    assert.are.equal(-32602, theirs.error.code)
    local cancel = rpc_rev2026(srv, bob, "tasks/cancel", { taskId = id }, TASKS)
    assert.are.equal(-32602, cancel.error.code)
    local got
    for _ = 1, 200 do
      local g = rpc_rev2026(srv, alice, "tasks/get", { taskId = id }, TASKS)
      got = assert(g.result, cjson.encode(g) .. srv:stderr_text())
      if got.status == "completed" then break end
      H.pump(0.02)
    end
    assert.are.equal("completed", got.status)
    assert.are.equal("slept for alice", got.result.content[1].text)
  end)

  it("with --store, keeps a task its subject's on every instance (the record names the subject)", function()
    local C = require "spec.cluster_helper"
    local aud = "http://127.0.0.1:1/mcp"              -- the service's one canonical URI, as behind HAProxy
    local cl = C.start { instances = 2, redis = true, plugins = FIX,
      args = function(_, c) return { "--store", c.redis.url, "--auth-issuer", as.issuer, "--auth-audience", aud } end }
    local ok, err = pcall(function()
      local A, B = cl.instances[1], cl.instances[2]
      local function mint(sub) return as:mint({ sub = sub, scope = "", aud = aud, client_id = "spec-client" }) end
      local alice, bob = mint("alice"), mint("bob")
      local created = rpc_rev2026(A, alice, "tools/call", { name = "slow", arguments = { seconds = 30 } }, TASKS)
      local id = assert(created.result and created.result.taskId, cjson.encode(created))
      -- on B, from Redis: bob is told it does not exist, and cannot cancel it
      assert.are.equal(-32602, rpc_rev2026(B, bob, "tasks/get", { taskId = id }, TASKS).error.code)
      assert.are.equal(-32602, rpc_rev2026(B, bob, "tasks/cancel", { taskId = id }, TASKS).error.code)
      assert.are.equal("working", rpc_rev2026(B, alice, "tasks/get", { taskId = id }, TASKS).result.status)
      -- alice's cancel on B reaches the handler on A
      assert.is_table(rpc_rev2026(B, alice, "tasks/cancel", { taskId = id }, TASKS).result)
      local got = H.until_equal(function() return rpc_rev2026(A, alice, "tasks/get", { taskId = id }, TASKS).result.status end,
                                "cancelled")
      assert.are.equal("cancelled", got)
    end)
    C.cleanup()
    assert(ok, err)
  end)

  it("keeps a 2025-11-25 task its session's subject's", function()
    local srv = start(as)
    local s = HH.initialize(srv, "2025-11-25", { token = as:mint(claims("gina", "", nil, srv)) })
    local resp = s:rpc("tools/call", { name = "slow", arguments = { seconds = 0.1 }, task = { ttl = 60000 } })
    local id = resp.result.task.taskId
    assert.is_string(id)
    local other = HH.initialize(srv, "2025-11-25", { token = as:mint(claims("hal", "", nil, srv)) })
    assert.are.equal(-32602, other:rpc("tasks/get", { taskId = id }).error.code)
    assert.are.equal(0, #other:rpc("tasks/list", {}).result.tasks)
    assert.are.equal(id, s:rpc("tasks/get", { taskId = id }).result.taskId)
  end)

  it("binds requestState to the subject: another subject's retry is -32602", function()
    local srv = start(as)
    local ann, ben = as:mint(claims("ann", "", nil, srv)), as:mint(claims("ben", "", nil, srv))
    local r1 = rpc_rev2026(srv, ann, "tools/call", { name = "ask", arguments = {} }, ASKING)
    assert.are.equal("input_required", r1.result.resultType, cjson.encode(r1))
    local retry = { name = "ask", arguments = {}, requestState = r1.result.requestState,
                    inputResponses = { name = { action = "accept", content = { name = "Ann" } } } }
    local stolen = rpc_rev2026(srv, ben, "tools/call", retry, ASKING)
    assert.are.equal(-32602, stolen.error.code, cjson.encode(stolen))
    assert.truthy(stolen.error.message:find("requestState", 1, true))
    assert.are.equal("hello Ann", text(rpc_rev2026(srv, ann, "tools/call", retry, ASKING)))
  end)

  it("fetches the keys again for a new kid, at most once per period for unknown ones", function()
    local srv = start(as)
    local first = as:mint(claims("ivy", "", nil, srv))
    assert.are.equal("ivy", cjson.decode(text(rpc_rev2026(srv, first, "tools/call", { name = "whoami", arguments = {} }))).subject)
    local before = as:hits("/jwks")
    for _, alg in ipairs { "ES256", "EdDSA" } do
      local kid = as:post("/addkey", { alg = alg }).kid
      local tok = as:mint(claims("ivy", "", nil, srv), { kid = kid })
      assert.truthy(tok:match("^eyJ"))
      local resp, r = rpc_rev2026(srv, tok, "tools/call", { name = "whoami", arguments = {} })
      if alg == "ES256" then
        assert.are.equal(200, r.status, alg .. ": " .. r:describe() .. srv:stderr_text())
        assert.are.equal("ivy", cjson.decode(text(resp)).subject)
      else
        -- the second new kid comes within the period: no refetch, refused
        assert.are.equal(401, r.status, r:describe())
        assert.truthy(challenge(r).error_description:find("unknown key", 1, true))
      end
    end
    assert.are.equal(before + 1, as:hits("/jwks"))
    assert.truthy(srv:wait_stderr("no refetch"))
  end)

  it("introspects opaque tokens (RFC 7662), caches the answer briefly, refuses inactive ones", function()
    local srv = start(as, { "--auth-introspect", as.issuer .. "/introspect" })
    as:post("/opaque", { token = "opaque-kim-1", answer = { active = true, sub = "kim", scope = "notes:write",
                                                             client_id = "c9", aud = srv.aud,
                                                             exp = os.time() + 600 } })
    as:post("/opaque", { token = "opaque-lee-1", answer = { active = true, sub = "lee", aud = "http://other/mcp" } })
    local before = as:hits("/introspect")
    for i = 1, 3 do
      local rr, hr = rpc_rev2026(srv, "opaque-kim-1", "tools/call", { name = "whoami", arguments = {} })
      assert(text(rr), hr:describe() .. srv:stderr_text())
      local me = cjson.decode(text(rr))
      assert.are.equal("kim", me.subject, i)
      assert.are.same({ "notes:write" }, me.scopes)
      assert.are.equal("c9", me.client_id)
    end
    assert.are.equal(before + 1, as:hits("/introspect"))
    assert.are.equal("written by kim: k", text(rpc_rev2026(srv, "opaque-kim-1", "tools/call", { name = "write", arguments = { text = "k" } })))
    local _, r = rpc_rev2026(srv, "opaque-nobody", "tools/call", { name = "whoami", arguments = {} })
    assert.are.equal(401, r.status)
    assert.truthy(challenge(r).error_description:find("not active", 1, true))
    _, r = rpc_rev2026(srv, "opaque-lee-1", "tools/call", { name = "whoami", arguments = {} })
    assert.are.equal(401, r.status)
    assert.truthy(challenge(r).error_description:find("audience", 1, true))
    -- JWTs are still verified locally
    local jwt = as:mint(claims("mo", "", nil, srv))
    assert.are.equal("mo", cjson.decode(text(rpc_rev2026(srv, jwt, "tools/call", { name = "whoami", arguments = {} }))).subject)
  end)

  it("answers 503 with the reason when the issuer is down, without hanging, and recovers", function()
    local dead = H.free_port()
    local srv = start(nil, { "--auth-issuer", "http://127.0.0.1:" .. dead })
    local tok = as:mint(claims("nina", "", nil, srv))
    local t0 = H.now()
    local resp, r = rpc_rev2026(srv, tok, "tools/call", { name = "whoami", arguments = {} })
    assert.are.equal(503, r.status, r:describe())
    assert.is_string(r:header("retry-after"))
    assert.truthy(resp.error.message:find("unreachable", 1, true), resp.error.message)
    assert.is_true(H.now() - t0 < 6)
    -- within the retry period: at once, the same reason
    _, r = rpc_rev2026(srv, tok, "tools/call", { name = "whoami", arguments = {} })
    assert.are.equal(503, r.status)
    -- the probes answer meanwhile
    assert.are.equal(200, http(srv.port, "GET", "/healthz").status)
    -- down mid-way: the real issuer stops answering
    local srv2 = start(as)
    as:post("/down", { down = true })
    local _, r2 = rpc_rev2026(srv2, as:mint(claims("nina", "", nil, srv2)), "tools/call", { name = "whoami", arguments = {} })
    as:post("/down", { down = false })
    assert.are.equal(503, r2.status, r2:describe())
  end)

  it("waits at most the fetch timeout on an issuer that never answers; other requests go on meanwhile", function()
    -- an "issuer" that accepts connections and never answers
    local silent, held = uv.new_tcp(), {}
    assert(silent:bind("127.0.0.1", 0))
    silent:listen(16, function()
      local cl = uv.new_tcp()
      silent:accept(cl)
      cl:read_start(function() end)
      held[#held + 1] = cl
    end)
    local srv = start(nil, { "--auth-issuer", "http://127.0.0.1:" .. silent:getsockname().port })
    local tok = as:mint(claims("pat", "", nil, srv))
    local _, waiting = HH.post_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "tools/list", params = HH.params_rev2026() },
                              { headers = bearer(tok), nowait = true })
    local dropped = select(2, HH.post_rev2026(srv, { jsonrpc = "2.0", id = 2, method = "tools/list", params = HH.params_rev2026() },
                                         { headers = bearer(tok), nowait = true }))
    local t0 = H.now()
    H.pump(0.3)
    dropped:drop()                                          -- gone while it waits: nothing to answer
    -- meanwhile the server answers what needs no key
    assert.are.equal(200, http(srv.port, "GET", "/.well-known/oauth-protected-resource").status)
    assert.are.equal(200, http(srv.port, "GET", "/healthz").status)
    assert.is_true(H.now() - t0 < 2)
    local r = assert(waiting:response(10))
    r:wait_done()
    assert.are.equal(503, r.status, r:describe())
    assert.truthy(r.body:find("unreachable", 1, true), r.body)
    local took = H.now() - t0
    assert.is_true(took > 4 and took < 8, "took " .. took)
    for _, cl in ipairs(held) do cl:close() end
    silent:close()
  end)

  it("takes the keys from --auth-jwks, a file (never refetched) or a URL (no discovery)", function()
    local jwks = http(as.port, "GET", "/jwks")
    assert.are.equal(200, jwks.status)
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/jwks.json", "w"))
    f:write(jwks.body)
    f:close()
    local srv = start(nil, { "--auth-jwks", dir .. "/jwks.json" })
    local tok = as:mint(claims("quinn", "", nil, srv))
    assert.are.equal("quinn", cjson.decode(text(rpc_rev2026(srv, tok, "tools/call", { name = "whoami", arguments = {} }))).subject)
    local kid = as:post("/addkey", { alg = "ES256" }).kid
    local _, r = rpc_rev2026(srv, as:mint(claims("quinn", "", nil, srv), { kid = kid }), "tools/call", { name = "whoami", arguments = {} })
    assert.are.equal(401, r.status)                        -- a file is the whole set
    -- the PRM names no authorization server without --auth-issuer
    assert.is_nil(http(srv.port, "GET", "/.well-known/oauth-protected-resource"):json().authorization_servers)
    local before = as:hits("/.well-known/openid-configuration")
    local srv2 = start(nil, { "--auth-jwks", as.issuer .. "/jwks" })
    local tok2 = as:mint(claims("quinn", "", nil, srv2), { kid = kid })
    assert.are.equal("quinn", cjson.decode(text(rpc_rev2026(srv2, tok2, "tools/call", { name = "whoami", arguments = {} }))).subject)
    assert.are.equal(before, as:hits("/.well-known/openid-configuration"))
  end)

  it("reads the auth table of a configuration file", function()
    local dir = H.tmpdir()
    local port = H.free_port()
    local aud = "http://127.0.0.1:" .. port .. "/mcp"
    local f = assert(io.open(dir .. "/luamcp.conf.lua", "w"))
    f:write(("return { http = %q, auth = { issuer = %q, audience = %q } }\n"):format("127.0.0.1:" .. port, as.issuer, aud))
    f:close()
    local srv = HH.start { plugins = FIX, args = { "--config", dir .. "/luamcp.conf.lua" } }
    srv.aud = aud
    local tok = as:mint(claims("olga", "", nil, srv))
    assert.are.equal("olga", cjson.decode(text(rpc_rev2026(srv, tok, "tools/call", { name = "whoami", arguments = {} }))).subject)
    local bad = assert(io.open(dir .. "/bad.conf.lua", "w"))
    bad:write("return { auth = { issuer = 'http://x', nonsense = 1 } }\n")
    bad:close()
    local c = H.start { plugins = FIX, args = { "--config", dir .. "/bad.conf.lua" } }
    assert.truthy(c:wait_stderr("auth%.nonsense: unknown key"))
  end)
end)

describe("without --auth-*", function()
  after_each(HH.cleanup)

  it("serves no metadata, ignores tokens, and handlers see no ctx.auth", function()
    local srv = HH.start { plugins = FIX }
    assert.are.equal(404, http(srv.port, "GET", "/.well-known/oauth-protected-resource").status)
    local s = HH.initialize(srv, V25, { token = "whatever" })
    assert.are.equal("none", text(s:call("whoami", {})))
    assert.are.equal("written by anyone: ", text(s:call("write", {})))    -- scopes mean nothing without auth
  end)

  it("refuses a tool whose scopes are not OAuth scope tokens, at load", function()
    local c = H.start { plugins = { "spec/fixtures/auth_broken" } }
    assert.truthy(c:wait_stderr("tool bad: scopes%[1%] must be an OAuth scope token"))
  end)

  it("refuses --auth-* options without an audience, or with --token, at startup", function()
    local c = H.start { plugins = FIX, args = { "--http", "127.0.0.1:0", "--auth-issuer", "http://127.0.0.1:1" } }
    assert.truthy(c:wait_stderr("auth%-audience must be"))
    c = H.start { plugins = FIX, args = { "--http", "127.0.0.1:0", "--auth-audience", "http://x/mcp", "--auth-jwks",
                                          "/nonexistent.json" } }
    assert.truthy(c:wait_stderr("cannot open it"))
    c = H.start { plugins = FIX, args = { "--http", "127.0.0.1:0", "--token", "t", "--auth-audience", "http://x/mcp",
                                          "--auth-issuer", "http://127.0.0.1:1" } }
    assert.truthy(c:wait_stderr("exclude each other"))
  end)
end)

describe("the TypeScript SDK client's OAuth", function()
  local env, as
  with_auth_server(function(a, e) as, env = a, e end)

  it("discovers the authorization server, authorizes headless, calls tools, steps up on a 403", function()
    local srv = start(as)
    as:post("/grantable", { scopes = { "notes:write" } })
    local rep = N.run(env, "sdk_oauth.mjs", {}, { SDK_URL = srv.aud, SDK_ADMIN = as.admin })
    assert.is_nil(rep.error, rep.error)
    assert.is_true(rep.unauthorized)
    assert.are.equal("johndoe", rep.whoami.subject)
    assert.are.equal("sdk-client", rep.whoami.client_id)
    assert.are.equal(srv.aud, rep.whoami.claims.aud)             -- RFC 8707: the resource it asked for
    assert.are.equal(srv.aud, rep.authorizations[1].resource)
    assert.are.equal("S256", rep.authorizations[1].method)
    assert.are.equal("notes:admin notes:write", rep.authorizations[1].scope)   -- from the 401's scope
    assert.are.same({ "notes:write" }, rep.whoami.scopes)          -- the consent granted less than asked
    assert.are.equal("written by johndoe: sdk", rep.write)
    -- step-up: the 403's scope (granted + needed) went to /authorize, the new token calls admin
    assert.are.equal(1, rep.stepped_up)
    assert.are.equal("notes:write notes:admin", rep.authorizations[2].scope)
    assert.are.equal("admin", rep.admin)
    assert.are.same({ "notes:write", "notes:admin" }, rep.scopes_after)
  end)
end)
