/* The stdio transport. It owns the one stdio session. */
#ifndef MCP_STDIO_TRANSPORT_H
#define MCP_STDIO_TRANSPORT_H

#include <uv.h>

/* Keep fds 0 and 1 for the transport, point fd 0 at /dev/null and fd 1 at
 * stderr: before plugins load. */
int mcp_stdio_set_aside(void);
/* Start reading stdin (after mcp_stdio_set_aside); on_eof runs once input ends or stdout fails. */
int mcp_stdio_start(uv_loop_t *loop, void (*on_eof)(void));
void mcp_stdio_stop_reading(void);
/* Flush, wait for pending writes, close the handles, then call on_closed. */
void mcp_stdio_close(void (*on_closed)(void));
void mcp_stdio_free(void);

#endif
