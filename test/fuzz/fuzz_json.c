/* The wire JSON: both decoders of jparse.c (to jansson values, and straight
 * to Lua) against jansson's own parser, then the encoders of json.c.
 *
 * - mcp_json_parse accepts exactly what json_loadb accepts (but for the
 *   depth limit, and jansson's taking a raw NUL after a number), and gives
 *   the same value;
 * - mcp_json_decode (Lua) accepts the same texts, and also keys with \u0000;
 * - a decoded value encodes (mcp_json_encode, mcp_json_dump) to text that
 *   parses back to the same value (numbers compared as numbers: 1.0 is
 *   written 1);
 * - any bytes as a Lua string encode to a JSON string; valid UTF-8 comes
 *   back byte for byte. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <lauxlib.h>
#include <lualib.h>

#include "buf.h"
#include "json.h"
#include "require.h"

static lua_State *L;

/* Same JSON value; an integer and a real are the same number if equal. */
static int same(json_t *a, json_t *b) {
  if (json_is_number(a) && json_is_number(b)) {
    if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
    return json_number_value(a) == json_number_value(b);
  }
  if (json_typeof(a) != json_typeof(b)) return 0;
  if (json_is_array(a)) {
    if (json_array_size(a) != json_array_size(b)) return 0;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!same(json_array_get(a, i), json_array_get(b, i))) return 0;
    return 1;
  }
  if (json_is_object(a)) {
    const char *k;
    json_t *v;
    if (json_object_size(a) != json_object_size(b)) return 0;
    json_object_foreach(a, k, v) {
      json_t *w = json_object_get(b, k);
      if (w == NULL || !same(v, w)) return 0;
    }
    return 1;
  }
  return json_equal(a, b);
}

static int depth_of(json_t *v) {
  int d = 0, x;
  size_t i;
  const char *k;
  json_t *e;
  if (json_is_array(v)) json_array_foreach(v, i, e) if ((x = depth_of(e)) > d) d = x;
  if (json_is_object(v)) json_object_foreach(v, k, e) if ((x = depth_of(e)) > d) d = x;
  return d + (json_is_array(v) || json_is_object(v));
}

/* The Lua value at the top of the stack, encoded and parsed back, is ref. */
static void check_lua(json_t *ref, const char *what) {
  mcp_buf b = MCP_BUF_INIT;
  char err[256];
  json_t *back;
  REQUIRE(mcp_json_encode(L, -1, &b, err, sizeof err) == 0, "%s: encode: %s", what, err);
  back = mcp_json_parse(b.data ? b.data : "", b.len, err, sizeof err);
  REQUIRE(back != NULL, "%s: encoded %.*s: %s", what, (int)b.len, b.data, err);
  REQUIRE(same(ref, back), "%s: %.*s", what, (int)b.len, b.data);
  json_decref(back);
  mcp_buf_free(&b);
}

static int push(lua_State *Ls) {
  mcp_json_push(Ls, lua_touserdata(Ls, 1));
  return 1;
}

static void check_value(const char *s, size_t n, json_t *ref) {
  mcp_buf b = MCP_BUF_INIT;
  char err[256];
  json_t *mine = mcp_json_parse(s, n, err, sizeof err), *back;
  REQUIRE(mine != NULL, "jansson takes it, mcp_json_parse does not: %s", err);
  REQUIRE(same(ref, mine), "mcp_json_parse and jansson differ");
  mcp_json_dump(mine, &b);
  back = mcp_json_parse(b.data, b.len, err, sizeof err);
  REQUIRE(back != NULL && same(ref, back), "dump: %.*s: %s", (int)b.len, b.data, err);
  json_decref(back);
  mcp_buf_free(&b);
  json_decref(mine);

  REQUIRE(mcp_json_decode(L, s, n, err, sizeof err) == 0, "jansson takes it, mcp_json_decode does not: %s", err);
  check_lua(ref, "decode");
  lua_settop(L, 0);

  lua_pushcfunction(L, push);
  lua_pushlightuserdata(L, ref);
  REQUIRE(lua_pcall(L, 1, 1, 0) == LUA_OK, "push: %s", lua_tostring(L, -1));
  check_lua(ref, "push");
  lua_settop(L, 0);
}

/* Rejected by jansson: rejected by both of ours, but for \u0000 in keys,
 * which Lua takes; and deeper than our limit, where jansson's is higher. */
static void check_refused(const char *s, size_t n) {
  char err[256];
  json_t *mine = mcp_json_parse(s, n, err, sizeof err);
  REQUIRE(mine == NULL, "jansson refuses it, mcp_json_parse does not");
  if (mcp_json_decode(L, s, n, err, sizeof err) == 0)
    REQUIRE(strstr(err, "\\u0000 in an object key") != NULL, "jansson refuses it, mcp_json_decode does not");
  lua_settop(L, 0);
}

/* Any bytes as a string. */
static void check_string(const char *s, size_t n) {
  mcp_buf b = MCP_BUF_INIT;
  char err[256];
  int valid = 1;
  json_t *v;
  for (size_t i = 0; i < n; i++) {
    size_t len = (unsigned char)s[i] < 0x80 ? 1 : mcp_utf8_len((const unsigned char *)s + i, n - i);
    if (len == 0) {
      valid = 0;
      break;
    }
    i += len - 1;
  }
  mcp_json_add_string(&b, s, n);
  v = mcp_json_parse(b.data, b.len, err, sizeof err);
  REQUIRE(json_is_string(v), "%.*s: %s", (int)b.len, b.data, err);
  if (valid)
    REQUIRE(json_string_length(v) == n && memcmp(json_string_value(v), s, n) == 0, "%.*s", (int)b.len, b.data);
  json_decref(v);
  mcp_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  json_error_t e;
  json_t *ref;
  if (L == NULL) {
    L = luaL_newstate();
    mcp_json_open(L);
  }
  /* A raw NUL is never JSON, but jansson takes one right after a number. */
  ref = memchr(s, '\0', size) ? NULL : json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
  if (ref == NULL) check_refused(s, size);
  else if (depth_of(ref) <= MCP_JSON_MAX_DEPTH) check_value(s, size, ref);
  else REQUIRE(mcp_json_parse(s, size, NULL, 0) == NULL, "deeper than %d, yet parsed", MCP_JSON_MAX_DEPTH);
  json_decref(ref);
  check_string(s, size);
  return 0;
}
