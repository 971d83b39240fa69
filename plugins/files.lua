-- Lists and reads files under one root directory: $LUAMCP_FILES_ROOT, or the
-- server's current directory. Reads go through libuv's thread pool
-- (ctx:read_file), so a big file never stalls other requests.
--
-- Paths are relative to the root. A path that leaves the root is refused:
-- absolute paths, ".." that climbs above it, and symlinks that point outside
-- (every path is resolved with ctx:realpath, symlinks included, and must stay
-- under the root's own real path).
local mcp = require "mcp"

local ROOT = os.getenv("LUAMCP_FILES_ROOT") or "."
local MAX_BYTES = 4 << 20           -- files larger than this are refused

local root                          -- the root's real path, found on first use

local function real_root(ctx)
  if root == nil then
    local r, err = ctx:realpath(ROOT)
    if not r then return nil, "files root: " .. err end
    root = r
  end
  return root
end

local function inside(base, path)
  return base == "/" or path == base or path:sub(1, #base + 1) == base .. "/"
end

-- The real path of `rel` under the root, or nil and why.
local function resolve(ctx, rel)
  local base, err = real_root(ctx)
  if not base then return nil, err end
  rel = rel or ""
  if rel:find("\0", 1, true) then return nil, "bad path" end
  if rel:sub(1, 1) == "/" then return nil, rel .. ": absolute paths are refused; give a path relative to the root" end
  local real, _, code = ctx:realpath(rel == "" and base or base .. "/" .. rel)
  if not real then
    return nil, rel .. ": " .. (code == "not_found" and "no such file or directory" or code or "cannot resolve")
  end
  if not inside(base, real) then return nil, rel .. ": outside the root" end
  return real
end

local path_arg = { type = "string", description = "path relative to the root" }

return mcp.plugin {
  name = "files",
  defaults = { timeout = 30 },
  tools = {
    mcp.tool {
      name = "list_files",
      description = "List a directory under the root (directories end with /)",
      inputSchema = { type = "object", properties = { path = path_arg } },
      handler = function(args, ctx)
        local dir, err = resolve(ctx, args.path)
        if not dir then return mcp.error(err) end
        local entries, lerr = ctx:list_dir(dir)
        if not entries then return mcp.error(lerr) end
        local names = {}
        for _, e in ipairs(entries) do
          names[#names + 1] = e.type == "dir" and e.name .. "/" or e.name
        end
        return mcp.text(table.concat(names, "\n"))
      end,
    },
    mcp.tool {
      name = "read_file",
      description = "Read a text file under the root",
      inputSchema = { type = "object", properties = { path = path_arg }, required = { "path" } },
      handler = function(args, ctx)
        local file, err = resolve(ctx, args.path)
        if not file then return mcp.error(err) end
        local data, rerr = ctx:read_file(file, { max_bytes = MAX_BYTES })
        if not data then return mcp.error((rerr:gsub("^.-: ", args.path .. ": ", 1))) end
        return mcp.text(data)
      end,
    },
  },
}
