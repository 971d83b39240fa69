/* What finished calls add up to: requests by method, tool and outcome,
 * handler durations and the cancel-to-stop latency (/metrics), and one
 * line per request in the access log (--access-log). */
#ifndef MCP_STATS_H
#define MCP_STATS_H

#include "request.h"

typedef struct mcp_call mcp_call;

/* What stopped a call, from the event and reason that first did. */
enum {
  MCP_WHY_NONE, MCP_WHY_CLIENT, MCP_WHY_TIMEOUT, MCP_WHY_DISCONNECT, MCP_WHY_SHUTDOWN,
  MCP_WHY_SESSION_ENDED, MCP_WHY_TASK_CANCELLED, MCP_WHY_ABORTED, MCP_WHY_N
};

/* What stopped a call, as /metrics, the access log and traces name it
 * ("client", "timeout", ...); inline, so that trace.c needs nothing of stats.c. */
static inline const char *mcp_why_name(int why) {
  static const char *const names[MCP_WHY_N] = {
    "", "client", "timeout", "disconnect", "shutdown", "session_ended", "task_cancelled", "aborted"
  };
  return why > 0 && why < MCP_WHY_N ? names[why] : "aborted";
}
/* Register the collector (the families show before the first request) and
 * stats.c's row into sched.c: a call's first cancel says why it stopped
 * (c->why), and its FINISH is counted and logged when there is an access log. */
void mcp_stats_init(void);
/* Write the access log to path ("-": stderr). 0, or -1 with errno. */
int mcp_stats_access_log(const char *path);
void mcp_stats_close(void);

#endif
