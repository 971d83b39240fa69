/* The server configuration (the flags set it: src/flags.c) and the helpers
 * of the flags' parsers that need nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

mcp_config mcp_cfg = { .request_timeout = 60, .metrics = { .port = -1 } };

int mcp_usage_error(const char *usage, const char *fmt, const char *arg) {
  fprintf(stderr, "luamcp: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", usage ? usage : "");
  return 2;
}

int mcp_parse_hostport(const char *v, char *host, size_t cap, int *port) {
  const char *colon = strrchr(v, ':');
  char *end;
  long p;
  if (colon == NULL || colon == v || (size_t)(colon - v) >= cap || colon[1] < '0' || colon[1] > '9') return 0;
  p = strtol(colon + 1, &end, 10);
  if (*end != '\0' || p > 65535) return 0;
  memcpy(host, v, (size_t)(colon - v));
  host[colon - v] = '\0';
  if (host[0] == '[') {                 /* [::1]:8080 */
    memmove(host, host + 1, strlen(host));
    host[strcspn(host, "]")] = '\0';
  }
  *port = (int)p;
  return 1;
}
