/* Calls as they run, for the console: a row of sched.c (sched_int.h),
 * registered on the first watch, whose hooks return at once while nobody
 * watches. Each event is one JSON object:
 *   {"type":"call","id":"SID.KEY","session":..,"client":..,"tool":..,"state":..,
 *    "elapsed_ms":..,"progress":..,"cpu_ms":..,"memory":..,"limit":..,"reason":..}
 * id is the session's number and the request id's JSON text, percent-encoded
 * but for [A-Za-z0-9_-]: it can stand in a URL path as it is. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "live.h"
#include "policy.h"
#include "sched_int.h"

void (*mcp_live_sink)(const char *json, size_t len);
unsigned long long mcp_live_built;

static void add_id(mcp_buf *b, const mcp_call *c) {
  static const char hex[] = "0123456789ABCDEF";
  mcp_buf_add_int(b, c->sid);
  mcp_buf_addc(b, '.');
  for (size_t i = 0; i < c->req.keylen && i < 128; i++) {
    unsigned char ch = (unsigned char)c->req.key[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
        ch == '_') {
      mcp_buf_addc(b, (char)ch);
    } else {
      mcp_buf_addc(b, '%');
      mcp_buf_addc(b, hex[ch >> 4]);
      mcp_buf_addc(b, hex[ch & 15]);
    }
  }
}

static const char *state_of(const mcp_call *c) {
  if (c->refused) return "refused";
  switch (c->req.state) {
    case MCP_REQ_QUEUED: return "queued";
    case MCP_REQ_RUNNING: return "running";
    case MCP_REQ_CANCELLING: return "cancelling";
    case MCP_REQ_TIMING_OUT: return "timing out";
    case MCP_REQ_COMPLETED: return c->tool_error || c->rpc_error ? "failed" : "done";
    case MCP_REQ_FAILED: return "failed";
    case MCP_REQ_CANCELLED: return "cancelled";
    case MCP_REQ_TIMED_OUT: return "timed out";
    default: return "?";
  }
}

static const char *limit_of(const mcp_call *c) {
  switch (c->over) {
    case MCP_OVER_MEMORY: return "memory";
    case MCP_OVER_CPU: return "cpu";
    case MCP_OVER_STUCK: return "stuck";
    default: return c->refused ? "busy or rate" : NULL;
  }
}

/* No printf here: an event is built for each turning point of every call. */
static void add_key(mcp_buf *b, const char *key) {
  mcp_buf_add(b, ",\"", 2);
  mcp_buf_add(b, key, strlen(key));
  mcp_buf_add(b, "\":", 2);
}

static void add_str(mcp_buf *b, const char *key, const char *s) {
  if (s == NULL) return;
  add_key(b, key);
  mcp_json_add_string(b, s, strlen(s));
}

static void add_int(mcp_buf *b, const char *key, long long v) {
  add_key(b, key);
  mcp_buf_add_int(b, v);
}

/* On arrival the owner has not set the call's session yet: no name then. */
static void add_call(mcp_buf *b, const mcp_call *c, const char *state) {
  const char *session = c->session && c->owner->session_name ? c->owner->session_name(c) : NULL;
  mcp_buf_adds(b, "{\"type\":\"call\",\"id\":\"");
  add_id(b, c);
  mcp_buf_addc(b, '"');
  add_str(b, "session", session && session[0] ? session : NULL);
  if (c->session && c->owner->client_name) add_str(b, "client", c->owner->client_name(c));
  add_str(b, "tool", c->tool);
  add_str(b, "state", state ? state : state_of(c));
  add_int(b, "elapsed_ms", (long long)((uv_hrtime() - c->arrive_ns) / 1000000));
  if (c->last_progress > -1e300) mcp_buf_printf(b, ",\"progress\":%.17g", c->last_progress);
  if (c->budget) {
    add_int(b, "cpu_ms", (long long)(c->cpu_used_ns / 1000000));
    add_int(b, "memory", (long long)c->mem_held);
  }
  add_str(b, "limit", limit_of(c));
  add_str(b, "reason", c->req.reason);
  if (c->refused && c->req.reason == NULL) add_str(b, "reason", "refused by the tool's limits");
  mcp_buf_addc(b, '}');
}

static void emit(const mcp_call *c, const char *state) {
  mcp_buf b = MCP_BUF_INIT;
  if (mcp_live_sink == NULL || c->tool == NULL) return;
  add_call(&b, c, state);
  mcp_live_built++;
  mcp_live_sink(b.data, b.len);
  mcp_buf_free(&b);
}

void mcp_live_progress(mcp_call *c) { emit(c, NULL); }

static void arrive(mcp_call *c) { emit(c, NULL); }

/* Last of the admits (registered after the others): it starts now. */
static int admit(mcp_call *c, char *msg, size_t cap) {
  emit(c, "running");
  return MCP_ADMIT_RUN;
}

static void cancelled(mcp_call *c, mcp_req_event ev, const char *reason) { emit(c, NULL); }

static void finish(const mcp_call *c) { emit(c, NULL); }

static const mcp_call_type live_type = {
  .arrive = arrive, .admit = admit, .cancelled = cancelled, .finish = finish
};

void mcp_live_watch(void (*sink)(const char *json, size_t len)) {
  if (sink) mcp__sched_register(&live_type);
  mcp_live_sink = sink;
}

void mcp_live_calls(mcp_buf *b) {
  int first = 1;
  mcp_buf_addc(b, '[');
  for (mcp_call *c = mcp__sched_calls(); c; c = c->anext) {
    if (c->tool == NULL || c->finished) continue;
    if (!first) mcp_buf_addc(b, ',');
    first = 0;
    add_call(b, c, NULL);
  }
  mcp_buf_addc(b, ']');
}

int mcp_live_cancel(const char *id, const char *reason) {
  mcp_buf b = MCP_BUF_INIT;
  mcp_call *found = NULL;
  for (mcp_call *c = mcp__sched_calls(); c && !found; c = c->anext) {
    if (c->tool == NULL || c->finished) continue;
    b.len = 0;
    add_id(&b, c);
    if (b.len == strlen(id) && memcmp(b.data, id, b.len) == 0) found = c;
  }
  mcp_buf_free(&b);
  if (found == NULL) return -1;
  mcp_call_fire(found, MCP_EV_CANCEL, reason);
  return 0;
}
