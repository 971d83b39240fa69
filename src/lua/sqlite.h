/* SQLite for handlers (mcp.sqlite): one connection per db, its statements
 * run one at a time on libuv's thread pool, each an operation (op.h) of the
 * call that started it. A cancel of the call interrupts the statement that
 * runs and drops the ones still queued. lua/mcp/sqlite.lua adds the waiting
 * methods (exec, query, rows, transaction). */
#ifndef MCP_SQLITE_H
#define MCP_SQLITE_H

#include <lua.h>

/* Sets sqlite (open, run, close, info, blob, methods, version) in the core
 * table on top of the stack. */
void mcp_sqlite_open_lib(lua_State *L);

#endif
