/* A call's params before it starts: the jansson tree session.c made, or the
 * text they came as (a tools/call read from its text: no tree unless
 * something asks for one). Either is the call's, dropped when it starts. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "sched_int.h"
#include "slab.h"

/* params as their text: one block. */
struct mcp_params_text {
  size_t len, args_off, args_len;    /* args_len 0: no arguments */
  char text[];                       /* the params object, NUL-terminated */
};

/* A text of up to MCP_SLAB_MAX bytes with its header takes a block of the
 * slab (slab.h): its class's size, reused by the next call (a read of 256
 * KiB starts ~2,600 calls), no malloc. */
#define SLAB MCP_SLAB_ON

static size_t text_size(size_t len) { return sizeof(struct mcp_params_text) + len + 1; }

struct mcp_params_text *mcp__params_text_new(const mcp_request_text *rt) {
  size_t n = text_size(rt->params_len);
  struct mcp_params_text *t = SLAB && n <= MCP_SLAB_MAX ? mcp_slab_alloc(n) : malloc(n);
  if (t == NULL) abort();
  t->len = rt->params_len;
  t->args_off = rt->args ? (size_t)(rt->args - rt->params) : 0;
  t->args_len = rt->args ? rt->args_len : 0;
  memcpy(t->text, rt->params, rt->params_len);
  t->text[rt->params_len] = '\0';
  return t;
}

void mcp__call_params_drop(mcp_call *c) {
  struct mcp_params_text *t = c->ptext;
  if (c->params) json_decref(c->params), c->params = NULL;
  if (t != NULL && SLAB && text_size(t->len) <= MCP_SLAB_MAX) mcp_slab_free(t, text_size(t->len));
  else free(t);
  c->ptext = NULL;
}

json_t *mcp_call_params(mcp_call *c) {
  if (c->params == NULL && c->ptext != NULL)
    c->params = mcp_json_parse(c->ptext->text, c->ptext->len, NULL, 0);   /* checked: never NULL */
  return c->params;
}

void mcp_call_push_params(lua_State *L, mcp_call *c) {
  if (c->params) mcp_json_push(L, c->params);
  else if (c->ptext == NULL || mcp_json_decode(L, c->ptext->text, c->ptext->len, NULL, 0) != 0)
    lua_newtable(L);
}

int mcp_call_args_text(const mcp_call *c, const char **args, size_t *len) {
  if (c->ptext == NULL) return 0;
  *args = c->ptext->args_len ? c->ptext->text + c->ptext->args_off : NULL;
  *len = c->ptext->args_len;
  return 1;
}
