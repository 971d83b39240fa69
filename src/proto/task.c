/* Tasks: the 2025-11-25 wire (task-augmented tools/call, tasks/get,
 * tasks/list, tasks/result, tasks/cancel, notifications/tasks/status) and the
 * tasks extension of 2026-07-28 requests (CreateTaskResult, tasks/get with
 * the outcome or the inputRequests inline, tasks/update, tasks/cancel as an
 * ack, notifications/tasks to subscriptions/listen); ttl expiry. See task.h. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <uv.h>

#include "config.h"
#include "crypto.h"
#include "deadline.h"
#include "fail.h"
#include "identity.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "op.h"
#include "rev2026.h"
#include "rpc.h"
#include "sched.h"
#include "session.h"
#include "store.h"
#include "task.h"
#include "task_int.h"

#define RPC_REQUEST_CANCELLED -32800   /* tasks/result of a cancelled task (as LSP) */

static const mcp_task_store_type *store_row;   /* task_store.c's, once --store opened */

/* The store's row while the store is on, else NULL. */
static const mcp_task_store_type *stored(void) { return mcp_store_on() ? store_row : NULL; }

void mcp__task_set_store(const mcp_task_store_type *t) { store_row = t; }

enum { ST_WORKING, ST_INPUT_REQUIRED, ST_COMPLETED, ST_FAILED, ST_CANCELLED };
static const char *const status_names[] = {
  "working", "input_required", "completed", "failed", "cancelled"
};
#define terminal(st) ((st) >= ST_COMPLETED)

/* A request of an extension task's handler to the client, surfaced in
 * tasks/get's inputRequests and answered by tasks/update. */
typedef struct {
  char key[24];                /* "input-N": unique over the task's life */
  char *request;               /* {"method":...,"params":...} as JSON text */
  json_t *response;            /* the client's answer; NULL until tasks/update gives it */
} task_input;

/* Owned by this file: see task.h. */
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
  task_input *inputs;          /* the extension: what the handler waits for */
  int ninputs;
  unsigned input_seq;
  struct input_op *input_op;   /* the handler's wait for them, or NULL */
};

static struct {
  mcp_task *head, *tail;
  unsigned long long seq;
  uv_timer_t timer;            /* the earliest expiry; unref'd */
  int timer_on;
} T;

static const mcp_call_owner task_owner;     /* a tasked call's (below) */

/* Wall-clock milliseconds, moved with the test clock. */
static double wall_ms(void) {
  uv_timeval64_t tv;
  int64_t skew = (int64_t)(mcp_clock_ns() - uv_hrtime());
  uv_gettimeofday(&tv);
  return (double)tv.tv_sec * 1000.0 + (double)(tv.tv_usec / 1000) + (double)(skew / 1000000);
}

void mcp__task_iso(char *out, size_t cap, double ms) {
  long long v = (long long)ms;
  time_t sec = (time_t)(v / 1000);
  struct tm tm;
  char s[40];
  gmtime_r(&sec, &tm);
  strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, cap, "%s.%03dZ", s, (int)(v % 1000));
}

static void add_time(mcp_buf *b, double ms) {
  char s[48];
  mcp__task_iso(s, sizeof s, ms);
  mcp_buf_printf(b, "\"%s\"", s);
}

/* The extension's DetailedTask fields: the outcome, or what the handler
 * waits for. */
static void add_detail(mcp_buf *b, const mcp_task *t) {
  json_t *v;
  if (t->status == ST_INPUT_REQUIRED) {
    int n = 0;
    mcp_buf_adds(b, ",\"inputRequests\":{");
    for (int i = 0; i < t->ninputs; i++) {
      if (t->inputs[i].response != NULL) continue;
      if (n++) mcp_buf_addc(b, ',');
      mcp_buf_printf(b, "\"%s\":%s", t->inputs[i].key, t->inputs[i].request);
    }
    mcp_buf_addc(b, '}');
  } else if (t->status == ST_COMPLETED && (v = json_object_get(t->response, "result")) != NULL) {
    mcp_buf_adds(b, ",\"result\":");
    mcp_json_dump(v, b);
  } else if (t->status == ST_FAILED && (v = json_object_get(t->response, "error")) != NULL) {
    mcp_buf_adds(b, ",\"error\":");
    mcp_json_dump(v, b);
  }
}

/* The Task object, in its wire's names: ttl and pollInterval (2025-11-25),
 * or ttlMs and pollIntervalMs (the extension), then with detailed the
 * extension's DetailedTask fields. result_type: the extension's resultType
 * ("task" for CreateTaskResult, "complete" for tasks/get), or NULL. */
static void add_task(mcp_buf *b, const mcp_task *t, const char *result_type, int detailed) {
  mcp_buf_addc(b, '{');
  if (result_type != NULL) mcp_buf_printf(b, "\"resultType\":\"%s\",", result_type);
  mcp_buf_printf(b, "\"taskId\":\"%s\",\"status\":\"%s\",", t->id, status_names[t->status]);
  if (t->message) {
    mcp_buf_adds(b, "\"statusMessage\":");
    mcp_json_add_string(b, t->message, strlen(t->message));
    mcp_buf_addc(b, ',');
  }
  mcp_buf_adds(b, "\"createdAt\":");
  add_time(b, t->created_ms);
  mcp_buf_adds(b, ",\"lastUpdatedAt\":");
  add_time(b, t->updated_ms);
  mcp_buf_printf(b, t->ext ? ",\"ttlMs\":%lld,\"pollIntervalMs\":%d" : ",\"ttl\":%lld,\"pollInterval\":%d",
                 t->ttl_ms, MCP_TASK_POLL_MS);
  if (detailed) add_detail(b, t);
  mcp_buf_addc(b, '}');
}

/* Does the subject of s's latest request own t? Both NULL without auth. */
static int subject_owns(const mcp_task *t, const mcp_session *s) {
  const char *sub = mcp_identity_subject(s->auth);
  if (t->subject == NULL || sub == NULL) return t->subject == sub;
  return strcmp(t->subject, sub) == 0;
}

/* The task with this id in session (or scope) s, of the extension or not,
 * created by the subject of s's request. */
static mcp_task *task_find(mcp_session *s, const char *id, int ext) {
  for (mcp_task *t = T.head; t; t = t->next)
    if (t->session == s && t->ext == (unsigned)ext && strcmp(t->id, id) == 0) {
      if (subject_owns(t, s)) return t;
      mcp_info("task %s: asked for by another subject: not found", t->id);
      return NULL;
    }
  return NULL;
}

int mcp_task_describe(mcp_session *s, const char *id, mcp_buf *b) {
  mcp_task *t = task_find(s, id, 1);
  if (t != NULL && b != NULL) add_task(b, t, NULL, 1);
  return t != NULL;
}

static void on_expiry(uv_timer_t *h);

static void timer_arm(void) {
  uint64_t due = 0, now = mcp_clock_ns();
  for (mcp_task *t = T.head; t; t = t->next)
    if (due == 0 || t->expires_ns < due) due = t->expires_ns;
  if (due == 0) {
    if (T.timer_on) uv_timer_stop(&T.timer);
    return;
  }
  if (!T.timer_on) {
    uv_timer_init(mcp_sched_loop(), &T.timer);
    uv_unref((uv_handle_t *)&T.timer);
    T.timer_on = 1;
  }
  uv_timer_start(&T.timer, on_expiry, due > now ? (due - now + 999999) / 1000000 : 0, 0);
}

/* tasks/result callers: the task is terminal or gone; resume them. */
static void wake_waiters(mcp_task *t) {
  for (int i = 0; i < t->nwaiters; i++) {
    mcp_call_wait_end(t->waiters[i]);
  }
  t->nwaiters = 0;
}

/* 2025-11-25: notifications/tasks/status to the task's session. The
 * extension: notifications/tasks, the DetailedTask as tasks/get would give
 * it, to the subscriptions/listen streams that asked for this task. */
static void notify_status(mcp_task *t) {
  mcp_buf b = MCP_BUF_INIT;
  if (t->ext && mcp_store_on()) return;     /* the store's write carries it to every instance */
  if (t->ext) {
    json_t *params;
    add_task(&b, t, NULL, 1);
    params = mcp_json_parse(b.data, b.len, NULL, 0);
    if (params == NULL) abort();
    mcp_rev2026_listen_notify("notifications/tasks", params);
    json_decref(params);
  } else {
    mcp_rpc_notification_open(&b, "notifications/tasks/status");
    add_task(&b, t, NULL, 0);
    mcp_rpc_close(&b);
    mcp_session_send(t->session, NULL, NULL, b.data, b.len, 0);
  }
  mcp_buf_free(&b);
}

static void set_status(mcp_task *t, int status, const char *msg, int notify) {
  t->status = status;
  free(t->message);
  t->message = msg ? strdup(msg) : NULL;
  t->updated_ms = wall_ms();
  mcp_info("task %s: %s%s%s", t->id, status_names[status], msg ? ": " : "", msg ? msg : "");
  if (stored()) stored()->write(t, notify);
  if (notify) notify_status(t);
  if (terminal(status)) wake_waiters(t);
}

/* The extension's input requests. */

static void inputs_clear(mcp_task *t) {
  for (int i = 0; i < t->ninputs; i++) {
    free(t->inputs[i].request);
    if (t->inputs[i].response) json_decref(t->inputs[i].response);
  }
  free(t->inputs);
  t->inputs = NULL;
  t->ninputs = 0;
}

static int inputs_answered(const mcp_task *t) {
  for (int i = 0; i < t->ninputs; i++)
    if (t->inputs[i].response == NULL) return 0;
  return t->ninputs > 0;
}

/* The handler's wait for its inputs: an op of its call. The engine holds it
 * while it waits (until the answers, its timeout, the end of the task, or a
 * cancel), the Lua handle while Lua can reach it. */
typedef struct input_op {
  mcp_op op;                   /* first member */
  mcp_task *task;              /* NULL once it stopped waiting */
  mcp_deadline dl;             /* its timeout */
  json_t *answers;             /* an array, once all are answered */
  const char *why, *code;      /* why there are none */
  int single;                  /* one request: its answer, not a list */
} input_op;

/* Stop waiting (the inputs go), the outcome in; the engine lets go. */
static void input_end(input_op *in, const char *why, const char *code) {
  mcp_task *t = in->task;
  in->task = NULL;
  mcp_deadline_set(&in->dl, 0);
  if (t != NULL) {
    t->input_op = NULL;
    inputs_clear(t);
    if (t->status == ST_INPUT_REQUIRED) set_status(t, ST_WORKING, NULL, 1);
  }
  in->why = why;
  in->code = code;
  mcp_op_done(&in->op);
  mcp_op_release(&in->op);
}

static void input_cancel(mcp_op *op) { input_end((input_op *)op, NULL, NULL); }

static void input_timeout(mcp_deadline *d) {
  input_op *in = (input_op *)((char *)d - offsetof(input_op, dl));
  input_end(in, "the client gave no input in time (timeout)", "timeout");
}

static int input_push(lua_State *L, mcp_op *op) {
  input_op *in = (input_op *)op;
  size_t n;
  if (in->answers == NULL) return mcp_push_fail(L, in->code, "%s", in->why);
  n = json_array_size(in->answers);
  if (in->single) {
    mcp_json_push(L, json_array_get(in->answers, 0));
    return 1;
  }
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    mcp_json_push(L, json_array_get(in->answers, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static void input_free(mcp_op *op) {
  input_op *in = (input_op *)op;
  if (in->answers) json_decref(in->answers);
  free(in);
}

static const mcp_op_type input_type = { "input", input_cancel, input_push, input_free };

/* Nobody can answer any more (the task is cancelled or freed): end the
 * handler's wait for input, if it waits. */
static void input_abandon(mcp_task *t) {
  if (t->input_op == NULL) return;
  input_end(t->input_op, terminal(t->status) ? "the task was cancelled" : "the task expired", "closed");
}

/* Free a task. A handler still running is cancelled: call it only where the
 * state machine may act (from the loop, never inside a handler). */
static void task_free(mcp_task *t, const char *why) {
  mcp_call *c = t->call;
  mcp_debug("task %s freed: %s", t->id, why);
  if (mcp_store_on() && !terminal(t->status)) set_status(t, ST_CANCELLED, why, 0);   /* for the others */
  if (t->prev) t->prev->next = t->next; else T.head = t->next;
  if (t->next) t->next->prev = t->prev; else T.tail = t->prev;
  wake_waiters(t);
  input_abandon(t);
  if (c != NULL) {
    c->task = NULL;
    t->call = NULL;
    mcp_call_fire(c, MCP_EV_CANCEL, why);   /* a no-op once terminal */
  }
  inputs_clear(t);
  free(t->message);
  free(t->subject);
  if (t->response) json_decref(t->response);
  free(t->waiters);
  free(t);
}

/* may_fire: also free expired tasks whose handler still runs. */
static void sweep(int may_fire) {
  uint64_t now = mcp_clock_ns();
again:
  for (mcp_task *t = T.head; t; t = t->next)
    if (t->expires_ns <= now && (may_fire || t->call == NULL)) {
      task_free(t, "task expired");
      goto again;                    /* freeing may end calls, and with them more */
    }
  timer_arm();
}

static void on_expiry(uv_timer_t *h) {
  (void)h;
  sweep(1);
}

void mcp_task_sweep(void) { sweep(1); }


/* Tasks of s (of the extension or not), and the oldest finished one. */
static int session_count(mcp_session *s, int ext, mcp_task **oldest_terminal) {
  int n = 0;
  *oldest_terminal = NULL;
  for (mcp_task *t = T.head; t; t = t->next)
    if (t->session == s && t->ext == (unsigned)ext) {
      n++;
      if (*oldest_terminal == NULL && terminal(t->status) && t->call == NULL) *oldest_terminal = t;
    }
  return n;
}

int mcp_task_l_create(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  mcp_task *t, *old;
  unsigned char rnd[16];
  long long ttl = MCP_TASK_DEFAULT_TTL_MS;
  mcp_buf b = MCP_BUF_INIT;
  int ext;
  mcp_session *scope;
  if (c == NULL || c->tool == NULL) return luaL_error(L, "task_create: not in a tools/call");
  if (c->tasked) {                   /* a task already: its id (false once it expired) */
    if (c->task != NULL) lua_pushstring(L, c->task->id);
    else lua_pushboolean(L, 0);
    return 1;
  }
  /* A batch is answered as one: it runs as a normal call. A stateless
   * 2026-07-28 request gets a task only for a tool with task support and when
   * it declares the extension; the task belongs to the transport session that
   * read it (its scope). */
  ext = c->session->modern;
  scope = ext ? c->session->parent : c->session;
  if (c->batch != NULL || c->req.state != MCP_REQ_RUNNING ||   /* cancelled, timing out: no answer */
      (ext && (mcp_policy_task(c->tool) == MCP_TASK_FORBIDDEN ||
               !mcp_rev2026_declares(c->session->client_capabilities, MCP_EXT_TASKS)))) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (!ext && lua_type(L, 1) == LUA_TNUMBER && lua_tonumber(L, 1) >= 1) {
    double v = lua_tonumber(L, 1);
    ttl = v > (double)MCP_TASK_MAX_TTL_MS ? MCP_TASK_MAX_TTL_MS : (long long)v;
  }
  sweep(0);
  if (session_count(scope, ext, &old) >= MCP_TASK_MAX_PER_SESSION) {
    if (old == NULL) {
      lua_pushnil(L);
      lua_pushfstring(L, "too many tasks (at most %d per %s)", MCP_TASK_MAX_PER_SESSION,
                      ext ? "transport for 2026-07-28 requests" : "session");
      return 2;
    }
    task_free(old, "evicted: too many tasks");
  }
  t = calloc(1, sizeof *t);
  if (t == NULL) abort();
  if (mcp_random(rnd, sizeof rnd) != 0) abort();
  for (int i = 0; i < 16; i++) snprintf(t->id + 2 * i, 3, "%02x", rnd[i]);
  t->session = scope;
  if (mcp_identity_subject(c->session->auth) != NULL && (t->subject = strdup(c->session->auth->subject)) == NULL)
    abort();
  t->ext = ext != 0;
  t->seq = ++T.seq;
  t->status = ST_WORKING;
  t->created_ms = t->updated_ms = wall_ms();
  t->ttl_ms = ttl;
  t->expires_ns = mcp_clock_ns() + (uint64_t)ttl * 1000000ull;
  t->prev = T.tail;
  if (T.tail) T.tail->next = t; else T.head = t;
  T.tail = t;
  /* Answer the request now; from here on the call belongs to the task: it
   * leaves the request table (the id may be reused, notifications/cancelled
   * no longer reaches it) and its response goes to the task (task_owner). */
  mcp_rpc_result_open(&b, c->req.key);
  if (ext) {
    add_task(&b, t, "task", 0);                 /* CreateTaskResult: Result & Task, flat */
  } else {
    mcp_buf_adds(&b, "{\"task\":");
    add_task(&b, t, NULL, 0);
    mcp_buf_addc(&b, '}');
  }
  mcp_rpc_close(&b);
  c->typed = ext;                               /* CreateTaskResult: resultType "task" */
  if (ext && stored()) stored()->created(t, c->session->parent, c->stream, b.data, b.len);
  else mcp_session_send(c->session, NULL, c->stream, b.data, b.len, 1);
  mcp_buf_free(&b);
  c->stream = NULL;
  c->responded = 1;
  c->tasked = 1;
  c->owner = &task_owner;
  c->task = t;
  t->call = c;
  mcp_reqtab_remove(&c->session->reqs, &c->req);
  mcp_info("task %s created for request %.64s (tool %s, ttl %lld ms%s)", t->id, c->req.key, c->tool,
           ttl, ext ? ", tasks extension" : "");
  if (stored() && !ext) stored()->write(t, 0);
  timer_arm();
  lua_pushstring(L, t->id);
  return 1;
}

void mcp_task_add_meta(mcp_buf *b, const mcp_call *c) {
  if (c == NULL || c->task == NULL || c->task->ext) return;
  mcp_buf_printf(b, ",\"_meta\":{\"io.modelcontextprotocol/related-task\":{\"taskId\":\"%s\"}}",
                 c->task->id);
}

void mcp_task_push_meta(lua_State *L, const mcp_call *c) {
  if (c == NULL || c->task == NULL || c->task->ext) return;
  /* stack: _meta -> _meta */
  lua_createtable(L, 0, 1);
  lua_pushstring(L, c->task->id);
  lua_setfield(L, -2, "taskId");
  lua_setfield(L, -2, "io.modelcontextprotocol/related-task");
}

void mcp_task_input(const mcp_call *c, const char *method) {
  mcp_task *t = c->task;
  char msg[160];
  if (t == NULL || t->ext || terminal(t->status)) return;
  if (method != NULL) {
    snprintf(msg, sizeof msg, "Waiting for the client to answer %.100s", method);
    set_status(t, ST_INPUT_REQUIRED, msg, 1);
  } else if (t->status == ST_INPUT_REQUIRED) {
    set_status(t, ST_WORKING, NULL, 1);
  }
}

/* The outcome of a response: failed or not, and a short statusMessage.
 * 2025-11-25: an error or an isError result fail the task (the error's
 * message, or the first text of the result). The extension: only a JSON-RPC
 * error does; a tool's isError result is the completed task's result. */
static const char *outcome(const mcp_task *t, json_t *msg, int *failed) {
  json_t *err = json_object_get(msg, "error"), *res = json_object_get(msg, "result");
  *failed = 0;
  if (err != NULL) {
    *failed = 1;
    return json_string_value(json_object_get(err, "message"));
  }
  if (!t->ext && json_is_true(json_object_get(res, "isError"))) {
    *failed = 1;
    return json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0),
                                              "text"));
  }
  return NULL;
}

/* A tasked call belongs to its task: its response is kept for tasks/result,
 * its end may cancel the task; the rest is as its session does it. */

static void task_respond(mcp_call *c, const char *data, size_t len) {
  mcp_task *t = c->task;
  json_t *res;
  const char *why;
  char err[128], short_msg[256];
  int failed;
  if (t == NULL) return;             /* expired: nobody can ask for it */
  if (terminal(t->status)) {
    mcp_debug("task %s: result dropped, already %s", t->id, status_names[t->status]);
    return;
  }
  t->response = mcp_json_parse(data, len, err, sizeof err);
  if (t->response == NULL) {         /* the core wrote it: cannot happen */
    mcp_error("task %s: the response does not parse: %s", t->id, err);
    set_status(t, ST_CANCELLED, "internal error: unreadable result", 1);
    return;
  }
  /* The extension inlines the result as the request would have returned it. */
  res = json_object_get(t->response, "result");
  if (t->ext && json_is_object(res) && json_object_get(res, "resultType") == NULL)
    json_object_set_new(res, "resultType", json_string("complete"));
  why = outcome(t, t->response, &failed);
  if (why) snprintf(short_msg, sizeof short_msg, "%s", why);
  set_status(t, failed ? ST_FAILED : ST_COMPLETED, why ? short_msg : NULL, 1);
}

static void task_stopping(mcp_call *c, const char *reason) { mcp_session_owner.stopping(c, reason); }

static void task_gone(mcp_call *c) {
  mcp_task *t = c->task;
  if (t != NULL) {
    c->task = NULL;
    t->call = NULL;
    /* Ended with no response: shutdown or the session's end (the client is
     * going away: no notification). */
    if (!terminal(t->status)) set_status(t, ST_CANCELLED, c->req.reason, 0);
  }
  mcp_session_owner.gone(c);
}

static const char *task_session_name(const mcp_call *c) {
  return mcp_session_owner.session_name(c);
}

static const mcp_call_owner task_owner = { task_respond, task_stopping, task_gone,
                                           task_session_name };

/* tasks/result. */

static void waiter_cleanup(mcp_call *c, void *data) {
  mcp_task *t = data;
  for (int i = 0; t && i < t->nwaiters; i++)
    if (t->waiters[i] == c) {
      t->waiters[i] = t->waiters[--t->nwaiters];
      break;
    }
}

static int push_error(lua_State *L, int code, const char *msg) {
  lua_pushnil(L);
  lua_pushinteger(L, code);
  lua_pushstring(L, msg);
  return 3;
}

/* stack: taskId -> result | nil code message data */
static int push_outcome(lua_State *L, mcp_task *t) {
  json_t *e;
  if (t->status == ST_CANCELLED || t->response == NULL) {
    lua_pushnil(L);
    lua_pushinteger(L, RPC_REQUEST_CANCELLED);
    lua_pushfstring(L, "Task cancelled%s%s", t->message ? ": " : "", t->message ? t->message : "");
    return 3;
  }
  if ((e = json_object_get(t->response, "error")) != NULL) {
    lua_pushnil(L);
    lua_pushinteger(L, json_integer_value(json_object_get(e, "code")));
    lua_pushstring(L, json_string_value(json_object_get(e, "message")));
    if (json_object_get(e, "data")) mcp_json_push(L, json_object_get(e, "data"));
    else lua_pushnil(L);
    return 4;
  }
  mcp_json_push(L, json_object_get(t->response, "result"));
  /* stack: result */
  if (lua_getfield(L, -1, "_meta") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "_meta");
  }
  /* stack: result _meta */
  lua_createtable(L, 0, 1);
  lua_pushstring(L, t->id);
  lua_setfield(L, -2, "taskId");
  lua_setfield(L, -2, "io.modelcontextprotocol/related-task");
  lua_pop(L, 1);
  return 1;
}

static int result_wait(lua_State *L, mcp_call *c, mcp_task *t);

static int result_k(lua_State *L, int status, lua_KContext ctx) {
  mcp_call *c = mcp_call_current(L);
  mcp_task *t = task_find(c->session, lua_tostring(L, 1), 0);
  (void)status; (void)ctx;
  if (c->signalled) return push_error(L, RPC_REQUEST_CANCELLED, "Request cancelled");
  if (t == NULL) return push_error(L, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task has expired");
  if (!terminal(t->status)) return result_wait(L, c, t);
  return push_outcome(L, t);
}

static int result_wait(lua_State *L, mcp_call *c, mcp_task *t) {
  if (t->nwaiters == t->capwaiters) {
    int cap = t->capwaiters ? 2 * t->capwaiters : 4;
    mcp_call **w = realloc(t->waiters, (size_t)cap * sizeof *w);
    if (w == NULL) abort();
    t->waiters = w;
    t->capwaiters = cap;
  }
  t->waiters[t->nwaiters++] = c;
  mcp_call_wait(c, waiter_cleanup, t);
  /* It waits for the task, which has its own timeout and ttl. */
  c->timeout = 0;
  c->deadline_ns = c->due_ns = c->hard_ns = 0;
  mcp_call_rearm(c);
  return lua_yieldk(L, 0, 0, result_k);
}

int mcp_task_l_result(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  mcp_task *t;
  luaL_checkstring(L, 1);
  lua_settop(L, 1);
  if (c == NULL) return luaL_error(L, "task_result: not inside a request");
  sweep(0);
  t = task_find(c->session, lua_tostring(L, 1), 0);
  if (t == NULL) return push_error(L, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
  if (!terminal(t->status)) {
    if (L != c->co) return luaL_error(L, "task_result: cannot wait here");
    return result_wait(L, c, t);
  }
  return push_outcome(L, t);
}

/* The extension's input requests: the handler waits for tasks/update. */

/* Its task may be gone (expired, evicted) while the handler runs on: the
 * call still takes input as a task, and mcp_task_input_wait answers nil. */
int mcp_task_takes_input(const mcp_call *c) { return c->tasked && c->session->modern; }

int mcp_task_input_wait(lua_State *L, mcp_call *c, int idx, double timeout, int single) {
  mcp_task *t = c->task;
  task_input *in;
  mcp_buf b = MCP_BUF_INIT;
  char err[128], msg[200];
  int n;
  input_op *op;
  mcp_op **h;
  idx = lua_absindex(L, idx);
  n = (int)lua_rawlen(L, idx);
  if (n == 0) return luaL_argerror(L, 1, "no requests");
  if (c->signalled) return mcp_push_cancelled(L, c);
  if (t == NULL || terminal(t->status)) return mcp_push_fail(L, "closed", "the task has ended");
  if (t->input_op != NULL)
    return mcp_push_fail(L, "busy", "the task waits for other input already (ask for all at once: ctx:input)");
  in = calloc((size_t)n, sizeof *in);
  if (in == NULL) abort();
  for (int i = 0; i < n; i++) {
    /* stack: ... request */
    lua_rawgeti(L, idx, i + 1);
    lua_getfield(L, -1, "method");
    b.len = 0;
    mcp_buf_adds(&b, "{\"method\":");
    mcp_json_encode(L, -1, &b, err, sizeof err);   /* a string (lmcp.c checked) */
    mcp_buf_adds(&b, ",\"params\":");
    lua_getfield(L, -2, "params");
    if (lua_isnil(L, -1)) mcp_buf_adds(&b, "{}");
    else if (mcp_json_encode(L, -1, &b, err, sizeof err) != 0) {
      for (int j = 0; j < i; j++) free(in[j].request);
      free(in);
      mcp_buf_free(&b);
      return luaL_error(L, "request %d: params: %s", i + 1, err);
    }
    mcp_buf_addc(&b, '}');
    lua_pop(L, 3);
    in[i].request = malloc(b.len + 1);
    if (in[i].request == NULL) abort();
    memcpy(in[i].request, b.data, b.len);
    in[i].request[b.len] = '\0';
    snprintf(in[i].key, sizeof in[i].key, "input-%u", ++t->input_seq);
  }
  mcp_buf_free(&b);
  h = mcp_op_reserve(L);                 /* may raise: before the task changes */
  op = calloc(1, sizeof *op);
  if (op == NULL) abort();
  op->task = t;
  op->single = single;
  op->dl.index = -1;
  op->dl.fire = input_timeout;
  mcp_op_init(&op->op, &input_type, c);
  mcp_op_attach(h, &op->op);
  inputs_clear(t);
  t->inputs = in;
  t->ninputs = n;
  t->input_op = op;
  lua_rawgeti(L, idx, 1);
  lua_getfield(L, -1, "method");
  snprintf(msg, sizeof msg, "Waiting for input: %.100s%s", lua_tostring(L, -1),
           n > 1 ? " and more" : "");
  lua_pop(L, 2);
  mcp_debug("request %.64s: task %s waits for %d input request(s)", c->req.key, t->id, n);
  set_status(t, ST_INPUT_REQUIRED, msg, 1);
  mcp_deadline_set(&op->dl, mcp_clock_ns() + (uint64_t)(timeout * 1e9));
  return mcp_op_wait(L);
}

/* Requests about tasks, answered at once. */

static void reply(mcp_session *s, mcp_batch *b, void *stream, mcp_buf *out) {
  mcp_session_send(s, b, stream, out->data, out->len, 1);
  mcp_buf_free(out);
}

static void reply_error(mcp_session *s, mcp_batch *b, void *stream, const char *key, int code,
                        const char *msg) {
  mcp_buf out = MCP_BUF_INIT;
  mcp_info("request %.64s: %s", key, msg);
  mcp_rpc_error(&out, key, code, "%s", msg);
  reply(s, b, stream, &out);
}

/* The extension's acknowledgement: an empty result. */
static void reply_ack(mcp_session *s, void *stream, const char *key) {
  mcp_buf out = MCP_BUF_INIT;
  mcp_rpc_result_open(&out, key);
  mcp_buf_adds(&out, "{\"resultType\":\"complete\"}");
  mcp_rpc_close(&out);
  reply(s, NULL, stream, &out);
}

/* The task params.taskId names in s, or NULL once the error is answered. */
static mcp_task *lookup(mcp_session *s, mcp_batch *b, void *stream, const char *key, json_t *params,
                        int ext) {
  const char *id = json_string_value(json_object_get(params, "taskId"));
  mcp_task *t;
  if (id == NULL) {
    reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, "Invalid params: taskId must be a string");
    return NULL;
  }
  if ((t = task_find(s, id, ext)) == NULL)
    reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
  return t;
}

/* Cancel a task that is not terminal: cancelled at once and for good (a
 * late result is dropped); its call gets the cancel through the state
 * machine (its tool's cancel policy applies). */
static void cancel(mcp_task *t) {
  mcp_call *c = t->call;
  set_status(t, ST_CANCELLED, "The task was cancelled by request.", 1);
  if (c != NULL) mcp_call_fire(c, MCP_EV_CANCEL, "task cancelled");
  input_abandon(t);                  /* a handler that ignores cancels waits no more */
}

static void on_list(mcp_session *s, mcp_batch *b, void *stream, const char *key, json_t *params) {
  json_t *cursor = json_object_get(params, "cursor");
  unsigned long long after = 0;
  int n = 0;
  mcp_task *t, *last = NULL;
  mcp_buf out = MCP_BUF_INIT;
  if (cursor != NULL && !json_is_null(cursor)) {
    const char *cs = json_string_value(cursor);
    char *end;
    if (cs == NULL || *cs < '0' || *cs > '9' ||
        (after = strtoull(cs, &end, 10), *end != '\0') || after > T.seq) {
      reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, "Invalid params: invalid cursor");
      return;
    }
  }
  mcp_rpc_result_open(&out, key);
  mcp_buf_adds(&out, "{\"tasks\":[");
  for (t = T.head; t; t = t->next) {
    if (t->session != s || t->ext || t->seq <= after || !subject_owns(t, s)) continue;
    if (n == mcp_cfg.page_size) break;
    if (n++) mcp_buf_addc(&out, ',');
    add_task(&out, t, NULL, 0);
    last = t;
  }
  mcp_buf_addc(&out, ']');
  for (; t; t = t->next)
    if (t->session == s && !t->ext && last && subject_owns(t, s)) {
      mcp_buf_printf(&out, ",\"nextCursor\":\"%llu\"", last->seq);
      break;
    }
  mcp_buf_addc(&out, '}');
  mcp_rpc_close(&out);
  reply(s, b, stream, &out);
}

int mcp_task_request(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                     const char *method, json_t *params) {
  mcp_task *t;
  mcp_buf out = MCP_BUF_INIT;
  char msg[128];
  int get = strcmp(method, "tasks/get") == 0, cancelling = strcmp(method, "tasks/cancel") == 0;
  if (!get && !cancelling && strcmp(method, "tasks/list") != 0) return 0;
  if (!mcp_sched_has_method("tasks/result")) return 0;    /* no tool offers tasks */
  sweep(1);
  if (!get && !cancelling) {
    on_list(s, b, stream, key, params);
    return 1;
  }
  if ((t = lookup(s, b, stream, key, params, 0)) == NULL) return 1;
  if (cancelling) {
    if (terminal(t->status)) {
      snprintf(msg, sizeof msg, "Cannot cancel task: already in terminal status '%s'",
               status_names[t->status]);
      reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, msg);
      return 1;
    }
    cancel(t);
  }
  mcp_rpc_result_open(&out, key);
  add_task(&out, t, NULL, 0);
  mcp_rpc_close(&out);
  reply(s, b, stream, &out);
  return 1;
}

/* tasks/update: answers to the handler's outstanding input requests. Keys
 * not outstanding (unknown, answered already) are ignored, as the extension
 * says; once all are answered the handler resumes. */
int mcp__task_answer(mcp_task *t, json_t *responses) {
  const char *k;
  json_t *v;
  int taken = 0;
  if (terminal(t->status)) {
    mcp_info("task %s: tasks/update ignored: the task is %s", t->id, status_names[t->status]);
    return 0;
  }
  json_object_foreach(responses, k, v) {
    int i;
    for (i = 0; i < t->ninputs; i++)
      if (strcmp(t->inputs[i].key, k) == 0 && t->inputs[i].response == NULL) break;
    if (i == t->ninputs) {
      mcp_info("task %s: inputResponses[\"%.64s\"] ignored: no such request outstanding", t->id, k);
      continue;
    }
    t->inputs[i].response = json_incref(v);
    taken++;
  }
  if (taken > 0 && inputs_answered(t)) {
    input_op *in = t->input_op;
    set_status(t, ST_WORKING, NULL, 1);
    if (in != NULL) {                    /* the handler's wait is over */
      in->answers = json_array();
      if (in->answers == NULL) abort();
      for (int i = 0; i < t->ninputs; i++) json_array_append(in->answers, t->inputs[i].response);
      input_end(in, NULL, NULL);
    }
  }
  return taken;
}

static void on_update(mcp_session *s, void *stream, const char *key, mcp_task *t,
                      json_t *responses) {
  mcp__task_answer(t, responses);
  reply_ack(s, stream, key);
}

void mcp_task_request_ext(mcp_session *s, void *stream, const char *key, const char *method,
                          json_t *params) {
  mcp_buf out = MCP_BUF_INIT;
  json_t *responses = json_object_get(params, "inputResponses"), *v;
  const char *k;
  mcp_task *t;
  sweep(1);
  if (strcmp(method, "tasks/update") == 0) {
    if (!json_is_object(responses)) {
      reply_error(s, NULL, stream, key, MCP_RPC_INVALID_PARAMS,
                  "Invalid params: inputResponses must be an object");
      return;
    }
    json_object_foreach(responses, k, v)
      if (!json_is_object(v)) {
        char msg[160];
        snprintf(msg, sizeof msg, "Invalid params: inputResponses[\"%.64s\"] must be an object", k);
        reply_error(s, NULL, stream, key, MCP_RPC_INVALID_PARAMS, msg);
        return;
      }
  }
  if (stored()) {                      /* the task may be another instance's */
    stored()->request(s, stream, key, method, params);
    return;
  }
  if ((t = lookup(s, NULL, stream, key, params, 1)) == NULL) return;
  if (strcmp(method, "tasks/update") == 0) {
    on_update(s, stream, key, t, responses);
  } else if (strcmp(method, "tasks/cancel") == 0) {
    /* An ack either way: a terminal task stays as it is. */
    if (terminal(t->status)) mcp_info("task %s: cancel ignored: already %s", t->id, status_names[t->status]);
    else cancel(t);
    reply_ack(s, stream, key);
  } else {
    mcp_rpc_result_open(&out, key);
    add_task(&out, t, "complete", 1);
    mcp_rpc_close(&out);
    reply(s, NULL, stream, &out);
  }
}

void mcp_task_session_closed(mcp_session *s) {
  mcp_task *t, *next;
  if (stored()) stored()->session_closed(s);
  for (t = T.head; t; t = next) {
    next = t->next;
    if (s != NULL && t->session != s) continue;
    if (t->call) t->call->task = NULL, t->call = NULL;   /* its calls are gone already */
    task_free(t, "session ended");
  }
  if (T.timer_on) timer_arm();
}

void mcp_task_collect(mcp_buf *b) {
  uint64_t n[5] = {0};
  char labels[40];
  for (mcp_task *t = T.head; t; t = t->next) n[t->status]++;
  mcp_metric_head(b, "luamcp_tasks", "gauge", "Tasks kept, by state.");
  for (int i = 0; i < 5; i++) {
    snprintf(labels, sizeof labels, "state=\"%s\"", status_names[i]);
    mcp_metric_sample(b, "luamcp_tasks", labels, (double)n[i]);
  }
  if (mcp_store_on()) mcp_store_collect(b);
}

void mcp_task_close(void) {
  mcp_task_session_closed(NULL);
  if (T.timer_on) {
    uv_close((uv_handle_t *)&T.timer, NULL);
    T.timer_on = 0;
  }
}

/* For task_store.c (task_int.h). */

mcp_task *mcp__task_head(void) { return T.head; }

mcp_task *mcp__task_next(const mcp_task *t) { return t->next; }

void mcp__task_view_of(const mcp_task *t, mcp__task_view *v) {
  *v = (mcp__task_view){
    .id = t->id, .status = status_names[t->status], .message = t->message, .subject = t->subject,
    .session = t->session, .ext = t->ext, .created_ms = t->created_ms, .updated_ms = t->updated_ms,
    .ttl_ms = t->ttl_ms, .expires_ns = t->expires_ns
  };
}

mcp_task *mcp__task_by_id(const char *id) {
  for (mcp_task *t = T.head; t; t = t->next)
    if (strcmp(t->id, id) == 0) return t;
  return NULL;
}

void mcp__task_render(mcp_buf *b, const mcp_task *t, const char *result_type, int detailed) {
  add_task(b, t, result_type, detailed);
}

void mcp__task_detail(mcp_buf *b, const mcp_task *t) { add_detail(b, t); }

void mcp__task_cancel(mcp_task *t) {
  if (!terminal(t->status)) cancel(t);
}

void mcp__task_adopt(mcp_task *t, const char *status, const char *message) {
  int st;
  mcp_call *c = t->call;
  for (st = ST_COMPLETED; st <= ST_CANCELLED; st++)
    if (strcmp(status_names[st], status) == 0) break;
  if (terminal(t->status) || st > ST_CANCELLED) return;
  mcp_warn("task %s: the store has it %s (%s): stopping it here", t->id, status, message);
  set_status(t, st, message[0] ? message : NULL, 0);   /* refused by the store: a no-op there */
  if (c != NULL) mcp_call_fire(c, MCP_EV_CANCEL, message[0] ? message : status);
  input_abandon(t);
}

/* With a store, a listener's task comes from it. */
static void fetch(mcp_session *s, const char *id) {
  if (stored()) stored()->describe(s, id);
}

void mcp_task_init(void) {
  static const mcp_session_type row = {
    .request = mcp_task_request, .clock = mcp_task_sweep, .closed = mcp_task_session_closed,
  };
  static const mcp_rev2026_tasks ext = {
    .request = mcp_task_request_ext, .describe = mcp_task_describe, .fetch = fetch,
  };
  mcp_session_register(&row);
  mcp_rev2026_set_tasks(&ext);
}
