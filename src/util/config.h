/* Server configuration: set once by main.c from the command line. */
#ifndef MCP_CONFIG_H
#define MCP_CONFIG_H

#include <stddef.h>

typedef struct {
  double timeout;        /* default tool timeout, seconds; 0 = none */
  double grace;          /* default grace after a cancel, seconds */
  size_t max_line;       /* largest stdio message, bytes */
  size_t memory_limit;   /* Lua state limit, bytes; 0 = none */
  int page_size;         /* items per list page */
  double request_timeout;  /* default timeout of a request to the client, seconds */
  double state_ttl;        /* how long a requestState stays valid, seconds */
  int test_clock;          /* accept notifications/luamcp/advance and fail_alloc (tests only) */
  /* The server's alone (mcp_config_server_option): */
  const char *access_log;  /* --access-log FILE, "-" for stderr, or NULL */
  double drain;            /* --drain: seconds calls may finish in after SIGTERM (HTTP) */
  char metrics_host[256];  /* --metrics HOST:PORT: a listener for /metrics and the probes */
  int metrics_port;        /* -1: none */
} mcp_config;

extern mcp_config mcp_cfg;

/* A number >= 0 written whole; 1 if s is one. */
int mcp_parse_number(const char *s, double *out);
/* Say what is wrong, then the usage, on stderr; returns 2 (the exit status). */
int mcp_usage_error(const char *usage, const char *fmt, const char *arg);
/* Apply one of the options every command shares: --timeout, --grace,
 * --max-line, --memory-limit, --page-size, --state-ttl, --http-allow (each takes a value). Returns 1
 * when applied, -1 when the value is bad, 0 when flag is none of them. */
int mcp_config_option(const char *flag, const char *value);
/* The same for the server's own options: --access-log, --log-format,
 * --drain, --metrics. */
int mcp_config_server_option(const char *flag, const char *value);
/* "HOST:PORT" (or "[V6]:PORT") into host (cap bytes) and port; 1 if it is one. */
int mcp_parse_hostport(const char *v, char *host, size_t cap, int *port);

#endif
