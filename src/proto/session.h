/* A session: one client connection's protocol state (revision, lifecycle,
 * log level), its table of in-flight requests, and how to write to it. */
#ifndef MCP_SESSION_H
#define MCP_SESSION_H

#include <jansson.h>

#include "buf.h"
#include "log.h"
#include "request.h"
#include "sched.h"

typedef struct mcp_session mcp_session;
typedef struct mcp_call mcp_call;
typedef struct mcp_batch mcp_batch;

/* Writes one complete message (no newline) on a stream: the transport's
 * context of the exchange the message belongs to (an HTTP POST), or NULL for
 * messages tied to none. last: the exchange is over after this message; data
 * is NULL when it ends with no message (a notification, a cancelled call). */
typedef void (*mcp_session_write_cb)(mcp_session *s, void *stream, const char *data, size_t len,
                                     int last);

extern const char *const mcp_revisions[];   /* supported, oldest first, NULL-terminated */

/* Owned by its transport: mcp_session_init, then mcp_session_close once no
 * call of it is live (mcp_session_close_calls first). */
struct mcp_session {
  mcp_reqtab reqs;
  long long id;                  /* names the session to Lua */
  int revision;                  /* index in mcp_revisions; -1 before initialize */
  char *init_key;                /* id of the initialize request, for cancel logs */
  mcp_log_level log_level;       /* from logging/setLevel */
  json_t *client_capabilities;
  mcp_session_write_cb write;
  void *transport;
  mcp_session *next, *prev;      /* all sessions (mcp_sessions) */
  int ncalls;                    /* live calls */
  long long out_last;            /* last id of a request sent to the client */
  struct mcp_out *out_waiters;   /* requests to the client waiting for answers (outgoing.c) */
  void (*on_drained)(mcp_session *s);   /* the last live call ended (optional) */
  /* Close the connection under a stream without ending the stream, so that
   * the client resumes it (SSE polling); optional: NULL where meaningless. */
  void (*detach)(mcp_session *s, void *stream);
  mcp_session *parent;           /* a stateless request's transport session (rev2026.c) */
  /* Who its latest request came from (auth.c), or NULL without
   * authorization: a reference, dropped by mcp_session_close. */
  struct mcp_identity *auth;
  /* For traces (transport_http.c): the HTTP request's trace-context
   * headers while its body is read (mcp_session_input), else NULL; a
   * digest of the session's id, "" for none. */
  const char *traceparent, *tracestate;
  char digest[17];
  unsigned tcp : 1;              /* HTTP (network.transport tcp), not stdio (pipe) */
  char name[12];                 /* for the access log: the transport's ("stdio", an HTTP id's
                                    first 8 characters), or "" */
  char client[48];               /* clientInfo.name of its initialize, or "" (the console's) */
  unsigned ready : 1;            /* notifications/initialized received */
  unsigned rev2026 : 1;           /* one stateless 2026-07-28 request (rev2026.c) */
};

extern mcp_session *mcp_sessions;

/* What the files above session.c serve of a session's messages, one row
 * each (Redis's moduleType): rev2026.c, task.c and outgoing.c register theirs
 * (proto.c, before the first session), and session.c calls the rows in the
 * order registered, naming none of those files. A NULL member is skipped. */
typedef struct mcp_session_type {
  /* A message's tree made from its text at less cost than the general
   * parse (rev2026.c: a 2026-07-28 request with a recent request's _meta),
   * or NULL: session.c parses it. */
  json_t *(*parse)(const char *data, size_t len);
  /* A request outside a batch, before anything else: 1 if the row took it
   * (rev2026.c: a 2026-07-28 request, served statelessly). */
  int (*stateless)(mcp_session *s, json_t *msg, const char *key, void *stream);
  /* The same for a plain tools/call read from its text (session.c's
   * quick_call), whose params._meta is more than a progressToken: meta is
   * its text. 1 if the row started it; 0 leaves the line to the parse. */
  int (*stateless_text)(mcp_session *s, const char *key, const mcp_request_text *rt,
                        const char *meta, size_t meta_len, void *stream);
  /* The length of the text at s, n bytes on, when the row knows it for a
   * valid object (rev2026.c: a recent request's _meta), or 0: quick_call's
   * reading passes such a value of params over, unread. */
  size_t (*known)(const char *s, size_t n);
  /* A request of an initialized session: 1 if the row served it (task.c's
   * methods). Never a tools/call: that is always a call (session.c may read
   * it from its text, with no params tree to give). */
  int (*request)(mcp_session *s, mcp_batch *b, void *stream, const char *key, const char *method,
                 json_t *params);
  /* notifications/cancelled for a key no call in s's table has: 1 if the
   * row ended what the key names (rev2026.c's subscriptions/listen). */
  int (*cancel)(mcp_session *s, const char *key, const char *reason);
  /* The request of key the row holds for s, or NULL (rev2026.c's stateless calls). */
  mcp_req *(*find)(mcp_session *s, const char *key, size_t keylen);
  /* A response or a progress notification from the client: 1 if the row
   * sent the request it answers (outgoing.c). */
  int (*response)(mcp_session *s, json_t *msg);
  int (*progress)(mcp_session *s, json_t *token);
  /* The test clock is about to move (task.c: tasks past their ttl go first). */
  void (*clock)(void);
  /* s closes (task.c: its tasks). */
  void (*closed)(mcp_session *s);
} mcp_session_type;

/* Add a row (once; the same row again is ignored). */
void mcp_session_register(const mcp_session_type *t);

/* proto.c's mcp_session_init registers the rows once, then calls this. */
void mcp__session_init(mcp_session *s, mcp_session_write_cb write, void *transport);
void mcp_session_init(mcp_session *s, mcp_session_write_cb write, void *transport);
void mcp_session_close(mcp_session *s);
/* Handle one message as read from the transport (a line, a POST body). */
void mcp_session_input(mcp_session *s, const char *data, size_t len, void *stream);
/* A plain tools/call read from its text, with no tree (session.c's
 * reading): for a transport that checks a request before the session takes
 * it (HTTP: the headers against the body, the scopes). */
#define MCP_KEY_MAX 512                /* longer ids are refused */
typedef struct mcp_call_text {
  char key[MCP_KEY_MAX];               /* the id's text */
  char tool[256];                      /* params.name */
  const char *meta;                    /* params._meta's text when not a session's, or NULL */
  size_t meta_len;
  mcp_request_text rt;                 /* rt.name is tool */
} mcp_call_text;
/* 1 with ct filled when data is a plain tools/call whose _meta is not a
 * session's (a 2026-07-28 request's); 0: parse it. Points into data. */
int mcp_session_read_call(const char *data, size_t len, mcp_call_text *ct);
/* Take the call ct (len: its text's size) as mcp_session_input would, on
 * stream: 1 when started; 0 when it is to be parsed (no answer was sent). */
int mcp_session_input_call(mcp_session *s, const mcp_call_text *ct, size_t len, void *stream);
/* Write a message on a stream; a response (last) goes into its batch when it has one. */
void mcp_session_send(mcp_session *s, mcp_batch *b, void *stream, const char *data, size_t len,
                      int last);
/* Start a call of s for a request already checked (its id not in flight):
 * s owns it (its table, its responses, its end) through mcp_session_owner. */
mcp_call *mcp_session_call_start(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                                 const char *method, json_t *params);
/* The same for a tools/call read from its text (mcp_call_start_text);
 * meta: its _meta's tree if it has more than a progressToken (a span reads
 * its traceparent there), or NULL. */
mcp_call *mcp_session_call_start_text(mcp_session *s, void *stream, const char *key,
                                      const mcp_request_text *rt, const json_t *meta);
extern const struct mcp_call_owner mcp_session_owner;
/* Fire CLOSE on every live call of s and of its 2026-07-28 requests. */
void mcp_session_close_calls(mcp_session *s, const char *reason);
/* Answer an error at once, outside any request (used for over-long lines). */
void mcp_session_reject(mcp_session *s, int code, const char *msg, void *stream);
mcp_session *mcp_session_find(long long id);
/* Initialized sessions, for /metrics. */
void mcp_session_collect(mcp_buf *b);

#endif
