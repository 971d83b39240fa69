/* luamcp as an OAuth 2.1 resource server (the MCP authorization spec,
 * 2025-06-18 and later): bearer tokens checked on every request to the MCP
 * endpoint, as JWTs against the authorization server's keys (RFC 8414 /
 * OpenID discovery, JWKS cached, refetched on an unknown kid at most every
 * MCP_AUTH_REFETCH_S) or by introspection (RFC 7662, answers cached
 * briefly); the Protected Resource Metadata (RFC 9728) and the
 * WWW-Authenticate challenges (RFC 6750) that point clients at it.
 *
 * A check may wait on the authorization server (the keys, an
 * introspection): the caller's request waits, others go on; every wait ends
 * in its callback, with an identity or a failure, within the fetch timeout. */
#ifndef MCP_AUTH_H
#define MCP_AUTH_H

#include <uv.h>

#include "buf.h"
#include "identity.h"

#define MCP_AUTH_SKEW_S 60         /* clock skew allowed on exp, nbf, iat */
#define MCP_AUTH_REFETCH_S 30      /* at most one JWKS refetch for an unknown kid per this */
#define MCP_AUTH_RETRY_S 5         /* after a failed fetch, none again before this */
#define MCP_AUTH_KEYS_TTL_S 3600   /* keys older than this are refetched (used meanwhile) */
#define MCP_AUTH_CACHE_S 30        /* a verified JWT or an introspection answer is cached at most this */
#define MCP_AUTH_FETCH_MS 5000     /* a request to the authorization server */

typedef struct {
  const char *issuer;              /* --auth-issuer: discovery, and the iss required */
  const char *jwks;                /* --auth-jwks: a file or an http(s) URL (instead of discovery's) */
  const char *audience;            /* --auth-audience: this server's canonical URI (RFC 8707) */
  const char *introspect;          /* --auth-introspect: RFC 7662 endpoint, for opaque tokens */
  const char *introspect_client;   /* "id:secret" for the introspection endpoint ($LUAMCP_AUTH_CLIENT) */
} mcp_auth_options;

/* Why a request is refused: 401 (no token, an invalid one: error is
 * "invalid_token" or "invalid_request", or NULL with no token), or 503 (the
 * authorization server could not be asked). */
typedef struct {
  int status;
  const char *error;
  char description[256];
} mcp_auth_failure;

typedef struct mcp_auth_wait mcp_auth_wait;
/* Exactly one of id (a reference for the callee) and f is not NULL. */
typedef void (*mcp_auth_cb)(void *ud, mcp_identity *id, const mcp_auth_failure *f);

/* Is any --auth-* option set? */
int mcp_auth_wanted(const mcp_auth_options *opt);
/* Check the options, load a JWKS file; discovery waits for the first token.
 * 0, or -1 with a reason in err. */
int mcp_auth_start(uv_loop_t *loop, const mcp_auth_options *opt, char *err, size_t cap);
/* Check an Authorization header value. cb runs at once (the return is then
 * NULL) or later (the return is the wait, for mcp_auth_cancel). */
mcp_auth_wait *mcp_auth_check(const char *authorization, mcp_auth_cb cb, void *ud);
/* The request went away: cb will not run. */
void mcp_auth_cancel(mcp_auth_wait *w);
/* Is path a Protected Resource Metadata document's (the root form, or the
 * one suffixed with the resource's path)? */
int mcp_auth_is_metadata_path(const char *path);
/* The metadata document; scopes: the scopes the tools ask for (a JSON
 * array), or NULL. */
void mcp_auth_metadata(mcp_buf *out, const char *scopes);
/* A WWW-Authenticate header line (with its \r\n) for a failure, or for a
 * 403 insufficient_scope with the scopes needed (f NULL). */
void mcp_auth_challenge(mcp_buf *out, const mcp_auth_failure *f, const char *scope);
/* Count a refusal the transport made itself ("invalid_request",
 * "insufficient_scope") in /metrics' luamcp_auth_checks_total. */
void mcp_auth_count(const char *outcome);
/* Free the keys, the cache and the pending waits (their callbacks do not run). */
void mcp_auth_close(void);

#endif
