/* The 2025-11-25 methods about tasks: tasks/get, tasks/list and
 * tasks/cancel answered at once, and tasks/result, which waits for its task. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "config.h"
#include "json.h"
#include "log.h"
#include "rpc.h"
#include "sched.h"
#include "task_int.h"

#define RPC_REQUEST_CANCELLED -32800   /* tasks/result of a cancelled task (as LSP) */

/* tasks/result. */

static void waiter_cleanup(mcp_call *c, void *data) {
  mcp_task *t = data;
  for (int i = 0; t && i < t->nwaiters; i++)
    if (t->waiters[i] == c) {
      t->waiters[i] = t->waiters[--t->nwaiters];
      break;
    }
}

static int push_error(lua_State *L, int code, const char *msg) {
  lua_pushnil(L);
  lua_pushinteger(L, code);
  lua_pushstring(L, msg);
  return 3;
}

/* stack: taskId -> result | nil code message data */
static int push_outcome(lua_State *L, mcp_task *t) {
  json_t *e;
  if (t->status == MCP__TASK_CANCELLED || t->response == NULL) {
    lua_pushnil(L);
    lua_pushinteger(L, RPC_REQUEST_CANCELLED);
    lua_pushfstring(L, "Task cancelled%s%s", t->message ? ": " : "", t->message ? t->message : "");
    return 3;
  }
  if ((e = json_object_get(t->response, "error")) != NULL) {
    lua_pushnil(L);
    lua_pushinteger(L, json_integer_value(json_object_get(e, "code")));
    lua_pushstring(L, json_string_value(json_object_get(e, "message")));
    if (json_object_get(e, "data")) mcp_json_push(L, json_object_get(e, "data"));
    else lua_pushnil(L);
    return 4;
  }
  mcp_json_push(L, json_object_get(t->response, "result"));
  /* stack: result */
  if (lua_getfield(L, -1, "_meta") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "_meta");
  }
  /* stack: result _meta */
  lua_createtable(L, 0, 1);
  lua_pushstring(L, t->id);
  lua_setfield(L, -2, "taskId");
  lua_setfield(L, -2, "io.modelcontextprotocol/related-task");
  lua_pop(L, 1);
  return 1;
}

static int result_wait(lua_State *L, mcp_call *c, mcp_task *t);

static int result_k(lua_State *L, int status, lua_KContext ctx) {
  mcp_call *c = mcp_call_current(L);
  mcp_task *t = mcp__task_find(c->session, lua_tostring(L, 1), 0);
  (void)status; (void)ctx;
  if (c->signalled) return push_error(L, RPC_REQUEST_CANCELLED, "Request cancelled");
  if (t == NULL) return push_error(L, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task has expired");
  if (!mcp__task_terminal(t->status)) return result_wait(L, c, t);
  return push_outcome(L, t);
}

static int result_wait(lua_State *L, mcp_call *c, mcp_task *t) {
  if (t->nwaiters == t->capwaiters) {
    int cap = t->capwaiters ? 2 * t->capwaiters : 4;
    mcp_call **w = realloc(t->waiters, (size_t)cap * sizeof *w);
    if (w == NULL) abort();
    t->waiters = w;
    t->capwaiters = cap;
  }
  t->waiters[t->nwaiters++] = c;
  mcp_call_wait(c, waiter_cleanup, t);
  /* It waits for the task, which has its own timeout and ttl. */
  c->timeout = 0;
  c->deadline_ns = c->due_ns = c->hard_ns = 0;
  mcp_call_rearm(c);
  return lua_yieldk(L, 0, 0, result_k);
}

int mcp_task_l_result(lua_State *L) {
  mcp_call *c = mcp_call_current(L);
  mcp_task *t;
  luaL_checkstring(L, 1);
  lua_settop(L, 1);
  if (c == NULL) return luaL_error(L, "task_result: not inside a request");
  mcp__task_sweep(0);
  t = mcp__task_find(c->session, lua_tostring(L, 1), 0);
  if (t == NULL) return push_error(L, MCP_RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
  if (!mcp__task_terminal(t->status)) {
    if (L != c->co) return luaL_error(L, "task_result: cannot wait here");
    return result_wait(L, c, t);
  }
  return push_outcome(L, t);
}

static void on_list(mcp_session *s, mcp_batch *b, void *stream, const char *key, json_t *params) {
  json_t *cursor = json_object_get(params, "cursor");
  unsigned long long after = 0;
  int n = 0;
  mcp_task *t, *last = NULL;
  mcp_buf out = MCP_BUF_INIT;
  if (cursor != NULL && !json_is_null(cursor)) {
    const char *cs = json_string_value(cursor);
    char *end;
    if (cs == NULL || *cs < '0' || *cs > '9' ||
        (after = strtoull(cs, &end, 10), *end != '\0') || after > mcp__task_seq()) {
      mcp__task_reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, "Invalid params: invalid cursor");
      return;
    }
  }
  mcp_rpc_result_open(&out, key);
  mcp_buf_adds(&out, "{\"tasks\":[");
  for (t = mcp__task_head(); t; t = t->next) {
    if (t->session != s || t->ext || t->seq <= after || !mcp__task_owned_by(t, s)) continue;
    if (n == mcp_cfg.page_size) break;
    if (n++) mcp_buf_addc(&out, ',');
    mcp__task_render(&out, t, NULL, 0);
    last = t;
  }
  mcp_buf_addc(&out, ']');
  for (; t; t = t->next)
    if (t->session == s && !t->ext && last && mcp__task_owned_by(t, s)) {
      mcp_buf_printf(&out, ",\"nextCursor\":\"%llu\"", last->seq);
      break;
    }
  mcp_buf_addc(&out, '}');
  mcp_rpc_close(&out);
  mcp__task_reply(s, b, stream, &out);
}

int mcp_task_request(mcp_session *s, mcp_batch *b, void *stream, const char *key,
                     const char *method, json_t *params) {
  mcp_task *t;
  mcp_buf out = MCP_BUF_INIT;
  char msg[128];
  int get = strcmp(method, "tasks/get") == 0, cancelling = strcmp(method, "tasks/cancel") == 0;
  if (!get && !cancelling && strcmp(method, "tasks/list") != 0) return 0;
  if (!mcp_sched_has_method("tasks/result")) return 0;    /* no tool offers tasks */
  mcp__task_sweep(1);
  if (!get && !cancelling) {
    on_list(s, b, stream, key, params);
    return 1;
  }
  if ((t = mcp__task_lookup(s, b, stream, key, params, 0)) == NULL) return 1;
  if (cancelling) {
    if (mcp__task_terminal(t->status)) {
      snprintf(msg, sizeof msg, "Cannot cancel task: already in terminal status '%s'",
               mcp__task_status_names[t->status]);
      mcp__task_reply_error(s, b, stream, key, MCP_RPC_INVALID_PARAMS, msg);
      return 1;
    }
    mcp__task_cancel(t);
  }
  mcp_rpc_result_open(&out, key);
  mcp__task_render(&out, t, NULL, 0);
  mcp_rpc_close(&out);
  mcp__task_reply(s, b, stream, &out);
  return 1;
}

void mcp_task_methods_init(void) {
  static const mcp_session_type row = { .request = mcp_task_request };
  mcp_session_register(&row);
}
