/* Sealed tokens: data handed to a client that must come back unchanged
 * (the requestState of input-required results). A token is
 * base64url(payload) "." base64url(HMAC-SHA-256(key, payload)); the payload
 * is readable by the client, so it carries nothing secret. */
#ifndef MCP_SEAL_H
#define MCP_SEAL_H

#include "buf.h"

/* The key, made on first use: SHA-256 of $LUAMCP_STATE_KEY when it is set
 * (so that several processes, or a restarted one, accept each other's
 * tokens), else 32 random bytes. */
/* Append the token of payload to out. */
void mcp_seal(mcp_buf *out, const char *payload, size_t len);
/* Append the payload of a token to out: 0, or -1 when it is not one of ours
 * or was changed (out is then left as it was). */
int mcp_seal_open(mcp_buf *out, const char *token, size_t len);

#endif
