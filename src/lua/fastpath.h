/* The C path of tools/call and tools/list (fastpath.c). */
#ifndef MCP_FASTPATH_H
#define MCP_FASTPATH_H

#include <lua.h>

/* Adds fast_methods and fast_tools to the core table on top of the stack,
 * and registers the path with the scheduler. */
void mcp_fastpath_open_lib(lua_State *L);

#endif
