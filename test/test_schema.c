/* Tool input validation (schema.c): the messages name the failing field
 * with its path, each keyword is checked as JSON Schema says, a schema is
 * compiled once and freed with its table. */
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "json.h"
#include "log.h"
#include "schema.h"
#include "test.h"

static lua_State *L;

/* validate(schema, decode(args)): "ok" or the message. */
static const char *run(const char *schema, const char *args, char *out, size_t cap) {
  char err[128];
  lua_settop(L, 0);
  lua_getglobal(L, "core");
  lua_getfield(L, -1, "validate");
  if (luaL_dostring(L, schema) != LUA_OK) {
    snprintf(out, cap, "LUAERR %s", lua_tostring(L, -1));
    return out;
  }
  if (mcp_json_decode(L, args, strlen(args), err, sizeof err) != 0) {
    snprintf(out, cap, "JSONERR %s", err);
    return out;
  }
  if (lua_pcall(L, 2, 2, 0) != LUA_OK) snprintf(out, cap, "RAISED %s", lua_tostring(L, -1));
  else if (lua_toboolean(L, -2)) snprintf(out, cap, "ok");
  else snprintf(out, cap, "%s", lua_tostring(L, -1));
  return out;
}

#define V(schema, args, want) do { char o[256]; run("return " schema, args, o, sizeof o); \
  CHECK(strcmp(o, want) == 0, "%s with %s -> %s, want %s", schema, args, o, want); } while (0)

#define S "{ type = 'object', required = {'name', 'count'}, properties = { " \
  "name = { type = 'string', minLength = 2, maxLength = 5 }, " \
  "count = { type = 'integer', minimum = 1, maximum = 10 }, " \
  "ratio = { type = 'number', exclusiveMinimum = 0, exclusiveMaximum = 1 }, " \
  "flag = { type = 'boolean' }, nothing = { type = 'null' }, " \
  "either = { type = {'string', 'integer'} }, color = { enum = {'red', 'green'} }, " \
  "fixed = { const = 'k' }, tags = { type = 'array', items = { type = 'string' }, minItems = 1, maxItems = 3 }, " \
  "extra = { type = 'object', additionalProperties = { type = 'number' } } } }"

int main(void) {
  mcp_log_threshold = MCP_LOG_EMERGENCY;
  L = luaL_newstate();
  luaL_openlibs(L);
  mcp_json_open(L);
  lua_newtable(L);
  mcp_schema_open_lib(L);
  lua_setglobal(L, "core");

  V(S, "{\"name\":\"ab\",\"count\":1}", "ok");
  V(S, "{\"name\":\"abcde\",\"count\":10,\"ratio\":0.5,\"flag\":false,\"nothing\":null,\"either\":\"s\","
       "\"color\":\"red\",\"fixed\":\"k\",\"tags\":[\"x\",\"y\",\"z\"],\"extra\":{\"a\":1,\"b\":2.5}}", "ok");
  V(S, "{\"name\":\"ab\",\"count\":3.0}", "ok");                 /* an integral float is an integer */
  V(S, "{\"name\":\"ab\",\"count\":1,\"ratio\":1e-3,\"either\":7}", "ok");
  V(S, "{\"name\":\"h\xc3\xa9\",\"count\":1}", "ok");              /* 2 characters, 3 bytes */
  V(S, "{\"name\":\"ab\",\"count\":1,\"tags\":{}}", "tags: needs at least 1 item");  /* {} is an empty array too */

  V(S, "{\"name\":\"ab\"}", "count: required");
  V(S, "{\"name\":12,\"count\":1}", "name: expected string, got integer");
  V(S, "{\"name\":\"a\",\"count\":1}", "name: must be at least 2 characters");
  V(S, "{\"name\":\"abcdef\",\"count\":1}", "name: must be at most 5 characters");
  /* a limit of one: its unit in the singular */
  V("{ type = 'object', properties = { s = { type = 'string', minLength = 1, maxLength = 1 }, "
    "l = { type = 'array', minItems = 1, maxItems = 1 } } }", "{\"s\":\"\"}", "s: must be at least 1 character");
  V("{ type = 'object', properties = { s = { type = 'string', minLength = 1, maxLength = 1 } } }",
    "{\"s\":\"ab\"}", "s: must be at most 1 character");
  V("{ type = 'object', properties = { l = { type = 'array', minItems = 1, maxItems = 1 } } }",
    "{\"l\":[]}", "l: needs at least 1 item");
  V("{ type = 'object', properties = { l = { type = 'array', minItems = 1, maxItems = 1 } } }",
    "{\"l\":[1,2]}", "l: allows at most 1 item");
  V(S, "{\"name\":\"ab\",\"count\":1.5}", "count: expected integer, got number");
  V(S, "{\"name\":\"ab\",\"count\":0}", "count: must be >= 1");
  V(S, "{\"name\":\"ab\",\"count\":11}", "count: must be <= 10");
  V(S, "{\"name\":\"ab\",\"count\":1,\"ratio\":0}", "ratio: must be > 0");
  V(S, "{\"name\":\"ab\",\"count\":1,\"ratio\":1}", "ratio: must be < 1");
  V(S, "{\"name\":\"ab\",\"count\":1,\"ratio\":\"half\"}", "ratio: expected number, got string");
  V(S, "{\"name\":\"ab\",\"count\":1,\"flag\":\"yes\"}", "flag: expected boolean, got string");
  V(S, "{\"name\":\"ab\",\"count\":1,\"nothing\":0}", "nothing: expected null, got integer");
  V(S, "{\"name\":\"ab\",\"count\":1,\"either\":true}", "either: expected string or integer, got boolean");
  V(S, "{\"name\":\"ab\",\"count\":1,\"color\":\"blue\"}", "color: must be one of [\"red\",\"green\"]");
  V(S, "{\"name\":\"ab\",\"count\":1,\"fixed\":\"j\"}", "fixed: must be \"k\"");
  V(S, "{\"name\":\"ab\",\"count\":1,\"tags\":\"x\"}", "tags: expected array, got string");
  V(S, "{\"name\":\"ab\",\"count\":1,\"tags\":[\"x\",2]}", "tags[1]: expected string, got integer");
  V(S, "{\"name\":\"ab\",\"count\":1,\"tags\":[\"a\",\"b\",\"c\",\"d\"]}", "tags: allows at most 3 items");
  V(S, "{\"name\":\"ab\",\"count\":1,\"extra\":{\"a\":\"x\"}}", "extra.a: expected number, got string");
  V(S, "[1,2]", "arguments: expected object, got array");

  V("{ type = 'object', additionalProperties = false, properties = { a = {} } }", "{\"a\":1,\"b\":2}",
    "b: unknown property");
  V("{ properties = { a = { items = { items = { properties = { c = { type = 'string' } } } } } } }",
    "{\"a\":[[{\"c\":\"x\"}],[{\"c\":\"y\"},{\"c\":1}]]}", "a[1][1].c: expected string, got integer");
  V("{ const = { x = { 1, 2 } } }", "{\"x\":[1,2]}", "ok");       /* deep equality */
  V("{ const = { x = { 1, 2 } } }", "{\"x\":[1,3]}", "arguments: must be {\"x\":[1,2]}");
  V("{ enum = { 1, 'a' } }", "1.0", "ok");                        /* 1 == 1.0, as in Lua */
  V("{ type = 'integer', minimum = 1.5 }", "1", "arguments: must be >= 1.5");
  V("{ type = 'string', maxLength = 1 }", "\"\xc3\xa9\"", "ok");
  V("{ type = 'gizmo' }", "1", "arguments: expected gizmo, got integer");
  V("{ type = 'object' }", "{}", "ok");
  V("{ type = 'array' }", "{}", "ok");                             /* an empty object is an empty array */
  V("{}", "null", "ok");
  V("'not a table'", "5", "ok");
  V("{ type = { 'string', {} } }", "1", "RAISED invalid value (at index 2) in a schema's type list");
  {
    char o[256];                                   /* a schema that contains itself */
    run("local s = { type = 'object', properties = {} } s.properties.self = s return s", "{}", o, sizeof o);
    CHECK(strstr(o, "nested deeper than") != NULL, "a cyclic schema: %s", o);
  }
  {
    /* One compile per schema table: the cache holds it while the table
     * lives, and the collector frees both (ASan and valgrind see leaks). */
    char o[64];
    luaL_dostring(L, "S1 = { type = 'object', required = { 'a' } }");
    for (int i = 0; i < 1000; i++) {
      lua_settop(L, 0);
      luaL_dostring(L, "return core.validate(S1, { b = 1 })");
      snprintf(o, sizeof o, "%s", lua_tostring(L, 2));
    }
    CHECK(strcmp(o, "a: required") == 0, "cached: %s", o);
    luaL_dostring(L, "S1 = nil");
    lua_gc(L, LUA_GCCOLLECT);
  }
  lua_close(L);
  TEST_END("test_schema");
}
