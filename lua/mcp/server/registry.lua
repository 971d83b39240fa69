-- The registry the method families serve from (tools, resources, templates,
-- prompts: by key and in load order), the table of served methods, and the
-- helpers the families share. server.lua fills and empties the tables in place.
local core = require "mcp.core"
local mcp = require "mcp"

local R = {}
R.tools, R.tool_list = {}, {}
R.resources, R.resource_list = {}, {}         -- by uri; in load order
R.templates, R.template_list = {}, {}         -- by uriTemplate; in load order (the order of matching)
R.prompts, R.prompt_list = {}, {}             -- by name; in load order
R.methods = {}                                -- method name -> function(params, id, session)

local resources, template_list = R.resources, R.template_list

-- One page of list (cursor: the 1-based index of the page's first item, as
-- a string): page, nextCursor; or nil, code, message for a bad cursor.
local function paginate(list, params, entry)
  local start = 1
  if params.cursor ~= nil then
    start = type(params.cursor) == "string" and tonumber(params.cursor:match("^%d+$") or "")
    if not start or start < 1 or start > #list + 1 then
      return nil, -32602, "Invalid params: invalid cursor"
    end
  end
  local page, stop = mcp.array(), math.min(#list, start + core.config.page_size - 1)
  for i = start, stop do page[#page + 1] = entry(list[i]) end
  return page, stop < #list and tostring(stop + 1) or nil
end
R.paginate = paginate

-- What a tools/call or prompts/get names: the entry of by_name that
-- params.name is, and params.arguments (an object; {} when absent); or nil,
-- -32602, message (unknown: the message's head for a name not in by_name).
function R.named(params, by_name, unknown)
  local name = params.name
  if type(name) ~= "string" then return nil, -32602, "Invalid params: name must be a string" end
  local entry = by_name[name]
  if not entry then return nil, -32602, unknown .. name end
  local args = params.arguments
  if args == nil then args = {} end
  if type(args) ~= "table" or mcp.is_array(args) then
    return nil, -32602, "Invalid params: arguments must be an object"
  end
  return entry, args
end

-- A failure of get or a completion function as a JSON-RPC error.
local function invalid_or_internal(msg, code)
  if code == "invalid" or code == "not_found" then return nil, -32602, "Invalid params: " .. msg end
  return nil, -32603, "Internal error: " .. msg
end

-- The resource or template serving uri: resource, nil; template, params; or nil.
local function find_resource(uri)
  local r = resources[uri]
  if r then return r end
  for _, t in ipairs(template_list) do
    local vars = t.template:match(uri)
    if vars then return t, vars end
  end
end
R.invalid_or_internal, R.find_resource = invalid_or_internal, find_resource

return R
