/* deadline.c: the heap fires entries earliest first, moving and clearing
 * them, a callback that sets entries again, and its one uv_timer on a real
 * loop. Most tests drive a clock of their own and mcp_deadlines_run. */
#include <stdlib.h>

#include <uv.h>

#include "deadline.h"
#include "test.h"

static uint64_t now_ns;
static uint64_t fake_clock(void) { return now_ns; }

static mcp_deadline *fired[2048];
static int nfired;

static void record(mcp_deadline *d) {
  if (nfired < (int)(sizeof fired / sizeof fired[0])) fired[nfired] = d;
  nfired++;
}

static void begin(uv_loop_t *loop, uint64_t (*clock)(void)) {
  uv_loop_init(loop);
  now_ns = 1000;
  nfired = 0;
  mcp_deadlines_init(loop, clock, record);
}

static void end(uv_loop_t *loop) {
  mcp_deadlines_close();
  CHECK_LOOP_EMPTY(loop);
}

static void test_entries_fire_earliest_first(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT, b = MCP_DEADLINE_INIT, c = MCP_DEADLINE_INIT;
  begin(&loop, fake_clock);
  mcp_deadline_set(&b, 2000);
  mcp_deadline_set(&c, 3000);
  mcp_deadline_set(&a, 1500);
  now_ns = 5000;
  mcp_deadlines_run();
  CHECK(nfired == 3, "%d fired", nfired);
  CHECK(fired[0] == &a && fired[1] == &b && fired[2] == &c, "out of order");
  CHECK(a.index == -1 && b.index == -1 && c.index == -1, "fired entries left the heap");
  end(&loop);
}

static void test_an_entry_not_due_waits(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT, b = MCP_DEADLINE_INIT;
  begin(&loop, fake_clock);
  mcp_deadline_set(&a, 2000);
  mcp_deadline_set(&b, 9000);
  now_ns = 2000;
  mcp_deadlines_run();
  CHECK(nfired == 1 && fired[0] == &a, "only the due one fires (%d)", nfired);
  CHECK(b.index == 0, "the other stays armed");
  mcp_deadline_set(&b, 0);
  end(&loop);
}

static void test_moving_an_entry_reorders_it(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT, b = MCP_DEADLINE_INIT;
  begin(&loop, fake_clock);
  mcp_deadline_set(&a, 2000);
  mcp_deadline_set(&b, 3000);
  mcp_deadline_set(&a, 4000);
  now_ns = 5000;
  mcp_deadlines_run();
  CHECK(nfired == 2 && fired[0] == &b && fired[1] == &a, "a moved after b");
  end(&loop);
}

static void test_a_cleared_entry_never_fires(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT, b = MCP_DEADLINE_INIT;
  begin(&loop, fake_clock);
  mcp_deadline_set(&a, 2000);
  mcp_deadline_set(&b, 3000);
  mcp_deadline_set(&a, 0);
  CHECK(a.index == -1, "cleared entry out of the heap");
  now_ns = 5000;
  mcp_deadlines_run();
  CHECK(nfired == 1 && fired[0] == &b, "only b fired (%d)", nfired);
  end(&loop);
}

static void own_fire(mcp_deadline *d) { d->due = 42; }

static void test_an_entry_with_its_own_fire_skips_the_common_callback(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT;
  begin(&loop, fake_clock);
  mcp_deadline_init(&a, own_fire);
  mcp_deadline_set(&a, 2000);
  now_ns = 2000;
  mcp_deadlines_run();
  CHECK(nfired == 0, "the common callback ran");
  CHECK(a.due == 42, "its own fire did not run");
  end(&loop);
}

/* A callback that sets its entry again, for a time already past, fires
 * again in the same run; one set for later does not. */
static int refires;
static void again(mcp_deadline *d) {
  refires++;
  mcp_deadline_set(d, refires < 3 ? now_ns : now_ns + 1000);
}

static void test_a_callback_may_set_its_entry_again(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT;
  begin(&loop, fake_clock);
  refires = 0;
  mcp_deadline_init(&a, again);
  mcp_deadline_set(&a, 2000);
  now_ns = 2000;
  mcp_deadlines_run();
  CHECK(refires == 3, "fired %d times, want 3", refires);
  CHECK(a.index == 0 && a.due == 3000, "armed for later (index %d, due %llu)", a.index,
        (unsigned long long)a.due);
  mcp_deadline_set(&a, 0);
  end(&loop);
}

/* Random sets, moves and clears: what is armed fires once, in due order. */
static void test_many_entries_keep_the_heap_order(void) {
  enum { N = 1000 };
  uv_loop_t loop;
  static mcp_deadline d[N];
  int armed = 0, order_ok = 1, once_ok = 1;
  begin(&loop, fake_clock);
  srand(7);
  for (int i = 0; i < N; i++) d[i] = (mcp_deadline)MCP_DEADLINE_INIT;
  for (int step = 0; step < 5 * N; step++) {
    int i = rand() % N;
    mcp_deadline_set(&d[i], rand() % 4 == 0 ? 0 : 2000 + (uint64_t)(rand() % 100000));
  }
  for (int i = 0; i < N; i++) armed += d[i].index >= 0;
  now_ns = 1000000;
  mcp_deadlines_run();
  CHECK(nfired == armed, "%d fired, %d armed", nfired, armed);
  for (int i = 1; i < nfired && i < N; i++)
    if (fired[i - 1]->due > fired[i]->due) order_ok = 0;
  for (int i = 0; i < nfired && i < N; i++)
    for (int j = i + 1; j < nfired && j < N; j++)
      if (fired[i] == fired[j]) once_ok = 0;
  CHECK(order_ok, "fired out of due order");
  CHECK(once_ok, "an entry fired twice");
  end(&loop);
}

/* A cancel storm's sleeps: entries cleared in due order leave empty slots,
 * compacted as they pile up; the entries left keep their places (moved
 * after a compaction, then fired in order), and clearing the rest stops the
 * timer. */
static void test_clearing_many_in_order_keeps_the_rest(void) {
  enum { N = 2000 };
  uv_loop_t loop;
  static mcp_deadline d[N];
  int order_ok = 1;
  begin(&loop, fake_clock);
  for (int i = 0; i < N; i++) {
    d[i] = (mcp_deadline)MCP_DEADLINE_INIT;
    mcp_deadline_set(&d[i], 2000 + (uint64_t)i);
  }
  for (int i = 0; i < N; i++)
    if (i % 3 != 0) mcp_deadline_set(&d[i], 0);
  for (int i = 0; i < N; i += 6) mcp_deadline_set(&d[i], 500000 + (uint64_t)(N - i));  /* moved later */
  now_ns = 400000;
  mcp_deadlines_run();
  CHECK(nfired == (N + 2) / 6, "%d fired, want %d", nfired, (N + 2) / 6);   /* i = 3 (mod 6) */
  for (int i = 0; i < nfired; i++)
    if (fired[i] != &d[6 * i + 3]) order_ok = 0;
  CHECK(order_ok, "fired out of order, or an entry cleared fired");
  for (int i = 0; i < N; i += 6) CHECK(d[i].index >= 0, "d[%d] lost its place", i);
  for (int i = 0; i < N; i += 6) mcp_deadline_set(&d[i], 0);
  CHECK(!uv_loop_alive(&loop), "the timer is still armed with every entry cleared");
  end(&loop);
}

/* The clock moved past the last entry (--test-clock): the timer stops, so
 * the loop does not wait for the real time it was armed for. */
static void test_running_the_last_entry_stops_the_timer(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT;
  begin(&loop, fake_clock);
  mcp_deadline_set(&a, now_ns + 60000000000ull);   /* a minute of real time */
  CHECK(uv_loop_alive(&loop), "the timer is not armed");
  now_ns += 60000000000ull;
  mcp_deadlines_run();
  CHECK(nfired == 1, "%d fired", nfired);
  CHECK(!uv_loop_alive(&loop), "the timer is still armed for the real minute");
  end(&loop);
}

/* On the loop's own clock: the timer wakes the loop when the earliest is due. */
static uint64_t real_clock(void) { return uv_hrtime(); }

static void test_the_timer_fires_on_the_loop(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT, b = MCP_DEADLINE_INIT;
  uint64_t t0;
  begin(&loop, real_clock);
  t0 = uv_hrtime();
  mcp_deadline_set(&b, t0 + 30000000);     /* 30 ms */
  mcp_deadline_set(&a, t0 + 10000000);     /* 10 ms */
  uv_run(&loop, UV_RUN_DEFAULT);           /* returns once no timer is active */
  CHECK(nfired == 2 && fired[0] == &a && fired[1] == &b, "%d fired", nfired);
  CHECK(uv_hrtime() >= t0 + 30000000, "fired early");
  end(&loop);
}

/* The earliest entry cleared: the timer, armed for it, wakes once for
 * nothing and is armed again for the next, which fires on time. */
static void test_clearing_the_earliest_still_fires_the_next(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT, b = MCP_DEADLINE_INIT;
  uint64_t t0;
  begin(&loop, real_clock);
  t0 = uv_hrtime();
  mcp_deadline_set(&a, t0 + 10000000);     /* 10 ms */
  mcp_deadline_set(&b, t0 + 30000000);     /* 30 ms */
  mcp_deadline_set(&a, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(nfired == 1 && fired[0] == &b, "%d fired", nfired);
  CHECK(uv_hrtime() >= t0 + 30000000, "fired early");
  end(&loop);
}

/* An entry moved earlier than the timer is armed for re-arms it. */
static void test_an_earlier_entry_rearms_the_timer(void) {
  uv_loop_t loop;
  mcp_deadline a = MCP_DEADLINE_INIT;
  uint64_t t0;
  begin(&loop, real_clock);
  t0 = uv_hrtime();
  mcp_deadline_set(&a, t0 + 60000000000ull);   /* a minute */
  mcp_deadline_set(&a, t0 + 10000000);         /* 10 ms */
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(nfired == 1 && uv_hrtime() < t0 + 30000000000ull, "waited for the minute");
  end(&loop);
}

int main(void) {
  test_entries_fire_earliest_first();
  test_an_entry_not_due_waits();
  test_moving_an_entry_reorders_it();
  test_a_cleared_entry_never_fires();
  test_an_entry_with_its_own_fire_skips_the_common_callback();
  test_a_callback_may_set_its_entry_again();
  test_many_entries_keep_the_heap_order();
  test_clearing_many_in_order_keeps_the_rest();
  test_running_the_last_entry_stops_the_timer();
  test_the_timer_fires_on_the_loop();
  test_clearing_the_earliest_still_fires_the_next();
  test_an_earlier_entry_rearms_the_timer();
  TEST_END("test_deadline");
}
