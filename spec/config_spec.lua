-- luamcp --config FILE: flags from the file (the command line wins), each
-- plugin's settings as its read-only mcp.settings, env() and file() secrets
-- that never reach the log, an error or `luamcp list`, errors at the line of
-- their key, and reload with --watch. Plugins: fixtures/config/plugins.
local H = require "spec.helper"
local uv = require "luv"

local PLUGINS = H.fixtures .. "/config/plugins"
local ENV_SECRET = "env-secret-5e1f0c9a7d"
local FILE_SECRET = "file-secret-b83d2e6f41"
local ENV = { SPEC_SECRET = ENV_SECRET }

local tmp

local function write(name, text)
  local path = tmp .. "/" .. name
  local f = assert(io.open(path .. ".tmp", "w"))
  f:write(text)
  f:close()
  assert(os.rename(path .. ".tmp", path))       -- as editors do: write, then rename
  return path
end

-- The configuration file: text with @PLUGINS@ for the fixtures' directory.
local function config(text)
  return write("luamcp.conf", (text:gsub("@PLUGINS@", PLUGINS)))
end

local function start(args, opts)
  opts = opts or {}
  local all = { "--config", tmp .. "/luamcp.conf" }
  for _, a in ipairs(args or {}) do all[#all + 1] = a end
  return H.session { no_plugins = true, args = all, env = opts.env or ENV }
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Run luamcp with args to its end: exit code, stdout, stderr.
local function run(args, env)
  local cmd = { "env" }
  for k, v in pairs(env or ENV) do cmd[#cmd + 1] = sh_quote(k .. "=" .. v) end
  cmd[#cmd + 1] = "timeout 20"
  cmd[#cmd + 1] = sh_quote(H.binary())
  for _, a in ipairs(args) do cmd[#cmd + 1] = sh_quote(a) end
  local out, err = tmp .. "/out", tmp .. "/err"
  local _, _, code = os.execute(table.concat(cmd, " ") .. " </dev/null >" .. out .. " 2>" .. err)
  local function slurp(p)
    local f = assert(io.open(p))
    local s = f:read("a")
    f:close()
    return s
  end
  return code, slurp(out), slurp(err)
end

local function result(resp)
  assert(resp.result, "no result: " .. require("cjson").encode(resp))
  return resp.result.structuredContent, resp.result
end

local function stdout_text(c)
  local lines = {}
  for _, e in ipairs(c.history) do lines[#lines + 1] = e.raw end
  return table.concat(lines, "\n")
end

local function no_secret(text, what)
  for _, s in ipairs { ENV_SECRET, FILE_SECRET } do
    assert(not text:find(s, 1, true), "a secret in " .. what .. ":\n" .. text)
  end
end

describe("luamcp --config", function()
  before_each(function()
    tmp = H.tmpdir()
  end)
  after_each(function()
    H.cleanup()
    os.execute("rm -rf " .. sh_quote(tmp))
  end)

  it("takes the flags from the file, plugin directories relative to it", function()
    assert(uv.fs_symlink(PLUGINS, tmp .. "/plugs"))
    config [[
-- flags are keys, spelled with _
return {
  page_size = 1,
  log_level = "debug",
  plugins = { "plugs" },
}
]]
    local c = start()
    local resp = c:request("tools/list", {})
    assert.are.equal(1, #resp.result.tools)
    assert.is_not_nil(resp.result.nextCursor)
    c:expect_stderr("debug: ", 5)
    c:expect_stderr("loaded plugin alpha from " .. H.esc(tmp) .. "/plugs/alpha.lua", 5)
  end)

  it("lets a flag on the command line win", function()
    config [[
return {
  page_size = 1,
  log_level = "debug",
  plugins = { "no-such-dir", alpha = { greeting = "hi" } },
}
]]
    local c = start { "--page-size", "50", "--log-level", "info", "--plugins", PLUGINS }
    local resp = c:request("tools/list", {})
    assert.is_nil(resp.result.nextCursor)
    assert.is_true(#resp.result.tools > 5)
    assert.are.equal("hi", result(c:call("alpha_settings")).settings.greeting)   -- settings still apply
    c:close()
    assert.are.equal(0, c:count_stderr("debug: ", true))
    assert.are.equal(0, c:count_stderr("no-such-dir", true))
  end)

  it("gives each plugin its own settings, read-only", function()
    config [[
return {
  plugins = {
    "@PLUGINS@",
    alpha = { greeting = "hi", nested = { n = "one", list = { "ten", "twenty" } }, count = 3 },
    beta = { colour = "blue" },
  },
}
]]
    local c = start()
    local s = result(c:call("alpha_settings"))
    assert.are.equal(3, s.settings.count)
    s.settings.count = nil
    assert.are.same({ greeting = "hi", nested = { n = "one", list = { "ten", "twenty" } } }, s.settings)
    assert.are.equal(2, s.n)                                        -- # through the view
    local b = result(c:call("beta_settings"))
    assert.are.same({ colour = "blue" }, b.settings)                -- not alpha's
    assert.is_true(result(c:call("gamma_settings")).empty)          -- no section: empty
    local w = result(c:call("alpha_writes"))
    assert.truthy(w.field:find("mcp.settings is read-only", 1, true), w.field)
    assert.truthy(w.nested:find("mcp.settings is read-only", 1, true), w.nested)
    assert.truthy(w.replace:find("mcp.settings is read-only", 1, true), w.replace)
    assert.are.equal("hi", w.after)
  end)

  it("reads secrets with env() and file() and never shows them", function()
    write("token", FILE_SECRET .. "\n")
    config [[
return {
  token = env("SPEC_SECRET"),
  log_level = "debug",
  plugins = {
    "@PLUGINS@",
    alpha = { token = env("SPEC_SECRET"), key = file("token"), plain = env("SPEC_UNSET", "fallback") },
    gamma = { key = env("SPEC_SECRET"), fail = "raise" },
  },
}
]]
    local c = start()
    local s = result(c:call("alpha_secret", { name = "token", guess = ENV_SECRET }))
    assert.are.same({ secret = true, shown = "<secret>", matches = true }, s)
    s = result(c:call("alpha_secret", { name = "key", guess = FILE_SECRET }))   -- its last newline dropped
    assert.are.same({ secret = true, shown = "<secret>", matches = true }, s)
    s = result(c:call("alpha_secret", { name = "plain", guess = "fallback" }))
    assert.are.same({ secret = false, shown = "fallback", matches = true }, s)
    assert.are.equal("<secret>", result(c:call("alpha_settings")).settings.token)
    for _, tool in ipairs { "alpha_raise_secret", "alpha_raise_text", "alpha_misuse" } do
      local _, r = result(c:call(tool))
      assert.is_true(r.isError, tool)
    end
    assert.are.equal("logged", H.text(c:call("alpha_log")))
    c:expect_stderr("plugin not loaded: .*gamma%.lua", 5)
    c:close()
    no_secret(c:stderr_text(), "the log")
    no_secret(stdout_text(c), "what clients got")

    -- the plugin's other ways to fail at load
    for _, how in ipairs { "arith", "text" } do
      config(([[
return { plugins = { "@PLUGINS@", gamma = { key = env("SPEC_SECRET"), fail = %q } } }
]]):format(how))
      local code, out, err = run { "list", "--config", tmp .. "/luamcp.conf", "--log-level", "debug" }
      assert.are.equal(0, code, err)
      assert.truthy(out:find("alpha_settings", 1, true), out)
      assert.truthy(err:find("gamma.lua", 1, true), err)
      no_secret(out .. err, "luamcp list (" .. how .. ")")
    end
    local code, out, err = run { "call", "alpha_raise_secret", "--config", tmp .. "/luamcp.conf" }
    assert.are.equal(1, code)
    no_secret(out .. err, "luamcp call")
  end)

  it("never shows a secret when the file is wrong", function()
    write("token", FILE_SECRET)
    local cases = {
      'return { timeout = env("SPEC_SECRET") }',
      'return { max_line = file("token") }',
      'return { log_level = env("SPEC_SECRET") }',                   -- a string, but not a level
      'return { http = file("token") }',
      'return { plugins = { alpha = env("SPEC_SECRET") } }',
      'return { plugins = { alpha = { f = tostring, k = env("SPEC_SECRET") } } }',
      'error(env("SPEC_SECRET"))',
      'return { token = env("SPEC_SECRET") .. "x" }',
      'return { token = env("SPEC_SECRET"):upper() }',
      'return { [env("SPEC_SECRET")] = 1 }',
      'return env("SPEC_SECRET")',
    }
    for _, text in ipairs(cases) do
      config(text)
      local code, out, err = run { "--config", tmp .. "/luamcp.conf" }
      assert.are.equal(2, code, text .. "\n" .. err)
      assert.truthy(err:find(tmp .. "/luamcp.conf:1: ", 1, true), text .. "\n" .. err)
      no_secret(out .. err, text)
      code, out, err = run { "list", "--config", tmp .. "/luamcp.conf" }   -- (the server's flags are not list's)
      no_secret(out .. err, "luamcp list: " .. text)
    end
  end)

  it("reports unknown keys and wrong types at the line of the key", function()
    local cases = {
      { "return {\n  timeout = 5,\n  timout = 3,\n}", ':3: unknown key "timout"' },
      { "return {\n  [\"max-line\"] = 100,\n}",
        ':2: unknown key "max-line": flags are spelled with _ in a configuration file (max_line)' },
      { "-- a comment with timeout = 1\nreturn {\n  grace = \"2\",\n}", ":3: grace must be a number (got string)" },
      { "return {\n  watch = 1,\n}", ":2: watch must be true or false (got number)" },
      { "return {\n  http_allow = { \"a.example\", 5 },\n}", ":2: http_allow[2] must be a string (got number)" },
      { "return {\n  max_line = 10,\n}", ":2: bad value for max_line (want BYTES, a whole number >= 64)" },
      { "return {\n\n  http = \"nope\",\n}", ":3: bad value for http (want HOST:PORT)", server_only = true },
      { "return {\n  plugins = {\n    alpha = {\n      ok = 1,\n      f = function() end,\n    },\n  },\n}",
        ":5: plugins.alpha.f must be a string, number, boolean, secret or table (got function)" },
      { "return {\n  plugins = {\n    \"a\",\n    beta = 'x',\n  },\n}",
        ":4: plugins.beta must be a table of settings (got string)" },
      { "local t = {}\nt.timeout = 'soon'\nreturn t", ":3: timeout must be a number (got string)" },
      { "return {\n  timeout = ,\n}", ":2: unexpected symbol near ','" },
      { "return 42", ":1: a configuration file must return a table (got number)" },
      { "return {\n  env(\"NOT_SET_ANYWHERE_X\"),\n}", ':2: env("NOT_SET_ANYWHERE_X"): not set' },
      { "return {\n  token = file(\"missing\"),\n}", ':2: file("missing"): No such file or directory' },
    }
    for _, case in ipairs(cases) do
      config(case[1])
      local want = tmp .. "/luamcp.conf" .. case[2]
      local code, _, err = run { "--config", tmp .. "/luamcp.conf" }
      assert.are.equal(2, code, case[1] .. "\n" .. err)
      assert.are.equal("luamcp: " .. want .. "\n", err, case[1])
      if not case.server_only then         -- luamcp check leaves the server's flags to it
        code, _, err = run { "check", "--config", tmp .. "/luamcp.conf" }
        assert.are.equal(2, code, case[1] .. "\n" .. err)
        assert.are.equal("luamcp: " .. want .. "\n", err, case[1])
      end
    end
  end)

  it("with --watch, reloads the plugins whose settings changed", function()
    config [[
return { plugins = { "@PLUGINS@", alpha = { greeting = "one" }, beta = { colour = "blue" } } }
]]
    local c = start { "--watch", "--log-level", "debug" }
    assert.are.equal("one", result(c:call("alpha_settings")).settings.greeting)
    local since = #c.notes
    config [[
return {
  timeout = 9,
  plugins = { "@PLUGINS@", alpha = { greeting = "two" }, beta = { colour = "blue" } },
}
]]
    c:expect_stderr("settings of alpha changed", 5)
    c:expect_stderr("timeout changed: restart luamcp to apply", 5)
    assert(c:wait_notification("notifications/tools/list_changed", nil, 5, since))
    assert.are.equal("two", result(c:call("alpha_settings")).settings.greeting)
    assert.are.equal("blue", result(c:call("beta_settings")).colour)
    assert.are.equal(2, c:count_stderr("loaded plugin alpha from", true))
    assert.are.equal(1, c:count_stderr("loaded plugin beta from", true))     -- unchanged: not reloaded
  end)

  it("with --watch, keeps the last good configuration when the file breaks", function()
    config [[
return { plugins = { "@PLUGINS@", alpha = { greeting = "one" } } }
]]
    local c = start { "--watch" }
    local path = tmp .. "/luamcp.conf"
    config [[
return {
  plugins = { "@PLUGINS@", alpha = { greeting = "two" },
}
]]
    c:expect_stderr("configuration not reloaded, the last good one stays: " .. H.esc(path) .. ":%d+: ", 5)
    assert(c:wait_log("configuration not reloaded: " .. H.esc(path), 5))
    assert.are.equal("one", result(c:call("alpha_settings")).settings.greeting)

    config [[
return {
  plugins = { "@PLUGINS@", alpha = { greeting = "two" } },
  timeout = env("SPEC_SECRET"),
}
]]
    c:expect_stderr(H.esc(path) .. ":3: timeout must be a number %(got a secret%)", 5)
    assert.are.equal("one", result(c:call("alpha_settings")).settings.greeting)

    config [[
return { plugins = { "@PLUGINS@", alpha = { greeting = "three" } } }
]]
    c:expect_stderr("settings of alpha changed", 5)
    assert.are.equal("three", result(c:call("alpha_settings")).settings.greeting)
    c:close()
    no_secret(c:stderr_text() .. stdout_text(c), "a broken reload")
  end)
end)
