/* Base64 (base64.c) and sealed tokens (seal.c), the requestState a client
 * hands back:
 * - decoding is strict, so a text that decodes is the encoding of what it
 *   decodes to, byte for byte; any bytes encode and decode back;
 * - a token opens only if it is the seal of its payload (a forged one
 *   never does: the key is random); a seal opens to its payload. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "buf.h"
#include "seal.h"
#include "require.h"

static int same(const mcp_buf *b, const void *p, size_t n) {
  return b->len == n && (n == 0 || memcmp(b->data, p, n) == 0);
}

static void check_base64(const char *s, size_t n, int url) {
  mcp_buf dec = MCP_BUF_INIT, enc = MCP_BUF_INIT, back = MCP_BUF_INIT;
  mcp_buf_adds(&dec, "kept");                 /* decode appends; a failure leaves it */
  if (mcp_base64_decode(&dec, s, n, url) == 0) {
    mcp_base64_encode(&enc, dec.data + 4, dec.len - 4, url);
    REQUIRE(same(&enc, s, n), "url %d: decodes, but is not the encoding of what it decodes to", url);
  } else {
    REQUIRE(same(&dec, "kept", 4), "url %d: a failed decode changed the buffer", url);
  }
  enc.len = 0;
  mcp_base64_encode(&enc, s, n, url);
  REQUIRE(mcp_base64_decode(&back, enc.data ? enc.data : "", enc.len, url) == 0 && same(&back, s, n),
          "url %d: encode then decode", url);
  mcp_buf_free(&dec);
  mcp_buf_free(&enc);
  mcp_buf_free(&back);
}

static void check_seal(const char *s, size_t n) {
  mcp_buf out = MCP_BUF_INIT, tok = MCP_BUF_INIT;
  mcp_buf_adds(&out, "kept");
  REQUIRE(mcp_seal_open(&out, s, n) != 0, "a token not sealed here opened");
  REQUIRE(same(&out, "kept", 4), "a token that did not open changed the buffer");
  mcp_buf_free(&out);                         /* a fresh buffer, as lmcp.c's unseal has */
  mcp_seal(&tok, s, n);
  REQUIRE(mcp_seal_open(&out, tok.data, tok.len) == 0 && same(&out, s, n), "a seal does not open to its payload");
  /* one byte changed (a place and a value the input picks) */
  if (tok.len > 0 && n > 0) {
    size_t at = (size_t)(unsigned char)s[0] * 7919 % tok.len;
    tok.data[at] ^= (char)(s[n - 1] | 1);
    out.len = 0;
    REQUIRE(mcp_seal_open(&out, tok.data, tok.len) != 0 && out.len == 0, "a changed seal opened (at %zu)", at);
  }
  mcp_buf_free(&out);
  mcp_buf_free(&tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  check_base64(s, size, 0);
  check_base64(s, size, 1);
  check_seal(s, size);
  return 0;
}
