/* Small blocks for the Lua state, and for the core's blocks of a call (the
 * call, its params text). Their owners give the size of every block they
 * free (Lua does on a free or resize), so blocks of up to MCP_SLAB_MAX
 * bytes need no header:
 * they come from free lists, one per 16-byte size class, carved from chunks
 * of 64 KiB. A tools/call makes and frees about 19 such blocks (its tables,
 * strings and closures), for which malloc and free cost a sixth of the
 * call. What is freed stays on its list for the next block of its class:
 * the chunks are kept until mcp_slab_close. */
#ifndef MCP_SLAB_H
#define MCP_SLAB_H

#include <stddef.h>

#define MCP_SLAB_MAX 512

/* Whether the slab serves its callers: not under ASan, which must see every
 * block alone, so that a use after free stays one (the slab would hand the
 * block to the next allocation of its class). */
#if defined(__SANITIZE_ADDRESS__)
#define MCP_SLAB_ON 0
#else
#define MCP_SLAB_ON 1
#endif

typedef struct mcp_slab_block { struct mcp_slab_block *next; } mcp_slab_block;
/* Class k's free blocks, of 16 * (k + 1) bytes. */
extern mcp_slab_block *mcp__slab_free[MCP_SLAB_MAX / 16];
void *mcp__slab_carve(size_t k);

/* A block of n bytes (1 <= n <= MCP_SLAB_MAX), or NULL when malloc fails. */
static inline void *mcp_slab_alloc(size_t n) {
  size_t k = (n - 1) >> 4;
  mcp_slab_block *b = mcp__slab_free[k];
  if (b == NULL) return mcp__slab_carve(k);
  mcp__slab_free[k] = b->next;
  return b;
}

/* Give back p, a block of n bytes from mcp_slab_alloc. */
static inline void mcp_slab_free(void *p, size_t n) {
  size_t k = (n - 1) >> 4;
  mcp_slab_block *b = p;
  b->next = mcp__slab_free[k];
  mcp__slab_free[k] = b;
}
/* Whether blocks of a and b bytes (both <= MCP_SLAB_MAX) share a class. */
#define mcp_slab_same(a, b) ((((a) + 15) >> 4) == (((b) + 15) >> 4))
/* Bytes of chunks held (for stats and tests). */
size_t mcp_slab_held(void);
/* Free every chunk: every block must be given back or abandoned. */
void mcp_slab_close(void);

#endif
