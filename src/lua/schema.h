/* Tool input validation, compiled once per schema (schema.c). */
#ifndef MCP_SCHEMA_H
#define MCP_SCHEMA_H

#include <lua.h>

/* Adds validate (core.validate) to the core table on top of the stack. */
void mcp_schema_open_lib(lua_State *L);
/* Push the compiled form of the schema table at idx (compiled on first use,
 * then cached). Raises on a compile error. */
void mcp_schema_push_compiled(lua_State *L, int schema);
/* Check the value at index value against the compiled schema at
 * compiled_idx: 1; or 0 with the message ("path: why") pushed. */
int mcp_schema_check(lua_State *L, int compiled_idx, int value);

#endif
