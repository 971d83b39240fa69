/* The text/event-stream parser (sse.c): the events of a stream do not
 * depend on how it is sliced. The input is fed whole, then in slices whose
 * sizes its first bytes pick, then a byte at a time; each run must report
 * the same events and end the same way (0, or -1 for a line or an event
 * past the limit). Every event is well formed: its strings end in a NUL,
 * its id holds none, its data is data_len bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sse.h"
#include "require.h"

typedef struct {
  mcp_buf log;              /* the events, one after another */
  int n, stop_at;           /* events seen; the callback stops the feed at stop_at */
} run;

static int on_event(void *ud, const mcp_sse_event *ev) {
  run *r = ud;
  REQUIRE(ev->event != NULL && ev->id != NULL && ev->data != NULL, "a NULL field");
  REQUIRE(ev->event[0] != '\0', "an empty event name");
  REQUIRE(ev->data[ev->data_len] == '\0', "data not NUL-terminated at data_len");
  mcp_buf_printf(&r->log, "%s|%s|%zu|", ev->event, ev->id, ev->data_len);
  mcp_buf_add(&r->log, ev->data, ev->data_len);
  mcp_buf_addc(&r->log, '\n');
  return ++r->n == r->stop_at ? 7 : 0;
}

static int same_log(const run *a, const run *b) {
  return a->log.len == b->log.len && (a->log.len == 0 || memcmp(a->log.data, b->log.data, a->log.len) == 0);
}

/* Feed s in slices of the sizes in cuts (cycled; 0 means all at once). */
static int feed(const char *s, size_t n, const uint8_t *cuts, size_t ncuts, size_t max, run *r) {
  mcp_sse p;
  size_t off = 0, k = 0;
  int rc = 0;
  memset(&p, 0, sizeof p);
  p.max = max;
  while (off < n && rc == 0) {
    size_t len = ncuts ? (size_t)(cuts[k++ % ncuts] % 17 + 1) : n;
    if (len > n - off) len = n - off;
    rc = mcp_sse_feed(&p, s + off, len, on_event, r);
    off += len;
  }
  mcp_sse_free(&p);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint8_t one = 0;
  run whole = { MCP_BUF_INIT, 0, 0 }, sliced = { MCP_BUF_INIT, 0, 0 }, bytes = { MCP_BUF_INIT, 0, 0 };
  size_t max, ncuts;
  int rc;
  if (size < 3) return 0;
  /* byte 0: the limit (0: the default); byte 1: stop after that many events; then 4 cut sizes */
  max = data[0] < 128 ? data[0] : 0;
  whole.stop_at = sliced.stop_at = bytes.stop_at = data[1] & 15;
  ncuts = size - 2 < 4 ? size - 2 : 4;
  rc = feed((const char *)data + 2, size - 2, NULL, 0, max, &whole);
  REQUIRE(rc == 0 || rc == -1 || rc == 7, "returned %d", rc);
  REQUIRE(rc != 7 || whole.n == whole.stop_at, "stopped without the callback");
  REQUIRE(feed((const char *)data + 2, size - 2, data + 2, ncuts, max, &sliced) == rc, "sliced: another end");
  REQUIRE(feed((const char *)data + 2, size - 2, &one, 1, max, &bytes) == rc, "bytes: another end");
  REQUIRE(same_log(&sliced, &whole), "sliced: other events");
  REQUIRE(same_log(&bytes, &whole), "bytes: other events");
  mcp_buf_free(&whole.log);
  mcp_buf_free(&sliced.log);
  mcp_buf_free(&bytes.log);
  return 0;
}
