-- The flags' table (src/flags.c): the docs and --help name exactly its
-- flags, each kind of value has one parser that refuses a malformed value
-- naming the flag, and a boolean flag has a --no- form.
local H = require "spec.helper"

-- Run luamcp to its end: exit code, stdout, stderr.
local function run(args)
  local q = { H.binary() }
  for _, a in ipairs(args) do q[#q + 1] = "'" .. a:gsub("'", "'\\''") .. "'" end
  local err = os.tmpname()
  local p = io.popen("cd " .. H.root .. " && " .. table.concat(q, " ") .. " </dev/null 2>" .. err)
  local out = p:read("a")
  local _, _, code = p:close()
  local f = io.open(err, "rb")
  local e = f:read("a")
  f:close()
  os.remove(err)
  return code, out, e
end

local function read(path)
  local f = assert(io.open(H.root .. "/" .. path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The flags a text names, as a sorted list; "--no-FLAG" forms apart.
local function flags_in(text)
  local set, no = {}, {}
  text = text:gsub("\\%-", "-"):gsub("\\f[BIRP]", "")  -- troff: \- and font changes
  text = text:gsub("%-%-[%w%-]*%*", "")                -- a pattern (--auth-*) names none
  for name in text:gmatch("%-%-(%a[%w%-]*%w)") do
    if name:sub(1, 3) == "no-" then no[name:sub(4)] = true else set[name] = true end
  end
  local list = {}
  for name in pairs(set) do list[#list + 1] = "--" .. name end
  table.sort(list)
  return list, no, set
end

local function union(a, b)
  local set, out = {}, {}
  for _, x in ipairs(a) do set[x] = true end
  for _, x in ipairs(b) do set[x] = true end
  for x in pairs(set) do out[#out + 1] = x end
  table.sort(out)
  return out
end

-- The text of a Markdown section, from its heading to the next of its level.
local function section(md, heading)
  local s = md:find("\n## " .. heading, 1, true)
  assert(s, heading)
  local e = md:find("\n## ", s + 1, true)
  return md:sub(s, e)
end

describe("the flags' table", function()
  local server, tools, registry
  setup(function()
    local code, out = run { "--help" }
    assert.are.equal(0, code)
    server = flags_in(out)
    code, out = run { "list", "--help" }
    assert.are.equal(0, code)
    tools = flags_in(out)
    code, out = run { "registry", "--help" }    -- its options: lua/mcp/cli_registry.lua's table
    assert.are.equal(0, code)
    registry = flags_in(out)
  end)

  it("every flag --help names is one the server takes", function()
    assert.truthy(#server > 25)
    for _, flag in ipairs(server) do
      local _, _, err = run { flag }
      assert.falsy(err:find("unknown option", 1, true), flag .. ": " .. err)
    end
  end)

  it("docs/reference/cli.md names exactly the flags of --help and list --help", function()
    local md = read("docs/reference/cli.md")
    local named = flags_in(section(md, "Flags") .. section(md, "Working with plugins")
                           .. section(md, "A bundle: pack"))
    assert.are.same(union(server, tools), named)
  end)

  it("docs/reference/cli.md's registry section names exactly the flags of registry --help", function()
    local md = read("docs/reference/cli.md")
    assert.are.same(registry, (flags_in(section(md, "Sharing a server: registry"))))
  end)

  it("luamcp(1) names exactly the flags of --help, list --help and registry --help", function()
    local page = read("docs/luamcp.1")
    assert.are.same(union(union(server, tools), registry), (flags_in(page)))
  end)

  it("--no-FLAG in the docs and the help names only flags without a value", function()
    local _, out = run { "--help" }
    local md, page = read("docs/reference/cli.md"), read("docs/luamcp.1")
    for _, text in ipairs { out, md, page } do
      local _, no = flags_in(text)
      for name in pairs(no) do
        if name ~= "FLAG" then     -- the server's, or luamcp list's
          local code, _, err = run { "--no-" .. name }
          if code ~= 0 then code, _, err = run { "list", "--no-" .. name, "--plugins", "spec/fixtures/cli/ok" } end
          assert.are.equal(0, code, "--no-" .. name .. ": " .. err)
        end
      end
    end
  end)
end)

describe("a malformed value", function()
  -- flag, value, what the refusal says it wants
  local cases = {
    { "--http", "127.0.0.1:80.5", "HOST:PORT" },
    { "--metrics", "127.0.0.1:80.5", "HOST:PORT" },
    { "--http", "127.0.0.1:", "HOST:PORT" },
    { "--timeout", "-1", "SECONDS, a number >= 0" },
    { "--grace", "1x", "SECONDS, a number >= 0" },
    { "--drain", "inf", "SECONDS, a number >= 0" },
    { "--idle-timeout", "0", "SECONDS, a number > 0" },
    { "--max-body", "1x", "BYTES, a whole number >= 1024" },
    { "--max-line", "100.5", "BYTES, a whole number >= 64" },
    { "--memory-limit", "-1", "MB, a whole number >= 0" },
    { "--page-size", "0", "N, a whole number >= 1" },
    { "--max-connections", "2.5", "N, a whole number >= 1" },
    { "--auth-issuer", "ftp://as.example", "http://... or https://..." },
    { "--store", "http://x", "redis://HOST:PORT/DB" },
    { "--log-level", "loud", "debug, info, notice, warning, error, critical, alert or emergency" },
    { "--log-format", "xml", "text or json" },
    { "--http-allow", "host:99999", "HOST[:PORT]" },
  }
  for _, case in ipairs(cases) do
    local flag, value, want = case[1], case[2], case[3]
    it(flag .. " " .. value .. " is refused naming the flag, exit 2", function()
      local code, _, err = run { flag, value }
      assert.are.equal(2, code, err)
      assert.truthy(err:find("luamcp: bad " .. flag .. " (want " .. want .. "): " .. value .. "\n", 1, true), err)
    end)
  end

  it("is refused by luamcp call as by the server", function()
    local code, _, err = run { "call", "echo", "--timeout", "-1" }
    assert.are.equal(2, code, err)
    assert.truthy(err:find("bad --timeout (want SECONDS, a number >= 0): -1", 1, true), err)
  end)

  it("in the configuration file is refused at its key's line, without the value", function()
    local dir = H.tmpdir()
    local conf = dir .. "/luamcp.conf"
    local f = assert(io.open(conf, "w"))
    f:write('return {\n  timeout = 5,\n  metrics = "127.0.0.1:80.5",\n}\n')
    f:close()
    local code, _, err = run { "--config", conf }
    assert.are.equal(2, code, err)
    assert.are.equal("luamcp: " .. conf .. ":3: bad value for metrics (want HOST:PORT)\n", err)
    os.remove(conf)
    os.remove(dir)
  end)
end)

describe("--no-FLAG", function()
  after_each(H.cleanup)

  local function config_with_watch()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/luamcp.conf", "w"))
    f:write('return {\n  watch = true,\n  plugins = { "' .. H.fixtures .. '/plugins" },\n}\n')
    f:close()
    return dir .. "/luamcp.conf"
  end

  it("--no-watch turns off the configuration file's watch = true", function()
    local conf = config_with_watch()
    local c = H.start { no_plugins = true, args = { "--config", conf, "--no-watch" } }
    c:expect_stderr("serving on stdio")
    assert.falsy(c:stderr_text():find("watching", 1, true), c:stderr_text())
    local w = H.start { no_plugins = true, args = { "--config", conf } }
    w:expect_stderr("watching .* for changes")
    os.remove(conf)
  end)

  it("the last of --watch and --no-watch wins", function()
    local c = H.start { args = { "--no-watch", "--watch" } }
    c:expect_stderr("watching .* for changes")
  end)

  it("is refused for a flag that takes a value", function()
    local code, _, err = run { "--no-timeout" }
    assert.are.equal(2, code, err)
    assert.truthy(err:find("unknown option: --no-timeout", 1, true), err)
  end)
end)
