/* rev2026_meta.c: a 2026-07-28 request read with its _meta kept gives the
 * tree the general parse gives, or is left to it (NULL). */
#include <string.h>

#include <jansson.h>

#include "json.h"
#include "rev2026.h"
#include "test.h"

#define META "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientCapabilities\":{\"roots\":{}}}"

/* fast: 1 when the reading must take the text, 0 when it must leave it. */
static void same(const char *text, int fast) {
  json_t *a = mcp_rev2026_parse(text, strlen(text)), *b = mcp_json_parse(text, strlen(text), NULL, 0);
  CHECK((a != NULL) == fast, "%s: read %s", text, a ? "fast" : "by the parse");
  if (a != NULL) CHECK(b != NULL && json_equal(a, b), "%s: a tree unlike the parse's", text);
  json_decref(a);
  json_decref(b);
}

int main(void) {
  /* as a mount sends it, then again with the kept _meta, then others' */
  same("{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"arguments\":{\"text\":\"hi\"},\"name\":\"echo\",\"_meta\":" META
       "},\"method\":\"tools/call\"}", 1);
  same("{\"jsonrpc\":\"2.0\",\"id\":2,\"params\":{\"arguments\":{\"text\":\"hi\"},\"name\":\"echo\",\"_meta\":" META
       "},\"method\":\"tools/call\"}", 1);
  for (int i = 0; i < 6; i++) {       /* more clients than are kept */
    char text[400];
    snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\",\"params\":"
             "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"n\":%d}}}", i, i % 5);
    same(text, 1);
  }
  /* the _meta first, alone, last, with white space */
  same("{\"id\":1,\"params\":{\"_meta\":" META ",\"name\":\"echo\"}}", 1);
  same("{\"id\":1,\"params\":{\"_meta\":" META "}}", 1);
  same(" { \"id\" : 1 , \"params\" : { \"name\" : \"a\" ,\n \"_meta\" : " META " \t} } ", 1);
  same("{\"params\":{ \"_meta\" : " META " , \"name\":\"a\\u0062\"},\"id\":\"x\\\"y\"}", 1);
  same("{\"params\":{\"a\":[{\"_meta\":{}},\"_meta\"],\"_meta\":" META "}}", 1);
  /* invalid texts stay invalid, after a kept _meta too */
  same("{\"params\":{\"_meta\":" META "}}", 1);
  same("{\"params\":{\"_meta\":" META " x}}", 0);
  same("{\"params\":{\"_meta\":" META "\"\"}}", 0);
  same("{\"params\":{\"_meta\":" META "}", 0);
  same("{\"params\":{\"_meta\":" META, 0);
  same("{\"params\":{\"_meta\":" META ",}}", 0);
  same("{\"params\":{\"a\":1,\"_meta\":" META ",}}", 0);
  same("{\"params\":{\"a\":1 \"_meta\":" META "}}", 0);
  same("{\"params\":{\"a\":1,\"_meta\":" META "}", 0);
  same("{\"params\":{\"a\":1,,\"_meta\":" META "}}", 0);
  same("{\"params\":{\"a\":1,\"_meta\":" META "}}}", 0);
  same("{\"params\":{\"a\":\"\xff\",\"_meta\":" META "}}", 0);
  same("{\"params\":{\"_meta\":{\"a\":}}}", 0);
  /* left to the parse: escaped keys, a member twice, a _meta not an object,
   * one that is not params', a _meta inside a key's text */
  same("{\"params\":{\"_met\\u0061\":{\"a\":1},\"_meta\":" META "}}", 0);
  same("{\"par\\u0061ms\":{\"_meta\":{\"a\":1}},\"params\":{\"_meta\":" META "}}", 0);
  same("{\"params\":{\"_meta\":" META ",\"_meta\":{\"a\":2}}}", 0);
  same("{\"params\":{\"_meta\":" META "},\"params\":{}}", 0);
  same("{\"params\":{\"_meta\":[1]}}", 0);
  same("{\"params\":{\"_meta\":null}}", 0);
  same("{\"params\":[{\"_meta\":{}}]}", 0);
  same("{\"result\":{\"_meta\":" META "}}", 0);
  same("{\"params\":{\"x\\\"_meta\":{\"a\":1}}}", 0);
  same("[{\"params\":{\"_meta\":" META "}}]", 0);
  same("{\"id\":3,\"method\":\"tools/call\",\"params\":{\"_meta\":{\"progressToken\":3}}}", 0);   /* a session's */
  TEST_END("rev2026_meta");
}
