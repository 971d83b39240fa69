/* JSON-RPC 2.0 envelopes written as text. Ids are given as their exact JSON
 * text (the request key); NULL means null. */
#ifndef MCP_RPC_H
#define MCP_RPC_H

#include "buf.h"

enum {
  MCP_RPC_PARSE = -32700,
  MCP_RPC_INVALID_REQUEST = -32600,
  MCP_RPC_METHOD_NOT_FOUND = -32601,
  MCP_RPC_INVALID_PARAMS = -32602,
  MCP_RPC_INTERNAL = -32603,
  MCP_RPC_TIMEOUT = -32001
};

void mcp_rpc_error(mcp_buf *b, const char *key, int code, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
void mcp_rpc_result_open(mcp_buf *b, const char *key);   /* then the result, then close */
/* The length of what mcp_rpc_result_open wrote for key (keylen bytes) and
 * the '{' of an object result, when data starts with it; else 0. */
size_t mcp_rpc_result_object_at(const char *data, size_t len, const char *key, size_t keylen);
void mcp_rpc_notification_open(mcp_buf *b, const char *method); /* then params, then close */
void mcp_rpc_close(mcp_buf *b);
/* The code of an error response as written here, or 0 for any other message. */
int mcp_rpc_error_code(const char *msg, size_t len);

#endif
