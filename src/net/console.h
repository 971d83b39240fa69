/* The console (--console): a page at /console on the MCP endpoint's
 * listener to watch and steer calls, its JSON API (/console/api/...) and
 * its one event stream (/console/events). transport_http.c routes to it
 * after the Host and Origin checks (and OAuth's token check). */
#ifndef MCP_CONSOLE_H
#define MCP_CONSOLE_H

#include <stddef.h>

#include "http.h"
#include "identity.h"
#include "transport_http.h"

/* May the console be served with these options? scope: console_scope, or
 * NULL. 0 (a token is made), or -1 with why: a non-loopback address
 * without OAuth and a scope. */
int mcp_console_init(const mcp_http_options *opt, const char *scope, char *why, size_t cap);
/* Print the console's URL, with its token, on stderr. */
void mcp_console_announce(const char *host, int port);
/* With OAuth on, must this console request go through the bearer token's
 * check? (Off loopback always; on loopback when it carries one.) */
int mcp_console_bearer_only(const mcp_http_request *r);
/* Is path the console's (/console, /console/...)? 0 when it is off. */
int mcp_console_path(const char *path);
/* Serve a console request; id: the request's OAuth identity, or NULL. */
void mcp_console_serve(mcp_http_conn *c, const mcp_http_request *r, const mcp_identity *id);
/* A connection closed: 1 if ud was a console event stream (then forgotten). */
int mcp_console_closed(mcp_http_conn *c, void *ud);
/* Close its timer and buffer (at exit, once the connections are gone). */
void mcp_console_close(void);

#endif
