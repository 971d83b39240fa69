/* Sealed tokens, on HMAC-SHA-256 (crypto.c). */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "crypto.h"
#include "seal.h"

static uint8_t seal_key[MCP_SHA256_LEN];
static int seal_ready;

static const uint8_t *key(void) {
  const char *k = getenv("LUAMCP_STATE_KEY");
  if (seal_ready) return seal_key;
  if (k != NULL && *k != '\0') mcp_sha256(k, strlen(k), seal_key);
  else if (mcp_random(seal_key, sizeof seal_key) != 0) abort();
  seal_ready = 1;
  return seal_key;
}

void mcp_seal(mcp_buf *out, const char *payload, size_t len) {
  uint8_t mac[MCP_SHA256_LEN];
  mcp_hmac_sha256(key(), sizeof seal_key, payload, len, mac);
  mcp_base64_encode(out, payload, len, 1);
  mcp_buf_addc(out, '.');
  mcp_base64_encode(out, mac, sizeof mac, 1);
}

int mcp_seal_open(mcp_buf *out, const char *token, size_t len) {
  const char *dot = memchr(token, '.', len);
  mcp_buf mac = MCP_BUF_INIT;
  uint8_t want[MCP_SHA256_LEN];
  size_t start = out->len;
  int ok;
  if (dot == NULL || mcp_base64_decode(&mac, dot + 1, len - (size_t)(dot + 1 - token), 1) != 0 ||
      mac.len != sizeof want || mcp_base64_decode(out, token, (size_t)(dot - token), 1) != 0) {
    mcp_buf_free(&mac);
    return -1;
  }
  /* an empty payload may leave out->data NULL: no offset from it */
  mcp_hmac_sha256(key(), sizeof seal_key, out->len > start ? out->data + start : "", out->len - start, want);
  ok = mcp_equal(want, mac.data, sizeof want);
  mcp_buf_free(&mac);
  if (!ok) {
    out->len = start;
    return -1;
  }
  return 0;
}
