-- The plugin author's command line (src/cli.c runs it): luamcp list, check,
-- new (cli_new.lua writes its files), pack (cli_pack.lua), install and
-- uninstall (cli_install.lua), and the request and the output of luamcp
-- call. Each command takes the options table cli.c builds ({dirs = {...},
-- json =, name =, arguments =, dir =, spec_dir =, config =, pack =}) and
-- returns the exit code and the text for stdout; messages for stderr are
-- written directly.
local core = require "mcp.core"
local load_errors = require "mcp.load_errors"
local lex = require "mcp.lex"
local apps = require "mcp.apps"

local M = {}
local array_mt, null = core.array_mt, core.null

local function say(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

---------------------------------------------------------------------------
-- Pretty JSON: two-space indents, object keys sorted, scalars as core.encode
-- writes them (exact integers, shortest floats).

local function is_array(v) return getmetatable(v) == array_mt end

local function pretty(v, indent, out)
  if type(v) ~= "table" then
    out[#out + 1] = v == null and "null" or (core.encode(v) or core.encode(tostring(v)))
    return
  end
  local inner = indent .. "  "
  if is_array(v) or (#v > 0 and next(v, #v) == nil) then
    if #v == 0 then out[#out + 1] = "[]"; return end
    out[#out + 1] = "[\n"
    for i, item in ipairs(v) do
      out[#out + 1] = inner
      pretty(item, inner, out)
      out[#out + 1] = i < #v and ",\n" or "\n"
    end
    out[#out + 1] = indent .. "]"
    return
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  if #keys == 0 then out[#out + 1] = "{}"; return end
  table.sort(keys)
  out[#out + 1] = "{\n"
  for i, k in ipairs(keys) do
    local item = v[k]
    if item == nil then item = v[tonumber(k)] end
    out[#out + 1] = inner .. core.encode(k) .. ": "
    pretty(item, inner, out)
    out[#out + 1] = i < #keys and ",\n" or "\n"
  end
  out[#out + 1] = indent .. "}"
end

function M.pretty(v)
  local out = {}
  pretty(v, "", out)
  return table.concat(out)
end

---------------------------------------------------------------------------
-- list

-- The server with the plugins of dirs loaded (broken ones are logged and skipped).
function M.load(opts)
  local server = require "mcp.server"
  server.config_file = opts.config
  if opts.cmd == "pack" then require("mcp.cli_pack").watch_config() end
  server.load(opts.dirs)
  if opts.cmd == "pack" then
    server.methods["luamcp/pack"] = function()
      server.refresh_mounts()
      local ok, code, text = pcall(require("mcp.cli_pack").pack, opts, server, M)
      if not ok then
        say("luamcp: pack: %s", tostring(code))
        return { code = 1, text = "" }
      end
      return { code = code, text = text }
    end
  end
  if opts.cmd == "list" then
    -- luamcp list runs as this request (cli.c), so that the lists of mounts
    -- (lua/mcp/mount.lua) can be fetched: that waits, inside a call
    server.methods["luamcp/list"] = function()
      server.refresh_mounts()
      local code, text = M.list(opts, server)
      return { code = code, text = text }
    end
  end
  return server
end

local function seconds(s) return s == 0 and "none" or string.format("%gs", s) end

local function policy_of(tool)
  local d = tool.plugin.defaults or {}
  return tool.cancel or d.cancel or "cooperative",
         tool.timeout or d.timeout or core.config.timeout,
         tool.grace or d.grace or core.config.grace
end

local function type_of(s)
  if type(s) ~= "table" then return "any" end
  local t = s.type
  if type(t) == "table" then
    local names = {}
    for i, n in ipairs(t) do names[i] = tostring(n) end
    t = table.concat(names, "|")
  end
  if t == "array" and type(s.items) == "table" and s.items.type ~= nil then
    return "array of " .. type_of(s.items)
  end
  if t == nil then t = s.enum and "enum" or s.const ~= nil and "const" or "any" end
  return tostring(t)
end

local function scalar(v)
  if type(v) == "string" then return v end
  return core.encode(v) or tostring(v)
end

-- What else the schema says, in brackets: [one of: a, b; 1..10; default: 3].
local function constraints(s)
  local parts = {}
  if type(s.enum) == "table" then
    local vals = {}
    for i, v in ipairs(s.enum) do vals[i] = scalar(v) end
    parts[#parts + 1] = "one of: " .. table.concat(vals, ", ")
  end
  if s.const ~= nil then parts[#parts + 1] = "const: " .. scalar(s.const) end
  local lo, hi = s.minimum or s.exclusiveMinimum, s.maximum or s.exclusiveMaximum
  if lo or hi then
    parts[#parts + 1] = (lo and scalar(lo) or "") .. ".." .. (hi and scalar(hi) or "")
  end
  if s.minLength or s.maxLength then
    parts[#parts + 1] = "length " .. (s.minLength or 0) .. ".." .. (s.maxLength or "")
  end
  if s.minItems or s.maxItems then
    parts[#parts + 1] = "items " .. (s.minItems or 0) .. ".." .. (s.maxItems or "")
  end
  if s.default ~= nil then parts[#parts + 1] = "default: " .. scalar(s.default) end
  if type(s["x-mcp-header"]) == "string" then parts[#parts + 1] = "header: Mcp-Param-" .. s["x-mcp-header"] end
  if #parts == 0 then return "" end
  return " [" .. table.concat(parts, "; ") .. "]"
end

-- The properties of an object schema, required ones first (in the order of
-- required), then the others by name; nested objects as prefix.name.
local function schema_lines(s, prefix, indent, lines)
  if type(s) ~= "table" or type(s.properties) ~= "table" then return end
  local req, order, seen = {}, {}, {}
  if type(s.required) == "table" then
    for _, name in ipairs(s.required) do
      req[name] = true
      if s.properties[name] ~= nil and not seen[name] then
        order[#order + 1] = name
        seen[name] = true
      end
    end
  end
  local rest = {}
  for name in pairs(s.properties) do
    if not seen[name] then rest[#rest + 1] = tostring(name) end
  end
  table.sort(rest)
  for _, name in ipairs(rest) do order[#order + 1] = name end
  for _, name in ipairs(order) do
    local p = s.properties[name]
    local desc = type(p) == "table" and type(p.description) == "string" and p.description or nil
    lines[#lines + 1] = string.format("%s%s%s: %s%s%s%s", indent, prefix, name, type_of(p),
      req[name] and " (required)" or "", desc and " - " .. desc or "",
      type(p) == "table" and constraints(p) or "")
    if type(p) == "table" then
      schema_lines(p, prefix .. name .. ".", indent, lines)
      if type(p.items) == "table" then schema_lines(p.items, prefix .. name .. "[].", indent, lines) end
    end
  end
end

local function heading(lines, title, n)
  if #lines > 0 then lines[#lines + 1] = "" end
  lines[#lines + 1] = string.format("%s (%d)", title, n)
end

local function entry(lines, name, title, description, plugin)
  lines[#lines + 1] = ""
  lines[#lines + 1] = title and string.format("%s (%s)", name, title) or name
  if description then
    for l in tostring(description):gmatch("[^\n]+") do lines[#lines + 1] = "  " .. l end
  end
  lines[#lines + 1] = string.format("  plugin: %s (%s%s)", plugin.name, plugin.file or "?",
                                    plugin.sandboxed and ", sandboxed" or "")
end

local raw_mt = getmetatable(core.json_raw(""))

-- Every page of a list method, as one list.
function M.all_pages(server, method, field)
  local fn, items, cursor = server.methods[method], {}, nil
  if not fn then return setmetatable({}, array_mt) end
  repeat
    local res = fn({ cursor = cursor })
    for _, item in ipairs(res[field]) do
      -- an entry the server keeps encoded (tools/list beside a UI-only tool) is read as a table
      if getmetatable(item) == raw_mt then item = assert(core.decode(item[1])) end
      items[#items + 1] = item
    end
    cursor = res.nextCursor
  until cursor == nil
  return setmetatable(items, array_mt)
end

function M.list(opts, server)
  server = server or M.load(opts)
  if opts.json then
    return 0, M.pretty {
      tools = M.all_pages(server, "tools/list", "tools"),
      resources = M.all_pages(server, "resources/list", "resources"),
      resourceTemplates = M.all_pages(server, "resources/templates/list", "resourceTemplates"),
      prompts = M.all_pages(server, "prompts/list", "prompts"),
    } .. "\n"
  end
  local reg, lines = server.list(), {}
  if #reg.tools > 0 then
    heading(lines, "Tools", #reg.tools)
    for _, t in ipairs(reg.tools) do
      entry(lines, t.name, t.title, t.description, t.plugin)
      local cancel, timeout, grace = policy_of(t)
      lines[#lines + 1] = string.format("  policy: timeout %s, cancel %s, grace %s", seconds(timeout),
                                        cancel, seconds(grace))
      local view = apps.view_of(t)              -- MCP Apps
      if view or apps.app_only(t) then
        lines[#lines + 1] = "  app: " .. (view or "no view") .. (apps.app_only(t) and " (only a view calls it)" or "")
      end
      local input = {}
      schema_lines(t.inputSchema, "", "    ", input)
      lines[#lines + 1] = #input > 0 and "  input:" or "  input: none"
      for _, l in ipairs(input) do lines[#lines + 1] = l end
      if t.outputSchema then
        local output = {}
        schema_lines(t.outputSchema, "", "    ", output)
        lines[#lines + 1] = "  output: " .. type_of(t.outputSchema)
        for _, l in ipairs(output) do lines[#lines + 1] = l end
      end
    end
  end
  if #reg.resources > 0 then
    heading(lines, "Resources", #reg.resources)
    for _, r in ipairs(reg.resources) do
      entry(lines, r.uri, r.name ~= r.uri and (r.title or r.name) or r.title, r.description, r.plugin)
      if r.mimeType then lines[#lines + 1] = "  mimeType: " .. r.mimeType end
    end
  end
  if #reg.templates > 0 then
    heading(lines, "Resource templates", #reg.templates)
    for _, t in ipairs(reg.templates) do
      entry(lines, t.uriTemplate, t.name ~= t.uriTemplate and (t.title or t.name) or t.title,
            t.description, t.plugin)
      if t.mimeType then lines[#lines + 1] = "  mimeType: " .. t.mimeType end
    end
  end
  if #reg.prompts > 0 then
    heading(lines, "Prompts", #reg.prompts)
    for _, p in ipairs(reg.prompts) do
      entry(lines, p.name, p.title, p.description, p.plugin)
      lines[#lines + 1] = #p.arguments > 0 and "  arguments:" or "  arguments: none"
      for _, a in ipairs(p.arguments) do
        lines[#lines + 1] = string.format("    %s%s%s", a.name, a.required and " (required)" or "",
                                          a.description and " - " .. a.description or "")
      end
    end
  end
  if #lines == 0 then
    say("luamcp: no tools, resources or prompts in %s", table.concat(opts.dirs, ", "))
    return 0, ""
  end
  return 0, table.concat(lines, "\n") .. "\n"
end

---------------------------------------------------------------------------
-- call: the request cli.c feeds to the session, and what it prints.

function M.call_request(opts)
  if opts.cmd == "list" or opts.cmd == "pack" then
    return core.encode { jsonrpc = "2.0", id = 1, method = "luamcp/" .. opts.cmd, params = {} }
  end
  local args = {}
  if opts.arguments ~= nil then
    local err
    args, err = core.decode(opts.arguments)
    if args == nil then error("arguments are not valid JSON: " .. tostring(err), 0) end
    if type(args) ~= "table" or is_array(args) then
      error("arguments must be a JSON object, like '{\"text\": \"hi\"}'", 0)
    end
  end
  return core.encode {
    jsonrpc = "2.0", id = 1, method = "tools/call",
    params = { name = opts.name, arguments = args, _meta = { progressToken = "luamcp-call" } },
  }
end

-- Is text the JSON of structured (the text item a structured result repeats it in)?
local function repeats(text, structured)
  if structured == nil then return false end
  local v = core.decode(text)
  return v ~= nil and M.pretty(v) == M.pretty(structured)
end

-- Each text item plainly (but the one repeating structuredContent), other
-- content and structuredContent as pretty JSON.
local function render(result)
  local out = {}
  local function add(s)
    out[#out + 1] = s
    if s:sub(-1) ~= "\n" then out[#out + 1] = "\n" end
  end
  local content = type(result.content) == "table" and result.content or {}
  local structured = result.structuredContent
  for _, item in ipairs(content) do
    if type(item) == "table" and item.type == "text" and type(item.text) == "string" then
      if not repeats(item.text, structured) then add(item.text) end
    else
      add(M.pretty(item))
    end
  end
  if structured ~= nil then add(M.pretty(structured)) end
  return table.concat(out)
end

-- code, stdout text, stderr text; interrupts: how many Ctrl-C there were.
function M.call_output(response, opts, interrupts)
  if response == nil then
    if interrupts > 1 then return 130, "", "aborted\n" end
    if interrupts > 0 then return 130, "", "cancelled\n" end
    return 1, "", "luamcp: the call ended without a response\n"
  end
  local msg, err = core.decode(response)
  if type(msg) ~= "table" then return 1, "", "luamcp: bad response: " .. tostring(err) .. "\n" end
  if msg.error ~= nil then
    local e = msg.error
    return 1, "", string.format("luamcp: error %s: %s\n", tostring(e.code), tostring(e.message))
  end
  if opts.cmd == "list" or opts.cmd == "pack" then return msg.result.code, msg.result.text, "" end
  local result = msg.result
  if opts.json then
    return result.isError == true and 1 or 0, M.pretty(result) .. "\n",
           result.isError == true and string.format("luamcp: tool %s failed\n", opts.name) or ""
  end
  if result.isError == true then            -- a tool error: its message on stderr
    local text = render(result)
    return 1, "", string.format("luamcp: tool %s failed: %s", opts.name, text ~= "" and text or "\n")
  end
  return 0, render(result), ""
end

---------------------------------------------------------------------------
-- check

local KNOWN_TYPES = { object = true, array = true, string = true, integer = true, number = true,
                      boolean = true, null = true }
local NUMERIC = { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                  "maxLength", "minItems", "maxItems" }

local function is_list(t)
  if type(t) ~= "table" then return false end
  if is_array(t) then return true end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

-- Problems of a schema (in the documented subset), each as where: message.
local function check_schema(s, where, top, add)
  if type(s) ~= "table" then add(where .. " must be a table (a JSON Schema)"); return end
  local t = s.type
  if top and t ~= "object" then
    add(string.format("%s: type must be \"object\" (got %s)", where, t == nil and "none" or scalar(t)))
  elseif type(t) == "table" then
    for _, n in ipairs(t) do
      if not KNOWN_TYPES[n] then add(string.format("%s.type: unknown type %s", where, scalar(n))) end
    end
  elseif t ~= nil and not KNOWN_TYPES[t] then
    add(string.format("%s.type: unknown type %s (known: object, array, string, integer, number, boolean, null)",
                      where, scalar(t)))
  end
  local props = s.properties
  if props ~= nil then
    if type(props) ~= "table" or is_array(props) then
      add(where .. ".properties must be a table of property schemas")
      props = nil
    else
      local names = {}
      for k in pairs(props) do names[#names + 1] = k end
      table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
      for _, k in ipairs(names) do
        local p, pw = props[k], where .. ".properties." .. tostring(k)
        if type(k) ~= "string" then
          add(where .. ".properties: property names must be strings")
        elseif type(p) ~= "table" then
          add(pw .. " must be a table (a JSON Schema), not a " .. type(p))
        else
          if type(p.required) == "boolean" then
            add(pw .. ".required: list the required properties in " .. where .. ".required instead")
            local copy = {}
            for pk, pv in pairs(p) do copy[pk] = pv end
            copy.required = nil
            p = copy
          end
          check_schema(p, pw, false, add)
        end
      end
    end
  end
  local req = s.required
  if req ~= nil then
    if not is_list(req) then
      add(where .. ".required must be a list of property names")
    else
      for _, name in ipairs(req) do
        if type(name) ~= "string" then
          add(where .. ".required: " .. scalar(name) .. " is not a property name")
        elseif props == nil or props[name] == nil then
          add(string.format("%s.required: %q is not one of its properties", where, name))
        end
      end
    end
  end
  if s.items ~= nil then check_schema(s.items, where .. ".items", false, add) end
  local ap = s.additionalProperties
  if ap ~= nil and type(ap) ~= "boolean" then
    check_schema(ap, where .. ".additionalProperties", false, add)
  end
  if s.enum ~= nil and (not is_list(s.enum) or #s.enum == 0) then
    add(where .. ".enum must be a non-empty list of values")
  end
  for _, k in ipairs(NUMERIC) do
    if s[k] ~= nil and type(s[k]) ~= "number" then add(where .. "." .. k .. " must be a number") end
  end
end

local function read_lines(path)
  local lines, f = {}, io.open(path, "r")
  if not f then return lines end
  for l in f:lines() do lines[#lines + 1] = l end
  f:close()
  return lines
end

-- Where a declaration is: the line of key = "value" before its function
-- (fn), else the function's first line, else the mcp.plugin line; and the
-- "{" of the table it is written in, if found (lua/mcp/lex.lua).
local function decl_at(path, toks, fn, key, value)
  local info = type(fn) == "function" and debug.getinfo(fn, "S")
  local at = info and info.source == "@" .. path and info.linedefined or nil
  local open, line = lex.declared(toks, key, value, at)
  return line or at or lex.plugin_line(toks) or 1, open
end

-- A plugin file's environment, and how its chunk runs: a sandboxed
-- plugin's (dir is a --sandbox one) in its sandbox, under its grants.
local function plugin_env(path, cfg, sandbox_dir)
  local config = require "mcp.config"
  local own_mcp = config.plugin_mcp(cfg, path)   -- with its mcp.settings
  local function collect(chunk) return require("mcp.decl").collect(chunk, load_errors.handler) end
  if sandbox_dir then
    local sandbox, name, grants = require "mcp.sandbox", config.name_of(path), config.grants(cfg, path)
    core.sandbox_set(name, grants)
    return sandbox.env(name, sandbox_dir, own_mcp, grants), function(chunk)
      local ok, problems, cok, plugin = pcall(sandbox.run, name, grants, collect, chunk)
      if not ok then return {}, false, { msg = problems, tb = problems } end
      return problems, cok, plugin
    end
  end
  local env = setmetatable({}, { __index = _G })
  env.require = function(name)
    if name == "mcp" then return own_mcp end
    return require(name)
  end
  return env, collect
end

-- Load the file at path: its plugin, or nil with its errors said
-- (said(line, text), lua/mcp/load_errors.lua).
local function load_plugin(path, lines, said, cfg, sandbox_dir)
  local env, run = plugin_env(path, cfg, sandbox_dir)
  local source = table.concat(lines, "\n")
  local chunk, err = load(source, "@" .. path, "t", env)
  local problems, ok, plugin = {}, false, err
  if chunk then problems, ok, plugin = run(chunk) end
  local not_plugin = ok and not require("mcp").is_plugin(plugin)
  for _, r in ipairs(load_errors.report(path, source, problems, not ok and plugin or nil, not_plugin)) do
    said(r.line, r.text, r.error)
  end
  if ok and not not_plugin then return plugin end
end

function M.check(opts)
  local mcp = require "mcp"
  local problems, seen = {}, { tool = {}, resource = {}, template = {}, prompt = {} }
  local n = { plugins = 0, tools = 0, resources = 0, templates = 0, prompts = 0 }
  local cfg = opts.config and require("mcp.config").read(opts.config)
  for _, dir in ipairs(opts.dirs) do
    package.path = dir .. "/lib/?.lua;" .. dir .. "/lib/?/init.lua;" .. package.path
  end
  local all, sandboxed = {}, {}
  for _, dir in ipairs(opts.dirs) do all[#all + 1] = dir end
  for _, dir in ipairs(opts.dirs.sandbox or {}) do
    all[#all + 1] = dir
    sandboxed[dir] = true
  end
  for _, dir in ipairs(all) do
    local files, err = core.plugin_files(dir)
    if not files then problems[#problems + 1] = err end
    for _, name in ipairs(files or {}) do
      local path = dir .. "/" .. name
      local lines = read_lines(path)
      local found = {}                  -- this file's problems: {line, text}, sorted by line at the end
      local static = {}                 -- lines the sandbox pass found something on
      local function said(line, text, load_error)
        -- a load error on such a line is what was found there (io is nil, ...)
        if load_error and static[line] then return end
        found[#found + 1] = { line or math.huge, text }
      end
      local function problem(line, msg) said(line, string.format("%s:%d: %s", path, line, msg)) end
      if sandboxed[dir] then            -- what it uses that it was not granted
        local cfgm = require "mcp.config"
        local source = table.concat(lines, "\n")
        for _, f in ipairs(require("mcp.sandbox_check").findings(cfgm.name_of(path), source, cfgm.grants(cfg, path))) do
          problem(f[1], f[2])
          static[f[1]] = true
        end
      end
      local plugin = load_plugin(path, lines, said, cfg, sandboxed[dir] and dir)
      local toks = plugin and lex.tokens(table.concat(lines, "\n"))
      if plugin then
        n.plugins = n.plugins + 1
        local function unique(kind, key, line, label)
          local first = seen[kind][key]
          if first then
            problem(line, string.format("%s %q is already defined at %s", label, key, first))
          else
            seen[kind][key] = path .. ":" .. line
          end
        end
        for _, t in ipairs(plugin.tools) do
          n.tools = n.tools + 1
          if type(t.name) ~= "string" then goto next_tool end   -- reported by mcp.tool
          local line, open = decl_at(path, toks, t.handler, "name", t.name)
          local where = "tool " .. t.name
          local function add(msg, keys) problem(open and keys and lex.key_line(toks, open, keys) or line, msg) end
          local function add_schema(msg)
            local keys = msg:match("^([%w_%.]+)")
            add(where .. ": " .. msg, keys)
          end
          if #t.name > 128 or not t.name:find("^[%w_%-%.]+$") then
            add(string.format('tool %q: a tool name may only use A-Z, a-z, 0-9, "_", "-" and "." (1 to 128 characters)',
                              t.name))
          end
          unique("tool", t.name, line, "tool")
          check_schema(t.inputSchema, "inputSchema", true, add_schema)
          if t.outputSchema ~= nil then check_schema(t.outputSchema, "outputSchema", true, add_schema) end
          ::next_tool::
        end
        for _, r in ipairs(plugin.resources) do
          if mcp.is_resource(r) then
            n.resources = n.resources + 1
            if type(r.uri) ~= "string" then goto next_resource end
            unique("resource", r.uri, (decl_at(path, toks, r.read, "uri", r.uri)), "resource")
          else
            n.templates = n.templates + 1
            if type(r.uriTemplate) ~= "string" then goto next_resource end
            unique("template", r.uriTemplate, (decl_at(path, toks, r.read, "uriTemplate", r.uriTemplate)),
                   "resource template")
          end
          ::next_resource::
        end
        for _, p in ipairs(plugin.prompts) do
          n.prompts = n.prompts + 1
          if type(p.name) ~= "string" then goto next_prompt end
          unique("prompt", p.name, (decl_at(path, toks, p.get, "name", p.name)), "prompt")
          ::next_prompt::
        end
      end
      for i, f in ipairs(found) do f[3] = i end
      table.sort(found, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[3] < b[3]) end)
      for _, f in ipairs(found) do problems[#problems + 1] = f[2] end
    end
  end
  local function count(k, one, many) return n[k] .. " " .. (n[k] == 1 and one or many) end
  local summary = string.format("%s, %s, %s, %s, %s", count("plugins", "plugin", "plugins"),
    count("tools", "tool", "tools"), count("resources", "resource", "resources"),
    count("templates", "resource template", "resource templates"), count("prompts", "prompt", "prompts"))
  if #problems > 0 then
    return 1, table.concat(problems, "\n") .. string.format("\n%d problem%s (%s)\n", #problems,
      #problems == 1 and "" or "s", summary)
  end
  return 0, "ok: " .. summary .. "\n"
end

---------------------------------------------------------------------------
-- new: cli_new.lua

function M.new(opts)
  return require("mcp.cli_new").new(opts, M)
end

---------------------------------------------------------------------------
-- install, uninstall: cli_install.lua

function M.install(opts)
  return require("mcp.cli_install").run(opts, M)
end

function M.uninstall(opts)
  return require("mcp.cli_install").run(opts, M)
end

return M
