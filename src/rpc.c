/* JSON-RPC 2.0 envelopes written as text. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "rpc.h"

static void add_id(mcp_buf *b, const char *key) {
  mcp_buf_adds(b, "{\"jsonrpc\":\"2.0\",\"id\":");
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
  mcp_buf_adds(b, ",\"result\":");
}

void mcp_rpc_notification_open(mcp_buf *b, const char *method) {
  mcp_buf_adds(b, "{\"jsonrpc\":\"2.0\",\"method\":");
  mcp_json_add_string(b, method, strlen(method));
  mcp_buf_adds(b, ",\"params\":");
}

void mcp_rpc_close(mcp_buf *b) { mcp_buf_addc(b, '}'); }
