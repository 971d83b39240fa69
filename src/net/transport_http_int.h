/* Private to the Streamable HTTP transport (transport_http.c, the routing;
 * http_stream.c, the streams): its sessions and streams. */
#ifndef MCP_TRANSPORT_HTTP_INT_H
#define MCP_TRANSPORT_HTTP_INT_H

#include <stddef.h>

#include "http.h"
#include "session.h"

#define REV_2025_06_18 2            /* index in mcp_revisions */
#define REV_2025_11_25 3

typedef struct hsession hsession;
typedef struct hstream hstream;

typedef struct {
  unsigned seq;
  size_t len;
  char *text;                       /* the whole SSE event */
} event;

/* A stream: the answer to one POST, or the standalone GET stream. Owned by
 * its session; freed when ended and no longer worth keeping, or with the
 * session. A call points at it until the call's last message. */
struct hstream {
  hsession *hs;
  mcp_http_conn *conn;                  /* attached connection, or NULL */
  unsigned no;                      /* within the session */
  unsigned seq;                     /* last event id used */
  unsigned delivered;               /* last event handed to a connection */
  enum { UNDECIDED, JSON, SSE } mode;
  unsigned ended : 1;               /* its last message was written */
  unsigned in_input : 1;            /* the POST body is being handled */
  unsigned is_get : 1;
  event *events;                    /* replay ring, oldest first */
  size_t nevents, bytes;
  hstream *next;
};

/* A session. Owned by the session list; freed once ended (DELETE or
 * shutdown) and no call of it is live. */
struct hsession {
  mcp_session s;                    /* first: the protocol state */
  char id[33];
  hstream *streams;
  unsigned next_no;
  hstream *get;
  hstream *spare;                   /* a freed stream, for the next (owned) */
  unsigned ended : 1;
  unsigned ending : 1;              /* session_end is cancelling its calls: it frees it after */
  unsigned rev2026 : 1;              /* the session of stateless 2026-07-28 requests */
  hsession *next;
};

/* http_stream.c. A stream of hs, attached to conn (or NULL), first in its list. */
hstream *mcp__hstream_new(hsession *hs, mcp_http_conn *conn);
void mcp__hstream_unlink(hstream *st);
void mcp__hstream_free(hstream *st);
/* An ended stream: freed, or kept for resumption (SSE). */
void mcp__hstream_retire(hstream *st);
/* Attach c to st (GET) and send the events after `after`; prime: a new GET
 * stream of 2025-11-25 gets a retry event first. */
void mcp__hstream_resume(hstream *st, mcp_http_conn *c, unsigned after, int prime);
/* The session's writer (mcp_session_write_cb) and its detach (SSE polling). */
void mcp__hs_write(mcp_session *s, void *stream, const char *data, size_t len, int last);
void mcp__hs_detach(mcp_session *s, void *stream);

#endif
