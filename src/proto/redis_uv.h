/* hiredis's asynchronous contexts on a libuv loop. */
#ifndef MCP_REDIS_UV_H
#define MCP_REDIS_UV_H

#include <hiredis/async.h>
#include <uv.h>

/* Poll ac's socket on loop from now on, until hiredis frees ac. 0, or -1. */
int mcp_redis_uv_attach(redisAsyncContext *ac, uv_loop_t *loop);

#endif
