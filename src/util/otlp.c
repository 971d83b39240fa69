/* OTLP ExportTraceServiceRequest, protobuf and JSON (otlp.h). The field
 * numbers are opentelemetry-proto's: collector/trace/v1/trace_service.proto,
 * trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "otlp.h"

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static inline void put_varint(mcp_buf *b, uint64_t v) {
  while (v >= 0x80) {
    mcp_buf_addc(b, (char)(v | 0x80));
    v >>= 7;
  }
  mcp_buf_addc(b, (char)v);
}

static inline void put_tag(mcp_buf *b, int field, int wt) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wt); }

static void put_fixed(mcp_buf *b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) mcp_buf_addc(b, (char)(v >> (8 * i)));
}

static void put_bytes(mcp_buf *b, int field, const void *p, size_t n) {
  put_tag(b, field, WT_LEN);
  put_varint(b, n);
  mcp_buf_add(b, p, n);
}

static void put_str(mcp_buf *b, int field, const char *s) {
  if (s && *s) put_bytes(b, field, s, strlen(s));
}

/* A nested message: its tag and room bytes for its length (as many as it
 * will likely need), filled in by msg_end, which moves the message when
 * its length needs more or fewer (a varint has no padding). */
static size_t msg_begin(mcp_buf *b, int field, size_t room) {
  put_tag(b, field, WT_LEN);
  if (b->cap - b->len < room) mcp_buf_grow(b, room);
  b->len += room;
  return b->len;
}

static void msg_end(mcp_buf *b, size_t at, size_t room) {
  size_t n = b->len - at, k = 0;
  char len[10];
  uint64_t v = n;
  while (v >= 0x80) {
    len[k++] = (char)(v | 0x80);
    v >>= 7;
  }
  len[k++] = (char)v;
  if (k != room) {
    if (k > room && b->cap - b->len < k - room) mcp_buf_grow(b, k - room);
    memmove(b->data + at + k - room, b->data + at, n);
    b->len = b->len + k - room;
  }
  memcpy(b->data + at - room, len, k);
}

/* Writers into room made beforehand (room): no check per byte. */

static char *room(mcp_buf *b, size_t n) {
  if (b->cap - b->len < n) mcp_buf_grow(b, n);
  return b->data + b->len;
}

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

static char *w_varint(char *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (char)v;
  return p;
}

/* Fields numbered below 16: a one-byte tag. */
static char *w_bytes(char *p, int field, const void *s, size_t n) {
  *p++ = (char)(field << 3 | WT_LEN);
  p = w_varint(p, n);
  memcpy(p, s, n);
  return p + n;
}

/* A fixed64 or fixed32, little-endian. */
static char *w_le(char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) *p++ = (char)(v >> (8 * i));
  return p;
}

/* One KeyValue, its sizes counted first: written in one go, without
 * msg_begin/msg_end (a span has several; each would be two messages). */
static void pb_attr(mcp_buf *b, int field, const mcp_attr *x) {
  size_t kl = strlen(x->key), sl = 0, any, kv;
  char *p;
  switch (x->type) {
  case MCP_ATTR_STR: sl = strlen(x->v.s); any = 1 + varint_len(sl) + sl; break;
  case MCP_ATTR_BOOL: any = 2; break;
  case MCP_ATTR_INT: any = 1 + varint_len((uint64_t)x->v.i); break;
  default: any = 9; break;
  }
  kv = (kl ? 1 + varint_len(kl) + kl : 0) + 1 + varint_len(any) + any;
  p = room(b, kv + 11);
  *p++ = (char)(field << 3 | WT_LEN);
  p = w_varint(p, kv);
  if (kl) p = w_bytes(p, 1, x->key, kl);
  *p++ = 2 << 3 | WT_LEN;                       /* AnyValue */
  p = w_varint(p, any);
  switch (x->type) {
  case MCP_ATTR_STR: p = w_bytes(p, 1, x->v.s, sl); break;
  case MCP_ATTR_BOOL: *p++ = 2 << 3 | WT_VARINT; *p++ = (char)(x->v.b != 0); break;
  case MCP_ATTR_INT: *p++ = 3 << 3 | WT_VARINT; p = w_varint(p, (uint64_t)x->v.i); break;
  case MCP_ATTR_DOUBLE: {
    uint64_t bits;
    memcpy(&bits, &x->v.d, 8);
    *p++ = 4 << 3 | WT_I64;
    p = w_le(p, bits, 8);
    break;
  }
  }
  b->len = (size_t)(p - b->data);
}

static void pb_attrs(mcp_buf *b, int field, const mcp_attrs *a) {
  for (int i = 0; i < a->n; i++) pb_attr(b, field, &a->v[i]);
}

static void pb_uint(mcp_buf *b, int field, uint64_t v) {
  if (v == 0) return;
  put_tag(b, field, WT_VARINT);
  put_varint(b, v);
}

static void pb_span(mcp_buf *b, const mcp_span *s) {
  size_t name = strlen(s->name), ts = s->tracestate ? strlen(s->tracestate) : 0, st;
  size_t at = msg_begin(b, 2, 2);               /* ScopeSpans.spans: most take 128 B to 16 KB */
  char *p = room(b, 80 + name + ts);            /* the fields up to the attributes: at most that */
  p = w_bytes(p, 1, s->trace_id, 16);
  p = w_bytes(p, 2, s->span_id, 8);
  if (ts) p = w_bytes(p, 3, s->tracestate, ts);
  if (s->has_parent) p = w_bytes(p, 4, s->parent_id, 8);
  if (name) p = w_bytes(p, 5, s->name, name);
  if (s->kind) *p++ = 6 << 3 | WT_VARINT, *p++ = (char)s->kind;
  *p++ = 7 << 3 | WT_I64;
  p = w_le(p, s->start_ns, 8);
  *p++ = 8 << 3 | WT_I64;
  p = w_le(p, s->end_ns, 8);
  b->len = (size_t)(p - b->data);
  pb_attrs(b, 9, &s->attrs);
  pb_uint(b, 10, s->attrs.dropped);
  for (int i = 0; i < s->nevents; i++) {
    const mcp_span_event *e = &s->events[i];
    size_t ev = msg_begin(b, 11, 1);
    put_tag(b, 1, WT_I64);
    put_fixed(b, e->time_ns, 8);
    put_str(b, 2, e->name);
    pb_attrs(b, 3, &e->attrs);
    pb_uint(b, 4, e->attrs.dropped);
    msg_end(b, ev, 1);
  }
  pb_uint(b, 12, s->dropped_events);
  if (s->status != MCP_STATUS_UNSET) {
    st = msg_begin(b, 15, 1);
    put_str(b, 2, s->status_msg);
    pb_uint(b, 3, s->status);
    msg_end(b, st, 1);
  }
  /* flags: the W3C trace flags, and bits 8-9 say whether the parent is remote */
  p = w_varint(room(b, 6), 16 << 3 | WT_I32);
  p = w_le(p, (s->sampled ? 1u : 0u) | 0x100u | (s->remote_parent ? 0x200u : 0u), 4);
  b->len = (size_t)(p - b->data);
  msg_end(b, at, 2);
}

void mcp_otlp_proto(mcp_buf *b, const mcp_otlp_source *src, const mcp_span *spans, int n) {
  /* a batch's lengths take 3 bytes (16 KB to 2 MB) */
  size_t rs = msg_begin(b, 1, 3), res, ss, scope;  /* ExportTraceServiceRequest.resource_spans */
  res = msg_begin(b, 1, 1);                        /* ResourceSpans.resource */
  pb_attrs(b, 1, src->resource);
  msg_end(b, res, 1);
  ss = msg_begin(b, 2, 3);                         /* ResourceSpans.scope_spans */
  scope = msg_begin(b, 1, 1);                      /* InstrumentationScope */
  put_str(b, 1, src->scope);
  put_str(b, 2, src->version);
  msg_end(b, scope, 1);
  for (int i = 0; i < n && spans; i++, spans = spans->next) pb_span(b, spans);
  msg_end(b, ss, 3);
  msg_end(b, rs, 3);
}

/* JSON. */

static void js_str(mcp_buf *b, const char *s) { mcp_json_add_string(b, s, strlen(s)); }

static void js_hex(mcp_buf *b, const uint8_t *p, size_t n) {
  char hex[33];
  mcp_hex(p, n, hex);
  mcp_buf_addc(b, '"');
  mcp_buf_add(b, hex, 2 * n);
  mcp_buf_addc(b, '"');
}

static void js_u64(mcp_buf *b, uint64_t v) {
  char text[24];
  int n = snprintf(text, sizeof text, "\"%llu\"", (unsigned long long)v);
  mcp_buf_add(b, text, (size_t)n);
}

static void js_attrs(mcp_buf *b, const mcp_attrs *a) {
  mcp_buf_adds(b, "\"attributes\":[");
  for (int i = 0; i < a->n; i++) {
    const mcp_attr *x = &a->v[i];
    if (i) mcp_buf_addc(b, ',');
    mcp_buf_adds(b, "{\"key\":");
    js_str(b, x->key);
    mcp_buf_adds(b, ",\"value\":{");
    switch (x->type) {
    case MCP_ATTR_STR: mcp_buf_adds(b, "\"stringValue\":"); js_str(b, x->v.s); break;
    case MCP_ATTR_BOOL: mcp_buf_printf(b, "\"boolValue\":%s", x->v.b ? "true" : "false"); break;
    case MCP_ATTR_INT: mcp_buf_printf(b, "\"intValue\":\"%lld\"", x->v.i); break;
    case MCP_ATTR_DOUBLE:
      if (isfinite(x->v.d)) mcp_buf_printf(b, "\"doubleValue\":%.17g", x->v.d);
      else mcp_buf_printf(b, "\"doubleValue\":\"%s\"", isnan(x->v.d) ? "NaN" : x->v.d > 0 ? "Infinity" : "-Infinity");
      break;
    }
    mcp_buf_adds(b, "}}");
  }
  mcp_buf_addc(b, ']');
  if (a->dropped) mcp_buf_printf(b, ",\"droppedAttributesCount\":%u", a->dropped);
}

static void js_span(mcp_buf *b, const mcp_span *s) {
  mcp_buf_adds(b, "{\"traceId\":");
  js_hex(b, s->trace_id, 16);
  mcp_buf_adds(b, ",\"spanId\":");
  js_hex(b, s->span_id, 8);
  if (s->tracestate) {
    mcp_buf_adds(b, ",\"traceState\":");
    js_str(b, s->tracestate);
  }
  if (s->has_parent) {
    mcp_buf_adds(b, ",\"parentSpanId\":");
    js_hex(b, s->parent_id, 8);
  }
  mcp_buf_printf(b, ",\"flags\":%u,\"name\":", (s->sampled ? 1u : 0u) | 0x100u | (s->remote_parent ? 0x200u : 0u));
  js_str(b, s->name);
  mcp_buf_printf(b, ",\"kind\":%d,\"startTimeUnixNano\":", s->kind);
  js_u64(b, s->start_ns);
  mcp_buf_adds(b, ",\"endTimeUnixNano\":");
  js_u64(b, s->end_ns);
  mcp_buf_addc(b, ',');
  js_attrs(b, &s->attrs);
  mcp_buf_adds(b, ",\"events\":[");
  for (int i = 0; i < s->nevents; i++) {
    const mcp_span_event *e = &s->events[i];
    if (i) mcp_buf_addc(b, ',');
    mcp_buf_adds(b, "{\"timeUnixNano\":");
    js_u64(b, e->time_ns);
    mcp_buf_adds(b, ",\"name\":");
    js_str(b, e->name);
    mcp_buf_addc(b, ',');
    js_attrs(b, &e->attrs);
    mcp_buf_addc(b, '}');
  }
  mcp_buf_addc(b, ']');
  if (s->dropped_events) mcp_buf_printf(b, ",\"droppedEventsCount\":%u", s->dropped_events);
  mcp_buf_printf(b, ",\"status\":{\"code\":%d", s->status);
  if (s->status_msg) {
    mcp_buf_adds(b, ",\"message\":");
    js_str(b, s->status_msg);
  }
  mcp_buf_adds(b, "}}");
}

void mcp_otlp_json(mcp_buf *b, const mcp_otlp_source *src, const mcp_span *spans, int n) {
  mcp_buf_adds(b, "{\"resourceSpans\":[{\"resource\":{");
  js_attrs(b, src->resource);
  mcp_buf_adds(b, "},\"scopeSpans\":[{\"scope\":{\"name\":");
  js_str(b, src->scope);
  mcp_buf_adds(b, ",\"version\":");
  js_str(b, src->version);
  mcp_buf_adds(b, "},\"spans\":[");
  for (int i = 0; i < n && spans; i++, spans = spans->next) {
    if (i) mcp_buf_addc(b, ',');
    js_span(b, spans);
  }
  mcp_buf_adds(b, "]}]}]}");
}
