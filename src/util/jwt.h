/* JWT access tokens (RFC 7519, RFC 9068) signed with JWS compact
 * serialization (RFC 7515): RS256, ES256 and EdDSA against a JWK set.
 * Nothing else is accepted: not "none", not HS*, not a key of another type
 * than the header's alg names. */
#ifndef MCP_JWT_H
#define MCP_JWT_H

#include <jansson.h>

#include "jwk.h"

typedef enum {
  MCP_JWT_OK = 0,
  MCP_JWT_MALFORMED,           /* not three base64url parts of JSON */
  MCP_JWT_BAD_ALG,             /* none, HS*, or any algorithm not supported */
  MCP_JWT_UNKNOWN_KID,         /* no key of the set has the header's kid: refetch the set */
  MCP_JWT_BAD_SIGNATURE,
  MCP_JWT_EXPIRED,
  MCP_JWT_NOT_YET,             /* nbf (or iat) in the future */
  MCP_JWT_BAD_ISSUER,
  MCP_JWT_BAD_AUDIENCE,
  MCP_JWT_BAD_CLAIMS           /* exp or sub missing or of the wrong type */
} mcp_jwt_status;

/* A decoded token. Owned by its caller: mcp_jwt_free. */
typedef struct {
  json_t *header, *claims;
  mcp_jwa alg;
  const char *kid;             /* in header, or NULL */
  char *signing_input;         /* "header.payload" */
  size_t signing_len;
  unsigned char *sig;
  size_t sig_len;
} mcp_jwt;

/* Split and decode a compact JWS; no signature checked yet. */
mcp_jwt_status mcp_jwt_decode(mcp_jwt *t, const char *token, size_t len);
/* The signature against the set: the key with the header's kid (or, with
 * no kid, each key of the header's alg in turn). */
mcp_jwt_status mcp_jwt_verify(const mcp_jwt *t, const mcp_jwks *set);
/* exp (required), nbf, iat within skew seconds of now; iss equal to issuer
 * (when not NULL); aud (a string or an array) naming audience; sub present. */
mcp_jwt_status mcp_jwt_check_claims(const mcp_jwt *t, const char *issuer, const char *audience,
                                    double now, double skew);
void mcp_jwt_free(mcp_jwt *t);
const char *mcp_jwt_status_text(mcp_jwt_status s);
/* Does aud (a string or an array of them) name audience? Trailing slashes
 * aside, the comparison is exact. */
int mcp_jwt_audience_has(json_t *aud, const char *audience);

#endif
