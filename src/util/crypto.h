/* The security primitives, all from OpenSSL's libcrypto: SHA-256,
 * HMAC-SHA-256, random bytes and a constant-time comparison. */
#ifndef MCP_CRYPTO_H
#define MCP_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define MCP_SHA256_LEN 32

void mcp_sha256(const void *data, size_t len, uint8_t out[MCP_SHA256_LEN]);
void mcp_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                     uint8_t out[MCP_SHA256_LEN]);
/* len bytes from OpenSSL's CSPRNG (RAND_bytes): 0, or -1 when it failed.
 * It seeds itself once from getrandom(2); the kernel's pool is ready within
 * a second of boot (jitter entropy, Linux 5.4 on), and the ids and keys
 * drawn here are drawn on first use, never at startup, so a server started
 * at early boot does not wait on it. */
int mcp_random(void *buf, size_t len);
/* 1 when the n bytes at a and b are equal, in a time that does not depend
 * on where they differ (CRYPTO_memcmp). */
int mcp_equal(const void *a, const void *b, size_t n);

#endif
