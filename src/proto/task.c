/* Tasks, the model: a task's life (created by core.task_create, its status
 * and notifications, its handler's call and input requests, ttl expiry, its
 * end), on either wire (2025-11-25, and the tasks extension of 2026-07-28
 * requests); the methods are task_methods.c's and task_ext.c's. See task.h. */
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
#include "policy.h"
#include "rev2026.h"
#include "rpc.h"
#include "sched.h"
#include "session.h"
#include "store.h"
#include "task.h"
#include "task_int.h"

static const mcp_task_store_type *store_row;   /* task_store.c's, once --store opened */

const mcp_task_store_type *mcp__task_stored(void) { return mcp_store_on() ? store_row : NULL; }

void mcp__task_set_store(const mcp_task_store_type *t) { store_row = t; }

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

/* Does the subject of s's latest request own t? Both NULL without auth. */
int mcp__task_owned_by(const mcp_task *t, const mcp_session *s) {
  const char *sub = mcp_identity_subject(s->auth);
  if (t->subject == NULL || sub == NULL) return t->subject == sub;
  return strcmp(t->subject, sub) == 0;
}

/* The task with this id in session (or scope) s, of the extension or not,
 * created by the subject of s's request. */
mcp_task *mcp__task_find(mcp_session *s, const char *id, int ext) {
  for (mcp_task *t = T.head; t; t = t->next)
    if (t->session == s && t->ext == (unsigned)ext && strcmp(t->id, id) == 0) {
      if (mcp__task_owned_by(t, s)) return t;
      mcp_info("task %s: asked for by another subject: not found", t->id);
      return NULL;
    }
  return NULL;
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
    mcp__task_render(&b, t, NULL, 1);
    params = mcp_json_parse(b.data, b.len, NULL, 0);
    if (params == NULL) abort();
    mcp_rev2026_listen_notify("notifications/tasks", params);
    json_decref(params);
  } else {
    mcp_rpc_notification_open(&b, "notifications/tasks/status");
    mcp__task_render(&b, t, NULL, 0);
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
  mcp_info("task %s: %s%s%s", t->id, mcp__task_status_names[status], msg ? ": " : "", msg ? msg : "");
  if (mcp__task_stored()) mcp__task_stored()->write(t, notify);
  if (notify) notify_status(t);
  if (mcp__task_terminal(status)) wake_waiters(t);
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
    if (t->status == MCP__TASK_INPUT_REQUIRED) set_status(t, MCP__TASK_WORKING, NULL, 1);
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
  input_end(t->input_op, mcp__task_terminal(t->status) ? "the task was cancelled" : "the task expired",
            "closed");
}

/* Free a task. A handler still running is cancelled: call it only where the
 * state machine may act (from the loop, never inside a handler). */
static void task_free(mcp_task *t, const char *why) {
  mcp_call *c = t->call;
  mcp_debug("task %s freed: %s", t->id, why);
  if (mcp_store_on() && !mcp__task_terminal(t->status))
    set_status(t, MCP__TASK_CANCELLED, why, 0);          /* for the others */
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
void mcp__task_sweep(int may_fire) {
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
  mcp__task_sweep(1);
}

void mcp_task_sweep(void) { mcp__task_sweep(1); }

unsigned long long mcp__task_seq(void) { return T.seq; }


/* Tasks of s (of the extension or not), and the oldest finished one. */
static int session_count(mcp_session *s, int ext, mcp_task **oldest_terminal) {
  int n = 0;
  *oldest_terminal = NULL;
  for (mcp_task *t = T.head; t; t = t->next)
    if (t->session == s && t->ext == (unsigned)ext) {
      n++;
      if (*oldest_terminal == NULL && mcp__task_terminal(t->status) && t->call == NULL) *oldest_terminal = t;
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
  ext = c->session->rev2026;
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
  mcp__task_sweep(0);
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
  t->status = MCP__TASK_WORKING;
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
    mcp__task_render(&b, t, "task", 0);                 /* CreateTaskResult: Result & Task, flat */
  } else {
    mcp_buf_adds(&b, "{\"task\":");
    mcp__task_render(&b, t, NULL, 0);
    mcp_buf_addc(&b, '}');
  }
  mcp_rpc_close(&b);
  c->typed = ext;                               /* CreateTaskResult: resultType "task" */
  if (ext && mcp__task_stored()) mcp__task_stored()->created(t, c->session->parent, c->stream, b.data, b.len);
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
  if (mcp__task_stored() && !ext) mcp__task_stored()->write(t, 0);
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
  if (t == NULL || t->ext || mcp__task_terminal(t->status)) return;
  if (method != NULL) {
    snprintf(msg, sizeof msg, "Waiting for the client to answer %.100s", method);
    set_status(t, MCP__TASK_INPUT_REQUIRED, msg, 1);
  } else if (t->status == MCP__TASK_INPUT_REQUIRED) {
    set_status(t, MCP__TASK_WORKING, NULL, 1);
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
  if (mcp__task_terminal(t->status)) {
    mcp_debug("task %s: result dropped, already %s", t->id, mcp__task_status_names[t->status]);
    return;
  }
  t->response = mcp_json_parse(data, len, err, sizeof err);
  if (t->response == NULL) {         /* the core wrote it: cannot happen */
    mcp_error("task %s: the response does not parse: %s", t->id, err);
    set_status(t, MCP__TASK_CANCELLED, "internal error: unreadable result", 1);
    return;
  }
  /* The extension inlines the result as the request would have returned it. */
  res = json_object_get(t->response, "result");
  if (t->ext && json_is_object(res) && json_object_get(res, "resultType") == NULL)
    json_object_set_new(res, "resultType", json_string("complete"));
  why = outcome(t, t->response, &failed);
  if (why) snprintf(short_msg, sizeof short_msg, "%s", why);
  set_status(t, failed ? MCP__TASK_FAILED : MCP__TASK_COMPLETED, why ? short_msg : NULL, 1);
}

static void task_stopping(mcp_call *c, const char *reason) { mcp_session_owner.stopping(c, reason); }

static void task_gone(mcp_call *c) {
  mcp_task *t = c->task;
  if (t != NULL) {
    c->task = NULL;
    t->call = NULL;
    /* Ended with no response: shutdown or the session's end (the client is
     * going away: no notification). */
    if (!mcp__task_terminal(t->status)) set_status(t, MCP__TASK_CANCELLED, c->req.reason, 0);
  }
  mcp_session_owner.gone(c);
}

static const char *task_session_name(const mcp_call *c) {
  return mcp_session_owner.session_name(c);
}

static const char *task_client_name(const mcp_call *c) {
  return mcp_session_owner.client_name ? mcp_session_owner.client_name(c) : NULL;
}

static const mcp_call_owner task_owner = { task_respond, task_stopping, task_gone,
                                           task_session_name, task_client_name };

/* The extension's input requests: the handler waits for tasks/update. */

/* Its task may be gone (expired, evicted) while the handler runs on: the
 * call still takes input as a task, and mcp_task_input_wait answers nil. */
int mcp_task_takes_input(const mcp_call *c) { return c->tasked && c->session->rev2026; }

int mcp_task_input_wait(lua_State *L, mcp_call *c, int idx, double timeout, int single) {
  mcp_task *t = c->task;
  mcp__task_input *in;
  mcp_buf b = MCP_BUF_INIT;
  char err[128], msg[200];
  int n;
  input_op *op;
  mcp_op **h;
  idx = lua_absindex(L, idx);
  n = (int)lua_rawlen(L, idx);
  if (n == 0) return luaL_argerror(L, 1, "no requests");
  if (c->signalled) return mcp_push_cancelled(L, c);
  if (t == NULL || mcp__task_terminal(t->status)) return mcp_push_fail(L, "closed", "the task has ended");
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
  mcp_deadline_init(&op->dl, input_timeout);
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
  set_status(t, MCP__TASK_INPUT_REQUIRED, msg, 1);
  mcp_deadline_set(&op->dl, mcp_clock_ns() + (uint64_t)(timeout * 1e9));
  return mcp_op_wait(L);
}

/* tasks/update: answers to the handler's outstanding input requests. Keys
 * not outstanding (unknown, answered already) are ignored, as the extension
 * says; once all are answered the handler resumes. */
int mcp__task_answer(mcp_task *t, json_t *responses) {
  const char *k;
  json_t *v;
  int taken = 0;
  if (mcp__task_terminal(t->status)) {
    mcp_info("task %s: tasks/update ignored: the task is %s", t->id, mcp__task_status_names[t->status]);
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
    set_status(t, MCP__TASK_WORKING, NULL, 1);
    if (in != NULL) {                    /* the handler's wait is over */
      in->answers = json_array();
      if (in->answers == NULL) abort();
      for (int i = 0; i < t->ninputs; i++) json_array_append(in->answers, t->inputs[i].response);
      input_end(in, NULL, NULL);
    }
  }
  return taken;
}

/* Requests about tasks, answered at once. */

void mcp__task_reply(mcp_session *s, mcp_batch *b, void *stream, mcp_buf *out) {
  mcp_session_send(s, b, stream, out->data, out->len, 1);
  mcp_buf_free(out);
}

void mcp__task_reply_error(mcp_session *s, mcp_batch *b, void *stream, const char *key, int code,
                           const char *msg) {
  mcp_buf out = MCP_BUF_INIT;
  mcp_info("request %.64s: %s", key, msg);
  mcp_rpc_error(&out, key, code, "%s", msg);
  mcp__task_reply(s, b, stream, &out);
}

/* The task params.taskId names in s, or NULL once the error is answered. */
mcp_task *mcp__task_lookup(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                           json_t *params, int ext) {
  const char *id = json_string_value(json_object_get(params, "taskId"));
  mcp_task *t;
  if (id == NULL) {
    mcp__task_reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS,
                          "Invalid params: taskId must be a string");
    return NULL;
  }
  if ((t = mcp__task_find(s, id, ext)) == NULL)
    mcp__task_reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS,
                          "Failed to retrieve task: Task not found");
  return t;
}

/* Cancel a task that is not terminal: cancelled at once and for good (a
 * late result is dropped); its call gets the cancel through the state
 * machine (its tool's cancel policy applies). */
static void cancel(mcp_task *t) {
  mcp_call *c = t->call;
  set_status(t, MCP__TASK_CANCELLED, "The task was cancelled by request.", 1);
  if (c != NULL) mcp_call_fire(c, MCP_EV_CANCEL, "task cancelled");
  input_abandon(t);                  /* a handler that ignores cancels waits no more */
}

void mcp_task_session_closed(mcp_session *s) {
  mcp_task *t, *next;
  if (mcp__task_stored()) mcp__task_stored()->session_closed(s);
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
    snprintf(labels, sizeof labels, "state=\"%s\"", mcp__task_status_names[i]);
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
    .id = t->id, .status = mcp__task_status_names[t->status], .message = t->message, .subject = t->subject,
    .session = t->session, .ext = t->ext, .created_ms = t->created_ms, .updated_ms = t->updated_ms,
    .ttl_ms = t->ttl_ms, .expires_ns = t->expires_ns
  };
}

mcp_task *mcp__task_by_id(const char *id) {
  for (mcp_task *t = T.head; t; t = t->next)
    if (strcmp(t->id, id) == 0) return t;
  return NULL;
}

void mcp__task_cancel(mcp_task *t) {
  if (!mcp__task_terminal(t->status)) cancel(t);
}

void mcp__task_adopt(mcp_task *t, const char *status, const char *message) {
  int st;
  mcp_call *c = t->call;
  for (st = MCP__TASK_COMPLETED; st <= MCP__TASK_CANCELLED; st++)
    if (strcmp(mcp__task_status_names[st], status) == 0) break;
  if (mcp__task_terminal(t->status) || st > MCP__TASK_CANCELLED) return;
  mcp_warn("task %s: the store has it %s (%s): stopping it here", t->id, status, message);
  set_status(t, st, message[0] ? message : NULL, 0);   /* refused by the store: a no-op there */
  if (c != NULL) mcp_call_fire(c, MCP_EV_CANCEL, message[0] ? message : status);
  input_abandon(t);
}

void mcp_task_init(void) {
  static const mcp_session_type row = { .clock = mcp_task_sweep, .closed = mcp_task_session_closed };
  mcp_session_register(&row);
}
