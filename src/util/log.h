/* Leveled logging to stderr. stdout is the protocol in stdio mode. */
#ifndef MCP_LOG_H
#define MCP_LOG_H

/* The MCP (syslog) levels, lowest first. */
typedef enum {
  MCP_LOG_DEBUG, MCP_LOG_INFO, MCP_LOG_NOTICE, MCP_LOG_WARNING,
  MCP_LOG_ERROR, MCP_LOG_CRITICAL, MCP_LOG_ALERT, MCP_LOG_EMERGENCY,
  MCP_LOG_NLEVELS
} mcp_log_level;

extern mcp_log_level mcp_log_threshold;

int mcp_log_level_parse(const char *name);          /* -1 if unknown */
const char *mcp_log_level_name(mcp_log_level level);
void mcp_log(mcp_log_level level, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
/* The same, naming who logs (an upstream server's name): "logger: message",
 * or the JSON line's "logger". */
void mcp_log_as(mcp_log_level level, const char *logger, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* A plugin's line (mcp.server_log, print): "plugin: tool: message", or the
 * JSON line's "logger" and "tool"; either may be NULL. Its own threshold:
 * luamcp call shows them at info while it hides the server's own lines. */
void mcp_log_plugin(mcp_log_level level, const char *plugin, const char *tool, const char *msg);
extern mcp_log_level mcp_log_plugin_threshold;
/* Every line also goes here while it is set (the console's watchers):
 * level, logger and tool (either may be NULL), the message. */
extern void (*mcp_log_tap)(mcp_log_level level, const char *logger, const char *tool, const char *msg);
/* --log-format json: each line a JSON object {time, level, [logger,] msg}. */
extern int mcp_log_json;

#define mcp_log_enabled(level) ((level) >= mcp_log_threshold)
#define mcp_debug(...) \
  do { if (mcp_log_enabled(MCP_LOG_DEBUG)) mcp_log(MCP_LOG_DEBUG, __VA_ARGS__); } while (0)
#define mcp_info(...)  mcp_log(MCP_LOG_INFO, __VA_ARGS__)
#define mcp_warn(...)  mcp_log(MCP_LOG_WARNING, __VA_ARGS__)
#define mcp_error(...) mcp_log(MCP_LOG_ERROR, __VA_ARGS__)

#endif
