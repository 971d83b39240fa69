-- A plugin file's load errors in its author's terms: one line each,
-- "file:line: message", at the line of the plugin's own source they are
-- about (a declaration's field where it is written), in source order, never
-- a luamcp file or a traceback. The server's log (server.lua, hence luamcp
-- call) and luamcp check (cli.lua) say the same lines.
local lex = require "mcp.lex"

local E = {}

-- The library's own files.
local LIB = debug.getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "\0"

local function escape(s) return (s:gsub("%p", "%%%0")) end

-- The handler a plugin file runs under (xpcall through decl.collect): the
-- error value as raised (never converted: it is the plugin's) and where.
function E.handler(e)
  return { msg = e, tb = debug.traceback("", 2) }
end

-- Lua shortens long chunk names to "...tail": put the path back.
function E.full_path(msg, path)
  return (msg:gsub("%.%.%.([^:\n]*):(%d+):", function(tail, line)
    if path:sub(-#tail) == tail then return path .. ":" .. line .. ":" end
  end))
end

local last_source, last_tokens            -- the last source read, its tokens

local function tokens(source)
  if source ~= last_source then last_source, last_tokens = source, lex.tokens(source) end
  return last_tokens
end

-- The line of a collected declaration problem (decl.collect's {at, msg,
-- field}) in the file at path: its field's, when the declaration is in it;
-- nil when it is in another file (a module of DIR/lib): at is kept.
local function problem_line(p, path, source)
  local toks = tokens(source)
  local file, line = p.at:match("^(.*):(%d+): $")
  if p.at == "" then line = lex.plugin_line(toks) or 1
  elseif file ~= path then return nil
  else line = tonumber(line) end
  return p.field and lex.field_line(toks, line, p.field) or line
end

-- The line of the plugin file an error came from, and its message, for an
-- error caught by E.handler: its own position when it is the plugin's (or a
-- module's it required), else the plugin file's frame in the traceback.
local function error_line(err, path, toks)
  local msg, tb = err.msg, E.full_path(err.tb or "", path)
  if type(msg) ~= "string" then msg = string.format("error object is a %s value", type(msg)) end
  msg = E.full_path(msg, path)
  local file, line, rest = msg:match("^([^\n:]+):(%d+): (.*)$")
  if file == path then return tonumber(line), rest end
  if file and file:sub(1, #LIB) ~= LIB then return nil, msg end     -- a module's: as it is
  if file then msg = rest end                                        -- luamcp's own: the plugin's line
  local at = tonumber(tb:match("\n%s*" .. escape(path) .. ":(%d+):"))
  return at or lex.plugin_line(toks) or 1, msg
end

-- What went wrong loading the file at path: its declarations' problems
-- (decl.collect's), err (E.handler's, or a message) and whether what it
-- returned is no plugin, as {line =, text = "file:line: message", error =
-- true for err's} in source order (nil line: another file's, last).
function E.report(path, source, problems, err, not_plugin)
  local toks, out = tokens(source), {}
  local function add(line, msg, is_error)
    out[#out + 1] = { line = line, text = line and (path .. ":" .. line .. ": " .. msg) or msg, n = #out + 1,
                      error = is_error }
  end
  for _, p in ipairs(problems) do
    local line = problem_line(p, path, source)
    add(line, line and p.msg or E.full_path(p.at, path) .. p.msg)
  end
  if type(err) == "string" then err = { msg = err } end
  if err then
    local line, msg = error_line(err, path, toks)
    add(line, msg, true)
  end
  if not_plugin then
    local line
    for _, t in ipairs(toks) do if t.value == "return" and t.kind == "name" then line = t.line end end
    add(line or 1, "a plugin file must return mcp.plugin{...}")
  end
  table.sort(out, function(a, b)
    local la, lb = a.line or math.huge, b.line or math.huge
    return la < lb or (la == lb and a.n < b.n)
  end)
  return out
end

-- E.report's texts.
function E.lines(...)
  local out = {}
  for i, r in ipairs(E.report(...)) do out[i] = r.text end
  return out
end

return E
