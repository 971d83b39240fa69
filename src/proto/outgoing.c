/* Requests from a handler to the client (sampling, elicitation, roots, ...).
 *
 * Each request is an operation of the calling request (op.h): the handler
 * waits for it (under mcp.all too, several at once), and the answer, the
 * request's timeout, or a cancel of the call ends the wait. Whatever ends it
 * other than the answer also cancels the request at the client with
 * notifications/cancelled, and a response that arrives after that is dropped
 * quietly. Progress the client reports for the request restarts its timeout,
 * never past its maximum total. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <uv.h>

#include "deadline.h"
#include "fail.h"
#include "json.h"
#include "log.h"
#include "op.h"
#include "outgoing.h"
#include "rpc.h"
#include "sched.h"
#include "session.h"
#include "task.h"

#define RECENT 32   /* abandoned ids remembered, so that late answers log precisely */

static long long abandoned[RECENT];
static unsigned nabandoned;

/* One request to the client. The engine holds it while it is on its
 * session's list (until the answer, the timeout or a cancel), the Lua handle
 * while Lua can reach it; freed by out_free. */
struct mcp_out {
  mcp_op op;                 /* first member */
  mcp_session *session;
  void *stream;              /* the calling request's exchange */
  long long id;              /* our JSON-RPC id; 0 once off the list */
  uint64_t timeout_ns;       /* progress restarts it */
  uint64_t max_ns;           /* mcp_clock_ns it may never wait past */
  double timeout;            /* seconds, for the message */
  mcp_deadline dl;
  int result_ref;            /* {ok, result or message, error object} once answered */
  char method[64];
  char key[72];              /* the calling request's id, for logs */
  mcp_out *next;             /* the session's list */
};

static void unlink_out(mcp_out *o) {
  mcp_out **p = &o->session->out_waiters;
  while (*p && *p != o) p = &(*p)->next;
  if (*p) *p = o->next;
  o->next = NULL;
  o->id = 0;
  mcp_deadline_set(&o->dl, 0);
}

static mcp_out *find_out(mcp_session *s, json_t *id) {
  if (!json_is_integer(id)) return NULL;
  for (mcp_out *o = s->out_waiters; o; o = o->next)
    if (o->id == json_integer_value(id)) return o;
  return NULL;
}

/* Cancel it at the client, and let go. */
static void abandon(mcp_out *o, const char *reason) {
  mcp_buf *b = mcp_scratch();
  mcp_rpc_notification_open(b, "notifications/cancelled");
  mcp_buf_printf(b, "{\"requestId\":%lld,\"reason\":", o->id);
  mcp_json_add_string(b, reason, strlen(reason));
  mcp_buf_adds(b, "}}");
  mcp_session_send(o->session, NULL, o->stream, b->data, b->len, 0);
  mcp_info("request %s: its request %lld to the client is cancelled: %s", o->key, o->id, reason);
  abandoned[nabandoned++ % RECENT] = o->id;
  unlink_out(o);
  if (o->op.call != NULL) mcp_task_input(o->op.call, NULL);   /* a task works again */
  mcp_op_release(&o->op);
}

static void out_cancel(mcp_op *op) {
  mcp_out *o = (mcp_out *)op;
  if (o->id != 0) abandon(o, op->reason + sizeof "cancelled: " - 1);
}

/* Its timeout passed: done, with no result. */
static void out_timeout(mcp_deadline *d) {
  mcp_out *o = (mcp_out *)((char *)d - offsetof(mcp_out, dl));
  mcp_op_done(&o->op);
  abandon(o, "timeout");
}

/* stack: -> result, or nil, message, code [, error object] */
static int out_push(lua_State *L, mcp_op *op) {
  mcp_out *o = (mcp_out *)op;
  if (o->result_ref == LUA_NOREF)
    return mcp_push_fail(L, "timeout", "the client did not answer %s within %g s (timeout)", o->method,
                         o->timeout);
  lua_rawgeti(L, LUA_REGISTRYINDEX, o->result_ref);     /* stack: answer */
  lua_rawgeti(L, -1, 1);
  if (lua_toboolean(L, -1)) {
    lua_rawgeti(L, -2, 2);
    return 1;
  }
  lua_pushnil(L);
  lua_rawgeti(L, -3, 2);
  lua_pushliteral(L, "rpc");
  lua_rawgeti(L, -5, 3);
  return 4;
}

static void out_free(mcp_op *op) {
  mcp_out *o = (mcp_out *)op;
  luaL_unref(mcp_sched_lua(), LUA_REGISTRYINDEX, o->result_ref);
  free(o);
}

static const mcp_op_type out_type = { "request", out_cancel, out_push, out_free };

int mcp_call_request(lua_State *L, mcp_call *c, const char *method, int params, double timeout,
                     double max_total) {
  mcp_buf *b;
  mcp_out *o;
  mcp_op **h;
  long long id;
  char err[128];
  uint64_t now = mcp_clock_ns(), due;
  int r;
  params = lua_absindex(L, params);
  if ((r = mcp_op_refuse(L, c)) != 0) return r;
  id = c->session->out_last + 1;
  b = mcp_scratch();
  mcp_buf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":", id);
  mcp_json_add_string(b, method, strlen(method));
  mcp_buf_adds(b, ",\"params\":");
  /* params with _meta.progressToken = our id, so the client can report progress */
  if (lua_istable(L, params)) {
    lua_getfield(L, params, "_meta");
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setfield(L, params, "_meta");
    }
    lua_pushinteger(L, id);
    lua_setfield(L, -2, "progressToken");
    mcp_task_push_meta(L, c);                        /* a task's: related-task */
    lua_pop(L, 1);
    if (mcp_json_encode(L, params, b, err, sizeof err) != 0) return luaL_argerror(L, 2, err);
  } else {
    mcp_buf_printf(b, "{\"_meta\":{\"progressToken\":%lld}}", id);
  }
  mcp_buf_addc(b, '}');
  h = mcp_op_reserve(L);                             /* may raise: before anything is sent */
  o = calloc(1, sizeof *o);
  if (o == NULL) abort();
  c->session->out_last = id;
  o->id = id;
  o->session = c->session;
  o->stream = c->stream;
  o->result_ref = LUA_NOREF;
  o->timeout = timeout;
  o->timeout_ns = (uint64_t)(timeout * 1e9);
  o->max_ns = now + (uint64_t)(max_total * 1e9);
  mcp_deadline_init(&o->dl, out_timeout);
  snprintf(o->method, sizeof o->method, "%s", method);
  snprintf(o->key, sizeof o->key, "%.64s", c->req.key);
  o->next = c->session->out_waiters;
  c->session->out_waiters = o;
  mcp_op_init(&o->op, &out_type, c);
  mcp_op_attach(h, &o->op);
  due = now + o->timeout_ns;
  mcp_deadline_set(&o->dl, due < o->max_ns ? due : o->max_ns);
  mcp_debug("request %.64s: sends %s to the client as request %lld", c->req.key, method, id);
  mcp_session_send(c->session, NULL, c->stream, b->data, b->len, 0);
  mcp_task_input(c, method);                         /* a task needs input */
  return mcp_op_wait(L);
}

/* stack: -> {ok, result or message, error} in the registry (protected) */
static int store_answer(lua_State *L) {
  json_t *msg = lua_touserdata(L, 1), *err = json_object_get(msg, "error");
  lua_createtable(L, 3, 0);
  if (err == NULL) {
    lua_pushboolean(L, 1);
    lua_rawseti(L, -2, 1);
    mcp_json_push(L, json_object_get(msg, "result"));
    lua_rawseti(L, -2, 2);
  } else {
    const char *m = json_string_value(json_object_get(err, "message"));
    lua_pushboolean(L, 0);
    lua_rawseti(L, -2, 1);
    lua_pushstring(L, m ? m : "error");
    lua_rawseti(L, -2, 2);
    mcp_json_push(L, err);
    lua_rawseti(L, -2, 3);
  }
  lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
  return 1;
}

static int out_response(mcp_session *s, json_t *msg) {
  json_t *id = json_object_get(msg, "id");
  mcp_out *o = find_out(s, id);
  lua_State *L = mcp_sched_lua();
  if (o == NULL) {
    if (json_is_integer(id))
      for (unsigned i = 0; i < RECENT; i++)
        if (abandoned[i] == json_integer_value(id) && abandoned[i] != 0) {
          mcp_debug("late response to cancelled request %lld dropped", (long long)abandoned[i]);
          return 1;
        }
    return 0;
  }
  lua_pushcfunction(L, store_answer);
  lua_pushlightuserdata(L, msg);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    mcp_error("request %s: cannot read the client's answer: %s", o->key, lua_tostring(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  o->result_ref = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  unlink_out(o);
  if (o->op.call != NULL) mcp_task_input(o->op.call, NULL);   /* a task works again */
  mcp_op_done(&o->op);
  mcp_op_release(&o->op);
  return 1;
}

static int out_progress(mcp_session *s, json_t *token) {
  mcp_out *o = find_out(s, token);
  uint64_t due;
  if (o == NULL) return 0;
  due = mcp_clock_ns() + o->timeout_ns;
  mcp_deadline_set(&o->dl, due < o->max_ns ? due : o->max_ns);
  return 1;
}

void mcp_out_init(void) {
  static const mcp_session_type row = { .response = out_response, .progress = out_progress };
  mcp_session_register(&row);
}
