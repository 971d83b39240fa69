/* The core's face to the program: its init and close, which register limit.c,
 * stats.c and op.c into sched.c (sched_int.h), and what the other layers ask of
 * lua/mcp/server.lua outside any call (capabilities, a tool's headers and
 * scopes, hot reload, a session's end). */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "json.h"
#include "limit.h"
#include "log.h"
#include "op.h"
#include "sched_int.h"
#include "semconv.h"
#include "stats.h"
#include "trace.h"

static struct {
  lua_State *L;
  int server_ref, methods_ref;
} C;

static void reset_due(void);

int mcp_sched_init(uv_loop_t *loop, lua_State *L, int server_ref) {
  C.L = L;
  C.server_ref = server_ref;
  lua_rawgeti(L, LUA_REGISTRYINDEX, server_ref);
  lua_getfield(L, -1, "methods");
  C.methods_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pop(L, 1);
  mcp__sched_start(loop, L, server_ref);
  mcp__reset_due_cb = reset_due;
  mcp_stats_init();
  mcp_limit_init();
  mcp_ops_init();
  mcp_semconv_init();
  return 0;
}

void mcp_sched_trace(const mcp_sampler *sampler, void (*sink)(mcp_span *s)) {
  mcp__trace_start(sampler, sink);
  mcp__sched_register(&mcp__trace_type);
}

/* server.capabilities(): the capabilities object; {} if it fails. */
static int push_capabilities(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.server_ref);
  lua_getfield(L, -1, "capabilities");
  lua_call(L, 0, 1);
  return 1;
}

void mcp_sched_capabilities(mcp_buf *b) {
  char err[128];
  int top = lua_gettop(C.L);
  lua_pushcfunction(C.L, push_capabilities);
  if (lua_pcall(C.L, 0, 1, 0) != LUA_OK || mcp_json_encode(C.L, -1, b, err, sizeof err) != 0) {
    mcp_error("capabilities: %s", lua_isstring(C.L, -1) ? lua_tostring(C.L, -1) : err);
    mcp_buf_adds(b, "{}");
  }
  lua_settop(C.L, top);
}

/* server[name](): what it returns, as JSON (the console's views). */
static int push_server_call(lua_State *L) {
  const char *name = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.server_ref);
  lua_getfield(L, -1, name);
  lua_call(L, 0, 1);
  return 1;
}

int mcp_sched_server_json(const char *name, mcp_buf *b) {
  char err[128];
  int top = lua_gettop(C.L), r = 0;
  lua_pushcfunction(C.L, push_server_call);
  lua_pushlightuserdata(C.L, (void *)name);
  if (lua_pcall(C.L, 1, 1, 0) != LUA_OK || mcp_json_encode(C.L, -1, b, err, sizeof err) != 0) {
    mcp_error("%s: %s", name, lua_isstring(C.L, -1) ? lua_tostring(C.L, -1) : err);
    r = -1;
  }
  lua_settop(C.L, top);
  return r;
}

/* server.param_headers(tool): its x-mcp-header declarations, or nil. */
static int push_param_headers(lua_State *L) {
  const char *tool = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.server_ref);
  lua_getfield(L, -1, "param_headers");
  lua_pushstring(L, tool);
  lua_call(L, 1, 1);
  return 1;
}

json_t *mcp_sched_param_headers(const char *tool) {
  mcp_buf b = MCP_BUF_INIT;
  char err[128];
  json_t *v = NULL;
  int top = lua_gettop(C.L);
  if (tool == NULL) return NULL;
  lua_pushcfunction(C.L, push_param_headers);
  lua_pushlightuserdata(C.L, (void *)tool);
  if (lua_pcall(C.L, 1, 1, 0) != LUA_OK)
    mcp_error("param_headers: %s", lua_tostring(C.L, -1));
  else if (!lua_isnil(C.L, -1) && mcp_json_encode(C.L, -1, &b, err, sizeof err) != 0)
    mcp_error("param_headers: %s", err);
  else if (b.len > 0)
    v = mcp_json_parse(b.data, b.len, NULL, 0);
  lua_settop(C.L, top);
  mcp_buf_free(&b);
  return v;
}

/* server.tool_scopes(tool): a string, or nil. */
static int push_tool_scopes(lua_State *L) {
  const char *tool = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.server_ref);
  lua_getfield(L, -1, "tool_scopes");
  if (tool != NULL) lua_pushstring(L, tool); else lua_pushnil(L);
  lua_call(L, 1, 1);
  return 1;
}

char *mcp_sched_tool_scopes(const char *tool) {
  char *v = NULL;
  int top = lua_gettop(C.L);
  lua_pushcfunction(C.L, push_tool_scopes);
  lua_pushlightuserdata(C.L, (void *)tool);
  if (lua_pcall(C.L, 1, 1, 0) != LUA_OK) mcp_error("tool_scopes: %s", lua_tostring(C.L, -1));
  else if (lua_type(C.L, -1) == LUA_TSTRING && (v = strdup(lua_tostring(C.L, -1))) == NULL) abort();
  lua_settop(C.L, top);
  return v;
}

static int call_session_closed(lua_State *L) {
  lua_Integer id = lua_tointeger(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.server_ref);
  if (lua_getfield(L, -1, "session_closed") != LUA_TFUNCTION) return 0;
  lua_pushinteger(L, id);
  lua_call(L, 1, 0);
  return 0;
}

void mcp_sched_session_closed(long long sid) {
  if (C.L == NULL) return;
  lua_pushcfunction(C.L, call_session_closed);
  lua_pushinteger(C.L, sid);
  if (lua_pcall(C.L, 1, 0, 0) != LUA_OK) {
    mcp_error("session_closed: %s", lua_tostring(C.L, -1));
    lua_pop(C.L, 1);
  }
}

static int call_reset_due(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.server_ref);
  lua_getfield(L, -1, "reset_due");
  lua_call(L, 0, 0);
  return 0;
}

/* server.reset_due(), protected: sandboxed plugins over their memory
 * loaded afresh (sched.c calls it once a loop turn's calls have run). */
static void reset_due(void) {
  lua_pushcfunction(C.L, call_reset_due);
  if (lua_pcall(C.L, 0, 0, 0) != LUA_OK) {
    mcp_error("reset_due: %s", lua_tostring(C.L, -1));
    lua_pop(C.L, 1);
  }
}

/* server.rescan{[dir] = true, ...}: hot reload, protected. */
static int call_rescan(lua_State *L) {
  const char **dirs = lua_touserdata(L, 1);
  int n = (int)lua_tointeger(L, 2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.server_ref);
  lua_getfield(L, -1, "rescan");
  lua_createtable(L, 0, n);
  for (int i = 0; i < n; i++) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, dirs[i]);
  }
  lua_call(L, 1, 0);
  return 0;
}

void mcp_sched_rescan(const char **lib_dirs, int n) {
  lua_pushcfunction(C.L, call_rescan);
  lua_pushlightuserdata(C.L, (void *)lib_dirs);
  lua_pushinteger(C.L, n);
  if (lua_pcall(C.L, 2, 0, 0) != LUA_OK) {
    mcp_error("reload: %s", lua_tostring(C.L, -1));
    lua_pop(C.L, 1);
  }
  lua_gc(C.L, LUA_GCSTEP, 0);    /* old plugin versions become garbage: collect a step */
}

int mcp_sched_has_method(const char *method) {
  int found;
  lua_rawgeti(C.L, LUA_REGISTRYINDEX, C.methods_ref);
  found = lua_getfield(C.L, -1, method) != LUA_TNIL;
  lua_pop(C.L, 2);
  return found;
}

void mcp_sched_close(void) {
  mcp__sched_stop();
  mcp_limit_close();
}
