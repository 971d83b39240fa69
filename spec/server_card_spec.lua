-- The server card (MCP Server Card draft, SEP-2127) at GET /mcp/server-card,
-- from the configuration file's server_card = {...}, and luamcp registry's
-- server.json; both validated with ajv against the published schemas carried
-- in spec/fixtures/schemas (spec/server_card/validate.mjs, Node 22 from the
-- test cache).
local H = require "spec.helper"
local HH = require "spec.http_helper"
local N = require "spec.node_helper"
local AH = require "spec.auth_helper"
local uv, cjson = H.uv, H.cjson

local SCHEMAS = H.fixtures .. "/schemas"
local CARD_TYPE = "application/mcp-server-card+json"

local CARD_CONF = [[
return {
  server_card = {
    name = "io.github.alice/weather",
    title = "Weather",
    description = "Forecasts for any city",
    version = "1.2.0",
    website_url = "https://alice.github.io/weather",
    repository = { url = "https://github.com/alice/weather", subfolder = "server" },@URL@
  },
}
]]

local tmp

local function write(name, text)
  local path = tmp .. "/" .. name
  H.write_file(path, text)
  return path
end

local function read(path) return (assert(H.read_file(path))) end

local function conf(url)
  return write("luamcp.conf", (CARD_CONF:gsub("@URL@", url and ("\n    url = %q,"):format(url) or "")))
end

-- One exchange on a fresh connection: method, path, headers (a map).
local function get(srv, method, path, headers)
  local c = HH.connect(srv)
  local r = c:exchange { method = method, path = path or "/mcp/server-card", headers = headers }
  c:close()
  return r
end

-- ajv's verdicts on docs (tables, or JSON text) against SCHEMA at ref.
local function validate(env, schema, ref, docs)
  local files = {}
  for i, d in ipairs(docs) do
    files[i] = write("doc" .. i .. ".json", type(d) == "string" and d or cjson.encode(d))
  end
  local rep = N.run(env, "validate.mjs", { SCHEMAS .. "/" .. schema, ref, table.unpack(files) })
  return rep.results, rep
end

-- A zip holding one stored file: an .mcpb as far as its bytes go (luamcp
-- pack makes real ones; the entry needs only the file and its SHA-256).
local function zip(name, content)
  local function crc32(s)
    local c = 0xffffffff
    for i = 1, #s do
      c = c ~ s:byte(i)
      for _ = 1, 8 do c = (c >> 1) ~ (0xedb88320 & -(c & 1)) end
    end
    return c ~ 0xffffffff
  end
  local crc, n = crc32(content), #content
  local head = string.pack("<I2I2I2I2I2I4I4I4I2I2", 20, 0, 0, 0, 0, crc, n, n, #name, 0)
  local local_file = "PK\3\4" .. head .. name .. content
  local central = "PK\1\2" .. string.pack("<I2", 20) .. head .. string.pack("<I2I2I2I4I4", 0, 0, 0, 0, 0) .. name
  local eocd = "PK\5\6" .. string.pack("<I2I2I2I2I4I4I2", 0, 0, 1, 1, #central, #local_file, 0)
  return local_file .. central .. eocd
end

-- luamcp registry ARGS...: exit code, stdout, stderr.
local function registry(args)
  local q = function(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
  local cmd = { "timeout 20", q(H.binary()), "registry" }
  for _, a in ipairs(args) do cmd[#cmd + 1] = q(a) end
  local _, _, code = os.execute(table.concat(cmd, " ") .. " </dev/null >" .. tmp .. "/out 2>" .. tmp .. "/err")
  return code, read(tmp .. "/out"), read(tmp .. "/err")
end

describe("the server card", function()
  local env

  setup(function() env = N.prepare("server_card") end)
  teardown(function() N.remove(env) end)
  before_each(function() tmp = H.tmpdir() end)
  after_each(function()
    HH.cleanup()
    H.cleanup()
    os.execute("rm -rf '" .. tmp .. "'")
  end)

  it("is off unless the configuration file has server_card: 404", function()
    local srv = HH.start {}
    local r = get(srv, "GET")
    assert.are.equal(404, r.status)
    assert.are_not.equal(CARD_TYPE, r:header("content-type"))
  end)

  it("is served as the draft asks: its media type, CORS for any origin, cache headers, an ETag", function()
    local srv = HH.start { args = { "--config", conf() } }
    local r = get(srv, "GET", nil, { Origin = "https://elsewhere.example", Accept = CARD_TYPE })
    assert.are.equal(200, r.status, r:describe())
    assert.are.equal(CARD_TYPE, r:header("content-type"))
    assert.are.equal("*", r:header("access-control-allow-origin"))
    assert.are.equal("GET", r:header("access-control-allow-methods"))
    assert.are.equal("Content-Type", r:header("access-control-allow-headers"))
    assert.are.equal("public, max-age=3600", r:header("cache-control"))
    assert.matches('^"%x+"$', r:header("etag"))
    local card = cjson.decode(r.body)
    assert.are.equal("https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json", card["$schema"])
    assert.are.equal("io.github.alice/weather", card.name)
    assert.are.equal("Weather", card.title)
    assert.are.equal("1.2.0", card.version)
    assert.are.equal("Forecasts for any city", card.description)
    assert.are.equal("https://alice.github.io/weather", card.websiteUrl)
    assert.are.same({ url = "https://github.com/alice/weather", source = "github", subfolder = "server" },
                    card.repository)
    assert.are.equal(1, #card.remotes)
    assert.are.equal("streamable-http", card.remotes[1].type)
    assert.are.equal("http://127.0.0.1:" .. srv.port .. "/mcp", card.remotes[1].url)
    -- the same foreign Origin is refused at the MCP endpoint: only the card is public
    assert.are.equal(403, get(srv, "POST", "/mcp", { Origin = "https://elsewhere.example" }).status)
  end)

  it("names the protocol versions server/discover names, and each of them is served", function()
    local srv = HH.start { args = { "--config", conf() } }
    local card = cjson.decode(get(srv, "GET").body)
    local _, resp = HH.rpc_rev2026(srv, { jsonrpc = "2.0", id = 1, method = "server/discover",
                                          params = HH.params_rev2026() })
    assert.are.same(resp.result.supportedVersions, card.remotes[1].supportedProtocolVersions)
    for _, v in ipairs(card.remotes[1].supportedProtocolVersions) do
      if v ~= HH.REV2026 then assert.are.equal(v, HH.initialize(srv, v).version) end
    end
  end)

  it("answers If-None-Match with 304, HEAD without a body, OPTIONS as a preflight, POST with 405", function()
    local srv = HH.start { args = { "--config", conf() } }
    local r = get(srv, "GET")
    local etag = r:header("etag")
    local nm = get(srv, "GET", nil, { ["If-None-Match"] = etag })
    assert.are.equal(304, nm.status)
    assert.are.equal("", nm.body)
    assert.are.equal(etag, nm:header("etag"))
    assert.is_nil(nm:header("content-length"))
    assert.are.equal(304, get(srv, "GET", nil, { ["If-None-Match"] = '"other", W/' .. etag }).status)
    assert.are.equal(200, get(srv, "GET", nil, { ["If-None-Match"] = '"other"' }).status)
    local head = get(srv, "HEAD")
    assert.are.equal(200, head.status)
    assert.are.equal("", head.body)
    assert.are.equal(tostring(#r.body), head:header("content-length"))
    local pre = get(srv, "OPTIONS", nil, { Origin = "https://elsewhere.example",
                                           ["Access-Control-Request-Method"] = "GET" })
    assert.are.equal(204, pre.status)
    assert.are.equal("*", pre:header("access-control-allow-origin"))
    assert.are.equal("GET", pre:header("access-control-allow-methods"))
    local post = get(srv, "POST")
    assert.are.equal(405, post.status)
    assert.are.equal("GET, HEAD, OPTIONS", post:header("allow"))
  end)

  it("needs no token where the MCP endpoint does (--token)", function()
    local srv = HH.start { args = { "--config", conf(), "--token", "s3cret" } }
    assert.are.equal(200, get(srv, "GET").status)
    assert.are.equal(401, get(srv, "POST", "/mcp").status)
  end)

  it("validates against the draft's schema; a broken card does not", function()
    local srv = HH.start { args = { "--config", conf("https://mcp.example.com/mcp") } }
    local body = get(srv, "GET").body
    local card = cjson.decode(body)
    assert.are.equal("https://mcp.example.com/mcp", card.remotes[1].url)
    local broken_name = cjson.decode(body); broken_name.name = "weather"
    local with_packages = cjson.decode(body); with_packages.packages = {}
    local old_schema = cjson.decode(body)
    old_schema["$schema"] = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
    local results, rep = validate(env, "server-card.schema.json", "#/$defs/ServerCard",
                                  { body, broken_name, with_packages, old_schema })
    assert.are.equal("2020-12", rep.draft)
    assert.is_true(results[1].valid, table.concat(results[1].errors, "; "))
    for i = 2, 4 do assert.is_false(results[i].valid, "document " .. i .. " passed") end
  end)

  it("changes with the configuration file under --watch, and its ETag with it", function()
    local path = conf()
    local srv = HH.start { args = { "--config", path, "--watch" } }
    local before = get(srv, "GET")
    local text = read(path):gsub('version = "1.2.0"', 'version = "1.3.0"')
    write("luamcp.conf", text)
    assert(H.poll_until(function()
      return cjson.decode(get(srv, "GET").body).version == "1.3.0"
    end, 10), "the card kept its old version")
    local after = get(srv, "GET")
    assert.are_not.equal(before:header("etag"), after:header("etag"))
    assert.are.equal(200, get(srv, "GET", nil, { ["If-None-Match"] = before:header("etag") }).status)
  end)

  it("refuses a bad server_card at its line, before serving", function()
    write("luamcp.conf", 'return {\n  server_card = {\n    name = "weather",\n    description = "x",\n  },\n}\n')
    local q = function(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
    local _, _, code = os.execute("timeout 20 " .. q(H.binary()) .. " --config " .. q(tmp .. "/luamcp.conf") ..
                                  " --http 127.0.0.1:0 </dev/null >/dev/null 2>" .. tmp .. "/err")
    assert.are.equal(2, code)
    assert.matches("luamcp.conf:3: server_card.name must be reverse-DNS", read(tmp .. "/err"), 1, true)
    write("luamcp.conf", 'return { server_card = { name = "a.b/c", description = env("HOME") } }\n')
    _, _, code = os.execute("timeout 20 " .. q(H.binary()) .. " --config " .. q(tmp .. "/luamcp.conf") ..
                            " --http 127.0.0.1:0 </dev/null >/dev/null 2>" .. tmp .. "/err")
    assert.are.equal(2, code)
    assert.matches("server_card.description must be a string (got a secret)", read(tmp .. "/err"), 1, true)
  end)
end)

describe("the server card behind OAuth", function()
  local as, env, venv

  setup(function()
    as, env = AH.auth_server()
    venv = N.prepare("server_card")
  end)
  teardown(function()
    AH.stop(as, env)
    N.remove(venv)
  end)
  before_each(function() tmp = H.tmpdir() end)
  after_each(function()
    HH.cleanup()
    H.cleanup()
    os.execute("rm -rf '" .. tmp .. "'")
  end)

  it("is reachable without a token, as the discovery documents are, and names the audience", function()
    local srv = AH.start(as, { "--config", conf() })
    local r = get(srv, "GET")
    assert.are.equal(200, r.status, r:describe())
    local card = cjson.decode(r.body)
    assert.are.equal(srv.aud, card.remotes[1].url)
    assert.are.equal(401, get(srv, "POST", "/mcp").status)
    local results = validate(venv, "server-card.schema.json", "#/$defs/ServerCard", { r.body })
    assert.is_true(results[1].valid, table.concat(results[1].errors, "; "))
  end)
end)

describe("luamcp registry", function()
  local env

  setup(function() env = N.prepare("server_card") end)
  teardown(function() N.remove(env) end)
  before_each(function() tmp = H.tmpdir() end)
  after_each(function() os.execute("rm -rf '" .. tmp .. "'") end)

  local URL = "https://github.com/alice/weather/releases/download/v1.2.0/weather.mcpb"

  it("writes a server.json with the bundle and a remote that the registry's schema accepts", function()
    local bundle = write("weather.mcpb", zip("manifest.json", '{"manifest_version":"0.3"}'))
    local code, out, err = registry { "--config", conf(), "--mcpb", bundle, "--mcpb-url", URL,
                                      "--url", "https://mcp.example.com/mcp" }
    assert.are.equal(0, code, err)
    local doc = cjson.decode(out)
    assert.are.equal("https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json", doc["$schema"])
    assert.are.equal("io.github.alice/weather", doc.name)
    assert.are.equal("1.2.0", doc.version)
    local sum = io.popen("sha256sum '" .. bundle .. "'"):read("a"):match("^%x+")
    assert.are.same({ registryType = "mcpb", identifier = URL, version = "1.2.0", fileSha256 = sum,
                      transport = { type = "stdio" } }, doc.packages[1])
    assert.are.same({ { type = "streamable-http", url = "https://mcp.example.com/mcp" } }, doc.remotes)

    -- -o FILE writes the same; the card's url is the remote when no bundle is given
    code, _, err = registry { "--config", conf("https://mcp.example.com/mcp"), "-o", tmp .. "/server.json" }
    assert.are.equal(0, code, err)
    local remote_only = read(tmp .. "/server.json")
    assert.are.same({ { type = "streamable-http", url = "https://mcp.example.com/mcp" } },
                    cjson.decode(remote_only).remotes)

    local bad_sha = cjson.decode(out); bad_sha.packages[1].fileSha256 = "not-a-digest"
    local no_version = cjson.decode(out); no_version.version = nil
    local results, rep = validate(env, "server.schema.json", "#", { out, remote_only, bad_sha, no_version })
    assert.are.equal("draft-07", rep.draft)
    assert.is_true(results[1].valid, table.concat(results[1].errors, "; "))
    assert.is_true(results[2].valid, table.concat(results[2].errors, "; "))
    assert.is_false(results[3].valid, "a bad fileSha256 passed")
    assert.is_false(results[4].valid, "a server.json without a version passed")
  end)

  it("takes the options over the file, and refuses what the registry would", function()
    local bundle = write("weather.mcpb", zip("manifest.json", "{}"))
    local code, out, err = registry { "--name", "io.github.bob/w", "--description", "d", "--version", "2.0.0",
                                      "--url", "https://h.example/mcp" }
    assert.are.equal(0, code, err)
    assert.are.equal("io.github.bob/w", cjson.decode(out).name)
    code, _, err = registry { "--config", conf(), "--name", "weather", "--url", "https://h.example/mcp" }
    assert.are.equal(1, code)
    assert.matches("--name must be reverse-DNS", err, 1, true)
    code, _, err = registry { "--config", conf(), "--mcpb", bundle }
    assert.are.equal(1, code)
    assert.matches("--mcpb FILE and --mcpb-url URL go together", err, 1, true)
    code, _, err = registry { "--config", conf(), "--mcpb", tmp .. "/luamcp.conf", "--mcpb-url", URL }
    assert.are.equal(1, code)
    assert.matches("not an MCP Bundle", err, 1, true)
    code, _, err = registry { "--config", conf() }
    assert.are.equal(1, code)
    assert.matches("nothing to install", err, 1, true)
    code, _, err = registry { "--name", "io.github.bob/w", "--description", "d", "--url", "https://h/mcp" }
    assert.are.equal(1, code)
    assert.matches("a version is needed", err, 1, true)
    code, _, err = registry { "--bogus" }
    assert.are.equal(2, code)
    assert.matches("unknown option: --bogus", err, 1, true)
  end)
end)
