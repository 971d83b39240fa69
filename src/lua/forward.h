/* The forward path: a mounted tool's call to its stdio upstream written
 * and answered in C, the call held with no coroutine (forward.c). */
#ifndef MCP_FORWARD_H
#define MCP_FORWARD_H

#include <lua.h>

#include "sched.h"

/* A client's link to the connection its calls may be forwarded on. */
typedef struct mcp_fwd_link mcp_fwd_link;

/* The link at idx (core.forward_link's), or NULL. */
mcp_fwd_link *mcp_forward_link_at(lua_State *L, int idx);
/* c's tools/call of the upstream's tool name with args (JSON text, one
 * line), written upstream on link's connection: 1, and c is to be held
 * (MCP_PATH_HELD) until the answer; 0 when no connection takes it now
 * (the handler's Lua does the call). */
int mcp_forward_send(mcp_call *c, mcp_fwd_link *link, const char *name, size_t nlen, const char *args,
                     size_t alen);
/* The function in front of a held call's handler, started when its
 * request's outcome is not a result (fastpath.c): (handler, args, ctx, up),
 * up = {name =, what =} (mount.lua); what the handler would return, from
 * mount.lua's core.forward_outcome. */
int mcp_forward_handler(lua_State *L);
/* The same for a held call whose tool is gone (a reload took it): the
 * upstream gone (its client closed) gives mount.lua's isError result saying
 * why, counted as client.lua counts it; any other outcome raises. */
int mcp_forward_orphan(lua_State *L);
/* core.forward_* into the table on top; proc.c's line hook. */
void mcp_forward_open_lib(lua_State *L);

#endif
