-- Every Lua example of docs/guide (and README.md) runs against the real
-- binary and gives the output written beside it, and every shell transcript
-- (`$ luamcp ...` and the output below it) prints what the page shows, so
-- the docs cannot drift.
-- The format of the expectations is in spec/README.md ("docs_spec.lua").
local H = require "spec.helper"
local cjson = require "cjson"

-- An expectation's JSON: cjson cannot tell [] from {}, so an empty array is
-- read as a marker that matches only an empty list.
local EMPTY = "\0empty array"
local function expectation(text)
  return cjson.decode((text:gsub("%[%s*%]", '"\\u0000empty array"')))
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function write(path, s)
  os.execute("mkdir -p '" .. path:match("^(.*)/[^/]*$") .. "'")
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function docs(dir)
  local list = {}
  local p = assert(io.popen("ls '" .. H.root .. "/" .. dir .. "' 2>/dev/null"))
  for name in p:lines() do
    if name:match("%.md$") then list[#list + 1] = dir .. "/" .. name end
  end
  p:close()
  return list
end

---------------------------------------------------------------------------
-- Reading a markdown file: its fenced blocks and its directive comments, in
-- order: { kind = "code", lang =, text =, line = } / { kind = "directive",
-- key =, value =, line = }.

local function scan(path)
  local items, block = {}, nil
  local n = 0
  for line in (read(H.root .. "/" .. path) .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if block then
      if line:match("^%s*```%s*$") then
        block.text = table.concat(block.lines, "\n") .. "\n"
        items[#items + 1] = block
        block = nil
      else
        block.lines[#block.lines + 1] = line
      end
    elseif line:match("^%s*```") then
      block = { kind = "code", lang = line:match("^%s*```%s*(%S*)"), lines = {}, line = n }
    else
      local key, value = line:match("^%s*<!%-%-%s*([%w%-]+):?%s*(.-)%s*%-%->%s*$")
      if key then items[#items + 1] = { kind = "directive", key = key, value = value, line = n } end
    end
  end
  assert(not block, path .. ":" .. (block and block.line or 0) .. ": unclosed code block")
  return items
end

local PRE = { handler = true, fragment = true, file = true, env = true, setup = true,
              args = true, busted = true }
local POST = { call = true, ["call-text"] = true, ["call-error"] = true, request = true,
               stderr = true, log = true, cancel = true }

local function is_plugin(src) return src:match("return%s+mcp%.plugin%s*[{(]") ~= nil end

-- The examples of one file: each Lua block with the directives before it
-- (pre) and after it (post); a call/request without "->" takes the next json
-- block as its expectation.
local function examples(path)
  local items = scan(path)
  local list, pre, cur, pending = {}, {}, nil, nil
  for _, it in ipairs(items) do
    if it.kind == "directive" and PRE[it.key] then
      pre[#pre + 1] = it
    elseif it.kind == "directive" and POST[it.key] then
      assert(cur, path .. ":" .. it.line .. ": " .. it.key .. " before any lua block")
      cur.post[#cur.post + 1] = it
      if (it.key == "call" or it.key == "request") and not it.value:find(" -> ", 1, true) then
        pending = it
      end
    elseif it.kind == "directive" then
      error(path .. ":" .. it.line .. ": unknown directive " .. it.key)
    elseif it.kind == "code" and it.lang == "lua" then
      assert(not pending, path .. ":" .. (pending and pending.line or 0) .. ": no json block after it")
      cur = { path = path, line = it.line, text = it.text, pre = pre, post = {} }
      list[#list + 1] = cur
      pre = {}
    elseif it.kind == "code" and it.lang == "json" and pending then
      pending.expect = it.text
      pending.expect_line = it.line
      pending = nil
    end
  end
  assert(not pending, path .. ": a call without -> and no json block after it")
  return list
end

-- The shell transcripts of one file: each `$ COMMAND` line of a ```sh block
-- with the output shown below it (up to the next `$` line), and the Lua
-- example above it ({cmd =, want = {lines}, line =, after = example}).
local function transcripts(path)
  local list, last = {}, nil
  local lua_blocks = {}
  for _, ex in ipairs(examples(path)) do lua_blocks[ex.line] = ex end
  for _, it in ipairs(scan(path)) do
    if it.kind == "code" and it.lang == "lua" then
      last = lua_blocks[it.line] or last
    elseif it.kind == "code" and it.lang == "sh" and it.text:find("^%$ ") then
      local cur
      for k, l in ipairs(it.lines) do
        local cmd = l:match("^%$ (.*)$")
        if cmd then
          cur = { cmd = cmd, want = {}, line = it.line + k, after = last }
          list[#list + 1] = cur
        else
          cur.want[#cur.want + 1] = l
        end
      end
    end
  end
  return list
end

local function pre_value(ex, key)
  local vals = {}
  for _, d in ipairs(ex.pre) do
    if d.key == key then vals[#vals + 1] = d.value end
  end
  return vals
end

-- What the example is: "plugin", "handler" (a handler's body), "file" (a
-- support file for the later examples of its page), "busted", "fragment".
local function kind(ex)
  if #pre_value(ex, "file") > 0 then return "file" end
  if #pre_value(ex, "busted") > 0 then return "busted" end
  if #pre_value(ex, "handler") > 0 then return "handler" end
  if #pre_value(ex, "fragment") > 0 then return "fragment" end
  if is_plugin(ex.text) then return "plugin" end
  return nil
end

---------------------------------------------------------------------------
-- Matching: an expected object's keys must match (others may be there), an
-- array must have the same length, a string may hold "..." (anything).

local function str_match(want, got)
  if type(got) ~= "string" then return false end
  if not want:find("...", 1, true) then return want == got end
  local pieces, start = {}, 1
  while true do
    local i = want:find("...", start, true)
    pieces[#pieces + 1] = want:sub(start, i and i - 1 or nil)
    if not i then break end
    start = i + 3
  end
  local first, last = pieces[1], pieces[#pieces]
  if got:sub(1, #first) ~= first or (#last > 0 and got:sub(-#last) ~= last) then return false end
  local pos = #first + 1
  for k = 2, #pieces - 1 do
    local _, j = got:find(pieces[k], pos, true)
    if not j then return false end
    pos = j + 1
  end
  return #got - #last + 1 >= pos
end

local function match(want, got, where)
  if want == EMPTY then
    if type(got) == "table" and next(got) == nil then return true end
  elseif type(want) == "string" then
    if str_match(want, got) then return true end
  elseif type(want) == "table" and want[1] ~= nil then
    if type(got) == "table" and #got == #want then
      for i = 1, #want do
        local ok, why = match(want[i], got[i], where .. "[" .. i .. "]")
        if not ok then return false, why end
      end
      return true
    end
  elseif type(want) == "table" then
    if type(got) == "table" then
      for k, v in pairs(want) do
        local ok, why = match(v, got[k], where .. "." .. k)
        if not ok then return false, why end
      end
      return true
    end
  elseif want == cjson.null then
    if got == cjson.null or got == nil then return true end
  elseif want == got then
    return true
  end
  return false, ("%s: expected %s, got %s"):format(where, cjson.encode(want),
                                                   got == nil and "nothing" or cjson.encode(got))
end

-- "TOOL {json} -> rest" -> "TOOL", args, rest
local function split_call(value)
  local head, rest = value, nil
  local i = value:find(" -> ", 1, true)
  if i then head, rest = value:sub(1, i - 1), value:sub(i + 4) end
  local name, args = head:match("^(%S+)%s*(.-)$")
  args = args ~= "" and cjson.decode(args) or nil
  return name, args, rest
end

local function result_text(result)
  local parts = {}
  for _, item in ipairs(result.content or {}) do
    if item.type == "text" then parts[#parts + 1] = item.text end
  end
  return table.concat(parts, "\n")
end

local function check_post(c, ex, d)
  local at = ex.path .. ":" .. d.line
  if d.key == "stderr" then
    assert(c:wait_stderr(d.value, nil, { plain = true }),
           at .. ": the server never logged " .. d.value .. "\n" .. c:stderr_text())
    return
  end
  if d.key == "log" then
    local found = c:wait_notification("notifications/message", function(p)
      local data = type(p.data) == "string" and p.data or cjson.encode(p.data)
      return data:find(d.value, 1, true) ~= nil
    end)
    assert(found, at .. ": the client never got the log " .. d.value)
    return
  end
  if d.key == "cancel" then
    -- start the call with a progress token, cancel it at its first progress
    -- (or after 0.2 s): no response may come
    local tool, args = split_call(d.value)
    local id = "docs-cancel-" .. d.line
    c:send { jsonrpc = "2.0", id = id, method = "tools/call",
             params = { name = tool, arguments = args or {}, _meta = { progressToken = id } } }
    c:wait_notification("notifications/progress", function(p) return p.progressToken == id end, 0.2)
    c:send(H.cancel_msg(id, "changed my mind"))
    c:no_response(H.QUIET)
    return
  end
  if d.key == "request" then
    local method, params, rest = split_call(d.value)
    local resp = c:request(method, params)
    local ok, why = match(expectation(rest or d.expect), resp, "response")
    assert(ok, at .. ": " .. tostring(why) .. "\n" .. cjson.encode(resp))
    return
  end
  local tool, args, rest = split_call(d.value)
  local resp = c:call(tool, args)
  assert(resp.result, at .. ": " .. tool .. " answered " .. cjson.encode(resp) .. "\n" .. c:stderr_text())
  local r = resp.result
  if d.key == "call" then
    local ok, why = match(expectation(rest or d.expect), r, "result")
    assert(ok, at .. ": " .. tostring(why) .. "\n" .. cjson.encode(r))
    return
  end
  local want_error = d.key == "call-error"
  assert(rest, at .. ": " .. d.key .. " needs -> TEXT")
  assert(r.isError == want_error or (not want_error and r.isError == nil),
         at .. ": isError is " .. tostring(r.isError) .. ": " .. cjson.encode(r))
  local text = result_text(r)
  assert(str_match(rest:gsub("\\n", "\n"), text),
         at .. ": expected text " .. rest .. ", got " .. text)
end

---------------------------------------------------------------------------
-- Running one example.

local tmpdirs = {}
local setups = {}

local function handler_plugin(name, body)
  return table.concat({
    'local mcp = require "mcp"',
    "return mcp.plugin { name = \"docs_example\", tools = { mcp.tool {",
    "  name = " .. ("%q"):format(name) .. ", inputSchema = { type = \"object\" },",
    "  handler = function(args, ctx)",
    body,
    "  end } } }", "" }, "\n")
end

local function env_of(ex, dir)
  local env = { PATH = H.binary():match("^(.*)/[^/]*$") .. ":" .. (os.getenv("PATH") or "") }
  for _, v in ipairs(pre_value(ex, "setup")) do
    if v == "origin" then
      local o = require("spec.origin").start()
      setups[#setups + 1] = o
      env.API_URL = o.url
    else
      error(ex.path .. ":" .. ex.line .. ": unknown setup " .. v)
    end
  end
  for _, v in ipairs(pre_value(ex, "env")) do
    local k, val = v:match("^([%w_]+)=(.*)$")
    env[k] = val:gsub("%$DIR", dir)
  end
  return env
end

local function args_of(ex)
  local args = {}
  for _, v in ipairs(pre_value(ex, "args")) do
    for a in v:gmatch("%S+") do args[#args + 1] = a end
  end
  return args
end

local function run_example(ex, files)
  local dir = H.tmpdir()
  tmpdirs[#tmpdirs + 1] = dir
  for name, text in pairs(files) do write(dir .. "/" .. name, text) end
  local k = kind(ex)
  local src = ex.text
  if k == "handler" then src = handler_plugin(pre_value(ex, "handler")[1], ex.text) end
  write(dir .. "/plugins/example.lua", src)
  local c = H.session { plugins = { dir .. "/plugins" }, cwd = dir, env = env_of(ex, dir),
                        args = args_of(ex) }
  -- every expectation is checked, and every mismatch reported at once
  local failed = {}
  for _, d in ipairs(ex.post) do
    local ok, err = pcall(check_post, c, ex, d)
    if not ok then failed[#failed + 1] = tostring(err) end
  end
  assert(#failed == 0, table.concat(failed, "\n"))
  assert.are.equal(0, c:close())
end

local function run_busted(ex, files)
  local dir = H.tmpdir()
  tmpdirs[#tmpdirs + 1] = dir
  for name, text in pairs(files) do write(dir .. "/" .. name, text) end
  write(dir .. "/spec/example_spec.lua", ex.text)
  -- in a project `luamcp new` made (its .busted finds mcp.test), with plain busted
  local cmd = ("cd '%s' && export LUAMCP_BIN='%s' LUA_PATH=';;' && \"$LUAMCP_BIN\" new project >/dev/null && "
               .. "lua5.4 $(command -v busted) -o TAP 2>&1"):format(dir, H.binary())
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local ok = p:close()
  assert(ok, ex.path .. ":" .. ex.line .. ": the spec failed:\n" .. out)
  assert(out:find("\nok ", 1, true) or out:find("^ok "), ex.path .. ":" .. ex.line .. ": no test ran:\n" .. out)
end

-- Shown output lines against the printed ones: a line `...` stands for any
-- lines (none too), and a line may hold `...` for any text (str_match).
local function lines_match(want, wi, got, gi)
  if wi > #want then return gi > #got end
  if want[wi] == "..." then
    for g = gi, #got + 1 do
      if lines_match(want, wi + 1, got, g) then return true end
    end
    return false
  end
  return gi <= #got and str_match(want[wi], got[gi]) and lines_match(want, wi + 1, got, gi + 1)
end

-- A transcript's command, as a shell runs it with its output on the page:
-- `build/luamcp` is the binary under test in the source tree; `luamcp` is
-- on PATH, in a directory holding the page's files and the plugin example
-- above the command as plugins/example.lua.
local function run_transcript(page, t, files)
  local at = page .. ":" .. t.line
  local dir, cmd = H.root, t.cmd
  if cmd:find("^build/luamcp ") then
    cmd = "'" .. H.binary() .. "'" .. cmd:sub(#"build/luamcp" + 1)
  else
    assert(cmd:find("^luamcp "), at .. ": a transcript's command is luamcp or build/luamcp: " .. cmd)
    local ex = t.after
    assert(ex and (kind(ex) == "plugin" or kind(ex) == "handler"), at .. ": no plugin example above it")
    dir = H.tmpdir()
    tmpdirs[#tmpdirs + 1] = dir
    for name, text in pairs(files) do write(dir .. "/" .. name, text) end
    local src = ex.text
    if kind(ex) == "handler" then src = handler_plugin(pre_value(ex, "handler")[1], ex.text) end
    write(dir .. "/plugins/example.lua", src)
  end
  local path = H.binary():match("^(.*)/[^/]*$") .. ":" .. (os.getenv("PATH") or "")
  local p = assert(io.popen(("cd '%s' && PATH='%s' sh -c '%s' 2>&1 </dev/null")
    :format(dir, path, (cmd:gsub("'", "'\\''")))))
  local out = p:read("a")
  p:close()
  local got = {}
  for l in out:gmatch("([^\n]*)\n") do got[#got + 1] = l end
  local want = {}
  for _, l in ipairs(t.want) do want[#want + 1] = l end
  while want[#want] == "" do want[#want] = nil end
  assert(lines_match(want, 1, got, 1), ("%s: $ %s\nthe page shows:\n%s\nit prints:\n%s")
    :format(at, t.cmd, table.concat(want, "\n"), out))
end

local function compiles(ex, text)
  local f, err = load(text, "=" .. ex.path .. ":" .. ex.line, "t")
  assert(f, err)
end

---------------------------------------------------------------------------

local pages = docs("docs/guide")
pages[#pages + 1] = "README.md"

describe("docs", function()
  after_each(function()
    H.cleanup()
    for _, o in ipairs(setups) do o:stop() end
    setups = {}
    for _, d in ipairs(tmpdirs) do os.execute("rm -rf '" .. d .. "'") end
    tmpdirs = {}
  end)

  it("has the guide's pages in the author's order", function()
    local want = { "01-first-tool", "02-results-and-errors", "03-cancellation-and-timeouts",
                   "04-http", "05-sqlite", "06-other-servers-and-mounts",
                   "07-resources-prompts-completion", "08-testing", "09-hot-reload",
                   "10-connecting-clients", "11-middleware", "12-untrusted-plugins",
                   "13-sharing-a-tool", "14-console", "15-apps" }
    local got = docs("docs/guide")
    for i, name in ipairs(want) do assert.are.equal("docs/guide/" .. name .. ".md", got[i]) end
    assert.are.equal(#want, #got)
  end)

  for _, page in ipairs(pages) do
    local files = {}
    for _, ex in ipairs(examples(page)) do
      local k = kind(ex)
      local name = ("%s:%d (%s)"):format(page, ex.line, k or "unmarked")
      if k == "file" then
        files[pre_value(ex, "file")[1]] = ex.text
        it(name .. " compiles", function() compiles(ex, ex.text) end)
      elseif k == "fragment" then
        it(name .. " compiles", function()
          assert(#ex.post == 0, name .. ": a fragment has no expectations (make it a handler:)")
          compiles(ex, ex.text)
        end)
      elseif k == "busted" then
        local snapshot = {}
        for f, t in pairs(files) do snapshot[f] = t end
        it(name .. " passes", function() run_busted(ex, snapshot) end)
      elseif k == "plugin" or k == "handler" then
        local snapshot = {}
        for f, t in pairs(files) do snapshot[f] = t end
        it(name .. " gives what the page says", function()
          assert(#ex.post > 0, name .. ": an example with no expectation (<!-- call: ... -->)")
          run_example(ex, snapshot)
        end)
      else
        it(name, function()
          error(name .. ": a lua block that is not a plugin needs <!-- handler: TOOL -->, "
                .. "<!-- fragment --> or <!-- file: PATH --> before it")
        end)
      end
    end
  end

  local all_pages = { "README.md" }
  for _, dir in ipairs { "docs/guide", "docs/reference", "docs/operations", "docs/development" } do
    for _, p in ipairs(docs(dir)) do all_pages[#all_pages + 1] = p end
  end
  for _, page in ipairs(all_pages) do
    local files = {}
    for _, ex in ipairs(examples(page)) do
      if kind(ex) == "file" then files[pre_value(ex, "file")[1]] = ex.text end
    end
    for _, t in ipairs(transcripts(page)) do
      it(("%s:%d prints what the page shows"):format(page, t.line), function()
        run_transcript(page, t, files)
      end)
    end
  end

  it("has only valid JSON in its json blocks", function()
    local all = {}
    for _, dir in ipairs { "docs/guide", "docs/reference", "docs/operations", "docs/development" } do
      for _, p in ipairs(docs(dir)) do all[#all + 1] = p end
    end
    all[#all + 1] = "README.md"
    local n = 0
    for _, page in ipairs(all) do
      for _, it in ipairs(scan(page)) do
        if it.kind == "code" and it.lang == "json" then
          local ok, err = pcall(cjson.decode, it.text)
          assert(ok, page .. ":" .. it.line .. ": " .. tostring(err))
          n = n + 1
        end
      end
    end
    assert.is_true(n > 0)
  end)

  it("shows every client of 10-connecting-clients.md a config that names the server", function()
    local n = 0
    for _, it in ipairs(scan("docs/guide/10-connecting-clients.md")) do
      if it.kind == "code" and it.lang == "json" then
        local cfg = cjson.decode(it.text)
        local servers = cfg.mcpServers or cfg.servers
        assert(type(servers) == "table" and servers.luamcp,
               "docs/guide/10-connecting-clients.md:" .. it.line .. ": no mcpServers.luamcp / servers.luamcp")
        local s = servers.luamcp
        assert(s.command or s.url, "docs/guide/10-connecting-clients.md:" .. it.line .. ": no command or url")
        n = n + 1
      end
    end
    assert.is_true(n >= 3)
  end)

  it("links only to files and headings that exist", function()
    local all = { "README.md", "spec/README.md", "bench/README.md", "test/fuzz/README.md" }
    for _, dir in ipairs { "docs/guide", "docs/reference", "docs/operations", "docs/development" } do
      for _, p in ipairs(docs(dir)) do all[#all + 1] = p end
    end
    -- GitHub's anchors: the heading in lower case, without punctuation, spaces as -
    local function anchors(path)
      local set, fenced = {}, false
      for line in io.lines(path) do
        if line:match("^%s*```") then fenced = not fenced end
        local h = not fenced and line:match("^#+%s+(.-)%s*$")
        if h then set[h:lower():gsub("[^%w%- _]", ""):gsub(" ", "-")] = true end
      end
      return set
    end
    local bad = {}
    for _, page in ipairs(all) do
      local dir = page:match("^(.*)/[^/]*$") or "."
      local n = 0
      for line in io.lines(H.root .. "/" .. page) do
        n = n + 1
        for target in line:gmatch("%]%(([^)%s]+)%)") do
          if not target:match("^%a+:") then
            local file, anchor = target:match("^([^#]*)#?(.*)$")
            local path = file == "" and H.root .. "/" .. page or H.root .. "/" .. dir .. "/" .. file
            local f = io.open(path)
            if not f then
              bad[#bad + 1] = page .. ":" .. n .. ": no " .. target
            else
              f:close()
              if anchor ~= "" and not anchors(path)[anchor] then
                bad[#bad + 1] = page .. ":" .. n .. ": no heading #" .. anchor .. " in " .. file
              end
            end
          end
        end
      end
    end
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("compiles every lua block of the reference, operations and development pages", function()
    for _, dir in ipairs { "docs/reference", "docs/operations", "docs/development" } do
      for _, page in ipairs(docs(dir)) do
        for _, it in ipairs(scan(page)) do
          if it.kind == "code" and it.lang == "lua" then
            local f, err = load(it.text, "=" .. page .. ":" .. it.line, "t")
            assert(f, err)
          end
        end
      end
    end
  end)
end)
