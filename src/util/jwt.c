/* JWS compact verification and JWT claim checks, on OpenSSL's EVP. See jwt.h. */
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>

#include "base64.h"
#include "jwt.h"

const char *mcp_jwt_status_text(mcp_jwt_status s) {
  switch (s) {
    case MCP_JWT_OK: return "valid";
    case MCP_JWT_MALFORMED: return "malformed token";
    case MCP_JWT_BAD_ALG: return "algorithm not accepted (RS256, ES256 or EdDSA)";
    case MCP_JWT_UNKNOWN_KID: return "signed with an unknown key";
    case MCP_JWT_BAD_SIGNATURE: return "bad signature";
    case MCP_JWT_EXPIRED: return "token expired";
    case MCP_JWT_NOT_YET: return "token not valid yet";
    case MCP_JWT_BAD_ISSUER: return "wrong issuer";
    case MCP_JWT_BAD_AUDIENCE: return "token not issued for this resource (audience)";
    case MCP_JWT_BAD_CLAIMS: return "exp or sub claim missing";
  }
  return "invalid token";
}

static json_t *decode_json(const char *s, size_t n) {
  mcp_buf b = MCP_BUF_INIT;
  json_t *v = NULL;
  if (mcp_base64_decode(&b, s, n, 1) == 0 && b.len > 0)
    v = json_loadb(b.data, b.len, JSON_REJECT_DUPLICATES, NULL);
  mcp_buf_free(&b);
  if (v != NULL && !json_is_object(v)) {
    json_decref(v);
    v = NULL;
  }
  return v;
}

mcp_jwt_status mcp_jwt_decode(mcp_jwt *t, const char *token, size_t len) {
  const char *d1 = memchr(token, '.', len), *d2;
  mcp_buf sig = MCP_BUF_INIT;
  memset(t, 0, sizeof *t);
  if (d1 == NULL || (d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token))) == NULL ||
      memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)) != NULL)
    return MCP_JWT_MALFORMED;
  if ((t->header = decode_json(token, (size_t)(d1 - token))) == NULL) return MCP_JWT_MALFORMED;
  t->alg = mcp_jwa_from_name(json_string_value(json_object_get(t->header, "alg")));
  if (t->alg == MCP_JWA_NONE || json_object_get(t->header, "crit") != NULL) {
    mcp_jwt_free(t);
    return MCP_JWT_BAD_ALG;
  }
  if ((t->claims = decode_json(d1 + 1, (size_t)(d2 - d1 - 1))) == NULL ||
      mcp_base64_decode(&sig, d2 + 1, len - (size_t)(d2 + 1 - token), 1) != 0 || sig.len == 0) {
    mcp_buf_free(&sig);
    mcp_jwt_free(t);
    return MCP_JWT_MALFORMED;
  }
  t->sig = (unsigned char *)sig.data;
  t->sig_len = sig.len;
  t->signing_len = (size_t)(d2 - token);
  t->signing_input = malloc(t->signing_len + 1);
  if (t->signing_input == NULL) abort();
  memcpy(t->signing_input, token, t->signing_len);
  t->signing_input[t->signing_len] = '\0';
  t->kid = json_string_value(json_object_get(t->header, "kid"));
  return MCP_JWT_OK;
}

/* ES256's signature is r || s, 32 bytes each; OpenSSL verifies DER. */
static int ecdsa_der(const unsigned char *rs, size_t n, unsigned char **der, int *derlen) {
  ECDSA_SIG *es;
  BIGNUM *r, *s;
  if (n != 64) return -1;
  es = ECDSA_SIG_new();
  r = BN_bin2bn(rs, 32, NULL);
  s = BN_bin2bn(rs + 32, 32, NULL);
  if (es == NULL || r == NULL || s == NULL || !ECDSA_SIG_set0(es, r, s)) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return -1;
  }
  *der = NULL;
  *derlen = i2d_ECDSA_SIG(es, der);
  ECDSA_SIG_free(es);
  return *derlen > 0 ? 0 : -1;
}

static int verify_with(const mcp_jwt *t, const mcp_jwk *k) {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  const unsigned char *sig = t->sig;
  unsigned char *der = NULL;
  size_t sig_len = t->sig_len;
  int ok = 0, derlen;
  if (md == NULL) return 0;
  if (k->alg == MCP_JWA_ES256) {
    if (ecdsa_der(t->sig, t->sig_len, &der, &derlen) != 0) goto done;
    sig = der;
    sig_len = (size_t)derlen;
  }
  if (EVP_DigestVerifyInit(md, NULL, k->alg == MCP_JWA_EDDSA ? NULL : EVP_sha256(), NULL, k->pkey) <= 0)
    goto done;
  ok = EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)t->signing_input, t->signing_len) == 1;
done:
  OPENSSL_free(der);
  EVP_MD_CTX_free(md);
  return ok;
}

mcp_jwt_status mcp_jwt_verify(const mcp_jwt *t, const mcp_jwks *set) {
  int tried = 0;
  if (t->alg == MCP_JWA_NONE) return MCP_JWT_BAD_ALG;
  for (int i = 0; i < set->n; i++) {
    const mcp_jwk *k = &set->keys[i];
    if (t->kid != NULL && (k->kid == NULL || strcmp(k->kid, t->kid) != 0)) continue;
    if (k->alg != t->alg) {                   /* alg confusion: the key decides */
      if (t->kid != NULL) return MCP_JWT_BAD_ALG;
      continue;
    }
    tried++;
    if (verify_with(t, k)) return MCP_JWT_OK;
  }
  if (tried == 0) return t->kid != NULL ? MCP_JWT_UNKNOWN_KID : MCP_JWT_BAD_SIGNATURE;
  return MCP_JWT_BAD_SIGNATURE;
}

static int strip_len(const char *s) {
  size_t n = strlen(s);
  while (n > 0 && s[n - 1] == '/') n--;
  return (int)n;
}

static int same_uri(const char *a, const char *b) {
  int n = strip_len(a);
  return n == strip_len(b) && strncmp(a, b, (size_t)n) == 0;
}

int mcp_jwt_audience_has(json_t *aud, const char *audience) {
  if (json_is_string(aud)) return same_uri(json_string_value(aud), audience);
  for (size_t i = 0; json_is_array(aud) && i < json_array_size(aud); i++)
    if (json_is_string(json_array_get(aud, i)) && same_uri(json_string_value(json_array_get(aud, i)), audience))
      return 1;
  return 0;
}

mcp_jwt_status mcp_jwt_check_claims(const mcp_jwt *t, const char *issuer, const char *audience,
                                    double now, double skew) {
  json_t *exp = json_object_get(t->claims, "exp"), *nbf = json_object_get(t->claims, "nbf");
  json_t *iat = json_object_get(t->claims, "iat");
  const char *iss = json_string_value(json_object_get(t->claims, "iss"));
  if (!json_is_number(exp) || !json_is_string(json_object_get(t->claims, "sub")) ||
      (nbf != NULL && !json_is_number(nbf)) || (iat != NULL && !json_is_number(iat)))
    return MCP_JWT_BAD_CLAIMS;
  if (now > json_number_value(exp) + skew) return MCP_JWT_EXPIRED;
  if (nbf != NULL && now + skew < json_number_value(nbf)) return MCP_JWT_NOT_YET;
  if (iat != NULL && now + skew < json_number_value(iat)) return MCP_JWT_NOT_YET;
  if (issuer != NULL && (iss == NULL || !same_uri(iss, issuer))) return MCP_JWT_BAD_ISSUER;
  if (audience != NULL && !mcp_jwt_audience_has(json_object_get(t->claims, "aud"), audience))
    return MCP_JWT_BAD_AUDIENCE;
  return MCP_JWT_OK;
}

void mcp_jwt_free(mcp_jwt *t) {
  json_decref(t->header);
  json_decref(t->claims);
  free(t->signing_input);
  free(t->sig);
  memset(t, 0, sizeof *t);
}
