/* The forward path: a mounted tool's call to its stdio upstream written
 * and answered in C (fastpath.c's mcp_forward_call). */
#ifndef MCP_FORWARD_H
#define MCP_FORWARD_H

#include <lua.h>

/* The function of a forwarded tool's call on the C path (fastpath.c):
 * (handler, args, ctx, up), up = {client =, name =} (mount.lua); what the
 * handler would return, or the handler's own returns where the call is
 * not the plain case. */
int mcp_forward_call(lua_State *L);
/* core.forward_fail, core.forward_outcome into the table on top; proc.c's line hook. */
void mcp_forward_open_lib(lua_State *L);

#endif
