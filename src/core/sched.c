/* Calls: coroutines, the count hook, timers, waits, and the actions of the
 * cancellation state machine. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "config.h"
#include "json.h"
#include "log.h"
#include "policy.h"
#include "rpc.h"
#include "sched_int.h"
#include "slab.h"
#include "slice.h"

#define SLICE_NS      2000000ull    /* a CPU-bound handler yields after 2 ms */
#define STUCK_NS      50000000ull   /* a sandboxed call may run this long unable to yield */
#define HOOK_COUNT    1000          /* instructions between hook checks */
#define LIB_COUNT     97            /* ... while a slice's end waits for the plugin's code */
#define CLOSE_NS      1000000000ull /* <close> handlers of an aborted call: 1 s */
#define POOL_MAX      256           /* idle coroutines kept for reuse */

static struct {
  uv_loop_t *loop;
  lua_State *L;
  int dispatch_ref, server_ref;
  uv_idle_t idle;                   /* keeps poll from blocking while work is queued */
  uv_check_t check;                 /* runs the queue after each poll */
  mcp_call *qhead, *qtail;
  mcp_call *all;
  mcp_call *graveyard;              /* finished calls, freed after this loop turn (bury) */
  int reset_due;                    /* server.reset_due() after this turn's calls */
  mcp_call *main_as;                /* the call the main thread acts for (mcp_call_pcall) */
  uint64_t slice_end_ns;            /* preemption point of the resume running now */
  uint64_t resume_ns;               /* when the resume running now began */
  mcp_call *running;                /* the call whose code runs now, or NULL (alloc.c knows it too) */
  mcp_call *refusing;               /* refused by its limits, while it starts and fails */
  char refusal[128];                /* why */
  int live;
  struct { lua_State *co; int ref; } pool[POOL_MAX];
  int npool;
  const mcp_call_type *types[8];    /* the rows registered (sched_int.h) */
  const mcp_call_path *path;        /* the C path (fastpath.c), or NULL */
  const char *answer;               /* a held call's result, while mcp_call_answer fires RETURN */
  size_t answer_len;
  int ntypes;
  char lib[512];                    /* "@DIR/": the source of the host's own Lua files */
  size_t lib_len;                   /* 0: none known */
} S;

/* Each registered row's hook, in the order registered. */
#define EACH_TYPE(hook, ...) \
  for (int i_ = 0; i_ < S.ntypes; i_++) \
    if (S.types[i_]->hook) S.types[i_]->hook(__VA_ARGS__)

void mcp__sched_register(const mcp_call_type *t) {
  for (int i = 0; i < S.ntypes; i++)
    if (S.types[i] == t) return;
  if (S.ntypes == (int)(sizeof S.types / sizeof S.types[0])) abort();
  S.types[S.ntypes++] = t;
}

void mcp_sched_set_path(const mcp_call_path *path) { S.path = path; }

void (*mcp_sched_idle_cb)(void);
void (*mcp__reset_due_cb)(void);
void (*mcp_sched_heartbeat_cb)(mcp_call *c);

/* The clock of deadlines, waits and mcp.now(): real time, plus what a test
 * advanced it by (--test-clock). Time slices always use real time. */
static uint64_t clock_offset;

uint64_t mcp_clock_ns(void) { return uv_hrtime() + clock_offset; }


uint64_t mcp_sched_cpu_used(void) {
  return S.running ? S.running->cpu_used_ns + (uv_hrtime() - S.resume_ns) : 0;
}

/* The call whose code runs now (NULL: none): its memory and CPU are counted. */
static void set_running(mcp_call *c, int resume) {
  S.running = c;
  mcp__alloc_running(c, resume);
}

static inline mcp_call **extra(lua_State *L) { return (mcp_call **)lua_getextraspace(L); }

static void hook(lua_State *L, lua_Debug *ar);

/* A handler's own coroutine names its call in its extra space; one it
 * created is found through its call's token (token.c). */
mcp_call *mcp_call_current(lua_State *L) {
  mcp_call *c = *extra(L);
  if (c != NULL) return c;
  if (L == S.L) return S.main_as;
  return mcp__token_call(L);
}

void mcp_call_watch(lua_State *co) {
  if (mcp_slice_on()) lua_sethook(co, hook, LUA_MASKCOUNT, HOOK_COUNT);
}

int mcp_sched_live(void) { return S.live; }
mcp_call *mcp__sched_calls(void) { return S.all; }

/* The run queue. */

static void idle_noop(uv_idle_t *h) { (void)h; }

static void queue_push(mcp_call *c) {
  if (c->queued) return;
  c->queued = 1;
  c->qnext = NULL;
  c->qprev = S.qtail;
  if (S.qtail) S.qtail->qnext = c; else S.qhead = c;
  S.qtail = c;
  if (!uv_is_active((uv_handle_t *)&S.idle)) uv_idle_start(&S.idle, idle_noop);
}

static void queue_remove(mcp_call *c) {
  if (!c->queued) return;
  if (c->qprev) c->qprev->qnext = c->qnext; else S.qhead = c->qnext;
  if (c->qnext) c->qnext->qprev = c->qprev; else S.qtail = c->qprev;
  c->qprev = c->qnext = NULL;
  c->queued = 0;
}

/* Coroutines: a pool, since a finished or reset thread can run again. */

static void co_acquire(mcp_call *c) {
  if (S.npool > 0) {
    S.npool--;
    c->co = S.pool[S.npool].co;
    c->co_ref = S.pool[S.npool].ref;
  } else {
    c->co = lua_newthread(S.L);
    c->co_ref = luaL_ref(S.L, LUA_REGISTRYINDEX);
    if (!mcp_slice_on()) lua_sethook(c->co, hook, LUA_MASKCOUNT, HOOK_COUNT);
  }
  *extra(c->co) = c;
}

static void co_reset(mcp_call *c);

static void co_release(mcp_call *c) {
  if (c->co == NULL) return;
  if (lua_status(c->co) != LUA_OK) {
    co_reset(c);
    lua_pushnil(S.L);                          /* what run_error kept */
    lua_rawsetp(S.L, LUA_REGISTRYINDEX, c);
  }
  *extra(c->co) = NULL;
  lua_settop(c->co, 0);
  if (lua_status(c->co) == LUA_OK && !c->tainted && S.npool < POOL_MAX) {
    if (mcp_slice_on()) lua_sethook(c->co, NULL, 0, 0);
    else lua_sethook(c->co, hook, LUA_MASKCOUNT, HOOK_COUNT);
    S.pool[S.npool].co = c->co;
    S.pool[S.npool].ref = c->co_ref;
    S.npool++;
  } else {
    luaL_unref(S.L, LUA_REGISTRYINDEX, c->co_ref);
  }
  c->co = NULL;
  c->co_ref = LUA_NOREF;
}

/* <close> variables of an ended handler run under a time limit, not its
 * deadline, its CPU limit or the kill: the hook checks closing first. */
static void close_begin(mcp_call *c) {
  c->closing = 1;
  c->hard_ns = mcp_clock_ns() + (c->budget ? STUCK_NS : CLOSE_NS);   /* a sandboxed plugin's: 50 ms */
  lua_sethook(c->co, hook, LUA_MASKCOUNT, HOOK_COUNT);
}

/*
 * A handler's body runs under a yieldable pcall at the bottom of its
 * coroutine (run), since an error raised from the count hook leaves hooks
 * off in its thread and only a pcall's recovery turns them on again. The
 * recovery runs the handler's pending <close> variables, with the hook.
 *
 * The message handler (run_error) runs where the error is raised, before
 * that: it keeps the error and its traceback for the log (the coroutine
 * dies in run, so its own stack no longer shows where), and switches the
 * call to closing mode, as co_reset does after any other abort. Were the
 * kill to stay on, each <close> would be ended at its first instruction:
 * the kill's work is done once its error reached the bottom (no code of the
 * handler's is left to catch it), and its cleanup should not depend on
 * where the deadline found it (a handler cancelled while it waits gets its
 * <close> run for up to CLOSE_NS). Closing mode bounds them all the same:
 * together, CLOSE_NS; past it the hook raises on every instruction. A
 * handler that raised on its own gets the same, as it did from co_reset.
 * c->killing stays set: call_resume reads it (a timeout, not a raise).
 */
static int run_error(lua_State *L) {
  mcp_call *c = *extra(L);
  if (c == NULL || lua_rawgetp(L, LUA_REGISTRYINDEX, c) != LUA_TNIL) {
    lua_settop(L, 1);                  /* a <close> method's error, after the first */
    return 1;
  }
  lua_createtable(L, 2, 0);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, 1);
  if (mcp_log_enabled(MCP_LOG_ERROR)) {
    static const char bottom[] = "\n\t[C]: in ?";   /* run's own frame */
    size_t n, b = sizeof bottom - 1;
    const char *tb;
    luaL_traceback(L, L, NULL, 1);
    tb = lua_tolstring(L, -1, &n);
    if (n >= b && memcmp(tb + n - b, bottom, b) == 0) {
      lua_pushlstring(L, tb, n - b);
      lua_remove(L, -2);
    }
    lua_rawseti(L, -2, 2);
  }
  lua_rawsetp(L, LUA_REGISTRYINDEX, c);
  if (c->killing) c->signalled = 1;   /* aborted: ctx:cancelled() is true in its <close>, as after co_reset */
  if (!c->closing) close_begin(c);
  lua_settop(L, 1);
  return 1;
}

/* After the body: its results; or its error (the first, should a <close>
 * method raise another: that one is logged) raised again. */
static int run_end(lua_State *L, int status, lua_KContext ctx) {
  mcp_call *c = *extra(L);
  (void)ctx;
  if (status == LUA_OK || status == LUA_YIELD) return lua_gettop(L) - 1;
  if (c == NULL) return lua_error(L);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, c) != LUA_TTABLE) {
    lua_pop(L, 1);                     /* out of memory: no message handler ran */
    return lua_error(L);
  }
  lua_rawgeti(L, -1, 1);               /* the handler's own */
  if (!lua_rawequal(L, -1, -3))
    mcp_warn("request %.64s: a <close> method failed: %s", c->req.key,
             lua_type(L, -3) == LUA_TSTRING ? lua_tostring(L, -3) : luaL_typename(L, -3));
  return lua_error(L);
}

/* run(run_error, fn, args...): the bottom of a handler's coroutine. */
static int run(lua_State *L) {
  return run_end(L, lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 1, 0, run_end), 0);
}

/* Why a sandboxed call was ended, into buf. */
static const char *over_message(mcp_call *c, char *buf, size_t cap) {
  const mcp_budget *b = c->budget;
  const char *name = b ? b->plugin : "?";
  if (c->over == MCP_OVER_MEMORY)
    snprintf(buf, cap, "sandbox: plugin %s passed its memory limit (memory_mb = %g): the call is ended", name,
             b ? (double)b->mem_limit / (1 << 20) : 0);
  else if (c->over == MCP_OVER_CPU)
    snprintf(buf, cap, "sandbox: plugin %s passed its CPU limit (cpu_ms = %g): the call is ended", name,
             b ? (double)b->cpu_ns / 1e6 : 0);
  else
    snprintf(buf, cap, "sandbox: plugin %s ran %llu ms where it could not yield (cpu_ms): the call is ended",
             name, STUCK_NS / 1000000ull);
  return buf;
}

/* End a sandboxed call from inside it: the hook raises on its every
 * instruction from now on, as for an abort, with the limit's message. */
static void call_over(mcp_call *c, int why) {
  if (c->over) return;
  c->over = (unsigned)why;
  c->killing = c->tainted = 1;
  if (c->co) lua_sethook(c->co, hook, LUA_MASKCOUNT, 1);
}

int mcp_sched_over(lua_State *L, int why) {
  char msg[200];
  mcp_call *c = S.running;
  if (c == NULL) return luaL_error(L, "sandbox: over its limit");
  call_over(c, why);
  lua_sethook(L, hook, LUA_MASKCOUNT, 1);
  return luaL_error(L, "%s", over_message(c, msg, sizeof msg));
}

/* A sandboxed call over its CPU, or too long where it cannot yield. */
static int call_too_long(lua_State *L, mcp_call *c) {
  uint64_t ran;
  if (c->budget == NULL || c != S.running) return MCP_OVER_NONE;
  ran = uv_hrtime() - S.resume_ns;
  if (c->budget->cpu_ns && c->cpu_used_ns + ran > c->budget->cpu_ns) return MCP_OVER_CPU;
  if (ran > STUCK_NS && !(L == c->co && lua_isyieldable(L))) return MCP_OVER_STUCK;
  return MCP_OVER_NONE;
}

/* Is the function running in L one of the host's own Lua files? */
static int in_library(lua_State *L, lua_Debug *ar) {
  return S.lib_len > 0 && lua_getinfo(L, "S", ar) && ar->what[0] != 'C' &&
         strncmp(ar->source, S.lib, S.lib_len) == 0;
}

/*
 * The count hook. A handler's own coroutine runs without it until its time
 * slice is over: then the alarm (slice.c) installs it, and it runs every
 * HOOK_COUNT instructions for the rest of that resume. Coroutines a handler
 * creates have it at all times (mcp_call_watch), since the alarm cannot
 * tell which of them runs. Without the alarm every coroutine has it always.
 *
 * While <close> variables of an ended call run, only a time limit applies
 * (closing). Otherwise it does three things, in this order of precedence:
 * 1. Killing: once a call is being aborted by error, the hook raises on every
 *    instruction. A handler's pcall may catch one error, but the very next
 *    instruction raises again, so the abort always reaches the top and the
 *    coroutine dies (Redis re-arms its SCRIPT KILL hook the same way).
 * 2. Time slices: after SLICE_NS of running, the handler's own coroutine
 *    yields back to the loop (lua_yield as the hook's last action), so pings
 *    and cancels are read while a CPU-bound handler runs. The scheduler
 *    resumes it on the next loop turn; an abort then simply resets the
 *    suspended thread.
 *    A slice never ends inside the host's own Lua (lua/mcp/): the hook
 *    checks every LIB_COUNT instructions until the plugin's code runs, and
 *    yields there. That Lua is written as C is, assuming that nothing
 *    happens between two of its lines but what they do: client.lua checks
 *    that a request's connection is not gone, then makes the future that
 *    the connection's end completes. Were the slice to end between the two,
 *    the loop could end the connection (finding no future to complete) and
 *    the request would wait for an answer that never comes. Only a call
 *    past its hard deadline yields anywhere, as it is aborted anyway.
 * 3. Hard deadline: when the handler cannot yield (inside a non-yieldable C
 *    call such as a table.sort comparator, or in a coroutine it created) and
 *    its timeout or grace is over, the loop never gets a chance to act, so the
 *    hook starts killing it itself.
 *
 * An error raised from a hook leaves the thread with hooks disabled until a
 * pcall recovers from it (Lua restores the flag only there): run, at the
 * bottom of a handler's coroutine, is one. A thread the hook raised in is
 * still never reused: it is marked tainted and left to the collector.
 */
static void hook(lua_State *L, lua_Debug *ar) {
  mcp_call *c = mcp_call_current(L);
  int why;
  if (c == NULL) return;
  if (c->closing) {
    if (mcp_clock_ns() > c->hard_ns) {
      c->tainted = 1;
      lua_sethook(L, hook, LUA_MASKCOUNT, 1);   /* a <close> method's pcall cannot hold it */
      luaL_error(L, "cleanup after abort took longer than 1 s");
    }
    return;
  }
  if (c->killing) {
    char msg[200];
    c->tainted = 1;
    lua_sethook(L, hook, LUA_MASKCOUNT, 1);
    if (c->over) luaL_error(L, "%s", over_message(c, msg, sizeof msg));
    luaL_error(L, "request aborted: %s", c->req.reason ? c->req.reason : "cancelled");
    return;
  }
  if ((why = call_too_long(L, c)) != MCP_OVER_NONE) {
    mcp_sched_over(L, why);
    return;
  }
  if (lua_gethookcount(L) == 1) lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_COUNT);  /* the alarm's */
  if (uv_hrtime() < S.slice_end_ns) return;      /* slices are real CPU time */
  if (L == c->co && lua_isyieldable(L)) {
    if (in_library(L, ar) && (c->hard_ns == 0 || mcp_clock_ns() < c->hard_ns)) {
      lua_sethook(L, hook, LUA_MASKCOUNT, LIB_COUNT);
      return;
    }
    if (lua_gethookcount(L) != HOOK_COUNT) lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_COUNT);
    lua_yield(L, 0);
    return;
  }
  if (c->hard_ns != 0 && mcp_clock_ns() >= c->hard_ns) {
    c->killing = c->tainted = 1;
    lua_sethook(L, hook, LUA_MASKCOUNT, 1);
    if (L != c->co) lua_sethook(c->co, hook, LUA_MASKCOUNT, 1);
    luaL_error(L, "request aborted: %s", c->req.reason ? c->req.reason : "deadline passed");
  }
}

/* Timers and the end of a call. */

/* A call's block, with keylen + 1 bytes for its id's text after it:
 * zeroed, but for the text. One of the slab's (slab.h) when it fits: a
 * freed call's block serves the next call of its class, with no malloc. */
static size_t call_size(size_t keylen) { return sizeof(mcp_call) + keylen + 1; }

static mcp_call *call_alloc(size_t keylen) {
  mcp_call *c;
  if (!MCP_SLAB_ON || call_size(keylen) > MCP_SLAB_MAX) return calloc(1, call_size(keylen));
  if ((c = mcp_slab_alloc(call_size(keylen))) != NULL) memset(c, 0, sizeof *c);
  return c;
}

static void call_free(mcp_call *c) {
  if (c->args_ref != 0) luaL_unref(S.L, LUA_REGISTRYINDEX, c->args_ref);
  mcp__call_params_drop(c);
  mcp_req_close(&c->req);
  if (c->tool_owned) free(c->tool);
  free(c->progress_token);
  if (MCP_SLAB_ON && call_size(c->req.keylen) <= MCP_SLAB_MAX) mcp_slab_free(c, call_size(c->req.keylen));
  else free(c);
}

/* A call's deadline entry (deadline.c) serves its deadline (timeout, then
 * grace) and its next progress heartbeat, whichever is earliest (its waits
 * are ops with their own, and its own sleep has op.c's sleep_dl). */
static void timer_arm(mcp_call *c) {
  uint64_t due = c->due_ns;
  if (c->beat_ns && (due == 0 || c->beat_ns < due)) due = c->beat_ns;
  mcp_deadline_set(&c->dl, due);
}

/* A heartbeat goes to a call still queued or running that reported no
 * progress for `heartbeat` seconds (ctx:progress moves beat_ns on). */
static void heartbeat(mcp_call *c) {
  c->beat_ns = 0;
  if (c->req.state != MCP_REQ_QUEUED && c->req.state != MCP_REQ_RUNNING) return;
  if (mcp_sched_heartbeat_cb) mcp_sched_heartbeat_cb(c);
  mcp_call_beat(c);
}

void mcp_call_beat(mcp_call *c) {
  double beat = 0;
  for (int i = 0; i < S.ntypes && beat <= 0; i++)
    if (S.types[i]->heartbeat) beat = S.types[i]->heartbeat(c);
  if (beat <= 0 || c->progress_token == NULL) return;
  c->beat_ns = mcp_clock_ns() + (uint64_t)(beat * 1e9);
  timer_arm(c);
}

static void on_deadline(mcp_deadline *d) {
  mcp_call *c = (mcp_call *)((char *)d - offsetof(mcp_call, dl));
  uint64_t now = mcp_clock_ns();
  if (c->beat_ns && now >= c->beat_ns) heartbeat(c);
  if (c->due_ns && now >= c->due_ns) {
    c->due_ns = 0;
    timer_arm(c);
    if (c->req.state == MCP_REQ_CANCELLING || c->req.state == MCP_REQ_TIMING_OUT)
      mcp_call_fire(c, MCP_EV_GRACE, NULL);
    else
      mcp_call_fire(c, MCP_EV_TIMEOUT, "timeout");
    return;                          /* the call may be finished */
  }
  timer_arm(c);
}

/* The live calls pred accepts, in an array the caller frees (NULL when
 * none). Firing an event may finish a call, so callers walk this snapshot,
 * not the list; a finished call's memory outlives the loop turn. */
static mcp_call **snapshot(int (*pred)(const mcp_call *c, void *ud), void *ud, int *n) {
  mcp_call **v;
  *n = 0;
  if (S.live == 0) return NULL;
  v = malloc((size_t)S.live * sizeof *v);
  if (v == NULL) abort();
  for (mcp_call *c = S.all; c; c = c->anext)
    if (pred(c, ud)) v[(*n)++] = c;
  return v;
}

void mcp_clock_advance(double seconds) { clock_offset += (uint64_t)(seconds * 1e9); }

void mcp_call_wake(mcp_call *c) { queue_push(c); }

void mcp_call_answer(mcp_call *c, const char *json, size_t len) {
  S.answer = json;
  S.answer_len = len;
  mcp_call_fire(c, MCP_EV_RETURN, NULL);
  S.answer = NULL;
}

void mcp_call_rearm(mcp_call *c) { timer_arm(c); }
lua_State *mcp_sched_lua(void) { return S.L; }
uv_loop_t *mcp_sched_loop(void) { return S.loop; }

/* A function run on the main thread for c (an HTTP or a child's callback,
 * an on_cancel). For a sandboxed call outside its resume, it is counted as
 * one: its memory and CPU to its budget, the hook on the main thread (which
 * cannot yield: 50 ms at most, STUCK_NS). */
int mcp_call_pcall(mcp_call *c, int nargs, int nresults) {
  mcp_call *saved = S.main_as;
  int status, bounded = c != NULL && c->budget != NULL && S.running == NULL;
  S.main_as = c;
  if (bounded) {
    set_running(c, 0);
    S.resume_ns = uv_hrtime();
    S.slice_end_ns = S.resume_ns;
    lua_sethook(S.L, hook, LUA_MASKCOUNT, c->killing ? 1 : HOOK_COUNT);
  }
  status = lua_pcall(S.L, nargs, nresults, 0);
  if (bounded) {
    lua_sethook(S.L, NULL, 0, 0);
    c->cpu_used_ns += uv_hrtime() - S.resume_ns;
    set_running(NULL, 0);
  }
  S.main_as = saved;
  return status;
}

void mcp_call_wait(mcp_call *c, void (*cleanup)(mcp_call *c, void *data), void *data) {
  c->wait_cleanup = cleanup;
  c->wait_data = data;
  c->waiting = 1;
}

void mcp_call_wait_end(mcp_call *c) {
  c->wait_cleanup = NULL;
  c->wait_data = NULL;
  c->waiting = 0;
  queue_push(c);
}

void mcp__call_await(mcp_call *c) {
  c->awaiting = 1;
  c->waiting = 1;
}

void mcp__call_await_done(mcp_call *c) {
  if (!c->awaiting || !c->waiting) return;
  c->waiting = 0;
  queue_push(c);
}

void mcp__call_await_clear(mcp_call *c) { c->awaiting = 0; }

static void wait_cancel(mcp_call *c) {
  if (c->wait_cleanup) {           /* a tasks/result wait: detach it */
    void (*cleanup)(mcp_call *, void *) = c->wait_cleanup;
    void *data = c->wait_data;
    c->wait_cleanup = NULL;
    c->wait_data = NULL;
    cleanup(c, data);
  }
  if (!c->waiting) return;
  c->waiting = 0;
  c->awaiting = 0;
  timer_arm(c);
}

static void call_finish(mcp_call *c) {
  c->finished = 1;
  queue_remove(c);
  EACH_TYPE(leave, c);               /* its slot or its place in a limit's queue */
  mcp_deadline_set(&c->dl, 0);
  mcp__call_params_drop(c);
  if (c->oncancel_ref != LUA_NOREF) {
    luaL_unref(S.L, LUA_REGISTRYINDEX, c->oncancel_ref);
    c->oncancel_ref = LUA_NOREF;
  }
  c->owner->stopping(c, "request finished");
  EACH_TYPE(stop, c, "request finished", 1);
  co_release(c);
  mcp__token_drop(S.L, c);
  if (c->aprev) c->aprev->anext = c->anext; else S.all = c->anext;
  if (c->anext) c->anext->aprev = c->aprev;
  S.live--;
  if (c->budget) {
    c->budget->mem_used -= c->mem_held;   /* its memory is given back to the plugin */
    /* a measure of what the plugin keeps its guard did not make (the call
     * was ended by a limit, a cancel or its timeout): server.reset_due's */
    if (mcp_budget_due(c->budget)) mcp_sched_reset_due();
  }
  c->end_ns = uv_hrtime();
  EACH_TYPE(finish, c);
  c->owner->gone(c);
  c->qnext = S.graveyard;            /* freed after this loop turn, never under a caller */
  S.graveyard = c;
  if (S.live == 0 && mcp_sched_idle_cb) mcp_sched_idle_cb();
}

/* Resume the coroutine and turn what it did into an event. */
static void call_resume(mcp_call *c, int nargs) {
  int nres, status;
  c->in_resume = 1;
  S.resume_ns = uv_hrtime();
  S.slice_end_ns = S.resume_ns + SLICE_NS;   /* one call runs at a time */
  set_running(c, 1);
  if (c->budget && c->budget->cpu_ns && c->cpu_used_ns > c->budget->cpu_ns) call_over(c, MCP_OVER_CPU);
  mcp_slice_begin(c->co);
  status = lua_resume(c->co, S.L, nargs, &nres);
  mcp_slice_end();
  c->closing = 0;                              /* run_error's, for the <close> variables it ran */
  set_running(NULL, 1);
  if (c->budget) c->cpu_used_ns += uv_hrtime() - S.resume_ns;
  c->in_resume = 0;
  if (status == LUA_YIELD && mcp_slice_on() && !c->killing) lua_sethook(c->co, NULL, 0, 0);
  if (status == LUA_YIELD && c->finishing) {   /* mcp.core.finish: its values are the return */
    int below = lua_gettop(c->co) - nres;
    if (below > 0) {
      lua_rotate(c->co, 1, -below);
      lua_pop(c->co, below);
    }
    mcp_call_fire(c, MCP_EV_RETURN, NULL);
    return;
  }
  if (status == LUA_YIELD) {
    lua_pop(c->co, nres);
    if (!c->waiting) {                         /* preempted, or a bare yield */
      EACH_TYPE(preempted, c);
      queue_push(c);
    }
    return;
  }
  if (status == LUA_OK && (!c->fast || S.path->returned(c, c->co, nres) == 0)) {
    mcp_call_fire(c, MCP_EV_RETURN, NULL);
    return;
  }
  if (c->over) {                             /* a sandbox limit ended it: its message is the error */
    if (c->req.state == MCP_REQ_RUNNING) mcp__log_raised(c);
    mcp_call_fire(c, MCP_EV_RAISE, NULL);
    return;
  }
  if (c->killing) {
    /* The hook killed a handler stuck where it could not yield: the
     * deadline it enforced is the timeout (if still running), then grace. */
    if (c->req.state == MCP_REQ_RUNNING) mcp_call_fire(c, MCP_EV_TIMEOUT, "timeout");
    mcp_call_fire(c, MCP_EV_GRACE, NULL);
    return;
  }
  if (c->req.state == MCP_REQ_RUNNING) mcp__log_raised(c);
  mcp_call_fire(c, MCP_EV_RAISE, NULL);
}

/* Push the arguments of the dispatcher: method, params, id, session id.
 * Protected, since converting params allocates. */
static int push_args(lua_State *L) {
  mcp_call *c = lua_touserdata(L, 1);
  lua_settop(L, 0);
  lua_rawgeti(L, LUA_REGISTRYINDEX, S.dispatch_ref);
  lua_pushstring(L, c->method);
  mcp_call_push_params(L, c);
  if (c->req.key[0] != '"') {                  /* an integer id */
    lua_pushinteger(L, (lua_Integer)mcp_key_integer(c->req.key));
  } else if (mcp_json_decode(L, c->req.key, c->req.keylen, NULL, 0) != 0) {
    lua_pushnil(L);
  }
  lua_pushinteger(L, c->sid);
  return 5;
}

/* Start c's coroutine: its function and nargs arguments are on its top. */
static void call_start(mcp_call *c, int nargs) {
  lua_pushcfunction(c->co, run);
  lua_pushcfunction(c->co, run_error);
  lua_rotate(c->co, -(nargs + 3), 2);          /* stack: ... run run_error fn args */
  call_resume(c, nargs + 2);
}

/* The C path takes c (its handler resumed, or its answer given): 1; or
 * leaves it to Lua: 0. */
static int call_begin_path(mcp_call *c) {
  int n = S.path->begin(c, c->co);
  if (n == MCP_PATH_LUA) return 0;
  c->fast = 1;
  if (n == MCP_PATH_HELD) {          /* no handler: its params stay for one started later */
    c->path_held = 1;
    co_release(c);
    mcp_call_fire(c, MCP_EV_HOLD, NULL);
    return 1;
  }
  mcp__call_params_drop(c);
  if (n == MCP_PATH_ANSWERED) mcp_call_fire(c, MCP_EV_RETURN, NULL);
  else call_start(c, n);
  return 1;
}

static void call_begin(mcp_call *c) {
  if (c == S.refusing) {             /* busy or rate-limited: an isError result */
    mcp_call_fire(c, MCP_EV_RAISE, NULL);
    return;
  }
  co_acquire(c);
  if (S.path && call_begin_path(c)) return;
  lua_pushcfunction(c->co, push_args);
  lua_pushlightuserdata(c->co, c);
  if (lua_pcall(c->co, 1, 5, 0) != LUA_OK) {
    mcp_error("request %.64s: cannot start: %s", c->req.key, lua_tostring(c->co, -1));
    mcp_call_fire(c, MCP_EV_RAISE, NULL);
    return;
  }
  mcp__call_params_drop(c);
  call_start(c, 4);
}

static void run_oncancel(mcp_call *c) {
  if (c->oncancel_ref == LUA_NOREF) return;
  lua_State *L = S.L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->oncancel_ref);
  for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
    lua_pushstring(L, c->req.reason);
    if (mcp_call_pcall(c, 1, 0) != LUA_OK) {
      mcp_warn("request %.64s: on_cancel: %s", c->req.key, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 2);
}

/* Stop a handler now. The coroutine is never running here (events arrive
 * from the loop), so it is suspended or dead: reset it, which runs its
 * pending <close> variables under a time limit. */
static void co_reset(mcp_call *c) {
  c->killing = 0;
  close_begin(c);
  wait_cancel(c);
  EACH_TYPE(stop, c, c->req.reason ? c->req.reason : "request aborted", 0);
  c->owner->stopping(c, c->req.reason ? c->req.reason : "request aborted");
  /* A dead thread reports its own error again; only a suspended one's
   * status tells about its <close> methods. */
  int suspended = lua_status(c->co) == LUA_YIELD;
  if (lua_resetthread(c->co) != LUA_OK && suspended)
    mcp_warn("request %.64s: a <close> method failed: %s", c->req.key, lua_tostring(c->co, -1));
  c->closing = 0;
}

static void call_abort(mcp_call *c) {
  if (c->co == NULL) return;
  c->signalled = 1;
  co_reset(c);
  mcp_debug("request %.64s: handler aborted", c->req.key);
}

void mcp_call_fire(mcp_call *c, mcp_req_event ev, const char *reason) {
  unsigned act;
  if (c->finished) return;
  act = mcp_req_fire(&c->req, ev, reason);
  if (act & MCP_ACT_IGNORED) return;
  if ((ev == MCP_EV_CANCEL || ev == MCP_EV_CLOSE) && act != 0)
    mcp_info("request %.64s cancelled: %s", c->req.key, reason ? reason : "(no reason given)");
  if ((ev == MCP_EV_CANCEL || ev == MCP_EV_CLOSE || ev == MCP_EV_TIMEOUT) && c->stop_ns == 0) {
    EACH_TYPE(cancelled, c, ev, reason);
    c->stop_ns = uv_hrtime();
  }
  if (act & MCP_ACT_START) {
    if (c->start_ns == 0) c->start_ns = uv_hrtime();   /* a held call's handler: started before */
    call_begin(c);        /* may finish the call */
    return;
  }
  if (act & MCP_ACT_SIGNAL) {
    c->signalled = 1;
    wait_cancel(c);
    EACH_TYPE(stop, c, c->req.reason, 0);
    if (c->co) queue_push(c);
    run_oncancel(c);
  }
  if (act & MCP_ACT_GRACE) {        /* queued: armed after its resume, if it is still running */
    uint64_t ms = (uint64_t)(c->grace * 1000.0);
    c->hard_ns = c->due_ns = mcp_clock_ns() + ms * 1000000ull;
    if (c->queued) c->arm_late = 1; else timer_arm(c);
  }
  if (act & MCP_ACT_ABORT) call_abort(c);
  if (act & MCP_ACT_RESULT) {
    if (c->co != NULL) mcp__respond_result(c, lua_gettop(c->co));
    else mcp__respond_text(c, S.answer, S.answer_len);   /* held: mcp_call_answer's */
  }
  if (act & MCP_ACT_ERROR) mcp__respond_error(c, c == S.refusing ? S.refusal : NULL);
  if (act & MCP_ACT_TIMEOUT) mcp__respond_timeout(c);
  if (act & MCP_ACT_FINISH) {
    c->due_ns = 0;
    call_finish(c);
  }
}

/* "tools/call", interned once: the commonest method (NULL once the names go). */
static const char *tools_call;

static const char *method_name(const char *method) {
  if (strcmp(method, "tools/call") != 0) return mcp_name_intern(method);
  if (tools_call == NULL) tools_call = mcp_name_intern(method);
  return tools_call;
}

/* A call of method, its tool's policy looked up by name (tools/call), its
 * progress token the JSON text given. */
static mcp_call *call_new(const mcp_call_owner *owner, long long sid, const char *key, size_t keylen,
                          const char *method, const char *name, const char *token, size_t token_len) {
  mcp_call *c = call_alloc(keylen);                    /* its id's text after it */
  int mode = MCP_CANCEL_COOPERATIVE;
  if (c == NULL) abort();
  mcp_deadline_init(&c->dl, NULL);
  c->timeout = (float)mcp_cfg.timeout;
  c->grace = (float)mcp_cfg.grace;
  if (name != NULL) {
    double timeout = c->timeout, grace = c->grace;
    if ((c->tool = (char *)mcp_policy_get(name, &mode, &timeout, &grace, &c->logger)) != NULL) {
      c->budget = mcp_budget_of(c->logger, 0);
      c->timeout = (float)timeout;
      c->grace = (float)grace;
    } else {
      c->tool = strdup(name);
      c->tool_owned = 1;
    }
  }
  if (token != NULL) {
    if ((c->progress_token = malloc(token_len + 1)) == NULL) abort();
    memcpy(c->progress_token, token, token_len);
    c->progress_token[token_len] = '\0';
  }
  mcp_req_init_in(&c->req, (char *)(c + 1), key, keylen, mode);
  c->owner = owner;
  c->sid = sid;
  c->method = method_name(method);
  c->co_ref = c->oncancel_ref = c->token_ref = LUA_NOREF;
  c->last_progress = -1e308;
  c->arrive_ns = uv_hrtime();
  return c;
}

/* c is made: it arrives and waits for its start. */
static mcp_call *call_arrive(mcp_call *c) {
  EACH_TYPE(arrive, c);
  mcp_call_beat(c);
  c->anext = S.all;
  if (S.all) S.all->aprev = c;
  S.all = c;
  S.live++;
  if (c->timeout > 0) {
    uint64_t ms = (uint64_t)(c->timeout * 1000.0);
    c->deadline_ns = c->due_ns = mcp_clock_ns() + ms * 1000000ull;
    if (c->req.mode != MCP_CANCEL_IGNORE) c->hard_ns = c->deadline_ns;
  }
  if (c->due_ns || c->beat_ns) timer_arm(c);
  queue_push(c);
  return c;
}

mcp_call *mcp_call_start(const mcp_call_owner *owner, long long sid, const char *key, size_t keylen,
                         const char *method, json_t *params) {
  const char *name = NULL;
  json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
  mcp_buf b = MCP_BUF_INIT;
  mcp_call *c;
  if (strcmp(method, "tools/call") == 0) name = json_string_value(json_object_get(params, "name"));
  if (json_is_string(token) || json_is_integer(token)) mcp_json_dump(token, &b);
  c = call_new(owner, sid, key, keylen, method, name, b.data, b.len);
  mcp_buf_free(&b);
  c->params = json_incref(params);
  return call_arrive(c);
}

mcp_call *mcp_call_start_text(const mcp_call_owner *owner, long long sid, const char *key,
                              size_t keylen, const char *method, const mcp_request_text *rt) {
  mcp_call *c = call_new(owner, sid, key, keylen, method, strcmp(method, "tools/call") == 0 ? rt->name : NULL,
                         rt->token, rt->token_len);
  c->ptext = mcp__params_text_new(rt);
  return call_arrive(c);
}

/* A request about to start: a registered row (limit.c: its tool's limits)
 * may queue it (it stays QUEUED until woken) or refuse it. */
static void call_admit(mcp_call *c) {
  char msg[128];
  for (int i = 0; i < S.ntypes; i++) {
    int r = S.types[i]->admit ? S.types[i]->admit(c, msg, sizeof msg) : MCP_ADMIT_RUN;
    if (r == MCP_ADMIT_WAIT) return;
    if (r == MCP_ADMIT_REFUSE) {
      mcp_info("request %.64s (%s) refused: %s", c->req.key, c->tool, msg);
      c->refused = 1;
      S.refusing = c;                /* START, then the isError result, happen below */
      snprintf(S.refusal, sizeof S.refusal, "%s", msg);
      break;
    }
  }
  mcp_call_fire(c, MCP_EV_START, NULL);
  S.refusing = NULL;
}

static void bury(void) {
  while (S.graveyard) {
    mcp_call *c = S.graveyard;
    S.graveyard = c->qnext;
    call_free(c);
  }
}

static void run_queue(uv_check_t *h) {
  mcp_call *batch = S.qhead;
  (void)h;
  S.qhead = S.qtail = NULL;
  /* Detach the queue first: calls that yield again go to the next turn. */
  for (mcp_call *c = batch; c != NULL; c = batch) {
    batch = c->qnext;
    if (batch) batch->qprev = NULL;
    c->qnext = c->qprev = NULL;
    c->queued = 0;
    if (c->finished) continue;
    if (c->req.state == MCP_REQ_QUEUED) call_admit(c);
    else if (c->req.state == MCP_REQ_HELD) mcp_call_fire(c, MCP_EV_START, NULL);   /* woken: its handler */
    else if (c->co && !c->waiting && lua_status(c->co) == LUA_YIELD) call_resume(c, 0);
    if (c->arm_late && !c->finished) c->arm_late = 0, timer_arm(c);
  }
  if (S.reset_due) {
    S.reset_due = 0;
    if (mcp__reset_due_cb) mcp__reset_due_cb();
  }
  if (S.qhead == NULL && !S.reset_due) uv_idle_stop(&S.idle);
  bury();
}

void mcp_sched_reset_due(void) {
  S.reset_due = 1;
  if (!uv_is_active((uv_handle_t *)&S.idle)) uv_idle_start(&S.idle, idle_noop);
}

static void over_memory(mcp_call *c) { call_over(c, MCP_OVER_MEMORY); }

/* The host's own Lua files are those beside the server module, whose
 * dispatch function names its file ("@DIR/server.lua" gives "@DIR/"). */
static void lib_find(lua_State *L) {
  lua_Debug ar;
  const char *slash;
  S.lib_len = 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, S.dispatch_ref);
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_getinfo(L, ">S", &ar);
  if (ar.source[0] != '@' || (slash = strrchr(ar.source, '/')) == NULL) return;
  if ((size_t)(slash + 1 - ar.source) >= sizeof S.lib) return;
  S.lib_len = (size_t)(slash + 1 - ar.source);
  memcpy(S.lib, ar.source, S.lib_len);
  S.lib[S.lib_len] = '\0';
}

void mcp__sched_start(uv_loop_t *loop, lua_State *L, int server_ref) {
  mcp__alloc_over_cb = over_memory;
  S.loop = loop;
  S.L = L;
  S.server_ref = server_ref;
  lua_rawgeti(L, LUA_REGISTRYINDEX, server_ref);
  lua_getfield(L, -1, "dispatch");
  S.dispatch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  mcp__respond_init(L, server_ref);
  lib_find(L);
  mcp_slice_init(hook, SLICE_NS);
  mcp_deadlines_init(loop, mcp_clock_ns, on_deadline);
  uv_idle_init(loop, &S.idle);
  uv_check_init(loop, &S.check);
  uv_check_start(&S.check, run_queue);
  uv_unref((uv_handle_t *)&S.check);
}

void mcp__sched_stop(void) {
  uv_close((uv_handle_t *)&S.idle, NULL);
  uv_close((uv_handle_t *)&S.check, NULL);
  mcp_slice_close();
  mcp_deadlines_close();
  bury();
  mcp_name_close();                  /* no call is left to point at a name */
  tools_call = NULL;
  for (int i = 0; i < S.npool; i++) luaL_unref(S.L, LUA_REGISTRYINDEX, S.pool[i].ref);
  S.npool = 0;
  S.ntypes = 0;
}

static int every(const mcp_call *c, void *ud) { return 1; }

void mcp_sched_close_all(int (*pred)(const mcp_call *c, void *ud), void *ud, const char *reason) {
  int n;
  mcp_call **v = snapshot(pred ? pred : every, ud, &n);
  for (int i = 0; i < n; i++) mcp_call_fire(v[i], MCP_EV_CLOSE, reason);
  free(v);
}
