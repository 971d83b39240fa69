/* Requests and responses as the two ends read them (responses.h), with
 * http-parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "buf.h"
#include "responses.h"

typedef struct {
  const char *head;
  int nhead, lenient, n, interim;
  mcp_buf field, ctype, body;
  int in_ctype;
  fuzz_response_cb cb;
  void *ud;
} reading;

static int on_begin(http_parser *p) {
  reading *rd = p->data;
  rd->field.len = rd->ctype.len = rd->body.len = 0;
  rd->in_ctype = 0;
  return 0;
}

static int on_field(http_parser *p, const char *at, size_t n) {
  reading *rd = p->data;
  if (rd->in_ctype >= 0) rd->field.len = 0;   /* a new name after a value */
  rd->in_ctype = -1;
  mcp_buf_add(&rd->field, at, n);
  return 0;
}

static int on_value(http_parser *p, const char *at, size_t n) {
  reading *rd = p->data;
  if (rd->in_ctype < 0) rd->in_ctype = rd->field.len == 12 && strncasecmp(rd->field.data, "content-type", 12) == 0;
  if (rd->in_ctype) mcp_buf_add(&rd->ctype, at, n);
  return 0;
}

static int on_headers(http_parser *p) {
  reading *rd = p->data;
  int i = rd->n - rd->interim;
  if (p->status_code / 100 == 1) return 0;
  /* a HEAD's answer has no content */
  return i < rd->nhead && rd->head[i] && (!rd->lenient || http_should_keep_alive(p)) ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t n) {
  mcp_buf_add(&((reading *)p->data)->body, at, n);
  return 0;
}

static int on_complete(http_parser *p) {
  reading *rd = p->data;
  rd->n++;
  if (p->status_code / 100 == 1) {
    rd->interim++;
    return 0;
  }
  mcp_buf_addc(&rd->ctype, '\0');
  mcp_buf_addc(&rd->body, '\0');
  if (rd->cb) rd->cb((int)p->status_code, rd->ctype.len > 1 ? rd->ctype.data : NULL, rd->body.data,
                     rd->body.len - 1, rd->ud);
  return 0;
}

int fuzz_responses(const char *data, size_t len, const char *head, int nhead, int lenient, fuzz_response_cb cb,
                   void *ud) {
  http_parser p;
  http_parser_settings s;
  reading rd;
  size_t n;
  memset(&s, 0, sizeof s);
  memset(&rd, 0, sizeof rd);
  rd.head = head, rd.nhead = nhead, rd.lenient = lenient, rd.cb = cb, rd.ud = ud;
  s.on_message_begin = on_begin;
  s.on_header_field = on_field;
  s.on_header_value = on_value;
  s.on_headers_complete = on_headers;
  s.on_body = on_body;
  s.on_message_complete = on_complete;
  http_parser_init(&p, HTTP_RESPONSE);
  p.data = &rd;
  n = http_parser_execute(&p, &s, data, len);
  if (HTTP_PARSER_ERRNO(&p) != HPE_OK || n != len) {
    fprintf(stderr, "fuzz: responses: %s at %zu of %zu:\n%.*s\n", http_errno_name(HTTP_PARSER_ERRNO(&p)), n, len,
            (int)len, data);
    abort();
  }
  http_parser_execute(&p, &s, NULL, 0);      /* the EOF: ends a response read to the close */
  mcp_buf_free(&rd.field);
  mcp_buf_free(&rd.ctype);
  mcp_buf_free(&rd.body);
  return rd.n - rd.interim;
}

static int on_request_complete(http_parser *p) {
  mcp_buf_addc(p->data, p->method == HTTP_HEAD);
  return 0;
}

int fuzz_request_heads(const char *data, size_t len, mcp_buf *heads) {
  http_parser p;
  http_parser_settings s;
  memset(&s, 0, sizeof s);
  s.on_message_complete = on_request_complete;
  http_parser_init(&p, HTTP_REQUEST);
  p.data = heads;
  heads->len = 0;
  http_parser_execute(&p, &s, data, len);
  return (int)heads->len;
}
