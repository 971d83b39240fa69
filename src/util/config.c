/* The server configuration and the command-line options every command
 * shares (the server and `luamcp call` alike). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "allow.h"
#include "log.h"

mcp_config mcp_cfg = {
  .timeout = 60, .grace = 2, .max_line = 4u << 20, .memory_limit = 256u << 20, .page_size = 50,
  .request_timeout = 60, .state_ttl = 3600, .drain = 10, .metrics_port = -1
};

int mcp_parse_number(const char *s, double *out) {
  char *end;
  *out = strtod(s, &end);
  return *s != '\0' && *end == '\0' && *out >= 0;
}

int mcp_usage_error(const char *usage, const char *fmt, const char *arg) {
  fprintf(stderr, "luamcp: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n%s", usage);
  return 2;
}

int mcp_config_option(const char *flag, const char *value) {
  double d;
  if (strcmp(flag, "--timeout") == 0) return mcp_parse_number(value, &mcp_cfg.timeout) ? 1 : -1;
  if (strcmp(flag, "--grace") == 0) return mcp_parse_number(value, &mcp_cfg.grace) ? 1 : -1;
  if (strcmp(flag, "--max-line") == 0) {
    if (!mcp_parse_number(value, &d) || d < 64) return -1;
    mcp_cfg.max_line = (size_t)d;
    return 1;
  }
  if (strcmp(flag, "--memory-limit") == 0) {
    if (!mcp_parse_number(value, &d)) return -1;
    mcp_cfg.memory_limit = (size_t)(d * 1024 * 1024);
    return 1;
  }
  if (strcmp(flag, "--state-ttl") == 0) {
    if (!mcp_parse_number(value, &d) || d <= 0) return -1;
    mcp_cfg.state_ttl = d;
    return 1;
  }
  if (strcmp(flag, "--http-allow") == 0) return mcp_allow_add(mcp_allow_server(1), value) == 0 ? 1 : -1;
  if (strcmp(flag, "--page-size") == 0) {
    if (!mcp_parse_number(value, &d) || d < 1) return -1;
    mcp_cfg.page_size = (int)d;
    return 1;
  }
  return 0;
}

int mcp_parse_hostport(const char *v, char *host, size_t cap, int *port) {
  const char *colon = strrchr(v, ':');
  double d;
  if (colon == NULL || colon == v || (size_t)(colon - v) >= cap || !mcp_parse_number(colon + 1, &d) ||
      d > 65535 || d != (int)d)
    return 0;
  memcpy(host, v, (size_t)(colon - v));
  host[colon - v] = '\0';
  if (host[0] == '[') {                 /* [::1]:8080 */
    memmove(host, host + 1, strlen(host));
    host[strcspn(host, "]")] = '\0';
  }
  *port = (int)d;
  return 1;
}

int mcp_config_server_option(const char *flag, const char *value) {
  if (strcmp(flag, "--access-log") == 0) {
    mcp_cfg.access_log = value;
    return value[0] != '\0' ? 1 : -1;
  }
  if (strcmp(flag, "--log-format") == 0) {
    if (strcmp(value, "json") != 0 && strcmp(value, "text") != 0) return -1;
    mcp_log_json = strcmp(value, "json") == 0;
    return 1;
  }
  if (strcmp(flag, "--drain") == 0) return mcp_parse_number(value, &mcp_cfg.drain) ? 1 : -1;
  if (strcmp(flag, "--metrics") == 0)
    return mcp_parse_hostport(value, mcp_cfg.metrics_host, sizeof mcp_cfg.metrics_host,
                              &mcp_cfg.metrics_port) ? 1 : -1;
  return 0;
}
