/* luamcp --config FILE: the flags it sets, read in a Lua state of its own
 * before anything starts. The plugins' settings are read by the server
 * itself (lua/mcp/server.lua), when it loads the plugins and, with --watch,
 * when the file changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "conffile.h"
#include "libdir.h"

static char *dup_or_null(const char *s) {
  char *d;
  if (s == NULL) return NULL;
  if ((d = strdup(s)) == NULL) abort();
  return d;
}

/* stack: path conf open_keys -> (empty) */
static int read_flags(lua_State *L) {
  const char *path = lua_tostring(L, 1);
  mcp_conffile *conf = lua_touserdata(L, 2);
  int n;
  luaL_openlibs(L);
  mcp_lua_path(L);
  luaL_requiref(L, "mcp.flags", lua_tocfunction(L, 3), 0);
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mcp.config");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "flags");
  lua_pushstring(L, path);
  lua_call(L, 1, 1);                           /* stack: path conf config flags */
  n = (int)luaL_len(L, -1);
  if ((conf->opt = calloc((size_t)n + 1, sizeof *conf->opt)) == NULL) abort();
  for (int i = 1; i <= n; i++) {
    mcp_conffile_opt *o = &conf->opt[conf->n++];
    lua_rawgeti(L, -1, i);                     /* stack: ... flags {flag, value, where} */
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    lua_rawgeti(L, -3, 3);
    o->flag = dup_or_null(lua_tostring(L, -3));
    o->value = dup_or_null(lua_tostring(L, -2));
    o->where = dup_or_null(lua_tostring(L, -1));
    lua_pop(L, 4);
  }
  return 0;
}

int mcp_conffile_read(const char *path, lua_CFunction open_keys, mcp_conffile *conf) {
  lua_State *L = luaL_newstate();
  int status = 0;
  memset(conf, 0, sizeof *conf);
  if (L == NULL) abort();
  lua_pushcfunction(L, read_flags);
  lua_pushstring(L, path);
  lua_pushlightuserdata(L, conf);
  lua_pushcfunction(L, open_keys);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "luamcp: %s\n", msg ? msg : "the configuration file raised a non-string error");
    mcp_conffile_free(conf);
    status = 2;
  }
  lua_close(L);
  return status;
}

void mcp_conffile_free(mcp_conffile *conf) {
  for (int i = 0; i < conf->n; i++) {
    free(conf->opt[i].flag);
    free(conf->opt[i].value);
    free(conf->opt[i].where);
  }
  free(conf->opt);
  conf->opt = NULL;
  conf->n = 0;
}

int mcp_conffile_bad(const char *where, const char *flag, const char *want) {
  char key[64];
  size_t i = 0;
  if (strncmp(flag, "--", 2) == 0) flag += 2;
  for (; flag[i] != '\0' && i + 1 < sizeof key; i++) key[i] = flag[i] == '-' ? '_' : flag[i];
  key[i] = '\0';
  fprintf(stderr, "luamcp: %s: bad value for %s%s\n", where, key, want);
  return 2;
}
