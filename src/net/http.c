/* An HTTP/1.1 server on libuv and http-parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "http.h"
#include "http_status.h"
#include "log.h"

enum { H_CONTENT_TYPE, H_ACCEPT, H_ORIGIN, H_HOST, H_AUTH, H_SESSION, H_PROTO, H_LAST_EVENT,
       H_EXPECT, H_MCP_METHOD, H_MCP_NAME, H_ACR_HEADERS, H_TRACEPARENT, H_TRACESTATE, H_IF_NONE_MATCH, H_COOKIE, NH };
enum { COLLECT = NH };          /* c->cur: a header named cfg.collect_prefix... */
#define NO_DUE UINT64_MAX
#define NAME(s) { s, sizeof s - 1 }
static const struct {
  const char *name;
  size_t len;
} header_names[NH] = {
  NAME("content-type"), NAME("accept"), NAME("origin"), NAME("host"), NAME("authorization"),
  NAME("mcp-session-id"), NAME("mcp-protocol-version"), NAME("last-event-id"), NAME("expect"),
  NAME("mcp-method"), NAME("mcp-name"), NAME("access-control-request-headers"),
  NAME("traceparent"), NAME("tracestate"), NAME("if-none-match"), NAME("cookie")
};
#undef NAME

typedef struct {
  uv_write_t req;
  mcp_http_conn *conn;
  char data[];
} write_req;

/* A connection. Owned by the server list: freed in its close callback. */
struct mcp_http_conn {
  uv_tcp_t tcp;
  uv_timer_t timer;            /* the deadline's, or due at once (kick, doomed) */
  uint64_t due;                /* the deadline (loop time): slow headers or body, idle; NO_DUE */
  uint64_t armed;              /* when the timer fires, while it is active */
  http_parser parser;
  mcp_buf in;                  /* read, not yet parsed */
  size_t in_off;
  mcp_buf url, body, values[NH];
  mcp_buf field;               /* the header name being read */
  mcp_buf collected;           /* headers named cfg.collect_prefix...: "name\0value\0", in order */
  mcp_buf fieldv;              /* mcp_http_field[] pointing into collected, built for on_request */
  mcp_buf head_out;            /* an answer's head, built here for the write */
  size_t header_bytes;
  int cur;                     /* header of interest whose value is being read, COLLECT, or -1 */
  int in_value;                /* the last callback was a value */
  unsigned ready : 1;          /* a request is complete, waiting for on_request */
  unsigned busy : 1;           /* its answer has not ended */
  unsigned streaming : 1;      /* a chunked answer is open */
  unsigned keep_alive : 1;
  unsigned closing : 1;
  unsigned doomed : 1;         /* to be closed on the next loop turn; writes ignored */
  unsigned error : 1;          /* answered an error; close once written */
  unsigned kick : 1;           /* the timer is due at once: parse the next request */
  unsigned http10 : 1;         /* an HTTP/1.0 peer: no chunked encoding */
  unsigned head : 1;           /* the exchange answers a HEAD: no content (RFC 9110, 9.3.2) */
  size_t pending;              /* bytes handed to libuv, not yet written */
  char *extra;                 /* header lines for every answer of this exchange (owned) */
  void *ud;
  const mcp_http_config *cfg;      /* its listener's (or the one mcp_http_conn_adopt was given) */
  int *count;                  /* the connections of that listener */
  mcp_http_listener *listener;     /* NULL for mcp_http_conn_adopt's */
  mcp_http_conn *prev, *next;
};

/* A listener. Owned by the list: freed once its handle is closed
 * (mcp_http_unlisten, mcp_http_close) and its last connection gone, since its
 * connections use its cfg until they close. */
struct mcp_http_listener {
  uv_tcp_t tcp;
  mcp_http_config cfg;
  int port, nconns;
  unsigned closing : 1, closed : 1;
  mcp_http_listener *next;
};

static struct {
  uv_loop_t *loop;
  mcp_http_listener *listeners;    /* open and closing */
  mcp_http_config fd_cfg;          /* mcp_http_conn_adopt's connections' */
  int fd_nconns;
  http_parser_settings settings;
  mcp_http_conn *conns, *oldest;  /* newest first; the last */
  int nconns;
  void (*on_closed)(void);
} H;

static void conn_close(mcp_http_conn *c);
static void listener_release(mcp_http_listener *l);
static void conn_close_later(mcp_http_conn *c);
static void drive(mcp_http_conn *c);
static void on_timer(uv_timer_t *t);

/* Deadlines move with every request (header, body, idle), so the timer is
 * not restarted for each: it is re-armed only when it would fire after the
 * new deadline, and on firing before the deadline it re-arms for the rest. */
static void deadline(mcp_http_conn *c, uint64_t ms) {
  c->due = uv_now(H.loop) + ms;
  if (!uv_is_active((uv_handle_t *)&c->timer) || c->armed > c->due) {
    c->armed = c->due;
    uv_timer_start(&c->timer, on_timer, ms, 0);
  }
}

/* The timer fires on the next loop turn (kick, doomed). */
static void soon(mcp_http_conn *c) {
  c->armed = uv_now(H.loop);
  uv_timer_start(&c->timer, on_timer, 0, 0);
}

/* Writing: try at once, queue the rest. */

static void write_done(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  mcp_http_conn *c = w->conn;
  size_t len = *(size_t *)w->data;
  c->pending -= len;
  free(w);
  if (status < 0 && status != UV_ECANCELED) {
    mcp_debug("http: write: %s", uv_strerror(status));
    conn_close(c);
    return;
  }
  if (c->pending == 0 && !c->busy && (!c->keep_alive || c->error)) conn_close(c);
}

/* The writers below run under the transport, which may be in the middle of
 * a stream of its own: none of them closes the connection. A write that
 * fails (the peer reset it) or overflows dooms the connection instead: later
 * writes are ignored and the close, with on_close, comes on the next loop
 * turn, when no caller holds the exchange. */
static int conn_writev(mcp_http_conn *c, const uv_buf_t *bufs, int nbufs) {
  size_t len = 0, skip, off = 0;
  int n = 0;
  if (c->closing || c->doomed) return -1;
  for (int i = 0; i < nbufs; i++) len += bufs[i].len;
  if (len == 0) return 0;
  if (c->pending == 0) {
    n = uv_try_write((uv_stream_t *)&c->tcp, bufs, (unsigned)nbufs);
    if (n < 0 && n != UV_EAGAIN) {
      mcp_debug("http: write: %s; connection dropped", uv_strerror(n));
      conn_close_later(c);
      return -1;
    }
    if (n < 0) n = 0;
    if ((size_t)n == len) return 0;
  }
  skip = (size_t)n;
  len -= skip;
  if (c->pending + len > c->cfg->max_pending) {
    mcp_warn("http: a client reads too slowly (%zu bytes pending); connection dropped",
             c->pending + len);
    conn_close_later(c);
    return -1;
  }
  write_req *w = malloc(sizeof *w + sizeof(size_t) + len);
  if (w == NULL) abort();
  w->conn = c;
  *(size_t *)w->data = len;
  for (int i = 0; i < nbufs; i++) {       /* what the kernel did not take, in one piece */
    size_t k = bufs[i].len;
    if (skip >= k) {
      skip -= k;
      continue;
    }
    memcpy(w->data + sizeof(size_t) + off, bufs[i].base + skip, k - skip);
    off += k - skip;
    skip = 0;
  }
  uv_buf_t b = uv_buf_init(w->data + sizeof(size_t), (unsigned)len);
  c->pending += len;
  if ((n = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, write_done)) < 0) {
    mcp_debug("http: write: %s; connection dropped", uv_strerror(n));
    c->pending -= len;
    free(w);
    conn_close_later(c);
    return -1;
  }
  return 0;
}

static int conn_write(mcp_http_conn *c, const char *data, size_t len) {
  uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
  return conn_writev(c, &b, 1);
}

static void add_head(mcp_buf *b, mcp_http_conn *c, int status, const char *headers,
                     const char *content_type) {
  const char *text = mcp_http_status_text(status);
  mcp_http_status_count(status);
  mcp_buf_adds(b, "HTTP/1.1 ");
  mcp_buf_add_int(b, status);
  mcp_buf_addc(b, ' ');
  mcp_buf_add(b, text, strlen(text));
  mcp_buf_adds(b, "\r\n");
  if (content_type) {
    mcp_buf_adds(b, "Content-Type: ");
    mcp_buf_add(b, content_type, strlen(content_type));
    mcp_buf_adds(b, "\r\n");
  }
  if (headers) mcp_buf_add(b, headers, strlen(headers));
  if (c->extra) mcp_buf_add(b, c->extra, strlen(c->extra));
  if (!c->keep_alive || c->error) mcp_buf_adds(b, "Connection: close\r\n");
}

/* The exchange is over: read the next request, or close. */
static void exchange_done(mcp_http_conn *c) {
  c->header_bytes = 0;
  free(c->extra);
  c->extra = NULL;
  c->busy = 0;
  c->streaming = 0;
  c->head = 0;
  c->ud = NULL;
  if (c->closing || c->doomed) return;
  if (!c->keep_alive || c->error) {
    if (c->pending == 0) conn_close_later(c);
    return;
  }
  http_parser_pause(&c->parser, 0);
  if (c->in_off == c->in.len) {  /* nothing read ahead: idle */
    deadline(c, c->cfg->idle_ms);
    return;
  }
  /* Never parse the next request under the caller (it may be inside the
   * previous one's handler): the timer does it on the next loop turn. */
  c->kick = 1;
  soon(c);
}

/* The head goes out with the body in one writev; the head is built in the
 * connection's own buffer. */
void mcp_http_respond(mcp_http_conn *c, int status, const char *headers, const char *content_type,
                  const char *body, size_t len) {
  mcp_buf *b = &c->head_out;
  uv_buf_t bufs[2];
  b->len = 0;
  add_head(b, c, status, headers, content_type);
  if (status != 304) {          /* a 304's Content-Length would have to be the 200's (RFC 9110, 8.6) */
    mcp_buf_adds(b, "Content-Length: ");
    mcp_buf_add_int(b, (long long)len);
    mcp_buf_adds(b, "\r\n");
  }
  mcp_buf_adds(b, "\r\n");
  bufs[0] = uv_buf_init(b->data, (unsigned)b->len);
  bufs[1] = uv_buf_init((char *)body, len && !c->head ? (unsigned)len : 0);
  conn_writev(c, bufs, bufs[1].len ? 2 : 1);
  exchange_done(c);
}

/* HTTP/1.0 has no chunked encoding: the stream is ended by closing. */
void mcp_http_stream_begin(mcp_http_conn *c, int status, const char *headers, const char *content_type) {
  mcp_buf *b = &c->head_out;
  b->len = 0;
  if (c->http10) c->keep_alive = 0;
  add_head(b, c, status, headers, content_type);
  if (c->http10) mcp_buf_adds(b, "Cache-Control: no-cache\r\n\r\n");
  else mcp_buf_adds(b, "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
  c->streaming = 1;
  conn_write(c, b->data, b->len);
}

/* A chunk: its size line, the data and its end in one writev. */
int mcp_http_stream_write(mcp_http_conn *c, const char *data, size_t len) {
  char size[24];
  uv_buf_t bufs[3];
  size_t n;
  if (len == 0 || c->head) return 0;
  if (c->http10) return conn_write(c, data, len);
  n = mcp_fmt_hex(size, len);
  size[n++] = '\r';
  size[n++] = '\n';
  bufs[0] = uv_buf_init(size, (unsigned)n);
  bufs[1] = uv_buf_init((char *)data, (unsigned)len);
  bufs[2] = uv_buf_init("\r\n", 2);
  return conn_writev(c, bufs, 3);
}

void mcp_http_stream_end(mcp_http_conn *c) {
  if (c->streaming && !c->http10 && !c->head) conn_write(c, "0\r\n\r\n", 5);
  exchange_done(c);
}

void mcp_http_conn_set_data(mcp_http_conn *c, void *ud) { c->ud = ud; }
void mcp_http_conn_set_headers(mcp_http_conn *c, const char *headers) {
  free(c->extra);
  c->extra = headers ? strdup(headers) : NULL;
}

/* Errors found while reading: answer and close. */
static void fail(mcp_http_conn *c, int status, const char *why) {
  char body[256];
  int n = snprintf(body, sizeof body,
                   "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"%s\"}}", why);
  mcp_debug("http: %d %s", status, why);
  c->error = 1;
  c->busy = 1;
  mcp_http_respond(c, status, NULL, "application/json", body, (size_t)n);
}

/* Parser callbacks. */

static mcp_http_conn *conn_of(http_parser *p) { return p->data; }

static int count_header(mcp_http_conn *c, size_t n) {
  c->header_bytes += n;
  if (c->header_bytes > c->cfg->max_header) return -1;
  return 0;
}

static void reset_request(mcp_http_conn *c) {
  c->url.len = c->body.len = 0;
  for (int i = 0; i < NH; i++) c->values[i].len = 0;
  c->field.len = c->collected.len = c->fieldv.len = 0;
  c->header_bytes = 0;
  c->cur = -1;
  c->in_value = 0;
}

static int on_message_begin(http_parser *p) {
  mcp_http_conn *c = conn_of(p);
  reset_request(c);
  deadline(c, c->cfg->header_ms);
  return 0;
}

static int on_url(http_parser *p, const char *at, size_t n) {
  mcp_http_conn *c = conn_of(p);
  if (count_header(c, n)) return -1;
  mcp_buf_add(&c->url, at, n);
  return 0;
}

/* The value being read is complete. */
static void end_value(mcp_http_conn *c) {
  if (c->cur == COLLECT) mcp_buf_addc(&c->collected, '\0');
  c->cur = -1;
}

static int on_header_field(http_parser *p, const char *at, size_t n) {
  mcp_http_conn *c = conn_of(p);
  if (count_header(c, n)) return -1;
  if (c->in_value) {
    end_value(c);
    c->field.len = 0;
    c->in_value = 0;
  }
  mcp_buf_add(&c->field, at, n);
  return 0;
}

/* Which header is this name: one of header_names, COLLECT, or -1. */
static int header_index(const mcp_http_conn *c, const char *name, size_t len) {
  const char *prefix = c->cfg->collect_prefix;
  size_t n;
  for (int i = 0; i < NH; i++)
    if (header_names[i].len == len && (name[0] | 0x20) == header_names[i].name[0] &&
        strncasecmp(header_names[i].name, name, len) == 0)
      return i;
  if (prefix != NULL && len > (n = strlen(prefix)) && strncasecmp(prefix, name, n) == 0)
    return COLLECT;
  return -1;
}

static int on_header_value(http_parser *p, const char *at, size_t n) {
  mcp_http_conn *c = conn_of(p);
  if (count_header(c, n)) return -1;
  if (memchr(at, '\0', n) != NULL) return -1;   /* values are C strings: a NUL would cut one short */
  if (!c->in_value) {
    c->in_value = 1;
    c->cur = header_index(c, c->field.data, c->field.len);
    if (c->cur == COLLECT) {
      mcp_buf_add(&c->collected, c->field.data, c->field.len);
      mcp_buf_addc(&c->collected, '\0');
    } else if (c->cur >= 0 && c->values[c->cur].len) {
      mcp_buf_adds(&c->values[c->cur], ", ");   /* repeated header */
    }
  }
  if (c->cur == COLLECT) mcp_buf_add(&c->collected, at, n);
  else if (c->cur >= 0) mcp_buf_add(&c->values[c->cur], at, n);
  return 0;
}

static int on_headers_complete(http_parser *p) {
  mcp_http_conn *c = conn_of(p);
  end_value(c);
  deadline(c, c->cfg->idle_ms);   /* the body must keep coming */
  c->http10 = p->http_major == 1 && p->http_minor == 0;
  if (p->content_length != ULLONG_MAX && p->content_length > c->cfg->max_body) return -2;
  if (c->values[H_EXPECT].len == 12 && !c->http10 &&
      strncasecmp(c->values[H_EXPECT].data, "100-continue", 12) == 0)
    conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
  return 0;
}

static int on_body(http_parser *p, const char *at, size_t n) {
  mcp_http_conn *c = conn_of(p);
  if (c->body.len + n > c->cfg->max_body) return -2;
  mcp_buf_add(&c->body, at, n);
  deadline(c, c->cfg->idle_ms);
  return 0;
}

static int on_message_complete(http_parser *p) {
  mcp_http_conn *c = conn_of(p);
  end_value(c);                /* a trailer's */
  c->ready = 1;
  c->due = NO_DUE;
  http_parser_pause(p, 1);     /* one exchange at a time: the rest waits in `in` */
  return 0;
}

/* A field value without the whitespace around it (RFC 9110, 5.5), in place. */
static char *trim(char *s, size_t len) {
  while (len > 0 && (*s == ' ' || *s == '\t')) s++, len--;
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
  s[len] = '\0';
  return s;
}

/* A header of interest, or NULL when absent or empty. */
static const char *value(mcp_http_conn *c, int h) {
  mcp_buf *b = &c->values[h];
  const char *v;
  if (b->len == 0) return NULL;
  mcp_buf_addc(b, '\0');
  v = trim(b->data, --b->len);
  return *v ? v : NULL;
}

/* The collected headers as mcp_http_field[] (an empty value stays ""). */
static int collected(mcp_http_conn *c, const mcp_http_field **out) {
  size_t off = 0;
  while (off < c->collected.len) {
    mcp_http_field f;
    size_t n;
    f.name = c->collected.data + off;
    off += strlen(f.name) + 1;
    n = strlen(c->collected.data + off);
    f.value = trim(c->collected.data + off, n);
    off += n + 1;
    mcp_buf_add(&c->fieldv, &f, sizeof f);
  }
  *out = (const mcp_http_field *)c->fieldv.data;
  return (int)(c->fieldv.len / sizeof(mcp_http_field));
}

static void dispatch(mcp_http_conn *c) {
  mcp_http_request r;
  struct http_parser_url u;
  memset(&r, 0, sizeof r);
  r.method = c->parser.method;
  r.http_minor = c->parser.http_major == 1 ? c->parser.http_minor : 1;
  http_parser_url_init(&u);
  if (http_parser_parse_url(c->url.data, c->url.len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH)) ||
      u.field_data[UF_PATH].len >= sizeof r.path) {
    fail(c, 400, "bad request target");
    return;
  }
  memcpy(r.path, c->url.data + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
  r.path[u.field_data[UF_PATH].len] = '\0';
  if (u.field_set & (1 << UF_QUERY)) {
    r.query = c->url.data + u.field_data[UF_QUERY].off;
    r.query_len = u.field_data[UF_QUERY].len;
  }
  r.content_type = value(c, H_CONTENT_TYPE);
  r.accept = value(c, H_ACCEPT);
  r.origin = value(c, H_ORIGIN);
  r.host = value(c, H_HOST);
  r.authorization = value(c, H_AUTH);
  r.session_id = value(c, H_SESSION);
  r.protocol_version = value(c, H_PROTO);
  r.last_event_id = value(c, H_LAST_EVENT);
  r.mcp_method = value(c, H_MCP_METHOD);   /* 2026-07-28 request metadata */
  r.mcp_name = value(c, H_MCP_NAME);
  r.traceparent = value(c, H_TRACEPARENT);
  r.tracestate = value(c, H_TRACESTATE);
  r.if_none_match = value(c, H_IF_NONE_MATCH);
  r.cookie = value(c, H_COOKIE);
  r.nfields = collected(c, &r.fields);
  r.preflight_headers = value(c, H_ACR_HEADERS);
  r.body = c->body.data ? c->body.data : "";   /* never NULL: parsers take (NULL, 0) badly */
  r.body_len = c->body.len;
  c->keep_alive = http_should_keep_alive(&c->parser);
  c->head = r.method == HTTP_HEAD;
  c->busy = 1;
  c->cfg->on_request(c, &r);
}

/* Parse what was read, one request at a time. */
static void drive(mcp_http_conn *c) {
  /* An exchange answered at once set kick: the next request waits for it
   * (parsed here, its header timer replaced the kick, whose firing then
   * stopped the timer: an incomplete request never timed out). */
  while (!c->closing && !c->doomed && !c->busy && !c->kick && c->in_off < c->in.len) {
    size_t n = http_parser_execute(&c->parser, &H.settings, c->in.data + c->in_off,
                                   c->in.len - c->in_off);
    enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
    c->in_off += n;
    if (err != HPE_OK && err != HPE_PAUSED) {
      if (err == HPE_CB_headers_complete || err == HPE_CB_body) fail(c, 413, "request body too large");
      else if (c->header_bytes > c->cfg->max_header) fail(c, 431, "request headers too large");
      else if (err == HPE_CB_header_value) fail(c, 400, "NUL in a header value");
      else fail(c, 400, http_errno_description(err));
      return;
    }
    if (c->ready) {
      c->ready = 0;
      dispatch(c);
    } else if (n == 0) {
      break;
    }
  }
  if (c->in_off == c->in.len) c->in.len = c->in_off = 0;
  /* Idle between requests; a request begun keeps the header timer it started. */
  if (!c->busy && !c->closing && !c->doomed && !c->kick && c->in.len == 0 && c->header_bytes == 0)
    deadline(c, c->cfg->idle_ms);
}

/* Its time is up, or its slot is wanted: a request begun gets 408, an idle
 * connection is closed. */
static void conn_expire(mcp_http_conn *c) {
  if (c->in.len > 0 || c->header_bytes > 0) fail(c, 408, "request took too long to arrive");
  else conn_close(c);
}

static void on_timer(uv_timer_t *t) {
  mcp_http_conn *c = t->data;
  uint64_t now = uv_now(H.loop);
  if (c->doomed) {
    conn_close(c);
    return;
  }
  if (c->kick) {
    c->kick = 0;
    drive(c);
    return;
  }
  if (c->busy || c->due == NO_DUE) return;
  if (now < c->due) {            /* fired for an earlier deadline, since moved */
    c->armed = c->due;
    uv_timer_start(t, on_timer, c->due - now, 0);
    return;
  }
  conn_expire(c);
}

/* Connections. */

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  mcp_http_conn *c = h->data;
  (void)hint;
  if (c->in.cap - c->in.len < 65536) mcp_buf_grow(&c->in, 65536);
  buf->base = c->in.data + c->in.len;
  buf->len = c->in.cap - c->in.len;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  mcp_http_conn *c = s->data;
  (void)buf;
  if (n < 0) {
    conn_close(c);
    return;
  }
  c->in.len += (size_t)n;
  if (c->in.len - c->in_off > c->cfg->max_body + c->cfg->max_header + 65536 && c->busy) {
    mcp_warn("http: a client sends faster than it reads answers; connection dropped");
    conn_close(c);
    return;
  }
  if (!c->busy && c->header_bytes == 0 && c->in.len == (size_t)n + c->in_off) {
    c->due = NO_DUE;              /* the idle deadline; a started request keeps its header one */
    c->kick = 0;
  }
  drive(c);
}

static void conn_free(uv_handle_t *h) {
  mcp_http_conn *c = h->data;
  free(c->extra);
  mcp_buf_free(&c->in);
  mcp_buf_free(&c->url);
  mcp_buf_free(&c->body);
  for (int i = 0; i < NH; i++) mcp_buf_free(&c->values[i]);
  mcp_buf_free(&c->field);
  mcp_buf_free(&c->collected);
  mcp_buf_free(&c->fieldv);
  mcp_buf_free(&c->head_out);
  free(c);
  if (H.nconns == 0 && H.on_closed && H.listeners == NULL) {
    void (*cb)(void) = H.on_closed;
    H.on_closed = NULL;
    cb();
  }
}

static void timer_closed(uv_handle_t *h) {
  mcp_http_conn *c = h->data;
  uv_close((uv_handle_t *)&c->tcp, conn_free);
}

static void conn_close(mcp_http_conn *c) {
  void *ud = c->ud;
  if (c->closing) return;
  c->closing = 1;
  c->ud = NULL;
  if (c->prev) c->prev->next = c->next; else H.conns = c->next;
  if (c->next) c->next->prev = c->prev; else H.oldest = c->prev;
  H.nconns--;
  (*c->count)--;
  uv_read_stop((uv_stream_t *)&c->tcp);   /* no read_cb once closing: it needs c->cfg */
  if (c->cfg->on_close) c->cfg->on_close(c, ud);
  c->cfg = NULL;
  if (c->listener) listener_release(c->listener);
  uv_close((uv_handle_t *)&c->timer, timer_closed);
}

/* Close from under a caller: read nothing more, write nothing more, and
 * close on the next loop turn (the connection's timer, due at once). */
static void conn_close_later(mcp_http_conn *c) {
  if (c->closing || c->doomed) return;
  c->doomed = 1;
  c->kick = 0;
  uv_read_stop((uv_stream_t *)&c->tcp);
  soon(c);
}

static mcp_http_conn *conn_new(const mcp_http_config *cfg, int *count) {
  mcp_http_conn *c = calloc(1, sizeof *c);
  if (c == NULL) abort();
  c->cfg = cfg;
  c->count = count;
  uv_tcp_init(H.loop, &c->tcp);
  uv_timer_init(H.loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->cur = -1;
  c->due = NO_DUE;
  return c;
}

/* A connection whose socket could not be had: freed without on_close. */
static void conn_drop(mcp_http_conn *c) {
  c->closing = 1;
  uv_close((uv_handle_t *)&c->timer, timer_closed);
}

/* The oldest connection of the listener counted by count that serves
 * nothing: no request handled or complete, no answer being written. A
 * client that trickles its headers (slowloris) or idles between requests
 * is one; a call waiting for its answer or an open SSE stream never is. */
static mcp_http_conn *conn_idle_oldest(const int *count) {
  for (mcp_http_conn *c = H.oldest; c; c = c->prev)
    if (c->count == count && !c->busy && !c->ready && !c->streaming && !c->error &&
        !c->doomed && !c->closing && c->pending == 0)
      return c;
  return NULL;
}

/* Its socket is open: serve it. At the limit, the oldest idle connection
 * gives its slot up, so connections that never finish their headers can
 * delay a newcomer by no more than their own number of arrivals, and only a
 * server full of real work answers 503. */
static void conn_start(mcp_http_conn *c) {
  mcp_http_conn *idle;
  http_parser_init(&c->parser, HTTP_REQUEST);
  c->parser.data = c;
  c->next = H.conns;
  if (H.conns) H.conns->prev = c; else H.oldest = c;
  H.conns = c;
  H.nconns++;
  (*c->count)++;
  uv_tcp_nodelay(&c->tcp, 1);
  if (*c->count > c->cfg->max_connections) {
    if ((idle = conn_idle_oldest(c->count)) != NULL && idle != c) {
      mcp_debug("http: at %d connections; the oldest idle one gives its slot up",
                c->cfg->max_connections);
      conn_expire(idle);
    } else {
      mcp_warn("http: %d connections, all of them busy; refusing one", c->cfg->max_connections);
      c->keep_alive = 0;
      fail(c, 503, "too many connections");
      return;
    }
  }
  deadline(c, c->cfg->header_ms);
  uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

static void on_connection(uv_stream_t *server, int status) {
  mcp_http_listener *l = server->data;
  mcp_http_conn *c;
  if (status < 0) {
    mcp_warn("http: accept: %s", uv_strerror(status));
    return;
  }
  c = conn_new(&l->cfg, &l->nconns);
  c->listener = l;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) conn_drop(c);
  else conn_start(c);
}

static void setup(uv_loop_t *loop) {
  H.loop = loop;
  mcp_http_status_init();
  memset(&H.settings, 0, sizeof H.settings);
  H.settings.on_message_begin = on_message_begin;
  H.settings.on_url = on_url;
  H.settings.on_header_field = on_header_field;
  H.settings.on_header_value = on_header_value;
  H.settings.on_headers_complete = on_headers_complete;
  H.settings.on_body = on_body;
  H.settings.on_message_complete = on_message_complete;
}

int mcp_http_listen(uv_loop_t *loop, const char *host, int port, const mcp_http_config *cfg,
                mcp_http_listener **out) {
  struct sockaddr_storage addr;
  int r, len = sizeof addr;
  mcp_http_listener *l;
  setup(loop);
  if (strchr(host, ':')) r = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr);
  else r = uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
  if (r != 0) return r;
  if ((l = calloc(1, sizeof *l)) == NULL) abort();
  l->cfg = *cfg;
  uv_tcp_init(loop, &l->tcp);
  l->tcp.data = l;
  if ((r = uv_tcp_bind(&l->tcp, (struct sockaddr *)&addr, 0)) != 0 ||
      (r = uv_listen((uv_stream_t *)&l->tcp, 128, on_connection)) != 0) {
    uv_close((uv_handle_t *)&l->tcp, (uv_close_cb)free);
    return r;
  }
  uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&addr, &len);
  l->port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                             : ((struct sockaddr_in *)&addr)->sin_port);
  l->next = H.listeners;
  H.listeners = l;
  if (out) *out = l;
  return 0;
}

int mcp_http_listener_port(const mcp_http_listener *l) { return l ? l->port : 0; }

int mcp_http_conn_adopt(uv_loop_t *loop, const mcp_http_config *cfg, uv_os_sock_t fd) {
  mcp_http_conn *c;
  int r;
  setup(loop);
  H.fd_cfg = *cfg;
  c = conn_new(&H.fd_cfg, &H.fd_nconns);
  if ((r = uv_tcp_open(&c->tcp, fd)) != 0) {
    conn_drop(c);
    return r;
  }
  conn_start(c);
  return 0;
}

static void listener_release(mcp_http_listener *l) {
  mcp_http_listener **p = &H.listeners;
  if (!l->closed || l->nconns > 0) return;
  while (*p && *p != l) p = &(*p)->next;
  if (*p) *p = l->next;
  free(l);
}

static void listener_closed(uv_handle_t *h) {
  mcp_http_listener *l = h->data;
  l->closed = 1;
  listener_release(l);
  if (H.listeners == NULL && H.nconns == 0 && H.on_closed) {
    void (*cb)(void) = H.on_closed;
    H.on_closed = NULL;
    cb();
  }
}

void mcp_http_unlisten(mcp_http_listener *l) {
  if (l == NULL || l->closing) return;
  l->closing = 1;
  uv_close((uv_handle_t *)&l->tcp, listener_closed);
}

void mcp_http_close(void (*on_closed)(void)) {
  H.on_closed = on_closed;
  for (mcp_http_listener *l = H.listeners; l; l = l->next) mcp_http_unlisten(l);
  while (H.conns) conn_close(H.conns);
  if (H.listeners == NULL && H.nconns == 0 && H.on_closed) {
    H.on_closed = NULL;
    on_closed();
  }
}
