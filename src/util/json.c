/* JSON text from Lua values and from jansson's; Lua values from jansson's
 * (JSON text is parsed in jparse.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "json.h"

/* A real as jansson writes it with JSON_REAL_PRECISION(17): "%.17g", a
 * ".0" when that reads as an integer, no '+' nor leading zeros in the
 * exponent. */
static void dump_real(mcp_buf *b, double d) {
  char s[40], *e;
  int n = snprintf(s, sizeof s - 2, "%.17g", d);
  if (n < 0 || n >= (int)sizeof s - 2) {
    mcp_buf_adds(b, "null");
    return;
  }
  if (strchr(s, '.') == NULL && strchr(s, 'e') == NULL) memcpy(s + n, ".0", 3);
  if ((e = strchr(s, 'e')) != NULL) {
    char *from = e + 1, *to = e + 1;
    if (*from == '-') from++, to++;
    else if (*from == '+') from++;
    while (*from == '0' && from[1] != '\0') from++;
    memmove(to, from, strlen(from) + 1);
  }
  mcp_buf_add(b, s, strlen(s));
}

/* What json_dump_callback(v, ..., JSON_ENCODE_ANY | JSON_COMPACT |
 * JSON_REAL_PRECISION(17)) writes, without its callback per token: keys in
 * the object's order, strings escaped as json.c escapes Lua's. */
void mcp_json_dump(const json_t *v, mcp_buf *b) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    void *it = json_object_iter((json_t *)v);
    int first = 1;
    mcp_buf_addc(b, '{');
    for (; it != NULL; it = json_object_iter_next((json_t *)v, it), first = 0) {
      const char *k = json_object_iter_key(it);
      if (!first) mcp_buf_addc(b, ',');
#if JANSSON_VERSION_HEX >= 0x020e00
      mcp_json_add_string(b, k, json_object_iter_key_len(it));
#else
      mcp_json_add_string(b, k, strlen(k));
#endif
      mcp_buf_addc(b, ':');
      mcp_json_dump(json_object_iter_value(it), b);
    }
    mcp_buf_addc(b, '}');
    return;
  }
  case JSON_ARRAY:
    mcp_buf_addc(b, '[');
    for (size_t i = 0, n = json_array_size(v); i < n; i++) {
      if (i > 0) mcp_buf_addc(b, ',');
      mcp_json_dump(json_array_get(v, i), b);
    }
    mcp_buf_addc(b, ']');
    return;
  case JSON_STRING: mcp_json_add_string(b, json_string_value(v), json_string_length(v)); return;
  case JSON_INTEGER: mcp_buf_add_int(b, (long long)json_integer_value(v)); return;
  case JSON_REAL: dump_real(b, json_real_value(v)); return;
  case JSON_TRUE: mcp_buf_adds(b, "true"); return;
  case JSON_FALSE: mcp_buf_adds(b, "false"); return;
  default: mcp_buf_adds(b, "null"); return;
  }
}

void mcp_json_open(lua_State *L) {
  if (luaL_newmetatable(L, MCP_JSON_ARRAY_MT)) {
    lua_pushliteral(L, "array");
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, MCP_JSON_RAW_MT)) {
    lua_pushliteral(L, "json_raw");
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
}

void mcp_json_push(lua_State *L, const json_t *v) {
  luaL_checkstack(L, 4, "JSON nested too deep");
  switch (json_typeof(v)) {
    case JSON_OBJECT: {
      const char *k;
      json_t *x;
      lua_createtable(L, 0, (int)json_object_size(v));
      json_object_foreach((json_t *)v, k, x) {
        lua_pushstring(L, k);
        mcp_json_push(L, x);
        lua_rawset(L, -3);
      }
      break;
    }
    case JSON_ARRAY: {
      size_t i, n = json_array_size(v);
      lua_createtable(L, (int)n, 0);
      for (i = 0; i < n; i++) {
        mcp_json_push(L, json_array_get(v, i));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      luaL_setmetatable(L, MCP_JSON_ARRAY_MT);
      break;
    }
    case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
    case JSON_REAL: lua_pushnumber(L, json_real_value(v)); break;
    case JSON_TRUE: lua_pushboolean(L, 1); break;
    case JSON_FALSE: lua_pushboolean(L, 0); break;
    default: lua_pushlightuserdata(L, NULL); break;
  }
}

/* Strings: escape what JSON needs, pass valid UTF-8 through, replace the rest. */

size_t mcp_utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c < 0xC2) return 0;
  if (c < 0xE0) { len = 2; min = 0x80; }
  else if (c < 0xF0) { len = 3; min = 0x800; }
  else if (c < 0xF5) { len = 4; min = 0x10000; }
  else return 0;
  if (len > n) return 0;
  unsigned cp = c & (0x3F >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void mcp_json_add_string(mcp_buf *b, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0, run = 0;
  mcp_buf_grow(b, n + 2);
  mcp_buf_addc(b, '"');
  while (i < n) {
    unsigned c = s[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') { i++; continue; }
    mcp_buf_add(b, s + run, i - run);
    if (c >= 0x80) {
      size_t len = mcp_utf8_len(s + i, n - i);
      if (len) mcp_buf_add(b, s + i, len), i += len;
      else mcp_buf_adds(b, "\\ufffd"), i++;
    } else {
      char esc[6] = { '\\', 0 };
      size_t elen = 2;
      switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
          esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
          esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
          elen = 6;
      }
      mcp_buf_add(b, esc, elen);
      i++;
    }
    run = i;
  }
  mcp_buf_add(b, s + run, n - run);
  mcp_buf_addc(b, '"');
}

/* Numbers: integers exactly; floats in the shortest form that reads back the same. */
static void add_float(mcp_buf *b, double d) {
  char s[32];
  int prec;
  for (prec = 15; prec < 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, d);
    if (strtod(s, NULL) == d) break;
  }
  if (prec == 17) snprintf(s, sizeof s, "%.17g", d);
  mcp_buf_add(b, s, strlen(s));
}

typedef struct {
  lua_State *L;
  mcp_buf *b;
  char *err;
  size_t errlen;
} encoder;

static int encode(encoder *e, int idx, int depth);

static int encode_fail(encoder *e, const char *what, int idx) {
  snprintf(e->err, e->errlen, what, luaL_typename(e->L, idx));
  return -1;
}

static int encode_key(encoder *e, int kidx) {
  lua_State *L = e->L;
  if (lua_type(L, kidx) == LUA_TSTRING) {
    size_t n;
    const char *k = lua_tolstring(L, kidx, &n);
    mcp_json_add_string(e->b, k, n);
  } else if (lua_isinteger(L, kidx)) {
    mcp_buf_addc(e->b, '"');
    mcp_buf_add_int(e->b, (long long)lua_tointeger(L, kidx));
    mcp_buf_addc(e->b, '"');
  } else {
    return encode_fail(e, "cannot encode a table key of type %s", kidx);
  }
  return 0;
}

/* core.json_raw's table: its text as is. */
static int encode_raw(encoder *e, int idx) {
  lua_State *L = e->L;
  size_t len;
  const char *s;
  if (lua_rawgeti(L, idx, 1) != LUA_TSTRING) {
    lua_pop(L, 1);
    snprintf(e->err, e->errlen, "cannot encode a json_raw without its text");
    return -1;
  }
  s = lua_tolstring(L, -1, &len);
  mcp_buf_add(e->b, s, len);
  lua_pop(L, 1);
  return 0;
}

static int encode_table(encoder *e, int idx, int depth) {
  lua_State *L = e->L;
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
  int is_array = 0;
  if (depth > MCP_JSON_MAX_DEPTH) {
    snprintf(e->err, e->errlen, "cannot encode a table nested deeper than %d (a cycle?)", MCP_JSON_MAX_DEPTH);
    return -1;
  }
  if (!lua_checkstack(L, 6)) {
    snprintf(e->err, e->errlen, "cannot encode: Lua stack exhausted");
    return -1;
  }
  if (lua_getmetatable(L, idx)) {        /* stack: mt [raw_mt] */
    int raw;
    luaL_getmetatable(L, MCP_JSON_ARRAY_MT);
    is_array = lua_rawequal(L, -1, -2);
    lua_pop(L, 1);
    raw = !is_array && (luaL_getmetatable(L, MCP_JSON_RAW_MT), lua_rawequal(L, -1, -2));
    lua_pop(L, is_array ? 1 : 2);
    if (raw) return encode_raw(e, idx);
  }
  if (!is_array && n > 0) {             /* a proper sequence is an array */
    lua_pushnil(L);
    while (lua_next(L, idx)) { count++; lua_pop(L, 1); }
    is_array = (count == n);
  }
  if (is_array) {
    mcp_buf_addc(e->b, '[');
    for (lua_Integer i = 1; i <= n; i++) {
      if (i > 1) mcp_buf_addc(e->b, ',');
      lua_rawgeti(L, idx, i);
      if (encode(e, lua_gettop(L), depth + 1)) return -1;
      lua_pop(L, 1);
    }
    mcp_buf_addc(e->b, ']');
    return 0;
  }
  mcp_buf_addc(e->b, '{');
  int first = 1;
  lua_pushnil(L);
  while (lua_next(L, idx)) {            /* stack: ... key value */
    if (!first) mcp_buf_addc(e->b, ',');
    first = 0;
    if (encode_key(e, lua_gettop(L) - 1)) return -1;
    mcp_buf_addc(e->b, ':');
    if (encode(e, lua_gettop(L), depth + 1)) return -1;
    lua_pop(L, 1);                      /* stack: ... key */
  }
  mcp_buf_addc(e->b, '}');
  return 0;
}

static int encode(encoder *e, int idx, int depth) {
  lua_State *L = e->L;
  switch (lua_type(L, idx)) {
    case LUA_TNIL: mcp_buf_adds(e->b, "null"); return 0;
    case LUA_TBOOLEAN:
      if (lua_toboolean(L, idx)) mcp_buf_adds(e->b, "true");
      else mcp_buf_adds(e->b, "false");
      return 0;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        mcp_buf_add_int(e->b, (long long)lua_tointeger(L, idx));
      } else {
        double d = lua_tonumber(L, idx);
        if (!isfinite(d)) {
          snprintf(e->err, e->errlen, "cannot encode %s in JSON", isnan(d) ? "NaN" : "infinity");
          return -1;
        }
        add_float(e->b, d);
      }
      return 0;
    case LUA_TSTRING: {
      size_t n;
      const char *s = lua_tolstring(L, idx, &n);
      mcp_json_add_string(e->b, s, n);
      return 0;
    }
    case LUA_TTABLE: return encode_table(e, idx, depth);
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) { mcp_buf_adds(e->b, "null"); return 0; }
      /* fall through */
    default: return encode_fail(e, "cannot encode a %s value in JSON", idx);
  }
}

int mcp_json_encode(lua_State *L, int idx, mcp_buf *b, char *err, size_t errlen) {
  encoder e = { L, b, err, errlen };
  size_t len = b->len;
  int top = lua_gettop(L);
  idx = lua_absindex(L, idx);
  if (encode(&e, idx, 0)) {
    b->len = len;
    lua_settop(L, top);
    return -1;
  }
  return 0;
}
