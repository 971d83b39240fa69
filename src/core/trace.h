/* Tracing of calls: a call's SERVER span (by the OpenTelemetry semantic
 * conventions for MCP), from the incoming trace context to its end, and the
 * spans a handler's waits add under it. Off unless the exporter
 * (src/net/otel.c) enabled it (mcp_sched_trace): then mcp_trace_on is 1, a row of trace.c is
 * registered into sched.c, and every finished span goes to the sink. */
#ifndef MCP_TRACE_H
#define MCP_TRACE_H

#include <jansson.h>

#include "span.h"

typedef struct mcp_call mcp_call;

extern int mcp_trace_on;
extern int mcp_trace_db_statement;     /* SQL spans carry the statement's text (otel.db_statement) */

/* Tracing is turned on by mcp_sched_trace (core.c), which calls this and
 * registers the row. */
void mcp__trace_start(const mcp_sampler *sampler, void (*sink)(mcp_span *s));
extern const struct mcp_call_type mcp__trace_type;

/* Where a request came from, as its session knows (all may be NULL). */
typedef struct {
  const char *traceparent, *tracestate;   /* the HTTP request's headers */
  const char *protocol_version;          /* static: borrowed by the span */
  const char *session_digest;             /* a digest of the session id, never the id */
  const char *transport;                  /* network.transport: "pipe" (stdio) or "tcp" (static) */
  const char *enduser;                    /* the token's subject (--auth-*) */
  const json_t *params;                   /* the request's (mcp_call_params), or NULL */
  /* A tools/call read from its text has no params tree: its name is the
   * call's tool and meta its _meta's tree (or NULL, no traceparent). */
  int from_text;
  const json_t *meta;
} mcp_trace_origin;

/* Start c's SERVER span: its parent is params._meta.traceparent, else the
 * HTTP header, else none. */
void mcp_trace_server(mcp_call *c, const mcp_trace_origin *o);
/* c answers with an error: a JSON-RPC code, or 0 for a tool's isError result. */
void mcp_trace_call_error(mcp_call *c, int code);
/* A span of kind under c's current span (its innermost open ctx:span, else
 * its SERVER span): NULL when c has none. The caller ends it with
 * mcp_trace_span_end. */
mcp_span *mcp_trace_child(mcp_call *c, mcp_span_kind kind, const char *name);
/* A span of kind (INTERNAL for ctx:span, CLIENT for an upstream MCP
 * request) that becomes c's current span until mcp_trace_leave (c NULL:
 * the call is gone; s is only ended). */
mcp_span *mcp_trace_enter(mcp_call *c, mcp_span_kind kind, const char *name);
void mcp_trace_leave(mcp_call *c, mcp_span *s);
/* End s and give it to the sink (an unsampled one is freed). */
void mcp_trace_span_end(mcp_span *s);

#endif
