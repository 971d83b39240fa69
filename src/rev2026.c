/* Protocol revision 2026-07-28: stateless requests beside the sessions of
 * the earlier revisions, in one process.
 *
 * A request is of this revision when its params._meta names the protocol
 * version (server/discover is answered without it too). It needs no
 * initialize: its client capabilities and log level come with it. It runs in
 * an ephemeral session of its own (struct eph), created here and freed here
 * when its one call is done (the session's on_drained), so the core's rules
 * (one table of requests per session, the state machine) apply unchanged.
 * The ephemeral session writes through the session that read the request
 * (its parent: stdio's, or the HTTP transport's stateless one), adding the
 * fields this revision's results must carry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "rev2026.h"
#include "rpc.h"
#include "sched.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LEVEL "io.modelcontextprotocol/logLevel"

/* One stateless request's session. Owned here: freed when its call is done. */
typedef struct {
  mcp_session s;           /* first */
  mcp_call *call;          /* its one call (live as long as the session) */
  void *stream;            /* the parent's stream it answers on */
  unsigned cacheable : 1;  /* results carry ttlMs and cacheScope */
} eph;

static json_t *meta_of(json_t *msg) {
  return json_object_get(json_object_get(msg, "params"), "_meta");
}

const char *mcp_rev2026_version(json_t *msg) {
  return json_string_value(json_object_get(meta_of(msg), META_VERSION));
}

int mcp_rev2026_has_method(const char *method) {
  static const char *const removed[] = {
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", NULL
  };
  if (strcmp(method, "server/discover") == 0) return 1;
  for (int i = 0; removed[i]; i++)
    if (strcmp(method, removed[i]) == 0) return 0;
  return mcp_sched_has_method(method);
}

/* ["2026-07-28", then the session revisions, newest first] */
static void add_supported(mcp_buf *b) {
  int n = 0;
  while (mcp_revisions[n]) n++;
  mcp_buf_adds(b, "[\"" MCP_REV_2026 "\"");
  while (n-- > 0) mcp_buf_printf(b, ",\"%s\"", mcp_revisions[n]);
  mcp_buf_addc(b, ']');
}

int mcp_rev2026_check(json_t *msg, const char *key, mcp_buf *out) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  const char *version = mcp_rev2026_version(msg);
  json_t *level = json_object_get(meta_of(msg), META_LEVEL);
  char text[400];
  if (method == NULL) method = "";
  if (version == NULL && strcmp(method, "server/discover") != 0) {
    mcp_rpc_error(out, key, MCP_RPC_INVALID_PARAMS,
                  "Invalid params: params._meta[\"" META_VERSION "\"] is required");
    return 400;
  }
  if (version != NULL && strcmp(version, MCP_REV_2026) != 0) {
    mcp_buf_adds(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (key) mcp_buf_add(out, key, strlen(key));
    else mcp_buf_adds(out, "null");
    mcp_buf_printf(out, ",\"error\":{\"code\":%d,\"message\":\"Unsupported protocol version\","
                        "\"data\":{\"supported\":", MCP_RPC_UNSUPPORTED_VERSION);
    add_supported(out);
    mcp_buf_adds(out, ",\"requested\":");
    mcp_json_add_string(out, version, strlen(version));
    mcp_buf_adds(out, "}}}");
    return 400;
  }
  if (level != NULL && (!json_is_string(level) || mcp_log_level_parse(json_string_value(level)) < 0)) {
    mcp_rpc_error(out, key, MCP_RPC_INVALID_PARAMS,
                  "Invalid params: _meta[\"" META_LEVEL "\"] must be a log level name");
    return 400;
  }
  if (!mcp_rev2026_has_method(method)) {
    snprintf(text, sizeof text, "Method not found: %.256s", method);
    mcp_rpc_error(out, key, MCP_RPC_METHOD_NOT_FOUND, "%s", text);
    return 404;
  }
  return 0;
}

/* The server's capabilities as this revision states them: list changes and
 * resource updates come only through subscriptions/listen, not served yet. */
static void add_capabilities(mcp_buf *b) {
  mcp_buf caps = MCP_BUF_INIT;
  json_t *v, *x;
  char *text;
  mcp_sched_capabilities(&caps);
  v = json_loadb(caps.data, caps.len, 0, NULL);
  mcp_buf_free(&caps);
  if (!json_is_object(v)) {
    mcp_buf_adds(b, "{}");
    json_decref(v);
    return;
  }
  if ((x = json_object_get(v, "tools"))) json_object_del(x, "listChanged");
  if ((x = json_object_get(v, "prompts"))) json_object_del(x, "listChanged");
  if ((x = json_object_get(v, "resources"))) {
    json_object_del(x, "listChanged");
    json_object_del(x, "subscribe");
  }
  text = json_dumps(v, JSON_COMPACT);
  if (text) mcp_buf_add(b, text, strlen(text));
  else mcp_buf_adds(b, "{}");
  free(text);
  json_decref(v);
}

static void discover(mcp_session *s, const char *key, void *stream) {
  mcp_buf out = MCP_BUF_INIT, *b = &out;   /* not the scratch: capabilities use it */
  mcp_rpc_result_open(b, key);
  mcp_buf_adds(b, "{\"resultType\":\"complete\",\"supportedVersions\":");
  add_supported(b);
  mcp_buf_adds(b, ",\"capabilities\":");
  add_capabilities(b);
  mcp_buf_printf(b, ",\"ttlMs\":0,\"cacheScope\":\"public\",\"_meta\":{"
                    "\"io.modelcontextprotocol/serverInfo\":{\"name\":\"luamcp\",\"version\":\"%s\"}}}",
                 LUAMCP_VERSION);
  mcp_rpc_close(b);
  s->write(s, stream, b->data, b->len, 1);
  mcp_buf_free(&out);
}

/* The ephemeral session's writer: results get the fields this revision
 * requires (resultType; ttlMs and cacheScope on cacheable ones), then the
 * message goes out through the parent. */
static void eph_write(mcp_session *s, void *stream, const char *data, size_t len, int last) {
  eph *e = (eph *)s;
  mcp_session *p = s->parent;
  mcp_buf want = MCP_BUF_INIT, out = MCP_BUF_INIT;
  if (data != NULL && last) {
    mcp_rpc_result_open(&want, e->call->req.key);
    mcp_buf_addc(&want, '{');
    if (len > want.len && memcmp(data, want.data, want.len) == 0) {
      int empty = data[want.len] == '}';
      mcp_buf_add(&out, want.data, want.len);
      mcp_buf_adds(&out, "\"resultType\":\"complete\"");
      if (e->cacheable) mcp_buf_adds(&out, ",\"ttlMs\":0,\"cacheScope\":\"private\"");
      if (!empty) mcp_buf_addc(&out, ',');
      mcp_buf_add(&out, data + want.len, len - want.len);
      data = out.data;
      len = out.len;
    }
  }
  p->write(p, stream, data, len, last);
  mcp_buf_free(&want);
  mcp_buf_free(&out);
}

static void eph_drained(mcp_session *s) {
  mcp_session *p = s->parent;
  mcp_session_close(s);
  free(s);
  if (--p->ncalls == 0 && p->on_drained) p->on_drained(p);
}

static int is_cacheable(const char *method) {
  static const char *const m[] = {
    "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", NULL
  };
  for (int i = 0; m[i]; i++)
    if (strcmp(method, m[i]) == 0) return 1;
  return 0;
}

int mcp_rev2026_request(mcp_session *s, json_t *msg, const char *key, void *stream) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  json_t *meta = meta_of(msg), *caps, *params = json_object_get(msg, "params");
  const char *level;
  mcp_buf *out;
  eph *e;
  if (mcp_rev2026_version(msg) == NULL && strcmp(method, "server/discover") != 0) return 0;
  out = mcp_scratch();
  if (mcp_rev2026_check(msg, key, out) != 0) {
    s->write(s, stream, out->data, out->len, 1);
    return 1;
  }
  /* One channel (stdio): ids name requests for notifications/cancelled, so
   * they must be unique there. Over HTTP each request has its own stream. */
  if (stream == NULL &&
      (mcp_reqtab_find(&s->reqs, key, strlen(key)) || mcp_rev2026_find(s, key, strlen(key)))) {
    out = mcp_scratch();
    mcp_rpc_error(out, key, MCP_RPC_INVALID_REQUEST,
                  "Invalid Request: request id %.64s is already in flight", key);
    s->write(s, stream, out->data, out->len, 1);
    return 1;
  }
  if (strcmp(method, "server/discover") == 0) {
    discover(s, key, stream);
    return 1;
  }
  e = calloc(1, sizeof *e);
  if (e == NULL) abort();
  mcp_session_init(&e->s, eph_write, e);
  e->s.parent = s;
  e->s.modern = 1;
  e->s.on_drained = eph_drained;
  e->stream = stream;
  e->cacheable = is_cacheable(method) != 0;
  level = json_string_value(json_object_get(meta, META_LEVEL));
  /* Without a log level, no notifications/message for this request. */
  e->s.log_level = level ? (mcp_log_level)mcp_log_level_parse(level) : MCP_LOG_NLEVELS;
  caps = json_object_get(meta, META_CAPS);
  e->s.client_capabilities = json_is_object(caps) ? json_incref(caps) : json_object();
  s->ncalls++;
  e->s.ncalls++;
  e->call = mcp_call_start(&e->s, NULL, stream, key, strlen(key), method, params);
  return 1;
}

mcp_req *mcp_rev2026_find(mcp_session *s, const char *key, size_t keylen) {
  for (mcp_session *x = mcp_sessions; x; x = x->next) {
    mcp_req *r;
    if (x->modern && x->parent == s && (r = mcp_reqtab_find(&x->reqs, key, keylen)) != NULL)
      return r;
  }
  return NULL;
}

void mcp_rev2026_stream_closed(mcp_session *s, void *stream, const char *reason) {
  mcp_call *c = NULL;
  for (mcp_session *x = mcp_sessions; x; x = x->next)
    if (x->modern && x->parent == s && ((eph *)x)->stream == stream) {
      c = ((eph *)x)->call;
      break;
    }
  if (c == NULL) return;
  mcp_info("request %s cancelled: %s", c->req.key, reason);
  mcp_call_fire(c, MCP_EV_CANCEL, reason);
}
