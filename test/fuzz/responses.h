/* What a fuzz target's server wrote, read as its client would: a sequence
 * of HTTP/1.1 responses. */
#ifndef FUZZ_RESPONSES_H
#define FUZZ_RESPONSES_H

#include <stddef.h>

#include "buf.h"

/* The complete requests in data, read as the server's http-parser reads
 * them: a byte in heads for each, 1 for a HEAD. Returns their number. */
int fuzz_request_heads(const char *data, size_t len, mcp_buf *heads);

/* One complete response: its status, Content-Type (or NULL) and body
 * (chunked bodies joined). */
typedef void (*fuzz_response_cb)(int status, const char *content_type, const char *body, size_t len,
                                 void *ud);

/* Parse data as responses, the i-th answering a HEAD when head[i] (nhead
 * of them; later ones do not). lenient: a response that ends the
 * connection (an error) is read to the close even so, as the server may
 * not have known it answered a HEAD. Aborts on anything that is not a
 * valid response; a last response cut short (the connection closed) is
 * allowed. Returns the number of complete final (non-1xx) responses. */
int fuzz_responses(const char *data, size_t len, const char *head, int nhead, int lenient, fuzz_response_cb cb,
                   void *ud);

#endif
