/* slab.c: blocks of every class aligned and apart, a freed block reused by
 * its class only, a chunk's tail handed to the lists when the next chunk is
 * taken, and close giving every chunk back. */
#include <stdint.h>
#include <string.h>

#include "slab.h"
#include "test.h"

#define CHUNK (64 << 10)

static void every_class(void) {
  static unsigned char *held[MCP_SLAB_MAX + 1];
  for (size_t n = 1; n <= MCP_SLAB_MAX; n++) {
    held[n] = mcp_slab_alloc(n);
    CHECK(held[n] != NULL && (uintptr_t)held[n] % 16 == 0, "size %zu: aligned block", n);
    memset(held[n], (int)(n & 0xff), n);
  }
  for (size_t n = 1; n <= MCP_SLAB_MAX; n++) {   /* no block overlapped another */
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += held[n][i] != (unsigned char)(n & 0xff);
    CHECK(bad == 0, "size %zu: %zu bytes overwritten", n, bad);
  }
  for (size_t n = 1; n <= MCP_SLAB_MAX; n++) mcp_slab_free(held[n], n);
  mcp_slab_close();
}

static void reuse(void) {
  void *a = mcp_slab_alloc(40), *b;
  mcp_slab_free(a, 40);
  b = mcp_slab_alloc(24);                      /* class 32: not a's */
  CHECK(b != a, "a block of another class is not reused");
  CHECK(mcp_slab_alloc(33) == a, "a block of the same class (33..48) is reused");
  CHECK(mcp_slab_same(16, 1) && mcp_slab_same(17, 32) && !mcp_slab_same(16, 17), "classes of 16 bytes");
  mcp_slab_close();
}

static void chunk_tail(void) {
  /* 496-byte blocks: 132 fill a chunk's 65,520 bytes but 48; the 133rd
   * takes a new chunk, and the 48 go to their class. */
  char *first = mcp_slab_alloc(496);
  for (int i = 1; i < 133; i++) CHECK(mcp_slab_alloc(496) != NULL, "block %d", i);
  CHECK(mcp_slab_held() == 2 * CHUNK, "two chunks held: %zu", mcp_slab_held());
  CHECK(mcp_slab_alloc(48) == first + 132 * 496, "the first chunk's tail is a 48-byte block");
  mcp_slab_close();
  CHECK(mcp_slab_held() == 0, "close gives every chunk back");
}

int main(void) {
  every_class();
  reuse();
  chunk_tail();
  TEST_END("test_slab");
}
