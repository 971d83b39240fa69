-- Notes kept in SQLite (mcp.sqlite): add a note with tags, search them,
-- list the latest. The database is $LUAMCP_NOTES_DB, or luamcp-notes.db in
-- the temporary directory.
--
-- The db is opened once, at the top level, and shared by every call; the
-- schema is created there too (statements at a top level run at once). In
-- handlers each statement runs on libuv's thread pool while the server
-- serves other requests, and a cancel of the request interrupts it.
local mcp = require "mcp"

local function default_path()
  local tmp = os.tmpname()               -- creates the file: we only want its directory
  os.remove(tmp)
  return (tmp:match("^(.*)/") or ".") .. "/luamcp-notes.db"
end

local PATH = os.getenv("LUAMCP_NOTES_DB") or default_path()
local db = assert(mcp.sqlite.open(PATH))

assert(db:exec [[
  CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    created INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS tags (
    note INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (note, tag)
  );
]])

local function show(rows)
  if #rows == 0 then return mcp.text("no notes") end
  local out = {}
  for _, n in ipairs(rows) do
    out[#out + 1] = ("#%d %s%s\n%s"):format(n.id, n.title, n.tags and " [" .. n.tags .. "]" or "", n.body)
  end
  return mcp.text(table.concat(out, "\n\n"))
end

-- The columns every listing shows; a note without tags has no `tags` field
-- (a NULL column is absent from the row).
local SELECT = [[
  SELECT n.id, n.title, n.body, (SELECT group_concat(tag, ', ') FROM tags WHERE note = n.id) AS tags
  FROM notes n
]]

return mcp.plugin {
  name = "notes_db",
  defaults = { timeout = 10 },
  tools = {
    mcp.tool {
      name = "add_note",
      description = "Store a note, with optional tags",
      inputSchema = {
        type = "object",
        properties = {
          title = { type = "string", minLength = 1, maxLength = 200 },
          body = { type = "string", maxLength = 100000 },
          tags = { type = "array", items = { type = "string", minLength = 1 }, maxItems = 20 },
        },
        required = { "title", "body" },
      },
      handler = function(args)
        -- The note and its tags go in together, or not at all.
        local id, err = db:transaction(function(tx)
          local r, e = tx:exec("INSERT INTO notes (title, body, created) VALUES (:title, :body, :now)",
                               { title = args.title, body = args.body, now = os.time() })
          if not r then return nil, e end
          local note = r.last_insert_id
          for _, tag in ipairs(args.tags or {}) do
            r, e = tx:exec("INSERT OR IGNORE INTO tags (note, tag) VALUES (?, ?)", { note, tag })
            if not r then return nil, e end
          end
          return note
        end)
        if not id then return mcp.error("cannot add the note: " .. err) end
        return mcp.text(("added note #%d"):format(id))
      end,
    },

    mcp.tool {
      name = "search_notes",
      description = "Notes whose title or body contains the text, or that carry the tag",
      inputSchema = {
        type = "object",
        properties = {
          text = { type = "string" },
          tag = { type = "string" },
          limit = { type = "integer", minimum = 1, maximum = 100 },
        },
      },
      handler = function(args)
        -- LIKE with its wildcards escaped: the text is matched literally.
        local like = args.text and "%" .. args.text:gsub("[%%_\\]", "\\%0") .. "%" or nil
        local rows, err = db:query(SELECT .. [[
          WHERE (:like IS NULL OR n.title LIKE :like ESCAPE '\' OR n.body LIKE :like ESCAPE '\')
            AND (:tag IS NULL OR EXISTS (SELECT 1 FROM tags WHERE note = n.id AND tag = :tag))
          ORDER BY n.id DESC LIMIT :limit
        ]], { like = like, tag = args.tag, limit = args.limit or 20 })
        if not rows then return mcp.error("search failed: " .. err) end
        return show(rows)
      end,
    },

    mcp.tool {
      name = "list_notes",
      description = "The latest notes, newest first",
      inputSchema = {
        type = "object",
        properties = { limit = { type = "integer", minimum = 1, maximum = 100 } },
      },
      handler = function(args)
        local rows = {}
        local it, err = db:rows(SELECT .. " ORDER BY n.id DESC LIMIT ?", { args.limit or 10 })
        if not it then return mcp.error("list failed: " .. err) end
        for row in it do rows[#rows + 1] = row end
        return show(rows)
      end,
    },
  },
}
