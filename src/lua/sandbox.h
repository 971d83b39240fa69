/* Sandboxed plugins' capabilities (issue 23): what the operator granted
 * each one (sandbox = {grants = {NAME = {...}}} in the configuration file),
 * checked in C where each operation starts (httpc.c, fsread.c, spawn.c,
 * sqlite.c; mcp.connect through core.sandbox_check). A trusted plugin has
 * no entry: every check lets it through. */
#ifndef MCP_SANDBOX_H
#define MCP_SANDBOX_H

#include <lua.h>

#include "allow.h"
#include "sched.h"

typedef enum {
  MCP_CAP_HTTP, MCP_CAP_READ, MCP_CAP_WRITE, MCP_CAP_EXEC, MCP_CAP_SQLITE, MCP_CAP_CONNECT, MCP_CAP_ENV,
  MCP_CAP_N
} mcp_cap;

/* The sandboxed plugin code on behalf of c runs for (c's, or the plugin
 * whose file is loading), or NULL when that plugin is trusted. */
const char *mcp_sandbox_plugin(const mcp_call *c);
/* May the running plugin use cap on what (a path, a program, a name)? 0,
 * or the failure pushed (nil, "sandbox: P may not ... (grant ...)",
 * "denied"), counted and logged: returns 3. */
int mcp_sandbox_check(lua_State *L, const mcp_call *c, mcp_cap cap, const char *what);
/* The http list of c's sandboxed plugin (empty when nothing is granted),
 * or NULL for a trusted one. */
const mcp_allow *mcp_sandbox_http(const mcp_call *c);
/* plugin as it is kept (interned) and its http list in *http when it is
 * sandboxed, else NULL: for what the host does for it outside its calls (a
 * mount's requests). */
const char *mcp_sandbox_of(const char *plugin, const mcp_allow **http);
/* Count and log a denial decided elsewhere (httpc.c's). */
void mcp_sandbox_denied(const char *plugin, mcp_cap cap, const char *msg);
/* The same for a limit (capability "memory_mb": what it keeps, sandbox_mem.c). */
void mcp_sandbox_denied_as(const char *plugin, const char *capability, const char *msg);
/* stack: core -> core. sandbox_set, sandbox_check, sandbox_loading, sandbox_memory. */
void mcp_sandbox_open(lua_State *L);
void mcp_sandbox_close(void);
/* The string and table functions bounded for sandboxed code (sandbox_lib.c),
 * wrapped into the global string and table tables. */
void mcp_sandbox_lib_open(lua_State *L);
/* What a sandboxed plugin keeps across calls (sandbox_mem.c): sandbox_due,
 * sandbox_measure, sandbox_over_memory. */
void mcp_sandbox_mem_open(lua_State *L);

#endif
