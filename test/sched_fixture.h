/* The scheduler on a real loop and a real Lua state, for test_sched.c and
 * test_op.c: a tiny server module in Lua (dispatch, methods, raised) whose
 * handlers run as real coroutines, and a fake owner of the calls (the
 * callback interface a session implements) that records what the
 * scheduler tells it. Each test calls fixture_open and ends with
 * fixture_close, which proves no call is left and the loop is empty. */
#ifndef MCP_SCHED_FIXTURE_H
#define MCP_SCHED_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <lauxlib.h>
#include <lualib.h>
#include <uv.h>

#include "config.h"
#include "deadline.h"
#include "limit.h"
#include "log.h"
#include "metrics.h"
#include "op.h"
#include "sched.h"
#include "stats.h"
#include "test.h"

/* The server module: `handlers` by method; tools/call runs `tools[name]`.
 * loop_turns() counts the loop's iterations (a prepare handle). */
static const char server_lua[] =
  "local core = ...\n"
  "local M = { methods = {} }\n"
  "handlers, tools = {}, {}\n"
  "setmetatable(M.methods, { __index = function(_, k) return handlers[k] and true end })\n"
  "function M.dispatch(method, params, id, sid)\n"
  "  if method == 'tools/call' then return tools[params.name](params.arguments or {}, id) end\n"
  "  return handlers[method](params, id, sid)\n"
  "end\n"
  "function M.raised(err)\n"
  "  if type(err) == 'table' then return err.code, err.message, err.data end\n"
  "  return nil, (tostring(err):gsub('^[^:]*:%d+: ', ''))\n"
  "end\n"
  "function M.capabilities() return { tools = {} } end\n"
  "return M\n";

#define LIB_SOURCE "@/luamcp-test/mcp/"

static struct {
  uv_loop_t loop;
  uv_prepare_t turn;
  lua_State *L;
  long turns;
  /* what the owner heard */
  char *resp[32];            /* responses, in order */
  int nresp, stopping, gone;
  char stop_reason[128];     /* the first stopping's */
} F;

static void owner_respond(mcp_call *c, const char *data, size_t len) {
  if (F.nresp < 32 && (F.resp[F.nresp] = strndup(data, len)) == NULL) abort();
  F.nresp++;
}

static void owner_stopping(mcp_call *c, const char *reason) {
  if (F.stopping++ == 0) snprintf(F.stop_reason, sizeof F.stop_reason, "%s", reason);
}

static void owner_gone(mcp_call *c) { F.gone++; }

static const char *owner_session_name(const mcp_call *c) { return NULL; }

static const mcp_call_owner fake_owner = { owner_respond, owner_stopping, owner_gone,
                                           owner_session_name, NULL };

static void count_turn(uv_prepare_t *h) { F.turns++; }

static int l_loop_turns(lua_State *L) {
  lua_pushinteger(L, F.turns);
  return 1;
}

/* token(): the running call's token; with the `nested` table (coroutine ->
 * token) a handler names the coroutines it creates, as lua/mcp/init.lua does. */
static int l_token(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  if (c == NULL) return 0;
  mcp_call_token(L, c);
  return 1;
}

static void fixture_open(void) {
  int ref;
  memset(&F, 0, sizeof F);
  mcp_log_threshold = MCP_LOG_EMERGENCY;
  mcp_cfg.timeout = 0;
  mcp_cfg.grace = 1;
  uv_loop_init(&F.loop);
  uv_prepare_init(&F.loop, &F.turn);
  uv_prepare_start(&F.turn, count_turn);
  uv_unref((uv_handle_t *)&F.turn);
  F.L = lua_newstate(mcp_sched_alloc, NULL);
  *(void **)lua_getextraspace(F.L) = NULL;        /* new threads copy it: no call */
  luaL_openlibs(F.L);
  lua_pushcfunction(F.L, l_loop_turns);
  lua_setglobal(F.L, "loop_turns");
  lua_pushcfunction(F.L, l_token);
  lua_setglobal(F.L, "token");
  mcp_call_tokens_open(F.L);
  lua_setglobal(F.L, "nested");
  /* named as the host's own Lua files are: LIB_SOURCE is beside it */
  if (luaL_loadbuffer(F.L, server_lua, sizeof server_lua - 1, LIB_SOURCE "server.lua") != LUA_OK) abort();
  lua_newtable(F.L);                              /* stack: chunk core */
  mcp_op_open(F.L);
  lua_pushvalue(F.L, -1);
  lua_setglobal(F.L, "core");
  lua_call(F.L, 1, 1);
  ref = luaL_ref(F.L, LUA_REGISTRYINDEX);
  mcp_sched_init(&F.loop, F.L, ref);
}

/* Run Lua on the main state (defining handlers, looking at globals). */
static inline void lua(const char *code) {
  if (luaL_dostring(F.L, code) != LUA_OK) {
    fprintf(stderr, "lua: %s\n", lua_tostring(F.L, -1));
    abort();
  }
}

/* The value of a global as a string ("nil" when unset). */
static inline const char *global(const char *name) {
  static char v[256];
  lua_getglobal(F.L, name);
  snprintf(v, sizeof v, "%s", luaL_tolstring(F.L, -1, NULL));
  lua_pop(F.L, 2);
  return v;
}

static inline mcp_call *start(const char *key, const char *method, const char *params) {
  json_t *p = json_loads(params ? params : "{}", 0, NULL);
  mcp_call *c = mcp_call_start(&fake_owner, 1, key, strlen(key), method, p);
  json_decref(p);
  return c;
}

/* n turns of the loop, none of them blocking. */
static inline void turns(int n) {
  while (n-- > 0) uv_run(&F.loop, UV_RUN_NOWAIT);
}

/* Until no call runs and nothing is armed (waits on futures stay). */
static inline void run(void) { uv_run(&F.loop, UV_RUN_DEFAULT); }

/* The nth response, parsed (the caller decrefs), or NULL. */
static inline json_t *response(int n) {
  return n < F.nresp && F.resp[n] ? json_loads(F.resp[n], 0, NULL) : NULL;
}

/* The nth response's result.<field> or error.<field> as text ("" if none). */
static inline const char *field(int n, const char *part, const char *name) {
  static char v[512];
  json_t *r = response(n), *x = json_object_get(json_object_get(r, part), name);
  v[0] = '\0';
  if (json_is_string(x)) snprintf(v, sizeof v, "%s", json_string_value(x));
  else if (x != NULL) {
    char *s = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(v, sizeof v, "%s", s);
    free(s);
  }
  json_decref(r);
  return v;
}

static void fixture_close(void) {
  CHECK(mcp_sched_live() == 0, "%d calls still live", mcp_sched_live());
  if (mcp_sched_live() > 0) {                     /* failed: end them, not hang below */
    mcp_sched_close_all(NULL, NULL, "test over");
    run();
  }
  mcp_ops_shutdown();
  turns(2);                                       /* bury the last calls */
  mcp_sched_close();
  mcp_stats_close();
  mcp_policy_clear();
  uv_close((uv_handle_t *)&F.turn, NULL);
  lua_close(F.L);
  CHECK_LOOP_EMPTY(&F.loop);
  for (int i = 0; i < F.nresp && i < 32; i++) free(F.resp[i]);
}

#endif
