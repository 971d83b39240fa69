/* Operations: every wait of a handler is one (a sleep, an HTTP transfer, an
 * SQL statement, a child process, a file read, a request to the client, a
 * task's input, a timer, a future that Lua completes), several at a time.
 *
 * An op belongs to the call that started it (mcp_call.ops), or, started
 * outside any call (a plugin's shared MCP client), to the plugin-level list.
 * Whatever stops a call (a cancel, a timeout, an abort, the end of its
 * session, shutdown) and the call's own end cancel every op it still has:
 * the engine stops the I/O at once (a transfer leaves curl's multi handle, a
 * statement is interrupted) and no plugin callback of that op runs
 * afterwards. A handler waiting on it (mcp_op_wait, core.await) then wakes
 * with nil, "cancelled: <reason>", "cancelled".
 *
 * Memory: the engine holds the op while its I/O runs, the Lua handle (a
 * userdata) while Lua can reach it; the op is freed (type->free) when both
 * have let go, in mcp_op_release or the handle's __gc, nowhere else. */
#ifndef MCP_OP_H
#define MCP_OP_H

#include <lua.h>

typedef struct mcp_call mcp_call;
typedef struct mcp_op mcp_op;

typedef struct {
  const char *name;                      /* "http", "sql", "sleep", "spawn", "fs", ... */
  /* Stop the I/O now. The engine calls mcp_op_done (at once or later, e.g.
   * when a thread-pool job comes back) and mcp_op_release when it lets go. */
  void (*cancel)(mcp_op *op);
  /* Push the outcome (the op is done and was not cancelled); returns how
   * many values. Runs on the waiting coroutine. */
  int (*push)(lua_State *L, mcp_op *op);
  void (*free)(mcp_op *op);
} mcp_op_type;

struct mcp_op {
  const mcp_op_type *type;
  mcp_call *call;                        /* the owner call; NULL: plugin-level, or the call ended */
  mcp_op *prev, *next;                   /* the owner's list */
  char *reason;                          /* a cancelled op's "cancelled: <reason>" (owned), or NULL */
  struct mcp_span *span;                 /* its CLIENT span while it runs (tracing on), or NULL */
  unsigned done : 1;                     /* the outcome is in, or it was cancelled */
  unsigned cancelled : 1;
  unsigned engine : 1;                   /* the engine holds it */
  unsigned handle : 1;                   /* a Lua handle holds it */
  unsigned listed : 1;                   /* on the owner's list */
};

/* Start: link op (zeroed by the caller but for its own fields) to call c
 * (NULL: plugin-level); the engine holds it. */
void mcp_op_init(mcp_op *op, const mcp_op_type *type, mcp_call *c);
/* Push a Lua handle of the op (methods: done, wait, cancel). */
void mcp_op_push(lua_State *L, mcp_op *op);
/* The same in two steps, for an op allocated in C: push its handle first
 * (stack: +1; it may raise, when memory runs out, and nothing is lost),
 * then allocate and init the op and attach it, with no raise in between. */
mcp_op **mcp_op_reserve(lua_State *L);
void mcp_op_attach(mcp_op **handle, mcp_op *op);
/* A span of kind under op's call's current span (trace.h), kept by the op
 * and ended when it is done (a cancelled one with error.type cancelled and
 * a cancelled event); NULL without tracing or outside a call. The engine
 * sets its attributes (when span->sampled) before mcp_op_done. */
struct mcp_span *mcp_op_span(mcp_op *op, int kind, const char *name);
/* The engine: the outcome is in. Wakes a call waiting on it. */
void mcp_op_done(mcp_op *op);
/* The engine lets go (after mcp_op_done). */
void mcp_op_release(mcp_op *op);
/* Cancel one op (why: the reason, without "cancelled: "). No-op once done. */
void mcp_op_cancel(mcp_op *op, const char *why);
/* Register op.c's row into sched.c: when a call stops, every op of it is
 * cancelled, and detached from it once it is finished. */
void mcp_ops_init(void);
/* A stopped request starts no new op: when c is cancelled (or timing
 * out), push nil, "cancelled: <reason>", "cancelled" and return 3; else 0. */
int mcp_op_refuse(lua_State *L, mcp_call *c);
/* The call whose handler may wait in L (its own coroutine, or a function
 * of mcp.all); raises "<what>: why", naming the caller's line, elsewhere. */
mcp_call *mcp_op_caller(lua_State *L, const char *what);
/* Wait for the op whose handle is on top of the stack (L may wait: see
 * mcp_op_caller) and return its outcome: op:result() once done, nil,
 * "cancelled: <reason>", "cancelled" when a cancel ended it. A yield: a C
 * function returns what this returns. */
int mcp_op_wait(lua_State *L);
/* Cancel every plugin-level op (shutdown). */
void mcp_ops_shutdown(void);
/* The op of a handle at index idx, or raises. */
mcp_op *mcp_op_check(lua_State *L, int idx);
/* core.await, core.sleep, core.future, core.timer, core.AWAIT, core.all_children
 * and the op metatable into the table on top. */
void mcp_op_open(lua_State *L);

#endif
