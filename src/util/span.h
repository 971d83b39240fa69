/* Trace spans, the model the OTLP encoder writes (otlp.c): ids, parent,
 * kind, name, times, attributes, events, status; W3C trace-context
 * (traceparent, tracestate) read and written; the samplers of
 * OTEL_TRACES_SAMPLER. No loop, no Lua: whoever starts a span owns it until
 * it hands it to the exporter (src/net/otel.c), which frees it. One thread
 * (the loop's): freed spans are kept for the next ones (mcp_span_spare_free). */
#ifndef MCP_SPAN_H
#define MCP_SPAN_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MCP_SPAN_INTERNAL = 1, MCP_SPAN_SERVER = 2, MCP_SPAN_CLIENT = 3 } mcp_span_kind;
typedef enum { MCP_STATUS_UNSET = 0, MCP_STATUS_OK = 1, MCP_STATUS_ERROR = 2 } mcp_span_status;
typedef enum { MCP_ATTR_STR, MCP_ATTR_INT, MCP_ATTR_BOOL, MCP_ATTR_DOUBLE } mcp_attr_type;

/* Past these, attributes and events are dropped and counted (the SDKs'
 * OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT and OTEL_SPAN_EVENT_COUNT_LIMIT defaults). */
#define MCP_SPAN_MAX_ATTRS 128
#define MCP_SPAN_MAX_EVENTS 128
#define MCP_TRACESTATE_MAX 512

typedef struct {
  const char *key;
  unsigned own_key : 1, own_value : 1;     /* the key, a string value: copies (freed with it) */
  mcp_attr_type type;
  union { char *s; long long i; double d; int b; } v;
} mcp_attr;

typedef struct {
  mcp_attr *v;
  int n, cap;
  unsigned dropped;
  unsigned fixed : 1;          /* v is a span's own slots, not malloc'd */
  unsigned owns : 1;           /* some key or value of v is malloc'd */
  char *pool, *pool_end;       /* a span's room for short copies (keys, values), else NULL */
} mcp_attrs;

typedef struct {
  char *name;
  uint64_t time_ns;            /* Unix epoch */
  mcp_attrs attrs;
} mcp_span_event;

/* A span's context, as it travels (traceparent and tracestate). */
typedef struct {
  uint8_t trace_id[16], span_id[8];
  uint8_t flags;               /* bit 0: sampled */
  char tracestate[MCP_TRACESTATE_MAX + 1];   /* "" when none */
} mcp_span_ctx;

/* A span's first attributes and short strings (its name, the attributes'
 * copies) live in the span: a call's span is one allocation. */
#define MCP_SPAN_SLOTS 10
#define MCP_SPAN_POOL 192

/* Owned by whoever started it, then by the exporter (mcp_span_free). */
typedef struct mcp_span {
  uint8_t trace_id[16], span_id[8], parent_id[8];
  unsigned has_parent : 1;
  unsigned sampled : 1;        /* recorded and exported; an unsampled span only carries ids */
  unsigned remote_parent : 1;
  unsigned own_name : 1, own_status_msg : 1, own_tracestate : 1;   /* malloc'd, else in pool */
  uint8_t kind, status;
  char *name, *status_msg, *tracestate;
  uint64_t start_ns, end_ns;   /* Unix epoch */
  mcp_attrs attrs;
  mcp_span_event *events;
  int nevents, capevents;
  unsigned dropped_events;
  struct mcp_span *next;       /* the exporter's queue */
  /* trace.c's, while a call runs: a SERVER span's innermost open plugin
   * span (ctx:span), and each of those the span it opened in. */
  struct mcp_span *inner, *up;
  mcp_attr slots[MCP_SPAN_SLOTS];   /* attrs.v until it grows past them */
  char pool[MCP_SPAN_POOL];         /* attrs.pool */
} mcp_span;

/* Every sampled span as it ends, while set (the console's traces); NULL: none. */
extern void (*mcp_span_tap)(const struct mcp_span *s);
/* Unix time in nanoseconds (CLOCK_REALTIME). */
uint64_t mcp_span_now(void);
typedef struct mcp_sampler mcp_sampler;
/* A span starting now: a child of parent (NULL: a new trace), sampled as
 * sampler decides (NULL: as its parent is; a root is). The ids are random
 * (crypto.c). */
mcp_span *mcp_span_start(mcp_span_kind kind, const char *name, const mcp_span_ctx *parent,
                         const mcp_sampler *sampler);
void mcp_span_rename(mcp_span *s, const char *name);
void mcp_span_end(mcp_span *s);                         /* sets end_ns once */
void mcp_span_set_status(mcp_span *s, mcp_span_status st, const char *msg);
void mcp_span_free(mcp_span *s);
/* Free the spans kept for reuse (at exit). */
void mcp_span_spare_free(void);
/* s's own context (for its children and for traceparent). */
void mcp_span_context(const mcp_span *s, mcp_span_ctx *out);

/* Attributes (a span's or an event's); a key set again replaces its value.
 * Nothing is kept on an unsampled span (the callers test s->sampled). */
void mcp_attr_str(mcp_attrs *a, const char *key, const char *v);
void mcp_attr_strn(mcp_attrs *a, const char *key, const char *v, size_t len);
void mcp_attr_int(mcp_attrs *a, const char *key, long long v);
void mcp_attr_bool(mcp_attrs *a, const char *key, int v);
void mcp_attr_double(mcp_attrs *a, const char *key, double v);
const mcp_attr *mcp_attr_find(const mcp_attrs *a, const char *key);
/* A new key (not set before) with a string value, both borrowed: literals,
 * interned names, anything that outlives the span. No copy, no search. */
void mcp_attr_static(mcp_attrs *a, const char *key, const char *v);
/* A new key, borrowed, with a copy of v's len bytes. No search. */
void mcp_attr_static_strn(mcp_attrs *a, const char *key, const char *v, size_t len);
void mcp_attrs_free(mcp_attrs *a);
/* A new event on s, now; its attributes to fill (NULL past the limit). */
mcp_attrs *mcp_span_event_add(mcp_span *s, const char *name);

/* W3C trace-context. traceparent: "00-<32 hex>-<16 hex>-<2 hex>", lowercase,
 * ids not all zero, version not ff; a later version may add "-..." after
 * the flags. 0, or -1 when it is not one. */
int mcp_traceparent_parse(const char *v, size_t len, mcp_span_ctx *out);
/* out: 56 bytes (55 and the NUL). */
void mcp_traceparent_format(const mcp_span_ctx *c, char out[56]);
/* tracestate is kept when it is at most MCP_TRACESTATE_MAX bytes of
 * list members (key=value, comma separated, printable ASCII); 0 or -1. */
int mcp_tracestate_check(const char *v, size_t len);
/* Lowercase hex of n bytes into out (2n + 1 bytes). */
void mcp_hex(const uint8_t *p, size_t n, char *out);

/* OTEL_TRACES_SAMPLER. */
typedef enum {
  MCP_SAMPLER_ALWAYS_ON, MCP_SAMPLER_ALWAYS_OFF, MCP_SAMPLER_RATIO,
  MCP_SAMPLER_PB_ALWAYS_ON, MCP_SAMPLER_PB_ALWAYS_OFF, MCP_SAMPLER_PB_RATIO
} mcp_sampler_kind;

struct mcp_sampler {
  mcp_sampler_kind kind;
  double ratio;                /* traceidratio's argument, [0, 1] */
};

/* The sampler of name ("parentbased_always_on") and arg (NULL: 1.0): 0, or -1. */
int mcp_sampler_parse(mcp_sampler *s, const char *name, const char *arg);
/* Sample a span of trace_id with parent (NULL: a root)? 1 or 0. */
int mcp_sampler_decide(const mcp_sampler *s, const uint8_t trace_id[16], const mcp_span_ctx *parent);

#endif
