/* The tasks extension's methods on 2026-07-28 requests: tasks/get with the
 * outcome or the inputRequests inline, tasks/update, tasks/cancel as an ack
 * (through the store when there is one), and a task described to a
 * subscriptions/listen stream; registered into rev2026.c. */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "rev2026.h"
#include "rpc.h"
#include "task_int.h"

int mcp_task_describe(mcp_session *s, const char *id, mcp_buf *b) {
  mcp_task *t = mcp__task_find(s, id, 1);
  if (t != NULL && b != NULL) mcp__task_render(b, t, NULL, 1);
  return t != NULL;
}

/* The extension's acknowledgement: an empty result. */
static void reply_ack(mcp_session *s, void *stream, const char *key) {
  mcp_buf out = MCP_BUF_INIT;
  mcp_rpc_result_open(&out, key);
  mcp_buf_adds(&out, "{\"resultType\":\"complete\"}");
  mcp_rpc_close(&out);
  mcp__task_reply(s, NULL, stream, &out);
}

static void on_update(mcp_session *s, void *stream, const char *key, mcp_task *t,
                      json_t *responses) {
  mcp__task_answer(t, responses);
  reply_ack(s, stream, key);
}

void mcp_task_request_ext(mcp_session *s, void *stream, const char *key, const char *method,
                          json_t *params) {
  mcp_buf out = MCP_BUF_INIT;
  json_t *responses = json_object_get(params, "inputResponses"), *v;
  const char *k;
  mcp_task *t;
  mcp__task_sweep(1);
  if (strcmp(method, "tasks/update") == 0) {
    if (!json_is_object(responses)) {
      mcp__task_reply_error(s, NULL, stream, key, MCP_RPC_INVALID_PARAMS,
                  "Invalid params: inputResponses must be an object");
      return;
    }
    json_object_foreach(responses, k, v)
      if (!json_is_object(v)) {
        char msg[160];
        snprintf(msg, sizeof msg, "Invalid params: inputResponses[\"%.64s\"] must be an object", k);
        mcp__task_reply_error(s, NULL, stream, key, MCP_RPC_INVALID_PARAMS, msg);
        return;
      }
  }
  if (mcp__task_stored()) {                      /* the task may be another instance's */
    mcp__task_stored()->request(s, stream, key, method, params);
    return;
  }
  if ((t = mcp__task_lookup(s, NULL, stream, key, params, 1)) == NULL) return;
  if (strcmp(method, "tasks/update") == 0) {
    on_update(s, stream, key, t, responses);
  } else if (strcmp(method, "tasks/cancel") == 0) {
    /* An ack either way: a terminal task stays as it is. */
    if (mcp__task_terminal(t->status))
      mcp_info("task %s: cancel ignored: already %s", t->id, mcp__task_status_names[t->status]);
    else mcp__task_cancel(t);
    reply_ack(s, stream, key);
  } else {
    mcp_rpc_result_open(&out, key);
    mcp__task_render(&out, t, "complete", 1);
    mcp_rpc_close(&out);
    mcp__task_reply(s, NULL, stream, &out);
  }
}

/* With a store, a listener's task comes from it. */
static void fetch(mcp_session *s, const char *id) {
  if (mcp__task_stored()) mcp__task_stored()->describe(s, id);
}

void mcp_task_ext_init(void) {
  static const mcp_rev2026_tasks ext = {
    .request = mcp_task_request_ext, .describe = mcp_task_describe, .fetch = fetch,
  };
  mcp_rev2026_set_tasks(&ext);
}
