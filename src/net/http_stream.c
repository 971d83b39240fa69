/* A Streamable HTTP session's streams: each answers one POST (or is the
 * standalone GET stream) as JSON or as Server-Sent Events, with event ids and
 * a replay buffer so that a client coming back with Last-Event-ID gets what
 * it missed; the session's writer and its detach for SSE polling. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rev2026.h"
#include "rpc.h"
#include "transport_http_int.h"

#define REPLAY_EVENTS 256           /* per stream */
#define REPLAY_BYTES (1u << 20)     /* per stream */
#define KEEP_ENDED 16               /* ended SSE streams kept per session, for resumption */

/* A session keeps one freed stream for its next POST (not under ASan,
 * which would then miss a stream used after its free). */
void mcp__hstream_free(hstream *st) {
  for (size_t i = 0; i < st->nevents; i++) free(st->events[i].text);
  free(st->events);
#ifndef __SANITIZE_ADDRESS__
  if (st->hs->spare == NULL) {
    st->hs->spare = st;
    return;
  }
#endif
  free(st);
}

hstream *mcp__hstream_new(hsession *hs, mcp_http_conn *conn) {
  hstream *st = hs->spare;
  if (st != NULL) {
    hs->spare = NULL;
    memset(st, 0, sizeof *st);
  } else if ((st = calloc(1, sizeof *st)) == NULL) {
    abort();
  }
  st->hs = hs;
  st->conn = conn;
  st->no = ++hs->next_no;
  st->next = hs->streams;
  hs->streams = st;
  return st;
}

void mcp__hstream_unlink(hstream *st) {
  hstream **p = &st->hs->streams;
  while (*p && *p != st) p = &(*p)->next;
  if (*p) *p = st->next;
  if (st->hs->get == st) st->hs->get = NULL;
}

/* Keep at most KEEP_ENDED ended SSE streams for resumption; JSON answers
 * and 202s are never resumed. */
void mcp__hstream_retire(hstream *st) {
  hsession *hs = st->hs;
  int kept = 0;
  if (hs->rev2026 && st->in_input) return;    /* on_post_rev2026 frees it */
  if (st->mode != SSE || hs->rev2026) {
    mcp__hstream_unlink(st);
    mcp__hstream_free(st);
    return;
  }
  for (hstream **p = &hs->streams; *p;) {
    hstream *x = *p;
    if (x->ended && x->conn == NULL && ++kept > KEEP_ENDED) {
      *p = x->next;
      mcp__hstream_free(x);
    } else {
      p = &x->next;
    }
  }
}

static void session_headers(hsession *hs, char *out, size_t cap) {
  static const char name[] = "Mcp-Session-Id: ";
  size_t n = strlen(hs->id);
  out[0] = '\0';
  if (hs->s.revision < 0 || sizeof name - 1 + n + 3 > cap) return;
  memcpy(out, name, sizeof name - 1);
  memcpy(out + sizeof name - 1, hs->id, n);
  memcpy(out + sizeof name - 1 + n, "\r\n", 3);
}

static void stream_remember(hstream *st, const char *text, size_t len) {
  event *e;
  while (st->nevents > 0 && (st->nevents >= REPLAY_EVENTS || st->bytes + len > REPLAY_BYTES)) {
    st->bytes -= st->events[0].len;
    free(st->events[0].text);
    memmove(st->events, st->events + 1, --st->nevents * sizeof *st->events);
  }
  if (st->nevents == 0 || (st->nevents & (st->nevents - 1)) == 0) {
    size_t cap = st->nevents ? st->nevents * 2 : 4;
    st->events = realloc(st->events, cap * sizeof *st->events);
    if (st->events == NULL) abort();
  }
  e = &st->events[st->nevents++];
  e->seq = st->seq;
  e->len = len;
  e->text = malloc(len);
  if (e->text == NULL) abort();
  memcpy(e->text, text, len);
  st->bytes += len;
}

static void stream_send(hstream *st, const char *text, size_t len, unsigned seq) {
  if (st->conn == NULL) return;
  if (mcp_http_stream_write(st->conn, text, len) == 0) st->delivered = seq;
}

/* One SSE event: remembered for replay, sent when a connection is attached. */
static void stream_event(hstream *st, const char *data, size_t len, const char *extra) {
  mcp_buf b = MCP_BUF_INIT;
  st->seq++;
  if (st->hs->rev2026) {             /* 2026-07-28: no event ids, no resumption */
    mcp_buf_printf(&b, "%sdata: ", extra ? extra : "");
    mcp_buf_add(&b, data, len);
    mcp_buf_adds(&b, "\n\n");
    stream_send(st, b.data, b.len, st->seq);
    mcp_buf_free(&b);
    return;
  }
  mcp_buf_printf(&b, "id: %u-%u\n%sdata: ", st->no, st->seq, extra ? extra : "");
  mcp_buf_add(&b, data, len);
  mcp_buf_adds(&b, "\n\n");
  stream_remember(st, b.data, b.len);
  stream_send(st, b.data, b.len, st->seq);
  mcp_buf_free(&b);
}

static void stream_open_sse(hstream *st) {
  char hdr[128];
  st->mode = SSE;
  if (st->conn == NULL) return;
  session_headers(st->hs, hdr, sizeof hdr);
  strncat(hdr, "X-Accel-Buffering: no\r\n", sizeof hdr - strlen(hdr) - 1);
  mcp_http_stream_begin(st->conn, 200, hdr, "text/event-stream");
  /* 2025-11-25: prime the client with an event id it can resume from. */
  if (st->hs->s.revision >= REV_2025_11_25) stream_event(st, "", 0, "retry: 1000\n");
}

static void stream_end(hstream *st) {
  st->ended = 1;
  if (st->conn) {
    mcp_http_conn *c = st->conn;
    st->conn = NULL;
    mcp_http_stream_end(c);
  }
  if (!st->is_get) mcp__hstream_retire(st);
}

/* The session's writer: see mcp_session_write_cb. */
void mcp__hs_write(mcp_session *s, void *stream, const char *data, size_t len, int last) {
  hsession *hs = (hsession *)s;
  hstream *st = stream;
  char hdr[128];
  if (st == NULL) {                 /* not tied to a request: the GET stream */
    if (data == NULL) return;
    if (hs->get == NULL) {
      mcp_debug("http: session %.8s has no GET stream; a %zu-byte message is dropped", hs->id, len);
      return;
    }
    stream_event(hs->get, data, len, NULL);
    return;
  }
  if (st->ended) return;
  if (st->mode == UNDECIDED && last && st->conn != NULL) {
    mcp_http_conn *c = st->conn;
    session_headers(hs, hdr, sizeof hdr);
    st->conn = NULL;
    st->ended = 1;
    if (data != NULL) {
      /* 2026-07-28: a missing client capability is a 400 (streamable-http) */
      int status = hs->rev2026 && mcp_rpc_error_code(data, len) == MCP_RPC_MISSING_CAPABILITY ? 400 : 200;
      st->mode = JSON;
      mcp_http_respond(c, status, hdr, "application/json", data, len);
    } else if (st->in_input) {      /* a notification or a response: accepted */
      mcp_http_respond(c, 202, hdr, NULL, NULL, 0);
    } else {                        /* a request that ends with no answer (cancelled) */
      st->conn = c;
      stream_open_sse(st);
      stream_end(st);
      return;
    }
    if (!st->in_input) mcp__hstream_retire(st);
    return;
  }
  if (st->mode == UNDECIDED) stream_open_sse(st);
  if (data != NULL) stream_event(st, data, len, NULL);
  if (last) stream_end(st);
}

/* SSE polling (2025-11-25): end the HTTP answer carrying a request's stream
 * without ending the stream. The stream opens first if it has not (so the
 * client holds the priming event's id and retry), keeps what follows in its
 * replay buffer, and the client comes back with GET and Last-Event-ID. */
void mcp__hs_detach(mcp_session *s, void *stream) {
  hstream *st = stream;
  (void)s;
  if (st == NULL || st->ended || st->is_get) return;
  if (st->mode == UNDECIDED) stream_open_sse(st);
  if (st->conn != NULL) {
    mcp_http_conn *c = st->conn;
    mcp_debug("http: session %.8s: stream %u: connection closed for polling", st->hs->id, st->no);
    st->conn = NULL;
    mcp_http_conn_set_data(c, NULL);
    mcp_http_stream_end(c);          /* the HTTP answer ends cleanly; the MCP stream goes on */
  }
}

/* GET: the standalone stream, or a resumption with Last-Event-ID. */
void mcp__hstream_resume(hstream *st, mcp_http_conn *c, unsigned after, int prime) {
  char hdr[128];
  if (st->mode == UNDECIDED) st->mode = SSE;   /* resumed before it sent anything */
  st->conn = c;
  mcp_http_conn_set_data(c, st);
  session_headers(st->hs, hdr, sizeof hdr);
  strncat(hdr, "X-Accel-Buffering: no\r\n", sizeof hdr - strlen(hdr) - 1);
  mcp_http_stream_begin(c, 200, hdr, "text/event-stream");
  for (size_t i = 0; i < st->nevents; i++)
    if (st->events[i].seq > after) stream_send(st, st->events[i].text, st->events[i].len, st->events[i].seq);
  if (prime && st->hs->s.revision >= REV_2025_11_25) stream_event(st, "", 0, "retry: 1000\n");
  if (st->ended) {
    st->conn = NULL;
    mcp_http_stream_end(c);
  }
}
