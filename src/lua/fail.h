/* Failures as luamcp's functions return them: nil, message, code, where code
 * is one word of a short list (README, "Results and errors": cancelled,
 * timeout, not_found, exists, denied, invalid, too_large, busy, constraint,
 * unreachable, tls, closed, protocol, rpc, unsupported, io) and the message
 * keeps the system's own name, e.g. "open x: no such file or directory
 * (ENOENT)". */
#ifndef MCP_FAIL_H
#define MCP_FAIL_H

#include <lua.h>

typedef struct mcp_call mcp_call;

/* stack: -> nil message code; returns 3. */
int mcp_push_fail(lua_State *L, const char *code, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* The triple of a wait a cancel ended: nil, "cancelled: <reason>",
 * "cancelled" (the reason of c's stop; c may be NULL). Returns 3. */
int mcp_push_cancelled(lua_State *L, const mcp_call *c);
/* Raise a string error naming the line of the Lua code that called the
 * running C function (luaL_error names the C function itself: nothing). */
int mcp_raise(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The code of a libuv error (UV_ENOENT -> "not_found"). */
const char *mcp_code_uv(int err);
/* The code of an SQLite result code, primary or extended. */
const char *mcp_code_sqlite(int rc);
/* The code of a CURLcode. */
const char *mcp_code_curl(int rc);

#endif
