/* Metrics: histograms, the text format, collectors and named counters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* Upper bounds (seconds): a fast tool call to a minute-long one. */
static const double call_bounds[MCP_HIST_N] = {
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60
};

/* The OpenTelemetry semantic conventions' buckets for MCP operation durations. */
const double mcp_hist_semconv[MCP_HIST_N] = {
  0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300
};

void mcp_hist_observe(mcp_hist *h, double s) { mcp_hist_observe_in(h, call_bounds, s); }

void mcp_hist_observe_in(mcp_hist *h, const double *bounds, double s) {
  int i = 0;
  while (i < MCP_HIST_N && s > bounds[i]) i++;
  if (i < MCP_HIST_N) h->counts[i]++;
  h->count++;
  h->sum += s;
}

static void add_number(mcp_buf *b, double v) {
  char num[40];
  int n;
  if (isnan(v)) n = snprintf(num, sizeof num, "NaN");
  else if (isinf(v)) n = snprintf(num, sizeof num, v > 0 ? "+Inf" : "-Inf");
  else if (v == (double)(long long)v && fabs(v) < 9e15) n = snprintf(num, sizeof num, "%lld", (long long)v);
  else
    for (int prec = 6; prec <= 17; prec++) {    /* the shortest text that reads back as v */
      n = snprintf(num, sizeof num, "%.*g", prec, v);
      if (strtod(num, NULL) == v) break;
    }
  mcp_buf_add(b, num, (size_t)n);
}

void mcp_metric_head(mcp_buf *b, const char *name, const char *type, const char *help) {
  mcp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void mcp_metric_sample(mcp_buf *b, const char *name, const char *labels, double v) {
  mcp_buf_add(b, name, strlen(name));
  if (labels != NULL && labels[0] != '\0') {
    mcp_buf_addc(b, '{');
    mcp_buf_add(b, labels, strlen(labels));
    mcp_buf_addc(b, '}');
  }
  mcp_buf_addc(b, ' ');
  add_number(b, v);
  mcp_buf_addc(b, '\n');
}

void mcp_metric_hist(mcp_buf *b, const char *name, const char *labels, const mcp_hist *h) {
  mcp_metric_hist_in(b, name, labels, h, call_bounds);
}

void mcp_metric_hist_in(mcp_buf *b, const char *name, const char *labels, const mcp_hist *h,
                        const double *bounds) {
  int has = labels != NULL && labels[0] != '\0';
  uint64_t cum = 0;
  for (int i = 0; i <= MCP_HIST_N; i++) {
    if (i < MCP_HIST_N) cum += h->counts[i];
    mcp_buf_printf(b, "%s_bucket{%s%sle=\"", name, has ? labels : "", has ? "," : "");
    if (i < MCP_HIST_N) add_number(b, bounds[i]); else mcp_buf_adds(b, "+Inf");
    mcp_buf_adds(b, "\"} ");
    add_number(b, (double)(i < MCP_HIST_N ? cum : h->count));
    mcp_buf_addc(b, '\n');
  }
  mcp_buf_printf(b, "%s_sum%s%s%s ", name, has ? "{" : "", has ? labels : "", has ? "}" : "");
  add_number(b, h->sum);
  mcp_buf_printf(b, "\n%s_count%s%s%s ", name, has ? "{" : "", has ? labels : "", has ? "}" : "");
  add_number(b, (double)h->count);
  mcp_buf_addc(b, '\n');
}

void mcp_metric_label(mcp_buf *b, int comma, const char *key, const char *value) {
  if (comma) mcp_buf_addc(b, ',');
  mcp_buf_add(b, key, strlen(key));
  mcp_buf_adds(b, "=\"");
  for (const char *p = value ? value : ""; *p; p++) {
    if (*p == '\\') mcp_buf_adds(b, "\\\\");
    else if (*p == '"') mcp_buf_adds(b, "\\\"");
    else if (*p == '\n') mcp_buf_adds(b, "\\n");
    else mcp_buf_addc(b, *p);
  }
  mcp_buf_addc(b, '"');
}

/* Collectors and named counters: few, kept for the life of the process. */

typedef struct sample { struct sample *next; char *labels; double v; } sample;
typedef struct family { struct family *next; char *name, *help; sample *samples, **tail; } family;

static struct {
  void (**collect)(mcp_buf *b);
  int ncollect;
  family *families, **tail;
} M = { .tail = &M.families };

void mcp_metrics_collector(void (*collect)(mcp_buf *b)) {
  M.collect = realloc(M.collect, (size_t)(M.ncollect + 1) * sizeof *M.collect);
  if (M.collect == NULL) abort();
  M.collect[M.ncollect++] = collect;
}

static family *family_find(const char *name) {
  for (family *f = M.families; f; f = f->next)
    if (strcmp(f->name, name) == 0) return f;
  return NULL;
}

void mcp_counter_family(const char *name, const char *help) {
  family *f;
  if (family_find(name) != NULL) return;
  if ((f = calloc(1, sizeof *f)) == NULL || (f->name = strdup(name)) == NULL ||
      (f->help = strdup(help)) == NULL)
    abort();
  f->tail = &f->samples;
  *M.tail = f;
  M.tail = &f->next;
}

int mcp_counter_add(const char *name, const char *labels, double v) {
  family *f = family_find(name);
  sample *s;
  if (f == NULL) return -1;
  if (labels == NULL) labels = "";
  for (s = f->samples; s; s = s->next)
    if (strcmp(s->labels, labels) == 0) break;
  if (s == NULL) {                        /* in order of first use */
    if ((s = calloc(1, sizeof *s)) == NULL || (s->labels = strdup(labels)) == NULL) abort();
    *f->tail = s;
    f->tail = &s->next;
  }
  s->v += v;
  return 0;
}

void mcp_metrics_write(mcp_buf *b) {
  for (int i = 0; i < M.ncollect; i++) M.collect[i](b);
  for (family *f = M.families; f; f = f->next) {
    mcp_metric_head(b, f->name, "counter", f->help);
    for (sample *s = f->samples; s; s = s->next) mcp_metric_sample(b, f->name, s->labels, s->v);
  }
}

void mcp_metrics_close(void) {
  while (M.families) {
    family *f = M.families;
    M.families = f->next;
    while (f->samples) {
      sample *s = f->samples;
      f->samples = s->next;
      free(s->labels);
      free(s);
    }
    free(f->name);
    free(f->help);
    free(f);
  }
  M.tail = &M.families;
  free(M.collect);
  M.collect = NULL;
  M.ncollect = 0;
}
