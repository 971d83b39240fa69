/* The HTTP server (http.c): raw bytes from a client, as one connection.
 *
 * The input is written to one end of a socketpair before the loop runs;
 * mcp_http_conn_adopt serves the other end, and the client end reads every byte
 * the server writes. When the input's length is odd the client then shuts
 * its side (EOF while requests wait or are being answered). Each request
 * is answered in a way its path picks: at once, with extra headers, as a
 * chunked stream, or on a later loop turn (whole or streamed). The header
 * and idle timeouts are 1 ms: the input is all there when the loop starts,
 * so the connection is closed soon after the last answer.
 *
 * Checked: every request handed over is well formed (path, trimmed values,
 * the collected mcp-param- headers, body within the limit); what the server
 * wrote is a sequence of valid HTTP/1.1 responses, none with content to a
 * HEAD, one for each request answered; and when the connection is gone, no
 * handle is left on the loop. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <http_parser.h>
#include <uv.h>

#include "buf.h"
#include "http.h"
#include "log.h"
#include "responses.h"
#include "require.h"

#define MAX_BODY 4096
#define MAX_HEADER 2048
#define PREFIX "mcp-param-"

/* An answer on a later loop turn. Owned by the exchange (conn data): freed
 * when it answers, or when the connection goes first. */
typedef struct {
  uv_timer_t timer;
  mcp_http_conn *conn;
  int stream;               /* end a stream begun at once, rather than answer whole */
} later;

static struct {
  uv_loop_t loop;
  uv_pipe_t client;
  mcp_buf out;              /* what the server wrote */
  mcp_buf heads;            /* per request handed over: 1 if HEAD */
  int nreq, closed;
} F;

static void later_freed(uv_handle_t *h) { free(h->data); }

static void later_cancel(later *l) {
  uv_timer_stop(&l->timer);
  uv_close((uv_handle_t *)&l->timer, later_freed);
}

static void on_later(uv_timer_t *t) {
  later *l = t->data;
  mcp_http_conn *c = l->conn;
  mcp_http_conn_set_data(c, NULL);
  later_cancel(l);
  if (l->stream) {
    mcp_http_stream_write(c, "data: later\n\n", 13);
    mcp_http_stream_end(c);
  } else {
    mcp_http_respond(c, 202, NULL, NULL, NULL, 0);
  }
}

static void defer(mcp_http_conn *c, int stream) {
  later *l = calloc(1, sizeof *l);
  if (l == NULL) abort();
  uv_timer_init(&F.loop, &l->timer);
  l->timer.data = l;
  l->conn = c;
  l->stream = stream;
  mcp_http_conn_set_data(c, l);
  uv_timer_start(&l->timer, on_later, 0, 0);
}

static void check_value(const char *name, const char *v) {
  size_t n;
  if (v == NULL) return;
  n = strlen(v);
  REQUIRE(n > 0, "%s: empty, not NULL", name);
  REQUIRE(v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t', "%s: not trimmed: '%s'", name, v);
}

static void on_request(mcp_http_conn *c, const mcp_http_request *r) {
  mcp_buf body = MCP_BUF_INIT;
  REQUIRE(r->method >= 0 && r->method <= HTTP_SOURCE, "method %d", r->method);
  REQUIRE(strnlen(r->path, sizeof r->path) < sizeof r->path, "path not terminated");
  REQUIRE(r->body_len <= MAX_BODY && r->body != NULL, "body of %zu", r->body_len);
  check_value("content-type", r->content_type);
  check_value("accept", r->accept);
  check_value("origin", r->origin);
  check_value("host", r->host);
  check_value("authorization", r->authorization);
  check_value("session", r->session_id);
  check_value("version", r->protocol_version);
  check_value("last-event-id", r->last_event_id);
  check_value("mcp-method", r->mcp_method);
  check_value("mcp-name", r->mcp_name);
  check_value("acr-headers", r->preflight_headers);
  REQUIRE(r->nfields >= 0 && (r->nfields == 0 || r->fields != NULL), "nfields %d", r->nfields);
  for (int i = 0; i < r->nfields; i++) {
    size_t vn = strlen(r->fields[i].value);
    REQUIRE(strlen(r->fields[i].name) > strlen(PREFIX) && strncasecmp(r->fields[i].name, PREFIX, strlen(PREFIX)) == 0,
            "collected %s", r->fields[i].name);
    REQUIRE(vn == 0 || (r->fields[i].value[0] != ' ' && r->fields[i].value[vn - 1] != ' '), "field not trimmed");
  }
  mcp_buf_addc(&F.heads, r->method == HTTP_HEAD);
  F.nreq++;
  mcp_buf_printf(&body, "%s %s %d", http_method_str(r->method), r->path, r->nfields);
  switch (r->path[0] ? (unsigned char)r->path[strlen(r->path) - 1] % 6 : 0) {
    case 0:
      mcp_http_respond(c, 200, NULL, "text/plain", body.data, body.len);
      break;
    case 1:
      mcp_http_conn_set_headers(c, "Access-Control-Allow-Origin: *\r\n");
      mcp_http_respond(c, 404, "X-Test: 1\r\n", "text/plain", body.data, body.len);
      break;
    case 2:
      mcp_http_stream_begin(c, 200, NULL, "text/event-stream");
      mcp_http_stream_write(c, body.data, body.len);
      mcp_http_stream_write(c, "", 0);
      mcp_http_stream_end(c);
      break;
    case 3:
      defer(c, 0);
      break;
    case 4:
      mcp_http_stream_begin(c, 200, NULL, "text/event-stream");
      defer(c, 1);
      break;
    default:
      mcp_http_respond(c, 204, NULL, NULL, NULL, 0);
  }
  mcp_buf_free(&body);
}

static void on_close(mcp_http_conn *c, void *ud) {
  if (ud != NULL) later_cancel(ud);
  F.closed++;
}

/* The client end. */

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char space[65536];
  buf->base = space;
  buf->len = sizeof space;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  if (n > 0) mcp_buf_add(&F.out, buf->base, (size_t)n);
  else if (n < 0) uv_close((uv_handle_t *)s, NULL);
}

static void count_handle(uv_handle_t *h, void *arg) { (*(int *)arg)++; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mcp_http_config cfg = {
    .max_body = MAX_BODY, .max_header = MAX_HEADER, .max_connections = 4,
    .idle_ms = 1, .header_ms = 1, .max_pending = 1 << 20, .collect_prefix = PREFIX,
    .on_request = on_request, .on_close = on_close
  };
  int fds[2], handles = 0, eof = size % 2 == 1, n;
  if (size > 65536) return 0;                      /* it must fit the socket buffer */
  if (F.loop.data == NULL) {
    uv_loop_init(&F.loop);
    F.loop.data = &F;
    mcp_log_threshold = MCP_LOG_CRITICAL;
  }
  F.out.len = 0;
  F.nreq = F.closed = 0;
  F.heads.len = 0;
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair");
  REQUIRE(size == 0 || write(fds[1], data, size) == (ssize_t)size, "write");
  if (eof) shutdown(fds[1], SHUT_WR);
  uv_update_time(&F.loop);                         /* the timers count from now */
  REQUIRE(mcp_http_conn_adopt(&F.loop, &cfg, fds[0]) == 0, "mcp_http_conn_adopt");
  uv_pipe_init(&F.loop, &F.client, 0);
  uv_pipe_open(&F.client, fds[1]);
  uv_read_start((uv_stream_t *)&F.client, alloc_cb, read_cb);
  uv_run(&F.loop, UV_RUN_DEFAULT);
  uv_walk(&F.loop, count_handle, &handles);
  REQUIRE(handles == 0, "%d handles left", handles);
  REQUIRE(F.closed == 1, "on_close ran %d times", F.closed);
  n = fuzz_responses(F.out.data, F.out.len, F.heads.data, F.nreq, 0, NULL, NULL);
  if (!eof) REQUIRE(n >= F.nreq, "%d requests, %d responses", F.nreq, n);
  return 0;
}
