/* mcp.sqlite's Lua binding (see sqlite.h): open, run, close, info and blob,
 * the checks and copies of a statement's parameters; the engine that runs
 * the statements is sqlite_engine.c. */
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <sqlite3.h>
#include <uv.h>

#include "buf.h"
#include "op.h"
#include "sched.h"
#include "fail.h"
#include "sandbox.h"
#include "sqlite.h"
#include "spans.h"
#include "sqlite_int.h"
#include "trace.h"

#define DB_MT "mcp.sqlite.db"
#define BLOB_MT "mcp.sqlite.blob"
#define MAX_BYTES ((lua_Integer)64 << 20)   /* default max_bytes of a result */
#define MAX_PARAMS 32766                 /* SQLITE_MAX_VARIABLE_NUMBER's default */

/* From Lua. The methods are called through lua/mcp/sqlite.lua, so errors
 * name the plugin's line, two levels up. */

static int user_error(lua_State *L, int arg, const char *fname, const char *fmt, ...) {
  va_list ap;
  luaL_where(L, 2);
  if (arg > 0) lua_pushfstring(L, "bad argument #%d to '%s' (", arg, fname);
  else lua_pushliteral(L, "");
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_pushstring(L, arg > 0 ? ")" : "");
  lua_concat(L, 4);
  return lua_error(L);
}

static mcp_sqlite *check_db(lua_State *L, int idx, int level) {
  mcp_sqlite **p = luaL_checkudata(L, idx, DB_MT);
  if (*p == NULL || (*p)->closing) {
    luaL_where(L, level);
    lua_pushliteral(L, "attempt to use a closed database");
    lua_concat(L, 2);
    lua_error(L);
  }
  return *p;
}

static int is_blob(lua_State *L, int idx) {
  int r;
  if (!lua_getmetatable(L, idx)) return 0;
  luaL_getmetatable(L, BLOB_MT);
  r = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return r;
}

/* Raises unless the value at vidx can be bound; key at kidx names it. */
static void val_check(lua_State *L, int vidx, int kidx, const char *fname) {
  const char *why;
  switch (lua_type(L, vidx)) {
  case LUA_TNIL: case LUA_TNUMBER: case LUA_TBOOLEAN: case LUA_TSTRING:
    return;
  case LUA_TLIGHTUSERDATA:
    if (lua_touserdata(L, vidx) == NULL) return;        /* mcp.null */
    why = "a light userdata other than mcp.null";
    break;
  case LUA_TTABLE:
    if (is_blob(L, vidx)) {
      int t = lua_rawgeti(L, vidx, 1);
      lua_pop(L, 1);
      if (t == LUA_TSTRING) return;
      why = "a blob without a string";
      break;
    }
    why = "a table (want nil, mcp.null, a number, a boolean, a string or mcp.sqlite.blob(s))";
    break;
  default:
    why = luaL_typename(L, vidx);
  }
  if (lua_type(L, kidx) == LUA_TSTRING)
    user_error(L, 2, fname, "params.%s: cannot bind %s", lua_tostring(L, kidx), why);
  user_error(L, 2, fname, "params[%d]: cannot bind %s", (int)lua_tointeger(L, kidx), why);
}

/* Checks params (at idx: nil, a list or a table of names) before anything
 * is allocated; returns how many values to copy and sets *named. */
static int params_check(lua_State *L, int idx, const char *fname, int *named) {
  lua_Integer max = 0;
  int names = 0;
  *named = 0;
  if (lua_isnoneornil(L, idx)) return 0;
  if (!lua_istable(L, idx) || is_blob(L, idx))
    user_error(L, 2, fname, "table of parameters expected, got %s",
               lua_istable(L, idx) ? "a blob" : luaL_typename(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {             /* stack: key value */
    if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= MAX_PARAMS) {
      if (lua_tointeger(L, -2) > max) max = lua_tointeger(L, -2);
    } else if (lua_type(L, -2) == LUA_TSTRING) {
      names++;
    } else {
      user_error(L, 2, fname, "params: keys are positions (1 to %d) or names", MAX_PARAMS);
    }
    val_check(L, lua_gettop(L), lua_gettop(L) - 1, fname);
    lua_pop(L, 1);
  }
  if (max > 0 && names > 0) user_error(L, 2, fname, "params: positions and names mixed");
  *named = names > 0;
  return max > 0 ? (int)max : names;
}

static void val_copy(lua_State *L, int vidx, sql_job *j, sql_val *v) {
  size_t n;
  const char *s;
  switch (lua_type(L, vidx)) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, vidx)) {
      v->type = SQLITE_INTEGER;
      v->v.i = lua_tointeger(L, vidx);
    } else {
      v->type = SQLITE_FLOAT;
      v->v.d = lua_tonumber(L, vidx);
    }
    return;
  case LUA_TBOOLEAN:
    v->type = SQLITE_INTEGER;
    v->v.i = lua_toboolean(L, vidx);
    return;
  case LUA_TSTRING:
  case LUA_TTABLE:                       /* a blob: checked */
    v->type = lua_type(L, vidx) == LUA_TSTRING ? SQLITE_TEXT : SQLITE_BLOB;
    if (v->type == SQLITE_BLOB) lua_rawgeti(L, vidx, 1);
    else lua_pushvalue(L, vidx);
    s = lua_tolstring(L, -1, &n);
    v->v.s.off = j->pdata.len;
    v->v.s.len = n;
    mcp_buf_add(&j->pdata, s, n);
    lua_pop(L, 1);
    return;
  default:
    v->type = SQLITE_NULL;
  }
}

static void params_copy(lua_State *L, int idx, sql_job *j, int n) {
  int k = 0;
  j->nparams = n;
  if (n == 0) return;
  j->params = calloc((size_t)n, sizeof *j->params);
  if (j->params == NULL) abort();
  if (!j->named) {
    for (k = 0; k < n; k++) {
      lua_geti(L, idx, k + 1);
      val_copy(L, lua_gettop(L), j, &j->params[k]);
      lua_pop(L, 1);
    }
    return;
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {             /* stack: name value */
    size_t len;
    const char *name = lua_tolstring(L, -2, &len);
    sql_val *v = &j->params[k++];
    if (len > 0 && strchr(":@$", name[0])) {   /* ":id" as well as "id" */
      name++;
      len--;
    }
    val_copy(L, lua_gettop(L), j, v);
    v->name = j->pdata.len;
    v->namelen = len;
    mcp_buf_add(&j->pdata, name, len);
    lua_pop(L, 1);
  }
}

/* run(db, sql, params, fname): an op for the statement, or nil,
 * "cancelled: <reason>", "cancelled" once the request is stopped (a handler
 * that goes on after a cancel starts nothing new). fname ("exec", "query",
 * "rows", "transaction") names the method in errors; query and rows collect
 * rows. Outside a request it runs at once. */
static int l_run(lua_State *L) {
  mcp_sqlite *db = check_db(L, 1, 2);
  const char *fname = luaL_optstring(L, 4, "exec");
  mcp_call *c = mcp_call_current(L);
  const char *sql;
  size_t len;
  int n, named;
  sql_job *j;
  mcp_op **h;
  if (lua_type(L, 2) != LUA_TSTRING)
    user_error(L, 1, fname, "string expected, got %s", luaL_typename(L, 2));
  sql = lua_tolstring(L, 2, &len);
  if (len > INT_MAX / 2) user_error(L, 1, fname, "SQL text too long");
  n = params_check(L, 3, fname, &named);
  if (mcp_op_refuse(L, c)) return 3;     /* a stopped request starts nothing new */
  h = mcp_op_reserve(L);                 /* before the job: nothing raises once it exists */
  j = calloc(1, sizeof *j);
  if (j == NULL) abort();
  atomic_init(&j->stop, 0);
  j->kind = strcmp(fname, "query") == 0 || strcmp(fname, "rows") == 0 ? KIND_QUERY : KIND_EXEC;
  j->sql = mcp__sqlite_xmalloc(len + 1);
  memcpy(j->sql, sql, len + 1);
  j->sqllen = len;
  j->named = named;
  params_copy(L, 3, j, n);
  mcp__sqlite_job_init(db, j, c);
  mcp_op_attach(h, &j->op);              /* stack: ... handle */
  if (mcp_trace_on) mcp_span_sql(&j->op, sql, len, db->path);
  mcp__sqlite_job_start(db, j, c);
  return 1;
}

static double opt_number(lua_State *L, const char *field, double dflt, double min) {
  double d = dflt;
  if (lua_getfield(L, 2, field) != LUA_TNIL) {
    if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < min)
      luaL_argerror(L, 2, lua_pushfstring(L, "%s must be a number >= %f", field, min));
    d = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return d;
}

static int opt_flag(lua_State *L, const char *field, int dflt) {
  int r = dflt;
  if (lua_getfield(L, 2, field) != LUA_TNIL) r = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return r;
}

/* open(path [, opts]): a db, or nil, message, code. Synchronous on purpose:
 * sqlite3_open_v2 only opens (or creates) the file, like open(2); the
 * header is read by the first statement, on the pool. So open works the
 * same at a plugin's top level and in a handler, with no wait. */
/* A sandboxed plugin's database reaches no other file: no ATTACH (nor
 * VACUUM INTO, which attaches its target), no extensions. */
static int sandbox_authorize(void *ud, int action, const char *a, const char *b, const char *db,
                             const char *trigger) {
  (void)ud; (void)a; (void)b; (void)db; (void)trigger;
  return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

static void sandbox_confine(sqlite3 *conn) {
  sqlite3_limit(conn, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_db_config(conn, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
  sqlite3_set_authorizer(conn, sandbox_authorize, NULL);
}

static int l_open(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  const char *path = luaL_checkstring(L, 1);
  int flags = SQLITE_OPEN_FULLMUTEX, rc;
  double busy = 5, max = (double)MAX_BYTES;
  mcp_sqlite **p, *db;
  sqlite3 *conn = NULL;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    busy = opt_number(L, "busy_timeout", busy, 0);
    max = opt_number(L, "max_bytes", max, 1);
    if (opt_flag(L, "readonly", 0)) flags |= SQLITE_OPEN_READONLY;
    else flags |= SQLITE_OPEN_READWRITE | (opt_flag(L, "create", 1) ? SQLITE_OPEN_CREATE : 0);
  } else {
    flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  }
  if (busy > 86400) busy = 86400;
  if ((rc = mcp_sandbox_check(L, c, MCP_CAP_SQLITE, path)) != 0) return rc;
  p = lua_newuserdatauv(L, sizeof *p, 0);
  *p = NULL;
  luaL_setmetatable(L, DB_MT);
  rc = sqlite3_open_v2(path, &conn, flags, NULL);
  if (rc != SQLITE_OK) {
    mcp_push_fail(L, mcp_code_sqlite(rc), "%s: %s (%s)", path, conn ? sqlite3_errmsg(conn) : sqlite3_errstr(rc),
                  mcp__sqlite_rc_name(rc));
    sqlite3_close_v2(conn);
    return 3;
  }
  sqlite3_extended_result_codes(conn, 1);
  if (mcp_sandbox_plugin(c) != NULL) sandbox_confine(conn);
  db = calloc(1, sizeof *db);
  if (db == NULL) abort();
  db->path = mcp__sqlite_xmalloc(strlen(path) + 1);
  strcpy(db->path, path);
  db->conn = conn;
  db->busy_ms = (unsigned)(busy * 1000);
  db->max_bytes = max < (double)SIZE_MAX / 2 ? (size_t)max : SIZE_MAX / 2;
  db->handle = 1;
  *p = db;
  return 1;
}

/* db:close(): true. Queued statements are cancelled ("database closed"); a
 * running one finishes first, then the connection closes. */
static int l_close(lua_State *L) {
  mcp_sqlite **p = luaL_checkudata(L, 1, DB_MT);
  if (*p != NULL && !(*p)->closing) mcp__sqlite_close(*p);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_gc(lua_State *L) {
  mcp_sqlite **p = luaL_checkudata(L, 1, DB_MT), *db = *p;
  if (db == NULL) return 0;
  *p = NULL;
  db->handle = 0;
  if (!db->closing) mcp__sqlite_close(db);
  mcp__sqlite_unref(db);                          /* or the running job's after_work does */
  return 0;
}

/* db:info(): path, statements (cached), prepared, hits, queued, transaction. */
static int l_info(lua_State *L) {
  mcp_sqlite *db = check_db(L, 1, 1);
  int queued = 0;
  for (sql_job *j = db->head; j != NULL; j = j->next) queued++;
  lua_createtable(L, 0, 6);
  lua_pushstring(L, db->path);
  lua_setfield(L, -2, "path");
  lua_pushinteger(L, db->cached);
  lua_setfield(L, -2, "statements");
  lua_pushinteger(L, (lua_Integer)db->prepared);
  lua_setfield(L, -2, "prepared");
  lua_pushinteger(L, (lua_Integer)db->hits);
  lua_setfield(L, -2, "hits");
  lua_pushinteger(L, queued + (db->running != NULL));
  lua_setfield(L, -2, "queued");
  lua_pushboolean(L, db->tx != NULL);
  lua_setfield(L, -2, "transaction");
  return 1;
}

static int l_tostring(lua_State *L) {
  mcp_sqlite **p = luaL_checkudata(L, 1, DB_MT);
  if (*p == NULL || (*p)->closing) lua_pushliteral(L, "mcp.sqlite.db (closed)");
  else lua_pushfstring(L, "mcp.sqlite.db (%s)", (*p)->path);
  return 1;
}

/* blob(s): s bound as a BLOB rather than text. */
static int l_blob(lua_State *L) {
  luaL_checktype(L, 1, LUA_TSTRING);
  lua_createtable(L, 1, 0);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, 1);
  luaL_setmetatable(L, BLOB_MT);
  return 1;
}

static const luaL_Reg db_methods[] = {
  {"close", l_close},
  {"info", l_info},
  {NULL, NULL}
};

static const luaL_Reg sqlite_funcs[] = {
  {"open", l_open},
  {"run", l_run},
  {"close", l_close},
  {"blob", l_blob},
  {NULL, NULL}
};

void mcp_sqlite_open_lib(lua_State *L) {
  luaL_newmetatable(L, BLOB_MT);
  lua_pop(L, 1);
  luaL_newlib(L, sqlite_funcs);          /* stack: core sqlite */
  luaL_newmetatable(L, DB_MT);           /* stack: core sqlite mt */
  luaL_newlib(L, db_methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -4, "methods");        /* sqlite.methods: lua/mcp/sqlite.lua adds its own */
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, l_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  lua_pushstring(L, sqlite3_libversion());
  lua_setfield(L, -2, "version");
  lua_setfield(L, -2, "sqlite");
}
