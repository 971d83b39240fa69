/* task.c's task states on the 2025-11-25 wire: working, input_required,
 * completed, failed, cancelled, and the ends of a task (tasks/cancel, the
 * session's end, its ttl), each through a real handler on the real
 * scheduler. task.c reaches its session through mcp_session_send and
 * mcp_session_owner, and the session reaches the task files through the
 * rows they register (mcp_session_type); this file plays the session on
 * both sides, and the store and the 2026-07-28 side are off (never called). */
#include "sched_fixture.h"
#include "session.h"
#include "store.h"
#include "task.h"
#include "rev2026.h"
#include "task_int.h"

/* The session's side, as task.c sees it: every message it is given to
 * write, the call's owner that it delegates to, and the rows the task
 * files register, which the session calls as session.c does. */
static char *sent[32];
static int nsent;
static mcp_session sess;
static const mcp_session_type *rows[8];
static int nrows;

void mcp_session_send(mcp_session *s, mcp_batch *b, void *stream, const char *data, size_t len,
                      int last) {
  if (nsent < 32 && (sent[nsent] = strndup(data, len)) == NULL) abort();
  nsent++;
}

static void session_gone(mcp_call *c) {
  mcp_reqtab_remove(&sess.reqs, &c->req);
  owner_gone(c);
}

const struct mcp_call_owner mcp_session_owner = { owner_respond, owner_stopping, session_gone,
                                                  owner_session_name, NULL };

void mcp_session_register(const mcp_session_type *t) {
  for (int i = 0; i < nrows; i++)
    if (rows[i] == t) return;
  if (nrows == 8) abort();
  rows[nrows++] = t;
}

/* Off in these tests: the store and the 2026-07-28 requests. The store's
 * row is registered, but with mcp_store NULL task.c must not call it. */
void *mcp_store;
int mcp_rev2026_declares(json_t *caps, const char *ext) { return 0; }
int mcp_rev2026_listen_notify(const char *method, json_t *params) { abort(); }
void mcp_store_collect(mcp_buf *b) { abort(); }
static void store_write(const mcp_task *t, int notify) { abort(); }
static void store_created(const mcp_task *t, mcp_session *s, void *stream, const char *response,
                          size_t len) { abort(); }
static void store_request(mcp_session *s, void *stream, const char *key, const char *method,
                          json_t *params) { abort(); }
static void store_session_closed(mcp_session *s) { abort(); }
static void store_describe(mcp_session *s, const char *id) { abort(); }
static const mcp_task_store_type store_off = { store_write, store_created, store_request,
                                               store_session_closed, store_describe };

static const char *str(json_t *v) {
  const char *s = json_string_value(v);
  return s ? s : "";
}

/* The session ends as session.c ends it: its calls get CLOSE, then the
 * rows hear of it (its tasks go). */
static void end_session(void) {
  mcp_sched_close_all(NULL, NULL, "session ended");
  for (int i = 0; i < nrows; i++)
    if (rows[i]->closed) rows[i]->closed(&sess);
  run();
}

/* The test clock moves as session.c moves it: the rows first (tasks past
 * their ttl go), then what is due fires. */
static void clock_advance(double seconds) {
  mcp_clock_advance(seconds);
  for (int i = 0; i < nrows; i++)
    if (rows[i]->clock) rows[i]->clock();
  mcp_deadlines_run();
}

static void task_open(void) {
  fixture_open();
  memset(&sess, 0, sizeof sess);
  mcp_reqtab_init(&sess.reqs);
  nsent = 0;
  nrows = 0;
  mcp_task_init();                  /* as proto.c wires them */
  mcp_task_methods_init();
  mcp__task_set_store(&store_off);
  lua_pushcfunction(F.L, mcp_task_l_create);
  lua_setglobal(F.L, "task_create");
  lua_pushcfunction(F.L, mcp_task_l_result);
  lua_setglobal(F.L, "task_result");
  lua("handlers['tasks/result'] = function(p) return task_result(p.taskId) end");
  lua("handlers['tools/call'] = true");   /* a method served (dispatch runs tools[name]) */
  mcp_policy_set("job", MCP_CANCEL_COOPERATIVE, 0, 1, NULL, MCP_TASK_OPTIONAL);
}

static void task_close(void) {
  mcp_task_close();
  fixture_close();
  mcp_reqtab_close(&sess.reqs);
  for (int i = 0; i < nsent && i < 32; i++) free(sent[i]);
}

/* A request of the session, as session.c serves it: a row that takes it
 * answers it (NULL), else it is a call (its table, its owner) of a method
 * the server has (NULL when it has not: not found). */
static mcp_call *request(const char *key, const char *method, const char *params) {
  json_t *p = json_loads(params ? params : "{}", 0, NULL);
  mcp_call *c = NULL;
  for (int i = 0; i < nrows; i++)
    if (rows[i]->request && rows[i]->request(&sess, NULL, NULL, key, method, p)) goto served;
  CHECK(mcp_sched_has_method(method), "no row took %s, and no handler serves it", method);
  if (!mcp_sched_has_method(method)) goto served;
  c = mcp_call_start(&mcp_session_owner, 1, key, strlen(key), method, p);
  c->session = &sess;
  mcp_reqtab_insert(&sess.reqs, &c->req);
served:
  json_decref(p);
  return c;
}

/* The job tool: made a task, then what args.then says. */
static const char job_lua[] =
  "tools.job = function(args)\n"
  "  task_id = task_create()\n"
  "  if args['then'] == 'wait' then wait_got = select(2, core.wait(core.future())) end\n"
  "  if args['then'] == 'fail' then error('job failed') end\n"
  "  return {content = {{type = 'text', text = 'done'}}}\n"
  "end";

/* The task's status as tasks/get answers it now. */
static const char *status_of(const char *id) {
  static char st[64];
  char params[128];
  json_t *r;
  int before = nsent;
  snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", id);
  CHECK(request("99", "tasks/get", params) == NULL, "tasks/get is a row's, not a call");
  st[0] = '\0';
  if (nsent == before + 1 && (r = json_loads(sent[before], 0, NULL)) != NULL) {
    json_t *res = json_object_get(r, "result"), *err = json_object_get(r, "error");
    if (res) snprintf(st, sizeof st, "%s", json_string_value(json_object_get(res, "status")));
    else snprintf(st, sizeof st, "error: %s", json_string_value(json_object_get(err, "message")));
    json_decref(r);
  }
  return st;
}

/* The statuses notifications/tasks/status carried, in order ("a,b,"). */
static const char *notified(void) {
  static char v[256];
  v[0] = '\0';
  for (int i = 0; i < nsent && i < 32; i++) {
    json_t *m = json_loads(sent[i], 0, NULL);
    const char *method = json_string_value(json_object_get(m, "method"));
    if (method && strcmp(method, "notifications/tasks/status") == 0) {
      strncat(v, json_string_value(json_object_get(json_object_get(m, "params"), "status")),
              sizeof v - strlen(v) - 2);
      strcat(v, ",");
    }
    json_decref(m);
  }
  return v;
}

static void test_task_create_answers_the_request_with_a_working_task(void) {
  json_t *r;
  task_open();
  lua(job_lua);
  request("1", "tools/call", "{\"name\":\"job\",\"arguments\":{\"then\":\"wait\"}}");
  run();
  r = nsent ? json_loads(sent[0], 0, NULL) : NULL;
  CHECK(r && json_integer_value(json_object_get(r, "id")) == 1, "the request is answered: %s",
        nsent ? sent[0] : "(nothing)");
  CHECK(strcmp(str(json_object_get(json_object_get(json_object_get(r, "result"), "task"), "status")),
               "working") == 0, "working");
  CHECK(strcmp(status_of(global("task_id")), "working") == 0, "tasks/get: %s", status_of(global("task_id")));
  CHECK(mcp_reqtab_find(&sess.reqs, "1", 1) == NULL, "the call left the request table");
  CHECK(mcp_sched_live() == 1, "the handler runs on");
  json_decref(r);
  end_session();
  task_close();
}

static void test_a_returning_handler_completes_its_task(void) {
  task_open();
  lua(job_lua);
  request("1", "tools/call", "{\"name\":\"job\"}");
  run();
  CHECK(strcmp(status_of(global("task_id")), "completed") == 0, "status: %s", status_of(global("task_id")));
  CHECK(strcmp(notified(), "completed,") == 0, "notified: %s", notified());
  CHECK(F.nresp == 0, "the result went to the client directly");
  task_close();
}

static void test_a_raising_handler_fails_its_task(void) {
  task_open();
  lua(job_lua);
  request("1", "tools/call", "{\"name\":\"job\",\"arguments\":{\"then\":\"fail\"}}");
  run();
  CHECK(strcmp(status_of(global("task_id")), "failed") == 0, "status: %s", status_of(global("task_id")));
  task_close();
}

/* tasks/result waits for a working task, then returns its result. */
static void test_tasks_result_waits_for_the_end_of_the_task(void) {
  char params[128];
  mcp_call *job;
  task_open();
  lua(job_lua);
  lua("tools.slow = function() task_id = task_create() core.sleep(10) return {content = {}, n = 5} end");
  mcp_policy_set("slow", MCP_CANCEL_COOPERATIVE, 0, 1, NULL, MCP_TASK_OPTIONAL);
  job = request("1", "tools/call", "{\"name\":\"slow\"}");
  turns(3);
  (void)job;
  snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", global("task_id"));
  request("2", "tasks/result", params);
  turns(3);
  CHECK(F.nresp == 0, "tasks/result answered before the end");
  clock_advance(10);
  run();
  CHECK(F.nresp == 1 && strcmp(field(0, "result", "n"), "5") == 0, "the result: %s",
        F.nresp ? F.resp[0] : "(none)");
  CHECK(strstr(F.nresp ? F.resp[0] : "", "related-task") != NULL, "with related-task");
  task_close();
}

/* tasks/cancel: cancelled at once; the handler gets the cancel; its late
 * result is dropped. */
static void test_tasks_cancel_cancels_the_task_and_its_call(void) {
  char params[128];
  task_open();
  lua(job_lua);
  request("1", "tools/call", "{\"name\":\"job\",\"arguments\":{\"then\":\"wait\"}}");
  run();
  snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", global("task_id"));
  CHECK(request("5", "tasks/cancel", params) == NULL, "tasks/cancel is a row's, not a call");
  CHECK(strcmp(status_of(global("task_id")), "cancelled") == 0, "status: %s", status_of(global("task_id")));
  run();
  CHECK(strcmp(global("wait_got"), "cancelled: task cancelled") == 0, "the handler's wait: %s",
        global("wait_got"));
  CHECK(strcmp(status_of(global("task_id")), "cancelled") == 0, "a late result changed it: %s",
        status_of(global("task_id")));
  CHECK(mcp_sched_live() == 0, "the call ended");
  task_close();
}

static void test_a_terminal_task_cannot_be_cancelled(void) {
  char params[128];
  json_t *r;
  task_open();
  lua(job_lua);
  request("1", "tools/call", "{\"name\":\"job\"}");
  run();
  snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", global("task_id"));
  CHECK(request("5", "tasks/cancel", params) == NULL, "tasks/cancel is a row's, not a call");
  r = json_loads(sent[nsent - 1], 0, NULL);
  CHECK(strcmp(str(json_object_get(json_object_get(r, "error"), "message")),
               "Cannot cancel task: already in terminal status 'completed'") == 0, "%s", sent[nsent - 1]);
  json_decref(r);
  task_close();
}

/* A request to the client from the handler: input_required, then working. */
static void test_input_required_while_the_client_is_asked(void) {
  mcp_call *c;
  task_open();
  lua(job_lua);
  c = request("1", "tools/call", "{\"name\":\"job\",\"arguments\":{\"then\":\"wait\"}}");
  run();
  mcp_task_input(c, "sampling/createMessage");
  CHECK(strcmp(status_of(global("task_id")), "input_required") == 0, "status: %s",
        status_of(global("task_id")));
  mcp_task_input(c, NULL);
  CHECK(strcmp(status_of(global("task_id")), "working") == 0, "status: %s", status_of(global("task_id")));
  CHECK(strcmp(notified(), "input_required,working,") == 0, "notified: %s", notified());
  end_session();
  task_close();
}

/* The end of the session frees its tasks and cancels their calls. */
static void test_the_end_of_the_session_ends_its_tasks(void) {
  task_open();
  lua(job_lua);
  request("1", "tools/call", "{\"name\":\"job\",\"arguments\":{\"then\":\"wait\"}}");
  run();
  end_session();
  CHECK(strncmp(status_of(global("task_id")), "error: ", 7) == 0, "the task is still there");
  CHECK(strcmp(global("wait_got"), "cancelled: session ended") == 0, "the handler's wait: %s",
        global("wait_got"));
  CHECK(mcp_sched_live() == 0, "its call ended");
  task_close();
}

/* Past its ttl a finished task is gone. */
static void test_a_task_past_its_ttl_is_gone(void) {
  task_open();
  lua("tools.job = function() task_id = task_create(1000) return {content = {}} end");
  request("1", "tools/call", "{\"name\":\"job\"}");
  run();
  CHECK(strcmp(status_of(global("task_id")), "completed") == 0, "completed first");
  clock_advance(1.001);
  CHECK(mcp__task_head() == NULL, "the clock's row swept it");
  CHECK(strcmp(status_of(global("task_id")), "error: Failed to retrieve task: Task not found") == 0,
        "after its ttl: %s", status_of(global("task_id")));
  task_close();
}

int main(void) {
  test_task_create_answers_the_request_with_a_working_task();
  test_a_returning_handler_completes_its_task();
  test_a_raising_handler_fails_its_task();
  test_tasks_result_waits_for_the_end_of_the_task();
  test_tasks_cancel_cancels_the_task_and_its_call();
  test_a_terminal_task_cannot_be_cancelled();
  test_input_required_while_the_client_is_asked();
  test_the_end_of_the_session_ends_its_tasks();
  test_a_task_past_its_ttl_is_gone();
  mcp_metrics_close();
  TEST_END("test_task");
}
