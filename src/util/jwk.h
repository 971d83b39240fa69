/* JSON Web Keys (RFC 7517) as OpenSSL public keys: RSA (RS256), EC P-256
 * (ES256) and OKP Ed25519 (EdDSA). Only public verification keys are kept:
 * a key whose "use" is not "sig" or whose kty/crv is not one of these is
 * left out of the set. */
#ifndef MCP_JWK_H
#define MCP_JWK_H

#include <stddef.h>

typedef enum { MCP_JWA_NONE = 0, MCP_JWA_RS256, MCP_JWA_ES256, MCP_JWA_EDDSA } mcp_jwa;

/* One key. Owned by its set. */
typedef struct {
  char *kid;                    /* NULL when the key has none */
  mcp_jwa alg;                  /* the only algorithm the key verifies (from kty/crv, and "alg" if given) */
  void *pkey;                   /* EVP_PKEY * */
} mcp_jwk;

/* A key set. Owned by whoever parsed it: mcp_jwks_free. */
typedef struct {
  mcp_jwk *keys;
  int n;
} mcp_jwks;

/* The algorithm a JWS header names, MCP_JWA_NONE for any other ("none",
 * HS256, ...). */
mcp_jwa mcp_jwa_from_name(const char *name);
/* Parse a JWK Set ({"keys":[...]}) or a single JWK. 0, or -1 with a reason
 * in err when the text is no key set or holds no usable key. */
int mcp_jwks_parse(mcp_jwks *out, const char *json, size_t len, char *err, size_t errcap);
void mcp_jwks_free(mcp_jwks *set);

#endif
