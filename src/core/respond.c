/* How a call's end becomes its one response, sent to its owner: the
 * handler's result, what it raised (an mcp.rpc_error, a tool's isError, an
 * internal error), a refusal by its limits, or its timeout. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "json.h"
#include "log.h"
#include "rpc.h"
#include "sched_int.h"
#include "trace.h"

static struct {
  lua_State *L;
  int server_ref;                   /* server.raised turns an error into code and message */
} R;

void mcp__respond_init(lua_State *L, int server_ref) {
  R.L = L;
  R.server_ref = server_ref;
}

/* The error on co's top as text, when server.raised could not say: a
 * string (or number) as it is, else its type. No __tostring runs here: the
 * handler's coroutine is dead, no budget reaches this (result.lua's
 * message_of runs one under guard.c's limit). */
static void error_message(lua_State *co, char *msg, size_t cap) {
  const char *s = co && lua_isstring(co, -1) ? lua_tostring(co, -1) : NULL;
  if (s != NULL) snprintf(msg, cap, "%s", s);
  else snprintf(msg, cap, "(error object is a %s value)", co ? luaL_typename(co, -1) : "no");
}

/* The response goes to the owner: the client, or a task (kept for tasks/result). */
static void respond_send(mcp_call *c, mcp_buf *b) {
  c->owner->respond(c, b->data, b->len);
  c->responded = 1;
  c->bytes_out = (uint32_t)b->len;
}

/* A JSON-RPC error response into b, with the data at L's index idx unless
 * that is nil (or idx is 0). */
static void rpc_error_out(mcp_buf *b, mcp_call *c, int code, const char *msg, lua_State *L, int idx) {
  char err[256];
  c->rpc_error = 1;
  c->rpc_code = code;
  if (c->span) mcp_trace_call_error(c, code);
  mcp_rpc_error(b, c->req.key, code, "%s", msg);
  if (idx != 0 && !lua_isnil(L, idx)) {
    size_t len = b->len - 2;                    /* reopen the error object: drop "}}" */
    b->len = len;
    mcp_buf_adds(b, ",\"data\":");
    if (mcp_json_encode(L, idx, b, err, sizeof err) != 0) b->len = len;
    mcp_buf_adds(b, "}}");
  }
}

/* server.raised(err): code (nil, or an integer for a JSON-RPC error),
 * message (without the position), data. */
static int push_raised(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, R.server_ref);
  lua_getfield(L, -1, "raised");
  lua_pushvalue(L, 1);
  lua_call(L, 1, 3);
  return 3;
}

/* What the handler raised (on co's top) as a JSON-RPC error code (0: none)
 * and its message, into msg; pushes its data on R.L (the caller restores
 * R.L's top). */
static int raised(lua_State *co, char *msg, size_t cap) {
  lua_State *L = R.L;
  int code = 0;
  if (co == NULL || !lua_checkstack(co, 2) || !lua_checkstack(L, 4)) {
    error_message(co, msg, cap);
    lua_pushnil(L);
    return 0;
  }
  lua_pushcfunction(L, push_raised);
  lua_pushvalue(co, -1);
  lua_xmove(co, L, 1);
  if (lua_pcall(L, 1, 3, 0) != LUA_OK) {
    lua_pop(L, 1);
    error_message(co, msg, cap);
    lua_pushnil(L);
    return 0;
  }
  if (lua_isinteger(L, -3)) code = (int)lua_tointeger(L, -3);
  snprintf(msg, cap, "%s", lua_isstring(L, -2) ? lua_tostring(L, -2) : "error");
  return code;
}

/* The result at idx says isError (for a tool's span). */
static int tool_is_error(lua_State *co, int idx) {
  int yes;
  if (!lua_istable(co, idx)) return 0;
  lua_pushliteral(co, "isError");
  yes = lua_rawget(co, idx) == LUA_TBOOLEAN && lua_toboolean(co, -1);
  lua_pop(co, 1);
  return yes;
}

void mcp__respond_text(mcp_call *c, const char *json, size_t len) {
  mcp_buf *b = mcp_scratch();
  if (json == NULL) {
    mcp_rpc_error(b, c->req.key, MCP_RPC_INTERNAL, "Internal error: no result");
    c->rpc_code = MCP_RPC_INTERNAL;
  } else {
    mcp_rpc_result_open(b, c->req.key);
    mcp_buf_add(b, json, len);
    mcp_rpc_close(b);
  }
  respond_send(c, b);
}

void mcp__respond_result(mcp_call *c, int nres) {
  lua_State *co = c->co;
  mcp_buf *b;
  char err[256];
  int base = lua_gettop(co) - nres + 1;
  if (c->fast && nres == 1 && lua_type(co, base) == LUA_TLIGHTUSERDATA && lua_touserdata(co, base)) {
    const mcp_buf *raw = lua_touserdata(co, base);   /* the C path's JSON text */
    mcp__respond_text(c, raw->data, raw->len);
    return;
  }
  b = mcp_scratch();
  if (nres >= 3 && lua_isnil(co, base) && lua_isinteger(co, base + 1)) {
    /* stack: nil code message [data] */
    rpc_error_out(b, c, (int)lua_tointeger(co, base + 1), luaL_optstring(co, base + 2, "error"), co,
                  nres >= 4 ? base + 3 : 0);
  } else {
    mcp_rpc_result_open(b, c->req.key);
    if (nres == 0 || mcp_json_encode(co, base, b, err, sizeof err) != 0) {
      b->len = 0;
      if (nres == 0) strcpy(err, "handler returned nothing");
      mcp_warn("request %.64s: cannot encode the result: %s", c->req.key, err);
      mcp_rpc_error(b, c->req.key, MCP_RPC_INTERNAL, "result cannot be encoded: %s", err);
      c->rpc_code = MCP_RPC_INTERNAL;
      if (c->span) mcp_trace_call_error(c, MCP_RPC_INTERNAL);
    } else {
      mcp_rpc_close(b);
      if (c->tool && tool_is_error(co, base)) {
        c->tool_error = 1;
        if (c->span) mcp_trace_call_error(c, 0);
      }
    }
  }
  respond_send(c, b);
}

/* A tool's isError result saying msg, into b. */
static void tool_error_result(mcp_buf *b, mcp_call *c, const char *msg) {
  c->tool_error = 1;
  if (c->span) mcp_trace_call_error(c, 0);
  mcp_rpc_result_open(b, c->req.key);
  mcp_buf_adds(b, "{\"content\":[{\"type\":\"text\",\"text\":");
  mcp_json_add_string(b, msg, strlen(msg));
  mcp_buf_adds(b, "}],\"isError\":true}");
  mcp_rpc_close(b);
}

/* The handler raised (or its limits refused it: refusal says why): an
 * mcp.rpc_error is that JSON-RPC error; anything else gives a tool an isError
 * result with the message (without its position), any other method a
 * JSON-RPC internal error. The error value is on co's top. */
void mcp__respond_error(mcp_call *c, const char *refusal) {
  mcp_buf *b = mcp_scratch();
  char msg[1024];
  int code = 0, top = lua_gettop(R.L);
  if (refusal != NULL) snprintf(msg, sizeof msg, "%s", refusal);
  else code = raised(c->co, msg, sizeof msg);
  if (code != 0) {
    rpc_error_out(b, c, code, msg, R.L, lua_gettop(R.L));
  } else if (c->tool) {
    tool_error_result(b, c, msg);
  } else {
    mcp_rpc_error(b, c->req.key, MCP_RPC_INTERNAL, "Internal error: %s", msg);
    c->rpc_code = MCP_RPC_INTERNAL;
    if (c->span) mcp_trace_call_error(c, MCP_RPC_INTERNAL);
  }
  lua_settop(R.L, top);
  respond_send(c, b);
}

void mcp__respond_timeout(mcp_call *c) {
  mcp_buf *b = mcp_scratch();
  char msg[256];
  if (c->tool) {
    snprintf(msg, sizeof msg, "Tool \"%s\" timed out after %g seconds", c->tool, c->timeout);
    tool_error_result(b, c, msg);
  } else {
    mcp_rpc_error(b, c->req.key, MCP_RPC_TIMEOUT, "Request timed out after %g seconds", c->timeout);
    c->rpc_code = MCP_RPC_TIMEOUT;
    if (c->span) mcp_trace_call_error(c, MCP_RPC_TIMEOUT);
  }
  respond_send(c, b);
}

/* The handler raised: its position and traceback go to the log, at error
 * level (a raised mcp.rpc_error at debug level). A string error keeps its
 * position here; the client gets the message only (mcp__respond_error). */
void mcp__log_raised(mcp_call *c) {
  char msg[1024];
  int top = lua_gettop(R.L), code;
  mcp_log_level level;
  if (!mcp_log_enabled(MCP_LOG_ERROR)) return;
  code = raised(c->co, msg, sizeof msg);
  level = code != 0 ? MCP_LOG_DEBUG : MCP_LOG_ERROR;
  if (mcp_log_enabled(level)) {
    if (lua_type(c->co, -1) == LUA_TSTRING) error_message(c->co, msg, sizeof msg);
    /* the traceback where it was raised, kept by sched.c's run_error */
    if (lua_rawgetp(R.L, LUA_REGISTRYINDEX, c) == LUA_TTABLE && lua_rawgeti(R.L, -1, 2) == LUA_TSTRING)
      lua_pushfstring(R.L, "%s\n%s", msg, lua_tostring(R.L, -1));
    else
      luaL_traceback(R.L, c->co, msg, 0);
    mcp_log(level, "request %.64s (%s%s%s) failed: %s", c->req.key, c->method, c->tool ? " " : "",
            c->tool ? c->tool : "", lua_tostring(R.L, -1));
  }
  lua_settop(R.L, top);
}

