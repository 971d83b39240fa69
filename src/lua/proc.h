/* Long-lived child processes not tied to a call: core.proc, the stdio
 * upstreams of MCP clients (lua/mcp/client_stdio.lua). */
#ifndef MCP_PROC_H
#define MCP_PROC_H

#include <lua.h>

typedef struct mcp_proc mcp_proc;

/* The child of the proc handle at idx while its stdin takes writes, or NULL. */
mcp_proc *mcp_proc_get(lua_State *L, int idx);
/* Queue bytes for its stdin (written before the loop polls); -1 when it is closed. */
int mcp_proc_write(mcp_proc *p, const char *s, size_t len);
/* Its slot for the forward path's state (src/lua/forward.c): while set,
 * each stdout line goes to the line hook first (1: taken, Lua does not see
 * it), and the free hook runs when the child is freed. */
void **mcp_proc_fwd(mcp_proc *p);
void mcp_proc_set_fwd(int (*line)(void *fwd, const char *line, size_t len), void (*free_fn)(void *fwd));
/* core.proc and the handle's metatable into the table on top. */
void mcp_proc_open_lib(lua_State *L);
/* Shutdown: every child gets its stdin closed and SIGTERM, then SIGKILL
 * after 2 s; no child can be started afterwards. The loop runs until the
 * last one is reaped. */
void mcp_proc_close_all(void);

#endif
