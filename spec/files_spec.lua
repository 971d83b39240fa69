-- ctx:read_file, ctx:list_dir, ctx:realpath (libuv fs on the thread pool),
-- and plugins/files.lua, which serves files under one root and refuses paths
-- that leave it.
local H = require "spec.helper"
local cjson = H.cjson

local FIX = "spec/fixtures/files"

local function outcome(resp)
  local text = assert(H.text(resp), cjson.encode(resp))
  local t = cjson.decode(text)
  local function v(x) if x == false then return nil end return x end
  return v(t.value), v(t.err), v(t.code)
end

local function sh(cmd) assert(os.execute(cmd), cmd) end

-- A fresh directory with a few files, a sub directory and symlinks in and out.
local function tree()
  local dir = os.tmpname()
  os.remove(dir)
  sh("mkdir -p " .. dir .. "/root/sub " .. dir .. "/outside")
  local function write(p, s) local f = assert(io.open(dir .. "/" .. p, "wb")); f:write(s); f:close() end
  write("root/a.txt", "alpha\n")
  write("root/sub/b.txt", "beta\n")
  write("root/bin.dat", "a\0b\255c")
  write("root/empty", "")
  write("outside/secret.txt", "secret\n")
  sh(("ln -s %s/outside/secret.txt %s/root/escape"):format(dir, dir))
  sh(("ln -s %s/outside %s/root/outdir"):format(dir, dir))
  sh(("ln -s sub/b.txt %s/root/inlink"):format(dir))
  return dir
end

local dirs = {}
local function newtree() local d = tree(); dirs[#dirs + 1] = d; return d end

describe("ctx:read_file", function()
  after_each(function()
    H.cleanup()
    for _, d in ipairs(dirs) do os.execute("rm -rf " .. d) end
    dirs = {}
  end)

  it("returns a file's bytes exactly, binary and empty files too", function()
    local d = newtree()
    local c = H.session { plugins = { FIX } }
    assert.are.equal("alpha\n", outcome(c:call("read", { path = d .. "/root/a.txt" })))
    assert.are.equal("", outcome(c:call("read", { path = d .. "/root/empty" })))
    -- bytes that are not UTF-8 cannot travel as JSON text: compare through a length
    local lens = outcome(c:call("read_len", { path = d .. "/root/bin.dat" }))
    assert.are.same({ 5 }, lens)
  end)

  it("reads files whose size is unknown (/proc)", function()
    local c = H.session { plugins = { FIX } }
    local v = outcome(c:call("read", { path = "/proc/self/status" }))
    assert.matches("^Name:", v)
  end)

  it("errors: nil, a message naming the path and the libuv error name, a code", function()
    local d = newtree()
    local c = H.session { plugins = { FIX } }
    local v, err, code = outcome(c:call("read", { path = d .. "/nope" }))
    assert.is_nil(v)
    assert.are.equal("read_file " .. d .. "/nope: no such file or directory (ENOENT)", err)
    assert.are.equal("not_found", code)
    v, err, code = outcome(c:call("read", { path = d .. "/root" }))
    assert.are.equal("read_file " .. d .. "/root: is a directory (EISDIR)", err)
    assert.are.equal("invalid", code)
    v, err, code = outcome(c:call("read", { path = "/dev/null" }))
    assert.are.equal("read_file /dev/null: not a regular file (EINVAL)", err)
    assert.are.equal("invalid", code)
    v, err, code = outcome(c:call("read", { path = d .. "/root/a.txt", max_bytes = 5 }))
    assert.are.equal("read_file " .. d .. "/root/a.txt: larger than max_bytes (5) (EFBIG)", err)
    assert.are.equal("too_large", code)
    assert.are.equal("alpha\n", outcome(c:call("read", { path = d .. "/root/a.txt", max_bytes = 6 })))
  end)

  it("cannot wait outside the handler's own coroutine", function()
    local c = H.session { plugins = { FIX } }
    local _, err = outcome(c:call("top_level", { path = "/etc/hostname" }))
    assert.matches("read_file: call it from the handler's coroutine", err)
  end)

  it("a big file does not stall a concurrent ping", function()
    local path = os.tmpname()
    dirs[#dirs + 1] = path
    sh("head -c 50000000 /dev/urandom > " .. path)
    local c = H.session { plugins = { FIX }, args = { "--memory-limit", "0" } }
    c:send(H.call_raw("1", "read_len", { path = path, times = 4 }))
    assert(c:wait_log("^reading$"))
    -- ping every 2 ms until the read is done
    local pings, sent = {}, 0
    local t = H.uv.new_timer()
    t:start(0, 2, function()
      sent = sent + 1
      c:send(H.line { jsonrpc = "2.0", id = "p" .. sent, method = "ping" })
    end)
    local resp = c:take(function(m, raw) return H.is_response(m) and H.raw_member(raw, "id") == "1" end)
    t:stop(); t:close()
    assert.are.same({ 50000000, 50000000, 50000000, 50000000 }, (outcome(resp)))
    -- pings answered while a read was in flight: between its "read i" and
    -- "done i" logs (a read that blocked the loop would leave none there)
    local during, inside = 0, false
    for _, e in ipairs(c.history) do
      local m = e.msg
      if m.method == "notifications/message" and type(m.params.data) == "string" then
        if m.params.data:match("^read %d$") then inside = true end
        if m.params.data:match("^done %d$") then inside = false end
      elseif inside and type(m.id) == "string" and m.id:match("^p%d+$") then
        during = during + 1
      end
    end
    assert.is_true(during >= 2, during .. " pings answered during the reads")
  end)

  it("a cancel wakes a read at once; the result in flight is dropped", function()
    local path = os.tmpname()
    dirs[#dirs + 1] = path
    sh("head -c 20000000 /dev/zero > " .. path)
    local c = H.session { plugins = { FIX }, args = { "--memory-limit", "0" } }
    c:send(H.call_raw("2", "read_loop", { path = path }))
    assert(c:wait_log("^looping$"))
    H.pump(0.2)
    c:send(H.cancel_raw("2", "stop reading"))
    c:expect_stderr("^fixture: read_loop stopped after %d+ reads: cancelled: stop reading$")
    assert.are.same({}, c:request("ping").result)
  end)

  it("ctx:list_dir lists entries sorted with their types; ctx:realpath resolves links", function()
    local d = newtree()
    local c = H.session { plugins = { FIX } }
    local entries = outcome(c:call("list", { path = d .. "/root" }))
    local got = {}
    for _, e in ipairs(entries) do got[#got + 1] = e.name .. ":" .. e.type end
    assert.are.same({ "a.txt:file", "bin.dat:file", "empty:file", "escape:link", "inlink:link",
                      "outdir:link", "sub:dir" }, got)
    local real = outcome(c:call("realpath", { path = d .. "/root/sub/../inlink" }))
    assert.matches("/root/sub/b.txt$", real)
    local _, err, code = outcome(c:call("list", { path = d .. "/nope" }))
    assert.are.equal("not_found", code)
    assert.matches("(ENOENT)", err, 1, true)
  end)
end)

describe("plugins/files.lua", function()
  after_each(function()
    H.cleanup()
    for _, d in ipairs(dirs) do os.execute("rm -rf " .. d) end
    dirs = {}
  end)

  local function files_session(d)
    return H.session { plugins = { "plugins" }, env = { LUAMCP_FILES_ROOT = d .. "/root" } }
  end

  it("lists and reads under the root", function()
    local d = newtree()
    local c = files_session(d)
    assert.are.equal("a.txt\nbin.dat\nempty\nescape\ninlink\noutdir\nsub/", H.text(c:call("list_files", {})))
    assert.are.equal("b.txt", H.text(c:call("list_files", { path = "sub" })))
    assert.are.equal("alpha\n", H.text(c:call("read_file", { path = "a.txt" })))
    assert.are.equal("beta\n", H.text(c:call("read_file", { path = "sub/../sub/b.txt" })))
    assert.are.equal("beta\n", H.text(c:call("read_file", { path = "inlink" })))
  end)

  it("refuses paths that leave the root: .., absolute paths, symlinks out", function()
    local d = newtree()
    local c = files_session(d)
    for _, p in ipairs { "../outside/secret.txt", "sub/../../outside/secret.txt", "/etc/passwd",
                         d .. "/outside/secret.txt", "escape", "outdir/secret.txt", ".." } do
      local resp = c:call("read_file", { path = p })
      assert.is_true(resp.result.isError, p .. " was read: " .. tostring(H.text(resp)))
      assert.is_nil(H.text(resp):find("secret\n", 1, true))
    end
    assert.is_true(c:call("list_files", { path = "outdir" }).result.isError)
    assert.is_true(c:call("list_files", { path = ".." }).result.isError)
    assert.matches("outside the root", H.text(c:call("read_file", { path = "escape" })))
    assert.matches("no such file", H.text(c:call("read_file", { path = "missing.txt" })))
  end)
end)
