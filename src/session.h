/* A session: one client connection's protocol state (revision, lifecycle,
 * log level), its table of in-flight requests, and how to write to it. */
#ifndef MCP_SESSION_H
#define MCP_SESSION_H

#include <jansson.h>

#include "log.h"
#include "request.h"

typedef struct mcp_session mcp_session;
typedef struct mcp_call mcp_call;
typedef struct mcp_batch mcp_batch;

/* Writes one complete message (no newline). c is the call it belongs to, or NULL. */
typedef void (*mcp_session_write_cb)(mcp_session *s, mcp_call *c, const char *data, size_t len);

extern const char *const mcp_revisions[];   /* supported, oldest first, NULL-terminated */

/* Owned by its transport: mcp_session_init, then mcp_session_close once no
 * call of it is live (mcp_sched_close_all first). */
struct mcp_session {
  mcp_reqtab reqs;
  int revision;                  /* index in mcp_revisions; -1 before initialize */
  char *init_key;                /* id of the initialize request, for cancel logs */
  mcp_log_level log_level;       /* from logging/setLevel */
  json_t *client_capabilities;
  mcp_session_write_cb write;
  void *transport;
  mcp_session *next;             /* all sessions */
  int ncalls;                    /* live calls */
  unsigned ready : 1;            /* notifications/initialized received */
};

extern mcp_session *mcp_sessions;

void mcp_session_init(mcp_session *s, mcp_session_write_cb write, void *transport);
void mcp_session_close(mcp_session *s);
/* Handle one message as read from the transport (a line, a POST body). */
void mcp_session_input(mcp_session *s, const char *data, size_t len);
/* Write a message, into its batch when it has one. */
void mcp_session_send(mcp_session *s, mcp_batch *b, mcp_call *c, const char *data, size_t len);
/* A call of s (and of b) is gone; the batch is answered when it was the last. */
void mcp_session_call_done(mcp_session *s, mcp_batch *b);
/* A request that is not a call: answer an error at once (used for over-long lines). */
void mcp_session_reject(mcp_session *s, int code, const char *msg);

#endif
