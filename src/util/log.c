/* Leveled logging to stderr: "luamcp: LEVEL: message", or one JSON
 * object per line (--log-format json). A plugin's lines name it, and the
 * tool whose call wrote them: "luamcp: LEVEL: PLUGIN: TOOL: message". */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

mcp_log_level mcp_log_threshold = MCP_LOG_INFO;
mcp_log_level mcp_log_plugin_threshold = MCP_LOG_INFO;

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
void (*mcp_log_tap)(mcp_log_level level, const char *logger, const char *tool, const char *msg);

/* One JSON object per line: time (RFC 3339, UTC, ms), level, then the
 * fields named (logger, tool) that are not NULL, then msg. */
static int json_line(char *line, size_t cap, mcp_log_level level, const char *const names[],
                     const char *const values[], int nfields) {
  struct timespec ts;
  struct tm tm;
  size_t n;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  n = strftime(line, cap, "{\"time\":\"%Y-%m-%dT%H:%M:%S", &tm);
  n += (size_t)snprintf(line + n, cap - n, ".%03ldZ\",\"level\":\"%s\"", ts.tv_nsec / 1000000,
                        level_names[level]);
  for (int field = 0; field < nfields; field++) {
    const char *s = values[field];
    if (s == NULL || n + 16 > cap) continue;      /* room for the name, quotes and the end */
    n += (size_t)snprintf(line + n, cap - n, ",\"%s\":\"", names[field]);
    for (; *s && n + 8 < cap - 3; s++) {
      unsigned char ch = (unsigned char)*s;
      if (ch == '"' || ch == '\\') line[n++] = '\\', line[n++] = (char)ch;
      else if (ch == '\n') line[n++] = '\\', line[n++] = 'n';
      else if (ch == '\t') line[n++] = '\\', line[n++] = 't';
      else if (ch < 0x20) n += (size_t)snprintf(line + n, cap - n, "\\u%04x", ch);
      else line[n++] = (char)ch;
    }
    line[n++] = '"';
  }
  line[n++] = '}';
  return (int)n;
}

/* The tap sees the message; what the tap itself logs goes to stderr only. */
static void tap(mcp_log_level level, const char *logger, const char *tool, const char *fmt, va_list ap) {
  void (*fn)(mcp_log_level, const char *, const char *, const char *) = mcp_log_tap;
  char msg[1800];
  vsnprintf(msg, sizeof msg, fmt, ap);
  mcp_log_tap = NULL;
  fn(level, logger, tool, msg);
  mcp_log_tap = fn;
}

/* A line naming who logs (logger) and in which tool call (tool), either may be NULL. */
static void vlog(mcp_log_level level, const char *logger, const char *tool, const char *fmt, va_list ap) {
  static const char *const names[] = { "logger", "tool", "msg" };
  char line[2048], msg[1800];
  int n;
  if (mcp_log_tap) {
    va_list copy;
    va_copy(copy, ap);
    tap(level, logger, tool, fmt, copy);
    va_end(copy);
  }
  if (mcp_log_json) {
    const char *values[] = { logger, tool, msg };
    vsnprintf(msg, sizeof msg, fmt, ap);
    n = json_line(line, sizeof line - 1, level, names, values, 3);
  } else {
    n = snprintf(line, sizeof line, "luamcp: %s: %s%s%s%s", level_names[level], logger ? logger : "",
                 logger ? ": " : "", tool ? tool : "", tool ? ": " : "");
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
  vlog(level, NULL, NULL, fmt, ap);
  va_end(ap);
}

void mcp_log_as(mcp_log_level level, const char *logger, const char *fmt, ...) {
  va_list ap;
  if (!mcp_log_enabled(level)) return;
  va_start(ap, fmt);
  vlog(level, logger, NULL, fmt, ap);
  va_end(ap);
}

static void log_as(mcp_log_level level, const char *logger, const char *tool, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, logger, tool, fmt, ap);
  va_end(ap);
}

void mcp_log_plugin(mcp_log_level level, const char *plugin, const char *tool, const char *msg) {
  if (level >= mcp_log_plugin_threshold) log_as(level, plugin, tool, "%s", msg);
}
