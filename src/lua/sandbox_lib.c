/* What sandboxed code finds in the string and table libraries (issue 23).
 * The count hook cannot preempt a C function, so the library functions
 * whose time is not bounded by the memory they allocate are replaced, in
 * the one shared string and table tables, by wrappers: trusted code (no
 * budget accounted: mcp_sched_budget) goes straight to Lua's own function;
 * code of a sandboxed plugin gets a bounded one. Pattern matching is a
 * matcher of our own with a time budget (PATTERN_NS per call, and the
 * call's cpu_ms); string.rep of empty pieces, table.concat, table.move and
 * table.sort over too many items are refused. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <uv.h>

#include "sandbox.h"

#define PATTERN_NS  50000000ull       /* one pattern call of a sandboxed plugin: 50 ms at most */
#define TICK        1024              /* steps between looks at the clock */
#define MAX_DEPTH   200               /* the matcher's recursion */
#define MAX_CAPTURES 32
#define MAX_ITEMS   (1 << 20)         /* table.concat, move, sort */
#define CAP_OPEN    (-1)
#define CAP_POS     (-2)

typedef struct {
  lua_State *L;
  const char *src, *src_end, *pat_end;
  int level, depth;
  unsigned steps;
  uint64_t started;
  struct { const char *init; ptrdiff_t len; } cap[MAX_CAPTURES];
} matcher;

/* Every TICK steps: over the pattern budget, or over the call's cpu_ms. */
static void tick(matcher *m) {
  const mcp_budget *b;
  uint64_t now;
  if (++m->steps % TICK != 0) return;
  now = uv_hrtime();
  b = mcp_sched_budget();
  if (b != NULL && b->cpu_ns && mcp_sched_cpu_used() > b->cpu_ns) mcp_sched_over(m->L, MCP_OVER_CPU);
  if (now - m->started > PATTERN_NS)
    luaL_error(m->L, "sandbox: pattern matching ran longer than %d ms (a pattern that backtracks too much?)",
               (int)(PATTERN_NS / 1000000));
}

static int class_has(int c, int cl) {
  int r;
  switch (tolower(cl)) {
  case 'a': r = isalpha(c); break;
  case 'c': r = iscntrl(c); break;
  case 'd': r = isdigit(c); break;
  case 'g': r = isgraph(c); break;
  case 'l': r = islower(c); break;
  case 'p': r = ispunct(c); break;
  case 's': r = isspace(c); break;
  case 'u': r = isupper(c); break;
  case 'w': r = isalnum(c); break;
  case 'x': r = isxdigit(c); break;
  case 'z': r = c == 0; break;        /* deprecated in Lua, still matched */
  default: return cl == c;
  }
  return isupper(cl) ? !r : r != 0;
}

/* p at '[', close at its ']'. */
static int set_has(int c, const char *p, const char *close) {
  int neg = 0;
  p++;
  if (*p == '^') neg = 1, p++;
  while (p < close) {
    if (*p == '%' && p + 1 < close) {
      if (class_has(c, (unsigned char)p[1])) return !neg;
      p += 2;
    } else if (p + 2 < close && p[1] == '-') {
      if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2]) return !neg;
      p += 3;
    } else {
      if ((unsigned char)*p == c) return !neg;
      p++;
    }
  }
  return neg;
}

/* The end of the single-character class at p. */
static const char *item_end(matcher *m, const char *p) {
  if (*p == '%') {
    if (p + 1 >= m->pat_end) luaL_error(m->L, "malformed pattern (ends with '%%')");
    return p + 2;
  }
  if (*p != '[') return p + 1;
  p++;
  if (*p == '^') p++;
  do {
    if (p >= m->pat_end) luaL_error(m->L, "malformed pattern (missing ']')");
    if (*p++ == '%' && p < m->pat_end) p++;
  } while (p >= m->pat_end || *p != ']');
  return p + 1;
}

static int item_has(const matcher *m, const char *s, const char *p, const char *ep) {
  int c;
  if (s >= m->src_end) return 0;
  c = (unsigned char)*s;
  if (*p == '.') return 1;
  if (*p == '%') return class_has(c, (unsigned char)p[1]);
  if (*p == '[') return set_has(c, p, ep - 1);
  return (unsigned char)*p == c;
}

static const char *match(matcher *m, const char *s, const char *p);

static const char *greedy(matcher *m, const char *s, const char *p, const char *ep) {
  ptrdiff_t n = 0;
  while (item_has(m, s + n, p, ep)) n++, tick(m);
  for (; n >= 0; n--) {
    const char *r = match(m, s + n, ep + 1);
    if (r) return r;
    tick(m);
  }
  return NULL;
}

static const char *lazy(matcher *m, const char *s, const char *p, const char *ep) {
  for (;;) {
    const char *r = match(m, s, ep + 1);
    if (r) return r;
    if (!item_has(m, s, p, ep)) return NULL;
    s++;
    tick(m);
  }
}

static const char *capture_open(matcher *m, const char *s, const char *p, ptrdiff_t what) {
  const char *r;
  if (m->level >= MAX_CAPTURES) luaL_error(m->L, "too many captures");
  m->cap[m->level].init = s;
  m->cap[m->level].len = what;
  m->level++;
  if ((r = match(m, s, p)) == NULL) m->level--;
  return r;
}

static const char *capture_close(matcher *m, const char *s, const char *p) {
  int l = m->level - 1;
  const char *r;
  while (l >= 0 && m->cap[l].len != CAP_OPEN) l--;
  if (l < 0) luaL_error(m->L, "invalid pattern capture");
  m->cap[l].len = s - m->cap[l].init;
  if ((r = match(m, s, p)) == NULL) m->cap[l].len = CAP_OPEN;
  return r;
}

static const char *balance(matcher *m, const char *s, const char *p) {
  int depth = 1;
  if (p + 1 >= m->pat_end) luaL_error(m->L, "malformed pattern (missing arguments to '%%b')");
  if (s >= m->src_end || *s != p[0]) return NULL;
  while (++s < m->src_end) {
    tick(m);
    if (*s == p[1]) {
      if (--depth == 0) return s + 1;
    } else if (*s == p[0]) {
      depth++;
    }
  }
  return NULL;
}

static const char *backref(matcher *m, const char *s, int d) {
  int l = d - '1';
  size_t len;
  if (l < 0 || l >= m->level || m->cap[l].len == CAP_OPEN) luaL_error(m->L, "invalid capture index %%%d", l + 1);
  len = (size_t)m->cap[l].len;
  if ((size_t)(m->src_end - s) >= len && memcmp(m->cap[l].init, s, len) == 0) return s + len;
  return NULL;
}

/* The item at p and what follows it, matched at s: the end of the match, or NULL. */
static const char *match(matcher *m, const char *s, const char *p) {
  const char *r = NULL, *ep;
  if (++m->depth > MAX_DEPTH) luaL_error(m->L, "pattern too complex");
  tick(m);
  while (p < m->pat_end) {
    if (*p == '(') {
      r = p[1] == ')' ? capture_open(m, s, p + 2, CAP_POS) : capture_open(m, s, p + 1, CAP_OPEN);
      goto out;
    }
    if (*p == ')') {
      r = capture_close(m, s, p + 1);
      goto out;
    }
    if (*p == '$' && p + 1 == m->pat_end) {
      r = s == m->src_end ? s : NULL;
      goto out;
    }
    if (*p == '%' && p[1] == 'b') {
      if ((s = balance(m, s, p + 2)) == NULL) goto out;
      p += 4;
      continue;
    }
    if (*p == '%' && p[1] == 'f') {
      int before, here;
      p += 2;
      if (*p != '[') luaL_error(m->L, "missing '[' after '%%f' in pattern");
      ep = item_end(m, p);
      before = s == m->src ? 0 : (unsigned char)s[-1];
      here = s < m->src_end ? (unsigned char)*s : 0;
      if (set_has(before, p, ep - 1) || !set_has(here, p, ep - 1)) goto out;
      p = ep;
      continue;
    }
    if (*p == '%' && isdigit((unsigned char)p[1])) {
      if ((s = backref(m, s, (unsigned char)p[1])) == NULL) goto out;
      p += 2;
      continue;
    }
    ep = item_end(m, p);
    if (*ep == '?') {
      if (item_has(m, s, p, ep) && (r = match(m, s + 1, ep + 1)) != NULL) goto out;
      p = ep + 1;
    } else if (*ep == '+') {
      r = item_has(m, s, p, ep) ? greedy(m, s + 1, p, ep) : NULL;
      goto out;
    } else if (*ep == '*') {
      r = greedy(m, s, p, ep);
      goto out;
    } else if (*ep == '-') {
      r = lazy(m, s, p, ep);
      goto out;
    } else {
      if (!item_has(m, s, p, ep)) goto out;
      s++;
      p = ep;
    }
  }
  r = s;
out:
  m->depth--;
  return r;
}

/* Capture i of the match s..e (the whole match when there are none). */
static void push_capture(matcher *m, int i, const char *s, const char *e) {
  if (i >= m->level) {
    if (i != 0) luaL_error(m->L, "invalid capture index %%%d", i + 1);
    lua_pushlstring(m->L, s, (size_t)(e - s));
  } else if (m->cap[i].len == CAP_POS) {
    lua_pushinteger(m->L, (m->cap[i].init - m->src) + 1);
  } else if (m->cap[i].len == CAP_OPEN) {
    luaL_error(m->L, "unfinished capture");
  } else {
    lua_pushlstring(m->L, m->cap[i].init, (size_t)m->cap[i].len);
  }
}

static int push_captures(matcher *m, const char *s, const char *e) {
  int n = m->level == 0 && s != NULL ? 1 : m->level;
  luaL_checkstack(m->L, n, "too many captures");
  for (int i = 0; i < n; i++) push_capture(m, i, s, e);
  return n;
}

static void matcher_init(matcher *m, lua_State *L, const char *s, size_t ls, const char *p, size_t lp) {
  m->L = L;
  m->src = s;
  m->src_end = s + ls;
  m->pat_end = p + lp;
  m->level = m->depth = 0;
  m->steps = 0;
  m->started = uv_hrtime();
}

/* A position argument as lstrlib reads it: 1-based, negative from the end. */
static size_t start_at(lua_Integer pos, size_t len) {
  if (pos > 0) return (size_t)pos;
  if (pos == 0 || pos < -(lua_Integer)len) return 1;
  return len + (size_t)pos + 1;
}

static int has_specials(const char *p, size_t lp) {
  for (size_t i = 0; i < lp; i++)
    if (strchr("^$*+?.([%-", p[i]) != NULL && p[i] != '\0') return 1;
  return 0;
}

static int find_plain(lua_State *L, const char *s, size_t ls, size_t init, const char *p, size_t lp) {
  matcher m;
  matcher_init(&m, L, s, ls, p, lp);
  for (size_t i = init - 1; i + lp <= ls; i++) {
    tick(&m);
    if (memcmp(s + i, p, lp) == 0) {
      lua_pushinteger(L, (lua_Integer)i + 1);
      lua_pushinteger(L, (lua_Integer)(i + lp));
      return 2;
    }
  }
  luaL_pushfail(L);
  return 1;
}

static int find_or_match(lua_State *L, int find) {
  size_t ls, lp, init;
  const char *s = luaL_checklstring(L, 1, &ls), *p = luaL_checklstring(L, 2, &lp), *at;
  int anchor;
  matcher m;
  init = start_at(luaL_optinteger(L, 3, 1), ls);
  if (init > ls + 1) {
    luaL_pushfail(L);
    return 1;
  }
  if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) return find_plain(L, s, ls, init, p, lp);
  anchor = *p == '^';
  if (anchor) p++, lp--;
  matcher_init(&m, L, s, ls, p, lp);
  at = s + init - 1;
  do {
    const char *e;
    m.level = m.depth = 0;
    if ((e = match(&m, at, p)) != NULL) {
      if (!find) return push_captures(&m, at, e);
      lua_pushinteger(L, (at - s) + 1);
      lua_pushinteger(L, e - s);
      return push_captures(&m, NULL, NULL) + 2;
    }
  } while (at++ < m.src_end && !anchor);
  luaL_pushfail(L);
  return 1;
}

static int sb_find(lua_State *L) { return find_or_match(L, 1); }
static int sb_match(lua_State *L) { return find_or_match(L, 0); }

/* upvalues: subject, pattern, next position (0-based), end of the last match (-1: none) */
static int gmatch_next(lua_State *L) {
  size_t ls, lp;
  const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls), *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
  lua_Integer pos = lua_tointeger(L, lua_upvalueindex(3)), last = lua_tointeger(L, lua_upvalueindex(4));
  matcher m;
  matcher_init(&m, L, s, ls, p, lp);
  for (const char *at = s + pos; at <= m.src_end; at++) {
    const char *e;
    m.level = m.depth = 0;
    if ((e = match(&m, at, p)) != NULL && e - s != last) {
      lua_pushinteger(L, e - s);
      lua_copy(L, -1, lua_upvalueindex(3));
      lua_replace(L, lua_upvalueindex(4));
      return push_captures(&m, at, e);
    }
  }
  lua_pushinteger(L, (lua_Integer)ls + 1);
  lua_replace(L, lua_upvalueindex(3));
  return 0;
}

static int sb_gmatch(lua_State *L) {
  size_t ls;
  luaL_checklstring(L, 1, &ls);
  luaL_checkstring(L, 2);
  size_t init = start_at(luaL_optinteger(L, 3, 1), ls);
  lua_settop(L, 2);
  lua_pushinteger(L, init > ls + 1 ? (lua_Integer)ls + 1 : (lua_Integer)init - 1);
  lua_pushinteger(L, -1);
  lua_pushcclosure(L, gmatch_next, 4);
  return 1;
}

/* The replacement of the match s..e, added to b. */
static void replace(matcher *m, luaL_Buffer *b, const char *s, const char *e, int kind) {
  lua_State *L = m->L;
  if (kind == LUA_TFUNCTION) {
    int n;
    lua_pushvalue(L, 3);
    n = push_captures(m, s, e);
    lua_call(L, n, 1);
  } else if (kind == LUA_TTABLE) {
    push_capture(m, 0, s, e);
    lua_gettable(L, 3);
  } else {
    size_t lr;
    const char *r = lua_tolstring(L, 3, &lr), *end = r + lr;
    for (; r < end; r++) {
      tick(m);
      if (*r != '%') {
        luaL_addchar(b, *r);
      } else if (++r >= end) {
        luaL_error(L, "invalid use of '%%' in replacement string");
      } else if (*r == '%') {
        luaL_addchar(b, '%');
      } else if (isdigit((unsigned char)*r)) {
        if (*r == '0') luaL_addlstring(b, s, (size_t)(e - s));
        else {
          push_capture(m, *r - '1', s, e);
          luaL_tolstring(L, -1, NULL);
          lua_remove(L, -2);
          luaL_addvalue(b);
        }
      } else {
        luaL_error(L, "invalid use of '%%' in replacement string");
      }
    }
    return;
  }
  if (!lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    luaL_addlstring(b, s, (size_t)(e - s));
  } else if (!lua_isstring(L, -1)) {
    luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
  } else {
    luaL_addvalue(b);
  }
}

static int sb_gsub(lua_State *L) {
  size_t ls, lp;
  const char *s = luaL_checklstring(L, 1, &ls), *p = luaL_checklstring(L, 2, &lp), *at = s, *last = NULL;
  int kind = lua_type(L, 3), anchor;
  lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)ls + 1), n = 0;
  matcher m;
  luaL_Buffer b;
  luaL_argexpected(L, kind == LUA_TNUMBER || kind == LUA_TSTRING || kind == LUA_TFUNCTION || kind == LUA_TTABLE,
                   3, "string/function/table");
  anchor = *p == '^';
  if (anchor) p++, lp--;
  luaL_buffinit(L, &b);
  matcher_init(&m, L, s, ls, p, lp);
  while (n < max) {
    const char *e;
    m.level = m.depth = 0;
    if ((e = match(&m, at, p)) != NULL && e != last) {
      n++;
      replace(&m, &b, at, e, kind);
      at = last = e;
    } else if (at < m.src_end) {
      luaL_addchar(&b, *at++);
    } else {
      break;
    }
    if (anchor) break;
  }
  luaL_addlstring(&b, at, (size_t)(m.src_end - at));
  luaL_pushresult(&b);
  lua_pushinteger(L, n);
  return 2;
}

/* string.rep of empty pieces loops n times making nothing: memory cannot bound it. */
static int sb_rep(lua_State *L) {
  size_t l, lsep = 0;
  luaL_checklstring(L, 1, &l);
  luaL_checkinteger(L, 2);
  luaL_optlstring(L, 3, "", &lsep);
  if (l + lsep == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  return -1;
}

/* Bytecode: the host's functions' code, and nothing a sandbox may load. */
static int sb_dump(lua_State *L) {
  return luaL_error(L, "sandbox: string.dump is not available to a sandboxed plugin");
}

/* table.concat, move, sort: item counts a sandboxed plugin may ask for. */
static int sb_items(lua_State *L, lua_Integer n, const char *fname) {
  if (n > MAX_ITEMS) return luaL_error(L, "sandbox: %s of %I items refused (at most %d)", fname, n, MAX_ITEMS);
  return -1;
}

static int sb_concat(lua_State *L) {
  lua_Integer i = luaL_optinteger(L, 3, 1), j = luaL_opt(L, luaL_checkinteger, 4, luaL_len(L, 1));
  return sb_items(L, j >= i ? j - i + 1 : 0, "table.concat");
}

static int sb_move(lua_State *L) {
  lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);
  return sb_items(L, e >= f ? e - f + 1 : 0, "table.move");
}

static int sb_sort(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  return sb_items(L, luaL_len(L, 1), "table.sort");
}

/* upvalues: Lua's function, ours. Ours returns -1 to hand over to Lua's. */
static int dispatch(lua_State *L) {
  lua_CFunction own = lua_tocfunction(L, lua_upvalueindex(2));
  int r;
  if (mcp_sched_budget() != NULL && (r = own(L)) >= 0) return r;
  return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

/* stack: lib -> lib; lib[name] wrapped. */
static void wrap(lua_State *L, const char *name, lua_CFunction own) {
  lua_getfield(L, -1, name);
  if (lua_tocfunction(L, -1) == NULL) {
    lua_pop(L, 1);
    return;
  }
  lua_pushcfunction(L, own);
  lua_pushcclosure(L, dispatch, 2);
  lua_setfield(L, -2, name);
}

void mcp_sandbox_lib_open(lua_State *L) {
  static const struct { const char *lib, *name; lua_CFunction fn; } rows[] = {
    {"string", "find", sb_find}, {"string", "match", sb_match}, {"string", "gmatch", sb_gmatch},
    {"string", "gsub", sb_gsub}, {"string", "rep", sb_rep}, {"string", "dump", sb_dump},
    {"table", "concat", sb_concat}, {"table", "move", sb_move}, {"table", "sort", sb_sort},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (lua_getglobal(L, rows[i].lib) == LUA_TTABLE) wrap(L, rows[i].name, rows[i].fn);
    lua_pop(L, 1);
  }
}
