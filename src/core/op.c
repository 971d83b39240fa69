/* Operations a handler starts and waits on (see op.h), the simple kinds (a
 * sleep on the server's clock, a timer on the loop's, a future completed
 * from Lua), and the waits: mcp_op_wait, core.wait, core.await. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <uv.h>

#include "deadline.h"
#include "fail.h"
#include "log.h"
#include "op.h"
#include "sched_int.h"
#include "trace.h"
#include "weak.h"

#define OP_MT "mcp.op"

static char children_key;                /* registry: weak set of mcp.all's coroutines */
static char await_key;                   /* registry: what they yield to wait (core.AWAIT) */

static mcp_op *plugin_ops;               /* ops started outside any call */

static mcp_op **list_of(mcp_op *op) { return op->call ? &op->call->ops : &plugin_ops; }

static void unlink_op(mcp_op *op) {
  if (!op->listed) return;
  if (op->prev) op->prev->next = op->next; else *list_of(op) = op->next;
  if (op->next) op->next->prev = op->prev;
  op->prev = op->next = NULL;
  op->listed = 0;
}

void mcp_op_init(mcp_op *op, const mcp_op_type *type, mcp_call *c) {
  mcp_op **head;
  op->type = type;
  op->call = c;
  op->reason = NULL;
  op->engine = 1;
  head = list_of(op);
  op->next = *head;
  if (*head) (*head)->prev = op;
  *head = op;
  op->listed = 1;
}

mcp_span *mcp_op_span(mcp_op *op, int kind, const char *name) {
  if (!mcp_trace_on || op->call == NULL) return NULL;
  return op->span = mcp_trace_child(op->call, (mcp_span_kind)kind, name);
}

/* The wait ends with the op: a cancel interrupted it, or its outcome is in. */
static void span_end(mcp_op *op) {
  mcp_span *s = op->span;
  mcp_attrs *a;
  op->span = NULL;
  if (op->cancelled && s->sampled) {
    mcp_attr_str(&s->attrs, "error.type", "cancelled");
    mcp_span_set_status(s, MCP_STATUS_ERROR, NULL);
    if ((a = mcp_span_event_add(s, "cancelled")) != NULL)
      mcp_attr_str(a, "reason", op->reason + strlen("cancelled: "));
  }
  mcp_trace_span_end(s);
}

static void maybe_free(mcp_op *op) {
  if (op->engine || op->handle) return;
  if (op->span) span_end(op);
  unlink_op(op);
  free(op->reason);
  op->type->free(op);
}

void mcp_op_done(mcp_op *op) {
  mcp_call *c = op->call;
  if (op->done) return;
  op->done = 1;
  if (op->span) span_end(op);
  if (c != NULL) mcp__call_await_done(c);
}

void mcp_op_release(mcp_op *op) {
  op->engine = 0;
  maybe_free(op);
}

/* A cancel's reason as an outcome gives it: "cancelled: <why>", why cut
 * to REASON_MAX bytes (no printf: 10,000 cancels at once may come here). */
#define REASON_HEAD "cancelled: "
#define REASON_MAX  148

static size_t reason_len(const char *why) {
  size_t n = strlen(why);
  return n > REASON_MAX ? REASON_MAX : n;
}

static void reason_set(mcp_op *op, const char *why) {
  size_t n = reason_len(why);
  char *r = malloc(sizeof REASON_HEAD + n);
  if (r == NULL) abort();
  memcpy(r, REASON_HEAD, sizeof REASON_HEAD - 1);
  memcpy(r + sizeof REASON_HEAD - 1, why, n);
  r[sizeof REASON_HEAD - 1 + n] = '\0';
  op->reason = r;
}

/* Done first, then the engine stops (and may let go, freeing the op). */
void mcp_op_cancel(mcp_op *op, const char *why) {
  if (op->done) return;
  op->cancelled = 1;
  reason_set(op, why ? why : "request stopped");
  mcp_op_done(op);
  op->type->cancel(op);
}

static void sleep_stop(mcp_call *c);

static void ops_stop(mcp_call *c, const char *why, int finished) {
  mcp_op *op = c->ops;
  sleep_stop(c);
  while (op != NULL) {
    mcp_op *next = op->next;
    mcp_op_cancel(op, why);
    op = next;
  }
  if (!finished) return;
  while ((op = c->ops) != NULL) {        /* nothing of the call is left to wake */
    unlink_op(op);
    op->call = NULL;
  }
}

static void sleep_arrive(mcp_call *c);

static const mcp_call_type op_type = { .arrive = sleep_arrive, .stop = ops_stop };

void mcp_ops_init(void) { mcp__sched_register(&op_type); }

int mcp_op_refuse(lua_State *L, mcp_call *c) {
  if (c == NULL || !c->signalled) return 0;
  return mcp_push_cancelled(L, c);
}

void mcp_ops_shutdown(void) {
  for (mcp_op *op = plugin_ops, *next; op != NULL; op = next) {
    next = op->next;
    mcp_op_cancel(op, "shutdown");
  }
}

/* Handles. */

/* The metatable of handles, by address: a handle is known by it without
 * the registry lookup of luaL_checkudata (every wait and every handle's
 * __gc check one), which stays the answer for anything else. */
static const void *op_mt;

static mcp_op **handle_at(lua_State *L, int idx) {
  mcp_op **p = lua_touserdata(L, idx);
  if (p != NULL && lua_getmetatable(L, idx)) {
    int same = lua_topointer(L, -1) == op_mt;
    lua_pop(L, 1);
    if (same) return p;
  }
  return luaL_checkudata(L, idx, OP_MT);
}

mcp_op *mcp_op_check(lua_State *L, int idx) {
  mcp_op **p = handle_at(L, idx);
  if (*p == NULL) luaL_argerror(L, idx, "a released operation");
  return *p;
}

void mcp_op_push(lua_State *L, mcp_op *op) {
  mcp_op_attach(mcp_op_reserve(L), op);
}

mcp_op **mcp_op_reserve(lua_State *L) {
  mcp_op **p = lua_newuserdatauv(L, sizeof *p, 0);
  *p = NULL;
  luaL_setmetatable(L, OP_MT);
  return p;
}

void mcp_op_attach(mcp_op **p, mcp_op *op) {
  *p = op;
  op->handle = 1;
}

static int op_gc(lua_State *L) {
  mcp_op **p = handle_at(L, 1);
  mcp_op *op = *p;
  if (op == NULL) return 0;
  *p = NULL;
  /* Unreachable and still running: nobody can read what it brings. The
   * handle holds it through the cancel, where the engine may let go. */
  if (!op->done) mcp_op_cancel(op, "dropped");
  op->handle = 0;
  maybe_free(op);
  return 0;
}

static int op_done_l(lua_State *L) {
  lua_pushboolean(L, mcp_op_check(L, 1)->done);
  return 1;
}

/* op:result(): the outcome of a done op; a cancelled one's is nil,
 * "cancelled: <reason>", "cancelled". */
static int push_outcome(lua_State *L, mcp_op *op) {
  if (op->cancelled) {                   /* mcp_push_fail's shape, with no format */
    lua_pushnil(L);
    lua_pushstring(L, op->reason);
    lua_pushliteral(L, "cancelled");
    return 3;
  }
  return op->type->push(L, op);
}

static int op_result(lua_State *L) {
  mcp_op *op = mcp_op_check(L, 1);
  if (!op->done) return luaL_error(L, "%s: not done yet (wait for it first)", op->type->name);
  return push_outcome(L, op);
}

static int op_cancel_l(lua_State *L) {
  mcp_op_cancel(mcp_op_check(L, 1), luaL_optstring(L, 2, "cancelled by the handler"));
  return 0;
}

static int op_tostring(lua_State *L) {
  mcp_op **p = luaL_checkudata(L, 1, OP_MT);
  lua_pushfstring(L, "mcp.op(%s)", *p ? (*p)->type->name : "released");
  return 1;
}

/* Is L a function that mcp.all runs (lua/mcp/await.lua)? */
static int all_child(lua_State *L) {
  int yes;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &children_key);
  lua_pushthread(L);
  yes = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return yes;
}

/* The call whose handler may wait in L now; raises (naming the caller's
 * line) where no wait is possible. */
mcp_call *mcp_op_caller(lua_State *L, const char *what) {
  mcp_call *c = mcp_call_current(L);
  const char *why = NULL;
  if (c == NULL) why = "not inside a request (a plugin's top level cannot wait)";
  else if (L != c->co && !all_child(L))
    why = "call it from the handler's coroutine or a function of mcp.all, not a coroutine it created";
  else if (!lua_isyieldable(L) || c->closing)
    why = "cannot yield here (inside a non-yieldable C call such as a table.sort comparator, "
          "or a <close> after an abort)";
  if (why != NULL) mcp_raise(L, "%s: %s", what, why);
  return c;
}

/* Yield until one of the n ops from index from on may be done: the handler's own
 * coroutine yields to the scheduler (an op's completion wakes it); a
 * function of mcp.all yields AWAIT and the list of ops to mcp.all, which
 * waits for the ops of all its functions at once. */
static int wait_yield(lua_State *L, int from, int n, lua_KContext ctx, lua_KFunction k) {
  mcp_call *c = mcp_call_current(L);
  if (L == c->co) {
    mcp__call_await(c);
    return lua_yieldk(L, 0, ctx, k);
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &await_key);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushvalue(L, from + i);
    lua_rawseti(L, -2, i + 1);
  }
  return lua_yieldk(L, 2, ctx, k);
}

/* await(op, ...): the index of the first op that is done, waiting for one
 * when none is. A cancel of the call cancels every op, so it wakes too. */
static int await_k(lua_State *L, int status, lua_KContext ctx) {
  mcp_call *c = mcp_call_current(L);
  int n = (int)ctx;
  (void)status;
  lua_settop(L, n);
  mcp__call_await_clear(c);
  for (int i = 1; i <= n; i++) {
    if (mcp_op_check(L, i)->done) {
      lua_pushinteger(L, i);
      return 1;
    }
  }
  return wait_yield(L, 1, n, n, await_k);
}

static int l_await(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return luaL_error(L, "await: no operation to wait for");
  for (int i = 1; i <= n; i++) mcp_op_check(L, i);
  mcp_op_caller(L, "await");
  return await_k(L, LUA_OK, n);
}

/* The outcome of the op on top, once done. stack: ... handle -> outcome */
static int wait_k(lua_State *L, int status, lua_KContext ctx) {
  mcp_op *op = mcp_op_check(L, (int)ctx);
  mcp_call *c = mcp_call_current(L);
  (void)status;
  lua_settop(L, (int)ctx);
  if (L == c->co) mcp__call_await_clear(c);
  if (op->done) return push_outcome(L, op);
  return wait_yield(L, (int)ctx, 1, ctx, wait_k);
}

int mcp_op_wait(lua_State *L) {
  mcp_op_check(L, -1);
  return wait_k(L, LUA_OK, lua_gettop(L));
}

/* A future: done when Lua completes it (f:complete(...)); its on_cancel
 * function runs, on the main thread, when it is cancelled before that. */
typedef struct {
  mcp_op op;
  int values_ref;                        /* its values, a list (LUA_NOREF: none) */
  int on_cancel_ref;
} future;

static void future_unref(future *f) {
  lua_State *L = mcp_sched_lua();
  luaL_unref(L, LUA_REGISTRYINDEX, f->on_cancel_ref);
  f->on_cancel_ref = LUA_NOREF;
}

static void future_cancel(mcp_op *op) {
  future *f = (future *)op;
  lua_State *L = mcp_sched_lua();
  if (f->on_cancel_ref != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->on_cancel_ref);
    lua_pushstring(L, op->reason + sizeof "cancelled: " - 1);
    if (mcp_call_pcall(NULL, 1, 0) != LUA_OK) {
      mcp_warn("a future's on_cancel failed: %s", lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  future_unref(f);
  mcp_op_release(op);
}

static int future_push(lua_State *L, mcp_op *op) {
  future *f = (future *)op;
  int n;
  if (f->values_ref == LUA_NOREF) return 0;   /* completed with no values */
  lua_rawgeti(L, LUA_REGISTRYINDEX, f->values_ref);
  n = (int)lua_rawlen(L, -1);
  luaL_checkstack(L, n, "future values");
  for (int i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -n - 1);
  return n;
}

static void future_free(mcp_op *op) {
  future *f = (future *)op;
  luaL_unref(mcp_sched_lua(), LUA_REGISTRYINDEX, f->values_ref);
  free(f);
}

static const mcp_op_type future_type = { "future", future_cancel, future_push, future_free };

/* future([on_cancel]) */
static int l_future(lua_State *L) {
  future *f;
  mcp_op **h;
  int ref = LUA_NOREF;
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  h = mcp_op_reserve(L);                 /* stack: on_cancel handle; both may raise: first */
  if (!lua_isnil(L, 1)) {
    lua_pushvalue(L, 1);
    ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  f = calloc(1, sizeof *f);
  if (f == NULL) abort();
  f->values_ref = LUA_NOREF;
  f->on_cancel_ref = ref;
  mcp_op_init(&f->op, &future_type, mcp_call_current(L));
  mcp_op_attach(h, &f->op);
  return 1;
}

/* f:complete(...): the values its waiter gets; false when it was already
 * done (cancelled, or completed before). */
static int future_complete(lua_State *L) {
  mcp_op *op = mcp_op_check(L, 1);
  future *f = (future *)op;
  int n = lua_gettop(L) - 1;
  if (op->type != &future_type) return luaL_argerror(L, 1, "not a future");
  if (op->done) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (n > 0) {                           /* none: no table (a wake, a retired wait) */
    lua_createtable(L, n, 0);
    for (int i = 1; i <= n; i++) {
      lua_pushvalue(L, i + 1);
      lua_rawseti(L, -2, i);
    }
    f->values_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  future_unref(f);
  mcp_op_done(op);
  mcp_op_release(op);
  lua_pushboolean(L, 1);
  return 1;
}

/* A timer: done after its seconds (the loop's clock). */
typedef struct {
  mcp_op op;
  uv_timer_t timer;
} op_timer;

static void timer_closed(uv_handle_t *h) { mcp_op_release(h->data); }

static void timer_fired(uv_timer_t *t) {
  mcp_op_done(t->data);
  uv_close((uv_handle_t *)t, timer_closed);
}

static void timer_cancel(mcp_op *op) {
  op_timer *t = (op_timer *)op;
  if (!uv_is_closing((uv_handle_t *)&t->timer)) uv_close((uv_handle_t *)&t->timer, timer_closed);
}

static int timer_push(lua_State *L, mcp_op *op) {
  (void)op;
  lua_pushboolean(L, 1);
  return 1;
}

static void timer_free(mcp_op *op) { free(op); }

static const mcp_op_type timer_type = { "timer", timer_cancel, timer_push, timer_free };

/* timer(seconds) */
static int l_timer(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  op_timer *t = calloc(1, sizeof *t);
  if (t == NULL) abort();
  uv_timer_init(mcp_sched_loop(), &t->timer);
  t->timer.data = t;
  mcp_op_init(&t->op, &timer_type, mcp_call_current(L));
  uv_timer_start(&t->timer, timer_fired, s > 0 ? (uint64_t)(s * 1000.0 + 0.5) : 0, 0);
  mcp_op_push(L, &t->op);
  return 1;
}

/* wait(op): its outcome, once done (see mcp_op_wait). */
static int l_wait(lua_State *L) {
  mcp_op *op = mcp_op_check(L, 1);
  if (op->done) return push_outcome(L, op);      /* done already (at a plugin's top level, too) */
  mcp_op_caller(L, "wait");
  lua_settop(L, 1);
  return mcp_op_wait(L);
}

/* A sleep: done after its seconds on the server's clock (mcp_clock_ns,
 * which --test-clock moves), like the call's own deadlines. */
typedef struct {
  mcp_op op;
  mcp_deadline dl;
} op_sleep;

static void sleep_fired(mcp_deadline *d) {
  op_sleep *s = (op_sleep *)((char *)d - offsetof(op_sleep, dl));
  mcp_op_done(&s->op);
  mcp_op_release(&s->op);
}

static void sleep_cancel(mcp_op *op) {
  mcp_deadline_set(&((op_sleep *)op)->dl, 0);
  mcp_op_release(op);
}

static void sleep_free(mcp_op *op) { free(op); }

static const mcp_op_type sleep_type = { "sleep", sleep_cancel, timer_push, sleep_free };

/* The handler's own coroutine sleeps on its call (c->sleep_dl): no op, no
 * handle, nothing allocated. One such sleep at a time can be armed, since
 * the coroutine waits in it; a function of mcp.all sleeps with an op. A
 * stop of the call disarms it (ops_stop) and the wait's outcome is then
 * the cancelled one, with the reason the op's would have had. */
static void sleep_woke(mcp_deadline *d) {
  mcp__call_await_done((mcp_call *)((char *)d - offsetof(mcp_call, sleep_dl)));
}

static void sleep_arrive(mcp_call *c) {
  mcp_deadline_init(&c->sleep_dl, sleep_woke);
}

static void sleep_stop(mcp_call *c) {
  if (c->sleep_dl.index < 0) return;
  mcp_deadline_set(&c->sleep_dl, 0);
  c->sleep_cut = 1;
  mcp__call_await_done(c);
}

static int own_sleep_k(lua_State *L, int status, lua_KContext ctx) {
  mcp_call *c = mcp_call_current(L);
  char msg[sizeof REASON_HEAD + REASON_MAX];
  const char *why;
  size_t n;
  (void)status;
  mcp__call_await_clear(c);
  if (c->sleep_dl.index >= 0) {
    mcp__call_await(c);
    return lua_yieldk(L, 0, ctx, own_sleep_k);
  }
  lua_settop(L, 0);
  if (!c->sleep_cut) {
    lua_pushboolean(L, 1);
    return 1;
  }
  why = c->req.reason ? c->req.reason : "request stopped";     /* as mcp_op_cancel's */
  n = reason_len(why);
  memcpy(msg, REASON_HEAD, sizeof REASON_HEAD - 1);
  memcpy(msg + sizeof REASON_HEAD - 1, why, n);
  lua_pushnil(L);
  lua_pushlstring(L, msg, sizeof REASON_HEAD - 1 + n);
  lua_pushliteral(L, "cancelled");
  return 3;
}

/* sleep(seconds): true once they passed, or nil, "cancelled: <reason>",
 * "cancelled" when a cancel of the request ended the wait. */
static int l_sleep(lua_State *L) {
  int base = mcp_self(L);                        /* ctx:sleep(s) and mcp.sleep(s) */
  double sec = luaL_checknumber(L, base);
  mcp_call *c = mcp_op_caller(L, "sleep");
  uint64_t now = mcp_clock_ns(), due;
  mcp_op **h;
  op_sleep *s;
  int n;
  if ((n = mcp_op_refuse(L, c)) != 0) return n;
  due = now + (sec > 0 ? (uint64_t)(sec * 1e9) : 0);
  if (L == c->co) {
    c->sleep_cut = 0;
    mcp_deadline_set(&c->sleep_dl, due ? due : 1);
    mcp__call_await(c);
    return lua_yieldk(L, 0, 0, own_sleep_k);
  }
  lua_settop(L, base);
  h = mcp_op_reserve(L);
  s = calloc(1, sizeof *s);
  if (s == NULL) abort();
  mcp_deadline_init(&s->dl, sleep_fired);
  mcp_op_init(&s->op, &sleep_type, c);
  mcp_op_attach(h, &s->op);
  mcp_deadline_set(&s->dl, due ? due : 1);
  return mcp_op_wait(L);
}

static const luaL_Reg op_methods[] = {
  {"done", op_done_l},
  {"result", op_result},
  {"cancel", op_cancel_l},
  {"complete", future_complete},
  {NULL, NULL}
};

void mcp_op_open(lua_State *L) {
  mcp_weak_table(L, "k");                        /* stack: core children */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &children_key);
  lua_setfield(L, -2, "all_children");
  lua_newtable(L);                               /* stack: core AWAIT */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &await_key);
  lua_setfield(L, -2, "AWAIT");
  lua_pushcfunction(L, l_sleep);
  lua_setfield(L, -2, "sleep");
  lua_pushcfunction(L, l_wait);
  lua_setfield(L, -2, "wait");
  luaL_newmetatable(L, OP_MT);
  op_mt = lua_topointer(L, -1);
  luaL_newlib(L, op_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, op_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, op_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_await);
  lua_setfield(L, -2, "await");
  lua_pushcfunction(L, l_future);
  lua_setfield(L, -2, "future");
  lua_pushcfunction(L, l_timer);
  lua_setfield(L, -2, "timer");
}
