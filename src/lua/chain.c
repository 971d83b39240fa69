/* The middleware chain (lua/mcp/server/middleware.lua keeps the chains and
 * the rare paths: shaping what a middleware returned, what raised under
 * next). A request of a method some middleware covers runs chain_run; the
 * `next` each middleware gets is a C closure made once per call, whose
 * upvalues are the call's chain state: no other table, no Lua frame of the
 * chain's own under the handler (every waiting call keeps its stack).
 *
 * The state (next's upvalues, five: a closure of 112 bytes, which malloc
 * keeps in its fast bins): the chain (its middleware, outermost first, and
 * .method), the ctx (and .id), the key (params.name or params.uri), the
 * result next last gave (returned as it is, it is not shaped again), and
 * depth | called << 16: depth is the position of the middleware whose own
 * code runs (the only one that may call next; 0 once the call is over),
 * called the last position that called next (middleware k runs only once
 * k - 1 called next, so k called next when called >= k). The session is
 * the call's (mcp_call.sid, as sched.c gives it to the dispatcher). */

#include <string.h>

#include <lauxlib.h>

#include "fastpath.h"
#include "lmcp_int.h"

enum { U_CHAIN = 1, U_CTX, U_KEY, U_GAVE, U_STATE, NUPVALUES = U_STATE };

/* What middleware.lua gives chain_setup (registry references). */
static int ref_ctx_mt = LUA_NOREF;    /* a ctx's metatable (init.lua's Ctx: decl.ctx makes {id =} with it) */
static int ref_methods = LUA_NOREF;   /* the methods table */
static int ref_on_error = LUA_NOREF;  /* the message handler under next */
static int ref_raised = LUA_NOREF;    /* raised(method, err): what the client would get */
static int ref_shape = LUA_NOREF;     /* shape(method, key, gave, mw, res, msg, code, err) */

#define UP(i) lua_upvalueindex(i)

static lua_Integer state(lua_State *L) { return lua_tointeger(L, UP(U_STATE)); }

static void set_state(lua_State *L, lua_Integer depth, lua_Integer called) {
  lua_pushinteger(L, depth | called << 16);
  lua_replace(L, UP(U_STATE));
}

/* stack: ... res code message data (the method's protocol: a result, or
 * nil, code, message, data) -> what next returns: the result (kept as the
 * one next gave), or nil, message, "rpc", {code =, message =, data =}, or nil. */
static int as_next(lua_State *L, int res) {
  if (!lua_isnil(L, res)) {
    lua_pushvalue(L, res);
    lua_replace(L, UP(U_GAVE));
    lua_settop(L, res);
    return 1;
  }
  if (!lua_isinteger(L, res + 1)) {
    lua_settop(L, res);
    return 1;
  }
  lua_createtable(L, 0, 3);            /* nil code message data err */
  lua_pushvalue(L, res + 1);
  lua_setfield(L, -2, "code");
  lua_pushvalue(L, res + 2);
  lua_setfield(L, -2, "message");
  lua_pushvalue(L, res + 3);
  lua_setfield(L, -2, "data");
  lua_pushvalue(L, res + 2);
  lua_replace(L, res + 1);
  lua_pushliteral(L, "rpc");
  lua_replace(L, res + 2);
  lua_replace(L, res + 3);             /* nil message "rpc" err */
  return 4;
}

/* Push the Lua shape of what middleware k of the chain at index chain
 * returned (res msg code err, at index res; gave: the result next gave):
 * its four results, the method's protocol. */
static void shape(lua_State *L, int chain, lua_Integer k, int key, int gave, int res) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref_shape);
  lua_getfield(L, chain, "method");
  lua_pushvalue(L, key);
  lua_pushvalue(L, gave);
  lua_rawgeti(L, chain, k);
  for (int i = 0; i < 4; i++) lua_pushvalue(L, res + i);
  lua_call(L, 8, 4);
}

/* After the step at depth k + 1 (what raises there escapes no inner next,
 * so the state still names that step): back to middleware k. kctx: k << 1,
 * | 1 for tools/call's step in C (its entry under the results).
 * stack: req on_error [entry] results... (or the error) */
static int next_done(lua_State *L, int status, lua_KContext kctx) {
  lua_Integer k = (lua_Integer)(kctx >> 1);
  int step = (int)(kctx & 1);          /* tools/call's own step, run as fastpath.c runs it */
  set_state(L, k, k);
  if (step && status != LUA_OK && status != LUA_YIELD) lua_remove(L, 3);
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_raised);   /* req on_error err raised */
    lua_getfield(L, UP(U_CHAIN), "method");
    lua_rotate(L, 3, 2);                             /* req on_error raised method err */
    lua_call(L, 2, 4);
    return 4;
  }
  if (step) mcp_fastpath_step_result(L, 3);          /* req on_error entry res... */
  lua_settop(L, 6);                                  /* req on_error res msg code err */
  if ((lua_Unsigned)k != lua_rawlen(L, UP(U_CHAIN))) {
    shape(L, UP(U_CHAIN), k + 1, UP(U_KEY), UP(U_GAVE), 3);
    return as_next(L, 7);
  }
  return as_next(L, 3);
}

static int misuse(lua_State *L, lua_Integer k, lua_Integer called) {
  if (k == 0) return luaL_error(L, "next: the request is over (call next before the middleware returns)");
  if (called >= k) {
    lua_rawgeti(L, UP(U_CHAIN), k);
    lua_getfield(L, -1, "name");
    return luaL_error(L, "next: called twice by middleware %s", luaL_tolstring(L, -1, NULL));
  }
  return luaL_error(L, "bad argument #1 to 'next' (a req with params expected)");
}

/* Push the running C function (next itself). */
static void push_self(lua_State *L) {
  lua_Debug ar;
  lua_getstack(L, 0, &ar);
  lua_getinfo(L, "f", &ar);
}

/* Push req.params, read raw: req is the middleware's, and no metamethod
 * of a plugin's runs in the host's reading (ARCHITECTURE.md). */
static int req_params(lua_State *L) {
  if (!lua_istable(L, 1)) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  lua_pushliteral(L, "params");
  return lua_rawget(L, 1);
}

/* next(req), called by middleware k: the rest of the chain, once.
 * stack: req -> req on_error step args... */
static int l_next(lua_State *L) {
  lua_Integer s = state(L), k = s & 0xffff, called = s >> 16;
  mcp_call *c;
  int step = 0;
  lua_settop(L, 1);
  if (k == 0 || called >= k || lua_isnil(L, 1)) return misuse(L, k, called);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref_on_error);
  if (lua_rawgeti(L, UP(U_CHAIN), k + 1) == LUA_TNIL) {  /* req on_error nil: the method */
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_methods);
    lua_getfield(L, UP(U_CHAIN), "method");
    step = strcmp(lua_tostring(L, -1), "tools/call") == 0;
    lua_rawget(L, -2);
    lua_remove(L, -2);                                 /* req on_error fn|nil */
    if (req_params(L) == LUA_TNIL) return misuse(L, k, called);
    c = current(L);
    lua_getfield(L, UP(U_CTX), "id");
    if (c != NULL) lua_pushinteger(L, c->sid); else lua_pushnil(L);
    lua_pushvalue(L, UP(U_CTX));                       /* req on_error fn params id session ctx */
  } else {
    lua_getfield(L, -1, "handler");
    lua_remove(L, -2);                                 /* req on_error handler */
    if (req_params(L) == LUA_TNIL) return misuse(L, k, called);
    lua_pop(L, 1);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, UP(U_CTX));
    push_self(L);                                      /* req on_error handler req ctx next */
    c = current(L);
  }
  if (c != NULL && c->signalled) {
    set_state(L, k, k);
    lua_pushnil(L);
    lua_pushfstring(L, "cancelled: %s", c->req.reason ? c->req.reason : "cancelled");
    lua_pushliteral(L, "cancelled");
    return 3;
  }
  if (lua_isnil(L, 3)) {                               /* gone since the call started (a reload) */
    set_state(L, k, k);
    lua_settop(L, 2);
    lua_pushnil(L);
    lua_pushinteger(L, -32601);
    lua_pushliteral(L, "Method not found");
    lua_pushnil(L);
    return next_done(L, LUA_OK, (lua_KContext)(k << 1));
  }
  step = step && mcp_fastpath_step(c, L, 4, UP(U_CTX));
  if (step) {              /* req on_error fn params id session ctx entry handler args */
    lua_pushvalue(L, UP(U_CTX));
    lua_rotate(L, 3, -5);
    lua_settop(L, 6);                                  /* req on_error entry handler args ctx */
  }
  set_state(L, k + 1, k);
  return next_done(L, lua_pcallk(L, lua_gettop(L) - 3 - step, LUA_MULTRET, 2, (lua_KContext)(k << 1 | step),
                                 next_done),
                   (lua_KContext)(k << 1 | step));
}

/* The first middleware has returned: the call is over for next.
 * stack: next res msg code err */
static int run_done(lua_State *L, int status, lua_KContext kctx) {
  (void)status;
  (void)kctx;
  lua_settop(L, 5);
  lua_pushinteger(L, 0);                               /* depth 0: next raises from now on */
  lua_setupvalue(L, 1, U_STATE);
  lua_getupvalue(L, 1, U_GAVE);                        /* next res msg code err gave */
  if (lua_isnil(L, 3) && !lua_isnil(L, 2) && lua_rawequal(L, 2, 6)) return 1;
  lua_getupvalue(L, 1, U_KEY);
  lua_getupvalue(L, 1, U_CHAIN);                       /* ... gave key chain */
  shape(L, 8, 1, 7, 6, 2);
  return 4;
}

/* chain_run(chain, method, params, id, session): the request through its
 * chain (chain.method is method; session is the call's). The first
 * middleware runs unprotected, as a handler does (what it raises, the core
 * answers as for a handler). */
static int l_chain_run(lua_State *L) {
  lua_settop(L, 4);
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, 4);
  lua_setfield(L, 5, "id");
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref_ctx_mt);
  lua_setmetatable(L, 5);                              /* chain method params id ctx */
  lua_pushvalue(L, 1);                                 /* U_CHAIN */
  lua_pushvalue(L, 5);                                 /* U_CTX */
  lua_getfield(L, 3, "name");                          /* U_KEY: params.name or params.uri */
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    lua_getfield(L, 3, "uri");
  }
  lua_pushboolean(L, 0);                               /* U_GAVE */
  lua_pushinteger(L, 1);                               /* U_STATE: depth 1, called 0 */
  lua_pushcclosure(L, l_next, NUPVALUES);              /* chain method params id ctx next */
  lua_rawgeti(L, 1, 1);
  lua_getfield(L, 7, "handler");
  lua_replace(L, 7);                                   /* ... next handler */
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, 2);
  lua_setfield(L, 8, "method");
  lua_pushvalue(L, 3);
  lua_setfield(L, 8, "params");
  lua_pushvalue(L, 5);
  lua_pushvalue(L, 6);                                 /* chain method params id ctx next handler req ctx next */
  lua_rotate(L, 1, -5);
  lua_settop(L, 5);                                    /* next handler req ctx next */
  lua_callk(L, 3, LUA_MULTRET, 0, run_done);
  return run_done(L, LUA_OK, 0);
}

/* chain_setup{ctx_mt =, methods =, on_error =, raised =, shape =}: the Lua side. */
static int l_chain_setup(lua_State *L) {
  static const char *names[] = {"ctx_mt", "methods", "on_error", "raised", "shape"};
  int *refs[] = {&ref_ctx_mt, &ref_methods, &ref_on_error, &ref_raised, &ref_shape};
  luaL_checktype(L, 1, LUA_TTABLE);
  for (int i = 0; i < 5; i++) {
    lua_getfield(L, 1, names[i]);
    if (lua_isnil(L, -1)) return luaL_error(L, "chain_setup: %s missing", names[i]);
    luaL_unref(L, LUA_REGISTRYINDEX, *refs[i]);
    *refs[i] = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  return 0;
}

void mcp__chain_open(lua_State *L) {
  lua_pushcfunction(L, l_chain_run);
  lua_setfield(L, -2, "chain_run");
  lua_pushcfunction(L, l_chain_setup);
  lua_setfield(L, -2, "chain_setup");
}
