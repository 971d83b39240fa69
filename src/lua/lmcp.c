/* mcp.core: the C half of the Lua API, which the friendly layer (lua/mcp/)
 * wraps: the call and its ctx, and the module itself (lmcp_client.c and
 * lmcp_misc.c add their functions). */

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "config.h"
#include "fail.h"
#include "fastpath.h"
#include "forward.h"
#include "fsread.h"
#include "httpc.h"
#include "identity.h"
#include "json.h"
#include "libdir.h"
#include "lmcp.h"
#include "metrics.h"
#include "op.h"
#include "proc.h"
#include "sandbox.h"
#include "schema.h"
#include "session.h"
#include "spawn.h"
#include "server_card.h"
#include "sqlite.h"
#include "task.h"
#include "lmcp_int.h"
#include "spans.h"


static int l_cancelled(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && c->signalled);
  return 1;
}

/* in_request(): is a request's handler running (a wait is possible)? */
static int l_in_request(lua_State *L) {
  lua_pushboolean(L, current(L) != NULL);
  return 1;
}

static int l_reason(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->req.reason == NULL) return 0;
  lua_pushstring(L, c->req.reason);
  return 1;
}

/* ctx.tool and ctx.session, read from the call rather than kept in every
 * ctx table (a waiting call's ctx is one of its larger objects). */
static int l_tool(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->tool == NULL) return 0;
  lua_pushstring(L, c->tool);
  return 1;
}

static int l_session(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL) return 0;
  lua_pushinteger(L, c->sid);
  return 1;
}

/* ctx_index(fields, methods): the ctx's __index (init.lua's Ctx), a C
 * closure over both tables: a computed field's function called (it reads
 * the running call), else the method. No Lua frame per lookup, and neither
 * table is reachable through a ctx (a sandboxed plugin must not get the
 * methods table). stack: ctx key -> value */
static int ctx_index(lua_State *L) {
  lua_settop(L, 2);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) {
    lua_call(L, 0, 1);
    return 1;
  }
  lua_settop(L, 2);
  lua_rawget(L, lua_upvalueindex(2));
  return 1;
}

static int l_ctx_index(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_pushcclosure(L, ctx_index, 2);
  return 1;
}

/* ctx.auth: {subject=, client_id=, scopes={...}, claims={...}} of the
 * call's request, or nothing without authorization. */
static int l_auth(lua_State *L) {
  mcp_call *c = current(L);
  const mcp_identity *id = c != NULL && c->session != NULL ? c->session->auth : NULL;
  if (id == NULL) return 0;
  lua_createtable(L, 0, 4);
  lua_pushstring(L, id->subject);
  lua_setfield(L, -2, "subject");
  if (id->client_id != NULL) {
    lua_pushstring(L, id->client_id);
    lua_setfield(L, -2, "client_id");
  }
  lua_createtable(L, id->nscopes, 0);
  for (int i = 0; i < id->nscopes; i++) {
    lua_pushstring(L, id->scopes[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "scopes");
  mcp_json_push(L, id->claims);
  lua_setfield(L, -2, "claims");
  return 1;
}

static int l_now(lua_State *L) {
  lua_pushnumber(L, (double)mcp_clock_ns() / 1e9);
  return 1;
}

static int l_deadline(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->deadline_ns == 0) return 0;
  lua_pushnumber(L, (double)c->deadline_ns / 1e9);
  return 1;
}

/* spawn(opts), ctx:spawn(opts): see spawn.h. */
static int l_spawn(lua_State *L) {
  if (lua_istable(L, 1) && lua_istable(L, 2)) lua_remove(L, 1);     /* the ctx */
  else if (lua_type(L, 1) != LUA_TSTRING) luaL_checktype(L, 1, LUA_TTABLE);
  return mcp_spawn_start(L, mcp_op_caller(L, "spawn"));
}

/* read_file(path [, opts]), ctx:read_file too: opts.max_bytes (default 64 MiB). */
static int l_read_file(lua_State *L) {
  int base = mcp_self(L);
  const char *path = luaL_checkstring(L, base);
  lua_Integer max = (lua_Integer)MCP_FSREAD_MAX_BYTES;
  if (!lua_isnoneornil(L, base + 1)) {
    luaL_checktype(L, base + 1, LUA_TTABLE);
    if (lua_getfield(L, base + 1, "max_bytes") != LUA_TNIL) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
        return luaL_argerror(L, base + 1, "max_bytes must be an integer >= 0");
      max = lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
  }
  return mcp_fsread_file(L, mcp_op_caller(L, "read_file"), path, (size_t)max);
}

static int l_list_dir(lua_State *L) {
  const char *path = luaL_checkstring(L, mcp_self(L));
  return mcp_fsread_dir(L, mcp_op_caller(L, "list_dir"), path);
}

static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, mcp_self(L));
  return mcp_fsread_realpath(L, mcp_op_caller(L, "realpath"), path);
}

/* rev2026(): is the current request of revision 2026-07-28 (stateless)? */
static int l_rev2026(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && c->session->rev2026);
  return 1;
}

/* task_input(): does the running call take client input as a task of the
 * tasks extension (inputRequests answered by tasks/update)? */
static int l_task_input(lua_State *L) {
  mcp_call *c = current(L);
  lua_pushboolean(L, c != NULL && mcp_task_takes_input(c));
  return 1;
}
/* finish(...): end the request now, its arguments being what the dispatcher
 * returns (a result, or nil, code, message [, data]: server.lua's protocol
 * with the core, not a handler's). The handler does not
 * run on: the scheduler resets its coroutine, running its <close> variables.
 * A yield, so that no pcall of the handler can catch it. */
static int l_finish(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL) return mcp_raise(L, "finish: not inside a request");
  if (L != c->co) return mcp_raise(L, "finish: call it from the handler's coroutine, not one it created");
  if (!lua_isyieldable(L) || c->closing) return mcp_raise(L, "finish: cannot yield here");
  c->finishing = 1;
  /* only a running call's return is sent as given; a timed-out one's is the timeout's */
  if (lua_type(L, 1) == LUA_TTABLE && c->req.state == MCP_REQ_RUNNING) {
    lua_getfield(L, 1, "resultType");
    c->typed = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "input_required") == 0;
    lua_pop(L, 1);
  }
  return lua_yield(L, lua_gettop(L));
}
/* on_cancel(fn): fn(reason) runs (on the main thread, protected) at the cancel. */
static int l_on_cancel(lua_State *L) {
  mcp_call *c = current(L);
  int base = mcp_self(L);                  /* ctx:on_cancel(fn) too */
  luaL_checktype(L, base, LUA_TFUNCTION);
  if (c == NULL) return mcp_raise(L, "on_cancel: not inside a request");
  if (c->oncancel_ref == LUA_NOREF) {
    lua_newtable(L);
    c->oncancel_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->oncancel_ref);
  lua_pushvalue(L, base);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  return 0;
}

/* on_main(fn, ...): fn(...) on the main thread, for the running call,
 * and its results. A call's setup (argument checks, its ctx) goes deeper
 * than its handler's waits; run on the coroutine it would grow the stack
 * that every waiting call keeps (Lua doubles a stack past its first 40
 * slots and never shrinks it while in use). fn must not yield; its error
 * is raised again here. */
static int l_on_main(lua_State *co) {
  mcp_call *c = current(co);
  lua_State *L = mcp_sched_lua();
  int n = lua_gettop(co), base, status, nres;
  luaL_checktype(co, 1, LUA_TFUNCTION);
  if (c == NULL || co == L) {
    lua_call(co, n - 1, LUA_MULTRET);
    return lua_gettop(co);
  }
  base = lua_gettop(L);
  lua_xmove(co, L, n);                         /* main: fn args... */
  status = mcp_call_pcall(c, n - 1, LUA_MULTRET);
  nres = lua_gettop(L) - base;
  if (!lua_checkstack(co, nres)) luaL_error(co, "on_main: too many results");
  lua_xmove(L, co, nres);                      /* co: results... (or the error) */
  if (status != LUA_OK) return lua_error(co);
  return nres;
}

/* watch(co): a coroutine the handler created keeps the count hook. */
static int l_watch(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTHREAD);
  mcp_call_watch(lua_tothread(L, 1));
  return 0;
}

/* token(): the running call's token, a userdata that coroutines created by
 * the handler are mapped to (see mcp_call_current). nil outside a call. */
static int l_token(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL) return 0;
  mcp_call_token(L, c);
  return 1;
}

/* close_connection(): over HTTP, close the connection under this request's
 * SSE stream without ending it; the client resumes with Last-Event-ID.
 * Returns true when there was one to close. */
static int l_close_connection(lua_State *L) {
  mcp_call *c = current(L);
  if (c == NULL || c->session->detach == NULL || c->stream == NULL || c->responded) {
    lua_pushboolean(L, 0);
    return 1;
  }
  c->session->detach(c->session, c->stream);
  lua_pushboolean(L, 1);
  return 1;
}

/* raise(message): an error naming the plugin's line (fail.c's mcp_raise),
 * for the Lua side of the library's argument checks. */
static int l_raise(lua_State *L) {
  return mcp_raise(L, "%s", luaL_checkstring(L, 1));
}
static const luaL_Reg core_funcs[] = {
  {"cancelled", l_cancelled},
  {"in_request", l_in_request},
  {"reason", l_reason},
  {"tool", l_tool},
  {"session", l_session},
  {"auth", l_auth},
  {"ctx_index", l_ctx_index},
  {"now", l_now},
  {"deadline", l_deadline},
  {"on_cancel", l_on_cancel},
  {"rev2026", l_rev2026},
  {"task_input", l_task_input},
  {"finish", l_finish},
  {"spawn", l_spawn},
  {"task_create", mcp_task_l_create},
  {"task_result", mcp_task_l_result},
  {"read_file", l_read_file},
  {"list_dir", l_list_dir},
  {"realpath", l_realpath},
  {"token", l_token},
  {"watch", l_watch},
  {"on_main", l_on_main},
  {"close_connection", l_close_connection},
  {"raise", l_raise},
  {NULL, NULL}
};


/* The counters Lua code adds to (core.count), each with its outcomes at 0. */
static void counters_open(void) {
  static const struct { const char *name, *help, *outcomes[5]; } fams[] = {
    {"luamcp_plugin_reloads_total", "Plugin files loaded again by hot reload (outcome ok or failed).",
     {"ok", "failed"}},
    {"luamcp_outbound_http_requests_total", "Handlers' HTTP requests (ctx:http), by outcome.",
     {"ok", "error", "cancelled"}},
    {"luamcp_upstream_requests_total", "Requests to upstream MCP servers (mcp.connect, mounts), by outcome.",
     {"ok", "error", "timeout", "cancelled"}},
  };
  for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
    mcp_counter_family(fams[i].name, fams[i].help);
    for (int k = 0; fams[i].outcomes[k]; k++) {
      char labels[64];
      snprintf(labels, sizeof labels, "outcome=\"%s\"", fams[i].outcomes[k]);
      mcp_counter_add(fams[i].name, labels, 0);
    }
  }
}

/* The standard libraries, mcp.core, and the Lua library (libdir.c) on
 * package.path. Raises on error: call it protected. */
void mcp_lua_open(lua_State *L) {
  luaL_openlibs(L);
  luaL_requiref(L, "mcp.core", luaopen_mcp_core, 0);
  lua_pop(L, 1);
  mcp_lua_path(L);
}

int luaopen_mcp_core(lua_State *L) {
  mcp_json_open(L);
  luaL_newlib(L, core_funcs);
  mcp__lmcp_client_open(L);
  mcp__lmcp_misc_open(L);
  mcp__chain_open(L);
  mcp__guard_open(L);
  mcp_spans_open(L);
  mcp_op_open(L);
  mcp_sqlite_open_lib(L);
  mcp_proc_open_lib(L);
  mcp_httpc_open_lib(L);
  mcp_schema_open_lib(L);
  mcp_sandbox_open(L);
  mcp_sandbox_mem_open(L);
  mcp_fastpath_open_lib(L);
  mcp_forward_open_lib(L);
  mcp_server_card_open_lib(L);
  luaL_getmetatable(L, MCP_JSON_ARRAY_MT);
  lua_setfield(L, -2, "array_mt");
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  mcp_call_tokens_open(L);
  lua_setfield(L, -2, "nested");     /* weak map: coroutine -> token */
  counters_open();
  lua_createtable(L, 0, 5);
  lua_pushnumber(L, mcp_cfg.timeout);
  lua_setfield(L, -2, "timeout");
  lua_pushnumber(L, mcp_cfg.grace);
  lua_setfield(L, -2, "grace");
  lua_pushinteger(L, mcp_cfg.page_size);
  lua_setfield(L, -2, "page_size");
  lua_pushnumber(L, mcp_cfg.request_timeout);
  lua_setfield(L, -2, "request_timeout");
  lua_pushnumber(L, mcp_cfg.state_ttl);
  lua_setfield(L, -2, "state_ttl");
  lua_setfield(L, -2, "config");
  lua_pushliteral(L, LUAMCP_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
