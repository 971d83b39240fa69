-- The clients luamcp install knows: where each keeps its MCP servers, the
-- entry it expects for a local (stdio) and a remote (Streamable HTTP)
-- server, and its own CLI where it has one (cli_install.lua chooses and
-- applies). An entry e is {command =, args = {...}, env = {{K, V}...}} or
-- {url =, bearer_env =}.
local J = require "mcp.json_splice"
local T = require "mcp.toml_splice"

local obj = J.object

local M = {}

local function home() return os.getenv("HOME") or "." end

-- The per-user application directory of Claude Desktop and VS Code.
local function app_dir(sys, name)
  if sys == "Darwin" then return home() .. "/Library/Application Support/" .. name end
  if sys:match("^Windows") then return (os.getenv("APPDATA") or home()) .. "/" .. name end
  local xdg = os.getenv("XDG_CONFIG_HOME")
  return (xdg and xdg ~= "" and xdg or home() .. "/.config") .. "/" .. name
end

local function env_object(env)
  local o = obj {}
  for _, kv in ipairs(env) do o[#o + 1] = { kv[1], kv[2] } end
  return o
end

-- {command, args, env}, with "type": "stdio" first when typed.
local function stdio_entry(e, typed)
  local o = obj {}
  if typed then o[#o + 1] = { "type", "stdio" } end
  o[#o + 1] = { "command", e.command }
  o[#o + 1] = { "args", e.args }
  if #e.env > 0 then o[#o + 1] = { "env", env_object(e.env) } end
  return o
end

-- {URLKEY: url, headers} with the type first when given; the bearer token
-- as the client writes a variable (form: "${%s}" or "${env:%s}").
local function remote_entry(e, urlkey, form, typ)
  local o = obj {}
  if typ then o[#o + 1] = { "type", typ } end
  o[#o + 1] = { urlkey, e.url }
  if e.bearer_env then
    o[#o + 1] = { "headers", obj { { "Authorization", "Bearer " .. form:format(e.bearer_env) } } }
  end
  return o
end

-- A JSON client: outer is the object of servers; its entry for e.
local function json_client(c)
  c.format = "json"
  c.outer = c.outer or "mcpServers"
  return c
end

-- `claude mcp add` and `gemini mcp add` of a remote server: argv (the
-- command's start) then --transport http NAME URL [--header ...].
local function remote_argv(argv, name, e)
  for _, a in ipairs({ "--transport", "http", name, e.url }) do argv[#argv + 1] = a end
  if e.bearer_env then
    argv[#argv + 1] = "--header"
    argv[#argv + 1] = "Authorization: Bearer ${" .. e.bearer_env .. "}"
  end
  return argv
end

M["claude-code"] = json_client {
  scopes = { project = function() return ".mcp.json" end,
             user = function() return home() .. "/.claude.json" end },
  default_scope = "project",
  entry = function(e)
    if e.url then return remote_entry(e, "url", "${%s}", "http") end
    return stdio_entry(e, true)
  end,
  cli = {
    bin = "claude",
    -- claude mcp add refuses a name it has: the old entry goes first
    remove_first = true,
    add = function(name, e, scope)
      local argv = { "claude", "mcp", "add", "--scope", scope }
      if e.url then return remote_argv(argv, name, e) end
      argv[#argv + 1] = name
      for _, kv in ipairs(e.env) do argv[#argv + 1] = "-e"; argv[#argv + 1] = kv[1] .. "=" .. kv[2] end
      argv[#argv + 1] = "--"
      argv[#argv + 1] = e.command
      for _, a in ipairs(e.args) do argv[#argv + 1] = a end
      return argv
    end,
    remove = function(name, scope) return { "claude", "mcp", "remove", "--scope", scope, name } end,
  },
}

M["claude-desktop"] = json_client {
  scopes = { user = function(sys) return app_dir(sys, "Claude") .. "/claude_desktop_config.json" end },
  default_scope = "user",
  entry = function(e)
    if e.url then
      return nil, "Claude Desktop's file takes no remote server: add it in Settings > Connectors"
    end
    return stdio_entry(e)
  end,
}

M.cursor = json_client {
  scopes = { project = function() return ".cursor/mcp.json" end,
             user = function() return home() .. "/.cursor/mcp.json" end },
  default_scope = "project",
  entry = function(e)
    if e.url then return remote_entry(e, "url", "${env:%s}") end
    return stdio_entry(e)
  end,
}

M.vscode = json_client {
  outer = "servers",
  scopes = { project = function() return ".vscode/mcp.json" end,
             user = function(sys) return app_dir(sys, "Code") .. "/User/mcp.json" end },
  default_scope = "project",
  entry = function(e)
    if e.url then return remote_entry(e, "url", "${env:%s}", "http") end
    return stdio_entry(e, true)
  end,
}

M.windsurf = json_client {
  scopes = { user = function() return home() .. "/.codeium/windsurf/mcp_config.json" end },
  default_scope = "user",
  entry = function(e)
    if e.url then return remote_entry(e, "serverUrl", "${env:%s}") end
    return stdio_entry(e)
  end,
}

M["gemini-cli"] = json_client {
  scopes = { project = function() return ".gemini/settings.json" end,
             user = function() return home() .. "/.gemini/settings.json" end },
  default_scope = "project",
  entry = function(e)
    if e.url then return remote_entry(e, "httpUrl", "${%s}") end
    return stdio_entry(e)
  end,
  cli = {
    bin = "gemini",
    add = function(name, e, scope)
      local argv = { "gemini", "mcp", "add", "--scope", scope }
      if e.url then return remote_argv(argv, name, e) end
      argv[#argv + 1] = name
      argv[#argv + 1] = e.command
      for _, kv in ipairs(e.env) do argv[#argv + 1] = "-e"; argv[#argv + 1] = kv[1] .. "=" .. kv[2] end
      argv[#argv + 1] = "--"                   -- the server's flags are not gemini's
      for _, a in ipairs(e.args) do argv[#argv + 1] = a end
      return argv
    end,
    remove = function(name, scope) return { "gemini", "mcp", "remove", "--scope", scope, name } end,
  },
}

-- Codex: a TOML table per server.
local function toml_list(list)
  local q = {}
  for i, s in ipairs(list) do q[i] = T.quote(s) end
  return "[" .. table.concat(q, ", ") .. "]"
end

M.codex = {
  format = "toml",
  scopes = { user = function()
    local ch = os.getenv("CODEX_HOME")
    return (ch and ch ~= "" and ch or home() .. "/.codex") .. "/config.toml"
  end },
  default_scope = "user",
  block = function(name, e)
    local head = "mcp_servers." .. T.key(name)
    local lines = { "[" .. head .. "]" }
    if e.url then
      lines[#lines + 1] = "url = " .. T.quote(e.url)
      if e.bearer_env then lines[#lines + 1] = "bearer_token_env_var = " .. T.quote(e.bearer_env) end
      return table.concat(lines, "\n")
    end
    lines[#lines + 1] = "command = " .. T.quote(e.command)
    lines[#lines + 1] = "args = " .. toml_list(e.args)
    if #e.env > 0 then
      lines[#lines + 1] = ""
      lines[#lines + 1] = "[" .. head .. ".env]"
      for _, kv in ipairs(e.env) do lines[#lines + 1] = T.key(kv[1]) .. " = " .. T.quote(kv[2]) end
    end
    return table.concat(lines, "\n")
  end,
  cli = {
    bin = "codex",
    remove_first = true,
    add = function(name, e)
      local argv = { "codex", "mcp", "add", name }
      if e.url then
        argv[#argv + 1] = "--url"
        argv[#argv + 1] = e.url
        if e.bearer_env then
          argv[#argv + 1] = "--bearer-token-env-var"
          argv[#argv + 1] = e.bearer_env
        end
        return argv
      end
      for _, kv in ipairs(e.env) do argv[#argv + 1] = "--env"; argv[#argv + 1] = kv[1] .. "=" .. kv[2] end
      argv[#argv + 1] = "--"
      argv[#argv + 1] = e.command
      for _, a in ipairs(e.args) do argv[#argv + 1] = a end
      return argv
    end,
    remove = function(name) return { "codex", "mcp", "remove", name } end,
  },
}

-- mcp-json: the entry printed, as most clients take it under mcpServers.
M["mcp-json"] = {
  format = "print",
  scopes = {},
  entry = function(e)
    if e.url then return remote_entry(e, "url", "${%s}", "http") end
    return stdio_entry(e)
  end,
}

M.names = { "claude-code", "claude-desktop", "cursor", "vscode", "windsurf", "codex", "gemini-cli", "mcp-json" }

return M
