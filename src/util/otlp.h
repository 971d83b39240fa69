/* Spans as an OTLP ExportTraceServiceRequest (opentelemetry-proto,
 * collector/trace/v1): protobuf for http/protobuf, written by hand (a few
 * messages, no generated code), and the OTLP JSON mapping for http/json
 * (ids as hex, enums as numbers, 64-bit integers as strings). */
#ifndef MCP_OTLP_H
#define MCP_OTLP_H

#include "buf.h"
#include "span.h"

/* One resource (service.name and the rest) and the instrumentation scope
 * every span is under. */
typedef struct {
  const mcp_attrs *resource;
  const char *scope, *version;
} mcp_otlp_source;

/* The first n spans of the list at spans (linked by next), appended to b. */
void mcp_otlp_proto(mcp_buf *b, const mcp_otlp_source *src, const mcp_span *spans, int n);
void mcp_otlp_json(mcp_buf *b, const mcp_otlp_source *src, const mcp_span *spans, int n);

#endif
