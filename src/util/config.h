/* Server configuration: set once, from the flags (src/flags.c). */
#ifndef MCP_CONFIG_H
#define MCP_CONFIG_H

#include <stddef.h>

typedef struct {
  char host[256];          /* without the brackets of [V6] */
  int port;                /* -1: none given */
} mcp_hostport;

typedef struct {
  double timeout;        /* default tool timeout, seconds; 0 = none */
  double grace;          /* default grace after a cancel, seconds */
  size_t max_line;       /* largest stdio message, bytes */
  size_t memory_limit;   /* Lua state limit, bytes; 0 = none */
  int page_size;         /* items per list page */
  double request_timeout;  /* default timeout of a request to the client, seconds */
  double state_ttl;        /* how long a requestState stays valid, seconds */
  int test_clock;          /* accept notifications/luamcp/advance and fail_alloc (tests only) */
  /* The server's alone: */
  const char *access_log;  /* --access-log FILE, "-" for stderr, or NULL */
  double drain;            /* --drain: seconds calls may finish in after SIGTERM (HTTP) */
  mcp_hostport metrics;    /* --metrics HOST:PORT: a listener for /metrics and the probes */
} mcp_config;

/* The flags' defaults are set by mcp_flags_defaults (src/flags.c). */
extern mcp_config mcp_cfg;

/* Say what is wrong, then the usage, on stderr; returns 2 (the exit status). */
int mcp_usage_error(const char *usage, const char *fmt, const char *arg);
/* "HOST:PORT" (or "[V6]:PORT") into host (cap bytes) and port, a whole
 * number up to 65535; 1 if it is one. */
int mcp_parse_hostport(const char *v, char *host, size_t cap, int *port);

#endif
