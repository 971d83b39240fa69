/* The forward path: a mounted tool's call (no wrap) written to its stdio
 * upstream from C and answered with the upstream's result text, with no
 * Lua and no coroutine of its own: fastpath.c's begin sends it here
 * (mcp_forward_send) and the call is held (MCP_PATH_HELD, sched.h) until
 * the answer comes.
 *
 * Only the plain case: a connection client.lua has up at 2026-07-28 over
 * stdio, attached to its client's link (core.forward_attach: the child, the
 * _meta text encoded once, the id counter) until it fails or sends us a
 * request (core.forward_stop); no progressToken from our client, no trace,
 * no timeout of the mount's. Anything else calls the handler (the Lua path).
 *
 * A request takes its id from the connection's counter (fwd_conn.next_id,
 * which client.lua's requests take too, core.forward_id: the two never
 * clash) and is kept, as an op of its call, in its connection's table of
 * pending ids until the line with that id comes (proc.c hands each stdout
 * line here first). A result is the call's response, spliced as it is
 * (mcp_call_answer), from proc.c's callback. Anything else (an error,
 * input_required, a line not read here, the upstream gone) wakes the call,
 * whose handler starts then (mcp_forward_handler, in front of it) and gives
 * the outcome to mount.lua's function (core.forward_outcome), which answers
 * as client.lua would. A cancel, a timeout or a close of the call cancels
 * the op, whose cancel writes notifications/cancelled with the reason;
 * client.lua's Conn:fail fails every pending request with its reason
 * (core.forward_fail). */
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

#define NBUCKETS 64
#define LINK_MT "mcp.forward_link"

typedef struct fwd_conn fwd_conn;

/* One request upstream: an op of its call, held by the engine (this file)
 * until its outcome is in and, once the call's handler runs, by its Lua
 * handle. A held call's request answered with anything but a result stays
 * the engine's, not done, until the handler takes it (mcp_forward_handler)
 * or the call ends (its cancel frees it). */
typedef struct fwd_req {
  mcp_op op;
  fwd_conn *conn;                      /* NULL once answered, failed or cancelled */
  struct fwd_req *next;                /* its bucket */
  long long id;
  uint64_t t0;
  int kind;                            /* FWD_RESULT, FWD_LINE, FWD_GONE */
  char *text;                          /* the result, the line, or why it is gone */
  size_t len;
  char name[];                         /* the upstream's tool name, for the metrics */
} fwd_req;

enum { FWD_RESULT, FWD_LINE, FWD_GONE };

/* A connection's pending requests: owned by its child (proc.c's fwd slot),
 * freed with it. */
struct fwd_conn {
  mcp_proc *proc;                      /* its child */
  mcp_fwd_link *link;                  /* its client's, while calls may be forwarded on it */
  char *meta;                          /* the 2026-07-28 _meta every request carries, as JSON text */
  size_t meta_len;
  long long next_id;                   /* the last id taken, by us or by client.lua */
  char name[64];                       /* the client's, for the log */
  fwd_req *buckets[NBUCKETS];
  int count;
};

/* A client's (mcp.connect's) link to its connection (a userdata client.lua
 * keeps, and mount.lua's tools through it): conn while calls may go on it. */
struct mcp_fwd_link {
  fwd_conn *conn;
};

static mcp_buf line;                   /* the request or notification being written */
static mcp_buf text;                   /* a result read from a line */
static int outcome_ref = LUA_NOREF;    /* mount.lua's (handler, up, args, ctx, msg, kind, t0) */

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

static void detach(fwd_conn *fc) {
  if (fc->link != NULL) fc->link->conn = NULL;
  fc->link = NULL;
}

/* luamcp_upstream_requests_total and the client duration, as client.lua's
 * counted gives them: outcome "ok" (no error type), "cancelled", or "error"
 * with its error type. */
static void count(const fwd_req *r, const char *outcome, const char *etype) {
  static const char *const outcomes[] = { "ok", "cancelled", "error" };
  static char labels[3][40];
  int i = 0;
  while (i < 2 && strcmp(outcomes[i], outcome) != 0) i++;
  if (labels[i][0] == '\0') {
    mcp_buf b = MCP_BUF_INIT;
    mcp_metric_label(&b, 0, "outcome", outcomes[i]);
    mcp_buf_addc(&b, '\0');
    if (b.len <= sizeof labels[i]) memcpy(labels[i], b.data, b.len);
    mcp_buf_free(&b);
  }
  mcp_counter_add("luamcp_upstream_requests_total", labels[i], 1);
  mcp_semconv_client("tools/call", r->name, etype, (double)(uv_hrtime() - r->t0) / 1e9);
}

/* The outcome is in. A held call's result answers it here; anything else
 * goes to its handler: woken where it waits, started where the call is held. */
static void finish(fwd_req *r, int kind, const char *s, size_t n) {
  mcp_call *c = r->op.call;
  unlink_req(r);
  if (kind == FWD_RESULT && !r->op.handle && c != NULL && c->req.state == MCP_REQ_HELD) {
    count(r, "ok", NULL);
    mcp_op_done(&r->op);
    mcp_op_release(&r->op);
    mcp_call_answer(c, s, n);
    return;
  }
  r->kind = kind;
  if ((r->text = malloc(n + 1)) == NULL) abort();
  memcpy(r->text, s, n);
  r->text[n] = '\0';
  r->len = n;
  if (!r->op.handle && c != NULL) {              /* held: the handler takes it (mcp_forward_handler) */
    mcp_call_wake(c);
    return;
  }
  mcp_op_done(&r->op);
  mcp_op_release(&r->op);
}

/* The call stopped (a cancel, a timeout, a close, an abort): the upstream
 * is told, with the reason, as client.lua's Conn:cancel tells it. A held
 * call's is counted here (a handler counts its own, mount.lua's). */
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
    if (!op->handle) count(r, "cancelled", "cancelled");
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
  detach(fc);
  free(fc->meta);
  free(fc);
}

int mcp_forward_send(mcp_call *c, mcp_fwd_link *link, const char *name, size_t nlen, const char *args,
                     size_t alen) {
  fwd_conn *fc = link->conn;
  fwd_req *r;
  long long id;
  if (fc == NULL || outcome_ref == LUA_NOREF) return 0;
  id = fc->next_id + 1;
  line.len = 0;                        /* as client.lua writes it */
  mcp_buf_adds(&line, "{\"jsonrpc\":\"2.0\",\"id\":");
  mcp_buf_add_int(&line, id);
  mcp_buf_adds(&line, ",\"method\":\"tools/call\",\"params\":{\"name\":");
  mcp_json_add_string(&line, name, nlen);
  mcp_buf_adds(&line, ",\"arguments\":");
  mcp_buf_add(&line, args, alen);
  mcp_buf_adds(&line, ",\"_meta\":");
  mcp_buf_add(&line, fc->meta, fc->meta_len);
  mcp_buf_adds(&line, "}}\n");
  if (mcp_proc_write(fc->proc, line.data, line.len) != 0) return 0;
  fc->next_id = id;
  if ((r = calloc(1, sizeof *r + nlen + 1)) == NULL) abort();
  memcpy(r->name, name, nlen);
  r->id = id;
  r->t0 = uv_hrtime();
  r->conn = fc;
  r->next = *bucket(fc, id);
  *bucket(fc, id) = r;
  fc->count++;
  mcp_op_init(&r->op, &fwd_type, c);
  return 1;
}

static int pass_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  return lua_gettop(L) - (int)ctx;
}

static int wait_req(lua_State *L) { return mcp_op_wait(L); }

/* The request's outcome. stack: handler args ctx up handle t0 res... */
static int answered(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  (void)ctx;
  if (lua_type(L, 7) == LUA_TLIGHTUSERDATA) {      /* the upstream's result, spliced as it is */
    count((fwd_req *)mcp_op_check(L, 5), "ok", NULL);
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

/* The held call's request (its one op of this type), or NULL. */
static fwd_req *held_req(mcp_call *c) {
  mcp_op *op = c != NULL ? c->ops : NULL;
  while (op != NULL && op->type != &fwd_type) op = op->next;
  return (fwd_req *)op;
}

int mcp_forward_handler(lua_State *L) {
  fwd_req *r = held_req(mcp_call_current(L));
  mcp_op **h;
  if (r == NULL) return luaL_error(L, "forward: the call's upstream request is gone");
  lua_settop(L, 4);
  h = mcp_op_reserve(L);                           /* 5: its handle (may raise: the engine still holds it) */
  mcp_op_attach(h, &r->op);
  if (r->conn == NULL && !r->op.done) {            /* answered while held: the engine lets go */
    mcp_op_done(&r->op);
    mcp_op_release(&r->op);
  }
  lua_pushinteger(L, (lua_Integer)r->t0);          /* 6 */
  lua_pushcfunction(L, wait_req);
  lua_pushvalue(L, 5);
  lua_callk(L, 1, LUA_MULTRET, 0, answered);
  return answered(L, LUA_OK, 0);
}

int mcp_forward_orphan(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  fwd_req *r = held_req(c);
  if (r == NULL || r->conn != NULL || r->kind != FWD_GONE)
    return luaL_error(L, "%s: the tool changed while its call was upstream", c != NULL ? c->tool : "tools/call");
  count(r, "error", "closed");
  lua_createtable(L, 0, 2);                        /* mcp.error(why) */
  lua_createtable(L, 1, 0);
  lua_createtable(L, 0, 2);
  lua_pushliteral(L, "text");
  lua_setfield(L, -2, "type");
  lua_pushlstring(L, r->text, r->len);
  lua_setfield(L, -2, "text");
  lua_rawseti(L, -2, 1);
  luaL_setmetatable(L, MCP_JSON_ARRAY_MT);
  lua_setfield(L, -2, "content");
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "isError");
  return 1;
}

static fwd_conn *check_conn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TLIGHTUSERDATA);
  return lua_touserdata(L, 1);
}

/* core.forward_fail(conn.fwd, why): every pending request of the
 * connection fails with why, and no call goes on it from now on
 * (client.lua's Conn:fail, which runs before its child is freed: on its
 * exit, or when it is stopped). */
static int l_forward_fail(lua_State *L) {
  fwd_conn *fc = check_conn(L);
  detach(fc);
  fail_all(fc, luaL_checkstring(L, 2));
  return 0;
}

/* core.forward_stop(conn.fwd): no call goes on it from now on (the upstream
 * sent us a request: which call it belongs to is client.lua's to find);
 * the pending ones go on. */
static int l_forward_stop(lua_State *L) {
  detach(check_conn(L));
  return 0;
}

/* core.forward_id(conn.fwd): the connection's next id (client.lua's requests). */
static int l_forward_id(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)++check_conn(L)->next_id);
  return 1;
}

/* core.forward_attach(link, proc, meta, next_id, name): calls may go on
 * the connection of the child proc, whose requests carry meta (JSON text)
 * and whose last id was next_id: its forward state (conn.fwd), a light
 * userdata owned by the child; nil when the child is gone. */
static int l_forward_attach(lua_State *L) {
  mcp_fwd_link *link = luaL_checkudata(L, 1, LINK_MT);
  mcp_proc *p = mcp_proc_get(L, 2);
  size_t n;
  const char *meta = luaL_checklstring(L, 3, &n);
  lua_Integer next_id = luaL_checkinteger(L, 4);
  const char *name = luaL_checkstring(L, 5);
  fwd_conn *fc;
  if (p == NULL) return 0;
  if (*mcp_proc_fwd(p) != NULL) return luaL_argerror(L, 2, "already attached");
  if ((fc = calloc(1, sizeof *fc)) == NULL || (fc->meta = malloc(n + 1)) == NULL) abort();
  memcpy(fc->meta, meta, n);
  fc->meta_len = n;
  fc->proc = p;
  fc->next_id = next_id;
  snprintf(fc->name, sizeof fc->name, "%s", name);
  if (link->conn != NULL) detach(link->conn);
  fc->link = link;
  link->conn = fc;
  *mcp_proc_fwd(p) = fc;
  lua_pushlightuserdata(L, fc);
  return 1;
}

static int link_gc(lua_State *L) {
  mcp_fwd_link *link = luaL_checkudata(L, 1, LINK_MT);
  if (link->conn != NULL) link->conn->link = NULL;
  link->conn = NULL;
  return 0;
}

/* core.forward_link(): a client's link (mount.lua's tools name it). */
static int l_forward_link(lua_State *L) {
  mcp_fwd_link *link = lua_newuserdatauv(L, sizeof *link, 0);
  link->conn = NULL;
  luaL_setmetatable(L, LINK_MT);
  return 1;
}

mcp_fwd_link *mcp_forward_link_at(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LINK_MT);
}

/* core.forward_outcome(fn): mount.lua's answer for what is not a plain result. */
static int l_forward_outcome(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  luaL_unref(L, LUA_REGISTRYINDEX, outcome_ref);
  outcome_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

static const luaL_Reg funcs[] = {
  {"forward_link", l_forward_link},
  {"forward_attach", l_forward_attach},
  {"forward_fail", l_forward_fail},
  {"forward_stop", l_forward_stop},
  {"forward_id", l_forward_id},
  {"forward_outcome", l_forward_outcome},
  {NULL, NULL}
};

void mcp_forward_open_lib(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  luaL_newmetatable(L, LINK_MT);
  lua_pushcfunction(L, link_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  mcp_proc_set_fwd(on_line, on_free);
}
