/* The Task object as JSON, in either wire's names (2025-11-25, the tasks
 * extension), with the extension's DetailedTask fields, and its times. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "task_int.h"

const char *const mcp__task_status_names[] = {
  "working", "input_required", "completed", "failed", "cancelled"
};

void mcp__task_iso(char *out, size_t cap, double ms) {
  long long v = (long long)ms;
  time_t sec = (time_t)(v / 1000);
  struct tm tm;
  char s[40];
  gmtime_r(&sec, &tm);
  strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, cap, "%s.%03dZ", s, (int)(v % 1000));
}

static void add_time(mcp_buf *b, double ms) {
  char s[48];
  mcp__task_iso(s, sizeof s, ms);
  mcp_buf_printf(b, "\"%s\"", s);
}

/* The extension's DetailedTask fields: the outcome, or what the handler
 * waits for. */
void mcp__task_detail(mcp_buf *b, const mcp_task *t) {
  json_t *v;
  if (t->status == MCP__TASK_INPUT_REQUIRED) {
    int n = 0;
    mcp_buf_adds(b, ",\"inputRequests\":{");
    for (int i = 0; i < t->ninputs; i++) {
      if (t->inputs[i].response != NULL) continue;
      if (n++) mcp_buf_addc(b, ',');
      mcp_buf_printf(b, "\"%s\":%s", t->inputs[i].key, t->inputs[i].request);
    }
    mcp_buf_addc(b, '}');
  } else if (t->status == MCP__TASK_COMPLETED && (v = json_object_get(t->response, "result")) != NULL) {
    mcp_buf_adds(b, ",\"result\":");
    mcp_json_dump(v, b);
  } else if (t->status == MCP__TASK_FAILED && (v = json_object_get(t->response, "error")) != NULL) {
    mcp_buf_adds(b, ",\"error\":");
    mcp_json_dump(v, b);
  }
}

/* The Task object, in its wire's names: ttl and pollInterval (2025-11-25),
 * or ttlMs and pollIntervalMs (the extension), then with detailed the
 * extension's DetailedTask fields. result_type: the extension's resultType
 * ("task" for CreateTaskResult, "complete" for tasks/get), or NULL. */
void mcp__task_render(mcp_buf *b, const mcp_task *t, const char *result_type, int detailed) {
  mcp_buf_addc(b, '{');
  if (result_type != NULL) mcp_buf_printf(b, "\"resultType\":\"%s\",", result_type);
  mcp_buf_printf(b, "\"taskId\":\"%s\",\"status\":\"%s\",", t->id, mcp__task_status_names[t->status]);
  if (t->message) {
    mcp_buf_adds(b, "\"statusMessage\":");
    mcp_json_add_string(b, t->message, strlen(t->message));
    mcp_buf_addc(b, ',');
  }
  mcp_buf_adds(b, "\"createdAt\":");
  add_time(b, t->created_ms);
  mcp_buf_adds(b, ",\"lastUpdatedAt\":");
  add_time(b, t->updated_ms);
  mcp_buf_printf(b, t->ext ? ",\"ttlMs\":%lld,\"pollIntervalMs\":%d" : ",\"ttl\":%lld,\"pollInterval\":%d",
                 t->ttl_ms, MCP_TASK_POLL_MS);
  if (detailed) mcp__task_detail(b, t);
  mcp_buf_addc(b, '}');
}
