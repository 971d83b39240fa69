/* An HTTP/1.1 server on libuv and http-parser: connections, keep-alive,
 * pipelining (one exchange at a time per connection, answered in order),
 * limits, and responses written whole or streamed in chunks. It knows
 * nothing of MCP: each complete request goes to on_request. */
#ifndef MCP_HTTP_H
#define MCP_HTTP_H

#include <stddef.h>
#include <uv.h>

#include "buf.h"

typedef struct mcp_http_conn mcp_http_conn;

typedef struct {
  const char *name, *value;
} mcp_http_field;

/* The parts of a request the MCP transport reads. Valid during on_request.
 * Header values come without the whitespace around them; an empty one is
 * NULL, like a missing one, except in fields. */
typedef struct {
  int method;                 /* enum http_method */
  int http_minor;             /* 1 for HTTP/1.1, 0 for HTTP/1.0 */
  char path[256];
  const char *query;          /* the target's query (after '?'), query_len bytes, not terminated */
  size_t query_len;
  const char *content_type, *accept, *origin, *host, *authorization;
  const char *session_id, *protocol_version, *last_event_id;
  const char *mcp_method, *mcp_name;   /* 2026-07-28 request metadata headers */
  const char *preflight_headers;       /* Access-Control-Request-Headers */
  const char *traceparent, *tracestate;   /* W3C trace-context */
  const char *if_none_match;           /* a conditional GET's entity tags */
  const char *cookie;                  /* the console's (console.c) */
  const mcp_http_field *fields;   /* the headers named cfg.collect_prefix..., in order (repeats kept) */
  int nfields;
  const char *body;           /* never NULL, even when empty */
  size_t body_len;
} mcp_http_request;

typedef struct {
  size_t max_body;            /* 413 past it */
  size_t max_header;          /* 431 past it */
  int max_connections;        /* 503 past it */
  unsigned idle_ms;           /* keep-alive connection idle: closed */
  unsigned header_ms;         /* a request's headers must arrive within this: 408 */
  size_t max_pending;         /* unsent bytes on one connection before it is dropped */
  const char *collect_prefix; /* collect the headers whose name starts with this (any case), or NULL */
  /* A request is complete; answer it with mcp_http_respond or mcp_http_stream_*.
   * Until the answer ends, the connection reads no further request. */
  void (*on_request)(mcp_http_conn *c, const mcp_http_request *r);
  /* The connection is gone (closed by the peer, an error, or a limit);
   * ud is the exchange's user data (mcp_http_conn_set_data), or NULL. */
  void (*on_close)(mcp_http_conn *c, void *ud);
} mcp_http_config;

typedef struct mcp_http_listener mcp_http_listener;
/* Listen on host:port with cfg (copied). Several listeners may be open
 * (the MCP endpoint's, the metrics one), each with its callbacks and
 * limits. Returns 0 and *out (out may be NULL), or a libuv error. */
int mcp_http_listen(uv_loop_t *loop, const char *host, int port, const mcp_http_config *cfg,
                mcp_http_listener **out);
int mcp_http_listener_port(const mcp_http_listener *l);  /* the port bound (useful with port 0) */
/* Accept no more connections on l; those open go on. */
void mcp_http_unlisten(mcp_http_listener *l);
/* Stop every listener and close every connection (on_close runs for
 * each); on_closed (may be NULL) once all are gone. */
void mcp_http_close(void (*on_closed)(void));
/* Serve one connected stream socket as if it had been accepted (the fuzz
 * target feeds requests through a socketpair); cfg is taken unless a
 * listener set one. Returns 0, or a libuv error (fd is then not closed). */
int mcp_http_conn_adopt(uv_loop_t *loop, const mcp_http_config *cfg, uv_os_sock_t fd);

void mcp_http_conn_set_data(mcp_http_conn *c, void *ud);
/* Header lines (each ending in \r\n) added to every answer of the current
 * exchange (e.g. CORS); copied. */
void mcp_http_conn_set_headers(mcp_http_conn *c, const char *headers);
/* The answer's writers never close the connection under their caller: when
 * a write fails (the peer reset the connection) or too much is pending, the
 * connection is doomed, later writes are ignored, and it is closed, with
 * on_close, on the next loop turn.
 * A whole response. headers: extra lines, each ending in \r\n, or NULL. */
void mcp_http_respond(mcp_http_conn *c, int status, const char *headers, const char *content_type,
                  const char *body, size_t len);
/* A streamed response (chunked), e.g. Server-Sent Events. */
void mcp_http_stream_begin(mcp_http_conn *c, int status, const char *headers, const char *content_type);
/* Returns -1 when the connection is doomed: the peer reset it or reads too
 * slowly. */
int mcp_http_stream_write(mcp_http_conn *c, const char *data, size_t len);
void mcp_http_stream_end(mcp_http_conn *c);

#endif
