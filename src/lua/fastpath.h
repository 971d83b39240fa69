/* The C path of tools/call and tools/list (fastpath.c). */
#ifndef MCP_FASTPATH_H
#define MCP_FASTPATH_H

#include <lua.h>

#include "sched.h"

/* Adds fast_methods and fast_tools to the core table on top of the stack,
 * and registers the path with the scheduler. */
void mcp_fastpath_open_lib(lua_State *L);

/* A middleware chain's last step of tools/call (chain.c's next): the
 * checks of the C path on the params table at index params of co (a
 * middleware may have rewritten them), with the chain's ctx at index ctx.
 * 1: entry, handler and args pushed onto co (call handler(args, ctx), then
 * mcp_fastpath_step_result); 0: nothing pushed, Lua's tools_call takes it. */
int mcp_fastpath_step(mcp_call *c, lua_State *co, int params, int ctx);
/* stack of co: ... entry res msg code (from index base: the entry and what
 * the handler returned, any number of values) -> ... res code message data:
 * the result shaped as result.lua's tool() would, in the method's protocol. */
void mcp_fastpath_step_result(lua_State *co, int base);

#endif
