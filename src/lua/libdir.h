/* Where the Lua library (lua/mcp) is, found from the binary's own path at
 * run time, so that an installed tree may be moved. */
#ifndef MCP_LIBDIR_H
#define MCP_LIBDIR_H

#include <lua.h>

/* $LUAMCP_LUA_DIR when set; else BINDIR/LUAMCP_LUA_REL (an installed tree:
 * bin/../share/luamcp/lua) when it holds the library; else the source
 * tree's lua/ (a build directory). */
const char *mcp_lua_dir(void);
/* Put the library's directory first on package.path. */
void mcp_lua_path(lua_State *L);

#endif
