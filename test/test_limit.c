/* limit.c: slots, the queue of calls waiting for one (first come first),
 * refusals, the rate's token bucket, and what /metrics shows. limit.c asks
 * the scheduler for the time and to start a call that got its slot, and the
 * scheduler reaches it through the row mcp_limit_init registers; this file
 * plays the scheduler (mcp_clock_ns, mcp_call_wake, mcp__sched_register)
 * and calls the row as sched.c does. */
#include <string.h>

#include "limit.h"
#include "metrics.h"
#include "sched_int.h"
#include "test.h"

/* The scheduler's side, as limit.c sees it. */
static uint64_t now_ns = 1;
static mcp_call *woken[16];
static int nwoken;
static const mcp_call_type *row;    /* limit.c's */

uint64_t mcp_clock_ns(void) { return now_ns; }

void mcp_call_wake(mcp_call *c) {
  if (nwoken < 16) woken[nwoken] = c;
  nwoken++;
}

void mcp__sched_register(const mcp_call_type *t) {
  CHECK(row == NULL || row == t, "limit.c registers one row");
  row = t;
}

/* n tools/calls of tool arrive (sched.c's mcp_call_start: the row's arrive). */
static void calls_init(mcp_call *v, int n, const char *tool) {
  memset(v, 0, (size_t)n * sizeof *v);
  for (int i = 0; i < n; i++) {
    v[i].tool = (char *)mcp_name_intern(tool);   /* as sched.c names it */
    row->arrive(&v[i]);
  }
  nwoken = 0;
}

static int admit(mcp_call *c, char *msg) { return row->admit(c, msg, 128); }
static void leave(mcp_call *c) { row->leave(c); }

/* The tool's calls holding a slot and waiting for one, as /metrics shows. */
static int count(const char *tool, const char *metric) {
  mcp_buf b = MCP_BUF_INIT;
  char want[128];
  const char *at;
  int n = -1;
  mcp_limit_collect(&b);
  mcp_buf_addc(&b, '\0');
  snprintf(want, sizeof want, "luamcp_tool_%s{tool=\"%s\"} ", metric, tool);
  if ((at = strstr(b.data, want)) != NULL) n = atoi(at + strlen(want));
  mcp_buf_free(&b);
  return n;
}
#define RUNNING(tool) count(tool, "in_flight")
#define QUEUED(tool) count(tool, "queued")

/* Every call of the tool left: no slot held, nobody queued. */
static void check_idle(const char *tool) {
  mcp_buf b = MCP_BUF_INIT;
  char want[2][128];
  mcp_limit_collect(&b);
  mcp_buf_addc(&b, '\0');
  snprintf(want[0], sizeof want[0], "luamcp_tool_in_flight{tool=\"%s\"} 0\n", tool);
  snprintf(want[1], sizeof want[1], "luamcp_tool_queued{tool=\"%s\"} 0\n", tool);
  CHECK(strstr(b.data, want[0]) && strstr(b.data, want[1]), "%s not idle:\n%s", tool, b.data);
  mcp_buf_free(&b);
}

static void test_a_tool_without_limits_runs_every_call(void) {
  mcp_call c[5];
  char msg[128];
  calls_init(c, 5, "free");
  for (int i = 0; i < 5; i++) CHECK(admit(&c[i], msg) == MCP_ADMIT_RUN, "call %d", i);
  for (int i = 0; i < 5; i++) leave(&c[i]);
  CHECK(nwoken == 0, "nobody waited");
  check_idle("free");
}

static void test_a_call_past_max_concurrent_waits_for_a_slot(void) {
  mcp_call c[3];
  char msg[128];
  mcp_limit_set("two", 2, 5, NULL, 0);
  calls_init(c, 3, "two");
  CHECK(admit(&c[0], msg) == MCP_ADMIT_RUN && RUNNING("two") == 1, "first runs, holding a slot");
  CHECK(admit(&c[1], msg) == MCP_ADMIT_RUN, "second runs");
  CHECK(admit(&c[2], msg) == MCP_ADMIT_WAIT && QUEUED("two") == 1, "third waits in the queue");
  CHECK(RUNNING("two") == 2, "two slots held: %d", RUNNING("two"));
  CHECK(admit(&c[2], msg) == MCP_ADMIT_WAIT && QUEUED("two") == 1, "asked again, it still waits, once");
  CHECK(nwoken == 0, "nobody woken yet");
  for (int i = 0; i < 3; i++) leave(&c[i]);
  check_idle("two");
}

static void test_a_full_queue_refuses_as_busy(void) {
  mcp_call c[3];
  char msg[128] = "";
  mcp_limit_set("busy", 1, 1, NULL, 0);
  calls_init(c, 3, "busy");
  admit(&c[0], msg);
  admit(&c[1], msg);
  CHECK(admit(&c[2], msg) == MCP_ADMIT_REFUSE, "refused");
  CHECK(strcmp(msg, "busy: 1 running, 1 queued") == 0, "message: %s", msg);
  CHECK(RUNNING("busy") == 1 && QUEUED("busy") == 1, "a refused call holds nothing");
  CHECK(admit(&c[2], msg) == MCP_ADMIT_REFUSE, "nor waits: asked again, it is refused again");
  leave(&c[2]);          /* sched.c leaves every call it finishes: harmless */
  leave(&c[0]);
  leave(&c[1]);
  check_idle("busy");
}

static void test_an_ending_call_hands_its_slot_to_the_first_waiting(void) {
  mcp_call c[4];
  char msg[128];
  mcp_limit_set("fifo", 1, 3, NULL, 0);
  calls_init(c, 4, "fifo");
  for (int i = 0; i < 4; i++) admit(&c[i], msg);
  leave(&c[0]);
  CHECK(nwoken == 1 && woken[0] == &c[1], "the first waiting is woken (%d)", nwoken);
  CHECK(RUNNING("fifo") == 1 && QUEUED("fifo") == 2, "and holds the slot");
  CHECK(admit(&c[1], msg) == MCP_ADMIT_RUN && RUNNING("fifo") == 1, "started, it runs on that slot");
  leave(&c[1]);
  CHECK(nwoken == 2 && woken[1] == &c[2], "then the second");
  leave(&c[2]);
  leave(&c[3]);
  CHECK(nwoken == 3 && woken[2] == &c[3], "then the third");
  check_idle("fifo");
}

/* The slot passes straight to the waiting call: an arrival meanwhile waits
 * behind it, even though a slot was free for an instant. */
static void test_a_new_call_cannot_take_a_slot_out_of_turn(void) {
  mcp_call c[3];
  char msg[128];
  mcp_limit_set("turn", 1, 5, NULL, 0);
  calls_init(c, 3, "turn");
  admit(&c[0], msg);
  admit(&c[1], msg);
  leave(&c[0]);
  CHECK(admit(&c[2], msg) == MCP_ADMIT_WAIT, "the newcomer waits");
  leave(&c[1]);
  CHECK(nwoken == 2 && woken[1] == &c[2], "and gets the slot next");
  leave(&c[2]);
  check_idle("turn");
}

/* A waiting call that ends (cancelled, timed out) leaves the queue and
 * frees no slot. */
static void test_a_waiting_call_that_ends_leaves_the_queue(void) {
  mcp_call c[4];
  char msg[128];
  mcp_limit_set("leave", 1, 3, NULL, 0);
  calls_init(c, 4, "leave");
  for (int i = 0; i < 4; i++) admit(&c[i], msg);
  leave(&c[2]);          /* the middle one */
  CHECK(nwoken == 0, "no slot was freed");
  leave(&c[3]);          /* the tail */
  leave(&c[0]);
  CHECK(nwoken == 1 && woken[0] == &c[1], "the one left waiting gets the slot");
  leave(&c[1]);
  CHECK(nwoken == 1, "nobody else was waiting");
  check_idle("leave");
}

static void test_raising_max_concurrent_starts_waiting_calls(void) {
  mcp_call c[3];
  char msg[128];
  mcp_limit_set("grow", 1, 5, NULL, 0);
  calls_init(c, 3, "grow");
  for (int i = 0; i < 3; i++) admit(&c[i], msg);
  mcp_limit_set("grow", 3, 5, NULL, 0);   /* a reload */
  CHECK(nwoken == 2 && woken[0] == &c[1] && woken[1] == &c[2], "both start (%d)", nwoken);
  for (int i = 0; i < 3; i++) leave(&c[i]);
  check_idle("grow");
}

static void test_the_rate_refuses_past_the_burst_and_refills(void) {
  mcp_call c[4];
  char msg[128] = "";
  mcp_limit_set("rate", 0, 0, "2/s", 0);
  calls_init(c, 4, "rate");
  CHECK(admit(&c[0], msg) == MCP_ADMIT_RUN, "first token");
  CHECK(admit(&c[1], msg) == MCP_ADMIT_RUN, "second token");
  CHECK(admit(&c[2], msg) == MCP_ADMIT_REFUSE, "bucket empty");
  CHECK(strcmp(msg, "rate limit: 2/s") == 0, "message: %s", msg);
  now_ns += 500000000;             /* half a second: one token */
  CHECK(admit(&c[3], msg) == MCP_ADMIT_RUN, "refilled");
  for (int i = 0; i < 4; i++) leave(&c[i]);
  check_idle("rate");
}

static void test_a_malformed_rate_is_refused(void) {
  CHECK(mcp_limit_set("bad", 0, 0, "2/h", 0) == -1, "unit h");
  CHECK(mcp_limit_set("bad", 0, 0, "0/s", 0) == -1, "zero");
  CHECK(mcp_limit_set("bad", 0, 0, "2/sx", 0) == -1, "trailing text");
  CHECK(mcp_limit_set("bad", 0, 0, "10/m", 0) == 0, "10/m is fine");
}

static void test_the_heartbeat_is_the_tools(void) {
  mcp_call c[2];
  mcp_limit_set("beat", 0, 0, NULL, 2.5);
  calls_init(c, 1, "beat");
  CHECK(row->heartbeat(&c[0]) == 2.5, "its period");
  memset(&c[1], 0, sizeof c[1]);
  c[1].tool = (char *)"beat";
  c[1].tool_owned = 1;              /* no such tool was declared */
  row->arrive(&c[1]);
  CHECK(c[1].limit == NULL && row->heartbeat(&c[1]) == 0, "a call without limits has none");
  memset(&c[1], 0, sizeof c[1]);    /* not a tools/call */
  row->arrive(&c[1]);
  CHECK(c[1].limit == NULL && row->heartbeat(&c[1]) == 0, "nor a call of no tool");
}

static void test_metrics_count_refusals_by_reason(void) {
  mcp_call c[3];
  char msg[128];
  mcp_buf b = MCP_BUF_INIT;
  mcp_limit_set("counted", 1, 0, "2/s", 0);
  calls_init(c, 3, "counted");
  admit(&c[0], msg);
  admit(&c[1], msg);               /* busy */
  leave(&c[0]);
  admit(&c[2], msg);               /* second token */
  leave(&c[2]);
  admit(&c[0], msg);               /* no token left */
  mcp_limit_collect(&b);
  mcp_buf_addc(&b, '\0');
  CHECK(strstr(b.data, "luamcp_tool_refused_total{tool=\"counted\",reason=\"busy\"} 1\n"), "%s", b.data);
  CHECK(strstr(b.data, "luamcp_tool_refused_total{tool=\"counted\",reason=\"rate\"} 1\n"), "%s", b.data);
  mcp_buf_free(&b);
  check_idle("counted");
}

int main(void) {
  mcp_limit_init();
  CHECK(row != NULL && row->arrive && row->admit && row->leave && row->heartbeat, "limit.c's row");
  test_a_tool_without_limits_runs_every_call();
  test_a_call_past_max_concurrent_waits_for_a_slot();
  test_a_full_queue_refuses_as_busy();
  test_an_ending_call_hands_its_slot_to_the_first_waiting();
  test_a_new_call_cannot_take_a_slot_out_of_turn();
  test_a_waiting_call_that_ends_leaves_the_queue();
  test_raising_max_concurrent_starts_waiting_calls();
  test_the_rate_refuses_past_the_burst_and_refills();
  test_a_malformed_rate_is_refused();
  test_the_heartbeat_is_the_tools();
  test_metrics_count_refusals_by_reason();
  mcp_limit_close();
  mcp_metrics_close();
  mcp_name_close();
  mcp_policy_clear();
  TEST_END("test_limit");
}
