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

const char *mcp_lua_rel(void) {
  return LUAMCP_LUA_REL;
}

const char *mcp_lua_dir(void) {
  const char *env = getenv("LUAMCP_LUA_DIR");
  if (env != NULL && env[0] != '\0') return env;
  if (dir[0] == '\0' && !beside_binary()) snprintf(dir, sizeof dir, "%s", LUAMCP_LUA_DIR);
  return dir;
}

int mcp_share_dir(const char *what, char *buf, size_t size) {
  char joined[PATH_MAX + 32];
  uv_fs_t req;
  int r;
  if (strcmp(what, "lua") == 0) snprintf(joined, sizeof joined, "%s", mcp_lua_dir());
  else if (strcmp(what, "types") == 0 || strcmp(what, "plugins") == 0 || strcmp(what, "console") == 0)
    snprintf(joined, sizeof joined, "%s/../%s", mcp_lua_dir(), what);
  else return UV_EINVAL;
  r = uv_fs_realpath(NULL, &req, joined, NULL);
  if (r == 0 && (size_t)snprintf(buf, size, "%s", (const char *)req.ptr) >= size) r = UV_ENAMETOOLONG;
  if (r < 0) snprintf(buf, size, "%s", joined);
  uv_fs_req_cleanup(&req);
  return r;
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
