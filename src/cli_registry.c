/* luamcp registry: writes the MCP registry's server.json for this server.
 * The work is lua/mcp/cli_registry.lua's (its options, the configuration
 * file's server_card section, the bundle's SHA-256); this opens its Lua
 * state and hands it the arguments. */
#include <signal.h>
#include <stdio.h>

#include <lauxlib.h>

#include "cli_registry.h"
#include "flags.h"
#include "lmcp.h"
#include "log.h"
#include "sched.h"

static int l_panic(lua_State *L) {
  mcp_log(MCP_LOG_CRITICAL, "Lua panic: %s", lua_tostring(L, -1));
  return 0;
}

/* stack: -> the exit status of require("mcp.cli_registry").main{argv[2..]} */
static int run(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = lua_touserdata(L, 2);
  mcp_lua_open(L);
  luaL_requiref(L, "mcp.flags", luaopen_mcp_flags, 0);   /* config.lua reads the file's keys */
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mcp.cli_registry");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "main");
  lua_createtable(L, argc - 2, 0);
  for (int i = 2; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 1);
  }
  lua_call(L, 1, 1);
  return 1;
}

int mcp_cli_registry_main(int argc, char **argv) {
  lua_State *L = lua_newstate(mcp_sched_alloc, NULL);
  int code;
  if (L == NULL) return 1;
  lua_atpanic(L, l_panic);
  *(void **)lua_getextraspace(L) = NULL;
  signal(SIGPIPE, SIG_IGN);
  lua_pushcfunction(L, run);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    fprintf(stderr, "luamcp: registry: %s\n", lua_tostring(L, -1));
    code = 1;
  } else {
    code = (int)lua_tointeger(L, -1);
  }
  lua_close(L);
  return code;
}
