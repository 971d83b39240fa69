/* JWK sets and JWS verification (jwk.c, jwt.c), what a stranger's bearer
 * token and an authorization server's JWKS reach:
 * - first byte even: the rest is a JWK Set; parsing it never crashes, and a
 *   set it accepts holds only usable keys;
 * - odd: the rest is a token, decoded and verified against the keys of
 *   test/jwt_vectors.h, its claims checked; a token that verifies has the
 *   signing input (header.payload) of a token those keys signed: no forgery. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jwk.h"
#include "jwt.h"
#include "jwt_vectors.h"
#include "require.h"

static mcp_jwks keys;

static int signed_input(const mcp_jwt *t) {
  static const char *const good[] = { TOK_RS256, TOK_ES256, TOK_EDDSA, TOK_NOKID, TOK_NBF, TOK_AUDS, TOK_NOSUB,
                                      TOK_UNKNOWNKID, TOK_KIDALG };
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    const char *dot = strrchr(good[i], '.');
    if ((size_t)(dot - good[i]) == t->signing_len && memcmp(good[i], t->signing_input, t->signing_len) == 0)
      return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[160];
  if (keys.n == 0 && mcp_jwks_parse(&keys, JWKS, strlen(JWKS), err, sizeof err) != 0) abort();
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    mcp_jwks set;
    if (mcp_jwks_parse(&set, (const char *)data + 1, size - 1, err, sizeof err) == 0) {
      REQUIRE(set.n > 0, "an accepted set with no key");
      for (int i = 0; i < set.n; i++)
        REQUIRE(set.keys[i].pkey != NULL && set.keys[i].alg != MCP_JWA_NONE, "key %d unusable", i);
      mcp_jwks_free(&set);
    }
  } else {
    mcp_jwt t;
    mcp_jwt_status s = mcp_jwt_decode(&t, (const char *)data + 1, size - 1);
    if (s == MCP_JWT_OK) {
      s = mcp_jwt_verify(&t, &keys);
      if (s == MCP_JWT_OK) {
        REQUIRE(signed_input(&t), "a token verified that the keys never signed");
        (void)mcp_jwt_check_claims(&t, "https://as.example", "https://mcp.example/mcp", 1700000100.0, 60);
      }
    }
    mcp_jwt_free(&t);
  }
  return 0;
}
