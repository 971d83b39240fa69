/* JSON Web Keys to EVP_PKEYs, with OpenSSL 3's EVP_PKEY_fromdata. See jwk.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "base64.h"
#include "jwk.h"

mcp_jwa mcp_jwa_from_name(const char *name) {
  if (name == NULL) return MCP_JWA_NONE;
  if (strcmp(name, "RS256") == 0) return MCP_JWA_RS256;
  if (strcmp(name, "ES256") == 0) return MCP_JWA_ES256;
  if (strcmp(name, "EdDSA") == 0) return MCP_JWA_EDDSA;
  return MCP_JWA_NONE;
}

static void fail(char *err, size_t cap, const char *fmt, ...) {
  va_list ap;
  if (err == NULL || cap == 0) return;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}

/* A base64url member of the key, decoded into b. */
static int member(json_t *k, const char *name, mcp_buf *b) {
  const char *s = json_string_value(json_object_get(k, name));
  b->len = 0;
  return s != NULL && *s != '\0' && mcp_base64_decode(b, s, strlen(s), 1) == 0 ? 0 : -1;
}

static EVP_PKEY *from_params(const char *type, OSSL_PARAM_BLD *bld) {
  OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
  EVP_PKEY *pkey = NULL;
  if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
    pkey = NULL;
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return pkey;
}

static EVP_PKEY *rsa_key(json_t *k) {
  mcp_buf n = MCP_BUF_INIT, e = MCP_BUF_INIT;
  BIGNUM *bn = NULL, *be = NULL;
  OSSL_PARAM_BLD *bld = NULL;
  EVP_PKEY *pkey = NULL;
  if (member(k, "n", &n) != 0 || member(k, "e", &e) != 0) goto done;
  if (n.len < 256) goto done;                  /* RSA under 2048 bits is refused */
  bn = BN_bin2bn((unsigned char *)n.data, (int)n.len, NULL);
  be = BN_bin2bn((unsigned char *)e.data, (int)e.len, NULL);
  bld = OSSL_PARAM_BLD_new();
  if (bn == NULL || be == NULL || bld == NULL || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
    goto done;
  pkey = from_params("RSA", bld);
done:
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn);
  BN_free(be);
  mcp_buf_free(&n);
  mcp_buf_free(&e);
  return pkey;
}

static EVP_PKEY *ec_key(json_t *k) {
  mcp_buf x = MCP_BUF_INIT, y = MCP_BUF_INIT;
  unsigned char point[65];
  OSSL_PARAM_BLD *bld = NULL;
  EVP_PKEY *pkey = NULL;
  if (member(k, "x", &x) != 0 || member(k, "y", &y) != 0 || x.len != 32 || y.len != 32) goto done;
  point[0] = 0x04;                              /* uncompressed */
  memcpy(point + 1, x.data, 32);
  memcpy(point + 33, y.data, 32);
  if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
      !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
      !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point))
    goto done;
  pkey = from_params("EC", bld);
done:
  OSSL_PARAM_BLD_free(bld);
  mcp_buf_free(&x);
  mcp_buf_free(&y);
  return pkey;
}

static EVP_PKEY *ed25519_key(json_t *k) {
  mcp_buf x = MCP_BUF_INIT;
  EVP_PKEY *pkey = NULL;
  if (member(k, "x", &x) == 0 && x.len == 32)
    pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, (unsigned char *)x.data, x.len);
  mcp_buf_free(&x);
  return pkey;
}

static const char *str(json_t *k, const char *name) { return json_string_value(json_object_get(k, name)); }

/* The key k, or 0 when it is not a usable verification key. */
static int add_key(mcp_jwks *set, json_t *k) {
  const char *kty = str(k, "kty"), *crv = str(k, "crv"), *use = str(k, "use"), *alg = str(k, "alg");
  const char *kid = str(k, "kid");
  mcp_jwa a;
  EVP_PKEY *pkey;
  if (kty == NULL || (use != NULL && strcmp(use, "sig") != 0)) return 0;
  if (json_object_get(k, "d") != NULL) return 0;          /* a private key published by mistake */
  if (strcmp(kty, "RSA") == 0) a = MCP_JWA_RS256;
  else if (strcmp(kty, "EC") == 0 && crv && strcmp(crv, "P-256") == 0) a = MCP_JWA_ES256;
  else if (strcmp(kty, "OKP") == 0 && crv && strcmp(crv, "Ed25519") == 0) a = MCP_JWA_EDDSA;
  else return 0;
  if (alg != NULL && mcp_jwa_from_name(alg) != a) return 0;   /* e.g. an RSA key for PS256 only */
  if (a == MCP_JWA_RS256) pkey = rsa_key(k);
  else if (a == MCP_JWA_ES256) pkey = ec_key(k);
  else pkey = ed25519_key(k);
  if (pkey == NULL) return 0;
  set->keys = realloc(set->keys, (size_t)(set->n + 1) * sizeof *set->keys);
  if (set->keys == NULL) abort();
  set->keys[set->n].kid = kid ? strdup(kid) : NULL;
  set->keys[set->n].alg = a;
  set->keys[set->n].pkey = pkey;
  set->n++;
  return 1;
}

int mcp_jwks_parse(mcp_jwks *out, const char *json, size_t len, char *err, size_t errcap) {
  json_error_t je;
  json_t *v = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je), *keys;
  out->keys = NULL;
  out->n = 0;
  if (!json_is_object(v)) {
    fail(err, errcap, "not a JSON object");
    json_decref(v);
    return -1;
  }
  keys = json_object_get(v, "keys");
  if (keys == NULL) {
    add_key(out, v);
  } else if (json_is_array(keys)) {
    for (size_t i = 0; i < json_array_size(keys); i++)
      if (json_is_object(json_array_get(keys, i))) add_key(out, json_array_get(keys, i));
  }
  json_decref(v);
  if (out->n == 0) {
    fail(err, errcap, "no usable signing key (RSA, EC P-256 or Ed25519)");
    return -1;
  }
  return 0;
}

void mcp_jwks_free(mcp_jwks *set) {
  for (int i = 0; i < set->n; i++) {
    free(set->keys[i].kid);
    EVP_PKEY_free(set->keys[i].pkey);
  }
  free(set->keys);
  set->keys = NULL;
  set->n = 0;
}
