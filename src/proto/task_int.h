/* Tasks, inside: what task_store.c (the shared store's side of tasks) may
 * read and do of a task; task.c owns them. Not for other files. */
#ifndef MCP_TASK_INT_H
#define MCP_TASK_INT_H

#include <jansson.h>
#include <stdint.h>

#include "buf.h"
#include "task.h"

/* What task_store.c reads of a task. */
typedef struct {
  const char *id;
  const char *status;          /* "working", ... */
  const char *message;         /* statusMessage, or NULL */
  const char *subject;         /* the token's subject, or NULL */
  mcp_session *session;        /* its session, or its scope's */
  int ext;                     /* the tasks extension's */
  double created_ms, updated_ms;
  long long ttl_ms;
  uint64_t expires_ns;         /* on mcp_clock_ns() */
} mcp__task_view;

void mcp__task_view_of(const mcp_task *t, mcp__task_view *v);
mcp_task *mcp__task_next(const mcp_task *t);                /* every task, oldest first */
mcp_task *mcp__task_head(void);
void mcp__task_iso(char *out, size_t cap, double ms);      /* 2026-11-24T23:16:20.000Z */
mcp_task *mcp__task_by_id(const char *id);                  /* any scope, or NULL */
/* The Task object (task.c's add_task), and the DetailedTask members alone. */
void mcp__task_render(mcp_buf *b, const mcp_task *t, const char *result_type, int detailed);
void mcp__task_detail(mcp_buf *b, const mcp_task *t);
void mcp__task_cancel(mcp_task *t);                         /* as tasks/cancel does */
int mcp__task_answer(mcp_task *t, json_t *responses);       /* as tasks/update does */
/* The store has t terminal (status, message) while t is not: follow it. */
void mcp__task_adopt(mcp_task *t, const char *status, const char *message);

/* What task.c serves through its rows (mcp_task_init). */
/* tasks/get, tasks/list and tasks/cancel of a session, answered at once.
 * Returns 0 for any other method (or when no tool offers tasks), 1 when it
 * answered. */
int mcp_task_request(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                     const char *method, json_t *params);
/* tasks/get, tasks/update or tasks/cancel of a 2026-07-28 request read on s
 * (its scope), which declared the extension: answered at once on stream. */
void mcp_task_request_ext(mcp_session *s, void *stream, const char *key, const char *method,
                          json_t *params);
/* Is there a task of the extension with this id in scope s? If so, and b
 * is not NULL, append its DetailedTask (as notifications/tasks carries it). */
int mcp_task_describe(mcp_session *s, const char *id, mcp_buf *b);
/* Free the tasks whose ttl is over (also run on each task operation). */
void mcp_task_sweep(void);
/* Free every task of s (a session, or a scope of stateless requests; its
 * calls are gone), or of all (s NULL, at shutdown: also closes the expiry
 * timer). */
void mcp_task_session_closed(mcp_session *s);

/* task_store.c's row (--store), registered when the store opens: task.c,
 * below it, calls it and names no function of task_store.c. */
typedef struct mcp_task_store_type {
  /* t changed: its record is written (notify: the others hear of it). */
  void (*write)(const mcp_task *t, int notify);
  /* A task of the extension was made on s's request answered on stream: its
   * CreateTaskResult (response, len bytes) goes once the record is written,
   * so that whatever instance the client asks next knows the task. */
  void (*created)(const mcp_task *t, mcp_session *s, void *stream, const char *response,
                  size_t len);
  /* tasks/get, tasks/update, tasks/cancel of the extension through the store;
   * answered when the store replies. */
  void (*request)(mcp_session *s, void *stream, const char *key, const char *method,
                  json_t *params);
  void (*session_closed)(mcp_session *s);
  /* A listener on s named task id: its state goes to s's listeners once
   * the store answers (the task may be another instance's). */
  void (*describe)(mcp_session *s, const char *id);
} mcp_task_store_type;
void mcp__task_set_store(const mcp_task_store_type *t);

#endif
