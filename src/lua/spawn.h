/* Child processes for handlers: ctx:spawn. */
#ifndef MCP_SPAWN_H
#define MCP_SPAWN_H

#include <lua.h>

#include "sched.h"

#define MCP_SPAWN_MAX_BYTES (16u << 20)   /* default cap of captured stdout, stderr, a line */

/* stack: opts ({command = {...}, cwd, env, stdin, stdout, stderr, timeout,
 * max_bytes}; the deprecated cmd, args, opts too). Starts the child as an op
 * of c and waits until it exits (and its stdout and stderr are closed):
 * returns {code, signal, stdout, stderr, pid}; stopped by its timeout or
 * max_bytes, nil, message, "timeout" or "too_large" and that table; not
 * started, nil, message, code. A cancel of c detaches the child (nil,
 * "cancelled: <reason>", "cancelled"): it gets SIGTERM, then SIGKILL after
 * c's grace, and is reaped by the loop. */
int mcp_spawn_start(lua_State *L, mcp_call *c);

#endif
