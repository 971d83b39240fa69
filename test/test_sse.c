/* The SSE parser against the event-stream rules of the WHATWG HTML
 * standard: fields, multi-line data, comments, ids that persist, the three
 * line endings, and any slicing of the bytes giving the same events. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sse.h"
#include "test.h"

static mcp_buf got;        /* "event|id|data;" per event */
static int stop_after;

static int on_event(void *ud, const mcp_sse_event *ev) {
  (void)ud;
  mcp_buf_printf(&got, "%s|%s|%.*s;", ev->event, ev->id, (int)ev->data_len, ev->data);
  return --stop_after == 0 ? 7 : 0;
}

/* Feed s in slices of step bytes; returns the events as text. */
static const char *parse(const char *s, size_t step) {
  mcp_sse p = { 0 };
  size_t n = strlen(s);
  got.len = 0;
  stop_after = -1;
  for (size_t i = 0; i < n; i += step) mcp_sse_feed(&p, s + i, i + step <= n ? step : n - i, on_event, NULL);
  mcp_sse_free(&p);
  mcp_buf_addc(&got, '\0');
  return got.data;
}

static void check_all_slicings(const char *in, const char *want) {
  for (size_t step = 1; step <= strlen(in); step++) {
    const char *out = parse(in, step);
    CHECK(strcmp(out, want) == 0, "step %zu: got %s, want %s", step, out, want);
  }
}

int main(void) {
  check_all_slicings("data: hello\n\n", "message||hello;");
  check_all_slicings("event: tick\nid: 7\ndata: {\"i\": 1}\n\n", "tick|7|{\"i\": 1};");
  check_all_slicings("data: a\ndata: b\n\n", "message||a\nb;");
  check_all_slicings(": a comment\ndata:x\n\n", "message||x;");
  check_all_slicings("data: a\r\n\r\ndata: b\r\rdata: c\n\n", "message||a;message||b;message||c;");
  check_all_slicings("id: 1\ndata: a\n\ndata: b\n\n", "message|1|a;message|1|b;");
  check_all_slicings("event: only\n\ndata: d\n\n", "message||d;");       /* no data: no event */
  check_all_slicings("retry: 10\ndata\n\n", "message||;");
  check_all_slicings("data: x\n", "");                                   /* not ended */
  {
    mcp_sse p = { 0 };
    const char *two = "data: 1\n\ndata: 2\n\n";
    got.len = 0;
    stop_after = 1;
    CHECK(mcp_sse_feed(&p, two, strlen(two), on_event, NULL) == 7, "the callback's value stops it");
    mcp_sse_free(&p);
  }
  {
    mcp_sse p = { 0 };
    char big[200];
    memset(big, 'x', sizeof big);
    p.max = 100;
    CHECK(mcp_sse_feed(&p, big, sizeof big, on_event, NULL) == -1, "a line over max");
    mcp_sse_free(&p);
  }
  mcp_buf_free(&got);
  TEST_END("test_sse");
}
