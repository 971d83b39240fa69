-- Mcp-Param-{Name} headers (2026-07-28, SEP-2243): the arguments a tool
-- marks with x-mcp-header are mirrored by the client into headers, which the
-- server checks against the body (400 with -32020 otherwise); and a tool
-- whose x-mcp-header annotations are invalid is refused when its plugin loads.
local H = require "spec.helper"
local HH = require "spec.http_helper"
local cjson = H.cjson

local FIX = "spec/fixtures/param_headers"

local meta = HH.meta_rev2026               -- no client capabilities

local next_id = 0

-- POST a 2026-07-28 tools/call. args: a table (encoded) or the JSON text of
-- the arguments (sent as written); headers: a list of {name, value} after the
-- standard ones. Returns the response and its JSON-RPC message.
local function call(srv, tool, args, headers)
  next_id = next_id + 1
  local body = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s,"arguments":%s,"_meta":%s}}')
    :format(next_id, cjson.encode(tool), type(args) == "string" and args or cjson.encode(args),
            cjson.encode(meta()))
  local r, msg = HH.rpc_rev2026(srv, { method = "tools/call", params = { name = tool } },   -- for the headers
                          { body = body, extra = headers })
  assert.are.equal(next_id, msg and msg.id, r:describe())
  return r, msg
end

-- The call was served: 200 and the tool's echo of its arguments.
local function served(r, msg)
  assert.are.equal(200, r.status, r:describe())
  assert.is_nil(msg.error, r:describe())
  return cjson.decode(msg.result.content[1].text)
end

-- The call was refused as a header mismatch saying `what` (first, so that
-- refused(what, call(...)) passes both of call's results).
local function refused(what, r, msg)
  assert.are.equal(400, r.status, r:describe())
  assert.are.equal(-32020, msg.error and msg.error.code, r:describe())
  if what then assert.truthy(msg.error.message:find(what, 1, true), msg.error.message) end
end

local b64 = HH.header_b64

describe("Mcp-Param headers over Streamable HTTP (2026-07-28)", function()
  local srv
  before_each(function() srv = HH.start{ plugins = { FIX }, args = { "--log-level", "debug" } } end)
  after_each(function() HH.cleanup() end)

  it("lists x-mcp-header as declared", function()
    local _, list = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "tools/list", params = { _meta = meta() } })
    local props
    for _, t in ipairs(list.result.tools) do
      if t.name == "mirror" then props = t.inputSchema.properties end
    end
    assert.are.equal("Region", props.region["x-mcp-header"])
    assert.are.equal("Tenant", props.opts.properties.tenant["x-mcp-header"])
  end)

  it("accepts plain values that match, header names in any case, whitespace around values", function()
    local got = served(call(srv, "mirror", { region = "us-west1", count = 42, flag = false,
                                             opts = { tenant = "acme corp" }, note = "n" },
                            { { "mcp-param-region", "  us-west1 " }, { "MCP-PARAM-COUNT", "42" },
                              { "Mcp-Param-Flag", "false" }, { "Mcp-Param-Tenant", "acme corp" } }))
    assert.are.same({ region = "us-west1", count = 42, flag = false, opts = { tenant = "acme corp" },
                      note = "n" }, got)
  end)

  it("decodes =?base64?...?= values: non-ASCII, edge spaces, control characters, the sentinel", function()
    for _, v in ipairs{ "Hello, 世界", " padded ", "line1\r\nline2", "\tindented", "=?base64?literal?=", "" } do
      local got = served(call(srv, "mirror", { region = v }, { { "Mcp-Param-Region", b64(v) } }))
      assert.are.equal(v, got.region)
    end
  end)

  it("takes a value without both sentinels, or with them in another case, literally", function()
    served(call(srv, "mirror", { region = "SGVsbG8=" }, { { "Mcp-Param-Region", "SGVsbG8=" } }))
    served(call(srv, "mirror", { region = "=?base64?SGVsbG8=" },
                { { "Mcp-Param-Region", "=?base64?SGVsbG8=" } }))
    -- the sentinels are case-sensitive: this is the literal text, not "Hello"
    refused("does not match",
            call(srv, "mirror", { region = "Hello" }, { { "Mcp-Param-Region", "=?BASE64?SGVsbG8=?=" } }))
  end)

  it("accepts an empty string with an empty header", function()
    local got = served(call(srv, "mirror", { region = "" }, { { "Mcp-Param-Region", "" } }))
    assert.are.equal("", got.region)
  end)

  it("compares integers numerically and booleans as true/false", function()
    for _, h in ipairs{ "42", "42.0", "4.2e1", "=?base64?NDI=?=" } do
      served(call(srv, "mirror", '{"count":42}', { { "Mcp-Param-Count", h } }))
    end
    served(call(srv, "mirror", '{"count":42.0}', { { "Mcp-Param-Count", "42" } }))
    served(call(srv, "mirror", '{"count":-7}', { { "Mcp-Param-Count", "-7" } }))
    served(call(srv, "mirror", '{"count":9007199254740991}', { { "Mcp-Param-Count", "9007199254740991" } }))
    for _, h in ipairs{ "43", "42abc", "0x2a", " 4 2", "", "4.2e1x" } do
      refused("Mcp-Param-Count", call(srv, "mirror", '{"count":42}', { { "Mcp-Param-Count", h } }))
    end
    -- integers written as integers compare exactly, past what a double holds
    refused("does not match",
            call(srv, "mirror", '{"count":9007199254740992}', { { "Mcp-Param-Count", "9007199254740993" } }))
    served(call(srv, "mirror", { flag = true }, { { "Mcp-Param-Flag", "true" } }))
    for _, h in ipairs{ "True", "1", "yes", "false" } do
      refused("Mcp-Param-Flag", call(srv, "mirror", { flag = true }, { { "Mcp-Param-Flag", h } }))
    end
  end)

  it("mirrors a property nested in properties", function()
    served(call(srv, "mirror", { opts = { tenant = "t1" } }, { { "Mcp-Param-Tenant", "t1" } }))
    refused("arguments.opts.tenant", call(srv, "mirror", { opts = { tenant = "t1" } }, {}))
    served(call(srv, "mirror", { opts = {} }, {}))
  end)

  it("refuses a value in the body without its header (400, -32020, the request's id)", function()
    local r, msg = call(srv, "mirror", { region = "us-west1" }, {})
    refused("Mcp-Param-Region header required", r, msg)
    assert.truthy(srv:wait_stderr("http: 400: Header mismatch: Mcp-Param-Region header required", nil,
                                  { plain = true }), srv:stderr_text())
  end)

  it("refuses a header whose value the body does not have, and expects none for null", function()
    refused("arguments.region is absent", call(srv, "mirror", {}, { { "Mcp-Param-Region", "us" } }))
    refused("is null", call(srv, "mirror", { region = cjson.null }, { { "Mcp-Param-Region", "us" } }))
    -- null without a header passes the header check (the schema then says what it thinks of null)
    local r, msg = call(srv, "mirror", { region = cjson.null }, {})
    assert.are.equal(200, r.status, r:describe())
    assert.is_true(msg.result.isError)
  end)

  it("refuses a header that does not match the body", function()
    refused("Mcp-Param-Region header value 'eu-west1' does not match body value \"us-west1\"",
            call(srv, "mirror", { region = "us-west1" }, { { "Mcp-Param-Region", "eu-west1" } }))
    refused("does not match",
            call(srv, "mirror", { region = "Hello" }, { { "Mcp-Param-Region", b64("Hellx") } }))
    refused("does not match", call(srv, "mirror", { region = "42" }, { { "Mcp-Param-Region", "42.0" } }))
  end)

  it("refuses malformed Base64 and characters a header may not carry", function()
    -- no padding, not the alphabet, stray bits after the last byte, padding too early
    for _, h in ipairs{ "=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?SGVsbG9=?=",
                        "=?base64?S===?=" } do
      refused("not valid Base64", call(srv, "mirror", { region = "Hello" }, { { "Mcp-Param-Region", h } }))
    end
    refused("characters a header may not carry",
            call(srv, "mirror", { region = "ré" }, { { "Mcp-Param-Region", "ré" } }))
  end)

  it("refuses a repeated header, and ignores Mcp-Param headers the tool does not declare", function()
    refused("given 2 times",
            call(srv, "mirror", { region = "a" }, { { "Mcp-Param-Region", "a" }, { "mcp-param-region", "a" } }))
    served(call(srv, "mirror", { region = "a" }, { { "Mcp-Param-Region", "a" }, { "Mcp-Param-Other", "x" } }))
    assert.are.equal("a", served(call(srv, "plain", { region = "a" }, { { "Mcp-Param-Region", "b" } })).region)
  end)

  it("applies the same encoding to Mcp-Name: trimmed, Base64 decoded strictly", function()
    local function named(name)
      next_id = next_id + 1
      return HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = next_id, method = "tools/call",
                             params = { name = "plain", arguments = {}, _meta = meta() } },
                      { headers = { ["Mcp-Name"] = name } })
    end
    local r, msg = named("  plain  ")
    assert.are.equal(200, r.status, r:describe())
    assert.is_nil(msg.error)
    assert.are.equal(200, (named(b64("plain"))).status)
    refused("not valid Base64", named("=?base64?cGxhaW4?="))
  end)

  it("names the Mcp-Param headers a browser's preflight asks for", function()
    HH.cleanup()
    srv = HH.start{ plugins = { FIX }, args = { "--allow-origin", "https://app.example" } }
    local c = HH.connect(srv)
    local r = c:exchange{ method = "OPTIONS", headers = {
      Origin = "https://app.example", ["Access-Control-Request-Method"] = "POST",
      ["Access-Control-Request-Headers"] = "content-type,mcp-method, Mcp-Param-Region,mcp-param-count ,x-other" } }
    assert.are.equal(204, r.status, r:describe())
    local allow = r:header("access-control-allow-headers")
    assert.truthy(allow:find("Mcp-Name", 1, true), allow)
    assert.truthy(allow:find(", Mcp%-Param%-Region, mcp%-param%-count$"), allow)
    assert.is_nil(allow:find("x-other", 1, true), allow)
  end)

  it("is a 2026-07-28 rule: a 2025-11-25 session's tools/call needs no Mcp-Param header", function()
    local s = HH.initialize(srv, "2025-11-25")
    local resp = s:rpc("tools/call", { name = "mirror", arguments = { region = "us" } })
    assert.are.equal("us", cjson.decode(resp.result.content[1].text).region)
  end)
end)

---------------------------------------------------------------------------
-- Declarations

-- One plugin file per case, so that each is refused on its own.
local BAD = {
  empty = '{ type = "string", ["x-mcp-header"] = "" }',
  not_a_string = '{ type = "string", ["x-mcp-header"] = 7 }',
  object_type = '{ type = "object", ["x-mcp-header"] = "Data" }',
  array_type = '{ type = "array", items = { type = "string" }, ["x-mcp-header"] = "Items" }',
  null_type = '{ type = "null", ["x-mcp-header"] = "Nil" }',
  number_type = '{ type = "number", ["x-mcp-header"] = "Score" }',
  no_type = '{ ["x-mcp-header"] = "Any" }',
  space = '{ type = "string", ["x-mcp-header"] = "My Region" }',
  colon = '{ type = "string", ["x-mcp-header"] = "Region:Primary" }',
  non_ascii = '{ type = "string", ["x-mcp-header"] = "Région" }',
  control = '{ type = "string", ["x-mcp-header"] = "Region\\t1" }',
  under_items = '{ type = "array", items = { type = "string", ["x-mcp-header"] = "Item" } }',
  under_anyof = '{ anyOf = { { type = "string", ["x-mcp-header"] = "Alt" } } }',
}

local WHY = {
  empty = "must be a non-empty string",
  not_a_string = "must be a non-empty string",
  object_type = "must be of type string, integer or boolean (got object)",
  array_type = "must be of type string, integer or boolean (got array)",
  null_type = "must be of type string, integer or boolean (got null)",
  number_type = "must be of type string, integer or boolean (got number)",
  no_type = "must be of type string, integer or boolean (got no type)",
  space = '"My Region" is not a header name',
  colon = '"Region:Primary" is not a header name',
  non_ascii = "is not a header name",
  control = "is not a header name",
  under_items = "only a property reached from the schema root through properties alone",
  under_anyof = "only a property reached from the schema root through properties alone",
}

local function plugin_text(name, prop)
  return ([[
local mcp = require "mcp"
return mcp.plugin { name = %q, tools = {
  mcp.tool {
    name = %q,
    inputSchema = { type = "object", properties = { value = %s } },
    handler = function() return "" end,
  },
} }
]]):format(name, name, prop)
end

describe("x-mcp-header declarations", function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p '" .. dir .. "'"))
    for name, prop in pairs(BAD) do
      local f = assert(io.open(dir .. "/" .. name .. ".lua", "w"))
      f:write(plugin_text(name, prop))
      f:close()
    end
    local f = assert(io.open(dir .. "/dup.lua", "w"))
    f:write([[
local mcp = require "mcp"
return mcp.plugin { name = "dup", tools = {
  mcp.tool {
    name = "dup",
    inputSchema = { type = "object", properties = {
      a = { type = "string", ["x-mcp-header"] = "MyField" },
      b = { type = "object", properties = { c = { type = "integer", ["x-mcp-header"] = "myfield" } } },
    } },
    handler = function() return "" end,
  },
} }
]])
    f:close()
    f = assert(io.open(dir .. "/good.lua", "w"))
    f:write(plugin_text("good", '{ type = "string", ["x-mcp-header"] = "Method" }'))
    f:close()
  end)
  after_each(function()
    HH.cleanup()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("refuses each invalid annotation when its plugin loads, naming file, line and tool", function()
    local srv = HH.start{ plugins = { dir } }
    for name, why in pairs(WHY) do
      local file = (dir .. "/" .. name .. ".lua:3"):gsub("%p", "%%%0")
      local line = srv:wait_stderr("plugin not loaded: " .. file .. ": tool " .. name ..
                                   ': inputSchema%.properties%.value[^:]*%["x%-mcp%-header"%]: ')
      assert.truthy(line, name .. "\n" .. srv:stderr_text())
      assert.truthy(line:find(why, 1, true), line)
    end
    assert.truthy(srv:wait_stderr('dup.lua:3: tool dup: inputSchema.properties.b.properties.c["x-mcp-header"]: ' ..
                                  "Mcp-Param-myfield is the header of inputSchema.properties.a already " ..
                                  "(Mcp-Param-MyField", nil, { plain = true }), srv:stderr_text())
    -- only the valid tool is served ("Method" makes Mcp-Param-Method, not Mcp-Method)
    local _, list = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "tools/list", params = { _meta = meta() } })
    local names = {}
    for _, t in ipairs(list.result.tools) do names[#names + 1] = t.name end
    assert.are.same({ "good" }, names)
    local _, msg = call(srv, "good", { value = "v" }, { { "Mcp-Param-Method", "v" } })
    assert.is_nil(msg.error)
  end)
end)
