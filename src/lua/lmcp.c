/* mcp.core: the C half of the Lua API. The friendly layer (lua/mcp/) wraps it. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lualib.h>
#include <uv.h>

#include "config.h"
#include "crypto.h"
#include "fail.h"
#include "fsread.h"
#include "httpc.h"
#include "identity.h"
#include "json.h"
#include "outgoing.h"
#include "rev2026.h"
#include "libdir.h"
#include "limit.h"
#include "lmcp.h"
#include "log.h"
#include "metrics.h"
#include "rpc.h"
#include "schema.h"
#include "seal.h"
#include "op.h"
#include "proc.h"
#include "sched.h"
#include "session.h"
#include "spawn.h"
#include "sqlite.h"
#include "task.h"

static mcp_call *current(lua_State *L) { return mcp_call_current(L); }

static int l_cancelled(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && c->signalled);
  return 1;
}

/* in_request(): is a request's handler running (a wait is possible)? */
static int l_in_request(lua_State *L) {
  lua_pushboolean(L, current(L) != NULL);
  return 1;
}

static int l_reason(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->req.reason == NULL) return 0;
  lua_pushstring(L, c->req.reason);
  return 1;
}

/* ctx.tool and ctx.session, read from the call rather than kept in every
 * ctx table (a waiting call's ctx is one of its larger objects). */
static int l_tool(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->tool == NULL) return 0;
  lua_pushstring(L, c->tool);
  return 1;
}

static int l_session(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL) return 0;
  lua_pushinteger(L, c->sid);
  return 1;
}

/* ctx.auth: {subject=, client_id=, scopes={...}, claims={...}} of the
 * call's request, or nothing without authorization. */
static int l_auth(lua_State *L) {
  mcp_call *c = current(L);
  const mcp_identity *id = c != NULL && c->session != NULL ? c->session->auth : NULL;
  if (id == NULL) return 0;
  lua_createtable(L, 0, 4);
  lua_pushstring(L, id->subject);
  lua_setfield(L, -2, "subject");
  if (id->client_id != NULL) {
    lua_pushstring(L, id->client_id);
    lua_setfield(L, -2, "client_id");
  }
  lua_createtable(L, id->nscopes, 0);
  for (int i = 0; i < id->nscopes; i++) {
    lua_pushstring(L, id->scopes[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "scopes");
  mcp_json_push(L, id->claims);
  lua_setfield(L, -2, "claims");
  return 1;
}

static int l_now(lua_State *L) {
  lua_pushnumber(L, (double)mcp_clock_ns() / 1e9);
  return 1;
}

static int l_deadline(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->deadline_ns == 0) return 0;
  lua_pushnumber(L, (double)c->deadline_ns / 1e9);
  return 1;
}

/* spawn(opts), ctx:spawn(opts): see spawn.h. */
static int l_spawn(lua_State *L) {
  if (lua_istable(L, 1) && lua_istable(L, 2)) lua_remove(L, 1);     /* the ctx */
  else if (lua_type(L, 1) != LUA_TSTRING) luaL_checktype(L, 1, LUA_TTABLE);
  return mcp_spawn_start(L, mcp_op_caller(L, "spawn"));
}

/* read_file(path [, opts]), ctx:read_file too: opts.max_bytes (default 64 MiB). */
static int l_read_file(lua_State *L) {
  int base = mcp_self(L);
  const char *path = luaL_checkstring(L, base);
  lua_Integer max = (lua_Integer)MCP_FSREAD_MAX_BYTES;
  if (!lua_isnoneornil(L, base + 1)) {
    luaL_checktype(L, base + 1, LUA_TTABLE);
    if (lua_getfield(L, base + 1, "max_bytes") != LUA_TNIL) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
        return luaL_argerror(L, base + 1, "max_bytes must be an integer >= 0");
      max = lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
  }
  return mcp_fsread_file(L, mcp_op_caller(L, "read_file"), path, (size_t)max);
}

static int l_list_dir(lua_State *L) {
  const char *path = luaL_checkstring(L, mcp_self(L));
  return mcp_fsread_dir(L, mcp_op_caller(L, "list_dir"), path);
}

static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, mcp_self(L));
  return mcp_fsread_realpath(L, mcp_op_caller(L, "realpath"), path);
}

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
  if (c->session->modern && !mcp_task_takes_input(c))    /* no requests to the client (MRTR instead) */
    return mcp_push_fail(L, "unsupported", "%s cannot be sent to a 2026-07-28 client from this request",
                         method);
  if (c->session->modern && cap == NULL)
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

/* modern(): is the current request of revision 2026-07-28 (stateless)? */
static int l_modern(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && c->session->modern);
  return 1;
}

/* task_input(): does the running call take client input as a task of the
 * tasks extension (inputRequests answered by tasks/update)? */
static int l_task_input(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && mcp_task_takes_input(c));
  return 1;
}

/* client_supports(name): did the client declare capability name (at
 * initialize, or in this request's _meta)? */
static int l_client_supports(lua_State *L) {
  const char *cap = luaL_checkstring(L, 1);
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && json_object_get(c->session->client_capabilities, cap) != NULL);
  return 1;
}

/* finish(...): end the request now, its arguments being what the dispatcher
 * returns (a result, or nil, code, message [, data]: server.lua's protocol
 * with the core, not a handler's). The handler does not
 * run on: the scheduler resets its coroutine, running its <close> variables.
 * A yield, so that no pcall of the handler can catch it. */
static int l_finish(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL) return mcp_raise(L, "finish: not inside a request");
  if (L != c->co) return mcp_raise(L, "finish: call it from the handler's coroutine, not one it created");
  if (!lua_isyieldable(L) || c->closing) return mcp_raise(L, "finish: cannot yield here");
  c->finishing = 1;
  /* only a running call's return is sent as given; a timed-out one's is the timeout's */
  if (lua_type(L, 1) == LUA_TTABLE && c->req.state == MCP_REQ_RUNNING) {
    lua_getfield(L, 1, "resultType");
    c->typed = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "input_required") == 0;
    lua_pop(L, 1);
  }
  return lua_yield(L, lua_gettop(L));
}

/* seal(payload): a token the client hands back unchanged (seal.h). */
static int l_seal(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  mcp_buf b = MCP_BUF_INIT;
  mcp_seal(&b, s, n);
  lua_pushlstring(L, b.data, b.len);
  mcp_buf_free(&b);
  return 1;
}

/* unseal(token): its payload, or nil when it is not one of ours or was changed. */
static int l_unseal(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  mcp_buf b = MCP_BUF_INIT;
  if (mcp_seal_open(&b, s, n) != 0) {
    mcp_buf_free(&b);
    return 0;
  }
  lua_pushlstring(L, b.data ? b.data : "", b.len);
  mcp_buf_free(&b);
  return 1;
}

/* sha256(s): the digest, in hex. */
static int l_sha256(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  uint8_t d[MCP_SHA256_LEN];
  char hex[2 * MCP_SHA256_LEN];
  mcp_sha256(s, n, d);
  for (int i = 0; i < MCP_SHA256_LEN; i++) {
    hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
    hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
  }
  lua_pushlstring(L, hex, sizeof hex);
  return 1;
}

/* wall(): seconds since the epoch, moved with the test clock. */
static int l_wall(lua_State *L) {
  int64_t moved = (int64_t)(mcp_clock_ns() - uv_hrtime());    /* the test clock's advance */
  lua_pushnumber(L, (double)time(NULL) + (double)(moved > 0 ? moved : 0) / 1e9);
  return 1;
}

/* heap(): bytes malloc has handed out and not taken back (glibc), for
 * specs that look for leaks; nil where it cannot tell. */
static int l_heap(lua_State *L) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2();
  if (mi.uordblks + mi.hblkhd == 0) return 0;    /* a sanitizer's allocator */
  lua_pushinteger(L, (lua_Integer)(mi.uordblks + mi.hblkhd));
  return 1;
#else
  (void)L;
  return 0;
#endif
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
  if (p <= c->last_progress) {            /* the spec wants it to increase: drop, never fail */
    mcp_debug("request %.64s: progress %g dropped (not above %g)", c->req.key, p, c->last_progress);
    return 0;
  }
  c->last_progress = p;
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
static int l_log(lua_State *L) {
  int base = mcp_self(L);                  /* ctx:log(level, data) too */
  const char *name = luaL_checkstring(L, base);
  int level = mcp_log_level_parse(name);
  mcp_call *c = current(L);
  char err[128];
  mcp_buf b = MCP_BUF_INIT;
  if (level < 0) return luaL_argerror(L, base, "unknown log level");
  luaL_checkany(L, base + 1);
  /* Nothing after a request's response, nor after its terminal state; the
   * <close> variables of an abort run before the terminal answer and may log. */
  if (c != NULL && ((c->responded && !c->tasked) || (mcp_req_state_terminal(c->req.state) && !c->closing))) return 0;
  mcp_rpc_notification_open(&b, "notifications/message");
  mcp_buf_printf(&b, "{\"level\":\"%s\",", name);
  if (c != NULL && c->logger != NULL) {
    mcp_buf_adds(&b, "\"logger\":");
    mcp_json_add_string(&b, c->logger, strlen(c->logger));
    mcp_buf_addc(&b, ',');
  }
  mcp_buf_adds(&b, "\"data\":");
  if (mcp_json_encode(L, base + 1, &b, err, sizeof err) != 0) {
    mcp_buf_free(&b);
    return luaL_argerror(L, base + 1, err);
  }
  mcp_task_add_meta(&b, c);
  mcp_buf_adds(&b, "}}");
  if (c != NULL) {
    if (level >= (int)c->session->log_level)
      mcp_session_send(c->session, NULL, c->stream, b.data, b.len, 0);
  } else {
    for (mcp_session *s = mcp_sessions; s; s = s->next)
      if (s->revision >= 0 && level >= (int)s->log_level)
        mcp_session_send(s, NULL, NULL, b.data, b.len, 0);
  }
  mcp_buf_free(&b);
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

/* on_cancel(fn): fn(reason) runs (on the main thread, protected) at the cancel. */
static int l_on_cancel(lua_State *L) {
  mcp_call *c = current(L);
  int base = mcp_self(L);                  /* ctx:on_cancel(fn) too */
  luaL_checktype(L, base, LUA_TFUNCTION);
  if (c == NULL) return mcp_raise(L, "on_cancel: not inside a request");
  if (c->oncancel_ref == LUA_NOREF) {
    lua_newtable(L);
    c->oncancel_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->oncancel_ref);
  lua_pushvalue(L, base);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  return 0;
}

/* token(): the running call's token, a userdata that coroutines created by
 * the handler are mapped to (see mcp_call_current). nil outside a call. */
/* on_main(fn, ...): fn(...) on the main thread, for the running call,
 * and its results. A call's setup (argument checks, its ctx) goes deeper
 * than its handler's waits; run on the coroutine it would grow the stack
 * that every waiting call keeps (Lua doubles a stack past its first 40
 * slots and never shrinks it while in use). fn must not yield; its error
 * is raised again here. */
static int l_on_main(lua_State *co) {
  mcp_call *c = current(co);
  lua_State *L = mcp_sched_lua();
  int n = lua_gettop(co), base, status, nres;
  luaL_checktype(co, 1, LUA_TFUNCTION);
  if (c == NULL || co == L) {
    lua_call(co, n - 1, LUA_MULTRET);
    return lua_gettop(co);
  }
  base = lua_gettop(L);
  lua_xmove(co, L, n);                         /* main: fn args... */
  status = mcp_call_pcall(c, n - 1, LUA_MULTRET);
  nres = lua_gettop(L) - base;
  if (!lua_checkstack(co, nres)) luaL_error(co, "on_main: too many results");
  lua_xmove(L, co, nres);                      /* co: results... (or the error) */
  if (status != LUA_OK) return lua_error(co);
  return nres;
}

/* watch(co): a coroutine the handler created keeps the count hook. */
static int l_watch(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  mcp_call_watch(lua_tothread(L, 1));
  return 0;
}

static int l_token(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL) return 0;
  mcp_call_token(L, c);
  return 1;
}

/* close_connection(): over HTTP, close the connection under this request's
 * SSE stream without ending it; the client resumes with Last-Event-ID.
 * Returns true when there was one to close. */
static int l_close_connection(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->session->detach == NULL || c->stream == NULL || c->responded) {
    lua_pushboolean(L, 0);
    return 1;
  }
  c->session->detach(c->session, c->stream);
  lua_pushboolean(L, 1);
  return 1;
}

/* raise(message): an error naming the plugin's line (fail.c's mcp_raise),
 * for the Lua side of the library's argument checks. */
static int l_raise(lua_State *L) {
  return mcp_raise(L, "%s", luaL_checkstring(L, 1));
}

/* set_logger(name): log messages of the running call name this plugin. */
static int l_set_logger(lua_State *L) {
  mcp_call *c = current(L);
  const char *name = luaL_checkstring(L, 1);
  if (c != NULL) c->logger = mcp_policy_intern(name);
  return 0;
}

static int l_log_stderr(lua_State *L) {
  int level = mcp_log_level_parse(luaL_checkstring(L, 1));
  const char *msg = luaL_checkstring(L, 2);
  const char *logger = luaL_optstring(L, 3, NULL);
  if (level < 0) return luaL_argerror(L, 1, "unknown log level");
  mcp_log_as((mcp_log_level)level, logger, "%s", msg);
  return 0;
}

static int l_set_policy(lua_State *L) {
  const char *tool = luaL_checkstring(L, 1);
  int mode = mcp_cancel_mode_parse(luaL_checkstring(L, 2));
  double timeout = luaL_checknumber(L, 3), grace = luaL_checknumber(L, 4);
  const char *logger = luaL_optstring(L, 5, NULL);
  static const char *const tasks[] = { "forbidden", "optional", "required", NULL };
  int task = luaL_checkoption(L, 6, "forbidden", tasks);
  if (mode < 0) return luaL_argerror(L, 2, "cancel must be \"cooperative\", \"abort\" or \"ignore\"");
  if (timeout < 0) return luaL_argerror(L, 3, "timeout must be >= 0");
  if (grace < 0) return luaL_argerror(L, 4, "grace must be >= 0");
  mcp_policy_set(tool, mode, timeout, grace, logger, task);
  return 0;
}

/* set_limits(tool, max_concurrent, queue, rate or nil, heartbeat) */
static int l_set_limits(lua_State *L) {
  const char *tool = luaL_checkstring(L, 1);
  lua_Integer max = luaL_checkinteger(L, 2), queue = luaL_checkinteger(L, 3);
  const char *rate = luaL_optstring(L, 4, NULL);
  double heartbeat = luaL_checknumber(L, 5);
  if (max < 0 || max > 1000000) return luaL_argerror(L, 2, "max_concurrent must be an integer >= 0");
  if (queue < 0 || queue > 1000000) return luaL_argerror(L, 3, "queue must be an integer >= 0");
  if (heartbeat < 0) return luaL_argerror(L, 5, "heartbeat must be >= 0");
  if (mcp_limit_set(tool, (int)max, (int)queue, rate, heartbeat) != 0)
    return luaL_argerror(L, 4, "rate must be \"R/s\" or \"R/m\" with R > 0");
  return 0;
}

/* count(family, outcome [, n]): a counter of /metrics (metrics.c), by outcome. */
static int l_count(lua_State *L) {
  const char *family = luaL_checkstring(L, 1);
  mcp_buf labels = MCP_BUF_INIT;
  int r;
  if (!lua_isnoneornil(L, 2)) mcp_metric_label(&labels, 0, "outcome", luaL_checkstring(L, 2));
  mcp_buf_addc(&labels, '\0');
  r = mcp_counter_add(family, labels.data, luaL_optnumber(L, 3, 1));
  mcp_buf_free(&labels);
  if (r != 0) return luaL_argerror(L, 1, "no such counter");
  return 0;
}

static int l_clear_policies(lua_State *L) {
  (void)L;
  mcp_policy_clear();
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* listdir(path): sorted names of the regular *.lua files in path, or nil, err. */
static int l_listdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  uv_dirent_t ent;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int r = uv_fs_scandir(NULL, &req, path, 0, NULL);
  if (r < 0) {
    uv_fs_req_cleanup(&req);
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, uv_strerror(r));
    return 2;
  }
  while (uv_fs_scandir_next(&req, &ent) != UV_EOF) {
    size_t len = strlen(ent.name);
    if (len < 5 || strcmp(ent.name + len - 4, ".lua") != 0) continue;
    if (ent.type != UV_DIRENT_FILE && ent.type != UV_DIRENT_LINK && ent.type != UV_DIRENT_UNKNOWN)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      names = realloc(names, cap * sizeof *names);
      if (names == NULL) abort();
    }
    names[n++] = strdup(ent.name);
  }
  uv_fs_req_cleanup(&req);
  if (n > 0) qsort(names, n, sizeof *names, name_cmp);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    free(names[i]);
  }
  free(names);
  return 1;
}

typedef struct {
  mcp_buf b;
  char err[256];
  int failed;
} encoding;

/* stack: value encoding -> text (or nothing when it cannot be encoded) */
static int encode_to(lua_State *L) {
  encoding *e = lua_touserdata(L, 2);
  if (mcp_json_encode(L, 1, &e->b, e->err, sizeof e->err) != 0) {
    e->failed = 1;
    return 0;
  }
  lua_pushlstring(L, e->b.data, e->b.len);
  return 1;
}

/* encode(value): JSON text, or nil, err. Encoding allocates in Lua, which
 * may raise (out of memory): protected, so that the buffer is freed first. */
static int l_encode(lua_State *L) {
  encoding e = { MCP_BUF_INIT, "", 0 };
  int status;
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  lua_pushcfunction(L, encode_to);
  lua_pushvalue(L, 1);
  lua_pushlightuserdata(L, &e);
  status = lua_pcall(L, 2, 1, 0);
  mcp_buf_free(&e.b);
  if (status != LUA_OK) return lua_error(L);
  if (e.failed) {
    lua_pushnil(L);
    lua_pushstring(L, e.err);
    return 2;
  }
  return 1;
}

/* decode(text): a Lua value, or nil, err. */
static int l_decode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char err[256];
  if (mcp_json_decode(L, s, n, err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  return 1;
}

static const luaL_Reg core_funcs[] = {
  {"cancelled", l_cancelled},
  {"in_request", l_in_request},
  {"reason", l_reason},
  {"tool", l_tool},
  {"session", l_session},
  {"auth", l_auth},
  {"now", l_now},
  {"deadline", l_deadline},
  {"progress", l_progress},
  {"log", l_log},
  {"on_cancel", l_on_cancel},
  {"notify", l_notify},
  {"notify_listeners", l_notify_listeners},
  {"request", l_request},
  {"modern", l_modern},
  {"task_input", l_task_input},
  {"client_supports", l_client_supports},
  {"finish", l_finish},
  {"seal", l_seal},
  {"unseal", l_unseal},
  {"sha256", l_sha256},
  {"wall", l_wall},
  {"heap", l_heap},
  {"request_all", l_request_all},
  {"spawn", l_spawn},
  {"task_create", mcp_task_l_create},
  {"task_result", mcp_task_l_result},
  {"read_file", l_read_file},
  {"list_dir", l_list_dir},
  {"realpath", l_realpath},
  {"token", l_token},
  {"watch", l_watch},
  {"on_main", l_on_main},
  {"log_stderr", l_log_stderr},
  {"set_logger", l_set_logger},
  {"close_connection", l_close_connection},
  {"raise", l_raise},
  {"set_policy", l_set_policy},
  {"set_limits", l_set_limits},
  {"count", l_count},
  {"clear_policies", l_clear_policies},
  {"listdir", l_listdir},
  {"encode", l_encode},
  {"decode", l_decode},
  {NULL, NULL}
};

/* The counters Lua code adds to (core.count), each with its outcomes at 0. */
static void counters_open(void) {
  static const struct { const char *name, *help, *outcomes[5]; } fams[] = {
    {"luamcp_plugin_reloads_total", "Plugin files loaded again by hot reload (outcome ok or failed).",
     {"ok", "failed"}},
    {"luamcp_outbound_http_requests_total", "Handlers' HTTP requests (ctx:http), by outcome.",
     {"ok", "error", "cancelled"}},
    {"luamcp_upstream_requests_total", "Requests to upstream MCP servers (mcp.connect, mounts), by outcome.",
     {"ok", "error", "timeout", "cancelled"}},
  };
  for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
    mcp_counter_family(fams[i].name, fams[i].help);
    for (int k = 0; fams[i].outcomes[k]; k++) {
      char labels[64];
      snprintf(labels, sizeof labels, "outcome=\"%s\"", fams[i].outcomes[k]);
      mcp_counter_add(fams[i].name, labels, 0);
    }
  }
}

/* The standard libraries, mcp.core, and the Lua library (libdir.c) on
 * package.path. Raises on error: call it protected. */
void mcp_lua_open(lua_State *L) {
  luaL_openlibs(L);
  luaL_requiref(L, "mcp.core", luaopen_mcp_core, 0);
  lua_pop(L, 1);
  mcp_lua_path(L);
}

int luaopen_mcp_core(lua_State *L) {
  mcp_json_open(L);
  luaL_newlib(L, core_funcs);
  mcp_op_open(L);
  mcp_sqlite_open_lib(L);
  mcp_proc_open_lib(L);
  mcp_httpc_open_lib(L);
  mcp_schema_open_lib(L);
  luaL_getmetatable(L, MCP_JSON_ARRAY_MT);
  lua_setfield(L, -2, "array_mt");
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  mcp_call_tokens_open(L);
  lua_setfield(L, -2, "nested");     /* weak map: coroutine -> token */
  mcp_sched_heartbeat_cb = heartbeat;
  counters_open();
  lua_createtable(L, 0, 5);
  lua_pushnumber(L, mcp_cfg.timeout);
  lua_setfield(L, -2, "timeout");
  lua_pushnumber(L, mcp_cfg.grace);
  lua_setfield(L, -2, "grace");
  lua_pushinteger(L, mcp_cfg.page_size);
  lua_setfield(L, -2, "page_size");
  lua_pushnumber(L, mcp_cfg.request_timeout);
  lua_setfield(L, -2, "request_timeout");
  lua_pushnumber(L, mcp_cfg.state_ttl);
  lua_setfield(L, -2, "state_ttl");
  lua_setfield(L, -2, "config");
  lua_pushliteral(L, LUAMCP_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
