/* The server card: what the MCP Server Card draft (SEP-2127; its schema in
 * modelcontextprotocol/experimental-ext-server-card, docs/discovery.md for
 * where and how it is served) says of this server, before a client connects.
 *
 * lua/mcp/server_card.lua checks the configuration file's server_card = {...}
 * and hands its fields here at load and reload (core.server_card); the card's
 * JSON and its ETag are built then, and when the transport starts listening
 * (the remote's default URL needs the port), never per request.
 *
 * The card is public metadata: it is served past the Host check only, to
 * any Origin (Access-Control-Allow-Origin: *, as the draft asks of discovery
 * documents) and without a token, as the OAuth discovery documents are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>
#include <jansson.h>
#include <lauxlib.h>

#include "buf.h"
#include "crypto.h"
#include "flags.h"
#include "json.h"
#include "log.h"
#include "rev2026.h"
#include "server_card.h"
#include "session.h"

#define CARD_HEADERS \
  "Access-Control-Allow-Origin: *\r\n" \
  "Access-Control-Allow-Methods: GET\r\n" \
  "Access-Control-Allow-Headers: Content-Type\r\n"

static struct {
  json_t *fields;                   /* the configured fields (owned), or NULL: off */
  char *host;                       /* the listener's, once listening */
  int port;
  char *body;                       /* the card's JSON (owned) */
  size_t len;
  char etag[2 + 2 * 16 + 1];        /* "hex of 16 bytes of its SHA-256" */
} K;

static int is_wildcard(const char *host) {
  return host[0] == '\0' || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/* The remote's URL: server_card.url, else --auth-audience (the server's
 * canonical URI), else the listener's address. NULL before listening. */
static char *remote_url(void) {
  const char *url = json_string_value(json_object_get(K.fields, "url"));
  char *out;
  if (url == NULL) url = mcp_flags.auth_audience;
  if (url != NULL) return strdup(url);
  if (K.host == NULL || K.port <= 0) return NULL;
  const char *host = is_wildcard(K.host) ? "localhost" : K.host;
  if (is_wildcard(K.host))
    mcp_warn("server_card: no url; the card names http://localhost:%d/mcp (set server_card.url "
             "to the address clients reach)", K.port);
  if ((out = malloc(strlen(host) + 32)) == NULL) abort();
  sprintf(out, strchr(host, ':') ? "http://[%s]:%d/mcp" : "http://%s:%d/mcp", host, K.port);
  return out;
}

/* The protocol versions this endpoint speaks, newest first. */
static json_t *versions(void) {
  json_t *a = json_array();
  int n = 0;
  json_array_append_new(a, json_string(MCP_REV_2026));
  while (mcp_revisions[n]) n++;
  while (n-- > 0) json_array_append_new(a, json_string(mcp_revisions[n]));
  return a;
}

static void copy(json_t *card, const char *key) {
  json_t *v = json_object_get(K.fields, key);
  if (v != NULL) json_object_set(card, key, v);
}

static void build(void) {
  uint8_t digest[MCP_SHA256_LEN];
  json_t *card, *remote;
  char *url;
  free(K.body);
  K.body = NULL;
  if (K.fields == NULL) return;
  card = json_object();
  json_object_set_new(card, "$schema", json_string(MCP_SERVER_CARD_SCHEMA));
  copy(card, "name");
  copy(card, "title");
  if (json_object_get(K.fields, "version")) copy(card, "version");
  else json_object_set_new(card, "version", json_string(LUAMCP_VERSION));
  copy(card, "description");
  copy(card, "websiteUrl");
  copy(card, "repository");
  if ((url = remote_url()) != NULL) {
    remote = json_pack("{s:s, s:s, s:o}", "type", "streamable-http", "url", url,
                       "supportedProtocolVersions", versions());
    json_object_set_new(card, "remotes", json_pack("[o]", remote));
    free(url);
  }
  K.body = json_dumps(card, JSON_PRESERVE_ORDER | JSON_INDENT(2));
  json_decref(card);
  if (K.body == NULL) abort();
  K.len = strlen(K.body);
  if ((K.body = realloc(K.body, K.len + 2)) == NULL) abort();
  memcpy(K.body + K.len++, "\n", 2);          /* a line, for curl and the like */
  mcp_sha256(K.body, K.len, digest);
  K.etag[0] = '"';
  for (int i = 0; i < 16; i++) sprintf(K.etag + 1 + 2 * i, "%02x", digest[i]);
  strcpy(K.etag + 33, "\"");
}

int mcp_server_card_on(void) { return K.fields != NULL; }

void mcp_server_card_listening(const char *host, int port) {
  free(K.host);
  K.host = host ? strdup(host) : NULL;
  K.port = port;
  build();
}

/* Does an If-None-Match list name tag (weakly compared, RFC 9110 13.1.2)? */
static int tag_listed(const char *list, const char *tag) {
  size_t n = strlen(tag);
  while (list != NULL && *list) {
    list += strspn(list, " \t,");
    if (*list == '*') return 1;
    if (strncmp(list, "W/", 2) == 0) list += 2;
    if (strncmp(list, tag, n) == 0 && (list[n] == '\0' || strchr(" \t,", list[n]))) return 1;
    list += strcspn(list, ",");
  }
  return 0;
}

void mcp_server_card_answer(mcp_http_conn *c, const mcp_http_request *r) {
  char hdr[256];
  if (r->method == HTTP_OPTIONS) {
    mcp_http_respond(c, 204, CARD_HEADERS "Access-Control-Max-Age: 86400\r\n", NULL, NULL, 0);
    return;
  }
  if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
    static const char why[] = "the server card is read with GET\n";
    mcp_http_respond(c, 405, "Allow: GET, HEAD, OPTIONS\r\n" CARD_HEADERS, "text/plain", why, sizeof why - 1);
    return;
  }
  snprintf(hdr, sizeof hdr, CARD_HEADERS "Cache-Control: public, max-age=3600\r\nETag: %s\r\n", K.etag);
  if (tag_listed(r->if_none_match, K.etag))
    mcp_http_respond(c, 304, hdr, NULL, NULL, 0);
  else
    mcp_http_respond(c, 200, hdr, MCP_SERVER_CARD_TYPE, K.body, K.len);
}

void mcp_server_card_free(void) {
  json_decref(K.fields);
  free(K.host);
  free(K.body);
  memset(&K, 0, sizeof K);
}

/* server_card(fields | nil): fields as lua/mcp/server_card.lua checked
 * them (the draft's names; url, the remote's). */
static int l_server_card(lua_State *L) {
  mcp_buf b = MCP_BUF_INIT;
  char err[128];
  json_t *fields = NULL;
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TTABLE);
    if (mcp_json_encode(L, 1, &b, err, sizeof err) != 0) return luaL_error(L, "server_card: %s", err);
    fields = json_loadb(b.data, b.len, 0, NULL);
    mcp_buf_free(&b);
    if (!json_is_object(fields)) {
      json_decref(fields);
      return luaL_error(L, "server_card: fields must be an object");
    }
  }
  json_decref(K.fields);
  K.fields = fields;
  build();
  return 0;
}

void mcp_server_card_open_lib(lua_State *L) {
  lua_pushcfunction(L, l_server_card);
  lua_setfield(L, -2, "server_card");
}
