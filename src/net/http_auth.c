/* OAuth at the Streamable HTTP transport (auth.c does the checks): the
 * Protected Resource Metadata, requests waiting on their token's check,
 * the 401/400/503 answers with their challenges, and the 403 of a tools/call
 * whose token lacks the tool's scopes. See http_auth.h. */
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>
#include <jansson.h>

#include "auth.h"
#include "http_auth.h"
#include "json.h"
#include "log.h"
#include "rpc.h"
#include "sched.h"

/* A request waiting on its token's check. Owned by W.pending: freed when
 * the check ends (on_auth) or the connection goes (mcp_http_auth_closed).
 * Its request's strings stay in the connection's buffers: the connection
 * reads no further request until this one is answered. */
typedef struct authwait {
  mcp_http_conn *c;
  mcp_http_request r;
  mcp_http_serve_fn serve;
  mcp_auth_wait *w;
  struct authwait *prev, *next;
} authwait;

static struct {
  authwait *pending;
} W;

/* The scopes tool needs that id lacks, space-separated, into missing
 * (nothing when it lacks none). */
static void scopes_missing(const char *tool, const mcp_identity *id, mcp_buf *missing) {
  char *need = mcp_sched_tool_scopes(tool), *p;
  for (p = need; p && *p;) {
    size_t n = strcspn(p, " ");
    char save = p[n];
    p[n] = '\0';
    if (!mcp_identity_has(id, p)) mcp_buf_printf(missing, "%s%s", missing->len ? " " : "", p);
    p[n] = save;
    p += n + (save != '\0');
  }
  free(need);
}

int mcp_http_auth_tool_allowed(const char *tool, const mcp_identity *id) {
  mcp_buf missing = MCP_BUF_INIT;
  int ok;
  scopes_missing(tool, id, &missing);
  ok = missing.len == 0;
  mcp_buf_free(&missing);
  return ok;
}

/* Does the identity hold the scopes of the tools/call m? Else
 * answer 403 insufficient_scope with the scopes to ask for (those granted
 * and those needed, so that a new token loses none) and return 0. */
static int scopes_allow_one(mcp_http_conn *c, json_t *m, const mcp_identity *id) {
  const char *method = json_string_value(json_object_get(m, "method"));
  const char *name = json_string_value(json_object_get(json_object_get(m, "params"), "name"));
  char *key;
  mcp_buf want = MCP_BUF_INIT, hdr = MCP_BUF_INIT, out = MCP_BUF_INIT, missing = MCP_BUF_INIT;
  if (method == NULL || strcmp(method, "tools/call") != 0 || name == NULL) return 1;
  scopes_missing(name, id, &missing);
  if (missing.len == 0) return 1;
  for (int i = 0; i < id->nscopes; i++) mcp_buf_printf(&want, "%s ", id->scopes[i]);
  mcp_buf_add(&want, missing.data, missing.len);
  mcp_buf_addc(&want, '\0');
  mcp_buf_addc(&missing, '\0');
  mcp_auth_challenge(&hdr, NULL, want.data);
  mcp_buf_addc(&hdr, '\0');
  key = json_object_get(m, "id") ? json_dumps(json_object_get(m, "id"), JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  mcp_rpc_error(&out, key, -32600, "Forbidden: insufficient scope: tool %.128s needs %s", name, missing.data);
  mcp_info("http: 403: %.64s may not call %.128s: missing scope %s", id->subject, name, missing.data);
  mcp_http_respond(c, 403, hdr.data, "application/json", out.data, out.len);
  mcp_auth_count("insufficient_scope");
  free(key);
  mcp_buf_free(&want);
  mcp_buf_free(&hdr);
  mcp_buf_free(&out);
  mcp_buf_free(&missing);
  return 0;
}

int mcp_http_auth_scopes(mcp_http_conn *c, json_t *msg, const mcp_identity *id) {
  for (size_t i = 0; json_is_array(msg) && i < json_array_size(msg); i++)
    if (!scopes_allow_one(c, json_array_get(msg, i), id)) return 0;
  return json_is_array(msg) || scopes_allow_one(c, msg, id);
}

/* The Protected Resource Metadata (RFC 9728): public, readable from any
 * origin (browser clients discover the authorization server with it). */
void mcp_http_auth_metadata(mcp_http_conn *c, const mcp_http_request *r) {
  mcp_buf out = MCP_BUF_INIT, arr = MCP_BUF_INIT;
  char *all;
  if (r->method == HTTP_OPTIONS) {
    mcp_http_respond(c, 204, "Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Methods: GET\r\n"
                         "Access-Control-Allow-Headers: MCP-Protocol-Version\r\n", NULL, NULL, 0);
    return;
  }
  if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
    mcp_rpc_error(&out, NULL, -32600, "%s", "Method Not Allowed");
    mcp_http_respond(c, 405, "Allow: GET\r\n", "application/json", out.data, out.len);
    mcp_buf_free(&out);
    return;
  }
  all = mcp_sched_tool_scopes(NULL);
  mcp_buf_addc(&arr, '[');
  for (char *p = all; p && *p;) {
    size_t n = strcspn(p, " ");
    if (arr.len > 1) mcp_buf_addc(&arr, ',');
    mcp_json_add_string(&arr, p, n);
    p += n + (p[n] != '\0');
  }
  mcp_buf_adds(&arr, "]");
  mcp_buf_addc(&arr, '\0');
  mcp_auth_metadata(&out, arr.data);
  mcp_http_respond(c, 200, "Access-Control-Allow-Origin: *\r\nCache-Control: max-age=60\r\n", "application/json",
               out.data, out.len);
  free(all);
  mcp_buf_free(&out);
  mcp_buf_free(&arr);
}

/* The scopes a 401 names: the tool's, for a tools/call of one that has
 * some; else every tool's. The caller frees it. */
static char *scope_hint(const mcp_http_request *r) {
  json_t *v = mcp_json_parse(r->body, r->body_len, NULL, 0);
  const char *name = NULL;
  char *s = NULL;
  if (json_is_object(v) && json_is_string(json_object_get(v, "method")) &&
      strcmp(json_string_value(json_object_get(v, "method")), "tools/call") == 0)
    name = json_string_value(json_object_get(json_object_get(v, "params"), "name"));
  if (name != NULL) s = mcp_sched_tool_scopes(name);
  json_decref(v);
  return s ? s : mcp_sched_tool_scopes(NULL);
}

static void auth_refuse(mcp_http_conn *c, const mcp_http_request *r, const mcp_auth_failure *f) {
  mcp_buf hdr = MCP_BUF_INIT, out = MCP_BUF_INIT;
  char *scope = f->status == 401 ? scope_hint(r) : NULL;
  if (f->status == 401 || f->status == 400) mcp_auth_challenge(&hdr, f, scope);
  else mcp_buf_adds(&hdr, "Retry-After: 5\r\n");
  mcp_buf_addc(&hdr, '\0');
  mcp_rpc_error(&out, NULL, -32600, "%s: %s",
                f->status == 401 ? "Unauthorized" : f->status == 400 ? "Bad Request" : "Service Unavailable",
                f->description);
  mcp_http_respond(c, f->status, hdr.data, "application/json", out.data, out.len);
  free(scope);
  mcp_buf_free(&hdr);
  mcp_buf_free(&out);
}

static void authwait_unlink(authwait *p) {
  if (p->prev) p->prev->next = p->next; else W.pending = p->next;
  if (p->next) p->next->prev = p->prev;
}

static void on_auth(void *ud, mcp_identity *id, const mcp_auth_failure *f) {
  authwait *p = ud;
  mcp_http_conn *c = p->c;
  mcp_http_request r = p->r;
  mcp_http_serve_fn serve = p->serve;
  authwait_unlink(p);
  free(p);
  if (f != NULL) {
    auth_refuse(c, &r, f);
    return;
  }
  serve(c, &r, id);
  mcp_identity_unref(id);
}

/* RFC 6750 2.3 allows a token in the query; OAuth 2.1 and the MCP spec do
 * not: such a request is refused, not merely unauthenticated. */
static int query_has_token(const mcp_http_request *r) {
  static const char k[] = "access_token=";
  for (size_t i = 0; r->query != NULL && i + sizeof k - 1 <= r->query_len; i++)
    if ((i == 0 || r->query[i - 1] == '&') && memcmp(r->query + i, k, sizeof k - 1) == 0) return 1;
  return 0;
}

void mcp_http_auth_begin(mcp_http_conn *c, const mcp_http_request *r, mcp_http_serve_fn serve) {
  authwait *p;
  mcp_auth_wait *w;
  if (query_has_token(r)) {
    mcp_auth_failure f = { 400, "invalid_request", "access tokens are not accepted in the query string" };
    mcp_auth_count("invalid_request");
    auth_refuse(c, r, &f);
    return;
  }
  if ((p = calloc(1, sizeof *p)) == NULL) abort();
  p->c = c;
  p->r = *r;
  p->serve = serve;
  p->next = W.pending;
  if (W.pending) W.pending->prev = p;
  W.pending = p;
  if ((w = mcp_auth_check(r->authorization, on_auth, p)) != NULL) p->w = w;   /* else p is gone */
}

void mcp_http_auth_closed(mcp_http_conn *c) {
  for (authwait *p = W.pending; p; p = p->next)
    if (p->c == c) {
      mcp_auth_cancel(p->w);
      authwait_unlink(p);
      free(p);
      return;
    }
}

int mcp_http_auth_waiting(void) { return W.pending != NULL; }
