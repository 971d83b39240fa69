/* The spans of what handlers do (tracing on, trace.h): the attributes of
 * an HTTP request's CLIENT span and the traceparent naming it; a plugin's
 * own spans (ctx:span) and the running call's trace context in Lua
 * (mcp.core's span_begin, traceparent and traced). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>

#include "buf.h"
#include "op.h"
#include "sched.h"
#include "semconv.h"
#include "spans.h"
#include "trace.h"

static inline mcp_call *current(lua_State *L) { return mcp_call_current(L); }

static int has_header(const struct curl_slist *h, const char *name) {
  size_t n = strlen(name);
  for (; h; h = h->next)
    if (strncasecmp(h->data, name, n) == 0 && h->data[n] == ':') return 1;
  return 0;
}

/* HTTP client semantic conventions: the method, the URL without
 * credentials, query or fragment, the server's address and port. */
static void http_attrs(mcp_span *s, const char *url) {
  char *host = NULL, *port = NULL, *scheme = NULL, *path = NULL;
  CURLU *u = curl_url();
  if (u == NULL) return;
  if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK) {
    mcp_buf full = MCP_BUF_INIT;
    mcp_buf_printf(&full, "%s://%s:%s%s", scheme, host, port, path);
    mcp_attr_strn(&s->attrs, "url.full", full.data, full.len);
    mcp_attr_str(&s->attrs, "server.address", host);
    mcp_attr_int(&s->attrs, "server.port", strtol(port, NULL, 10));
    mcp_buf_free(&full);
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_free(path);
  curl_url_cleanup(u);
}

struct curl_slist *mcp_span_http_begin(mcp_span *s, const char *url, struct curl_slist *headers) {
  mcp_span_ctx ctx;
  char line[MCP_TRACESTATE_MAX + 16];
  mcp_span_context(s, &ctx);
  if (!has_header(headers, "traceparent")) {
    memcpy(line, "traceparent: ", 13);
    mcp_traceparent_format(&ctx, line + 13);
    headers = curl_slist_append(headers, line);
    if (ctx.tracestate[0] && !has_header(headers, "tracestate")) {
      snprintf(line, sizeof line, "tracestate: %s", ctx.tracestate);
      headers = curl_slist_append(headers, line);
    }
  }
  if (s->sampled) {
    mcp_attr_str(&s->attrs, "http.request.method", s->name);
    http_attrs(s, url);
  }
  return headers;
}

void mcp_span_http_end(mcp_span *s, long status, const char *failure, const char *message) {
  char code[24];                        /* a long's digits */
  if (!s->sampled) return;
  if (status > 0) mcp_attr_int(&s->attrs, "http.response.status_code", status);
  if (failure) {
    mcp_attr_str(&s->attrs, "error.type", failure);
    mcp_span_set_status(s, MCP_STATUS_ERROR, message && *message ? message : NULL);
  } else if (status >= 400) {
    snprintf(code, sizeof code, "%ld", status);
    mcp_attr_str(&s->attrs, "error.type", code);
    mcp_span_set_status(s, MCP_STATUS_ERROR, NULL);
  }
}

#define SPAN_MT "mcp.span"

/* A plugin span's handle: to-be-closed in ctx:span, and collected. */
typedef struct {
  mcp_span *s;                 /* NULL once ended */
} span_handle;

/* attrs (a table at idx) onto a: string keys; strings, numbers, booleans. */
static void set_attrs(lua_State *L, int idx, mcp_attrs *a) {
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {                 /* stack: ... key value */
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (k == NULL) luaL_error(L, "span: attribute names are strings");
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
      size_t n;
      const char *v = lua_tolstring(L, -1, &n);
      mcp_attr_strn(a, k, v, n);
      break;
    }
    case LUA_TBOOLEAN: mcp_attr_bool(a, k, lua_toboolean(L, -1)); break;
    case LUA_TNUMBER:
      if (lua_isinteger(L, -1)) mcp_attr_int(a, k, (long long)lua_tointeger(L, -1));
      else mcp_attr_double(a, k, lua_tonumber(L, -1));
      break;
    default: luaL_error(L, "span: attribute %s is a %s (strings, numbers, booleans)", k, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
}

void mcp_span_sql(mcp_op *op, const char *sql, size_t len, const char *path) {
  char verb[24];
  size_t i = 0, n = 0;
  mcp_span *s;
  while (i < len && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n' || sql[i] == '\r')) i++;
  while (i < len && n < sizeof verb - 1 && ((sql[i] | 0x20) >= 'a' && (sql[i] | 0x20) <= 'z'))
    verb[n++] = (char)(sql[i++] & ~0x20);          /* the first keyword, upper case */
  verb[n] = '\0';
  if ((s = mcp_op_span(op, MCP_SPAN_CLIENT, n ? verb : "sqlite")) == NULL || !s->sampled) return;
  mcp_attr_str(&s->attrs, "db.system.name", "sqlite");
  if (n) mcp_attr_str(&s->attrs, "db.operation.name", verb);
  if (path) mcp_attr_str(&s->attrs, "db.namespace", path);
  if (mcp_trace_db_statement) mcp_attr_strn(&s->attrs, "db.query.text", sql, len);
}

void mcp_span_sql_end(mcp_op *op, int rc) {
  char code[16];
  mcp_span *s = op->span;
  if (s == NULL || !s->sampled || rc == 0) return;
  snprintf(code, sizeof code, "%d", rc);
  mcp_attr_str(&s->attrs, "db.response.status_code", code);
  mcp_attr_str(&s->attrs, "error.type", code);
  mcp_span_set_status(s, MCP_STATUS_ERROR, NULL);
}

void mcp_span_process(mcp_op *op, const char *name, int pid) {
  mcp_span *s = mcp_op_span(op, MCP_SPAN_CLIENT, name);
  if (s == NULL || !s->sampled) return;
  mcp_attr_str(&s->attrs, "process.executable.name", name);
  if (pid > 0) mcp_attr_int(&s->attrs, "process.pid", pid);
}

void mcp_span_process_end(mcp_op *op, long long code, int signal) {
  mcp_span *s = op->span;
  if (s == NULL || !s->sampled) return;
  mcp_attr_int(&s->attrs, "process.exit.code", code);
  if (code == 0 && signal == 0) return;
  mcp_attr_str(&s->attrs, "error.type", signal ? "signal" : "exit_code");
  mcp_span_set_status(s, MCP_STATUS_ERROR, NULL);
}

/* The span ends; err (at idx, 0: none): the error that left its function. */
static void handle_end(lua_State *L, span_handle *h, int err) {
  mcp_span *s = h->s;
  if (s == NULL) return;
  h->s = NULL;
  if (err && !lua_isnil(L, err) && s->sampled) {
    mcp_attr_str(&s->attrs, "error.type", "error");
    mcp_span_set_status(s, MCP_STATUS_ERROR, lua_type(L, err) == LUA_TSTRING ? lua_tostring(L, err) : NULL);
  }
  mcp_trace_leave(current(L), s);
}

static int l_span_close(lua_State *L) {
  handle_end(L, luaL_checkudata(L, 1, SPAN_MT), lua_gettop(L) >= 2 ? 2 : 0);
  return 0;
}

static int l_span_gc(lua_State *L) {
  span_handle *h = luaL_checkudata(L, 1, SPAN_MT);
  if (h->s) {                                     /* its call is gone: only end it */
    mcp_span *s = h->s;
    h->s = NULL;
    mcp_trace_leave(NULL, s);
  }
  return 0;
}

/* span_begin(name [, attrs [, "client"]]): a handle to close (ctx:span's
 * <close> variable), or nil when the running call has no span (tracing
 * off). The handle is made before the span, so that a raise leaves nothing
 * open. */
static int l_span_begin(lua_State *L) {
  static const char *const kinds[] = { "internal", "client", NULL };
  const char *name = luaL_checkstring(L, 1);
  mcp_call *c = current(L);
  span_handle *h;
  int kind;
  if (!mcp_trace_on || c == NULL || c->span == NULL) return 0;
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  kind = luaL_checkoption(L, 3, "internal", kinds);
  lua_settop(L, 2);
  h = lua_newuserdatauv(L, sizeof *h, 0);         /* stack: name attrs handle */
  h->s = NULL;
  luaL_setmetatable(L, SPAN_MT);
  h->s = mcp_trace_enter(c, kind ? MCP_SPAN_CLIENT : MCP_SPAN_INTERNAL, name);
  if (h->s && h->s->sampled && lua_istable(L, 2)) set_attrs(L, 2, &h->s->attrs);
  return 1;
}

/* traceparent(): the running call's current context as a traceparent (and
 * its tracestate), or nil without one. */
static int l_traceparent(lua_State *L) {
  mcp_call *c = current(L);
  mcp_span_ctx ctx;
  char tp[56];
  if (!mcp_trace_on || c == NULL || c->span == NULL) return 0;
  mcp_span_context(c->span->inner ? c->span->inner : c->span, &ctx);
  mcp_traceparent_format(&ctx, tp);
  lua_pushlstring(L, tp, 55);
  if (ctx.tracestate[0] == '\0') return 1;
  lua_pushstring(L, ctx.tracestate);
  return 2;
}

/* traced(): does the running call have a span (tracing on, sampled or not)? */
static int l_traced(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, mcp_trace_on && c != NULL && c->span != NULL);
  return 1;
}

/* span:fail(type [, message]): the span ends in error (error.type). */
static int l_span_fail(lua_State *L) {
  span_handle *h = luaL_checkudata(L, 1, SPAN_MT);
  const char *type = luaL_checkstring(L, 2), *msg = luaL_optstring(L, 3, NULL);
  if (h->s == NULL || !h->s->sampled) return 0;
  mcp_attr_str(&h->s->attrs, "error.type", type);
  mcp_span_set_status(h->s, MCP_STATUS_ERROR, msg);
  return 0;
}

/* span:set(attrs): attributes on the span. */
static int l_span_set(lua_State *L) {
  span_handle *h = luaL_checkudata(L, 1, SPAN_MT);
  luaL_checktype(L, 2, LUA_TTABLE);
  if (h->s && h->s->sampled) set_attrs(L, 2, &h->s->attrs);
  return 0;
}

/* span:event(name [, attrs]): an event on the span, now. */
static int l_span_event(lua_State *L) {
  span_handle *h = luaL_checkudata(L, 1, SPAN_MT);
  const char *name = luaL_checkstring(L, 2);
  mcp_attrs *a;
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  if (h->s == NULL || !h->s->sampled || (a = mcp_span_event_add(h->s, name)) == NULL) return 0;
  if (lua_istable(L, 3)) set_attrs(L, 3, a);
  return 0;
}

/* mono(): seconds of a monotonic clock (real time, not the test clock's). */
static int l_mono(lua_State *L) {
  lua_pushnumber(L, (double)uv_hrtime() / 1e9);
  return 1;
}

/* client_duration(method, tool|nil, error_type|nil, seconds): an upstream
 * request for mcp_client_operation_duration_seconds. */
static int l_client_duration(lua_State *L) {
  mcp_semconv_client(luaL_checkstring(L, 1), luaL_optstring(L, 2, NULL), luaL_optstring(L, 3, NULL),
                     luaL_checknumber(L, 4));
  return 0;
}

static const luaL_Reg span_meta[] = {
  {"__close", l_span_close},
  {"__gc", l_span_gc},
  {NULL, NULL}
};

static const luaL_Reg span_methods[] = {
  {"fail", l_span_fail},
  {"set", l_span_set},
  {"event", l_span_event},
  {"finish", l_span_close},
  {NULL, NULL}
};

void mcp_spans_open(lua_State *L) {
  if (luaL_newmetatable(L, SPAN_MT)) {
    luaL_setfuncs(L, span_meta, 0);
    luaL_newlib(L, span_methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_span_begin);
  lua_setfield(L, -2, "span_begin");
  lua_pushcfunction(L, l_traceparent);
  lua_setfield(L, -2, "traceparent");
  lua_pushcfunction(L, l_traced);
  lua_setfield(L, -2, "traced");
  lua_pushcfunction(L, l_mono);
  lua_setfield(L, -2, "mono");
  lua_pushcfunction(L, l_client_duration);
  lua_setfield(L, -2, "client_duration");
}
