/* One pass from JSON text (RFC 8259) to values: a jansson tree for the
 * protocol layer (mcp_json_parse), or Lua values straight onto a stack for
 * handlers (mcp_json_decode), with no tree between text and Lua.
 *
 * Strict: UTF-8 is checked (overlongs and surrogates refused), \u escapes
 * must pair their surrogates, integers stay exact int64 (one past the range
 * is an error, never rounded), nesting stops at MCP_JSON_MAX_DEPTH, and
 * nothing but white space may follow the value. \u0000 is allowed in
 * strings; Lua keys may hold it too, jansson keys may not. */
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "json.h"

typedef struct jparse {
  const unsigned char *start, *p, *end;
  lua_State *L;          /* Lua mode when set; jansson mode otherwise */
  int skip;              /* check only: nothing is built (neither mode) */
  int base;              /* Lua mode: the stack's top before the value */
  int mt;                /* Lua mode: the array metatable's index (base + 1), 0 before the first array */
  mcp_buf *str;          /* a string with escapes, unescaped (the static scratch) */
  const char *why;       /* what went wrong, at p */
} jparse;

/* Strings with escapes are unescaped here: kept between texts (and never
 * lost when a Lua memory error unwinds a decode), trimmed when big. */
static mcp_buf scratch;

static int fail(jparse *j, const char *why) {
  j->why = why;
  return -1;
}

/* Scans run on locals: a store through j->p (a char pointer) would make
 * the compiler load j->p and j->end again at every byte. */
static void skip_ws(jparse *j) {
  const unsigned char *p = j->p, *end = j->end;
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  j->p = p;
}

static int hex4(const unsigned char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = s[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (c | 0x20) - 'a' + 10;
    else return -1;
    v = v << 4 | d;
  }
  *out = v;
  return 0;
}

static void add_utf8(mcp_buf *b, unsigned cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) u[0] = (char)cp, n = 1;
  else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  } else {
    u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  }
  mcp_buf_add(b, u, n);
}

/* One escape after its backslash (p at the backslash), appended to str. */
static int escape(jparse *j) {
  const unsigned char *p = j->p + 1;
  unsigned cp, lo;
  if (p >= j->end) return fail(j, "unterminated string");
  switch (*p) {
    case '"': case '\\': case '/': mcp_buf_addc(j->str, (char)*p); j->p = p + 1; return 0;
    case 'b': mcp_buf_addc(j->str, '\b'); j->p = p + 1; return 0;
    case 'f': mcp_buf_addc(j->str, '\f'); j->p = p + 1; return 0;
    case 'n': mcp_buf_addc(j->str, '\n'); j->p = p + 1; return 0;
    case 'r': mcp_buf_addc(j->str, '\r'); j->p = p + 1; return 0;
    case 't': mcp_buf_addc(j->str, '\t'); j->p = p + 1; return 0;
    case 'u': break;
    default: return fail(j, "invalid escape");
  }
  if (j->end - p < 5 || hex4(p + 1, &cp) != 0) return fail(j, "invalid \\u escape");
  p += 5;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(j, "invalid \\u escape: a lone low surrogate");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (j->end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) != 0 || lo < 0xDC00 ||
        lo > 0xDFFF)
      return fail(j, "invalid \\u escape: a high surrogate without its low one");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    p += 6;
  }
  add_utf8(j->str, cp);
  j->p = p;
  return 0;
}

/* Bytes a string passes through as they are: printable ASCII but '"' and '\\'. */
static const unsigned char plain[256] = {
#define P16 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
  [0x20] = 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,   /* 0x22 '"' */
  [0x30] = P16, P16,
  [0x50] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,   /* 0x5C '\\' */
  [0x60] = P16, P16,
#undef P16
};

/* The first byte at p that is not plain, 8 at a time (a word's lowest flag
 * is exact: borrows only run up from a byte that is flagged itself). */
#define ONES 0x0101010101010101ull
#define HIGH 0x8080808080808080ull

static const unsigned char *plain_run(const unsigned char *p, const unsigned char *end) {
  while (end - p >= 8) {
    uint64_t x, q, b, m;
    memcpy(&x, p, 8);
    q = x ^ (ONES * '"');
    b = x ^ (ONES * '\\');
    m = (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - ONES * 0x20) & ~x) | x) & HIGH;
    if (m != 0) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      return p + (__builtin_ctzll(m) >> 3);
#else
      break;
#endif
    }
    p += 8;
  }
  while (p < end && plain[*p]) p++;
  return p;
}

/* A string, p just past its opening quote. Its bytes are a span of the
 * input when it has no escape, else j->str. */
static int string(jparse *j, const char **sp, size_t *sn) {
  const unsigned char *run = j->p;
  int escaped = 0;
  j->str->len = 0;
  for (;;) {
    const unsigned char *p = plain_run(j->p, j->end), *end = j->end;
    j->p = p;
    if (p >= end) return fail(j, "unterminated string");
    unsigned c = *j->p;
    if (c == '"') break;
    if (c < 0x20) return fail(j, "control character in a string");
    if (c == '\\') {
      mcp_buf_add(j->str, run, (size_t)(j->p - run));
      escaped = 1;
      if (escape(j) != 0) return -1;
      run = j->p;
      continue;
    }
    size_t len = mcp_utf8_len(j->p, (size_t)(j->end - j->p));
    if (len == 0) return fail(j, "invalid UTF-8 in a string");
    j->p += len;
  }
  if (escaped) {
    mcp_buf_add(j->str, run, (size_t)(j->p - run));
    *sp = j->str->data ? j->str->data : "";
    *sn = j->str->len;
  } else {
    *sp = (const char *)run;
    *sn = (size_t)(j->p - run);
  }
  j->p++;                                   /* the closing quote */
  return 0;
}

static int digits(jparse *j) {
  const unsigned char *p0 = j->p;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  return j->p > p0 ? 0 : fail(j, "invalid number: a digit expected");
}

/* strtod for the span [s, e): the C locale's '.', whatever setlocale said. */
static double to_double(const unsigned char *s, const unsigned char *e) {
  char buf[64], *copy = buf, *end;
  size_t n = (size_t)(e - s);
  double d;
  if (n >= sizeof buf && (copy = malloc(n + 1)) == NULL) abort();
  memcpy(copy, s, n);
  copy[n] = '\0';
  d = strtod(copy, &end);
  if (*end == '.') {
    char *dot = strchr(copy, '.');
    *dot = localeconv()->decimal_point[0];
    d = strtod(copy, &end);
  }
  if (copy != buf) free(copy);
  return d;
}

static int number(jparse *j, json_t **out) {
  const unsigned char *s = j->p;
  int neg = 0, isint = 1, big = 0;
  uint64_t u = 0;
  if (*j->p == '-') neg = 1, j->p++;
  if (j->p < j->end && *j->p == '0') j->p++;
  else {
    if (j->p >= j->end || *j->p < '1' || *j->p > '9') return fail(j, "invalid number");
    for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++) {
      unsigned d = *j->p - '0';
      if (u > (UINT64_MAX - d) / 10) big = 1;
      else u = u * 10 + d;
    }
  }
  if (j->p < j->end && *j->p == '.') {
    isint = 0, j->p++;
    if (digits(j) != 0) return -1;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    isint = 0, j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (digits(j) != 0) return -1;
  }
  if (isint) {
    int64_t v;
    if (big || u > (uint64_t)INT64_MAX + (uint64_t)neg) {
      j->p = s;
      return fail(j, "integer out of the int64 range");
    }
    v = neg ? (int64_t)(0 - u) : (int64_t)u;       /* two's complement: -2^63 included */
    if (j->L) lua_pushinteger(j->L, (lua_Integer)v);
    else if (!j->skip && (*out = json_integer((json_int_t)v)) == NULL) abort();
    return 0;
  }
  double d = to_double(s, j->p);
  if (isinf(d)) {
    j->p = s;
    return fail(j, "real number out of range");
  }
  if (j->L) lua_pushnumber(j->L, d);
  else if (!j->skip && (*out = json_real(d)) == NULL) abort();
  return 0;
}

static int literal(jparse *j, const char *word, size_t n) {
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) return fail(j, "invalid literal");
  j->p += n;
  return 0;
}

static int value(jparse *j, int depth, json_t **out);

/* Lua mode leaves partial tables on the stack on failure (the caller cuts
 * the stack back); jansson mode frees what it built. */
static int object(jparse *j, int depth, json_t **out) {
  json_t *o = NULL, *v = NULL;
  if (j->L) lua_createtable(j->L, 0, 4);
  else if (!j->skip && (o = json_object()) == NULL) abort();
  j->p++;
  skip_ws(j);
  if (j->p < j->end && *j->p == '}') {
    j->p++;
    *out = o;
    return 0;
  }
  for (;;) {
    const char *k;
    char *kcopy = NULL;
    size_t kn;
    if (j->p >= j->end || *j->p != '"') goto bad_key;
    j->p++;
    if (string(j, &k, &kn) != 0) goto fail;
    if (j->L) lua_pushlstring(j->L, k, kn);
    else if (!j->skip) {
      if (memchr(k, '\0', kn) != NULL) {
        j->why = "\\u0000 in an object key";
        goto fail;
      }
      if (k == j->str->data) {                /* the value's strings reuse str */
        if ((kcopy = malloc(kn + 1)) == NULL) abort();
        memcpy(kcopy, k, kn);
        k = kcopy;
      }
    }
    skip_ws(j);
    if (j->p >= j->end || *j->p != ':') {
      free(kcopy);
      j->why = "':' expected after an object key";
      goto fail;
    }
    j->p++;
    skip_ws(j);
    if (value(j, depth, &v) != 0) {
      free(kcopy);
      goto fail;
    }
    if (j->L) lua_rawset(j->L, -3);
    else if (!j->skip && json_object_setn_new_nocheck(o, k, kn, v) != 0) abort();
    free(kcopy);
    skip_ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      skip_ws(j);
      continue;
    }
    if (j->p < j->end && *j->p == '}') break;
    j->why = "',' or '}' expected in an object";
    goto fail;
  }
  j->p++;
  *out = o;
  return 0;
bad_key:
  j->why = "an object key (a string) expected";
fail:
  if (o) json_decref(o);
  return -1;
}

static int array(jparse *j, int depth, json_t **out) {
  json_t *a = NULL, *v = NULL;
  lua_Integer n = 0;
  if (j->L) lua_createtable(j->L, 0, 0);
  else if (!j->skip && (a = json_array()) == NULL) abort();
  j->p++;
  skip_ws(j);
  if (j->p < j->end && *j->p == ']') goto done;
  for (;;) {
    if (value(j, depth, &v) != 0) goto fail;
    if (j->L) lua_rawseti(j->L, -2, ++n);
    else if (!j->skip && json_array_append_new(a, v) != 0) abort();
    skip_ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      skip_ws(j);
      continue;
    }
    if (j->p < j->end && *j->p == ']') break;
    j->why = "',' or ']' expected in an array";
    goto fail;
  }
done:
  j->p++;
  if (j->L) {
    if (j->mt == 0) {                /* fetched at the first array, put under what is built */
      luaL_getmetatable(j->L, MCP_JSON_ARRAY_MT);
      j->mt = j->base + 1;
      lua_insert(j->L, j->mt);
    }
    lua_pushvalue(j->L, j->mt);
    lua_setmetatable(j->L, -2);
  }
  *out = a;
  return 0;
fail:
  if (a) json_decref(a);
  return -1;
}

/* The value at p (white space skipped): pushed in Lua mode, in *out else. */
static int value(jparse *j, int depth, json_t **out) {
  const char *s;
  size_t n;
  if (j->p >= j->end) return fail(j, "a value expected");
  switch (*j->p) {
    case '{': case '[':
      if (depth >= MCP_JSON_MAX_DEPTH) return fail(j, "nested too deep");
      if (j->L) luaL_checkstack(j->L, 4, "JSON nested too deep");
      return *j->p == '{' ? object(j, depth + 1, out) : array(j, depth + 1, out);
    case '"':
      j->p++;
      if (string(j, &s, &n) != 0) return -1;
      if (j->L) lua_pushlstring(j->L, s, n);
      else if (!j->skip && (*out = json_stringn_nocheck(s, n)) == NULL) abort();
      return 0;
    case 't':
      if (literal(j, "true", 4) != 0) return -1;
      if (j->L) lua_pushboolean(j->L, 1); else if (!j->skip) *out = json_true();
      return 0;
    case 'f':
      if (literal(j, "false", 5) != 0) return -1;
      if (j->L) lua_pushboolean(j->L, 0); else if (!j->skip) *out = json_false();
      return 0;
    case 'n':
      if (literal(j, "null", 4) != 0) return -1;
      if (j->L) lua_pushlightuserdata(j->L, NULL); else if (!j->skip) *out = json_null();
      return 0;
    default:
      if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) return number(j, out);
      return fail(j, "invalid token");
  }
}

static void report(jparse *j, char *err, size_t errlen) {
  size_t off = (size_t)(j->p - j->start), line = 1, col = 1;
  if (err == NULL) return;
  for (const unsigned char *q = j->start; q < j->p; q++) {
    if (*q == '\n') line++, col = 1;
    else col++;
  }
  if (j->p >= j->end) snprintf(err, errlen, "%s at the end of the text (byte %zu)", j->why, off);
  else snprintf(err, errlen, "%s at byte %zu (line %zu column %zu)", j->why, off, line, col);
}

static int run(jparse *j, json_t **out, char *err, size_t errlen) {
  int rc;
  skip_ws(j);
  rc = value(j, 0, out);
  if (rc == 0) {
    skip_ws(j);
    if (j->p < j->end) {
      rc = fail(j, "end of text expected");
      if (out && *out) json_decref(*out), *out = NULL;
    }
  }
  if (rc != 0) report(j, err, errlen);
  if (scratch.cap > 65536) mcp_buf_free(&scratch);
  return rc;
}

json_t *mcp_json_parse(const char *s, size_t n, char *err, size_t errlen) {
  jparse j = { (const unsigned char *)s, (const unsigned char *)s, (const unsigned char *)s + n,
               NULL, 0, 0, 0, &scratch, NULL };
  json_t *v = NULL;
  return run(&j, &v, err, errlen) == 0 ? v : NULL;
}

int mcp_json_decode(lua_State *L, const char *s, size_t n, char *err, size_t errlen) {
  jparse j = { (const unsigned char *)s, (const unsigned char *)s, (const unsigned char *)s + n,
               L, 0, 0, 0, &scratch, NULL };
  int top = lua_gettop(L), rc;
  json_t *unused = NULL;
  luaL_checkstack(L, 8, "JSON decode");
  j.base = top;
  rc = run(&j, &unused, err, errlen);
  if (rc != 0) {
    lua_settop(L, top);
    return -1;
  }
  if (j.mt != 0) lua_remove(L, j.mt);
  return 0;
}

/* Responses passed on (mcp_json_decode_response). */

typedef mcp_json_member member;

#define MAX_MEMBERS 8

static mcp_buf passed;                 /* the result's text (as scratch: kept, trimmed when big) */

/* The members of the object at j->p (its values nested depth deep), checked,
 * none built: how many, or -1 (not an object, not valid, or more than max
 * members). With sub, the members of an object under subkey go there (*nsub
 * of them: the last such key's), read in the same walk. An object value
 * known recognises is passed over. */
static int members(jparse *j, int depth, member *m, int max, const char *subkey, member *sub,
                   int *nsub, mcp_json_known known) {
  size_t kn;
  int n = 0;
  json_t *none = NULL;
  skip_ws(j);
  if (j->p >= j->end || *j->p != '{') return -1;
  j->p++;
  skip_ws(j);
  if (j->p < j->end && *j->p == '}') return j->p++, 0;
  for (;;) {
    const char *key;
    size_t len;
    if (n == max || j->p >= j->end || *j->p != '"') return -1;
    m[n].k = (const char *)j->p++;
    if (string(j, &key, &len) != 0) return -1;
    m[n].kn = (size_t)((const char *)j->p - m[n].k);
    if (len >= sizeof m[n].key) len = 0;
    memcpy(m[n].key, key, len);
    m[n].key[len] = '\0';
    skip_ws(j);
    if (j->p >= j->end || *j->p != ':') return -1;
    j->p++;
    skip_ws(j);
    m[n].v = (const char *)j->p;
    if (sub != NULL && j->p < j->end && *j->p == '{' && strcmp(m[n].key, subkey) == 0) {
      if (depth >= MCP_JSON_MAX_DEPTH || (*nsub = members(j, depth + 1, sub, max, NULL, NULL, NULL, known)) < 0)
        return -1;
    } else if (known != NULL && sub == NULL && j->p < j->end && *j->p == '{' &&
               (kn = known(m[n].v, (size_t)(j->end - j->p))) > 0) {
      j->p += kn;
    } else if (value(j, depth, &none) != 0) {
      return -1;
    }
    m[n].vn = (size_t)((const char *)j->p - m[n].v);
    n++;
    skip_ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      skip_ws(j);
      continue;
    }
    if (j->p < j->end && *j->p == '}') return j->p++, n;
    return -1;
  }
}

int mcp_json_members(const char *s, size_t n, mcp_json_member *m, int max) {
  return mcp_json_members_in(s, n, m, max, NULL, NULL, NULL, NULL);
}

int mcp_json_members_in(const char *s, size_t n, mcp_json_member *m, int max, const char *subkey,
                        mcp_json_member *sub, int *nsub, mcp_json_known known) {
  jparse j = { (const unsigned char *)s, (const unsigned char *)s, (const unsigned char *)s + n,
               NULL, 1, 0, 0, &scratch, NULL };
  int count;
  if (sub != NULL) *nsub = -1;
  count = members(&j, 1, m, max, subkey, sub, nsub, known);
  if (count < 0) return -1;
  skip_ws(&j);
  return j.p == j.end ? count : -1;
}

static int is_key(const member *m, const char *k) { return strcmp(m->key, k) == 0; }

/* The result's members but those a 2026-07-28 result says about itself,
 * into out; the resultType's text in *type (NULL when none). */
static void pass_result_to(mcp_buf *out, const member *res, int nr, const member **type) {
  int first = 1;
  *type = NULL;
  out->len = 0;
  mcp_buf_addc(out, '{');
  for (int i = 0; i < nr; i++) {
    if (is_key(&res[i], "resultType")) *type = &res[i];
    if (is_key(&res[i], "resultType") || is_key(&res[i], "ttlMs") || is_key(&res[i], "cacheScope")) continue;
    if (!first) mcp_buf_addc(out, ',');
    first = 0;
    mcp_buf_add(out, res[i].k, res[i].kn);
    mcp_buf_addc(out, ':');
    mcp_buf_add(out, res[i].v, res[i].vn);
  }
  mcp_buf_addc(out, '}');
}

static void pass_result(const member *res, int nr, const member **type) {
  pass_result_to(&passed, res, nr, type);
}

/* A member's value (checked already): a short integer or a string without
 * escapes (an id, "2.0") pushed from its text, anything else decoded. */
static void push_value(lua_State *L, const member *m) {
  const char *v = m->v;
  size_t i = v[0] == '-', n = m->vn;
  char err[8];
  if (v[0] == '"' && memchr(v + 1, '\\', n - 2) == NULL) {
    lua_pushlstring(L, v + 1, n - 2);
    return;
  }
  while (i < n && v[i] >= '0' && v[i] <= '9') i++;
  if (i == n && n > (size_t)(v[0] == '-') && n < 19) {
    lua_pushinteger(L, (lua_Integer)strtoll(v, NULL, 10));
    return;
  }
  if (mcp_json_decode(L, v, n, err, sizeof err) != 0) lua_pushnil(L);
}

/* An integer id's text: its value in *id, or -1. */
static int int_id(const member *m, long long *id) {
  size_t i = m->v[0] == '-';
  if (m->vn == i || m->vn > 18) return -1;
  for (; i < m->vn; i++)
    if (m->v[i] < '0' || m->v[i] > '9') return -1;
  *id = strtoll(m->v, NULL, 10);
  return 0;
}

int mcp_json_response_text(const char *s, size_t n, long long *id, mcp_buf *out) {
  jparse j = { (const unsigned char *)s, (const unsigned char *)s, (const unsigned char *)s + n,
               NULL, 0, 0, 0, &scratch, NULL };
  member top[MAX_MEMBERS], res[MAX_MEMBERS];
  const member *type;
  int nt, nr = -1, r = -1, haveid = 0, simple = 1;
  j.skip = 1;
  if ((nt = members(&j, 1, top, MAX_MEMBERS, "result", res, &nr, NULL)) < 0) return -2;
  skip_ws(&j);
  if (j.p != j.end) return -2;
  for (int i = 0; i < nt; i++) {
    if (is_key(&top[i], "method")) return -1;
    if (is_key(&top[i], "id")) {
      if (int_id(&top[i], id) != 0) return -1;
      haveid = 1;
    } else if (is_key(&top[i], "jsonrpc")) {
      if (top[i].vn != 5 || memcmp(top[i].v, "\"2.0\"", 5) != 0) return -1;
    } else if (is_key(&top[i], "result")) {
      r = i;
    } else {
      simple = 0;                                     /* an error, or a member Lua should see */
    }
  }
  if (!haveid) return -1;
  if (!simple || r < 0 || *top[r].v != '{') return 0;
  pass_result_to(out, res, nr, &type);
  if (type != NULL && type->vn == 16 && memcmp(type->v, "\"input_required\"", 16) == 0) return 0;
  return 1;
}

int mcp_json_decode_response(lua_State *L, const char *s, size_t n) {
  jparse j = { (const unsigned char *)s, (const unsigned char *)s, (const unsigned char *)s + n,
               NULL, 0, 0, 0, &scratch, NULL };
  member top[MAX_MEMBERS], res[MAX_MEMBERS];
  const member *type;
  int nt, nr = -1, r = -1;
  char err[8];
  j.skip = 1;
  if ((nt = members(&j, 1, top, MAX_MEMBERS, "result", res, &nr, NULL)) < 0) return -1;
  skip_ws(&j);
  if (j.p != j.end) return -1;
  for (int i = 0; i < nt; i++) {
    if (is_key(&top[i], "method") || is_key(&top[i], "error")) return -1;
    if (is_key(&top[i], "result")) r = i;
  }
  if (r < 0 || *top[r].v != '{') return -1;        /* a result that is not an object: decoded */
  pass_result(res, nr, &type);
  luaL_checkstack(L, 8, "JSON decode");
  lua_createtable(L, 0, nt + 1);                     /* stack: msg */
  for (int i = 0; i < nt; i++) {
    if (i == r) continue;
    if (top[i].key[0] != '\0' && memchr(top[i].k, '\\', top[i].kn) == NULL) lua_pushstring(L, top[i].key);
    else if (mcp_json_decode(L, top[i].k, top[i].kn, err, sizeof err) != 0) continue;   /* checked above */
    push_value(L, &top[i]);
    lua_rawset(L, -3);
  }
  if (type != NULL && mcp_json_decode(L, type->v, type->vn, err, sizeof err) == 0)
    lua_setfield(L, -2, "result_type");
  lua_createtable(L, 1, 0);                          /* stack: msg raw */
  lua_pushlstring(L, passed.data, passed.len);
  lua_rawseti(L, -2, 1);
  luaL_setmetatable(L, MCP_JSON_RAW_MT);
  lua_setfield(L, -2, "result");
  if (passed.cap > 65536) mcp_buf_free(&passed);
  return 0;
}
