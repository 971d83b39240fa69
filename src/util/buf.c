/* A growable byte buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "buf.h"

void mcp_buf_grow(mcp_buf *b, size_t extra) {
  size_t cap = b->cap ? b->cap : 256;
  if (b->data != NULL && b->cap - b->len >= extra) return;   /* room already (json.c asks per string) */
  while (cap - b->len < extra) cap *= 2;
  char *p = realloc(b->data, cap);
  if (p == NULL) {
    fputs("luamcp: emergency: out of memory\n", stderr);
    abort();
  }
  b->data = p;
  b->cap = cap;
}

void mcp_buf_printf(mcp_buf *b, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(b->data ? b->data + b->len : NULL, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= b->cap - b->len) {
    mcp_buf_grow(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

size_t mcp_fmt_int(char *out, long long v) {
  char tmp[20];
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  size_t n = 0, len = 0;
  do tmp[n++] = (char)('0' + u % 10), u /= 10; while (u);
  if (v < 0) out[len++] = '-';
  while (n) out[len++] = tmp[--n];
  out[len] = '\0';
  return len;
}

void mcp_buf_add_int(mcp_buf *b, long long v) {
  char s[24];
  mcp_buf_add(b, s, mcp_fmt_int(s, v));
}

size_t mcp_fmt_hex(char *out, size_t v) {
  char tmp[16];
  size_t n = 0, len = 0;
  do tmp[n++] = "0123456789abcdef"[v & 15], v >>= 4; while (v);
  while (n) out[len++] = tmp[--n];
  out[len] = '\0';
  return len;
}

void mcp_buf_free(mcp_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

static mcp_buf scratch;

mcp_buf *mcp_scratch(void) {
  scratch.len = 0;
  return &scratch;
}

void mcp_scratch_free(void) { mcp_buf_free(&scratch); }
