/* op.c: operations a handler starts and waits on (futures, timers,
 * sleeps), their handles, await over several, cancels by the handler, by
 * the call's stop, by the collector and at shutdown, and where a wait is
 * refused. Real coroutines on the real scheduler (sched_fixture.h). */
#include "sched_fixture.h"

/* Run code on the main state under pcall; its error message, or "ok". */
static const char *try_lua(const char *code) {
  static char msg[512];
  if (luaL_dostring(F.L, code) == LUA_OK) return "ok";
  snprintf(msg, sizeof msg, "%s", lua_tostring(F.L, -1));
  lua_pop(F.L, 1);
  return msg;
}

static void test_a_result_before_done_raises(void) {
  fixture_open();
  lua("handlers['t/r'] = function()\n"
      "  local f = core.future()\n"
      "  ok, err = pcall(f.result, f)\n"
      "  return {}\n"
      "end");
  start("1", "t/r", NULL);
  run();
  CHECK(strcmp(global("ok"), "false") == 0, "result of a pending op succeeded");
  CHECK(strstr(global("err"), "future: not done yet") != NULL, "error: %s", global("err"));
  fixture_close();
}

static void test_await_returns_the_first_op_done(void) {
  fixture_open();
  lua("handlers['t/await'] = function()\n"
      "  local slow, fast = core.timer(5), core.timer(0.01)\n"
      "  return {first = core.await(slow, fast), slow_done = slow:done()}\n"
      "end");
  start("1", "t/await", NULL);
  run();                                         /* the slow timer is cancelled at the end */
  CHECK(strcmp(field(0, "result", "first"), "2") == 0, "first: %s", F.nresp ? F.resp[0] : "(none)");
  CHECK(strcmp(field(0, "result", "slow_done"), "false") == 0, "slow done");
  fixture_close();
}

static void test_await_on_a_done_op_does_not_yield(void) {
  fixture_open();
  lua("handlers['t/done'] = function()\n"
      "  local f = core.future()\n"
      "  f:complete(1)\n"
      "  local t0 = loop_turns()\n"
      "  local i = core.await(core.future(), f)\n"
      "  return {i = i, same_turn = loop_turns() == t0}\n"
      "end");
  start("1", "t/done", NULL);
  run();
  CHECK(strcmp(field(0, "result", "i"), "2") == 0, "index: %s", F.nresp ? F.resp[0] : "(none)");
  CHECK(strcmp(field(0, "result", "same_turn"), "true") == 0, "it yielded");
  fixture_close();
}

/* One call completes the future another waits on: the waiter wakes with
 * the values. */
static void test_a_completed_future_wakes_its_waiter_with_the_values(void) {
  fixture_open();
  lua("handlers['t/wait'] = function() shared = core.future() return {core.wait(shared)} end\n"
      "handlers['t/complete'] = function() return {first = shared:complete('a', 2)} end");
  start("1", "t/wait", NULL);
  run();
  CHECK(F.nresp == 0, "answered before the future was complete");
  start("2", "t/complete", NULL);
  run();
  CHECK(F.nresp == 2, "%d responses", F.nresp);
  CHECK(strcmp(field(0, "result", "first"), "true") == 0, "complete: %s", F.resp[0]);
  CHECK(strstr(F.nresp > 1 ? F.resp[1] : "", "\"result\":[\"a\",2]") != NULL, "the waiter got %s",
        F.nresp > 1 ? F.resp[1] : "(none)");
  fixture_close();
}

static void test_a_future_completes_once(void) {
  const char *r;
  fixture_open();
  r = try_lua("local f = core.future()\n"
                       "assert(f:complete(1) == true)\n"
                       "assert(f:complete(2) == false)\n"
                       "local g = core.future()\n"
                       "g:cancel('no')\n"
                       "assert(g:complete(3) == false)\n"
                       "assert(core.wait(f) == 1)");
  CHECK(strcmp(r, "ok") == 0, "%s", r);
  fixture_close();
}

/* A future completed with no values (a wake) keeps none: its waiter gets
 * nothing, and one completed with values still gets them after it. */
static void test_a_future_completed_with_nothing_gives_nothing(void) {
  const char *r;
  fixture_open();
  r = try_lua("local f = core.future()\n"
              "assert(f:complete() == true)\n"
              "assert(select('#', core.wait(f)) == 0)\n"
              "assert(select('#', f:result()) == 0)\n"
              "local g = core.future()\n"
              "g:complete('x', 2)\n"
              "local a, b = core.wait(g)\n"
              "assert(a == 'x' and b == 2)");
  CHECK(strcmp(r, "ok") == 0, "%s", r);
  fixture_close();
}

/* op:cancel(why) by the handler: its wait ends with the cancel's triple,
 * a future's on_cancel hears why. */
static void test_the_handler_may_cancel_its_own_op(void) {
  fixture_open();
  lua("handlers['t/c'] = function()\n"
      "  local f = core.future(function(why) heard = why end)\n"
      "  f:cancel('changed my mind')\n"
      "  local v, msg, code = core.wait(f)\n"
      "  return {v = v == nil, msg = msg, code = code}\n"
      "end");
  start("1", "t/c", NULL);
  run();
  CHECK(strcmp(field(0, "result", "msg"), "cancelled: changed my mind") == 0, "msg: %s",
        F.nresp ? F.resp[0] : "(none)");
  CHECK(strcmp(field(0, "result", "code"), "cancelled") == 0, "code");
  CHECK(strcmp(global("heard"), "changed my mind") == 0, "on_cancel heard %s", global("heard"));
  fixture_close();
}

/* A cancelled timer closes its handle at once: the loop empties without
 * waiting for its time. */
static void test_a_cancelled_timer_leaves_the_loop(void) {
  uint64_t t0 = uv_hrtime();
  fixture_open();
  lua("handlers['t/t'] = function() local t = core.timer(30) t:cancel() return {done = t:done()} end");
  start("1", "t/t", NULL);
  run();
  CHECK(strcmp(field(0, "result", "done"), "true") == 0, "a cancelled op is done");
  fixture_close();
  CHECK(uv_hrtime() - t0 < 5000000000ull, "waited for the timer");
}

/* Every op of a call is cancelled with the reason of its stop. */
static void test_a_cancel_of_the_call_cancels_every_op(void) {
  mcp_call *c;
  fixture_open();
  lua("heard = ''\n"
      "handlers['t/two'] = function()\n"
      "  local a = core.future(function(why) heard = heard .. 'a:' .. why .. ';' end)\n"
      "  local b = core.future(function(why) heard = heard .. 'b:' .. why .. ';' end)\n"
      "  core.await(a, b)\n"
      "  return {}\n"
      "end");
  c = start("1", "t/two", NULL);
  run();
  mcp_call_fire(c, MCP_EV_CANCEL, "user");
  run();
  CHECK(strstr(global("heard"), "a:user;") && strstr(global("heard"), "b:user;"), "heard %s",
        global("heard"));
  fixture_close();
}

/* An op nobody can reach any more is cancelled by the collector. */
static void test_an_unreachable_op_is_cancelled_as_dropped(void) {
  fixture_open();
  lua("handlers['t/drop'] = function()\n"
      "  core.future(function(why) heard = why end)\n"
      "  collectgarbage()\n"
      "  collectgarbage()\n"
      "  return {}\n"
      "end");
  start("1", "t/drop", NULL);
  run();
  CHECK(strcmp(global("heard"), "dropped") == 0, "on_cancel heard %s", global("heard"));
  fixture_close();
}

/* Started outside any call (a plugin's top level): cancelled at shutdown. */
static void test_a_plugin_level_op_is_cancelled_at_shutdown(void) {
  fixture_open();
  lua("kept = core.future(function(why) heard = why end)");
  mcp_ops_shutdown();
  CHECK(strcmp(global("heard"), "shutdown") == 0, "heard %s", global("heard"));
  lua("kept = nil");
  fixture_close();
}

static void test_a_wait_outside_a_request_raises(void) {
  fixture_open();
  const char *r = try_lua("core.wait(core.future())");
  CHECK(strstr(r, "wait: not inside a request") != NULL, "wait: %s", r);
  r = try_lua("core.sleep(1)");
  CHECK(strstr(r, "sleep: not inside a request") != NULL, "sleep: %s", r);
  fixture_close();
}

/* A coroutine the handler made cannot wait: only the handler's own (or
 * mcp.all's) may yield to the scheduler. */
static void test_a_wait_in_a_coroutine_the_handler_made_raises(void) {
  fixture_open();
  lua("handlers['t/co'] = function()\n"
      "  local co = coroutine.create(function() return core.sleep(1) end)\n"
      "  nested[co] = token()\n"
      "  local ok, err = coroutine.resume(co)\n"
      "  return {ok = ok, err = err}\n"
      "end");
  start("1", "t/co", NULL);
  run();
  CHECK(strcmp(field(0, "result", "ok"), "false") == 0, "it waited: %s", F.nresp ? F.resp[0] : "(none)");
  CHECK(strstr(field(0, "result", "err"), "not a coroutine it created") != NULL, "err: %s",
        field(0, "result", "err"));
  fixture_close();
}

/* The handler's own sleep is the call's (no op, no handle); a cancel ends
 * it with the same outcome an op's wait gives, and it leaves the heap. */
static void test_the_handlers_own_sleep_holds_no_op(void) {
  mcp_call *c;
  fixture_open();
  lua("handlers['t/s'] = function()\n"
      "  got = table.pack(core.sleep(60))\n"
      "  return {}\n"
      "end");
  c = start("1", "t/s", NULL);
  turns(3);
  CHECK(c->ops == NULL && c->sleep_dl.index >= 0, "ops %p, entry %d", (void *)c->ops, c->sleep_dl.index);
  mcp_call_fire(c, MCP_EV_CANCEL, "user");
  CHECK(c->sleep_dl.index < 0, "the sleep's entry is still in the heap");
  run();
  lua("got_text = tostring(got[1]) .. '|' .. got[2] .. '|' .. got[3] .. '|' .. got.n");
  CHECK(strcmp(global("got_text"), "nil|cancelled: user|cancelled|3") == 0, "sleep gave %s", global("got_text"));
  fixture_close();
}

/* A long reason is cut alike in the outcome of the handler's own sleep and
 * of an op's wait (a function of mcp.all sleeps with an op). */
static void test_a_long_reason_is_cut_alike_for_a_sleep_and_an_op(void) {
  mcp_call *a, *b;
  char why[301];
  memset(why, 'r', 300);
  why[300] = '\0';
  fixture_open();
  lua("handlers['t/s'] = function() sleep_why = select(2, core.sleep(60)) return {} end\n"
      "handlers['t/t'] = function() op_why = select(2, core.wait(core.timer(60))) return {} end");
  a = start("1", "t/s", NULL);
  b = start("2", "t/t", NULL);
  turns(3);
  mcp_call_fire(a, MCP_EV_CANCEL, why);
  mcp_call_fire(b, MCP_EV_CANCEL, why);
  run();
  lua("same = sleep_why == op_why and #sleep_why == #'cancelled: ' + 148");
  CHECK(strcmp(global("same"), "true") == 0, "sleep: %s", global("sleep_why"));
  fixture_close();
}

static void test_a_handle_names_its_kind(void) {
  fixture_open();
  lua("name = tostring(core.future())");
  CHECK(strcmp(global("name"), "mcp.op(future)") == 0, "%s", global("name"));
  lua("collectgarbage()");
  fixture_close();
}

int main(void) {
  test_a_result_before_done_raises();
  test_await_returns_the_first_op_done();
  test_await_on_a_done_op_does_not_yield();
  test_a_completed_future_wakes_its_waiter_with_the_values();
  test_a_future_completes_once();
  test_a_future_completed_with_nothing_gives_nothing();
  test_the_handler_may_cancel_its_own_op();
  test_a_cancelled_timer_leaves_the_loop();
  test_a_cancel_of_the_call_cancels_every_op();
  test_an_unreachable_op_is_cancelled_as_dropped();
  test_a_plugin_level_op_is_cancelled_at_shutdown();
  test_a_wait_outside_a_request_raises();
  test_a_wait_in_a_coroutine_the_handler_made_raises();
  test_the_handlers_own_sleep_holds_no_op();
  test_a_long_reason_is_cut_alike_for_a_sleep_and_an_op();
  test_a_handle_names_its_kind();
  mcp_metrics_close();
  TEST_END("test_op");
}
