/* Protocol revision 2026-07-28: stateless requests. A request that carries
 * _meta["io.modelcontextprotocol/protocolVersion"] is served on its own,
 * without initialize, in an ephemeral session that lives as long as its one
 * call (see rev2026.c). */
#ifndef MCP_REV2026_H
#define MCP_REV2026_H

#include <jansson.h>

#include "buf.h"
#include "session.h"

#define MCP_REV_2026 "2026-07-28"
#define MCP_EXT_TASKS "io.modelcontextprotocol/tasks"   /* the tasks extension (task.c) */

enum {
  MCP_RPC_HEADER_MISMATCH = -32020,
  MCP_RPC_MISSING_CAPABILITY = -32021,
  MCP_RPC_UNSUPPORTED_VERSION = -32022
};

/* The per-request protocol version of a message (params._meta), or NULL. */
const char *mcp_rev2026_version(json_t *msg);
/* The tree of a message's text when it is a request with the _meta of a
 * recent one (rev2026_meta.c: the rest parsed, the _meta's tree shared), or
 * NULL: parse it the usual way, with the same outcome. */
json_t *mcp_rev2026_parse(const char *data, size_t len);
/* The kept tree of a recent request's _meta whose text this is, or NULL
 * (borrowed: the next request's may replace it). */
json_t *mcp_rev2026_meta_kept(const char *text, size_t len);
/* The length of a kept _meta's text at s (n bytes on), or 0. */
size_t mcp_rev2026_meta_at(const char *s, size_t n);
/* The protocol version a kept _meta names, from its text, or NULL (not a
 * kept one's, or it names none). */
const char *mcp_rev2026_kept_version(const char *meta, size_t len);
/* Is method served to 2026-07-28 requests? */
int mcp_rev2026_has_method(const char *method);
/* Do the client capabilities of a request declare the extension ext
 * (capabilities.extensions[ext] is an object)? */
int mcp_rev2026_declares(json_t *caps, const char *ext);
/* Check a 2026-07-28 request (version, the required _meta fields, log
 * level, method, the client capabilities it needs: -32021 for the tasks
 * methods, a task-only tool, or task notifications without the tasks
 * extension). 0 when it may run; else the whole error response is in out
 * and the HTTP status (400, 404) returned. */
int mcp_rev2026_check(json_t *msg, const char *key, mcp_buf *out);
/* The response stream of a stateless request read on s closed before its
 * answer: cancel the request (its client went away). */
void mcp_rev2026_stream_closed(mcp_session *s, void *stream, const char *reason);

/* subscriptions/listen. Deliver a notification (list_changed, resources/
 * updated) to the listeners whose filter wants it, each with its
 * subscriptionId in _meta; returns how many got it. */
int mcp_rev2026_listen_notify(const char *method, json_t *params);
/* The same, to the listeners of requests read on parent alone (a task's scope). */
int mcp_rev2026_listen_notify_scope(mcp_session *parent, const char *method, json_t *params);
/* Call fn with each task id a listener named, and the session it listens on. */
void mcp_rev2026_listen_each_task(void (*fn)(mcp_session *parent, const char *id));
/* Server teardown: end every listener gracefully ({resultType: "complete"}). */
void mcp_rev2026_listen_close_all(const char *reason);

/* The tasks extension, as task.c registers it: rev2026.c, below it, names
 * no task file. */
typedef struct mcp_rev2026_tasks {
  /* A tasks/ method of the extension (its declaration checked already). */
  void (*request)(mcp_session *s, void *stream, const char *key, const char *method,
                  json_t *params);
  /* Does task id of s's transport exist? Then its Task object goes into b (unless NULL). */
  int (*describe)(mcp_session *s, const char *id, mcp_buf *b);
  /* With a store: ask it for task id, whose state then goes to the listeners of s. */
  void (*fetch)(mcp_session *s, const char *id);
} mcp_rev2026_tasks;
void mcp_rev2026_set_tasks(const mcp_rev2026_tasks *t);
/* Register rev2026.c's row into session.c (stateless requests, listeners' cancels). */
void mcp_rev2026_init(void);

#endif
