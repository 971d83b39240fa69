/* Protocol revision 2026-07-28: stateless requests beside the sessions of
 * the earlier revisions, in one process.
 *
 * A request is of this revision when its params._meta names the protocol
 * version (or its method, server/discover, exists only in it). It needs no
 * initialize: its client capabilities and log level come with it, and a
 * request without them is refused (-32602). It runs in
 * an ephemeral session of its own (struct eph), created here and freed here
 * when its one call is done (the session's on_drained), so the core's rules
 * (one table of requests per session, the state machine) apply unchanged.
 * The ephemeral session writes through the session that read the request
 * (its parent: stdio's, or the HTTP transport's stateless one), adding the
 * fields this revision's results must carry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "identity.h"
#include "policy.h"
#include "rev2026.h"
#include "rpc.h"
#include "sched.h"
#include "store.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LEVEL "io.modelcontextprotocol/logLevel"

/* One stateless request's session. Owned here: made by eph_new, closed
 * when its call is done (eph_drained) and kept for the next request. */
#define EPH_KEY 48
typedef struct eph {
  mcp_session s;           /* first */
  mcp_call *call;          /* its one call (live as long as the session) */
  void *stream;            /* the parent's stream it answers on */
  struct eph *inext;       /* the next in its bucket of the index; in the pool, the next kept */
  uint32_t hash;           /* of its parent and its id */
  unsigned cacheable : 1;  /* results carry ttlMs and cacheScope */
  char *key;               /* its id's text: kbuf, or malloc'd when longer */
  char kbuf[EPH_KEY];
} eph;

/* Closed ephemeral sessions kept for the next requests: a session is 3 KB
 * (its table's ring of recent ids), and malloc made each one dearly. */
#define POOL_MAX 256
static struct {
  eph *head;
  int n;
} pool;

static eph *eph_new(const char *key, size_t keylen) {
  eph *e = pool.head;
  if (e != NULL) {
    pool.head = e->inext;
    pool.n--;
  } else if ((e = malloc(sizeof *e)) == NULL) {
    abort();
  }
  e->key = keylen < EPH_KEY ? e->kbuf : malloc(keylen + 1);
  if (e->key == NULL) abort();
  memcpy(e->key, key, keylen + 1);
  return e;
}

static void eph_free(eph *e) {
  if (e->key != e->kbuf) free(e->key);
  if (pool.n == POOL_MAX) {
    free(e);
    return;
  }
  e->inext = pool.head;
  pool.head = e;
  pool.n++;
}

/* Every stateless request by parent and id: the duplicate check and
 * notifications/cancelled find one without walking every session (10,000
 * in flight over stdio made each lookup walk 10,000). */
static struct {
  eph **b;
  size_t n, count;
} idx;

static uint32_t eph_hash(const mcp_session *parent, const char *key, size_t n) {
  uint32_t h = 2166136261u ^ (uint32_t)((uintptr_t)parent >> 4);
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)key[i]) * 16777619u;
  return h;
}

static void idx_grow(void) {
  size_t n = idx.n ? idx.n * 2 : 64;
  eph **b = calloc(n, sizeof *b);
  if (b == NULL) abort();
  for (size_t i = 0; i < idx.n; i++)
    for (eph *e = idx.b[i], *next; e != NULL; e = next) {
      next = e->inext;
      e->inext = b[e->hash & (n - 1)];
      b[e->hash & (n - 1)] = e;
    }
  free(idx.b);
  idx.b = b;
  idx.n = n;
}

static void idx_add(eph *e) {
  if (idx.count >= idx.n) idx_grow();
  e->inext = idx.b[e->hash & (idx.n - 1)];
  idx.b[e->hash & (idx.n - 1)] = e;
  idx.count++;
}

static void idx_remove(eph *e) {
  eph **p = &idx.b[e->hash & (idx.n - 1)];
  while (*p != e) p = &(*p)->inext;
  *p = e->inext;
  idx.count--;
}

static const mcp_rev2026_tasks *tasks;   /* task.c's (mcp_rev2026_set_tasks) */

static mcp_req *stateless_find(mcp_session *s, const char *key, size_t keylen);

static json_t *meta_of(json_t *msg) {
  return json_object_get(json_object_get(msg, "params"), "_meta");
}

/* What a _meta says, read once for the requests that share its tree (a
 * client's kept _meta, rev2026_meta.c): its long keys cost a hash each. The
 * last one read is held, so that its address names no other tree. */
typedef struct meta_facts {
  json_t *meta;              /* held */
  const char *version;       /* or NULL */
  json_t *caps, *level;
  json_t *token;             /* progressToken, or NULL */
} meta_facts;

static meta_facts *facts_of(json_t *meta) {
  static meta_facts f;
  if (meta != f.meta) {
    json_decref(f.meta);
    f.meta = json_incref(meta);
    f.version = json_string_value(json_object_get(meta, META_VERSION));
    f.caps = json_object_get(meta, META_CAPS);
    f.level = json_object_get(meta, META_LEVEL);
    f.token = json_object_get(meta, "progressToken");
  }
  return &f;
}

const char *mcp_rev2026_version(json_t *msg) { return facts_of(meta_of(msg))->version; }

const char *mcp_rev2026_kept_version(const char *meta, size_t len) {
  json_t *tree = mcp_rev2026_meta_kept(meta, len);
  return tree != NULL ? facts_of(tree)->version : NULL;
}

/* The tasks extension's methods (tasks/result and tasks/list are gone from it). */
static int is_task_method(const char *method) {
  return strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
         strcmp(method, "tasks/cancel") == 0;
}

/* Some tool offers tasks (the methods table has the 2025-11-25 tasks/result then). */
static int tasks_offered(void) { return mcp_sched_has_method("tasks/result"); }

int mcp_rev2026_has_method(const char *method) {
  static const char *const removed[] = {
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
    "tasks/result", "tasks/list", NULL
  };
  if (strcmp(method, "server/discover") == 0 || strcmp(method, "subscriptions/listen") == 0) return 1;
  if (is_task_method(method)) return tasks_offered();
  for (int i = 0; removed[i]; i++)
    if (strcmp(method, removed[i]) == 0) return 0;
  return mcp_sched_has_method(method);
}

int mcp_rev2026_declares(json_t *caps, const char *ext) {
  return json_is_object(json_object_get(json_object_get(caps, "extensions"), ext));
}

/* The tasks extension is needed and the request does not declare it: why, or NULL. */
static const char *needs_tasks(const char *method, json_t *msg) {
  json_t *params = json_object_get(msg, "params");
  if (!tasks_offered() || mcp_rev2026_declares(facts_of(meta_of(msg))->caps, MCP_EXT_TASKS))
    return NULL;
  if (is_task_method(method)) return method;
  if (strcmp(method, "tools/call") == 0) {
    const char *tool = json_string_value(json_object_get(params, "name"));
    if (tool != NULL && mcp_policy_task(tool) == MCP_TASK_REQUIRED) return "a tool that runs only as a task";
  }
  if (strcmp(method, "subscriptions/listen") == 0 &&
      json_object_get(json_object_get(params, "notifications"), "taskIds") != NULL)
    return "task status notifications (taskIds)";
  return NULL;
}

/* ["2026-07-28", then the session revisions, newest first] */
static void add_supported(mcp_buf *b) {
  int n = 0;
  while (mcp_revisions[n]) n++;
  mcp_buf_adds(b, "[\"" MCP_REV_2026 "\"");
  while (n-- > 0) mcp_buf_printf(b, ",\"%s\"", mcp_revisions[n]);
  mcp_buf_addc(b, ']');
}

/* The fields every request's _meta must carry: the error (-32602) for the
 * first one missing, or NULL. */
static const char *meta_missing(json_t *meta) {
  const meta_facts *f = facts_of(meta);
  if (meta == NULL) return "params._meta is required (with \"" META_VERSION "\" and \"" META_CAPS "\")";
  if (!json_is_object(meta)) return "params._meta must be an object";
  if (f->version == NULL) return "params._meta[\"" META_VERSION "\"] is required (a string)";
  if (!json_is_object(f->caps)) return "params._meta[\"" META_CAPS "\"] is required (an object)";
  return NULL;
}

static int check(json_t *msg, const char *key, mcp_buf *out) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  const char *version = mcp_rev2026_version(msg), *missing, *what;
  json_t *meta = meta_of(msg), *level = facts_of(meta)->level;
  char text[400];
  if (method == NULL) method = "";
  /* An unsupported version first: another revision may want other fields. */
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
  if ((missing = meta_missing(meta)) != NULL) {
    mcp_rpc_error(out, key, MCP_RPC_INVALID_PARAMS, "Invalid params: %s", missing);
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
  if ((what = needs_tasks(method, msg)) != NULL) {
    snprintf(text, sizeof text, "Missing required client capability: %.200s needs the %s extension",
             what, MCP_EXT_TASKS);
    mcp_info("request %.64s refused: %s", key ? key : "null", text);
    mcp_rpc_error(out, key, MCP_RPC_MISSING_CAPABILITY, "%s", text);
    out->len -= 2;                                /* reopen the error object: drop "}}" */
    mcp_buf_adds(out, ",\"data\":{\"requiredCapabilities\":{\"extensions\":{\"" MCP_EXT_TASKS
                      "\":{}}}}}}");
    return 400;
  }
  return 0;
}

/* The message the HTTP transport checked last, held (so that its address
 * names no other): the session's reading of that very tree, in the same
 * turn (rev2026_meta.c keeps the tree of the text last read), is not
 * checked twice. Only requests with a stream (HTTP) look at it. */
static json_t *checked;

static void checked_set(json_t *msg) {
  json_decref(checked);
  checked = json_incref(msg);
}

int mcp_rev2026_check(json_t *msg, const char *key, mcp_buf *out) {
  int status = check(msg, key, out);
  checked_set(status == 0 ? msg : NULL);
  return status;
}

/* The server's capabilities as this revision states them: list changes and
 * resource updates come through subscriptions/listen; listChanged and
 * subscribe are stated only when true (listChanged needs --watch); tasks are
 * the tasks extension, not the 2025-11-25 tasks capability. */
static void drop_false(json_t *o, const char *key) {
  if (!json_is_true(json_object_get(o, key))) json_object_del(o, key);
}

static void add_capabilities(mcp_buf *b) {
  mcp_buf caps = MCP_BUF_INIT;
  json_t *v, *x;
  char *text;
  mcp_sched_capabilities(&caps);
  v = mcp_json_parse(caps.data, caps.len, NULL, 0);
  mcp_buf_free(&caps);
  if (!json_is_object(v)) {
    mcp_buf_adds(b, "{}");
    json_decref(v);
    return;
  }
  if ((x = json_object_get(v, "tools"))) drop_false(x, "listChanged");
  if ((x = json_object_get(v, "prompts"))) drop_false(x, "listChanged");
  if ((x = json_object_get(v, "resources"))) {
    drop_false(x, "listChanged");
    drop_false(x, "subscribe");
  }
  if (json_object_get(v, "tasks")) {       /* beside the others (io.modelcontextprotocol/ui) */
    json_object_del(v, "tasks");
    if (!json_is_object(x = json_object_get(v, "extensions"))) {
      x = json_object();
      json_object_set_new(v, "extensions", x);
    }
    json_object_set_new(x, MCP_EXT_TASKS, json_object());
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
 * requires (resultType, unless they state their own, as a CreateTaskResult
 * does; ttlMs and cacheScope on cacheable ones), then the message goes out
 * through the parent. Once its call is a task's, nothing more goes out: the
 * tasks extension has no progress or log notifications for tasks. */
static void eph_write(mcp_session *s, void *stream, const char *data, size_t len, int last) {
  eph *e = (eph *)s;
  mcp_session *p = s->parent;
  static mcp_buf out = MCP_BUF_INIT;            /* kept: a response each */
  size_t head;
  out.len = 0;
  if (e->call != NULL && e->call->tasked) {
    if (data != NULL)
      mcp_debug("request %.64s: a task's message dropped: %.*s", e->call->req.key,
                (int)(len < 80 ? len : 80), data);
    return;
  }
  /* an input-required result or a task carries its own resultType, and is never cached */
  if (data != NULL && last && !e->call->typed &&
      (head = mcp_rpc_result_object_at(data, len, e->call->req.key, e->call->req.keylen)) != 0 &&
      len > head) {
    int empty = data[head] == '}';
    mcp_buf_add(&out, data, head);
    mcp_buf_adds(&out, "\"resultType\":\"complete\"");
    if (e->cacheable) mcp_buf_adds(&out, ",\"ttlMs\":0,\"cacheScope\":\"private\"");
    if (!empty) mcp_buf_addc(&out, ',');
    mcp_buf_add(&out, data + head, len - head);
    data = out.data;
    len = out.len;
  }
  p->write(p, stream, data, len, last);
  if (out.cap > 65536) mcp_buf_free(&out);       /* a large result's room is not kept */
}

static void eph_drained(mcp_session *s) {
  mcp_session *p = s->parent;
  idx_remove((eph *)s);
  mcp_session_close(s);
  eph_free((eph *)s);
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

/* subscriptions/listen: a long-lived request that is not a call. A listener
 * holds the parent session and stream it answers on, its id and its filter;
 * it lives in one list, is freed in one place (listener_end), and counts in
 * no session's ncalls, so it never holds shutdown back. */
#define META_SUB "io.modelcontextprotocol/subscriptionId"

typedef struct listener {
  mcp_session *parent;
  void *stream;             /* HTTP: its POST's stream; stdio: NULL */
  char *key;                /* the listen request's id, as JSON text */
  json_t *id;               /* the same, decoded */
  json_t *uris;             /* resourceSubscriptions honoured (array), or NULL */
  json_t *task_ids;         /* taskIds honoured (array): notifications/tasks, or NULL */
  unsigned tools : 1, prompts : 1, resources : 1;
  struct listener *next;
} listener;

static listener *listeners;

/* The listener of s with this stream (HTTP) or id (stdio: key != NULL). */
static listener *find_listener(mcp_session *s, void *stream, const char *key) {
  for (listener *l = listeners; l; l = l->next)
    if (l->parent == s && (key ? strcmp(l->key, key) == 0 : l->stream == stream)) return l;
  return NULL;
}

/* End a listener: graceful, the server's teardown (notifications/cancelled
 * referencing the listen request -- the one use 2026-07-28 leaves a server
 * for it -- then the response {resultType: "complete"}), or not (the client
 * went away or cancelled: nothing more is sent; over HTTP its stream is
 * closed). Frees it. */
static void listener_end(listener *l, const char *reason, int graceful) {
  listener **p = &listeners;
  mcp_session *s = l->parent;
  while (*p && *p != l) p = &(*p)->next;
  if (*p) *p = l->next;
  mcp_info("subscriptions/listen %s ended: %s", l->key, reason);
  if (graceful) {
    mcp_buf b = MCP_BUF_INIT;
    mcp_rpc_notification_open(&b, "notifications/cancelled");
    mcp_buf_adds(&b, "{\"requestId\":");
    mcp_buf_add(&b, l->key, strlen(l->key));
    mcp_buf_adds(&b, ",\"reason\":");
    mcp_json_add_string(&b, reason, strlen(reason));
    mcp_buf_adds(&b, ",\"_meta\":{\"" META_SUB "\":");
    mcp_buf_add(&b, l->key, strlen(l->key));
    mcp_buf_adds(&b, "}}}");
    s->write(s, l->stream, b.data, b.len, 0);
    b.len = 0;
    mcp_rpc_result_open(&b, l->key);
    mcp_buf_adds(&b, "{\"resultType\":\"complete\",\"_meta\":{\"" META_SUB "\":");
    mcp_buf_add(&b, l->key, strlen(l->key));
    mcp_buf_adds(&b, "}}");
    mcp_rpc_close(&b);
    s->write(s, l->stream, b.data, b.len, 1);
    mcp_buf_free(&b);
  } else {
    s->write(s, l->stream, NULL, 0, 1);
  }
  json_decref(l->id);
  json_decref(l->uris);
  json_decref(l->task_ids);
  free(l->key);
  free(l);
}

/* One notification to l, with its subscriptionId in _meta. */
static void listener_send(listener *l, const char *method, json_t *params) {
  json_t *p = json_is_object(params) ? json_deep_copy(params) : json_object(), *meta, *msg;
  char *text;
  meta = json_object_get(p, "_meta");
  if (!json_is_object(meta)) {
    meta = json_object();
    json_object_set_new(p, "_meta", meta);
  }
  json_object_set(meta, META_SUB, l->id);
  msg = json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params", p);
  text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
  if (text == NULL) abort();
  l->parent->write(l->parent, l->stream, text, strlen(text), 0);
  free(text);
  json_decref(msg);
}

static void listen_reject(mcp_session *s, const char *key, void *stream, const char *msg) {
  mcp_buf *out = mcp_scratch();
  mcp_rpc_error(out, key, MCP_RPC_INVALID_PARAMS, "Invalid params: %s", msg);
  s->write(s, stream, out->data, out->len, 1);
}

/* A filter's list of strings (NULL when absent): 0 when it is not one. */
static int string_list(json_t *list) {
  size_t i;
  json_t *v;
  if (list != NULL && !json_is_array(list)) return 0;
  json_array_foreach(list, i, v)
    if (!json_is_string(v)) return 0;
  return 1;
}

static void listen_start(mcp_session *s, json_t *params, const char *key, void *stream) {
  json_t *f = json_object_get(params, "notifications"), *subs, *ids, *caps, *ack, *honoured, *v;
  mcp_buf cb = MCP_BUF_INIT;
  listener *l;
  size_t i;
  char *text;
  if (!json_is_object(f)) {
    listen_reject(s, key, stream, "params.notifications must be an object");
    return;
  }
  subs = json_object_get(f, "resourceSubscriptions");
  if (!string_list(subs)) {
    listen_reject(s, key, stream, "notifications.resourceSubscriptions must be an array of URIs");
    return;
  }
  ids = json_object_get(f, "taskIds");
  if (!string_list(ids)) {
    listen_reject(s, key, stream, "notifications.taskIds must be an array of task ids");
    return;
  }
  /* Honour what the server has: no prompts, no promptsListChanged. */
  mcp_sched_capabilities(&cb);
  caps = mcp_json_parse(cb.data, cb.len, NULL, 0);
  mcp_buf_free(&cb);
  l = calloc(1, sizeof *l);
  if (l == NULL) abort();
  l->parent = s;
  l->stream = stream;
  l->key = strdup(key);
  l->id = mcp_json_parse(key, strlen(key), NULL, 0);
  if (l->key == NULL || l->id == NULL) abort();
  honoured = json_object();
  if (json_is_true(json_object_get(f, "toolsListChanged")) && json_object_get(caps, "tools")) {
    l->tools = 1;
    json_object_set_new(honoured, "toolsListChanged", json_true());
  }
  if (json_is_true(json_object_get(f, "promptsListChanged")) && json_object_get(caps, "prompts")) {
    l->prompts = 1;
    json_object_set_new(honoured, "promptsListChanged", json_true());
  }
  if (json_is_true(json_object_get(f, "resourcesListChanged")) && json_object_get(caps, "resources")) {
    l->resources = 1;
    json_object_set_new(honoured, "resourcesListChanged", json_true());
  }
  if (subs != NULL && json_object_get(caps, "resources")) {
    l->uris = json_copy(subs);
    json_object_set(honoured, "resourceSubscriptions", l->uris);
  }
  /* The tasks of this transport's stateless requests that exist (task.c). */
  if (ids != NULL && json_object_get(caps, "tasks")) {
    l->task_ids = json_array();
    json_array_foreach(ids, i, v)
      if (mcp_store_on() || (tasks && tasks->describe(s, json_string_value(v), NULL)))
        json_array_append(l->task_ids, v);     /* with a store: any instance's */
    json_object_set(honoured, "taskIds", l->task_ids);
  }
  json_decref(caps);
  l->next = listeners;
  listeners = l;
  mcp_info("subscriptions/listen %s opened", key);
  /* The acknowledgement comes first on the stream. */
  ack = json_pack("{s:s,s:s,s:{s:o,s:{s:O}}}", "jsonrpc", "2.0", "method",
                  "notifications/subscriptions/acknowledged", "params", "notifications", honoured,
                  "_meta", META_SUB, l->id);
  text = ack ? json_dumps(ack, JSON_COMPACT) : NULL;
  if (text == NULL) abort();
  s->write(s, stream, text, strlen(text), 0);
  free(text);
  json_decref(ack);
  /* Then each task's state now, so that a change before the subscription is
   * not missed; later changes follow as they happen. */
  json_array_foreach(l->task_ids, i, v) {
    mcp_buf b = MCP_BUF_INIT;
    json_t *task;
    if (mcp_store_on()) {              /* from the store, when it answers */
      tasks->fetch(s, json_string_value(v));
      continue;
    }
    tasks->describe(s, json_string_value(v), &b);
    task = mcp_json_parse(b.data, b.len, NULL, 0);
    if (task == NULL) abort();
    listener_send(l, "notifications/tasks", task);
    json_decref(task);
    mcp_buf_free(&b);
  }
}

static int in_list(json_t *list, const char *s) {
  size_t i;
  json_t *v;
  if (s == NULL) return 0;
  json_array_foreach(list, i, v)
    if (strcmp(json_string_value(v), s) == 0) return 1;
  return 0;
}

/* Does l want this notification? */
static int listener_wants(const listener *l, const char *method, json_t *params) {
  if (strcmp(method, "notifications/tools/list_changed") == 0) return l->tools;
  if (strcmp(method, "notifications/prompts/list_changed") == 0) return l->prompts;
  if (strcmp(method, "notifications/resources/list_changed") == 0) return l->resources;
  if (strcmp(method, "notifications/resources/updated") == 0)
    return in_list(l->uris, json_string_value(json_object_get(params, "uri")));
  if (strcmp(method, "notifications/tasks") == 0)
    return in_list(l->task_ids, json_string_value(json_object_get(params, "taskId")));
  return 0;
}

int mcp_rev2026_listen_notify(const char *method, json_t *params) {
  return mcp_rev2026_listen_notify_scope(NULL, method, params);
}

int mcp_rev2026_listen_notify_scope(mcp_session *parent, const char *method, json_t *params) {
  int n = 0;
  for (listener *l = listeners; l; l = l->next)
    if ((parent == NULL || l->parent == parent) && listener_wants(l, method, params)) {
      listener_send(l, method, params);
      n++;
    }
  return n;
}

void mcp_rev2026_listen_each_task(void (*fn)(mcp_session *parent, const char *id)) {
  for (listener *l = listeners; l; l = l->next) {
    size_t i;
    json_t *v;
    json_array_foreach(l->task_ids, i, v) fn(l->parent, json_string_value(v));
  }
}

static int listen_cancel(mcp_session *s, const char *key, const char *reason) {
  listener *l = find_listener(s, NULL, key);
  if (l == NULL) return 0;
  listener_end(l, reason, 0);
  return 1;
}

void mcp_rev2026_listen_close_all(const char *reason) {
  while (listeners) listener_end(listeners, reason, 1);
}

/* The ephemeral session of a request of s that may run (checked), with
 * what its _meta says (f): its call is the caller's to start. */
static eph *eph_open(mcp_session *s, const char *key, void *stream, const char *method,
                     const meta_facts *f) {
  const char *level = json_string_value(f->level);
  eph *e = eph_new(key, strlen(key));
  mcp__session_init(&e->s, eph_write, e);     /* the session's fields zeroed, a fresh id */
  e->call = NULL;
  e->s.parent = s;
  e->hash = eph_hash(s, key, strlen(key));
  idx_add(e);
  e->s.auth = mcp_identity_ref(s->auth);      /* this request's token, whatever later ones bring */
  e->s.rev2026 = 1;
  e->s.on_drained = eph_drained;
  e->stream = stream;
  e->cacheable = is_cacheable(method) != 0;
  /* Without a log level, no notifications/message for this request. */
  e->s.log_level = level ? (mcp_log_level)mcp_log_level_parse(level) : MCP_LOG_NLEVELS;
  e->s.client_capabilities = json_incref(f->caps);   /* an object: checked */
  s->ncalls++;
  e->s.ncalls++;
  return e;
}

/* A request id of s in flight over one channel (stdio): ids name requests
 * for notifications/cancelled, so they must be unique there. Over HTTP each
 * request has its own stream. */
static int in_flight(mcp_session *s, const char *key, void *stream) {
  return stream == NULL && (mcp_reqtab_find(&s->reqs, key, strlen(key)) ||
                            stateless_find(s, key, strlen(key)) || find_listener(s, NULL, key) != NULL);
}

static int stateless_request(mcp_session *s, json_t *msg, const char *key, void *stream) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  json_t *params = json_object_get(msg, "params"), *meta = json_object_get(params, "_meta");
  mcp_buf *out;
  eph *e;
  int was_checked;
  /* every message of a session comes by here: as few lookups as can tell */
  if (facts_of(meta)->version == NULL && strcmp(method, "server/discover") != 0)
    return 0;
  was_checked = stream != NULL && msg == checked;
  checked_set(NULL);
  out = mcp_scratch();
  if (!was_checked && check(msg, key, out) != 0) {
    mcp_debug("request %.64s refused: %.*s", key, (int)out->len, out->data);
    s->write(s, stream, out->data, out->len, 1);
    return 1;
  }
  if (in_flight(s, key, stream)) {
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
  if (strcmp(method, "subscriptions/listen") == 0) {
    listen_start(s, params, key, stream);
    return 1;
  }
  if (is_task_method(method)) {          /* the tasks extension; declared (checked above) */
    if (tasks) tasks->request(s, stream, key, method, params);
    return 1;
  }
  e = eph_open(s, key, stream, method, facts_of(meta));
  e->call = mcp_session_call_start(&e->s, NULL, stream, key, method, params);
  return 1;
}

/* A plain tools/call read from its text (session.c's quick_call) whose
 * _meta is a kept one (rev2026_meta.c): started as stateless_request would,
 * with no tree of the request. Anything check() would refuse, an id in
 * flight, a progressToken in the _meta: 0, and the parse does it all. */
static int stateless_text(mcp_session *s, const char *key, const mcp_request_text *rt,
                          const char *meta, size_t meta_len, void *stream) {
  json_t *tree = mcp_rev2026_meta_kept(meta, meta_len), *level;
  const meta_facts *f;
  eph *e;
  if (tree == NULL) return 0;
  f = facts_of(tree);
  level = f->level;
  if (f->version == NULL || strcmp(f->version, MCP_REV_2026) != 0 || !json_is_object(f->caps) ||
      f->token != NULL ||
      (level != NULL && (!json_is_string(level) || mcp_log_level_parse(json_string_value(level)) < 0)) ||
      !mcp_sched_has_method("tools/call") ||            /* mcp_rev2026_has_method's answer for it */
      (mcp_policy_task(rt->name) == MCP_TASK_REQUIRED && tasks_offered() &&
       !mcp_rev2026_declares(f->caps, MCP_EXT_TASKS)) ||
      in_flight(s, key, stream))
    return 0;
  checked_set(NULL);
  e = eph_open(s, key, stream, "tools/call", f);
  e->call = mcp_session_call_start_text(&e->s, stream, key, rt, tree);
  return 1;
}

static mcp_req *stateless_find(mcp_session *s, const char *key, size_t keylen) {
  uint32_t h = eph_hash(s, key, keylen);
  if (idx.n == 0) return NULL;
  for (eph *e = idx.b[h & (idx.n - 1)]; e != NULL; e = e->inext) {
    mcp_req *r;
    if (e->hash == h && e->s.parent == s && strlen(e->key) == keylen && memcmp(e->key, key, keylen) == 0 &&
        (r = mcp_reqtab_find(&e->s.reqs, key, keylen)) != NULL)
      return r;
  }
  return NULL;
}

void mcp_rev2026_stream_closed(mcp_session *s, void *stream, const char *reason) {
  mcp_call *c = NULL;
  listener *l = find_listener(s, stream, NULL);
  if (l != NULL) {
    listener_end(l, reason, 0);
    return;
  }
  /* A task's call answered its stream when the task was created: a stream
   * closed now is another request's (it may even reuse the address). */
  for (mcp_session *x = mcp_sessions; x; x = x->next)
    if (x->rev2026 && x->parent == s && ((eph *)x)->stream == stream && !((eph *)x)->call->tasked) {
      c = ((eph *)x)->call;
      break;
    }
  if (c == NULL) return;
  mcp_call_fire(c, MCP_EV_CANCEL, reason);         /* logs "request ... cancelled: reason" */
}

void mcp_rev2026_set_tasks(const mcp_rev2026_tasks *t) { tasks = t; }

void mcp_rev2026_init(void) {
  static const mcp_session_type row = {
    .parse = mcp_rev2026_parse, .stateless = stateless_request, .stateless_text = stateless_text,
    .known = mcp_rev2026_meta_at, .cancel = listen_cancel,
    .find = stateless_find,
  };
  mcp_session_register(&row);
}
