/* What a sandboxed plugin keeps across its calls (issue 23, memory_mb):
 * alloc.c counts what each plugin's code allocates; when that passes a step
 * since the last measure, lua/mcp/sandbox.lua asks for a measure here: a
 * walk of what the plugin reaches from its own roots (its environment, its
 * mcp, its lib modules, its declarations' functions), each object counted
 * once.
 *
 * The walk does not follow into what is shared: the host's Lua functions
 * (their source is in the host's library directory: only the coroutines and
 * the plugin's functions they hold are followed), metatables the plugin
 * did not set (a ctx's, mcp.array's, a userdata's), and the frames of host
 * functions in a coroutine. A table with the host's metatable is walked (what the plugin put in it is
 * its own), its metatable not. Sizes are those of Lua 5.4's own
 * layouts on a 64-bit machine, roughly (docs/guide/12-untrusted-plugins.md):
 * a table 56 bytes, 16 a slot of its array part, 32 a node of its hash part
 * (a power of two); a string 24 + its length + 1; a Lua function 32 + 8 an
 * upvalue, 40 each upvalue cell, plus for a chunk it loaded (load) the
 * length of its source; a C function 32 + 16 an upvalue; a userdata 40 + its
 * size; a coroutine 200, 64 a frame and 16 a value on its stack. What the
 * allocator adds, and the code of its file's functions, are not counted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "log.h"
#include "policy.h"
#include "sandbox.h"

typedef struct walk {
  lua_State *L;
  const void **set;                /* visited objects and upvalue cells */
  size_t cap, n;
  size_t bytes, cutoff;            /* the count; past cutoff the walk stops */
  int own_mt, loads;               /* stack indices of the caller's tables */
  const char *lib;                 /* "@" .. the host's library directory */
  size_t lib_len;
  int full;                        /* the worklist could not grow */
} walk;

static size_t hash_ptr(const void *p, size_t cap) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= (uintptr_t)0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 7) & (cap - 1);
}

static void set_grow(walk *w) {
  size_t cap = w->cap ? w->cap * 2 : 1024;
  const void **set = calloc(cap, sizeof *set);
  if (set == NULL) abort();
  for (size_t i = 0; i < w->cap; i++) {
    size_t h;
    if (w->set[i] == NULL) continue;
    for (h = hash_ptr(w->set[i], cap); set[h]; h = (h + 1) & (cap - 1)) {}
    set[h] = w->set[i];
  }
  free(w->set);
  w->set = set;
  w->cap = cap;
}

/* 1 the first time p is seen, 0 after. */
static int first_time(walk *w, const void *p) {
  size_t h;
  if (p == NULL) return 0;
  if (2 * (w->n + 1) > w->cap) set_grow(w);
  for (h = hash_ptr(p, w->cap); w->set[h]; h = (h + 1) & (w->cap - 1))
    if (w->set[h] == p) return 0;
  w->set[h] = p;
  w->n++;
  return 1;
}

static int in_table(lua_State *L, int t, int v) {
  int found;
  lua_pushvalue(L, v);
  found = lua_rawget(L, t) != LUA_TNIL;
  lua_pop(L, 1);
  return found;
}

/* A Lua function of the host's own files (lua/mcp/). */
static int host_fn(walk *w, int idx) {
  lua_Debug ar;
  lua_pushvalue(w->L, idx);
  lua_getinfo(w->L, ">S", &ar);
  return ar.what[0] != 'C' && strncmp(ar.source, w->lib, w->lib_len) == 0;
}

/* stack: ... value -> ...; the value counted (a string), or kept on the
 * worklist below *at (an object not seen yet), *at moved up past it. */
static void keep(walk *w, int *at) {
  lua_State *L = w->L;
  int t = lua_type(L, -1);
  if (t == LUA_TSTRING) {
    size_t len;
    lua_tolstring(L, -1, &len);
    if (first_time(w, lua_topointer(L, -1))) w->bytes += 24 + len + 1;
  } else if ((t == LUA_TTABLE || t == LUA_TFUNCTION || t == LUA_TTHREAD || t == LUA_TUSERDATA) &&
             first_time(w, lua_topointer(L, -1))) {
    if (w->full || !lua_checkstack(L, 8)) {
      w->full = 1;
      lua_pop(L, 1);
      return;
    }
    lua_insert(L, *at);
    (*at)++;
    return;
  }
  lua_pop(L, 1);
}

static size_t pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return n ? p : 0;
}

static void walk_table(walk *w, int *t) {
  lua_State *L = w->L;
  size_t len = lua_rawlen(L, *t), slots = 0, nodes = 0;
  if (lua_getmetatable(L, *t)) {               /* the host's (ctx's, mcp.array's): not followed */
    if (in_table(L, w->own_mt, -1)) keep(w, t);
    else lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, *t)) {
    if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && (size_t)lua_tointeger(L, -2) <= len) slots++;
    else nodes++;
    keep(w, t);                                /* the value */
    lua_pushvalue(L, -1);
    keep(w, t);                                /* the key (the copy) */
  }
  w->bytes += 56 + 16 * slots + 32 * pow2(nodes);
}

/* A host function made for the plugin (coroutine.wrap's, a callback's
 * wrapper): the coroutines and the plugin's functions it holds are the
 * plugin's; its other upvalues may be the host's modules, not followed. */
static void walk_host_function(walk *w, int *f) {
  lua_State *L = w->L;
  for (int i = 1; lua_getupvalue(L, *f, i) != NULL; i++) {
    if (lua_type(L, -1) == LUA_TTHREAD || (lua_type(L, -1) == LUA_TFUNCTION && !lua_iscfunction(L, -1) &&
                                           !host_fn(w, -1)))
      keep(w, f);
    else lua_pop(L, 1);
  }
}

static void walk_function(walk *w, int *f) {
  lua_State *L = w->L;
  int c = lua_iscfunction(L, *f), i;
  if (!c && host_fn(w, *f)) {
    walk_host_function(w, f);
    return;
  }
  for (i = 1; lua_getupvalue(L, *f, i) != NULL; i++) {
    if (!c && !first_time(w, lua_upvalueid(L, *f, i))) {
      lua_pop(L, 1);
      continue;
    }
    w->bytes += c ? 16 : 8 + 40;
    keep(w, f);
  }
  w->bytes += 32;
  lua_pushvalue(L, *f);
  if (lua_rawget(L, w->loads) == LUA_TNUMBER) w->bytes += (size_t)lua_tointeger(L, -1);
  lua_pop(L, 1);
}

/* A coroutine: its frames' functions and locals, but not those of the
 * host's frames (a handler's own coroutine it keeps runs others' calls). */
static void walk_thread(walk *w, int *t) {
  lua_State *L = w->L, *co = lua_tothread(L, *t);
  lua_Debug ar;
  w->bytes += 200;
  if (co == L || !lua_checkstack(co, 2)) return;
  for (int level = 0; lua_getstack(co, level, &ar); level++) {
    const char *name;
    w->bytes += 64;
    lua_getinfo(co, "Sf", &ar);
    lua_xmove(co, L, 1);
    if (ar.what[0] == 'C' || strncmp(ar.source, w->lib, w->lib_len) == 0) {
      lua_pop(L, 1);
      continue;
    }
    keep(w, t);
    for (int i = 1; (name = lua_getlocal(co, &ar, i)) != NULL; i++) {
      lua_xmove(co, L, 1);
      w->bytes += 16;
      keep(w, t);
    }
  }
  if (lua_status(co) == LUA_OK && lua_getstack(co, 0, &ar) == 0) {
    for (int i = 1; i <= lua_gettop(co); i++) {   /* not started: its function */
      lua_pushvalue(co, i);
      lua_xmove(co, L, 1);
      w->bytes += 16;
      keep(w, t);
    }
  }
}

static void walk_userdata(walk *w, int *u) {
  w->bytes += 40 + lua_rawlen(w->L, *u);
  for (int i = 1; lua_getiuservalue(w->L, *u, i) != LUA_TNONE; i++) {
    w->bytes += 16;
    keep(w, u);
  }
  lua_pop(w->L, 1);
}

/* Until the worklist (above base) is empty, or the count past the cutoff. */
static void walk_run(walk *w, int base) {
  lua_State *L = w->L;
  while (lua_gettop(L) > base && w->bytes <= w->cutoff && !w->full) {
    int top = lua_gettop(L);
    switch (lua_type(L, top)) {
    case LUA_TTABLE: walk_table(w, &top); break;
    case LUA_TFUNCTION: walk_function(w, &top); break;
    case LUA_TTHREAD: walk_thread(w, &top); break;
    case LUA_TUSERDATA: walk_userdata(w, &top); break;
    default: break;
    }
    lua_settop(L, top - 1);                    /* it, done: the ones it kept lie below */
  }
}

/* sandbox_measure(plugin, roots, own_mt, loads, lib): the bytes the plugin
 * holds from roots (a list); the measure becomes its last (what its code
 * allocates is counted from it). own_mt: metatables it set; loads: function
 * -> source length of the chunks it loaded; lib: the host's library
 * directory. Stops counting past its memory_mb and a step. */
static int l_sandbox_measure(lua_State *L) {
  mcp_budget *b = mcp_budget_of(luaL_checkstring(L, 1), 0), *was;
  walk w = { L, NULL, 0, 0, 0, 0, 3, 4, NULL, 0, 0 };
  int base;
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_settop(L, 5);
  lua_pushfstring(L, "@%s", luaL_checkstring(L, 5));
  w.lib = lua_tolstring(L, 6, &w.lib_len);
  w.cutoff = b && b->mem_limit ? b->mem_limit + mcp_budget_step(b) : SIZE_MAX / 2;
  was = mcp_sched_budget_swap(NULL);           /* the walk's stack is the host's */
  base = lua_gettop(L);
  luaL_checkstack(L, 16, "sandbox_measure");
  for (lua_Integer i = 1; lua_rawgeti(L, 2, i) != LUA_TNIL; i++) {
    int at = base + 1;
    keep(&w, &at);
  }
  lua_pop(L, 1);
  walk_run(&w, base);
  lua_settop(L, base);
  mcp_sched_budget_swap(was);
  free(w.set);
  if (w.full) w.bytes = w.cutoff + 1;
  if (b) mcp_budget_measured(b, w.bytes);
  lua_pushinteger(L, (lua_Integer)w.bytes);
  return 1;
}


/* sandbox_due(plugin): is a measure of what it keeps due? */
static int l_sandbox_due(lua_State *L) {
  const mcp_budget *b = mcp_budget_of(luaL_checkstring(L, 1), 0);
  lua_pushboolean(L, b != NULL && mcp_budget_due(b));
  return 1;
}

/* sandbox_over_memory(plugin, message): it keeps more than its memory_mb:
 * counted (luamcp_sandbox_denied_total{capability="memory_mb"}), logged,
 * and server.reset_due() runs once this loop turn's calls have run. */
static int l_sandbox_over_memory(lua_State *L) {
  const char *plugin = luaL_checkstring(L, 1);
  mcp_sandbox_denied_as(plugin, "memory_mb", luaL_checkstring(L, 2));
  mcp_sched_reset_due();
  return 0;
}

void mcp_sandbox_mem_open(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"sandbox_measure", l_sandbox_measure},
    {"sandbox_due", l_sandbox_due},
    {"sandbox_over_memory", l_sandbox_over_memory},
    {NULL, NULL}
  };
  luaL_setfuncs(L, fns, 0);
}
