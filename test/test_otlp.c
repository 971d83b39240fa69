/* Spans, W3C trace-context, the samplers and the OTLP encoders (span.c,
 * otlp.c). The protobuf is checked by reading it back with a small reader
 * written from the wire format; the specs decode it with the official
 * definitions (spec/otel_spec.lua). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "span.h"
#include "test.h"

static const char TP[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

static void test_traceparent_valid(void) {
  mcp_span_ctx c;
  char out[56];
  CHECK(mcp_traceparent_parse(TP, strlen(TP), &c) == 0, "the W3C example");
  CHECK(c.flags == 1 && c.trace_id[0] == 0x0a && c.span_id[7] == 0x31, "its fields");
  mcp_traceparent_format(&c, out);
  CHECK(strcmp(out, TP) == 0, "written back: %s", out);
}

static void test_traceparent_strict(void) {
  static const char *bad[] = {
    "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",   /* uppercase */
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",   /* zero trace id */
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",   /* zero span id */
    "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",   /* version ff */
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",  /* version 00 with more */
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",    /* short */
    "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",   /* separator */
    "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",  /* later version, no '-' after */
    "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",   /* not hex */
  };
  mcp_span_ctx c;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(mcp_traceparent_parse(bad[i], strlen(bad[i]), &c) != 0, "refused: %s", bad[i]);
  CHECK(mcp_traceparent_parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-later", 61, &c) == 0,
        "a later version's extra field is allowed");
}

static void test_sampler(void) {
  mcp_sampler s;
  mcp_span_ctx parent = { .flags = 0 };
  uint8_t id[16] = { 0 };
  CHECK(mcp_sampler_parse(&s, "always_on", NULL) == 0 && mcp_sampler_decide(&s, id, NULL) == 1, "always_on");
  CHECK(mcp_sampler_parse(&s, "always_off", NULL) == 0 && mcp_sampler_decide(&s, id, NULL) == 0, "always_off");
  CHECK(mcp_sampler_parse(&s, "parentbased_always_on", NULL) == 0, "parentbased_always_on");
  CHECK(mcp_sampler_decide(&s, id, &parent) == 0, "an unsampled parent is followed");
  CHECK(mcp_sampler_decide(&s, id, NULL) == 1, "a root is sampled");
  CHECK(mcp_sampler_parse(&s, "traceidratio", "0.5") == 0, "traceidratio 0.5");
  memset(id + 8, 0x00, 8);
  CHECK(mcp_sampler_decide(&s, id, NULL) == 1, "a low id is kept");
  memset(id + 8, 0xff, 8);
  CHECK(mcp_sampler_decide(&s, id, NULL) == 0, "a high id is not");
  CHECK(mcp_sampler_parse(&s, "traceidratio", "2") != 0, "a ratio above 1");
  CHECK(mcp_sampler_parse(&s, "sometimes", NULL) != 0, "an unknown sampler");
}

/* A protobuf reader, enough to walk what the encoder writes. */
typedef struct { const uint8_t *p, *end; } rd;

static uint64_t varint(rd *r) {
  uint64_t v = 0;
  for (int shift = 0; r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  return v;
}

/* The next field of r: its number and, for a length-delimited one, its bytes in *sub. */
static int field(rd *r, rd *sub, uint64_t *v) {
  uint64_t tag = varint(r);
  switch (tag & 7) {
  case 0: *v = varint(r); break;
  case 1: memcpy(v, r->p, 8); r->p += 8; break;
  case 5: *v = 0; memcpy(v, r->p, 4); r->p += 4; break;
  case 2: *v = varint(r); sub->p = r->p; sub->end = r->p + *v; r->p += *v; break;
  default: return -1;
  }
  return (int)(tag >> 3);
}

/* Descend: the first field numbered n of r, as a message. */
static int find(rd *r, int n, rd *out) {
  rd sub;
  uint64_t v;
  while (r->p < r->end)
    if (field(r, &sub, &v) == n) return *out = sub, 1;
  return 0;
}

static void test_protobuf(void) {
  mcp_attrs res = { 0 };
  mcp_span *s = mcp_span_start(MCP_SPAN_SERVER, "tools/call echo", NULL, NULL);
  mcp_otlp_source src = { &res, "luamcp", "1" };
  mcp_buf b = MCP_BUF_INIT;
  char big[300];
  rd r, rs, ss, sp, sub = { 0 };
  uint64_t v;
  int n, seen = 0;
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  mcp_attr_str(&res, "service.name", "luamcp");
  mcp_attr_str(&s->attrs, "big", big);                 /* lengths past one varint byte */
  mcp_attr_int(&s->attrs, "n", -3);
  mcp_span_event_add(s, "cancelled");
  mcp_span_set_status(s, MCP_STATUS_ERROR, NULL);
  mcp_span_end(s);
  mcp_otlp_proto(&b, &src, s, 1);
  r.p = (const uint8_t *)b.data;
  r.end = r.p + b.len;
  CHECK(find(&r, 1, &rs), "resource_spans");
  CHECK(r.p == r.end, "one ResourceSpans, all of the body");
  CHECK(find(&rs, 2, &ss), "scope_spans");
  CHECK(find(&ss, 2, &sp), "a span");
  while (sp.p < sp.end) {
    switch ((n = field(&sp, &sub, &v))) {
    case 1: CHECK(v == 16 && memcmp(sub.p, s->trace_id, 16) == 0, "trace_id"); seen |= 1; break;
    case 5: CHECK(v == 15 && memcmp(sub.p, "tools/call echo", 15) == 0, "name"); seen |= 2; break;
    case 6: CHECK(v == 2, "kind SERVER"); seen |= 4; break;
    case 7: CHECK(v == s->start_ns, "start"); seen |= 8; break;
    case 9: seen |= 16; break;
    case 11: seen |= 32; break;
    case 15: seen |= 64; break;
    case 4: CHECK(0, "no parent_span_id on a root"); break;
    default: CHECK(n > 0, "a field"); break;
    }
  }
  CHECK(seen == 127, "every field seen (%d)", seen);
  mcp_buf_free(&b);
  mcp_span_free(s);
  mcp_attrs_free(&res);
}

static void test_json(void) {
  mcp_attrs res = { 0 };
  mcp_span_ctx parent;
  mcp_span *s;
  mcp_otlp_source src = { &res, "luamcp", "1" };
  mcp_buf b = MCP_BUF_INIT;
  mcp_traceparent_parse(TP, strlen(TP), &parent);
  s = mcp_span_start(MCP_SPAN_CLIENT, "GET", &parent, NULL);
  mcp_attr_int(&s->attrs, "http.response.status_code", 200);
  mcp_span_end(s);
  mcp_otlp_json(&b, &src, s, 1);
  mcp_buf_addc(&b, '\0');
  CHECK(strstr(b.data, "\"traceId\":\"0af7651916cd43dd8448eb211c80319c\"") != NULL, "trace id as hex");
  CHECK(strstr(b.data, "\"parentSpanId\":\"b7ad6b7169203331\"") != NULL, "parent as hex");
  CHECK(strstr(b.data, "\"kind\":3") != NULL, "kind as a number");
  CHECK(strstr(b.data, "\"intValue\":\"200\"") != NULL, "int64 as a string");
  CHECK(strstr(b.data, "\"startTimeUnixNano\":\"") != NULL, "times as strings");
  CHECK(s->sampled == 1, "a sampled parent's child is sampled");
  mcp_buf_free(&b);
  mcp_span_free(s);
  mcp_attrs_free(&res);
}

static void test_limits(void) {
  mcp_span *s = mcp_span_start(MCP_SPAN_INTERNAL, "x", NULL, NULL);
  char key[16];
  for (int i = 0; i < MCP_SPAN_MAX_ATTRS + 5; i++) {
    snprintf(key, sizeof key, "k%d", i);
    mcp_attr_int(&s->attrs, key, i);
  }
  mcp_attr_int(&s->attrs, "k0", 9);
  CHECK(s->attrs.n == MCP_SPAN_MAX_ATTRS && s->attrs.dropped == 5, "attributes past the limit are counted");
  CHECK(mcp_attr_find(&s->attrs, "k0")->v.i == 9, "a key set again is replaced");
  mcp_span_free(s);
}

/* A span's copies past its own room (the pool, the first slots) are
 * malloc'd, and a reused span starts clean. */
static void test_span_room(void) {
  mcp_span_ctx parent;
  mcp_span *s, *t;
  char big[400], key[16];
  memset(big, 'n', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  mcp_traceparent_parse(TP, strlen(TP), &parent);
  memset(parent.tracestate, 't', 300);
  parent.tracestate[300] = '\0';
  s = mcp_span_start(MCP_SPAN_CLIENT, big, &parent, NULL);
  CHECK(strcmp(s->name, big) == 0 && strlen(s->tracestate) == 300, "a long name and tracestate kept");
  for (int i = 0; i < MCP_SPAN_SLOTS + 3; i++) {
    snprintf(key, sizeof key, "key.%d", i);
    mcp_attr_str(&s->attrs, key, i % 2 ? big : "short");
  }
  CHECK(s->attrs.n == MCP_SPAN_SLOTS + 3, "attributes past the span's slots");
  CHECK(strcmp(mcp_attr_find(&s->attrs, "key.0")->v.s, "short") == 0, "the first, moved out of the span");
  CHECK(strcmp(mcp_attr_find(&s->attrs, "key.11")->v.s, big) == 0, "a long value");
  mcp_span_rename(s, "renamed");
  mcp_span_set_status(s, MCP_STATUS_ERROR, big);
  CHECK(strcmp(s->name, "renamed") == 0 && strcmp(s->status_msg, big) == 0, "renamed, with a status");
  mcp_span_free(s);
  t = mcp_span_start(MCP_SPAN_INTERNAL, "x", NULL, NULL);
  CHECK(t->attrs.n == 0 && t->status == 0 && t->status_msg == NULL && t->tracestate == NULL && t->nevents == 0 &&
        !t->has_parent && strcmp(t->name, "x") == 0, "a reused span starts clean");
  mcp_attr_static_strn(&t->attrs, "k", "value", 3);
  CHECK(strcmp(t->attrs.v[0].v.s, "val") == 0, "mcp_attr_static_strn copies len bytes");
  mcp_span_free(t);
  mcp_span_spare_free();
}

/* A span shorter than 128 bytes: its length takes one byte of the two made
 * room for (msg_end moves it back). */
static void test_protobuf_short(void) {
  mcp_attrs res = { 0 };
  mcp_span *s = mcp_span_start(MCP_SPAN_INTERNAL, "x", NULL, NULL);
  mcp_otlp_source src = { &res, "luamcp", "1" };
  mcp_buf b = MCP_BUF_INIT;
  rd r, rs, ss, sp, sub = { 0 };
  uint64_t v;
  int n, seen = 0;
  mcp_attr_bool(&s->attrs, "b", 1);
  mcp_attr_double(&s->attrs, "d", 0.5);
  mcp_span_end(s);
  mcp_otlp_proto(&b, &src, s, 1);
  r.p = (const uint8_t *)b.data;
  r.end = r.p + b.len;
  CHECK(find(&r, 1, &rs) && r.p == r.end, "one ResourceSpans, all of the body");
  CHECK(find(&rs, 2, &ss) && find(&ss, 2, &sp), "a span");
  CHECK(sp.end - sp.p < 128, "shorter than 128 bytes (%d)", (int)(sp.end - sp.p));
  while (sp.p < sp.end) {
    switch ((n = field(&sp, &sub, &v))) {
    case 5: CHECK(v == 1 && sub.p[0] == 'x', "name"); seen |= 1; break;
    case 8: CHECK(v == s->end_ns, "end"); seen |= 2; break;
    case 9: seen |= 4; break;
    case 16: CHECK(v == 0x101, "flags: sampled, parent not remote"); seen |= 8; break;
    default: CHECK(n > 0, "a field"); break;
    }
  }
  CHECK(seen == 15, "every field seen (%d)", seen);
  mcp_buf_free(&b);
  mcp_span_free(s);
  mcp_span_spare_free();
}

int main(void) {
  test_traceparent_valid();
  test_traceparent_strict();
  test_sampler();
  test_protobuf();
  test_json();
  test_limits();
  test_span_room();
  test_protobuf_short();
  TEST_END("test_otlp");
}
