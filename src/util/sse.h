/* An incremental parser of Server-Sent Events (text/event-stream, as the
 * WHATWG HTML standard reads it): bytes in any slices, events out. */
#ifndef MCP_SSE_H
#define MCP_SSE_H

#include <stddef.h>

#include "buf.h"

/* An event or id field whose value holds a NUL is ignored (the WHATWG
 * standard says so of ids; names are C strings here). */
typedef struct {
  const char *event, *data, *id;       /* NUL-terminated; event "message" unless named */
  size_t data_len;
} mcp_sse_event;

/* Returns 0 to go on, anything else to stop (mcp_sse_feed returns it). */
typedef int (*mcp_sse_cb)(void *ud, const mcp_sse_event *ev);

/* The owner calls mcp_sse_free. Zeroed is initialized. */
typedef struct {
  mcp_buf line;                        /* the line being read */
  mcp_buf data, event, id;             /* the event being read; id persists */
  size_t max;                          /* longest line or event; 0 = 1 MiB */
  unsigned has_data : 1;
  unsigned after_cr : 1;               /* a \n right after \r ends no line */
} mcp_sse;

/* Feed n bytes. Returns 0, the callback's value that stopped it, or -1
 * when a line or an event is longer than max. */
int mcp_sse_feed(mcp_sse *p, const char *s, size_t n, mcp_sse_cb cb, void *ud);
void mcp_sse_free(mcp_sse *p);

#endif
