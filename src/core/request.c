/* The request table and the cancellation state machine. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "request.h"

/*
 * The cancellation state machine.
 *
 * Every incoming request that runs a handler lives here from the moment it is
 * read until its outcome is decided. Events come from everywhere: the client
 * (notifications/cancelled), the transport (stream closed, session ended,
 * shutdown), timers (deadline, grace) and the handler itself (returned,
 * raised). They race: a cancel may arrive before the handler started, while
 * it runs, while it cleans up after a timeout, or after the response went out.
 *
 * The rule that makes the races harmless: every event goes through this one
 * table, and every terminal state is reached exactly once. Once terminal, all
 * events are no-ops (MCP_ACT_IGNORED): a handler returning after a cancel
 * produces no response, a cancel after the response changes nothing, a grace
 * timer that fires after the handler returned does nothing.
 *
 * Two states sit between running and terminal, because a cooperative handler
 * is allowed to clean up: CANCELLING ends with no response at all (the spec:
 * "not send a response for the cancelled request"), TIMING_OUT ends with a
 * timeout result. A client cancel during TIMING_OUT turns it into CANCELLING,
 * since the client no longer wants any answer. Both end when the handler
 * returns, raises, or its grace expires (then it is aborted by force).
 *
 * A call the C path takes with no handler at all (a forwarded call: its
 * request written upstream from C, its answer spliced into the response)
 * is HELD: the op's completion answers it (RETURN), or starts its handler
 * after all (START) when the outcome needs Lua. A cancel, a timeout or a
 * close of a held call has no handler to wait for: it stops the op and the
 * call ends at once.
 *
 * The policy picks the table: "abort" goes straight to terminal and stops the
 * handler; "ignore" lets cancel and timeout pass (the spec: receivers MAY
 * ignore a cancel for work that cannot be cancelled) but still stops for
 * shutdown. A request still queued is dropped by a cancel whatever the policy:
 * no work has started that could not be cancelled.
 */
#define T(next, acts) { MCP_REQ_##next, (acts) }
#define IGN(state) T(state, MCP_ACT_IGNORED)
#define Q  MCP_ACT_START
#define SI MCP_ACT_SIGNAL
#define SG (MCP_ACT_SIGNAL | MCP_ACT_GRACE)
#define AB MCP_ACT_ABORT
#define RS MCP_ACT_RESULT
#define ER MCP_ACT_ERROR
#define TO MCP_ACT_TIMEOUT
#define FI MCP_ACT_FINISH

/* Rows common to every policy: queued, cleaning up, terminal. */
#define ROW_QUEUED \
  /* START          RETURN        RAISE         CANCEL          TIMEOUT            GRACE         CLOSE \
     HOLD */ \
  { T(RUNNING, Q),  IGN(QUEUED),  IGN(QUEUED),  T(CANCELLED,FI), T(TIMED_OUT,TO|FI), IGN(QUEUED), T(CANCELLED,FI), \
    IGN(QUEUED) }
#define ROW_CANCELLING \
  { IGN(CANCELLING), T(CANCELLED,FI), T(CANCELLED,FI), IGN(CANCELLING), IGN(CANCELLING), \
    T(CANCELLED,AB|FI), IGN(CANCELLING), IGN(CANCELLING) }
#define ROW_TIMING_OUT \
  { IGN(TIMING_OUT), T(TIMED_OUT,TO|FI), T(TIMED_OUT,TO|FI), T(CANCELLING,0), IGN(TIMING_OUT), \
    T(TIMED_OUT,AB|TO|FI), T(CANCELLING,0), IGN(TIMING_OUT) }
/* Held: no handler to wake or to wait for, so a stop is final at once: its
 * op is stopped (SIGNAL: the upstream told why) and the call ends. START
 * is the op's outcome wanting Lua: the handler starts after all. Nothing
 * raises. Under "ignore" a cancel and a timeout pass, as while running. */
#define ROW_HELD(cancel, timeout) \
  { T(RUNNING, Q), T(COMPLETED,RS|FI), IGN(HELD), cancel, timeout, IGN(HELD), T(CANCELLED,SI|FI), IGN(HELD) }
#define ROW_TERMINAL(s) { IGN(s), IGN(s), IGN(s), IGN(s), IGN(s), IGN(s), IGN(s), IGN(s) }
#define ROWS_END \
  ROW_TERMINAL(COMPLETED), ROW_TERMINAL(FAILED), ROW_TERMINAL(CANCELLED), ROW_TERMINAL(TIMED_OUT)

const mcp_transition mcp_req_fsm[MCP_CANCEL_NMODES][MCP_REQ_NSTATES][MCP_EV_NEVENTS] = {
  [MCP_CANCEL_COOPERATIVE] = {
    ROW_QUEUED,
    /* RUNNING */
    { IGN(RUNNING), T(COMPLETED,RS|FI), T(FAILED,ER|FI), T(CANCELLING,SG), T(TIMING_OUT,SG),
      IGN(RUNNING), T(CANCELLING,SG), T(HELD,0) },
    ROW_CANCELLING, ROW_TIMING_OUT,
    ROW_HELD(T(CANCELLED,SI|FI), T(TIMED_OUT,SI|TO|FI)),
    ROWS_END
  },
  [MCP_CANCEL_ABORT] = {
    ROW_QUEUED,
    { IGN(RUNNING), T(COMPLETED,RS|FI), T(FAILED,ER|FI), T(CANCELLED,AB|FI), T(TIMED_OUT,AB|TO|FI),
      IGN(RUNNING), T(CANCELLED,AB|FI), T(HELD,0) },
    ROW_CANCELLING, ROW_TIMING_OUT,
    ROW_HELD(T(CANCELLED,SI|FI), T(TIMED_OUT,SI|TO|FI)),
    ROWS_END
  },
  [MCP_CANCEL_IGNORE] = {
    ROW_QUEUED,
    { IGN(RUNNING), T(COMPLETED,RS|FI), T(FAILED,ER|FI), IGN(RUNNING), IGN(RUNNING),
      IGN(RUNNING), T(CANCELLING,SG), T(HELD,0) },
    ROW_CANCELLING, ROW_TIMING_OUT,
    ROW_HELD(IGN(HELD), IGN(HELD)),
    ROWS_END
  },
};

static const char *const state_names[MCP_REQ_NSTATES] = {
  "queued", "running", "cancelling", "timing_out", "held", "completed", "failed", "cancelled", "timed_out"
};
static const char *const event_names[MCP_EV_NEVENTS] = {
  "start", "return", "raise", "cancel", "timeout", "grace", "close", "hold"
};
static const char *const mode_names[MCP_CANCEL_NMODES] = { "cooperative", "abort", "ignore" };

const char *mcp_req_state_name(int s) {
  return (unsigned)s < MCP_REQ_NSTATES ? state_names[s] : "?";
}
const char *mcp_req_event_name(int ev) {
  return (unsigned)ev < MCP_EV_NEVENTS ? event_names[ev] : "?";
}
const char *mcp_cancel_mode_name(int m) {
  return (unsigned)m < MCP_CANCEL_NMODES ? mode_names[m] : "?";
}
int mcp_cancel_mode_parse(const char *name) {
  for (int i = 0; i < MCP_CANCEL_NMODES; i++)
    if (strcmp(name, mode_names[i]) == 0) return i;
  return -1;
}

void mcp_req_init_in(mcp_req *req, char *store, const char *key, size_t keylen, mcp_cancel_mode mode) {
  memset(req, 0, sizeof *req);
  req->key = store;
  req->key_kept = 1;
  memcpy(req->key, key, keylen);
  req->key[keylen] = '\0';
  req->keylen = keylen;
  req->mode = (uint8_t)mode;
  req->state = MCP_REQ_QUEUED;
}

void mcp_req_init(mcp_req *req, const char *key, size_t keylen, mcp_cancel_mode mode) {
  char *store = malloc(keylen + 1);
  if (store == NULL) abort();
  mcp_req_init_in(req, store, key, keylen, mode);
  req->key_kept = 0;
}

/* A reason is shared by the requests given the same one in a row (a client
 * cancelling 10,000 calls with one reason, a shutdown closing them all): one
 * copy, counted, freed by its last holder; the latest is held here too. */
typedef struct {
  unsigned refs;
  char text[];
} reason_t;

static reason_t *latest;

static reason_t *reason_of(char *text) { return (reason_t *)(text - offsetof(reason_t, text)); }

static void reason_drop(char *text) {
  reason_t *r = reason_of(text);
  if (--r->refs == 0) free(r);
}

static char *reason_hold(const char *reason) {
  if (latest == NULL || strcmp(latest->text, reason) != 0) {
    size_t n = strlen(reason);
    reason_t *r = malloc(sizeof *r + n + 1);
    if (r == NULL) abort();
    r->refs = 1;                              /* latest's */
    memcpy(r->text, reason, n + 1);
    if (latest != NULL) reason_drop(latest->text);
    latest = r;
  }
  latest->refs++;
  return latest->text;
}

void mcp_req_close(mcp_req *req) {
  if (!req->key_kept) free(req->key);
  if (req->reason != NULL) reason_drop(req->reason);
  req->key = req->reason = NULL;
}

unsigned mcp_req_fire(mcp_req *req, mcp_req_event ev, const char *reason) {
  const mcp_transition *t = &mcp_req_fsm[req->mode][req->state][ev];
  int from = req->state;
  if (t->actions & MCP_ACT_IGNORED) {
    mcp_debug("request %.64s: %s ignored in state %s%s%s", req->key, event_names[ev],
              state_names[from], reason ? ": " : "", reason ? reason : "");
    return t->actions;
  }
  if (reason != NULL && req->reason == NULL &&
      (ev == MCP_EV_CANCEL || ev == MCP_EV_TIMEOUT || ev == MCP_EV_CLOSE))
    req->reason = reason_hold(reason);
  req->state = t->next;
  if (t->next != from)
    mcp_debug("request %.64s: %s -> %s (%s%s%s)", req->key, state_names[from],
              state_names[t->next], event_names[ev], reason ? ": " : "", reason ? reason : "");
  return t->actions;
}

/* The table. */

static uint32_t key_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;                 /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h;
}

/* Empty tables' first bucket arrays, kept for the next tables (a stateless
 * request's session has one each): all NULL, as an empty table leaves them. */
#define BUCKETS_FIRST 64
#define BUCKETS_KEPT 64
static struct {
  mcp_req **b[BUCKETS_KEPT];
  int n;
} kept;

/* The ring is not zeroed (3 KB): only the entries written since are read. */
void mcp_reqtab_init(mcp_reqtab *t) {
  t->count = 0;
  t->recent_next = 0;
  t->nbuckets = BUCKETS_FIRST;
  t->buckets = kept.n > 0 ? kept.b[--kept.n] : calloc(t->nbuckets, sizeof *t->buckets);
  if (t->buckets == NULL) abort();
}

void mcp_reqtab_close(mcp_reqtab *t) {
  if (t->count == 0 && t->nbuckets == BUCKETS_FIRST && kept.n < BUCKETS_KEPT) kept.b[kept.n++] = t->buckets;
  else free(t->buckets);
  t->buckets = NULL;
  t->nbuckets = t->count = 0;
}

static mcp_req *find_hashed(mcp_reqtab *t, const char *key, size_t keylen, uint32_t h) {
  for (mcp_req *r = t->buckets[h & (t->nbuckets - 1)]; r != NULL; r = r->hnext)
    if (r->hash == h && r->keylen == keylen && memcmp(r->key, key, keylen) == 0) return r;
  return NULL;
}

mcp_req *mcp_reqtab_find(mcp_reqtab *t, const char *key, size_t keylen) {
  return find_hashed(t, key, keylen, key_hash(key, keylen));
}

static void reqtab_grow(mcp_reqtab *t) {
  size_t n = t->nbuckets * 2;
  mcp_req **b = calloc(n, sizeof *b);
  if (b == NULL) abort();
  for (size_t i = 0; i < t->nbuckets; i++) {
    mcp_req *r = t->buckets[i], *next;
    for (; r != NULL; r = next) {
      next = r->hnext;
      r->hnext = b[r->hash & (n - 1)];
      b[r->hash & (n - 1)] = r;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = n;
}

int mcp_reqtab_insert(mcp_reqtab *t, mcp_req *req) {
  uint32_t h = key_hash(req->key, req->keylen);
  if (find_hashed(t, req->key, req->keylen, h) != NULL) return -1;
  if (t->count >= t->nbuckets) reqtab_grow(t);
  req->hash = h;
  mcp_req **slot = &t->buckets[req->hash & (t->nbuckets - 1)];
  req->hnext = *slot;
  *slot = req;
  req->linked = 1;
  t->count++;
  return 0;
}

void mcp_reqtab_remove(mcp_reqtab *t, mcp_req *req) {
  if (!req->linked) return;
  mcp_req **p = &t->buckets[req->hash & (t->nbuckets - 1)];
  while (*p != req) p = &(*p)->hnext;
  *p = req->hnext;
  req->hnext = NULL;
  req->linked = 0;
  t->count--;
  mcp_req_recent *rc = &t->recent[t->recent_next++ % MCP_REQTAB_RECENT];
  rc->hash = req->hash;
  rc->state = req->state;
  size_t n = req->keylen < sizeof rc->key - 1 ? req->keylen : sizeof rc->key - 1;
  memcpy(rc->key, req->key, n);
  rc->key[n] = '\0';
}

int mcp_reqtab_recent(const mcp_reqtab *t, const char *key, size_t keylen) {
  uint32_t h = key_hash(key, keylen);
  size_t n = keylen < sizeof t->recent[0].key - 1 ? keylen : sizeof t->recent[0].key - 1;
  for (unsigned i = 1; i <= MCP_REQTAB_RECENT && i <= t->recent_next; i++) {   /* newest first */
    const mcp_req_recent *rc = &t->recent[(t->recent_next - i) % MCP_REQTAB_RECENT];
    if (rc->key[0] && rc->hash == h && strncmp(rc->key, key, n) == 0 && rc->key[n] == '\0')
      return rc->state;
  }
  return -1;
}
