/* The spans of what handlers do (spans.c): CLIENT spans for ctx:http,
 * SQLite statements and child processes, and mcp.core's span_begin (ctx:span) and traceparent. */
#ifndef MCP_SPANS_H
#define MCP_SPANS_H

#include <curl/curl.h>
#include <lua.h>

#include "span.h"

/* An HTTP request's CLIENT span s (named by its method) gets its
 * attributes, and the request's headers a traceparent (and tracestate)
 * naming it unless they have one: the headers to send. */
struct curl_slist *mcp_span_http_begin(mcp_span *s, const char *url, struct curl_slist *headers);
/* Its end: the status (0: none), failure ("timeout", "connect", "io"; NULL:
 * none) and curl's message. */
void mcp_span_http_end(mcp_span *s, long status, const char *failure, const char *message);
typedef struct mcp_op mcp_op;
/* An SQL statement's CLIENT span, named by its first keyword (SELECT):
 * db.system.name sqlite, the file, and the text when opted in
 * (otel.db_statement); its end with SQLite's result code (0: ok). */
void mcp_span_sql(mcp_op *op, const char *sql, size_t len, const char *path);
void mcp_span_sql_end(mcp_op *op, int rc);
/* A child process's CLIENT span (named by the program), its exit. */
void mcp_span_process(mcp_op *op, const char *name, int pid);
void mcp_span_process_end(mcp_op *op, long long code, int signal);
/* stack: core -> core. span_begin, traceparent, mono and client_duration. */
void mcp_spans_open(lua_State *L);

#endif
