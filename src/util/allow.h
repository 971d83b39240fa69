/* Where handlers' HTTP requests may go: lists of HOST[:PORT] (--http-allow,
 * a plugin's http_allow, a request's allow, a sandboxed plugin's http
 * grant), checked against the host a URL names before it is resolved, then
 * against the address it resolved to, so that a name pointing at a
 * loopback, private or link-local address (cloud metadata at
 * 169.254.169.254) is refused unless an entry names that address itself.
 * Hosts compare case-insensitively, without brackets or a trailing dot, an
 * IPv6 literal in any of its spellings. */
#ifndef MCP_ALLOW_H
#define MCP_ALLOW_H

#include <stddef.h>
#include <sys/socket.h>

typedef struct mcp_allow mcp_allow;    /* owned by whoever made it: mcp_allow_free */

mcp_allow *mcp_allow_new(void);
void mcp_allow_free(mcp_allow *a);
/* Add HOST, HOST:PORT, [V6] or [V6]:PORT; -1 when malformed. */
int mcp_allow_add(mcp_allow *a, const char *entry);
/* Forget every entry; an empty list still allows nothing. */
void mcp_allow_clear(mcp_allow *a);
/* May host:port, resolved to sa, be reached? With sa NULL, by its name
 * alone (before it is resolved). 1, or 0 with why in msg. */
int mcp_allow_check(const mcp_allow *a, const char *host, int port, const struct sockaddr *sa,
                    char *msg, size_t cap);
/* The entry that would allow host:port ("host:port", "[v6]:port"), in
 * out; -1 when it does not fit. */
int mcp_allow_target(const char *host, int port, char *out, size_t cap);
/* Is sa loopback, private, link-local, shared, unspecified or multicast? */
int mcp_allow_special(const struct sockaddr *sa);

/* The server's list (--http-allow), or NULL when none was given. */
mcp_allow *mcp_allow_server(int create);
/* A plugin's list by name, or NULL; kept until mcp_allow_close_all so that
 * requests in flight may point at it, and emptied in place on reload. */
mcp_allow *mcp_allow_plugin(const char *name, int create);
void mcp_allow_plugin_drop(const char *name);
void mcp_allow_close_all(void);

#endif
