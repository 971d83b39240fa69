/* Who a request comes from, as its access token says: the subject, the
 * client, the scopes granted, and the token's claims (a JWT's, or an
 * introspection answer's). Reference counted: the auth layer makes it, a
 * session holds the one of its latest request, a cache entry holds one. */
#ifndef MCP_IDENTITY_H
#define MCP_IDENTITY_H

#include <jansson.h>

typedef struct mcp_identity {
  int refs;
  char *subject;               /* never NULL */
  char *client_id;             /* client_id or azp, or NULL */
  char **scopes;               /* scope (space-separated) or scp (a list or a string) */
  int nscopes;
  json_t *claims;
  double exp;                  /* seconds since the epoch, 0 when the token has none */
} mcp_identity;

/* From claims (its reference is taken); NULL when there is no subject. */
mcp_identity *mcp_identity_new(json_t *claims, const char *fallback_subject);
mcp_identity *mcp_identity_ref(mcp_identity *id);
void mcp_identity_unref(mcp_identity *id);
int mcp_identity_has(const mcp_identity *id, const char *scope);
/* Two identities (either may be NULL) name the same subject. */
int mcp_identity_same_subject(const mcp_identity *a, const mcp_identity *b);
/* The subject (NULL-safe). */
const char *mcp_identity_subject(const mcp_identity *id);

#endif
