/* HTTP status codes: reason phrases, and answers counted by status. */
#include <stdint.h>
#include <stdio.h>

#include "http_status.h"
#include "metrics.h"

static struct {
  uint64_t statuses[500];      /* answers by status, 100..599 */
  int collecting;
} S;

static void collect(mcp_buf *b) {
  char labels[32];
  mcp_metric_head(b, "luamcp_http_responses_total", "counter", "HTTP responses by status code.");
  for (int i = 0; i < 500; i++)
    if (S.statuses[i]) {
      snprintf(labels, sizeof labels, "code=\"%d\"", i + 100);
      mcp_metric_sample(b, "luamcp_http_responses_total", labels, (double)S.statuses[i]);
    }
}

void mcp_http_status_init(void) {
  if (!S.collecting) mcp_metrics_collector(collect);
  S.collecting = 1;
}

void mcp_http_status_count(int status) {
  if (status >= 100 && status < 600) S.statuses[status - 100]++;
}

const char *mcp_http_status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 421: return "Misdirected Request";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}
