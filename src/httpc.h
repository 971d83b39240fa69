/* The HTTP client of handlers (ctx:http, mcp.http): libcurl's multi
 * interface driven by the libuv loop, each transfer an operation (op.h) of
 * the call that started it. */
#ifndef MCP_HTTPC_H
#define MCP_HTTPC_H

#include <lua.h>

/* --http-allow HOST[:PORT] (repeatable): once one is given, only those
 * hosts may be reached, checked again at connect time against the address
 * the name resolved to. Returns -1 when the entry is malformed. */
int mcp_httpc_allow(const char *entry);
/* Adds http (core.http) to the core table on top of the stack. */
void mcp_httpc_open_lib(lua_State *L);
/* Shutdown: every transfer is gone (ops cancelled); close the multi handle,
 * its cached connections and the loop handles. */
void mcp_httpc_close(void);

#endif
