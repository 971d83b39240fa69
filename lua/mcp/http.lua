-- ctx:http: HTTP requests from handlers (src/lua/httpc.c, on
-- libcurl), each an operation of the running call: a cancel, a timeout, an
-- abort or the end of the call closes its connection at once.
local core = require "mcp.core"
local fail = require "mcp.fail"
local await = require "mcp.await"

local M = {}

local Response = {}
-- a function, not the table itself: obj.__index must not hand a sandboxed
-- plugin the methods every plugin shares
Response.__index = function(_, k) return Response[k] end

-- The body as JSON: a Lua value (mcp.json.decode), or nil and why.
function Response:json()
  return core.decode(self.body)
end

-- req: see the README ("HTTP requests"). Returns res = {status=, headers=,
-- body=, url=} with res:json(), or nil, message, code. A background request
-- belongs to no call: its op (op:cancel(), op:done()) is returned at once.
function M.request(req)
  if type(req) ~= "table" then fail.raise("http: expects a request table") end
  local op, msg, code = core.http(req)
  if not op then return nil, msg, code end
  if req.background then return op end
  local res
  res, msg, code = await.wait(op)
  if not res then return nil, msg, code end
  return setmetatable(res, Response)
end

return M
