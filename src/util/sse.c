/* Server-Sent Events, incrementally. */
#include <string.h>

#include "sse.h"

#define DEFAULT_MAX ((size_t)1 << 20)

static void set(mcp_buf *b, const char *s, size_t n) {
  b->len = 0;
  mcp_buf_add(b, s, n);
  mcp_buf_addc(b, '\0');
  b->len--;
}

/* A blank line: the event, if it has data. */
static int dispatch(mcp_sse *p, mcp_sse_cb cb, void *ud) {
  mcp_sse_event ev;
  int r;
  if (!p->has_data) {
    p->event.len = 0;
    return 0;
  }
  if (p->data.len > 0 && p->data.data[p->data.len - 1] == '\n') p->data.len--;
  mcp_buf_addc(&p->data, '\0');
  if (p->event.len == 0) set(&p->event, "message", 7);
  else mcp_buf_addc(&p->event, '\0');
  if (p->id.len == 0) set(&p->id, "", 0);
  else mcp_buf_addc(&p->id, '\0');
  ev.event = p->event.data;
  ev.data = p->data.data;
  ev.data_len = p->data.len - 1;
  ev.id = p->id.data;
  r = cb(ud, &ev);
  p->id.len = strlen(p->id.data);      /* the last event id goes on */
  p->data.len = p->event.len = 0;
  p->has_data = 0;
  return r;
}

static int line(mcp_sse *p, const char *s, size_t n, mcp_sse_cb cb, void *ud) {
  const char *colon, *v;
  size_t flen, vlen;
  if (n == 0) return dispatch(p, cb, ud);
  if (s[0] == ':') return 0;                       /* a comment */
  colon = memchr(s, ':', n);
  flen = colon ? (size_t)(colon - s) : n;
  v = colon ? colon + 1 : s + n;
  vlen = colon ? n - flen - 1 : 0;
  if (vlen > 0 && v[0] == ' ') v++, vlen--;
  if (flen == 4 && memcmp(s, "data", 4) == 0) {
    if (p->data.len + vlen + 1 > (p->max ? p->max : DEFAULT_MAX)) return -1;
    mcp_buf_add(&p->data, v, vlen);
    mcp_buf_addc(&p->data, '\n');
    p->has_data = 1;
  } else if (flen == 5 && memcmp(s, "event", 5) == 0) {
    if (memchr(v, '\0', vlen) == NULL) {        /* the name is a C string: one with a NUL is ignored */
      p->event.len = 0;
      mcp_buf_add(&p->event, v, vlen);
    }
  } else if (flen == 2 && memcmp(s, "id", 2) == 0) {
    if (memchr(v, '\0', vlen) == NULL) {
      p->id.len = 0;
      mcp_buf_add(&p->id, v, vlen);
    }
  }                                                /* retry and others: ignored */
  return 0;
}

int mcp_sse_feed(mcp_sse *p, const char *s, size_t n, mcp_sse_cb cb, void *ud) {
  size_t max = p->max ? p->max : DEFAULT_MAX;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    int r;
    if (ch == '\n' && p->after_cr) {
      p->after_cr = 0;
      continue;
    }
    p->after_cr = ch == '\r';
    if (ch != '\r' && ch != '\n') {
      const char *end = s + n, *q = s + i;
      while (q < end && *q != '\r' && *q != '\n') q++;   /* the rest of the line at once */
      if (p->line.len + (size_t)(q - (s + i)) > max) return -1;
      mcp_buf_add(&p->line, s + i, (size_t)(q - (s + i)));
      i = (size_t)(q - s) - 1;
      continue;
    }
    r = line(p, p->line.data ? p->line.data : "", p->line.len, cb, ud);
    p->line.len = 0;
    if (r != 0) return r;
  }
  return 0;
}

void mcp_sse_free(mcp_sse *p) {
  mcp_buf_free(&p->line);
  mcp_buf_free(&p->data);
  mcp_buf_free(&p->event);
  mcp_buf_free(&p->id);
}
