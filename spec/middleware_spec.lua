-- Middleware (mcp.middleware{...}): a chain every request of its methods
-- goes through before the method itself. Rewrite, refuse, answer (the
-- result cache of plugins/cache.lua), filter lists (plugins/visibility.lua
-- by the token's scopes), a cancel and a timeout during a middleware's wait,
-- order, hot reload, luamcp check, every method, a handler that waits under
-- next, and a pass-through that changes nothing. The middleware is written
-- into a temporary directory per test, served beside fixtures/middleware
-- (tools that say "fixture: ran NAME").
local H = require "spec.helper"
local write, rmdir = H.edit_file, H.rmdir
local HH = require "spec.http_helper"
local uv, cjson = H.uv, H.cjson

local FIX = H.fixtures .. "/middleware"

local dirs = {}
local function plugin_dir(files)
  local dir = H.tmpdir()
  dirs[#dirs + 1] = dir
  for name, text in pairs(files or {}) do write(dir .. "/" .. name, text) end
  return dir
end

-- A plugin file with these middleware declarations (Lua text of mcp.middleware{...}, ...).
local function mw_plugin(name, decls)
  return ('local mcp = require "mcp"\nreturn mcp.plugin { name = %q, middleware = {\n%s\n} }\n'):format(name, decls)
end

local function serve(files, args)
  local dir = plugin_dir(files)
  return H.session { plugins = { FIX, dir }, args = args }, dir
end

local function ran(c, name)
  local n = 0
  for _, line in ipairs(c.stderr) do
    if line == "fixture: ran " .. name then n = n + 1 end
  end
  return n
end

local function text(resp) return H.text(resp) end

local UPPER = [[
  mcp.middleware { name = "upper", methods = { "tools/call" }, handler = function(req, ctx, next)
    if req.params.name == "echo" and req.params.arguments.text then
      req.params.arguments.text = req.params.arguments.text:upper()
    end
    return next(req)
  end },
]]

local REFUSE = [[
  -- kept: a next kept past its call (declared in the plugin file, above the list)
  mcp.middleware { name = "refuse", methods = { "tools/call" }, handler = function(req, ctx, next)
    local how = req.params.arguments and req.params.arguments.refuse
    if how == "tool" then return nil, "not today" end
    if how == "rpc" then return mcp.rpc_error(-32001, "go away", { n = 1 }) end
    if how == "raise_rpc" then error(mcp.rpc_error(-32002, "raised away")) end
    if how == "raise" then error("middleware broke") end
    if how == "twice" then next(req) return next(req) end
    if how == "bad" then return next({}) end
    if how == "keep" then kept = next return "kept" end
    if how == "late" then return kept(req) end
    if how == "type" then return type(next) end
    return next(req)
  end },
]]

describe("middleware", function()
  after_each(function()
    HH.cleanup()
    H.cleanup()
    for _, d in ipairs(dirs) do rmdir(d) end
    dirs = {}
  end)

  it("rewrites the params the method then sees", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", UPPER) }
    assert.are.equal("HELLO", text(c:call("echo", { text = "hello" })))
    assert.are.equal(1, ran(c, "echo"))
  end)

  it("refuses with a tool error, an mcp.rpc_error (returned or raised) or an error, the handler not run", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", REFUSE) }
    local r = c:call("echo", { refuse = "tool" }).result
    assert.is_true(r.isError)
    assert.are.equal("not today", r.content[1].text)
    local e = c:call("echo", { refuse = "rpc" }).error
    assert.are.same({ code = -32001, message = "go away", data = { n = 1 } }, e)
    e = c:call("echo", { refuse = "raise_rpc" }).error
    assert.are.equal(-32002, e.code)
    assert.are.equal("raised away", e.message)
    r = c:call("echo", { refuse = "raise" }).result
    assert.is_true(r.isError)
    assert.are.equal("middleware broke", r.content[1].text)          -- without its position
    c:expect_stderr("mw.lua:%d+: middleware broke")                 -- which goes to the log
    assert.are.equal(0, ran(c, "echo"))
  end)

  it("next is a function; it raises when called twice, without params, or after its call is over", function()
    local c = serve { ["mw.lua"] = "local kept\n" .. mw_plugin("m", REFUSE) }
    assert.are.equal("function", text(c:call("echo", { refuse = "type" })))
    local function refused(how)
      local r = c:call("echo", { refuse = how, text = "x" }).result
      assert.is_true(r.isError, how)
      return r.content[1].text
    end
    assert.are.equal("next: called twice by middleware refuse", refused("twice"))
    assert.are.equal(1, ran(c, "echo"))                                -- the first next ran it
    assert.are.equal("bad argument #1 to 'next' (a req with params expected)", refused("bad"))
    assert.are.equal("kept", text(c:call("echo", { refuse = "keep" })))
    assert.are.equal("next: the request is over (call next before the middleware returns)", refused("late"))
    assert.are.equal(1, ran(c, "echo"))
  end)

  it("next gives what the client would get: a result, or nil, message, \"rpc\", err", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", [[
      mcp.middleware { name = "spy", handler = function(req, ctx, next)
        local r, msg, code, err = next(req)
        io.stderr:write("spy: ", mcp.json.encode({ r = r or false, msg = msg, code = code, err = err }), "\n")
        return r, msg, code, err
      end },
    ]]) }
    local function seen()
      local line = c:expect_stderr("^spy: ")
      c.stderr = {}
      return cjson.decode(line:sub(6))
    end
    c:call("fail", { how = "rpc" })
    assert.are.same({ r = false, msg = "upstream said no", code = "rpc",
                      err = { code = -32042, message = "upstream said no", data = { why = "spec" } } }, seen())
    c:call("fail", { how = "raise" })
    local s = seen()
    assert.is_true(s.r.isError)
    assert.are.equal("it broke", s.r.content[1].text)
    c:call("fail", {})
    assert.are.equal("it failed", seen().r.content[1].text)
    c:call("nope", {})
    s = seen()
    assert.are.equal("rpc", s.code)
    assert.are.equal(-32602, s.err.code)
    c:request("resources/read", { uri = "mw://none" })
    s = seen()
    assert.are.equal(-32002, s.err.code)
    assert.are.equal("mw://none", s.err.data.uri)
  end)

  it("return next(req) changes nothing the client gets, for every outcome", function()
    local pass = mw_plugin("m", [[
      mcp.middleware { name = "pass", handler = function(req, ctx, next) return next(req) end },
    ]])
    local with = serve { ["mw.lua"] = pass }
    local without = H.session { plugins = { FIX } }
    local requests = {
      { "tools/call", { name = "echo", arguments = { text = "hi" } } },
      { "tools/call", { name = "echo", arguments = { text = 1 } } },
      { "tools/call", { name = "fail", arguments = { how = "raise" } } },
      { "tools/call", { name = "fail", arguments = { how = "rpc" } } },
      { "tools/call", { name = "fail", arguments = {} } },
      { "tools/call", { name = "nope", arguments = {} } },
      { "tools/call", { arguments = {} } },
      { "tools/list", {} },
      { "tools/list", { cursor = "x" } },
      { "resources/list", {} },
      { "resources/templates/list", {} },
      { "resources/read", { uri = "mw://static" } },
      { "resources/read", { uri = "mw://t/abc" } },
      { "resources/read", { uri = "mw://none" } },
      { "prompts/list", {} },
      { "prompts/get", { name = "greet", arguments = { who = "Ann" } } },
      { "prompts/get", { name = "greet", arguments = {} } },
      { "completion/complete", { ref = { type = "ref/resource", uri = "mw://t/{x}" },
                                 argument = { name = "x", value = "a" } } },
    }
    for _, rq in ipairs(requests) do
      local a, b = with:request(rq[1], rq[2]), without:request(rq[1], rq[2])
      a.id, b.id = nil, nil
      assert.are.same(b, a, rq[1] .. " " .. cjson.encode(rq[2]))
    end
  end)

  it("answers from its cache: the handler runs once (plugins/cache.lua, a TTL per tool)", function()
    local src = assert(io.open(H.root .. "/plugins/cache.lua")):read("a")
    local dir = plugin_dir { ["cache.lua"] = src }
    write(dir .. "/luamcp.conf", 'return { plugins = { cache = { ttl = { count = 60, fail = 60 } } } }')
    local c = H.session { plugins = { FIX, dir }, args = { "--config", dir .. "/luamcp.conf", "--test-clock" } }
    assert.are.equal("ran 1", text(c:call("count")))
    assert.are.equal("ran 1", text(c:call("count")))
    assert.are.equal(1, ran(c, "count"))
    H.advance(c, 61)                                         -- past its TTL
    assert.are.equal("ran 2", text(c:call("count")))
    for _ = 1, 2 do assert.is_true(c:call("fail", {}).result.isError) end
    assert.are.equal(2, ran(c, "fail"))                      -- failures are not kept
    for _ = 1, 2 do assert.are.equal("e", text(c:call("echo", { text = "e" }))) end
    assert.are.equal(2, ran(c, "echo"))                      -- no TTL: not cached
  end)

  it("filters the lists: tools, resources, templates, prompts", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", [[
      mcp.middleware { name = "hide", methods = { "tools/list", "resources/list", "resources/templates/list",
                                                   "prompts/list" }, handler = function(req, ctx, next)
        local hide = { count = true, ["mw://static"] = true, ["mw://t/{x}"] = true, hidden_prompt = true }
        local r, msg, code, err = next(req)
        if not r then return r, msg, code, err end
        for _, key in ipairs { "tools", "resources", "resourceTemplates", "prompts" } do
          if r[key] then
            local kept = mcp.array()
            for _, item in ipairs(r[key]) do
              if not hide[item.name] and not hide[item.uri or ""] then kept[#kept + 1] = item end
            end
            r[key] = kept
          end
        end
        return r
      end },
    ]]) }
    local names = {}
    for _, t in ipairs(c:request("tools/list", {}).result.tools) do names[#names + 1] = t.name end
    table.sort(names)
    assert.are.same({ "echo", "fail", "limited", "nap" }, names)
    assert.are.same({}, c:request("resources/list", {}).result.resources)
    assert.are.same({}, c:request("resources/templates/list", {}).result.resourceTemplates)
    local prompts = c:request("prompts/list", {}).result.prompts
    assert.are.equal(1, #prompts)
    assert.are.equal("greet", prompts[1].name)
  end)

  it("a cancel during a middleware's wait ends the call: the handler never runs, no response", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", [[
      mcp.middleware { name = "gate", methods = { "tools/call" }, handler = function(req, ctx, next)
        io.stderr:write("gate: waiting\n")
        local ok, msg, code = ctx:sleep(5)
        io.stderr:write("gate: sleep gave ", tostring(ok), " ", tostring(msg), " ", tostring(code), "\n")
        local r, m, k = next(req)
        io.stderr:write("gate: next gave ", tostring(r), " ", tostring(m), " ", tostring(k), "\n")
        return r, m, k
      end },
    ]]) }
    c:send(H.call_raw("7", "echo", { text = "x" }))
    c:expect_stderr("gate: waiting", nil, { plain = true })
    c:send(H.cancel_msg(7, "changed my mind"))
    c:expect_stderr("gate: sleep gave nil cancelled: changed my mind cancelled", nil, { plain = true })
    c:expect_stderr("gate: next gave nil cancelled: changed my mind cancelled", nil, { plain = true })
    c:no_response()
    assert.are.equal(0, ran(c, "echo"))
  end)

  it("a handler that waits under next comes back through every middleware, its result or its error", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", [[
      mcp.middleware { name = "outer", order = 1, methods = { "tools/call" }, handler = function(req, ctx, next)
        local r, msg, code = next(req)
        io.stderr:write("outer: ", r.isError and "error " or "", r.content[1].text, "\n")
        return r, msg, code
      end },
      mcp.middleware { name = "inner", order = 2, methods = { "tools/call" }, handler = function(req, ctx, next)
        ctx:sleep(0.01)
        return next(req)
      end },
    ]]) }
    assert.are.equal("woke", text(c:call("nap", {})))
    c:expect_stderr("outer: woke", nil, { plain = true })
    local r = c:call("nap", { how = "raise" }).result
    assert.is_true(r.isError)
    assert.are.equal("woke broken", r.content[1].text)
    c:expect_stderr("outer: error woke broken", nil, { plain = true })
    assert.are.equal(2, ran(c, "nap"))
  end)

  it("the tool's timeout applies from the start of the chain", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", [[
      mcp.middleware { name = "slow", methods = { "tools/call" }, handler = function(req, ctx, next)
        ctx:sleep(5)
        return next(req)
      end },
    ]]) }
    local t0 = H.now()
    local r = c:call("limited").result
    assert.is_true(r.isError)
    assert.are.equal('Tool "limited" timed out after 0.3 seconds', r.content[1].text)
    assert.is_true(H.now() - t0 < 3)
    c:no_response()
    assert.are.equal(0, ran(c, "limited"))
  end)

  it("runs by order (lower first, outermost), then in load order", function()
    local function tag(name, order)
      return ([[
  mcp.middleware { name = %q, order = %s, methods = { "tools/call" }, handler = function(req, ctx, next)
    req.params.arguments.text = (req.params.arguments.text or "") .. %q .. ","
    return next(req)
  end },
]]):format(name, tostring(order), name)
    end
    local c = serve {
      ["a.lua"] = mw_plugin("a", tag("a1", "nil") .. tag("a2", -5)),
      ["b.lua"] = mw_plugin("b", tag("b1", 0) .. tag("b2", 10)),
    }
    assert.are.equal("a2,a1,b1,b2,", text(c:call("echo", {})))
  end)

  it("is hot-reloaded: an edit changes the chain, a deleted plugin's middleware goes", function()
    local function suffix(s)
      return mw_plugin("tag", ([[
  mcp.middleware { name = "tag", methods = { "tools/call" }, handler = function(req, ctx, next)
    req.params.arguments.text = req.params.arguments.text .. %q
    return next(req)
  end },
]]):format(s))
    end
    local dir = plugin_dir { ["tag.lua"] = suffix("-v1") }
    local c = H.session { plugins = { FIX, dir }, args = { "--watch" } }
    local function echo() return text(c:call("echo", { text = "x" })) end
    assert.are.equal("x-v1", echo())
    write(dir .. "/tag.lua", suffix("-v2"))
    assert.are.equal("x-v2", H.until_equal(echo, "x-v2"))
    os.remove(dir .. "/tag.lua")
    assert.are.equal("x", H.until_equal(echo, "x"))
  end)

  it("applies to every method plugins serve, and maps a failure to each method's error", function()
    local c = serve { ["mw.lua"] = mw_plugin("m", [[
      mcp.middleware { name = "all", handler = function(req, ctx, next)
        io.stderr:write("all saw ", req.method, "\n")
        local fail = req.params.fail
        if fail == "nothing" then return end
        if fail == "raise" then error("boom") end
        if fail == "rpc" then return mcp.rpc_error(-32099, "custom") end
        if fail then return nil, "gone", fail end
        return next(req)
      end },
    ]]) }
    local methods = {
      { "tools/list", {} }, { "tools/call", { name = "echo", arguments = {} } },
      { "resources/list", {} }, { "resources/templates/list", {} }, { "resources/read", { uri = "mw://static" } },
      { "resources/subscribe", { uri = "mw://static" } }, { "resources/unsubscribe", { uri = "mw://static" } },
      { "prompts/list", {} }, { "prompts/get", { name = "greet", arguments = { who = "x" } } },
      { "completion/complete", { ref = { type = "ref/prompt", name = "greet" }, argument = { name = "who", value = "" } } },
    }
    for _, m in ipairs(methods) do
      local resp = c:request(m[1], m[2])
      assert.is_table(resp.result, m[1])
      c:expect_stderr("all saw " .. m[1], nil, { plain = true })
    end
    local function err(method, params) return c:request(method, params).error end
    local e = err("resources/read", { uri = "mw://static", fail = "not_found" })
    assert.are.same({ code = -32002, message = "Resource not found", data = { uri = "mw://static", reason = "gone" } }, e)
    assert.are.same({ code = -32602, message = "Invalid params: gone" },
                    err("prompts/get", { name = "greet", fail = "invalid" }))
    assert.are.same({ code = -32602, message = "Invalid params: gone" },
                    err("prompts/get", { name = "greet", fail = "not_found" }))
    assert.are.same({ code = -32600, message = "Forbidden: gone" }, err("resources/list", { fail = "denied" }))
    assert.are.same({ code = -32603, message = "Internal error: gone" }, err("prompts/list", { fail = "busy" }))
    assert.are.same({ code = -32603, message = "Internal error: middleware all returned nothing" },
                    err("resources/read", { uri = "mw://static", fail = "nothing" }))
    assert.are.same({ code = -32603, message = "Internal error: boom" }, err("tools/list", { fail = "raise" }))
    assert.are.same({ code = -32099, message = "custom" }, err("completion/complete", { fail = "rpc" }))
    -- in tools/call the handler's convention holds: nil, message is a tool error
    local r = c:call("echo", { text = "x" })
    assert.are.equal("x", text(r))
    r = c:request("tools/call", { name = "echo", arguments = {}, fail = "denied" }).result
    assert.is_true(r.isError)
    assert.are.equal("gone", r.content[1].text)
  end)

  it("works over Streamable HTTP", function()
    local dir = plugin_dir { ["mw.lua"] = mw_plugin("m", UPPER .. REFUSE) }
    local srv = HH.start { plugins = { FIX, dir } }
    local s = HH.initialize(srv, H.LATEST)
    assert.are.equal("HI", H.text(s:call("echo", { text = "hi" })))
    assert.are.equal(-32001, s:call("echo", { refuse = "rpc" }).error.code)
  end)

  it("luamcp check lists every mistake in a declaration", function()
    local dir = plugin_dir { ["bad.lua"] = [[
local mcp = require "mcp"
return mcp.plugin { name = "bad", middleware = {
  mcp.middleware { name = "x", method = { "tools/call" }, order = "first", handler = 1 },
  mcp.middleware { name = "y", methods = { "tool/call", "initialize" }, handler = function() end },
  mcp.middleware { handler = function() end },
  "not a middleware",
} }
]] }
    local p = assert(io.popen(H.binary() .. " check --plugins " .. dir .. " 2>&1"))
    local out = p:read("a")
    local ok = p:close()
    assert.is_falsy(ok)
    for _, want in ipairs {
      "bad.lua:3: middleware x: unknown field method (did you mean methods?)",
      "bad.lua:3: middleware x: handler must be a function",
      "bad.lua:3: middleware x: order must be a number",
      "bad.lua:4: middleware y: methods[1]: tool/call is not a method middleware applies to (did you mean tools/call?)",
      "bad.lua:4: middleware y: methods[2]: initialize is not a method middleware applies to",
      "bad.lua:5: mcp.middleware: name must be a non-empty string",
      "plugin bad: middleware[4] is not an mcp.middleware{...}",
    } do
      assert.truthy(out:find(want, 1, true), "missing: " .. want .. "\n" .. out)
    end
  end)
end)

describe("plugins/visibility.lua", function()
  local A = require "spec.auth_helper"
  local as, env
  setup(function() as, env = A.auth_server() end)
  teardown(function() A.stop(as, env) end)
  after_each(function()
    HH.cleanup()
    for _, d in ipairs(dirs) do rmdir(d) end
    dirs = {}
  end)

  it("shows and lets call only the tools the token's scopes cover", function()
    local src = assert(io.open(H.root .. "/plugins/visibility.lua")):read("a")
    local dir = plugin_dir { ["visibility.lua"] = src }
    write(dir .. "/luamcp.conf", 'return { plugins = { visibility = { tools = { whoami = { "notes:admin" } } } } }')
    local srv = A.start(as, { "--config", dir .. "/luamcp.conf" }, nil, { H.fixtures .. "/auth", dir })
    local rid = 0
    local function rpc(tok, method, p)
      rid = rid + 1
      local _, resp = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = rid, method = method, params = HH.params_rev2026(p) },
                                     { headers = A.bearer(tok) })
      return resp
    end
    local function claims(scope) return { sub = "ann", scope = scope, aud = srv.aud, client_id = "spec" } end
    local function names(tok)
      local list = {}
      for _, t in ipairs(rpc(tok, "tools/list", {}).result.tools) do list[#list + 1] = t.name end
      table.sort(list)
      return table.concat(list, " ")
    end
    local writer, admin = as:mint(claims("notes:write")), as:mint(claims("notes:write notes:admin"))
    assert.are.equal("admin ask slow write", names(writer))
    assert.are.equal("admin ask slow whoami write", names(admin))
    local e = rpc(writer, "tools/call", { name = "whoami", arguments = {} }).error
    assert.are.same({ code = -32602, message = "Unknown tool: whoami" }, e)
    local r = rpc(admin, "tools/call", { name = "whoami", arguments = {} }).result
    assert.are.equal("ann", cjson.decode(r.content[1].text).subject)
  end)
end)
