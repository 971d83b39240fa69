/* JSON <-> Lua: exact integers, shortest floats, arrays stay arrays,
 * strings escaped and invalid UTF-8 replaced, errors for what JSON lacks. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "json.h"
#include "log.h"
#include "test.h"

static lua_State *L;

/* Encode the value of a Lua expression. */
static const char *enc(const char *expr, char *out, size_t cap) {
  mcp_buf b = MCP_BUF_INIT;
  char err[128];
  lua_settop(L, 0);
  if (luaL_dostring(L, expr) != LUA_OK) {
    snprintf(out, cap, "LUAERR %s", lua_tostring(L, -1));
    return out;
  }
  if (mcp_json_encode(L, 1, &b, err, sizeof err) != 0) snprintf(out, cap, "ERR %s", err);
  else snprintf(out, cap, "%.*s", (int)b.len, b.data);
  mcp_buf_free(&b);
  return out;
}

/* Parse JSON, push it, encode it again. */
static const char *roundtrip(const char *json, char *out, size_t cap) {
  char err[128];
  mcp_buf b = MCP_BUF_INIT;
  json_t *v = mcp_json_parse(json, strlen(json), err, sizeof err);
  if (v == NULL) {
    snprintf(out, cap, "PARSE %s", err);
    return out;
  }
  lua_settop(L, 0);
  mcp_json_push(L, v);
  json_decref(v);
  if (mcp_json_encode(L, 1, &b, err, sizeof err) != 0) snprintf(out, cap, "ERR %s", err);
  else snprintf(out, cap, "%.*s", (int)b.len, b.data);
  mcp_buf_free(&b);
  return out;
}

/* The same text straight to Lua (mcp_json_decode), encoded again: both
 * parsers must agree, in what they build and in what they refuse. */
static const char *decode(const char *json, size_t n, char *out, size_t cap) {
  char err[128];
  mcp_buf b = MCP_BUF_INIT;
  lua_settop(L, 0);
  if (mcp_json_decode(L, json, n, err, sizeof err) != 0) {
    CHECK(lua_gettop(L) == 0, "a failed decode leaves the stack as it was");
    snprintf(out, cap, "PARSE %s", err);
    return out;
  }
  CHECK(lua_gettop(L) == 1, "a decode pushes one value");
  if (mcp_json_encode(L, 1, &b, err, sizeof err) != 0) snprintf(out, cap, "ERR %s", err);
  else snprintf(out, cap, "%.*s", (int)b.len, b.data);
  mcp_buf_free(&b);
  return out;
}

/* A response's members but its result, as mcp_json_decode_response leaves
 * them in Lua (the result is kept as text), encoded again. */
static const char *response_rest(const char *json, char *out, size_t cap) {
  char err[128];
  mcp_buf b = MCP_BUF_INIT;
  lua_settop(L, 0);
  if (mcp_json_decode_response(L, json, strlen(json)) != 0) return snprintf(out, cap, "NONE"), out;
  lua_pushnil(L);
  lua_setfield(L, 1, "result");
  lua_getfield(L, 1, "id");                        /* the id alone: a table's keys come in any order */
  if (mcp_json_encode(L, 2, &b, err, sizeof err) != 0) snprintf(out, cap, "ERR %s", err);
  else snprintf(out, cap, "%.*s", (int)b.len, b.data);
  mcp_buf_free(&b);
  return out;
}
#define RESP_ID(json, want) do { char o[256]; response_rest(json, o, sizeof o); \
  CHECK(strcmp(o, want) == 0, "response %s: id %s, want %s", json, o, want); } while (0)

#define ENC(expr, want) do { char o[256]; enc(expr, o, sizeof o); \
  CHECK(strcmp(o, want) == 0, "%s -> %s, want %s", expr, o, want); } while (0)
#define RT(json, want) do { char o[256], d[256]; roundtrip(json, o, sizeof o); \
  CHECK(strcmp(o, want) == 0, "%s -> %s, want %s", json, o, want); \
  decode(json, strlen(json), d, sizeof d); \
  CHECK(strcmp(d, want) == 0, "decode %s -> %s, want %s", json, d, want); } while (0)
/* Refused by both parsers, with a message holding why. */
#define BAD(json, why) do { char bo[256], bd[256]; roundtrip(json, bo, sizeof bo); \
  decode(json, strlen(json), bd, sizeof bd); \
  CHECK(strncmp(bo, "PARSE ", 6) == 0 && strstr(bo, why) != NULL, "%.60s -> %s, want PARSE ...%s", json, bo, why); \
  CHECK(strcmp(bo, bd) == 0, "decode %.60s -> %s, parse -> %s", json, bd, bo); } while (0)

/* mcp_json_dump writes what jansson's dump does (the C path hands a
 * forwarded tool's arguments on as this text). */
static void dump_as_jansson(const char *json) {
  json_error_t e;
  json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
  mcp_buf b = MCP_BUF_INIT;
  char *want;
  if (v == NULL) {
    CHECK(0, "%s: %s", json, e.text);
    return;
  }
  want = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
  mcp_json_dump(v, &b);
  CHECK(want != NULL && b.len == strlen(want) && memcmp(b.data, want, b.len) == 0, "%s: %.*s, jansson %s",
        json, (int)b.len, b.data, want ? want : "(null)");
  free(want);
  mcp_buf_free(&b);
  json_decref(v);
}

/* For members_in: the text {"k":[1]} is known. */
static int known_calls;
static size_t known_k(const char *s, size_t n) {
  known_calls++;
  return n >= 9 && memcmp(s, "{\"k\":[1]}", 9) == 0 ? 9 : 0;
}

int main(void) {
  mcp_log_threshold = MCP_LOG_EMERGENCY;
  L = luaL_newstate();
  luaL_openlibs(L);
  mcp_json_open(L);
  luaL_getmetatable(L, MCP_JSON_ARRAY_MT);
  lua_setglobal(L, "array_mt");

  RT("9223372036854775807", "9223372036854775807");
  RT("-9223372036854775808", "-9223372036854775808");
  RT("9007199254740993", "9007199254740993");
  RT("[]", "[]");
  RT("{}", "{}");
  RT("{\"a\":[]}", "{\"a\":[]}");
  RT("[1,2.5,\"x\",true,false,null]", "[1,2.5,\"x\",true,false,null]");
  RT("0.1", "0.1");
  RT("1e300", "1e+300");
  RT("\"\\u0000a\"", "\"\\u0000a\"");
  RT("\"h\\u00e9\"", "\"h\xc3\xa9\"");
  RT(" \r\n\t{ \"a\" : [ 1 , { } ] } \n", "{\"a\":[1,{}]}");
  RT("\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"");            /* a surrogate pair */
  RT("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\\"\\\\/\\b\\f\\n\\r\\t\"");
  RT("\"a\\nb\\u0041\"", "\"a\\nbA\"");                          /* runs around escapes */
  RT("{\"k\\u00e9\":\"v\\u00e9\"}", "{\"k\xc3\xa9\":\"v\xc3\xa9\"}"); /* an escaped key, then value */
  RT("{\"a\":1,\"a\":2}", "{\"a\":2}");                             /* the last duplicate wins */
  RT("\" !#~\x7f\"", "\" !#~\x7f\"");                                /* the edges of plain ASCII */
  RT("-0", "0");
  RT("-1.5e-3", "-0.0015");
  RT("1E2", "100");
  RT("[[[[]]]]", "[[[[]]]]");
  RT("{\"a\":{\"b\":[1,[]]}}", "{\"a\":{\"b\":[1,[]]}}");         /* the first array deep */
  RT("[{},{\"c\":[{}]},[]]", "[{},{\"c\":[{}]},[]]");
  RT("\"\xf4\x8f\xbf\xbf\"", "\"\xf4\x8f\xbf\xbf\"");          /* U+10FFFF */

  dump_as_jansson("{\"text\":\"hello\",\"n\":1,\"b\":[true,false,null],\"o\":{}}");
  dump_as_jansson("{\"z\":1,\"a\":2,\"m\":{\"y\":[],\"b\":-7}}");         /* the object's order */
  dump_as_jansson("[0.1,1.5,100.0,-0.0,1e20,1e-7,1.7976931348623157e308,5e-324,123456789.125]");
  dump_as_jansson("[2.5e+15,1e100,-3e-100,9007199254740993,-9223372036854775808]");
  dump_as_jansson("\"a\\\"b\\\\c\\/d\\n\\u0001\\u007f\\u00e9\\ud83d\\ude00\\u0000\"");
  dump_as_jansson("{\"k\\ney\":\"\\t\",\"\\u00e9\":{\"\":[[]]}}");
  {                                    /* hex digits in lower case, as the Lua path's encode writes them */
    json_t *v = json_string("\x1f");
    mcp_buf b = MCP_BUF_INIT;
    mcp_json_dump(v, &b);
    CHECK(b.len == 8 && memcmp(b.data, "\"\\u001f\"", 8) == 0, "%.*s", (int)b.len, b.data);
    mcp_buf_free(&b);
    json_decref(v);
  }
  {
    /* an object's members and those of its params, located in one walk */
    const char *req = "{\"id\":1, \"params\" : {\"name\":\"x\",\"arguments\":{\"a\":[1]}},\"m\":null}";
    mcp_json_member m[8], p[8];
    int np = 0, n = mcp_json_members_in(req, strlen(req), m, 8, "params", p, &np, NULL);
    CHECK(n == 3 && np == 2, "members_in: %d members, %d in params", n, np);
    CHECK(n == 3 && strcmp(m[1].key, "params") == 0 && m[1].vn == 34 && m[1].v[0] == '{', "members_in: params");
    CHECK(np == 2 && strcmp(p[1].key, "arguments") == 0 && p[1].vn == 9 && memcmp(p[1].v, "{\"a\":[1]}", 9) == 0,
          "members_in: arguments' text");
    CHECK(mcp_json_members_in(req, strlen(req) - 1, m, 8, "params", p, &np, NULL) < 0, "members_in: a truncated text");
    CHECK(mcp_json_members_in("{\"a\":1}", 7, m, 8, "params", p, &np, NULL) == 1 && np == -1, "members_in: no params");
    CHECK(mcp_json_members_in("{\"params\":{\"a\":1,\"b\":2}}", 24, m, 8, "params", p, &np, NULL) == 1 && np == 2,
          "members_in: params alone");
    CHECK(mcp_json_members_in("{\"params\":{\"a\":1,\"b\":2}}", 24, m, 8, "params", p, &np, NULL) == 1 &&
          mcp_json_members_in("{\"params\":{\"a\":1,\"b\":2,\"c\":3}}", 30, m, 2, "params", p, &np, NULL) < 0,
          "members_in: more params members than max");
  }
  {
    /* a value of params the caller knows is passed over, unread; what follows is still read */
    const char *req = "{\"params\":{\"_meta\":{\"k\":[1]},\"a\":2}}";
    mcp_json_member m[8], p[8];
    int np = 0;
    CHECK(mcp_json_members_in(req, strlen(req), m, 8, "params", p, &np, known_k) == 1 && np == 2 &&
          p[0].vn == 9 && memcmp(p[0].v, "{\"k\":[1]}", 9) == 0, "members_in: a known value's text");
    CHECK(known_calls == 1, "members_in: known asked once (an object value of params): %d", known_calls);
    req = "{\"params\":{\"_meta\":{\"k\":[1]}x,\"a\":2}}";
    CHECK(mcp_json_members_in(req, strlen(req), m, 8, "params", p, &np, known_k) < 0,
          "members_in: text after a known value is read");
    req = "{\"params\":{\"_meta\":{\"k\":[1}}}";
    CHECK(mcp_json_members_in(req, strlen(req), m, 8, "params", p, &np, known_k) < 0,
          "members_in: a value not known is checked");
  }

  BAD("", "a value expected");
  BAD("   ", "a value expected");
  BAD("{\"a\":", "a value expected");
  BAD("{\"a\" 1}", "':' expected");
  BAD("{a:1}", "an object key");
  BAD("{\"a\":1,}", "an object key");
  BAD("[1,]", "invalid token");
  BAD("[1 2]", "',' or ']' expected");
  BAD("{\"a\":1 \"b\":2}", "',' or '}' expected");
  BAD("1 2", "end of text expected");
  BAD("\"abc", "unterminated string");
  BAD("\"a\x01\"", "control character");
  BAD("\"\\x\"", "invalid escape");
  BAD("\"\\u12\"", "invalid \\u escape");
  BAD("\"\\ud800\"", "high surrogate");
  BAD("\"\\ud800\\u0041\"", "high surrogate");
  BAD("\"\\udc00\"", "lone low surrogate");
  BAD("\"\xc0\xaf\"", "invalid UTF-8");                            /* overlong '/' */
  BAD("\"\xed\xa0\x80\"", "invalid UTF-8");                        /* an encoded surrogate */
  BAD("\"\xf4\x90\x80\x80\"", "invalid UTF-8");                    /* past U+10FFFF */
  BAD("\"\xe2\x82\"", "invalid UTF-8");                            /* truncated */
  BAD("01", "end of text expected");
  BAD("-", "invalid number");
  BAD("1.", "a digit expected");
  BAD("1e+", "a digit expected");
  BAD(".5", "invalid token");
  BAD("+1", "invalid token");
  BAD("9223372036854775808", "int64 range");
  BAD("-9223372036854775809", "int64 range");
  BAD("184467440737095516160", "int64 range");
  BAD("1e400", "real number out of range");
  BAD("tru", "invalid literal");
  BAD("nul", "invalid literal");
  BAD("NaN", "invalid token");
  BAD("{\"a\":1}\n{", "end of text expected at byte 8 (line 2 column 1)");
  {
    char deep[2 * MCP_JSON_MAX_DEPTH + 3], o[256];
    size_t n = 0;
    for (int i = 0; i < MCP_JSON_MAX_DEPTH; i++) deep[n++] = '[';
    for (int i = 0; i < MCP_JSON_MAX_DEPTH; i++) deep[n++] = ']';
    deep[n] = '\0';
    decode(deep, n, o, sizeof o);
    CHECK(strncmp(o, "[[[", 3) == 0, "%d levels decode: %.40s", MCP_JSON_MAX_DEPTH, o);
    memmove(deep + 1, deep, n + 1);
    deep[0] = '[';
    deep[++n] = ']';
    deep[++n] = '\0';
    BAD(deep, "nested too deep");
  }
  {
    char o[256];                                   /* \u0000 in a key: Lua takes it, jansson refuses */
    decode("{\"a\\u0000b\":1}", 14, o, sizeof o);
    CHECK(strcmp(o, "{\"a\\u0000b\":1}") == 0, "a NUL in a Lua key: %s", o);
    roundtrip("{\"a\\u0000b\":1}", o, sizeof o);
    CHECK(strstr(o, "in an object key") != NULL, "a NUL in a jansson key: %s", o);
    decode("\"a\0b\"", 5, o, sizeof o);
    CHECK(strstr(o, "control character") != NULL, "a raw NUL in a string: %s", o);
  }

  /* the members of a response pushed from their text are what decode makes of them */
  RESP_ID("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", "7");
  RESP_ID("{\"id\":-3,\"jsonrpc\":\"2.0\",\"result\":{\"a\":[1]}}", "-3");
  RESP_ID("{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\\u00e9\",\"result\":{}}", "\"a\\\"b\xc3\xa9\"");
  RESP_ID("{\"jsonrpc\":\"2.0\",\"id\":\"\",\"result\":{}}", "\"\"");
  RESP_ID("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}", "1.5");
  RESP_ID("{\"jsonrpc\":\"2.0\",\"id\":1e2,\"result\":{}}", "100");
  RESP_ID("{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"result\":{}}", "9223372036854775807");
  RESP_ID("{\"jsonrpc\":\"2.0\",\"\\u0069d\":5,\"result\":{}}", "5");
  RESP_ID("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}", "NONE");
  {                                                /* the result's text as passed on, read in one walk */
    static const struct { const char *in, *want; } cases[] = {
      { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,{\"b\":2}],\"resultType\":\"complete\"}}", "{\"a\":[1,{\"b\":2}]}" },
      { "{\"r\\u0065sult\":{\"x\":1},\"id\":1,\"jsonrpc\":\"2.0\"}", "{\"x\":1}" },
      { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1},\"result\":{\"y\":2}}", "{\"y\":2}" },
      { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":1},\"result\":5}", "NONE" },
      { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":}}", "NONE" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char o[128] = "NONE";
      lua_settop(L, 0);
      if (mcp_json_decode_response(L, cases[i].in, strlen(cases[i].in)) == 0) {
        lua_getfield(L, 1, "result");
        lua_rawgeti(L, -1, 1);
        snprintf(o, sizeof o, "%s", lua_tostring(L, -1));
      }
      CHECK(strcmp(o, cases[i].want) == 0, "response %s: result %s, want %s", cases[i].in, o, cases[i].want);
    }
  }
  {
    char o[64];
    lua_settop(L, 0);
    CHECK(mcp_json_decode_response(L, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 36) == 0, "a response");
    lua_getfield(L, 1, "jsonrpc");
    snprintf(o, sizeof o, "%s", lua_tostring(L, -1));
    CHECK(strcmp(o, "2.0") == 0 && lua_type(L, -1) == LUA_TSTRING, "jsonrpc %s", o);
  }

  {                                                /* the same read without Lua (forward.c) */
    static const struct { const char *in; int rc; long long id; const char *want; } cases[] = {
      { "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":[1],\"resultType\":\"complete\",\"ttlMs\":5}}", 1, 7, "{\"a\":[1]}" },
      { "{\"result\":{\"isError\":true},\"\\u0069d\":-3,\"jsonrpc\":\"2.0\"}", 1, -3, "{\"isError\":true}" },
      { "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"resultType\":\"input_required\"}}", 0, 8, "" },
      { "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32099,\"message\":\"x\"}}", 0, 9, "" },
      { "{\"jsonrpc\":\"2.0\",\"id\":10,\"result\":5}", 0, 10, "" },
      { "{\"jsonrpc\":\"1.0\",\"id\":11,\"result\":{}}", -1, 0, "" },
      { "{\"jsonrpc\":\"2.0\",\"id\":\"12\",\"result\":{}}", -1, 0, "" },
      { "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}", -1, 0, "" },
      { "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"x\"}", -1, 0, "" },
      { "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}", -1, 0, "" },
      { "{\"jsonrpc\":\"2.0\",\"id\":14,\"result\":{\"x\":}}", -2, 0, "" },
      { "{\"jsonrpc\":\"2.0\",\"id\":15,\"result\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9}}", -2, 0, "" },
    };
    mcp_buf out = MCP_BUF_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      long long id = 0;
      int rc;
      out.len = 0;
      rc = mcp_json_response_text(cases[i].in, strlen(cases[i].in), &id, &out);
      CHECK(rc == cases[i].rc, "response text %s: %d, want %d", cases[i].in, rc, cases[i].rc);
      if (rc >= 0) CHECK(id == cases[i].id, "response text %s: id %lld, want %lld", cases[i].in, id, cases[i].id);
      if (rc == 1)
        CHECK(out.len == strlen(cases[i].want) && memcmp(out.data, cases[i].want, out.len) == 0,
              "response text %s: %.*s, want %s", cases[i].in, (int)out.len, out.data, cases[i].want);
    }
    mcp_buf_free(&out);
  }

  ENC("return 1/3", "0.3333333333333333");
  ENC("return 0.5", "0.5");
  ENC("return 3.0", "3");
  ENC("return {}", "{}");
  ENC("return setmetatable({}, array_mt)", "[]");
  ENC("return {1, 2, 3}", "[1,2,3]");
  ENC("return {a = 'x\\n\"\\\\'}", "{\"a\":\"x\\n\\\"\\\\\"}");
  ENC("return '\\xff\\xc3\\xa9'", "\"\\ufffd\xc3\xa9\"");
  ENC("return '\\xed\\xa0\\x80'", "\"\\ufffd\\ufffd\\ufffd\"");   /* a surrogate is not UTF-8 */
  ENC("return '\\x01'", "\"\\u0001\"");
  ENC("return 0/0", "ERR cannot encode NaN in JSON");
  ENC("return math.huge", "ERR cannot encode infinity in JSON");
  ENC("return print", "ERR cannot encode a function value in JSON");
  ENC("local t = {} t.t = t return t", "ERR cannot encode a table nested deeper than 256 (a cycle?)");
  ENC("return {[2] = 'b'}", "{\"2\":\"b\"}");

  {
    char err[128];
    CHECK(mcp_json_parse("{\"a\":", 5, err, sizeof err) == NULL, "truncated JSON is an error");
    CHECK(mcp_json_parse("\"\xff\"", 3, err, sizeof err) == NULL, "invalid UTF-8 is an error");
    CHECK(mcp_json_parse("99999999999999999999", 20, err, sizeof err) == NULL,
          "an integer past int64 is an error, never rounded");
  }
  /* A string's bytes are scanned 8 at a time: a byte that is not plain is
   * found at every offset in a word and after it, and plain bytes around
   * it (0x7f among them) pass. */
  for (int at = 0; at < 20; at++) {
    static const char *const special[] = { "\"", "\\n", "\x01", "\x1f", "\xc3\xa9", "\x7f", "\xff" };
    static const char *const want[] = { "ENDS", "\n", "PARSE", "PARSE", "\xc3\xa9", "\x7f", "PARSE" };
    for (size_t k = 0; k < sizeof special / sizeof special[0]; k++) {
      char text[64], err[128];
      json_t *v;
      int n = snprintf(text, sizeof text, "\"%.*s%s%.*s\"", at, "~~~~~~~~~~~~~~~~~~~~", special[k],
                       19 - at, "~~~~~~~~~~~~~~~~~~~~");
      v = mcp_json_parse(text, (size_t)n, err, sizeof err);
      if (strcmp(want[k], "PARSE") == 0) {
        CHECK(v == NULL, "a control character or invalid UTF-8 at %d is refused", at);
      } else if (strcmp(want[k], "ENDS") == 0) {
        CHECK(v == NULL, "a quote at %d ends the string: the rest is extra", at);
      } else {
        const char *got = json_string_value(v);
        CHECK(got != NULL && strlen(got) == 19 + strlen(want[k]) &&
              memcmp(got + at, want[k], strlen(want[k])) == 0, "byte %zu at %d passes: %s", k, at, got);
      }
      json_decref(v);
    }
  }
  lua_close(L);
  TEST_END("test_json");
}
