/* The 2026-07-28 request metadata headers (headers.c) against the body,
 * with the x-mcp-header declarations of the fixture plugin's tools from
 * the real server.lua (server.c).
 *
 * The input is header lines ("Name: value"), a blank line, and the body.
 * The headers become an mcp_http_request as http.c makes it (values trimmed,
 * an empty one absent, repeats joined by ", ", the Mcp-Param-* ones
 * collected in order); a body that transport_http.c would not hand over
 * (not an object with a string method and a string or integer id) is
 * skipped. Checked:
 * - a refusal says why ("Header mismatch: ...");
 * - an acceptance means the version, method and (where one is due) name
 *   headers are there, the method header equal to the body's;
 * - the verdict does not change when a plain value is sent as
 *   =?base64?...?= instead, nor when a Mcp-Param header's name changes case. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>
#include <jansson.h>

#include "base64.h"
#include "buf.h"
#include "headers.h"
#include "http.h"
#include "json.h"
#include "server.h"
#include "require.h"

#define MAXF 16

typedef struct {
  mcp_buf version, method, name;          /* NUL-terminated when len > 0 */
  char *fname[MAXF], *fvalue[MAXF];
  int nf;
} headers;

static char *trimmed(const char *s, size_t n) {
  char *out;
  while (n > 0 && (*s == ' ' || *s == '\t')) s++, n--;
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  if ((out = malloc(n + 1)) == NULL) abort();
  memcpy(out, s, n);
  out[n] = '\0';
  return out;
}

static void join(mcp_buf *b, const char *v) {
  if (b->len > 0) {
    b->len--;                                /* the NUL */
    mcp_buf_adds(b, ", ");
  }
  mcp_buf_add(b, v, strlen(v));
  mcp_buf_addc(b, '\0');
}

static void read_headers(headers *h, const char *s, size_t n) {
  while (n > 0) {
    const char *nl = memchr(s, '\n', n), *colon;
    size_t len = nl ? (size_t)(nl - s) : n;
    colon = memchr(s, ':', len);
    if (colon != NULL && colon > s) {
      size_t nlen = (size_t)(colon - s);
      char *v = trimmed(colon + 1, len - nlen - 1);
      if (nlen == 20 && strncasecmp(s, "mcp-protocol-version", 20) == 0) join(&h->version, v);
      else if (nlen == 10 && strncasecmp(s, "mcp-method", 10) == 0) join(&h->method, v);
      else if (nlen == 8 && strncasecmp(s, "mcp-name", 8) == 0) join(&h->name, v);
      else if (nlen > strlen(MCP_PARAM_PREFIX) && strncasecmp(s, MCP_PARAM_PREFIX, strlen(MCP_PARAM_PREFIX)) == 0 &&
               h->nf < MAXF) {
        h->fname[h->nf] = trimmed(s, nlen);
        h->fvalue[h->nf++] = v;
        v = NULL;
      }
      free(v);
    }
    if (nl == NULL) break;
    n -= len + 1, s = nl + 1;
  }
}

static const char *value_of(mcp_buf *b) {
  return b->len > 1 && b->data[0] != '\0' ? b->data : NULL;   /* empty: absent, as http.c */
}

static int check(headers *h, json_t *msg, char *why, size_t cap) {
  mcp_http_request r;
  mcp_http_field f[MAXF];
  int ok;
  memset(&r, 0, sizeof r);
  r.method = HTTP_POST;
  strcpy(r.path, "/mcp");
  r.protocol_version = value_of(&h->version);
  r.mcp_method = value_of(&h->method);
  r.mcp_name = value_of(&h->name);
  for (int i = 0; i < h->nf; i++) f[i].name = h->fname[i], f[i].value = h->fvalue[i];
  r.fields = f;
  r.nfields = h->nf;
  why[0] = '\0';
  ok = mcp_headers_check(&r, msg, why, cap);
  REQUIRE(ok == 0 || ok == 1, "returned %d", ok);
  REQUIRE(memchr(why, '\0', cap) != NULL, "why not terminated");
  if (!ok) REQUIRE(strncmp(why, "Header mismatch: ", 17) == 0 && why[17] != '\0', "refused: '%s'", why);
  return ok;
}

/* A plain value as =?base64?...?=; NULL when it is not plain. */
static char *as_base64(const char *v) {
  mcp_buf b = MCP_BUF_INIT;
  if (v == NULL || strncmp(v, "=?base64?", 9) == 0) return NULL;
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if (*p != '\t' && (*p < 0x20 || *p > 0x7e)) return NULL;
  mcp_buf_adds(&b, "=?base64?");
  mcp_base64_encode(&b, v, strlen(v), 0);
  mcp_buf_adds(&b, "?=");
  mcp_buf_addc(&b, '\0');
  return b.data;
}

static void swap_value(mcp_buf *b, char *v) {
  b->len = 0;
  mcp_buf_add(b, v, strlen(v) + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data, *body = NULL;
  headers h;
  json_t *msg, *id;
  const char *method;
  char why[600], why2[600];
  int ok;
  fuzz_server();
  for (size_t i = 0; i + 1 < size; i++)
    if (s[i] == '\n' && s[i + 1] == '\n') {
      body = s + i + 2;
      break;
    }
  if (body == NULL) return 0;
  msg = mcp_json_parse(body, size - (size_t)(body - s), NULL, 0);
  id = json_object_get(msg, "id");
  method = json_string_value(json_object_get(msg, "method"));
  if (!json_is_object(msg) || method == NULL || !(json_is_string(id) || json_is_integer(id))) {
    json_decref(msg);
    return 0;
  }
  memset(&h, 0, sizeof h);
  read_headers(&h, s, (size_t)(body - s));
  ok = check(&h, msg, why, sizeof why);
  if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "fuzz_headers: %s\n", ok ? "accepted" : why);
  if (ok) {
    REQUIRE(value_of(&h.version) != NULL && value_of(&h.method) != NULL, "accepted without its headers");
    REQUIRE(strcmp(value_of(&h.method), method) == 0, "accepted with another method");
  }
  /* the same values as Base64, one header at a time */
  {
    mcp_buf *named[] = { &h.name, &h.method };
    for (int k = 0; k < 2; k++) {
      mcp_buf keep = MCP_BUF_INIT;
      char *b = as_base64(value_of(named[k]));
      if (b == NULL || k == 1) {               /* Mcp-Method is compared plain */
        free(b);
        continue;
      }
      mcp_buf_add(&keep, named[k]->data, named[k]->len);
      swap_value(named[k], b);
      REQUIRE(check(&h, msg, why2, sizeof why2) == ok, "Mcp-Name as Base64: %s / %s", why, why2);
      swap_value(named[k], keep.data);
      mcp_buf_free(&keep);
      free(b);
    }
  }
  for (int i = 0; i < h.nf; i++) {
    char *b = as_base64(h.fvalue[i]), *keep = h.fvalue[i];
    if (b != NULL) {
      h.fvalue[i] = b;
      REQUIRE(check(&h, msg, why2, sizeof why2) == ok, "%s as Base64: %s / %s", h.fname[i], why, why2);
      h.fvalue[i] = keep;
      free(b);
    }
    for (char *p = h.fname[i]; *p; p++) *p = (char)(islower((unsigned char)*p) ? toupper((unsigned char)*p) : tolower((unsigned char)*p));
    REQUIRE(check(&h, msg, why2, sizeof why2) == ok, "%s in other case: %s / %s", h.fname[i], why, why2);
  }
  for (int i = 0; i < h.nf; i++) free(h.fname[i]), free(h.fvalue[i]);
  mcp_buf_free(&h.version);
  mcp_buf_free(&h.method);
  mcp_buf_free(&h.name);
  json_decref(msg);
  return 0;
}
