/* Private to mcp.core (lmcp.c, lmcp_client.c, lmcp_misc.c): each topic file
 * sets its functions into the core table. */
#ifndef MCP_LMCP_INT_H
#define MCP_LMCP_INT_H

#include <lua.h>

#include "sched.h"

static inline mcp_call *current(lua_State *L) { return mcp_call_current(L); }

/* stack: core -> core. Progress, logging, notifications and requests to the
 * client; sets the scheduler's heartbeat. */
void mcp__lmcp_client_open(lua_State *L);
/* stack: core -> core. JSON, seal, digests, clocks, policies, limits,
 * counters, plugin files. */
void mcp__lmcp_misc_open(lua_State *L);
/* stack: core -> core. The middleware chain (chain.c): chain_run, chain_setup. */
void mcp__chain_open(lua_State *L);
/* stack: core -> core. guarded_tostring (guard.c): an error object's __tostring, bounded. */
void mcp__guard_open(lua_State *L);

#endif
