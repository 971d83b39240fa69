/* limit.c: slots, the queue of calls waiting for one (first come first),
 * refusals, the rate's token bucket, and what /metrics shows. limit.c asks
 * the scheduler for the time and to start a call that got its slot; this
 * file plays the scheduler (mcp_clock_ns, mcp_call_wake). */
#include <string.h>

#include "limit.h"
#include "metrics.h"
#include "sched.h"
#include "test.h"

/* The scheduler's side, as limit.c sees it. */
static uint64_t now_ns = 1;
static mcp_call *woken[16];
static int nwoken;

uint64_t mcp_clock_ns(void) { return now_ns; }

void mcp_call_wake(mcp_call *c) {
  if (nwoken < 16) woken[nwoken] = c;
  nwoken++;
}

static void calls_init(mcp_call *v, int n, const char *tool) {
  memset(v, 0, (size_t)n * sizeof *v);
  for (int i = 0; i < n; i++) v[i].limit = mcp_limit_of(tool);
  nwoken = 0;
}

static int admit(mcp_call *c, char *msg) { return mcp_limit_admit(c, msg, 128); }

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
  for (int i = 0; i < 5; i++) CHECK(admit(&c[i], msg) == MCP_LIMIT_RUN, "call %d", i);
  for (int i = 0; i < 5; i++) mcp_limit_leave(&c[i]);
  CHECK(nwoken == 0, "nobody waited");
  check_idle("free");
}

static void test_a_call_past_max_concurrent_waits_for_a_slot(void) {
  mcp_call c[3];
  char msg[128];
  mcp_limit_set("two", 2, 5, NULL, 0);
  calls_init(c, 3, "two");
  CHECK(admit(&c[0], msg) == MCP_LIMIT_RUN && c[0].lstate == MCP_LSTATE_SLOT, "first runs");
  CHECK(admit(&c[1], msg) == MCP_LIMIT_RUN, "second runs");
  CHECK(admit(&c[2], msg) == MCP_LIMIT_WAIT && c[2].lstate == MCP_LSTATE_WAITING, "third waits");
  CHECK(nwoken == 0, "nobody woken yet");
  for (int i = 0; i < 3; i++) mcp_limit_leave(&c[i]);
  check_idle("two");
}

static void test_a_full_queue_refuses_as_busy(void) {
  mcp_call c[3];
  char msg[128] = "";
  mcp_limit_set("busy", 1, 1, NULL, 0);
  calls_init(c, 3, "busy");
  admit(&c[0], msg);
  admit(&c[1], msg);
  CHECK(admit(&c[2], msg) == MCP_LIMIT_REFUSE, "refused");
  CHECK(strcmp(msg, "busy: 1 running, 1 queued") == 0, "message: %s", msg);
  CHECK(c[2].lstate == MCP_LSTATE_NONE, "a refused call holds nothing");
  mcp_limit_leave(&c[2]);          /* sched.c leaves every call it finishes: harmless */
  mcp_limit_leave(&c[0]);
  mcp_limit_leave(&c[1]);
  check_idle("busy");
}

static void test_an_ending_call_hands_its_slot_to_the_first_waiting(void) {
  mcp_call c[4];
  char msg[128];
  mcp_limit_set("fifo", 1, 3, NULL, 0);
  calls_init(c, 4, "fifo");
  for (int i = 0; i < 4; i++) admit(&c[i], msg);
  mcp_limit_leave(&c[0]);
  CHECK(nwoken == 1 && woken[0] == &c[1], "the first waiting is woken (%d)", nwoken);
  CHECK(c[1].lstate == MCP_LSTATE_SLOT, "and holds the slot");
  mcp_limit_leave(&c[1]);
  CHECK(nwoken == 2 && woken[1] == &c[2], "then the second");
  mcp_limit_leave(&c[2]);
  mcp_limit_leave(&c[3]);
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
  mcp_limit_leave(&c[0]);
  CHECK(admit(&c[2], msg) == MCP_LIMIT_WAIT, "the newcomer waits");
  mcp_limit_leave(&c[1]);
  CHECK(nwoken == 2 && woken[1] == &c[2], "and gets the slot next");
  mcp_limit_leave(&c[2]);
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
  mcp_limit_leave(&c[2]);          /* the middle one */
  CHECK(nwoken == 0, "no slot was freed");
  mcp_limit_leave(&c[3]);          /* the tail */
  mcp_limit_leave(&c[0]);
  CHECK(nwoken == 1 && woken[0] == &c[1], "the one left waiting gets the slot");
  mcp_limit_leave(&c[1]);
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
  for (int i = 0; i < 3; i++) mcp_limit_leave(&c[i]);
  check_idle("grow");
}

static void test_the_rate_refuses_past_the_burst_and_refills(void) {
  mcp_call c[4];
  char msg[128] = "";
  mcp_limit_set("rate", 0, 0, "2/s", 0);
  calls_init(c, 4, "rate");
  CHECK(admit(&c[0], msg) == MCP_LIMIT_RUN, "first token");
  CHECK(admit(&c[1], msg) == MCP_LIMIT_RUN, "second token");
  CHECK(admit(&c[2], msg) == MCP_LIMIT_REFUSE, "bucket empty");
  CHECK(strcmp(msg, "rate limit: 2/s") == 0, "message: %s", msg);
  now_ns += 500000000;             /* half a second: one token */
  CHECK(admit(&c[3], msg) == MCP_LIMIT_RUN, "refilled");
  for (int i = 0; i < 4; i++) mcp_limit_leave(&c[i]);
  check_idle("rate");
}

static void test_a_malformed_rate_is_refused(void) {
  CHECK(mcp_limit_set("bad", 0, 0, "2/h", 0) == -1, "unit h");
  CHECK(mcp_limit_set("bad", 0, 0, "0/s", 0) == -1, "zero");
  CHECK(mcp_limit_set("bad", 0, 0, "2/sx", 0) == -1, "trailing text");
  CHECK(mcp_limit_set("bad", 0, 0, "10/m", 0) == 0, "10/m is fine");
}

static void test_the_heartbeat_is_the_tools(void) {
  mcp_limit_set("beat", 0, 0, NULL, 2.5);
  CHECK(mcp_limit_heartbeat(mcp_limit_of("beat")) == 2.5, "its period");
  CHECK(mcp_limit_heartbeat(NULL) == 0, "a call without limits has none");
}

static void test_metrics_count_refusals_by_reason(void) {
  mcp_call c[3];
  char msg[128];
  mcp_buf b = MCP_BUF_INIT;
  mcp_limit_set("counted", 1, 0, "2/s", 0);
  calls_init(c, 3, "counted");
  admit(&c[0], msg);
  admit(&c[1], msg);               /* busy */
  mcp_limit_leave(&c[0]);
  admit(&c[2], msg);               /* second token */
  mcp_limit_leave(&c[2]);
  admit(&c[0], msg);               /* no token left */
  mcp_limit_collect(&b);
  mcp_buf_addc(&b, '\0');
  CHECK(strstr(b.data, "luamcp_tool_refused_total{tool=\"counted\",reason=\"busy\"} 1\n"), "%s", b.data);
  CHECK(strstr(b.data, "luamcp_tool_refused_total{tool=\"counted\",reason=\"rate\"} 1\n"), "%s", b.data);
  mcp_buf_free(&b);
  check_idle("counted");
}

int main(void) {
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
