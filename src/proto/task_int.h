/* Tasks, inside: what the task files (task.c, the model; task_render.c;
 * task_methods.c; task_ext.c; task_store.c, the shared store's side) share.
 * task.c owns the tasks. Not for other files. */
#ifndef MCP_TASK_INT_H
#define MCP_TASK_INT_H

#include <jansson.h>
#include <stdint.h>

#include "buf.h"
#include "session.h"
#include "task.h"

enum {
  MCP__TASK_WORKING, MCP__TASK_INPUT_REQUIRED, MCP__TASK_COMPLETED, MCP__TASK_FAILED,
  MCP__TASK_CANCELLED
};
extern const char *const mcp__task_status_names[];   /* by status (task_render.c) */
#define mcp__task_terminal(st) ((st) >= MCP__TASK_COMPLETED)

/* A request of an extension task's handler to the client, surfaced in
 * tasks/get's inputRequests and answered by tasks/update. */
typedef struct {
  char key[24];                /* "input-N": unique over the task's life */
  char *request;               /* {"method":...,"params":...} as JSON text */
  json_t *response;            /* the client's answer; NULL until tasks/update gives it */
} mcp__task_input;

/* Owned by task.c (see task.h); the other task files read it. */
struct mcp_task {
  mcp_task *prev, *next;       /* every task, oldest first */
  mcp_session *session;        /* its session, or the scope of a stateless request */
  char *subject;               /* the token's subject that created it, or NULL without auth */
  mcp_call *call;              /* the handler's call until it ends */
  char id[33];                 /* 128 random bits, hex */
  unsigned long long seq;      /* creation order: the tasks/list cursor */
  int status;
  unsigned ext : 1;            /* the tasks extension's (a 2026-07-28 request) */
  char *message;               /* statusMessage, or NULL */
  json_t *response;            /* the call's JSON-RPC response, once it sent one */
  double created_ms, updated_ms;   /* wall clock */
  long long ttl_ms;
  uint64_t expires_ns;         /* on mcp_clock_ns() */
  mcp_call **waiters;          /* 2025-11-25: calls blocked in tasks/result */
  int nwaiters, capwaiters;
  mcp__task_input *inputs;     /* the extension: what the handler waits for */
  int ninputs;
  unsigned input_seq;
  struct input_op *input_op;   /* the handler's wait for them, or NULL */
};

/* task.c, the model. */
mcp_task *mcp__task_find(mcp_session *s, const char *id, int ext);   /* owned by s's subject */
int mcp__task_owned_by(const mcp_task *t, const mcp_session *s);     /* both NULL without auth */
void mcp__task_sweep(int may_fire);           /* may_fire 0: inside a handler */
unsigned long long mcp__task_seq(void);       /* the last task's seq */
/* Answers about tasks, sent on stream (in batch b when not NULL). */
void mcp__task_reply(mcp_session *s, mcp_batch *b, void *stream, mcp_buf *out);
void mcp__task_reply_error(mcp_session *s, mcp_batch *b, void *stream, const char *key, int code,
                           const char *msg);
/* The task params.taskId names in s, or NULL once the error is answered. */
mcp_task *mcp__task_lookup(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                           json_t *params, int ext);

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
/* task_render.c: the Task object, and the DetailedTask members alone. */
void mcp__task_render(mcp_buf *b, const mcp_task *t, const char *result_type, int detailed);
void mcp__task_detail(mcp_buf *b, const mcp_task *t);
void mcp__task_cancel(mcp_task *t);                         /* as tasks/cancel does */
int mcp__task_answer(mcp_task *t, json_t *responses);       /* as tasks/update does */
/* The store has t terminal (status, message) while t is not: follow it. */
void mcp__task_adopt(mcp_task *t, const char *status, const char *message);

/* What the task files serve through their rows (task_methods.c, task_ext.c). */
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
/* The store's row while the store is on, else NULL. */
const mcp_task_store_type *mcp__task_stored(void);

/* Register the rows of each file (proto.c): task.c's (the ttl sweep, a
 * session's tasks), task_methods.c's (tasks/get, list, cancel), task_ext.c's
 * (the tasks extension into rev2026.c). */
void mcp_task_methods_init(void);
void mcp_task_ext_init(void);

#endif
