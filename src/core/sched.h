/* Calls: one coroutine per request that runs Lua code, its timers and
 * waits, and the actions of the cancellation state machine. */
#ifndef MCP_SCHED_H
#define MCP_SCHED_H

#include <jansson.h>
#include <lua.h>
#include <uv.h>

#include "buf.h"
#include "deadline.h"
#include "policy.h"      /* main.c, cli.c and lmcp.c find the policies here */
#include "request.h"

typedef struct mcp_session mcp_session;
typedef struct mcp_batch mcp_batch;
typedef struct mcp_call mcp_call;

/* Whoever took a call's request (a session, a 2026-07-28 request, a task)
 * hears from the call through these; the scheduler knows nothing else of
 * the protocol. The owner may change while the call runs (a tools/call
 * that becomes a task). */
typedef struct mcp_call_owner {
  /* The call's response (a complete JSON-RPC message). */
  void (*respond)(mcp_call *c, const char *data, size_t len);
  /* The call is stopping (cancelled, aborted, or finished): what it asked
   * of the client is cancelled there. */
  void (*stopping)(mcp_call *c, const char *reason);
  /* FINISH is done: the call leaves the owner's tables; freed after this turn. */
  void (*gone)(mcp_call *c);
  /* The name of its session for the access log (not a credential), or NULL. */
  const char *(*session_name)(const mcp_call *c);
  /* Its client's name (clientInfo.name), or NULL (the console's; optional). */
  const char *(*client_name)(const mcp_call *c);
} mcp_call_owner;

/* A call is owned by the scheduler: created by mcp_call_start (its id's
 * text right after it, one allocation), freed at the end of the loop turn
 * in which the state machine said FINISH. */
struct mcp_call {
  mcp_req req;               /* the state machine; first member */
  const mcp_call_owner *owner;
  long long sid;             /* names its session to Lua */
  /* The owner's, set by it after mcp_call_start; sched.c never reads them. */
  mcp_session *session;
  mcp_batch *batch;          /* the JSON-RPC batch it came in, or NULL */
  void *stream;              /* the transport's exchange it came in (see session.h) */
  const char *method;        /* interned */
  char *tool;                /* params.name of tools/call, for messages */
  const char *logger;        /* the tool's plugin, for log messages (interned) */
  json_t *params;            /* owned reference; dropped when started */
  struct mcp_params_text *ptext;  /* or params as their text (mcp_call_start_text): owned, likewise */
  char *progress_token;      /* JSON text of _meta.progressToken, or NULL */
  double last_progress;
  float timeout, grace;      /* seconds; 0 = none */
  uint64_t deadline_ns;      /* hrtime of the timeout, 0 = none */
  uint64_t hard_ns;          /* hrtime after which the hook aborts a stuck handler */
  lua_State *co;             /* the coroutine, NULL before start and after release */
  int co_ref;
  int oncancel_ref;          /* table of ctx:on_cancel functions, or LUA_NOREF */
  int token_ref;             /* userdata naming this call to coroutines it creates */
  int args_ref;              /* a 2026-07-28 C-path call's arguments until its first input
                                round takes them (fastpath.c), or 0 (never a ref) */
  mcp_deadline dl;           /* the earliest of due_ns and beat_ns (deadline.c) */
  mcp_deadline sleep_dl;     /* op.c's: the handler's own ctx:sleep (no op of its own) */
  uint64_t due_ns;           /* hrtime of the timeout, then of the grace end; 0 = none */
  struct mcp_span *span;     /* its SERVER span (trace.c) while tracing is on, else NULL */
  struct mcp_task *task;     /* a task-augmented tools/call: its task (task.c), until either ends */
  /* A tasks/result request waiting for its task registers its cleanup
   * here; whatever ends the wait early (a cancel, an abort, the end of the
   * call) runs it once, and it detaches wait_data. A handler's waits are ops. */
  void (*wait_cleanup)(mcp_call *c, void *data);
  void *wait_data;
  struct mcp_op *ops;        /* operations it started (op.c): cancelled when it stops or ends */
  struct mcp_limit *limit;   /* its tool's limits and counts (limit.c), or NULL */
  struct mcp_budget *budget; /* its sandboxed plugin's limits (policy.h), or NULL */
  size_t mem_held;           /* bytes its code allocated and still holds (budget's share) */
  uint64_t cpu_used_ns;      /* CPU its resumes used (sandboxed calls only) */
  mcp_call *lnext;           /* the limit's queue of calls waiting for a slot */
  uint64_t arrive_ns, start_ns, stop_ns;  /* uv_hrtime: arrived, started, first cancel (0: none) */
  uint64_t end_ns;           /* uv_hrtime at its finish: the rows' finish read this one */
  uint64_t beat_ns;          /* mcp_clock_ns of the next progress heartbeat; 0 = none */
  uint32_t bytes_in, bytes_out;   /* its request's and its response's sizes */
  mcp_call *qprev, *qnext;   /* run queue */
  mcp_call *aprev, *anext;   /* all live calls */
  unsigned waiting : 1;      /* a wait is armed; its callback resumes */
  unsigned queued : 1;       /* in the run queue */
  unsigned signalled : 1;    /* cancelled flag seen by mcp.cancelled() */
  unsigned in_resume : 1;
  unsigned killing : 1;      /* the hook raises on every instruction */
  unsigned tainted : 1;      /* the hook raised in this thread: never reuse it */
  unsigned closing : 1;      /* <close> variables running after an abort */
  unsigned finished : 1;     /* FINISH done; memory goes with the timers */
  unsigned responded : 1;    /* its response was written */
  unsigned tasked : 1;       /* answered with a task: its response goes to the task */
  unsigned finishing : 1;    /* mcp.core.finish yielded the call's return values */
  unsigned typed : 1;        /* its result names its own resultType (input_required, task) */
  unsigned awaiting : 1;     /* waits in core.await: an op's completion wakes it */
  unsigned tool_owned : 1;   /* tool is a copy (no such tool was declared), not interned */
  unsigned rpc_error : 1;    /* its result was a JSON-RPC error */
  unsigned refused : 1;      /* its tool's limits refused it (busy, rate) */
  unsigned fast : 1;         /* runs on the C path (mcp_call_path), not Lua's dispatch */
  unsigned lstate : 2;       /* limit.c's: where it stands with its limit */
  unsigned why : 4;          /* stats.c's MCP_WHY_*: what stopped it (first cancel, timeout or close) */
  unsigned over : 2;         /* MCP_OVER_*: the sandbox limit that ended it */
  unsigned tool_error : 1;   /* its response was a tool's isError result (respond.c) */
  unsigned held : 1;         /* it waited in its tool's queue (limit.c), for traces */
  unsigned sleep_cut : 1;    /* op.c's: a stop ended that sleep */
  unsigned arm_late : 1;     /* its grace is armed after the resume it is queued for */
  unsigned path_held : 1;    /* the C path held it (MCP_PATH_HELD): no coroutine until woken */
  int rpc_code;              /* its response's JSON-RPC error code, 0 for none (respond.c) */
};

/* The sandbox limit a call passed (mcp_call.over). */
enum { MCP_OVER_NONE, MCP_OVER_MEMORY, MCP_OVER_CPU, MCP_OVER_STUCK };
/* The budget that code running now is accounted to (a sandboxed call's, or
 * the plugin's while its file loads: mcp_sched_account), or NULL. */
struct mcp_budget *mcp_sched_budget(void);
/* Count allocations to b (NULL: to none) from now; the one counted to
 * before, to put back (a measure's own stack is not the plugin's). */
struct mcp_budget *mcp_sched_budget_swap(struct mcp_budget *b);
/* server.reset_due() runs once this loop turn's calls have run (a
 * sandboxed plugin over its memory is loaded afresh: never inside a call). */
void mcp_sched_reset_due(void);
/* Account allocations outside calls to b (a sandboxed plugin's file
 * running at load), or stop (NULL). */
void mcp_sched_account(struct mcp_budget *b);
/* End the running sandboxed call: why is MCP_OVER_*. From C code that
 * cannot return to Lua's hook (the bounded pattern matcher): raises. */
int mcp_sched_over(lua_State *L, int why);
/* c's plugin is known (resources, prompts, completion: core.set_logger): its budget. */
void mcp_call_set_budget(mcp_call *c, struct mcp_budget *b);
/* The CPU the running sandboxed call has used, with this resume's share. */
uint64_t mcp_sched_cpu_used(void);

/* The C path of the methods it knows (src/lua/fastpath.c registers it):
 * a call it takes runs without Lua's dispatch; the handler's coroutine is
 * the only Lua on it. A call it leaves (a method it does not serve, a
 * middleware's, anything unusual) goes to Lua as before. */
enum { MCP_PATH_LUA = -1, MCP_PATH_ANSWERED = -2, MCP_PATH_HELD = -3 };
typedef struct mcp_call_path {
  /* c starts, its coroutine co empty: push onto co what the call keeps
   * (one value), the function and its arguments, and return how many
   * arguments; or MCP_PATH_ANSWERED with the result on co (what
   * mcp__respond_result encodes); or MCP_PATH_LUA, co left empty; or
   * MCP_PATH_HELD, co left empty: c runs with no handler and no coroutine
   * (MCP_REQ_HELD, its params kept), an op of the path's answers it
   * (mcp_call_answer) or wakes it (mcp_call_wake): then begin runs again,
   * c->path_held set, and starts its handler. */
  int (*begin)(mcp_call *c, lua_State *co);
  /* c's function returned (its values on co above the value begin kept;
   * lua_resume's nres counts that value too):
   * leave the response's values (a result, or nil, code, message [, data])
   * as co's whole stack and return 0; or return -1 with an error value on
   * top (the call raised it). A light userdata result is an mcp_buf of
   * JSON text, written as it is. */
  int (*returned)(mcp_call *c, lua_State *co, int nres);
} mcp_call_path;
void mcp_sched_set_path(const mcp_call_path *path);

/* server_ref: the mcp.server module, with dispatch(method, params, id,
 * session), the methods table it serves, capabilities() and session_closed(id). */
int mcp_sched_init(uv_loop_t *loop, lua_State *L, int server_ref);
int mcp_sched_has_method(const char *method);
/* Tracing on (src/net/otel.c): calls get SERVER spans (trace.h), sampled
 * by sampler and given, ended, to sink, which owns them from then on. */
struct mcp_span;
struct mcp_sampler;
void mcp_sched_trace(const struct mcp_sampler *sampler, void (*sink)(struct mcp_span *s));
void mcp_sched_close(void);
/* Create a call for a request already checked (method known, id not in
 * flight) and queue its start (on a later loop turn: the owner links it in
 * its tables first). */
mcp_call *mcp_call_start(const mcp_call_owner *owner, long long sid, const char *key, size_t keylen,
                         const char *method, json_t *params);
/* A request's params as read from their text (session.c), no tree made:
 * the object's text, checked as mcp_json_parse checks it, with no member
 * but name (a string), arguments (an object) and _meta (progressToken). */
typedef struct mcp_request_text {
  const char *params, *args;           /* the texts of params and of params.arguments (or NULL) */
  size_t params_len, args_len;
  const char *name;                    /* params.name, NUL-terminated */
  const char *token;                   /* _meta.progressToken's JSON text, or NULL */
  size_t token_len;
} mcp_request_text;
/* mcp_call_start for params read as text: what the call needs is copied. */
mcp_call *mcp_call_start_text(const mcp_call_owner *owner, long long sid, const char *key,
                              size_t keylen, const char *method, const mcp_request_text *rt);
/* c's params before it starts, as a tree (made now from their text if they
 * came as text), or NULL. */
json_t *mcp_call_params(mcp_call *c);
/* Push c's params as a Lua table (an empty table when it has none).
 * Raises on out of memory: call it protected. */
void mcp_call_push_params(lua_State *L, mcp_call *c);
/* 1 when c's params came as text, with params.arguments' text in *args
 * (NULL when it has none); 0 for a tree's (or no params). */
int mcp_call_args_text(const mcp_call *c, const char **args, size_t *len);
/* Append the server's capabilities object, as the plugins make them. */
void mcp_sched_capabilities(mcp_buf *b);
/* server[name]() as JSON into b (the console's views): 0, or -1 (logged). */
int mcp_sched_server_json(const char *name, mcp_buf *b);
/* The Mcp-Param headers a tool declares (x-mcp-header, 2026-07-28): a JSON
 * array of {"name": header name after "Mcp-Param-", "path": [property
 * names from the arguments object]}, or NULL for an unknown tool or one
 * without. The caller owns it. */
json_t *mcp_sched_param_headers(const char *tool);
/* The OAuth scopes a tool declares (mcp.tool{scopes=}), space-separated,
 * or NULL; with tool NULL, every tool's. The caller frees it. */
char *mcp_sched_tool_scopes(const char *tool);
/* Hot reload: Lua looks at every plugin file again (lib_dirs: dirs whose
 * lib/ changed). */
void mcp_sched_rescan(const char **lib_dirs, int n);
/* Tell Lua a session ended (subscriptions and the like go with it). */
void mcp_sched_session_closed(long long sid);
/* Feed an event to the state machine and perform its actions. */
void mcp_call_fire(mcp_call *c, mcp_req_event ev, const char *reason);
/* The call whose coroutine (or a coroutine it created) is L, or NULL. */
mcp_call *mcp_call_current(lua_State *L);
/* Push the call's token (created on first use). Coroutines the handler
 * creates are mapped to it in the weak table that mcp_call_tokens_open
 * creates and pushes; a token outlives its call and then names none. */
void mcp_call_token(lua_State *L, mcp_call *c);
void mcp_call_tokens_open(lua_State *L);
/* A coroutine the handler created: the count hook stays on it (time
 * slices and forced aborts reach it; the alarm only reaches the handler's own). */
void mcp_call_watch(lua_State *co);
/* Fire CLOSE on every live call for which pred says yes (every call when
 * pred is NULL). */
void mcp_sched_close_all(int (*pred)(const mcp_call *c, void *ud), void *ud, const char *reason);
int mcp_sched_live(void);      /* number of live calls */
/* Called when the last live call is gone (shutdown waits for it). */
extern void (*mcp_sched_idle_cb)(void);
/* Sends a call's progress heartbeat: notifications/progress with its last
 * progress (0 when none), for a tool with `heartbeat` (lmcp.c sets it). */
extern void (*mcp_sched_heartbeat_cb)(mcp_call *c);
/* Arm c's next progress heartbeat, its tool's period from now (nothing for a
 * tool without one, or a call without a progressToken). */
void mcp_call_beat(mcp_call *c);
/* Bytes the Lua state holds. */
size_t mcp_sched_memory(void);
/* Test hook (--test-clock only): the nth Lua allocation inside a handler's
 * resume from now on fails, and so do the rest of that resume; 0 disarms. */
void mcp_sched_fail_alloc(unsigned long n);

/* The Lua allocator. The memory limit holds while handler code runs (in a
 * resume); the core's own allocations outside it never fail on the limit,
 * so that an exhausted state cannot panic the server. */
void *mcp_sched_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* The clock of deadlines and waits (ns); --test-clock lets a client move it. */
uint64_t mcp_clock_ns(void);
/* Move the clock forward (mcp_deadlines_run then fires what is due). */
void mcp_clock_advance(double seconds);

/* A wait outside core.await (a tasks/result for its task): c sleeps until
 * mcp_call_wait_end; whatever ends the wait early (a cancel, an abort, the
 * call's end) runs cleanup(c, data) once instead. Only sched.c writes the
 * wait fields. */
void mcp_call_wait(mcp_call *c, void (*cleanup)(mcp_call *c, void *data), void *data);
/* The wait is over: c resumes on the next loop turn. */
void mcp_call_wait_end(mcp_call *c);

/* For outgoing.c: resume c on the next loop turn (a held call: start its
 * handler); re-arm its timer. */
void mcp_call_wake(mcp_call *c);
/* A held call (MCP_PATH_HELD) is answered with a result's JSON text: the
 * response is spliced from it and the call ends. */
void mcp_call_answer(mcp_call *c, const char *json, size_t len);
void mcp_call_rearm(mcp_call *c);
lua_State *mcp_sched_lua(void);
uv_loop_t *mcp_sched_loop(void);
/* Call the function below nargs arguments on the main thread, protected,
 * on behalf of c (mcp.cancelled(), ctx:log, ctx:progress see c). Returns
 * the lua_pcall status; on error the message is left on the stack. */
int mcp_call_pcall(mcp_call *c, int nargs, int nresults);

#endif
