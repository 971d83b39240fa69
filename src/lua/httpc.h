/* The HTTP client of handlers (ctx:http, mcp.http): libcurl's multi
 * interface driven by the libuv loop, each transfer an operation (op.h) of
 * the call that started it. */
#ifndef MCP_HTTPC_H
#define MCP_HTTPC_H

#include <lua.h>

/* Adds http (core.http) to the core table on top of the stack. */
void mcp_httpc_open_lib(lua_State *L);
/* Shutdown: every transfer is gone (ops cancelled); close the multi handle,
 * its cached connections and the loop handles. */
void mcp_httpc_close(void);

#endif
