-- HTTP from a tool: fetch a URL with ctx:http. The request is an operation
-- of the call: cancel the call (or let it time out) and the connection
-- closes at once. Restrict where it may go with --http-allow HOST[:PORT],
-- or here with http_allow = { "api.example.com" }.
local mcp = require "mcp"

local MAX = 256 * 1024            -- bytes of body kept

return mcp.plugin {
  name = "web",
  defaults = { timeout = 30, cancel = "cooperative", grace = 2 },
  tools = {
    mcp.tool {
      name = "fetch_url",
      title = "Fetch a URL",
      description = "GET an http(s) URL; returns the status, the content type and the body (text, cut at 256 KiB)",
      annotations = { readOnlyHint = true, openWorldHint = true },
      inputSchema = {
        type = "object",
        properties = {
          url = { type = "string", description = "http:// or https:// URL" },
          headers = { type = "object", description = "extra request headers, name = value" },
        },
        required = { "url" },
      },
      handler = function(args, ctx)
        local got, parts = 0, {}
        local res, err, code = ctx:http {
          url = args.url,
          headers = args.headers,
          -- streamed, so progress can tell how much has arrived
          on_chunk = function(bytes)
            got = got + #bytes
            if got <= MAX then parts[#parts + 1] = bytes end
            ctx:progress(got, nil, ("%d bytes"):format(got))
          end,
        }
        if not res then return mcp.error(("fetch failed (%s): %s"):format(code, err)) end
        local body = #parts > 0 and table.concat(parts):sub(1, MAX) or res.body
        return mcp.text(("%d %s\n\n%s"):format(res.status, res.headers["content-type"] or "", body))
      end,
    },
  },
}
