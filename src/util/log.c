/* Leveled logging to stderr: "luamcp: LEVEL: message". */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

mcp_log_level mcp_log_threshold = MCP_LOG_INFO;

static const char *const level_names[MCP_LOG_NLEVELS] = {
  "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
};

int mcp_log_level_parse(const char *name) {
  for (int i = 0; i < MCP_LOG_NLEVELS; i++)
    if (strcmp(name, level_names[i]) == 0) return i;
  return -1;
}

const char *mcp_log_level_name(mcp_log_level level) {
  return (unsigned)level < MCP_LOG_NLEVELS ? level_names[level] : "?";
}

void mcp_log(mcp_log_level level, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  int n;
  if (!mcp_log_enabled(level)) return;
  n = snprintf(line, sizeof line, "luamcp: %s: ", level_names[level]);
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  fwrite(line, 1, (size_t)n, stderr);   /* one write per line: lines never interleave */
}
