-- The plugin author's commands: luamcp list, call, check, new and path.
local H = require "spec.helper"
local uv = require "luv"
local cjson = require "cjson"

local OK = "spec/fixtures/cli/ok"
local BROKEN = "spec/fixtures/cli/broken"
local RETURNS = "spec/fixtures/cli/returns"

local sanitizer_patterns = {
  "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer",
}

-- Run a command to its end. opts: cwd, env (added to the environment), bin,
-- on_stderr(line, r) called for each stderr line (r.proc may be signalled),
-- timeout. Returns r: code, signal, out (stdout text), err (stderr text), lines.
local function run(args, opts)
  opts = opts or {}
  local r = { out = "", lines = {}, err_buf = "" }
  local stdout, stderr = uv.new_pipe(false), uv.new_pipe(false)
  local env
  if opts.env then
    local base = uv.os_environ()
    for k, v in pairs(opts.env) do base[k] = v end
    env = {}
    for k, v in pairs(base) do env[#env + 1] = k .. "=" .. v end
  end
  local proc, pid = uv.spawn(opts.bin or H.binary(), {
    args = args, stdio = { nil, stdout, stderr }, cwd = opts.cwd or H.root, env = env,
  }, function(code, signal) r.code, r.signal, r.exited = code, signal, true end)
  assert(proc, pid)
  r.proc, r.started = proc, H.now()
  stdout:read_start(function(err, data)
    if err or not data then r.out_eof = true; return end
    r.out = r.out .. data
  end)
  stderr:read_start(function(err, data)
    if err or not data then r.err_eof = true; return end
    r.err_buf = r.err_buf .. data
    while true do
      local nl = r.err_buf:find("\n", 1, true)
      if not nl then break end
      local line = r.err_buf:sub(1, nl - 1)
      r.err_buf = r.err_buf:sub(nl + 1)
      r.lines[#r.lines + 1] = line
      if H.verbose then io.stderr:write("  [", pid, " err] ", line, "\n") end
      if opts.on_stderr then opts.on_stderr(line, r) end
    end
  end)
  local done = H.run_until(function() return r.exited and r.out_eof and r.err_eof end, opts.timeout or H.WAIT)
  if not done and not r.exited then proc:kill("sigkill") end
  H.run_until(function() return r.exited end, 5)
  for _, h in ipairs({ stdout, stderr, proc }) do
    if not h:is_closing() then h:close() end
  end
  uv.run("nowait")
  r.elapsed = H.now() - r.started
  r.err = table.concat(r.lines, "\n") .. (r.err_buf ~= "" and "\n" .. r.err_buf or "")
  for _, l in ipairs(r.lines) do
    for _, p in ipairs(sanitizer_patterns) do
      if l:find(p, 1, true) then error("sanitizer report on stderr:\n" .. r.err, 2) end
    end
  end
  assert(done, "the command did not end: " .. table.concat(args, " ") .. "\nstderr:\n" .. r.err)
  return r
end

local function has(text, piece) return text:find(piece, 1, true) ~= nil end

local function assert_has(text, piece)
  if not has(text, piece) then
    error(("expected to find %q in:\n%s"):format(piece, text), 2)
  end
end

describe("luamcp list", function()
  it("shows tools with title, description, policy and input schema, then resources and prompts", function()
    local r = run({ "list", "--plugins", OK })
    assert.are.equal(0, r.code, r.err)
    assert_has(r.out, "Tools (10)\n\ngreet (Greeter)\n  Greets someone\n" ..
      "  plugin: clitools (" .. OK .. "/tools.lua)\n" ..
      "  policy: timeout 60s, cancel cooperative, grace 5s\n" ..
      "  input:\n" ..
      "    name: string (required) - who to greet\n" ..
      "    options: object\n" ..
      "    options.suffix: string - appended\n" ..
      "    style: string [one of: plain, loud; header: Mcp-Param-Style]\n" ..
      "    times: integer [1..3; default: 1]\n")
    assert_has(r.out, "fail\n  An error result\n")
    assert_has(r.out, "  input: none\n")
    assert_has(r.out, "slow\n  Times out after 0.3 s\n  plugin: clitools (" .. OK ..
      "/tools.lua)\n  policy: timeout 0.3s, cancel cooperative, grace 5s\n")
    assert_has(r.out, "ignorer\n  Ignores cancels by policy\n  plugin: clitools (" .. OK ..
      "/tools.lua)\n  policy: timeout 60s, cancel ignore, grace 5s\n")
    assert_has(r.out, "Resources (1)\n\ncli://readme (readme)\n  A resource\n")
    assert_has(r.out, "  mimeType: text/plain\n")
    assert_has(r.out, "Prompts (1)\n\nask\n  A prompt\n")
    assert_has(r.out, "  arguments:\n    question (required) - what to ask\n    tone\n")
  end)

  it("shows the server's --timeout and --grace as the default policy", function()
    local r = run({ "list", "--plugins", OK, "--timeout", "0", "--grace", "1.5" })
    assert.are.equal(0, r.code, r.err)
    assert_has(r.out, "greet (Greeter)\n  Greets someone\n  plugin: clitools (" .. OK ..
      "/tools.lua)\n  policy: timeout none, cancel cooperative, grace 5s\n")
  end)

  it("--json prints the raw lists", function()
    local r = run({ "list", "--plugins", OK, "--json" })
    assert.are.equal(0, r.code, r.err)
    local lists = cjson.decode(r.out)
    assert.are.equal(10, #lists.tools)
    assert.are.equal("greet", lists.tools[1].name)
    assert.are.equal("Greeter", lists.tools[1].title)
    assert.are.same({ "name" }, lists.tools[1].inputSchema.required)
    assert.are.equal("cli://readme", lists.resources[1].uri)
    assert.are.same({}, lists.resourceTemplates)
    assert.are.equal("ask", lists.prompts[1].name)
  end)

  it("says so when there is nothing, and exits 0", function()
    local r = run({ "list", "--plugins", "spec/fixtures/nonexistent" })
    assert.are.equal(0, r.code)
    assert.are.equal("", r.out)
    assert_has(r.err, "no tools, resources or prompts")
  end)

  it("refuses unknown options with exit 2", function()
    local r = run({ "list", "--bogus" })
    assert.are.equal(2, r.code)
    assert_has(r.err, "unknown option: --bogus")
  end)
end)

describe("luamcp call", function()
  it("prints a text result plainly and exits 0", function()
    local r = run({ "call", "greet", '{"name": "ann", "options": {"suffix": "!"}}', "--plugins", OK })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("hello ann!\n", r.out)
  end)

  it("shows progress on stderr, a line per update when stderr is not a terminal, and logs", function()
    local r = run({ "call", "progress", '{"n": 3}', "--plugins", OK })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("did 3 steps\n", r.out)
    assert_has(r.err, "progress: 1/3 step 1\nprogress: 2/3 step 2\nprogress: 3/3 step 3\n")
    assert_has(r.err, "[info] clitools: progressed")
  end)

  it("prints structuredContent as pretty JSON, and the whole result with --json", function()
    local r = run({ "call", "structured", "--plugins", OK })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal('{\n  "answer": 42,\n  "list": [\n    "a",\n    "b"\n  ],\n  "ratio": 0.1\n}\n', r.out)
    r = run({ "call", "structured", "--plugins", OK, "--json" })
    assert.are.equal(0, r.code, r.err)
    local result = cjson.decode(r.out)
    assert.are.equal(42, result.structuredContent.answer)
    assert.are.equal("text", result.content[1].type)
  end)

  it("keeps stdout for the result: print() in a handler goes to stderr", function()
    local r = run({ "call", "printer", "--plugins", OK })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("clean\n", r.out)
    assert_has(r.err, "noise from print")
  end)

  it("exits 1 on an isError result, its message on stderr", function()
    local r = run({ "call", "fail", "--plugins", OK })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert_has(r.err, "luamcp: tool fail failed: it did not work")
    r = run({ "call", "fail", "--plugins", OK, "--json" })
    assert.are.equal(1, r.code)
    assert.is_true(cjson.decode(r.out).isError)
    assert_has(r.err, "luamcp: tool fail failed")
  end)

  it("exits 1 on return nil, message", function()
    local r = run({ "call", "not_found", "--plugins", RETURNS })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert_has(r.err, "luamcp: tool not_found failed: city not found")
  end)

  it("prints each text item, and the structuredContent beside", function()
    local r = run({ "call", "both", "--plugins", RETURNS })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal('first\nsecond\n{\n  "n": 1\n}\n', r.out)
  end)

  it("exits 1 on a Lua error: the message on stderr, the position with the traceback in the log", function()
    local r = run({ "call", "boom", "--plugins", OK })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert_has(r.err, "luamcp: tool boom failed: boom goes the handler")
    assert_has(r.err, "tools.lua:62: boom goes the handler\nstack traceback")
  end)

  it("exits 1 on arguments the input schema refuses", function()
    local r = run({ "call", "greet", '{"name": 7}', "--plugins", OK })
    assert.are.equal(1, r.code)
    assert_has(r.err, "Invalid arguments")
  end)

  it("exits 1 on a JSON-RPC error (unknown tool)", function()
    local r = run({ "call", "nope", "--plugins", OK })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert_has(r.err, "error -32602: Unknown tool: nope")
  end)

  it("times out by the tool's policy, running its cleanup, and exits 1", function()
    local r = run({ "call", "slow", "--plugins", OK })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert_has(r.err, 'luamcp: tool slow failed: Tool "slow" timed out after 0.3 seconds')
    assert_has(r.err, "fixture: slow cleanup")
    assert.is_true(r.elapsed < 5)
  end)

  it("takes --timeout like the server", function()
    local r = run({ "call", "wait", "{}", "--plugins", OK, "--timeout", "0.2" })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert_has(r.err, 'luamcp: tool wait failed: Tool "wait" timed out after 0.2 seconds')
    assert_has(r.err, "fixture: wait stopped: cancelled: timeout")
    assert_has(r.err, "fixture: wait cleanup")
  end)

  -- OTEL_* (or --config's otel) as the server takes them; a schedule delay
  -- longer than the run: the spans leave at the exit.
  it("exports the call's traces like the server, before it exits", function()
    local O, OH = require "spec.origin", require "spec.otel_helper"
    local o, dir = O.start(), H.tmpdir()
    local ok, err = pcall(function()
      local env = OH.env(o.url .. "/status/200", { OTEL_BSP_SCHEDULE_DELAY = "60000",
                                                   OTEL_SERVICE_NAME = "cli-svc" })
      local r = run({ "call", "greet", '{"name": "Ada"}', "--plugins", OK }, { env = env })
      assert.are.equal(0, r.code, r.err)
      local s = OH.find(OH.json_spans(o), "tools/call greet")
      assert(s, "no span exported: " .. #o.requests .. " requests\n" .. r.err)
      assert.are.equal("greet", OH.attrs(s.attributes)["gen_ai.tool.name"])
      assert.are.equal("cli-svc", OH.attrs(s.resource.attributes)["service.name"])
      -- the configuration file's otel = {...}
      local conf = dir .. "/luamcp.conf"
      local f = assert(io.open(conf, "w"))
      f:write(("return { otel = { traces_endpoint = %q, protocol = 'http/json', service_name = 'conf-svc' } }\n")
        :format(o.url .. "/status/200"))
      f:close()
      o.requests = {}
      r = run({ "call", "greet", '{"name": "Bo"}', "--plugins", OK, "--config", conf })
      assert.are.equal(0, r.code, r.err)
      s = OH.find(OH.json_spans(o), "tools/call greet")
      assert(s, "no span exported with --config\n" .. r.err)
      assert.are.equal("conf-svc", OH.attrs(s.resource.attributes)["service.name"])
    end)
    o:stop()
    os.execute("rm -rf '" .. dir .. "'")
    assert(ok, err)
  end)

  it("exits 2 on arguments that are not a JSON object, with one line that says where", function()
    for _, case in ipairs {
      { '{"text": "hi",}', "luamcp: call: arguments are not valid JSON: an object key (a string) expected at " ..
                           "byte 14 (line 1 column 15)" },
      { '{"text": ', "luamcp: call: arguments are not valid JSON: a value expected at the end of the text (byte 9)" },
      { "[1, 2]", "luamcp: call: arguments must be a JSON object, like '{\"text\": \"hi\"}'" },
    } do
      local r = run({ "call", "greet", case[1], "--plugins", OK })
      assert.are.equal(2, r.code, case[1] .. "\n" .. r.err)
      assert.are.equal("", r.out)
      assert.are.equal(case[2], r.err)            -- one line: no usage text
    end
  end)

  it("exits 2 on usage errors", function()
    for _, args in ipairs({
      { "call" },
      { "call", "greet", "{not json", "--plugins", OK },
      { "call", "greet", "[1, 2]", "--plugins", OK },
      { "call", "greet", "{}", "extra", "--plugins", OK },
      { "call", "greet", "--timeout", "soon", "--plugins", OK },
    }) do
      local r = run(args)
      assert.are.equal(2, r.code, table.concat(args, " ") .. "\n" .. r.err)
      assert.are.equal("", r.out)
    end
  end)

  it("Ctrl-C cancels through the state machine: cancelling..., the cleanup runs, exit 130", function()
    local sent = false
    local r = run({ "call", "wait", '{"seconds": 30}', "--plugins", OK, "--log-level", "info" }, {
      on_stderr = function(line, r)
        if line == "fixture: wait started" and not sent then
          sent = true
          r.proc:kill("sigint")
        end
      end,
    })
    assert.is_true(sent, r.err)
    assert.are.equal(130, r.code, r.err)
    assert.are.equal("", r.out)
    assert_has(r.err, "cancelling...")
    assert_has(r.err, "request 1 cancelled: interrupted")
    assert_has(r.err, "fixture: wait stopped: cancelled: interrupted")
    assert_has(r.err, "fixture: wait cleanup")
    assert_has(r.err, "\ncancelled")
    assert.is_true(r.elapsed < 10)
  end)

  it("a second Ctrl-C aborts a handler that ignores the cancel", function()
    local phase, cancelling_at = 0, nil
    local r = run({ "call", "stubborn", "--plugins", OK }, {
      on_stderr = function(line, r)
        if line == "fixture: stubborn started" and phase == 0 then
          phase = 1
          r.proc:kill("sigint")
        elseif has(line, "cancelling...") and phase == 1 then
          phase = 2
          cancelling_at = #r.lines
          -- the handler goes on after the first Ctrl-C (its grace is 60 s)
          local t = uv.new_timer()
          t:start(300, 0, function()
            t:close()
            if not r.exited then r.proc:kill("sigint") end
          end)
        end
      end,
    })
    assert.are.equal(2, phase, r.err)
    assert.are.equal(130, r.code, r.err)
    for i = 1, cancelling_at do
      assert.is_nil(r.lines[i]:find("stubborn cleanup", 1, true), "cleanup ran before the second Ctrl-C")
    end
    assert_has(r.err, "aborting...")
    assert_has(r.err, "fixture: stubborn cleanup")
    assert_has(r.err, "\naborted")
    assert.is_true(r.elapsed < 10)
  end)

  it("a second Ctrl-C aborts a tool whose policy ignores cancels", function()
    local phase = 0
    local r = run({ "call", "ignorer", "--plugins", OK }, {
      on_stderr = function(line, r)
        if line == "fixture: ignorer started" and phase == 0 then
          phase = 1
          r.proc:kill("sigint")
        elseif has(line, "cancelling...") and phase == 1 then
          phase = 2
          assert_has(line, "the tool ignores cancels")
          local t = uv.new_timer()
          t:start(300, 0, function()
            t:close()
            if not r.exited then r.proc:kill("sigint") end
          end)
        end
      end,
    })
    assert.are.equal(2, phase, r.err)
    assert.are.equal(130, r.code, r.err)
    assert_has(r.err, "fixture: ignorer cleanup")
    assert.is_true(r.elapsed < 10)
  end)
end)

describe("luamcp check", function()
  it("accepts good plugins with a one-line summary and exit 0", function()
    local r = run({ "check", "--plugins", OK })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("ok: 1 plugin, 10 tools, 1 resource, 0 resource templates, 1 prompt\n", r.out)
  end)

  it("reports each problem of broken plugins as file:line: message and exits 1", function()
    local r = run({ "check", "--plugins", BROKEN })
    assert.are.equal(1, r.code, r.err)
    local expected = {
      "a_syntax.lua:5: '}' expected near '2'",
      'b_schema.lua:12: tool schema_mistakes: inputSchema.properties.a.type: unknown type strnig',
      "b_schema.lua:13: tool schema_mistakes: inputSchema.properties.b.required: list the required properties in inputSchema.required instead",
      "b_schema.lua:14: tool schema_mistakes: inputSchema.properties.c must be a table (a JSON Schema), not a string",
      'b_schema.lua:16: tool schema_mistakes: inputSchema.required: "missing" is not one of its properties',
      'b_schema.lua:22: tool not_an_object: inputSchema: type must be "object" (got array)',
      'b_schema.lua:26: tool "bad name!": a tool name may only use',
      "b_schema.lua:27: tool bad name!: unknown field timout (did you mean timeout?)",
      "c_dup.lua:6: plugin c_dup: unknown field defaults.timout (did you mean defaults.timeout?)",
      'c_dup.lua:9: tool "schema_mistakes" is already defined at ' .. BROKEN .. "/b_schema.lua:8",
      'd_policy.lua:6: tool bad_policy: cancel must be "cooperative", "abort" or "ignore"',
      "e_not_plugin.lua:4: a plugin file must return mcp.plugin{...}",
      "f_raises.lua:4: error object is a table value",
    }
    local lines = {}
    for l in r.out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(#expected + 1, #lines, r.out)
    for i, e in ipairs(expected) do
      assert.are.equal(BROKEN .. "/" .. e, lines[i]:sub(1, #BROKEN + 1 + #e))
    end
    assert.are.equal("13 problems (4 plugins, 6 tools, 0 resources, 0 resource templates, 0 prompts)",
                     lines[#lines])
  end)

  it("finds the line of a load error with no position, and full paths however long", function()
    local dir = os.tmpname()
    os.remove(dir)
    dir = dir .. "/a/directory/name/long/enough/that/lua/would/shorten/it/in/messages"
    assert(os.execute("mkdir -p '" .. dir .. "'"))
    local f = assert(io.open(dir .. "/sleeps.lua", "w"))
    f:write('local mcp = require "mcp"\n\nmcp.sleep(1)\nreturn mcp.plugin { name = "x" }\n')
    f:close()
    f = assert(io.open(dir .. "/tail.lua", "w"))
    f:write('local mcp = require "mcp"\n\nreturn mcp.plugin {\n  name = "",\n}\n')
    f:close()
    local r = run({ "check", "--plugins", dir })
    os.execute("rm -rf '" .. dir:match("^(.-)/a/directory") .. "'")
    assert.are.equal(1, r.code, r.err)
    assert_has(r.out, dir .. "/sleeps.lua:3: sleep: not inside a request")
    assert_has(r.out, dir .. "/tail.lua:4: mcp.plugin: name must be a non-empty string")
  end)

  it("reports every mistake in the declarations of a file, each at its field's line with a hint", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/typos.lua", "w"))
    f:write([[
local mcp = require "mcp"
return mcp.plugin {
  name = "typos",
  defaults = { timout = 2 },
  tools = {
    mcp.tool {
      name = "a",
      input_schema = { type = "object" },
      handler = function() return "x" end,
    },
    mcp.tool { name = "b", Timeout = 3, cancel = "never", handler = function() end },
    mcp.tool { name = "c", inputSchema = {}, outputSchema = { type = "object" }, annotations = {}, _meta = {}, title = "C",
               defer_task = false, max_concurrent = 2, rate = "5/s", handler = function() end },
  },
  resources = {
    mcp.resource { uri = "x://r", mime_type = "text/plain", read = function() end },
    mcp.resource_template { uri_template = "x://{id}", read = function() end },
  },
  prompts = { mcp.prompt { name = "p", get = function() end, arguments = { { name = "x", reqired = true } } } },
  mount = { command = { "true" }, perfix = "up_" },
  version = 2,
}
]])
    f:close()
    local r = run({ "check", "--plugins", dir })
    os.execute("rm -rf '" .. dir .. "'")
    assert.are.equal(1, r.code, r.err)
    local p = dir .. "/typos.lua:"
    assert.are.equal(table.concat({
      p .. "4: plugin typos: unknown field defaults.timout (did you mean defaults.timeout?)",
      p .. "8: tool a: unknown field input_schema (did you mean inputSchema?)",
      p .. "11: tool b: unknown field Timeout (did you mean timeout?)",
      p .. '11: tool b: cancel must be "cooperative", "abort" or "ignore"',
      p .. "16: resource x://r: unknown field mime_type (did you mean mimeType?)",
      p .. "17: resource template: unknown field uri_template (did you mean uriTemplate?)",
      p .. "17: mcp.resource_template: uriTemplate must be a non-empty string",
      p .. "19: prompt p: arguments[1]: unknown field reqired (did you mean required?)",
      p .. "20: plugin typos: unknown field mount.perfix (did you mean mount.prefix?)",
      p .. "21: plugin typos: unknown field version",
      "10 problems (1 plugin, 3 tools, 1 resource, 1 resource template, 1 prompt)",
    }, "\n") .. "\n", r.out)
  end)

  it("finds a schema's mistake in the source's tokens: not in a comment or a string that names its keys", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/schema.lua", "w"))
    f:write([[
local mcp = require "mcp"
return mcp.plugin { name = "schema", tools = { mcp.tool {
  name = "s",
  description = "properties = { n = { type = 'x' } }",
  inputSchema = { type = "object", properties = {
    -- n = the count, type = "integer" once
    n = { type = "strnig" },
  } },
  handler = function() return "x" end } } }
]])
    f:close()
    local r = run({ "check", "--plugins", dir })
    os.execute("rm -rf '" .. dir .. "'")
    assert.are.equal(dir .. "/schema.lua:7: tool s: inputSchema.properties.n.type: unknown type strnig " ..
                     "(known: object, array, string, integer, number, boolean, null)\n" ..
                     "1 problem (1 plugin, 1 tool, 0 resources, 0 resource templates, 0 prompts)\n", r.out)
  end)

  it("check, the server and call say each mistake of a declaration once, at its field's line, in source order", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/two.lua", "w"))
    -- unknown fields are found in key order (desc before zoom): they are said in the file's
    f:write([[
local mcp = require "mcp"
local t = mcp.tool {
  name = "two",
  zoom = 1,
  handler = function() return "x" end,
  desc = "-- zoom = 2, in a string",
}
return mcp.plugin { name = "two", tools = { t } }
]])
    f:close()
    local want = {
      dir .. "/two.lua:4: tool two: unknown field zoom",
      dir .. "/two.lua:6: tool two: unknown field desc (did you mean description?)",
    }
    local check = run({ "check", "--plugins", dir })
    local server = run({ "--plugins", dir })             -- stdin at its end: it stops
    local call = run({ "call", "two", "--plugins", dir })
    os.execute("rm -rf '" .. dir .. "'")
    local function said(text, prefix)
      local out = {}
      for l in text:gmatch("[^\n]+") do
        if l:sub(1, #prefix) == prefix then out[#out + 1] = l:sub(#prefix + 1) end
      end
      return out
    end
    local lines = said(check.out, "")
    assert.are.same({ want[1], want[2],
                      "2 problems (1 plugin, 1 tool, 0 resources, 0 resource templates, 0 prompts)" }, lines)
    assert.are.same(want, said(server.err, "luamcp: error: plugin not loaded: "))
    assert.are.same(want, said(call.err, "luamcp: error: plugin not loaded: "))
    assert.is_nil(server.err:find("traceback", 1, true), server.err)
  end)

  it("luamcp list and call show a refused declaration on stderr, and serve the other plugins", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/a_typo.lua", "w"))
    f:write('local mcp = require "mcp"\nreturn mcp.plugin { name = "a", tools = {\n' ..
            '  mcp.tool { name = "typo", input_schema = {}, handler = function() return "x" end } } }\n')
    f:close()
    f = assert(io.open(dir .. "/b_fine.lua", "w"))
    f:write('local mcp = require "mcp"\nreturn mcp.plugin { name = "b", tools = {\n' ..
            '  mcp.tool { name = "fine", handler = function() return "fine" end } } }\n')
    f:close()
    local want = dir .. "/a_typo.lua:3: tool typo: unknown field input_schema (did you mean inputSchema?)"
    local l = run({ "list", "--plugins", dir })
    local c = run({ "call", "fine", "--plugins", dir })
    os.execute("rm -rf '" .. dir .. "'")
    assert_has(l.err, "plugin not loaded: " .. want)
    assert_has(l.out, "fine")
    assert.is_nil(l.out:find("typo", 1, true), l.out)
    assert_has(c.err, "plugin not loaded: " .. want)
    assert.are.equal(0, c.code, c.err)
    assert.are.equal("fine\n", c.out)
  end)

  it("reports an invalid x-mcp-header with the tool's line and the schema path", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p '" .. dir .. "'"))
    local f = assert(io.open(dir .. "/hdr.lua", "w"))
    f:write('local mcp = require "mcp"\nreturn mcp.plugin { name = "hdr", tools = {\n' ..
            '  mcp.tool { name = "hdr", handler = function() end,\n' ..
            '    inputSchema = { type = "object", properties = { n = { type = "number", ["x-mcp-header"] = "N" } } } },\n' ..
            '} }\n')
    f:close()
    local r = run({ "check", "--plugins", dir })
    os.execute("rm -rf '" .. dir .. "'")
    assert.are.equal(1, r.code, r.err)
    assert_has(r.out, dir .. '/hdr.lua:3: tool hdr: inputSchema.properties.n["x-mcp-header"]: the property must be ' ..
                      "of type string, integer or boolean (got number)")
  end)

  it("reports a tool defined twice", function()
    local r = run({ "check", "--plugins", OK, "--plugins", OK })
    assert.are.equal(1, r.code)
    assert_has(r.out, OK .. '/tools.lua:24: tool "greet" is already defined at ' .. OK .. "/tools.lua:24")
    assert_has(r.out, OK .. '/tools.lua:120: resource "cli://readme" is already defined at')
    assert_has(r.out, OK .. '/tools.lua:126: prompt "ask" is already defined at')
  end)
end)

describe("luamcp new", function()
  local tmp
  before_each(function()
    tmp = H.tmpdir()
  end)
  after_each(function()
    if tmp then os.execute("rm -rf '" .. tmp .. "'") end
  end)

  local function read(path)
    local f = io.open(path)
    if not f then return nil end
    local s = f:read("a")
    f:close()
    return s
  end

  it("writes a plugin that check accepts, a spec that passes, a .busted and a .luarc.json", function()
    local r = run({ "new", "demo" }, { cwd = tmp })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("wrote plugins/demo.lua\nwrote spec/demo_spec.lua\nwrote .busted\nwrote .luarc.json\n" ..
                     "try: luamcp call demo '{\"n\": 5}' --plugins plugins\n", r.out)
    local plugin = read(tmp .. "/plugins/demo.lua")
    assert_has(plugin, 'name = "demo"')
    assert_has(plugin, "inputSchema")
    assert_has(plugin, "ctx:progress")
    assert_has(plugin, "ctx:sleep(delay)")
    assert_has(plugin, "return nil, string.format(")
    assert_has(plugin, "timeout")
    local spec = read(tmp .. "/spec/demo_spec.lua")
    assert_has(spec, "luamcp call")
    assert_has(spec, 'require "mcp.test"')
    assert_has(spec, "T.start {")
    local luarc = cjson.decode(read(tmp .. "/.luarc.json"))
    assert.are.same({ assert(uv.fs_realpath(H.root .. "/types")) }, luarc["workspace.library"])
    assert.are.equal("Lua 5.4", luarc["runtime.version"])

    r = run({ "check" }, { cwd = tmp })
    assert.are.equal(0, r.code, r.out .. r.err)
    assert.are.equal("ok: 1 plugin, 1 tool, 0 resources, 0 resource templates, 0 prompts\n", r.out)

    r = run({ "call", "demo", '{"n": 2, "delay": 0}' }, { cwd = tmp })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("counted to 2\n", r.out)

    local busted = uv.fs_stat("/usr/bin/busted") and "/usr/bin/busted" or "busted"
    -- mcp.test through `luamcp path` (the source tree's lua/ for a build): no LUA_PATH
    local env = { LUAMCP_BIN = H.binary(), LUA_PATH = ";;" }
    r = run({ busted, "spec/demo_spec.lua" }, { bin = "lua5.4", cwd = tmp, env = env, timeout = 60 })
    assert.are.equal(0, r.code, r.out .. r.err)
    assert_has(r.out, "5 successes / 0 failures / 0 errors")

    -- busted -C: the project's .busted, from elsewhere
    r = run({ busted, "-C", tmp }, { bin = "lua5.4", cwd = "/", env = env, timeout = 60 })
    assert.are.equal(0, r.code, r.out .. r.err)
    assert_has(r.out, "5 successes / 0 failures / 0 errors")
  end)

  -- A spec written by hand (guide 8's) requires mcp.test itself: the .busted
  -- puts it on the path for every spec, loaded before or after the generated
  -- one (busted loads them by name).
  it("runs a hand-written spec with plain busted, loaded first or last", function()
    local r = run({ "new", "demo" }, { cwd = tmp })
    assert.are.equal(0, r.code, r.err)
    local hand = 'local T = require "mcp.test"\n' ..
      'describe("by hand", function()\n' ..
      '  it("calls", function()\n' ..
      '    local srv = T.start { plugins = { "plugins" } }\n' ..
      '    assert.are.equal("counted to 2", T.text(srv:call("demo", { n = 2, delay = 0 })))\n' ..
      '    srv:stop()\n' ..
      '  end)\n' ..
      'end)\n'
    local busted = uv.fs_stat("/usr/bin/busted") and "/usr/bin/busted" or "busted"
    local env = { LUAMCP_BIN = H.binary(), LUA_PATH = ";;" }
    for _, name in ipairs { "a_first_spec.lua", "z_last_spec.lua" } do
      local f = assert(io.open(tmp .. "/spec/" .. name, "w"))
      f:write(hand)
      f:close()
      r = run({ busted }, { bin = "lua5.4", cwd = tmp, env = env, timeout = 60 })
      assert.are.equal(0, r.code, name .. "\n" .. r.out .. r.err)
      assert_has(r.out, "6 successes / 0 failures / 0 errors")
      os.remove(tmp .. "/spec/" .. name)
    end
  end)

  it("keeps a .busted that exists, and says what it lacks", function()
    local f = assert(io.open(tmp .. "/.busted", "w"))
    f:write("return {}\n")
    f:close()
    local r = run({ "new", "demo" }, { cwd = tmp })
    assert.are.equal(0, r.code, r.err)
    assert_has(r.out, "wrote spec/demo_spec.lua\nkept .busted (it exists; for mcp.test its lpath needs " ..
               assert(uv.fs_realpath(H.root .. "/lua")) .. "/?.lua)\n")
    assert.are.equal("return {}\n", read(tmp .. "/.busted"))
    os.remove(tmp .. "/.busted")
    -- ours, made for another spec directory
    r = run({ "new", "other", "--spec-dir", "test" }, { cwd = tmp })
    assert.are.equal(0, r.code, r.err)
    assert_has(r.out, "wrote .busted\n")
    r = run({ "new", "third" }, { cwd = tmp })
    assert_has(r.out, 'kept .busted (it exists; add "spec" to its ROOT for busted to run spec)\n')
  end)

  it("keeps a .luarc.json that exists, and says where the annotations are", function()
    local f = assert(io.open(tmp .. "/.luarc.json", "w"))
    f:write("{}\n")
    f:close()
    local r = run({ "new", "demo" }, { cwd = tmp })
    assert.are.equal(0, r.code, r.err)
    assert_has(r.out, "wrote .busted\nkept .luarc.json (it exists; the annotations of mcp are in " ..
               assert(uv.fs_realpath(H.root .. "/types")) .. ")\n")
    assert.are.equal("{}\n", read(tmp .. "/.luarc.json"))
  end)

  it("writes no .luarc.json when the annotations are missing, and says so", function()
    assert(uv.fs_mkdir(tmp .. "/lua", 448))
    assert(uv.fs_symlink(H.root .. "/lua/mcp", tmp .. "/lua/mcp"))
    local r = run({ "new", "demo" }, { cwd = tmp, env = { LUAMCP_LUA_DIR = tmp .. "/lua" } })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("wrote plugins/demo.lua\nwrote spec/demo_spec.lua\nwrote .busted\n" ..
                     "try: luamcp call demo '{\"n\": 5}' --plugins plugins\n", r.out)
    assert_has(r.err, "luamcp: new: .luarc.json not written: no LuaLS annotations: " .. tmp ..
               "/lua/../types: no such file or directory")
    assert.is_nil(read(tmp .. "/.luarc.json"))
  end)

  it("takes --dir and --spec-dir", function()
    local r = run({ "new", "other", "--dir", "src/tools", "--spec-dir", "test" }, { cwd = tmp })
    assert.are.equal(0, r.code, r.err)
    assert.truthy(read(tmp .. "/src/tools/other.lua"))
    assert_has(read(tmp .. "/test/other_spec.lua"), 'local PLUGINS = HERE .. "/../src/tools"')
  end)

  it("refuses to overwrite an existing file", function()
    assert(uv.fs_mkdir(tmp .. "/spec", 448))
    local f = assert(io.open(tmp .. "/spec/demo_spec.lua", "w"))
    f:write("mine\n")
    f:close()
    local r = run({ "new", "demo" }, { cwd = tmp })
    assert.are.equal(1, r.code)
    assert_has(r.err, "spec/demo_spec.lua already exists")
    assert.are.equal("mine\n", read(tmp .. "/spec/demo_spec.lua"))
    assert.is_nil(read(tmp .. "/plugins/demo.lua"))
  end)

  it("wants an identifier", function()
    for _, name in ipairs({ "9lives", "has-dash", "end", "a.b" }) do
      local r = run({ "new", name }, { cwd = tmp })
      assert.are.equal(2, r.code, name)
      assert_has(r.err, "is not an identifier")
    end
    local r = run({ "new" }, { cwd = tmp })
    assert.are.equal(2, r.code)
  end)
end)

describe("luamcp path", function()
  it("prints the library's, the annotations' and the examples' directories", function()
    local real = assert(uv.fs_realpath(H.root))
    for what, dir in pairs { [""] = "lua", lua = "lua", types = "types", plugins = "plugins" } do
      local r = run(what == "" and { "path" } or { "path", what }, { cwd = "/" })
      assert.are.equal(0, r.code, r.err)
      assert.are.equal(real .. "/" .. dir .. "\n", r.out)
    end
  end)

  it("follows $LUAMCP_LUA_DIR, and fails on a directory that is not there", function()
    local tmp = H.tmpdir()
    assert(uv.fs_mkdir(tmp .. "/lua", 448))
    local real = assert(uv.fs_realpath(tmp))
    local r = run({ "path" }, { env = { LUAMCP_LUA_DIR = tmp .. "/lua" } })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(real .. "/lua\n", r.out)
    r = run({ "path", "types" }, { env = { LUAMCP_LUA_DIR = tmp .. "/lua" } })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.out)
    assert.are.equal("luamcp: path: " .. tmp .. "/lua/../types: no such file or directory", r.err)
    os.execute("rm -rf '" .. tmp .. "'")
  end)

  it("refuses another name or a second one", function()
    local r = run({ "path", "lib" })
    assert.are.equal(2, r.code)
    assert_has(r.err, "path: unknown directory lib (lua, types or plugins)")
    r = run({ "path", "lua", "types" })
    assert.are.equal(2, r.code)
    assert_has(r.err, "unexpected argument: types")
  end)
end)
