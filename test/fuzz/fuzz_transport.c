/* The Streamable HTTP transport (transport_http.c) over http.c, with the
 * real session, dispatch and fixture plugin (server.c): raw bytes from a
 * client as one connection, as in fuzz_http. Its options: a bearer token
 * ("fuzz-token"), one extra allowed origin (https://app.example).
 *
 * The input is written to a socketpair that mcp_http_serve_fd serves (odd
 * length: the client then shuts its side). The connection ends by itself
 * (1 ms idle and header timeouts) or, when a stream stays open (a GET, a
 * call waiting on the client), 20 ms in; then the transport is shut down,
 * which ends every session and call, ready for the next input.
 *
 * Checked: what the server wrote is valid HTTP/1.1 responses (none with
 * content to a HEAD where the connection goes on: the input's requests are
 * read with http-parser for that); a JSON body is a JSON-RPC message; each
 * event of an event stream carries one; no sanitizer report (the shutdown
 * included). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <http_parser.h>
#include <jansson.h>
#include <uv.h>

#include "buf.h"
#include "responses.h"
#include "server.h"
#include "sse.h"
#include "transport_http.h"
#include "require.h"

static struct {
  uv_pipe_t client;
  uv_timer_t watchdog;
  mcp_buf out;                 /* what the server wrote */
  mcp_buf heads;               /* per complete request in the input: 1 if HEAD */
  int client_closed, shut, down;
} F;

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char space[65536];
  buf->base = space;
  buf->len = sizeof space;
}

static void client_closed(uv_handle_t *h) { F.client_closed = 1; }

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  if (n > 0) mcp_buf_add(&F.out, buf->base, (size_t)n);
  else if (n < 0) uv_close((uv_handle_t *)s, client_closed);
}

static void on_down(void) { F.down = 1; }

static void on_watchdog(uv_timer_t *t) {
  if (!F.shut) {
    F.shut = 1;
    mcp_http_shutdown(on_down);
  }
}

static void check_jsonrpc(const char *text, size_t len, const char *where) {
  json_error_t e;
  json_t *v = json_loadb(text, len, 0, &e), *m;
  size_t i;
  REQUIRE(v != NULL, "%s: not JSON (%s): %.*s", where, e.text, (int)len, text);
  if (!json_is_array(v)) {
    json_t *one = json_array();
    json_array_append(one, v);
    json_decref(v);
    v = one;
  }
  REQUIRE(json_array_size(v) > 0, "%s: an empty batch", where);
  json_array_foreach(v, i, m) {
    const char *version = json_string_value(json_object_get(m, "jsonrpc"));
    REQUIRE(json_is_object(m) && version != NULL && strcmp(version, "2.0") == 0, "%s: not JSON-RPC 2.0: %.*s", where,
            (int)len, text);
    if (json_object_get(m, "method") == NULL)
      REQUIRE(json_object_get(m, "id") != NULL &&
              (json_object_get(m, "result") != NULL) != (json_object_get(m, "error") != NULL),
              "%s: a response needs an id and one of result, error: %.*s", where, (int)len, text);
  }
  json_decref(v);
}

static int on_event(void *ud, const mcp_sse_event *ev) {
  if (ev->data_len > 0) check_jsonrpc(ev->data, ev->data_len, "event");
  return 0;
}

static void on_response(int status, const char *ctype, const char *body, size_t len, void *ud) {
  if (ctype == NULL || len == 0) return;
  if (strncmp(ctype, "application/json", 16) == 0) {
    check_jsonrpc(body, len, "body");
  } else if (strncmp(ctype, "text/event-stream", 17) == 0) {
    mcp_sse p;
    memset(&p, 0, sizeof p);
    REQUIRE(mcp_sse_feed(&p, body, len, on_event, NULL) == 0, "event stream");
    mcp_sse_free(&p);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *origins[] = { "https://app.example", NULL };
  static const mcp_http_options opt = {
    .host = "127.0.0.1", .port = 0, .allow_origins = origins, .nallow_origins = 1, .token = "fuzz-token",
    .max_body = 65536, .max_connections = 4, .max_sessions = 8, .idle_ms = 1, .header_ms = 1
  };
  uv_loop_t *loop = fuzz_server();
  int fds[2];
  uint64_t start;
  if (size > 65536) return 0;                      /* it must fit the socket buffer */
  F.out.len = F.heads.len = 0;
  F.client_closed = F.shut = F.down = 0;
  fuzz_request_heads((const char *)data, size, &F.heads);
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0, "socketpair");
  REQUIRE(size == 0 || write(fds[1], data, size) == (ssize_t)size, "write");
  if (size % 2 == 1) shutdown(fds[1], SHUT_WR);
  uv_update_time(loop);
  REQUIRE(mcp_http_serve_fd(loop, &opt, fds[0]) == 0, "mcp_http_serve_fd");
  uv_pipe_init(loop, &F.client, 0);
  uv_pipe_open(&F.client, fds[1]);
  uv_read_start((uv_stream_t *)&F.client, alloc_cb, read_cb);
  uv_timer_init(loop, &F.watchdog);
  uv_timer_start(&F.watchdog, on_watchdog, 20, 0);
  start = uv_hrtime();
  while (!F.client_closed) {
    uv_run(loop, UV_RUN_ONCE);
    REQUIRE(uv_hrtime() - start < 5000000000ull, "the connection still open 5 s in");
  }
  on_watchdog(&F.watchdog);                        /* end every session */
  uv_close((uv_handle_t *)&F.watchdog, NULL);
  while (!F.down) {
    uv_run(loop, UV_RUN_ONCE);
    REQUIRE(uv_hrtime() - start < 10000000000ull, "the transport still not down 10 s in");
  }
  uv_run(loop, UV_RUN_NOWAIT);
  if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "%.*s\n", (int)F.out.len, F.out.data);
  fuzz_responses(F.out.data, F.out.len, F.heads.data, (int)F.heads.len, 1, on_response, NULL);
  return 0;
}
