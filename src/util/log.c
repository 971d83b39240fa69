/* Leveled logging to stderr: "luamcp: LEVEL: message", or one JSON
 * object per line (--log-format json). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

int mcp_log_json;

/* One JSON object per line: time (RFC 3339, UTC, ms), level, logger, msg. */
static int json_line(char *line, size_t cap, mcp_log_level level, const char *logger, const char *msg) {
  struct timespec ts;
  struct tm tm;
  size_t n;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  n = strftime(line, cap, "{\"time\":\"%Y-%m-%dT%H:%M:%S", &tm);
  n += (size_t)snprintf(line + n, cap - n, ".%03ldZ\",\"level\":\"%s\",", ts.tv_nsec / 1000000,
                        level_names[level]);
  for (int field = 0; field < 2; field++) {
    const char *s = field == 0 ? logger : msg;
    if (s == NULL) continue;
    n += (size_t)snprintf(line + n, cap - n, field == 0 ? "\"logger\":\"" : "\"msg\":\"");
    for (; *s && n + 8 < cap - 3; s++) {
      unsigned char ch = (unsigned char)*s;
      if (ch == '"' || ch == '\\') line[n++] = '\\', line[n++] = (char)ch;
      else if (ch == '\n') line[n++] = '\\', line[n++] = 'n';
      else if (ch == '\t') line[n++] = '\\', line[n++] = 't';
      else if (ch < 0x20) n += (size_t)snprintf(line + n, cap - n, "\\u%04x", ch);
      else line[n++] = (char)ch;
    }
    line[n++] = '"';
    if (field == 0) line[n++] = ',';
  }
  line[n++] = '}';
  return (int)n;
}

static void vlog(mcp_log_level level, const char *logger, const char *fmt, va_list ap) {
  char line[2048], msg[1800];
  int n;
  if (mcp_log_json) {
    vsnprintf(msg, sizeof msg, fmt, ap);
    n = json_line(line, sizeof line - 1, level, logger, msg);
  } else {
    n = snprintf(line, sizeof line, "luamcp: %s: %s%s", level_names[level], logger ? logger : "",
                 logger ? ": " : "");
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  }
  line[n++] = '\n';
  fwrite(line, 1, (size_t)n, stderr);   /* one write per line: lines never interleave */
}

void mcp_log(mcp_log_level level, const char *fmt, ...) {
  va_list ap;
  if (!mcp_log_enabled(level)) return;
  va_start(ap, fmt);
  vlog(level, NULL, fmt, ap);
  va_end(ap);
}

void mcp_log_as(mcp_log_level level, const char *logger, const char *fmt, ...) {
  va_list ap;
  if (!mcp_log_enabled(level)) return;
  va_start(ap, fmt);
  vlog(level, logger, fmt, ap);
  va_end(ap);
}
