/* Tasks: a tools/call answered at once with a task; its handler runs on in
 * its call, under the same cancellation state machine, and its outcome is
 * kept for the client to collect. Two wires:
 *
 * - 2025-11-25 (experimental, sessions): the client asks with params.task;
 *   tasks/get, tasks/list, tasks/result, tasks/cancel; per session.
 * - the tasks extension (io.modelcontextprotocol/tasks) for 2026-07-28
 *   requests: the server decides (a tool with task support, a request that
 *   declares the extension); CreateTaskResult (resultType "task"), tasks/get
 *   with the result, error or inputRequests inline, tasks/update, tasks/cancel
 *   (an ack), notifications/tasks to subscriptions/listen. A stateless request
 *   has no session: its task belongs to the transport session that read it
 *   (stdio's, or HTTP's one session of stateless requests), its scope.
 *
 * Ownership: task.c owns every mcp_task (created by mcp_task_l_create,
 * freed in task_free: at ttl expiry, when evicted, or when its scope
 * closes). A task and its call point at each other until the call ends;
 * meanwhile the task owns the call (its mcp_call_owner); calls waiting in tasks/result are linked from the
 * task, each with a wait_cleanup that unlinks it; a call waiting for
 * inputResponses (the extension) likewise. */
#ifndef MCP_TASK_H
#define MCP_TASK_H

#include <jansson.h>
#include <lua.h>

#include "buf.h"

#define MCP_TASK_MAX_PER_SESSION 1000          /* per session, or per scope of stateless requests */
#define MCP_TASK_DEFAULT_TTL_MS  3600000LL     /* 1 hour when the client gives none */
#define MCP_TASK_MAX_TTL_MS      86400000LL    /* 24 hours at most */
#define MCP_TASK_POLL_MS         1000

typedef struct mcp_task mcp_task;
typedef struct mcp_call mcp_call;
typedef struct mcp_session mcp_session;
typedef struct mcp_batch mcp_batch;

/* core.task_create(ttl): turn the running tools/call into a task; answers
 * the request with CreateTaskResult. Returns the task id (the same again
 * once it is one), or false when the call cannot be a task (in a batch; no
 * longer running; a 2026-07-28 request that does not declare the tasks
 * extension, or for a tool without task support), or nil, message (too many
 * tasks). A 2026-07-28 request's task has the server's ttl (the argument is
 * ignored). */
int mcp_task_l_create(lua_State *L);
/* core.task_result(taskId): waits until the task is terminal, then returns
 * the tool's result (with _meta related-task), or nil, code, message, data. */
int mcp_task_l_result(lua_State *L);

/* Is c the call of a task of the tasks extension (a 2026-07-28 request)? */
int mcp_task_takes_input(const mcp_call *c);
/* The handler of such a task needs client input: the requests in the list
 * at idx ({method = ..., params = ...} each) become the task's
 * inputRequests, with keys unique over the task's life; the task is
 * input_required, and the handler yields until tasks/update has answered
 * them all, timeout seconds pass, or it is cancelled. The continuation
 * returns the answers (the one answer when single, else a list in order),
 * or nil and a message. */
int mcp_task_input_wait(lua_State *L, mcp_call *c, int idx, double timeout, int single);

/* Append ,"_meta":{related-task} to the params of a notification from c's
 * handler when c is a 2025-11-25 task's call (nothing otherwise; c may be NULL). */
void mcp_task_add_meta(mcp_buf *b, const mcp_call *c);

/* Set related-task in the _meta table on the top of L's stack (a request
 * from c's handler to the client), when c is a 2025-11-25 task's call. */
void mcp_task_push_meta(lua_State *L, const mcp_call *c);
/* c's handler sent a request (method) to the client and waits for the
 * answer: its task is input_required; method NULL: working again. */
void mcp_task_input(const mcp_call *c, const char *method);

/* Register task.c's row into session.c: the ttl sweep before the test clock
 * moves, a session's tasks at its end (task_int.h has the other task files'). */
void mcp_task_init(void);
#include "task_store.h"   /* mcp_task_store_open, where main.c looks for it */
/* Tasks by state, for /metrics. */
void mcp_task_collect(mcp_buf *b);
void mcp_task_close(void);

#endif
