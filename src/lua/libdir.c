/* Where the Lua library is: relative to the binary (uv_exepath reads
 * /proc/self/exe), with the source tree as the fallback of a build. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <uv.h>

#include "libdir.h"
#include "log.h"

#ifndef LUAMCP_LUA_REL
#define LUAMCP_LUA_REL "../share/luamcp/lua"     /* cmake/install.cmake sets it */
#endif

static char dir[PATH_MAX];

static int has_library(const char *d) {
  char probe[PATH_MAX + 16];
  uv_fs_t req;
  int r;
  snprintf(probe, sizeof probe, "%s/mcp/init.lua", d);
  r = uv_fs_stat(NULL, &req, probe, NULL);
  uv_fs_req_cleanup(&req);
  return r == 0;
}

/* BINDIR/LUAMCP_LUA_REL into dir; 1 if the library is there. */
static int beside_binary(void) {
  char exe[PATH_MAX];
  size_t n = sizeof exe;
  char *slash;
  if (uv_exepath(exe, &n) != 0 || (slash = strrchr(exe, '/')) == NULL) return 0;
  *slash = '\0';
  if ((size_t)snprintf(dir, sizeof dir, "%s/%s", exe, LUAMCP_LUA_REL) >= sizeof dir) return 0;
  return has_library(dir);
}

const char *mcp_lua_dir(void) {
  const char *env = getenv("LUAMCP_LUA_DIR");
  if (env != NULL && env[0] != '\0') return env;
  if (dir[0] == '\0' && !beside_binary()) snprintf(dir, sizeof dir, "%s", LUAMCP_LUA_DIR);
  return dir;
}

/* stack: -> (unchanged) */
void mcp_lua_path(lua_State *L) {
  const char *d = mcp_lua_dir();
  mcp_debug("Lua library: %s", d);
  lua_getglobal(L, "package");                 /* stack: package */
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", d, d);
  lua_getfield(L, -2, "path");
  lua_concat(L, 2);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
}
