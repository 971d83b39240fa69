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
local function supports(ctx)
  local out = {}
  for _, cap in ipairs { "elicitation", "roots", "sampling", "tasks" } do
    if ctx:supports(cap) then out[#out + 1] = cap end
  end
  return table.concat(out, ",")
end
return mcp.plugin { name = "text", tools = {
  mcp.tool { name = "canon", handler = function(args, ctx)
    if args.progress then ctx:progress(1, 2) end
    if args.log then ctx:log("info", "logged " .. canon(args)) end
    local seen = canon(args) .. " id=" .. canon(ctx.id)
    if args.ctx then seen = seen .. " supports=" .. supports(ctx) .. " resumed=" .. tostring(ctx.resumed) end
    return seen
  end },
  mcp.tool { name = "typed", inputSchema = { type = "object", properties = { n = { type = "integer" } },
                                             required = { "n" } },
             handler = function(args) return "n=" .. canon(args.n) end },
  mcp.tool { name = "ask", handler = function(args, ctx)
    local r, err = ctx:elicit({ message = "Your name?", requestedSchema = { type = "object",
                                properties = { name = { type = "string" } } } }, { key = "name" })
    if not r then return mcp.error("no name: " .. err) end
    return "hello " .. tostring(r.content and r.content.name) .. " " .. canon(args)
  end },
  mcp.tool { name = "only_task", task = "required", handler = function() return "task" end },
  mcp.tool { name = "maybe_task", task = "optional", handler = function(args) return canon(args) end },
  mcp.tool { name = "wait", handler = function(_, ctx)
    io.stderr:write("text: wait started " .. canon(ctx.id) .. "\n")
    ctx:sleep(30)
    io.stderr:write("text: wait ended " .. canon(ctx.id) .. " cancelled=" .. tostring(ctx:cancelled()) .. "\n")
    return "waited"
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
    local method = c.inbox[i].msg.method
    if method == "notifications/progress" or method == "notifications/message" then
      notes[#notes + 1] = table.remove(c.inbox, i).msg
    end
  end
  msg.id = nil
  return msg, notes, H.raw_member(raw, "id")
end

-- A directory with PLUGIN in it for a describe's tests (made before them,
-- removed after): a function giving the plugins option's list.
local function plugin_dir()
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
  return function() return { dir } end
end

describe("a tools/call read from its text or parsed whole", function()
  local plugins = plugin_dir()

  for _, case in ipairs(CASES) do
    it("gets the same answer with " .. case[1], function()
      local c = H.session { plugins = plugins() }
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
    local c = H.session { plugins = plugins() }
    local r = answer(c, line("1", '{"name":"canon","arguments":{"i":1,"f":1.0,"n":null,"a":[],"o":{}}}'))
    assert.are.equal('{"a"=[],"f"=float:1,"i"=integer:1,"n"=null,"o"={}} id=integer:1', H.text(r))
    r = answer(c, line('"x"', '{"name":"canon","arguments":{"progress":true},"_meta":{"progressToken":"tok"}}'))
    assert.are.equal('{"progress"=true} id="x"', H.text(r))
  end)

  it("answers a parse error for \\u0000 in a key and a nesting too deep, as before", function()
    local c = H.session { plugins = plugins() }
    for _, text in ipairs { line("1", '{"name":"canon","arguments":{"a\\u0000b":1}}'),
                            line("2", '{"name":"canon","arguments":{"a":' .. TOO_DEEP .. '}}') } do
      local r, _, id = answer(c, text)
      assert.are.equal("null", id)
      assert.are.equal(-32700, r.error.code, cjson.encode(r))
    end
  end)

  it("refuses an id already in flight, as before", function()
    local c = H.session { plugins = plugins() }
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

---------------------------------------------------------------------------
-- 2026-07-28: a stateless tools/call is read from its text too when its
-- _meta is a recent request's (rev2026_meta.c keeps it: the first line with
-- it is parsed whole, which keeps it); anything unusual is parsed whole. Each
-- case is sent with its _meta kept (a line with it first), with and without
-- a session initialized, both ways, with every id.

local V26 = '"io.modelcontextprotocol/protocolVersion":"2026-07-28"'
local CAPS = '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{}}'
local INFO = '"io.modelcontextprotocol/clientInfo":{"name":"spec","version":"1"}'
local function meta(...) return "{" .. table.concat({ ... }, ",") .. "}" end
local META = meta(CAPS, V26, INFO)
local TASKS = '"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}'

local CASES26 = {
  { "a mount's line", META, '{"arguments":{"text":"hello"},"name":"canon","_meta":META}' },
  { "_meta first, white space", META, ' { "_meta" : META , "name" : "canon" , "arguments" : { "x" : [ 1 ] } } ' },
  { "no arguments", META, '{"name":"canon","_meta":META}' },
  { "what ctx says", META, '{"name":"canon","arguments":{"ctx":true},"_meta":META}' },
  { "a log level, and a log", meta(CAPS, V26, '"io.modelcontextprotocol/logLevel":"debug"'),
    '{"name":"canon","arguments":{"log":true},"_meta":META}' },
  { "no log level, and a log", META, '{"name":"canon","arguments":{"log":true},"_meta":META}' },
  { "a log level that is none", meta(CAPS, V26, '"io.modelcontextprotocol/logLevel":"loud"'),
    '{"name":"canon","_meta":META}' },
  { "a log level not a string", meta(CAPS, V26, '"io.modelcontextprotocol/logLevel":3'),
    '{"name":"canon","_meta":META}' },
  { "a progressToken in the _meta", meta(CAPS, V26, '"progressToken":"tok"'),
    '{"name":"canon","arguments":{"progress":true},"_meta":META}' },
  { "another version", meta(CAPS, '"io.modelcontextprotocol/protocolVersion":"2099-01-01"'),
    '{"name":"canon","_meta":META}' },
  { "a version not a string", meta(CAPS, '"io.modelcontextprotocol/protocolVersion":20260728'),
    '{"name":"canon","_meta":META}' },
  { "no client capabilities", meta(V26, INFO), '{"name":"canon","_meta":META}' },
  { "client capabilities not an object", meta(V26, '"io.modelcontextprotocol/clientCapabilities":[]'),
    '{"name":"canon","_meta":META}' },
  { "the version given twice (the last counts)",
    meta('"io.modelcontextprotocol/protocolVersion":"2099-01-01"', CAPS, V26), '{"name":"canon","_meta":META}' },
  { "an escape in a _meta key", meta(CAPS, '"io.modelcontextprotocol\\/protocolVersion":"2026-07-28"'),
    '{"name":"canon","arguments":{"ctx":true},"_meta":META}' },
  { "an escape in a _meta value", meta(CAPS, V26, '"io.modelcontextprotocol/clientInfo":{"name":"s\\u0070ec"}'),
    '{"name":"canon","arguments":{"ctx":true},"_meta":META}' },
  { "an unknown tool", META, '{"name":"missing","arguments":{},"_meta":META}' },
  { "arguments the schema refuses", META, '{"name":"typed","arguments":{"n":"x"},"_meta":META}' },
  { "arguments the schema takes", META, '{"name":"typed","arguments":{"n":3},"_meta":META}' },
  { "arguments an array", META, '{"name":"canon","arguments":[1],"_meta":META}' },
  { "\\u0000 in a key of the arguments", META, '{"name":"canon","arguments":{"a\\u0000b":1},"_meta":META}' },
  { "a name with an escape", META, '{"name":"c\\u0061non","arguments":{},"_meta":META}' },
  { "a name given twice (the last counts)", META, '{"name":"missing","name":"canon","_meta":META}' },
  { "_meta given twice (the last counts)", META, '{"name":"canon","_meta":{"progressToken":1},"_meta":META}' },
  { "params with task", META, '{"name":"maybe_task","arguments":{},"task":{"ttl":1000},"_meta":META}' },
  { "a tool with task support", META, '{"name":"maybe_task","arguments":{"a":1},"_meta":META}' },
  { "a tool with task support, the tasks extension", meta(TASKS, V26),
    '{"name":"maybe_task","arguments":{"a":1},"_meta":META}' },
  { "a task-only tool without the tasks extension", META, '{"name":"only_task","_meta":META}' },
  { "a task-only tool with the tasks extension", meta(TASKS, V26), '{"name":"only_task","_meta":META}' },
  { "input asked (an input_required result)", META, '{"name":"ask","arguments":{"a":1},"_meta":META}' },
  { "input asked of a client that cannot give it", meta(V26, '"io.modelcontextprotocol/clientCapabilities":{}'),
    '{"name":"ask","arguments":{"a":1},"_meta":META}' },
  { "a retry with answers", META, '{"name":"ask","arguments":{"a":1},"inputResponses":{"name":' ..
                                  '{"action":"accept","content":{"name":"Ada"}}},"_meta":META}' },
  { "a retry with a requestState", META, '{"name":"ask","requestState":"bogus","_meta":META}' },
}

-- What differs from one answer to the next by design: a task's id and
-- times, a sealed requestState.
local VARIES = { taskId = true, createdAt = true, lastUpdatedAt = true, requestState = true }
local function settled(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = VARIES[k] and type(x) or settled(x) end
  return out
end

local function line26(id, params, meta_text)
  return '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":' ..
         params:gsub("META", (meta_text:gsub("%%", "%%%%"))) .. '}'
end

describe("a 2026-07-28 tools/call read from its text or parsed whole", function()
  local plugins = plugin_dir()

  for _, case in ipairs(CASES26) do
    it("gets the same answer with " .. case[1], function()
      for _, initialized in ipairs { false, true } do
        local c = initialized and H.session { plugins = plugins() } or H.start { plugins = plugins() }
        answer(c, line26('"keep"', '{"name":"canon","_meta":META}', case[2]))
        for _, id in ipairs(IDS) do
          local text = line26(id[1], case[3], case[2])
          local fast, fast_notes, fast_id = answer(c, padded(text))
          local slow, slow_notes, slow_id = answer(c, whole(text))
          local what = text .. (initialized and " (initialized)" or "")
          assert.are.same(settled(slow), settled(fast), what)
          assert.are.same(slow_notes, fast_notes, what)
          assert.are.equal(slow_id, fast_id, what)
          if fast.result then assert.are.equal(id[2], fast_id, what) end
        end
      end
    end)
  end

  it("gives the handler what the tree did", function()
    local c = H.start { plugins = plugins() }
    answer(c, line26("1", '{"name":"canon","_meta":META}', META))
    local r = answer(c, line26("2", '{"name":"canon","arguments":{"i":1,"ctx":true},"_meta":META}', META))
    assert.are.equal('{"ctx"=true,"i"=integer:1} id=integer:2 supports=elicitation,sampling resumed=false',
                     H.text(r))
    assert.are.equal("complete", r.result.resultType)
    r = answer(c, line26("3", '{"name":"ask","arguments":{},"_meta":META}', META))
    assert.are.equal("input_required", r.result.resultType)
    assert.are.equal("elicitation/create", r.result.inputRequests.name.method)
    local retry = '{"name":"ask","arguments":{},"requestState":' .. cjson.encode(r.result.requestState) ..
                  ',"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"_meta":META}'
    r = answer(c, line26("4", retry, META))
    assert.are.equal("hello Ada {}", H.text(r))
  end)

  it("refuses an id in flight and cancels it, read from its text or parsed whole", function()
    local c = H.start { plugins = plugins() }
    answer(c, line26('"keep"', '{"name":"canon","_meta":META}', META))
    for round, form in ipairs { padded, whole } do
      c:send(form(line26('"w"', '{"name":"wait","_meta":META}', META)) .. "\n")
      assert.are.equal(round, H.until_equal(function() return c:count_stderr('text: wait started "w"', true) end,
                                            round), c:stderr_text())
      for _, second in ipairs { padded, whole } do
        local r, _, id = answer(c, second(line26('"w"', '{"name":"canon","_meta":META}', META)))
        assert.are.equal('"w"', id)
        assert.are.equal(-32600, r.error.code, cjson.encode(r))
      end
      c:send(H.cancel_raw('"w"', "enough"))
      assert.are.equal(round, H.until_equal(function()
        return c:count_stderr('text: wait ended "w" cancelled=true', true)
      end, round), c:stderr_text())
      c:no_response(0.3)
    end
  end)
end)
