/* Helpers shared by ctx:spawn (spawn.c) and mcp.proc (proc.c). */
#include <string.h>

#include <lauxlib.h>

#include "child.h"
#include "fail.h"

extern char **environ;

const char *mcp_child_anchored(lua_State *L, int anchor, int idx, const char *who, const char *what) {
  const char *s;
  if (lua_type(L, idx) != LUA_TSTRING && lua_type(L, idx) != LUA_TNUMBER)
    mcp_raise(L, "%s: %s must be a string", who, what);
  lua_pushvalue(L, idx);
  s = lua_tostring(L, -1);
  lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
  return s;
}

/* A variable a sandboxed plugin's child may not be given: the loader's. */
static int loader_var(const char *name) {
  static const char *const names[] = { "GCONV_PATH", "LOCPATH", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN",
                                       "NLSPATH", "TMPDIR", NULL };
  if (strncmp(name, "LD_", 3) == 0 || strncmp(name, "DYLD_", 5) == 0 || strncmp(name, "MALLOC_", 7) == 0 ||
      strncmp(name, "GLIBC_", 6) == 0)
    return 1;
  for (int i = 0; names[i]; i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

/* Does the server's variable e (NAME=value) go to a confined child? */
static int confined_keeps(const char *e) {
  return strncmp(e, "PATH=", 5) == 0;
}

const char **mcp_child_env(lua_State *L, int opts, int anchor, const char *who, int confined) {
  const char **envp;
  size_t n = 0, k = 0;
  int env;
  if (lua_getfield(L, opts, "env") == LUA_TNIL) {
    if (!confined) {
      lua_pop(L, 1);
      return NULL;                     /* inherit */
    }
    lua_pop(L, 1);
    lua_newtable(L);
  }
  env = lua_gettop(L);
  if (!lua_istable(L, env)) mcp_raise(L, "%s: opts.env must be a table", who);
  for (lua_pushnil(L); lua_next(L, env); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING || strchr(lua_tostring(L, -2), '=') != NULL ||
        (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER &&
         !(lua_isboolean(L, -1) && !lua_toboolean(L, -1))))
      mcp_raise(L, "%s: opts.env must map names (without '=') to strings (or false)", who);
    n++;
  }
  for (char **e = environ; *e; e++) n++;
  envp = lua_newuserdatauv(L, (n + 1) * sizeof *envp, 0);
  lua_rawseti(L, anchor, 0);           /* anchor[0] = the array */
  for (char **e = environ; *e; e++) {  /* the server's, where opts.env does not name it */
    const char *eq = strchr(*e, '=');
    if (eq == NULL || (confined && !confined_keeps(*e))) continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    if (lua_rawget(L, env) == LUA_TNIL) envp[k++] = *e;
    lua_pop(L, 1);
  }
  for (lua_pushnil(L); lua_next(L, env); lua_pop(L, 1)) {
    if (lua_isboolean(L, -1) || (confined && loader_var(lua_tostring(L, -2)))) continue;
    lua_pushfstring(L, "%s=%s", lua_tostring(L, -2), lua_tostring(L, -1));
    envp[k++] = lua_tostring(L, -1);
    lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
  }
  envp[k] = NULL;
  lua_pop(L, 1);
  return envp;
}

void mcp_child_options(uv_process_options_t *o, uv_stdio_container_t stdio[3], const char **argv,
                       const char **envp, const char *cwd, uv_exit_cb on_exit) {
  memset(o, 0, sizeof *o);
  memset(stdio, 0, 3 * sizeof *stdio);
  o->exit_cb = on_exit;
  o->file = argv[0];
  o->args = (char **)argv;
  o->env = (char **)envp;
  o->cwd = cwd;
  o->flags = UV_PROCESS_DETACHED;      /* its own process group, signalled as one */
  o->stdio = stdio;
  o->stdio_count = 3;
}

void mcp_child_kill(uv_process_t *proc, int sig) {
  if (uv_kill(-proc->pid, sig) != 0) uv_process_kill(proc, sig);
}

void mcp_child_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char chunk[65536];
  (void)h; (void)hint;
  buf->base = chunk;
  buf->len = sizeof chunk;
}
