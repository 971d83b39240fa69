-- Runs a command from a short allow-list with ctx:spawn. Each line the
-- command prints is streamed to the client as it arrives (a progress
-- notification when the client asked for progress, and a log message), and a
-- cancel stops the command: SIGTERM, then SIGKILL after the grace.
--
-- Only the programs in ALLOWED run, found on the server's PATH. There is no
-- shell: arguments go to the program as they are, so "*", ";", "|" or "$(...)"
-- are plain characters. Output kept for the result is capped at MAX_LINES.
local mcp = require "mcp"

local ALLOWED = { echo = true, ls = true, sleep = true, wc = true }
local MAX_LINES = 1000

return mcp.plugin {
  name = "shell",
  defaults = { timeout = 120, cancel = "cooperative", grace = 2 },
  tools = {
    mcp.tool {
      name = "run_command",
      title = "Run a command",
      description = "Run echo, ls, sleep or wc with arguments (no shell); output lines are streamed as logs",
      inputSchema = {
        type = "object",
        properties = {
          command = { type = "string", enum = { "echo", "ls", "sleep", "wc" } },
          args = { type = "array", items = { type = "string" }, maxItems = 64 },
          stdin = { type = "string", description = "text for the command's standard input" },
          timeout = { type = "number", minimum = 0, maximum = 100, description = "seconds (default 60)" },
        },
        required = { "command" },
      },
      handler = function(args, ctx)
        if not ALLOWED[args.command] then return mcp.error("not allowed: " .. args.command) end
        local lines, dropped = {}, 0
        local function keep(line)
          if #lines < MAX_LINES then lines[#lines + 1] = line else dropped = dropped + 1 end
        end
        local result, err = ctx:spawn {
          command = { args.command, table.unpack(args.args or {}) },
          stdin = args.stdin,
          timeout = args.timeout or 60,
          stdout = function(line)          -- runs as each line arrives
            keep(line)
            ctx:progress(#lines + dropped, nil, line)
            ctx:log("info", line)
          end,
          stderr = function(line)
            keep(line)
            ctx:log("warning", line)
          end,
        }
        if not result then return mcp.error(err) end   -- not found, timeout, cancelled
        if dropped > 0 then lines[#lines + 1] = ("(%d more lines)"):format(dropped) end
        local text = table.concat(lines, "\n")
        if result.code ~= 0 or result.signal ~= 0 then
          return mcp.error(("%s exited with code %d, signal %d\n%s"):format(
            args.command, result.code, result.signal, text))
        end
        return mcp.text(text)
      end,
    },
  },
}
