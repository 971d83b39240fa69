/* The request metadata headers of a 2026-07-28 POST against its body.
 *
 * A header value is plain visible ASCII (with space and tab inside), or the
 * Base64 of the value's UTF-8 bytes between the case-sensitive sentinels
 * "=?base64?" and "?=". Anything else (raw non-ASCII or control bytes, bad
 * Base64) is malformed. Mcp-Param-{Name} headers mirror the arguments a
 * tool marks with x-mcp-header (server.lua hands them over): a value in the
 * body needs its header, a header needs its value, and the two must be
 * equal (integers and reals compared as numbers, booleans as true/false). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "buf.h"
#include "headers.h"
#include "json.h"
#include "rev2026.h"
#include "sched.h"

#define B64_OPEN "=?base64?"
#define B64_CLOSE "?="

static int mismatch(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int mismatch(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(why, cap, "Header mismatch: ");
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < cap) vsnprintf(why + n, cap - (size_t)n, fmt, ap);
  va_end(ap);
  return 0;
}

/* Visible ASCII, space and tab only (RFC 9110, 5.5). */
static int header_safe(const char *v) {
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if (*p != '\t' && (*p < 0x20 || *p > 0x7e)) return 0;
  return 1;
}

/* The value header h stands for: h itself, or its Base64 decoded into out
 * (NUL-terminated; the value may hold NULs), in *text and *len; 0 with why
 * filled when h is malformed. */
static int header_value(const char *name, const char *h, mcp_buf *out, const char **text, size_t *len,
                        char *why, size_t cap) {
  size_t n = strlen(h), open = strlen(B64_OPEN), close = strlen(B64_CLOSE);
  if (!header_safe(h))
    return mismatch(why, cap, "%s header value has characters a header may not carry "
                              "(non-ASCII or control); such values are sent as " B64_OPEN "..." B64_CLOSE,
                    name);
  *text = h;
  *len = n;
  if (n >= open + close && strncmp(h, B64_OPEN, open) == 0 && strcmp(h + n - close, B64_CLOSE) == 0) {
    if (mcp_base64_decode(out, h + open, n - open - close, 0) != 0)
      return mismatch(why, cap, "%s header value '%.128s' is not valid Base64 (RFC 4648, padded)", name, h);
    mcp_buf_addc(out, '\0');
    *text = out->data;
    *len = out->len - 1;
  }
  return 1;
}

static int all_digits(const char **p) {
  const char *s = *p;
  while (isdigit((unsigned char)**p)) (*p)++;
  return *p > s;
}

/* A number as JSON writes it: -?digits(.digits)?([eE][+-]?digits)? */
static int number_text(const char *s) {
  if (*s == '-') s++;
  if (!all_digits(&s)) return 0;
  if (*s == '.' && (s++, !all_digits(&s))) return 0;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!all_digits(&s)) return 0;
  }
  return *s == '\0';
}

/* Header text of a number against the body's integer or real, numerically
 * ("42.0" is 42); integers written as integers compare exactly. */
static int number_matches(json_t *v, const char *text, size_t len) {
  const char *p = text;
  if (strlen(text) != len || !number_text(text)) return 0;
  if (*p == '-') p++;
  errno = 0;
  if (json_is_integer(v) && strspn(p, "0123456789") == strlen(p)) {
    long long i = strtoll(text, NULL, 10);
    return errno == 0 && i == json_integer_value(v);
  }
  return json_number_value(v) == strtod(text, NULL);
}

/* Does the decoded header text stand for the body value v? */
static int value_matches(json_t *v, const char *text, size_t len) {
  switch (json_typeof(v)) {
    case JSON_STRING:
      return json_string_length(v) == len && (len == 0 || memcmp(json_string_value(v), text, len) == 0);
    case JSON_TRUE: return len == 4 && memcmp(text, "true", 4) == 0;
    case JSON_FALSE: return len == 5 && memcmp(text, "false", 5) == 0;
    case JSON_INTEGER:
    case JSON_REAL: return number_matches(v, text, len);
    default: return 0;           /* an object or an array: no header can stand for it */
  }
}

/* The argument at path (property names from the arguments object), or NULL. */
static json_t *argument_at(json_t *args, json_t *path) {
  size_t i;
  json_t *key;
  json_array_foreach(path, i, key) {
    if (!json_is_object(args)) return NULL;
    args = json_object_get(args, json_string_value(key));
  }
  return args;
}

/* "arguments.a.b" */
static void path_text(json_t *path, char *out, size_t cap) {
  size_t i, n = (size_t)snprintf(out, cap, "arguments");
  json_t *key;
  json_array_foreach(path, i, key) {
    if (n >= cap) break;
    n += (size_t)snprintf(out + n, cap - n, ".%s", json_string_value(key));
  }
}

/* The Mcp-Param header of name (the last, *n of them), or NULL. */
static const char *param_header(const mcp_http_request *r, const char *name, int *n) {
  size_t skip = strlen(MCP_PARAM_PREFIX);
  const char *h = NULL;
  for (int i = 0; i < r->nfields; i++)
    if (strcasecmp(r->fields[i].name + skip, name) == 0) {
      h = r->fields[i].value;
      (*n)++;
    }
  return h;
}

/* One x-mcp-header declaration {name, path} against the headers and the
 * arguments. */
static int check_param(const mcp_http_request *r, json_t *decl, json_t *args, char *why, size_t cap) {
  const char *name = json_string_value(json_object_get(decl, "name")), *h = NULL;
  json_t *path = json_object_get(decl, "path"), *v = argument_at(args, path);
  char header[300], where[300];
  mcp_buf buf = MCP_BUF_INIT;
  const char *text;
  size_t len;
  int n = 0, ok;
  if (name == NULL) return 1;
  snprintf(header, sizeof header, "Mcp-Param-%.256s", name);
  path_text(path, where, sizeof where);
  h = param_header(r, name, &n);
  if (n > 1) return mismatch(why, cap, "%s header given %d times", header, n);
  if (v == NULL || json_is_null(v)) {
    if (h == NULL) return 1;
    return mismatch(why, cap, "%s header value '%.128s' does not match body value (none: %s is %s)",
                    header, h, where, v ? "null" : "absent");
  }
  if (h == NULL) return mismatch(why, cap, "%s header required (%s is in the body)", header, where);
  ok = header_value(header, h, &buf, &text, &len, why, cap);
  if (ok && !value_matches(v, text, len)) {
    char *body = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    ok = mismatch(why, cap, "%s header value '%.128s' does not match body value %.128s (%s)", header, h,
                  body ? body : "?", where);
    free(body);
  }
  mcp_buf_free(&buf);
  return ok;
}

/* The x-mcp-header declarations of tool (NULL: none): its policy says
 * when it has none, and Lua says which. */
static json_t *declared(const char *tool) {
  return tool != NULL && mcp_policy_headers(tool) != 0 ? mcp_sched_param_headers(tool) : NULL;
}

/* The Mcp-Param headers of a tools/call. A tool that is not there has none
 * (the call itself answers that). */
static int check_params(const mcp_http_request *r, json_t *params, char *why, size_t cap) {
  json_t *decls = declared(json_string_value(json_object_get(params, "name")));
  json_t *args = json_object_get(params, "arguments"), *d;
  size_t i;
  int ok = 1;
  json_array_foreach(decls, i, d) {
    if (!(ok = check_param(r, d, args, why, cap))) break;
  }
  json_decref(decls);
  return ok;
}

int mcp_headers_check(const mcp_http_request *r, json_t *msg, char *why, size_t cap) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  const char *version = mcp_rev2026_version(msg);
  json_t *params = json_object_get(msg, "params");
  const char *field = NULL, *want, *text;
  mcp_buf name = MCP_BUF_INIT;
  size_t len;
  int ok;
  if (r->protocol_version == NULL) return mismatch(why, cap, "MCP-Protocol-Version header required");
  if (version != NULL && strcmp(version, r->protocol_version) != 0)
    return mismatch(why, cap, "MCP-Protocol-Version header value '%.64s' does not match body value '%.64s'",
                    r->protocol_version, version);
  if (r->mcp_method == NULL) return mismatch(why, cap, "Mcp-Method header required");
  if (strcmp(r->mcp_method, method) != 0)
    return mismatch(why, cap, "Mcp-Method header value '%.128s' does not match body value '%.128s'",
                    r->mcp_method, method);
  if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0) field = "name";
  else if (strcmp(method, "resources/read") == 0) field = "uri";
  else if (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
           strcmp(method, "tasks/cancel") == 0)
    field = "taskId";               /* the tasks extension: routing to the task's server */
  if (field == NULL) return 1;
  want = json_string_value(json_object_get(params, field));
  if (r->mcp_name == NULL) return mismatch(why, cap, "Mcp-Name header required for %s", method);
  ok = header_value("Mcp-Name", r->mcp_name, &name, &text, &len, why, cap);
  if (ok && (want == NULL || strlen(want) != len || memcmp(text, want, len) != 0))
    ok = mismatch(why, cap, "Mcp-Name header value '%.128s' does not match body value '%.128s'",
                  r->mcp_name, want ? want : "(none)");
  mcp_buf_free(&name);
  if (ok && strcmp(method, "tools/call") == 0) ok = check_params(r, params, why, cap);
  return ok;
}

/* The same read from the request's text (session.c's reading, a kept
 * _meta): no tree. */

#define ARGS_MAX 64                /* members read at each level of the arguments */

/* The text of the argument at path in the arguments' text args (NULL: none)
 * into *v, *vn: NULL when it is absent or null, or when a level on the way
 * is not an object. 0 when this reading cannot tell: a key with an escape
 * on the way, a key given twice, more members than it reads. */
static int argument_text(const char *args, size_t n, json_t *path, const char **v, size_t *vn) {
  mcp_json_member m[ARGS_MAX];
  size_t i;
  json_t *key;
  *v = args;
  *vn = n;
  json_array_foreach(path, i, key) {
    const char *k = json_string_value(key), *at = NULL;
    size_t kn = strlen(k), atn = 0;
    int nm;
    if (*v == NULL || (*v)[0] != '{') {
      *v = NULL;
      return 1;
    }
    if ((nm = mcp_json_members(*v, *vn, m, ARGS_MAX)) < 0) return 0;
    for (int j = 0; j < nm; j++) {
      if (memchr(m[j].k, '\\', m[j].kn) != NULL) return 0;
      if (m[j].kn == kn + 2 && memcmp(m[j].k + 1, k, kn) == 0) {
        if (at != NULL) return 0;
        at = m[j].v;
        atn = m[j].vn;
      }
    }
    *v = at;
    *vn = atn;
  }
  if (*v != NULL && (*v)[0] == 'n') *v = NULL;       /* null */
  return 1;
}

/* Does the header text stand for the body value's text v? Read here: a
 * string without escapes, true, false, an integer of up to 15 digits
 * written as the header writes it; 0 for anything else. */
static int value_text_matches(const char *v, size_t vn, const char *text, size_t len) {
  size_t i = v[0] == '-';
  if (v[0] == '"') return memchr(v, '\\', vn) == NULL && vn - 2 == len && memcmp(v + 1, text, len) == 0;
  if (v[0] != 't' && v[0] != 'f') {
    if (vn - i == 0 || vn - i > 15) return 0;
    for (; i < vn; i++)
      if (v[i] < '0' || v[i] > '9') return 0;
  }
  return vn == len && memcmp(v, text, len) == 0;
}

static int param_agrees(const mcp_http_request *r, json_t *decl, const mcp_request_text *rt) {
  const char *name = json_string_value(json_object_get(decl, "name")), *h, *v, *text;
  size_t vn, len;
  mcp_buf buf = MCP_BUF_INIT;
  char why[160];
  int n = 0, ok;
  if (name == NULL) return 1;
  h = param_header(r, name, &n);
  if (n > 1 || !argument_text(rt->args, rt->args_len, json_object_get(decl, "path"), &v, &vn)) return 0;
  if (v == NULL || h == NULL) return v == NULL && h == NULL;
  ok = header_value(name, h, &buf, &text, &len, why, sizeof why) && value_text_matches(v, vn, text, len);
  mcp_buf_free(&buf);
  return ok;
}

int mcp_headers_agree_text(const mcp_http_request *r, const mcp_call_text *ct) {
  const char *version = mcp_rev2026_kept_version(ct->meta, ct->meta_len), *text;
  mcp_buf buf = MCP_BUF_INIT;
  json_t *decls, *d;
  size_t i, len;
  char why[160];
  int ok;
  if (version == NULL || r->protocol_version == NULL || strcmp(version, r->protocol_version) != 0 ||
      r->mcp_method == NULL || strcmp(r->mcp_method, "tools/call") != 0 || r->mcp_name == NULL)
    return 0;
  ok = header_value("Mcp-Name", r->mcp_name, &buf, &text, &len, why, sizeof why) &&
       len == strlen(ct->tool) && memcmp(text, ct->tool, len) == 0;
  mcp_buf_free(&buf);
  if (!ok) return 0;
  decls = declared(ct->tool);
  json_array_foreach(decls, i, d) {
    if (!(ok = param_agrees(r, d, &ct->rt))) break;
  }
  json_decref(decls);
  return ok;
}
