-- Conformance fixtures: the tasks extension (io.modelcontextprotocol/tasks,
-- SEP-2663) of 2026-07-28 requests, the tasks-* scenarios. The server
-- decides: a 2026-07-28 request that declares the extension gets a task for
-- a tool with `task = "optional"` or `"required"`; a session client
-- (2025-11-25) asks for one with params.task.
local mcp = require "mcp"

local function object(properties, required)
  return { type = "object", properties = properties or {}, required = required }
end

-- An elicitation/create request's params: a form asking for the fields.
local function form(message, properties, required)
  return { mode = "form", message = message, requestedSchema = object(properties, required) }
end

return mcp.plugin {
  name = "conformance-tasks",
  tools = {
    -- tasks-lifecycle, tasks-request-headers: never a task
    mcp.tool {
      name = "greet",
      description = "Greets someone (never runs as a task)",
      inputSchema = object { name = { type = "string", description = "Who to greet" } },
      handler = function(args) return mcp.text(("Hello, %s!"):format(args.name or "World")) end,
    },
    -- every tasks-* scenario: sleeps `seconds` (cooperatively), then answers
    mcp.tool {
      name = "slow_compute",
      description = "Sleeps for the given seconds, then answers (may run as a task)",
      task = "optional",
      inputSchema = object {
        seconds = { type = "number", minimum = 0, description = "How long to work" },
        label = { type = "string", description = "A label echoed in the result" },
      },
      handler = function(args, ctx)
        local seconds = args.seconds or 0
        local ok, why = ctx:sleep(seconds)
        if not ok then return mcp.error("slow_compute stopped: " .. tostring(why)) end
        return mcp.text(("computed %s in %g s"):format(args.label or "", seconds))
      end,
    },
    -- tasks-lifecycle, tasks-dispatch-and-envelope, tasks-required-task-error:
    -- only as a task; a tool execution error (isError) after about a second
    mcp.tool {
      name = "failing_job",
      description = "Works for a second, then reports a tool execution error (only as a task)",
      task = "required",
      handler = function(_, ctx)
        ctx:sleep(1)
        return mcp.error("failing_job failed, as it always does")
      end,
    },
    -- tasks-lifecycle: a JSON-RPC (protocol) error, so the task is failed
    mcp.tool {
      name = "protocol_error_job",
      description = "Fails with a JSON-RPC internal error (may run as a task)",
      task = "optional",
      handler = function()
        return mcp.rpc_error(-32603, "Internal error: protocol_error_job fails at the protocol level")
      end,
    },
    -- tasks-mrtr-input, tasks-dispatch-and-envelope: one elicitation, then done
    mcp.tool {
      name = "confirm_delete",
      description = "Asks the user to confirm deleting a file (elicitation), then answers",
      task = "optional",
      inputSchema = object({ filename = { type = "string", description = "The file to delete" } },
                           { "filename" }),
      handler = function(args, ctx)
        local r, err = ctx:elicit(form("Delete " .. args.filename .. "?",
                                       { confirm = { type = "boolean", description = "Delete it" } },
                                       { "confirm" }))
        if not r then return mcp.error("no confirmation: " .. tostring(err)) end
        if r.action == "accept" and type(r.content) == "table" and r.content.confirm == true then
          return mcp.text("Deleted " .. args.filename)
        end
        return mcp.text(("Kept %s (%s)"):format(args.filename, tostring(r.action)))
      end,
    },
    -- tasks-mrtr-composition: input first (an input-required round, no task
    -- yet), then the rest as a task; its result carries the answer
    mcp.tool {
      name = "test_tool_with_task",
      description = "Asks for a name (input-required result), then works on as a task",
      task = "required",
      defer_task = true,
      inputSchema = object(),
      handler = function(_, ctx)
        local r, err = ctx:elicit(form("What is your name?", { name = { type = "string" } }, { "name" }),
                                  { key = "user_name" })
        if not r then return mcp.error("no name: " .. tostring(err)) end
        local name = r.content and r.content.name or "(none)"
        ctx:task()
        ctx:sleep(0.05)
        return mcp.text(("Task done for %s"):format(tostring(name)))
      end,
    },
    -- tasks-mrtr-input: two elicitations outstanding at once
    mcp.tool {
      name = "multi_input",
      description = "Asks for a name and a confirmation at once (two elicitations), then answers",
      task = "optional",
      handler = function(_, ctx)
        -- (in a task the requests get the task's keys, input-1, input-2, in key order)
        local r, errs = ctx:input {
          first = { method = "elicitation/create",
                    params = form("Your name?", { name = { type = "string" } }, { "name" }) },
          second = { method = "elicitation/create",
                     params = form("Go ahead?", { confirm = { type = "boolean" } }, { "confirm" }) },
        }
        for _, e in pairs(errs) do return mcp.error("no answers: " .. tostring(e)) end
        local name, go = r.first.content or {}, r.second.content or {}
        return mcp.text(("name=%s, confirm=%s"):format(tostring(name.name), tostring(go.confirm)))
      end,
    },
  },
}
