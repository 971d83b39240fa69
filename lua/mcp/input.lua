-- Input from the client while a request runs: elicitation, sampling, roots.
--
-- In a session (2024-11-05 .. 2025-11-25) each input is a request to the
-- client that the handler waits on (mcp.core.request). A 2026-07-28 request
-- cannot wait: it ends with an input-required result (multi round-trip
-- requests, basic/patterns/mrtr) and the client retries it with the answers.
-- The handler is then run again from the start, and this time the same
-- ctx:elicit (same key) returns the answer at once. So handlers see one API
-- under both revisions; what runs before an input is run once per round.
--
-- The answers of earlier rounds travel in requestState, sealed by the core
-- (HMAC-SHA-256, mcp.core.seal) together with the request they belong to (a
-- digest of method, name or uri, and arguments) and an expiry: the client
-- cannot change them, move them to another request, or replay them late.
-- They are the client's own answers, so the state is signed, not encrypted.
local core = require "mcp.core"
local mcp = require "mcp"
local decl = require "mcp.decl"

local M = {}

local CAPABILITY = {
  ["elicitation/create"] = "elicitation",
  ["sampling/createMessage"] = "sampling",
  ["roots/list"] = "roots",
}

-- The JSON text of v with keys sorted: the same arguments give the same text
-- whatever order the client wrote them in.
local function canonical(v, out)
  local t = type(v)
  if t == "table" and mcp.is_array(v) then
    out[#out + 1] = "["
    for i = 1, #v do
      if i > 1 then out[#out + 1] = "," end
      canonical(v[i], out)
    end
    out[#out + 1] = "]"
  elseif t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      out[#out + 1] = string.format("%s%q:", i > 1 and "," or "", tostring(k))
      canonical(v[k], out)
    end
    out[#out + 1] = "}"
  elseif t == "string" then
    out[#out + 1] = string.format("%q", v)
  elseif math.type(v) == "float" then
    out[#out + 1] = string.format("%.17g", v)
  else
    out[#out + 1] = tostring(v)
  end
  return out
end

-- The digest naming the request a state belongs to: method, name or uri,
-- and arguments. Made when first needed (most calls never ask for input).
local function binding(st)
  st.bind = st.bind or core.sha256(table.concat(canonical(st.request, {})))
  return st.bind
end

local function reject(why, detail)
  core.log_stderr("info", "requestState rejected: " .. detail)
  return nil, -32602, "Invalid params: requestState " .. why
end

-- For a tools/call, prompts/get or resources/read of a 2026-07-28 client:
-- read params.inputResponses and params.requestState into ctx. Returns true,
-- or nil, code, message.
-- A request's first-round state: no answers yet, bound to its method, name,
-- arguments and (with --auth-*) the token's subject, whose retry it is.
local function new_state(method, name, args)
  local auth = core.auth()
  return { answers = {}, kept = {}, n = 0, request = { method, name, args, auth and auth.subject } }
end

function M.open(ctx, method, params, name, args)
  if not core.rev2026() then return true end
  local responses, state = params.inputResponses, params.requestState
  if responses ~= nil and (type(responses) ~= "table" or mcp.is_array(responses)) then
    return nil, -32602, "Invalid params: inputResponses must be an object"
  end
  if state ~= nil and type(state) ~= "string" then
    return nil, -32602, "Invalid params: requestState must be a string"
  end
  -- with --auth-*, the state is the token subject's: another subject's retry fails the binding
  local st = new_state(method, name, args or {})
  if state ~= nil then
    local text = core.unseal(state)
    local p = text and core.decode(text)
    if type(p) ~= "table" or p.v ~= 1 or type(p.a) ~= "table" then
      return reject("failed verification", "not sealed by this server, or changed")
    end
    if p.b ~= binding(st) then return reject("belongs to another request", "sealed for another request") end
    if type(p.e) ~= "number" or p.e < core.wall() then return reject("has expired", "expired") end
    st.answers = p.a
  end
  -- an answer already in the state stands: a retry cannot change it
  for k, v in pairs(responses or {}) do
    if st.answers[k] == nil then st.answers[k] = v end
  end
  decl.input_of[ctx] = st
  ctx.resumed = state ~= nil
  return true
end

-- A first round's state on the C path, made when the handler first asks
-- for input: what M.open makes for a tools/call without requestState or
-- inputResponses (no Lua runs for a call that asks for none).
getmetatable(decl.input_of).__index = function(t, ctx)
  local args = core.input_args(ctx)      -- the running call's, held by it (fastpath.c)
  if args == nil then return nil end
  local st = new_state("tools/call", core.tool(), args)
  rawset(t, ctx, st)
  return st
end

-- What is wrong with an answer to an input request of method, or nil.
local function check_answer(method, v)
  if type(v) ~= "table" or mcp.is_array(v) then return "must be an object" end
  if method == "elicitation/create" then
    local a = v.action
    if a ~= "accept" and a ~= "decline" and a ~= "cancel" then
      return 'needs an action ("accept", "decline" or "cancel")'
    end
    if v.content ~= nil and (type(v.content) ~= "table" or mcp.is_array(v.content)) then
      return "has a content that is not an object"
    end
  elseif method == "sampling/createMessage" then
    if type(v.role) ~= "string" or type(v.content) ~= "table" then return "needs a role and a content" end
  elseif method == "roots/list" then
    if type(v.roots) ~= "table" then return "needs a roots array" end
  end
end

local function seal(st)
  local payload = { v = 1, b = binding(st), e = math.floor(core.wall() + core.config.state_ttl), a = st.kept }
  return core.seal(assert(core.encode(payload)))
end

-- A key for an input request the handler did not name: the same in every
-- round as long as the handler asks in the same order.
function M.key(ctx, method)
  local st = decl.input_of[ctx]
  st.n = st.n + 1
  return (CAPABILITY[method] or "input") .. "_" .. st.n
end

local function unoffered(cap)
  return string.format("the client does not offer %s (no %s capability)", cap, cap)
end

-- Inputs the handler waits for: one request after the other in a session;
-- all outstanding at once (the task's inputRequests, answered by
-- tasks/update) in a task of the tasks extension. Returns results, errors,
-- codes: three tables by key (codes: each error's code, src/lua/fail.h).
local function wait(requests, opts)
  local results, errors, codes, keys = {}, {}, {}, {}
  opts = opts or {}
  for k, r in pairs(requests) do
    local cap = CAPABILITY[r.method]
    if cap and not core.client_supports(cap) then
      errors[k], codes[k] = unoffered(cap), "unsupported"
    else
      keys[#keys + 1] = k
    end
  end
  table.sort(keys)
  if core.task_input() and #keys > 0 then
    local list = {}
    for i, k in ipairs(keys) do list[i] = { method = requests[k].method, params = requests[k].params or {} } end
    local res, err, code = core.request_all(list, opts.timeout)
    for i, k in ipairs(keys) do
      local bad = res and check_answer(list[i].method, res[i])
      if bad then                                  -- tasks/update took it as it came
        errors[k], codes[k] = "the client's answer " .. bad, "protocol"
      elseif res then
        results[k] = res[i]
      else
        errors[k], codes[k] = err, code
      end
    end
    return results, errors, codes
  end
  for _, k in ipairs(keys) do
    local r = requests[k]
    results[k], errors[k], codes[k] = core.request(r.method, r.params or {}, opts.timeout, opts.max_total)
  end
  return results, errors, codes
end

-- requests: { key = { method = ..., params = ... }, ... }. Returns results,
-- errors, codes: tables by key (an answer, or why there is none and its code). Under
-- 2026-07-28, when an input the client can give has no answer yet, the
-- request ends here with an input-required result asking for all of them.
function M.ask(ctx, requests, opts)
  local st = decl.input_of[ctx]
  if not st or core.task_input() then return wait(requests, opts) end
  local results, errors, codes = {}, {}, {}
  local missing
  for k, r in pairs(requests) do
    local cap = CAPABILITY[r.method]
    if cap == nil then
      errors[k], codes[k] = tostring(r.method) .. " cannot be an input request", "unsupported"
    elseif not core.client_supports(cap) then
      errors[k], codes[k] = unoffered(cap), "unsupported"
    elseif st.answers[k] ~= nil then
      local bad = check_answer(r.method, st.answers[k])
      if bad then core.finish(nil, -32602, "Invalid params: inputResponses." .. k .. " " .. bad) end
      st.kept[k] = st.answers[k]
      results[k] = st.answers[k]
    else
      missing = missing or {}
      missing[k] = { method = r.method, params = r.params or {} }
    end
  end
  if missing then
    core.finish({ resultType = "input_required", inputRequests = missing, requestState = seal(st) })
  end
  return results, errors, codes
end

-- ctx:require(capability, ...): end the request with -32021 unless the
-- client declared each capability.
function M.require(ctx, ...)
  local missing, names = nil, {}
  for i = 1, select("#", ...) do
    local cap = select(i, ...)
    if not core.client_supports(cap) then
      missing = missing or {}
      if cap:find("/", 1, true) then      -- an extension's name: capabilities.extensions[cap]
        missing.extensions = missing.extensions or {}
        missing.extensions[cap] = {}
      else
        missing[cap] = {}
      end
      names[#names + 1] = cap
    end
  end
  if missing then
    table.sort(names)
    core.finish(nil, -32021, "Missing required client capability: " .. table.concat(names, ", "),
                { requiredCapabilities = missing })
  end
  return ctx
end

return M
