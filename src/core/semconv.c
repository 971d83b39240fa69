/* The semantic conventions' MCP duration histograms (semconv.h), one per
 * method, tool and error type (all interned: policy.h), for the life of
 * the process. A call's error type is what its response said (respond.c
 * sets c->rpc_code and c->tool_error) or that it was cancelled. */
#include <stdio.h>
#include <stdlib.h>

#include "metrics.h"
#include "policy.h"
#include "sched_int.h"
#include "semconv.h"

#define NBUCKETS 64

typedef struct entry {
  struct entry *next;
  const char *method, *tool, *error;   /* interned; tool and error NULL for none */
  mcp_hist h;
} entry;

static struct {
  entry *server[NBUCKETS], *client[NBUCKETS];
  int collecting;
} M;

static entry *entry_of(entry **table, const char *method, const char *tool, const char *error) {
  unsigned k = (unsigned)(((uintptr_t)method >> 4) ^ ((uintptr_t)tool >> 4) * 31u ^ ((uintptr_t)error >> 4) * 17u)
               % NBUCKETS;
  entry *e;
  for (e = table[k]; e; e = e->next)
    if (e->method == method && e->tool == tool && e->error == error) return e;
  if ((e = calloc(1, sizeof *e)) == NULL) abort();
  e->method = method;
  e->tool = tool;
  e->error = error;
  e->next = table[k];
  table[k] = e;
  return e;
}

/* error.type of a finished call: NULL when it succeeded. */
static const char *error_of(const mcp_call *c) {
  char code[16];
  if (!c->responded && c->req.state != MCP_REQ_COMPLETED) return mcp_name_intern("cancelled");
  if (c->tool_error) return mcp_name_intern("tool_error");
  if (c->rpc_code == 0) return NULL;
  snprintf(code, sizeof code, "%d", c->rpc_code);
  return mcp_name_intern(code);
}

static void finish(const mcp_call *c) {
  entry *e = entry_of(M.server, c->method, c->tool_owned ? NULL : c->tool, error_of(c));
  mcp_hist_observe_in(&e->h, mcp_hist_semconv, (double)(c->end_ns - c->arrive_ns) / 1e9);
}

void mcp_semconv_client(const char *method, const char *tool, const char *error_type, double seconds) {
  entry *e = entry_of(M.client, mcp_name_intern(method), tool ? mcp_name_intern(tool) : NULL,
                      error_type ? mcp_name_intern(error_type) : NULL);
  mcp_hist_observe_in(&e->h, mcp_hist_semconv, seconds);
}

static void write_table(mcp_buf *b, entry **table, const char *name) {
  mcp_buf l = MCP_BUF_INIT;
  for (int i = 0; i < NBUCKETS; i++)
    for (entry *e = table[i]; e; e = e->next) {
      l.len = 0;
      mcp_metric_label(&l, 0, "mcp_method_name", e->method);
      mcp_metric_label(&l, 1, "gen_ai_tool_name", e->tool ? e->tool : "");
      mcp_metric_label(&l, 1, "error_type", e->error ? e->error : "");
      mcp_buf_addc(&l, '\0');
      mcp_metric_hist_in(b, name, l.data, &e->h, mcp_hist_semconv);
    }
  mcp_buf_free(&l);
}

static void collect(mcp_buf *b) {
  mcp_metric_head(b, "mcp_server_operation_duration_seconds", "histogram",
                  "MCP requests served, from arrival to end (OpenTelemetry mcp.server.operation.duration).");
  write_table(b, M.server, "mcp_server_operation_duration_seconds");
  mcp_metric_head(b, "mcp_client_operation_duration_seconds", "histogram",
                  "Requests to upstream MCP servers (OpenTelemetry mcp.client.operation.duration).");
  write_table(b, M.client, "mcp_client_operation_duration_seconds");
}

static const mcp_call_type semconv_type = { .finish = finish };

void mcp_semconv_init(void) {
  mcp__sched_register(&semconv_type);
  if (!M.collecting) mcp_metrics_collector(collect);
  M.collecting = 1;
}

static void free_table(entry **table) {
  for (int i = 0; i < NBUCKETS; i++)
    while (table[i]) {
      entry *e = table[i];
      table[i] = e->next;
      free(e);
    }
}

void mcp_semconv_close(void) {
  free_table(M.server);
  free_table(M.client);
  M.collecting = 0;
}
