-- luamcp pack: the MCP Bundle of the example plugins passes the mcpb CLI's
-- validate and info (@anthropic-ai/mcpb from npm, test/node-env.sh), is
-- unpacked by mcpb unpack and started as a client starts it (the manifest's
-- mcp_config, substituted by the mcpb library) with a bare environment,
-- finding every library beyond glibc's inside the bundle; a setting the
-- configuration file reads with env() becomes a sensitive user_config whose
-- value reaches the plugin.
local H = require "spec.helper"
local N = require "spec.node_helper"
local uv, cjson = H.uv, H.cjson

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok, code
end

local function read(path) return (assert(H.read_file(path))) end

-- glibc's own files: a bundle relies on the machine's.
local function is_glibc(path)
  local base = path:match("([^/]+)$")
  return base:find("^ld%-linux") or base:find("^libnss_") or ({
    ["libc.so.6"] = true, ["libm.so.6"] = true, ["libpthread.so.0"] = true, ["libdl.so.2"] = true,
    ["librt.so.1"] = true, ["libresolv.so.2"] = true, ["libanl.so.1"] = true, ["libutil.so.1"] = true,
  })[base]
end

-- The shared objects of lines (ldd's "=> path", /proc/PID/maps' paths) that
-- are neither under dir nor glibc's; and how many were under dir.
local function outside(paths, dir)
  local out, inside = {}, 0
  for _, p in ipairs(paths) do
    if p:sub(1, #dir + 1) == dir .. "/" then inside = inside + 1
    elseif not is_glibc(p) then out[#out + 1] = p end
  end
  return out, inside
end

local function ldd_paths(bin)
  local out, ok = run("env -i ldd " .. sh_quote(bin))
  assert(ok, out)
  assert.is_nil(out:find("not found"), out)
  local paths = {}
  for line in out:gmatch("[^\n]+") do
    local p = line:match("=>%s+(%S+)%s+%(") or line:match("^%s*(/%S+)%s+%(")
    if p then paths[#paths + 1] = p end
  end
  return paths
end

local function maps_paths(pid)
  local paths, seen = {}, {}
  for line in io.lines("/proc/" .. pid .. "/maps") do
    local p = line:match("%s(/%S+%.so[%.%d]*)$")
    if p and not seen[p] then paths[#paths + 1], seen[p] = p, true end
  end
  return paths
end

local function names_of(list)
  local names = {}
  for i, t in ipairs(list) do names[i] = t.name end
  table.sort(names)
  return names
end

local function list_tools(c)
  local tools, cursor = {}, nil
  repeat
    local resp = c:request("tools/list", cursor and { cursor = cursor } or {})
    for _, t in ipairs(resp.result.tools) do tools[#tools + 1] = t end
    cursor = resp.result.nextCursor
  until cursor == nil or cursor == cjson.null
  return tools
end

describe("luamcp pack", function()
  local env, tmp, mcpb

  setup(function()
    env = N.prepare("pack")
    mcpb = env.node .. " " .. sh_quote(env.cache .. "/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js")
    tmp = assert(uv.fs_mkdtemp("/tmp/luamcp-pack-XXXXXX"))
  end)

  teardown(function()
    N.remove(env)
    if tmp then os.execute("rm -rf " .. sh_quote(tmp)) end
  end)

  after_each(H.cleanup)

  -- luamcp pack ARGS in DIR (made under tmp); its output and exit status.
  local function pack(dir, args, vars)
    local out, ok = run("mkdir -p " .. sh_quote(dir) .. " && cd " .. sh_quote(dir) .. " && " .. (vars or "")
                        .. " " .. sh_quote(H.binary()) .. " pack " .. args)
    return out, ok
  end

  -- mcpb unpack BUNDLE into DIR, then the manifest.
  local function unpack(bundle, dir)
    local out, ok = run(mcpb .. " unpack " .. sh_quote(bundle) .. " " .. sh_quote(dir))
    assert(ok, out)
    return cjson.decode(read(dir .. "/manifest.json"))
  end

  -- The command a client runs: mcp_config substituted by the mcpb library.
  local function client_config(dir, values)
    return N.run(env, "mcp_config.mjs", { dir .. "/manifest.json", dir, cjson.encode(values or {}) })
  end

  local function start(cfg)
    local vars = {}
    if type(cfg.env) == "table" then for k, v in pairs(cfg.env) do vars[k] = v end end
    local c = H.start { bin = cfg.command, no_plugins = true, args = cfg.args, env = vars, bare_env = true,
                        cwd = tmp }
    c:initialize()
    return c
  end

  it("bundles the example plugins: mcpb validates it, and unpacked it serves with env -i from its own libraries", function()
    local dir = tmp .. "/examples"
    local out, ok = pack(dir, "--plugins " .. sh_quote(H.root .. "/plugins") .. " --name examples"
                              .. " --author 'luamcp tests' --bundle-version 1.2.3")
    assert(ok, out)
    assert.matches("wrote examples.mcpb", out)
    local bundle = dir .. "/examples.mcpb"

    local info, iok = run(mcpb .. " info " .. sh_quote(bundle))
    assert(iok, info)
    assert.matches("File: examples%.mcpb\nSize: [%d.]+ KB", info)

    local u = dir .. "/unpacked"
    local m = unpack(bundle, u)
    local v, vok = run(mcpb .. " validate " .. sh_quote(u .. "/manifest.json"))
    assert(vok, v)
    assert.matches("validation passes", v)
    assert.equal("0.3", m.manifest_version)
    assert.equal("examples", m.name)
    assert.equal("1.2.3", m.version)
    assert.equal("luamcp tests", m.author.name)
    assert.same({ "linux" }, m.compatibility.platforms)
    assert.equal("binary", m.server.type)
    assert.equal("bin/luamcp", m.server.entry_point)
    assert.equal("${__dirname}/bin/luamcp", m.server.mcp_config.command)
    assert.matches("glibc %d+%.%d+ or newer", m.long_description)
    -- the entry point kept its mode through the zip and mcpb unpack
    assert.equal("rwx", uv.fs_stat(u .. "/bin/luamcp").mode & 448 == 448 and "rwx" or "not executable")

    -- tools: what luamcp list sees
    local listed, lok = run(sh_quote(H.binary()) .. " list --json --plugins " .. sh_quote(H.root .. "/plugins")
                            .. " 2>/dev/null")
    assert(lok, listed)
    -- the model's tools: weather_series, which only weather's view calls, is not one (nor
    -- gateway.lua's mount of it)
    local want, app_only = {}, {}
    for _, t in ipairs(cjson.decode(listed).tools) do
      local ui = type(t._meta) == "table" and t._meta.ui
      local only = ui and ui.visibility and #ui.visibility == 1 and ui.visibility[1] == "app"
      if only then app_only[#app_only + 1] = t.name else want[#want + 1] = t end
    end
    assert.is_true(#want > 0)
    table.sort(app_only)
    assert.same({ "self_weather_series", "weather_series" }, app_only)
    assert.same(names_of(want), names_of(m.tools))
    for _, t in ipairs(m.tools) do
      for _, w in ipairs(want) do
        if w.name == t.name then assert.equal(w.description, t.description) end
      end
    end

    -- the binary resolves every library beyond glibc's inside the bundle
    local real_u = assert(uv.fs_realpath(u))
    local away, inside = outside(ldd_paths(u .. "/bin/luamcp"), real_u)
    assert.same({}, away)
    assert.is_true(inside >= 8, "libraries found in the bundle: " .. inside)
    -- and finds its Lua library there
    local path = run("cd / && env -i " .. sh_quote(u .. "/bin/luamcp") .. " path")
    assert.equal(real_u .. "/share/luamcp/lua\n", path)

    -- started as a client does, with nothing in its environment but mcp_config's
    local cfg = client_config(u)
    assert.is_false(cfg.missing)
    assert.equal(u .. "/bin/luamcp", cfg.config.command)
    local c = start(cfg.config)
    assert.same(names_of(m.tools), names_of(list_tools(c)))
    assert.equal("hi", H.text(c:call("echo", { text = "hi" })))
    away, inside = outside(maps_paths(c.pid), real_u)
    assert.same({}, away)
    assert.is_true(inside >= 8, "libraries mapped from the bundle: " .. inside)
  end)

  it("makes a sensitive user_config of a secret setting, and its value reaches the plugin", function()
    local dir = tmp .. "/keyed"
    local conf = H.fixtures .. "/pack/luamcp.conf"
    -- the packer's own key must not travel in the bundle
    local out, ok = pack(dir, "--config " .. sh_quote(conf) .. " --name keyed",
                         "PACK_SPEC_API_KEY=packers-own-key-123")
    assert(ok, out)
    local u = dir .. "/unpacked"
    local m = unpack(dir .. "/keyed.mcpb", u)
    local v, vok = run(mcpb .. " validate " .. sh_quote(u .. "/manifest.json"))
    assert(vok, v)
    local files = run("grep -rl packers-own-key-123 " .. sh_quote(u) .. " " .. sh_quote(dir .. "/keyed.mcpb"))
    assert.equal("", files)

    local key = m.user_config.pack_spec_api_key
    assert.equal("string", key.type)
    assert.is_true(key.sensitive)
    assert.is_true(key.required)
    assert.equal("keyed.api_key", key.title)
    assert.matches("env%(\"PACK_SPEC_API_KEY\"%)", key.description)
    local region = m.user_config.pack_spec_region
    assert.is_true(region.sensitive)
    assert.is_false(region.required)
    assert.equal("eu", region.default)
    assert.same({ PACK_SPEC_API_KEY = "${user_config.pack_spec_api_key}",
                  PACK_SPEC_REGION = "${user_config.pack_spec_region}" }, m.server.mcp_config.env)
    assert.same({ "--plugins", "${__dirname}/plugins/plugins", "--config", "${__dirname}/luamcp.conf" },
                m.server.mcp_config.args)
    assert.same({ "key_status" }, names_of(m.tools))

    -- without the key the client does not start it
    assert.is_true(client_config(u).missing)

    local secret = "users-key-0123456789"
    local cfg = client_config(u, { pack_spec_api_key = secret })
    assert.is_false(cfg.missing)
    for _, a in ipairs(cfg.config.args) do assert.is_nil(a:find(secret, 1, true)) end
    local c = start(cfg.config)
    assert.equal(string.format("api_key: set, %d characters; region: eu", #secret),
                 H.text(c:call("key_status")))
    for _, line in ipairs(c.stderr) do assert.is_nil(line:find(secret, 1, true)) end
  end)

  it("refuses a configuration file that reads a secret from a file", function()
    local dir = tmp .. "/filed"
    assert(os.execute("mkdir -p " .. sh_quote(dir)))
    local f = assert(io.open(dir .. "/luamcp.conf", "w"))
    f:write('return { plugins = { ' .. string.format("%q", H.fixtures .. "/pack/plugins")
            .. ', keyed = { api_key = file("key.txt") } } }\n')
    f:close()
    f = assert(io.open(dir .. "/key.txt", "w")); f:write("k\n"); f:close()
    local out, ok = pack(dir, "--config luamcp.conf")
    assert.is_falsy(ok)
    assert.matches('file%("key.txt"%) reads a secret from a file the bundle would not carry', out)
    assert.is_nil(io.open(dir .. "/filed.mcpb"))
  end)
end)
