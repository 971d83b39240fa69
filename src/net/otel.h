/* The trace exporter: OTLP over HTTP (http/protobuf or http/json) to a
 * collector, configured by the standard OTEL_* variables or otel = {...}
 * in --config. Spans wait in a bounded queue and leave in batches, every
 * schedule delay or when a batch is full, over libcurl's multi interface
 * driven by the loop; one export at a time, so a collector that is down,
 * slow or refusing costs a full queue (spans dropped and counted), never
 * a stall. */
#ifndef MCP_OTEL_H
#define MCP_OTEL_H

#include <uv.h>

/* The file's values (otel = {...}); NULL where it gives none, then the
 * OTEL_* variable's. */
typedef struct {
  const char *endpoint, *traces_endpoint, *protocol, *headers, *service_name, *resource_attributes;
  const char *sampler, *sampler_arg, *schedule_delay, *max_queue_size, *export_timeout;
  const char *db_statement;
} mcp_otel_opts;

/* Start exporting when an endpoint is configured (else nothing: tracing
 * stays off). 0, or -1 with the error logged (a bad value). */
int mcp_otel_init(uv_loop_t *loop, const mcp_otel_opts *o);
/* At shutdown, before mcp_otel_close: done() once the export in flight
 * has its answer (at once when none is; two seconds at most, which the
 * last exports share). */
void mcp_otel_flush(void (*done)(void));
/* Send what is queued (blocking exports, two seconds at most) and stop. */
void mcp_otel_close(void);

#endif
