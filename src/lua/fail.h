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
/* Push "file:line: " of the code that called the running C function, the
 * first caller outside luamcp's own Lua library (lua/mcp/): the plugin's
 * line, also when a wrapper of the library called the C function. */
void mcp_where(lua_State *L);
/* Raise a string error with mcp_where's position. */
int mcp_raise(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The index of the first argument of a C function that is also a ctx
 * method and takes no table first: 2 when called with the ctx (a table) at
 * 1, else 1. luaL_argerror then numbers the arguments as the plugin wrote
 * them (ctx:sleep("x"): bad argument #1 to 'sleep'). */
int mcp_self(lua_State *L);
/* The code of a libuv error (UV_ENOENT -> "not_found"). */
const char *mcp_code_uv(int err);
/* The code of an SQLite result code, primary or extended. */
const char *mcp_code_sqlite(int rc);
/* The code of a CURLcode. */
const char *mcp_code_curl(int rc);

#endif
