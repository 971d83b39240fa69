/* A growable byte buffer. The owner calls mcp_buf_free. */
#ifndef MCP_BUF_H
#define MCP_BUF_H

#include <stddef.h>
#include <string.h>

typedef struct {
  char *data;
  size_t len, cap;
} mcp_buf;

#define MCP_BUF_INIT { NULL, 0, 0 }

void mcp_buf_grow(mcp_buf *b, size_t extra);   /* aborts on out of memory */
void mcp_buf_printf(mcp_buf *b, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
void mcp_buf_free(mcp_buf *b);
/* Decimal text of v into out (at least 21 bytes), NUL-terminated; its length. */
size_t mcp_fmt_int(char *out, long long v);
/* The same in lower-case hex (at least 17 bytes). */
size_t mcp_fmt_hex(char *out, size_t v);
/* Append the decimal text of v: printf's %lld without printf's cost on the
 * hot path. */
void mcp_buf_add_int(mcp_buf *b, long long v);
/* A shared buffer, emptied, for a message built and handed over at once
 * (the receiver copies). Not re-entrant. */
mcp_buf *mcp_scratch(void);
void mcp_scratch_free(void);

static inline void mcp_buf_add(mcp_buf *b, const void *p, size_t n) {
  if (n == 0) return;                 /* b->data may still be NULL: no memcpy to it */
  if (b->cap - b->len < n) mcp_buf_grow(b, n);
  memcpy(b->data + b->len, p, n);
  b->len += n;
}
static inline void mcp_buf_addc(mcp_buf *b, char c) {
  if (b->cap == b->len) mcp_buf_grow(b, 1);
  b->data[b->len++] = c;
}
#define mcp_buf_adds(b, lit) mcp_buf_add((b), (lit), sizeof(lit) - 1)

#endif
