/* Tasks (MCP 2025-11-25): task-augmented tools/call, tasks/get, tasks/list,
 * tasks/result, tasks/cancel, notifications/tasks/status, ttl expiry. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <uv.h>

#include "config.h"
#include "json.h"
#include "log.h"
#include "rpc.h"
#include "sched.h"
#include "session.h"
#include "task.h"

#define RPC_REQUEST_CANCELLED -32800   /* tasks/result of a cancelled task (as LSP) */

enum { ST_WORKING, ST_INPUT_REQUIRED, ST_COMPLETED, ST_FAILED, ST_CANCELLED };
static const char *const status_names[] = {
  "working", "input_required", "completed", "failed", "cancelled"
};
#define terminal(st) ((st) >= ST_COMPLETED)

/* Owned by this file: see task.h. */
struct mcp_task {
  mcp_task *prev, *next;       /* every task, oldest first */
  mcp_session *session;
  mcp_call *call;              /* the handler's call until it ends */
  char id[33];                 /* 128 random bits, hex */
  unsigned long long seq;      /* creation order: the tasks/list cursor */
  int status;
  char *message;               /* statusMessage, or NULL */
  char *response;              /* the call's JSON-RPC response, once it sent one */
  size_t response_len;
  double created_ms, updated_ms;   /* wall clock */
  long long ttl_ms;
  uint64_t expires_ns;         /* on mcp_clock_ns() */
  mcp_call **waiters;          /* calls blocked in tasks/result */
  int nwaiters, capwaiters;
};

static struct {
  mcp_task *head, *tail;
  unsigned long long seq;
  uv_timer_t timer;            /* the earliest expiry; unref'd */
  int timer_on;
} T;

/* Wall-clock milliseconds, moved with the test clock. */
static double wall_ms(void) {
  uv_timeval64_t tv;
  int64_t skew = (int64_t)(mcp_clock_ns() - uv_hrtime());
  uv_gettimeofday(&tv);
  return (double)tv.tv_sec * 1000.0 + (double)(tv.tv_usec / 1000) + (double)(skew / 1000000);
}

static void add_time(mcp_buf *b, double ms) {
  long long v = (long long)ms;
  time_t sec = (time_t)(v / 1000);
  struct tm tm;
  char s[40];
  gmtime_r(&sec, &tm);
  strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
  mcp_buf_printf(b, "\"%s.%03dZ\"", s, (int)(v % 1000));
}

/* The Task object. */
static void add_task(mcp_buf *b, const mcp_task *t) {
  mcp_buf_printf(b, "{\"taskId\":\"%s\",\"status\":\"%s\",", t->id, status_names[t->status]);
  if (t->message) {
    mcp_buf_adds(b, "\"statusMessage\":");
    mcp_json_add_string(b, t->message, strlen(t->message));
    mcp_buf_addc(b, ',');
  }
  mcp_buf_adds(b, "\"createdAt\":");
  add_time(b, t->created_ms);
  mcp_buf_adds(b, ",\"lastUpdatedAt\":");
  add_time(b, t->updated_ms);
  mcp_buf_printf(b, ",\"ttl\":%lld,\"pollInterval\":%d}", t->ttl_ms, MCP_TASK_POLL_MS);
}

static mcp_task *task_find(mcp_session *s, const char *id) {
  for (mcp_task *t = T.head; t; t = t->next)
    if (t->session == s && strcmp(t->id, id) == 0) return t;
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
    mcp_call *w = t->waiters[i];
    w->wait_cleanup = NULL;
    w->wait_data = NULL;
    w->waiting = 0;
    mcp_call_wake(w);
  }
  t->nwaiters = 0;
}

static void notify_status(mcp_task *t) {
  mcp_buf b = MCP_BUF_INIT;
  mcp_rpc_notification_open(&b, "notifications/tasks/status");
  add_task(&b, t);
  mcp_rpc_close(&b);
  mcp_session_send(t->session, NULL, NULL, b.data, b.len, 0);
  mcp_buf_free(&b);
}

static void set_status(mcp_task *t, int status, const char *msg, int notify) {
  t->status = status;
  free(t->message);
  t->message = msg ? strdup(msg) : NULL;
  t->updated_ms = wall_ms();
  mcp_info("task %s: %s%s%s", t->id, status_names[status], msg ? ": " : "", msg ? msg : "");
  if (notify) notify_status(t);
  if (terminal(status)) wake_waiters(t);
}

/* Free a task. A handler still running is cancelled: call it only where the
 * state machine may act (from the loop, never inside a handler). */
static void task_free(mcp_task *t, const char *why) {
  mcp_call *c = t->call;
  mcp_debug("task %s freed: %s", t->id, why);
  if (t->prev) t->prev->next = t->next; else T.head = t->next;
  if (t->next) t->next->prev = t->prev; else T.tail = t->prev;
  wake_waiters(t);
  if (c != NULL) {
    c->task = NULL;
    t->call = NULL;
    mcp_call_fire(c, MCP_EV_CANCEL, why);   /* a no-op once terminal */
  }
  free(t->message);
  free(t->response);
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

static int session_count(mcp_session *s, mcp_task **oldest_terminal) {
  int n = 0;
  *oldest_terminal = NULL;
  for (mcp_task *t = T.head; t; t = t->next)
    if (t->session == s) {
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
  if (c == NULL || c->tool == NULL || c->tasked) return luaL_error(L, "task_create: not in a tools/call");
  /* A batch is answered as one; a stateless 2026-07-28 request has no
   * session to keep a task in: both run as normal calls. */
  if (c->batch != NULL || c->session->modern) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (lua_type(L, 1) == LUA_TNUMBER && lua_tonumber(L, 1) >= 1) {
    double v = lua_tonumber(L, 1);
    ttl = v > (double)MCP_TASK_MAX_TTL_MS ? MCP_TASK_MAX_TTL_MS : (long long)v;
  }
  sweep(0);
  if (session_count(c->session, &old) >= MCP_TASK_MAX_PER_SESSION) {
    if (old == NULL) {
      lua_pushnil(L);
      lua_pushfstring(L, "too many tasks (at most %d per session)", MCP_TASK_MAX_PER_SESSION);
      return 2;
    }
    task_free(old, "evicted: too many tasks");
  }
  t = calloc(1, sizeof *t);
  if (t == NULL) abort();
  if (uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) != 0) abort();
  for (int i = 0; i < 16; i++) snprintf(t->id + 2 * i, 3, "%02x", rnd[i]);
  t->session = c->session;
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
   * no longer reaches it) and its response goes to mcp_task_done. */
  mcp_rpc_result_open(&b, c->req.key);
  mcp_buf_adds(&b, "{\"task\":");
  add_task(&b, t);
  mcp_buf_addc(&b, '}');
  mcp_rpc_close(&b);
  mcp_session_send(c->session, NULL, c->stream, b.data, b.len, 1);
  mcp_buf_free(&b);
  c->stream = NULL;
  c->responded = 1;
  c->tasked = 1;
  c->task = t;
  t->call = c;
  mcp_reqtab_remove(&c->session->reqs, &c->req);
  mcp_info("task %s created for request %.64s (tool %s, ttl %lld ms)", t->id, c->req.key, c->tool,
           ttl);
  timer_arm();
  lua_pushstring(L, t->id);
  return 1;
}

void mcp_task_add_meta(mcp_buf *b, const mcp_call *c) {
  if (c == NULL || c->task == NULL) return;
  mcp_buf_printf(b, ",\"_meta\":{\"io.modelcontextprotocol/related-task\":{\"taskId\":\"%s\"}}",
                 c->task->id);
}

void mcp_task_push_meta(lua_State *L, const mcp_call *c) {
  if (c == NULL || c->task == NULL) return;
  /* stack: _meta -> _meta */
  lua_createtable(L, 0, 1);
  lua_pushstring(L, c->task->id);
  lua_setfield(L, -2, "taskId");
  lua_setfield(L, -2, "io.modelcontextprotocol/related-task");
}

void mcp_task_input(const mcp_call *c, const char *method) {
  mcp_task *t = c->task;
  char msg[160];
  if (t == NULL || terminal(t->status)) return;
  if (method != NULL) {
    snprintf(msg, sizeof msg, "Waiting for the client to answer %.100s", method);
    set_status(t, ST_INPUT_REQUIRED, msg, 1);
  } else if (t->status == ST_INPUT_REQUIRED) {
    set_status(t, ST_WORKING, NULL, 1);
  }
}

/* A short statusMessage for a failed task: the error's message, or the
 * first text of an isError result. */
static const char *failure_message(json_t *msg, int *failed) {
  json_t *err = json_object_get(msg, "error"), *res = json_object_get(msg, "result");
  *failed = 0;
  if (err != NULL) {
    *failed = 1;
    return json_string_value(json_object_get(err, "message"));
  }
  if (json_is_true(json_object_get(res, "isError"))) {
    *failed = 1;
    return json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0),
                                              "text"));
  }
  return NULL;
}

void mcp_task_done(mcp_call *c, const char *data, size_t len) {
  mcp_task *t = c->task;
  json_t *msg;
  const char *why;
  char err[128], short_msg[256];
  int failed;
  if (t == NULL) return;             /* expired: nobody can ask for it */
  if (terminal(t->status)) {
    mcp_debug("task %s: result dropped, already %s", t->id, status_names[t->status]);
    return;
  }
  t->response = malloc(len + 1);
  if (t->response == NULL) abort();
  memcpy(t->response, data, len);
  t->response[len] = '\0';
  t->response_len = len;
  msg = mcp_json_parse(data, len, err, sizeof err);
  why = failure_message(msg, &failed);
  if (why) snprintf(short_msg, sizeof short_msg, "%s", why);
  set_status(t, failed ? ST_FAILED : ST_COMPLETED, why ? short_msg : NULL, 1);
  if (msg) json_decref(msg);
}

void mcp_task_call_gone(mcp_call *c) {
  mcp_task *t = c->task;
  if (t == NULL) return;
  c->task = NULL;
  t->call = NULL;
  /* Ended with no response: shutdown or the session's end (the client is
   * going away: no notification). */
  if (!terminal(t->status)) set_status(t, ST_CANCELLED, c->req.reason, 0);
}

/* tasks/result. */

static void waiter_cleanup(mcp_call *c) {
  mcp_task *t = c->wait_data;
  c->wait_data = NULL;
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
  char err[128];
  json_t *msg, *e, *res;
  int n;
  if (t->status == ST_CANCELLED || t->response == NULL) {
    lua_pushnil(L);
    lua_pushinteger(L, RPC_REQUEST_CANCELLED);
    lua_pushfstring(L, "Task cancelled%s%s", t->message ? ": " : "", t->message ? t->message : "");
    return 3;
  }
  msg = mcp_json_parse(t->response, t->response_len, err, sizeof err);
  if (msg == NULL) return push_error(L, MCP_RPC_INTERNAL, "Internal error: stored result unreadable");
  if ((e = json_object_get(msg, "error")) != NULL) {
    lua_pushnil(L);
    lua_pushinteger(L, json_integer_value(json_object_get(e, "code")));
    lua_pushstring(L, json_string_value(json_object_get(e, "message")));
    if (json_object_get(e, "data")) mcp_json_push(L, json_object_get(e, "data"));
    else lua_pushnil(L);
    n = 4;
  } else {
    res = json_object_get(msg, "result");
    mcp_json_push(L, res);
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
    n = 1;
  }
  json_decref(msg);
  return n;
}

static int result_wait(lua_State *L, mcp_call *c, mcp_task *t);

static int result_k(lua_State *L, int status, lua_KContext ctx) {
  mcp_call *c = mcp_call_current(L);
  mcp_task *t = task_find(c->session, lua_tostring(L, 1));
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
  c->wait_cleanup = waiter_cleanup;
  c->wait_data = t;
  c->waiting = 1;
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
  t = task_find(c->session, lua_tostring(L, 1));
  if (t == NULL) return push_error(L, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
  if (!terminal(t->status)) {
    if (L != c->co) return luaL_error(L, "task_result: cannot wait here");
    return result_wait(L, c, t);
  }
  return push_outcome(L, t);
}

/* tasks/get, tasks/list, tasks/cancel. */

static void reply(mcp_session *s, mcp_batch *b, void *stream, mcp_buf *out) {
  mcp_session_send(s, b, stream, out->data, out->len, 1);
  mcp_buf_free(out);
}

static void reply_error(mcp_session *s, mcp_batch *b, void *stream, const char *key, int code,
                        const char *msg) {
  mcp_buf out = MCP_BUF_INIT;
  mcp_rpc_error(&out, key, code, "%s", msg);
  reply(s, b, stream, &out);
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
    if (t->session != s || t->seq <= after) continue;
    if (n == mcp_cfg.page_size) break;
    if (n++) mcp_buf_addc(&out, ',');
    add_task(&out, t);
    last = t;
  }
  mcp_buf_addc(&out, ']');
  for (; t; t = t->next)
    if (t->session == s && last) {
      mcp_buf_printf(&out, ",\"nextCursor\":\"%llu\"", last->seq);
      break;
    }
  mcp_buf_addc(&out, '}');
  mcp_rpc_close(&out);
  reply(s, b, stream, &out);
}

int mcp_task_request(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                     const char *method, json_t *params) {
  const char *id;
  mcp_task *t;
  mcp_buf out = MCP_BUF_INIT;
  char msg[128];
  int get = strcmp(method, "tasks/get") == 0, cancel = strcmp(method, "tasks/cancel") == 0;
  if (!get && !cancel && strcmp(method, "tasks/list") != 0) return 0;
  if (!mcp_sched_has_method("tasks/result")) return 0;    /* no tool offers tasks */
  sweep(1);
  if (!get && !cancel) {
    on_list(s, b, stream, key, params);
    return 1;
  }
  id = json_string_value(json_object_get(params, "taskId"));
  if (id == NULL) {
    reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, "Invalid params: taskId must be a string");
    return 1;
  }
  t = task_find(s, id);
  if (t == NULL) {
    reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
    return 1;
  }
  if (cancel) {
    mcp_call *c = t->call;
    if (terminal(t->status)) {
      snprintf(msg, sizeof msg, "Cannot cancel task: already in terminal status '%s'",
               status_names[t->status]);
      reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, msg);
      return 1;
    }
    /* cancelled before the reply, and for good: a late result is dropped */
    set_status(t, ST_CANCELLED, "The task was cancelled by request.", 1);
    mcp_rpc_result_open(&out, key);
    add_task(&out, t);
    mcp_rpc_close(&out);
    if (c != NULL) mcp_call_fire(c, MCP_EV_CANCEL, "task cancelled");
    reply(s, b, stream, &out);
    return 1;
  }
  mcp_rpc_result_open(&out, key);
  add_task(&out, t);
  mcp_rpc_close(&out);
  reply(s, b, stream, &out);
  return 1;
}

void mcp_task_session_closed(mcp_session *s) {
  mcp_task *t, *next;
  for (t = T.head; t; t = next) {
    next = t->next;
    if (s != NULL && t->session != s) continue;
    if (t->call) t->call->task = NULL, t->call = NULL;   /* its calls are gone already */
    task_free(t, "session ended");
  }
  if (T.timer_on) timer_arm();
}

void mcp_task_close(void) {
  mcp_task_session_closed(NULL);
  if (T.timer_on) {
    uv_close((uv_handle_t *)&T.timer, NULL);
    T.timer_on = 0;
  }
}
