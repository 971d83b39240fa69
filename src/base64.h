/* Base64 (RFC 4648): the standard alphabet and the URL-safe one. */
#ifndef MCP_BASE64_H
#define MCP_BASE64_H

#include "buf.h"

/* Append the encoding of data; url: the URL-safe alphabet without padding. */
void mcp_base64_encode(mcp_buf *out, const void *data, size_t len, int url);
/* Append the decoding of text (either alphabet, padding optional).
 * Returns 0, or -1 when text is not Base64 (out is then left as it was). */
int mcp_base64_decode(mcp_buf *out, const char *text, size_t len);

#endif
