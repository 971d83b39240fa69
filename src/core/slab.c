/* Small blocks for the Lua state and a call's own blocks: see slab.h. */
#include <stdlib.h>

#include "slab.h"

#define CHUNK ((size_t)64 << 10)
#define NCLASS (MCP_SLAB_MAX / 16)

typedef mcp_slab_block block;
typedef struct chunk { struct chunk *next; } chunk;   /* its header; blocks follow */

block *mcp__slab_free[NCLASS];

static struct {
  char *bump, *end;          /* the newest chunk's part not carved yet */
  chunk *chunks;
  size_t held;
} S;

/* A new chunk; what was left of the last one goes to the lists, so that
 * nothing is lost. */
static int grow(void) {
  chunk *c = malloc(CHUNK);
  if (c == NULL) return 0;
  while (S.end - S.bump >= 16) {
    size_t left = (size_t)(S.end - S.bump);
    size_t k = (left > MCP_SLAB_MAX ? MCP_SLAB_MAX : left & ~(size_t)15) / 16 - 1;
    mcp_slab_free(S.bump, 16 * (k + 1));
    S.bump += 16 * (k + 1);
  }
  c->next = S.chunks;
  S.chunks = c;
  S.held += CHUNK;
  S.bump = (char *)c + 16;               /* keeps blocks 16-byte aligned */
  S.end = (char *)c + CHUNK;
  return 1;
}

/* Class k's list is empty: the block from the chunk's part not carved. */
void *mcp__slab_carve(size_t k) {
  size_t size = 16 * (k + 1);
  void *b;
  if ((size_t)(S.end - S.bump) < size && !grow()) return NULL;
  b = S.bump;
  S.bump += size;
  return b;
}

size_t mcp_slab_held(void) { return S.held; }

void mcp_slab_close(void) {
  while (S.chunks != NULL) {
    chunk *c = S.chunks;
    S.chunks = c->next;
    free(c);
  }
  S.bump = S.end = NULL;
  S.held = 0;
  for (size_t k = 0; k < NCLASS; k++) mcp__slab_free[k] = NULL;
}
