-- make install / cmake --install of the build under test (the directory of
-- $LUAMCP_BIN): the installed tree runs after it is moved (the Lua library
-- is found relative to the binary), serves its example plugins, and gives
-- `luamcp new` + busted what they need on PATH and LUA_PATH; make deb's
-- package (CPack) holds the same tree and depends on runtime libraries only.
-- `luamcp new` + busted work under any prefix, the tree moved or not, for
-- the generated spec and guide 8's, whatever order busted loads them in.
local H = require "spec.helper"
local uv = require "luv"

local BUILD = H.binary():match("^(.*)/[^/]*$")

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Run a shell command: its exit code and its output (stdout and stderr).
local function sh(cmd)
  local p = assert(io.popen("(" .. cmd .. ") 2>&1"))
  local out = p:read("a")
  local _, _, code = p:close()
  return code, out
end

local function exists(path) return uv.fs_stat(path) ~= nil end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- docs/guide/08-testing.md's plugin (plugins/count.lua) and its spec.
local function guide8()
  local f = assert(io.open(H.root .. "/docs/guide/08-testing.md"))
  local page = f:read("a")
  f:close()
  return assert(page:match("<!%-%- file: plugins/count.lua %-%->\n```lua\n(.-)```")),
         assert(page:match("<!%-%- busted %-%->\n```lua\n(.-)```"))
end

if not exists(BUILD .. "/cmake_install.cmake") then
  pending("LUAMCP_BIN is not in a CMake build directory: nothing to install")
  return
end

describe("install", function()
  local tmp
  before_each(function()
    tmp = H.tmpdir()
  end)
  after_each(function()
    H.cleanup()
    os.execute("rm -rf " .. q(tmp))
  end)

  -- cmake --install into DESTDIR with PREFIX, then the tree moved to tmp/moved.
  local function install_moved(prefix)
    local code, out = sh(("DESTDIR=%s cmake --install %s --prefix %s"):format(q(tmp .. "/dest"), q(BUILD), q(prefix)))
    assert.are.equal(0, code, out)
    assert(os.rename(tmp .. "/dest" .. prefix, tmp .. "/moved"))
    return tmp .. "/moved"
  end

  it("puts the binary, the library, mcp.test, the examples, the man page and the docs under the prefix", function()
    local code, out = sh(("DESTDIR=%s cmake --install %s --prefix /opt/luamcp"):format(q(tmp .. "/dest"), q(BUILD)))
    assert.are.equal(0, code, out)
    local root = tmp .. "/dest/opt/luamcp"
    for _, f in ipairs { "bin/luamcp", "share/luamcp/lua/mcp/init.lua", "share/luamcp/lua/mcp/server.lua",
                         "share/luamcp/lua/mcp/config.lua", "share/luamcp/plugins/hello.lua",
                         "share/luamcp/types/mcp.lua",
                         "share/lua/5.4/mcp/test.lua", "share/man/man1/luamcp.1",
                         "share/doc/luamcp/README.md", "share/doc/luamcp/docs/guide/01-first-tool.md",
                         "share/doc/luamcp/docs/reference/lua-api.md",
                         "share/doc/luamcp/docs/development/ARCHITECTURE.md" } do
      assert.is_true(exists(root .. "/" .. f), f .. " not installed:\n" .. out)
    end
    local lib = assert(io.popen("cd lua && find . -name '*.lua'"))    -- every file of the library, subfolders too
    for f in lib:lines() do
      assert.is_true(exists(root .. "/share/luamcp/lua/" .. f:sub(3)), "lua/" .. f:sub(3) .. " not installed")
    end
    lib:close()
    assert.is_false(exists(root .. "/bin/luamcp-asan"))
    assert.is_false(exists(root .. "/share/luamcp/plugins/conformance"))
  end)

  it("runs from a moved tree, on its own library and example plugins", function()
    local moved = install_moved("/usr/local")
    local c = H.session {
      bin = moved .. "/bin/luamcp", no_plugins = true, cwd = tmp,
      args = { "--plugins", moved .. "/share/luamcp/plugins", "--log-level", "debug" },
      env = { LUAMCP_LUA_DIR = "", LUAMCP_GATEWAY = "off" },
    }
    c:expect_stderr("Lua library: " .. H.esc(moved .. "/bin/../share/luamcp/lua") .. "$", 5)
    local names = {}
    for _, t in ipairs(c:request("tools/list", {}).result.tools) do names[t.name] = true end
    for _, want in ipairs { "echo", "run_command", "list_files", "fetch_url" } do
      assert.is_true(names[want], want)
    end
    assert.are.equal("hi", H.text(c:call("echo", { text = "hi" })))
  end)

  it("gives luamcp new and busted what they need on PATH and LUA_PATH", function()
    local moved = install_moved("/usr/local")
    assert(uv.fs_mkdir(tmp .. "/project", 448))
    local env = ("env -u LUAMCP_BIN -u LUAMCP_LUA_DIR PATH=%s LUA_PATH=%s"):format(
      q(moved .. "/bin:" .. os.getenv("PATH")), q(moved .. "/share/lua/5.4/?.lua;;"))
    local code, out = sh(("cd %s && %s sh -c 'command -v luamcp; lua5.4 -e \"print(package.searchpath([[mcp.test]], package.path))\"'")
      :format(q(tmp .. "/project"), env))
    assert.are.equal(0, code, out)
    assert.are.equal(moved .. "/bin/luamcp\n" .. moved .. "/share/lua/5.4/mcp/test.lua\n", out)
  end)

  -- Under a prefix lua5.4 does not search, with only PATH set: the .busted
  -- luamcp new writes puts mcp.test (`luamcp path`) on every spec's path,
  -- and its .luarc.json names the installed annotations.
  for _, prefix in ipairs { "/opt/luamcp", "/home/someone/.local" } do
    it("luamcp new + busted work with luamcp installed under " .. prefix .. " and moved", function()
      local moved = install_moved(prefix)
      local real = assert(uv.fs_realpath(moved))
      assert(uv.fs_mkdir(tmp .. "/project", 448))
      local env = ("env -u LUAMCP_BIN -u LUAMCP_LUA_DIR -u LUA_PATH -u LUA_PATH_5_4 PATH=%s")
        :format(q(moved .. "/bin:" .. os.getenv("PATH")))
      local code, out = sh(("cd %s && %s luamcp path && %s luamcp path types"):format(q(tmp), env, env))
      assert.are.equal(0, code, out)
      assert.are.equal(real .. "/share/luamcp/lua\n" .. real .. "/share/luamcp/types\n", out)
      local busted = exists("/usr/bin/busted") and "/usr/bin/busted" or "busted"
      code, out = sh(("cd %s && %s luamcp new weather && %s timeout 120 lua5.4 %s")
        :format(q(tmp .. "/project"), env, env, busted))
      assert.are.equal(0, code, out)
      assert.truthy(out:find("wrote spec/weather_spec.lua\nwrote .busted\nwrote .luarc.json\n", 1, true), out)
      assert.truthy(out:find("5 successes / 0 failures / 0 errors", 1, true), out)
      -- busted from elsewhere: the project's .busted all the same
      code, out = sh(("cd / && %s timeout 120 lua5.4 %s -C %s")
        :format(env, busted, q(tmp .. "/project")))
      assert.are.equal(0, code, out)
      assert.truthy(out:find("5 successes / 0 failures / 0 errors", 1, true), out)
      -- guide 8's plugin and spec as written, its spec loaded before the generated one and after
      local plugin, spec = guide8()
      write(tmp .. "/project/plugins/count.lua", plugin)
      for _, name in ipairs { "count_spec.lua", "zcount_spec.lua" } do
        write(tmp .. "/project/spec/" .. name, spec)
        code, out = sh(("cd %s && %s timeout 120 lua5.4 %s"):format(q(tmp .. "/project"), env, busted))
        assert.are.equal(0, code, name .. "\n" .. out)
        assert.truthy(out:find("9 successes / 0 failures / 0 errors", 1, true), name .. "\n" .. out)
        os.remove(tmp .. "/project/spec/" .. name)
      end

      local f = assert(io.open(tmp .. "/project/.luarc.json"))
      local luarc = require("cjson").decode(f:read("a"))
      f:close()
      assert.are.same({ real .. "/share/luamcp/types" }, luarc["workspace.library"])
      f = assert(io.open(real .. "/share/luamcp/types/mcp.lua"))
      assert.are.equal("---@meta mcp\n", f:read("L"))
      f:close()
    end)
  end

  it("make deb: a package of the same tree that depends on runtime libraries only", function()
    local code, out = sh(("cpack -G DEB -B %s --config %s"):format(q(tmp .. "/deb"), q(BUILD .. "/CPackConfig.cmake")))
    assert.are.equal(0, code, out)
    local deb = out:match("package: (%S+%.deb) generated")
    assert(deb, out)
    local _, depends = sh("dpkg-deb -f " .. q(deb) .. " Depends")
    for _, lib in ipairs { "liblua5.4-0", "libuv1", "libjansson4", "libhttp-parser2.9", "libcurl4", "libsqlite3-0" } do
      assert.truthy(depends:find(lib .. " ", 1, true), lib .. " missing from Depends: " .. depends)
    end
    local _, needed = sh("readelf -d " .. q(BUILD .. "/luamcp"))
    if needed:find("libcrypto", 1, true) then
      assert.truthy(depends:find("libssl3", 1, true), "libssl3 missing from Depends: " .. depends)
    end
    assert.is_nil(depends:find("-dev", 1, true), depends)
    local _, list = sh("dpkg-deb -c " .. q(deb))
    for _, f in ipairs { "./usr/bin/luamcp", "./usr/share/luamcp/lua/mcp/init.lua",
                         "./usr/share/lua/5.4/mcp/test.lua", "./usr/share/luamcp/types/mcp.lua",
                         "./usr/share/man/man1/luamcp.1" } do
      assert.truthy(list:find(f, 1, true), f .. " not in the package:\n" .. list)
    end
    -- its tree runs where it is unpacked
    code, out = sh(("dpkg-deb -x %s %s && LUAMCP_GATEWAY=off %s list --plugins %s --log-level debug"):format(
      q(deb), q(tmp .. "/x"), q(tmp .. "/x/usr/bin/luamcp"), q(tmp .. "/x/usr/share/luamcp/plugins")))
    assert.are.equal(0, code, out)
    assert.truthy(out:find("Lua library: " .. tmp .. "/x/usr/bin/../share/luamcp/lua", 1, true), out)
    assert.truthy(out:find("\necho (Echo)\n", 1, true), out)
  end)
end)
