-- The resources family: resources/list, resources/templates/list,
-- resources/read and its result, subscriptions and their updates.
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local input = require "mcp.input"
local decl = require "mcp.decl"
local reg = require "mcp.server.registry"

local M = {}
local methods = reg.methods
local resource_list, template_list = reg.resource_list, reg.template_list
local paginate, find_resource = reg.paginate, reg.find_resource

local function not_found(uri, reason)
  return nil, -32002, "Resource not found", { uri = uri, reason = reason }
end

methods["resources/list"] = function(params)
  local page, next_cursor, msg = paginate(resource_list, params, function(r)
    return { uri = r.uri, name = r.name, title = r.title, description = r.description,
             mimeType = r.mimeType, size = r.size, annotations = r.annotations, icons = r.icons, _meta = r._meta }
  end)
  if not page then return nil, next_cursor, msg end
  return { resources = page, nextCursor = next_cursor }
end

methods["resources/templates/list"] = function(params)
  local page, next_cursor, msg = paginate(template_list, params, function(t)
    return { uriTemplate = t.uriTemplate, name = t.name, title = t.title, description = t.description,
             mimeType = t.mimeType, annotations = t.annotations, icons = t.icons, _meta = t._meta }
  end)
  if not page then return nil, next_cursor, msg end
  return { resourceTemplates = page, nextCursor = next_cursor }
end

-- What read returned, as ReadResourceResult contents; or nil, message. Read
-- raw (result.lua: no metamethod of the plugin's runs in the host's reading).
local function content_item(item, uri, mimeType)
  local t = type(item)
  if t == "string" or t == "number" then return { uri = uri, mimeType = mimeType, text = tostring(item) } end
  if t ~= "table" then return nil, "read returned a " .. t end
  local text, blob = rawget(item, "text"), rawget(item, "blob")
  if text ~= nil and type(text) ~= "string" then return nil, "read returned a non-string text" end
  if blob ~= nil and type(blob) ~= "string" then return nil, "read returned a non-string blob" end
  if (text == nil) == (blob == nil) then return nil, "read returned an item without text or blob (or with both)" end
  return { uri = rawget(item, "uri") or uri, mimeType = rawget(item, "mimeType") or mimeType, text = text,
           blob = blob, _meta = rawget(item, "_meta") }
end

local function read_result(res, uri, mimeType)
  local items = res
  if type(res) == "table" and rawget(res, "contents") ~= nil then
    items = rawget(res, "contents")
    if type(items) ~= "table" then return nil, "read returned contents that is not a list" end
  elseif type(res) ~= "table" or rawget(res, "text") ~= nil or rawget(res, "blob") ~= nil then
    items = { res }
  elseif rawlen(res) == 0 then
    return nil, "read returned a table without text, blob or contents"
  end
  local contents = mcp.array()
  for i = 1, rawlen(items) do
    local c, err = content_item(rawget(items, i), uri, mimeType)
    if not c then return nil, err end
    contents[#contents + 1] = c
  end
  return { contents = contents }
end

-- read runs unprotected, like a tool handler: a Lua error in it becomes a
-- -32603 internal error with the message (from the C core).
methods["resources/read"] = function(params, id, _, ctx)
  local uri = params.uri
  if type(uri) ~= "string" then return nil, -32602, "Invalid params: uri must be a string" end
  local r, vars = find_resource(uri)
  if not r then return not_found(uri) end
  core.set_logger(r.plugin.name)
  ctx = ctx or decl.ctx(id)
  ctx.uri = uri
  local ok, code0, emsg = input.open(ctx, "resources/read", params, uri)
  if not ok then return nil, code0, emsg end
  params = nil
  local res, msg, code
  if vars then res, msg, code = r.read(vars, ctx) else res, msg, code = r.read(ctx) end
  if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
  local fmsg, fcode = outcome.failure(r, "the read of ", uri, res, msg, code)
  if fmsg then
    if fcode == nil or fcode == "not_found" then return not_found(uri, fmsg) end
    return nil, -32603, "Internal error: " .. fmsg
  end
  if res == nil then return not_found(uri) end    -- nil: there is no such resource
  local result, err = read_result(res, uri, r.mimeType)
  if not result then return nil, -32603, "Internal error: resource " .. uri .. ": " .. err end
  return result
end

-- Subscriptions: subs[session][uri] = true.
local subs = {}

methods["resources/subscribe"] = function(params, _, session)
  local uri = params.uri
  if type(uri) ~= "string" then return nil, -32602, "Invalid params: uri must be a string" end
  if not find_resource(uri) then return not_found(uri) end
  local set = subs[session]
  if not set then set = {}; subs[session] = set end
  set[uri] = true
  return {}
end

methods["resources/unsubscribe"] = function(params, _, session)
  local uri = params.uri
  if type(uri) ~= "string" then return nil, -32602, "Invalid params: uri must be a string" end
  local set = subs[session]
  if set then
    set[uri] = nil
    if next(set) == nil then subs[session] = nil end
  end
  return {}
end

function M.notify_resource_updated(uri)
  local n = 0
  for session, set in pairs(subs) do
    if set[uri] then n = n + core.notify(session, "notifications/resources/updated", { uri = uri }) end
  end
  -- 2026-07-28 clients: subscriptions/listen streams with this URI in resourceSubscriptions
  return n + core.notify_listeners("notifications/resources/updated", { uri = uri })
end

-- A session ended (its subscriptions go with it).
function M.session_closed(session)
  subs[session] = nil
end

return M
