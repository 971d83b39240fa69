-- luamcp registry: the MCP registry's server.json (schema 2025-12-11) for
-- this server, from the configuration file's server_card = {...} and the
-- options below (src/cli_registry.c runs main). A bundle made by luamcp pack
-- is a package (registryType "mcpb", its download URL and SHA-256); a
-- server reached over HTTP is a remote (streamable-http).
local core = require "mcp.core"
local config = require "mcp.config"
local server_card = require "mcp.server_card"
local file = require "mcp.file"

local M = {}

-- The options: one row each, from which come the parser and the help.
local OPTIONS = {
  { "config", "FILE", "the server's configuration file: its server_card = {...} (see luamcp(1))" },
  { "mcpb", "FILE", "the bundle (luamcp pack's NAME.mcpb): its SHA-256 goes in the entry" },
  { "mcpb-url", "URL", "where clients download it (https://, e.g. a GitHub release asset)" },
  { "url", "URL", "a remote: the server's Streamable HTTP endpoint (default server_card.url)" },
  { "name", "NAME", "over server_card.name (reverse-DNS: io.github.USER/NAME)" },
  { "description", "TEXT", "over server_card.description (at most 100 characters)" },
  { "title", "TEXT", "over server_card.title" },
  { "version", "VERSION", "over server_card.version" },
  { "output", "FILE", "write there, not to stdout (also -o)" },
  { "help", nil, "print this and exit (also -h)" },
}

local function usage()
  local lines = {
    "usage: luamcp registry [--config FILE] [--mcpb FILE --mcpb-url URL] [--url URL] [-o FILE]",
    "",
    "Writes the MCP registry's server.json (https://static.modelcontextprotocol.io/schemas/2025-12-11/",
    "server.schema.json) for this server: its name, description, version, title, website and",
    "repository from the configuration file's server_card = {...} (or the options), a package for",
    "the bundle (--mcpb with --mcpb-url), a remote for --url. Publish it with mcp-publisher.",
    "",
  }
  for _, o in ipairs(OPTIONS) do
    local flag = "--" .. o[1] .. (o[2] and " " .. o[2] or "")
    lines[#lines + 1] = string.format("  %-20s %s", flag, o[3])
  end
  return table.concat(lines, "\n") .. "\n"
end

local function fail_usage(fmt, ...)
  io.stderr:write("luamcp registry: ", string.format(fmt, ...), "\n", usage())
  return 2
end

-- args -> {option = value} or nil, the exit status.
local function parse(args)
  local o, i = {}, 1
  while i <= #args do
    local a = args[i]
    if a == "-h" then a = "--help" elseif a == "-o" then a = "--output" end
    local row
    for _, r in ipairs(OPTIONS) do
      if a == "--" .. r[1] then row = r end
    end
    if not row then
      return nil, fail_usage(a:find("^%-") and "unknown option: %s" or "unexpected argument: %s", args[i])
    end
    if row[2] then
      if args[i + 1] == nil then return nil, fail_usage("%s needs a value", a) end
      if o[row[1]] ~= nil then return nil, fail_usage("%s given twice", a) end
      o[row[1]] = args[i + 1]
      i = i + 2
    else
      o[row[1]] = true
      i = i + 1
    end
  end
  return o
end

-- The bundle's SHA-256, hex; it must be a zip (an MCP Bundle is one).
local function bundle_sha256(path)
  local data, err = file.read(path)
  if not data then error("--mcpb " .. err, 0) end
  if data:sub(1, 4) ~= "PK\3\4" then
    error(string.format("--mcpb %s: not an MCP Bundle (a zip file; make one with luamcp pack)", path), 0)
  end
  return core.sha256(data)
end

local function build(o)
  local card = {}
  if o.config then card = config.read(o.config).server_card or {} end
  local raw = server_card.unchecked(card)
  for _, k in ipairs { "name", "description", "title", "version" } do
    if o[k] then raw[k] = o[k] end
  end
  -- the file's values were checked as it was read: what fails here is an option's
  card = server_card.check(raw, function(_, fmt, ...)
    error((string.format(fmt, ...):gsub("^server_card%.([%a_]+)", function(k)
      if o[k] then return "--" .. k end
    end)), 0)
  end)
  if (o.mcpb == nil) ~= (o["mcpb-url"] == nil) then
    error("--mcpb FILE and --mcpb-url URL go together (the file's SHA-256, and where clients get it)", 0)
  end
  local x = {}
  if o.mcpb then
    if not o["mcpb-url"]:find("^https://[^%s]+$") then error("--mcpb-url must be an https:// URL", 0) end
    x.mcpb_url, x.sha256 = o["mcpb-url"], bundle_sha256(o.mcpb)
  end
  x.remote = o.url or (not o.mcpb and card.url or nil)
  if x.remote and not x.remote:find("^https?://[^%s]+$") then error("--url must be an http:// or https:// URL", 0) end
  return server_card.server_json(card, x)
end

-- main{args...}: the exit status.
function M.main(args)
  local o, code = parse(args)
  if not o then return code end
  if o.help then
    io.stdout:write(usage())
    return 0
  end
  local ok, doc = pcall(build, o)
  if not ok then
    io.stderr:write("luamcp registry: ", tostring(doc), "\n")
    return 1
  end
  local text = require("mcp.cli").pretty(doc) .. "\n"
  if not o.output then
    io.stdout:write(text)
    return 0
  end
  local f, err = io.open(o.output, "w")
  if not f then
    io.stderr:write("luamcp registry: ", err, "\n")
    return 1
  end
  f:write(text)
  f:close()
  io.stderr:write(string.format("luamcp registry: wrote %s\n", o.output))
  return 0
end

return M
