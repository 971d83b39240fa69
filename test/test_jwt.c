/* JWK sets and JWS verification (jwk.c, jwt.c) against tokens and keys made
 * by Node's crypto (test/jwt_vectors.js): RS256, ES256 and EdDSA verify;
 * a flipped signature bit, a changed payload, another key, "none", HS256
 * keyed with the RSA public key, an RS256 header naming an EC key's kid and
 * an unknown kid do not; the claims: exp, nbf, iat with the skew, iss, aud. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwk.h"
#include "jwt.h"
#include "jwt_vectors.h"
#include "test.h"

#define NOW 1700000100.0         /* within the vectors' iat .. exp */
#define ISS "https://as.example"
#define AUD "https://mcp.example/mcp"

static mcp_jwks set;

static mcp_jwt_status verify(const char *tok) {
  mcp_jwt t;
  mcp_jwt_status s = mcp_jwt_decode(&t, tok, strlen(tok));
  if (s == MCP_JWT_OK) s = mcp_jwt_verify(&t, &set);
  if (s == MCP_JWT_OK) s = mcp_jwt_check_claims(&t, ISS, AUD, NOW, 60);
  mcp_jwt_free(&t);
  return s;
}

static mcp_jwt_status claims_at(const char *tok, const char *iss, const char *aud, double now) {
  mcp_jwt t;
  mcp_jwt_status s = mcp_jwt_decode(&t, tok, strlen(tok));
  if (s == MCP_JWT_OK) s = mcp_jwt_check_claims(&t, iss, aud, now, 60);
  mcp_jwt_free(&t);
  return s;
}

static void test_jwks(void) {
  mcp_jwks bad;
  char err[128];
  CHECK(mcp_jwks_parse(&set, JWKS, strlen(JWKS), err, sizeof err) == 0, "%s", err);
  CHECK(set.n == 3, "%d keys", set.n);
  CHECK(set.n == 3 && set.keys[0].alg == MCP_JWA_RS256 && set.keys[1].alg == MCP_JWA_ES256 &&
        set.keys[2].alg == MCP_JWA_EDDSA, "kty/crv give the algorithms");
  CHECK(mcp_jwks_parse(&bad, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}", 39, err, sizeof err) != 0,
        "a symmetric key is no verification key");
  CHECK(mcp_jwks_parse(&bad, "[1]", 3, err, sizeof err) != 0, "not a set");
  CHECK(mcp_jwks_parse(&bad, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}]}", 48, err,
                       sizeof err) != 0, "a short Ed25519 key");
}

static void test_algorithms(void) {
  CHECK(verify(TOK_RS256) == MCP_JWT_OK, "RS256: %s", mcp_jwt_status_text(verify(TOK_RS256)));
  CHECK(verify(TOK_ES256) == MCP_JWT_OK, "ES256: %s", mcp_jwt_status_text(verify(TOK_ES256)));
  CHECK(verify(TOK_EDDSA) == MCP_JWT_OK, "EdDSA: %s", mcp_jwt_status_text(verify(TOK_EDDSA)));
  CHECK(verify(TOK_NOKID) == MCP_JWT_OK, "no kid: each key of the alg is tried");
}

static void test_bad_signatures(void) {
  CHECK(verify(TOK_BADSIG) == MCP_JWT_BAD_SIGNATURE, "a flipped bit");
  CHECK(verify(TOK_TAMPERED) == MCP_JWT_BAD_SIGNATURE, "a changed payload");
  CHECK(verify(TOK_OTHERKEY) == MCP_JWT_BAD_SIGNATURE, "signed by another key with the same kid");
  CHECK(verify("a.b") == MCP_JWT_MALFORMED, "two parts");
  CHECK(verify("a.b.c.d") == MCP_JWT_MALFORMED, "four parts");
  {
    char nosig[2048];
    snprintf(nosig, sizeof nosig, "%s", TOK_EDDSA);
    strrchr(nosig, '.')[1] = '\0';
    CHECK(verify(nosig) == MCP_JWT_MALFORMED, "no signature");
  }
}

static void test_alg_confusion(void) {
  CHECK(verify(TOK_NONE) == MCP_JWT_BAD_ALG, "alg none");
  CHECK(verify(TOK_HS256) == MCP_JWT_BAD_ALG, "HS256 keyed with the public key");
  CHECK(verify(TOK_KIDALG) == MCP_JWT_BAD_ALG, "RS256 with an EC key's kid");
  CHECK(verify(TOK_UNKNOWNKID) == MCP_JWT_UNKNOWN_KID, "a kid not in the set");
}

static void test_claims(void) {
  CHECK(claims_at(TOK_EDDSA, ISS, AUD, 1700003600 + 59) == MCP_JWT_OK, "expired 59 s ago: within the skew");
  CHECK(claims_at(TOK_EDDSA, ISS, AUD, 1700003600 + 61) == MCP_JWT_EXPIRED, "expired 61 s ago");
  CHECK(claims_at(TOK_EDDSA, ISS, AUD, 1700000000 - 61) == MCP_JWT_NOT_YET, "iat in the future");
  CHECK(claims_at(TOK_NBF, ISS, AUD, NOW) == MCP_JWT_NOT_YET, "nbf in the future");
  CHECK(claims_at(TOK_NBF, ISS, AUD, 1700001000 - 30) == MCP_JWT_OK, "nbf within the skew");
  CHECK(claims_at(TOK_EDDSA, "https://other.example", AUD, NOW) == MCP_JWT_BAD_ISSUER, "iss");
  CHECK(claims_at(TOK_EDDSA, ISS, "https://mcp.example/other", NOW) == MCP_JWT_BAD_AUDIENCE, "aud");
  CHECK(claims_at(TOK_EDDSA, ISS, "https://mcp.example/mcp/", NOW) == MCP_JWT_OK, "a trailing slash");
  CHECK(claims_at(TOK_AUDS, ISS, AUD, NOW) == MCP_JWT_OK, "aud as an array");
  CHECK(claims_at(TOK_NOSUB, ISS, AUD, NOW) == MCP_JWT_BAD_CLAIMS, "no sub");
  CHECK(claims_at(TOK_EDDSA, NULL, AUD, NOW) == MCP_JWT_OK, "no issuer configured: iss not checked");
}

int main(void) {
  test_jwks();
  test_algorithms();
  test_bad_signatures();
  test_alg_confusion();
  test_claims();
  mcp_jwks_free(&set);
  TEST_END("test_jwt");
}
