/* Per-tool limits: slots, the queue of calls waiting for one, the rate's
 * token bucket, and the counts /metrics shows.
 *
 * A call waiting here is a request in the state machine's QUEUED state
 * that was not started: whatever ends a queued request (a cancel, its
 * timeout, which counts from its arrival, the end of its session) ends it
 * the usual way, and the row's leave takes it out of the queue. A slot
 * passes straight from a call that ends to the first waiting one, so a
 * call that arrives meanwhile cannot take it out of turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limit.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "sched_int.h"

#define NBUCKETS 64

enum { MCP_LSTATE_NONE, MCP_LSTATE_WAITING, MCP_LSTATE_SLOT };   /* a call's lstate */

struct mcp_limit {
  mcp_limit *next;
  const char *tool;          /* interned */
  int max_concurrent;        /* 0: no limit */
  int queue;                 /* calls that may wait past max_concurrent */
  double rate;               /* tokens per second; 0: no limit */
  double burst;              /* the bucket's size */
  char rate_text[32];        /* as declared, for the refusal */
  double heartbeat;          /* seconds; 0: none */
  double tokens;
  uint64_t filled_ns;        /* mcp_clock_ns of the last refill */
  int running, queued;
  mcp_call *head, *tail;     /* waiting, first come first */
  uint64_t refused_busy, refused_rate;
};

static mcp_limit *buckets[NBUCKETS];
static int collector_added;

static unsigned hash(const char *s) {
  unsigned h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h % NBUCKETS;
}

static mcp_limit *find(const char *tool) {
  for (mcp_limit *l = buckets[hash(tool)]; l; l = l->next)
    if (strcmp(l->tool, tool) == 0) return l;
  return NULL;
}

mcp_limit *mcp_limit_of(const char *tool) {
  mcp_limit *l = find(tool);
  if (l != NULL) return l;
  if ((l = calloc(1, sizeof *l)) == NULL) abort();
  l->tool = mcp_name_intern(tool);
  l->next = buckets[hash(tool)];
  buckets[hash(tool)] = l;
  if (!collector_added) {
    collector_added = 1;
    mcp_metrics_collector(mcp_limit_collect);
  }
  return l;
}

static double beat_period(const mcp_call *c) { return c->limit ? c->limit->heartbeat : 0; }

/* A tools/call of a tool with a policy (its name interned) counts here. */
static void arrive(mcp_call *c) {
  if (c->tool != NULL && !c->tool_owned) c->limit = mcp_limit_of(c->tool);
}

/* "R/s" or "R/m": tokens per second and the bucket's size (R, at least 1). */
static int parse_rate(const char *text, double *rate, double *burst) {
  char unit, extra;
  double r;
  if (sscanf(text, "%lf/%c%c", &r, &unit, &extra) != 2 || !(r > 0) || (unit != 's' && unit != 'm'))
    return -1;
  *rate = unit == 's' ? r : r / 60.0;
  *burst = r < 1 ? 1 : r;
  return 0;
}

/* Hand free slots to waiting calls, first come first. */
static void pump(mcp_limit *l) {
  while (l->head != NULL && (l->max_concurrent == 0 || l->running < l->max_concurrent)) {
    mcp_call *c = l->head;
    l->head = c->lnext;
    if (l->head == NULL) l->tail = NULL;
    c->lnext = NULL;
    l->queued--;
    l->running++;
    c->lstate = MCP_LSTATE_SLOT;
    mcp_call_wake(c);              /* sched.c starts it on its run queue */
  }
}

int mcp_limit_set(const char *tool, int max_concurrent, int queue, const char *rate,
                  double heartbeat) {
  double r = 0, burst = 0;
  mcp_limit *l;
  if (rate != NULL && parse_rate(rate, &r, &burst) != 0) return -1;
  l = mcp_limit_of(tool);
  l->max_concurrent = max_concurrent > 0 ? max_concurrent : 0;
  l->queue = queue > 0 ? queue : 0;
  l->heartbeat = heartbeat > 0 ? heartbeat : 0;
  if (r != l->rate || burst != l->burst) {       /* a new bucket starts full */
    l->rate = r;
    l->burst = l->tokens = burst;
    l->filled_ns = mcp_clock_ns();
  }
  snprintf(l->rate_text, sizeof l->rate_text, "%s", rate ? rate : "");
  pump(l);
  return 0;
}

static int take_token(mcp_limit *l) {
  uint64_t now;
  if (l->rate == 0) return 1;
  now = mcp_clock_ns();
  l->tokens += (double)(now - l->filled_ns) / 1e9 * l->rate;
  if (l->tokens > l->burst) l->tokens = l->burst;
  l->filled_ns = now;
  if (l->tokens < 1) return 0;
  l->tokens -= 1;
  return 1;
}

static int take_slot(mcp_call *c, char *msg, size_t cap) {
  mcp_limit *l = c->limit;
  int run = l->max_concurrent == 0 || (l->running < l->max_concurrent && l->head == NULL);
  if (!run && l->queued >= l->queue) {
    l->refused_busy++;
    snprintf(msg, cap, "busy: %d running, %d queued", l->running, l->queued);
    return MCP_ADMIT_REFUSE;
  }
  if (!take_token(l)) {
    l->refused_rate++;
    snprintf(msg, cap, "rate limit: %s", l->rate_text);
    return MCP_ADMIT_REFUSE;
  }
  if (run) {
    l->running++;
    c->lstate = MCP_LSTATE_SLOT;
    return MCP_ADMIT_RUN;
  }
  c->lnext = NULL;
  if (l->tail) l->tail->lnext = c; else l->head = c;
  l->tail = c;
  l->queued++;
  c->lstate = MCP_LSTATE_WAITING;
  c->held = 1;
  return MCP_ADMIT_WAIT;
}

static void leave(mcp_call *c) {
  mcp_limit *l = c->limit;
  if (l == NULL || c->lstate == MCP_LSTATE_NONE) return;
  if (c->lstate == MCP_LSTATE_WAITING) {
    mcp_call **p = &l->head, *prev = NULL;
    while (*p && *p != c) prev = *p, p = &(*p)->lnext;
    if (*p) {
      *p = c->lnext;
      if (l->tail == c) l->tail = prev;
      l->queued--;
    }
  } else {
    l->running--;
  }
  c->lstate = MCP_LSTATE_NONE;
  c->lnext = NULL;
  pump(l);
}

static void each_tool(mcp_buf *b, const char *name, int which) {
  mcp_buf labels = MCP_BUF_INIT;
  for (int i = 0; i < NBUCKETS; i++)
    for (mcp_limit *l = buckets[i]; l; l = l->next) {
      labels.len = 0;
      mcp_metric_label(&labels, 0, "tool", l->tool);
      if (which < 2) {
        mcp_buf_addc(&labels, '\0');
        mcp_metric_sample(b, name, labels.data, which == 0 ? l->running : l->queued);
        continue;
      }
      for (int r = 0; r < 2; r++) {
        size_t len = labels.len;
        mcp_metric_label(&labels, 1, "reason", r == 0 ? "busy" : "rate");
        mcp_buf_addc(&labels, '\0');
        mcp_metric_sample(b, name, labels.data, (double)(r == 0 ? l->refused_busy : l->refused_rate));
        labels.len = len;
      }
    }
  mcp_buf_free(&labels);
}

/* A queued call may start once it holds a slot; one waiting for a slot
 * stays queued (pump wakes it with one). */
static int admit(mcp_call *c, char *msg, size_t cap) {
  int r;
  if (c->limit == NULL || c->lstate == MCP_LSTATE_SLOT) return MCP_ADMIT_RUN;
  if (c->lstate == MCP_LSTATE_WAITING) return MCP_ADMIT_WAIT;
  r = take_slot(c, msg, cap);
  if (r == MCP_ADMIT_WAIT) mcp_debug("request %.64s: %s queued: limit of %s", c->req.key, c->method, c->tool);
  return r;
}

static const mcp_call_type limit_type = {
  .arrive = arrive, .heartbeat = beat_period, .admit = admit, .leave = leave,
};

void mcp_limit_init(void) { mcp__sched_register(&limit_type); }

void mcp_limit_collect(mcp_buf *b) {
  mcp_metric_head(b, "luamcp_tool_in_flight", "gauge", "Tool calls running (holding a slot), per tool.");
  each_tool(b, "luamcp_tool_in_flight", 0);
  mcp_metric_head(b, "luamcp_tool_queued", "gauge", "Tool calls waiting for a slot (max_concurrent), per tool.");
  each_tool(b, "luamcp_tool_queued", 1);
  mcp_metric_head(b, "luamcp_tool_refused_total", "counter",
                  "Tool calls refused by their limits: reason busy (queue full) or rate.");
  each_tool(b, "luamcp_tool_refused_total", 2);
}

void mcp_limit_close(void) {
  for (int i = 0; i < NBUCKETS; i++)
    while (buckets[i]) {
      mcp_limit *l = buckets[i];
      buckets[i] = l->next;
      free(l);
    }
  collector_added = 0;
}
