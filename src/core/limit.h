/* Per-tool limits: how many calls of a tool run at once (max_concurrent),
 * how many more wait for a slot (queue, first come first served), how fast
 * they may come (rate, a token bucket), and the progress heartbeat of its
 * calls. sched.c asks, through the row
 * mcp_limit_init registers, before it starts a tools/call and says when one ends. */
#ifndef MCP_LIMIT_H
#define MCP_LIMIT_H

#include <stddef.h>

#include "buf.h"

typedef struct mcp_call mcp_call;
typedef struct mcp_limit mcp_limit;

/* Set a tool's limits (0: none). rate: "R/s" or "R/m" (R > 0), or NULL.
 * Returns 0, or -1 for a rate not of that form. Calls waiting for a slot
 * start at once if the new max_concurrent lets them. */
int mcp_limit_set(const char *tool, int max_concurrent, int queue, const char *rate,
                  double heartbeat);
/* The entry of a tool (an interned name), created on first use. Entries
 * live as long as the process: calls in flight point at theirs across
 * reloads, which only change its settings. */
mcp_limit *mcp_limit_of(const char *tool);
/* Register limit.c's row into sched.c (it admits, queues and lets go of
 * the calls of tools with limits, and gives their heartbeat period). */
void mcp_limit_init(void);
/* Per tool: calls in flight, queued, refused (for /metrics). */
void mcp_limit_collect(mcp_buf *b);
void mcp_limit_close(void);

#endif
