/* Every cell of the cancellation state machine, the invariants over random
 * event orders, and the request table. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "request.h"
#include "test.h"

enum { Q = MCP_REQ_QUEUED, R = MCP_REQ_RUNNING, CG = MCP_REQ_CANCELLING, TG = MCP_REQ_TIMING_OUT,
       H = MCP_REQ_HELD, DONE = MCP_REQ_COMPLETED, FAIL = MCP_REQ_FAILED, CX = MCP_REQ_CANCELLED, TX = MCP_REQ_TIMED_OUT };
#define START MCP_ACT_START
#define SIG MCP_ACT_SIGNAL
#define GR MCP_ACT_GRACE
#define AB MCP_ACT_ABORT
#define RES MCP_ACT_RESULT
#define ERR MCP_ACT_ERROR
#define TOUT MCP_ACT_TIMEOUT
#define FIN MCP_ACT_FINISH
#define IGN MCP_ACT_IGNORED

typedef struct { int mode, state, ev, next; unsigned acts; const char *why; } cell;

#define COOP MCP_CANCEL_COOPERATIVE
#define ABRT MCP_CANCEL_ABORT
#define IGNR MCP_CANCEL_IGNORE

/* The non-terminal cells, written out from the design, one line each. */
static const cell cells[] = {
  /* queued: the same under every policy (checked for all three below) */
  {COOP, Q, MCP_EV_START,   R,  START,        "a queued request starts"},
  {COOP, Q, MCP_EV_RETURN,  Q,  IGN,          "no handler yet: return is impossible"},
  {COOP, Q, MCP_EV_RAISE,   Q,  IGN,          "no handler yet: raise is impossible"},
  {COOP, Q, MCP_EV_CANCEL,  CX, FIN,          "a cancel before start drops the request"},
  {COOP, Q, MCP_EV_TIMEOUT, TX, TOUT | FIN,   "a deadline before start answers timeout"},
  {COOP, Q, MCP_EV_GRACE,   Q,  IGN,          "no grace runs before start"},
  {COOP, Q, MCP_EV_CLOSE,   CX, FIN,          "shutdown drops a queued request"},
  {COOP, Q, MCP_EV_HOLD,    Q,  IGN,          "only a started call is held"},
  /* running, cooperative */
  {COOP, R, MCP_EV_START,   R,  IGN,          "started once"},
  {COOP, R, MCP_EV_RETURN,  DONE, RES | FIN,  "a result is sent"},
  {COOP, R, MCP_EV_RAISE,   FAIL, ERR | FIN,  "an error is sent"},
  {COOP, R, MCP_EV_CANCEL,  CG, SIG | GR,     "cancel: flag, wake, grace"},
  {COOP, R, MCP_EV_TIMEOUT, TG, SIG | GR,     "timeout: flag, wake, grace"},
  {COOP, R, MCP_EV_GRACE,   R,  IGN,          "no grace while running"},
  {COOP, R, MCP_EV_CLOSE,   CG, SIG | GR,     "shutdown: flag, wake, grace"},
  {COOP, R, MCP_EV_HOLD,    H,  0,            "the C path holds it: no handler"},
  /* cancelling: the same under every policy */
  {COOP, CG, MCP_EV_START,   CG, IGN,         "started once"},
  {COOP, CG, MCP_EV_RETURN,  CX, FIN,         "no response after a cancel"},
  {COOP, CG, MCP_EV_RAISE,   CX, FIN,         "no error after a cancel"},
  {COOP, CG, MCP_EV_CANCEL,  CG, IGN,         "a second cancel is harmless"},
  {COOP, CG, MCP_EV_TIMEOUT, CG, IGN,         "a deadline after a cancel changes nothing"},
  {COOP, CG, MCP_EV_GRACE,   CX, AB | FIN,    "grace over: aborted by force"},
  {COOP, CG, MCP_EV_CLOSE,   CG, IGN,         "shutdown during cleanup waits for the grace"},
  {COOP, CG, MCP_EV_HOLD,    CG, IGN,         "a handler cleans up: not held"},
  /* timing out: the same under every policy */
  {COOP, TG, MCP_EV_START,   TG, IGN,               "started once"},
  {COOP, TG, MCP_EV_RETURN,  TX, TOUT | FIN,        "the handler stopped: timeout result"},
  {COOP, TG, MCP_EV_RAISE,   TX, TOUT | FIN,        "the handler raised: timeout result"},
  {COOP, TG, MCP_EV_CANCEL,  CG, 0,                 "the client cancels: no response at all"},
  {COOP, TG, MCP_EV_TIMEOUT, TG, IGN,               "one timeout"},
  {COOP, TG, MCP_EV_GRACE,   TX, AB | TOUT | FIN,   "grace over: aborted, timeout result"},
  {COOP, TG, MCP_EV_CLOSE,   CG, 0,                 "shutdown: no response"},
  {COOP, TG, MCP_EV_HOLD,    TG, IGN,               "a handler cleans up: not held"},
  /* held, cooperative: no handler to wait for */
  {COOP, H, MCP_EV_START,   R,  START,            "the op's outcome needs Lua: the handler starts"},
  {COOP, H, MCP_EV_RETURN,  DONE, RES | FIN,      "the op's result is the response"},
  {COOP, H, MCP_EV_RAISE,   H,  IGN,              "no handler: nothing raises"},
  {COOP, H, MCP_EV_CANCEL,  CX, SIG | FIN,        "cancel: its op stopped, no response, gone"},
  {COOP, H, MCP_EV_TIMEOUT, TX, SIG | TOUT | FIN, "timeout: its op stopped, timeout result"},
  {COOP, H, MCP_EV_GRACE,   H,  IGN,              "no grace while held"},
  {COOP, H, MCP_EV_CLOSE,   CX, SIG | FIN,        "shutdown: its op stopped, gone"},
  {COOP, H, MCP_EV_HOLD,    H,  IGN,              "held once"},
  /* running, abort */
  {ABRT, R, MCP_EV_START,   R,  IGN,              "started once"},
  {ABRT, R, MCP_EV_RETURN,  DONE, RES | FIN,      "a result is sent"},
  {ABRT, R, MCP_EV_RAISE,   FAIL, ERR | FIN,      "an error is sent"},
  {ABRT, R, MCP_EV_CANCEL,  CX, AB | FIN,         "cancel stops at once, no response"},
  {ABRT, R, MCP_EV_TIMEOUT, TX, AB | TOUT | FIN,  "timeout stops at once, timeout result"},
  {ABRT, R, MCP_EV_GRACE,   R,  IGN,              "no grace"},
  {ABRT, R, MCP_EV_CLOSE,   CX, AB | FIN,         "shutdown stops at once"},
  {ABRT, R, MCP_EV_HOLD,    H,  0,                "the C path holds it: no handler"},
  /* held, abort: as cooperative (nothing to abort but the op) */
  {ABRT, H, MCP_EV_START,   R,  START,            "the op's outcome needs Lua: the handler starts"},
  {ABRT, H, MCP_EV_RETURN,  DONE, RES | FIN,      "the op's result is the response"},
  {ABRT, H, MCP_EV_RAISE,   H,  IGN,              "no handler: nothing raises"},
  {ABRT, H, MCP_EV_CANCEL,  CX, SIG | FIN,        "cancel: its op stopped, no response, gone"},
  {ABRT, H, MCP_EV_TIMEOUT, TX, SIG | TOUT | FIN, "timeout: its op stopped, timeout result"},
  {ABRT, H, MCP_EV_GRACE,   H,  IGN,              "no grace"},
  {ABRT, H, MCP_EV_CLOSE,   CX, SIG | FIN,        "shutdown: its op stopped, gone"},
  {ABRT, H, MCP_EV_HOLD,    H,  IGN,              "held once"},
  /* running, ignore */
  {IGNR, R, MCP_EV_START,   R,  IGN,              "started once"},
  {IGNR, R, MCP_EV_RETURN,  DONE, RES | FIN,      "a result is sent"},
  {IGNR, R, MCP_EV_RAISE,   FAIL, ERR | FIN,      "an error is sent"},
  {IGNR, R, MCP_EV_CANCEL,  R,  IGN,              "the cancel is ignored (the spec's MAY)"},
  {IGNR, R, MCP_EV_TIMEOUT, R,  IGN,              "the timeout is ignored"},
  {IGNR, R, MCP_EV_GRACE,   R,  IGN,              "no grace"},
  {IGNR, R, MCP_EV_CLOSE,   CG, SIG | GR,         "shutdown still stops it"},
  {IGNR, R, MCP_EV_HOLD,    H,  0,                "the C path holds it: no handler"},
  /* held, ignore: cancel and timeout pass, as while running */
  {IGNR, H, MCP_EV_START,   R,  START,            "the op's outcome needs Lua: the handler starts"},
  {IGNR, H, MCP_EV_RETURN,  DONE, RES | FIN,      "the op's result is the response"},
  {IGNR, H, MCP_EV_RAISE,   H,  IGN,              "no handler: nothing raises"},
  {IGNR, H, MCP_EV_CANCEL,  H,  IGN,              "the cancel is ignored (the spec's MAY)"},
  {IGNR, H, MCP_EV_TIMEOUT, H,  IGN,              "the timeout is ignored"},
  {IGNR, H, MCP_EV_GRACE,   H,  IGN,              "no grace"},
  {IGNR, H, MCP_EV_CLOSE,   CX, SIG | FIN,        "shutdown still stops it: its op stopped, gone"},
  {IGNR, H, MCP_EV_HOLD,    H,  IGN,              "held once"},
};

static void fire_from(int mode, int state, int ev, int *next, unsigned *acts) {
  mcp_req req;
  mcp_req_init(&req, "1", 1, (mcp_cancel_mode)mode);
  req.state = (uint8_t)state;
  *acts = mcp_req_fire(&req, (mcp_req_event)ev, "test");
  *next = req.state;
  mcp_req_close(&req);
}

static void test_cells(void) {
  int covered[MCP_CANCEL_NMODES][MCP_REQ_NSTATES][MCP_EV_NEVENTS] = {{{0}}};
  for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
    const cell *c = &cells[i];
    /* rows written once for cooperative hold for every policy */
    int shared = c->state != R && c->state != H;
    for (int mode = 0; mode < MCP_CANCEL_NMODES; mode++) {
      if (!shared && mode != c->mode) continue;
      int next;
      unsigned acts;
      fire_from(mode, c->state, c->ev, &next, &acts);
      CHECK(next == c->next && acts == c->acts, "%s/%s/%s: got %s 0x%x, want %s 0x%x (%s)",
            mcp_cancel_mode_name(mode), mcp_req_state_name(c->state), mcp_req_event_name(c->ev),
            mcp_req_state_name(next), acts, mcp_req_state_name(c->next), c->acts, c->why);
      covered[mode][c->state][c->ev] = 1;
    }
  }
  /* terminal states: every event is ignored and the state stays */
  for (int mode = 0; mode < MCP_CANCEL_NMODES; mode++)
    for (int s = MCP_REQ_COMPLETED; s < MCP_REQ_NSTATES; s++)
      for (int ev = 0; ev < MCP_EV_NEVENTS; ev++) {
        int next;
        unsigned acts;
        fire_from(mode, s, ev, &next, &acts);
        CHECK(next == s && acts == IGN, "terminal %s/%s/%s changed", mcp_cancel_mode_name(mode),
              mcp_req_state_name(s), mcp_req_event_name(ev));
        covered[mode][s][ev] = 1;
      }
  for (int mode = 0; mode < MCP_CANCEL_NMODES; mode++)
    for (int s = 0; s < MCP_REQ_NSTATES; s++)
      for (int ev = 0; ev < MCP_EV_NEVENTS; ev++)
        CHECK(covered[mode][s][ev], "cell %s/%s/%s has no test", mcp_cancel_mode_name(mode),
              mcp_req_state_name(s), mcp_req_event_name(ev));
}

/* Whatever the order of events: one terminal transition, at most one
 * response, never a response after a cancel the policy honours. */
static void test_random_orders(void) {
  srand(12345);
  for (int run = 0; run < 200000; run++) {
    int mode = run % MCP_CANCEL_NMODES, terminals = 0, responses = 0, cancelled = 0;
    int late_response = 0;
    mcp_req req;
    mcp_req_init(&req, "\"x\"", 3, (mcp_cancel_mode)mode);
    for (int step = 0; step < 12; step++) {
      int ev = rand() % MCP_EV_NEVENTS;
      int was_terminal = mcp_req_state_terminal(req.state);
      unsigned acts = mcp_req_fire(&req, (mcp_req_event)ev, "r");
      if (!was_terminal && mcp_req_state_terminal(req.state)) terminals++;
      if (acts & (RES | ERR | TOUT)) {
        responses++;
        if (cancelled) late_response = 1;
      }
      if (was_terminal) CHECK(acts == IGN, "event after terminal state acted");
      if ((ev == MCP_EV_CANCEL || ev == MCP_EV_CLOSE) && !(acts & IGN)) cancelled = 1;
    }
    CHECK(terminals <= 1, "run %d: %d terminal transitions", run, terminals);
    CHECK(responses <= 1, "run %d: %d responses", run, responses);
    CHECK(!late_response, "run %d: a response after an honoured cancel", run);
    mcp_req_close(&req);
    if (test_failures > 20) return;
  }
}

static void test_reason_first_wins(void) {
  mcp_req req;
  mcp_req_init(&req, "1", 1, MCP_CANCEL_COOPERATIVE);
  mcp_req_fire(&req, MCP_EV_START, NULL);
  mcp_req_fire(&req, MCP_EV_TIMEOUT, "timeout");
  mcp_req_fire(&req, MCP_EV_CANCEL, "user");
  CHECK(req.reason && strcmp(req.reason, "timeout") == 0, "reason %s", req.reason);
  CHECK(req.state == CG, "timeout then cancel: %s", mcp_req_state_name(req.state));
  mcp_req_close(&req);
}

/* Requests given the same reason in a row share one copy; each keeps its
 * own through the others' closes and a different reason after them (ASan:
 * no use after free, no double free). */
static void test_reason_shared(void) {
  mcp_req r[3];
  char why[16];
  for (int i = 0; i < 3; i++) {
    mcp_req_init(&r[i], "1", 1, MCP_CANCEL_COOPERATIVE);
    mcp_req_fire(&r[i], MCP_EV_START, NULL);
  }
  strcpy(why, "bench");
  mcp_req_fire(&r[0], MCP_EV_CANCEL, why);
  mcp_req_fire(&r[1], MCP_EV_CANCEL, why);
  strcpy(why, "other");                          /* the caller's text is not kept */
  CHECK(r[0].reason == r[1].reason && strcmp(r[1].reason, "bench") == 0, "shared: %s", r[1].reason);
  mcp_req_fire(&r[2], MCP_EV_CANCEL, why);
  CHECK(strcmp(r[2].reason, "other") == 0 && r[2].reason != r[0].reason, "another: %s", r[2].reason);
  mcp_req_close(&r[0]);
  CHECK(strcmp(r[1].reason, "bench") == 0, "kept after the first's close: %s", r[1].reason);
  mcp_req_close(&r[1]);
  mcp_req_close(&r[2]);
  mcp_req_init(&r[0], "1", 1, MCP_CANCEL_COOPERATIVE);
  mcp_req_fire(&r[0], MCP_EV_START, NULL);
  mcp_req_fire(&r[0], MCP_EV_CANCEL, "other");   /* the latest, now held by no request */
  CHECK(strcmp(r[0].reason, "other") == 0, "the latest again: %s", r[0].reason);
  mcp_req_close(&r[0]);
}

/* A key in its owner's memory is copied there and not freed by close (a
 * call keeps its id's text right after it). */
static void test_a_key_in_the_owners_memory(void) {
  mcp_req req;
  char store[8];
  mcp_req_init_in(&req, store, "\"ab\"x", 4, MCP_CANCEL_COOPERATIVE);
  CHECK(req.key == store && strcmp(store, "\"ab\"") == 0 && req.keylen == 4, "key %s", store);
  mcp_req_fire(&req, MCP_EV_START, NULL);
  mcp_req_fire(&req, MCP_EV_CANCEL, "user");
  mcp_req_close(&req);                           /* frees the reason only */
  CHECK(req.key == NULL && req.reason == NULL, "closed");
}

static void test_table(void) {
  mcp_reqtab t;
  mcp_req a, b, *many;
  mcp_reqtab_init(&t);
  mcp_req_init(&a, "7", 1, MCP_CANCEL_COOPERATIVE);
  mcp_req_init(&b, "\"7\"", 3, MCP_CANCEL_COOPERATIVE);
  CHECK(mcp_reqtab_insert(&t, &a) == 0, "insert 7");
  CHECK(mcp_reqtab_insert(&t, &b) == 0, "7 and \"7\" are different ids");
  CHECK(mcp_reqtab_find(&t, "7", 1) == &a, "find 7");
  CHECK(mcp_reqtab_find(&t, "\"7\"", 3) == &b, "find \"7\"");
  {
    mcp_req dup;
    mcp_req_init(&dup, "7", 1, MCP_CANCEL_COOPERATIVE);
    CHECK(mcp_reqtab_insert(&t, &dup) == -1, "a duplicate id is refused");
    CHECK(mcp_reqtab_find(&t, "7", 1) == &a, "the first is untouched");
    mcp_req_close(&dup);
  }
  a.state = DONE;
  mcp_reqtab_remove(&t, &a);
  CHECK(mcp_reqtab_find(&t, "7", 1) == NULL, "removed");
  CHECK(mcp_reqtab_recent(&t, "7", 1) == DONE, "remembered as completed");
  CHECK(mcp_reqtab_recent(&t, "\"7\"", 3) == -1, "\"7\" is not 7");
  CHECK(mcp_reqtab_insert(&t, &a) == 0, "an id can be used again once finished");
  mcp_reqtab_remove(&t, &a);
  mcp_reqtab_remove(&t, &b);
  CHECK(t.count == 0, "empty");
  /* growth keeps every entry findable */
  many = calloc(5000, sizeof *many);
  for (int i = 0; i < 5000; i++) {
    char k[16];
    int n = snprintf(k, sizeof k, "%d", i);
    mcp_req_init(&many[i], k, (size_t)n, MCP_CANCEL_COOPERATIVE);
    CHECK(mcp_reqtab_insert(&t, &many[i]) == 0, "insert %d", i);
  }
  int found = 0;
  for (int i = 0; i < 5000; i++) {
    char k[16];
    int n = snprintf(k, sizeof k, "%d", i);
    found += mcp_reqtab_find(&t, k, (size_t)n) == &many[i];
  }
  CHECK(found == 5000, "found %d of 5000", found);
  for (int i = 0; i < 5000; i++) {
    mcp_reqtab_remove(&t, &many[i]);
    mcp_req_close(&many[i]);
  }
  CHECK(t.count == 0, "empty after removing all");
  free(many);
  mcp_req_close(&a);
  mcp_req_close(&b);
  mcp_reqtab_close(&t);
  mcp_reqtab_init(&t);                 /* a table made again (its buckets kept) remembers nothing */
  CHECK(mcp_reqtab_find(&t, "7", 1) == NULL && mcp_reqtab_recent(&t, "7", 1) == -1,
        "a new table has no request and no recent one");
  mcp_req_init(&a, "7", 1, MCP_CANCEL_COOPERATIVE);
  CHECK(mcp_reqtab_insert(&t, &a) == 0 && mcp_reqtab_find(&t, "7", 1) == &a, "a new table takes 7");
  mcp_reqtab_remove(&t, &a);
  mcp_req_close(&a);
  mcp_reqtab_close(&t);
}

int main(void) {
  mcp_log_threshold = MCP_LOG_EMERGENCY;
  test_cells();
  test_random_orders();
  test_reason_first_wins();
  test_reason_shared();
  test_a_key_in_the_owners_memory();
  test_table();
  TEST_END("test_request");
}
