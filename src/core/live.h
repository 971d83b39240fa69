/* The calls as they run, for a watcher (the console, src/net/console.c):
 * each call's turning points as JSON events, the live ones on demand, and
 * a cancel by the id an event gave. Nothing of it runs until the first
 * watch; after that, one branch per turning point while nobody watches. */
#ifndef MCP_LIVE_H
#define MCP_LIVE_H

#include "buf.h"

/* Send every call event to sink (a JSON object's text) from now; NULL stops. */
void mcp_live_watch(void (*sink)(const char *json, size_t len));
/* The live tools/call calls, a JSON array of the same objects. */
void mcp_live_calls(mcp_buf *b);
/* The watcher's sink, NULL while nobody watches: the one branch a caller
 * pays. A call's progress (lmcp_client.c, ctx:progress) is told this way. */
extern void (*mcp_live_sink)(const char *json, size_t len);
struct mcp_call;
void mcp_live_progress(struct mcp_call *c);
/* Cancel the live call whose event id is id, as notifications/cancelled
 * would, with reason. 0, or -1 when no live call has that id. */
int mcp_live_cancel(const char *id, const char *reason);
/* Events built since the start (/metrics: proves none is built unwatched). */
extern unsigned long long mcp_live_built;

#endif
