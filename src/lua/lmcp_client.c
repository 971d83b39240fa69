/* mcp.core's functions that talk to the client: progress (and the tool's
 * heartbeat), log messages, notifications, and requests to the client. */

#include <math.h>
#include <string.h>

#include <lauxlib.h>

#include "config.h"
#include "fail.h"
#include "json.h"
#include "live.h"
#include "log.h"
#include "op.h"
#include "outgoing.h"
#include "rev2026.h"
#include "rpc.h"
#include "session.h"
#include "task.h"
#include "lmcp_int.h"

/* The client capability a request to the client needs, if any. */
static const char *needed_capability(const char *method) {
  if (strcmp(method, "sampling/createMessage") == 0) return "sampling";
  if (strcmp(method, "elicitation/create") == 0) return "elicitation";
  if (strcmp(method, "roots/list") == 0) return "roots";
  return NULL;
}

/* Can c's handler send method to the client? 0 if so; else pushes nil,
 * why, "unsupported" and returns 3. A 2026-07-28 task asks through its
 * inputRequests, which carry sampling, elicitation and roots requests only. */
static int cannot_ask(lua_State *L, mcp_call *c, const char *method) {
  const char *cap = needed_capability(method);
  if (c->session->rev2026 && !mcp_task_takes_input(c))    /* no requests to the client (MRTR instead) */
    return mcp_push_fail(L, "unsupported", "%s cannot be sent to a 2026-07-28 client from this request",
                         method);
  if (c->session->rev2026 && cap == NULL)
    return mcp_push_fail(L, "unsupported", "a task can ask the client for sampling/createMessage, "
                         "elicitation/create or roots/list, not %s", method);
  if (cap != NULL && json_object_get(c->session->client_capabilities, cap) == NULL)
    return mcp_push_fail(L, "unsupported", "the client does not offer %s (no %s capability)", cap, cap);
  return 0;
}

/* request(method [, params [, timeout [, max_total]]]): a request to the
 * client; yields until the answer. Returns result, or nil, message [, error].
 * A 2026-07-28 task's request becomes one of its inputRequests. */
static int l_request(lua_State *L) {
  const char *method;
  double timeout, max_total;
  mcp_call *c;
  int n;
  /* Reached through ctx:request (lua/mcp/init.lua): mistakes name the plugin's line. */
  if (lua_type(L, 1) != LUA_TSTRING)
    return mcp_raise(L, "bad argument #1 to 'request' (string expected, got %s)", luaL_typename(L, 1));
  if (!lua_isnoneornil(L, 2) && !lua_istable(L, 2))
    return mcp_raise(L, "bad argument #2 to 'request' (table expected, got %s)", luaL_typename(L, 2));
  for (int i = 3; i <= 4; i++)
    if (!lua_isnoneornil(L, i) && !lua_isnumber(L, i))
      return mcp_raise(L, "request: opts.%s must be a number of seconds", i == 3 ? "timeout" : "max_total");
  method = lua_tostring(L, 1);
  timeout = luaL_optnumber(L, 3, mcp_cfg.request_timeout);
  max_total = luaL_optnumber(L, 4, timeout * 10);
  if (timeout <= 0) return mcp_raise(L, "request: opts.timeout must be > 0");
  c = mcp_op_caller(L, "request");
  if ((n = cannot_ask(L, c, method)) != 0) return n;
  lua_settop(L, 2);
  if (mcp_task_takes_input(c)) {
    /* stack: method params -> method params {{method = , params = }} */
    lua_createtable(L, 1, 0);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "method");
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, "params");
    lua_rawseti(L, -2, 1);
    return mcp_task_input_wait(L, c, 3, timeout, 1);
  }
  return mcp_call_request(L, c, method, 2, timeout, max_total < timeout ? timeout : max_total);
}

/* request_all(list [, timeout]): the requests {method =, params =} of a
 * 2026-07-28 task's handler, outstanding at once as its inputRequests;
 * yields until all are answered: the results in order, or nil, message.
 * false for any other call (the caller sends them one after another). */
static int l_request_all(lua_State *L) {
  double timeout = luaL_optnumber(L, 2, mcp_cfg.request_timeout);
  lua_Integer n;
  mcp_call *c;
  int r;
  luaL_checktype(L, 1, LUA_TTABLE);
  if (timeout <= 0) return luaL_argerror(L, 2, "timeout must be > 0");
  c = mcp_op_caller(L, "request_all");
  if (!mcp_task_takes_input(c)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  n = (lua_Integer)lua_rawlen(L, 1);
  if (n == 0) return luaL_argerror(L, 1, "no requests");
  for (lua_Integer i = 1; i <= n; i++) {
    /* stack: list timeout request method params */
    if (lua_rawgeti(L, 1, i) != LUA_TTABLE) return mcp_raise(L, "request_all: request %d is not a table", (int)i);
    if (lua_getfield(L, -1, "method") != LUA_TSTRING)
      return mcp_raise(L, "request_all: request %d: method must be a string", (int)i);
    if (lua_getfield(L, -2, "params") != LUA_TNIL && !lua_istable(L, -1))
      return mcp_raise(L, "request_all: request %d: params must be a table", (int)i);
    if ((r = cannot_ask(L, c, lua_tostring(L, -2))) != 0) return r;
    lua_pop(L, 3);
  }
  return mcp_task_input_wait(L, c, 1, timeout, 0);
}
/* The client's declaration of capability name (at initialize, or in this
 * request's _meta); a name with a slash is an extension's
 * (capabilities.extensions[name]). NULL if none. */
static json_t *declared(mcp_call *c, const char *name) {
  json_t *caps = c ? c->session->client_capabilities : NULL;
  if (strchr(name, '/') != NULL) caps = json_object_get(caps, "extensions");
  return json_object_get(caps, name);
}

/* client_supports(name): did the client declare it? */
static int l_client_supports(lua_State *L) {
  lua_pushboolean(L, declared(current(L), luaL_checkstring(L, 1)) != NULL);
  return 1;
}

/* client_extension(name): the settings the client declared for extension
 * name (an object: a table), or nil. */
static int l_client_extension(lua_State *L) {
  json_t *v = declared(current(L), luaL_checkstring(L, 1));
  if (json_is_object(v)) mcp_json_push(L, v);
  else lua_pushnil(L);
  return 1;
}
/* Send the progress notification in b (open after its last field), and
 * move the call's heartbeat on. */
static void progress_send(mcp_call *c, mcp_buf *b) {
  mcp_task_add_meta(b, c);
  mcp_buf_adds(b, "}}");
  mcp_session_send(c->session, NULL, c->stream, b->data, b->len, 0);
  mcp_buf_free(b);
  mcp_call_beat(c);
}

/* progress(p [, total [, message]]), ctx:progress too. */
static int l_progress(lua_State *L) {
  mcp_call *c = current(L);
  int base = mcp_self(L);
  double p = luaL_checknumber(L, base);
  char err[128];
  mcp_buf b = MCP_BUF_INIT;
  if (!lua_isnoneornil(L, base + 1)) luaL_checknumber(L, base + 1);
  if (!lua_isnoneornil(L, base + 2)) luaL_checkstring(L, base + 2);
  if (c == NULL) return mcp_raise(L, "progress: not inside a request");
  if (c->progress_token == NULL || c->req.state != MCP_REQ_RUNNING) return 0;
  if (!isfinite(p) || (!lua_isnoneornil(L, base + 1) && !isfinite(lua_tonumber(L, base + 1)))) {
    mcp_debug("request %.64s: progress dropped (not a finite number)", c->req.key);    /* no JSON for it */
    return 0;
  }
  if (p <= c->last_progress) {            /* the spec wants it to increase: drop, never fail */
    mcp_debug("request %.64s: progress %g dropped (not above %g)", c->req.key, p, c->last_progress);
    return 0;
  }
  c->last_progress = p;
  if (mcp_live_sink) mcp_live_progress(c);
  mcp_rpc_notification_open(&b, "notifications/progress");
  mcp_buf_adds(&b, "{\"progressToken\":");
  mcp_buf_add(&b, c->progress_token, strlen(c->progress_token));
  mcp_buf_adds(&b, ",\"progress\":");
  mcp_json_encode(L, base, &b, err, sizeof err);
  if (!lua_isnoneornil(L, base + 1)) {
    mcp_buf_adds(&b, ",\"total\":");
    mcp_json_encode(L, base + 1, &b, err, sizeof err);
  }
  if (!lua_isnoneornil(L, base + 2)) {
    mcp_buf_adds(&b, ",\"message\":");
    mcp_json_encode(L, base + 2, &b, err, sizeof err);
  }
  progress_send(c, &b);
  return 0;
}

/* wants_progress(): the calling request asked for progress (it has a
 * progressToken), so relaying an upstream's progress is worth asking for. */
static int l_wants_progress(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && c->progress_token != NULL);
  return 1;
}

/* A tool's heartbeat (sched.c): its last progress again, 0 when none. */
static void heartbeat(mcp_call *c) {
  mcp_buf b = MCP_BUF_INIT;
  mcp_rpc_notification_open(&b, "notifications/progress");
  mcp_buf_adds(&b, "{\"progressToken\":");
  mcp_buf_add(&b, c->progress_token, strlen(c->progress_token));
  mcp_buf_printf(&b, ",\"progress\":%.17g", c->last_progress > -1e308 ? c->last_progress : 0.0);
  mcp_debug("request %.64s: progress heartbeat", c->req.key);
  progress_send(c, &b);
}

/* log(level, data): notifications/message to the request's session (the
 * logger is the tool's plugin), or to every initialized session outside a
 * request. */
/* The log line being built: kept between lines (no allocation per line),
 * trimmed when a big one grew it. The transports copy what they are sent. */
static mcp_buf log_line;

static int l_log(lua_State *L) {
  int base = mcp_self(L);                  /* ctx:log(level, data) too */
  size_t nlen;
  const char *name = luaL_checklstring(L, base, &nlen);
  int level = mcp_log_level_parse(name);
  mcp_call *c = current(L);
  char err[128];
  mcp_buf *b = &log_line;
  if (level < 0) return luaL_argerror(L, base, "unknown log level");
  luaL_checkany(L, base + 1);
  /* Nothing after a request's response, nor after its terminal state; the
   * <close> variables of an abort run before the terminal answer and may log. */
  if (c != NULL && ((c->responded && !c->tasked) || (mcp_req_state_terminal(c->req.state) && !c->closing))) return 0;
  b->len = 0;
  mcp_buf_adds(b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"");
  mcp_buf_add(b, name, nlen);              /* a level's name: plain ASCII */
  mcp_buf_adds(b, "\",");
  if (c != NULL && c->logger != NULL) {
    mcp_buf_adds(b, "\"logger\":");
    mcp_json_add_string(b, c->logger, strlen(c->logger));
    mcp_buf_addc(b, ',');
  }
  mcp_buf_adds(b, "\"data\":");
  if (lua_type(L, base + 1) == LUA_TSTRING) {       /* the usual data: no encoder to set up */
    const char *data = lua_tolstring(L, base + 1, &nlen);
    mcp_json_add_string(b, data, nlen);
  } else if (mcp_json_encode(L, base + 1, b, err, sizeof err) != 0) {
    return luaL_argerror(L, base + 1, err);
  }
  mcp_task_add_meta(b, c);
  mcp_buf_adds(b, "}}");
  if (c != NULL) {
    if (level >= (int)c->session->log_level)
      mcp_session_send(c->session, NULL, c->stream, b->data, b->len, 0);
  } else {
    for (mcp_session *s = mcp_sessions; s; s = s->next)
      if (s->revision >= 0 && level >= (int)s->log_level)
        mcp_session_send(s, NULL, NULL, b->data, b->len, 0);
  }
  if (b->cap > 65536) mcp_buf_free(b);
  return 0;
}

/* Deliver the notification in b to the subscriptions/listen streams whose
 * filter wants it (rev2026.c). */
static int listen_notify(const char *method, const mcp_buf *b) {
  json_t *msg = mcp_json_parse(b->data, b->len, NULL, 0);
  int n = mcp_rev2026_listen_notify(method, json_object_get(msg, "params"));
  json_decref(msg);
  return n;
}

/* notify_listeners(method [, params]): a notification to the 2026-07-28
 * subscriptions/listen streams whose filter wants it (resources/updated for
 * their resourceSubscriptions). Returns how many got it. */
static int l_notify_listeners(lua_State *L) {
  const char *method = luaL_checkstring(L, 1);
  char err[128];
  mcp_buf b = MCP_BUF_INIT;
  int n;
  mcp_rpc_notification_open(&b, method);
  if (lua_isnoneornil(L, 2)) mcp_buf_adds(&b, "{}");
  else if (mcp_json_encode(L, 2, &b, err, sizeof err) != 0) {
    mcp_buf_free(&b);
    return luaL_argerror(L, 2, err);
  }
  mcp_rpc_close(&b);
  n = listen_notify(method, &b);
  mcp_buf_free(&b);
  lua_pushinteger(L, n);
  return 1;
}

/* notify(session, method [, params]): a notification to one session (by
 * id), or to every initialized session when session is nil. Returns how
 * many sessions it went to. */
static int l_notify(lua_State *L) {
  const char *method = luaL_checkstring(L, 2);
  char err[128];
  int n = 0;
  mcp_buf b = MCP_BUF_INIT;
  mcp_session *only = NULL;
  if (!lua_isnil(L, 1)) {
    only = mcp_session_find((long long)luaL_checkinteger(L, 1));
    if (only == NULL) return lua_pushinteger(L, 0), 1;
  }
  mcp_rpc_notification_open(&b, method);
  if (lua_isnoneornil(L, 3)) mcp_buf_adds(&b, "{}");
  else if (mcp_json_encode(L, 3, &b, err, sizeof err) != 0) {
    mcp_buf_free(&b);
    return luaL_argerror(L, 3, err);
  }
  mcp_rpc_close(&b);
  for (mcp_session *s = mcp_sessions; s; s = s->next)
    if ((only == NULL || s == only) && s->revision >= 0) {
      mcp_session_send(s, NULL, NULL, b.data, b.len, 0);
      n++;
    }
  if (only == NULL) n += listen_notify(method, &b);   /* and 2026-07-28 listeners */
  mcp_buf_free(&b);
  lua_pushinteger(L, n);
  return 1;
}
static const luaL_Reg client_funcs[] = {
  {"progress", l_progress},
  {"wants_progress", l_wants_progress},
  {"log", l_log},
  {"notify", l_notify},
  {"notify_listeners", l_notify_listeners},
  {"request", l_request},
  {"client_supports", l_client_supports},
  {"client_extension", l_client_extension},
  {"request_all", l_request_all},
  {NULL, NULL}
};

void mcp__lmcp_client_open(lua_State *L) {
  luaL_setfuncs(L, client_funcs, 0);
  mcp_sched_heartbeat_cb = heartbeat;
}
