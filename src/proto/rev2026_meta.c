/* A 2026-07-28 request's _meta, read once per client: a client sends the
 * same _meta (its protocol version, capabilities and info) with every
 * request, and parsing it was the larger part of parsing a request. The
 * _meta of recent requests is kept as text and tree; a request whose _meta
 * is one of them has the rest of its text parsed and the kept tree set in
 * its params (shared, and so never changed: nothing changes a message's
 * tree). Anything unusual (a key with an escape, a member twice, more
 * members than the reading holds) is parsed whole, with the same tree. */
#define _GNU_SOURCE          /* memmem */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "rev2026.h"

#define KEPT_MAX 4                 /* the _meta of this many clients */
#define TEXT_MAX 65536             /* longer requests are parsed whole */
/* Only a 2026-07-28 request names its version: a session's _meta (a
 * progressToken each) is parsed with the rest. */
#define VERSION_KEY "\"io.modelcontextprotocol/protocolVersion\""

typedef struct kept {
  char *text;
  size_t len;
  json_t *tree;
  unsigned long used;             /* for the least recently used to go */
} kept;

static kept K[KEPT_MAX];
static unsigned long clock_;
static mcp_buf rest = MCP_BUF_INIT;   /* the request's text without its _meta */
/* The last text read and its tree: HTTP reads a request's body twice (its
 * checks, then the session), and parses it once. */
static mcp_buf last_text = MCP_BUF_INIT;
static json_t *last_tree;

json_t *mcp_rev2026_meta_kept(const char *text, size_t len) {
  for (int i = 0; i < KEPT_MAX; i++)
    if (K[i].tree != NULL && K[i].len == len && memcmp(K[i].text, text, len) == 0) {
      K[i].used = ++clock_;
      return K[i].tree;
    }
  return NULL;
}

/* The kept tree of this _meta text: one kept already, or a new one in the
 * place of the least recently used. NULL when the text is not an object. */
static json_t *kept_tree(const char *text, size_t len) {
  kept *k = &K[0];
  json_t *tree = mcp_rev2026_meta_kept(text, len);
  char *copy;
  if (tree != NULL) return tree;
  for (int i = 1; i < KEPT_MAX; i++)
    if (K[i].used < k->used) k = &K[i];
  tree = mcp_json_parse(text, len, NULL, 0);
  if (!json_is_object(tree) || (copy = malloc(len)) == NULL) {
    json_decref(tree);
    return NULL;
  }
  memcpy(copy, text, len);
  free(k->text);
  json_decref(k->tree);            /* requests still holding it keep it alive */
  memset(k, 0, sizeof *k);
  k->text = copy;
  k->len = len;
  k->tree = tree;
  k->used = ++clock_;
  return tree;
}

/* Where a request's params._meta is, found from the text's structure alone
 * (strings skipped, depth counted): the parse of the rest checks the text,
 * and the _meta's value must be a kept text, which is an object. */
typedef struct {
  size_t cut, cut_end;             /* the member and one comma beside it */
  size_t v, vn;                    /* its value */
} span;

static size_t skip_ws(const char *s, size_t i, size_t n) {
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  return i;
}

/* The kept _meta whose text s starts with. A kept text is a whole object,
 * so where it ends in s is where the object at s ends. */
static const kept *kept_at(const char *s, size_t n) {
  for (int i = 0; i < KEPT_MAX; i++)
    if (K[i].tree != NULL && K[i].len <= n && memcmp(K[i].text, s, K[i].len) == 0) return &K[i];
  return NULL;
}

/* A kept text was parsed whole (kept_tree), nested at most 30 deep
 * (meta_span), so that another reading may pass it over, unread. */
size_t mcp_rev2026_meta_at(const char *s, size_t n) {
  const kept *k = kept_at(s, n);
  return k != NULL ? k->len : 0;
}

/* The end of the string that opens at s[i] (after its closing quote), or 0;
 * *esc: it has a backslash. */
static size_t string_end(const char *s, size_t i, size_t n, int *esc) {
  *esc = 0;
  for (i++; i < n; i++) {
    if (s[i] == '"') return i + 1;
    if (s[i] == '\\') *esc = 1, i++;
  }
  return 0;
}

/* Is the string s[i, end) the key key (no escape in it)? */
static int key_is(const char *s, size_t i, size_t end, const char *key) {
  size_t kn = strlen(key);
  return end - i == kn + 2 && memcmp(s + i + 1, key, kn) == 0;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The _meta member that starts at s[q] (its key's quote) and its value,
 * opened at s[v]: the cut, with the comma before it, or after it when it is
 * the first member; 0 when what follows is not a member's end. */
static int meta_cut(const char *s, size_t n, size_t q, size_t v, size_t vend, span *sp) {
  size_t k = q, after = skip_ws(s, vend, n);
  if (after >= n || (s[after] != ',' && s[after] != '}')) return 0;
  while (k > 0 && is_ws(s[k - 1])) k--;
  if (k == 0 || (s[k - 1] != ',' && s[k - 1] != '{')) return 0;
  sp->v = v;
  sp->vn = vend - v;
  if (s[k - 1] == ',') {
    sp->cut = k - 1;
    sp->cut_end = vend;
  } else {                          /* the first member: the comma after it goes */
    sp->cut = q;
    sp->cut_end = vend;
    if (s[after] == ',') {          /* and a key must follow, as in the text */
      sp->cut_end = after + 1;
      after = skip_ws(s, after + 1, n);
      if (after >= n || s[after] != '"') return 0;
    }
  }
  return 1;
}

/* 1 with the span of params._meta (an object); 0 when there is none or the
 * text has anything this reading leaves to the parse: a key with an escape
 * at the first two levels, params or _meta twice, params not an object,
 * nesting past 32, no comma or brace where the _meta ends. */
static int meta_span(const char *s, size_t n, span *sp) {
  size_t i = skip_ws(s, 0, n), end, q = 0, mq = 0, v = 0;
  int depth = 0, params = 0, in_params = 0, metas = 0, in_meta = 0, esc;
  const kept *k;
  while (i < n) {
    char c = s[i];
    if (c == '"') {
      if ((end = string_end(s, i, n, &esc)) == 0) return 0;
      q = i;
      i = end;
      if (depth != 1 && !(depth == 2 && in_params)) continue;
      i = skip_ws(s, i, n);
      if (i >= n || s[i] != ':') continue;                 /* a value, not a key */
      if (esc) return 0;
      if (depth == 1 && key_is(s, q, end, "params")) {
        if (params++) return 0;
        i = skip_ws(s, i + 1, n);
        if (i >= n || s[i] != '{') return 0;
        in_params = 1;
      } else if (depth == 2 && key_is(s, q, end, "_meta")) {
        if (metas++) return 0;
        i = skip_ws(s, i + 1, n);
        if (i >= n || s[i] != '{') return 0;
        if ((k = kept_at(s + i, n - i)) != NULL) {     /* no need to read a kept text */
          if (!meta_cut(s, n, q, i, i + k->len, sp)) return 0;
          i += k->len;
          continue;
        }
        in_meta = 1;
        mq = q;
        v = i;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > 32) return 0;
    } else if (c == '}' || c == ']') {
      depth--;
      if (depth == 2 && in_meta) {
        in_meta = 0;
        if (!meta_cut(s, n, mq, v, i + 1, sp)) return 0;
      }
      if (depth == 1) in_params = 0;
      if (depth == 0) break;
    }
    i++;
  }
  return metas == 1 && !in_meta && sp->vn > 0;
}

json_t *mcp_rev2026_parse(const char *data, size_t len) {
  span sp = { 0, 0, 0, 0 };
  json_t *msg, *tree;
  if (last_tree != NULL && last_text.len == len && memcmp(last_text.data, data, len) == 0)
    return json_incref(last_tree);
  if (len > TEXT_MAX || memchr(data, '_', len) == NULL ||
      memmem(data, len, VERSION_KEY, sizeof VERSION_KEY - 1) == NULL || !meta_span(data, len, &sp) ||
      (tree = kept_tree(data + sp.v, sp.vn)) == NULL)
    return NULL;
  rest.len = 0;
  mcp_buf_add(&rest, data, sp.cut);
  mcp_buf_add(&rest, data + sp.cut_end, len - sp.cut_end);
  if ((msg = mcp_json_parse(rest.data, rest.len, NULL, 0)) == NULL) return NULL;
  json_object_set(json_object_get(msg, "params"), "_meta", tree);
  json_decref(last_tree);
  last_tree = json_incref(msg);
  last_text.len = 0;
  mcp_buf_add(&last_text, data, len);
  return msg;
}
