/* A weak table: a registry's map from Lua objects that must not keep them. */
#ifndef MCP_WEAK_H
#define MCP_WEAK_H

#include <lua.h>

/* stack: -> table, whose keys (mode "k") or values ("v") are weak */
static inline void mcp_weak_table(lua_State *L, const char *mode) {
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushstring(L, mode);
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
}

#endif
