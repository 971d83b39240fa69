/* What luamcp pack (lua/mcp/cli_pack.lua) needs from C: the binary's path,
 * where an installed tree keeps its Lua library and bundled libraries
 * relative to it, glibc's version, a directory's entries, and the zip
 * writer (src/util/zip.c). */
#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <uv.h>

#include "cli_pack.h"
#include "libdir.h"
#include "zip.h"

#ifndef LUAMCP_BUNDLE_LIBS
#define LUAMCP_BUNDLE_LIBS ""           /* built without the bundle's rpath: CMakeLists.txt sets it */
#endif

static int fail(lua_State *L, const char *what, const char *why) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", what, why);
  return 2;
}

/* exe(): the running binary's path. */
static int l_exe(lua_State *L) {
  char exe[PATH_MAX];
  size_t n = sizeof exe;
  int r = uv_exepath(exe, &n);
  if (r != 0) return fail(L, "/proc/self/exe", uv_strerror(r));
  lua_pushlstring(L, exe, n);
  return 1;
}

/* scandir(path): {name = "file"|"dir"|"other"}, symbolic links followed;
 * or nil, message. */
static int l_scandir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  uv_dirent_t ent;
  int r = uv_fs_scandir(NULL, &req, path, 0, NULL);
  if (r < 0) {
    uv_fs_req_cleanup(&req);
    return fail(L, path, uv_strerror(r));
  }
  lua_newtable(L);
  while (uv_fs_scandir_next(&req, &ent) != UV_EOF) {
    const char *kind = "other";
    char full[PATH_MAX];
    uv_fs_t st;
    if ((size_t)snprintf(full, sizeof full, "%s/%s", path, ent.name) < sizeof full) {
      if (uv_fs_stat(NULL, &st, full, NULL) == 0) {
        uint64_t type = st.statbuf.st_mode & S_IFMT;
        kind = type == S_IFDIR ? "dir" : type == S_IFREG ? "file" : "other";
      }
      uv_fs_req_cleanup(&st);
    }
    lua_pushstring(L, kind);
    lua_setfield(L, -2, ent.name);
  }
  uv_fs_req_cleanup(&req);
  return 1;
}

/* zip(path, entries, mtime): entries = {{name, data, mode}, ...}; true, or
 * nil, message (a partial archive is removed). */
static int l_zip(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer n, mtime = luaL_optinteger(L, 3, (lua_Integer)time(NULL));
  mcp_zip *z;
  int err = 0;
  luaL_checktype(L, 2, LUA_TTABLE);
  if ((z = mcp_zip_open(path, (time_t)mtime)) == NULL) return fail(L, path, strerror(errno));
  n = luaL_len(L, 2);
  for (lua_Integer i = 1; i <= n && err == 0; i++) {
    size_t len;
    const char *name, *data;
    lua_rawgeti(L, 2, i);
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    lua_rawgeti(L, -3, 3);
    name = lua_tostring(L, -3);            /* no raise here: the archive is open */
    data = lua_tolstring(L, -2, &len);
    if (name == NULL || data == NULL) err = EINVAL;
    else if (mcp_zip_add(z, name, data, len, (unsigned)(lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0644)) != 0) err = errno ? errno : EIO;
    lua_pop(L, 4);
  }
  if (mcp_zip_close(z) != 0 && err == 0) err = errno ? errno : EIO;
  if (err != 0) {
    remove(path);
    return fail(L, path, strerror(err));
  }
  lua_pushboolean(L, 1);
  return 1;
}

void mcp_cli_pack_open(lua_State *L) {
  static const luaL_Reg fns[] = {
    { "exe", l_exe }, { "scandir", l_scandir }, { "zip", l_zip }, { NULL, NULL }
  };
  luaL_setfuncs(L, fns, 0);
  lua_pushstring(L, mcp_lua_rel());
  lua_setfield(L, -2, "lua_rel");
  lua_pushstring(L, LUAMCP_BUNDLE_LIBS);
  lua_setfield(L, -2, "bundle_libs");
  lua_pushstring(L, gnu_get_libc_version());
  lua_setfield(L, -2, "libc_version");
}
