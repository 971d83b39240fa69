-- Grants before names are resolved (docs/guide/12-untrusted-plugins.md): a
-- sandboxed plugin's ctx:http to a host it was not granted is refused by the
-- name alone, so the name (data the plugin put in it) never reaches DNS; a
-- granted name is resolved once, and what is connected to is the address
-- checked. The server runs in a network and mount namespace of its own
-- (fixtures/netns/enter.sh, as root): its resolver is the DNS stub of
-- fixtures/netns/world.lua, which logs every question, and world.lua's
-- HTTP server logs every request with the local address it reached.
local H = require "spec.helper"

local FIX = H.fixtures .. "/sandbox"
local ENTER = H.fixtures .. "/netns/enter.sh"
local GRANTS = { "good.test:80", "loop.test:80", "two.test:80", "flip.test:80", "198.51.100.7:8080", "[::1]:8080" }

local tmp, c

local function sh(cmd) assert(os.execute(cmd)) end

local write = H.write_file

local function lines(name)
  local out, f = {}, io.open(tmp .. "/" .. name)
  if f then
    for l in f:lines() do out[#out + 1] = l end
    f:close()
  end
  return out
end

local function logged(name, text)
  for _, l in ipairs(lines(name)) do
    if l:lower():find(text:lower(), 1, true) then return true end
  end
  return false
end

-- Did world.lua's HTTP server get a request at addr (its log lines start with it)?
local function reached(addr)
  for _, l in ipairs(lines("http.log")) do
    if l:sub(1, #addr) == addr then return true end
  end
  return false
end

-- The server in its namespace: the sandboxed plugin evil (its tool run runs
-- the Lua it is sent) with GRANTS, and the trusted httpc fixture (its tool
-- fetch is ctx:http), with these flags.
local function start(args)
  local conf = tmp .. "/luamcp.conf"
  local quoted = {}
  for i, g in ipairs(GRANTS) do quoted[i] = ("%q"):format(g) end
  write(conf, ([[
return {
  plugins = { %q, %q },
  sandbox = {
    dirs = { %q },
    grants = { evil = { http = { %s } }, mounter = { connect = { "http://good.test" } },
               pathy = { connect = { "http://good.test/v1" } } },
  },
}
]]):format(FIX .. "/trusted", H.fixtures .. "/httpc", tmp .. "/untrusted", table.concat(quoted, ", ")))
  local all = { "-m", "-n", "/bin/sh", ENTER, tmp, H.binary(), "--config", conf }
  for _, a in ipairs(args or {}) do all[#all + 1] = a end
  c = H.session { no_plugins = true, bin = "unshare", args = all, env = { no_proxy = "*" } }
end

local function run(code) return H.text(c:call("run", { code = code })) end
local function get(url) return run(("local ctx = ...; local r, e, code = ctx:http{ url = %q, timeout = 5 }\n"
                                    .. "if r then return r.status, r.body end return nil, e, code"):format(url)) end

local function need(cmd, what)
  assert(os.execute("PATH=$PATH:/usr/sbin:/sbin command -v " .. cmd .. " >/dev/null 2>&1"),
         "spec/sandbox_dns_spec.lua needs " .. cmd .. " (" .. what .. ")")
end

describe("sandbox: grants before names are resolved", function()
  setup(function()
    need("unshare", "util-linux")
    need("ip", "iproute2: scripts/deps.sh")
    local p = io.popen("id -u")
    local uid = p:read("l")
    p:close()
    assert(uid == "0", "spec/sandbox_dns_spec.lua runs its servers in namespaces of their own: it needs root")
  end)
  before_each(function()
    tmp = H.tmpdir()
    sh("cp -r '" .. FIX .. "/untrusted' '" .. tmp .. "/untrusted'")
    sh("cp '" .. FIX .. "/trusted/lib/patterns.lua' '" .. tmp .. "/untrusted/lib/patterns.lua'")
  end)
  after_each(H.cleanup)

  it("refuses a name not granted without asking DNS, naming the grant to add", function()
    start()
    local out = get "http://DATA-c0ffee.Example.com/"
    assert.equal('ok: nil | sandbox: evil may not reach data-c0ffee.example.com:80 (grant http = '
                 .. '{"data-c0ffee.example.com:80"}): not granted, not resolved | denied', out)
    c:expect_stderr('sandbox: evil may not reach data-c0ffee.example.com:80', 5, { plain = true })
    -- the stub answers (and logs) what is asked: a granted name, asked after
    assert.equal("ok: 200 | hello from 198.51.100.7:80 /", get "http://good.test/")
    assert.is_true(logged("dns.log", "A good.test"), table.concat(lines("dns.log"), "\n"))
    assert.is_false(logged("dns.log", "c0ffee"), table.concat(lines("dns.log"), "\n"))
  end)

  it("reaches a granted name by its scheme's port, in any case, with a trailing dot", function()
    start()
    assert.equal("ok: 200 | hello from 198.51.100.7:80 /a", get "http://GOOD.Test./a")
    assert.equal("ok: 200 | hello from 198.51.100.7:80 /b", get "http://good.test:80/b")
    -- https is port 443, which is not granted: refused before DNS (two.test is asked nowhere else first)
    assert.matches('may not reach two.test:443 (grant http = {"two.test:443"})', get "https://two.test/", 1, true)
    assert.is_false(logged("dns.log", "two.test"), table.concat(lines("dns.log"), "\n"))
  end)

  it("refuses a redirect to a name not granted without asking DNS", function()
    start()
    local out = get "http://good.test/to/LEAK-beef.example.com/x"
    assert.matches('sandbox: evil may not reach leak-beef.example.com:80 (grant http = {"leak-beef.example.com:80"})',
                   out, 1, true)
    assert.matches("| denied$", out)
    assert.is_true(reached("198.51.100.7:80 good.test /to/LEAK-beef.example.com/x"))
    assert.is_false(logged("dns.log", "beef"), table.concat(lines("dns.log"), "\n"))
  end)

  it("refuses a redirect to an address not granted before connecting", function()
    start()
    local out = get "http://good.test/to/127.0.0.1:8080/x"
    assert.matches('may not reach 127.0.0.1:8080 (grant http = {"127.0.0.1:8080"})', out, 1, true)
    assert.is_false(reached("127.0.0.1:8080"), table.concat(lines("http.log"), "\n"))
  end)

  it("refuses a granted name that resolves to loopback; the loopback service is not reached", function()
    start()
    local out = get "http://loop.test/"
    assert.matches("sandbox: evil may not reach loop.test:80: loop.test resolved to a loopback, private or "
                   .. "link-local address (only a grant of the address itself reaches it) | denied", out, 1, true)
    assert.is_true(logged("dns.log", "A loop.test"))
    assert.is_false(reached("127.0.0.1"), table.concat(lines("http.log"), "\n"))
  end)

  it("never connects to a loopback answer among two", function()
    start()
    local out = get "http://two.test/"
    -- whichever answer curl tries first, the loopback one is refused, never reached
    assert.is_true(out == "ok: 200 | hello from 198.51.100.7:80 /" or out:find("resolved to a loopback", 1, true) ~= nil,
                   out)
    assert.is_false(reached("127.0.0.1"), table.concat(lines("http.log"), "\n"))
  end)

  it("resolves a name once: a rebinding answer after the check is never connected to", function()
    start()
    -- flip.test answers 198.51.100.7 once, then 127.0.0.1
    assert.equal("ok: 200 | hello from 198.51.100.7:80 /1", get "http://flip.test/1")
    local asked = 0
    for _, l in ipairs(lines("dns.log")) do if l == "A flip.test" then asked = asked + 1 end end
    assert.equal(1, asked)
    local out = get "http://flip.test/2"
    assert.is_true(out == "ok: 200 | hello from 198.51.100.7:80 /2" or out:find("resolved to a loopback", 1, true) ~= nil,
                   out)
    assert.is_false(reached("127.0.0.1"), table.concat(lines("http.log"), "\n"))
  end)

  it("grants IP literals, IPv6 in brackets in any spelling", function()
    start()
    assert.equal("ok: 200 | hello from 198.51.100.7:8080 /v4", get "http://198.51.100.7:8080/v4")
    assert.equal("ok: 200 | hello from [::1]:8080 /v6", get "http://[::1]:8080/v6")
    assert.equal("ok: 200 | hello from [::1]:8080 /v6b", get "http://[0:0::1]:8080/v6b")
    assert.matches('may not reach 198.51.100.7:80 (grant http = {"198.51.100.7:80"})', get "http://198.51.100.7/", 1, true)
    assert.matches('may not reach [::2]:8080 (grant http = {"[::2]:8080"})', get "http://[::2]:8080/", 1, true)
    assert.is_false(reached("198.51.100.7:80 "), table.concat(lines("http.log"), "\n"))
  end)

  it("checks a connection another plugin left open before each request on it", function()
    start()
    -- the trusted plugin's request leaves curl a connection to good.test:8080 and its address cached
    assert.matches("hello from 198.51.100.7:8080 /trusted", H.text(c:call("fetch", { url = "http://good.test:8080/trusted" })),
                   1, true)
    -- evil's granted good.test:80 redirects there: no DNS, no new socket, the same connection
    local out = get "http://good.test/to/good.test:8080/evil"
    assert.matches('sandbox: evil may not reach good.test:8080 (grant http = {"good.test:8080"})', out, 1, true)
    assert.is_false(reached("198.51.100.7:8080 good.test:8080 /evil"), table.concat(lines("http.log"), "\n"))
  end)

  it("checks mcp.connect's URL by its text, before DNS", function()
    start()
    local out = run "return mcp.connect{ url = 'http://LEAK-cafe.example.com/mcp' }"
    assert.matches('sandbox: evil may not connect to http://LEAK-cafe.example.com/mcp (grant connect = ', out, 1, true)
    assert.is_false(logged("dns.log", "cafe"), table.concat(lines("dns.log"), "\n"))
  end)

  it("refuses a mount whose URL only starts like the one granted, before DNS", function()
    write(tmp .. "/untrusted/mounter.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "mounter", mount = { url = "http://good.test.LEAK-a11ce.example.com/mcp" } }
]])
    start()
    c:expect_stderr('sandbox: mounter may not connect to http://good.test.LEAK-a11ce.example.com/mcp (grant connect = ',
                    5, { plain = true })
    assert.truthy(c:request("tools/list").result)        -- a mount that loaded would connect now
    assert.is_false(logged("dns.log", "a11ce"), table.concat(lines("dns.log"), "\n"))
  end)

  it("refuses a mount that leaves its granted URL prefix by dot segments", function()
    for _, url in ipairs { "http://good.test/v1/../admin/mcp", "http://good.test/v1/%2E%2e/admin/mcp",
                           "http://good.test/v1/./../admin" } do
      write(tmp .. "/untrusted/pathy.lua", ([[
local mcp = require "mcp"
return mcp.plugin { name = "pathy", mount = { url = %q } }
]]):format(url))
      start()
      c:expect_stderr("sandbox: pathy may not connect to " .. url .. " (grant connect = ", 5, { plain = true })
    end
  end)

  it("holds a mount's requests, made for no call, to its plugin's grants: a redirect is refused before DNS", function()
    write(tmp .. "/untrusted/mounter.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "mounter", mount = { url = "http://good.test/to/LEAK-b0b.example.com/mcp" } }
]])
    start()
    assert.truthy(c:request("tools/list").result)        -- the mount connects
    c:expect_stderr('sandbox: mounter may not reach leak-b0b.example.com:80 (grant http = {"leak-b0b.example.com:80"})',
                    5, { plain = true })
    assert.is_true(reached("198.51.100.7:80 good.test /to/LEAK-b0b.example.com/mcp"))
    assert.is_false(logged("dns.log", "b0b"), table.concat(lines("dns.log"), "\n"))
  end)

  it("--http-allow refuses a name it does not list before DNS too", function()
    start { "--http-allow", "good.test:80" }
    local r = c:call("fetch", { url = "http://LEAK-f00d.example.com/" })
    assert.matches("blocked: leak-f00d.example.com:80 is not an allowed host (--http-allow)", H.text(r), 1, true)
    r = c:call("fetch", { url = "http://good.test/ok" })
    assert.matches("hello from 198.51.100.7:80 /ok", H.text(r), 1, true)
    assert.is_true(logged("dns.log", "A good.test"))
    assert.is_false(logged("dns.log", "f00d"), table.concat(lines("dns.log"), "\n"))
  end)
end)
