/* The forward path: a mounted tool's call (no wrap) written to its stdio
 * upstream from C and answered with the upstream's result text, with no
 * Lua of mount.lua's or client.lua's in between (fastpath.c starts the
 * call's coroutine with mcp_forward_call in front of the tool's handler).
 *
 * Only the plain case: a connection client.lua has up, initialized and at
 * 2026-07-28 (its _meta encoded once, meta_raw), over stdio, that never sent
 * us a request; no progressToken from our client, no trace, no timeout of
 * the mount's. Anything else calls the handler (today's Lua path).
 *
 * A request takes its id from the connection's counter (conn.next_id, the
 * one client.lua's requests use: the two never clash) and is kept, as an op
 * of its call, in its connection's table of pending ids until the line with
 * that id comes (proc.c hands each stdout line here first): a result is
 * spliced into the response as it is; anything else (an error,
 * input_required, a line not read here) goes to mount.lua's function
 * (core.forward_outcome), which answers as client.lua would. A cancel of
 * the call cancels the op, whose cancel writes notifications/cancelled with
 * the reason; client.lua's Conn:fail fails every pending request with its
 * reason (core.forward_fail). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "forward.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "op.h"
#include "proc.h"
#include "sched.h"
#include "semconv.h"
#include "trace.h"

#define NBUCKETS 64

typedef struct fwd_conn fwd_conn;

/* One request upstream: an op of its call. The op is held by the engine
 * (this file) while the request is pending, by the Lua handle while the
 * call can reach it. */
typedef struct fwd_req {
  mcp_op op;
  fwd_conn *conn;                      /* NULL once answered, failed or cancelled */
  struct fwd_req *next;                /* its bucket */
  long long id;
  uint64_t t0;
  int kind;                            /* FWD_RESULT, FWD_LINE, FWD_GONE */
  char *text;                          /* the result, the line, or why it is gone */
  size_t len;
} fwd_req;

enum { FWD_RESULT, FWD_LINE, FWD_GONE };

/* A connection's pending requests: owned by its child (proc.c's fwd slot),
 * freed with it. */
struct fwd_conn {
  mcp_proc *proc;                      /* its child */
  char name[64];                       /* the client's, for the log */
  fwd_req *buckets[NBUCKETS];
  int count;
};

static mcp_buf line;                   /* the request or notification being written */
static mcp_buf text;                   /* a result read from a line */
static int outcome_ref = LUA_NOREF;    /* mount.lua's (handler, up, args, ctx, msg, kind, t0) */
static int raw_mt_ref = LUA_NOREF;     /* core.json_raw's metatable */

static fwd_req **bucket(fwd_conn *fc, long long id) {
  return &fc->buckets[(unsigned long long)id % NBUCKETS];
}

static void unlink_req(fwd_req *r) {
  fwd_req **pp = bucket(r->conn, r->id);
  while (*pp != r) pp = &(*pp)->next;
  *pp = r->next;
  r->conn->count--;
  r->conn = NULL;
}

static fwd_req *find(fwd_conn *fc, long long id) {
  fwd_req *r = *bucket(fc, id);
  while (r != NULL && r->id != id) r = r->next;
  return r;
}

/* The outcome is in: the engine lets go. */
static void finish(fwd_req *r, int kind, const char *s, size_t n) {
  unlink_req(r);
  r->kind = kind;
  if ((r->text = malloc(n + 1)) == NULL) abort();
  memcpy(r->text, s, n);
  r->text[n] = '\0';
  r->len = n;
  mcp_op_done(&r->op);
  mcp_op_release(&r->op);
}

/* The call stopped (a cancel, a timeout, an abort): the upstream is told,
 * with the reason, as client.lua's Conn:cancel tells it. */
static void cancel_req(mcp_op *op) {
  fwd_req *r = (fwd_req *)op;
  fwd_conn *fc = r->conn;
  const char *why = op->reason + sizeof "cancelled: " - 1;
  if (fc != NULL) {
    unlink_req(r);
    line.len = 0;
    mcp_buf_adds(&line, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":");
    mcp_buf_add_int(&line, r->id);
    mcp_buf_adds(&line, ",\"reason\":");
    mcp_json_add_string(&line, why, strlen(why));
    mcp_buf_adds(&line, "}}\n");
    mcp_proc_write(fc->proc, line.data, line.len);
    mcp_debug("%s: request %lld (tools/call) cancelled upstream: %s", fc->name, r->id, why);
  }
  mcp_op_release(op);
}

/* stack: -> reply (a light userdata) | nil, text, kind. The reply is the
 * result's text in an mcp_buf that the call's response is written from
 * (fastpath.c's returned, then respond.c) before any other call runs. */
static int push_req(lua_State *L, mcp_op *op) {
  static mcp_buf reply;
  fwd_req *r = (fwd_req *)op;
  if (r->kind == FWD_RESULT) {
    reply.len = 0;
    mcp_buf_add(&reply, r->text, r->len);
    lua_pushlightuserdata(L, &reply);
    return 1;
  }
  lua_pushnil(L);
  lua_pushlstring(L, r->text, r->len);
  if (r->kind == FWD_LINE) lua_pushliteral(L, "line");
  else lua_pushliteral(L, "closed");
  return 3;
}

static void free_req(mcp_op *op) {
  fwd_req *r = (fwd_req *)op;
  free(r->text);
  free(r);
}

static const mcp_op_type fwd_type = { "upstream", cancel_req, push_req, free_req };

/* Every pending request of fc fails with why (the child is gone, or
 * client.lua's Conn:fail). */
static void fail_all(fwd_conn *fc, const char *why) {
  for (int i = 0; i < NBUCKETS; i++)
    while (fc->buckets[i] != NULL) finish(fc->buckets[i], FWD_GONE, why, strlen(why));
}

/* A line of the child's stdout (proc.c's hook): 1 when it answered one of
 * ours. A line not read here whose id might be ours is parsed by jansson. */
static int on_line(void *fwd, const char *s, size_t n) {
  fwd_conn *fc = fwd;
  long long id;
  fwd_req *r;
  int rc;
  if (fc->count == 0) return 0;
  rc = mcp_json_response_text(s, n, &id, &text);
  if (rc == -2) {
    json_t *msg = mcp_json_parse(s, n, NULL, 0), *jid = json_object_get(msg, "id");
    rc = json_is_integer(jid) && json_object_get(msg, "method") == NULL ? 0 : -1;
    if (rc == 0) id = (long long)json_integer_value(jid);
    json_decref(msg);
  }
  if (rc < 0 || (r = find(fc, id)) == NULL) return 0;
  if (rc == 1) finish(r, FWD_RESULT, text.data, text.len);
  else finish(r, FWD_LINE, s, n);
  if (text.cap > 65536) mcp_buf_free(&text);
  return 1;
}

static void on_free(void *fwd) {
  fwd_conn *fc = fwd;
  fail_all(fc, "the upstream is gone");
  free(fc);
}

/* The raw field k of the table at t is truthy. */
static int raw_true(lua_State *L, int t, const char *k) {
  int yes;
  lua_pushstring(L, k);
  yes = lua_rawget(L, t) != LUA_TNIL && lua_toboolean(L, -1);
  lua_pop(L, 1);
  return yes;
}

/* A json_raw table (JSON text as its [1]) at idx. */
static int is_raw(lua_State *L, int idx) {
  int yes;
  if (!lua_istable(L, idx) || !lua_getmetatable(L, idx)) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, raw_mt_ref);
  yes = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (yes) {
    yes = lua_rawgeti(L, idx, 1) == LUA_TSTRING;
    lua_pop(L, 1);
  }
  return yes;
}

static int pass_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  return lua_gettop(L) - (int)ctx;
}

/* Today's path: handler(args, ctx). stack: handler args ctx up */
static int call_handler(lua_State *L) {
  int base = lua_gettop(L);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_callk(L, 2, LUA_MULTRET, base, pass_k);
  return lua_gettop(L) - base;
}

static int wait_req(lua_State *L) { return mcp_op_wait(L); }

static void count_ok(const char *name, uint64_t t0) {
  static char labels[32];
  if (labels[0] == '\0') {
    mcp_buf b = MCP_BUF_INIT;
    mcp_metric_label(&b, 0, "outcome", "ok");
    mcp_buf_addc(&b, '\0');
    if (b.len <= sizeof labels) memcpy(labels, b.data, b.len);
    mcp_buf_free(&b);
  }
  mcp_counter_add("luamcp_upstream_requests_total", labels, 1);
  mcp_semconv_client("tools/call", name, NULL, (double)(uv_hrtime() - t0) / 1e9);
}

/* The request's outcome. stack: handler args ctx up handle t0 res... */
static int answered(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  if (lua_type(L, 7) == LUA_TLIGHTUSERDATA) {      /* the upstream's result, spliced as it is */
    lua_getfield(L, 4, "name");
    count_ok(lua_tostring(L, -1), (uint64_t)lua_tointeger(L, 6));
    lua_settop(L, 7);
    return 1;
  }
  lua_settop(L, 9);                                /* nil msg kind */
  lua_rawgeti(L, LUA_REGISTRYINDEX, outcome_ref);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 4);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 8);
  lua_pushvalue(L, 9);
  lua_pushvalue(L, 6);
  lua_callk(L, 7, LUA_MULTRET, 9, pass_k);         /* it may call the handler, which waits */
  return lua_gettop(L) - 9;
}

int mcp_forward_call(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  mcp_proc *p;
  fwd_conn *fc;
  fwd_req *r;
  mcp_op **h;
  lua_Integer id;
  size_t n;
  const char *s;
  lua_settop(L, 4);
  if (c == NULL || L != c->co || c->signalled || c->progress_token != NULL ||
      (mcp_trace_on && c->span != NULL) || outcome_ref == LUA_NOREF || !lua_istable(L, 4) ||
      lua_getfield(L, 4, "client") != LUA_TTABLE)
    return call_handler(L);
  lua_pushliteral(L, "conn");                      /* 5: client 6: conn */
  if (lua_rawget(L, 5) != LUA_TTABLE || raw_true(L, 6, "closed") || raw_true(L, 6, "handshake") ||
      !raw_true(L, 6, "rev2026") || raw_true(L, 6, "lua_only"))
    return lua_settop(L, 4), call_handler(L);
  lua_pushliteral(L, "proc");
  lua_rawget(L, 6);                                /* 7 */
  lua_pushliteral(L, "meta_raw");
  lua_rawget(L, 6);                                /* 8 */
  lua_pushliteral(L, "next_id");
  lua_rawget(L, 6);                                /* 9 */
  if ((p = mcp_proc_get(L, 7)) == NULL || !lua_istable(L, 8) || !lua_isinteger(L, 9) ||
      !is_raw(L, 2) || !is_raw(L, 8) ||
      lua_getfield(L, 4, "name") != LUA_TSTRING)   /* 10 */
    return lua_settop(L, 4), call_handler(L);
  id = lua_tointeger(L, 9) + 1;
  lua_pushliteral(L, "next_id");
  lua_pushinteger(L, id);
  lua_rawset(L, 6);
  /* the request, as client.lua writes it */
  line.len = 0;
  mcp_buf_adds(&line, "{\"jsonrpc\":\"2.0\",\"id\":");
  mcp_buf_add_int(&line, id);
  mcp_buf_adds(&line, ",\"method\":\"tools/call\",\"params\":{\"name\":");
  s = lua_tolstring(L, 10, &n);
  mcp_json_add_string(&line, s, n);
  mcp_buf_adds(&line, ",\"arguments\":");
  lua_rawgeti(L, 2, 1);
  s = lua_tolstring(L, -1, &n);
  mcp_buf_add(&line, s, n);
  mcp_buf_adds(&line, ",\"_meta\":");
  lua_rawgeti(L, 8, 1);
  s = lua_tolstring(L, -1, &n);
  mcp_buf_add(&line, s, n);
  mcp_buf_adds(&line, "}}\n");
  lua_settop(L, 4);
  h = mcp_op_reserve(L);                           /* 5: the op's handle (may raise: nothing sent yet) */
  lua_pushinteger(L, (lua_Integer)uv_hrtime());    /* 6: t0 */
  if (mcp_proc_write(p, line.data, line.len) != 0) return lua_settop(L, 4), call_handler(L);
  fc = *mcp_proc_fwd(p);
  if (fc == NULL) {                                /* the connection's first: Conn:fail finds it */
    if ((fc = calloc(1, sizeof *fc)) == NULL) abort();
    fc->proc = p;
    *mcp_proc_fwd(p) = fc;
    lua_getfield(L, 4, "client");
    lua_getfield(L, -1, "name");
    snprintf(fc->name, sizeof fc->name, "%s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "upstream");
    lua_pushliteral(L, "conn");
    lua_rawget(L, -3);
    lua_pushlightuserdata(L, fc);
    lua_setfield(L, -2, "fwd");
    lua_settop(L, 6);
  }
  if ((r = calloc(1, sizeof *r)) == NULL) abort();
  r->id = id;
  r->t0 = (uint64_t)lua_tointeger(L, 6);
  r->conn = fc;
  r->next = *bucket(fc, id);
  *bucket(fc, id) = r;
  fc->count++;
  mcp_op_init(&r->op, &fwd_type, c);
  mcp_op_attach(h, &r->op);
  lua_pushcfunction(L, wait_req);
  lua_pushvalue(L, 5);
  lua_callk(L, 1, LUA_MULTRET, 0, answered);
  return answered(L, LUA_OK, 0);
}

/* core.forward_fail(conn.fwd, why): every pending request of the
 * connection fails with why (client.lua's Conn:fail, which runs before its
 * child is freed: on its exit, or when it is stopped). */
static int l_forward_fail(lua_State *L) {
  fwd_conn *fc;
  luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
  fc = lua_touserdata(L, 1);
  fail_all(fc, luaL_checkstring(L, 2));
  return 0;
}

/* core.forward_outcome(fn): mount.lua's answer for what is not a plain result. */
static int l_forward_outcome(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  luaL_unref(L, LUA_REGISTRYINDEX, outcome_ref);
  outcome_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

void mcp_forward_open_lib(lua_State *L) {
  lua_pushcfunction(L, l_forward_fail);
  lua_setfield(L, -2, "forward_fail");
  lua_pushcfunction(L, l_forward_outcome);
  lua_setfield(L, -2, "forward_outcome");
  luaL_getmetatable(L, MCP_JSON_RAW_MT);
  raw_mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  mcp_proc_set_fwd(on_line, on_free);
}
