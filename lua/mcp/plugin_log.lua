-- A plugin's lines in the server's log (stderr): mcp.server_log, and what
-- print, io.write and io.stdout write, at info level. Each line names the
-- plugin and, in a tools/call, the tool (src/util/log.c). stdout is the
-- protocol's over stdio (src/net/stdio.c): nothing a plugin writes goes there.
local core = require "mcp.core"

local M = {}

local LEVELS = { debug = true, info = true, notice = true, warning = true, error = true, critical = true,
                 alert = true, emergency = true }

-- print's text: its arguments through tostring, tab-separated.
local function joined(...)
  local n, parts = select("#", ...), {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  return table.concat(parts, "\t")
end

-- The text of a write: its pieces, strings or numbers as file:write takes them.
local function written(where, ...)
  local n, parts = select("#", ...), {}
  for i = 1, n do
    local v = select(i, ...)
    if type(v) ~= "string" and type(v) ~= "number" then
      error(("bad argument #%d to '%s' (string expected, got %s)"):format(i, where, type(v)), 4)
    end
    parts[i] = v
  end
  return table.concat(parts)
end

local LINE_MAX = 4096        -- a longer line without its newline is logged in pieces

-- mcp.server_log(level, fmt, ...) naming log.name (nil: the running call's plugin).
local function logger(log)
  return function(level, fmt, ...)
    if not LEVELS[level] then
      error(("mcp.server_log: unknown level %s (debug, info, notice, warning, error, critical, alert, emergency)")
            :format(type(level) == "string" and ("%q"):format(level) or tostring(level)), 2)
    end
    local msg = fmt
    if select("#", ...) > 0 then
      local ok, text = pcall(string.format, fmt, ...)
      if not ok then       -- format's argument n is server_log's n + 1
        text = tostring(text):gsub("^bad argument #(%d+) to '[^']*'", function(n)
          return ("bad argument #%d to 'mcp.server_log'"):format(tonumber(n) + 1)
        end)
        error(text, 2)
      end
      msg = text
    elseif type(fmt) ~= "string" then
      msg = tostring(fmt)
    end
    core.log_plugin(level, msg, log.name)
  end
end

M.server_log = logger({})

-- The io library as the plugin sees it: io.stdout a stand-in whose write
-- logs, io.write logs while the default output is stdout; the rest is io's.
local function own_io(log)
  local real, pending = io.stdout, ""
  local function flush()
    if pending ~= "" then core.log_plugin("info", pending, log.name) end
    pending = ""
  end
  -- Each whole line is a log line; the rest waits for its newline (or a flush).
  local function add(where, ...)
    local text = pending .. written(where, ...)
    pending = ""
    for line, nl in text:gmatch("([^\n]*)(\n?)") do
      if nl == "" then pending = line break end
      core.log_plugin("info", line, log.name)
    end
    if #pending > LINE_MAX then flush() end
  end
  local stdout = setmetatable({}, {
    __index = function(_, k)
      local f = real[k]
      if type(f) ~= "function" then return f end
      return function(self, ...) return f(real, ...) end     -- flush, setvbuf, lines...
    end,
    __tostring = function() return tostring(real) end,
    __name = "FILE*",
  })
  function stdout.write(self, ...)
    add("write", ...)
    return self
  end
  function stdout.flush(self)
    flush()
    return self
  end
  local own = setmetatable({ stdout = stdout }, { __index = io })
  function own.write(...)
    if io.output() ~= real then return io.write(...) end
    add("write", ...)
    return stdout
  end
  function own.flush()
    if io.output() ~= real then return io.flush() end
    flush()
    return stdout
  end
  function own.output(file)
    if file == stdout then file = real end
    local f = io.output(file)
    if f == real then return stdout end
    return f
  end
  function own.type(v)
    if v == stdout then return "file" end
    return io.type(v)
  end
  return own
end

-- The log of the plugin file named name (its file's name until server.lua
-- sets log.name to the name it declared): its print, io and mcp.server_log.
function M.open(name)
  local log = { name = name }
  log.print = function(...) core.log_plugin("info", joined(...), log.name) end
  log.io = own_io(log)
  log.server_log = logger(log)
  return log
end

return M
