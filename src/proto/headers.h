/* The request metadata headers of a 2026-07-28 POST (Streamable HTTP),
 * checked against its body: MCP-Protocol-Version, Mcp-Method, Mcp-Name, and
 * for tools/call the Mcp-Param-{Name} headers of the tool's x-mcp-header
 * properties. Values may be plain or "=?base64?...?=". */
#ifndef MCP_HEADERS_H
#define MCP_HEADERS_H

#include <stddef.h>

#include <jansson.h>

#include "http.h"
#include "session.h"

/* The headers http.c collects for mcp_headers_check (any case). */
#define MCP_PARAM_PREFIX "mcp-param-"

/* 1 when the headers of r agree with the request msg; 0 with the reason in
 * why, for a 400 answer with -32020 (HeaderMismatch). A body without a
 * protocol version is not judged here (it is malformed: -32602). */
int mcp_headers_check(const mcp_http_request *r, json_t *msg, char *why, size_t cap);
/* The same for a tools/call read from its text (mcp_session_read_call)
 * with a kept _meta: 1 when the headers agree with it; 0 when they do not,
 * or when this reading cannot tell (the tree's check then says which). */
int mcp_headers_agree_text(const mcp_http_request *r, const mcp_call_text *ct);

#endif
