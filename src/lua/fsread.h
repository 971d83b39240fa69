/* Non-blocking file system reads for handlers: ctx:read_file, ctx:list_dir,
 * ctx:realpath. Each runs on libuv's thread pool as an operation of the call
 * (op.h) and waits until done (mcp_op_wait: under mcp.all too); it returns
 * the value, or nil, message, code (fail.h: "not_found", with the libuv name
 * in the message, e.g. "read_file x: no such file or directory (ENOENT)").
 * A cancel wakes the wait at once with nil, "cancelled: <reason>",
 * "cancelled"; the request still in the thread pool is cancelled where libuv
 * can, and otherwise finishes there and its result is dropped. */
#ifndef MCP_FSREAD_H
#define MCP_FSREAD_H

#include <stddef.h>

#include <lua.h>

#include "sched.h"

#define MCP_FSREAD_MAX_BYTES ((size_t)64 << 20)   /* default max_bytes of read_file */

/* The whole content of a regular file of at most max_bytes. */
int mcp_fsread_file(lua_State *L, mcp_call *c, const char *path, size_t max_bytes);
/* The entries of a directory, sorted by name: {{name=, type=}, ...}, where
 * type is "file", "dir", "link" or "other". */
int mcp_fsread_dir(lua_State *L, mcp_call *c, const char *path);
/* The canonical absolute path: symlinks, "." and ".." resolved. */
int mcp_fsread_realpath(lua_State *L, mcp_call *c, const char *path);

#endif
