/* The mcp.core Lua module. */
#ifndef MCP_LMCP_H
#define MCP_LMCP_H

#include <lua.h>

int luaopen_mcp_core(lua_State *L);
void mcp_lua_open(lua_State *L);

#endif
