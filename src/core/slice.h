/* The alarm that ends a handler's time slice. A handler's coroutine runs
 * with no hook at all (Lua then checks nothing per instruction); once a
 * slice of real time is over, a POSIX timer's signal installs the count
 * hook on the coroutine that is running, as lua.c does for Ctrl-C, and the
 * hook decides (yield, kill). */
#ifndef MCP_SLICE_H
#define MCP_SLICE_H

#include <stdint.h>

#include <lua.h>

/* hook: installed with count 1 when the alarm fires. Returns -1 when the
 * timer cannot be made (then every coroutine keeps the hook on, as before). */
int mcp_slice_init(lua_Hook hook, uint64_t slice_ns);
void mcp_slice_close(void);
/* Is the alarm in use? Otherwise callers keep a count hook set at all times. */
int mcp_slice_on(void);
/* co runs from now until mcp_slice_end: arm the alarm unless it is armed. */
void mcp_slice_begin(lua_State *co);
void mcp_slice_end(void);

#endif
