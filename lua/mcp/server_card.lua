-- The configuration file's server_card = {...}: who this server is, for the
-- server card served at /mcp/server-card (src/net/server_card.c; the MCP
-- Server Card draft, SEP-2127) and for `luamcp registry`'s server.json (the
-- MCP registry's schema 2025-12-11). The limits are the two schemas' own:
-- name reverse-DNS with one "/", description and title 1 to 100 characters,
-- version one version (not a range), URLs http(s).
--
--   server_card = {
--     name = "io.github.alice/weather",       -- required
--     description = "Weather forecasts",       -- required
--     version = "1.2.0",                       -- default: luamcp's own (the card); required by registry
--     title = "Weather",
--     website_url = "https://alice.github.io/weather",
--     repository = { url = "https://github.com/alice/weather", source = "github", subfolder =, id = },
--     url = "https://mcp.example.com/mcp",     -- the card's remote (default: --auth-audience, else --http)
--   }
local secret = require "mcp.secret"

local M = {}

M.REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

local KEYS = { "description", "name", "repository", "title", "url", "version", "website_url" }
local REPO_KEYS = { "id", "source", "subfolder", "url" }

local function known(list, k)
  for _, x in ipairs(list) do if x == k then return true end end
  return false
end

local function kind_of(v)
  if secret.is(v) then return "a secret" end
  return type(v)
end

local function is_url(s) return s:find("^https?://[^%s]+$") ~= nil end

-- A version range, or "latest": what the schemas reject in a version.
local function is_range(v)
  return v == "latest" or v:find("[%^~<>=*%s]") ~= nil or v:find("^[xX]%.") ~= nil
      or v:find("%.[xX]%.") ~= nil or v:find("%.[xX]$") ~= nil
end

-- Where a repository is hosted, from its URL: the registry's names.
local function source_of(url)
  local host = url:match("^https?://([^/:]+)")
  if host == "github.com" then return "github" end
  if host == "gitlab.com" then return "gitlab" end
end

-- check(v, fail): v checked, as the draft names its fields (websiteUrl);
-- fail(path, fmt, ...) raises at the key's line. The card is public: a
-- secret in it is an error, never shown.
function M.check(v, fail)
  if type(v) ~= "table" or secret.is(v) then
    fail("server_card", "server_card must be a table {name =, description =, ...} (got %s)", kind_of(v))
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if not known(KEYS, k) then
      fail("server_card." .. k, "server_card.%s: unknown key (%s)", k, table.concat(KEYS, ", "))
    end
  end
  local function text(k, x, lo, hi)
    local sub = "server_card." .. k
    if type(x) ~= "string" then fail(sub, "%s must be a string (got %s)", sub, kind_of(x)) end
    local n = utf8.len(x) or #x
    if n < lo or n > hi then fail(sub, "%s must be %d to %d characters (it has %d)", sub, lo, hi, n) end
    return x
  end
  local out = {}
  if v.name == nil then fail("server_card", "server_card.name is required (reverse-DNS: io.github.USER/NAME)") end
  out.name = text("name", v.name, 3, 200)
  if not out.name:find("^[%w%.%-]+/[%w%._%-]+$") then
    fail("server_card.name", "server_card.name must be reverse-DNS with one /: io.github.USER/NAME (got %q)",
         out.name)
  end
  if v.description == nil then fail("server_card", "server_card.description is required") end
  out.description = text("description", v.description, 1, 100)
  if v.title ~= nil then out.title = text("title", v.title, 1, 100) end
  if v.version ~= nil then
    out.version = text("version", v.version, 1, 255)
    if is_range(out.version) then
      fail("server_card.version", "server_card.version must be one version, not a range (got %q)", out.version)
    end
  end
  for _, k in ipairs { "website_url", "url" } do
    if v[k] ~= nil and not is_url(text(k, v[k], 1, 2048)) then
      fail("server_card." .. k, "server_card.%s must be an http:// or https:// URL", k)
    end
  end
  out.websiteUrl, out.url = v.website_url, v.url
  local r = v.repository
  if r ~= nil then
    if type(r) ~= "table" or secret.is(r) then
      fail("server_card.repository", "server_card.repository must be a table {url =, source =} (got %s)",
           kind_of(r))
    end
    for k in pairs(r) do
      if not known(REPO_KEYS, k) then
        fail("server_card.repository", "server_card.repository.%s: unknown key (%s)", tostring(k),
             table.concat(REPO_KEYS, ", "))
      end
    end
    local function rtext(k) return text("repository." .. k, r[k], 1, 2048) end
    if r.url == nil then fail("server_card.repository", "server_card.repository.url is required") end
    local repo = { url = rtext("url") }
    if not is_url(repo.url) then
      fail("server_card.repository.url", "server_card.repository.url must be an http:// or https:// URL")
    end
    repo.source = r.source ~= nil and rtext("source") or source_of(repo.url)
    if not repo.source then
      fail("server_card.repository", "server_card.repository.source is required for a repository "
        .. "not on github.com or gitlab.com (e.g. source = \"gitea\")")
    end
    if r.subfolder ~= nil then
      repo.subfolder = rtext("subfolder")
      if repo.subfolder:find("^/") or ("/" .. repo.subfolder .. "/"):find("/%.%.?/") then
        fail("server_card.repository.subfolder", "server_card.repository.subfolder must be a clean relative path")
      end
    end
    if r.id ~= nil then repo.id = rtext("id") end
    out.repository = repo
  end
  return out
end

-- The checked card back in the configuration file's spelling (to check it
-- again with a command line's values over it).
function M.unchecked(card)
  return { name = card.name, description = card.description, title = card.title, version = card.version,
           website_url = card.websiteUrl, repository = card.repository, url = card.url }
end

-- server_json(card, o): the registry's server.json, a table; card as check
-- returned it, o = {mcpb_url=, sha256=, remote=}. Raises on what the
-- registry would refuse.
function M.server_json(card, o)
  local doc = { ["$schema"] = M.REGISTRY_SCHEMA }
  for _, k in ipairs { "name", "title", "description", "version", "websiteUrl", "repository" } do
    doc[k] = card[k]
  end
  if not doc.version then
    error("a version is needed: server_card.version in the configuration file, or --version", 0)
  end
  if o.mcpb_url then
    doc.packages = { { registryType = "mcpb", identifier = o.mcpb_url, version = doc.version,
                       fileSha256 = o.sha256, transport = { type = "stdio" } } }
  end
  if o.remote then doc.remotes = { { type = "streamable-http", url = o.remote } } end
  if not doc.packages and not doc.remotes then
    error("nothing to install: give --mcpb FILE --mcpb-url URL (a bundle), --url URL (a remote), or both", 0)
  end
  return doc
end

return M
