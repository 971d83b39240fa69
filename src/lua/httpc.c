/* The HTTP client of handlers on libcurl's multi interface.
 *
 * One multi handle for the process: curl tells which sockets to watch
 * (CURLMOPT_SOCKETFUNCTION: one uv_poll each) and when to call it back
 * (CURLMOPT_TIMERFUNCTION: one uv_timer); libuv's events go back to curl as
 * curl_multi_socket_action. Connections (and TLS sessions, DNS answers) stay
 * in the multi handle's cache, so calls reuse them.
 *
 * A transfer is an operation of its call (op.h). A cancel takes it out of
 * the multi handle at once, which closes its connection; from then on none
 * of its Lua callbacks runs. curl forbids removing a handle from inside its
 * own callbacks, so a cancel that happens there (a callback that raised, or
 * one that cancelled another transfer) only marks the transfer, and the
 * removal follows as soon as curl_multi_socket_action returns, in the same
 * loop turn. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <lauxlib.h>
#include <uv.h>

#include "allow.h"
#include "buf.h"
#include "curl_loop.h"
#include "fail.h"
#include "httpc.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "op.h"
#include "sandbox.h"
#include "sched.h"
#include "spans.h"
#include "sse.h"

#define DEFAULT_TIMEOUT 30.0
#define DEADLINE_SLACK 0.25        /* seconds curl's limit stands behind the call's deadline */
#define DEFAULT_MAX_BYTES ((size_t)16 << 20)
#define MAX_REDIRECTS 10L
/* A transfer. Its op is held by the engine from start until it leaves the
 * multi handle (done, or cancelled), by its Lua handle while reachable. */
typedef struct transfer {
  mcp_op op;                     /* first */
  CURL *easy;                    /* NULL once it left the multi handle */
  struct curl_slist *headers;
  mcp_buf body;                  /* the response body, unless streamed */
  mcp_buf head;                  /* header lines of the last response */
  mcp_sse sse;
  mcp_allow *req_allow;          /* the request's own narrowing (req.allow), owned */
  const mcp_allow *plugin_allow; /* its plugin's, or NULL */
  const char *sandbox;           /* its sandboxed plugin (sandbox.c's grants), or NULL */
  const mcp_allow *sandbox_allow; /* that plugin's http grant (kept for the process's life) */
  size_t max_bytes;
  int chunk_ref, sse_ref;        /* on_chunk, on_sse, or LUA_NOREF */
  long status;
  CURLcode rc;
  char *url;                     /* the request's URL, then the effective one */
  char code[24];                 /* our own failure: too_large, denied (http_allow), io (a callback raised) */
  char msg[512];
  char errbuf[CURL_ERROR_SIZE];
  unsigned in_multi : 1;
  unsigned stopped : 1;          /* a callback returned false */
  unsigned streaming : 1;        /* the body goes to a callback */
  unsigned decided : 1;          /* whether it streams is decided (first body bytes) */
  struct transfer *next_dead;    /* cancelled inside curl: removed after it returns */
} transfer;

static struct {
  mcp_curl_loop cl;              /* the multi handle on the loop (curl_loop.c) */
  transfer *dead;                /* to remove once curl returns */
} C;

/* The host (without brackets) and port (its scheme's by default) url names. */
static int url_target(const char *url, char *host, size_t cap, int *port) {
  char *h = NULL, *p = NULL;
  CURLU *u = curl_url();
  int ok = 0;
  if (u && url && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK) {
    size_t n = strlen(h);
    if (n >= 2 && h[0] == '[') {                     /* [v6] */
      memmove(h, h + 1, n - 2);
      h[n - 2] = '\0';
    }
    snprintf(host, cap, "%s", h);
    *port = atoi(p);
    ok = 1;
  }
  curl_free(h);
  curl_free(p);
  curl_url_cleanup(u);
  return ok;
}

static int checked(const transfer *t) {
  return t->sandbox || t->plugin_allow || t->req_allow || mcp_allow_server(0);
}

/* t refused: "denied", logged (and for a sandboxed plugin, counted). */
static int refuse(transfer *t) {
  snprintf(t->code, sizeof t->code, "denied");
  if (t->sandbox) mcp_sandbox_denied(t->sandbox, MCP_CAP_HTTP, t->msg);
  else mcp_info("http: %s", t->msg);
  return 0;
}

/* May t reach host:port, resolved to sa, or with sa NULL by its name alone
 * (before anything is resolved)? Each list that is set (the sandboxed
 * plugin's grant, the server's, the plugin's, the request's) must allow it.
 * Once refused, a transfer stays refused. */
static int allowed_at(transfer *t, const char *host, int port, const struct sockaddr *sa) {
  static const char *const whose[3] = { "--http-allow", "the plugin's http_allow", "req.allow" };
  const mcp_allow *lists[3] = { mcp_allow_server(0), t->plugin_allow, t->req_allow };
  char why[320], target[300];
  if (t->code[0] != '\0') return 0;
  if (mcp_allow_target(host, port, target, sizeof target) != 0) snprintf(target, sizeof target, "%.255s", host);
  if (t->sandbox && !mcp_allow_check(t->sandbox_allow, host, port, NULL, why, sizeof why)) {
    snprintf(t->msg, sizeof t->msg, "sandbox: %.64s may not reach %.140s (grant http = {\"%.140s\"}): not granted, not resolved",
             t->sandbox, target, target);
    return refuse(t);
  }
  if (t->sandbox && sa && !mcp_allow_check(t->sandbox_allow, host, port, sa, why, sizeof why)) {
    snprintf(t->msg, sizeof t->msg, "sandbox: %.64s may not reach %.140s: %.200s (only a grant of the address itself reaches it)",
             t->sandbox, target, why);
    return refuse(t);
  }
  for (int i = 0; i < 3; i++) {
    if (lists[i] && !mcp_allow_check(lists[i], host, port, sa, why, sizeof why)) {
      snprintf(t->msg, sizeof t->msg, "blocked: %s (%s)", why, whose[i]);
      return refuse(t);
    }
  }
  return 1;
}

/* The same for url's host and port. */
static int allowed_to(transfer *t, const char *url, const struct sockaddr *sa) {
  char host[256];
  int port;
  if (url_target(url, host, sizeof host, &port)) return allowed_at(t, host, port, sa);
  if (t->code[0] != '\0') return 0;
  snprintf(t->msg, sizeof t->msg, "blocked: cannot tell where the request goes");
  return refuse(t);
}

/* The same for the URL being fetched now (after redirects). */
static int allowed(transfer *t, const struct sockaddr *sa) {
  char *url = NULL;
  if (!checked(t)) return 1;
  curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &url);
  return allowed_to(t, url, sa);
}

/* The checks, each where curl goes a step further: before it resolves a
 * name (the URL's, a redirect's: a name not allowed is never sent to DNS),
 * when it opens a socket to an address it resolved (what is checked is what
 * it connects to: nothing is resolved between the two), and before each
 * request on a connection, a reused one included (whose socket it opened for
 * another request). */
static int on_resolver_start(void *resolver, void *reserved, void *ud) {
  (void)resolver;
  (void)reserved;
  return allowed(ud, NULL) ? 0 : 1;
}

static curl_socket_t on_opensocket(void *ud, curlsocktype purpose, struct curl_sockaddr *a) {
  (void)purpose;
  if (!allowed(ud, &a->addr)) return CURL_SOCKET_BAD;
  return socket(a->family, a->socktype, a->protocol);
}

static int on_prereq(void *ud, char *peer_ip, char *local_ip, int peer_port, int local_port) {
  transfer *t = ud;
  struct sockaddr_storage ss;
  (void)local_ip;
  (void)peer_port;
  (void)local_port;
  if (!checked(t)) return CURL_PREREQFUNC_OK;
  memset(&ss, 0, sizeof ss);
  if (inet_pton(AF_INET, peer_ip, &((struct sockaddr_in *)&ss)->sin_addr) == 1) ss.ss_family = AF_INET;
  else if (inet_pton(AF_INET6, peer_ip, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) ss.ss_family = AF_INET6;
  else ss.ss_family = AF_UNSPEC;                     /* refused as "special" */
  return allowed(t, (struct sockaddr *)&ss) ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT;
}

/* Lua callbacks. They run on the main thread on behalf of the call; a
 * callback that raises fails the transfer, one that returns false ends it. */

static int run_callback(transfer *t, int ref, int nargs) {
  lua_State *L = mcp_sched_lua();
  int stop;
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_insert(L, -1 - nargs);
  if (mcp_call_pcall(t->op.call, nargs, 1) != LUA_OK) {
    snprintf(t->code, sizeof t->code, "io");
    snprintf(t->msg, sizeof t->msg, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "callback failed");
    lua_pop(L, 1);
    return -1;
  }
  stop = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (t->op.done) return -1;                         /* cancelled meanwhile */
  if (stop) t->stopped = 1;
  return stop;
}

static int on_event(void *ud, const mcp_sse_event *ev) {
  transfer *t = ud;
  lua_State *L = mcp_sched_lua();
  lua_createtable(L, 0, 3);
  lua_pushstring(L, ev->event);
  lua_setfield(L, -2, "event");
  lua_pushlstring(L, ev->data, ev->data_len);
  lua_setfield(L, -2, "data");
  lua_pushstring(L, ev->id);
  lua_setfield(L, -2, "id");
  return run_callback(t, t->sse_ref, 1);
}

/* Stream the body to a callback only for a success, and to on_sse only for
 * text/event-stream; anything else (an error page) is kept in body. */
static void decide(transfer *t) {
  char *ct = NULL;
  long status = 0;
  t->decided = 1;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
  if (status < 200 || status > 299) return;
  if (t->sse_ref != LUA_NOREF) t->streaming = ct != NULL && strncasecmp(ct, "text/event-stream", 17) == 0;
  else t->streaming = t->chunk_ref != LUA_NOREF;
}

static size_t on_write(char *p, size_t size, size_t n, void *ud) {
  transfer *t = ud;
  size_t len = size * n;
  int r;
  if (t->op.done) return CURL_WRITEFUNC_ERROR;
  if (!t->decided) decide(t);
  if (!t->streaming) {
    if (t->body.len + len > t->max_bytes) {
      snprintf(t->code, sizeof t->code, "too_large");
      snprintf(t->msg, sizeof t->msg, "the response is larger than max_bytes (%zu)", t->max_bytes);
      return CURL_WRITEFUNC_ERROR;
    }
    mcp_buf_add(&t->body, p, len);
    return len;
  }
  if (t->sse_ref != LUA_NOREF) {
    t->sse.max = t->max_bytes;
    r = mcp_sse_feed(&t->sse, p, len, on_event, t);
    if (r == -1 && t->code[0] == '\0') {
      snprintf(t->code, sizeof t->code, "too_large");
      snprintf(t->msg, sizeof t->msg, "an event is larger than max_bytes (%zu)", t->max_bytes);
    }
  } else {
    lua_pushlstring(mcp_sched_lua(), p, len);
    r = run_callback(t, t->chunk_ref, 1);
  }
  return r == 0 ? len : CURL_WRITEFUNC_ERROR;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  transfer *t = ud;
  size_t len = size * n;
  if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) t->head.len = 0;   /* a new response (redirect, 100) */
  if (t->head.len + len > 256 * 1024) {
    snprintf(t->code, sizeof t->code, "too_large");
    snprintf(t->msg, sizeof t->msg, "the response headers are larger than 256 KiB");
    return 0;
  }
  mcp_buf_add(&t->head, p, len);
  return len;
}

/* Leaving the multi handle: the one place a transfer lets go of curl. */
static void unref_fns(transfer *t) {
  lua_State *L = mcp_sched_lua();
  luaL_unref(L, LUA_REGISTRYINDEX, t->chunk_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, t->sse_ref);
  t->chunk_ref = t->sse_ref = LUA_NOREF;
}

static void transfer_end(transfer *t) {
  char *url = NULL;
  if (t->easy == NULL) return;
  mcp_counter_add("luamcp_outbound_http_requests_total",
                  !t->in_multi && t->code[0] != '\0' ? "outcome=\"error\""   /* refused before it started */
                  : t->op.done ? "outcome=\"cancelled\""
                  : t->rc == CURLE_OK || t->stopped ? "outcome=\"ok\"" : "outcome=\"error\"", 1);
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
  if (t->op.span)
    mcp_span_http_end(t->op.span, t->status, t->rc == CURLE_OK || t->stopped ? NULL
                      : t->rc == CURLE_OPERATION_TIMEDOUT ? "timeout" : t->rc == CURLE_COULDNT_CONNECT ? "connect" : "io",
                      t->errbuf);
  curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &url);
  if (url != NULL && (url = strdup(url)) != NULL) {
    free(t->url);
    t->url = url;
  }
  if (t->in_multi) curl_multi_remove_handle(C.cl.multi, t->easy);
  t->in_multi = 0;
  curl_easy_cleanup(t->easy);
  t->easy = NULL;
  curl_slist_free_all(t->headers);
  t->headers = NULL;
  unref_fns(t);
  mcp_op_done(&t->op);
  mcp_op_release(&t->op);
}

static void reap_dead(void) {
  while (C.dead) {
    transfer *t = C.dead;
    C.dead = t->next_dead;
    transfer_end(t);
  }
}

/* After curl acted: what finished ends, then what was cancelled inside it. */
static void on_curl_done(mcp_curl_loop *cl) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(cl->multi, &left)) != NULL) {
    transfer *t = NULL;
    if (m->msg != CURLMSG_DONE) continue;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
    t->rc = m->data.result;
    if (t->rc != CURLE_OK && t->errbuf[0] == '\0')
      snprintf(t->errbuf, sizeof t->errbuf, "%s", curl_easy_strerror(t->rc));
    transfer_end(t);
  }
  reap_dead();
}

static void multi_init(void) {
  if (C.cl.multi) return;
  mcp_curl_loop_init(&C.cl, mcp_sched_loop(), on_curl_done);
  curl_multi_setopt(C.cl.multi, CURLMOPT_MAX_HOST_CONNECTIONS, 64L);
  curl_multi_setopt(C.cl.multi, CURLMOPT_MAXCONNECTS, 128L);  /* idle connections kept */
}

/* The op. */

static void t_cancel(mcp_op *op) {
  transfer *t = (transfer *)op;
  if (t->easy == NULL) return;
  unref_fns(t);                                      /* no callback of it runs again */
  if (C.cl.depth > 0) {                              /* inside curl: right after it returns */
    t->next_dead = C.dead;
    C.dead = t;
    return;
  }
  transfer_end(t);
}

/* The name of a CURLcode, for messages. */
static const char *rc_name(CURLcode rc) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: return "CURLE_OPERATION_TIMEDOUT";
    case CURLE_COULDNT_RESOLVE_HOST: return "CURLE_COULDNT_RESOLVE_HOST";
    case CURLE_COULDNT_RESOLVE_PROXY: return "CURLE_COULDNT_RESOLVE_PROXY";
    case CURLE_COULDNT_CONNECT: return "CURLE_COULDNT_CONNECT";
    case CURLE_UNSUPPORTED_PROTOCOL: return "CURLE_UNSUPPORTED_PROTOCOL";
    case CURLE_URL_MALFORMAT: return "CURLE_URL_MALFORMAT";
    case CURLE_TOO_MANY_REDIRECTS: return "CURLE_TOO_MANY_REDIRECTS";
    case CURLE_GOT_NOTHING: return "CURLE_GOT_NOTHING";
    case CURLE_SEND_ERROR: return "CURLE_SEND_ERROR";
    case CURLE_RECV_ERROR: return "CURLE_RECV_ERROR";
    case CURLE_PARTIAL_FILE: return "CURLE_PARTIAL_FILE";
    case CURLE_PEER_FAILED_VERIFICATION: return "CURLE_PEER_FAILED_VERIFICATION";
    case CURLE_SSL_CONNECT_ERROR: return "CURLE_SSL_CONNECT_ERROR";
    case CURLE_SSL_CACERT_BADFILE: return "CURLE_SSL_CACERT_BADFILE";
    case CURLE_WRITE_ERROR: return "CURLE_WRITE_ERROR";
    case CURLE_BAD_CONTENT_ENCODING: return "CURLE_BAD_CONTENT_ENCODING";
    case CURLE_HTTP2: return "CURLE_HTTP2";
    case CURLE_HTTP2_STREAM: return "CURLE_HTTP2_STREAM";
    case CURLE_WEIRD_SERVER_REPLY: return "CURLE_WEIRD_SERVER_REPLY";
    default: return "curl error";
  }
}

/* stack: -> {status=, headers=, body=, url=[, stopped=true]} or nil, message, code */
static int t_push(lua_State *L, mcp_op *op) {
  transfer *t = (transfer *)op;
  const char *p, *end;
  if (t->code[0] != '\0')
    return mcp_push_fail(L, t->code, "%s", t->msg[0] ? t->msg : t->code);
  if (t->rc != CURLE_OK && !t->stopped)
    return mcp_push_fail(L, mcp_code_curl(t->rc), "%s (%s %d)", t->errbuf, rc_name(t->rc), (int)t->rc);
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, t->status);
  lua_setfield(L, -2, "status");
  lua_pushlstring(L, t->body.data ? t->body.data : "", t->body.len);
  lua_setfield(L, -2, "body");
  lua_pushstring(L, t->url ? t->url : "");
  lua_setfield(L, -2, "url");
  if (t->stopped) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "stopped");
  }
  lua_newtable(L);                                   /* headers: lower-case name = value */
  p = t->head.data;
  end = p ? p + t->head.len : NULL;
  while (p && p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p)), *colon;
    const char *stop = eol ? eol : end;
    colon = memchr(p, ':', (size_t)(stop - p));
    if (colon && colon > p && *p != ' ' && *p != '\t') {
      const char *v = colon + 1, *ve = stop;
      luaL_Buffer b;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      luaL_buffinit(L, &b);
      for (const char *k = p; k < colon; k++) luaL_addchar(&b, (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k));
      luaL_pushresult(&b);                           /* name */
      lua_pushvalue(L, -1);
      if (lua_rawget(L, -3) == LUA_TSTRING) {        /* repeated: joined with ", " */
        lua_pushliteral(L, ", ");
        lua_pushlstring(L, v, (size_t)(ve - v));
        lua_concat(L, 3);
      } else {
        lua_pop(L, 1);
        lua_pushlstring(L, v, (size_t)(ve - v));
      }
      lua_rawset(L, -3);
    }
    p = eol ? eol + 1 : end;
  }
  lua_setfield(L, -2, "headers");
  return 1;
}

static void t_free(mcp_op *op) {
  transfer *t = (transfer *)op;
  mcp_buf_free(&t->body);
  mcp_buf_free(&t->head);
  mcp_sse_free(&t->sse);
  free(t->url);
  mcp_allow_free(t->req_allow);
  free(t);
}

static const mcp_op_type transfer_type = { "http", t_cancel, t_push, t_free };

/* Reading the request table. Bad input is returned as nil, message,
 * "invalid"; a programming mistake (a field of the wrong type) raises. The
 * transfer and its handle exist from the start, so that whatever raises
 * leaves nothing behind: the handle is collected and cancels the op. */

static int invalid(lua_State *L, transfer *t, const char *fmt, const char *arg) {
  mcp_op_cancel(&t->op, "invalid request");
  lua_pushnil(L);
  lua_pushfstring(L, fmt, arg);
  lua_pushliteral(L, "invalid");
  return 3;
}

static int valid_header(const char *name, const char *value, size_t vlen) {
  if (name[0] == '\0') return 0;
  for (const char *p = name; *p; p++)
    if (*p <= ' ' || *p == ':' || *p == 127) return 0;
  for (size_t i = 0; i < vlen; i++)
    if (value[i] == '\r' || value[i] == '\n' || value[i] == '\0') return 0;
  return 1;
}

static double opt_number(lua_State *L, const char *field, double dflt) {
  double v = dflt;
  if (lua_getfield(L, 1, field) != LUA_TNIL) {
    if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0)
      mcp_raise(L, "http: req.%s must be a number >= 0", field);
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* stack: query -> query. Appends "k=v&..." URL-encoded, keys sorted, a list
 * value as the key repeated. */
static void add_query(lua_State *L, mcp_buf *url) {
  int q = lua_gettop(L), keys, n = 0;
  lua_newtable(L);
  keys = lua_gettop(L);
  for (lua_pushnil(L); lua_next(L, q); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING) mcp_raise(L, "http: req.query keys must be strings");
    lua_pushvalue(L, -2);
    lua_rawseti(L, keys, ++n);
  }
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_pushvalue(L, keys);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
  for (int i = 1; i <= n; i++) {
    int m = 1, list;
    lua_rawgeti(L, keys, i);
    lua_pushvalue(L, -1);
    lua_gettable(L, q);                              /* stack: key value */
    list = lua_istable(L, -1);
    if (list) m = (int)lua_rawlen(L, -1);
    for (int j = 1; j <= m; j++) {
      char *k, *v;
      if (list) lua_rawgeti(L, -1, j); else lua_pushvalue(L, -1);
      if (lua_isboolean(L, -1)) {
        lua_pushstring(L, lua_toboolean(L, -1) ? "true" : "false");
        lua_replace(L, -2);
      }
      if (!lua_isstring(L, -1))
        mcp_raise(L, "http: req.query.%s must be a string, a number or a boolean", lua_tostring(L, -3));
      k = curl_easy_escape(NULL, lua_tostring(L, -3), 0);
      v = curl_easy_escape(NULL, lua_tostring(L, -1), (int)lua_rawlen(L, -1));
      mcp_buf_addc(url, memchr(url->data, '?', url->len) ? '&' : '?');
      mcp_buf_printf(url, "%s=%s", k, v);
      curl_free(k);
      curl_free(v);
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
}

/* stack: path -> path. Raises unless it is a list of strings and numbers
 * (before the URL is built: nothing to free). */
static void check_path(lua_State *L) {
  int n;
  if (!lua_istable(L, -1))
    mcp_raise(L, "http: req.path must be a list of segments (got %s)", luaL_typename(L, -1));
  n = (int)lua_rawlen(L, -1);
  for (int i = 1; i <= n; i++) {
    int type = lua_rawgeti(L, -1, i);
    if (type != LUA_TSTRING && type != LUA_TNUMBER)
      mcp_raise(L, "http: req.path[%d] must be a string or a number (got %s)", i, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
}

/* stack: path -> path. Appends each segment of the list, percent-encoded
 * (all but RFC 3986's unreserved characters, so "/" and ".." cannot climb),
 * after a "/". */
static void add_path(lua_State *L, mcp_buf *url) {
  int p = lua_gettop(L), n = (int)lua_rawlen(L, p);
  if (url->len > 0 && url->data[url->len - 1] == '/') url->len--;
  for (int i = 1; i <= n; i++) {
    char *seg;
    lua_rawgeti(L, p, i);
    seg = curl_easy_escape(NULL, lua_tostring(L, -1), (int)lua_rawlen(L, -1));
    if (seg == NULL) abort();
    mcp_buf_printf(url, "/%s", seg);
    curl_free(seg);
    lua_pop(L, 1);
  }
}

/* mcp.url.escape(s): s percent-encoded but for RFC 3986's unreserved
 * characters (A-Z a-z 0-9 - . _ ~). */
static int l_url_escape(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char *e = curl_easy_escape(NULL, s, (int)n);
  if (e == NULL) abort();
  lua_pushstring(L, e);
  curl_free(e);
  return 1;
}

static int fn_ref(lua_State *L, const char *field) {
  if (lua_getfield(L, 1, field) == LUA_TNIL) {
    lua_pop(L, 1);
    return LUA_NOREF;
  }
  if (!lua_isfunction(L, -1)) mcp_raise(L, "http: req.%s must be a function", field);
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* stack: req handle headers -> req handle */
static int set_headers(lua_State *L, transfer *t) {
  luaL_checktype(L, -1, LUA_TTABLE);
  for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
    size_t vlen = 0;
    const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    const char *value = lua_isstring(L, -1) ? lua_tolstring(L, -1, &vlen) : NULL;
    mcp_buf line = MCP_BUF_INIT;
    if (value == NULL || !valid_header(name, value, vlen)) return -1;
    mcp_buf_printf(&line, "%s: %s", name, value);
    mcp_buf_addc(&line, '\0');
    t->headers = curl_slist_append(t->headers, line.data);
    mcp_buf_free(&line);
  }
  lua_pop(L, 1);
  return 0;
}

/* stack: list -> (popped). */
static void read_allow(lua_State *L, mcp_allow *a, const char *what) {
  luaL_checktype(L, -1, LUA_TTABLE);
  mcp_allow_clear(a);
  for (int i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
    if (!lua_isstring(L, -1) || mcp_allow_add(a, lua_tostring(L, -1)) != 0)
      mcp_raise(L, "%s[%d] must be HOST or HOST:PORT", what, i);
    lua_pop(L, 1);
  }
  lua_pop(L, 2);                                     /* the nil that ended it, the list */
}

/* http_allow(plugin, list | nil): a plugin's narrowing, from its declaration. */
static int l_http_allow(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  if (lua_isnoneornil(L, 2)) {
    mcp_allow_plugin_drop(name);
    return 0;
  }
  lua_settop(L, 2);
  read_allow(L, mcp_allow_plugin(name, 1), "http_allow");
  return 0;
}

static const mcp_allow *plugin_list(mcp_call *c) {
  return c != NULL && c->logger != NULL ? mcp_allow_plugin(c->logger, 0) : NULL;
}

static int has_header(const struct curl_slist *h, const char *name) {
  size_t n = strlen(name);
  for (; h; h = h->next)
    if (strncasecmp(h->data, name, n) == 0 && h->data[n] == ':') return 1;
  return 0;
}

/* The options of the easy handle, once the request is read. */
static void setup(transfer *t, const char *method, double timeout, double connect_timeout,
                  int follow, int has_body) {
  CURL *e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, t->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "luamcp/" LUAMCP_VERSION);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_RESOLVER_START_FUNCTION, on_resolver_start);
  curl_easy_setopt(e, CURLOPT_RESOLVER_START_DATA, t);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_opensocket);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t);
  curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
  curl_easy_setopt(e, CURLOPT_PREREQDATA, t);
  if (timeout > 0) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000.0 + 0.5));
  if (connect_timeout > 0)
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_timeout * 1000.0 + 0.5));
  if (t->headers) curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  if (has_body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->body.len);
    curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, t->body.len ? t->body.data : "");
    t->body.len = 0;                                 /* copied: the buffer is the response's now */
  }
  if (method != NULL && strcmp(method, "HEAD") == 0) curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  else if (method != NULL && strcmp(method, has_body ? "POST" : "GET") != 0)
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
}

/* http(req): an op (its handle), or nil, message, "invalid" | "cancelled". */
static int l_http(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  mcp_buf url = MCP_BUF_INIT;
  const char *s, *tail, *method = NULL;
  double timeout, connect_timeout;
  int has_body = 0, json = 0, background, follow = 1;
  transfer *t;
  mcp_op **h;
  char err[256];

  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  background = lua_getfield(L, 1, "background") != LUA_TNIL && lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!background && mcp_op_refuse(L, c)) return 3;
  if (background && mcp_sandbox_plugin(c) != NULL) {   /* its callbacks would run for no call: unbounded */
    mcp_sandbox_denied(mcp_sandbox_plugin(c), MCP_CAP_HTTP, "sandbox: a sandboxed plugin's HTTP requests belong to "
                       "its call (req.background is refused)");
    return mcp_push_fail(L, "denied", "sandbox: a sandboxed plugin's HTTP requests belong to its call "
                         "(req.background is refused)");
  }
  multi_init();
  h = mcp_op_reserve(L);                             /* before the transfer: it may raise */
  t = calloc(1, sizeof *t);
  if (t == NULL || (t->easy = curl_easy_init()) == NULL) abort();
  t->chunk_ref = t->sse_ref = LUA_NOREF;
  mcp_op_init(&t->op, &transfer_type, background ? NULL : c);
  mcp_op_attach(h, &t->op);                          /* stack: req handle */

  if (lua_getfield(L, 1, "url") != LUA_TSTRING) return mcp_raise(L, "http: req.url must be a string");
  s = lua_tostring(L, -1);
  if (strncasecmp(s, "http://", 7) != 0 && strncasecmp(s, "https://", 8) != 0)
    return invalid(L, t, "http: %s: only http and https URLs", s);
  if (strpbrk(s, "\r\n \t") != NULL) return invalid(L, t, "http: %s: a URL has no spaces or line breaks", s);
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "path") != LUA_TNIL) check_path(L);
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "method") != LUA_TNIL) {
    method = luaL_checkstring(L, -1);                /* anchored in req */
    if (method[0] == '\0' || method[strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ-")] != '\0')
      return invalid(L, t, "http: bad method %s (upper-case letters)", method);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "body") != LUA_TNIL) {
    size_t n;
    if (lua_type(L, -1) != LUA_TSTRING)
      return invalid(L, t, "http: req.body must be a string (req.json sends a %s)", luaL_typename(L, -1));
    s = lua_tolstring(L, -1, &n);
    mcp_buf_add(&t->body, s, n);
    has_body = 1;
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "json") != LUA_TNIL) {
    if (has_body) return invalid(L, t, "http: req.body and req.json together%s", "");
    if (mcp_json_encode(L, lua_gettop(L), &t->body, err, sizeof err) != 0)
      return invalid(L, t, "http: req.json: %s", err);
    has_body = json = 1;
  }
  lua_pop(L, 1);
  timeout = opt_number(L, "timeout", DEFAULT_TIMEOUT);
  connect_timeout = opt_number(L, "connect_timeout", 0);
  t->max_bytes = (size_t)opt_number(L, "max_bytes", (double)DEFAULT_MAX_BYTES);
  if (lua_getfield(L, 1, "follow") != LUA_TNIL) follow = lua_toboolean(L, -1);
  lua_pop(L, 1);
  /* Never past the call's deadline: the call's timeout cancels the transfer
   * (reason "timeout"). curl's own limit stands a little behind it, so that
   * which of the two ends the request is not a race. */
  if (c != NULL && c->deadline_ns != 0 && !background) {
    uint64_t now = mcp_clock_ns();
    double left = (c->deadline_ns > now ? (double)(c->deadline_ns - now) / 1e9 : 0) + DEADLINE_SLACK;
    if (timeout == 0 || left < timeout) timeout = left;
  }
  lua_getfield(L, 1, "url");
  s = lua_tostring(L, -1);
  tail = strpbrk(s, "?#");                           /* path segments go before these */
  mcp_buf_add(&url, s, tail ? (size_t)(tail - s) : lua_rawlen(L, -1));
  if (lua_getfield(L, 1, "path") != LUA_TNIL) add_path(L, &url);
  lua_pop(L, 1);
  if (tail) mcp_buf_add(&url, tail, strlen(tail));
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "query") != LUA_TNIL) {
    luaL_checktype(L, -1, LUA_TTABLE);
    mcp_buf_addc(&url, '\0');                        /* for memchr's sake; dropped below */
    url.len--;
    add_query(L, &url);
  }
  lua_pop(L, 1);
  mcp_buf_addc(&url, '\0');
  t->url = url.data;                                 /* owned by t from here */
  if (lua_getfield(L, 1, "headers") != LUA_TNIL && set_headers(L, t) != 0)
    return invalid(L, t, "http: header %s: a token name, and a value without CR, LF or NUL",
                   lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?");
  if (lua_gettop(L) > 2) lua_pop(L, 1);
  if (json && !has_header(t->headers, "content-type"))
    t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
  if (lua_getfield(L, 1, "allow") != LUA_TNIL) {
    t->req_allow = mcp_allow_new();
    read_allow(L, t->req_allow, "http: req.allow");
  } else {
    lua_pop(L, 1);
  }
  t->plugin_allow = plugin_list(c);
  t->sandbox = mcp_sandbox_plugin(c);
  t->sandbox_allow = mcp_sandbox_http(c);
  if (lua_getfield(L, 1, "sandbox") == LUA_TSTRING && t->sandbox == NULL)   /* the host's, for a plugin (a mount) */
    t->sandbox = mcp_sandbox_of(lua_tostring(L, -1), &t->sandbox_allow);
  lua_pop(L, 1);
  t->chunk_ref = fn_ref(L, "on_chunk");
  t->sse_ref = fn_ref(L, "on_sse");
  if (checked(t) && !allowed_to(t, t->url, NULL)) {              /* by name, before anything is resolved */
    mcp_op_cancel(&t->op, "denied");
    return mcp_push_fail(L, "denied", "%s", t->msg);
  }

  if (!background && mcp_op_span(&t->op, MCP_SPAN_CLIENT, method ? method : has_body ? "POST" : "GET"))
    t->headers = mcp_span_http_begin(t->op.span, t->url, t->headers);
  setup(t, method, timeout, connect_timeout, follow, has_body);
  t->in_multi = 1;
  curl_multi_add_handle(C.cl.multi, t->easy);           /* starts at curl's next timer */
  return 1;
}

void mcp_httpc_open_lib(lua_State *L) {
  lua_pushcfunction(L, l_http);
  lua_setfield(L, -2, "http");
  lua_pushcfunction(L, l_http_allow);
  lua_setfield(L, -2, "http_allow");
  lua_pushcfunction(L, l_url_escape);
  lua_setfield(L, -2, "url_escape");
}

void mcp_httpc_close(void) {
  mcp_allow_close_all();
  mcp_sandbox_close();
  if (C.cl.multi == NULL) return;
  /* ops are cancelled before this, so no transfer is left in the handle */
  mcp_curl_loop_close(&C.cl);
}
