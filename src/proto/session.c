/* Sessions: classify incoming JSON-RPC messages, the lifecycle (revision
 * negotiation, initialize, ping, logging/setLevel), cancellation notices,
 * batches; everything else becomes a call. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "json.h"
#include "metrics.h"
#include "rpc.h"
#include "sched.h"
#include "identity.h"
#include "session.h"
#include "trace.h"

const char *const mcp_revisions[] = {
  "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", NULL
};
#define REV_LATEST 3
#define REV_BATCHES 1     /* batches exist in 2025-03-26 only */
#define KEY_MAX MCP_KEY_MAX      /* longer ids are refused */

/* A JSON-RPC batch: answered as one array once its last call is done.
 * Owned by the session code: freed when answered. */
struct mcp_batch {
  mcp_session *session;
  void *stream;
  mcp_buf out;               /* "[" and the responses so far */
  int count;                 /* responses in out */
  int pending;               /* calls still live */
  int reading;               /* still handing out its elements */
};

mcp_session *mcp_sessions;
static long long last_id;
static size_t in_len;             /* the size of the message being read (0 in a batch) */
static const mcp_session_type *types[8];   /* the rows registered */
static int ntypes;
static mcp_json_known known;              /* a row's (the first that has one), or NULL */

void mcp_session_register(const mcp_session_type *t) {
  for (int i = 0; i < ntypes; i++)
    if (types[i] == t) return;
  if (ntypes == (int)(sizeof types / sizeof types[0])) abort();
  types[ntypes++] = t;
  if (known == NULL) known = t->known;
}

_Static_assert(offsetof(mcp_session, reqs) == 0, "reqs first: mcp__session_init zeroes what follows");

void mcp__session_init(mcp_session *s, mcp_session_write_cb write, void *transport) {
  memset((char *)s + sizeof s->reqs, 0, sizeof *s - sizeof s->reqs);   /* reqs: its own init */
  s->id = ++last_id;
  mcp_reqtab_init(&s->reqs);
  s->revision = -1;
  s->log_level = MCP_LOG_INFO;
  s->write = write;
  s->transport = transport;
  s->next = mcp_sessions;
  if (mcp_sessions != NULL) mcp_sessions->prev = s;
  mcp_sessions = s;
}

void mcp_session_collect(mcp_buf *b) {
  int n = 0;
  for (mcp_session *s = mcp_sessions; s; s = s->next)
    if (s->revision >= 0 && !s->rev2026) n++;
  mcp_metric_head(b, "luamcp_sessions", "gauge", "Initialized MCP sessions (stdio's, HTTP's).");
  mcp_metric_sample(b, "luamcp_sessions", NULL, n);
}

mcp_session *mcp_session_find(long long id) {
  for (mcp_session *s = mcp_sessions; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

void mcp_session_close(mcp_session *s) {
  for (int i = 0; i < ntypes; i++)
    if (types[i]->closed) types[i]->closed(s);
  if (!s->rev2026) mcp_sched_session_closed(s->id);   /* a stateless request subscribes to nothing */
  if (s->prev != NULL || mcp_sessions == s) {        /* linked: unlinked, with no walk */
    if (s->prev != NULL) s->prev->next = s->next;
    else mcp_sessions = s->next;
    if (s->next != NULL) s->next->prev = s->prev;
    s->prev = NULL;                                   /* next kept: a walk that closes s goes on */
  }
  mcp_reqtab_close(&s->reqs);
  free(s->init_key);
  if (s->client_capabilities) json_decref(s->client_capabilities);
  s->init_key = NULL;
  s->client_capabilities = NULL;
  mcp_identity_unref(s->auth);
  s->auth = NULL;
}

void mcp_session_send(mcp_session *s, mcp_batch *b, void *stream, const char *data, size_t len,
                      int last) {
  if (b != NULL && last) {
    if (b->count++ > 0) mcp_buf_addc(&b->out, ',');
    mcp_buf_add(&b->out, data, len);
    return;
  }
  s->write(s, stream, data, len, last);
}

static void batch_answer(mcp_batch *b) {
  if (b->count > 0) {
    mcp_buf_addc(&b->out, ']');
    b->session->write(b->session, b->stream, b->out.data, b->out.len, 1);
  } else {
    b->session->write(b->session, b->stream, NULL, 0, 1);
  }
  mcp_buf_free(&b->out);
  free(b);
}

/* The calls a session starts: it owns them. */

static void owner_respond(mcp_call *c, const char *data, size_t len) {
  mcp_session_send(c->session, c->batch, c->stream, data, len, 1);
}

/* Its requests to the client are ops of the call: stopping it cancels them. */
static void owner_stopping(mcp_call *c, const char *reason) {
  (void)c; (void)reason;
}

/* Its exchange ends (with no message when it sent no response); a batch is
 * answered when it was its last call. */
static void owner_gone(mcp_call *c) {
  mcp_session *s = c->session;
  mcp_batch *b = c->batch;
  mcp_reqtab_remove(&s->reqs, &c->req);
  s->ncalls--;
  if (b != NULL) {
    if (--b->pending == 0 && !b->reading) batch_answer(b);
  } else if (!c->responded) {
    s->write(s, c->stream, NULL, 0, 1);
  }
  if (s->ncalls == 0 && s->on_drained) s->on_drained(s);
}

static const char *owner_session_name(const mcp_call *c) {
  const mcp_session *s = c->session;
  if (s->name[0]) return s->name;
  return s->parent && s->parent->name[0] ? s->parent->name : NULL;
}

static const char *owner_client_name(const mcp_call *c) {
  const mcp_session *s = c->session;
  if (s->client[0]) return s->client;
  return s->parent && s->parent->client[0] ? s->parent->client : NULL;
}

const mcp_call_owner mcp_session_owner = { owner_respond, owner_stopping, owner_gone,
                                           owner_session_name, owner_client_name };

/* c's SERVER span, with what its session (or, for a 2026-07-28 request,
 * the transport's session it came on) knows; meta: a call read from its
 * text's _meta tree (NULL: none, or a progressToken alone). */
static void trace_server(mcp_call *c, const mcp_session *s, const json_t *meta) {
  const mcp_session *t = s->parent ? s->parent : s;
  const char *args;
  size_t n;
  int text = mcp_call_args_text(c, &args, &n);      /* no params tree made for the span */
  mcp_trace_origin o = { t->traceparent, t->tracestate, NULL, NULL, t->tcp ? "tcp" : "pipe", NULL,
                         text ? NULL : mcp_call_params(c), text, meta };
  if (s->revision >= 0) o.protocol_version = mcp_revisions[s->revision];
  if (t->digest[0]) o.session_digest = t->digest;
  if (s->auth || t->auth) o.enduser = mcp_identity_subject(s->auth ? s->auth : t->auth);
  mcp_trace_server(c, &o);
}

/* c, just started for s, is s's. */
static mcp_call *call_own(mcp_session *s, mcp_batch *b, void *stream, mcp_call *c, const json_t *meta) {
  c->session = s;
  c->batch = b;
  c->stream = stream;
  c->bytes_in = (uint32_t)in_len;
  if (mcp_reqtab_insert(&s->reqs, &c->req) != 0) abort();   /* the caller checked */
  if (mcp_trace_on) trace_server(c, s, meta);
  return c;
}

mcp_call *mcp_session_call_start(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                                 const char *method, json_t *params) {
  return call_own(s, b, stream, mcp_call_start(&mcp_session_owner, s->id, key, strlen(key), method, params),
                  NULL);
}

mcp_call *mcp_session_call_start_text(mcp_session *s, void *stream, const char *key,
                                      const mcp_request_text *rt, const json_t *meta) {
  return call_own(s, NULL, stream,
                  mcp_call_start_text(&mcp_session_owner, s->id, key, strlen(key), "tools/call", rt), meta);
}

static int of_session(const mcp_call *c, void *ud) {
  mcp_session *s = ud;
  return c->session == s || c->session->parent == s;
}

void mcp_session_close_calls(mcp_session *s, const char *reason) {
  mcp_sched_close_all(of_session, s, reason);
}

/* The exchange being read: immediate answers go on its stream. */
static void *in_stream;

static void send_error(mcp_session *s, mcp_batch *b, const char *key, int code, const char *msg) {
  mcp_buf *out = mcp_scratch();
  mcp_rpc_error(out, key, code, "%s", msg);
  mcp_session_send(s, b, in_stream, out->data, out->len, 1);
}

void mcp_session_reject(mcp_session *s, int code, const char *msg, void *stream) {
  in_stream = stream;
  send_error(s, NULL, NULL, code, msg);
}

static void send_result(mcp_session *s, mcp_batch *b, const char *key, const char *result) {
  mcp_buf *out = mcp_scratch();
  mcp_rpc_result_open(out, key);
  mcp_buf_add(out, result, strlen(result));
  mcp_rpc_close(out);
  mcp_session_send(s, b, in_stream, out->data, out->len, 1);
}

/* The exact JSON text of a string or integer id, NUL-terminated. */
static int id_key(const json_t *id, char *key, size_t cap) {
  mcp_buf *b;
  if (json_is_integer(id)) {
    (void)cap;                       /* KEY_MAX holds any int64 */
    mcp_fmt_int(key, (long long)json_integer_value(id));
    return 1;
  }
  if (!json_is_string(id)) return 0;
  b = mcp_scratch();
  mcp_json_add_string(b, json_string_value(id), json_string_length(id));
  if (b->len >= cap) return 0;
  memcpy(key, b->data, b->len);
  key[b->len] = '\0';
  return 1;
}

static void on_initialize(mcp_session *s, mcp_batch *b, const char *key, json_t *params) {
  const char *want = json_string_value(json_object_get(params, "protocolVersion"));
  int rev = REV_LATEST;
  mcp_buf *caps;
  if (b != NULL) {
    send_error(s, b, key, MCP_RPC_INVALID_REQUEST,
               "Invalid Request: initialize must not be part of a batch");
    return;
  }
  if (s->revision >= 0) {
    send_error(s, b, key, MCP_RPC_INVALID_REQUEST, "Invalid Request: already initialized");
    return;
  }
  if (!json_is_object(params) || want == NULL) {
    send_error(s, b, key, MCP_RPC_INVALID_PARAMS,
               "Invalid params: initialize needs params.protocolVersion (a string)");
    return;
  }
  for (int i = 0; mcp_revisions[i]; i++)
    if (strcmp(mcp_revisions[i], want) == 0) rev = i;
  s->revision = rev;
  s->init_key = strdup(key);
  s->client_capabilities = json_incref(json_object_get(params, "capabilities"));
  caps = mcp_scratch();
  mcp_rpc_result_open(caps, key);
  mcp_buf_printf(caps, "{\"protocolVersion\":\"%s\",\"capabilities\":", mcp_revisions[rev]);
  mcp_sched_capabilities(caps);
  mcp_buf_printf(caps, ",\"serverInfo\":{\"name\":\"luamcp\",\"version\":\"%s\"}}}",
                 LUAMCP_VERSION);
  mcp_session_send(s, b, in_stream, caps->data, caps->len, 1);
  {
    json_t *info = json_object_get(params, "clientInfo");
    const char *name = json_string_value(json_object_get(info, "name"));
    snprintf(s->client, sizeof s->client, "%s", name ? name : "");
    mcp_info("session initialized: protocol %s (client asked %.32s), client %.64s",
             mcp_revisions[rev], want, name ? name : "(unnamed)");
  }
}

static void on_set_level(mcp_session *s, mcp_batch *b, const char *key, json_t *params) {
  const char *name = json_string_value(json_object_get(params, "level"));
  int level = name ? mcp_log_level_parse(name) : -1;
  if (level < 0) {
    send_error(s, b, key, MCP_RPC_INVALID_PARAMS,
               "Invalid params: level must be one of debug, info, notice, warning, error, "
               "critical, alert, emergency");
    return;
  }
  s->log_level = (mcp_log_level)level;
  send_result(s, b, key, "{}");
}

static void on_request(mcp_session *s, mcp_batch *b, const char *key, const char *method,
                       json_t *params) {
  char msg[600];
  if (mcp_reqtab_find(&s->reqs, key, strlen(key)) != NULL) {
    snprintf(msg, sizeof msg, "Invalid Request: request id %.64s is already in flight", key);
    send_error(s, b, key, MCP_RPC_INVALID_REQUEST, msg);
    return;
  }
  if (strcmp(method, "initialize") == 0) {
    on_initialize(s, b, key, params);
    return;
  }
  if (strcmp(method, "ping") == 0) {
    send_result(s, b, key, "{}");
    return;
  }
  if (s->revision < 0) {
    send_error(s, b, key, MCP_RPC_INVALID_REQUEST,
               "Invalid Request: server not initialized (send initialize first)");
    return;
  }
  if (strcmp(method, "logging/setLevel") == 0) {
    on_set_level(s, b, key, params);
    return;
  }
  for (int i = 0; i < ntypes && strcmp(method, "tools/call") != 0; i++)
    if (types[i]->request && types[i]->request(s, b, in_stream, key, method, params)) return;
  if (!mcp_sched_has_method(method)) {
    snprintf(msg, sizeof msg, "Method not found: %.256s", method);
    send_error(s, b, key, MCP_RPC_METHOD_NOT_FOUND, msg);
    return;
  }
  mcp_session_call_start(s, b, in_stream, key, method, params);
  s->ncalls++;
  if (b != NULL) b->pending++;
}

/* The request a notifications/cancelled names (key: its id's exact text;
 * reason: NULL when none was given). */
static void cancel_request(mcp_session *s, const char *key, const char *reason) {
  mcp_req *req;
  int state;
  req = mcp_reqtab_find(&s->reqs, key, strlen(key));
  for (int i = 0; req == NULL && i < ntypes; i++)          /* subscriptions/listen (stdio) */
    if (types[i]->cancel && types[i]->cancel(s, key, reason ? reason : "cancelled by the client"))
      return;
  for (int i = 0; req == NULL && i < ntypes; i++)          /* stateless requests (stdio) */
    if (types[i]->find) req = types[i]->find(s, key, strlen(key));
  if (req != NULL) {
    mcp_call_fire((mcp_call *)req, MCP_EV_CANCEL, reason ? reason : "(no reason given)");
    return;
  }
  if (s->init_key && strcmp(s->init_key, key) == 0) {
    mcp_debug("cancel ignored: initialize cannot be cancelled");
    return;
  }
  state = mcp_reqtab_recent(&s->reqs, key, strlen(key));
  if (state >= 0)
    mcp_debug("cancel ignored: request %.64s already %s", key, mcp_req_state_name(state));
  else
    mcp_debug("cancel ignored: unknown request %.64s", key);
}

/* notifications/cancelled. Invalid ones are ignored, as the spec says, but
 * never silently: each reason is logged at debug. */
static void on_cancelled(mcp_session *s, json_t *params) {
  json_t *rid = json_object_get(params, "requestId");
  const char *reason = json_string_value(json_object_get(params, "reason"));
  char key[KEY_MAX];
  if (!json_is_object(params)) {
    mcp_debug("cancel ignored: malformed notification: params missing");
    return;
  }
  if (rid == NULL) {
    mcp_debug("cancel ignored: malformed notification: requestId missing");
    return;
  }
  if (!id_key(rid, key, sizeof key)) {
    mcp_debug("cancel ignored: malformed notification: requestId must be a string or an integer");
    return;
  }
  cancel_request(s, key, reason);
}

static int progress(mcp_session *s, json_t *token) {
  for (int i = 0; i < ntypes; i++)
    if (types[i]->progress && types[i]->progress(s, token)) return 1;
  return 0;
}

static int response(mcp_session *s, json_t *msg) {
  for (int i = 0; i < ntypes; i++)
    if (types[i]->response && types[i]->response(s, msg)) return 1;
  return 0;
}

static void on_notification(mcp_session *s, const char *method, json_t *params) {
  if (strcmp(method, "notifications/cancelled") == 0) on_cancelled(s, params);
  else if (strcmp(method, "notifications/initialized") == 0) s->ready = 1;
  else if (strcmp(method, "notifications/progress") == 0) {
    if (!progress(s, json_object_get(params, "progressToken")))
      mcp_debug("progress ignored: no request of ours has that token");
  }
  else if (strcmp(method, "notifications/luamcp/advance") == 0 && mcp_cfg.test_clock) {
    double seconds = json_number_value(json_object_get(params, "seconds"));
    mcp_debug("test clock: advanced by %g s", seconds);
    if (seconds > 0) {
      mcp_clock_advance(seconds);
      for (int i = 0; i < ntypes; i++)   /* tasks past their ttl go first, */
        if (types[i]->clock) types[i]->clock();
      mcp_deadlines_run();           /* then what is due fires, earliest first */
    }
  }
  else if (strcmp(method, "notifications/luamcp/fail_alloc") == 0 && mcp_cfg.test_clock) {
    json_int_t n = json_integer_value(json_object_get(params, "n"));
    mcp_debug("test: Lua allocation %lld of the next resumes fails", (long long)n);
    mcp_sched_fail_alloc(n > 0 ? (unsigned long)n : 0);
  }
  else mcp_debug("notification %.128s ignored", method);
}

static void on_message(mcp_session *s, mcp_batch *b, json_t *msg) {
  json_t *id = json_object_get(msg, "id"), *method, *params;
  const char *version;
  char key[KEY_MAX];
  int has_key;
  if (!json_is_object(msg)) {
    send_error(s, b, NULL, MCP_RPC_INVALID_REQUEST, "Invalid Request: a message must be a JSON object");
    return;
  }
  has_key = id_key(id, key, sizeof key);
  version = json_string_value(json_object_get(msg, "jsonrpc"));
  method = json_object_get(msg, "method");
  if (version == NULL || strcmp(version, "2.0") != 0) {
    if (method == NULL && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
      /* a response is never answered: its id is one of ours, not the client's */
      mcp_debug("response ignored: jsonrpc must be \"2.0\"");
      if (b == NULL) s->write(s, in_stream, NULL, 0, 1);
      return;
    }
    send_error(s, b, has_key ? key : NULL, MCP_RPC_INVALID_REQUEST,
               "Invalid Request: jsonrpc must be \"2.0\"");
    return;
  }
  if (method == NULL) {
    if (id != NULL && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
      if (!response(s, msg))
        mcp_debug("response ignored: no request %.64s was sent", has_key ? key : "(bad id)");
      if (b == NULL) s->write(s, in_stream, NULL, 0, 1);
      return;
    }
    send_error(s, b, has_key ? key : NULL, MCP_RPC_INVALID_REQUEST, "Invalid Request: method missing");
    return;
  }
  if (!json_is_string(method)) {
    send_error(s, b, has_key ? key : NULL, MCP_RPC_INVALID_REQUEST,
               "Invalid Request: method must be a string");
    return;
  }
  params = json_object_get(msg, "params");
  if (params != NULL && !json_is_object(params) && !json_is_array(params)) {
    send_error(s, b, has_key ? key : NULL, MCP_RPC_INVALID_REQUEST,
               "Invalid Request: params must be an object or an array");
    return;
  }
  if (id == NULL) {
    on_notification(s, json_string_value(method), params);
    if (b == NULL) s->write(s, in_stream, NULL, 0, 1);
    return;
  }
  if (!has_key) {
    send_error(s, b, NULL, MCP_RPC_INVALID_REQUEST,
               json_is_string(id) ? "Invalid Request: id too long"
                                  : "Invalid Request: id must be a string or an integer");
    return;
  }
  /* 2026-07-28: a request naming its revision in _meta is served statelessly. */
  for (int i = 0; b == NULL && i < ntypes; i++)
    if (types[i]->stateless && types[i]->stateless(s, msg, key, in_stream)) return;
  on_request(s, b, key, json_string_value(method), params);
}

static void on_batch(mcp_session *s, json_t *arr) {
  mcp_batch *b;
  char msg[128];
  size_t i;
  if (json_array_size(arr) == 0) {
    send_error(s, NULL, NULL, MCP_RPC_INVALID_REQUEST, "Invalid Request: empty batch");
    return;
  }
  if (s->revision != REV_BATCHES) {
    snprintf(msg, sizeof msg, "Invalid Request: batches are not supported %s%s",
             s->revision < 0 ? "before initialize" : "in protocol revision ",
             s->revision < 0 ? "" : mcp_revisions[s->revision]);
    send_error(s, NULL, NULL, MCP_RPC_INVALID_REQUEST, msg);
    return;
  }
  b = calloc(1, sizeof *b);
  if (b == NULL) abort();
  in_len = 0;                        /* an element's size is not known */
  b->session = s;
  b->stream = in_stream;
  b->reading = 1;
  mcp_buf_addc(&b->out, '[');
  for (i = 0; i < json_array_size(arr); i++) on_message(s, b, json_array_get(arr, i));
  b->reading = 0;
  if (b->pending == 0) batch_answer(b);
}

/* A plain notifications/cancelled is read from its text, with no tree:
 * cancelling 10,000 calls costs about what waking them does. Plain: no
 * backslash anywhere (no escape, so no \u0000 in a key and every string is
 * its text), none of jsonrpc, method, params, requestId and reason given
 * twice, no id, requestId a string or an integer other than -0, and at most
 * 8 members in each object. Anything else is parsed as every message is,
 * with the same outcome. */
#define CANCEL_TEXT "\"notifications/cancelled\""
#define CALL_TEXT "\"tools/call\""      /* read from its text likewise (below) */
#define QUICK_MAX 1024             /* longer texts are parsed */

/* key: a literal shorter than m->key, so that the compare is a few loads. */
static inline int member_is(const mcp_json_member *m, const char *key) {
  return memcmp(m->key, key, strlen(key) + 1) == 0;
}

static int value_is(const mcp_json_member *m, const char *text, size_t n) {
  return m->vn == n && memcmp(m->v, text, n) == 0;
}

/* The key id_key makes of a string or integer id, from the id's text (a
 * string with no escape is its own encoding); 0 for any other value. */
static int text_key(const mcp_json_member *id, char *key) {
  if (id->v[0] != '"') {
    for (size_t i = 0; i < id->vn; i++)
      if ((id->v[i] < '0' || id->v[i] > '9') && !(i == 0 && id->v[i] == '-')) return 0;
    if (id->vn == 2 && id->v[0] == '-' && id->v[1] == '0') return 0;
  }
  memcpy(key, id->v, id->vn);
  key[id->vn] = '\0';
  return 1;
}

/* Which of the two methods read from their text (above and below) that
 * are wanted the text holds, quoted: NAMED_CANCEL, NAMED_CALL. Each has one
 * '/', found first: few texts have one (a 2026-07-28 _meta's keys have
 * three), so one scan serves both readings. */
enum { NAMED_CANCEL = 1, NAMED_CALL = 2 };
static const struct { const char *text; size_t len, before; int bit; } named_methods[] = {
  { CANCEL_TEXT, sizeof CANCEL_TEXT - 1, sizeof "\"notifications" - 1, NAMED_CANCEL },
  { CALL_TEXT, sizeof CALL_TEXT - 1, sizeof "\"tools" - 1, NAMED_CALL },
};

static inline int names(const char *data, size_t len, int want) {
  const char *end = data + len, *p = data;
  int got = 0;
  while (want && (p = memchr(p, '/', (size_t)(end - p))) != NULL) {
    for (int i = 0; i < 2; i++) {
      const char *m = named_methods[i].text;
      size_t before = named_methods[i].before, after = named_methods[i].len - before - 1;
      if ((want & named_methods[i].bit) && (size_t)(p - data) >= before && (size_t)(end - p - 1) >= after &&
          p[-1] == m[before - 1] && memcmp(p - before, m, before) == 0 &&
          memcmp(p + 1, m + before + 1, after) == 0)
        got |= named_methods[i].bit;
    }
    p++;
  }
  return got;
}

static int quick_cancel(mcp_session *s, const char *data, size_t len, int named) {
  mcp_json_member m[8], p[8];
  const mcp_json_member *params = NULL, *rid = NULL, *why = NULL;
  char key[QUICK_MAX], reason[QUICK_MAX];
  int n, np, version = 0, method = 0;
  if (len > QUICK_MAX || !(named & NAMED_CANCEL) ||
      memchr(data, '\\', len) != NULL || (n = mcp_json_members_in(data, len, m, 8, "params", p, &np, NULL)) < 0)
    return 0;
  for (int i = 0; i < n; i++) {
    if (member_is(&m[i], "jsonrpc")) {
      if (version++ || !value_is(&m[i], "\"2.0\"", 5)) return 0;
    } else if (member_is(&m[i], "method")) {
      if (method++ || !value_is(&m[i], CANCEL_TEXT, sizeof CANCEL_TEXT - 1)) return 0;
    } else if (member_is(&m[i], "params")) {
      if (params != NULL || m[i].v[0] != '{') return 0;
      params = &m[i];
    } else if (member_is(&m[i], "id")) {
      return 0;
    }
  }
  if (!version || !method || params == NULL) return 0;     /* params read in the same walk */
  for (int i = 0; i < np; i++) {
    if (member_is(&p[i], "requestId")) {
      if (rid != NULL) return 0;
      rid = &p[i];
    } else if (member_is(&p[i], "reason")) {
      if (why != NULL) return 0;
      why = &p[i];
    }
  }
  if (rid == NULL || rid->vn >= KEY_MAX || !text_key(rid, key)) return 0;
  if (why != NULL && why->v[0] == '"') {
    memcpy(reason, why->v + 1, why->vn - 2);
    reason[why->vn - 2] = '\0';
  }
  cancel_request(s, key, why != NULL && why->v[0] == '"' ? reason : NULL);
  s->write(s, in_stream, NULL, 0, 1);
  return 1;
}

/* A plain tools/call is read from its text too, with no tree: its params
 * are kept as text and its arguments go to Lua from it (mcp_call_start_text).
 * Plain: the method "tools/call" and jsonrpc "2.0" with no escape, an
 * integer id (not -0) or a string id with no escape not in flight, params an
 * object of name (a string with no escape), arguments (an object) and _meta,
 * none of these members given twice, no escape in their keys, at most 8
 * members in each object, and no \u0000 anywhere (a key may not hold it);
 * then either a session initialized and a _meta of a progressToken alone (a
 * string with no escape or an integer), or any other _meta, which a row
 * (rev2026.c: a 2026-07-28 request) may take. Anything else is parsed
 * whole, with the same outcome. */

static int plain(const mcp_json_member *m, int key_only) {
  return memchr(m->k, '\\', m->kn) == NULL && (key_only || memchr(m->v, '\\', m->vn) == NULL);
}

/* Does the text hold \u0000 (an escape a key may not have)? */
static int has_nul_escape(const char *data, size_t len) {
  const char *end = data + len, *p = data;
  while ((p = memchr(p, '\\', (size_t)(end - p))) != NULL) {
    if (end - p >= 6 && memcmp(p + 1, "u0000", 5) == 0) return 1;
    if (end - p <= 2) break;
    p += 2;                          /* past the escaped character */
  }
  return 0;
}

/* m's place among names (NULL-terminated) in got: 0 when it is there
 * twice, or when it is none of them and only they may be. */
static int take(const mcp_json_member *m, const char *const *names, const mcp_json_member **got,
                int only) {
  for (int i = 0; names[i] != NULL; i++)
    if (m->key[0] == names[i][0] && strcmp(m->key, names[i]) == 0) {
      if (got[i] != NULL) return 0;
      got[i] = m;
      return 1;
    }
  return !only;
}

/* _meta's progressToken (or none) as the text mcp_call_start would make. */
static int quick_token(const mcp_json_member *meta, int escapes, mcp_request_text *rt) {
  static const char *const names[] = { "progressToken", NULL };
  mcp_json_member t[8];
  const mcp_json_member *token = NULL;
  char key[KEY_MAX];
  int n = mcp_json_members(meta->v, meta->vn, t, 8);
  if (n < 0) return 0;
  for (int i = 0; i < n; i++)
    if ((escapes && !plain(&t[i], 0)) || !take(&t[i], names, &token, 1)) return 0;
  if (token != NULL && (token->vn >= KEY_MAX || !text_key(token, key))) return 0;
  if (token != NULL) rt->token = token->v, rt->token_len = token->vn;
  return 1;
}

/* A call whose _meta is not a session's: a row's (rev2026.c), or none. */
static int stateless_text(mcp_session *s, const mcp_call_text *ct) {
  for (int i = 0; i < ntypes; i++)
    if (types[i]->stateless_text &&
        types[i]->stateless_text(s, ct->key, &ct->rt, ct->meta, ct->meta_len, in_stream))
      return 1;
  return 0;
}

/* The reading of a plain tools/call (above): 1 with ct filled, 0 when the
 * text is to be parsed. */
static int call_read(const char *data, size_t len, mcp_call_text *ct) {
  static const char *const top_names[] = { "jsonrpc", "method", "id", "params", NULL };
  static const char *const params_names[] = { "name", "arguments", "_meta", NULL };
  enum { VERSION, METHOD, ID, PARAMS };
  enum { NAME, ARGS, META };
  mcp_json_member m[8], p[8];
  const mcp_json_member *top[4] = { NULL }, *in[3] = { NULL }, *id, *name, *meta;
  mcp_request_text *rt = &ct->rt;
  int n, np, escapes;
  escapes = memchr(data, '\\', len) != NULL;
  if ((escapes && has_nul_escape(data, len)) ||
      (n = mcp_json_members_in(data, len, m, 8, "params", p, &np, known)) < 0)
    return 0;
  for (int i = 0; i < n; i++)
    if ((escapes && !plain(&m[i], 1)) || !take(&m[i], top_names, top, 0)) return 0;
  id = top[ID];
  if (top[METHOD] == NULL || !value_is(top[METHOD], CALL_TEXT, sizeof CALL_TEXT - 1) || top[VERSION] == NULL ||
      !value_is(top[VERSION], "\"2.0\"", 5) || id == NULL || id->vn >= KEY_MAX ||
      (escapes && !plain(id, 0)) || !text_key(id, ct->key) || top[PARAMS] == NULL || top[PARAMS]->v[0] != '{')
    return 0;
  for (int i = 0; i < np; i++)       /* task, ...: parsed */
    if ((escapes && !plain(&p[i], 1)) || !take(&p[i], params_names, in, 1)) return 0;
  name = in[NAME];
  meta = in[META];
  if (name == NULL || name->v[0] != '"' || (escapes && !plain(name, 0)) || name->vn - 2 >= sizeof ct->tool ||
      (in[ARGS] != NULL && in[ARGS]->v[0] != '{') || (meta != NULL && meta->v[0] != '{'))
    return 0;
  memset(rt, 0, sizeof *rt);
  ct->meta = NULL;
  ct->meta_len = 0;
  if (meta != NULL && ((known != NULL && known(meta->v, meta->vn) == meta->vn) || !quick_token(meta, escapes, rt)))
    ct->meta = meta->v, ct->meta_len = meta->vn;     /* not a session's */
  memcpy(ct->tool, name->v + 1, name->vn - 2);
  ct->tool[name->vn - 2] = '\0';
  rt->params = top[PARAMS]->v, rt->params_len = top[PARAMS]->vn;
  if (in[ARGS] != NULL) rt->args = in[ARGS]->v, rt->args_len = in[ARGS]->vn;
  rt->name = ct->tool;
  return 1;
}

static int quick_call(mcp_session *s, const char *data, size_t len, int named) {
  mcp_call_text ct;
  /* Before initialize only a 2026-07-28 request may be a call. A transport
   * with streams (HTTP) reads such a request itself (mcp_session_read_call),
   * and what it does not take it has parsed: its tree is kept. */
  if ((s->revision < 0 && (in_stream != NULL || !(named & NAMED_CALL))) ||
      !call_read(data, len, &ct))
    return 0;
  if (ct.meta != NULL) return stateless_text(s, &ct);
  if (s->revision < 0 || mcp_reqtab_find(&s->reqs, ct.key, strlen(ct.key)) != NULL ||
      !mcp_sched_has_method("tools/call"))
    return 0;
  mcp_session_call_start_text(s, in_stream, ct.key, &ct.rt, NULL);
  s->ncalls++;
  return 1;
}

int mcp_session_read_call(const char *data, size_t len, mcp_call_text *ct) {
  return names(data, len, NAMED_CALL) && call_read(data, len, ct) && ct->meta != NULL;
}

int mcp_session_input_call(mcp_session *s, const mcp_call_text *ct, size_t len, void *stream) {
  in_stream = stream;
  in_len = len;
  return stateless_text(s, ct);
}

void mcp_session_input(mcp_session *s, const char *data, size_t len, void *stream) {
  char err[256], msg[300];
  json_t *v;
  int named;
  in_stream = stream;
  in_len = len;
  if (s->revision < 0 && stream == NULL)             /* each want a constant, names inlined for it */
    named = len <= QUICK_MAX ? names(data, len, NAMED_CANCEL | NAMED_CALL) : names(data, len, NAMED_CALL);
  else
    named = len <= QUICK_MAX ? names(data, len, NAMED_CANCEL) : 0;
  if (quick_cancel(s, data, len, named) || quick_call(s, data, len, named)) return;
  v = NULL;
  for (int i = 0; v == NULL && i < ntypes; i++)
    if (types[i]->parse) v = types[i]->parse(data, len);
  if (v == NULL) v = mcp_json_parse(data, len, err, sizeof err);
  if (v == NULL) {
    snprintf(msg, sizeof msg, "Parse error: %s", err);
    send_error(s, NULL, NULL, MCP_RPC_PARSE, msg);
    return;
  }
  if (json_is_array(v)) on_batch(s, v);
  else on_message(s, NULL, v);
  json_decref(v);
}
