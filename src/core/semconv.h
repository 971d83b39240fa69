/* The OpenTelemetry semantic conventions' MCP metrics in /metrics:
 * mcp.server.operation.duration and mcp.client.operation.duration as the
 * histograms mcp_server_operation_duration_seconds and
 * mcp_client_operation_duration_seconds (labels mcp_method_name,
 * gen_ai_tool_name, error_type; the conventions' buckets). */
#ifndef MCP_SEMCONV_H
#define MCP_SEMCONV_H

/* Register the collector and the row that observes every finished call. */
void mcp_semconv_init(void);
/* An upstream MCP request took seconds (tool: its tool or NULL; error_type
 * NULL when it succeeded). */
void mcp_semconv_client(const char *method, const char *tool, const char *error_type, double seconds);
void mcp_semconv_close(void);

#endif
