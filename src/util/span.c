/* Trace spans, W3C trace-context and the samplers (span.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "span.h"

static void *xrealloc(void *p, size_t n) {
  if ((p = realloc(p, n)) == NULL) abort();
  return p;
}

void (*mcp_span_tap)(const struct mcp_span *s);

uint64_t mcp_span_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

/* Ids need to be unique, not secret (W3C trace-context: random), and one
 * RAND_bytes costs 7,000 instructions, a sixth of an echo call: xoshiro256**,
 * seeded once from OpenSSL's CSPRNG. */
static uint64_t rng[4];

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next64(void) {
  uint64_t r, t;
  if ((rng[0] | rng[1] | rng[2] | rng[3]) == 0 && mcp_random(rng, sizeof rng) != 0) abort();
  r = rotl(rng[1] * 5, 7) * 9;
  t = rng[1] << 17;
  rng[2] ^= rng[0];
  rng[3] ^= rng[1];
  rng[1] ^= rng[2];
  rng[0] ^= rng[3];
  rng[2] ^= t;
  rng[3] = rotl(rng[3], 45);
  return r;
}

/* n (8 or 16) random bytes, never all zero (an invalid id). */
static void random_id(uint8_t *p, size_t n) {
  uint64_t any;
  do {
    any = 0;
    for (size_t i = 0; i < n; i += 8) {
      uint64_t v = next64();
      memcpy(p + i, &v, 8);
      any |= v;
    }
  } while (any == 0);
}

/* n bytes of p and a NUL: in a's pool when they fit (*own = 0: freed with
 * the span), else malloc'd (*own = 1). */
static char *copy(mcp_attrs *a, const char *p, size_t n, int *own) {
  char *d;
  if (a->pool && (size_t)(a->pool_end - a->pool) > n) {
    d = a->pool;
    a->pool += n + 1;
    *own = 0;
  } else {
    d = xrealloc(NULL, n + 1);
    *own = 1;
  }
  memcpy(d, p, n);
  d[n] = '\0';
  return d;
}

/* Freed spans, kept for the next ones, so that a traced call allocates
 * nothing in the steady state: at most 2048 (the SDKs' default queue; a
 * burst past it allocates), about 1.2 MB. */
#define SPARE_MAX 2048
static struct {
  mcp_span *head;
  int n;
} spare;

static mcp_span *span_new(void) {
  mcp_span *s = spare.head;
  if (s) {
    spare.head = s->next;
    spare.n--;
  } else if ((s = malloc(sizeof *s)) == NULL) {
    abort();
  }
  memset(s, 0, offsetof(mcp_span, slots));
  s->attrs.v = s->slots;
  s->attrs.cap = MCP_SPAN_SLOTS;
  s->attrs.fixed = 1;
  s->attrs.pool = s->pool;
  s->attrs.pool_end = s->pool + sizeof s->pool;
  return s;
}

void mcp_span_spare_free(void) {
  while (spare.head) {
    mcp_span *s = spare.head;
    spare.head = s->next;
    free(s);
  }
  spare.n = 0;
}

mcp_span *mcp_span_start(mcp_span_kind kind, const char *name, const mcp_span_ctx *parent,
                         const mcp_sampler *sampler) {
  mcp_span *s = span_new();
  int own;
  s->kind = (uint8_t)kind;
  if (parent) {
    memcpy(s->trace_id, parent->trace_id, 16);
    memcpy(s->parent_id, parent->span_id, 8);
    s->has_parent = 1;
    if (parent->tracestate[0]) {
      s->tracestate = copy(&s->attrs, parent->tracestate, strlen(parent->tracestate), &own);
      s->own_tracestate = (unsigned)own;
    }
  } else {
    random_id(s->trace_id, 16);
  }
  random_id(s->span_id, 8);
  s->sampled = sampler ? mcp_sampler_decide(sampler, s->trace_id, parent) : parent ? parent->flags & 1 : 1;
  s->name = copy(&s->attrs, name, strlen(name), &own);
  s->own_name = (unsigned)own;
  s->start_ns = mcp_span_now();
  return s;
}

void mcp_span_rename(mcp_span *s, const char *name) {
  int own;
  if (s->own_name) free(s->name);
  s->name = copy(&s->attrs, name, strlen(name), &own);
  s->own_name = (unsigned)own;
}

void mcp_span_end(mcp_span *s) {
  if (s->end_ns == 0) s->end_ns = mcp_span_now();
}

void mcp_span_set_status(mcp_span *s, mcp_span_status st, const char *msg) {
  int own = 0;
  s->status = (uint8_t)st;
  if (s->own_status_msg) free(s->status_msg);
  s->status_msg = msg ? copy(&s->attrs, msg, strlen(msg), &own) : NULL;
  s->own_status_msg = (unsigned)own;
}

void mcp_span_context(const mcp_span *s, mcp_span_ctx *out) {
  memcpy(out->trace_id, s->trace_id, 16);
  memcpy(out->span_id, s->span_id, 8);
  out->flags = s->sampled ? 1 : 0;
  out->tracestate[0] = '\0';
  if (s->tracestate) strcpy(out->tracestate, s->tracestate);   /* checked at most MAX long */
}

void mcp_attrs_free(mcp_attrs *a) {
  for (int i = 0; a->owns && i < a->n; i++) {
    if (a->v[i].own_key) free((char *)a->v[i].key);
    if (a->v[i].type == MCP_ATTR_STR && a->v[i].own_value) free(a->v[i].v.s);
  }
  if (!a->fixed) free(a->v);
  memset(a, 0, sizeof *a);
}

void mcp_span_free(mcp_span *s) {
  if (s == NULL) return;
  mcp_attrs_free(&s->attrs);
  for (int i = 0; i < s->nevents; i++) {
    free(s->events[i].name);
    mcp_attrs_free(&s->events[i].attrs);
  }
  free(s->events);
  if (s->own_name) free(s->name);
  if (s->own_status_msg) free(s->status_msg);
  if (s->own_tracestate) free(s->tracestate);
  if (spare.n >= SPARE_MAX) {
    free(s);
    return;
  }
  s->next = spare.head;
  spare.head = s;
  spare.n++;
}

/* Room for one more attribute: a's slots doubled (a span's first ones are
 * its own: copied out of it). */
static void grow(mcp_attrs *a) {
  int cap = a->cap ? 2 * a->cap : 12;
  if (a->fixed) {
    mcp_attr *v = xrealloc(NULL, (size_t)cap * sizeof *v);
    memcpy(v, a->v, (size_t)a->n * sizeof *v);
    a->v = v;
    a->fixed = 0;
  } else {
    a->v = xrealloc(a->v, (size_t)cap * sizeof *a->v);
  }
  a->cap = cap;
}

/* A new slot, its key and value unset; NULL past the limit. */
static inline mcp_attr *new_slot(mcp_attrs *a) {
  if (a->n >= MCP_SPAN_MAX_ATTRS) {
    a->dropped++;
    return NULL;
  }
  if (a->n == a->cap) grow(a);
  return &a->v[a->n++];
}

/* A new slot for key (borrowed: static or outliving a, else copied). */
static mcp_attr *append(mcp_attrs *a, const char *key, int borrowed) {
  mcp_attr *x = new_slot(a);
  int own = 0;
  if (x == NULL) return NULL;
  x->key = borrowed ? key : copy(a, key, strlen(key), &own);
  x->own_key = (unsigned)own;
  x->own_value = 0;
  a->owns |= (unsigned)own;
  return x;
}

/* The slot of key (its old value freed), or a new one. */
static mcp_attr *slot(mcp_attrs *a, const char *key) {
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->v[i].key, key) == 0) {
      if (a->v[i].type == MCP_ATTR_STR && a->v[i].own_value) free(a->v[i].v.s);
      a->v[i].own_value = 0;
      return &a->v[i];
    }
  return append(a, key, 0);
}

void mcp_attr_static(mcp_attrs *a, const char *key, const char *v) {
  mcp_attr *x = new_slot(a);
  if (x) *x = (mcp_attr){ .key = key, .type = MCP_ATTR_STR, .v.s = (char *)v };
}

const mcp_attr *mcp_attr_find(const mcp_attrs *a, const char *key) {
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->v[i].key, key) == 0) return &a->v[i];
  return NULL;
}

static void set_copy(mcp_attrs *a, mcp_attr *x, const char *v, size_t len) {
  int own;
  x->type = MCP_ATTR_STR;
  x->v.s = copy(a, v, len, &own);
  x->own_value = (unsigned)own;
  a->owns |= (unsigned)own;
}

void mcp_attr_static_strn(mcp_attrs *a, const char *key, const char *v, size_t len) {
  mcp_attr *x = append(a, key, 1);
  if (x) set_copy(a, x, v, len);
}

void mcp_attr_strn(mcp_attrs *a, const char *key, const char *v, size_t len) {
  mcp_attr *x = slot(a, key);
  if (x) set_copy(a, x, v, len);
}

void mcp_attr_str(mcp_attrs *a, const char *key, const char *v) {
  mcp_attr_strn(a, key, v, strlen(v));
}

void mcp_attr_int(mcp_attrs *a, const char *key, long long v) {
  mcp_attr *x = slot(a, key);
  if (x == NULL) return;
  x->type = MCP_ATTR_INT;
  x->v.i = v;
}

void mcp_attr_bool(mcp_attrs *a, const char *key, int v) {
  mcp_attr *x = slot(a, key);
  if (x == NULL) return;
  x->type = MCP_ATTR_BOOL;
  x->v.b = v != 0;
}

void mcp_attr_double(mcp_attrs *a, const char *key, double v) {
  mcp_attr *x = slot(a, key);
  if (x == NULL) return;
  x->type = MCP_ATTR_DOUBLE;
  x->v.d = v;
}

mcp_attrs *mcp_span_event_add(mcp_span *s, const char *name) {
  mcp_span_event *e;
  if (s->nevents >= MCP_SPAN_MAX_EVENTS) {
    s->dropped_events++;
    return NULL;
  }
  if (s->nevents == s->capevents) {
    s->capevents = s->capevents ? 2 * s->capevents : 4;
    s->events = xrealloc(s->events, (size_t)s->capevents * sizeof *s->events);
  }
  e = &s->events[s->nevents++];
  memset(e, 0, sizeof *e);
  e->name = strdup(name);
  e->time_ns = mcp_span_now();
  return &e->attrs;
}

/* Trace-context. */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;                       /* uppercase is not allowed */
}

static int unhex(const char *v, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int hi = hexval(v[2 * i]), lo = hexval(v[2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

void mcp_hex(const uint8_t *p, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * n] = '\0';
}

int mcp_traceparent_parse(const char *v, size_t len, mcp_span_ctx *out) {
  uint8_t version;
  if (len < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return -1;
  if (unhex(v, &version, 1) != 0 || version == 0xff) return -1;
  if (version == 0 && len != 55) return -1;
  if (version > 0 && len > 55 && v[55] != '-') return -1;
  if (unhex(v + 3, out->trace_id, 16) != 0 || unhex(v + 36, out->span_id, 8) != 0 ||
      unhex(v + 53, &out->flags, 1) != 0)
    return -1;
  if (all_zero(out->trace_id, 16) || all_zero(out->span_id, 8)) return -1;
  out->tracestate[0] = '\0';
  return 0;
}

void mcp_traceparent_format(const mcp_span_ctx *c, char out[56]) {
  memcpy(out, "00-", 3);
  mcp_hex(c->trace_id, 16, out + 3);
  out[35] = '-';
  mcp_hex(c->span_id, 8, out + 36);
  out[52] = '-';
  mcp_hex(&c->flags, 1, out + 53);
}

int mcp_tracestate_check(const char *v, size_t len) {
  if (len == 0 || len > MCP_TRACESTATE_MAX) return -1;
  for (size_t i = 0; i < len; i++)
    if (v[i] < 0x20 || v[i] > 0x7e) return -1;
  return memchr(v, '=', len) ? 0 : -1;
}

/* Samplers. */

static const struct { const char *name; mcp_sampler_kind kind; } samplers[] = {
  { "always_on", MCP_SAMPLER_ALWAYS_ON },
  { "always_off", MCP_SAMPLER_ALWAYS_OFF },
  { "traceidratio", MCP_SAMPLER_RATIO },
  { "parentbased_always_on", MCP_SAMPLER_PB_ALWAYS_ON },
  { "parentbased_always_off", MCP_SAMPLER_PB_ALWAYS_OFF },
  { "parentbased_traceidratio", MCP_SAMPLER_PB_RATIO },
};

int mcp_sampler_parse(mcp_sampler *s, const char *name, const char *arg) {
  char *end;
  s->ratio = 1.0;
  if (arg != NULL && *arg != '\0') {
    s->ratio = strtod(arg, &end);
    if (*end != '\0' || !(s->ratio >= 0 && s->ratio <= 1)) return -1;
  }
  for (size_t i = 0; i < sizeof samplers / sizeof samplers[0]; i++)
    if (strcmp(name, samplers[i].name) == 0) {
      s->kind = samplers[i].kind;
      return 0;
    }
  return -1;
}

/* The trace id's last 8 bytes as a number below 2^63, against ratio * 2^63
 * (the SDKs' TraceIdRatioBased: the same trace is kept everywhere). */
static int ratio_keeps(double ratio, const uint8_t id[16]) {
  uint64_t x = 0;
  for (int i = 8; i < 16; i++) x = x << 8 | id[i];
  x >>= 1;
  return (double)x < ratio * 9223372036854775808.0;
}

int mcp_sampler_decide(const mcp_sampler *s, const uint8_t trace_id[16], const mcp_span_ctx *parent) {
  mcp_sampler_kind k = s->kind;
  if (k >= MCP_SAMPLER_PB_ALWAYS_ON) {
    if (parent) return parent->flags & 1;
    k = k == MCP_SAMPLER_PB_ALWAYS_ON ? MCP_SAMPLER_ALWAYS_ON
      : k == MCP_SAMPLER_PB_ALWAYS_OFF ? MCP_SAMPLER_ALWAYS_OFF : MCP_SAMPLER_RATIO;
  }
  if (k == MCP_SAMPLER_ALWAYS_ON) return 1;
  if (k == MCP_SAMPLER_ALWAYS_OFF) return 0;
  return ratio_keeps(s->ratio, trace_id);
}
