/* Requests from a handler to the client (outgoing.c). */
#ifndef MCP_OUTGOING_H
#define MCP_OUTGOING_H

#include <jansson.h>
#include <lua.h>

#include "sched.h"

/* A call sends one and yields until the answer, its timeout, or its own
 * cancellation; then the continuation returns result, or nil and a message
 * (and the error object). */
int mcp_call_request(lua_State *L, mcp_call *c, const char *method, int params, double timeout,
                     double max_total);
/* A response from the client: 1 when it answered a waiting call. */
int mcp_out_response(mcp_session *s, json_t *msg);
/* notifications/progress from the client for one of our requests. */
int mcp_out_progress(mcp_session *s, json_t *token);
/* The call is stopping while it waits: cancel the request at the client. */
void mcp_out_abandon(mcp_call *c, const char *reason);

#endif
