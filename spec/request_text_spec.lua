-- A plain tools/call is read from its text (session.c's quick_call: no
-- jansson tree, the arguments decoded straight into Lua); anything unusual
-- is parsed whole. Each line here is sent twice: as it is, and with its
-- "jsonrpc" key escaped, which makes it parsed whole; both must get the same
-- answer, what the handler saw included.
local H = require "spec.helper"
local cjson = H.cjson

-- canon: what the handler got (its arguments, the ctx's id), as text with
-- the keys sorted and every type named (an integer from a float, an array
-- from an object, null).
local PLUGIN = [[
local mcp = require "mcp"
local function canon(v)
  local t = type(v)
  if v == mcp.null then return "null" end
  if t == "number" then return math.type(v) .. ":" .. string.format("%.17g", v) end
  if t == "string" then return string.format("%q", v) end
  if t ~= "table" then return tostring(v) end
  local out = {}
  if mcp.is_array(v) then
    for i = 1, #v do out[i] = canon(v[i]) end
    return "[" .. table.concat(out, ",") .. "]"
  end
  for k, x in pairs(v) do out[#out + 1] = string.format("%q", k) .. "=" .. canon(x) end
  table.sort(out)
  return "{" .. table.concat(out, ",") .. "}"
end
return mcp.plugin { name = "text", tools = {
  mcp.tool { name = "canon", handler = function(args, ctx)
    if args.progress then ctx:progress(1, 2) end
    return canon(args) .. " id=" .. canon(ctx.id)
  end },
} }
]]

-- The line parsed whole, and the line as it is padded to the same length
-- (a parse error names the same byte in both).
local function whole(line) return (line:gsub('"jsonrpc"', '"\\u006asonrpc"', 1)) end
local function padded(line) return (line:gsub('"jsonrpc"', '     "jsonrpc"', 1)) end

local function line(id, params)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":' .. params .. '}'
end

local DEEP = string.rep('{"a":', 250) .. "1" .. string.rep("}", 250)
local TOO_DEEP = string.rep("[", 254) .. string.rep("]", 254)

local CASES = {
  { "plain arguments", line("ID", '{"name":"canon","arguments":{"text":"hello"}}') },
  { "every JSON type in the arguments, escapes and duplicate keys",
    line("ID", '{"name":"canon","arguments":{"s":"a\\"b\\\\c\\n\\u00e9\\ud83d\\ude00/\\/","i":-42,' ..
               '"big":9223372036854775807,"neg":-9223372036854775808,"f":1.5,"e":1E3,"z":-0,"zf":-0.0,' ..
               '"t":true,"no":false,"n":null,"a":[1,[2,{}],[]],"o":{"k":{}},"":"empty key",' ..
               '"d\\u0075p":1,"dup":2,"\\u00e9":"\xc3\xa9"}}') },
  { "white space everywhere and another order",
    ' { "params" : { "arguments" : { "x" : [ 1 , 2 ] } , "name" : "canon" } ,\t"method" : "tools/call" ,' ..
    ' "id" : ID , "jsonrpc" : "2.0" } ' },
  { "no arguments", line("ID", '{"name":"canon"}') },
  { "empty arguments", line("ID", '{"name":"canon","arguments":{}}') },
  { "a progressToken (a string)", line("ID", '{"name":"canon","arguments":{"progress":true},' ..
                                            '"_meta":{"progressToken":"tok"}}') },
  { "a progressToken (an integer)", line("ID", '{"_meta":{"progressToken":-7},"name":"canon",' ..
                                              '"arguments":{"progress":true}}') },
  { "a progressToken with an escape", line("ID", '{"name":"canon","arguments":{"progress":true},' ..
                                                '"_meta":{"progressToken":"t\\u006fk"}}') },
  { "a progressToken that is a float (none)", line("ID", '{"name":"canon","arguments":{"progress":true},' ..
                                                        '"_meta":{"progressToken":1.5}}') },
  { "_meta with more than a progressToken", line("ID", '{"name":"canon","arguments":{},' ..
                                                      '"_meta":{"progressToken":1,"other":{"x":[1]}}}') },
  { "_meta not an object", line("ID", '{"name":"canon","arguments":{},"_meta":5}') },
  { "arguments an array", line("ID", '{"name":"canon","arguments":[1]}') },
  { "arguments a string", line("ID", '{"name":"canon","arguments":"x"}') },
  { "arguments null", line("ID", '{"name":"canon","arguments":null}') },
  { "an unknown tool", line("ID", '{"name":"missing","arguments":{}}') },
  { "a name that is not a string", line("ID", '{"name":3,"arguments":{}}') },
  { "a name with an escape", line("ID", '{"name":"c\\u0061non","arguments":{"k":1}}') },
  { "a name with \\u0000", line("ID", '{"name":"canon\\u0000x","arguments":{}}') },
  { "a name given twice (the last counts)", line("ID", '{"name":"missing","name":"canon","arguments":{}}') },
  { "arguments given twice", line("ID", '{"name":"canon","arguments":{"a":1},"arguments":{"b":2}}') },
  { "no name", line("ID", '{"arguments":{}}') },
  { "params with task", line("ID", '{"name":"canon","arguments":{},"task":{"ttl":1000}}') },
  { "params with another member", line("ID", '{"name":"canon","arguments":{},"x":1}') },
  { "params an array", line("ID", '[1]') },
  { "no params", '{"jsonrpc":"2.0","id":ID,"method":"tools/call"}' },
  { "an escaped key in params", line("ID", '{"n\\u0061me":"canon","arguments":{}}') },
  { "\\u0000 in a key of the arguments", line("ID", '{"name":"canon","arguments":{"a\\u0000b":1}}') },
  { "\\u0000 in a string of the arguments", line("ID", '{"name":"canon","arguments":{"a":"x\\u0000y"}}') },
  { "nested as deep as allowed", line("ID", '{"name":"canon","arguments":' .. DEEP .. '}') },
  { "nested too deep", line("ID", '{"name":"canon","arguments":{"a":' .. TOO_DEEP .. '}}') },
  { "an integer out of range", line("ID", '{"name":"canon","arguments":{"a":9223372036854775808}}') },
  { "invalid UTF-8", line("ID", '{"name":"canon","arguments":{"a":"\xff"}}') },
  { "truncated", line("ID", '{"name":"canon","arguments":{"a":1}') },
  { "text after the object", line("ID", '{"name":"canon","arguments":{}}') .. " x" },
  { "the method given twice", '{"jsonrpc":"2.0","id":ID,"method":"ping","method":"tools/call",' ..
                              '"params":{"name":"canon"}}' },
  { "another method first, tools/call last", '{"jsonrpc":"2.0","id":ID,"method":"tools/call",' ..
                                              '"method":"ping","params":{"name":"canon"}}' },
  { "jsonrpc 1.0", '{"jsonrpc":"1.0","id":ID,"method":"tools/call","params":{"name":"canon"}}' },
  { "jsonrpc with an escape", '{"jsonrpc":"2\\u002e0","id":ID,"method":"tools/call","params":{"name":"canon"}}' },
  { "the method with an escape", '{"jsonrpc":"2.0","id":ID,"method":"tools\\/call","params":{"name":"canon"}}' },
  { "more members than are read as text", '{"jsonrpc":"2.0","id":ID,"method":"tools/call","a":1,"b":2,' ..
                                          '"c":3,"d":4,"e":5,"params":{"name":"canon"}}' },
}

-- Ids: the request's id text, and the id a result must carry.
local IDS = { { "7", "7" }, { '"s-7"', '"s-7"' }, { "-0", "0" }, { '"\\u0061"', '"a"' }, { "1.5", "null" } }

-- The response to a line, its id's text apart; the progress notifications
-- that came before it.
local function answer(c, text)
  c:send(text .. "\n")
  local msg, raw = c:take(function(m) return H.is_response(m) end)
  assert(msg, "no response to " .. text .. "\n" .. c:stderr_text())
  local notes = {}
  for i = #c.inbox, 1, -1 do
    if c.inbox[i].msg.method == "notifications/progress" then
      notes[#notes + 1] = table.remove(c.inbox, i).msg
    end
  end
  msg.id = nil
  return msg, notes, H.raw_member(raw, "id")
end

describe("a tools/call read from its text or parsed whole", function()
  local dir
  setup(function()
    dir = H.tmpdir()
    local f = assert(io.open(dir .. "/text.lua", "w"))
    f:write(PLUGIN)
    f:close()
  end)
  teardown(function()
    os.remove(dir .. "/text.lua")
    os.remove(dir)
  end)
  after_each(H.cleanup)

  for _, case in ipairs(CASES) do
    it("gets the same answer with " .. case[1], function()
      local c = H.session { plugins = { dir } }
      for _, id in ipairs(IDS) do
        local text = case[2]:gsub("ID", (id[1]:gsub("%%", "%%%%")))
        local fast, fast_notes, fast_id = answer(c, padded(text))
        local slow, slow_notes, slow_id = answer(c, whole(text))
        assert.are.same(slow, fast, text)
        assert.are.same(slow_notes, fast_notes, text)
        assert.are.equal(slow_id, fast_id, text)
        if fast.result then assert.are.equal(id[2], fast_id, text) end
      end
    end)
  end

  it("reads what the handler gets as the tree did", function()
    local c = H.session { plugins = { dir } }
    local r = answer(c, line("1", '{"name":"canon","arguments":{"i":1,"f":1.0,"n":null,"a":[],"o":{}}}'))
    assert.are.equal('{"a"=[],"f"=float:1,"i"=integer:1,"n"=null,"o"={}} id=integer:1', H.text(r))
    r = answer(c, line('"x"', '{"name":"canon","arguments":{"progress":true},"_meta":{"progressToken":"tok"}}'))
    assert.are.equal('{"progress"=true} id="x"', H.text(r))
  end)

  it("answers a parse error for \\u0000 in a key and a nesting too deep, as before", function()
    local c = H.session { plugins = { dir } }
    for _, text in ipairs { line("1", '{"name":"canon","arguments":{"a\\u0000b":1}}'),
                            line("2", '{"name":"canon","arguments":{"a":' .. TOO_DEEP .. '}}') } do
      local r, _, id = answer(c, text)
      assert.are.equal("null", id)
      assert.are.equal(-32700, r.error.code, cjson.encode(r))
    end
  end)

  it("refuses an id already in flight, as before", function()
    local c = H.session { plugins = { dir } }
    for _, second in ipairs { line("5", '{"name":"canon","arguments":{}}'),
                              whole(line("5", '{"name":"canon","arguments":{}}')) } do
      c:send(line("5", '{"name":"canon","arguments":{}}') .. "\n" .. second .. "\n")
      local codes = {}
      for _ = 1, 2 do
        local m, raw = c:take(function(msg) return H.is_response(msg) end)
        assert(m, c:stderr_text())
        assert.are.equal("5", H.raw_member(raw, "id"))
        codes[#codes + 1] = m.error and m.error.code or "result"
      end
      table.sort(codes, function(a, b) return tostring(a) < tostring(b) end)
      assert.are.same({ -32600, "result" }, codes)
    end
  end)
end)
