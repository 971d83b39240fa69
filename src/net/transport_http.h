/* The Streamable HTTP transport (revisions 2025-03-26 .. 2025-11-25). */
#ifndef MCP_TRANSPORT_HTTP_H
#define MCP_TRANSPORT_HTTP_H

#include <stddef.h>
#include <uv.h>

#include "buf.h"

typedef struct {
  const char *host;
  int port;
  const char **allow_origins;    /* extra allowed origins, NULL-terminated */
  int nallow_origins;
  const char *token;             /* bearer token required when set */
  int auth;                      /* OAuth (auth.c, started): every request's token is checked */
  size_t max_body;
  int max_connections;
  int max_sessions;              /* initialize past it gets 503 */
  unsigned idle_ms;
  unsigned header_ms;            /* a request's headers must arrive within it (0: 10 s) */
} mcp_http_options;

int mcp_http_start(uv_loop_t *loop, const mcp_http_options *opt);
int mcp_http_port(void);
/* Serve one connected stream socket as if it had been accepted (the fuzz
 * target's way in; mcp_http_serve_fd). After a shutdown has completed, the
 * transport serves afresh. */
int mcp_http_serve_fd(uv_loop_t *loop, const mcp_http_options *opt, uv_os_sock_t fd);
/* Drain: accept no new connection, and answer new requests (a POST with
 * a request in it) 503 with a JSON-RPC error; notifications, responses,
 * GET and DELETE go on, for the calls still running. */
void mcp_http_drain(void);
/* Cancel every call (reason "shutdown"), end every session, close every
 * connection; on_closed runs when all is gone. */
void mcp_http_shutdown(void (*on_closed)(void));

#endif
