/* Metrics in the Prometheus text exposition format (0.0.4). Each module
 * keeps its own numbers in its own structs (plain counters on the hot
 * path) and registers a collector that writes them when /metrics is
 * scraped: nothing is formatted before that. Rare events (a reload, an
 * outbound request) count through mcp_counter_add, by name and labels. */
#ifndef MCP_METRICS_H
#define MCP_METRICS_H

#include <stdint.h>

#include "buf.h"

/* A histogram of durations in seconds, over fixed buckets. */
#define MCP_HIST_N 14
typedef struct {
  uint64_t counts[MCP_HIST_N];     /* per bucket, not cumulative */
  uint64_t count;
  double sum;
} mcp_hist;

void mcp_hist_observe(mcp_hist *h, double seconds);
/* The same over other upper bounds (MCP_HIST_N of them): mcp_hist_semconv,
 * the semantic conventions' buckets for mcp.*.operation.duration. */
extern const double mcp_hist_semconv[MCP_HIST_N];
void mcp_hist_observe_in(mcp_hist *h, const double *bounds, double seconds);

/* Writers, for collectors. labels: `a="x",b="y"` already escaped, or NULL. */
void mcp_metric_head(mcp_buf *b, const char *name, const char *type, const char *help);
void mcp_metric_sample(mcp_buf *b, const char *name, const char *labels, double v);
void mcp_metric_hist(mcp_buf *b, const char *name, const char *labels, const mcp_hist *h);
void mcp_metric_hist_in(mcp_buf *b, const char *name, const char *labels, const mcp_hist *h,
                        const double *bounds);
/* key="value", the value escaped (\\, \", \n); a comma first when b's last
 * byte is not '{' and b is not empty of labels (comma: 1 to add one). */
void mcp_metric_label(mcp_buf *b, int comma, const char *key, const char *value);

/* A collector runs on every scrape, in the order registered. */
void mcp_metrics_collector(void (*collect)(mcp_buf *b));
/* A counter family of mcp_counter_add. Its samples are written with it;
 * zeros may be created by adding 0. */
void mcp_counter_family(const char *name, const char *help);
/* Add v to the sample of family name with these labels (as in
 * mcp_metric_sample). 0, or -1 for a family never declared. */
int mcp_counter_add(const char *name, const char *labels, double v);
/* The whole exposition, appended to b. */
void mcp_metrics_write(mcp_buf *b);
void mcp_metrics_close(void);

#endif
