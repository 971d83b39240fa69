/* Tracing of calls (trace.h): a call's SERVER span, named and attributed by
 * the OpenTelemetry semantic conventions for MCP (gen-ai/mcp.md), started
 * by the call's session and ended by trace.c's row in sched.c, which sees
 * the call's first cancel and its FINISH. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"
#include "stats.h"
#include "trace.h"

int mcp_trace_on;
int mcp_trace_db_statement;

static struct {
  mcp_sampler sampler;
  void (*sink)(mcp_span *s);
} T;

/* The incoming context: _meta.traceparent (with its tracestate) wins over
 * the HTTP header's; a malformed one counts as none (W3C: start anew). */
static int incoming(const mcp_trace_origin *o, mcp_span_ctx *ctx) {
  const json_t *meta = o->from_text ? o->meta : json_object_get(o->params, "_meta");
  json_t *tp = NULL, *ts = NULL;
  const char *v = NULL, *state = NULL;
  size_t len = 0, slen = 0;
  if (meta == NULL && o->traceparent == NULL) return 0;
  if (meta) tp = json_object_get(meta, "traceparent"), ts = json_object_get(meta, "tracestate");
  if (json_is_string(tp)) {
    v = json_string_value(tp);
    len = json_string_length(tp);
    if (json_is_string(ts)) state = json_string_value(ts), slen = json_string_length(ts);
  } else if (o->traceparent) {
    v = o->traceparent;
    len = strlen(v);
    if (o->tracestate) state = o->tracestate, slen = strlen(state);
  }
  if (v == NULL || mcp_traceparent_parse(v, len, ctx) != 0) return 0;
  if (state && mcp_tracestate_check(state, slen) == 0) {
    memcpy(ctx->tracestate, state, slen);
    ctx->tracestate[slen] = '\0';
  }
  return 1;
}

static const char TOOL_KEY[] = "gen_ai.tool.name";

/* The target of "{mcp.method.name} {target}": the tool's or prompt's name,
 * the resource's URI, else none; *key is its attribute's (TOOL_KEY is
 * compared by address). */
static const char *target_of(const mcp_call *c, const mcp_trace_origin *o, const char **key) {
  const json_t *params = o->params;
  const char *v;
  *key = NULL;
  if (o->from_text) {                                   /* a tools/call: its tool is its name */
    *key = TOOL_KEY;
    return c->tool;
  }
  if ((v = json_string_value(json_object_get(params, "name"))) != NULL)
    *key = strcmp(c->method, "prompts/get") == 0 ? "gen_ai.prompt.name" : c->tool ? TOOL_KEY : NULL;
  else if ((v = json_string_value(json_object_get(params, "uri"))) != NULL)
    *key = "mcp.resource.uri";
  return v;
}

static void request_id(mcp_span *s, const mcp_call *c) {
  const char *k = c->req.key;
  size_t n = c->req.keylen;
  if (n >= 2 && k[0] == '"') k++, n -= 2;             /* a string id: its text without the quotes */
  mcp_attr_static_strn(&s->attrs, "jsonrpc.request.id", k, n);
}

/* "{method} {target}" (or the method alone), cut to size - 1 bytes: one
 * per request, where snprintf cost 900 instructions. */
static void span_name(char *out, size_t size, const char *method, const char *target) {
  size_t n = strlen(method), t;
  if (n > size - 1) n = size - 1;
  memcpy(out, method, n);
  if (target != NULL && n + 1 < size) {
    out[n++] = ' ';
    t = strlen(target);
    if (t > size - 1 - n) t = size - 1 - n;
    memcpy(out + n, target, t);
    n += t;
  }
  out[n] = '\0';
}

void mcp_trace_server(mcp_call *c, const mcp_trace_origin *o) {
  mcp_span_ctx parent;
  const char *key, *target = target_of(c, o, &key);
  char name[256];
  int remote = incoming(o, &parent);
  mcp_span *s;
  span_name(name, sizeof name, c->method, target);
  s = c->span = mcp_span_start(MCP_SPAN_SERVER, name, remote ? &parent : NULL, &T.sampler);
  s->remote_parent = remote;
  if (!s->sampled) return;
  /* attributes that outlive the span are borrowed (interned names, literals);
   * each key is new: no search */
  mcp_attr_static(&s->attrs, "mcp.method.name", c->method);
  request_id(s, c);
  if (key == TOOL_KEY && c->tool && !c->tool_owned)
    mcp_attr_static(&s->attrs, key, c->tool);
  else if (key)
    mcp_attr_static_strn(&s->attrs, key, target, strlen(target));
  if (c->tool) mcp_attr_static(&s->attrs, "gen_ai.operation.name", "execute_tool");
  if (o->protocol_version) mcp_attr_static(&s->attrs, "mcp.protocol.version", o->protocol_version);
  if (o->session_digest)
    mcp_attr_static_strn(&s->attrs, "mcp.session.id", o->session_digest, strlen(o->session_digest));
  if (o->transport) mcp_attr_static(&s->attrs, "network.transport", o->transport);
  if (o->transport && strcmp(o->transport, "tcp") == 0) mcp_attr_static(&s->attrs, "network.protocol.name", "http");
  if (o->enduser) mcp_attr_static_strn(&s->attrs, "enduser.id", o->enduser, strlen(o->enduser));
}

static void set_error(mcp_span *s, const char *type) {
  mcp_attr_str(&s->attrs, "error.type", type);
  mcp_span_set_status(s, MCP_STATUS_ERROR, NULL);
}

void mcp_trace_call_error(mcp_call *c, int code) {
  char text[24];
  if (c->span == NULL || !c->span->sampled) return;
  if (code == 0) {
    set_error(c->span, "tool_error");
    return;
  }
  snprintf(text, sizeof text, "%d", code);
  set_error(c->span, text);
}

mcp_span *mcp_trace_child(mcp_call *c, mcp_span_kind kind, const char *name) {
  mcp_span_ctx parent;
  if (c == NULL || c->span == NULL) return NULL;
  mcp_span_context(c->span->inner ? c->span->inner : c->span, &parent);
  return mcp_span_start(kind, name, &parent, NULL);
}

mcp_span *mcp_trace_enter(mcp_call *c, mcp_span_kind kind, const char *name) {
  mcp_span *s = mcp_trace_child(c, kind, name);
  if (s == NULL) return NULL;
  s->up = c->span->inner;
  c->span->inner = s;
  return s;
}

/* s leaves c's chain of open spans, wherever it is in it (coroutines of
 * mcp.all may close theirs out of order). */
void mcp_trace_leave(mcp_call *c, mcp_span *s) {
  if (c != NULL && c->span != NULL) {
    mcp_span **p = &c->span->inner;
    while (*p && *p != s) p = &(*p)->up;
    if (*p) *p = s->up;
  }
  s->up = NULL;
  mcp_trace_span_end(s);
}

void mcp_trace_span_end(mcp_span *s) {
  mcp_span_end(s);
  if (s->sampled && mcp_span_tap) mcp_span_tap(s);
  if (s->sampled && T.sink) T.sink(s);
  else mcp_span_free(s);
}

/* The row. */

/* The first cancel, timeout or close: an event saying why and who (the
 * reasons of /metrics: stats.c's row ran first and set c->why). */
static void on_cancelled(mcp_call *c, mcp_req_event ev, const char *reason) {
  mcp_attrs *a;
  (void)ev;
  if (c->span == NULL || !c->span->sampled || (a = mcp_span_event_add(c->span, "cancelled")) == NULL) return;
  mcp_attr_str(a, "reason", reason ? reason : "");
  mcp_attr_str(a, "cancelled.by", mcp_why_name(c->why));
}

static void on_finish(const mcp_call *c) {
  mcp_span *s = c->span;
  if (s == NULL) return;
  ((mcp_call *)c)->span = NULL;
  if (s->sampled && (c->req.state == MCP_REQ_CANCELLED || !c->responded)) set_error(s, "cancelled");
  mcp_trace_span_end(s);
}

/* A call its tool's max_concurrent held back starts (trace.c's row comes
 * after limit.c's, so it is asked only once the call may run): an event
 * saying how long it queued. */
static int on_admit(mcp_call *c, char *msg, size_t cap) {
  mcp_attrs *a;
  (void)msg; (void)cap;
  if (c->span && c->span->sampled && c->held &&
      (a = mcp_span_event_add(c->span, "queued")) != NULL)
    mcp_attr_double(a, "mcp.queue.wait_seconds", (double)(uv_hrtime() - c->arrive_ns) / 1e9);
  return MCP_ADMIT_RUN;
}

/* The handler gave its time slice back (it spins): one event "preempted"
 * for a run of slices, counting them (mcp.slices), so a long spin is one
 * event, not hundreds. */
static void on_preempted(mcp_call *c) {
  mcp_span *s = c->span;
  mcp_attrs *a;
  if (s == NULL || !s->sampled) return;
  if (s->nevents > 0 && strcmp(s->events[s->nevents - 1].name, "preempted") == 0) {
    mcp_attr *n = (mcp_attr *)mcp_attr_find(&s->events[s->nevents - 1].attrs, "mcp.slices");
    if (n) n->v.i++;
    return;
  }
  if ((a = mcp_span_event_add(s, "preempted")) != NULL) mcp_attr_int(a, "mcp.slices", 1);
}

const mcp_call_type mcp__trace_type = { .admit = on_admit, .preempted = on_preempted, .cancelled = on_cancelled, .finish = on_finish };

void mcp__trace_start(const mcp_sampler *sampler, void (*sink)(mcp_span *s)) {
  T.sampler = *sampler;
  T.sink = sink;
  mcp_trace_on = 1;
}
