/* bench/origin.c: the HTTP server the handler-I/O benchmark talks to, and
 * the trace collector of the traced echo (bench/run.sh). libuv, keep-alive,
 * one answer per request, no parsing beyond the request line, the end of
 * the headers and a Content-Length (a body is read and dropped):
 *   GET /hello   200, "hello"
 *   POST ...     200, "hello" (an OTLP export)
 *   GET /hang    nothing; prints "open <ns>" when it arrives and
 *                "closed <ns>" when the peer closes that connection
 *                (CLOCK_MONOTONIC, as libuv's uv_hrtime; stdout, flushed)
 * Prints "port <n>" once listening on 127.0.0.1 (port 0 picks one). */
#define _GNU_SOURCE                /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <uv.h>

typedef struct {
  uv_tcp_t tcp;
  char buf[8192];
  size_t len;
  size_t skip;                     /* body bytes still to drop */
  int hanging;
} conn;

static const char hello[] =
  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";

static unsigned long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void on_closed(uv_handle_t *h) { free(h->data); }

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  conn *c = h->data;
  (void)hint;
  b->base = c->buf + c->len;
  b->len = sizeof c->buf - c->len;
}

/* The Content-Length of the head of n bytes at p (0: none). */
static size_t content_length(const char *p, size_t n) {
  static const char name[] = "\r\ncontent-length:";
  for (size_t i = 0; i + sizeof name - 1 < n; i++)
    if (strncasecmp(p + i, name, sizeof name - 1) == 0) return strtoul(p + i + sizeof name - 1, NULL, 10);
  return 0;
}

/* Drop what is left of a body from the buffer. */
static void drop_body(conn *c) {
  size_t k = c->skip < c->len ? c->skip : c->len;
  memmove(c->buf, c->buf + k, c->len - k);
  c->len -= k;
  c->skip -= k;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  conn *c = s->data;
  char *end;
  (void)b;
  if (n < 0) {                     /* gone, or a head longer than the buffer (UV_ENOBUFS) */
    if (c->hanging) {
      printf("closed %llu\n", mono_ns());
      fflush(stdout);
    }
    uv_close((uv_handle_t *)s, on_closed);
    return;
  }
  c->len += (size_t)n;
  if (c->skip) drop_body(c);
  while (c->skip == 0 && (end = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL) {
    size_t used = (size_t)(end + 4 - c->buf);
    size_t body = content_length(c->buf, used);
    if (strncmp(c->buf, "GET /hang", 9) == 0) {
      c->hanging = 1;
      printf("open %llu\n", mono_ns());
      fflush(stdout);
    } else {
      uv_buf_t out = uv_buf_init((char *)hello, sizeof hello - 1);
      uv_try_write(s, &out, 1);     /* small: the socket buffer takes it whole */
    }
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
    c->skip = body;
    if (c->skip) drop_body(c);
  }
}

static void on_conn(uv_stream_t *server, int status) {
  conn *c;
  if (status < 0) return;
  c = calloc(1, sizeof *c);
  uv_tcp_init(server->loop, &c->tcp);
  c->tcp.data = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    uv_close((uv_handle_t *)&c->tcp, on_closed);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int main(int argc, char **argv) {
  uv_tcp_t server;
  struct sockaddr_in addr;
  struct sockaddr_storage name;
  int len = sizeof name;
  uv_ip4_addr("127.0.0.1", argc > 1 ? atoi(argv[1]) : 0, &addr);
  uv_tcp_init(uv_default_loop(), &server);
  if (uv_tcp_bind(&server, (struct sockaddr *)&addr, 0) != 0 ||
      uv_listen((uv_stream_t *)&server, 1024, on_conn) != 0) {
    fprintf(stderr, "origin: cannot listen\n");
    return 1;
  }
  uv_tcp_getsockname(&server, (struct sockaddr *)&name, &len);
  printf("port %d\n", ntohs(((struct sockaddr_in *)&name)->sin_port));
  fflush(stdout);
  return uv_run(uv_default_loop(), UV_RUN_DEFAULT);
}
