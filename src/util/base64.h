/* Base64 (RFC 4648): the standard alphabet and the URL-safe one. */
#ifndef MCP_BASE64_H
#define MCP_BASE64_H

#include "buf.h"

/* Append the encoding of data; url: the URL-safe alphabet without padding. */
void mcp_base64_encode(mcp_buf *out, const void *data, size_t len, int url);
/* Append the decoding of text: the standard alphabet with its padding, or
 * (url) the URL-safe one without. Strict: any other character, a missing or
 * stray '=', or bits past the last byte that are not zero make it no
 * encoding. Returns 0, or -1 when text is not one (out is left as it was). */
int mcp_base64_decode(mcp_buf *out, const char *text, size_t len, int url);

#endif
