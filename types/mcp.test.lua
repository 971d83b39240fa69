---@meta mcp.test
-- LuaLS annotations of mcp.test (lua/mcp/test.lua): a plugin's specs run
-- its tools in the real luamcp binary over stdio, with a test clock.

---@class mcp.test.StartOptions
---@field plugins? string[] plugin directories (default {"plugins"})
---@field args? string[] more flags for luamcp
---@field env? table<string, string|number|false> added to the environment the server inherits; false removes a name
---@field bin? string the binary (default $LUAMCP_BIN, build/luamcp, or luamcp on PATH)
---@field timeout? number seconds each wait lasts at most (10)
---@field version? string the protocol revision to initialize with ("2025-11-25")
---@field capabilities? table the client's capabilities

---@class mcp.test.Server
---@field info table the initialize result
---@field logs table[] every notifications/message's params
---@field notifications table[] every notification, in order
---@field stderr string[] the server's stderr lines
local Server = {}

---Calls a tool and waits: its result (raises on a JSON-RPC error).
---@param tool string
---@param args? table
---@return mcp.CallToolResult
function Server:call(tool, args) end

---A tool call in flight.
---@param tool string
---@param args? table
---@return mcp.test.Call
function Server:start(tool, args) end

---Any request, waited for: the response ({result=...} or {error=...}).
---@param method string
---@param params? table
---@return table
function Server:request(method, params) end

---Sends a request without waiting: its call.
---@param method string
---@param params? table
---@return mcp.test.Call
function Server:begin(method, params) end

---Writes one JSON-RPC message to the server.
---@param msg table
function Server:send(msg) end

---Sends a notification.
---@param method string
---@param params? table
function Server:notify(method, params) end

---Moves the server's clock forward: timeouts, graces and sleeps that fall
---due fire now.
---@param seconds number
function Server:advance(seconds) end

---Runs the loop for a while, e.g. to let handlers run.
---@param seconds number
function Server:pump(seconds) end

---The lines the server wrote on stderr that match a Lua pattern.
---@param pattern? string
---@return string[]
function Server:stderr_lines(pattern) end

---End of input: calls in flight are cancelled ("shutdown"). The exit code.
---@return integer?
function Server:stop() end

---@class mcp.test.Call
---@field id integer
---@field progress table[] the notifications/progress params it got
---@field logs table[] the notifications/message params while it ran
---@field response? table
local Call = {}

---The response, waited for; nil when none comes (a cancelled call sends none).
---@param timeout? number seconds
---@return table?
function Call:wait(timeout) end

---The result of the tools/call, waited for.
---@param timeout? number seconds
---@return mcp.CallToolResult|nil result, string? message, table? error the JSON-RPC error
function Call:result(timeout) end

---Sends notifications/cancelled for it.
---@param reason? string
function Call:cancel(reason) end

---Waits until n progress notifications arrived.
---@param n integer
---@param timeout? number
---@return boolean
function Call:wait_progress(n, timeout) end

---Waits for a log message whose data matches a Lua pattern.
---@param pattern string
---@param timeout? number
---@return table? params
function Call:wait_log(pattern, timeout) end

---@class mcp.test
local T = {}

---JSON null as cjson decodes it.
---@type lightuserdata
T.null = nil

---Starts `luamcp --test-clock` with the plugins and initializes.
---@param opts? mcp.test.StartOptions
---@return mcp.test.Server
function T.start(opts) end

---The text of a result's first content item.
---@param result? mcp.CallToolResult
---@return string?
function T.text(result) end

---Runs the event loop until pred() holds or the timeout passes: whether it held.
---@param pred fun(): boolean?
---@param timeout? number seconds (10)
---@return boolean
function T.run_until(pred, timeout) end

return T
