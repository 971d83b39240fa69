/* The trace exporter (otel.h).
 *
 * Finished spans come from trace.c's sink into a FIFO bounded by
 * OTEL_BSP_MAX_QUEUE_SIZE; past it a span is dropped, counted and logged
 * (a warning at most every DROP_WARN_MS, saying how many). The default
 * bound is 16384, not the SDKs' 2048: a stdio read hands the loop hundreds
 * of calls at once, so a pipelined burst of thousands finishes its spans
 * before the first export is answered; 16384 spans of 600 bytes are about
 * 10 MB, held only while they wait. A batch
 * (at most MAX_BATCH spans) leaves when the queue holds a full one or the
 * schedule delay's timer fires, encoded (otlp.c) and POSTed on a multi
 * handle of our own, driven by the loop as httpc.c drives handlers'
 * transfers (one uv_poll per socket curl names, one uv_timer for curl's
 * timeouts). One export is in flight at a time: while a collector is slow
 * the queue fills and drops, so memory is bounded by the queue and one
 * batch, and nothing waits on the collector but its own transfer, which
 * OTEL_EXPORTER_OTLP_TIMEOUT ends. A failed export (refused, 5xx, timed
 * out) is not retried: its spans are counted as failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "buf.h"
#include "curl_loop.h"
#include "log.h"
#include "metrics.h"
#include "otel.h"
#include "otlp.h"
#include "sched.h"
#include "trace.h"

#define MAX_BATCH 512                      /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE's default */
#define DEFAULT_QUEUE 16384
#define DROP_WARN_MS 10000
#define CLOSE_NS 2000000000ull             /* what shutdown gives the last exports */

static struct {
  uv_loop_t *loop;
  mcp_curl_loop cl;                       /* the exports' multi handle on the loop */
  uv_timer_t flush_timer;
  char *url;
  int json;                               /* http/json, else http/protobuf */
  struct curl_slist *headers;
  mcp_attrs resource;
  long delay_ms, timeout_ms;
  int max_queue;
  mcp_span *head, *tail;                  /* the queue */
  int queued;
  CURL *handle;                           /* the exports' easy handle: made once, reused */
  CURL *easy;                             /* the export in flight (handle), or NULL */
  mcp_buf body;                           /* its body */
  int in_flight;                          /* its spans */
  uint64_t exported, dropped, failed, exports_failed;
  uv_timer_t flush_wait;                  /* mcp_otel_flush's */
  void (*flushed)(void);                  /* its callback, while it waits */
  uint64_t close_by;                      /* the last exports' deadline (uv_hrtime) */
  uint64_t drops_told;                    /* dropped when the last warning said so */
  uint64_t told_at;                       /* its loop time (ms), 0 before the first */
  int on;
} O;

/* Configuration: the file's value, else the variable's. */

static const char *opt(const char *file, const char *var) {
  const char *v = file ? file : getenv(var);
  return v && *v ? v : NULL;
}

static int parse_ms(const char *v, long def, long lo, const char *what, long *out) {
  char *end;
  long n;
  if (v == NULL) return *out = def, 0;
  n = strtol(v, &end, 10);
  if (*end != '\0' || n < lo) {
    mcp_error("otel: %s must be a whole number >= %ld", what, lo);
    return -1;
  }
  *out = n;
  return 0;
}

/* "%XX" decoded in place (the headers' and resource attributes' values are
 * URL-encoded, as the OTEL_* variables say). */
static void percent_decode(char *s) {
  char *w = s;
  for (; *s; s++) {
    unsigned x;
    if (*s == '%' && sscanf(s + 1, "%2x", &x) == 1 && s[1] && s[2]) {
      *w++ = (char)x;
      s += 2;
    } else {
      *w++ = *s;
    }
  }
  *w = '\0';
}

static void trim(char **p) {
  char *s = *p, *e;
  while (*s == ' ' || *s == '\t') s++;
  e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) *--e = '\0';
  *p = s;
}

/* key=value,key=value: each pair to add(key, value). -1 on a pair without '='. */
static int each_pair(const char *list, const char *what, void (*add)(const char *k, const char *v)) {
  char *copy = strdup(list), *save = NULL, *item;
  int r = 0;
  if (copy == NULL) abort();
  for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '='), *k = item, *v;
    if (eq == NULL) {
      mcp_error("otel: %s: an item without '=' (want key=value,...)", what);
      r = -1;
      break;
    }
    *eq = '\0';
    v = eq + 1;
    trim(&k);
    trim(&v);
    percent_decode(v);
    if (*k) add(k, v);
  }
  free(copy);
  return r;
}

static void add_header(const char *k, const char *v) {
  char line[1024];
  snprintf(line, sizeof line, "%s: %s", k, v);
  O.headers = curl_slist_append(O.headers, line);
}

static void add_resource(const char *k, const char *v) { mcp_attr_str(&O.resource, k, v); }

static int configure_url(const mcp_otel_opts *o) {
  const char *off = getenv("OTEL_SDK_DISABLED"), *exporter = getenv("OTEL_TRACES_EXPORTER");
  const char *traces = opt(o->traces_endpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const char *base = opt(o->endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT");
  mcp_buf b = MCP_BUF_INIT;
  if (traces == NULL && base == NULL) return 0;
  if ((off && strcasecmp(off, "true") == 0) || (exporter && strcmp(exporter, "none") == 0)) return 0;
  if (traces) {
    mcp_buf_printf(&b, "%s", traces);
  } else {
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/') n--;
    mcp_buf_printf(&b, "%.*s/v1/traces", (int)n, base);
  }
  mcp_buf_addc(&b, '\0');
  O.url = b.data;
  if (strncmp(O.url, "http://", 7) != 0 && strncmp(O.url, "https://", 8) != 0) {
    mcp_error("otel: the endpoint must be an http:// or https:// URL");
    return -1;
  }
  return 1;
}

static int configure(const mcp_otel_opts *o, mcp_sampler *sampler) {
  const char *proto = opt(o->protocol, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  const char *headers = opt(o->headers, "OTEL_EXPORTER_OTLP_HEADERS");
  const char *attrs = opt(o->resource_attributes, "OTEL_RESOURCE_ATTRIBUTES");
  const char *service = opt(o->service_name, "OTEL_SERVICE_NAME");
  const char *sname = opt(o->sampler, "OTEL_TRACES_SAMPLER"), *v;
  long queue;
  if (proto == NULL) proto = opt(NULL, "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (proto && strcmp(proto, "http/json") == 0) O.json = 1;
  else if (proto && strcmp(proto, "http/protobuf") != 0) {
    mcp_error("otel: protocol %.40s is not served (want http/protobuf or http/json)", proto);
    return -1;
  }
  if (mcp_sampler_parse(sampler, sname ? sname : "parentbased_always_on",
                        opt(o->sampler_arg, "OTEL_TRACES_SAMPLER_ARG")) != 0) {
    mcp_error("otel: the sampler must be always_on, always_off, traceidratio or parentbased_* "
              "(with a ratio in [0, 1])");
    return -1;
  }
  if (parse_ms(opt(o->schedule_delay, "OTEL_BSP_SCHEDULE_DELAY"), 5000, 1, "schedule_delay", &O.delay_ms) ||
      parse_ms(opt(o->max_queue_size, "OTEL_BSP_MAX_QUEUE_SIZE"), DEFAULT_QUEUE, 1, "max_queue_size", &queue) ||
      parse_ms(opt(o->export_timeout, "OTEL_EXPORTER_OTLP_TIMEOUT"), 10000, 1, "export_timeout", &O.timeout_ms))
    return -1;
  O.max_queue = (int)(queue > 1000000 ? 1000000 : queue);
  if ((v = opt(o->db_statement, "LUAMCP_OTEL_DB_STATEMENT")) != NULL) {
    if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0 && strcmp(v, "1") != 0 && strcmp(v, "0") != 0) {
      mcp_error("otel: db_statement must be true or false");
      return -1;
    }
    mcp_trace_db_statement = strcmp(v, "true") == 0 || strcmp(v, "1") == 0;
  }
  if (headers && each_pair(headers, "headers", add_header) != 0) return -1;
  O.headers = curl_slist_append(O.headers, O.json ? "Content-Type: application/json"
                                                  : "Content-Type: application/x-protobuf");
  O.headers = curl_slist_append(O.headers, "Expect:");      /* no 100-continue round trip */
  if (attrs && each_pair(attrs, "resource_attributes", add_resource) != 0) return -1;
  if (service || mcp_attr_find(&O.resource, "service.name") == NULL)
    mcp_attr_str(&O.resource, "service.name", service ? service : "luamcp");
  mcp_attr_str(&O.resource, "telemetry.sdk.name", "luamcp");
  mcp_attr_str(&O.resource, "telemetry.sdk.language", "c");
  mcp_attr_str(&O.resource, "telemetry.sdk.version", LUAMCP_VERSION);
  return 0;
}

static void export_done(CURLcode rc);
static void on_flush_wait(uv_timer_t *h);

/* After curl acted: the export, if it finished. */
static void on_curl_done(mcp_curl_loop *cl) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(cl->multi, &left)) != NULL)
    if (m->msg == CURLMSG_DONE && m->easy_handle == O.easy) export_done(m->data.result);
}

/* The queue and the exports. */

/* The first n queued spans, encoded into O.body and freed. */
static void take_batch(int n) {
  mcp_otlp_source src = { &O.resource, "luamcp", LUAMCP_VERSION };
  O.body.len = 0;
  if (O.json) mcp_otlp_json(&O.body, &src, O.head, n);
  else mcp_otlp_proto(&O.body, &src, O.head, n);
  for (int i = 0; i < n; i++) {
    mcp_span *s = O.head;
    O.head = s->next;
    mcp_span_free(s);
  }
  if (O.head == NULL) O.tail = NULL;
  O.queued -= n;
  O.in_flight = n;
}

/* The collector's answer is not read (curl's default writes it to fd 1). */
static size_t discard(char *p, size_t size, size_t n, void *ud) {
  (void)p, (void)ud;
  return size * n;
}

/* The easy handle, set to POST O.body: made at the first export and kept
 * (its options set once), not made and freed per batch. */
static CURL *easy_for_export(void) {
  CURL *e = O.handle;
  if (e == NULL) {
    if ((e = O.handle = curl_easy_init()) == NULL) return NULL;
    curl_easy_setopt(e, CURLOPT_URL, O.url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, O.headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
  }
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, O.body.data);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)O.body.len);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, O.timeout_ms);
  return e;
}

static void export_start(void) {
  int n = O.queued < MAX_BATCH ? O.queued : MAX_BATCH;
  if (O.easy || O.flushed || n == 0) return;       /* at shutdown, export_last sends the rest */
  take_batch(n);
  if ((O.easy = easy_for_export()) == NULL) {
    O.failed += (uint64_t)n;
    O.exports_failed++;
    return;
  }
  curl_multi_add_handle(O.cl.multi, O.easy);          /* starts at curl's next timer */
}

static void export_done(CURLcode rc) {
  long status = 0;
  CURL *e = O.easy;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  if (rc == CURLE_OK && status >= 200 && status < 300) {
    O.exported += (uint64_t)O.in_flight;
  } else {
    O.failed += (uint64_t)O.in_flight;
    if (O.exports_failed++ == 0 || O.exports_failed % 100 == 0)
      mcp_warn("otel: export to %s failed: %s", O.url,
               rc != CURLE_OK ? curl_easy_strerror(rc) : status ? "HTTP error status" : "no answer");
  }
  curl_multi_remove_handle(O.cl.multi, e);
  O.easy = NULL;
  O.in_flight = 0;
  if (O.flushed) uv_timer_start(&O.flush_wait, on_flush_wait, 0, 0);   /* out of curl's callback */
  else if (O.queued >= MAX_BATCH) export_start();  /* a full batch waits: no need to wait the delay */
}

/* Drops not told yet, told: at once the first time, then at most every
 * DROP_WARN_MS (a drop or the flush timer tells the rest), and at close. */
static void tell_drops(int at_close) {
  uint64_t now = uv_now(O.loop), n = O.dropped - O.drops_told;
  if (n == 0 || (!at_close && O.told_at && now - O.told_at < DROP_WARN_MS)) return;
  mcp_warn("otel: %llu span%s dropped: the export queue was full (max_queue_size %d); the collector at %s "
           "did not keep up -- raise OTEL_BSP_MAX_QUEUE_SIZE (otel.max_queue_size in the configuration) "
           "to keep such a burst",
           (unsigned long long)n, n == 1 ? "" : "s", O.max_queue, O.url);
  O.drops_told = O.dropped;
  O.told_at = now ? now : 1;
}

static void on_flush(uv_timer_t *h) {
  (void)h;
  export_start();
  tell_drops(0);
}

/* trace.c's sink: s joins the queue, or is dropped when it is full. */
static void sink(mcp_span *s) {
  if (!O.on || O.queued >= O.max_queue) {
    O.dropped++;
    mcp_span_free(s);
    if (O.on) tell_drops(0);
    return;
  }
  s->next = NULL;
  if (O.tail) O.tail->next = s;
  else O.head = s;
  O.tail = s;
  if (++O.queued >= MAX_BATCH && O.easy == NULL) export_start();
}

static void collect(mcp_buf *b) {
  mcp_metric_head(b, "luamcp_otel_spans_total", "counter",
                  "Finished spans by what became of them: exported, dropped (the queue was full), "
                  "failed (the collector refused them or did not answer).");
  mcp_metric_sample(b, "luamcp_otel_spans_total", "outcome=\"exported\"", (double)O.exported);
  mcp_metric_sample(b, "luamcp_otel_spans_total", "outcome=\"dropped\"", (double)O.dropped);
  mcp_metric_sample(b, "luamcp_otel_spans_total", "outcome=\"failed\"", (double)O.failed);
  mcp_metric_head(b, "luamcp_otel_queue_spans", "gauge", "Spans waiting for export.");
  mcp_metric_sample(b, "luamcp_otel_queue_spans", NULL, (double)O.queued);
}

int mcp_otel_init(uv_loop_t *loop, const mcp_otel_opts *o) {
  mcp_sampler sampler;
  int r = configure_url(o);
  if (r <= 0) return r;
  if (configure(o, &sampler) != 0) return -1;
  O.loop = loop;
  mcp_curl_loop_init(&O.cl, loop, on_curl_done);
  uv_unref((uv_handle_t *)&O.cl.timer);
  uv_timer_init(loop, &O.flush_timer);
  uv_unref((uv_handle_t *)&O.flush_timer);
  uv_timer_start(&O.flush_timer, on_flush, (uint64_t)O.delay_ms, (uint64_t)O.delay_ms);
  uv_timer_init(loop, &O.flush_wait);
  mcp_metrics_collector(collect);
  mcp_sched_trace(&sampler, sink);
  O.on = 1;
  mcp_info("otel: traces to %s (%s)", O.url, O.json ? "http/json" : "http/protobuf");
  return 0;
}

/* The last spans, at shutdown: blocking exports, until two seconds after
 * the shutdown began. */
static void export_last(void) {
  uint64_t end = (O.close_by ? O.close_by : uv_hrtime() + CLOSE_NS), now;
  CURL *e;
  long ms;
  /* Less than a millisecond left is none: curl reads a timeout of 0 as no
   * limit (a collector that never answers held shutdown for good). */
  while (O.queued > 0 && (now = uv_hrtime()) < end && (ms = (long)((end - now) / 1000000)) > 0) {
    take_batch(O.queued < MAX_BATCH ? O.queued : MAX_BATCH);
    if ((e = easy_for_export()) == NULL) return;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms);
    if (curl_easy_perform(e) != CURLE_OK) return;
  }
}

/* mcp_otel_flush's wait is over: the export in flight ended, or time. */
static void on_flush_wait(uv_timer_t *h) {
  void (*done)(void) = O.flushed;
  (void)h;
  O.flushed = NULL;
  if (done) done();
}

void mcp_otel_flush(void (*done)(void)) {
  if (!O.on || O.easy == NULL) {
    done();
    return;
  }
  O.flushed = done;
  O.close_by = uv_hrtime() + CLOSE_NS;
  uv_timer_start(&O.flush_wait, on_flush_wait, CLOSE_NS / 1000000, 0);
}

void mcp_otel_close(void) {
  if (!O.on) return;
  tell_drops(1);
  O.on = 0;
  mcp_trace_on = 0;
  if (O.easy) {                                   /* no answer in time: failed */
    curl_multi_remove_handle(O.cl.multi, O.easy);
    O.easy = NULL;
    O.failed += (uint64_t)O.in_flight;
  }
  export_last();
  if (O.handle) curl_easy_cleanup(O.handle);
  O.handle = NULL;
  while (O.head) {
    mcp_span *s = O.head;
    O.head = s->next;
    mcp_span_free(s);
  }
  O.tail = NULL;
  O.queued = 0;
  mcp_span_spare_free();
  uv_close((uv_handle_t *)&O.flush_timer, NULL);
  uv_close((uv_handle_t *)&O.flush_wait, NULL);
  curl_slist_free_all(O.headers);
  mcp_attrs_free(&O.resource);
  mcp_buf_free(&O.body);
  free(O.url);
  mcp_curl_loop_close(&O.cl);
}
