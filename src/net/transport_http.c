/* The Streamable HTTP transport's routing: its sessions, and the MCP
 * endpoint's POST, GET and DELETE served past the checks (http_origin.c,
 * http_auth.c) on streams that answer in JSON or as Server-Sent Events
 * (http_stream.c, with event ids and a replay buffer for resumption).
 *
 * In these revisions a dropped connection is not a cancellation: the call
 * runs on, its messages go to the stream's replay buffer, and a client that
 * comes back with GET and Last-Event-ID gets what it missed.
 *
 * 2026-07-28 requests (rev2026.c) are stateless: POST only, no session ids,
 * no event ids or replay, the request metadata headers checked against the
 * body (headers.c), and a response stream closed before its answer cancels
 * the request.
 * They are read on one session of their own, `stateless`, which owns their
 * streams; each request then runs in an ephemeral session of rev2026.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>
#include <jansson.h>

#include "auth.h"
#include "console.h"
#include "crypto.h"
#include "headers.h"
#include "http.h"
#include "http_auth.h"
#include "http_origin.h"
#include "identity.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "probe.h"
#include "rev2026.h"
#include "rpc.h"
#include "sched.h"
#include "span.h"
#include "server_card.h"
#include "session.h"
#include "transport_http.h"
#include "transport_http_int.h"

#define RPC_DRAINING -32000        /* JSON-RPC's "server error" range */

static struct {
  mcp_http_options opt;
  hsession *sessions;
  hsession *stateless;              /* created on the first 2026-07-28 request (without auth) */
  mcp_identity *id;                 /* with auth: the identity of the request being served, or NULL */
  int nsessions;
  void (*on_closed)(void);
  int shutting_down;
  int draining;                     /* mcp_http_drain: no new requests */
  mcp_http_listener *listener;
  int collecting;                   /* collect is registered */
} T;

/* Sessions. */

static void session_free(hsession *hs) {
  hsession **p = &T.sessions;
  while (*p && *p != hs) p = &(*p)->next;
  if (*p) *p = hs->next;
  T.nsessions--;
  while (hs->streams) {
    hstream *st = hs->streams;
    hs->streams = st->next;
    if (st->conn) {
      mcp_http_conn_set_data(st->conn, NULL);
      mcp_http_stream_end(st->conn);
    }
    mcp__hstream_free(st);
  }
  free(hs->spare);
  mcp_session_close(&hs->s);
  if (T.stateless == hs) T.stateless = NULL;
  free(hs);
  if (T.shutting_down && T.sessions == NULL && T.on_closed) {
    void (*cb)(void) = T.on_closed;
    T.on_closed = NULL;
    mcp_http_close(cb);
  }
}

static void on_drained(mcp_session *s) {
  hsession *hs = (hsession *)s;
  if (hs->ended && !hs->ending) session_free(hs);
}

/* For traces: the first 8 bytes of the id's SHA-256, in hex. */
static void session_digest(hsession *hs) {
  uint8_t d[MCP_SHA256_LEN];
  mcp_sha256(hs->id, strlen(hs->id), d);
  mcp_hex(d, 8, hs->s.digest);
}

static hsession *session_new(void) {
  hsession *hs = calloc(1, sizeof *hs);
  unsigned char rnd[16];
  if (hs == NULL) abort();
  if (mcp_random(rnd, sizeof rnd) != 0) abort();
  for (int i = 0; i < 16; i++) snprintf(hs->id + 2 * i, 3, "%02x", rnd[i]);
  mcp_session_init(&hs->s, mcp__hs_write, hs);
  snprintf(hs->s.name, sizeof hs->s.name, "%.8s", hs->id);
  session_digest(hs);
  hs->s.tcp = 1;
  hs->s.on_drained = on_drained;
  hs->s.detach = mcp__hs_detach;
  hs->next = T.sessions;
  T.sessions = hs;
  T.nsessions++;
  return hs;
}

/* With auth: a session takes the identity of its latest request (same
 * subject: request_session made sure), for ctx.auth. */
static void session_auth(hsession *hs) {
  mcp_identity_ref(T.id);
  mcp_identity_unref(hs->s.auth);
  hs->s.auth = T.id;
}

/* Ids are secrets: compared in constant time. */
static hsession *session_find(const char *id) {
  if (strlen(id) != sizeof T.sessions->id - 1) return NULL;
  for (hsession *hs = T.sessions; hs; hs = hs->next)
    if (!hs->ended && !hs->rev2026 && mcp_equal(hs->id, id, sizeof hs->id - 1)) return hs;
  return NULL;
}

/* End a session: its calls are cancelled; it goes once they are done. */
static void session_end(hsession *hs, const char *reason) {
  if (hs->ended) return;
  hs->ended = 1;
  mcp_info("http: session %.8s ended: %s", hs->id, reason);
  hs->ending = 1;                   /* a call that ends at once must not free hs under us */
  mcp_session_close_calls(&hs->s, reason);
  hs->ending = 0;
  if (hs->s.ncalls == 0) session_free(hs);
}

static int lower(int ch) { return ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch; }

/* Does value hold token (lower case), in any case? Clients send it in lower
 * case: strstr finds it, and only a miss of a token with letters is looked
 * for again in any case (strcasestr costs ten times strstr). */
static int header_has(const char *value, const char *token) {
  const char *t;
  if (value == NULL) return 0;
  if (strstr(value, token) != NULL) return 1;
  for (t = token; *t && (*t < 'a' || *t > 'z'); t++) {}
  if (*t == '\0') return 0;
  for (; *value; value++) {
    size_t i = 0;
    while (token[i] && lower((unsigned char)value[i]) == token[i]) i++;
    if (token[i] == '\0') return 1;
  }
  return 0;
}

static void reply_error(mcp_http_conn *c, int status, const char *headers, int code, const char *msg) {
  char body[512];
  int n = snprintf(body, sizeof body,
                   "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
                   code, msg);
  mcp_debug("http: %d: %s", status, msg);
  mcp_http_respond(c, status, headers, "application/json", body, (size_t)n);
}

static int revision_index(const char *v) {
  for (int i = 0; mcp_revisions[i]; i++)
    if (strcmp(mcp_revisions[i], v) == 0) return i;
  return -1;
}

/* The session a request names, or an answer (400/404) and NULL. */
static hsession *request_session(mcp_http_conn *c, const mcp_http_request *r) {
  hsession *hs;
  if (r->session_id == NULL) {
    reply_error(c, 400, NULL, -32600, "Bad Request: Mcp-Session-Id header required");
    return NULL;
  }
  if ((hs = session_find(r->session_id)) == NULL) {
    reply_error(c, 404, NULL, -32001, "Session not found");
    return NULL;
  }
  if (T.opt.auth && !mcp_identity_same_subject(hs->s.auth, T.id)) {
    mcp_info("http: session %.8s belongs to another subject than %.64s: not found", hs->id,
             mcp_identity_subject(T.id));
    reply_error(c, 404, NULL, -32001, "Session not found");
    return NULL;
  }
  if (r->protocol_version == NULL) {
    if (hs->s.revision >= REV_2025_06_18) {
      reply_error(c, 400, NULL, -32600, "Bad Request: MCP-Protocol-Version header required");
      return NULL;
    }
  } else if (revision_index(r->protocol_version) < 0) {
    reply_error(c, 400, NULL, -32600, "Bad Request: unsupported MCP-Protocol-Version");
    return NULL;
  }
  if (T.opt.auth) session_auth(hs);
  return hs;
}

static int is_initialize(const char *body, size_t len) {
  json_t *v = mcp_json_parse(body, len, NULL, 0);
  int yes = json_is_object(v) && json_string_value(json_object_get(v, "method")) &&
            strcmp(json_string_value(json_object_get(v, "method")), "initialize") == 0;
  json_decref(v);
  return yes;
}

/* 2026-07-28. */

static int is_rev2026_version(const char *v) { return v != NULL && strcmp(v, MCP_REV_2026) == 0; }

static void reply_rpc(mcp_http_conn *c, int status, const char *key, int code, const char *fmt,
                      const char *a, const char *b) {
  mcp_buf out = MCP_BUF_INIT;
  char msg[700];
  snprintf(msg, sizeof msg, fmt, a, b);
  mcp_rpc_error(&out, key, code, "%s", msg);
  mcp_debug("http: %d: %s", status, msg);
  mcp_http_respond(c, status, NULL, "application/json", out.data, out.len);
  mcp_buf_free(&out);
}

/* The session that reads 2026-07-28 requests and scopes their tasks and
 * listeners: one for all, or with auth one per subject; NULL when there is
 * none yet. */
static hsession *stateless_found(void) {
  hsession *hs = T.stateless;
  if (T.opt.auth)
    for (hs = T.sessions; hs; hs = hs->next)
      if (hs->rev2026 && !hs->ended && mcp_identity_same_subject(hs->s.auth, T.id)) break;
  if (hs != NULL && T.opt.auth) session_auth(hs);
  return hs;
}

/* The same, made when there is none. */
static hsession *stateless_session(void) {
  hsession *hs = stateless_found();
  if (hs == NULL) {
    hs = session_new();
    hs->rev2026 = 1;
    hs->s.name[0] = '\0';                /* its requests have no session */
    hs->s.digest[0] = '\0';
    if (T.opt.auth) session_auth(hs);
    else T.stateless = hs;
  }
  return hs;
}

/* The body read on hs, on a stream of its own: the session reads it (ct
 * NULL), or takes ct, read from its text already. 0 when it did not. */
static int stateless_input(hsession *hs, mcp_http_conn *c, const mcp_http_request *r, const mcp_call_text *ct) {
  hstream *st = mcp__hstream_new(hs, c);
  int took = 1;
  mcp_http_conn_set_data(c, st);
  st->in_input = 1;
  hs->s.traceparent = r->traceparent;
  hs->s.tracestate = r->tracestate;
  if (ct != NULL) took = mcp_session_input_call(&hs->s, ct, r->body_len, st);
  else mcp_session_input(&hs->s, r->body, r->body_len, st);
  hs->s.traceparent = hs->s.tracestate = NULL;
  st->in_input = 0;
  if (!took) mcp_http_conn_set_data(c, NULL);
  if (!took || st->ended) {                 /* not taken, or answered at once */
    mcp__hstream_unlink(st);
    mcp__hstream_free(st);
  }
  return took;
}

/* A tools/call read from its text (a client's kept _meta): its headers
 * and scopes checked against that reading, and the call started with no
 * tree. 0 when anything is not as it must be, or not read here: the tree's
 * reading then answers as it would have. A stateless session made by an
 * earlier request is taken; none is made here. */
static int on_post_text(mcp_http_conn *c, const mcp_http_request *r) {
  mcp_call_text ct;
  hsession *hs;
  if (r->mcp_method == NULL || strcmp(r->mcp_method, "tools/call") != 0 ||
      !mcp_session_read_call(r->body, r->body_len, &ct) || !mcp_headers_agree_text(r, &ct) ||
      (T.opt.auth && !mcp_http_auth_tool_allowed(ct.tool, T.id)) || (hs = stateless_found()) == NULL)
    return 0;
  return stateless_input(hs, c, r, &ct);
}

/* POST of a 2026-07-28 client: one request (or notification), no session. */
static void on_post_rev2026(mcp_http_conn *c, const mcp_http_request *r) {
  json_t *msg, *id;
  char *key = NULL, why[600];
  mcp_buf out = MCP_BUF_INIT;
  int status;
  if (on_post_text(c, r)) return;
  msg = mcp_rev2026_parse(r->body, r->body_len);
  if (msg == NULL) msg = mcp_json_parse(r->body, r->body_len, NULL, 0);
  if (!json_is_object(msg)) {
    reply_rpc(c, 400, NULL, json_is_array(msg) ? MCP_RPC_INVALID_REQUEST : MCP_RPC_PARSE,
              "%s%s", json_is_array(msg) ? "Invalid Request: batches are not supported in 2026-07-28"
                                         : "Parse error: the body must be one JSON object", "");
    goto done;
  }
  id = json_object_get(msg, "id");
  if (!json_is_string(json_object_get(msg, "method"))) {
    reply_rpc(c, 400, NULL, MCP_RPC_INVALID_REQUEST,
              "Invalid Request: a 2026-07-28 client sends only requests and notifications%s%s", "", "");
    goto done;
  }
  if (id == NULL) {                 /* no notification is defined over HTTP in this revision */
    mcp_debug("http: 2026-07-28 notification %.128s ignored",
              json_string_value(json_object_get(msg, "method")));
    mcp_http_respond(c, 202, NULL, NULL, NULL, 0);
    goto done;
  }
  if (!json_is_string(id) && !json_is_integer(id)) {
    reply_rpc(c, 400, NULL, MCP_RPC_INVALID_REQUEST,
              "Invalid Request: id must be a string or an integer%s%s", "", "");
    goto done;
  }
  key = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
  if (key == NULL || strlen(key) > 511) {
    reply_rpc(c, 400, NULL, MCP_RPC_INVALID_REQUEST, "Invalid Request: id too long%s%s", "", "");
    goto done;
  }
  if (!mcp_headers_check(r, msg, why, sizeof why)) {
    reply_rpc(c, 400, key, MCP_RPC_HEADER_MISMATCH, "%s%s", why, "");
    goto done;
  }
  if ((status = mcp_rev2026_check(msg, key, &out)) != 0) {
    mcp_debug("http: %d: %.*s", status, (int)out.len, out.data);
    mcp_http_respond(c, status, NULL, "application/json", out.data, out.len);
    goto done;
  }
  if (T.opt.auth && !mcp_http_auth_scopes(c, msg, T.id)) goto done;
  stateless_input(stateless_session(), c, r, NULL);
done:
  free(key);
  mcp_buf_free(&out);
  json_decref(msg);
}

/* A POST of a 2026-07-28 client: the header says so, or (with no session)
 * the body's _meta does. */
static int is_rev2026_post(const mcp_http_request *r) {
  json_t *v;
  int yes;
  if (is_rev2026_version(r->protocol_version)) return 1;
  if (r->session_id != NULL) return 0;
  v = mcp_json_parse(r->body, r->body_len, NULL, 0);
  yes = json_is_object(v) && mcp_rev2026_version(v) != NULL;
  json_decref(v);
  return yes;
}

static void on_post(mcp_http_conn *c, const mcp_http_request *r) {
  hsession *hs;
  hstream *st;
  int fresh = 0;
  if (!header_has(r->content_type, "application/json")) {
    reply_error(c, 415, NULL, -32600, "Unsupported Media Type: Content-Type must be application/json");
    return;
  }
  if (!header_has(r->accept, "*/*") &&
      (!header_has(r->accept, "application/json") || !header_has(r->accept, "text/event-stream"))) {
    reply_error(c, 406, NULL, -32600,
                "Not Acceptable: Accept must list application/json and text/event-stream");
    return;
  }
  if (is_rev2026_post(r)) {
    on_post_rev2026(c, r);
    return;
  }
  if (T.opt.auth) {                 /* the scopes of the tools called, before anything starts */
    json_t *v = mcp_json_parse(r->body, r->body_len, NULL, 0);
    int ok = mcp_http_auth_scopes(c, v, T.id);
    json_decref(v);
    if (!ok) return;
  }
  if (r->session_id == NULL && is_initialize(r->body, r->body_len)) {
    if (T.nsessions >= T.opt.max_sessions) {
      mcp_warn("http: %d sessions open; initialize refused", T.nsessions);
      reply_error(c, 503, "Retry-After: 5\r\n", -32600,
                  "Service Unavailable: too many sessions (end one with DELETE)");
      return;
    }
    hs = session_new();
    if (T.opt.auth) session_auth(hs);    /* the session is its subject's */
    fresh = 1;
  } else if ((hs = request_session(c, r)) == NULL) {
    return;
  }
  st = mcp__hstream_new(hs, c);
  mcp_http_conn_set_data(c, st);
  st->in_input = 1;
  hs->s.traceparent = r->traceparent;
  hs->s.tracestate = r->tracestate;
  mcp_session_input(&hs->s, r->body, r->body_len, st);
  hs->s.traceparent = hs->s.tracestate = NULL;
  st->in_input = 0;
  if (st->ended && st->mode != SSE) {           /* answered at once */
    mcp__hstream_unlink(st);
    mcp__hstream_free(st);
  }
  if (fresh && hs->s.revision < 0) session_end(hs, "initialize failed");
  else if (fresh) mcp_info("http: session %.8s started", hs->id);
}

/* GET: the standalone stream, or a resumption with Last-Event-ID. */
static void on_get(mcp_http_conn *c, const mcp_http_request *r) {
  hsession *hs;
  hstream *st = NULL;
  unsigned no = 0, after = 0;
  if (!header_has(r->accept, "text/event-stream") && !header_has(r->accept, "*/*")) {
    reply_error(c, 406, NULL, -32600, "Not Acceptable: Accept must list text/event-stream");
    return;
  }
  if ((hs = request_session(c, r)) == NULL) return;
  if (r->last_event_id != NULL) {
    if (sscanf(r->last_event_id, "%u-%u", &no, &after) != 2) {
      reply_error(c, 400, NULL, -32600, "Bad Request: malformed Last-Event-ID");
      return;
    }
    for (st = hs->streams; st && st->no != no; st = st->next) {}
    if (st == NULL) {
      reply_error(c, 404, NULL, -32600, "Stream not found (too old to resume)");
      return;
    }
  } else {
    st = hs->get;
    if (st == NULL) {
      st = mcp__hstream_new(hs, NULL);
      st->is_get = 1;
      st->mode = SSE;
      hs->get = st;
    }
    after = st->delivered;
  }
  if (st->conn != NULL) {
    reply_error(c, 409, NULL, -32600, "Conflict: the stream is already open");
    return;
  }
  mcp__hstream_resume(st, c, after, st->is_get && r->last_event_id == NULL);
}

static void on_delete(mcp_http_conn *c, const mcp_http_request *r) {
  hsession *hs = request_session(c, r);
  if (hs == NULL) return;
  session_end(hs, "session ended");
  mcp_http_respond(c, 200, NULL, NULL, NULL, 0);
}

/* Draining: does the POST carry a request (a new call)? Notifications
 * (a cancel) and responses (to a handler's question) still go in. */
static int drain_refuses(const mcp_http_request *r, json_t **id) {
  json_t *v = mcp_json_parse(r->body, r->body_len, NULL, 0), *m;
  int yes = 0;
  *id = NULL;
  if (json_is_object(v) && json_object_get(v, "method") && (m = json_object_get(v, "id")) != NULL) {
    yes = 1;
    *id = json_incref(m);
  }
  for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
    json_t *e = json_array_get(v, i);
    if (json_object_get(e, "method") && json_object_get(e, "id")) yes = 1;
  }
  json_decref(v);
  return yes;
}

static void reply_draining(mcp_http_conn *c, json_t *id) {
  mcp_buf out = MCP_BUF_INIT;
  char *key = id && (json_is_string(id) || json_is_integer(id))
                  ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  mcp_rpc_error(&out, key, RPC_DRAINING, "%s",
                "Service Unavailable: the server is shutting down (draining); retry elsewhere");
  mcp_http_respond(c, 503, "Retry-After: 5\r\n", "application/json", out.data, out.len);
  mcp_buf_free(&out);
  free(key);
}

static void serve(mcp_http_conn *c, const mcp_http_request *r);

/* With auth: a request whose token was accepted, served as id. */
static void serve_as(mcp_http_conn *c, const mcp_http_request *r, mcp_identity *id) {
  T.id = id;
  serve(c, r);
  T.id = NULL;
}

static void on_request(mcp_http_conn *c, const mcp_http_request *r) {
  if (mcp_probe_path(r->path) == 1) {          /* /healthz, /readyz: no secrets, no checks */
    mcp_probe_answer(c, r);
    return;
  }
  if (r->host == NULL && r->http_minor >= 1) {
    reply_error(c, 400, NULL, -32600, "Bad Request: HTTP/1.1 needs a Host header");
    return;
  }
  if (r->host != NULL && !mcp_http_host_allowed(&T.opt, r->host)) {
    reply_error(c, 421, NULL, -32600, "Misdirected Request: Host not allowed");
    return;
  }
  if (T.opt.auth && mcp_auth_is_metadata_path(r->path)) {
    mcp_http_auth_metadata(c, r);
    return;
  }
  if (mcp_server_card_on() && strcmp(r->path, MCP_SERVER_CARD_PATH) == 0) {
    mcp_server_card_answer(c, r);              /* public metadata: any Origin, no token */
    return;
  }
  if (r->origin != NULL && !mcp_http_origin_allowed(&T.opt, r->origin)) {
    reply_error(c, 403, NULL, -32600, "Forbidden: Origin not allowed");
    return;
  }
  /* The console (console.c): its own token, or with OAuth the token's scope. */
  if (mcp_console_path(r->path)) {
    if (T.opt.auth && mcp_console_bearer_only(r)) mcp_http_auth_begin(c, r, serve_as);
    else mcp_console_serve(c, r, NULL);
    return;
  }

  if (strcmp(r->path, "/mcp") == 0 && mcp_http_cors(c, r)) return;
  if (T.opt.auth) {                            /* the request waits for its token's check */
    mcp_http_auth_begin(c, r, serve_as);
    return;
  }
  if (T.opt.token != NULL && !mcp_http_token_ok(&T.opt, r->authorization)) {
    reply_error(c, 401, "WWW-Authenticate: Bearer realm=\"luamcp\"\r\n", -32600,
                "Unauthorized: a valid bearer token is required");
    return;
  }
  serve(c, r);
}

/* A request past the checks (with auth, T.id is its identity). */
static void serve(mcp_http_conn *c, const mcp_http_request *r) {
  if (mcp_console_path(r->path)) {
    mcp_console_serve(c, r, T.id);
    return;
  }
  if (strcmp(r->path, "/mcp") != 0) {
    if (mcp_probe_path(r->path) == 2)          /* /metrics: behind the same checks as /mcp */
      mcp_probe_answer(c, r);
    else
      reply_error(c, 404, NULL, -32600, "Not Found: the MCP endpoint is /mcp");
    return;
  }
  if (T.shutting_down) {
    reply_error(c, 503, NULL, -32600, "Service Unavailable: shutting down");
    return;
  }
  if (T.draining && r->method == HTTP_POST) {
    json_t *id;
    if (drain_refuses(r, &id)) {
      reply_draining(c, id);
      json_decref(id);
      return;
    }
  }
  if (r->method != HTTP_POST && is_rev2026_version(r->protocol_version)) {
    reply_error(c, 405, "Allow: POST\r\n", -32600,
                "Method Not Allowed: a 2026-07-28 client sends every message with POST");
    return;
  }
  switch (r->method) {
    case HTTP_POST: on_post(c, r); break;
    case HTTP_GET: on_get(c, r); break;
    case HTTP_DELETE: on_delete(c, r); break;
    default:
      reply_error(c, 405, "Allow: GET, POST, DELETE\r\n", -32600, "Method Not Allowed");
  }
}

/* A connection went away. In these revisions that cancels nothing: the
 * stream keeps its messages for a resumption. */
static void on_close(mcp_http_conn *c, void *ud) {
  hstream *st = ud;
  if (st != NULL && mcp_console_closed(c, ud)) return;
  if (st == NULL) {
    if (T.opt.auth && mcp_http_auth_waiting()) mcp_http_auth_closed(c);
    return;
  }
  st->conn = NULL;
  if (st->hs->rev2026) {             /* 2026-07-28: closing the stream cancels the request */
    if (!st->ended) mcp_rev2026_stream_closed(&st->hs->s, st, "client disconnected");
    return;
  }
  mcp_debug("http: session %.8s: stream %u lost its connection%s", st->hs->id, st->no,
            st->ended ? "" : " (the request goes on)");
  if (st->ended && !st->is_get) mcp__hstream_retire(st);
}

static void collect(mcp_buf *b);

static mcp_http_config config(const mcp_http_options *opt) {
  if (!T.collecting) mcp_metrics_collector(collect);
  T.collecting = 1;
  mcp_http_config cfg = {
    .max_body = opt->max_body,
    .max_header = 16384,
    .max_connections = opt->max_connections,
    .idle_ms = opt->idle_ms,
    .header_ms = opt->header_ms ? opt->header_ms : 10000,
    .max_pending = 8u << 20,
    .on_request = on_request,
    .on_close = on_close,
    .collect_prefix = MCP_PARAM_PREFIX,
  };
  return cfg;
}

int mcp_http_start(uv_loop_t *loop, const mcp_http_options *opt) {
  mcp_http_config cfg = config(opt);
  int r;
  T.opt = *opt;
  if ((r = mcp_http_listen(loop, opt->host, opt->port, &cfg, &T.listener)) == 0)
    mcp_server_card_listening(opt->host, mcp_http_port());
  return r;
}

int mcp_http_serve_fd(uv_loop_t *loop, const mcp_http_options *opt, uv_os_sock_t fd) {
  mcp_http_config cfg = config(opt);
  if (T.shutting_down && T.sessions == NULL && T.on_closed == NULL) T.shutting_down = 0;
  T.opt = *opt;
  return mcp_http_conn_adopt(loop, &cfg, fd);
}

int mcp_http_port(void) { return mcp_http_listener_port(T.listener); }

void mcp_http_drain(void) {
  if (T.draining) return;
  T.draining = 1;
  mcp_http_unlisten(T.listener);
  T.listener = NULL;
}

/* /metrics' gauge of this file, a collector (metrics.h): probe.c, below, never calls up here. */
static void collect(mcp_buf *b) {
  int n = 0;
  for (hsession *hs = T.sessions; hs; hs = hs->next)
    for (hstream *st = hs->streams; st; st = st->next)
      if (st->mode == SSE && st->conn != NULL) n++;
  mcp_metric_head(b, "luamcp_sse_streams", "gauge", "Server-Sent Events streams open on a connection.");
  mcp_metric_sample(b, "luamcp_sse_streams", NULL, n);
}

void mcp_http_shutdown(void (*on_closed)(void)) {
  T.shutting_down = 1;
  T.on_closed = on_closed;
  if (T.sessions == NULL) {
    T.on_closed = NULL;
    mcp_http_close(on_closed);
    return;
  }
  for (hsession *hs = T.sessions, *next; hs; hs = next) {
    next = hs->next;
    session_end(hs, "shutdown");
  }
}
