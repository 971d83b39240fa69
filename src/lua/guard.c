/* The one piece of a plugin's code the host calls on a value it was handed
 * outside that plugin's own frames: the __tostring of an error object (or
 * of a userdata) that result.lua's message_of turns into a message. It may
 * be reached where no call's slice, deadline or limits apply (respond.c
 * reads a raised error after the handler's coroutine died), so it runs in a
 * thread of its own with a count hook that ends it after GUARD_NS. Every
 * other value the host reads from a plugin it reads raw: see
 * docs/development/ARCHITECTURE.md, "What the host reads from a plugin". */
#include <lauxlib.h>
#include <uv.h>

#include "lmcp_int.h"

#define GUARD_NS    50000000ull     /* 50 ms */
#define GUARD_COUNT 1000            /* instructions between checks */

static uint64_t guard_end;           /* the guarded run's end (nested runs save it) */
static int guard_over;               /* the hook ended the run */

/* Past its end, the hook raises on every instruction: a pcall inside the
 * __tostring cannot hold the run (the next instruction raises again). */
static void guard_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  if (uv_hrtime() < guard_end) return;
  lua_sethook(L, guard_hook, LUA_MASKCOUNT, 1);
  guard_over = 1;
  lua_pushliteral(L, "did not return within 50 ms");
  lua_error(L);
}

static int tostring_in(lua_State *L) {
  luaL_tolstring(L, 1, NULL);
  return 1;
}

/* core.guarded_tostring(v): tostring(v) under the guard: the string; or
 * nil and why not ("did not return within 50 ms", "yielded", "failed: ..."). */
static int l_guarded_tostring(lua_State *L) {
  uint64_t saved = guard_end;
  int status, nres = 0, over;
  lua_State *T;
  lua_settop(L, 1);
  T = lua_newthread(L);                                 /* 2: left to the collector */
  lua_pushcfunction(T, tostring_in);
  lua_pushvalue(L, 1);
  lua_xmove(L, T, 1);
  guard_end = uv_hrtime() + GUARD_NS;
  guard_over = 0;
  lua_sethook(T, guard_hook, LUA_MASKCOUNT, GUARD_COUNT);
  status = lua_resume(T, L, 1, &nres);
  over = guard_over;
  guard_end = saved;
  guard_over = 0;
  if (status == LUA_OK && nres >= 1 && lua_type(T, -1) == LUA_TSTRING) {
    lua_xmove(T, L, 1);
    return 1;
  }
  lua_pushnil(L);
  if (over) lua_pushliteral(L, "did not return within 50 ms");
  else if (status == LUA_YIELD) lua_pushliteral(L, "yielded");
  else if (status != LUA_OK && lua_type(T, -1) == LUA_TSTRING) lua_pushfstring(L, "failed: %s", lua_tostring(T, -1));
  else lua_pushliteral(L, "failed");
  return 2;
}

void mcp__guard_open(lua_State *L) {
  lua_pushcfunction(L, l_guarded_tostring);
  lua_setfield(L, -2, "guarded_tostring");
}
