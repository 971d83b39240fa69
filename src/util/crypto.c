/* SHA-256, HMAC, random bytes and comparison: libcrypto's. */
#include <stdlib.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "crypto.h"

/* Both only fail on out of memory (or a broken libcrypto): abort, like mcp_buf. */
void mcp_sha256(const void *data, size_t len, uint8_t out[MCP_SHA256_LEN]) {
  if (!EVP_Digest(data, len, out, NULL, EVP_sha256(), NULL)) abort();
}

void mcp_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                     uint8_t out[MCP_SHA256_LEN]) {
  static const uint8_t none;
  uint8_t k[MCP_SHA256_LEN];
  unsigned outlen = 0;
  if (keylen > 64) {                /* RFC 2104 hashes such a key: so does HMAC(), from an int length */
    mcp_sha256(key, keylen, k);
    key = k, keylen = sizeof k;
  }
  /* a NULL key means "the one set before" to HMAC(): an empty key is not NULL */
  if (HMAC(EVP_sha256(), keylen ? key : &none, (int)keylen, data, len, out, &outlen) == NULL ||
      outlen != MCP_SHA256_LEN)
    abort();
}

int mcp_random(void *buf, size_t len) {
  return len <= 0x7fffffff && RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

int mcp_equal(const void *a, const void *b, size_t n) {
  return CRYPTO_memcmp(a, b, n) == 0;
}
