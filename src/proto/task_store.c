/* Tasks in the shared store (--store): every change of a local task is
 * written to its record (store.h); the extension's tasks/get, tasks/update
 * and tasks/cancel are answered from the store, so any instance answers for
 * any task of the scope; what the store passes back (a cancel, input
 * responses, a record that is terminal already, a notification) is applied
 * here. The 2025-11-25 wire is a session's, and a session lives on one
 * instance: its tasks are written to the store (visible, failed with a
 * reason when their instance dies) and answered from memory.
 *
 * Ownership: a pending request (a tasks method waiting for the store) is owned
 * here, linked in one list, freed in its callback; its session closing only
 * marks it (s NULL), so the answer is dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "identity.h"
#include "json.h"
#include "log.h"
#include "rev2026.h"
#include "rpc.h"
#include "sched.h"
#include "session.h"
#include "store.h"
#include "task_int.h"
#include "task_store.h"

#define CANCEL_MESSAGE "The task was cancelled by request."

typedef struct pending {
  struct pending *prev, *next;
  mcp_session *s;              /* NULL once it closed: nobody to answer */
  void *stream;
  char *key;
  int kind;                    /* P_GET, P_CANCEL, P_UPDATE, P_DESCRIBE, P_CREATE */
  char *response;              /* P_CREATE: the CreateTaskResult to send */
  size_t len;
  char scope[96];
} pending;

enum { P_GET, P_CANCEL, P_UPDATE, P_DESCRIBE, P_CREATE };

static pending *P;             /* every pending request */

/* Whose tasks: a 2026-07-28 request's are its transport's scope, the same
 * string on every instance over HTTP ("stateless": every stateless client
 * shares it, as on one instance; with OAuth each record also names its
 * subject, and every script compares it, so a subject sees its own only);
 * stdio's is the process's; a 2025-11-25 task is its session's. */
static void scope_of(const mcp_session *s, int ext, char *out, size_t cap) {
  if (ext && s->name[0] == '\0') snprintf(out, cap, "stateless");
  else if (ext) snprintf(out, cap, "stdio:%s", mcp_store_instance());
  else snprintf(out, cap, "session:%s:%lld", mcp_store_instance(), s->id);
}

/* The subject a request acts for (the OAuth token's), "" without one. */
static const char *subject_of(const mcp_session *s) {
  const char *sub = mcp_identity_subject(s->auth);
  return sub ? sub : "";
}

static void write_record(const mcp_task *t, int notify, mcp_store_cb cb, void *ud) {
  char scope[96], created[64], updated[64];
  mcp_buf detail = MCP_BUF_INIT, note = MCP_BUF_INIT;
  mcp_store_task rec;
  mcp__task_view v;
  uint64_t now = mcp_clock_ns();
  mcp__task_view_of(t, &v);
  scope_of(v.session, v.ext, scope, sizeof scope);
  mcp__task_iso(created, sizeof created, v.created_ms);
  mcp__task_iso(updated, sizeof updated, v.updated_ms);
  if (v.ext) mcp__task_detail(&detail, t);
  mcp_buf_addc(&detail, '\0');
  rec = (mcp_store_task){
    .id = v.id, .status = v.status, .message = v.message ? v.message : "",
    .created = created, .updated = updated, .ttl_ms = v.ttl_ms, .ext = v.ext,
    .owner = mcp_store_instance(), .scope = scope, .subject = v.subject ? v.subject : "",
    .detail = detail.data
  };
  if (notify && v.ext) {
    mcp__task_render(&note, t, NULL, 1);
    mcp_buf_addc(&note, '\0');
  }
  mcp_store_task_put(&rec, v.expires_ns > now ? (long long)((v.expires_ns - now) / 1000000) : 1,
                     note.data, cb, ud);
  mcp_buf_free(&detail);
  mcp_buf_free(&note);
}

static void store_write(const mcp_task *t, int notify) { write_record(t, notify, NULL, NULL); }

/* Pending requests. */

static pending *pending_new(mcp_session *s, void *stream, const char *key, int kind) {
  pending *p = calloc(1, sizeof *p);
  if (p == NULL || (key && (p->key = strdup(key)) == NULL)) abort();
  p->s = s;
  p->stream = stream;
  p->kind = kind;
  scope_of(s, 1, p->scope, sizeof p->scope);
  p->next = P;
  if (P) P->prev = p;
  P = p;
  return p;
}

static void pending_free(pending *p) {
  if (p->prev) p->prev->next = p->next; else P = p->next;
  if (p->next) p->next->prev = p->prev;
  free(p->key);
  free(p->response);
  free(p);
}

static void store_session_closed(mcp_session *s) {
  for (pending *p = P; p; p = p->next)
    if (s == NULL || p->s == s) p->s = NULL;
}

static void answer(pending *p, mcp_buf *out) {
  mcp_session_send(p->s, NULL, p->stream, out->data, out->len, 1);
  mcp_buf_free(out);
}

static void answer_error(pending *p, int code, const char *msg) {
  mcp_buf out = MCP_BUF_INIT;
  mcp_info("request %.64s: %s", p->key, msg);
  mcp_rpc_error(&out, p->key, code, "%s", msg);
  answer(p, &out);
}

static void answer_ack(pending *p) {
  mcp_buf out = MCP_BUF_INIT;
  mcp_rpc_result_open(&out, p->key);
  mcp_buf_adds(&out, "{\"resultType\":\"complete\"}");
  mcp_rpc_close(&out);
  answer(p, &out);
}

/* The record as tasks/get (or notifications/tasks) gives it: task.c's
 * add_task, from the stored fields. */
static void render(mcp_buf *b, const mcp_store_task *r, const char *result_type) {
  mcp_buf_addc(b, '{');
  if (result_type) mcp_buf_printf(b, "\"resultType\":\"%s\",", result_type);
  mcp_buf_adds(b, "\"taskId\":");
  mcp_json_add_string(b, r->id, strlen(r->id));
  mcp_buf_adds(b, ",\"status\":");
  mcp_json_add_string(b, r->status, strlen(r->status));
  if (r->message[0]) {
    mcp_buf_adds(b, ",\"statusMessage\":");
    mcp_json_add_string(b, r->message, strlen(r->message));
  }
  mcp_buf_printf(b, ",\"createdAt\":\"%s\",\"lastUpdatedAt\":\"%s\",\"ttlMs\":%lld,"
                 "\"pollIntervalMs\":%d%s}", r->created, r->updated, r->ttl_ms, MCP_TASK_POLL_MS,
                 r->detail);
}

/* Is rec a task of the extension that p's requester may see? */
static int visible(const pending *p, const mcp_store_task *rec) {
  return rec != NULL && rec->ext && strcmp(rec->scope, p->scope) == 0 &&
         strcmp(rec->subject, subject_of(p->s)) == 0;
}

static void store_error(pending *p, const char *err) {
  answer_error(p, MCP_RPC_INTERNAL, err);
}

static void on_get(void *ud, const char *err, const mcp_store_task *rec, const char *what) {
  pending *p = ud;
  mcp_buf out = MCP_BUF_INIT;
  (void)what;
  if (p->s == NULL) goto done;
  if (p->kind == P_DESCRIBE) {       /* for the listeners of its scope */
    if (err == NULL && visible(p, rec)) {
      json_t *params;
      render(&out, rec, NULL);
      if ((params = mcp_json_parse(out.data, out.len, NULL, 0)) != NULL) {
        mcp_rev2026_listen_notify_scope(p->s, "notifications/tasks", params);
        json_decref(params);
      }
      mcp_buf_free(&out);
    }
    goto done;
  }
  if (err != NULL) store_error(p, err);
  else if (!visible(p, rec))
    answer_error(p, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
  else {
    mcp_rpc_result_open(&out, p->key);
    render(&out, rec, "complete");
    mcp_rpc_close(&out);
    answer(p, &out);
  }
done:
  pending_free(p);
}

static void on_changed(void *ud, const char *err, const mcp_store_task *rec, const char *what) {
  pending *p = ud;
  (void)rec;
  if (p->s == NULL) goto done;
  if (err != NULL) store_error(p, err);
  else if (strcmp(what, "notfound") == 0)
    answer_error(p, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
  else if (strcmp(what, "unreachable") == 0)
    answer_error(p, MCP_RPC_INTERNAL,
                 "Task store: the instance running the task is not reachable now; retry tasks/update");
  else {
    if (strcmp(what, "terminal") == 0)
      mcp_info("request %.64s: %s ignored: the task is terminal", p->key,
               p->kind == P_CANCEL ? "tasks/cancel" : "tasks/update");
    answer_ack(p);
  }
done:
  pending_free(p);
}

static void store_request(mcp_session *s, void *stream, const char *key, const char *method,
                          json_t *params) {
  const char *id = json_string_value(json_object_get(params, "taskId"));
  int kind = strcmp(method, "tasks/get") == 0      ? P_GET
             : strcmp(method, "tasks/cancel") == 0 ? P_CANCEL
                                                   : P_UPDATE;
  pending *p;
  if (id == NULL || strlen(id) > 64) {
    mcp_buf out = MCP_BUF_INIT;
    mcp_rpc_error(&out, key, MCP_RPC_INVALID_PARAMS, "Invalid params: taskId must be a string");
    mcp_session_send(s, NULL, stream, out.data, out.len, 1);
    mcp_buf_free(&out);
    return;
  }
  mcp_debug("request %.64s: %s %s, through the store", key, method, id);
  p = pending_new(s, stream, key, kind);
  if (kind == P_GET) {
    mcp_store_task_get(id, on_get, p);
  } else if (kind == P_CANCEL) {
    mcp_store_task_cancel(id, p->scope, subject_of(s), CANCEL_MESSAGE, on_changed, p);
  } else {
    char *text = json_dumps(json_object_get(params, "inputResponses"), JSON_COMPACT);
    if (text == NULL) abort();
    mcp_store_task_update(id, p->scope, subject_of(s), text, on_changed, p);
    free(text);
  }
}

/* The record is written (or the store is down: then resync writes it):
 * the client may ask any instance now. */
static void on_created(void *ud, const char *err, const mcp_store_task *rec, const char *what) {
  pending *p = ud;
  (void)rec; (void)what;
  if (err != NULL) mcp_debug("task store: a task answered before it is stored: %s", err);
  if (p->s != NULL) mcp_session_send(p->s, NULL, p->stream, p->response, p->len, 1);
  pending_free(p);
}

static void store_created(const mcp_task *t, mcp_session *s, void *stream, const char *response,
                          size_t len) {
  pending *p = pending_new(s, stream, NULL, P_CREATE);
  if ((p->response = malloc(len)) == NULL) abort();
  memcpy(p->response, response, len);
  p->len = len;
  write_record(t, 0, on_created, p);
}

static void store_describe(mcp_session *s, const char *id) {
  if (strlen(id) <= 64) mcp_store_task_get(id, on_get, pending_new(s, NULL, NULL, P_DESCRIBE));
}

/* What the store passes back. */

static void on_cancel(const char *id) {
  mcp_task *t = mcp__task_by_id(id);
  if (t == NULL) return;
  mcp_info("task %s: cancelled through the store", id);
  mcp__task_cancel(t);
}

static void on_update(const char *id, const char *responses) {
  mcp_task *t = mcp__task_by_id(id);
  json_t *v = mcp_json_parse(responses, strlen(responses), NULL, 0);
  if (t != NULL && json_is_object(v)) mcp__task_answer(t, v);
  json_decref(v);
}

static void on_adopt(const char *id, const char *status, const char *message) {
  mcp_task *t = mcp__task_by_id(id);
  if (t != NULL) mcp__task_adopt(t, status, message);
}

static void on_reaped_get(void *ud, const char *err, const mcp_store_task *rec, const char *what) {
  mcp_task *t = rec ? mcp__task_by_id(rec->id) : NULL;
  (void)ud; (void)what;
  if (err == NULL && t != NULL) mcp__task_adopt(t, rec->status, rec->message);
}

static void on_reaped(const char *id) {
  if (mcp__task_by_id(id) != NULL) mcp_store_task_get(id, on_reaped_get, NULL);
}

static void on_notify(const char *scope, const char *params) {
  json_t *v = mcp_json_parse(params, strlen(params), NULL, 0);
  char mine[96];
  if (v == NULL) return;
  /* Only the listeners of the task's scope hear of it. */
  for (mcp_session *s = mcp_sessions; s; s = s->next) {
    if (s->rev2026 || (s->name[0] != '\0' && strcmp(s->name, "stdio") != 0)) continue;
    scope_of(s, 1, mine, sizeof mine);
    if (strcmp(mine, scope) == 0) mcp_rev2026_listen_notify_scope(s, "notifications/tasks", v);
  }
  json_decref(v);
}

/* Connected (again): every local task is written anew (Redis may have
 * restarted empty; the records of a cut-off instance may be failed:
 * then adopt follows), and its state published: listeners heard nothing
 * while the store was away. Then the tasks our listeners follow are read
 * back for them. */
static void on_resync(void) {
  int n = 0;
  for (mcp_task *t = mcp__task_head(); t; t = mcp__task_next(t), n++) {
    mcp__task_view v;
    mcp__task_view_of(t, &v);
    store_write(t, v.ext);
  }
  /* Our listeners may have missed what others published meanwhile (they
   * resync on their own time, before or after us): read it back. */
  mcp_rev2026_listen_each_task(store_describe);
  if (n) mcp_info("task store: %d local task(s) written again", n);
}

int mcp_task_store_open(const char *url, char *err, size_t cap) {
  static const mcp_task_store_type row = { store_write, store_created, store_request,
                                           store_session_closed, store_describe };
  mcp__task_set_store(&row);
  static const mcp_store_hooks hooks = { on_cancel, on_update, on_adopt, on_reaped, on_notify,
                                          on_resync };
  return mcp_store_open(mcp_sched_loop(), url, &hooks, err, cap);
}
