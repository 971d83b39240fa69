/* Tasks, inside: the record task.c owns and what task_store.c (the shared
 * store's side of tasks) may use of it. Not for other files. */
#ifndef MCP_TASK_INT_H
#define MCP_TASK_INT_H

#include <jansson.h>
#include <stdint.h>

#include "buf.h"
#include "task.h"

enum { ST_WORKING, ST_INPUT_REQUIRED, ST_COMPLETED, ST_FAILED, ST_CANCELLED };
#define terminal(st) ((st) >= ST_COMPLETED)

/* A request of an extension task's handler to the client, surfaced in
 * tasks/get's inputRequests and answered by tasks/update. */
typedef struct {
  char key[24];                /* "input-N": unique over the task's life */
  char *request;               /* {"method":...,"params":...} as JSON text */
  json_t *response;            /* the client's answer; NULL until tasks/update gives it */
} task_input;

/* Owned by task.c: see task.h. */
struct mcp_task {
  mcp_task *prev, *next;       /* every task, oldest first */
  mcp_session *session;        /* its session, or the scope of a stateless request */
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
  task_input *inputs;          /* the extension: what the handler waits for */
  int ninputs;
  unsigned input_seq;
  char *subject;               /* the token's subject it belongs to (OAuth), or NULL: checked on
                                  every task operation; kept in its store record */
};

const char *mcp__task_status(int status);                   /* "working", ... */
mcp_task *mcp__task_head(void);
mcp_task *mcp__task_by_id(const char *id);                  /* any scope, or NULL */
/* The Task object (task.c's add_task), and the DetailedTask members alone. */
void mcp__task_render(mcp_buf *b, const mcp_task *t, const char *result_type, int detailed);
void mcp__task_detail(mcp_buf *b, const mcp_task *t);
void mcp__task_cancel(mcp_task *t);                         /* as tasks/cancel does */
int mcp__task_answer(mcp_task *t, json_t *responses);       /* as tasks/update does */
/* The store has t terminal (status, message) while t is not: follow it. */
void mcp__task_adopt(mcp_task *t, const char *status, const char *message);

/* task_store.c: tasks in the shared store (--store; task.h has the rest). */
void mcp_task_store_write(const mcp_task *t, int notify);
/* A task of the extension was made on s's request answered on stream: its
 * CreateTaskResult (response, len bytes) goes once the record is written,
 * so that whatever instance the client asks next knows the task. */
void mcp_task_store_created(const mcp_task *t, mcp_session *s, void *stream, const char *response,
                            size_t len);
/* tasks/get, tasks/update, tasks/cancel of the extension through the store;
 * answered when the store replies. */
void mcp_task_store_request(mcp_session *s, void *stream, const char *key, const char *method,
                            json_t *params);
void mcp_task_store_session_closed(mcp_session *s);

#endif
