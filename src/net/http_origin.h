/* The checks before the MCP endpoint serves a request (http_origin.c):
 * Origin, Host, the static token, CORS. */
#ifndef MCP_HTTP_ORIGIN_H
#define MCP_HTTP_ORIGIN_H

#include "http.h"
#include "transport_http.h"

/* May a page of this Origin use the endpoint? Localhost's, or one listed. */
int mcp_http_origin_allowed(const mcp_http_options *o, const char *origin);
/* Is this Host (host[:port]) the server's own name: localhost, the bind
 * address, or an allowed origin's host? */
int mcp_http_host_allowed(const mcp_http_options *o, const char *hostport);
/* Does the Authorization header carry o->token (constant time)? */
int mcp_http_token_ok(const mcp_http_options *o, const char *auth);
/* CORS headers for a request with an Origin; a preflight (OPTIONS) is
 * answered here: 1, and nothing more to do. */
int mcp_http_cors(mcp_http_conn *c, const mcp_http_request *r);

#endif
