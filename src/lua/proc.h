/* Long-lived child processes not tied to a call: core.proc, the stdio
 * upstreams of MCP clients (lua/mcp/client_stdio.lua). */
#ifndef MCP_PROC_H
#define MCP_PROC_H

#include <lua.h>

/* core.proc and the handle's metatable into the table on top. */
void mcp_proc_open_lib(lua_State *L);
/* Shutdown: every child gets its stdin closed and SIGTERM, then SIGKILL
 * after 2 s; no child can be started afterwards. The loop runs until the
 * last one is reaped. */
void mcp_proc_close_all(void);

#endif
