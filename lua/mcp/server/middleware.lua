-- Middleware (mcp.middleware{...} in a plugin): the chain a request of a
-- covered method goes through before the method itself. server.lua's
-- dispatch hands such a request to M.run; the others go straight to the
-- method. Plugins loading and reloading rebuild the chains (M.build); a call
-- in flight keeps the chain it started with.
--
-- One table per call, st, is the chain's state and is also the `next` each
-- middleware gets (callable: NEXT.__call), so a call makes no closure. Its
-- fields are in its array part (small: the collector's work grows with the
-- bytes a call allocates): st[GAVE] is the result the last next returned
-- (returned as it is, it is not shaped again), st[DEPTH] is the position of the middleware whose
-- own code runs (the only one that can call next; 0 once the call is over),
-- st[CALLED] the last position that called next (middleware k runs only
-- once k - 1 called next, so k called next when st[CALLED] >= k).
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local decl = require "mcp.decl"
local reg = require "mcp.server.registry"

local CHAIN, METHOD, ID, SESSION, CTX, DEPTH, CALLED, KEY, GAVE = 1, 2, 3, 4, 5, 6, 7, 8, 9

local M = {}
local methods, tools = reg.methods, reg.tools
local all = {}                        -- every middleware loaded, in load order
local chains = {}                     -- method -> its middleware, outermost first
M.chains = chains

-- Does any middleware apply to method? (Methods none covers may run in C.)
function M.covers(method)
  return chains[method] ~= nil
end

function M.reset()
  for k in pairs(all) do all[k] = nil end
end

function M.add(plugin)
  for _, mw in ipairs(plugin.middleware) do
    mw.plugin = plugin
    all[#all + 1] = mw
  end
end

-- The chains of every method, from the middleware added: by order (lower
-- first, outermost), then load order. New lists, so that calls in flight
-- keep theirs.
function M.build()
  local seq = {}
  for i, mw in ipairs(all) do seq[mw] = i end
  local function before(a, b)
    local oa, ob = a.order or 0, b.order or 0
    if oa ~= ob then return oa < ob end
    return seq[a] < seq[b]
  end
  for method in pairs(decl.MIDDLEWARE_METHODS) do
    local list = {}
    for _, mw in ipairs(all) do
      local covered = mw.methods == nil
      for _, m in ipairs(mw.methods or {}) do covered = covered or m == method end
      if covered then list[#list + 1] = mw end
    end
    table.sort(list, before)
    chains[method] = #list > 0 and list or nil
  end
end

local function log(level, fmt, ...)
  core.log_stderr(level, string.format(fmt, ...))
end

local function cancelled()
  return nil, "cancelled: " .. (core.reason() or "cancelled"), "cancelled"
end

local function rpc(code, message, data)
  return nil, message, "rpc", { code = code, message = message, data = data }
end

local function tool_error(msg)
  return { content = mcp.array { { type = "text", text = msg } }, isError = true }
end

-- A middleware's failure (nil, message, code) outside tools/call, as the
-- JSON-RPC error of the method (lua-api.md, "Middleware").
local NOT_FOUND = { ["resources/read"] = true, ["resources/subscribe"] = true }

local function rpc_failure(st, msg, code)
  if code == "not_found" and NOT_FOUND[st[METHOD]] then
    return nil, -32002, "Resource not found", { uri = st[KEY], reason = msg }
  end
  if code == "invalid" or code == "not_found" then return nil, -32602, "Invalid params: " .. msg end
  if code == "denied" then return nil, -32600, "Forbidden: " .. msg end
  return nil, -32603, "Internal error: " .. msg
end

-- What middleware mw returned, as the method's answer in the core's
-- protocol: a result table, or nil, code, message, data.
local function shape(st, mw, res, msg, code, err)
  if res == st[GAVE] and res ~= nil and msg == nil then return res end
  if res == nil and code == "rpc" and type(err) == "table" and math.type(err.code) == "integer" then
    return nil, err.code, tostring(err.message), err.data     -- what next gave for a JSON-RPC error
  end
  if st[METHOD] == "tools/call" then
    return outcome.tool(tools[st[KEY]] or { name = tostring(st[KEY]) }, res, msg, code)
  end
  if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
  if type(res) == "table" then return res end
  local fmsg, fcode = outcome.failure(mw, "middleware ", mw.name, res, msg, code)
  if fmsg then return rpc_failure(st, fmsg, fcode) end
  local what = res == nil and "nothing" or "a " .. type(res)
  log("error", "middleware %s returned %s for %s", mw.name, what, st[METHOD])
  return nil, -32603, "Internal error: middleware " .. mw.name .. " returned " .. what
end

-- The core's protocol as next's: the result, or nil, message, "rpc", err.
local function as_next(st, res, code, msg, data)
  if res == nil then
    if math.type(code) == "integer" then return rpc(code, msg, data) end
    return nil
  end
  st[GAVE] = res
  return res
end

local function no_method()            -- gone since the call started (a reload)
  return nil, -32601, "Method not found"
end

-- The step at st[DEPTH]: its middleware, or the method itself. (The frames
-- under a handler stay few and small: every waiting call keeps its stack.)
local function step(st, req)
  local mw = st[CHAIN][st[DEPTH]]
  if mw then return mw.handler(req, st[CTX], st) end
  return (methods[st[METHOD]] or no_method)(req.params, st[ID], st[SESSION], st[CTX])
end

-- An error raised under next: its position and traceback to the log (as the
-- core logs a handler's); an mcp.rpc_error, or a cancel's, is no failure.
local function on_error(err)
  if err ~= mcp.CANCELLED and not outcome.is_rpc_error(err) and not core.cancelled() then
    local tool = core.tool()
    log("error", "request failed%s: %s", tool and " (tool " .. tool .. ")" or "",
        debug.traceback(type(err) == "string" and err or outcome.message_of(err), 2))
  end
  return err
end

-- What the client would get for the error raised under next.
local function raised(st, err)
  if core.cancelled() then return cancelled() end
  if outcome.is_rpc_error(err) then return rpc(err.code, err.message, err.data) end
  local _, msg = outcome.raised(err)
  if st[METHOD] == "tools/call" then return tool_error(msg) end
  return rpc(-32603, "Internal error: " .. msg)
end

-- After the step at st[DEPTH] (what raises there escapes no inner next, so
-- st[DEPTH] is still that step's): back to the middleware that called next.
local function after(st, ok, res, msg, code, err)
  local k = st[DEPTH] - 1
  st[DEPTH] = k
  if not ok then return raised(st, res) end
  if k == #st[CHAIN] then return as_next(st, res, msg, code, err) end
  return as_next(st, shape(st, st[CHAIN][k + 1], res, msg, code, err))
end

-- A next that cannot run: raised at the middleware's line.
local function misuse(st, k)
  if k == 0 then error("next: the request is over (call next before the middleware returns)", 3) end
  if st[CALLED] >= k then error("next: called twice by middleware " .. st[CHAIN][k].name, 3) end
  error("bad argument #1 to 'next' (a req with params expected)", 3)
end

-- next(req), called by middleware st[DEPTH]: the rest of the chain, once.
local function advance(st, req)
  local k = st[DEPTH]
  -- no type(): a C call costs more than the rest of this check
  if k == 0 or st[CALLED] >= k or req == nil or req.params == nil then misuse(st, k) end
  st[CALLED] = k
  if core.cancelled() then return cancelled() end
  st[DEPTH] = k + 1
  local ok, res, msg, code, err = xpcall(step, on_error, st, req)
  return after(st, ok, res, msg, code, err)
end

local NEXT = { __call = advance, __name = "mcp.next" }

local function finish(st, res, msg, code, err)
  st[DEPTH] = 0
  return shape(st, st[CHAIN][1], res, msg, code, err)
end

-- A request of a method chain covers: the first middleware, unprotected as
-- a handler is (what it raises, the core answers as for a handler). The
-- method's setup still runs on the main thread (tools.lua's open_call); the
-- chain adds its frames (run, the middleware, next and xpcall) under the
-- handler's, with few live registers at each call.
function M.run(chain, method, params, id, session)
  local st = setmetatable({ chain, method, id, session, decl.ctx(id), 1, 0, params.name or params.uri, false },
                          NEXT)
  local res, msg, code, err = chain[1].handler({ method = method, params = params }, st[CTX], st)
  return finish(st, res, msg, code, err)
end

return M
