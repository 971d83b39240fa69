---@meta mcp
-- LuaLS annotations of luamcp's Lua API: what `require "mcp"` gives a plugin,
-- and the `ctx` its handlers get (mcp.test's are in mcp.test.lua). Installed
-- in PREFIX/share/luamcp/types (`luamcp path types`); the `.luarc.json` that
-- `luamcp new` writes puts that directory in `workspace.library`. The API
-- reference is docs/reference/lua-api.md; spec/api_docs_spec.lua checks that
-- every public name of `mcp` and `ctx` is annotated here and listed there.
--
-- The convention: a function that can fail returns `nil, message, code` (as
-- io.open), `code` one word of mcp.FailCode; a wait a cancel ends returns
-- `nil, "cancelled: <reason>", "cancelled"`. Programming mistakes (a wrong
-- argument type) raise, naming the plugin's line.

---@alias mcp.FailCode
---| "cancelled"   # a cancel of the request ended the wait; the message is "cancelled: <reason>"
---| "timeout"     # the operation's own timeout passed
---| "not_found"   # no such file, directory, tool, resource, prompt
---| "exists"      # it is there already
---| "denied"      # not allowed (permissions, read-only, http_allow, a missing OAuth scope)
---| "invalid"     # a value the operation cannot take (bad SQL, malformed URL, bad JSON)
---| "too_large"   # past a size limit (max_bytes)
---| "busy"        # held by someone else, try later
---| "constraint"  # a database constraint failed
---| "unreachable" # could not reach the peer
---| "tls"         # TLS failed (certificate, handshake)
---| "closed"      # the connection, child or database ended
---| "protocol"    # the peer's answer makes no sense
---| "rpc"         # the upstream MCP server answered with a JSON-RPC error (4th value: its error object)
---| "unsupported" # not possible here
---| "io"          # any other system or library error

---@alias mcp.LogLevel "debug"|"info"|"notice"|"warning"|"error"|"critical"|"alert"|"emergency"

---@alias mcp.JsonValue nil|boolean|number|string|table|mcp.Null

---@class mcp.Null: userdata
---JSON null (`mcp.null`): a value that stands for null in tables, where nil cannot.

---@class mcp.Array: table
---A table marked as a JSON array by `mcp.array` (an empty table is an object otherwise).

---@class mcp.Packed: table
---@field n integer how many values the function returned
---The values one function of `mcp.all` returned, as `table.pack` gives them.

---@class mcp.Cancelled
---The error value `ctx:check()` raises once the request is cancelled (`mcp.CANCELLED`).

---------------------------------------------------------------------------
-- Results

---@class mcp.Content
---@field type "text"|"image"|"audio"|"resource"|"resource_link"
---@field text? string
---@field data? string base64, for an image or audio
---@field mimeType? string
---@field resource? table
---@field uri? string
---@field annotations? table
---@field _meta? table

---@class mcp.CallToolResult
---@field content mcp.Content[]
---@field structuredContent? table the result as JSON; checked against the tool's outputSchema
---@field isError? boolean a tool error: the client sees the content
---@field _meta? table

---@class mcp.RpcError
---A JSON-RPC error a handler returns (or raises) with `mcp.rpc_error`.
---@field code integer
---@field message string
---@field data? any

---@class mcp.BlobContents
---@field blob string base64 of the bytes
---@field mimeType? string

---A handler returns one of: nothing (an empty success), a string, number or
---boolean (one text item), `nil, message [, code]` or `false [, message]` (a
---tool error), a result of `mcp.text`/`mcp.error`/`mcp.image`/`mcp.rpc_error`,
---a CallToolResult, a list of content items, a table (structuredContent plus
---its JSON as text) or a list (its JSON as text).
---@alias mcp.ToolReturn nil|string|number|boolean|mcp.CallToolResult|mcp.RpcError|mcp.Content[]|table

---------------------------------------------------------------------------
-- Declarations

---@class mcp.Policy
---@field timeout? number seconds before a call is cancelled with reason "timeout" (0: none)
---@field cancel? "cooperative"|"abort"|"ignore" what a cancel does (default "cooperative")
---@field grace? number seconds a cancelled cooperative handler may go on before it is aborted
---@field max_concurrent? integer calls of the tool running at once in this process (0: no limit)
---@field queue? integer calls that may wait for a slot past max_concurrent
---@field rate? string a token bucket, "R/s" or "R/m"
---@field heartbeat? number progress again after this many seconds without any

---A mount's call of the upstream tool: its result, or nil, message, code.
---@alias mcp.ForwardCall fun(args: table): mcp.CallToolResult?, string?, mcp.FailCode?

---@class mcp.MountOptions
---Another MCP server's tools, resources and prompts served as the plugin's.
---@field command? string[] stdio: {"prog", "arg", ...}; the server is our child
---@field url? string Streamable HTTP
---@field env? table<string, string|false> adds to the server's environment; false removes a name
---@field cwd? string
---@field headers? table<string, string>
---@field protocol? string "auto" (default) or a revision to pin
---@field connect_timeout? number seconds (30)
---@field stderr? "inherit"
---@field prefix? string put before each mounted tool and prompt name
---@field tools? string[]|fun(tool: table): boolean which tools (default: all)
---@field resources? false leave the resources out
---@field prompts? false leave the prompts out
---@field timeout? number
---@field cancel? "cooperative"|"abort"|"ignore"
---@field grace? number
---@field call_timeout? number bounds each forwarded call
---@field wrap? fun(name: string, args: table, ctx: mcp.Ctx, call: mcp.ForwardCall): mcp.ToolReturn, string?, mcp.FailCode?

---@class mcp.PluginDecl
---@field name string
---@field defaults? mcp.Policy the policy of every tool here, unless a tool sets its own
---@field tools? mcp.Tool[]
---@field resources? (mcp.Resource|mcp.ResourceTemplate)[]
---@field prompts? mcp.Prompt[]
---@field middleware? mcp.Middleware[] run before the methods they name, in order
---@field mount? mcp.MountOptions
---@field http_allow? string[] HOST[:PORT] this plugin's handlers may reach

---@class mcp.Plugin: mcp.PluginDecl

---@alias mcp.Method "tools/list"|"tools/call"|"resources/list"|"resources/templates/list"|"resources/read"|"resources/subscribe"|"resources/unsubscribe"|"prompts/list"|"prompts/get"|"completion/complete"|"tasks/result"

---@class mcp.Request
---The request a middleware gets: read and rewrite params before the method's own checks.
---@field method mcp.Method
---@field params table

---The rest of the chain (the next middleware, last the method): what the client would get, the
---result table, or nil, message, "rpc", {code=, message=, data=} for a JSON-RPC error; after a
---cancel nil, "cancelled: <reason>", "cancelled". Runs once; a second call raises.
---@alias mcp.Next fun(req: mcp.Request): (table|nil), string?, mcp.FailCode?, {code: integer, message: string, data: any}?

---@class mcp.MiddlewareDecl
---@field name string
---@field methods? mcp.Method[] the methods it applies to (default: every method plugins serve)
---@field order? number lower runs first, outermost (default 0; ties in load order)
---@field handler fun(req: mcp.Request, ctx: mcp.Ctx, next: mcp.Next): any, any, any, any

---@class mcp.Middleware: mcp.MiddlewareDecl

---@class mcp.ToolDecl: mcp.Policy
---@field name string
---@field title? string
---@field description? string
---@field inputSchema? table JSON Schema of the arguments, checked before the handler runs
---@field outputSchema? table JSON Schema of structuredContent, checked before the result is sent
---@field annotations? table
---@field task? "forbidden"|"optional"|"required" the tasks extension (default "forbidden")
---@field defer_task? boolean the handler starts its task itself with ctx:task()
---@field scopes? string[] the OAuth scopes a call needs
---@field app? string MCP Apps: the ui:// URI of the resource serving the tool's view (_meta.ui.resourceUri)
---@field visibility? ("model"|"app")[] MCP Apps: who may call it (default both); {"app"}: a view only, not listed to clients without the extension
---@field _meta? table
---@field handler fun(args: table, ctx: mcp.Ctx): mcp.ToolReturn, string?, mcp.FailCode?

---@class mcp.Tool: mcp.ToolDecl

---@alias mcp.Completer string[]|fun(value: string, ctx: mcp.Ctx): (string[]|{values: string[], total?: integer, hasMore?: boolean})

---@alias mcp.ReadReturn nil|string|{text: string}|mcp.BlobContents|table[]|{contents: table[]}

---@class mcp.ResourceDecl
---@field uri string
---@field name? string (default: uri)
---@field title? string
---@field description? string
---@field mimeType? string
---@field size? number
---@field annotations? table
---@field _meta? table
---@field read? fun(ctx: mcp.Ctx): mcp.ReadReturn, string?, mcp.FailCode? required, unless app serves the resource
---@field app? mcp.AppView MCP Apps: the resource is a view's HTML (uri ui://..., mimeType text/html;profile=mcp-app)

---@class mcp.Resource: mcp.ResourceDecl

---An MCP App's view (the io.modelcontextprotocol/ui extension): html or file, one of them.
---@class mcp.AppView
---@field html? string the page
---@field file? string the page's file, relative to the declaring file's directory (below it); watched with --watch
---@field csp? mcp.AppCsp origins the host's Content-Security-Policy for the view allows
---@field permissions? ("camera"|"microphone"|"geolocation"|"clipboard_write")[]
---@field domain? string a dedicated origin for the view, in the host's format
---@field prefers_border? boolean whether the host draws a border and background around it

---@class mcp.AppCsp
---@field connect_domains? string[] fetch, XHR, WebSocket (connect-src)
---@field resource_domains? string[] scripts, styles, images, fonts, media
---@field frame_domains? string[] nested iframes (frame-src)
---@field base_uri_domains? string[] base-uri

---@class mcp.ResourceTemplateDecl
---@field uriTemplate string RFC 6570, one variable per expression: {var}, {+var}, {#var}
---@field name? string (default: uriTemplate)
---@field title? string
---@field description? string
---@field mimeType? string
---@field annotations? table
---@field _meta? table
---@field read fun(params: table<string, string>, ctx: mcp.Ctx): mcp.ReadReturn, string?, mcp.FailCode?
---@field complete? table<string, mcp.Completer>|fun(name: string, value: string, ctx: mcp.Ctx): (string[]|table)

---@class mcp.ResourceTemplate: mcp.ResourceTemplateDecl

---@class mcp.PromptArgument
---@field name string
---@field title? string
---@field description? string
---@field required? boolean

---@class mcp.PromptDecl
---@field name string
---@field title? string
---@field description? string
---@field arguments? mcp.PromptArgument[]
---@field _meta? table
---@field get fun(args: table<string, string>, ctx: mcp.Ctx): (string|table|nil), string?, mcp.FailCode?
---@field complete? table<string, mcp.Completer>|fun(name: string, value: string, ctx: mcp.Ctx): (string[]|table)

---@class mcp.Prompt: mcp.PromptDecl

---------------------------------------------------------------------------
-- Options and results of operations

---@class mcp.HttpRequest
---@field url string http or https
---@field path? string[] segments, each escaped (mcp.url.escape) and appended with "/"
---@field method? string default GET, or POST with a body
---@field headers? table<string, string>
---@field query? table<string, string|number|boolean|(string|number)[]> URL-encoded and appended; a list repeats the key
---@field body? string
---@field json? any sent as application/json
---@field timeout? number seconds (30), never past the request's deadline
---@field connect_timeout? number seconds
---@field max_bytes? integer the largest body or SSE event (16 MiB)
---@field follow? boolean follow redirects (true, at most 10)
---@field on_chunk? fun(bytes: string): boolean? the body streamed (not kept); false ends the transfer
---@field on_sse? fun(event: mcp.SseEvent): boolean? a text/event-stream answer, one event at a time
---@field background? boolean belongs to no call: returns the operation at once

---@class mcp.SseEvent
---@field event? string
---@field data string
---@field id? string

---@class mcp.HttpResponse
---@field status integer
---@field headers table<string, string> by lower-case name; repeated ones joined with ", "
---@field body string
---@field url string after redirects
---@field stopped? boolean a callback ended the transfer early
local HttpResponse = {}

---The body as JSON.
---@return any|nil value, string? message, mcp.FailCode? code
function HttpResponse:json() end

---@class mcp.SpawnOptions
---@field command string[] {"prog", "arg", ...}: prog is found on PATH; no shell
---@field cwd? string
---@field env? table<string, string|false> adds to the server's environment; false removes a name
---@field stdin? string written to the child, then closed (default: /dev/null)
---@field stdout? "capture"|"ignore"|fun(line: string) capture (default), drop, or each line as it arrives
---@field stderr? "capture"|"ignore"|fun(line: string)
---@field timeout? number seconds
---@field max_bytes? integer captured output per stream (16 MiB)

---@class mcp.SpawnResult
---@field code integer the exit status
---@field signal integer the signal that ended it (0: none)
---@field stdout? string
---@field stderr? string
---@field pid integer

---@class mcp.ReadFileOptions
---@field max_bytes? integer a larger file is refused (64 MiB)

---@class mcp.DirEntry
---@field name string
---@field type "file"|"dir"|"link"|"other"

---@class mcp.InputOptions
---@field key? string names the input in an input-required result (2026-07-28)
---@field timeout? number seconds (60), in a session
---@field max_total? number progress from the client restarts the timeout, up to this

---@class mcp.Auth
---@field subject? string
---@field client_id? string
---@field scopes string[]
---@field claims table

---------------------------------------------------------------------------
-- ctx, the handler's second argument

---@class mcp.Ctx
---@field id integer|string the request's JSON-RPC id
---@field tool? string the tool's name (nil outside tools/call)
---@field session integer the number naming the request's session
---@field auth? mcp.Auth with --auth-*: from the request's access token
---@field reason? string why the request was cancelled ("timeout", "shutdown", the client's reason)
---@field deadline? number the deadline on the mcp.now() clock; nil without a timeout
---@field resumed? boolean a 2026-07-28 retry that brought a verified requestState
---@field uri? string in a resource's read: the URI read
---@field prompt? string in a prompt's get: its name
---@field arguments? table<string, string> in a completer: the values the client chose already
local Ctx = {}

---True once the request is cancelled or timed out.
---@return boolean
function Ctx:cancelled() end

---Raises `mcp.CANCELLED` once the request is cancelled, so the handler unwinds
---(its `<close>` variables run); no response is sent.
function Ctx:check() end

---Sends notifications/progress when the request asked for it; a value that
---does not increase is dropped.
---@param progress number
---@param total? number
---@param message? string
function Ctx:progress(progress, total, message) end

---Sends notifications/message (logger: the plugin's name) when the level
---passes the client's logging/setLevel (default "info").
---@param level mcp.LogLevel
---@param data any a string or a JSON value
function Ctx:log(level, data) end

---Yields to the event loop for `seconds`; a cancel wakes it at once.
---@param seconds number
---@return true|nil ok, string? message, mcp.FailCode? code
function Ctx:sleep(seconds) end

---`fn(reason)` runs when the request is cancelled or times out.
---@param fn fun(reason: string)
function Ctx:on_cancel(fn) end

---Runs `fn(...)` inside a span of its own (traces, docs/operations/tracing.md), a child
---of the request's: what `fn` waits on meanwhile (`ctx:http`, SQL, processes, upstream
---requests) is under it. The span ends when `fn` returns or raises (then in error).
---Without tracing, just `fn(...)`. `attrs` may be left out: `ctx:span(name, fn, ...)`.
---@generic R
---@param name string
---@param attrs table<string, string|number|boolean>|nil the span's attributes
---@param fn fun(...): R
---@return R ... what `fn` returns
function Ctx:span(name, attrs, fn, ...) end

---Over HTTP (SSE polling): closes the connection under this request's stream
---without ending the stream; the client resumes it with Last-Event-ID.
---@return true|nil ok, string? message, mcp.FailCode? code "unsupported" where there is no connection to close
function Ctx:close_connection() end

---The seconds left before the deadline; nil without a timeout.
---@return number?
function Ctx:remaining() end

---Runs a child process and yields until it exits.
---@param opts mcp.SpawnOptions
---@return mcp.SpawnResult|nil result, string? message, mcp.FailCode? code, mcp.SpawnResult? partial what was captured when it was stopped
function Ctx:spawn(opts) end

---Reads a whole regular file on the thread pool.
---@param path string
---@param opts? mcp.ReadFileOptions
---@return string|nil content, string? message, mcp.FailCode? code
function Ctx:read_file(path, opts) end

---The entries of a directory, sorted by name.
---@param path string
---@return mcp.DirEntry[]|nil entries, string? message, mcp.FailCode? code
function Ctx:list_dir(path) end

---The canonical absolute path (symlinks, `.` and `..` resolved).
---@param path string
---@return string|nil path, string? message, mcp.FailCode? code
function Ctx:realpath(path) end

---An HTTP request; yields until the response. An HTTP error status is a
---response, not a failure.
---@param req mcp.HttpRequest
---@return mcp.HttpResponse|nil response, string? message, mcp.FailCode? code
function Ctx:http(req) end

---Input from the client: a request to it (a session) or an input request of
---an input-required result (2026-07-28).
---@param method string
---@param params? table
---@param opts? mcp.InputOptions
---@return table|nil result, string? message, mcp.FailCode? code, mcp.RpcError? error the client's JSON-RPC error (code "rpc")
function Ctx:request(method, params, opts) end

---sampling/createMessage (needs the client's sampling capability).
---@param params table
---@param opts? mcp.InputOptions
---@return table|nil result, string? message, mcp.FailCode? code, mcp.RpcError? error
function Ctx:sample(params, opts) end

---elicitation/create (needs the client's elicitation capability).
---@param params table
---@param opts? mcp.InputOptions
---@return table|nil result, string? message, mcp.FailCode? code, mcp.RpcError? error
function Ctx:elicit(params, opts) end

---roots/list (needs the client's roots capability): the roots, then the whole result.
---@param opts? mcp.InputOptions
---@return table[]|nil roots, string|table message_or_result, mcp.FailCode? code
function Ctx:roots(opts) end

---Several inputs at once: `{key = {method =, params =}, ...}`.
---@param requests table<string, {method: string, params?: table}>
---@param opts? mcp.InputOptions
---@return table<string, table> results, table<string, string> errors by key
function Ctx:input(requests, opts) end

---Did the client declare this capability ("sampling", "elicitation", "roots", ...)? A name
---with a slash is an extension's (capabilities.extensions[name]: "io.modelcontextprotocol/ui").
---@param capability string
---@return boolean
function Ctx:supports(capability) end

---Ends the request with -32021 (missing required client capability) unless
---the client declared each capability named.
---@param capability string
---@param ... string
function Ctx:require(capability, ...) end

---The tasks extension: the rest of the call runs as a task, and the request
---is answered with it now.
---@return string|nil task_id, string? message, mcp.FailCode? code "unsupported" where there can be no task
function Ctx:task() end

---------------------------------------------------------------------------
-- Other MCP servers: mcp.connect

---@class mcp.ConnectOptions
---@field command? string[] stdio: {"prog", "arg", ...}; the server is our child
---@field url? string Streamable HTTP
---@field env? table<string, string|false> adds to the server's environment; false removes a name
---@field cwd? string
---@field stderr? "inherit" else each line goes to the log
---@field headers? table<string, string>
---@field protocol? string "auto" (default) or a revision to pin ("2025-11-25", ...)
---@field connect_timeout? number seconds (30)
---@field timeout? number the default of each request's
---@field capabilities? table what the client declares
---@field name? string for the log
---@field on_notification? fun(method: string, params: table)

---@class mcp.ClientRequestOptions
---@field timeout? number seconds
---@field on_progress? fun(progress: number, total?: number, message?: string)
---@field ctx? mcp.Ctx the handler's, for the requests the server makes (sampling, ...)

---@class mcp.ServerInfo
---@field revision string
---@field serverInfo table
---@field capabilities table
---@field instructions? string

---@class mcp.Client
---@field server? mcp.ServerInfo once connected
local Client = {}

---Connects now.
---@return mcp.ServerInfo|nil server, string? message, mcp.FailCode? code
function Client:connect() end

---@param opts? mcp.ClientRequestOptions
---@return table[]|nil tools, string? message, mcp.FailCode? code
function Client:list_tools(opts) end

---@param opts? mcp.ClientRequestOptions
---@return table[]|nil resources, string? message, mcp.FailCode? code
function Client:list_resources(opts) end

---@param opts? mcp.ClientRequestOptions
---@return table[]|nil templates, string? message, mcp.FailCode? code
function Client:list_resource_templates(opts) end

---@param opts? mcp.ClientRequestOptions
---@return table[]|nil prompts, string? message, mcp.FailCode? code
function Client:list_prompts(opts) end

---Calls a tool: its result (isError results too).
---@param name string
---@param args? table
---@param opts? mcp.ClientRequestOptions
---@return mcp.CallToolResult|nil result, string? message, mcp.FailCode? code, mcp.RpcError? error
function Client:call(name, args, opts) end

---@param uri string
---@param opts? mcp.ClientRequestOptions
---@return table|nil result, string? message, mcp.FailCode? code, mcp.RpcError? error
function Client:read(uri, opts) end

---@param name string
---@param args? table<string, string>
---@param opts? mcp.ClientRequestOptions
---@return table|nil result, string? message, mcp.FailCode? code, mcp.RpcError? error
function Client:get_prompt(name, args, opts) end

---Any other request.
---@param method string
---@param params? table
---@param opts? mcp.ClientRequestOptions
---@return table|nil result, string? message, mcp.FailCode? code, mcp.RpcError? error
function Client:request(method, params, opts) end

---Ends the connection (the child is stopped, the HTTP session deleted).
function Client:close() end

---------------------------------------------------------------------------
-- SQLite: mcp.sqlite

---@class mcp.SqliteOpenOptions
---@field readonly? boolean
---@field create? boolean create a missing file (true)
---@field busy_timeout? number seconds another connection's lock is waited for (5)
---@field max_bytes? integer the largest result of one statement (64 MiB)

---@alias mcp.SqlParams (any)[]|table<string, any>

---@class mcp.ExecResult
---@field changes integer rows inserted, updated or deleted
---@field last_insert_id integer

---@class mcp.DbInfo
---@field path string
---@field statements integer
---@field prepared integer
---@field hits integer
---@field queued integer
---@field transaction boolean

---@class mcp.Db
local Db = {}

---Runs sql, which may hold several statements (each gets params).
---@param sql string
---@param params? mcp.SqlParams
---@return mcp.ExecResult|nil result, string? message, mcp.FailCode? code
function Db:exec(sql, params) end

---The rows of one statement (a NULL column is absent from its row).
---@param sql string
---@param params? mcp.SqlParams
---@return table[]|nil rows, string? message, mcp.FailCode? code
function Db:query(sql, params) end

---An iterator over the rows of one statement, for a generic for.
---@param sql string
---@param params? mcp.SqlParams
---@return (fun(): table?)|nil iterator, string? message, mcp.FailCode? code
function Db:rows(sql, params) end

---BEGIN, fn(db), COMMIT: fn's values (true when none). fn raising, or
---returning nil, message, rolls back.
---@generic T
---@param fn fun(db: mcp.Db): T
---@param mode? "deferred"|"immediate"|"exclusive"
---@return T|nil result, string? message, mcp.FailCode? code
function Db:transaction(fn, mode) end

---Closes the database; statements still queued are cancelled.
function Db:close() end

---The statement cache and the queue.
---@return mcp.DbInfo
function Db:info() end

---------------------------------------------------------------------------
-- mcp

---@class mcp
local mcp = {}

---JSON null.
---@type mcp.Null
mcp.null = nil

---The error value of `ctx:check()`: `if err == mcp.CANCELLED`.
---@type mcp.Cancelled
mcp.CANCELLED = nil

---luamcp's version.
---@type string
mcp.version = nil

---This plugin file's section of `plugins = {NAME = {...}}` in the --config
---file, read-only; an empty table without one.
---@type table
mcp.settings = nil

---SQLite databases whose statements run on the thread pool.
mcp.sqlite = {}

---The SQLite library's version.
---@type string
mcp.sqlite.version = nil

---Opens a database (":memory:" for a private in-memory one).
---@param path string
---@param opts? mcp.SqliteOpenOptions
---@return mcp.Db|nil db, string? message, mcp.FailCode? code
function mcp.sqlite.open(path, opts) end

---`s` bound as a BLOB rather than text.
---@param s string
---@return userdata
function mcp.sqlite.blob(s) end

---Declares a plugin: the value a plugin file returns.
---@param decl mcp.PluginDecl
---@return mcp.Plugin
function mcp.plugin(decl) end

---Declares a tool.
---@param decl mcp.ToolDecl
---@return mcp.Tool
function mcp.tool(decl) end

---Declares a middleware: a step every request of its methods goes through before the method.
---What it returns means what a handler returns in that method (tools/call: a tool's returns).
---@param decl mcp.MiddlewareDecl
---@return mcp.Middleware
function mcp.middleware(decl) end

---Declares a resource.
---@param decl mcp.ResourceDecl
---@return mcp.Resource
function mcp.resource(decl) end

---Declares a resource template.
---@param decl mcp.ResourceTemplateDecl
---@return mcp.ResourceTemplate
function mcp.resource_template(decl) end

---Declares a prompt.
---@param decl mcp.PromptDecl
---@return mcp.Prompt
function mcp.prompt(decl) end

---Is it an mcp.plugin{...}?
---@param v any
---@return boolean
function mcp.is_plugin(v) end

---Is it an mcp.resource{...}?
---@param v any
---@return boolean
function mcp.is_resource(v) end

---Is it an mcp.resource_template{...}?
---@param v any
---@return boolean
function mcp.is_resource_template(v) end

---Is it an mcp.prompt{...}?
---@param v any
---@return boolean
function mcp.is_prompt(v) end

---A result with one text item.
---@param s any made a string with tostring
---@return mcp.CallToolResult
function mcp.text(s) end

---A tool error: isError, the message as text (a table's `message`, else its JSON).
---@param msg string|{message: string}|table
---@return mcp.CallToolResult
function mcp.error(msg) end

---A JSON-RPC error, returned or raised by a handler (the only way to send one).
---@param code integer
---@param message string
---@param data? any
---@return mcp.RpcError
function mcp.rpc_error(code, message, data) end

---A result with one image item.
---@param data string base64
---@param mimeType string
---@return mcp.CallToolResult
function mcp.image(data, mimeType) end

---Binary resource contents.
---@param bytes string
---@param mimeType? string
---@return mcp.BlobContents
function mcp.blob(bytes, mimeType) end

---The base64 text (RFC 4648, padded) of a byte string.
---@param bytes string
---@return string
function mcp.base64(bytes) end

---Marks a table as a JSON array (an empty table encodes as an object otherwise).
---@generic T: table
---@param t? T
---@return T|mcp.Array
function mcp.array(t) end

---Is the table marked as a JSON array?
---@param t any
---@return boolean
function mcp.is_array(t) end

---Runs each function in a coroutine of its own, in which every wait works;
---returns one table per function, in order, with every value it returned
---(`table.pack` style). An error in one cancels the others' waits, closes them
---(their `<close>` variables run) and is raised.
---@param fns (fun(): ...)[]
---@return mcp.Packed ...
function mcp.all(fns) end

---The server's clock in seconds (monotonic; the clock of ctx.deadline).
---@return number
function mcp.now() end

---The string of a secret (env() and file() of the configuration file); any
---other value as it is.
---@generic T
---@param v T
---@return string|T
function mcp.reveal(v) end

---A line in the server's log (stderr), naming the plugin and, in a tools/call,
---the tool: `luamcp: LEVEL: PLUGIN: TOOL: message`. With more arguments `fmt`
---is a `string.format` format; alone it is the message. `print`, `io.write` and
---`io.stdout:write` log there too, at info. `ctx:log` is the client's log.
---@param level mcp.LogLevel
---@param fmt any
---@param ... any
function mcp.server_log(level, fmt, ...) end

---A client of another MCP server, over stdio (`command`) or Streamable HTTP (`url`).
---@param opts mcp.ConnectOptions
---@return mcp.Client
function mcp.connect(opts) end

---Sends notifications/resources/updated to every session subscribed to uri.
---@param uri string
---@return integer sessions how many it went to
function mcp.notify_resource_updated(uri) end

---The wire's JSON codec.
mcp.json = {}

---Encodes a Lua value (mcp.null: null, mcp.array: an array).
---@param v any
---@return string|nil json, string? message, mcp.FailCode? code
function mcp.json.encode(v) end

---Decodes JSON text; an error names the byte offset.
---@param s string
---@return any|nil value, string? message, mcp.FailCode? code
function mcp.json.decode(s) end

---URL building.
mcp.url = {}

---Percent-encodes everything but RFC 3986's unreserved characters.
---@param s string
---@return string
function mcp.url.escape(s) end

---------------------------------------------------------------------------
-- Deprecated: one release, each logs one warning at its first use.

---@deprecated use ctx:sleep
---@param seconds number
---@return true|nil ok, string? message, mcp.FailCode? code
function mcp.sleep(seconds) end

---@deprecated use ctx:cancelled
---@return boolean
function mcp.cancelled() end

---@deprecated use ctx:log
---@param level mcp.LogLevel
---@param data any
function mcp.log(level, data) end

---@deprecated use ctx:http
---@param req mcp.HttpRequest
---@return mcp.HttpResponse|nil response, string? message, mcp.FailCode? code
function mcp.http(req) end

---@deprecated use ctx:spawn{command = {cmd, ...}}
---@param cmd string
---@param args? string[]
---@param opts? table
---@return mcp.SpawnResult|nil result, string? message, mcp.FailCode? code
function mcp.spawn(cmd, args, opts) end

---@deprecated use ctx:read_file
---@param path string
---@param opts? mcp.ReadFileOptions
---@return string|nil content, string? message, mcp.FailCode? code
function mcp.read_file(path, opts) end

---@deprecated use ctx:list_dir
---@param path string
---@return mcp.DirEntry[]|nil entries, string? message, mcp.FailCode? code
function mcp.list_dir(path) end

---@deprecated use ctx:realpath
---@param path string
---@return string|nil path, string? message, mcp.FailCode? code
function mcp.realpath(path) end

return mcp
