-- 2026-07-28 over HTTP: a tools/call whose _meta is a recent request's is
-- read from its text (transport_http.c's on_post_text: its headers checked
-- against that reading, headers.c's mcp_headers_agree_text, its scopes from
-- the tool's name, the call started with no tree); anything else, and
-- whatever that reading refuses, is parsed whole and checked on the tree.
-- Each request here is sent both ways (as it is, and with its "jsonrpc" key
-- escaped, which makes it parsed whole), its _meta kept by a request before:
-- the two answers must be the same, status, body and challenge.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local cjson = H.cjson

local V26 = '"io.modelcontextprotocol/protocolVersion":"2026-07-28"'
local CAPS = '"io.modelcontextprotocol/clientCapabilities":{}'
local META = "{" .. V26 .. "," .. CAPS .. "}"

local function whole(text) return (text:gsub('"jsonrpc"', '"\\u006asonrpc"', 1)) end
local function padded(text) return (text:gsub('"jsonrpc"', '     "jsonrpc"', 1)) end

local b64 = HH.header_b64

local function body(id, params, meta)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":' ..
         params:gsub("META", ((meta or META):gsub("%%", "%%%%"))) .. '}'
end

-- POST text with the standard headers (Mcp-Name: name, unless headers says
-- otherwise), headers (a map of overrides, false drops one) and extra (a
-- list of {name, value}). Returns what a client sees of the answer.
local function post(srv, text, name, headers, extra)
  local r, msg = HH.rpc_rev2026(srv, { method = "tools/call", params = { name = name } },
                                { body = text, headers = headers, extra = extra })
  local content = msg and msg.result and msg.result.content
  if content and content[1] and content[1].text:sub(1, 1) == "{" then   -- mirror's arguments, in any order
    content[1].text = cjson.decode(content[1].text)
  end
  return { status = r.status, type = r:header("content-type"), challenge = r:header("www-authenticate"),
           msg = msg }
end

-- Send text both ways; the answers must be the same. Returns the answer.
local function both(srv, text, name, headers, extra)
  local fast = post(srv, padded(text), name, headers, extra)
  local slow = post(srv, whole(text), name, headers, extra)
  assert.are.same(slow, fast, text .. " " .. cjson.encode(headers or {}) .. " " .. cjson.encode(extra or {}))
  return fast
end

-- mirror's arguments are mirrored in Mcp-Param-Region, -Count, -Flag and
-- -Tenant (opts.tenant); plain has none (spec/fixtures/param_headers).
local function args(a) return '{"name":"mirror","arguments":' .. a .. ',"_meta":META}' end

local CASES = {
  -- { what, params, headers (overrides), extra headers, the status both get }
  { "every header agreeing", args('{"region":"us","count":42,"flag":false,"opts":{"tenant":"t"},"note":"n"}'),
    nil, { { "Mcp-Param-Region", "us" }, { "mcp-param-count", "42" }, { "Mcp-Param-Flag", "false" },
           { "MCP-PARAM-TENANT", "t" } }, 200 },
  { "no headers for arguments not given", args("{}"), nil, nil, 200 },
  { "no arguments", '{"name":"mirror","_meta":META}', nil, nil, 200 },
  { "a tool that declares none", '{"name":"plain","arguments":{"region":"a"},"_meta":META}',
    { ["Mcp-Name"] = "plain" }, { { "Mcp-Param-Region", "b" } }, 200 },
  { "an unknown tool", '{"name":"missing","arguments":{},"_meta":META}', { ["Mcp-Name"] = "missing" }, nil, 200 },
  { "no Mcp-Method", args("{}"), { ["Mcp-Method"] = false }, nil, 400 },
  { "another Mcp-Method", args("{}"), { ["Mcp-Method"] = "tools/list" }, nil, 400 },
  { "Mcp-Method in another case", args("{}"), { ["Mcp-Method"] = "Tools/Call" }, nil, 400 },
  { "no Mcp-Name", args("{}"), { ["Mcp-Name"] = false }, nil, 400 },
  { "another Mcp-Name", args("{}"), { ["Mcp-Name"] = "plain" }, nil, 400 },
  { "Mcp-Name in Base64", args("{}"), { ["Mcp-Name"] = b64("mirror") }, nil, 200 },
  { "Mcp-Name in bad Base64", args("{}"), { ["Mcp-Name"] = "=?base64?bWlycm9?=" }, nil, 400 },
  { "Mcp-Name with a character a header may not carry", args("{}"), { ["Mcp-Name"] = "mirr\xc3\xb6r" }, nil, 400 },
  { "no MCP-Protocol-Version", args("{}"), { ["MCP-Protocol-Version"] = false }, nil, 400 },
  { "another MCP-Protocol-Version", args("{}"), { ["MCP-Protocol-Version"] = "2025-11-25" }, nil, 400 },
  { "an unknown MCP-Protocol-Version", args("{}"), { ["MCP-Protocol-Version"] = "2099-01-01" }, nil, 400 },
  { "a value without its header", args('{"region":"us"}'), nil, nil, 400 },
  { "a header without its value", args("{}"), nil, { { "Mcp-Param-Region", "us" } }, 400 },
  { "a header for null", args('{"region":null}'), nil, { { "Mcp-Param-Region", "us" } }, 400 },
  { "null without a header", args('{"region":null}'), nil, nil, 200 },
  { "a header that differs", args('{"region":"us"}'), nil, { { "Mcp-Param-Region", "eu" } }, 400 },
  { "a header in another case of letters", args('{"region":"us"}'), nil, { { "Mcp-Param-Region", "US" } }, 400 },
  { "a header in Base64", args('{"region":"h\xc3\xa9"}'), nil, { { "Mcp-Param-Region", b64("h\xc3\xa9") } }, 200 },
  { "a header in Base64 that differs", args('{"region":"he"}'), nil, { { "Mcp-Param-Region", b64("hx") } }, 400 },
  { "a header in bad Base64", args('{"region":"Hello"}'), nil, { { "Mcp-Param-Region", "=?base64?SGVsbG8?=" } }, 400 },
  { "a header given twice", args('{"region":"a"}'), nil, { { "Mcp-Param-Region", "a" }, { "mcp-param-region", "a" } },
    400 },
  { "an undeclared header", args('{"region":"a"}'), nil, { { "Mcp-Param-Region", "a" }, { "Mcp-Param-Other", "x" } },
    200 },
  { "a value with an escape", args('{"region":"us\\u002dwest"}'), nil, { { "Mcp-Param-Region", "us-west" } }, 200 },
  { "a value with an escape that differs", args('{"region":"us\\u002dwest"}'), nil,
    { { "Mcp-Param-Region", "us_west" } }, 400 },
  { "a key with an escape", args('{"r\\u0065gion":"us"}'), nil, { { "Mcp-Param-Region", "us" } }, 200 },
  { "a key given twice (the last counts)", args('{"region":"a","region":"b"}'), nil,
    { { "Mcp-Param-Region", "b" } }, 200 },
  { "a key given twice, the first's header", args('{"region":"a","region":"b"}'), nil,
    { { "Mcp-Param-Region", "a" } }, 400 },
  { "an integer", args('{"count":42}'), nil, { { "Mcp-Param-Count", "42" } }, 200 },
  { "an integer written otherwise", args('{"count":42}'), nil, { { "Mcp-Param-Count", "4.2e1" } }, 200 },
  { "an integer that differs", args('{"count":42}'), nil, { { "Mcp-Param-Count", "43" } }, 400 },
  { "a real", args('{"count":42.0}'), nil, { { "Mcp-Param-Count", "42" } }, 200 },
  { "-0", args('{"count":-0}'), nil, { { "Mcp-Param-Count", "0" } }, 200 },
  { "integers past a double", args('{"count":9007199254740992}'), nil, { { "Mcp-Param-Count", "9007199254740993" } },
    400 },
  { "integers past a double, the same", args('{"count":9007199254740993}'), nil,
    { { "Mcp-Param-Count", "9007199254740993" } }, 200 },
  { "an integer for a string", args('{"region":42}'), nil, { { "Mcp-Param-Region", "42" } }, 200 },
  { "a boolean", args('{"flag":true}'), nil, { { "Mcp-Param-Flag", "true" } }, 200 },
  { "a boolean that differs", args('{"flag":true}'), nil, { { "Mcp-Param-Flag", "false" } }, 400 },
  { "a boolean in another case", args('{"flag":true}'), nil, { { "Mcp-Param-Flag", "True" } }, 400 },
  { "an object for a value", args('{"region":{"a":1}}'), nil, { { "Mcp-Param-Region", "x" } }, 400 },
  { "a nested value", args('{"opts":{"tenant":"t1"}}'), nil, { { "Mcp-Param-Tenant", "t1" } }, 200 },
  { "a nested value without its header", args('{"opts":{"tenant":"t1"}}'), nil, nil, 400 },
  { "a nested value that differs", args('{"opts":{"tenant":"t1"}}'), nil, { { "Mcp-Param-Tenant", "t2" } }, 400 },
  { "a nested value under no object", args('{"opts":"t1"}'), nil, { { "Mcp-Param-Tenant", "t1" } }, 400 },
  { "an empty string", args('{"region":""}'), nil, { { "Mcp-Param-Region", "" } }, 200 },
  { "arguments an array", '{"name":"mirror","arguments":[1],"_meta":META}', nil, { { "Mcp-Param-Region", "x" } },
    400 },
  { "more arguments than are read as text", args("{" .. (function()
      local t = {}
      for i = 1, 70 do t[i] = '"k' .. i .. '":' .. i end
      return table.concat(t, ",")
    end)() .. ',"region":"us"}'), nil, { { "Mcp-Param-Region", "us" } }, 200 },
}

describe("a 2026-07-28 tools/call over HTTP read from its text or parsed whole", function()
  local srv
  setup(function()
    srv = HH.start { plugins = { "spec/fixtures/param_headers" } }
    post(srv, body(1, '{"name":"plain","_meta":META}'), "plain")        -- its _meta kept
  end)
  teardown(HH.cleanup)

  for _, case in ipairs(CASES) do
    it("gets the same answer with " .. case[1], function()
      for _, id in ipairs { "7", '"s-7"' } do
        local got = both(srv, body(id, case[2]), "mirror", case[3], case[4])
        assert.are.equal(case[5], got.status, case[1] .. ": " .. cjson.encode(got.msg))
        if case[5] == 400 then assert.are.equal(-32020, got.msg.error.code, cjson.encode(got.msg)) end
      end
    end)
  end

  it("gets the same answer for what the _meta says, kept or not", function()
    for _, meta in ipairs {
      META,
      '{"io.modelcontextprotocol/protocolVersion":"2099-01-01",' .. CAPS .. '}',
      '{' .. V26 .. '}',
      '{' .. V26 .. ',' .. CAPS .. ',"io.modelcontextprotocol/logLevel":"loud"}',
      '{' .. V26 .. ',' .. CAPS .. ',"progressToken":"t"}',
      '{' .. V26 .. ',' .. CAPS .. ',"io.modelcontextprotocol/clientInfo":{"name":"new"}}',   -- not kept yet
    } do
      local text = body(9, '{"name":"mirror","arguments":{"region":"us"},"_meta":META}', meta)
      for _, over in ipairs { {}, { ["MCP-Protocol-Version"] = "2099-01-01" } } do
        both(srv, text, "mirror", over, { { "Mcp-Param-Region", "us" } })
      end
    end
  end)

  it("serves a call read from its text as the tree's", function()
    post(srv, body(2, '{"name":"plain","_meta":META}'), "plain")        -- its _meta kept again
    local got = both(srv, body(3, args('{"region":"us","count":1,"opts":{"tenant":"t"}}')), "mirror", nil,
                     { { "Mcp-Param-Region", "us" }, { "Mcp-Param-Count", "1" }, { "Mcp-Param-Tenant", "t" } })
    assert.are.same({ region = "us", count = 1, opts = { tenant = "t" } },
                    got.msg.result.content[1].text)
    assert.are.equal("complete", got.msg.result.resultType)
  end)
end)

-- A tool's declarations change with a reload: its policy says whether it
-- declares any (policy.c), and that must follow.
describe("a 2026-07-28 tools/call over HTTP to a tool reloaded with other x-mcp-header declarations", function()
  local dir
  setup(function() dir = H.tmpdir() end)
  teardown(function()
    HH.cleanup()
    H.rmdir(dir)
  end)

  local function plugin(header)
    return ([[
local mcp = require "mcp"
return mcp.plugin { name = "r", tools = {
  mcp.tool { name = "r", inputSchema = { type = "object", properties = { region = { type = "string" %s } } },
             handler = function(args) return "region " .. tostring(args.region) end },
} }
]]):format(header and ', ["x-mcp-header"] = "Region"' or "")
  end

  it("checks the headers the tool declares now, read from its text or parsed whole", function()
    H.edit_file(dir .. "/r.lua", plugin(false))
    local srv = HH.start { plugins = { dir }, args = { "--watch", "--log-level", "debug" } }
    local text = body(5, '{"name":"r","arguments":{"region":"us"},"_meta":META}')
    post(srv, text, "r")                                                 -- its _meta kept
    assert.are.equal(200, both(srv, text, "r").status)
    for round, header in ipairs { true, false, true } do
      H.edit_file(dir .. "/r.lua", plugin(header))
      assert.are.equal(round, H.until_equal(function() return srv:count_stderr("reloaded plugin r", true) end, round),
                       srv:stderr_text())
      assert.are.equal(header and 400 or 200, both(srv, text, "r").status)
      if header then assert.are.equal(200, both(srv, text, "r", nil, { { "Mcp-Param-Region", "us" } }).status) end
    end
  end)
end)

-- Scopes (OAuth, with a real authorization server: spec/auth_helper.lua).
describe("a 2026-07-28 tools/call over HTTP with scopes, read from its text or parsed whole", function()
  local A = require "spec.auth_helper"
  local as, env
  setup(function() as, env = A.auth_server() end)
  teardown(function() A.stop(as, env) end)
  after_each(HH.cleanup)

  it("gets the same answer with the scopes a tool needs, or not all of them", function()
    local srv = A.start(as, nil, nil, { "spec/fixtures/auth" })
    local function token(sub, scope)
      return A.bearer(as:mint { sub = sub, scope = scope, aud = srv.aud, client_id = "spec-client" })
    end
    for _, sub in ipairs { "ann", "bob" } do            -- a subject's first request, then its next
      for _, case in ipairs {
        { "write", "notes:read", 403 }, { "write", "notes:write", 200 }, { "admin", "notes:write", 403 },
        { "admin", "notes:admin notes:write", 200 }, { "whoami", "", 200 },
      } do
        local text = body('"' .. sub .. '"', '{"name":"' .. case[1] .. '","arguments":{},"_meta":META}')
        local got = both(srv, text, case[1], token(sub, case[2]))
        assert.are.equal(case[3], got.status, cjson.encode(got.msg))
        if case[3] == 403 then assert.truthy(got.challenge:find("insufficient_scope", 1, true), got.challenge) end
      end
    end
  end)
end)
