/* Requests from a handler to the client (sampling, elicitation, roots, ...).
 *
 * A call sends one request on its own stream and waits; the answer, the
 * request's timeout, or the call's own cancellation resumes it. Whatever
 * ends the wait other than the answer also cancels the request at the client
 * with notifications/cancelled, and a response that arrives after that is
 * dropped quietly. Progress the client reports for the request restarts its
 * timeout, never past its maximum total. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <uv.h>

#include "json.h"
#include "log.h"
#include "outgoing.h"
#include "rpc.h"
#include "sched.h"
#include "session.h"
#include "task.h"

#define RECENT 32   /* abandoned ids remembered, so that late answers log precisely */

static long long abandoned[RECENT];
static unsigned nabandoned;

static void unlink_waiter(mcp_call *c) {
  mcp_call **p = &c->session->out_waiters;
  while (*p && *p != c) p = &(*p)->out_next;
  if (*p) *p = c->out_next;
  c->out_next = NULL;
}

static mcp_call *find_waiter(mcp_session *s, json_t *id) {
  if (!json_is_integer(id)) return NULL;
  for (mcp_call *c = s->out_waiters; c; c = c->out_next)
    if (c->out_id == json_integer_value(id)) return c;
  return NULL;
}

void mcp_out_abandon(mcp_call *c, const char *reason) {
  mcp_buf *b = mcp_scratch();
  if (c->out_id == 0) return;
  mcp_rpc_notification_open(b, "notifications/cancelled");
  mcp_buf_printf(b, "{\"requestId\":%lld,\"reason\":", c->out_id);
  mcp_json_add_string(b, reason, strlen(reason));
  mcp_buf_adds(b, "}}");
  mcp_session_send(c->session, NULL, c->stream, b->data, b->len, 0);
  mcp_info("request %.64s: its request %lld to the client is cancelled: %s", c->req.key,
           c->out_id, reason);
  abandoned[nabandoned++ % RECENT] = c->out_id;
  unlink_waiter(c);
  c->out_id = 0;
}

/* The continuation: the answer, or why there is none. */
static int request_k(lua_State *L, int status, lua_KContext ctx) {
  mcp_call *c = mcp_call_current(L);
  (void)status; (void)ctx;
  mcp_task_input(c, NULL);                           /* a task works again */
  if (c->out_result_ref != LUA_NOREF) {              /* answered */
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->out_result_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, c->out_result_ref);
    c->out_result_ref = LUA_NOREF;
    lua_rawgeti(L, -1, 1);
    if (lua_toboolean(L, -1)) {
      lua_rawgeti(L, -2, 2);
      return 1;
    }
    lua_pushnil(L);
    lua_rawgeti(L, -3, 2);
    lua_rawgeti(L, -4, 3);
    return 3;
  }
  const char *why = c->signalled ? (c->req.reason ? c->req.reason : "cancelled") : "timeout";
  mcp_out_abandon(c, c->signalled ? "the calling request was cancelled" : "timeout");
  lua_pushnil(L);
  lua_pushstring(L, why);
  return 2;
}

int mcp_call_request(lua_State *L, mcp_call *c, const char *method, int params, double timeout,
                     double max_total) {
  mcp_buf *b;
  char err[128];
  uint64_t now = mcp_clock_ns();
  if (c->signalled) {
    lua_pushnil(L);
    lua_pushstring(L, c->req.reason ? c->req.reason : "cancelled");
    return 2;
  }
  c->out_id = ++c->session->out_last;
  b = mcp_scratch();
  mcp_buf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":", c->out_id);
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
    lua_pushinteger(L, c->out_id);
    lua_setfield(L, -2, "progressToken");
    mcp_task_push_meta(L, c);                        /* a task's: related-task */
    lua_pop(L, 1);
    if (mcp_json_encode(L, params, b, err, sizeof err) != 0) {
      c->out_id = 0;
      return luaL_argerror(L, 2, err);
    }
  } else {
    mcp_buf_printf(b, "{\"_meta\":{\"progressToken\":%lld}}", c->out_id);
  }
  mcp_buf_addc(b, '}');
  c->out_next = c->session->out_waiters;
  c->session->out_waiters = c;
  c->out_timeout_ns = (uint64_t)(timeout * 1e9);
  c->out_max_ns = now + (uint64_t)(max_total * 1e9);
  c->wake_ns = now + c->out_timeout_ns;
  if (c->wake_ns > c->out_max_ns) c->wake_ns = c->out_max_ns;
  c->waiting = 1;
  mcp_call_rearm(c);
  mcp_debug("request %.64s: sends %s to the client as request %lld", c->req.key, method, c->out_id);
  mcp_session_send(c->session, NULL, c->stream, b->data, b->len, 0);
  mcp_task_input(c, method);                         /* a task needs input */
  return lua_yieldk(L, 0, 0, request_k);
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

int mcp_out_response(mcp_session *s, json_t *msg) {
  json_t *id = json_object_get(msg, "id");
  mcp_call *c = find_waiter(s, id);
  lua_State *L = mcp_sched_lua();
  if (c == NULL) {
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
    mcp_error("request %.64s: cannot read the client's answer: %s", c->req.key, lua_tostring(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  c->out_result_ref = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  unlink_waiter(c);
  c->out_id = 0;
  c->waiting = 0;
  c->wake_ns = 0;
  mcp_call_rearm(c);
  mcp_call_wake(c);
  return 1;
}

int mcp_out_progress(mcp_session *s, json_t *token) {
  mcp_call *c = find_waiter(s, token);
  uint64_t now = mcp_clock_ns();
  if (c == NULL || !c->waiting) return 0;
  c->wake_ns = now + c->out_timeout_ns;
  if (c->wake_ns > c->out_max_ns) c->wake_ns = c->out_max_ns;
  mcp_call_rearm(c);
  return 1;
}
