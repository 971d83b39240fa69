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
  int test_clock;          /* accept notifications/luamcp/advance (tests only) */
} mcp_config;

extern mcp_config mcp_cfg;

#endif
