/* A call's token: a userdata naming the call, which Lua may keep longer
 * than the call lives (it is cleared when the call ends). A coroutine a
 * handler creates is mapped to its call's token in a weak-keyed registry
 * table, so that the count hook and the waits find the call it runs for. */
#include <lauxlib.h>

#include "sched_int.h"
#include "weak.h"

#define TOKEN_MT "mcp.token"
#define NESTED_KEY "mcp.nested"

void mcp_call_token(lua_State *L, mcp_call *c) {
  if (c->token_ref == LUA_NOREF) {
    mcp_call **tok = lua_newuserdatauv(L, sizeof *tok, 0);
    *tok = c;
    luaL_setmetatable(L, TOKEN_MT);
    c->token_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->token_ref);
}

/* Leaves the weak table of nested coroutines on the stack. */
void mcp_call_tokens_open(lua_State *L) {
  luaL_newmetatable(L, TOKEN_MT);
  lua_pop(L, 1);
  mcp_weak_table(L, "k");
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, NESTED_KEY);
}

mcp_call *mcp__token_call(lua_State *L) {
  mcp_call *c, **tok;
  lua_getfield(L, LUA_REGISTRYINDEX, NESTED_KEY);
  lua_pushthread(L);
  lua_rawget(L, -2);
  tok = luaL_testudata(L, -1, TOKEN_MT);
  c = tok ? *tok : NULL;
  lua_pop(L, 2);
  return c;
}

void mcp__token_drop(lua_State *L, mcp_call *c) {
  if (c->token_ref == LUA_NOREF) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->token_ref);
  *(mcp_call **)lua_touserdata(L, -1) = NULL;
  lua_pop(L, 1);
  luaL_unref(L, LUA_REGISTRYINDEX, c->token_ref);
  c->token_ref = LUA_NOREF;
}
