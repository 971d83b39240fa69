/* The server configuration and the command-line options every command
 * shares (the server and `luamcp call` alike). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "allow.h"

mcp_config mcp_cfg = {
  .timeout = 60, .grace = 2, .max_line = 4u << 20, .memory_limit = 256u << 20, .page_size = 50,
  .request_timeout = 60, .state_ttl = 3600
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
