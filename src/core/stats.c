/* Finished calls: counters per method and tool, histograms, the access log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "log.h"
#include "metrics.h"
#include "sched_int.h"
#include "stats.h"

#define NBUCKETS 64


/* One method and tool (both interned; tool NULL for other methods and for
 * names no plugin declares), for the life of the process. */
typedef struct rstat {
  struct rstat *next;
  const char *method, *tool;
  uint64_t n[1 + MCP_WHY_N];   /* [0] ok, [1] error, [1 + why] cancelled for that reason */
  mcp_hist handler;            /* start to FINISH of calls that started */
} rstat;

static struct {
  rstat *buckets[NBUCKETS];
  mcp_hist cancel_stop;        /* first cancel (or timeout, or close) to FINISH */
  FILE *access;
  int collecting;
} S;

static int why_of(mcp_req_event ev, const char *reason) {
  if (ev == MCP_EV_TIMEOUT) return MCP_WHY_TIMEOUT;
  if (reason == NULL) reason = "";
  if (strcmp(reason, "shutdown") == 0) return MCP_WHY_SHUTDOWN;
  if (ev == MCP_EV_CLOSE)
    return strcmp(reason, "session ended") == 0 || strcmp(reason, "initialize failed") == 0
               ? MCP_WHY_SESSION_ENDED : MCP_WHY_ABORTED;
  if (strcmp(reason, "client disconnected") == 0) return MCP_WHY_DISCONNECT;
  if (strncmp(reason, "task ", 5) == 0) return MCP_WHY_TASK_CANCELLED;   /* cancelled, expired, evicted */
  return MCP_WHY_CLIENT;
}

static rstat *stat_of(const char *method, const char *tool) {
  unsigned h = (unsigned)(((uintptr_t)method >> 4) ^ ((uintptr_t)tool >> 4) * 31u) % NBUCKETS;
  rstat *r;
  for (r = S.buckets[h]; r; r = r->next)
    if (r->method == method && r->tool == tool) return r;
  if ((r = calloc(1, sizeof *r)) == NULL) abort();
  r->method = method;
  r->tool = tool;
  r->next = S.buckets[h];
  S.buckets[h] = r;
  return r;
}

/* [0] ok, [1] error, else 1 + why. */
static int outcome_of(const mcp_call *c) {
  switch (c->req.state) {
    case MCP_REQ_COMPLETED: return c->rpc_error ? 1 : 0;
    case MCP_REQ_FAILED: return 1;
    case MCP_REQ_TIMED_OUT: return 1 + MCP_WHY_TIMEOUT;
    default: return 1 + (c->why ? c->why : MCP_WHY_ABORTED);
  }
}

/* RFC 3339, UTC, milliseconds. */
static void add_time(mcp_buf *b) {
  struct timespec ts;
  struct tm tm;
  char text[40];
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  mcp_buf_printf(b, "\"%s.%03ldZ\"", text, ts.tv_nsec / 1000000);
}

static void add_str(mcp_buf *b, const char *key, const char *s) {
  mcp_buf_printf(b, ",\"%s\":", key);
  if (s == NULL) mcp_buf_adds(b, "null");
  else mcp_json_add_string(b, s, strlen(s));
}

static void access_line(const mcp_call *c, int outcome, uint64_t now) {
  mcp_buf b = MCP_BUF_INIT;
  mcp_buf_adds(&b, "{\"time\":");
  add_time(&b);
  add_str(&b, "session", c->owner->session_name(c));
  mcp_buf_adds(&b, ",\"id\":");
  mcp_buf_add(&b, c->req.key, c->req.keylen);      /* the id's exact JSON text */
  add_str(&b, "method", c->method);
  add_str(&b, "tool", c->tool);
  mcp_buf_printf(&b, ",\"duration_ms\":%.3f", (double)(now - c->arrive_ns) / 1e6);
  add_str(&b, "outcome", outcome == 0 ? "ok" : outcome == 1 ? "error" : "cancelled");
  add_str(&b, "cancel_reason", outcome >= 2 ? mcp_why_name(outcome - 1) : NULL);
  mcp_buf_printf(&b, ",\"bytes_in\":%u,\"bytes_out\":%u}\n", c->bytes_in, c->bytes_out);
  fwrite(b.data, 1, b.len, S.access);             /* one write per line */
  mcp_buf_free(&b);
}

static void finish(const mcp_call *c) {
  uint64_t now = c->end_ns;
  int outcome = outcome_of(c);
  rstat *r = stat_of(c->method, c->tool_owned ? NULL : c->tool);
  r->n[outcome]++;
  if (c->start_ns && !c->refused) mcp_hist_observe(&r->handler, (double)(now - c->start_ns) / 1e9);
  if (c->stop_ns) mcp_hist_observe(&S.cancel_stop, (double)(now - c->stop_ns) / 1e9);
  if (S.access) access_line(c, outcome, now);
}

int mcp_stats_access_log(const char *path) {
  if (strcmp(path, "-") == 0) {
    S.access = stderr;
    return 0;
  }
  if ((S.access = fopen(path, "a")) == NULL) return -1;
  setvbuf(S.access, NULL, _IOLBF, 0);
  return 0;
}

static void labels_of(mcp_buf *l, const rstat *r) {
  l->len = 0;
  mcp_metric_label(l, 0, "method", r->method);
  mcp_metric_label(l, 1, "tool", r->tool ? r->tool : "");
}

static void collect(mcp_buf *b) {
  mcp_buf l = MCP_BUF_INIT;
  mcp_metric_head(b, "luamcp_requests_total", "counter",
                  "Requests that ran a handler, by method, tool and outcome (ok, error, cancelled; "
                  "reason says why a cancelled one stopped).");
  for (int i = 0; i < NBUCKETS; i++)
    for (rstat *r = S.buckets[i]; r; r = r->next)
      for (int o = 0; o < 1 + MCP_WHY_N; o++) {
        if (o >= 2 && r->n[o] == 0) continue;
        labels_of(&l, r);
        mcp_metric_label(&l, 1, "outcome", o == 0 ? "ok" : o == 1 ? "error" : "cancelled");
        if (o >= 2) mcp_metric_label(&l, 1, "reason", mcp_why_name(o - 1));
        mcp_buf_addc(&l, '\0');
        mcp_metric_sample(b, "luamcp_requests_total", l.data, (double)r->n[o]);
      }
  mcp_metric_head(b, "luamcp_handler_duration_seconds", "histogram",
                  "Time from a handler's start to its request's end, by method and tool.");
  for (int i = 0; i < NBUCKETS; i++)
    for (rstat *r = S.buckets[i]; r; r = r->next) {
      labels_of(&l, r);
      mcp_buf_addc(&l, '\0');
      mcp_metric_hist(b, "luamcp_handler_duration_seconds", l.data, &r->handler);
    }
  mcp_metric_head(b, "luamcp_cancel_stop_seconds", "histogram",
                  "Time from a request's cancel (or timeout, or close) to its end.");
  mcp_metric_hist(b, "luamcp_cancel_stop_seconds", NULL, &S.cancel_stop);
  mcp_metric_head(b, "luamcp_lua_memory_bytes", "gauge", "Bytes the Lua state holds.");
  mcp_metric_sample(b, "luamcp_lua_memory_bytes", NULL, (double)mcp_sched_memory());
  mcp_buf_free(&l);
}

static void cancelled(mcp_call *c, mcp_req_event ev, const char *reason) {
  c->why = (unsigned)why_of(ev, reason);
}

static const mcp_call_type stats_type = { .cancelled = cancelled, .finish = finish };

void mcp_stats_init(void) {
  mcp__sched_register(&stats_type);
  if (!S.collecting) mcp_metrics_collector(collect);
  S.collecting = 1;
}

void mcp_stats_close(void) {
  for (int i = 0; i < NBUCKETS; i++)
    while (S.buckets[i]) {
      rstat *r = S.buckets[i];
      S.buckets[i] = r->next;
      free(r);
    }
  if (S.access && S.access != stderr) fclose(S.access);
  S.access = NULL;
  S.collecting = 0;
}
