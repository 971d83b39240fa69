/* JSON <-> Lua: exact integers, shortest floats, arrays stay arrays,
 * strings escaped and invalid UTF-8 replaced, errors for what JSON lacks. */
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

#define ENC(expr, want) do { char o[256]; enc(expr, o, sizeof o); \
  CHECK(strcmp(o, want) == 0, "%s -> %s, want %s", expr, o, want); } while (0)
#define RT(json, want) do { char o[256]; roundtrip(json, o, sizeof o); \
  CHECK(strcmp(o, want) == 0, "%s -> %s, want %s", json, o, want); } while (0)

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
  ENC("local t = {} t.t = t return t", "ERR cannot encode a table nested deeper than 128 (a cycle?)");
  ENC("return {[2] = 'b'}", "{\"2\":\"b\"}");

  {
    char err[128];
    CHECK(mcp_json_parse("{\"a\":", 5, err, sizeof err) == NULL, "truncated JSON is an error");
    CHECK(mcp_json_parse("\"\xff\"", 3, err, sizeof err) == NULL, "invalid UTF-8 is an error");
    CHECK(mcp_json_parse("99999999999999999999", 20, err, sizeof err) == NULL,
          "an integer past int64 is an error, never rounded");
  }
  lua_close(L);
  TEST_END("test_json");
}
