/* The operator's endpoints: GET /metrics (the Prometheus text format),
 * /healthz and /readyz. The MCP listener routes these paths here
 * (transport_http.c, after its own checks for /metrics); --metrics
 * HOST:PORT serves them on a listener of their own, with no other path. */
#ifndef MCP_PROBE_H
#define MCP_PROBE_H

#include <uv.h>

#include "http.h"

/* Ready: the plugins are loaded and the server is not draining. */
void mcp_probe_set_ready(int ready);
/* Is path one of the endpoints? (/healthz, /readyz: 1; /metrics: 2) */
int mcp_probe_path(const char *path);
void mcp_probe_answer(mcp_http_conn *c, const mcp_http_request *r);
/* The --metrics listener. 0, or a libuv error. */
int mcp_probe_listen(uv_loop_t *loop, const char *host, int port);
int mcp_probe_port(void);

#endif
