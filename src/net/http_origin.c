/* Who may reach the MCP endpoint: the Origin and Host checks (DNS
 * rebinding) against the bind address and --allow-origin, the static bearer
 * token (--token), and CORS for browser clients on an allowed origin. */
#define _GNU_SOURCE          /* strcasestr */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "crypto.h"
#include "headers.h"
#include "http_origin.h"

/* The host part of "host[:port]" or "[v6]:port", into out. */
static void host_part(const char *hostport, char *out, size_t cap) {
  const char *end;
  size_t n;
  if (hostport[0] == '[') {
    end = strchr(hostport, ']');
    n = end ? (size_t)(end - hostport) + 1 : strlen(hostport);
  } else {
    end = strchr(hostport, ':');
    n = end ? (size_t)(end - hostport) : strlen(hostport);
  }
  if (n >= cap) n = cap - 1;
  memcpy(out, hostport, n);
  out[n] = '\0';
}

static int is_local_host(const char *h) {
  return strcasecmp(h, "localhost") == 0 || strcmp(h, "127.0.0.1") == 0 || strcmp(h, "[::1]") == 0;
}

int mcp_http_origin_allowed(const mcp_http_options *o, const char *origin) {
  const char *p = strstr(origin, "://");
  char host[256];
  for (int i = 0; i < o->nallow_origins; i++)
    if (strcasecmp(origin, o->allow_origins[i]) == 0) return 1;
  if (p == NULL || (strncasecmp(origin, "http://", 7) != 0 && strncasecmp(origin, "https://", 8) != 0))
    return 0;
  host_part(p + 3, host, sizeof host);
  return is_local_host(host);
}

int mcp_http_host_allowed(const mcp_http_options *o, const char *hostport) {
  char host[256], bind[256];
  host_part(hostport, host, sizeof host);
  if (is_local_host(host)) return 1;
  snprintf(bind, sizeof bind, strchr(o->host, ':') ? "[%s]" : "%s", o->host);
  if (strcasecmp(host, bind) == 0 && strcmp(o->host, "0.0.0.0") != 0 && strcmp(o->host, "::") != 0)
    return 1;
  for (int i = 0; i < o->nallow_origins; i++) {
    const char *sep = strstr(o->allow_origins[i], "://");
    char ohost[256];
    if (sep == NULL) continue;
    host_part(sep + 3, ohost, sizeof ohost);
    if (strcasecmp(ohost, host) == 0) return 1;
  }
  return 0;
}

/* The digests are compared, in constant time: neither the token's bytes
 * nor its length show in the time taken. */
int mcp_http_token_ok(const mcp_http_options *o, const char *auth) {
  uint8_t got[MCP_SHA256_LEN], want[MCP_SHA256_LEN];
  if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0) return 0;
  mcp_sha256(auth + 7, strlen(auth + 7), got);
  mcp_sha256(o->token, strlen(o->token), want);
  return mcp_equal(got, want, sizeof got);
}

/* CORS, for browser clients on an allowed origin: the preflight is answered
 * before the token check (browsers send no credentials in it), and every
 * answer names the origin and lets the page read Mcp-Session-Id. */
#define CORS_ALLOW_HEADERS \
  "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, " \
  "Last-Event-ID, Mcp-Method, Mcp-Name"

/* RFC 9110 tchar. */
static int is_tchar(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
         (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* The Mcp-Param-{Name} headers a preflight asks for (a tool's x-mcp-header
 * properties), named back: CORS has no wildcard for a prefix. */
static void cors_param_headers(const char *requested, mcp_buf *b) {
  size_t skip = strlen(MCP_PARAM_PREFIX);
  while (requested != NULL && *requested) {
    size_t n, t = 0;
    requested += strspn(requested, " \t,");
    n = strcspn(requested, " \t,");
    while (t < n && is_tchar(requested[t])) t++;
    if (t == n && n > skip && strncasecmp(requested, MCP_PARAM_PREFIX, skip) == 0) {
      mcp_buf_adds(b, ", ");
      mcp_buf_add(b, requested, n);
    }
    requested += n;
  }
}

int mcp_http_cors(mcp_http_conn *c, const mcp_http_request *r) {
  mcp_buf hdr = MCP_BUF_INIT;
  int preflight = r->method == HTTP_OPTIONS;
  if (r->origin == NULL) return 0;
  mcp_buf_printf(&hdr, "Access-Control-Allow-Origin: %.512s\r\nVary: Origin\r\n"
                       "Access-Control-Expose-Headers: Mcp-Session-Id\r\n", r->origin);
  if (preflight) {
    mcp_buf_adds(&hdr, "Access-Control-Allow-Methods: GET, POST, DELETE\r\n"
                       "Access-Control-Max-Age: 600\r\n"
                       "Access-Control-Allow-Headers: " CORS_ALLOW_HEADERS);
    cors_param_headers(r->preflight_headers, &hdr);
    mcp_buf_adds(&hdr, "\r\n");
  }
  mcp_buf_addc(&hdr, '\0');
  mcp_http_conn_set_headers(c, hdr.data);
  mcp_buf_free(&hdr);
  if (preflight) mcp_http_respond(c, 204, NULL, NULL, NULL, 0);
  return preflight;
}

