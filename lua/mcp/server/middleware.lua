-- Middleware (mcp.middleware{...} in a plugin): the chain a request of a
-- covered method goes through before the method itself. server.lua's
-- dispatch hands such a request to M.run; the others go straight to the
-- method. Plugins loading and reloading rebuild the chains (M.build); a call
-- in flight keeps the chain it started with.
--
-- The chain runs in C (src/lua/chain.c: core.chain_run, and `next`, a C
-- closure that holds the call's chain state); this file keeps the chains and
-- the rare paths chain.c calls back: what a middleware returned that is not
-- the result next gave (shape), and what raised under next (on_error, raised).
local core = require "mcp.core"
local mcp = require "mcp"
local outcome = require "mcp.result"
local decl = require "mcp.decl"
local reg = require "mcp.server.registry"

local M = {}
local methods, tools = reg.methods, reg.tools
local all = {}                        -- every middleware loaded, in load order
local chains = {}                     -- method -> its middleware, outermost first
M.chains = chains
-- A sandboxed plugin's middleware sees only its own tools' calls: the
-- tools/call chain of each such tool, its own middleware in it.
local tool_chains = {}                -- tool name -> its tools/call chain
M.tool_chains = tool_chains

-- Does any middleware apply to method? (Methods none covers may run in C.)
function M.covers(method)
  return chains[method] ~= nil or (method == "tools/call" and next(tool_chains) ~= nil)
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
  local function covered(mw, method)
    if mw.methods == nil then return true end
    for _, m in ipairs(mw.methods) do
      if m == method then return true end
    end
    return false
  end
  for method in pairs(decl.MIDDLEWARE_METHODS) do
    local list = {}
    for _, mw in ipairs(all) do
      if not mw.plugin.sandboxed and covered(mw, method) then list[#list + 1] = mw end
    end
    table.sort(list, before)
    list.method = method              -- for chain.c
    chains[method] = #list > 0 and list or nil
  end
  for k in pairs(tool_chains) do tool_chains[k] = nil end
  for _, mw in ipairs(all) do
    if mw.plugin.sandboxed and covered(mw, "tools/call") then
      for _, tool in ipairs(mw.plugin.tools) do
        local list = tool_chains[tool.name]
        if not list then
          list = { method = "tools/call", table.unpack(chains["tools/call"] or {}) }
          tool_chains[tool.name] = list
        end
        list[#list + 1] = mw
      end
    end
  end
  for _, list in pairs(tool_chains) do table.sort(list, before) end
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

local function rpc_failure(method, key, msg, code)
  if code == "not_found" and NOT_FOUND[method] then
    return nil, -32002, "Resource not found", { uri = key, reason = msg }
  end
  if code == "invalid" or code == "not_found" then return nil, -32602, "Invalid params: " .. msg end
  if code == "denied" then return nil, -32600, "Forbidden: " .. msg end
  return nil, -32603, "Internal error: " .. msg
end

-- What middleware mw returned, as the method's answer in the core's
-- protocol: a result table, or nil, code, message, data. gave: the result
-- next last gave; key: the request's params.name or params.uri.
-- Read raw, as result.lua reads (no metamethod of the plugin's runs here).
local function shape(method, key, gave, mw, res, msg, code, err)
  if rawequal(res, gave) and res ~= nil and msg == nil then return res end
  if res == nil and code == "rpc" and type(err) == "table" and math.type(rawget(err, "code")) == "integer" then
    return nil, rawget(err, "code"), outcome.message_of(rawget(err, "message")), rawget(err, "data")
  end
  if method == "tools/call" then
    return outcome.tool(tools[key] or { name = tostring(key) }, res, msg, code)
  end
  if outcome.is_rpc_error(res) then return nil, res.code, res.message, res.data end
  if type(res) == "table" then return res end
  local fmsg, fcode = outcome.failure(mw, "middleware ", mw.name, res, msg, code)
  if fmsg then return rpc_failure(method, key, fmsg, fcode) end
  local what = res == nil and "nothing" or "a " .. type(res)
  log("error", "middleware %s returned %s for %s", mw.name, what, method)
  return nil, -32603, "Internal error: middleware " .. mw.name .. " returned " .. what
end

-- An error raised under next: its position and traceback to the log (as the
-- core logs a handler's); an mcp.rpc_error, or a cancel's, is no failure.
local function on_error(err)
  if not rawequal(err, mcp.CANCELLED) and not outcome.is_rpc_error(err) and not core.cancelled() then
    local tool = core.tool()
    log("error", "request failed%s: %s", tool and " (tool " .. tool .. ")" or "",
        debug.traceback(type(err) == "string" and err or outcome.message_of(err), 2))
  end
  return err
end

-- What the client would get for the error raised under next.
local function raised(method, err)
  if core.cancelled() then return cancelled() end
  if outcome.is_rpc_error(err) then return rpc(err.code, err.message, err.data) end
  local _, msg = outcome.raised(err)
  if method == "tools/call" then return tool_error(msg) end
  return rpc(-32603, "Internal error: " .. msg)
end

core.chain_setup { ctx_mt = getmetatable(decl.ctx(0)), methods = methods, on_error = on_error, raised = raised, shape = shape }

-- run(chain, method, params, id, session): a request of a method chain
-- covers. The first middleware runs unprotected, as a handler does (what it
-- raises, the core answers as for a handler). The method's setup still runs
-- on the main thread (tools.lua's open_call).
M.run = core.chain_run

return M
