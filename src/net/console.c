/* The console: its page (share/luamcp/console/, found as the Lua library
 * is), its JSON API and its event stream, behind a token of its own.
 *
 * The token is printed at start as a URL; its first use (?token=) sets a
 * cookie (HttpOnly, SameSite=Strict, Path=/console) and redirects to a URL
 * without it, so that it stays out of histories and logs. A POST must come
 * from the console's own origin as well. With OAuth and console_scope, a
 * bearer token with that scope stands for the console's token.
 *
 * Nobody watching costs nothing: the call row (core/live.c) and the log
 * tap are set while an event stream is open, and cleared with the last. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "console.h"
#include "crypto.h"
#include "json.h"
#include "libdir.h"
#include "live.h"
#include "log.h"
#include "metrics.h"
#include "sched.h"
#include "span.h"

#define MAX_FILE (1 << 20)

/* Every answer of the console: the page runs its own files only. */
#define SECURITY_HEADERS                                                                    \
  "Content-Security-Policy: default-src 'self'; img-src 'self' data:; object-src 'none'; " \
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"                        \
  "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"                    \
  "X-Frame-Options: DENY\r\nCache-Control: no-store\r\n"

#define FLUSH_MS 50                  /* events go out in batches: one write a batch, not an event */
#define FLUSH_BYTES (256u << 10)     /* or sooner, past this */

typedef struct watcher {
  mcp_http_conn *c;
  struct watcher *next;
} watcher;

static struct {
  int on;
  char token[33];
  char cookie[40];                   /* "luamcp_console_PORT=": browsers scope cookies by host, not port */
  int loopback;                      /* its listener's address is a loopback one */
  const char *scope;
  watcher *watchers;
  int nwatchers;
  unsigned long long logs_built;     /* log and span events built (with mcp_live_built: /metrics) */
  int collecting;
  mcp_buf pending;                   /* events not yet written */
  uv_timer_t flush;                  /* unreferenced: it keeps no loop alive */
  int flush_made;
} K;

static void collect(mcp_buf *b) {
  mcp_metric_head(b, "luamcp_console_streams", "gauge", "Console event streams open.");
  mcp_metric_sample(b, "luamcp_console_streams", NULL, K.nwatchers);
  mcp_metric_head(b, "luamcp_console_events_total", "counter",
                  "Console events built (none while no console stream is open).");
  mcp_metric_sample(b, "luamcp_console_events_total", NULL, (double)(mcp_live_built + K.logs_built));
}

static int is_loopback(const char *host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strcasecmp(host, "localhost") == 0;
}

int mcp_console_init(const mcp_http_options *opt, const char *scope, char *why, size_t cap) {
  unsigned char rnd[16];
  if (!is_loopback(opt->host) && !(opt->auth && scope != NULL)) {
    snprintf(why, cap, "--console on %s (not a loopback address) needs OAuth (--auth-*) and --console-scope",
             opt->host);
    return -1;
  }
  if (mcp_random(rnd, sizeof rnd) != 0) {
    snprintf(why, cap, "--console: no randomness for its token");
    return -1;
  }
  mcp_hex(rnd, sizeof rnd, K.token);
  snprintf(K.cookie, sizeof K.cookie, "luamcp_console=");
  K.loopback = is_loopback(opt->host);
  K.scope = scope;
  K.on = 1;
  if (!K.collecting) mcp_metrics_collector(collect);
  K.collecting = 1;
  return 0;
}

/* Printed whatever --log-level says: without it the console cannot be opened. */
void mcp_console_announce(const char *host, int port) {
  const char *shown = is_loopback(host) ? "127.0.0.1" : host;
  mcp_log_level threshold = mcp_log_threshold;
  snprintf(K.cookie, sizeof K.cookie, "luamcp_console_%d=", port);
  if (mcp_log_threshold > MCP_LOG_NOTICE) mcp_log_threshold = MCP_LOG_NOTICE;
  mcp_log(MCP_LOG_NOTICE, "console: http://%s%s%s:%d/console?token=%s", strchr(shown, ':') ? "[" : "", shown,
          strchr(shown, ':') ? "]" : "", port, K.token);
  mcp_log_threshold = threshold;
}

/* With OAuth, is a bearer token the only way in? Off loopback, yes; on a
 * loopback address a request without one uses the console's own token. */
int mcp_console_bearer_only(const mcp_http_request *r) {
  return !K.loopback || r->authorization != NULL;
}

int mcp_console_path(const char *path) {
  return K.on && strncmp(path, "/console", 8) == 0 && (path[8] == '\0' || path[8] == '/');
}

static void reply(mcp_http_conn *c, int status, const char *type, const char *body, size_t len) {
  mcp_http_respond(c, status, SECURITY_HEADERS, type, body, len);
}

static void reply_text(mcp_http_conn *c, int status, const char *msg) {
  mcp_buf b = MCP_BUF_INIT;
  mcp_buf_adds(&b, "{\"error\":");
  mcp_json_add_string(&b, msg, strlen(msg));
  mcp_buf_addc(&b, '}');
  mcp_debug("console: %d: %s", status, msg);
  reply(c, status, "application/json", b.data, b.len);
  mcp_buf_free(&b);
}

/* The value of name= in a query or a cookie list (sep '&' or ';'), or NULL. */
static const char *param(const char *s, size_t n, const char *name, char sep, size_t *len) {
  size_t k = strlen(name);
  for (size_t i = 0; s != NULL && i + k <= n; i++) {
    if (i > 0 && s[i - 1] != sep && s[i - 1] != ' ') continue;
    if (memcmp(s + i, name, k) != 0) continue;
    size_t j = i + k;
    while (j < n && s[j] != sep) j++;
    *len = j - i - k;
    return s + i + k;
  }
  return NULL;
}

static int token_is(const char *s, size_t n) {
  return s != NULL && n == sizeof K.token - 1 && mcp_equal(s, K.token, n);
}

/* 1 if the request may use the console; else answered 401 or 403. *fresh:
 * the token came in the query (the page's first visit). */
static int allowed(mcp_http_conn *c, const mcp_http_request *r, const mcp_identity *id, int *fresh) {
  size_t n = 0;
  const char *t;
  *fresh = 0;
  if (K.scope != NULL && id != NULL) {
    if (mcp_identity_has(id, K.scope)) return 1;
    mcp_info("console: %.64s lacks the scope %s", mcp_identity_subject(id), K.scope);
    reply_text(c, 403, "Forbidden: the console needs the scope in console_scope");
    return 0;
  }
  if ((t = param(r->query, r->query_len, "token=", '&', &n)) != NULL) {
    if (token_is(t, n)) return *fresh = 1;
  } else if (r->cookie && (t = param(r->cookie, strlen(r->cookie), K.cookie, ';', &n)) != NULL) {
    if (token_is(t, n)) return 1;
  } else {
    reply_text(c, 401, "Unauthorized: open the console with the URL luamcp printed at start");
    return 0;
  }
  mcp_info("console: a request with a wrong token refused");
  reply_text(c, 403, "Forbidden: wrong console token");
  return 0;
}

/* A POST must come from the console's own page: Origin is http(s)://Host. */
static int same_origin(const mcp_http_request *r) {
  const char *o = r->origin, *p;
  if (o == NULL || r->host == NULL || (p = strstr(o, "://")) == NULL) return 0;
  return strcasecmp(p + 3, r->host) == 0;
}

/* Static files: /console/ is index.html; other names are plain. */
static const char *file_type(const char *name) {
  size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-");
  if (n == 0) return NULL;
  if (strcmp(name + n, ".html") == 0) return "text/html; charset=utf-8";
  if (strcmp(name + n, ".js") == 0) return "text/javascript; charset=utf-8";
  if (strcmp(name + n, ".css") == 0) return "text/css; charset=utf-8";
  if (strcmp(name + n, ".svg") == 0) return "image/svg+xml";
  return NULL;
}

static void serve_file(mcp_http_conn *c, const char *name) {
  char dir[PATH_MAX], path[PATH_MAX + 64];
  const char *type = file_type(name);
  mcp_buf b = MCP_BUF_INIT;
  FILE *f;
  size_t n;
  if (type == NULL) {
    reply_text(c, 404, "Not Found");
    return;
  }
  mcp_share_dir("console", dir, sizeof dir);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if ((f = fopen(path, "rb")) == NULL) {
    mcp_warn("console: cannot open %s", path);
    reply_text(c, 404, "Not Found");
    return;
  }
  mcp_buf_grow(&b, MAX_FILE);
  n = fread(b.data, 1, MAX_FILE, f);
  fclose(f);
  reply(c, 200, type, b.data, n);
  mcp_buf_free(&b);
}

/* Events. */

/* The batch is taken before it is written: a write may log (a slow
 * reader), and the log tap's event then starts the next batch. */
static void flush(uv_timer_t *t) {
  mcp_buf batch = K.pending;
  (void)t;
  K.pending = (mcp_buf)MCP_BUF_INIT;
  for (watcher *w = K.watchers; w; w = w->next) mcp_http_stream_write(w->c, batch.data, batch.len);
  mcp_buf_free(&batch);
}

static void broadcast(const char *event, const char *json, size_t len) {
  mcp_buf *b = &K.pending;
  mcp_buf_adds(b, "event: ");
  mcp_buf_add(b, event, strlen(event));
  mcp_buf_adds(b, "\ndata: ");
  mcp_buf_add(b, json, len);
  mcp_buf_adds(b, "\n\n");
  if (b->len >= FLUSH_BYTES) {
    uv_timer_stop(&K.flush);
    flush(NULL);
  } else if (!uv_is_active((uv_handle_t *)&K.flush)) {
    uv_timer_start(&K.flush, flush, FLUSH_MS, 0);
  }
}

static void on_call(const char *json, size_t len) { broadcast("call", json, len); }

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static void on_log(mcp_log_level level, const char *logger, const char *tool, const char *msg) {
  mcp_buf b = MCP_BUF_INIT;
  int reload = logger == NULL && (starts(msg, "reloaded plugin ") || starts(msg, "loaded plugin ") ||
                                  starts(msg, "plugin not reloaded: ") || strstr(msg, " removed (") != NULL);
  K.logs_built++;
  mcp_buf_adds(&b, "{\"level\":\"");
  mcp_buf_add(&b, mcp_log_level_name(level), strlen(mcp_log_level_name(level)));
  mcp_buf_adds(&b, "\"");
  if (logger) {
    mcp_buf_adds(&b, ",\"plugin\":");
    mcp_json_add_string(&b, logger, strlen(logger));
  }
  if (tool) {
    mcp_buf_adds(&b, ",\"tool\":");
    mcp_json_add_string(&b, tool, strlen(tool));
  }
  mcp_buf_adds(&b, ",\"msg\":");
  mcp_json_add_string(&b, msg, strlen(msg));
  mcp_buf_addc(&b, '}');
  broadcast(reload ? "reload" : "log", b.data, b.len);
  mcp_buf_free(&b);
}

static void add_hex(mcp_buf *b, const char *key, const uint8_t *id, size_t n) {
  char hex[33];
  mcp_hex(id, n, hex);
  mcp_buf_add(b, ",\"", 2);
  mcp_buf_add(b, key, strlen(key));
  mcp_buf_add(b, "\":\"", 3);
  mcp_buf_add(b, hex, 2 * n);
  mcp_buf_addc(b, '"');
}

/* A span as it ends (tracing on): ids, name, times in microseconds, its
 * error and a cancel's reason, for the waterfall. */
static void on_span(const mcp_span *s) {
  mcp_buf b = MCP_BUF_INIT;
  K.logs_built++;
  mcp_buf_adds(&b, "{\"name\":");
  mcp_json_add_string(&b, s->name ? s->name : "", s->name ? strlen(s->name) : 0);
  add_hex(&b, "trace", s->trace_id, sizeof s->trace_id);
  add_hex(&b, "span", s->span_id, sizeof s->span_id);
  if (s->has_parent) add_hex(&b, "parent", s->parent_id, sizeof s->parent_id);
  mcp_buf_adds(&b, ",\"kind\":");
  mcp_buf_add_int(&b, s->kind);
  mcp_buf_adds(&b, ",\"start_us\":");
  mcp_buf_add_int(&b, (long long)(s->start_ns / 1000));
  mcp_buf_adds(&b, ",\"dur_us\":");
  mcp_buf_add_int(&b, (long long)((s->end_ns - s->start_ns) / 1000));
  if (s->status == MCP_STATUS_ERROR) {
    mcp_buf_adds(&b, ",\"error\":");
    mcp_json_add_string(&b, s->status_msg ? s->status_msg : "", s->status_msg ? strlen(s->status_msg) : 0);
  }
  for (int i = 0; i < s->nevents; i++) {
    const mcp_span_event *e = &s->events[i];
    if (strcmp(e->name, "cancelled") != 0) continue;
    for (int j = 0; j < e->attrs.n; j++)
      if (strcmp(e->attrs.v[j].key, "reason") == 0 && e->attrs.v[j].type == MCP_ATTR_STR) {
        mcp_buf_adds(&b, ",\"cancelled\":");
        mcp_json_add_string(&b, e->attrs.v[j].v.s, strlen(e->attrs.v[j].v.s));
      }
  }
  mcp_buf_addc(&b, '}');
  broadcast("span", b.data, b.len);
  mcp_buf_free(&b);
}

static void watch(mcp_http_conn *c) {
  watcher *w = calloc(1, sizeof *w);
  mcp_buf b = MCP_BUF_INIT;
  if (w == NULL) abort();
  if (!K.flush_made) {
    uv_timer_init(mcp_sched_loop(), &K.flush);
    uv_unref((uv_handle_t *)&K.flush);
    K.flush_made = 1;
  }
  if (K.pending.len > 0) flush(NULL);            /* what the others have not had yet is not its */
  w->c = c;
  mcp_http_conn_set_data(c, w);
  mcp_http_stream_begin(c, 200, SECURITY_HEADERS, "text/event-stream");
  mcp_buf_adds(&b, "retry: 2000\n\nevent: calls\ndata: ");
  mcp_live_calls(&b);
  mcp_buf_adds(&b, "\n\n");
  mcp_http_stream_write(c, b.data, b.len);
  mcp_buf_free(&b);
  w->next = K.watchers;
  K.watchers = w;
  if (K.nwatchers++ == 0) {
    mcp_live_watch(on_call);
    mcp_log_tap = on_log;
    mcp_span_tap = on_span;
  }
  mcp_info("console: an event stream opened (%d open)", K.nwatchers);
}

int mcp_console_closed(mcp_http_conn *c, void *ud) {
  watcher **p = &K.watchers;
  while (*p && *p != ud) p = &(*p)->next;
  if (*p == NULL) return 0;
  *p = ((watcher *)ud)->next;
  free(ud);
  if (--K.nwatchers == 0) {
    mcp_live_watch(NULL);
    mcp_log_tap = NULL;
    mcp_span_tap = NULL;
    uv_timer_stop(&K.flush);
    K.pending.len = 0;
  }
  mcp_info("console: an event stream closed (%d open)", K.nwatchers);
  return 1;
}

/* POST /console/api/calls/ID/cancel */
static void cancel(mcp_http_conn *c, const mcp_http_request *r, const mcp_identity *id) {
  const char *call = r->path + sizeof "/console/api/calls/" - 1;
  const char *end = strstr(call, "/cancel");
  char key[420];                               /* live.c's ids: up to 3 x 128 + 20 */
  if (end == NULL || end[7] != '\0' || end == call || (size_t)(end - call) >= sizeof key) {
    reply_text(c, 404, "Not Found");
    return;
  }
  snprintf(key, sizeof key, "%.*s", (int)(end - call), call);
  if (r->method != HTTP_POST) {
    reply_text(c, 405, "Method Not Allowed: POST");
    return;
  }
  if (!same_origin(r)) {
    reply_text(c, 403, "Forbidden: a console action comes from the console's own page");
    return;
  }
  mcp_log(MCP_LOG_NOTICE, "console: audit: %s cancels call %s", id ? mcp_identity_subject(id) : "the console token's holder",
          key);
  if (mcp_live_cancel(key, "cancelled from the console") != 0) {
    reply_text(c, 404, "Not Found: no such call in flight");
    return;
  }
  reply(c, 200, "application/json", "{\"cancelled\":true}", 18);
}

static void api(mcp_http_conn *c, const mcp_http_request *r, const mcp_identity *id) {
  const char *what = r->path + sizeof "/console/api/" - 1;
  mcp_buf b = MCP_BUF_INIT;
  if (strncmp(what, "calls/", 6) == 0) {
    cancel(c, r, id);
    return;
  }
  if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
    reply_text(c, 405, "Method Not Allowed: GET");
    return;
  }
  if (strcmp(what, "calls") == 0) {
    mcp_live_calls(&b);
    reply(c, 200, "application/json", b.data, b.len);
  } else if (strcmp(what, "plugins") == 0) {
    if (mcp_sched_server_json("plugins", &b) == 0) reply(c, 200, "application/json", b.data, b.len);
    else reply_text(c, 500, "Internal Server Error: see the server's log");
  } else if (strcmp(what, "metrics") == 0) {
    mcp_metrics_write(&b);
    reply(c, 200, "text/plain; version=0.0.4", b.data, b.len);
  } else {
    reply_text(c, 404, "Not Found");
  }
  mcp_buf_free(&b);
}

void mcp_console_serve(mcp_http_conn *c, const mcp_http_request *r, const mcp_identity *id) {
  int fresh;
  const char *p = r->path;
  if (!allowed(c, r, id, &fresh)) return;
  if (fresh && (strcmp(p, "/console") == 0 || strcmp(p, "/console/") == 0)) {
    char headers[640];
    snprintf(headers, sizeof headers,
             "Set-Cookie: %s%s; Path=/console; HttpOnly; SameSite=Strict\r\nLocation: /console/\r\n"
             SECURITY_HEADERS, K.cookie, K.token);
    mcp_http_respond(c, 303, headers, NULL, NULL, 0);
    return;
  }
  if (strcmp(p, "/console") == 0) {
    mcp_http_respond(c, 308, "Location: /console/\r\n" SECURITY_HEADERS, NULL, NULL, 0);
  } else if (strcmp(p, "/console/events") == 0) {
    watch(c);
  } else if (strncmp(p, "/console/api/", 13) == 0) {
    api(c, r, id);
  } else if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
    reply_text(c, 405, "Method Not Allowed: GET");
  } else {
    serve_file(c, p[9] == '\0' ? "index.html" : p + 9);
  }
}

void mcp_console_close(void) {
  if (K.flush_made) uv_close((uv_handle_t *)&K.flush, NULL);
  K.flush_made = 0;
  mcp_buf_free(&K.pending);
}
