/* OAuth at the Streamable HTTP transport (transport_http.c calls it only
 * when --auth-* is on; auth.c checks the tokens). */
#ifndef MCP_HTTP_AUTH_H
#define MCP_HTTP_AUTH_H

#include <jansson.h>

#include "http.h"
#include "identity.h"

/* Serve a request whose token was accepted; id is borrowed for the call. */
typedef void (*mcp_http_serve_fn)(mcp_http_conn *c, const mcp_http_request *r, mcp_identity *id);

/* GET (or OPTIONS) of the Protected Resource Metadata (mcp_auth_is_metadata_path). */
void mcp_http_auth_metadata(mcp_http_conn *c, const mcp_http_request *r);
/* Check the request's token, then serve it, now or once the check ends;
 * or answer 400 (a token in the query), 401 or 503. */
void mcp_http_auth_begin(mcp_http_conn *c, const mcp_http_request *r, mcp_http_serve_fn serve);
/* A connection closed: if a request of it waits on its check, the wait ends. */
void mcp_http_auth_closed(mcp_http_conn *c);
/* Is any request waiting? */
int mcp_http_auth_waiting(void);
/* Does id hold the scopes of every tools/call in msg (a message or a
 * batch)? Else answer 403 insufficient_scope, with the scopes to ask for
 * (granted and needed, so that a new token loses none), and return 0. */
int mcp_http_auth_scopes(mcp_http_conn *c, json_t *msg, const mcp_identity *id);
/* Does id hold the scopes of tool (a tools/call read from its text)? No answer is sent. */
int mcp_http_auth_tool_allowed(const char *tool, const mcp_identity *id);

#endif
