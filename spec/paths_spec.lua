-- The two paths of a request (docs/development/ARCHITECTURE.md, "Two paths
-- for a request"): tools/call and tools/list run in C (src/lua/fastpath.c)
-- unless the Lua path is asked for (LUAMCP_LUA_PATH=1, as a middleware
-- would), and the client gets the same answers from both.
local H = require "spec.helper"

local PLUGIN = [[
local mcp = require "mcp"
local function tool(name, handler, extra)
  local t = { name = name, handler = handler,
              inputSchema = { type = "object", properties = { text = { type = "string" } } } }
  for k, v in pairs(extra or {}) do t[k] = v end
  return mcp.tool(t)
end
return mcp.plugin { name = "paths", tools = {
  tool("stack", function() return debug.traceback("", 1) end),
  tool("echo", function(args, ctx) return mcp.text(args.text .. " " .. tostring(ctx.id)) end),
  tool("plain", function(args) return args.text end),
  tool("nothing", function() end),
  tool("number", function() return 2.5 end),
  tool("content", function() return { content = mcp.array { { type = "text", text = "a", _meta = { k = 1 } } } } end),
  tool("nul_type", function() return { content = mcp.array { { type = "text\0x", text = "a" } } } end),
  tool("text_table", function() return { content = mcp.array { { text = "b", type = "text" } } } end),
  tool("structured", function() return { n = 1 } end),
  tool("failed", function() return nil, "no such thing" end),
  tool("raised", function() error("boom") end),
  tool("typed", function() return "not structured" end,
       { outputSchema = { type = "object", properties = { n = { type = "number" } } } }),
  tool("task_only", function() return "x" end, { task = "required" }),
  tool("ask", function(_, ctx)
    local r, err = ctx:elicit({ message = "color?", requestedSchema = { type = "object",
                                properties = { c = { type = "string" } } } }, { key = "color" })
    if not r then return nil, err end
    return r.content.c
  end),
} }
]]

-- A tool whose tools/list entry cannot be encoded (NaN): the list fails,
-- its calls run.
local UNLISTED = [[
local mcp = require "mcp"
return mcp.plugin { name = "unlisted", tools = {
  mcp.tool { name = "odd", annotations = { weird = 0/0 }, handler = function() return "ok" end },
} }
]]

-- One pass-through middleware on tools/call.
local PASS = [[
local mcp = require "mcp"
return mcp.plugin { name = "pass", middleware = {
  mcp.middleware { name = "pass", methods = { "tools/call" }, handler = function(req, ctx, next) return next(req) end },
} }
]]

-- A middleware that rewrites: alias -> plain, and some arguments.
local REWRITE = [[
local mcp = require "mcp"
return mcp.plugin { name = "rewrite", middleware = {
  mcp.middleware { name = "rewrite", methods = { "tools/call" }, handler = function(req, ctx, next)
    local p, text = req.params, (req.params.arguments or {}).text
    if p.name == "alias" then p.name = text == "gone" and "none" or "plain" end
    if text == "bad" then p.arguments.text = 7 end
    if text == "list" then p.arguments = mcp.array { "x" } end
    return next(req)
  end },
} }
]]

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- A new directory holding one plugin file (paths.lua, or file).
local function plugin_dir(source, file)
  local dir = H.tmpdir()
  write(dir .. "/" .. (file or "paths.lua"), source or PLUGIN)
  return dir
end

local function server(dir, lua_path)
  return H.start { plugins = { dir }, args = { "--page-size", "4" },
                   env = { LUAMCP_LUA_PATH = lua_path and "1" or "" } }
end

-- mw: a second plugin directory (a middleware's), or nil.
local function session(dir, lua_path, mw)
  return H.session { plugins = { dir, mw }, args = { "--page-size", "4" },
                     env = { LUAMCP_LUA_PATH = lua_path and "1" or "" } }
end

-- What the client gets, without the id (the two servers number alike anyway).
local function answer(c, method, params, id)
  local resp = c:request(method, params, { id = id })
  resp.id = nil
  return resp
end

local REQUESTS = {
  { "tools/call", { name = "echo", arguments = { text = "hi" } } },
  { "tools/call", { name = "echo", arguments = { text = 7 } } },         -- refused by the schema
  { "tools/call", { name = "echo", arguments = { "a" } } },              -- not an object
  { "tools/call", { name = "plain", arguments = { text = "p" } } },
  { "tools/call", { name = "plain" } },                                   -- no arguments
  { "tools/call", { name = "nothing" } },
  { "tools/call", { name = "number" } },
  { "tools/call", { name = "content" } },
  { "tools/call", { name = "nul_type" } },                                -- not mcp.text's: as it is
  { "tools/call", { name = "text_table" } },
  { "tools/call", { name = "structured" } },
  { "tools/call", { name = "failed" } },
  { "tools/call", { name = "raised" } },
  { "tools/call", { name = "typed" } },
  { "tools/call", { name = "task_only" } },
  { "tools/call", { name = "missing" } },
  { "tools/call", { name = 3 } },
  { "tools/call", { name = "plain\0x", arguments = { text = "p" } } },
  { "tools/list", {} },
  { "tools/list", { cursor = "5" } },
  { "tools/list", { cursor = "9" } },
  { "tools/list", { cursor = "x" } },
  { "tools/list", { cursor = "5\0" } },
}

describe("the two paths of a request", function()
  local dir
  before_each(function() dir = plugin_dir() end)
  after_each(function()
    H.cleanup()
    os.remove(dir .. "/paths.lua")
    os.remove(dir)
  end)

  it("runs a tools/call handler straight from C, and through server.lua with LUAMCP_LUA_PATH=1", function()
    local fast, slow = session(dir, false), session(dir, true)
    local on_c = H.text(fast:call("stack"))
    local on_lua = H.text(slow:call("stack"))
    assert.is_nil(on_c:find("mcp/server", 1, true), on_c)
    assert.is_truthy(on_lua:find("mcp/server/tools.lua", 1, true), on_lua)
  end)

  it("lists in Lua a registry with an entry it cannot encode, and still runs its tools in C", function()
    local odd = plugin_dir(UNLISTED)
    local fast, slow = session(odd, false), session(odd, true)
    for i, r in ipairs { { "tools/list", {} }, { "tools/call", { name = "odd" } } } do
      assert.are.same(answer(slow, r[1], r[2], i), answer(fast, r[1], r[2], i))
    end
    assert.are.equal(-32603, answer(fast, "tools/list", {}, 9).error.code)
    assert.are.equal("ok", H.text(fast:call("odd")))
    os.remove(odd .. "/paths.lua")
    os.remove(odd)
  end)

  it("answers 2026-07-28 requests alike on both paths, input rounds included", function()
    local fast, slow = server(dir, false), server(dir, true)
    local rev = "2026-07-28"
    local function p(t)
      t._meta = { ["io.modelcontextprotocol/protocolVersion"] = rev,
                  ["io.modelcontextprotocol/clientCapabilities"] = { elicitation = {} } }
      return t
    end
    for i, r in ipairs(REQUESTS) do
      local params = p(H.cjson.decode(H.cjson.encode(r[2])))
      assert.are.same(answer(slow, r[1], params, i), answer(fast, r[1], params, i), r[1] .. " " .. H.cjson.encode(r[2]))
    end
    -- an input round: each server seals its state with its own key
    local asked, asked_slow = answer(fast, "tools/call", p { name = "ask" }, 50),
                              answer(slow, "tools/call", p { name = "ask" }, 50)
    assert.are.equal("input_required", asked.result.resultType)
    local function retry(state)
      return p { name = "ask", inputResponses = { color = { action = "accept", content = { c = "red" } } },
                 requestState = state }
    end
    local a = answer(fast, "tools/call", retry(asked.result.requestState), 51)
    local b = answer(slow, "tools/call", retry(asked_slow.result.requestState), 51)
    asked.result.requestState, asked_slow.result.requestState = nil, nil
    assert.are.same(asked_slow, asked)
    assert.are.same(b, a)
    assert.are.equal("red", a.result.content[1].text)
    assert.is_nil(H.text(answer(fast, "tools/call", p { name = "stack" }, 52)):find("mcp/server", 1, true))
  end)

  it("gives the same answers on both paths", function()
    local fast, slow = session(dir, false), session(dir, true)
    for i, r in ipairs(REQUESTS) do
      local a, b = answer(fast, r[1], r[2], i), answer(slow, r[1], r[2], i)
      assert.are.same(b, a, r[1] .. " " .. H.cjson.encode(r[2]))
    end
  end)

  -- A pass-through middleware on tools/call changes no answer: its next
  -- runs the call's own step in C (fastpath.c), or in Lua (tools.lua) with
  -- LUAMCP_LUA_PATH=1.
  it("gives the same answers through a pass-through middleware, on both paths", function()
    local mw = plugin_dir(PASS, "pass.lua")
    local plain, fast, slow = session(dir, false), session(dir, false, mw), session(dir, true, mw)
    for i, r in ipairs(REQUESTS) do
      local want = answer(plain, r[1], r[2], i)
      local what = r[1] .. " " .. H.cjson.encode(r[2])
      assert.are.same(want, answer(fast, r[1], r[2], i), what)
      assert.are.same(want, answer(slow, r[1], r[2], i), what)
    end
    assert.is_truthy(H.text(fast:call("stack")):find("pass.lua", 1, true))
    assert.is_nil(H.text(fast:call("stack")):find("mcp/server/tools.lua", 1, true))
    assert.is_truthy(H.text(slow:call("stack")):find("mcp/server/tools.lua", 1, true))
    os.remove(mw .. "/pass.lua")
    os.remove(mw)
  end)

  -- next runs the step the params name after the middleware's rewrite,
  -- checked as they are then, on both paths.
  it("runs tools/call's step on the params a middleware rewrote, as the Lua path does", function()
    local mw = plugin_dir(REWRITE, "rewrite.lua")
    local fast, slow = session(dir, false, mw), session(dir, true, mw)
    local cases = {
      { name = "alias", arguments = { text = "a" } },   -- now plain
      { name = "plain", arguments = { text = "bad" } }, -- now 7: refused by the schema
      { name = "alias" },
      { name = "plain", arguments = { text = "list" } }, -- now an array: not an object
      { name = "alias", arguments = { text = "gone" } }, -- now no such tool
    }
    for i, params in ipairs(cases) do
      assert.are.same(answer(slow, "tools/call", params, i), answer(fast, "tools/call", params, i),
                      H.cjson.encode(params))
    end
    assert.are.equal("a", H.text(answer(fast, "tools/call", cases[1], 9)))
    assert.is_true(answer(fast, "tools/call", cases[2], 10).result.isError)
    os.remove(mw .. "/rewrite.lua")
    os.remove(mw)
  end)

  -- While a middleware covers tools/call, C starts the call's chain (the
  -- middleware under the handler, and no server.lua frame), and the plain C
  -- path comes back when it goes.
  it("runs tools/call through a middleware while one covers it, hot reload included", function()
    local mw = H.tmpdir()
    local c = H.session { plugins = { dir, mw }, args = { "--watch" } }
    local function through()
      local trace = H.text(c:call("stack"))
      assert.is_nil(trace:find("mcp/server", 1, true), trace)
      return trace:find("pass.lua", 1, true) ~= nil
    end
    assert.is_false(through())
    write(mw .. "/pass.lua", PASS)
    assert.is_true(H.until_equal(through, true))
    os.remove(mw .. "/pass.lua")
    assert.is_false(H.until_equal(through, false))
    os.remove(mw)
  end)
end)
