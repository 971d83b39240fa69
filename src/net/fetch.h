/* One HTTP request of the server's own (the authorization server's
 * metadata, its JWKS, token introspection), run with libcurl's easy
 * interface on libuv's thread pool: the loop never blocks, and a request
 * that does not answer ends at its timeout. */
#ifndef MCP_FETCH_H
#define MCP_FETCH_H

#include <stddef.h>
#include <uv.h>

#define MCP_FETCH_MAX (1u << 20)   /* bytes of an answer; past it the fetch fails */

typedef struct mcp_fetch mcp_fetch;

/* status: the HTTP status, or 0 when no answer came (err says why). body
 * is NUL-terminated. Runs on the loop thread, never for a cancelled fetch. */
typedef void (*mcp_fetch_cb)(void *ud, long status, const char *body, size_t len, const char *err);

/* libcurl's global state, on the loop thread before the first fetch (the
 * pool's threads must not be the first to touch it), and its release. */
void mcp_fetch_init(void);
void mcp_fetch_close(void);
/* GET url, or POST form (application/x-www-form-urlencoded) when it is not
 * NULL, with HTTP Basic userpwd ("user:password") when not NULL. The
 * strings are copied. Owned by this file until cb has run. */
mcp_fetch *mcp_fetch_start(uv_loop_t *loop, const char *url, const char *form, const char *userpwd,
                           long timeout_ms, mcp_fetch_cb cb, void *ud);
/* cb will not run; the request ends on its own in the pool. */
void mcp_fetch_cancel(mcp_fetch *f);
/* Percent-encoding for a form value, appended to out (cap bytes). */
int mcp_fetch_escape(const char *s, char *out, size_t cap);

#endif
