/* Requests from a handler to the client (outgoing.c). */
#ifndef MCP_OUTGOING_H
#define MCP_OUTGOING_H

#include <jansson.h>
#include <lua.h>

#include "sched.h"

typedef struct mcp_out mcp_out;

/* A call sends one, as an op of the call, and waits (mcp_op_wait) for the
 * answer, its timeout, or a cancel: result; nil, the client's message,
 * "rpc", its error object; nil, message, "timeout"; nil, "cancelled:
 * <reason>", "cancelled". */
int mcp_call_request(lua_State *L, mcp_call *c, const char *method, int params, double timeout,
                     double max_total);
/* Register outgoing.c's row into session.c: a response from the client
 * (1 when it answered a waiting call), notifications/progress for one of
 * our requests. */
void mcp_out_init(void);

#endif
