/* A client's byte stream through the real session and dispatch (session.c,
 * rev2026.c, sched.c, server.lua) with the fixture plugin, as stdio reads
 * it: one message a line. After each line the loop runs once; at the end
 * the calls still live (those waiting on the client) are closed, as at the
 * end of input, and must all end.
 *
 * Checked: every message the server writes is JSON-RPC 2.0: an object (or
 * a non-empty array of them, a batch's answer) with "jsonrpc":"2.0" that is
 * a request or notification (a string method), or a response (an id that
 * is a string, a number or null, and either a result object or an error
 * with an integer code and a string message); and a message of the client
 * with an id (but a response of its own) is answered at most as many times
 * as it was sent. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "session.h"
#include "server.h"
#include "require.h"

static json_t *sent;              /* id (compact JSON) -> times the client sent it, minus answers */

static char *id_text(json_t *id) {
  char *t = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
  if (t == NULL) abort();
  return t;
}

static void count_request(json_t *m, int delta) {
  json_t *id = json_object_get(m, "id");
  char *t;
  /* a response of the client (result or error, no method) is never answered; the rest may be */
  if (!json_is_object(m) || id == NULL ||
      (json_object_get(m, "method") == NULL && (json_object_get(m, "result") || json_object_get(m, "error"))))
    return;
  t = id_text(id);
  json_object_set_new(sent, t, json_integer(json_integer_value(json_object_get(sent, t)) + delta));
  free(t);
}

static void check_message(json_t *m, const char *text, size_t len) {
  json_t *id = json_object_get(m, "id"), *result, *error;
  REQUIRE(json_is_object(m), "not an object: %.*s", (int)len, text);
  REQUIRE(json_is_string(json_object_get(m, "jsonrpc")) && strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0") == 0,
          "jsonrpc: %.*s", (int)len, text);
  if (json_object_get(m, "method") != NULL) {
    REQUIRE(json_is_string(json_object_get(m, "method")), "method: %.*s", (int)len, text);
    REQUIRE(id == NULL || json_is_string(id) || json_is_integer(id), "request id: %.*s", (int)len, text);
    return;
  }
  result = json_object_get(m, "result");
  error = json_object_get(m, "error");
  REQUIRE(id != NULL && (json_is_string(id) || json_is_number(id) || json_is_null(id)), "id: %.*s", (int)len, text);
  REQUIRE((result == NULL) != (error == NULL), "result or error: %.*s", (int)len, text);
  if (result != NULL) REQUIRE(json_is_object(result), "result not an object: %.*s", (int)len, text);
  if (error != NULL)
    REQUIRE(json_is_object(error) && json_is_integer(json_object_get(error, "code")) &&
            json_is_string(json_object_get(error, "message")), "error: %.*s", (int)len, text);
  if (!json_is_null(id)) {
    char *t = id_text(id);
    json_int_t left = json_integer_value(json_object_get(sent, t));
    REQUIRE(left > 0, "answered %s once more than it was sent: %.*s", t, (int)len, text);
    json_object_set_new(sent, t, json_integer(left - 1));
    free(t);
  }
}

static void on_write(mcp_session *s, void *stream, const char *data, size_t len, int last) {
  json_error_t e;
  json_t *v;
  if (data == NULL) return;
  if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "fuzz_session: <- %.*s\n", (int)len, data);
  v = json_loadb(data, len, 0, &e);
  REQUIRE(v != NULL, "not JSON (%s): %.*s", e.text, (int)len, data);
  if (json_is_array(v)) {
    size_t i;
    json_t *m;
    REQUIRE(json_array_size(v) > 0, "an empty batch answer");
    json_array_foreach(v, i, m) check_message(m, data, len);
  } else {
    check_message(v, data, len);
  }
  json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uv_loop_t *loop = fuzz_server();
  const char *p = (const char *)data, *end = p + size;
  mcp_session *s = calloc(1, sizeof *s);
  uint64_t start;
  if (s == NULL) abort();
  sent = json_object();
  mcp_session_init(s, on_write, NULL);
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    json_t *v;
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (n > 0) {
      if ((v = json_loadb(p, n, 0, NULL)) != NULL) {   /* what the client asked */
        size_t i;
        json_t *m;
        if (json_is_array(v)) json_array_foreach(v, i, m) count_request(m, 1);
        else count_request(v, 1);
        json_decref(v);
      }
      mcp_session_input(s, p, n, NULL);
      uv_run(loop, UV_RUN_NOWAIT);
    }
    p = nl ? nl + 1 : end;
  }
  for (int i = 0; i < 50 && s->ncalls > 0; i++) uv_run(loop, UV_RUN_NOWAIT);
  mcp_session_close_calls(s, "end of input");
  start = uv_hrtime();
  while (s->ncalls > 0) {
    uv_run(loop, UV_RUN_ONCE);
    REQUIRE(uv_hrtime() - start < 5000000000ull, "%d calls still live 5 s after they were closed", s->ncalls);
  }
  uv_run(loop, UV_RUN_NOWAIT);          /* what their end left for the next turn */
  mcp_session_close(s);
  free(s);
  json_decref(sent);
  return 0;
}
