/* Tool input validation, compiled once per schema (schema.c). */
#ifndef MCP_SCHEMA_H
#define MCP_SCHEMA_H

#include <lua.h>

/* Adds validate (core.validate) to the core table on top of the stack. */
void mcp_schema_open_lib(lua_State *L);

#endif
