/* Helpers shared by ctx:spawn (spawn.c) and mcp.proc (proc.c). */
#include <string.h>

#include <lauxlib.h>

#include "child.h"

const char *mcp_child_anchored(lua_State *L, int anchor, int idx, const char *who, const char *what) {
  const char *s;
  if (lua_type(L, idx) != LUA_TSTRING && lua_type(L, idx) != LUA_TNUMBER)
    luaL_error(L, "%s: %s must be a string", who, what);
  lua_pushvalue(L, idx);
  s = lua_tostring(L, -1);
  lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
  return s;
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
