/* The server in a fuzz target's process (server.h), set up as main.c does. */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>

#include "config.h"
#include "flags.h"
#include "lmcp.h"
#include "log.h"
#include "sched.h"
#include "server.h"

static uv_loop_t loop;
static lua_State *L;

/* stack: -> server module */
static int load_server(lua_State *Ls) {
  mcp_lua_open(Ls);
  luaL_requiref(Ls, "mcp.flags", luaopen_mcp_flags, 0);
  lua_pop(Ls, 1);
  lua_getglobal(Ls, "require");
  lua_pushliteral(Ls, "mcp.server");
  lua_call(Ls, 1, 1);                       /* stack: server */
  lua_getfield(Ls, -1, "load");
  lua_createtable(Ls, 1, 0);
  lua_pushliteral(Ls, LUAMCP_SOURCE_DIR "/test/fuzz/plugins");
  lua_rawseti(Ls, -2, 1);
  lua_call(Ls, 1, 0);                       /* server.load{dirs} */
  return 1;
}

uv_loop_t *fuzz_server(void) {
  json_t *decls;
  if (L != NULL) return &loop;
  mcp_flags_defaults();
  if (getenv("FUZZ_VERBOSE") == NULL) mcp_log_threshold = MCP_LOG_CRITICAL;   /* inputs make many errors */
  uv_loop_init(&loop);
  L = lua_newstate(mcp_sched_alloc, NULL);
  if (L == NULL) abort();
  *(void **)lua_getextraspace(L) = NULL;
  lua_pushcfunction(L, load_server);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "fuzz: cannot start the server: %s\n", lua_tostring(L, -1));
    abort();
  }
  mcp_sched_init(&loop, L, luaL_ref(L, LUA_REGISTRYINDEX));
  if ((decls = mcp_sched_param_headers("mirror")) == NULL) {
    fprintf(stderr, "fuzz: the fixture plugin did not load (FUZZ_VERBOSE=1 says why)\n");
    abort();
  }
  json_decref(decls);
  return &loop;
}
