-- Plugin loading and the command line.
local H = require "spec.helper"

describe("plugins", function()
  after_each(H.cleanup)

  it("a plugin with a syntax error is logged with its file name and the others still load", function()
    local c = H.session{ plugins = { "spec/fixtures/broken" } }
    c:expect_stderr("a_syntax_error.lua", 5, { plain = true })
    assert.are.equal("still here", H.text(c:call("still_here", {})))
  end)

  it("a plugin that raises while loading is logged and the server still serves", function()
    local c = H.session{ plugins = { "spec/fixtures/broken" } }
    c:expect_stderr("plugin b_raises refuses to load", 5, { plain = true })
    local resp = c:request("tools/list", {})
    local names = {}
    for _, t in ipairs(resp.result.tools) do names[#names + 1] = t.name end
    assert.are.same({ "still_here" }, names)
  end)

  it("mcp.sleep at a plugin file's top level raises an error instead of hanging", function()
    local c = H.session{ plugins = { "spec/fixtures/broken" } }
    c:expect_stderr("c_sleeps_at_top.lua", 5, { plain = true })
    assert.are.same({}, c:request("ping").result)
  end)

  it("a declaration with an unknown field refuses its plugin: every mistake, at its line, with a hint", function()
    local dir = H.tmpdir()
    local function write(name, text)
      local f = assert(io.open(dir .. "/" .. name, "w"))
      f:write(text)
      f:close()
    end
    write("typo.lua", [[
local mcp = require "mcp"
local t = mcp.tool {
  name = "typo", input_schema = { type = "object", required = { "n" } },
  handler = function() return "ran" end,
}
return mcp.plugin {
  name = "typo", tools = { t },
  resources = { mcp.resource { uri = "x://y", mime = "text/plain", read = function() return "" end } },
}
]])
    write("fine.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "fine", tools = { mcp.tool {
  name = "fine", inputSchema = { type = "object" }, max_concurrent = 2, handler = function(_, ctx)
    local ok, err = pcall(mcp.tool, { name = "late", Handler = function() end })
    return tostring(err)
  end } } }
]])
    local c = H.session{ plugins = { dir } }
    local p = dir .. "/typo.lua:"
    local _, first = c:expect_stderr("plugin not loaded: " .. p .. "3: tool typo: unknown field input_schema " ..
                                     "(did you mean inputSchema?)", 5, { plain = true })
    local _, second = c:expect_stderr("plugin not loaded: " .. p .. "8: resource x://y: unknown field mime " ..
                                      "(did you mean mimeType?)", 5, { plain = true })
    assert(second == first + 1, c:stderr_text())          -- one log line each, in source order
    local names = {}
    for _, t in ipairs(c:request("tools/list", {}).result.tools) do names[#names + 1] = t.name end
    assert.are.same({ "fine" }, names)
    -- outside a plugin file's load, the first mistake raises at the caller's line
    assert.are.equal(dir .. "/fine.lua:4: tool late: unknown field Handler (did you mean handler?)",
                     H.text(c:call("fine", {})))
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("sends the icons and _meta a declaration accepts; checks a mount's policy", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/icons.lua", "w"))
    f:write([[
local mcp = require "mcp"
local icons = { { src = "https://example.com/i.png", mimeType = "image/png" } }
return mcp.plugin { name = "icons",
  tools = { mcp.tool { name = "t", icons = icons, _meta = { k = 1 }, handler = function() end } },
  resources = { mcp.resource { uri = "x://r", icons = icons, read = function() return "" end },
                mcp.resource_template { uriTemplate = "x://t/{id}", icons = icons, read = function() return "" end } },
  prompts = { mcp.prompt { name = "p", icons = icons, get = function() return "" end } },
}
]])
    f:close()
    f = assert(io.open(dir .. "/mount.lua", "w"))
    f:write('local mcp = require "mcp"\nreturn mcp.plugin { name = "m", mount = { command = { "true" }, timeout = -1 } }\n')
    f:close()
    local c = H.session{ plugins = { dir } }
    c:expect_stderr(dir .. "/mount.lua:2: plugin m: mount.timeout must be a number of seconds >= 0", 5, { plain = true })
    local src = "https://example.com/i.png"
    local tool = c:request("tools/list", {}).result.tools[1]
    assert.are.equal(src, tool.icons[1].src)
    assert.are.same({ k = 1 }, tool._meta)
    assert.are.equal(src, c:request("resources/list", {}).result.resources[1].icons[1].src)
    assert.are.equal(src, c:request("resources/templates/list", {}).result.resourceTemplates[1].icons[1].src)
    assert.are.equal(src, c:request("prompts/list", {}).result.prompts[1].icons[1].src)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("the deprecated mcp.sleep, mcp.log, ... work and each says so once", function()
    local dir = H.tmpdir()
    local f = assert(io.open(dir .. "/old.lua", "w"))
    f:write([[
local mcp = require "mcp"
return mcp.plugin { name = "old", tools = { mcp.tool { name = "old", handler = function()
  local slept = mcp.sleep(0.01)
  mcp.sleep(0.01)
  mcp.log("info", "logged")
  return tostring(slept) .. " " .. tostring(mcp.cancelled())
end } } }
]])
    f:close()
    local c = H.session{ plugins = { dir } }
    assert.are.equal("true false", H.text(c:call("old", {})))
    assert.are.equal("true false", H.text(c:call("old", {})))
    os.execute("rm -rf '" .. dir .. "'")
    c:expect_stderr("mcp.cancelled is deprecated: use ctx:cancelled", 5, { plain = true })
    assert.are.equal(1, c:count_stderr("mcp.sleep is deprecated: use ctx:sleep", true), c:stderr_text())
    assert.are.equal(1, c:count_stderr("mcp.log is deprecated: use ctx:log", true), c:stderr_text())
  end)

  it("several --plugins directories are all loaded", function()
    local c = H.session{ plugins = { "spec/fixtures/paging", "spec/fixtures/broken" } }
    assert.are.equal("tool 3", H.text(c:call("page_tool_3", {})))
    assert.are.equal("still here", H.text(c:call("still_here", {})))
  end)

  it("an empty plugins directory serves an empty tool list", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(H.uv.fs_mkdir(dir, tonumber("755", 8)))
    local c = H.session{ plugins = { dir } }
    local resp = c:request("tools/list", {})
    H.uv.fs_rmdir(dir)
    assert.are.equal(0, #resp.result.tools)
    assert.truthy(select(3, c:request("tools/list", {})):find('"tools":[]', 1, true))
  end)
end)

describe("command line", function()
  after_each(H.cleanup)

  it("--version prints a version and exits 0", function()
    local c = H.start{ no_plugins = true, args = { "--version" } }
    local code = c:wait_exit()
    assert.are.equal(0, code)
    local out = table.concat(c.bad_lines, "\n") .. c:stderr_text()
    assert.truthy(out:find("%d+%.%d+"), out)
    c.bad_lines = {}   -- not JSON-RPC, and that is fine here
  end)

  it("--help exits 0 and names the options", function()
    local c = H.start{ no_plugins = true, args = { "--help" } }
    assert.are.equal(0, c:wait_exit())
    local out = table.concat(c.bad_lines, "\n") .. c:stderr_text()
    assert.truthy(out:find("--plugins", 1, true), out)
    assert.truthy(out:find("--timeout", 1, true), out)
    c.bad_lines = {}
  end)

  it("--watch says which directories it watches", function()
    local c = H.start{ args = { "--watch" } }
    c:expect_stderr("watching .*spec/fixtures/plugins for changes")
  end)

  for _, bad in ipairs { "127.0.0.1", ":8080", "127.0.0.1:99999", "127.0.0.1:x" } do
    it("--http " .. bad .. " is refused with exit 2", function()
      local c = H.start{ args = { "--http", bad } }
      assert.are.equal(2, c:wait_exit())
      assert.truthy(c:stderr_text():find("bad --http", 1, true), c:stderr_text())
    end)
  end

  it("--http 127.0.0.1:0 listens on a free port and says where", function()
    local c = H.start{ args = { "--http", "127.0.0.1:0" } }
    c:expect_stderr("listening on http://127.0.0.1:%d+/mcp")
    c:kill("sigterm")
    assert.are.equal(0, c:wait_exit())
  end)

  it("an unknown option is refused with a non-zero exit", function()
    local c = H.start{ args = { "--no-such-option" } }
    local code = c:wait_exit()
    assert.is_true(code ~= 0)
    c.bad_lines = {}
  end)

  it("an invalid --log-level is refused with a non-zero exit", function()
    local c = H.start{ args = { "--log-level", "chatty" } }
    assert.is_true(c:wait_exit() ~= 0)
    c.bad_lines = {}
  end)

  it("--log-level warning hides info lines on stderr", function()
    local c = H.session{ args = { "--log-level", "warning" } }
    c:send(H.call_raw("7", "sleep", { seconds = 30 }))
    assert(c:wait_log("^started 7$"))
    c:send(H.cancel_raw("7", "quiet"))
    assert(c:wait_log("^stopped 7 "))
    c:close()
    for _, l in ipairs(c.stderr) do
      assert.is_nil(l:find("^luamcp: info:"), l)
      assert.is_nil(l:find("^luamcp: debug:"), l)
    end
  end)
end)
