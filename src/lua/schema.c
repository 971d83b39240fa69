/* Tool input validation: a JSON Schema subset (type, properties, required,
 * additionalProperties, enum, const, items, minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems,
 * maxItems) compiled once per schema table into a tree of C nodes, then
 * checked against Lua values with no Lua call: in Lua every builtin a check
 * needs (type, next, pairs) is a C call that costs more than the check.
 *
 * core.validate(schema, value) -> true | nil, message. The compiled form is
 * cached in a weak table keyed by the schema table (the registry's
 * mcp.schema.cache; the C path keeps a tool's compiled form in its entry); a reload makes new
 * schema tables, so a changed schema is compiled again. A schema changed in
 * place after its first use is not seen (tools declare theirs once).
 *
 * Ownership: a compiled schema is a userdata whose __gc frees every node
 * (each allocation is linked from it as it is made, so an error half-way
 * through a compile leaks nothing). Its user value is a table keeping the
 * Lua values the nodes refer to by index: property names, const and enum
 * values, the limits (compared and printed as Lua would). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "json.h"
#include "schema.h"
#include "weak.h"

#define SCHEMA_MT "mcp.schema"
#define MAX_NEST 64              /* schema nesting (a schema may contain itself) */
#define MAX_PATH MCP_JSON_MAX_DEPTH

enum {
  T_NULL = 1, T_BOOLEAN = 2, T_INTEGER = 4, T_NUMBER = 8, T_STRING = 16, T_ARRAY = 32,
  T_OBJECT = 64, T_OTHER = 128
};
enum { EXTRA_ALLOWED, EXTRA_REFUSED, EXTRA_CHECKED };

typedef struct snode snode;
typedef struct sprop {
  const char *name;
  size_t len;
  int name_idx;                /* in the keep table */
  snode *node;
} sprop;

struct snode {
  int has_type;
  unsigned types;              /* the JSON types allowed (unknown names add none) */
  int want_idx;                /* "object", "string or null": for messages */
  int const_idx, enum_idx;     /* 0: none */
  int min_idx, max_idx, xmin_idx, xmax_idx;
  int minlen_idx, maxlen_idx, minitems_idx, maxitems_idx;
  int want_array;              /* type is "array": an empty object passes as one */
  snode *items;
  sprop *props;
  int nprops;
  int *required;               /* keep indices of the required names */
  int nrequired;
  int extra;
  snode *extra_node;
};

typedef struct block { struct block *next; } block;
typedef struct compiled {
  snode *root;
  block *blocks;               /* every allocation of the tree */
} compiled;

typedef struct compiler {
  lua_State *L;
  compiled *cs;
  int keep;                    /* stack index of the keep table */
  int nkeep;
} compiler;

static void *alloc(compiler *k, size_t size) {
  block *b = calloc(1, sizeof(block) + size);
  if (b == NULL) luaL_error(k->L, "not enough memory to compile a schema");
  b->next = k->cs->blocks;
  k->cs->blocks = b;
  return b + 1;
}

/* Keep the value on top (popped); its index. */
static int keep(compiler *k) {
  lua_rawseti(k->L, k->keep, ++k->nkeep);
  return k->nkeep;
}

static unsigned type_bit(const char *t) {
  static const char *const names[] = { "null", "boolean", "integer", "number", "string", "array",
                                       "object", NULL };
  for (int i = 0; names[i]; i++)
    if (strcmp(t, names[i]) == 0) return 1u << i;
  return 0;
}

/* The number field f of the schema at idx, kept: its index, or 0. */
static int keep_number(compiler *k, int idx, const char *f) {
  if (lua_getfield(k->L, idx, f) != LUA_TNUMBER) {
    lua_pop(k->L, 1);
    return 0;
  }
  return keep(k);
}

static snode *compile(compiler *k, int idx, int nest);

static void compile_type(compiler *k, snode *n, int idx) {
  lua_State *L = k->L;
  int t = lua_getfield(L, idx, "type");
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  n->has_type = 1;
  if (t == LUA_TTABLE) {
    luaL_Buffer b;
    int tt = lua_gettop(L);
    lua_Integer len = luaL_len(L, tt);
    luaL_buffinit(L, &b);
    for (lua_Integer i = 1; i <= len; i++) {
      if (i > 1) luaL_addstring(&b, " or ");
      int et = lua_rawgeti(L, tt, i);
      if (et != LUA_TSTRING && et != LUA_TNUMBER)   /* as table.concat */
        luaL_error(L, "invalid value (at index %d) in a schema's type list", (int)i);
      if (et == LUA_TSTRING) n->types |= type_bit(lua_tostring(L, -1));
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    n->want_idx = keep(k);
    lua_pop(L, 1);
  } else {
    if (t == LUA_TSTRING) {
      n->types = type_bit(lua_tostring(L, -1));
      n->want_array = strcmp(lua_tostring(L, -1), "array") == 0;
    }
    luaL_tolstring(L, -1, NULL);
    n->want_idx = keep(k);
    lua_pop(L, 1);
  }
}

static void compile_object(compiler *k, snode *n, int idx, int nest) {
  lua_State *L = k->L;
  if (lua_getfield(L, idx, "required") == LUA_TTABLE) {
    int r = lua_gettop(L);
    lua_Integer len = luaL_len(L, r);
    n->required = alloc(k, sizeof(int) * (size_t)(len > 0 ? len : 1));
    for (lua_Integer i = 1; i <= len; i++) {
      if (lua_rawgeti(L, r, i) == LUA_TNIL) {    /* ipairs stops at the first nil */
        lua_pop(L, 1);
        break;
      }
      n->required[n->nrequired++] = keep(k);
    }
  }
  lua_pop(L, 1);
  if (lua_getfield(L, idx, "properties") == LUA_TTABLE) {
    int p = lua_gettop(L), count = 0;
    lua_pushnil(L);
    while (lua_next(L, p)) count++, lua_pop(L, 1);
    n->props = alloc(k, sizeof(sprop) * (size_t)(count > 0 ? count : 1));
    lua_pushnil(L);
    while (lua_next(L, p)) {                    /* key value */
      sprop *sp = &n->props[n->nprops++];
      sp->node = compile(k, lua_gettop(L), nest + 1);
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      if (lua_type(L, -1) == LUA_TSTRING) sp->name = lua_tolstring(L, -1, &sp->len);
      sp->name_idx = keep(k);                   /* a string stays where it is while kept */
    }
  }
  lua_pop(L, 1);
  int t = lua_getfield(L, idx, "additionalProperties");
  if (t == LUA_TBOOLEAN && !lua_toboolean(L, -1)) n->extra = EXTRA_REFUSED;
  else if (t == LUA_TTABLE) {
    n->extra = EXTRA_CHECKED;
    n->extra_node = compile(k, lua_gettop(L), nest + 1);
  }
  lua_pop(L, 1);
}

static snode *compile(compiler *k, int idx, int nest) {
  lua_State *L = k->L;
  snode *n = alloc(k, sizeof *n);
  if (lua_type(L, idx) != LUA_TTABLE) return n;  /* anything goes */
  if (nest > MAX_NEST)
    luaL_error(L, "schema nested deeper than %d (does it contain itself?)", MAX_NEST);
  luaL_checkstack(L, 8, "schema");
  compile_type(k, n, idx);
  if (lua_getfield(L, idx, "const") != LUA_TNIL) n->const_idx = keep(k); else lua_pop(L, 1);
  if (lua_getfield(L, idx, "enum") != LUA_TNIL) n->enum_idx = keep(k); else lua_pop(L, 1);
  n->min_idx = keep_number(k, idx, "minimum");
  n->max_idx = keep_number(k, idx, "maximum");
  n->xmin_idx = keep_number(k, idx, "exclusiveMinimum");
  n->xmax_idx = keep_number(k, idx, "exclusiveMaximum");
  n->minlen_idx = keep_number(k, idx, "minLength");
  n->maxlen_idx = keep_number(k, idx, "maxLength");
  n->minitems_idx = keep_number(k, idx, "minItems");
  n->maxitems_idx = keep_number(k, idx, "maxItems");
  if (lua_getfield(L, idx, "items") != LUA_TNIL) n->items = compile(k, lua_gettop(L), nest + 1);
  lua_pop(L, 1);
  compile_object(k, n, idx, nest);
  return n;
}

static int compiled_gc(lua_State *L) {
  compiled *cs = luaL_checkudata(L, 1, SCHEMA_MT);
  while (cs->blocks) {
    block *b = cs->blocks;
    cs->blocks = b->next;
    free(b);
  }
  cs->root = NULL;
  return 0;
}

/* Checking. A failure leaves the path from the value checked to where it
 * failed in seg[], and the reason on the Lua stack. */

typedef struct seg {
  int index;                   /* >= 0: an array index (0-based); -1: a key at idx */
  int key;                     /* stack index of the key (kept on the stack while unwinding) */
} seg;

typedef struct checker {
  lua_State *L;
  int keep;                    /* stack index of the keep table */
  int array_mt;                /* stack index of the array metatable (nil until first needed) */
  int have_mt;                 /* fetched: there */
  seg path[MAX_PATH];
  int depth;
} checker;

static int is_array(checker *c, int v) {
  lua_Integer n, count = 0;
  if (lua_getmetatable(c->L, v)) {
    int yes;
    if (!c->have_mt) {
      luaL_getmetatable(c->L, MCP_JSON_ARRAY_MT);
      lua_replace(c->L, c->array_mt);
      c->have_mt = 1;
    }
    yes = lua_rawequal(c->L, -1, c->array_mt);
    lua_pop(c->L, 1);
    if (yes) return 1;
  }
  n = (lua_Integer)lua_rawlen(c->L, v);
  if (n == 0) return 0;
  lua_pushnil(c->L);
  while (lua_next(c->L, v)) count++, lua_pop(c->L, 1);
  return count == n;
}

static unsigned value_type(checker *c, int v) {
  switch (lua_type(c->L, v)) {
    case LUA_TTABLE: return is_array(c, v) ? T_ARRAY : T_OBJECT;
    case LUA_TNUMBER: return lua_isinteger(c->L, v) ? T_INTEGER : T_NUMBER;
    case LUA_TSTRING: return T_STRING;
    case LUA_TBOOLEAN: return T_BOOLEAN;
    case LUA_TLIGHTUSERDATA: return lua_touserdata(c->L, v) == NULL ? T_NULL : T_OTHER;
    default: return T_OTHER;
  }
}

static const char *type_name(checker *c, unsigned t, int v) {
  switch (t) {
    case T_NULL: return "null";
    case T_BOOLEAN: return "boolean";
    case T_INTEGER: return "integer";
    case T_NUMBER: return "number";
    case T_STRING: return "string";
    case T_ARRAY: return "array";
    case T_OBJECT: return "object";
    default: return luaL_typename(c->L, v);
  }
}

static int empty_table(lua_State *L, int v) {
  lua_pushnil(L);
  if (lua_next(L, v) == 0) return 1;
  lua_pop(L, 2);
  return 0;
}

static int type_ok(checker *c, const snode *n, unsigned have, int v) {
  if (n->types & have) return 1;
  if ((n->types & T_NUMBER) && have == T_INTEGER) return 1;
  if ((n->types & T_INTEGER) && have == T_NUMBER) {
    lua_Number d = lua_tonumber(c->L, v);
    if (d == floor(d)) return 1;
  }
  /* an empty table is both an empty object and an empty array */
  return (n->types & T_ARRAY) && have == T_OBJECT && empty_table(c->L, v);
}

/* Deep equality of the values at a and b: Lua's == for numbers; tables with
 * the same keys and equal values. */
static int equal(lua_State *L, int a, int b, int nest) {
  a = lua_absindex(L, a), b = lua_absindex(L, b);
  if (lua_rawequal(L, a, b)) return 1;
  if (lua_type(L, a) == LUA_TNUMBER && lua_type(L, b) == LUA_TNUMBER)
    return lua_compare(L, a, b, LUA_OPEQ);
  if (lua_type(L, a) != LUA_TTABLE || lua_type(L, b) != LUA_TTABLE || nest > MAX_NEST) return 0;
  luaL_checkstack(L, 4, "schema");
  lua_pushnil(L);
  while (lua_next(L, a)) {                    /* every pair of a is in b */
    lua_pushvalue(L, -2);
    lua_rawget(L, b);
    if (!equal(L, -2, -1, nest + 1)) {
      lua_pop(L, 3);
      return 0;
    }
    lua_pop(L, 2);
  }
  lua_pushnil(L);
  while (lua_next(L, b)) {                    /* and b has no other key */
    lua_pushvalue(L, -2);
    if (lua_rawget(L, a) == LUA_TNIL) {
      lua_pop(L, 3);
      return 0;
    }
    lua_pop(L, 2);
  }
  return 1;
}

/* Fail with a message: pushes fmt with the limit kept at idx for %s, and
 * unit (if any) after it ("1 character", "2 characters"); returns 0. */
static int fail(checker *c, const char *fmt, int idx, const char *unit) {
  lua_State *L = c->L;
  int one;
  lua_rawgeti(L, c->keep, idx);
  one = lua_tonumber(L, -1) == 1;
  luaL_tolstring(L, -1, NULL);
  if (unit != NULL) lua_pushfstring(L, "%s %s%s", lua_tostring(L, -1), unit, one ? "" : "s");
  lua_pushfstring(L, fmt, lua_tostring(L, -1));
  return 0;
}

static int fail_json(checker *c, const char *prefix, int idx) {
  lua_State *L = c->L;
  mcp_buf b = MCP_BUF_INIT;
  char err[128];
  lua_rawgeti(L, c->keep, idx);
  lua_pushstring(L, prefix);
  if (mcp_json_encode(L, -2, &b, err, sizeof err) == 0)
    lua_pushlstring(L, b.data ? b.data : "", b.len);
  else
    lua_pushliteral(L, "nil");
  lua_concat(L, 2);
  mcp_buf_free(&b);
  return 0;
}

/* A limit of the schema: the value breaks it when comparing it with the
 * limit kept at idx (0: none) by op gives `when`. Lua's comparison, so
 * integers and floats mix as in Lua. */
typedef struct limit {
  int idx, op, when;
  const char *fmt;             /* the message, %s the limit as Lua prints it */
  const char *unit;            /* counted after the limit (singular), or NULL */
} limit;

static int within(checker *c, int v, const limit *l, int n) {
  for (int i = 0; i < n; i++) {
    int r;
    if (l[i].idx == 0) continue;
    lua_rawgeti(c->L, c->keep, l[i].idx);
    r = lua_compare(c->L, v, -1, l[i].op);
    lua_pop(c->L, 1);
    if (r == l[i].when) return fail(c, l[i].fmt, l[i].idx, l[i].unit);
  }
  return 1;
}

static int check(checker *c, const snode *n, int v);

static int check_child(checker *c, const snode *n, int v, int index, int key) {
  int ok;
  if (c->depth >= MAX_PATH) return 1;        /* deeper than any decoded value */
  c->path[c->depth].index = index;
  c->path[c->depth].key = key;
  c->depth++;
  ok = check(c, n, v);
  if (ok) c->depth--;                        /* a failure keeps its path */
  return ok;
}

static int check_array(checker *c, const snode *n, int v) {
  lua_State *L = c->L;
  lua_Integer len = (lua_Integer)lua_rawlen(L, v);
  limit items[] = { { n->minitems_idx, LUA_OPLT, 1, "needs at least %s", "item" },
                    { n->maxitems_idx, LUA_OPLE, 0, "allows at most %s", "item" } };
  lua_pushinteger(L, len);
  if (!within(c, lua_gettop(L), items, 2)) return 0;
  lua_pop(L, 1);
  if (n->items == NULL) return 1;
  for (lua_Integer i = 1; i <= len; i++) {
    lua_rawgeti(L, v, i);
    if (!check_child(c, n->items, lua_gettop(L), (int)(i - 1), 0)) return 0;
    lua_pop(L, 1);
  }
  return 1;
}

static const sprop *find_prop(checker *c, const snode *n, int key) {
  size_t len;
  const char *s;
  if (lua_type(c->L, key) != LUA_TSTRING) return NULL;
  s = lua_tolstring(c->L, key, &len);
  for (int i = 0; i < n->nprops; i++)
    if (n->props[i].name && n->props[i].len == len && memcmp(n->props[i].name, s, len) == 0)
      return &n->props[i];
  return NULL;
}

static int check_object(checker *c, const snode *n, int v) {
  lua_State *L = c->L;
  for (int i = 0; i < n->nrequired; i++) {
    lua_rawgeti(L, c->keep, n->required[i]);   /* the key: stays for the path */
    lua_pushvalue(L, -1);
    if (lua_rawget(L, v) == LUA_TNIL) {
      lua_pop(L, 1);
      c->path[c->depth].index = -1;
      c->path[c->depth].key = lua_gettop(L);
      c->depth++;
      lua_pushliteral(L, "required");
      return 0;
    }
    lua_pop(L, 2);
  }
  if (n->extra == EXTRA_ALLOWED) {             /* only the declared properties matter */
    for (int i = 0; i < n->nprops; i++) {
      lua_rawgeti(L, c->keep, n->props[i].name_idx);
      lua_pushvalue(L, -1);
      if (lua_rawget(L, v) != LUA_TNIL &&
          !check_child(c, n->props[i].node, lua_gettop(L), -1, lua_gettop(L) - 1))
        return 0;
      lua_pop(L, 2);
    }
    return 1;
  }
  lua_pushnil(L);
  while (lua_next(L, v)) {                     /* key value */
    int key = lua_gettop(L) - 1;
    const sprop *p = find_prop(c, n, key);
    const snode *sub = p ? p->node : n->extra_node;
    if (sub == NULL) {                         /* EXTRA_REFUSED */
      lua_pop(L, 1);
      c->path[c->depth].index = -1;
      c->path[c->depth].key = key;
      c->depth++;
      lua_pushliteral(L, "unknown property");
      return 0;
    }
    if (!check_child(c, sub, key + 1, -1, key)) return 0;
    lua_pop(L, 1);
  }
  return 1;
}

static int check(checker *c, const snode *n, int v) {
  lua_State *L = c->L;
  unsigned have = value_type(c, v);
  luaL_checkstack(L, 8, "schema");
  if (n->has_type && !type_ok(c, n, have, v)) {
    lua_rawgeti(L, c->keep, n->want_idx);
    lua_pushfstring(L, "expected %s, got %s", lua_tostring(L, -1), type_name(c, have, v));
    return 0;
  }
  if (n->const_idx) {
    lua_rawgeti(L, c->keep, n->const_idx);
    if (!equal(L, -1, v, 0)) return fail_json(c, "must be ", n->const_idx);
    lua_pop(L, 1);
  }
  if (n->enum_idx) {
    int e, found = 0;
    lua_rawgeti(L, c->keep, n->enum_idx);
    e = lua_gettop(L);
    for (lua_Integer i = 1; !found && lua_type(L, e) == LUA_TTABLE; i++) {
      if (lua_rawgeti(L, e, i) == LUA_TNIL) {  /* as ipairs */
        lua_pop(L, 1);
        break;
      }
      found = equal(L, -1, v, 0);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (!found) return fail_json(c, "must be one of ", n->enum_idx);
  }
  if (have == T_INTEGER || have == T_NUMBER) {
    limit range[] = { { n->min_idx, LUA_OPLT, 1, "must be >= %s", NULL },
                      { n->max_idx, LUA_OPLE, 0, "must be <= %s", NULL },
                      { n->xmin_idx, LUA_OPLE, 1, "must be > %s", NULL },
                      { n->xmax_idx, LUA_OPLT, 0, "must be < %s", NULL } };
    if (!within(c, v, range, 4)) return 0;
  } else if (have == T_STRING && (n->minlen_idx || n->maxlen_idx)) {
    size_t len, chars = 0, i = 0;
    const unsigned char *s = (const unsigned char *)lua_tolstring(L, v, &len);
    while (i < len) {                          /* utf8.len, or the byte length when invalid */
      size_t k = s[i] < 0x80 ? 1 : mcp_utf8_len(s + i, len - i);
      if (k == 0) {
        chars = len;
        break;
      }
      i += k, chars++;
    }
    limit length[] = { { n->minlen_idx, LUA_OPLT, 1, "must be at least %s", "character" },
                       { n->maxlen_idx, LUA_OPLE, 0, "must be at most %s", "character" } };
    lua_pushinteger(L, (lua_Integer)chars);
    if (!within(c, lua_gettop(L), length, 2)) return 0;
    lua_pop(L, 1);
  } else if (have == T_ARRAY || (have == T_OBJECT && n->want_array && empty_table(L, v))) {
    if (!check_array(c, n, v)) return 0;
  }
  if (have == T_OBJECT && !check_object(c, n, v)) return 0;
  return 1;
}

/* "arguments", or the path of the failure: a.b[0].c */
static void push_path(checker *c) {
  luaL_Buffer b;
  lua_State *L = c->L;
  if (c->depth == 0) {
    lua_pushliteral(L, "arguments");
    return;
  }
  luaL_buffinit(L, &b);
  for (int i = 0; i < c->depth; i++) {
    if (c->path[i].index >= 0) {
      lua_pushfstring(L, "[%d]", c->path[i].index);
    } else {
      if (i > 0) luaL_addchar(&b, '.');
      luaL_tolstring(L, c->path[i].key, NULL);
    }
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
}

#define CACHE_KEY "mcp.schema.cache"   /* schema table -> compiled, weak keys */

/* Push the compiled form of the schema at idx, from the cache at cache. */
static void push_compiled(lua_State *L, int schema, int cache) {
  schema = lua_absindex(L, schema);
  cache = lua_absindex(L, cache);
  lua_pushvalue(L, schema);
  if (lua_rawget(L, cache) == LUA_TNIL) {
    compiler k = { L, NULL, 0, 0 };
    lua_pop(L, 1);
    k.cs = lua_newuserdatauv(L, sizeof *k.cs, 1);
    memset(k.cs, 0, sizeof *k.cs);
    luaL_setmetatable(L, SCHEMA_MT);
    lua_newtable(L);
    k.keep = lua_gettop(L);
    k.cs->root = compile(&k, schema, 0);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, schema);
    lua_pushvalue(L, -2);
    lua_rawset(L, cache);
  }
}

void mcp_schema_push_compiled(lua_State *L, int schema) {
  schema = lua_absindex(L, schema);
  lua_getfield(L, LUA_REGISTRYINDEX, CACHE_KEY);
  push_compiled(L, schema, -1);
  lua_remove(L, -2);                           /* stack: compiled */
}

int mcp_schema_check(lua_State *L, int compiled_idx, int value) {
  checker c;
  const compiled *cs = lua_touserdata(L, compiled_idx);   /* mcp_schema_push_compiled's */
  int top = lua_gettop(L);
  value = lua_absindex(L, value);
  lua_getiuservalue(L, compiled_idx, 1);       /* keep */
  lua_pushnil(L);                              /* the array metatable's place */
  c.L = L;
  c.keep = top + 1;
  c.array_mt = top + 2;
  c.have_mt = 0;
  c.depth = 0;
  if (check(&c, cs->root, value)) {
    lua_settop(L, top);
    return 1;
  }
  int why = lua_gettop(L);
  push_path(&c);
  lua_pushfstring(L, "%s: %s", lua_tostring(L, -1), lua_tostring(L, why));
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return 0;
}

/* core.validate(schema, value): true, or nil and a message naming the field. */
static int l_validate(lua_State *L) {
  lua_settop(L, 2);
  if (lua_type(L, 1) != LUA_TTABLE) {
    lua_pushboolean(L, 1);
    return 1;
  }
  push_compiled(L, 1, lua_upvalueindex(1));    /* 3 */
  if (mcp_schema_check(L, 3, 2)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

void mcp_schema_open_lib(lua_State *L) {
  if (luaL_newmetatable(L, SCHEMA_MT)) {
    lua_pushcfunction(L, compiled_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  mcp_weak_table(L, "k");
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, CACHE_KEY);
  lua_pushcclosure(L, l_validate, 1);
  lua_setfield(L, -2, "validate");
}
