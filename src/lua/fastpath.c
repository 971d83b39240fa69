/* The C path: tools/call and tools/list without Lua's dispatch, for every
 * method server.lua lets C run (core.fast_methods: those no middleware
 * covers). A tools/call is looked up, checked against its tool's policy and
 * its compiled inputSchema, given its ctx and resumed with (args, ctx): the
 * handler's coroutine is the only Lua on the path. What it returns is shaped
 * here in the common cases (a string, a number, nothing, a result whose
 * content is an array) and by result.lua otherwise, so the result is the
 * same as Lua's. Anything unusual (params.task, a task-only tool, a tool
 * with task support in a 2026-07-28 request, or such a request's retry with
 * answers, scopes under --auth-*, arguments the schema refuses, an unknown
 * tool, a bad cursor) goes to Lua's dispatch, which answers it.
 *
 * Under a middleware, a tools/call's chain is started here (core.chain_run
 * on the coroutine, no server.lua frame), and chain.c's next runs the
 * method's own step with the same checks and shapes (mcp_fastpath_step).
 *
 * The registry stays Lua's: server.lua hands its tools over at every load,
 * reload and mount refresh (core.fast_tools), and tools/list's entries are
 * encoded then, once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "config.h"
#include "fastpath.h"
#include "forward.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "schema.h"
#include "sched.h"
#include "session.h"
#include "trace.h"

/* A tool's entry: a userdata with its tool, handler and compiled
 * inputSchema as user values. A call keeps its entry (on its coroutine's
 * first slot) while it runs, across reloads. */
typedef struct fast_tool {
  unsigned lua_only : 1;     /* task-only, or app-only (MCP Apps): Lua answers its calls */
  unsigned scopes : 1;       /* it declares scopes (Lua checks them under --auth-*) */
  unsigned output : 1;       /* an outputSchema its results are checked against */
  unsigned tasks : 1;        /* task support: a 2026-07-28 call may become a task (Lua's) */
  unsigned forward : 1;      /* a mounted tool without wrap: its arguments go on as JSON text */
  unsigned upstream : 1;     /* and its call may be forwarded from C (forward.c) */
  mcp_fwd_link *link;        /* then: its client's (kept by the UV_UPSTREAM table, as is upname) */
  const char *upname;        /* the upstream's name of the tool */
  size_t uplen;
} fast_tool;
enum { UV_TOOL = 1, UV_HANDLER, UV_COMPILED, UV_UPSTREAM };

/* The tools whose calls forward.c may take, by interned name (a call's
 * c->tool is one): begin finds such a tool with no Lua, before anything is
 * made for a handler. Rebuilt with the registry (core.fast_tools), whose
 * table keeps the entries. */
static struct {
  const char **names;
  fast_tool **tools;
  size_t mask;               /* slots - 1; 0: none */
} U;

static size_t slot_of(const char *name) {
  return (size_t)(((uintptr_t)name >> 4) * 2654435761u) & U.mask;
}

static fast_tool *upstream_tool(const char *name) {
  if (U.mask == 0) return NULL;
  for (size_t i = slot_of(name); U.names[i] != NULL; i = (i + 1) & U.mask)
    if (U.names[i] == name) return U.tools[i];
  return NULL;
}

/* The index of the n tools of the registry at idx (name -> entry). */
static void upstream_index(lua_State *L, int idx, int n) {
  size_t slots = 8;
  free(U.names);
  free(U.tools);
  U.names = NULL;
  U.tools = NULL;
  U.mask = 0;
  while (slots < 2 * (size_t)n) slots *= 2;
  for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
    fast_tool *t = lua_touserdata(L, -1);
    const char *name;
    size_t i;
    if (!t->upstream || strlen(lua_tostring(L, -2)) != lua_rawlen(L, -2)) continue;   /* a NUL: Lua's */
    if (U.mask == 0) {
      U.names = calloc(slots, sizeof *U.names);
      U.tools = calloc(slots, sizeof *U.tools);
      if (U.names == NULL || U.tools == NULL) abort();
      U.mask = slots - 1;
    }
    name = mcp_name_intern(lua_tostring(L, -2));
    for (i = slot_of(name); U.names[i] != NULL; i = (i + 1) & U.mask) {}
    U.names[i] = name;
    U.tools[i] = t;
  }
}

static struct {
  int on_call, on_list;      /* core.fast_methods: may C run tools/call, tools/list? */
  int in_chain;              /* may a chain's next run tools/call's step here? */
  int chains_ref;            /* {calls =, tool_calls =, run =}: a tools/call's chains, chain_run */
  int tools_ref;             /* name -> entry */
  int ctx_mt_ref;            /* the ctx's metatable (init.lua's Ctx) */
  int shape_ref;             /* result.tool(tool, res, msg, code) */
  int array_mt_ref;
  int input_open_ref;        /* input.open(ctx, method, params, name, args) */
  int empty_ref;             /* the params input.open reads: no inputResponses, no requestState */
  char **entries;            /* tools/list: each tool's entry as JSON text */
  size_t *lens;
  int nentries;
  int unlisted;              /* an entry could not be encoded: tools/list is Lua's */
  mcp_buf out;               /* the result being answered (respond.c writes it at once) */
} F = { 0, 0, 0, LUA_NOREF, LUA_NOREF, LUA_NOREF, LUA_NOREF, LUA_NOREF, LUA_NOREF, LUA_NOREF,
        NULL, NULL, 0, 0,
        MCP_BUF_INIT };

/* "content", "type" and "text" as the state keeps them: Lua keeps one copy
 * of each short string, so a string equal to one of them is at its address
 * (each is held by a reference: it stays where it is). id_ref, resumed_ref:
 * the ctx's keys "id" and "resumed", pushed with no lookup by their text (the
 * ctx has no __newindex: set raw). array_mt: mcp.array's metatable
 * (F.array_mt_ref's), compared by address. */
static struct { const char *content, *type, *text; int id_ref, resumed_ref; const void *array_mt; } K;

static const char *keep_key(lua_State *L, const char *s) {
  const char *p = lua_pushstring(L, s);
  luaL_ref(L, LUA_REGISTRYINDEX);
  return p;
}

static void entries_free(void) {
  for (int i = 0; i < F.nentries; i++) free(F.entries[i]);
  free(F.entries);
  free(F.lens);
  F.entries = NULL;
  F.lens = NULL;
  F.nentries = 0;
}

/* tools/list: one page from the cursor (the 1-based index of its first
 * tool, as registry.lua's paginate has it) into F.out; 0 for a cursor Lua
 * must refuse. */
static int list_page(const json_t *params) {
  const json_t *cursor = json_object_get(params, "cursor");
  long start = 1;
  int size = mcp_cfg.page_size, stop;
  if (cursor != NULL) {
    const char *s = json_string_value(cursor);
    char *end;
    if (s == NULL || *s < '0' || *s > '9' || strlen(s) > 9 || strlen(s) != json_string_length(cursor))
      return 0;
    start = strtol(s, &end, 10);
    if (*end != '\0' || start < 1 || start > F.nentries + 1) return 0;
  }
  stop = F.nentries < start + size - 1 ? F.nentries : (int)(start + size - 1);
  F.out.len = 0;
  mcp_buf_adds(&F.out, "{\"tools\":[");
  for (int i = (int)start; i <= stop; i++) {
    if (i > start) mcp_buf_addc(&F.out, ',');
    mcp_buf_add(&F.out, F.entries[i - 1], F.lens[i - 1]);
  }
  mcp_buf_addc(&F.out, ']');
  if (stop < F.nentries) {
    mcp_buf_adds(&F.out, ",\"nextCursor\":\"");
    mcp_buf_add_int(&F.out, stop + 1);
    mcp_buf_addc(&F.out, '"');
  }
  mcp_buf_addc(&F.out, '}');
  return 1;
}

static int field_true(lua_State *L, int idx, const char *k) {
  int yes = lua_getfield(L, idx, k) != LUA_TNIL && lua_toboolean(L, -1);
  lua_pop(L, 1);
  return yes;
}

/* The id of c as Lua sees it (an integer, or the string a key decodes to). */
static int raw_mt_ref = LUA_NOREF; /* core.json_raw's metatable */

static void push_id(lua_State *L, const mcp_call *c) {
  if (c->req.key[0] != '"') lua_pushinteger(L, (lua_Integer)mcp_key_integer(c->req.key));
  else if (mcp_json_decode(L, c->req.key, c->req.keylen, NULL, 0) != 0) lua_pushnil(L);
}

/* A tools/call's arguments, a tree's or their text (mcp_call_args_text). */
typedef struct call_args {
  const json_t *tree;
  const char *text;
  size_t len;
} call_args;

/* A forwarded tool's arguments as JSON text on one line (a stdio upstream
 * reads lines): the text they came as, or, for a tree or a text with a line
 * break in it, compacted. */
static const char *args_line(const call_args *a, size_t *n) {
  static mcp_buf text = MCP_BUF_INIT;
  json_t *tree;
  if (a->text != NULL && memchr(a->text, '\n', a->len) == NULL && memchr(a->text, '\r', a->len) == NULL) {
    *n = a->len;
    return a->text;
  }
  tree = a->text ? mcp_json_parse(a->text, a->len, NULL, 0) : (json_t *)a->tree;
  text.len = 0;
  mcp_json_dump(tree, &text);
  if (a->text) json_decref(tree);
  *n = text.len;
  return text.data;
}

/* The same as a json_raw (encode() writes it as is), not a Lua table to be
 * encoded again. */
static void push_raw(lua_State *L, const call_args *a) {
  size_t n;
  const char *s = args_line(a, &n);
  lua_createtable(L, 1, 0);
  lua_pushlstring(L, s, n);
  lua_rawseti(L, -2, 1);
  luaL_setmetatable(L, MCP_JSON_RAW_MT);
}

/* c's call of t goes upstream from C, with no coroutine (forward.c), when
 * there is no progress to relay nor span to carry and the connection takes
 * it: 1. */
static int send_upstream(mcp_call *c, const fast_tool *t, const call_args *a) {
  const char *args;
  size_t n;
  if (c->progress_token != NULL || (mcp_trace_on && c->span != NULL)) return 0;
  args = args_line(a, &n);
  return mcp_forward_send(c, t->link, t->upname, t->uplen, args, n);
}

/* On the main thread, protected, on behalf of c (core.rev2026 and core.auth
 * see it): entry, handler, args, ctx; or nothing when Lua must take the call.
 * stack: call arguments -> entry handler args ctx */
static int call_setup(lua_State *L) {
  mcp_call *c = lua_touserdata(L, 1);
  const call_args *a = lua_touserdata(L, 2);
  const fast_tool *t;
  int raw, given = a->tree != NULL || a->text != NULL;
  lua_rawgeti(L, LUA_REGISTRYINDEX, F.tools_ref);
  if (lua_getfield(L, 3, c->tool) != LUA_TUSERDATA) return 0;
  lua_replace(L, 1);
  lua_settop(L, 1);                                              /* 1: entry */
  t = lua_touserdata(L, 1);
  if (t->lua_only || (t->scopes && c->session->auth != NULL) || (t->tasks && c->session->rev2026)) return 0;
  /* a 2026-07-28 call's arguments are input.lua's too (the state's binding) */
  raw = t->forward && given && !c->session->rev2026;
  lua_getiuservalue(L, 1, UV_HANDLER);                           /* 2 */
  if (raw) push_raw(L, a);                                       /* 3 */
  else if (a->text != NULL) {
    if (mcp_json_decode(L, a->text, a->len, NULL, 0) != 0) return 0;   /* checked text: never */
  } else if (a->tree != NULL) mcp_json_push(L, a->tree);
  else lua_newtable(L);
  if (lua_getiuservalue(L, 1, UV_COMPILED) != LUA_TNIL && (raw || !mcp_schema_check(L, 4, 3))) return 0;
  lua_pop(L, 1);
  lua_createtable(L, 0, 2);                                      /* 4: ctx */
  lua_rawgeti(L, LUA_REGISTRYINDEX, K.id_ref);
  push_id(L, c);
  lua_rawset(L, -3);
  lua_rawgeti(L, LUA_REGISTRYINDEX, F.ctx_mt_ref);
  lua_setmetatable(L, -2);
  if (c->session->rev2026) {         /* its input rounds' state: made from its args when asked */
    lua_rawgeti(L, LUA_REGISTRYINDEX, K.resumed_ref);
    lua_pushboolean(L, 0);
    lua_rawset(L, 4);
    lua_pushvalue(L, 3);
    c->args_ref = luaL_ref(L, LUA_REGISTRYINDEX);              /* core.input_args */
  }
  if (raw && t->upstream && c->path_held) {   /* its request's outcome wants Lua: stack: entry forward handler args ctx up */
    lua_pushcfunction(L, mcp_forward_handler);
    lua_insert(L, 2);
    lua_getiuservalue(L, 1, UV_UPSTREAM);
    return 6;
  }
  return 4;
}

/* The call is Lua's; never a held one's, whose request went upstream
 * (the Lua path would send it again): its tool is gone (a reload took it),
 * forward.c ends it. */
static int leave(mcp_call *c, lua_State *co) {
  if (!c->path_held) return MCP_PATH_LUA;
  lua_pushboolean(co, 0);
  lua_pushcfunction(co, mcp_forward_orphan);
  return 0;
}

/* tools/call: the checks of server/tools.lua's prepare and open_call that
 * pass in the common case, done here; the rest is Lua's. */
static int begin_call(mcp_call *c, lua_State *co) {
  lua_State *L = mcp_sched_lua();
  call_args a = { NULL, NULL, 0 };
  const fast_tool *t;
  int top = lua_gettop(L), n;
  if (c->tool == NULL || c->tool_owned || c->session == NULL) return MCP_PATH_LUA;
  /* params read as text hold name, arguments (an object) and _meta only */
  if (!mcp_call_args_text(c, &a.text, &a.len)) {
    a.tree = json_object_get(c->params, "arguments");
    /* a name with a NUL in it is not the C string c->tool says; a 2026-07-28
     * retry with answers is input.lua's to check */
    if (json_string_length(json_object_get(c->params, "name")) != strlen(c->tool) ||
        json_object_get(c->params, "task") != NULL || (a.tree != NULL && !json_is_object(a.tree)) ||
        (c->session->rev2026 && (json_object_get(c->params, "inputResponses") != NULL ||
                                 json_object_get(c->params, "requestState") != NULL)))
      return MCP_PATH_LUA;
  }
  /* a forwarded tool's call goes upstream from here, nothing made for a
   * handler: call_setup's checks that hold for it (its arguments as JSON
   * text, not a 2026-07-28 call's: input.lua's) */
  if (!c->path_held && !c->session->rev2026 && (a.text != NULL || a.tree != NULL) &&
      (t = upstream_tool(c->tool)) != NULL && !t->lua_only && !(t->scopes && c->session->auth != NULL) &&
      send_upstream(c, t, &a))
    return MCP_PATH_HELD;
  lua_pushcfunction(L, call_setup);
  lua_pushlightuserdata(L, c);
  lua_pushlightuserdata(L, &a);
  if (mcp_call_pcall(c, 2, LUA_MULTRET) != LUA_OK) {
    mcp_warn("request %.64s: C path: %s", c->req.key, lua_tostring(L, -1));
    lua_settop(L, top);
    return leave(c, co);
  }
  n = lua_gettop(L) - top;
  if (c->path_held ? n != 6 : n != 4) {
    lua_settop(L, top);
    return leave(c, co);
  }
  lua_xmove(L, co, n);               /* co: entry handler args ctx, or entry forward handler args ctx up */
  return n - 2;
}

/* On the main thread, protected, for c: the chain of its tool (a sandboxed
 * plugin's tool has its own), as server.lua's dispatch finds it, and
 * chain_run's arguments; nothing for an unknown tool (dispatch first
 * refreshes the mounts).
 * stack: c -> chain_run chain method params id session */
static int chain_find(lua_State *L) {
  mcp_call *c = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, F.tools_ref);
  if (lua_getfield(L, 2, c->tool) != LUA_TUSERDATA) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, F.chains_ref);               /* 4 */
  lua_getfield(L, 4, "run");                                     /* 5 */
  lua_getfield(L, 4, "tool_calls");
  if (lua_getfield(L, 6, c->tool) != LUA_TTABLE) {               /* 7 */
    lua_getfield(L, 4, "calls");
    if (lua_getfield(L, 8, "tools/call") != LUA_TTABLE) return 0;
  }
  lua_pushvalue(L, 5);
  lua_insert(L, -2);                                             /* run chain */
  lua_pushliteral(L, "tools/call");
  mcp_call_push_params(L, c);
  push_id(L, c);
  lua_pushinteger(L, c->sid);
  return 6;
}

/* tools/call under a middleware: chain_run(chain, method, params, id,
 * session) straight from here, with no Lua frame of server.lua's under the
 * first middleware; what it returns, returned encodes. */
static int begin_chain(mcp_call *c, lua_State *co) {
  lua_State *L = mcp_sched_lua();
  int top = lua_gettop(L);
  const char *args;
  size_t len;
  if (c->tool == NULL || c->tool_owned ||
      (!mcp_call_args_text(c, &args, &len) &&       /* a name read as text has no NUL */
       json_string_length(json_object_get(c->params, "name")) != strlen(c->tool)))
    return MCP_PATH_LUA;
  lua_pushcfunction(L, chain_find);
  lua_pushlightuserdata(L, c);
  if (mcp_call_pcall(c, 1, LUA_MULTRET) != LUA_OK || lua_gettop(L) - top != 6) {
    lua_settop(L, top);
    return MCP_PATH_LUA;
  }
  lua_pushboolean(co, 0);            /* what the call keeps: no entry */
  lua_xmove(L, co, 6);               /* co: false chain_run chain method params id session */
  return 5;
}

static int begin(mcp_call *c, lua_State *co) {
  if (strcmp(c->method, "tools/call") == 0) {
    if (F.on_call) return begin_call(c, co);
    return F.chains_ref != LUA_NOREF ? begin_chain(c, co) : MCP_PATH_LUA;
  }
  if (strcmp(c->method, "tools/list") == 0 && F.on_list && !F.unlisted && list_page(mcp_call_params(c))) {
    lua_pushlightuserdata(co, &F.out);
    return MCP_PATH_ANSWERED;
  }
  return MCP_PATH_LUA;
}

/* What to do with the table at v that a handler returned. SHAPE_AS_IS:
 * its content is already an array, so result.lua would send it as it is (no
 * metatable, no structuredContent, no outputSchema to check unless isError
 * is true), or a forwarded tool's json_raw (mount.lua's result as the upstream
 * wrote it). SHAPE_TEXT: mcp.text's {content = [{type = "text", text = S}]}
 * and nothing more, with S pushed (looked for only when text is 1). SHAPE_LUA:
 * result.lua's work. */
enum { SHAPE_LUA, SHAPE_AS_IS, SHAPE_TEXT };

/* Is the value at idx the string key (one of K's)? */
static int is_text(lua_State *co, int idx, const char *key) {
  return lua_type(co, idx) == LUA_TSTRING && lua_tostring(co, idx) == key;
}

/* Is the table at v mcp.text's and nothing more ({content = [{type = "text",
 * text = S}]}, the array's metatable mcp.array's, no other)? Then S is
 * pushed (1); else the stack is left as it was (0). Read with lua_next, no
 * lookup by name: the commonest result. */
static int text_shape(lua_State *co, int v) {
  int top = lua_gettop(co), content = top + 2, item = top + 3, n = 0, type = 0, text = 0;
  if (lua_getmetatable(co, v)) goto no;
  lua_pushnil(co);
  if (!lua_next(co, v)) goto no;                       /* stack: key content */
  if (!is_text(co, top + 1, K.content) || lua_type(co, content) != LUA_TTABLE) goto no;
  lua_pushvalue(co, top + 1);
  if (lua_next(co, v) || !lua_getmetatable(co, content) || lua_topointer(co, -1) != K.array_mt ||
      lua_rawlen(co, content) != 1)
    goto no;
  lua_settop(co, content);
  if (lua_rawgeti(co, content, 1) != LUA_TTABLE || lua_getmetatable(co, item)) goto no;
  lua_pushnil(co);
  while (lua_next(co, item)) {                         /* stack: ... item [S] key value */
    if (++n > 2 || lua_type(co, -1) != LUA_TSTRING) goto no;
    if (!type && is_text(co, -2, K.type) && is_text(co, -1, K.text)) {
      type = 1;
      lua_pop(co, 1);
    } else if (!text && is_text(co, -2, K.text)) {
      text = 1;
      lua_insert(co, -2);                              /* S kept under the key */
    } else {
      goto no;
    }
  }
  if (type && text) return 1;
no:
  lua_settop(co, top);
  return 0;
}

/* The text of the string, number or true at idx, as tostring gives it but
 * without a __tostring (the string metatable's is the host's to keep). */
static const char *scalar_text(lua_State *co, int idx, size_t *n) {
  if (lua_type(co, idx) == LUA_TBOOLEAN) {
    *n = 4;
    return "true";
  }
  lua_pushvalue(co, idx);
  return lua_tolstring(co, -1, n);   /* a number: converted on the copy */
}

/* lua_rawget of the table at idx by a C string key: pushes, returns its type. */
static int rawfield(lua_State *L, int idx, const char *k) {
  idx = lua_absindex(L, idx);
  lua_pushstring(L, k);
  return lua_rawget(L, idx);
}

/* Are the items of the array at idx all text items ({type = "text", text =
 * a string})? Any other is result.lua's to check. */
static int text_items(lua_State *co, int idx) {
  int top = lua_gettop(co), ok = 1;
  lua_Unsigned n = lua_rawlen(co, idx);
  for (lua_Unsigned i = 1; ok && i <= n; i++) {
    ok = lua_rawgeti(co, idx, (lua_Integer)i) == LUA_TTABLE && rawfield(co, -1, "type") == LUA_TSTRING &&
         is_text(co, -1, K.text) && rawfield(co, -2, "text") == LUA_TSTRING;
    lua_settop(co, top);
  }
  return ok;
}

/* Read raw, as result.lua reads (no metamethod of the plugin's runs here:
 * ARCHITECTURE.md, "What the host reads from a plugin"). */
static int table_shape(lua_State *co, const fast_tool *t, int v, int text) {
  int top = lua_gettop(co), content = top + 1, ok, err;
  if (text && !t->output && text_shape(co, v)) return SHAPE_TEXT;
  if (lua_getmetatable(co, v)) {     /* the upstream's result as it wrote it: as result.lua passes it */
    lua_rawgeti(co, LUA_REGISTRYINDEX, raw_mt_ref);
    ok = t->forward && lua_rawequal(co, -1, -2);
    lua_settop(co, top);
    return ok ? SHAPE_AS_IS : SHAPE_LUA;
  }
  if (rawfield(co, v, "content") != LUA_TTABLE || !lua_getmetatable(co, content)) goto lua;
  lua_rawgeti(co, LUA_REGISTRYINDEX, F.array_mt_ref);
  ok = lua_rawequal(co, -1, -2) && text_items(co, content);
  lua_settop(co, content);
  if (!ok || rawfield(co, v, "structuredContent") != LUA_TNIL) goto lua;
  lua_pop(co, 1);
  err = rawfield(co, v, "isError");
  ok = err == LUA_TNIL || err == LUA_TBOOLEAN;
  if (ok && t->output) ok = err == LUA_TBOOLEAN && lua_toboolean(co, -1);   /* checked unless isError is true */
  lua_settop(co, top);
  return ok ? SHAPE_AS_IS : SHAPE_LUA;
lua:
  lua_settop(co, top);
  return SHAPE_LUA;
}

/* A text result: {"content":[{"type":"text","text":S}]} into F.out. */
static void text_result(const char *s, size_t n) {
  F.out.len = 0;
  mcp_buf_adds(&F.out, "{\"content\":[{\"type\":\"text\",\"text\":");
  mcp_json_add_string(&F.out, s, n);
  mcp_buf_adds(&F.out, "}]}");
}

/* What a chain returned (the method's protocol, shaped): as it is, or
 * mcp.text's shape written here. stack: false res... */
static int chain_returned(lua_State *co, int nres) {
  static const fast_tool shaped = { 0, 0, 0, 0, 0, 0, NULL, NULL, 0 };
  lua_remove(co, 1);
  if (nres == 2 && lua_type(co, 1) == LUA_TTABLE && table_shape(co, &shaped, 1, 1) == SHAPE_TEXT) {
    size_t n;
    const char *s = lua_tolstring(co, -1, &n);
    text_result(s, n);
    lua_settop(co, 0);
    lua_pushlightuserdata(co, &F.out);
  }
  return 0;
}

static int returned(mcp_call *c, lua_State *co, int nres) {
  const fast_tool *t = lua_touserdata(co, 1);   /* stack: entry res... (nres counts the entry) */
  int v = 2, type, shape = SHAPE_LUA;
  (void)c;
  if (t == NULL) return chain_returned(co, nres);
  lua_settop(co, v + 2);             /* entry res msg code (result.tool's arguments) */
  type = lua_isnil(co, v + 1) ? lua_type(co, v) : LUA_TNONE;   /* a second value: result.lua's */
  if (!t->output && type == LUA_TNIL && lua_isnil(co, v + 1) && lua_isnil(co, v + 2)) {
    F.out.len = 0;
    mcp_buf_adds(&F.out, "{\"content\":[]}");
  } else if (!t->output && (type == LUA_TSTRING || type == LUA_TNUMBER ||
                            (type == LUA_TBOOLEAN && lua_toboolean(co, v)))) {
    size_t n;
    const char *s = scalar_text(co, v, &n);
    text_result(s, n);
  } else if (type == LUA_TTABLE && (shape = table_shape(co, t, v, 1)) == SHAPE_TEXT) {
    size_t n;                        /* written here: encoding the table costs ten times more */
    const char *s = lua_tolstring(co, -1, &n);
    text_result(s, n);
  } else if (type == LUA_TLIGHTUSERDATA && t->upstream) {   /* forward.c's reply, as it is */
    lua_settop(co, v);
    lua_replace(co, 1);
    return 0;
  } else if (shape == SHAPE_AS_IS) {
    lua_settop(co, v);
    lua_replace(co, 1);              /* stack: res */
    return 0;
  } else {                            /* result.lua: co ends, so it runs there */
    lua_rawgeti(co, LUA_REGISTRYINDEX, F.shape_ref);
    lua_getiuservalue(co, 1, UV_TOOL);
    lua_rotate(co, v, 2);            /* stack: entry shape tool res msg code */
    if (lua_pcall(co, 4, LUA_MULTRET, 0) != LUA_OK) return -1;
    lua_remove(co, 1);
    return 0;
  }
  lua_settop(co, 0);
  lua_pushlightuserdata(co, &F.out);
  return 0;
}

/* The shapes of returned that make a new table, as result.lua makes it:
 * {content = mcp.array{}} or {content = mcp.array{{type = "text", text = S}}}. */
static void push_content(lua_State *co, const char *s, size_t n) {
  lua_createtable(co, 0, 1);
  lua_createtable(co, s != NULL, 0);
  lua_rawgeti(co, LUA_REGISTRYINDEX, F.array_mt_ref);
  lua_setmetatable(co, -2);
  if (s != NULL) {
    lua_createtable(co, 0, 2);
    lua_pushliteral(co, "text");
    lua_setfield(co, -2, "type");
    lua_pushlstring(co, s, n);
    lua_setfield(co, -2, "text");
    lua_rawseti(co, -2, 1);
  }
  lua_setfield(co, -2, "content");
}

/* A chain's next, the step of tools/call itself (chain.c): what
 * begin_call's checks take, on the Lua params a middleware passed, with the
 * chain's ctx. On the main thread, protected, on behalf of c.
 * stack: c params ctx -> entry handler args; or nothing (Lua's tools_call). */
static int step_setup(lua_State *L) {
  mcp_call *c = lua_touserdata(L, 1);
  const fast_tool *t;
  int rev2026 = c->session->rev2026;
  lua_settop(L, 3);
  if (lua_getfield(L, 2, "name") != LUA_TSTRING || lua_getfield(L, 2, "task") != LUA_TNIL ||
      (rev2026 && (lua_getfield(L, 2, "inputResponses") != LUA_TNIL ||
                   lua_getfield(L, 2, "requestState") != LUA_TNIL)))
    return 0;
  lua_settop(L, 4);
  lua_rawgeti(L, LUA_REGISTRYINDEX, F.tools_ref);
  lua_insert(L, 4);
  if (lua_rawget(L, 4) != LUA_TUSERDATA) return 0;              /* 5: entry */
  t = lua_touserdata(L, 5);
  if (t->lua_only || (t->scopes && c->session->auth != NULL) || (t->tasks && rev2026)) return 0;
  lua_getiuservalue(L, 5, UV_HANDLER);                           /* 6 */
  switch (lua_getfield(L, 2, "arguments")) {                     /* 7 */
  case LUA_TNIL: lua_pop(L, 1); lua_newtable(L); break;
  case LUA_TTABLE: if (lua_getmetatable(L, 7)) return 0; break;  /* mcp.array's is refused by Lua */
  default: return 0;
  }
  if (lua_getiuservalue(L, 5, UV_COMPILED) != LUA_TNIL && !mcp_schema_check(L, 8, 7)) return 0;
  lua_pop(L, 1);
  if (rev2026) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, F.input_open_ref);
    lua_pushvalue(L, 3);
    lua_pushliteral(L, "tools/call");
    lua_rawgeti(L, LUA_REGISTRYINDEX, F.empty_ref);
    lua_getiuservalue(L, 5, UV_TOOL);
    lua_getfield(L, -1, "name");
    lua_replace(L, -2);
    lua_pushvalue(L, 7);
    lua_call(L, 5, 1);
    if (!lua_toboolean(L, -1)) return 0;
    lua_pop(L, 1);
  }
  return 3;
}

int mcp_fastpath_step(mcp_call *c, lua_State *co, int params, int ctx) {
  lua_State *L = mcp_sched_lua();
  int top = lua_gettop(L), n;
  if (!F.in_chain || c == NULL || c->session == NULL || co == L) return 0;
  lua_pushcfunction(L, step_setup);
  lua_pushlightuserdata(L, c);
  lua_pushvalue(co, params);
  lua_pushvalue(co, ctx);
  lua_xmove(co, L, 2);
  if (mcp_call_pcall(c, 3, LUA_MULTRET) != LUA_OK) {
    mcp_warn("request %.64s: C path: %s", c->req.key, lua_tostring(L, -1));
    lua_settop(L, top);
    return 0;
  }
  n = lua_gettop(L) - top;
  if (n != 3) {
    lua_settop(L, top);
    return 0;
  }
  lua_xmove(L, co, 3);
  return 1;
}

void mcp_fastpath_step_result(lua_State *co, int base) {
  const fast_tool *t = lua_touserdata(co, base);
  int v = base + 1, type, shape = SHAPE_LUA;
  lua_settop(co, base + 3);          /* entry res msg code */
  type = lua_isnil(co, v + 1) ? lua_type(co, v) : LUA_TNONE;   /* a second value: result.lua's */
  if (!t->output && type == LUA_TNIL && lua_isnil(co, v + 1) && lua_isnil(co, v + 2)) {
    push_content(co, NULL, 0);
    lua_replace(co, v);
  } else if (!t->output && (type == LUA_TSTRING || type == LUA_TNUMBER ||
                            (type == LUA_TBOOLEAN && lua_toboolean(co, v)))) {
    size_t len;
    const char *s = scalar_text(co, v, &len);
    push_content(co, s, len);
    lua_replace(co, v);
  } else if (type == LUA_TTABLE && (shape = table_shape(co, t, v, 0)) != SHAPE_LUA) {
    (void)shape;                     /* as it is */
  } else {
    lua_rawgeti(co, LUA_REGISTRYINDEX, F.shape_ref);
    lua_getiuservalue(co, base, UV_TOOL);
    lua_rotate(co, v, 2);            /* entry shape tool res msg code */
    lua_call(co, 4, LUA_MULTRET);
    lua_remove(co, base);
    lua_settop(co, base + 3);
    return;
  }
  lua_settop(co, v);
  lua_remove(co, base);
  lua_settop(co, base + 3);
}

static const mcp_call_path path = { begin, returned };

static void set_ref(lua_State *L, int idx, int *ref) {
  lua_pushvalue(L, idx);
  luaL_unref(L, LUA_REGISTRYINDEX, *ref);
  *ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* core.fast_methods({"tools/call", ...}, chains): the methods C may run
 * (server.lua's sync_methods: every method C implements that no middleware
 * covers); chains (nil under LUAMCP_LUA_PATH=1): {calls =, tool_calls =,
 * run =}, middleware.lua's chains and chain_run: C starts a tools/call's
 * chain, and a middleware's next runs the method's own step here. */
static int l_fast_methods(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  F.on_call = F.on_list = 0;
  F.in_chain = !lua_isnoneornil(L, 2);
  if (F.in_chain) {
    luaL_checktype(L, 2, LUA_TTABLE);
    set_ref(L, 2, &F.chains_ref);
  } else {
    luaL_unref(L, LUA_REGISTRYINDEX, F.chains_ref);
    F.chains_ref = LUA_NOREF;
  }
  for (lua_Integer i = 1; lua_rawgeti(L, 1, i) != LUA_TNIL; i++) {
    const char *m = luaL_checkstring(L, -1);
    if (strcmp(m, "tools/call") == 0) F.on_call = 1;
    else if (strcmp(m, "tools/list") == 0) F.on_list = 1;
    else return luaL_error(L, "fast_methods: no C path for %s", m);
    lua_pop(L, 1);
  }
  return 0;
}

/* core.input_args(ctx): the arguments of the running call, a 2026-07-28
 * tools/call on the C path, for its first input round's state (input.lua),
 * once; nil when ctx is not its ctx (by id), or when they were taken. The
 * call holds them (args_ref) until then or its end: no table by ctx. */
static int l_input_args(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  if (c == NULL || c->args_ref == 0 || !lua_istable(L, 1)) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, K.id_ref);
  lua_rawget(L, 1);
  push_id(L, c);
  if (!lua_rawequal(L, -1, -2)) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->args_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, c->args_ref);
  c->args_ref = 0;
  return 1;
}

/* core.fast_tools(list, ctx_mt, shape, input_open): the registry's tools,
 * in list order, each {name=, tool=, handler=, schema=, output=, lua_only=,
 * scopes=, tasks=, forward=, upstream= (a forwarded call's, for forward.c),
 * entry= (its tools/list entry as JSON text)}. */
static int l_fast_tools(lua_State *L) {
  int n;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  luaL_checktype(L, 4, LUA_TFUNCTION);
  lua_settop(L, 4);
  set_ref(L, 4, &F.input_open_ref);
  lua_pop(L, 1);
  n = (int)luaL_len(L, 1);
  lua_createtable(L, 0, n);                                      /* 4: name -> entry */
  for (int i = 1; i <= n; i++) {
    fast_tool *t;
    lua_rawgeti(L, 1, i);                                        /* 5 */
    luaL_checktype(L, 5, LUA_TTABLE);
    t = lua_newuserdatauv(L, sizeof *t, 4);                      /* 6 */
    t->lua_only = field_true(L, 5, "lua_only");
    t->scopes = field_true(L, 5, "scopes");
    t->output = field_true(L, 5, "output");
    t->tasks = field_true(L, 5, "tasks");
    t->forward = field_true(L, 5, "forward");
    t->upstream = 0;
    if (lua_getfield(L, 5, "upstream") == LUA_TTABLE && t->forward) {   /* 7 */
      lua_getfield(L, 7, "link");
      lua_getfield(L, 7, "name");
      t->link = mcp_forward_link_at(L, -2);
      t->upname = lua_tolstring(L, -1, &t->uplen);
      t->upstream = t->link != NULL && lua_type(L, -1) == LUA_TSTRING;
      lua_pop(L, 2);
    }
    if (t->upstream) lua_setiuservalue(L, 6, UV_UPSTREAM);
    else lua_pop(L, 1);
    lua_getfield(L, 5, "tool");
    lua_setiuservalue(L, 6, UV_TOOL);
    lua_getfield(L, 5, "handler");
    lua_setiuservalue(L, 6, UV_HANDLER);
    if (lua_getfield(L, 5, "schema") == LUA_TTABLE) {
      t->upstream = 0;               /* its arguments are checked first: the coroutine's path */
      mcp_schema_push_compiled(L, -1);
      lua_setiuservalue(L, 6, UV_COMPILED);
    }
    lua_pop(L, 1);
    lua_getfield(L, 5, "name");
    lua_pushvalue(L, 6);
    lua_rawset(L, 4);
    lua_pop(L, 2);
  }
  entries_free();
  F.unlisted = 0;
  F.entries = calloc((size_t)n + 1, sizeof *F.entries);
  F.lens = calloc((size_t)n + 1, sizeof *F.lens);
  if (F.entries == NULL || F.lens == NULL) abort();
  for (int i = 1; i <= n; i++) {
    size_t len;
    const char *s;
    lua_rawgeti(L, 1, i);
    lua_getfield(L, -1, "entry");
    if ((s = lua_tolstring(L, -1, &len)) == NULL) {   /* cannot be encoded: Lua lists them */
      entries_free();
      F.unlisted = 1;
      break;
    }
    if ((F.entries[i - 1] = malloc(len)) == NULL) abort();
    memcpy(F.entries[i - 1], s, len);
    F.lens[i - 1] = len;
    F.nentries = i;
    lua_pop(L, 2);
  }
  upstream_index(L, 4, n);
  set_ref(L, 4, &F.tools_ref);
  set_ref(L, 2, &F.ctx_mt_ref);
  set_ref(L, 3, &F.shape_ref);
  return 0;
}

void mcp_fastpath_open_lib(lua_State *L) {
  lua_pushcfunction(L, l_fast_methods);
  lua_setfield(L, -2, "fast_methods");
  lua_pushcfunction(L, l_fast_tools);
  lua_setfield(L, -2, "fast_tools");
  lua_pushcfunction(L, l_input_args);
  lua_setfield(L, -2, "input_args");
  luaL_getmetatable(L, MCP_JSON_ARRAY_MT);
  K.array_mt = lua_topointer(L, -1);
  F.array_mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  luaL_getmetatable(L, MCP_JSON_RAW_MT);
  raw_mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  F.empty_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  K.content = keep_key(L, "content");
  K.type = keep_key(L, "type");
  K.text = keep_key(L, "text");
  lua_pushliteral(L, "id");
  K.id_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushliteral(L, "resumed");
  K.resumed_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  mcp_sched_set_path(&path);
}
