/* JSON-RPC 2.0 envelopes written as text. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "rpc.h"

#define ID_HEAD "{\"jsonrpc\":\"2.0\",\"id\":"
#define RESULT_HEAD ",\"result\":"

static void add_id(mcp_buf *b, const char *key) {
  mcp_buf_adds(b, ID_HEAD);
  if (key) mcp_buf_add(b, key, strlen(key));
  else mcp_buf_adds(b, "null");
}

void mcp_rpc_error(mcp_buf *b, const char *key, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  add_id(b, key);
  mcp_buf_printf(b, ",\"error\":{\"code\":%d,\"message\":", code);
  mcp_json_add_string(b, msg, strlen(msg));
  mcp_buf_adds(b, "}}");
}

void mcp_rpc_result_open(mcp_buf *b, const char *key) {
  add_id(b, key);
  mcp_buf_adds(b, RESULT_HEAD);
}

size_t mcp_rpc_result_object_at(const char *data, size_t len, const char *key, size_t keylen) {
  const size_t ih = sizeof ID_HEAD - 1, rh = sizeof RESULT_HEAD - 1, n = ih + keylen + rh + 1;
  if (len < n || memcmp(data, ID_HEAD, ih) != 0 || memcmp(data + ih, key, keylen) != 0 ||
      memcmp(data + ih + keylen, RESULT_HEAD, rh) != 0 || data[n - 1] != '{')
    return 0;
  return n;
}

void mcp_rpc_notification_open(mcp_buf *b, const char *method) {
  mcp_buf_adds(b, "{\"jsonrpc\":\"2.0\",\"method\":");
  mcp_json_add_string(b, method, strlen(method));
  mcp_buf_adds(b, ",\"params\":");
}

void mcp_rpc_close(mcp_buf *b) { mcp_buf_addc(b, '}'); }

int mcp_rpc_error_code(const char *msg, size_t len) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", err[] = ",\"error\":{\"code\":";
  size_t i = sizeof head - 1;
  char num[16];
  if (len < i || memcmp(msg, head, i) != 0) return 0;
  if (i < len && msg[i] == '"') {               /* a string id: to its closing quote */
    for (i++; i < len && msg[i] != '"'; i++)
      if (msg[i] == '\\') i++;
    i++;
  } else {
    while (i < len && msg[i] != ',') i++;
  }
  if (i >= len || len - i < sizeof err - 1 + 1 || memcmp(msg + i, err, sizeof err - 1) != 0) return 0;
  i += sizeof err - 1;
  len = len - i < sizeof num - 1 ? len - i : sizeof num - 1;
  memcpy(num, msg + i, len);
  num[len] = '\0';
  return (int)strtol(num, NULL, 10);
}
