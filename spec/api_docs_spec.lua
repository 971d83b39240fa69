-- Every public name of mcp and ctx, as a running server has them
-- (fixtures/api_names), has a LuaLS annotation in types/mcp.lua and an entry
-- in docs/reference/lua-api.md; the deprecated ones are annotated
-- ---@deprecated; and no annotated function of mcp or method of ctx is gone
-- from the server. mcp.test's names are annotated in types/mcp.test.lua.
local H = require "spec.helper"
local cjson = require "cjson"

local TYPES = H.root .. "/types/mcp.lua"
local TEST_TYPES = H.root .. "/types/mcp.test.lua"
local REFERENCE = H.root .. "/docs/reference/lua-api.md"

-- Kept one release as deprecated names (issue 19's contract, section 3).
local DEPRECATED = { "mcp.sleep", "mcp.cancelled", "mcp.log", "mcp.http", "mcp.spawn",
                     "mcp.read_file", "mcp.list_dir", "mcp.realpath" }

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

-- The names the server has: {mcp = {...}, ctx_methods = {...}, ctx_fields = {...}}.
local function server_names()
  local c = H.session { plugins = { "spec/fixtures/api_names" } }
  local names = cjson.decode(H.text(c:call("api_names")))
  H.cleanup()
  return names
end

-- The annotated names: mcp["mcp.x"], methods["x"], fields["x"], each
-- {deprecated = bool}. A name is annotated by `function mcp.x(`, `mcp.x =`,
-- `function CTX:x(` (CTX: the table declared after ---@class mcp.Ctx) and
-- the ---@field lines of that class; ---@deprecated in the doc comment just
-- above marks it.
local function annotations(text)
  local a = { mcp = {}, methods = {}, fields = {} }
  local deprecated, in_ctx, ctx_var = false, false, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:find("^%-%-%-") then
      if line:find("^%-%-%-@deprecated") then deprecated = true end
      if line:find("^%-%-%-@class ") then in_ctx = line:find("^%-%-%-@class mcp%.Ctx%f[^%w_.]") ~= nil end
      local field = in_ctx and not ctx_var and line:match("^%-%-%-@field ([%a_][%w_]*)")
      if field then a.fields[field] = { deprecated = false } end
    else
      local entry = { deprecated = deprecated }
      local name = line:match("^function (mcp%.[%w_%.]+)%(") or line:match("^(mcp%.[%w_%.]+)%s*=")
      if name then a.mcp[name] = entry end
      if in_ctx and not ctx_var then ctx_var = line:match("^local ([%a_][%w_]*) = {}") end
      local method = ctx_var and line:match("^function " .. ctx_var .. ":([%a_][%w_]*)%(")
      if method then a.methods[method] = entry end
      deprecated = false
    end
  end
  return a
end

-- The names of the functions annotated as methods of class (`function X:x(`,
-- X the table declared after ---@class class), or as fields of the table
-- declared after it (`function X.x(`, `X.x =`).
local function members(text, class)
  local names, var, after = {}, nil, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:find("^%-%-%-@class ") then after = line:find("^%-%-%-@class " .. H.esc(class) .. "%f[^%w_.]") ~= nil end
    if after and not var then var = line:match("^local ([%a_][%w_]*) = {}") end
    local name = var and (line:match("^function " .. var .. "[:.]([%a_][%w_]*)%(")
                          or line:match("^" .. var .. "%.([%a_][%w_]*)%s*="))
    if name then names[#names + 1] = name end
  end
  table.sort(names)
  return names
end

-- The public keys of t (functions only, if functions), sorted.
local function keys(t, functions)
  local list = {}
  for k, v in pairs(t) do
    if type(k) == "string" and not k:find("^_") and (not functions or type(v) == "function") then
      list[#list + 1] = k
    end
  end
  table.sort(list)
  return list
end

-- Is name (`mcp.x`, `ctx:x`, `ctx.x`) the start of a `code span` of the reference?
local function documented(reference, name)
  for span in reference:gmatch("`([^`\n]+)`") do
    if span:sub(1, #name) == name and not span:sub(#name + 1, #name + 1):find("^[%w_]") then
      return true
    end
  end
  return false
end

describe("the API reference and the LuaLS annotations", function()
  local names, annotated, reference

  setup(function()
    names = server_names()
    annotated = annotations(read(TYPES))
    reference = read(REFERENCE)
  end)
  teardown(function() H.cleanup() end)

  it("the server's names are what the fixture found", function()
    -- a broken walk would make the other tests pass on nothing
    assert.is_true(#names.mcp >= 20, cjson.encode(names.mcp))
    assert.is_true(#names.ctx_methods >= 10, cjson.encode(names.ctx_methods))
    assert.is_true(#names.ctx_fields >= 3, cjson.encode(names.ctx_fields))
    for _, want in ipairs { "mcp.tool", "mcp.json.encode", "mcp.sqlite.open" } do
      assert.truthy(table.concat(names.mcp, " "):find(want, 1, true), want)
    end
  end)

  it("annotates every public name of mcp", function()
    local missing = {}
    for _, n in ipairs(names.mcp) do
      if not annotated.mcp[n] then missing[#missing + 1] = n end
    end
    assert.are.same({}, missing)
  end)

  it("annotates every method and field of ctx", function()
    local missing = {}
    for _, n in ipairs(names.ctx_methods) do
      if not annotated.methods[n] then missing[#missing + 1] = "ctx:" .. n end
    end
    for _, n in ipairs(names.ctx_fields) do
      if not annotated.fields[n] then missing[#missing + 1] = "ctx." .. n end
    end
    assert.are.same({}, missing)
  end)

  it("lists every public name of mcp and ctx in the API reference", function()
    local missing = {}
    local function check(name)
      if not documented(reference, name) then missing[#missing + 1] = name end
    end
    for _, n in ipairs(names.mcp) do check(n) end
    for _, n in ipairs(names.ctx_methods) do check("ctx:" .. n) end
    for _, n in ipairs(names.ctx_fields) do check("ctx." .. n) end
    assert.are.same({}, missing)
  end)

  it("annotates the deprecated names ---@deprecated, and only them", function()
    local want, wrong = {}, {}
    for _, n in ipairs(DEPRECATED) do
      want[n] = true
      if not (annotated.mcp[n] and annotated.mcp[n].deprecated) then wrong[#wrong + 1] = n .. " not deprecated" end
    end
    for n, e in pairs(annotated.mcp) do
      if e.deprecated and not want[n] then wrong[#wrong + 1] = n .. " deprecated" end
    end
    for n, e in pairs(annotated.methods) do
      if e.deprecated then wrong[#wrong + 1] = "ctx:" .. n .. " deprecated" end
    end
    table.sort(wrong)
    assert.are.same({}, wrong)
  end)

  it("annotates no function of mcp and no method of ctx the server lacks", function()
    local have, stale = {}, {}
    for _, n in ipairs(names.mcp) do have[n] = true end
    for _, n in ipairs(names.ctx_methods) do have["ctx:" .. n] = true end
    for n in pairs(annotated.mcp) do
      if not have[n] then stale[#stale + 1] = n end
    end
    for n in pairs(annotated.methods) do
      if not have["ctx:" .. n] then stale[#stale + 1] = "ctx:" .. n end
    end
    table.sort(stale)
    assert.are.same({}, stale)
  end)

  it("annotations are a Lua file (a meta file LuaLS reads as the module mcp)", function()
    assert(loadfile(TYPES))
    assert.are.equal("---@meta mcp", read(TYPES):match("^[^\n]*"))
  end)

  it("annotates mcp.test: the module, a server's and a call's methods", function()
    package.path = H.root .. "/lua/?.lua;" .. package.path
    local T = require "mcp.test"
    local text = read(TEST_TYPES)
    assert(loadfile(TEST_TYPES))
    assert.are.same(keys(T), members(text, "mcp.test"))
    local srv = T.start { plugins = { "spec/fixtures/api_names" }, bin = H.binary() }
    local c = srv:start("api_names")
    assert(c:result())
    srv:stop()
    assert.are.same(keys(getmetatable(srv).__index, true), members(text, "mcp.test.Server"))
    assert.are.same(keys(getmetatable(c).__index, true), members(text, "mcp.test.Call"))
  end)

  it("parses annotations the way the checks above rely on", function()
    local a = annotations(table.concat({
      "---@class mcp.Ctx", "---@field id integer", "local C = {}", "",
      "---@deprecated use x", "function C:old() end", "function C:new() end", "",
      "---@class other", "---@field nope string", "local mcp = {}",
      "---@deprecated use ctx:sleep", "---@param s number", "function mcp.sleep(s) end",
      "mcp.json = {}", "function mcp.json.encode(v) end",
    }, "\n"))
    assert.are.same({ id = { deprecated = false } }, a.fields)
    assert.are.same({ old = { deprecated = true }, new = { deprecated = false } }, a.methods)
    assert.are.same({ ["mcp.sleep"] = { deprecated = true }, ["mcp.json"] = { deprecated = false },
                      ["mcp.json.encode"] = { deprecated = false } }, a.mcp)
    assert.is_true(documented("`ctx:sleep(seconds)` and `mcp.json.encode(v)`", "ctx:sleep"))
    assert.is_true(documented("`mcp.json.encode(v)`", "mcp.json"))
    assert.is_false(documented("`mcp.is_array(t)`", "mcp.is"))
    assert.is_false(documented("ctx:sleep outside code", "ctx:sleep"))
    assert.are.same({ "a", "b", "c" }, members(table.concat({
      "---@class x.Y", "local Y = {}", "function Y:a() end", "function Y.b() end", "Y.c = nil",
      "---@class x.Z", "local Z = {}", "function Z:d() end",
    }, "\n"), "x.Y"))
  end)
end)
