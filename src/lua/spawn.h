/* Child processes for handlers: ctx:spawn. */
#ifndef MCP_SPAWN_H
#define MCP_SPAWN_H

#include <lua.h>

#include "sched.h"

#define MCP_SPAWN_MAX_OUTPUT (16u << 20)   /* default cap of captured stdout, stderr, a line */

/* stack: cmd args opts. Starts the child and yields until it exits (and its
 * stdout and stderr are closed); the continuation returns
 * {code, signal, stdout, stderr, pid}, or nil and why (with that table as a
 * third value when the child ran). A cancel of c detaches the child: it gets
 * SIGTERM, then SIGKILL after c's grace, and is reaped by the loop. */
int mcp_spawn_start(lua_State *L, mcp_call *c);

#endif
