-- Codex's config.toml: the table [mcp_servers.NAME] and its sub-tables
-- ([mcp_servers.NAME.env]) replaced, appended or removed as text, every other
-- line kept byte for byte (luamcp install, cli_install.lua). Only the forms
-- Codex itself writes are recognised: the server in tables of its own, not
-- inline in [mcp_servers] or dotted keys of another table.
local M = {}

local function bare(key) return key:match("^[A-Za-z0-9_-]+$") ~= nil end

function M.quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local esc = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
    return esc[c] or string.format("\\u%04X", c:byte())
  end) .. '"'
end

function M.key(k) return bare(k) and k or M.quote(k) end

-- The table path of a header line ("[a.\"b c\".d]  # note" -> {"a", "b c", "d"}),
-- or nil: its keys up to the closing bracket(s), then nothing or a comment.
local function header_path(line)
  local rest = line:match("^%s*%[(.*)$")
  if not rest then return nil end
  local close = rest:sub(1, 1) == "[" and "]]" or "]"
  if close == "]]" then rest = rest:sub(2) end
  local path = {}
  while true do
    rest = rest:match("^%s*(.*)$")
    local k, after
    if rest:sub(1, 1) == '"' then
      k, after = rest:match('^"(.-)"(.*)$')
    elseif rest:sub(1, 1) == "'" then
      k, after = rest:match("^'(.-)'(.*)$")
    else
      k, after = rest:match("^([A-Za-z0-9_-]+)(.*)$")
    end
    if not k then return nil end
    path[#path + 1] = k
    after = after:match("^%s*(.*)$")
    if after:sub(1, #close) == close then
      local tail = after:sub(#close + 1)
      if tail:match("^%s*$") or tail:match("^%s*#") then return path end
      return nil
    end
    if after:sub(1, 1) ~= "." then return nil end
    rest = after:sub(2)
  end
end

-- Is the table path the server's ([mcp_servers.NAME] or under it)?
local function is_server(path, name)
  return path ~= nil and path[1] == "mcp_servers" and path[2] == name
end

local function lines_of(text)
  local lines = {}
  for line in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local tail = text:match("([^\n]*)$")
  if tail ~= "" then lines[#lines + 1] = tail end
  return lines
end

-- The server's blocks: each {first, last} line, from its header to its last
-- key before the next header: the blank lines and comments after it belong
-- to what follows (a comment above the next table is that table's).
local function blocks(lines, name)
  local found, cur = {}, nil
  for i, line in ipairs(lines) do
    local path = header_path(line)
    if path then
      if cur then found[#found + 1] = cur; cur = nil end
      if is_server(path, name) then cur = { first = i, last = i } end
    elseif cur and line:match("^%s*[^%s#]") then
      cur.last = i
    end
  end
  if cur then found[#found + 1] = cur end
  return found
end

-- The lines without the server's blocks; and where the first one was.
local function without(lines, name)
  local bs = blocks(lines, name)
  local drop = {}
  for _, b in ipairs(bs) do
    local last = b.last
    -- a block takes the blank lines after it
    while lines[last + 1] ~= nil and not lines[last + 1]:match("%S") do last = last + 1 end
    for i = b.first, last do drop[i] = true end
  end
  local out, at = {}, nil
  for i, line in ipairs(lines) do
    if bs[1] and i == bs[1].first then at = #out + 1 end
    if not drop[i] then out[#out + 1] = line end
  end
  -- blocks at the end: the blank lines that separated them go too
  if drop[#lines] then
    while #out > 0 and not out[#out]:match("%S") do out[#out] = nil end
  end
  return out, at, #bs > 0
end

local function join(lines)
  if #lines == 0 then return "" end
  return table.concat(lines, "\n") .. "\n"
end

-- The text with the server's tables replaced by block (its lines, no
-- trailing newline), where the first was, or appended. Returns the text and
-- whether it was there.
function M.set(text, name, block)
  text = text or ""
  local lines, at, was = without(lines_of(text), name)
  local new = lines_of(block .. "\n")
  if at and at <= #lines then
    new[#new + 1] = ""                             -- a blank line before the next table
    for i = #new, 1, -1 do table.insert(lines, at, new[i]) end
  else
    if #lines > 0 then lines[#lines + 1] = "" end
    for _, l in ipairs(new) do lines[#lines + 1] = l end
  end
  return join(lines), was
end

-- The text without the server's tables, and whether they were there.
function M.remove(text, name)
  if text == nil then return nil, false end
  local lines, _, was = without(lines_of(text), name)
  if not was then return text, false end
  return join(lines), true
end

return M
