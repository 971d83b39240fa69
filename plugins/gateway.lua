-- A gateway in one line: this plugin mounts another MCP server, and its
-- tools, resources and prompts are served as this plugin's own, prefixed.
--
-- The server: luamcp's own example plugins (this directory) through the
-- luamcp binary, as a child, prefixed self_. With LUAMCP_GATEWAY=everything,
-- the reference server @modelcontextprotocol/server-everything from npm
-- through npx instead, prefixed everything_ (its first start downloads it:
-- the first list waits for that). Nothing is started until a client lists
-- the tools or calls one of them; a server that cannot start is a warning in
-- the log, and the other plugins serve on. LUAMCP_GATEWAY=off leaves it out.
--
--   luamcp list --plugins plugins          shows the mounted tools
--   LUAMCP_GATEWAY=everything luamcp call everything_echo '{"message": "hi"}' --plugins plugins
local mcp = require "mcp"

local function warn(msg) io.stderr:write("luamcp: warning: plugin gateway: ", msg, "\n") end

local function on_path(prog)
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    local f = io.open(dir .. "/" .. prog, "r")
    if f then
      f:close()
      return dir .. "/" .. prog
    end
  end
end

-- The luamcp binary that runs this file (the shell's parent is the server).
local function luamcp_binary()
  local p = io.popen("readlink /proc/$PPID/exe 2>/dev/null")
  local exe = p and p:read("l")
  if p then p:close() end
  return exe ~= "" and exe or nil
end

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."

-- The luamcp child that serves this directory loads this file too: no second level.
if os.getenv("LUAMCP_GATEWAY_CHILD") or os.getenv("LUAMCP_GATEWAY") == "off" then
  return mcp.plugin { name = "gateway" }
end

local mount
local npx = on_path("npx")
if os.getenv("LUAMCP_GATEWAY") == "everything" then
  if npx then
    mount = { command = { npx, "-y", "@modelcontextprotocol/server-everything", "stdio" },
              prefix = "everything_", connect_timeout = 120 }
  else
    warn("LUAMCP_GATEWAY=everything needs npx on PATH: nothing is mounted")
  end
else
  local bin = luamcp_binary()
  if bin then
    mount = { command = { bin, "--plugins", here }, env = { LUAMCP_GATEWAY_CHILD = "1" }, prefix = "self_",
              resources = false }     -- the same URIs as here: served once
  else
    warn("neither npx nor the luamcp binary was found: nothing is mounted")
  end
end

return mcp.plugin {
  name = "gateway",
  -- the mounted tools' policy; a call forwards the client's cancel upstream
  defaults = { timeout = 120, cancel = "cooperative", grace = 2 },
  mount = mount,
}
