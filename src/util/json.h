/* JSON <-> Lua values, and JSON text. jparse.c turns JSON text into values
 * (jansson's or Lua's), json.c turns values into JSON text; nothing else
 * does either.
 *
 * In Lua: objects are tables, arrays are tables with the array metatable
 * (mcp.array), null is mcp.null (a NULL light userdata, as cjson.null).
 * Integers stay integers (int64, exact); reals are floats. */
#ifndef MCP_JSON_H
#define MCP_JSON_H

#include <jansson.h>
#include <lua.h>

#include "buf.h"

#define MCP_JSON_ARRAY_MT "mcp.array"
/* A table with this metatable is encoded as its [1], JSON text spliced in as
 * is (core.json_raw: text the server encoded itself, sent on untouched). */
#define MCP_JSON_RAW_MT "mcp.json_raw"

#define MCP_JSON_MAX_DEPTH 256     /* objects and arrays nested in one text or value */

/* Parse one JSON text (jparse.c). On failure returns NULL and writes a
 * message naming the byte offset to err (unless err is NULL). */
json_t *mcp_json_parse(const char *s, size_t n, char *err, size_t errlen);
/* The same straight to Lua: pushes the value and returns 0, or pushes
 * nothing and returns -1 with the message in err. Raises a Lua error on
 * out of memory: call it protected. */
int mcp_json_decode(lua_State *L, const char *s, size_t n, char *err, size_t errlen);
/* A JSON-RPC response with a result object, for passing the result on
 * untouched: pushes the message with its other members decoded, its result
 * a core.json_raw table (without resultType, ttlMs and cacheScope) and the
 * resultType, if any, as result_type; returns 0. Anything else (invalid
 * JSON included) pushes nothing and returns -1: decode it the usual way.
 * Raises a Lua error on out of memory. */
int mcp_json_decode_response(lua_State *L, const char *s, size_t n);
/* The same without Lua (the C forward, src/lua/forward.c): a response
 * whose id is an integer (in *id) and whose result is an object, not
 * input_required: its text, as decode_response keeps it, in out; returns 1.
 * 0: a response with such an id, anything else (an error, input_required,
 * a result not an object); -1: not such a response; -2: not read here
 * (not valid, or too many members: parse it the usual way). */
int mcp_json_response_text(const char *s, size_t n, long long *id, mcp_buf *out);
/* An object's member, read as text (mcp_json_members). */
typedef struct {
  char key[16];                        /* the key unescaped; "" when longer */
  const char *k, *v;                   /* the key's text (quoted), the value's text */
  size_t kn, vn;
} mcp_json_member;
/* The members of the object that is the whole text [s, s+n), checked as
 * mcp_json_parse checks them (but for \u0000 in a key) and nothing built:
 * how many, or -1 when the text is not a valid object or has more than max. */
int mcp_json_members(const char *s, size_t n, mcp_json_member *m, int max);
/* The length of a JSON text at s [s, s+n) that the caller knows to be a
 * valid value (checked by mcp_json_parse before, as a whole), or 0. */
typedef size_t (*mcp_json_known)(const char *s, size_t n);
/* The same, with the members of the object under subkey (the last such
 * member's, when its value is an object) in sub, read in the same walk:
 * *nsub of them, -1 when there was none. An object value of sub's members
 * that known (unless NULL) recognises is passed over unread. */
int mcp_json_members_in(const char *s, size_t n, mcp_json_member *m, int max, const char *subkey,
                        mcp_json_member *sub, int *nsub, mcp_json_known known);
/* Append the compact JSON text of v. */
void mcp_json_dump(const json_t *v, mcp_buf *b);
/* Push v as a Lua value. Raises a Lua error on out of memory: call it protected. */
void mcp_json_push(lua_State *L, const json_t *v);
/* Append the JSON text of the Lua value at idx. Returns 0, or -1 with a
 * message in err (the buffer is then restored to its old length). */
int mcp_json_encode(lua_State *L, int idx, mcp_buf *b, char *err, size_t errlen);
/* Append s as a JSON string; invalid UTF-8 becomes U+FFFD. */
void mcp_json_add_string(mcp_buf *b, const char *s, size_t n);
/* The length of the valid UTF-8 sequence at s, or 0 (overlong, surrogate,
 * past U+10FFFF, truncated). */
size_t mcp_utf8_len(const unsigned char *s, size_t n);
/* Create the array metatable in the registry (once per state). */
void mcp_json_open(lua_State *L);

#endif
