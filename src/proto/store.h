/* The shared task store (--store redis://HOST:PORT/DB): task records that
 * every instance reads and writes, the instances' heartbeats, and the
 * messages between instances (a cancel or a tasks/update for the task's
 * owner; notifications/tasks for everyone's subscriptions/listen).
 *
 * Asynchronous: every operation answers through its callback, from the loop,
 * never inside the call that started it. While the store is unreachable the
 * callbacks get an error at once saying why, writes are
 * dropped, and the connection is retried with backoff; once it is back the
 * hooks' resync writes every local task again.
 *
 * Ownership: store_redis.c owns its two connections, its timers and every
 * pending operation (freed in its reply callback, which hiredis always
 * calls: with the reply, or with none when the connection goes). */
#ifndef MCP_STORE_H
#define MCP_STORE_H

#include <uv.h>

#include "buf.h"

/* A task's record as stored. Strings are never NULL ("" when unset). */
typedef struct {
  const char *id;
  const char *status;          /* working, input_required, completed, failed, cancelled */
  const char *message;         /* statusMessage */
  const char *created;         /* createdAt, ISO 8601 */
  const char *updated;         /* lastUpdatedAt */
  long long ttl_ms;
  int ext;                     /* the tasks extension's (a 2026-07-28 request) */
  const char *owner;           /* the instance that runs its handler */
  const char *scope;           /* whose it is: "stateless", "session:..." (see task_store.c) */
  const char *subject;         /* the token's subject it belongs to, or "" */
  const char *detail;          /* the DetailedTask's outcome members: ",\"result\":{...}" or "" */
} mcp_store_task;

/* err: NULL, or why there is no answer (the store is down, the reply was
 * an error). rec: the record, or NULL when there is none. For cancel and
 * update, rec is NULL and what tells the outcome ("ok", "notfound",
 * "terminal", "unreachable"). */
typedef void (*mcp_store_cb)(void *ud, const char *err, const mcp_store_task *rec, const char *what);

/* What the store calls back into (task_store.c). */
typedef struct {
  void (*cancel)(const char *id);                         /* a cancel for a task we own */
  void (*update)(const char *id, const char *responses);  /* inputResponses for a task we own */
  void (*adopt)(const char *id, const char *status, const char *message);  /* our write lost */
  void (*reaped)(const char *id);                         /* ours, failed while we were away */
  void (*notify)(const char *scope, const char *params);  /* a DetailedTask for scope's listeners */
  void (*resync)(void);                                   /* connected (again) */
} mcp_store_hooks;

/* Non-NULL once --store is given: the one pointer check of the hot path. */
extern void *mcp_store;
#define mcp_store_on() (mcp_store != NULL)

/* Parse url (redis://HOST[:PORT][/DB]), resolve HOST once (before the loop
 * runs) and start connecting. 0, or -1 with why in err. */
int mcp_store_open(uv_loop_t *loop, const char *url, const mcp_store_hooks *hooks, char *err,
                   size_t cap);
/* This instance's id, as task records and heartbeats name it. */
const char *mcp_store_instance(void);

/* Write rec (expiring in expire_ms) unless the stored one is terminal
 * already: then hooks.adopt tells its state. notify (may be NULL): the
 * notifications/tasks params published with the write, only if it is made.
 * cb (may be NULL): called once the store has answered, or failed to. */
void mcp_store_task_put(const mcp_store_task *rec, long long expire_ms, const char *notify,
                        mcp_store_cb cb, void *ud);
/* The record of id; one whose owner stopped is failed first. */
void mcp_store_task_get(const char *id, mcp_store_cb cb, void *ud);
/* Cancel id if it is scope's and subject's and not terminal; its owner is told. */
void mcp_store_task_cancel(const char *id, const char *scope, const char *subject,
                           const char *message, mcp_store_cb cb, void *ud);
/* Pass inputResponses (JSON text) to id's owner. */
void mcp_store_task_update(const char *id, const char *scope, const char *subject,
                           const char *responses, mcp_store_cb cb, void *ud);
/* For /metrics: luamcp_task_store_up, its commands and failures. */
void mcp_store_collect(mcp_buf *b);
/* Stop: the heartbeat key goes (our running tasks fail with a reason at
 * once, on every instance), the connections close once their replies are in. */
void mcp_store_close(void);

#endif
