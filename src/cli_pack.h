/* luamcp pack's C side (cli_pack.c), for lua/mcp/cli_pack.lua. */
#ifndef MCP_CLI_PACK_H
#define MCP_CLI_PACK_H

#include <lua.h>

/* stack: mcp.cli -> mcp.cli with exe, scandir, zip, lua_rel, bundle_libs
 * and libc_version set. */
void mcp_cli_pack_open(lua_State *L);

#endif
