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

/* A nested message: its tag and one byte for the length, filled in by
 * msg_end, which makes room when the length needs more. */
static size_t msg_begin(mcp_buf *b, int field) {
  put_tag(b, field, WT_LEN);
  mcp_buf_addc(b, 0);
  return b->len;
}

static void msg_end(mcp_buf *b, size_t at) {
  size_t n = b->len - at, extra = 0;
  char len[10];
  uint64_t v = n;
  while (v >= 0x80) {
    len[extra++] = (char)(v | 0x80);
    v >>= 7;
  }
  len[extra] = (char)v;
  if (extra) {
    if (b->cap - b->len < extra) mcp_buf_grow(b, extra);
    memmove(b->data + at + extra, b->data + at, n);
    b->len += extra;
  }
  memcpy(b->data + at - 1, len, extra + 1);
}

static void pb_attrs(mcp_buf *b, int field, const mcp_attrs *a) {
  for (int i = 0; i < a->n; i++) {
    const mcp_attr *x = &a->v[i];
    size_t kv = msg_begin(b, field), val;
    put_str(b, 1, x->key);
    val = msg_begin(b, 2);                      /* AnyValue */
    switch (x->type) {
    case MCP_ATTR_STR: put_bytes(b, 1, x->v.s, strlen(x->v.s)); break;
    case MCP_ATTR_BOOL: put_tag(b, 2, WT_VARINT); put_varint(b, (uint64_t)x->v.b); break;
    case MCP_ATTR_INT: put_tag(b, 3, WT_VARINT); put_varint(b, (uint64_t)x->v.i); break;
    case MCP_ATTR_DOUBLE: {
      uint64_t bits;
      memcpy(&bits, &x->v.d, 8);
      put_tag(b, 4, WT_I64);
      put_fixed(b, bits, 8);
      break;
    }
    }
    msg_end(b, val);
    msg_end(b, kv);
  }
}

static void pb_uint(mcp_buf *b, int field, uint64_t v) {
  if (v == 0) return;
  put_tag(b, field, WT_VARINT);
  put_varint(b, v);
}

static void pb_span(mcp_buf *b, const mcp_span *s) {
  size_t at = msg_begin(b, 2), st;              /* ScopeSpans.spans */
  put_bytes(b, 1, s->trace_id, 16);
  put_bytes(b, 2, s->span_id, 8);
  put_str(b, 3, s->tracestate);
  if (s->has_parent) put_bytes(b, 4, s->parent_id, 8);
  put_str(b, 5, s->name);
  pb_uint(b, 6, s->kind);
  put_tag(b, 7, WT_I64);
  put_fixed(b, s->start_ns, 8);
  put_tag(b, 8, WT_I64);
  put_fixed(b, s->end_ns, 8);
  pb_attrs(b, 9, &s->attrs);
  pb_uint(b, 10, s->attrs.dropped);
  for (int i = 0; i < s->nevents; i++) {
    const mcp_span_event *e = &s->events[i];
    size_t ev = msg_begin(b, 11);
    put_tag(b, 1, WT_I64);
    put_fixed(b, e->time_ns, 8);
    put_str(b, 2, e->name);
    pb_attrs(b, 3, &e->attrs);
    pb_uint(b, 4, e->attrs.dropped);
    msg_end(b, ev);
  }
  pb_uint(b, 12, s->dropped_events);
  if (s->status != MCP_STATUS_UNSET) {
    st = msg_begin(b, 15);
    put_str(b, 2, s->status_msg);
    pb_uint(b, 3, s->status);
    msg_end(b, st);
  }
  /* flags: the W3C trace flags, and bits 8-9 say whether the parent is remote */
  put_tag(b, 16, WT_I32);
  put_fixed(b, (s->sampled ? 1u : 0u) | 0x100u | (s->remote_parent ? 0x200u : 0u), 4);
  msg_end(b, at);
}

void mcp_otlp_proto(mcp_buf *b, const mcp_otlp_source *src, const mcp_span *spans, int n) {
  size_t rs = msg_begin(b, 1), res, ss, scope;  /* ExportTraceServiceRequest.resource_spans */
  res = msg_begin(b, 1);                         /* ResourceSpans.resource */
  pb_attrs(b, 1, src->resource);
  msg_end(b, res);
  ss = msg_begin(b, 2);                          /* ResourceSpans.scope_spans */
  scope = msg_begin(b, 1);                       /* InstrumentationScope */
  put_str(b, 1, src->scope);
  put_str(b, 2, src->version);
  msg_end(b, scope);
  for (int i = 0; i < n && spans; i++, spans = spans->next) pb_span(b, spans);
  msg_end(b, ss);
  msg_end(b, rs);
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
