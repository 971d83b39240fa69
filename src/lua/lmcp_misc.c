/* mcp.core's helpers and the server's setup: JSON, seal, digests, clocks and
 * the heap; the logger, policies, limits, counters and plugin file lists
 * that server.lua sets up. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <uv.h>

#include "crypto.h"
#include "json.h"
#include "limit.h"
#include "log.h"
#include "metrics.h"
#include "seal.h"
#include "watch.h"
#include "lmcp_int.h"

/* seal(payload): a token the client hands back unchanged (seal.h). */
static int l_seal(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  mcp_buf b = MCP_BUF_INIT;
  mcp_seal(&b, s, n);
  lua_pushlstring(L, b.data, b.len);
  mcp_buf_free(&b);
  return 1;
}

/* unseal(token): its payload, or nil when it is not one of ours or was changed. */
static int l_unseal(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  mcp_buf b = MCP_BUF_INIT;
  if (mcp_seal_open(&b, s, n) != 0) {
    mcp_buf_free(&b);
    return 0;
  }
  lua_pushlstring(L, b.data ? b.data : "", b.len);
  mcp_buf_free(&b);
  return 1;
}

/* sha256(s): the digest, in hex. */
static int l_sha256(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  uint8_t d[MCP_SHA256_LEN];
  char hex[2 * MCP_SHA256_LEN];
  mcp_sha256(s, n, d);
  for (int i = 0; i < MCP_SHA256_LEN; i++) {
    hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
    hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
  }
  lua_pushlstring(L, hex, sizeof hex);
  return 1;
}

/* wall(): seconds since the epoch, moved with the test clock. */
static int l_wall(lua_State *L) {
  int64_t moved = (int64_t)(mcp_clock_ns() - uv_hrtime());    /* the test clock's advance */
  lua_pushnumber(L, (double)time(NULL) + (double)(moved > 0 ? moved : 0) / 1e9);
  return 1;
}

/* heap(): bytes malloc has handed out and not taken back (glibc), for
 * specs that look for leaks; nil where it cannot tell. */
static int l_heap(lua_State *L) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2();
  if (mi.uordblks + mi.hblkhd == 0) return 0;    /* a sanitizer's allocator */
  lua_pushinteger(L, (lua_Integer)(mi.uordblks + mi.hblkhd));
  return 1;
#else
  (void)L;
  return 0;
#endif
}
/* set_logger(name): log messages of the running call name this plugin. */
static int l_set_logger(lua_State *L) {
  mcp_call *c = current(L);
  const char *name = luaL_checkstring(L, 1);
  if (c != NULL) {
    c->logger = mcp_policy_intern(name);
    mcp_call_set_budget(c, mcp_budget_of(c->logger, 0));
  }
  return 0;
}

static int l_log_stderr(lua_State *L) {
  int level = mcp_log_level_parse(luaL_checkstring(L, 1));
  const char *msg = luaL_checkstring(L, 2);
  const char *logger = luaL_optstring(L, 3, NULL);
  if (level < 0) return luaL_argerror(L, 1, "unknown log level");
  mcp_log_as((mcp_log_level)level, logger, "%s", msg);
  return 0;
}

/* log_plugin(level, msg [, plugin]): a plugin's line in the server's log,
 * naming the plugin (else the running call's) and the tool it runs in. */
static int l_log_plugin(lua_State *L) {
  int level = mcp_log_level_parse(luaL_checkstring(L, 1));
  const char *msg = luaL_checkstring(L, 2);
  const char *plugin = luaL_optstring(L, 3, NULL);
  const char *tool = NULL;
  mcp_call *c = current(L);
  if (level < 0) return luaL_argerror(L, 1, "unknown log level");
  if (c != NULL) {
    if (plugin == NULL) plugin = c->logger;
    if (c->method != NULL && strcmp(c->method, "tools/call") == 0) tool = c->tool;
  }
  mcp_log_plugin((mcp_log_level)level, plugin, tool, msg);
  return 0;
}

/* set_policy(tool, cancel, timeout, grace [, logger [, task [, headers declared]]]) */
static int l_set_policy(lua_State *L) {
  const char *tool = luaL_checkstring(L, 1);
  int mode = mcp_cancel_mode_parse(luaL_checkstring(L, 2));
  double timeout = luaL_checknumber(L, 3), grace = luaL_checknumber(L, 4);
  const char *logger = luaL_optstring(L, 5, NULL);
  static const char *const tasks[] = { "forbidden", "optional", "required", NULL };
  int task = luaL_checkoption(L, 6, "forbidden", tasks);
  if (mode < 0) return luaL_argerror(L, 2, "cancel must be \"cooperative\", \"abort\" or \"ignore\"");
  if (timeout < 0) return luaL_argerror(L, 3, "timeout must be >= 0");
  if (grace < 0) return luaL_argerror(L, 4, "grace must be >= 0");
  mcp_policy_set(tool, mode, timeout, grace, logger, task);
  mcp_policy_set_headers(tool, lua_toboolean(L, 7));
  return 0;
}

/* set_limits(tool, max_concurrent, queue, rate or nil, heartbeat) */
static int l_set_limits(lua_State *L) {
  const char *tool = luaL_checkstring(L, 1);
  lua_Integer max = luaL_checkinteger(L, 2), queue = luaL_checkinteger(L, 3);
  const char *rate = luaL_optstring(L, 4, NULL);
  double heartbeat = luaL_checknumber(L, 5);
  if (max < 0 || max > 1000000) return luaL_argerror(L, 2, "max_concurrent must be an integer >= 0");
  if (queue < 0 || queue > 1000000) return luaL_argerror(L, 3, "queue must be an integer >= 0");
  if (heartbeat < 0) return luaL_argerror(L, 5, "heartbeat must be >= 0");
  if (mcp_limit_set(tool, (int)max, (int)queue, rate, heartbeat) != 0)
    return luaL_argerror(L, 4, "rate must be \"R/s\" or \"R/m\" with R > 0");
  return 0;
}

/* count(family, outcome [, n]): a counter of /metrics (metrics.c), by outcome. */
static int l_count(lua_State *L) {
  const char *family = luaL_checkstring(L, 1);
  mcp_buf labels = MCP_BUF_INIT;
  int r;
  if (!lua_isnoneornil(L, 2)) mcp_metric_label(&labels, 0, "outcome", luaL_checkstring(L, 2));
  mcp_buf_addc(&labels, '\0');
  r = mcp_counter_add(family, labels.data, luaL_optnumber(L, 3, 1));
  mcp_buf_free(&labels);
  if (r != 0) return luaL_argerror(L, 1, "no such counter");
  return 0;
}

static int l_clear_policies(lua_State *L) {
  (void)L;
  mcp_policy_clear();
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* plugin_files(path): sorted names of the regular *.lua files in path, or nil, err. */
static int l_plugin_files(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  uv_dirent_t ent;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int r = uv_fs_scandir(NULL, &req, path, 0, NULL);
  if (r < 0) {
    uv_fs_req_cleanup(&req);
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, uv_strerror(r));
    return 2;
  }
  while (uv_fs_scandir_next(&req, &ent) != UV_EOF) {
    size_t len = strlen(ent.name);
    if (len < 5 || strcmp(ent.name + len - 4, ".lua") != 0) continue;
    if (ent.type != UV_DIRENT_FILE && ent.type != UV_DIRENT_LINK && ent.type != UV_DIRENT_UNKNOWN)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      names = realloc(names, cap * sizeof *names);
      if (names == NULL) abort();
    }
    names[n++] = strdup(ent.name);
  }
  uv_fs_req_cleanup(&req);
  if (n > 0) qsort(names, n, sizeof *names, name_cmp);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    free(names[i]);
  }
  free(names);
  return 1;
}

typedef struct {
  mcp_buf b;
  char err[256];
  int failed;
} encoding;

/* stack: value encoding -> text (or nothing when it cannot be encoded) */
static int encode_to(lua_State *L) {
  encoding *e = lua_touserdata(L, 2);
  if (mcp_json_encode(L, 1, &e->b, e->err, sizeof e->err) != 0) {
    e->failed = 1;
    return 0;
  }
  lua_pushlstring(L, e->b.data, e->b.len);
  return 1;
}

/* encode(value): JSON text, or nil, err. Encoding allocates in Lua, which
 * may raise (out of memory): protected, so that the buffer is freed first. */
static int l_encode(lua_State *L) {
  encoding e = { MCP_BUF_INIT, "", 0 };
  int status;
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  lua_pushcfunction(L, encode_to);
  lua_pushvalue(L, 1);
  lua_pushlightuserdata(L, &e);
  status = lua_pcall(L, 2, 1, 0);
  mcp_buf_free(&e.b);
  if (status != LUA_OK) return lua_error(L);
  if (e.failed) {
    lua_pushnil(L);
    lua_pushstring(L, e.err);
    return 2;
  }
  return 1;
}

/* json_raw(text): a value that encode() writes as text, untouched (text
 * must be one JSON value: the server's own encoding, kept to be sent on). */
static int l_json_raw(lua_State *L) {
  luaL_checktype(L, 1, LUA_TSTRING);
  lua_createtable(L, 1, 0);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, 1);
  luaL_setmetatable(L, MCP_JSON_RAW_MT);
  return 1;
}

/* l_text's upvalues: the array metatable and the strings it uses (a
 * string pushed from an upvalue is not looked up by its text). */
enum { UP_ARRAY_MT = 1, UP_TOSTRING, UP_CONTENT, UP_TYPE, UP_TEXT, NUP_TEXT = UP_TEXT };

/* Has the string at 1 a __tostring (its metatable's, found as
 * luaL_tolstring finds it)? */
static int has_tostring(lua_State *L) {
  int yes;
  if (!lua_getmetatable(L, 1)) return 0;
  lua_pushvalue(L, lua_upvalueindex(UP_TOSTRING));
  yes = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 2);
  return yes;
}

/* text(s): mcp.text's {content = mcp.array{{type = "text", text = tostring(s)}}},
 * the commonest result, made here. A string is its own text unless a
 * __tostring says otherwise. */
static int l_text(lua_State *L) {
  int text = 1;
  if (lua_gettop(L) != 1) {
    luaL_checkany(L, 1);                         /* as tostring(): a value is expected */
    lua_settop(L, 1);
  }
  if (lua_type(L, 1) != LUA_TSTRING || has_tostring(L)) {
    luaL_tolstring(L, 1, NULL);                  /* stack: s text */
    text = 2;
  }
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, lua_upvalueindex(UP_CONTENT));
  lua_createtable(L, 1, 0);
  lua_pushvalue(L, lua_upvalueindex(UP_ARRAY_MT));
  lua_setmetatable(L, -2);
  lua_createtable(L, 0, 2);                      /* stack: s [text] result "content" content item */
  lua_pushvalue(L, lua_upvalueindex(UP_TYPE));
  lua_pushvalue(L, lua_upvalueindex(UP_TEXT));
  lua_rawset(L, -3);
  lua_pushvalue(L, lua_upvalueindex(UP_TEXT));
  lua_pushvalue(L, text);
  lua_rawset(L, -3);
  lua_rawseti(L, -2, 1);
  lua_rawset(L, -3);
  return 1;
}

/* decode_response(text): decode(text), but a response with a result object
 * keeps its result as JSON text (a json_raw, see json.h), to be passed on. */
static int l_decode_response(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char err[256];
  if (mcp_json_decode_response(L, s, n) == 0) return 1;
  if (mcp_json_decode(L, s, n, err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  return 1;
}

/* decode(text): a Lua value, or nil, err. */
static int l_decode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char err[256];
  if (mcp_json_decode(L, s, n, err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  return 1;
}
/* watch_file(path): a change to the file reloads as a plugin file's does
 * (an MCP App's HTML; with --watch). true, or nil, err. */
static int l_watch_file(lua_State *L) {
  int r = mcp_watch_add(luaL_checkstring(L, 1));
  if (r != 0) {
    lua_pushnil(L);
    lua_pushstring(L, uv_strerror(r));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg misc_funcs[] = {
  {"watch_file", l_watch_file},
  {"seal", l_seal},
  {"unseal", l_unseal},
  {"sha256", l_sha256},
  {"wall", l_wall},
  {"heap", l_heap},
  {"log_stderr", l_log_stderr},
  {"log_plugin", l_log_plugin},
  {"set_logger", l_set_logger},
  {"set_policy", l_set_policy},
  {"set_limits", l_set_limits},
  {"count", l_count},
  {"clear_policies", l_clear_policies},
  {"plugin_files", l_plugin_files},
  {"encode", l_encode},
  {"decode", l_decode},
  {"json_raw", l_json_raw},
  {"decode_response", l_decode_response},
  {NULL, NULL}
};

void mcp__lmcp_misc_open(lua_State *L) {
  luaL_setfuncs(L, misc_funcs, 0);
  luaL_getmetatable(L, MCP_JSON_ARRAY_MT);
  lua_pushliteral(L, "__tostring");
  lua_pushliteral(L, "content");
  lua_pushliteral(L, "type");
  lua_pushliteral(L, "text");
  lua_pushcclosure(L, l_text, NUP_TEXT);
  lua_setfield(L, -2, "text");
}
