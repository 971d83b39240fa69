/* Where the Lua library (lua/mcp) is, found from the binary's own path at
 * run time, so that an installed tree may be moved. */
#ifndef MCP_LIBDIR_H
#define MCP_LIBDIR_H

#include <stddef.h>

#include <lua.h>

/* $LUAMCP_LUA_DIR when set; else BINDIR/LUAMCP_LUA_REL (an installed tree:
 * bin/../share/luamcp/lua) when it holds the library; else the source
 * tree's lua/ (a build directory). */
const char *mcp_lua_dir(void);
/* LUAMCP_LUA_REL: where an installed tree's library is, relative to BINDIR. */
const char *mcp_lua_rel(void);
/* The real path of one of the installed tree's directories into buf:
 * "lua" (the library), "types" (the LuaLS annotations) or "plugins" (the
 * examples), the last two beside the library (share/luamcp/ installed, the
 * source tree in a build). 0, or a libuv error with the path tried in buf. */
int mcp_share_dir(const char *what, char *buf, size_t size);
/* Put the library's directory first on package.path. */
void mcp_lua_path(lua_State *L);

#endif
