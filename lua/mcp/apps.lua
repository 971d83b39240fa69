-- MCP Apps (the io.modelcontextprotocol/ui extension, 2026-01-26): a tool
-- names the view that shows its results (mcp.tool{app = "ui://..."}), a
-- resource serves that view's HTML (mcp.resource{app = {...}}), and a tool
-- only the view may call (visibility = {"app"}) is listed to clients that
-- declare the extension alone. The Lua names and the wire's, in one place.
local core = require "mcp.core"
local decl = require "mcp.decl"
local file = require "mcp.file"

local A = {}

A.EXTENSION = "io.modelcontextprotocol/ui"
A.MIME = "text/html;profile=mcp-app"

local problem = decl.problem
local array_mt = core.array_mt

-- mcp.resource{app = {...}}'s fields, and the wire names of _meta.ui's.
local APP_FIELDS = { html = true, file = true, csp = true, permissions = true, domain = true,
                     prefers_border = true }
local CSP = { connect_domains = "connectDomains", resource_domains = "resourceDomains",
              frame_domains = "frameDomains", base_uri_domains = "baseUriDomains" }
local PERMISSIONS = { camera = "camera", microphone = "microphone", geolocation = "geolocation",
                      clipboard_write = "clipboardWrite" }
local VISIBILITY = { model = true, app = true }

local function is_ui_uri(v) return type(v) == "string" and v:find("^ui://.") ~= nil end

-- A list of strings, each one of ok's keys (or any non-empty string when ok
-- is nil), none twice: a copy, or nil after a problem.
local function string_list(v, where, field, ok, what)
  if type(v) ~= "table" or getmetatable(v) ~= nil and getmetatable(v) ~= array_mt then
    return problem(("%s: %s must be a list of %s"):format(where, field, what), field)
  end
  local out, seen = setmetatable({}, array_mt), {}
  for k in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > #v then
      return problem(("%s: %s must be a list of %s"):format(where, field, what), field)
    end
  end
  for i, s in ipairs(v) do
    if type(s) ~= "string" or s == "" or (ok and not ok[s]) then
      return problem(("%s: %s[%d] must be %s"):format(where, field, i, what), field)
    end
    if seen[s] then return problem(("%s: %s[%d]: %s is named twice"):format(where, field, i, s), field) end
    seen[s], out[i] = true, s
  end
  return out
end

-- mcp.tool's app and visibility, into the tool's _meta.ui (resourceUri,
-- visibility), which a plugin may also write itself.
function A.check_tool(t, where)
  local ui = {}
  if t.app ~= nil then
    if is_ui_uri(t.app) then ui.resourceUri = t.app
    else problem(where .. ": app must be a ui:// URI (the resource that serves the tool's view)", "app") end
  end
  if t.visibility ~= nil then
    local v = string_list(t.visibility, where, "visibility", VISIBILITY, '"model" or "app"')
    if v and #v == 0 then problem(where .. ': visibility must name "model", "app" or both', "visibility")
    elseif v then ui.visibility = v end
  end
  if next(ui) == nil then return end
  if type(t._meta) ~= "table" then t._meta = {} end
  local have = t._meta.ui
  if have == nil then have = {}; t._meta.ui = have end
  if type(have) ~= "table" then return problem(where .. ": _meta.ui must be a table", "_meta") end
  for k, v in pairs(ui) do
    if have[k] ~= nil and k == "resourceUri" and have[k] ~= v then
      problem(("%s: app %s and _meta.ui.resourceUri %s differ: name the view once"):format(where, v, tostring(have[k])), "app")
    end
    have[k] = v
  end
end

-- A tool's _meta.ui, read raw: a plugin may put a table with metamethods
-- there after it declared the tool, and these run on the main thread.
local function ui_of(tool)
  local meta = rawget(tool, "_meta")
  local ui = type(meta) == "table" and rawget(meta, "ui")
  return type(ui) == "table" and ui or nil
end

-- The tool's view (its _meta.ui.resourceUri), or nil.
function A.view_of(tool)
  local ui = ui_of(tool)
  return ui and rawget(ui, "resourceUri") or nil
end

-- May only a view call the tool (its visibility leaves out "model")?
function A.app_only(tool)
  local ui = ui_of(tool)
  local vis = ui and rawget(ui, "visibility")
  if type(vis) ~= "table" then return false end
  for i = 1, rawlen(vis) do
    if rawget(vis, i) == "model" then return false end
  end
  return true
end

-- Does the client of the running request render MCP Apps: does it declare
-- the extension (at initialize, or in a 2026-07-28 request's _meta) with
-- our MIME type among its mimeTypes?
function A.client_renders()
  local ext = core.client_extension(A.EXTENSION)
  if type(ext) ~= "table" or type(ext.mimeTypes) ~= "table" then return false end
  for _, m in ipairs(ext.mimeTypes) do
    if m == A.MIME then return true end
  end
  return false
end

-- The tools a client that does not render apps is shown: all but the app-only.
function A.model_tools(list)
  local out = {}
  for _, t in ipairs(list) do
    if not A.app_only(t) then out[#out + 1] = t end
  end
  return out
end

-- A view's file is named relative to the file that declares it, below it.
local function check_file(f, where)
  if type(f) ~= "string" or f == "" then return problem(where .. ": app.file must be a file name", "app.file") end
  if f:sub(1, 1) == "/" or ("/" .. f .. "/"):find("/%.%./") then
    return problem(where .. ": app.file must be a path below the plugin's directory (no leading / nor ..)", "app.file")
  end
  local dir = decl.source_dir()
  return (dir and dir ~= "." and dir .. "/" or "") .. f
end

-- mcp.resource{app = {...}}: the view's HTML (html = "...", or file =
-- "view.html" next to the plugin), and what the host is asked for (csp,
-- permissions, domain, prefers_border), as the resource's _meta.ui and its
-- contents'. The resource reads itself: no read.
function A.check_resource(t, where)
  local app = t.app
  if type(app) ~= "table" then return problem(where .. ": app must be a table", "app") end
  decl.fields(app, APP_FIELDS, where, "app.")
  if not is_ui_uri(t.uri) then problem(where .. ": an app's uri must be a ui:// URI", "uri") end
  if t.read ~= nil then problem(where .. ": app serves the resource: no read", "read") end
  if t.mimeType ~= nil and t.mimeType ~= A.MIME then
    problem(where .. ": an app's mimeType is " .. A.MIME, "mimeType")
  end
  local ui = {}
  if (app.html == nil) == (app.file == nil) then
    problem(where .. ": app needs html (the page) or file (a file next to the plugin), one of them", "app")
  elseif app.html ~= nil then
    if type(app.html) ~= "string" then problem(where .. ": app.html must be a string", "app.html")
    else t.app_text = app.html end
  else
    local path = check_file(app.file, where)
    if path then
      local text, err = file.read(path)
      if text then t.app_path, t.app_text = path, text
      else problem(where .. ": app.file: cannot read " .. err, "app.file") end
    end
  end
  if app.csp ~= nil then
    if type(app.csp) ~= "table" then problem(where .. ": app.csp must be a table", "app.csp")
    else
      decl.fields(app.csp, CSP, where, "app.csp.")
      ui.csp = {}
      for k, wire in pairs(CSP) do
        if app.csp[k] ~= nil then ui.csp[wire] = string_list(app.csp[k], where, "app.csp." .. k, nil, "origins") end
      end
    end
  end
  if app.permissions ~= nil then
    local p = string_list(app.permissions, where, "app.permissions", PERMISSIONS,
                          '"camera", "microphone", "geolocation" or "clipboard_write"')
    if p then
      ui.permissions = {}
      for _, k in ipairs(p) do ui.permissions[PERMISSIONS[k]] = {} end
    end
  end
  if app.domain ~= nil then
    if type(app.domain) == "string" and app.domain ~= "" then ui.domain = app.domain
    else problem(where .. ": app.domain must be a non-empty string", "app.domain") end
  end
  if app.prefers_border ~= nil then
    if type(app.prefers_border) == "boolean" then ui.prefersBorder = app.prefers_border
    else problem(where .. ": app.prefers_border must be a boolean", "app.prefers_border") end
  end
  t.mimeType = A.MIME
  if type(t._meta) ~= "table" then t._meta = {} end
  t._meta.ui = ui
  t.read = function()
    return { text = t.app_text, mimeType = A.MIME, _meta = { ui = ui } }
  end
end

-- What a handler returned has text a client without apps can show? A
-- string, a result with a text item, or what result.lua gives JSON text to.
local function has_text(res)
  local ty = type(res)
  if ty == "string" or ty == "number" then return true end
  if ty ~= "table" then return false end              -- nothing: an empty result
  local mt = getmetatable(res)
  if mt ~= nil and mt ~= array_mt then return true end   -- an rpc_error, a mount's raw result
  local items = res.content
  if items == nil then
    if res.structuredContent ~= nil then return true end  -- given its JSON as text
    if res.isError ~= nil then return false end
    if type(res[1]) ~= "table" or type(res[1].type) ~= "string" then return true end   -- shown as JSON
    items = res                                     -- a list of content items
  end
  if type(items) ~= "table" then return true end     -- result.lua says what is wrong
  for _, item in ipairs(items) do
    if type(item) == "table" and item.type == "text" and item.text ~= "" then return true end
  end
  return false
end

local warned = setmetatable({}, { __mode = "k" })

-- A tool with a view answers clients without apps too: its handler's
-- results are watched for text, and the first without any is logged.
function A.watch_text(t)
  local handler = t.handler
  t.own_handler = t.own_handler or handler      -- where the plugin wrote it, for the log (result.lua)
  local function checked(res, ...)
    -- a failure (nil or false, and its message) is text enough: the client gets the message
    if not warned[t] and not ((res == nil or res == false) and select("#", ...) > 0) and not has_text(res) then
      warned[t] = true
      core.log_stderr("warning", ("tool %s has a view (%s) but returned no text content: clients "
        .. "without MCP Apps show nothing (return text as well)"):format(t.name, tostring(A.view_of(t))))
    end
    return res, ...
  end
  t.handler = function(args, ctx) return checked(handler(args, ctx)) end
end

-- The views of the resources loaded (uri -> the HTML last served): a
-- rescan that finds a view's text changed (its file edited, or the plugin
-- reloaded with other HTML) tells the subscribers of its URI.
local served = {}

-- After a load or a rescan: reread the views' files, watch them (with
-- --watch), and return the URIs whose HTML changed since the last time.
function A.refresh(resources, watching)
  local changed, now = {}, {}
  for _, r in ipairs(resources) do
    if r.app_text ~= nil then
      if r.app_path then
        local text, err = file.read(r.app_path)
        if text then r.app_text = text
        else core.log_stderr("warning", ("app %s: %s: the last good HTML stays"):format(r.uri, err)) end
        if watching then
          local ok, werr = core.watch_file(r.app_path)
          if ok == nil then core.log_stderr("warning", ("app %s: cannot watch %s: %s"):format(r.uri, r.app_path, werr)) end
        end
      end
      if served[r.uri] ~= nil and served[r.uri] ~= r.app_text then changed[#changed + 1] = r.uri end
      now[r.uri] = r.app_text
    end
  end
  served = now
  return changed
end

-- Does anything loaded use the extension (a tool with a view or
-- visibility, a resource serving a view)?
function A.in_use(tools, resources)
  for _, t in ipairs(tools) do
    if type(t._meta) == "table" and rawget(t._meta, "ui") ~= nil then return true end
  end
  for _, r in ipairs(resources) do
    if r.mimeType == A.MIME then return true end
  end
  return false
end

return A
