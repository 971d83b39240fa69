/* HTTP status codes for http.c: the reason phrase of each, and the count of
 * answers by status (luamcp_http_responses_total on /metrics). */
#ifndef MCP_HTTP_STATUS_H
#define MCP_HTTP_STATUS_H

/* Register the count's collector (once; later calls do nothing). */
void mcp_http_status_init(void);
/* "OK" for 200, "Unknown" for a status it does not name. */
const char *mcp_http_status_text(int status);
/* One answer more with this status (100..599; others are not counted). */
void mcp_http_status_count(int status);

#endif
