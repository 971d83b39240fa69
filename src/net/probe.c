/* /metrics, /healthz, /readyz. The numbers are the modules' own (each
 * keeps plain counters); they are formatted here, on a scrape only. */
#include <string.h>

#include <http_parser.h>

#include "metrics.h"
#include "probe.h"
#include "session.h"
#include "task.h"

static struct {
  int ready;
  mcp_http_listener *listener;
} P;

void mcp_probe_set_ready(int ready) { P.ready = ready; }

int mcp_probe_path(const char *path) {
  switch (path[0] == '/' ? path[1] : '\0') {   /* one strcmp for every path */
    case 'h': return strcmp(path, "/healthz") == 0;
    case 'r': return strcmp(path, "/readyz") == 0;
    case 'm': return strcmp(path, "/metrics") == 0 ? 2 : 0;
    default: return 0;
  }
}

static void plain(mcp_http_conn *c, int status, const char *text) {
  mcp_http_respond(c, status, NULL, "text/plain; charset=utf-8", text, strlen(text));
}

static void metrics(mcp_http_conn *c) {
  mcp_buf b = MCP_BUF_INIT;
  mcp_session_collect(&b);
  mcp_task_collect(&b);
  mcp_metrics_write(&b);
  mcp_http_respond(c, 200, NULL, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
  mcp_buf_free(&b);
}

void mcp_probe_answer(mcp_http_conn *c, const mcp_http_request *r) {
  if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
    mcp_http_respond(c, 405, "Allow: GET, HEAD\r\n", NULL, NULL, 0);
    return;
  }
  if (strcmp(r->path, "/healthz") == 0) plain(c, 200, "ok\n");
  else if (strcmp(r->path, "/readyz") == 0) plain(c, P.ready ? 200 : 503, P.ready ? "ready\n" : "not ready\n");
  else metrics(c);
}

/* The --metrics listener: these three paths, nothing else, no checks: bind
 * it where only the scraper and the probes reach. */
static void on_request(mcp_http_conn *c, const mcp_http_request *r) {
  if (mcp_probe_path(r->path)) mcp_probe_answer(c, r);
  else plain(c, 404, "not found: /metrics, /healthz and /readyz are served here\n");
}

int mcp_probe_listen(uv_loop_t *loop, const char *host, int port) {
  mcp_http_config cfg = {
    .max_body = 4096, .max_header = 16384, .max_connections = 64, .idle_ms = 60000,
    .header_ms = 10000, .max_pending = 8u << 20, .on_request = on_request,
  };
  return mcp_http_listen(loop, host, port, &cfg, &P.listener);
}

int mcp_probe_port(void) { return mcp_http_listener_port(P.listener); }
