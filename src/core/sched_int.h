/* Private to src/core (libuv's uv-common.h): what the files beside sched.c
 * register into it, and the helpers through which they begin and end a
 * call's wait. Only sched.c writes a call's wait fields (waiting, awaiting,
 * wait_cleanup, wait_data). */
#ifndef MCP_SCHED_INT_H
#define MCP_SCHED_INT_H

#include "sched.h"

/* What a file above sched.c does at a call's turning points, one row per
 * file (Redis's moduleType): limit.c, stats.c and op.c each register one at
 * init (core.c), and sched.c calls them without naming any. A NULL member
 * is skipped. */
typedef struct mcp_call_type {
  /* c was created (its tool, timeout and progress token known). */
  void (*arrive)(mcp_call *c);
  /* Seconds between c's progress heartbeats; 0: none. */
  double (*heartbeat)(const mcp_call *c);
  /* May c, queued, start? MCP_ADMIT_RUN, MCP_ADMIT_WAIT (it stays QUEUED
   * until mcp_call_wake), or MCP_ADMIT_REFUSE with msg saying why. */
  int (*admit)(mcp_call *c, char *msg, size_t cap);
  /* c's handler used up its time slice and yields to the loop (a spinning handler). */
  void (*preempted)(mcp_call *c);
  /* c's first cancel, timeout or close. */
  void (*cancelled)(mcp_call *c, mcp_req_event ev, const char *reason);
  /* c stops (cancelled, aborted, or finished: then nothing of it is left to wake). */
  void (*stop)(mcp_call *c, const char *why, int finished);
  /* c is finishing: it gives back what it held (first thing of FINISH). */
  void (*leave)(mcp_call *c);
  /* FINISH is done (the call has left the live list, the owner not yet told). */
  void (*finish)(const mcp_call *c);
} mcp_call_type;

enum { MCP_ADMIT_RUN, MCP_ADMIT_WAIT, MCP_ADMIT_REFUSE };

/* alloc.c: c's code runs now (NULL: no call's), inside a resume (resume:
 * --memory-limit holds) or a callback of the main thread; and the callback
 * through which it ends a call that passed its sandbox budget (sched.c's). */
void mcp__alloc_running(mcp_call *c, int resume);
extern void (*mcp__alloc_over_cb)(mcp_call *c);
/* core.c's: server.reset_due(), protected (mcp_sched_reset_due). */
extern void (*mcp__reset_due_cb)(void);

/* params.c: a call's params as the text they came as (mcp_call_start_text),
 * and their drop (tree or text: the call started, or it ends). */
struct mcp_params_text *mcp__params_text_new(const mcp_request_text *rt);
void mcp__call_params_drop(mcp_call *c);

/* token.c: the call a coroutine a handler created runs for (NULL: none),
 * and c's token cleared and released (c ends). */
mcp_call *mcp__token_call(lua_State *L);
void mcp__token_drop(lua_State *L, mcp_call *c);

/* The live calls, newest first (walk with anext). */
mcp_call *mcp__sched_calls(void);
/* Add a row (once; the same row again is ignored). */
void mcp__sched_register(const mcp_call_type *t);
/* The scheduler proper, under mcp_sched_init and mcp_sched_close (core.c). */
void mcp__sched_start(uv_loop_t *loop, lua_State *L, int server_ref);
void mcp__sched_stop(void);

/* The waits of core.await (op.c): c's own coroutine waits until an op it
 * awaits is done (mcp__call_await_done wakes it, once). */
void mcp__call_await(mcp_call *c);
void mcp__call_await_done(mcp_call *c);
/* c's coroutine runs again: it awaits nothing now. */
void mcp__call_await_clear(mcp_call *c);

/* respond.c: a call's response, to its owner (it calls nothing of sched.c). */
void mcp__respond_init(lua_State *L, int server_ref);
void mcp__respond_result(mcp_call *c, int nres);       /* the handler's nres values on c->co */
void mcp__respond_text(mcp_call *c, const char *json, size_t len);   /* a result's JSON text (NULL: none) */
void mcp__respond_error(mcp_call *c, const char *refusal);   /* refusal: its limits', or NULL */
void mcp__respond_timeout(mcp_call *c);
/* The handler raised: its position and traceback to the log. */
void mcp__log_raised(mcp_call *c);

#endif
