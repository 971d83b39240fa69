/* The flags: one table, a row per flag (Redis's standardConfig in
 * config.c is the model). From the rows come the help text, which flags
 * take a value, applying a value (one parser per kind of value), the
 * configuration file's keys (lua/mcp/config.lua asks for them: require
 * "mcp.flags") and --no-FLAG for the booleans. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "allow.h"
#include "buf.h"
#include "flags.h"
#include "log.h"

mcp_opts mcp_flags;

static const char *const log_levels[] = {
  "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", NULL
};
static const char *const log_formats[] = { "text", "json", NULL };
static const char *const web[] = { "http", "https", NULL };
static const char *const redis[] = { "redis", NULL };
static const char *const scopes[] = { "user", "project", NULL };

#define S MCP_FLAG_SERVER
#define T MCP_FLAG_TOOLS
#define ROW(name, key, kind, scope, arg, lo, hi, def, unit, choices, var, help) \
  { name, key, kind, scope, arg, lo, hi, def, unit, choices, var, help }
#define ACTION(name, scope, help) ROW(name, NULL, MCP_KIND_ACTION, scope, NULL, 0, 0, 0, 1, NULL, NULL, help)
#define BOOL(name, key, scope, var, help) ROW(name, key, MCP_KIND_BOOL, scope, NULL, 0, 0, 0, 1, NULL, var, help)
#define STRING(name, key, scope, arg, minlen, var, help) \
  ROW(name, key, MCP_KIND_STRING, scope, arg, minlen, 0, 0, 1, NULL, var, help)
#define LIST(name, key, scope, arg, var, help) \
  ROW(name, key, MCP_KIND_LIST, (scope) | MCP_FLAG_REPEAT, arg, 0, 0, 0, 1, NULL, var, help)
#define SECONDS(name, key, scope, lo, def, var, help) \
  ROW(name, key, MCP_KIND_SECONDS, scope, "SECONDS", lo, 1e9, def, 1, NULL, var, help)
#define BYTES(name, key, scope, arg, lo, def, unit, var, help) \
  ROW(name, key, MCP_KIND_BYTES, scope, arg, lo, 1e12 / (unit), def, unit, NULL, var, help)
#define COUNT(name, key, scope, lo, def, var, help) \
  ROW(name, key, MCP_KIND_COUNT, scope, "N", lo, 1e9, def, 1, NULL, var, help)
#define HOSTPORT(name, key, scope, var, help) \
  ROW(name, key, MCP_KIND_HOSTPORT, scope, "HOST:PORT", 0, 0, 0, 1, NULL, var, help)
#define URL(name, key, scope, arg, schemes, var, help) \
  ROW(name, key, MCP_KIND_URL, scope, arg, 0, 0, 0, 1, schemes, var, help)
#define ENUM(name, key, scope, arg, choices, def, var, help) \
  ROW(name, key, MCP_KIND_ENUM, scope, arg, 0, 0, def, 1, choices, var, help)

/* otel = {KEY = ...} in the file: otel_KEY, a string read as the OTEL_*
 * variable of the same name is (src/net/otel.c), which it overrides. */
#define OTEL(name, key, field, help) \
  ROW("otel-" name, "otel_" key, MCP_KIND_STRING, MCP_FLAG_FILE, "VALUE", 0, 0, 0, 1, NULL, \
      &mcp_flags.otel.field, help)

static const mcp_flag table[] = {
  STRING("config", NULL, S | T, "FILE", 0, &mcp_flags.config,
         "read flags and plugins' settings from FILE, a Lua file returning a table (see luamcp(1)); "
         "a flag given here wins"),
  LIST("plugins", "plugins", S | T, "DIR", &mcp_flags.plugins,
       "load DIR/*.lua as plugins (default ./plugins); DIR/lib/?.lua is on package.path"),
  LIST("sandbox", "sandbox", S | T, "DIR", &mcp_flags.sandbox,
       "load DIR/*.lua as sandboxed plugins: no io, os or debug, and only what the configuration file's "
       "sandbox.grants give each (see docs/guide/12-untrusted-plugins.md)"),
  SECONDS("timeout", "timeout", S | T, 0, 60, &mcp_cfg.timeout, "default tool timeout; 0 = none"),
  SECONDS("grace", "grace", S | T, 0, 2, &mcp_cfg.grace,
          "default grace before a cancelled handler is aborted"),
  ENUM("log-level", "log_level", S | T, "LEVEL", log_levels, 1, &mcp_flags.log_level, "stderr threshold"),
  BYTES("max-line", "max_line", S | T, "BYTES", 64, 4194304, 1, &mcp_cfg.max_line, "largest stdio message"),
  BYTES("memory-limit", "memory_limit", S | T, "MB", 0, 256, 1 << 20, &mcp_cfg.memory_limit,
        "Lua memory limit; 0 = none"),
  COUNT("page-size", "page_size", S | T, 1, 50, &mcp_cfg.page_size, "items per list page"),
  ROW("state-ttl", "state_ttl", MCP_KIND_SECONDS, S | T | MCP_FLAG_ABOVE, "SECONDS", 0, 1e9, 3600, 1, NULL,
      &mcp_cfg.state_ttl,
      "how long an input-required result's requestState is accepted back (2026-07-28 clients)"),
  ROW("http-allow", "http_allow", MCP_KIND_HOSTS, S | T | MCP_FLAG_REPEAT, "HOST[:PORT]", 0, 0, 0, 1, NULL, NULL,
      "handlers' HTTP requests (ctx:http) may reach only these hosts; a name resolving to a loopback, "
      "private or link-local address is refused unless named as such"),
  HOSTPORT("http", "http", S, &mcp_flags.http, "serve Streamable HTTP instead of stdio (port 0: any)"),
  LIST("allow-origin", "allow_origin", S, "ORIGIN", &mcp_flags.origins,
       "also accept this Origin (localhost origins always are)"),
  STRING("token", "token", S, "TOKEN", 0, &mcp_flags.token,
         "require Authorization: Bearer TOKEN (or $LUAMCP_TOKEN)"),
  BOOL("console", "console", S, &mcp_flags.console,
       "serve the console, a page to watch and steer calls, at /console (loopback only, unless "
       "--console-scope with OAuth); its URL with a token is printed at start"),
  STRING("console-scope", "console_scope", S, "SCOPE", 1, &mcp_flags.console_scope,
         "OAuth: the scope a bearer token needs for the console (lets it listen beyond loopback)"),
  URL("auth-audience", "auth_audience", S, "URL", web, &mcp_flags.auth_audience,
      "OAuth: this server's canonical URI (e.g. https://host/mcp); tokens must be issued for it (RFC 8707)"),
  URL("auth-issuer", "auth_issuer", S, "URL", web, &mcp_flags.auth_issuer,
      "OAuth: the authorization server; its metadata gives the keys JWT access tokens are verified with"),
  STRING("auth-jwks", "auth_jwks", S, "FILE|URL", 1, &mcp_flags.auth_jwks, "OAuth: the keys, without discovery"),
  URL("auth-introspect", "auth_introspect", S, "URL", web, &mcp_flags.auth_introspect,
      "OAuth: introspect tokens that are not JWTs (RFC 7662; client credentials from "
      "$LUAMCP_AUTH_CLIENT=id:secret)"),
  BYTES("max-body", "max_body", S, "BYTES", 1024, 4194304, 1, &mcp_flags.max_body, "largest POST body"),
  COUNT("max-connections", "max_connections", S, 1, 256, &mcp_flags.max_connections, "concurrent connections"),
  COUNT("max-sessions", "max_sessions", S, 1, 1024, &mcp_flags.max_sessions, "open HTTP sessions"),
  ROW("idle-timeout", "idle_timeout", MCP_KIND_SECONDS, S | MCP_FLAG_ABOVE, "SECONDS", 0, 1e6, 60, 1, NULL,
      &mcp_flags.idle_timeout, "close idle keep-alive connections"),
  SECONDS("drain", "drain", S, 0, 10, &mcp_cfg.drain,
          "on SIGTERM (HTTP), refuse new requests and let calls finish this long, then cancel the rest; "
          "0 = none"),
  HOSTPORT("metrics", "metrics", S, &mcp_cfg.metrics,
           "serve /metrics, /healthz, /readyz on a listener of their own, unauthenticated "
           "(with --http they are on it too)"),
  URL("store", "store", S, "redis://HOST:PORT/DB", redis, &mcp_flags.store,
      "keep tasks in Redis, shared by the instances behind one load balancer (see luamcp(1))"),
  STRING("access-log", "access_log", S, "FILE", 1, &mcp_cfg.access_log,
         "one JSON line per finished request (- for stderr)"),
  ENUM("log-format", "log_format", S, "FORMAT", log_formats, 0, &mcp_log_json,
       "the stderr log's format (json: a JSON object a line)"),
  BOOL("watch", "watch", S, &mcp_flags.watch, "reload plugins when their files (or --config FILE) change"),
  BOOL("test-clock", "test_clock", S, &mcp_cfg.test_clock,
       "let clients move the clock (notifications/luamcp/advance): for plugin tests only"),
  OTEL("endpoint", "endpoint", endpoint, "OTLP/HTTP base URL; traces go to BASE/v1/traces"),
  OTEL("traces-endpoint", "traces_endpoint", traces_endpoint, "OTLP/HTTP traces URL, used as it is"),
  OTEL("protocol", "protocol", protocol, "http/protobuf or http/json"),
  OTEL("headers", "headers", headers, "key=value,... sent with every export"),
  OTEL("service-name", "service_name", service_name, "the resource's service.name"),
  OTEL("resource-attributes", "resource_attributes", resource_attributes, "key=value,... of the resource"),
  OTEL("sampler", "sampler", sampler, "always_on, always_off, traceidratio, parentbased_*"),
  OTEL("sampler-arg", "sampler_arg", sampler_arg, "traceidratio's ratio"),
  OTEL("schedule-delay", "schedule_delay", schedule_delay, "milliseconds between exports"),
  OTEL("max-queue-size", "max_queue_size", max_queue_size, "spans kept waiting for export"),
  OTEL("export-timeout", "export_timeout", export_timeout, "milliseconds an export may take"),
  OTEL("db-statement", "db_statement", db_statement, "SQL spans carry the statement's text"),
  BOOL("json", NULL, T, &mcp_flags.json, "list, call: print the raw JSON"),
  STRING("dir", NULL, T, "DIR", 1, &mcp_flags.dir, "new: where the plugin goes (default plugins/)"),
  STRING("spec-dir", NULL, T, "DIR", 1, &mcp_flags.spec_dir, "new: where its spec goes (default spec/)"),
  /* luamcp install / uninstall CLIENT (lua/mcp/cli_install.lua) */
  STRING("name", NULL, T, "NAME", 1, &mcp_flags.name,
         "install: the server's name in the client; pack: the bundle's name (default: the directory's)"),
  LIST("env", NULL, T, "K=V", &mcp_flags.env, "install: a variable of the server's environment, in the entry"),
  ENUM("scope", NULL, T, "SCOPE", scopes, 1, &mcp_flags.scope,
       "install: the client's user-wide file or the project's (where the client has both)"),
  STRING("config-path", NULL, T, "FILE", 1, &mcp_flags.config_path,
         "install: the client's file to change, instead of its usual place"),
  URL("url", NULL, T, "URL", web, &mcp_flags.url, "install: a remote server (Streamable HTTP) instead of this one"),
  STRING("bearer-env", NULL, T, "VAR", 1, &mcp_flags.bearer_env,
         "install --url: send Authorization: Bearer with the value of $VAR, read by the client"),
  BOOL("dry-run", NULL, T, &mcp_flags.dry_run, "install, uninstall: print what would change and change nothing"),
  /* luamcp pack */
  STRING("output", NULL, T, "FILE", 1, &mcp_flags.pack.output, "pack: the bundle's file (default NAME.mcpb; also -o)"),
  STRING("description", NULL, T, "TEXT", 1, &mcp_flags.pack.description, "pack: the bundle's description"),
  STRING("author", NULL, T, "NAME", 1, &mcp_flags.pack.author, "pack: the bundle's author (default $USER)"),
  STRING("bundle-version", NULL, T, "VERSION", 1, &mcp_flags.pack.version,
         "pack: the bundle's version (default 0.1.0)"),
  ACTION("version", S, "print the version and exit"),
  ACTION("help", S | T, "print this and exit (also -h)"),
};

#define NFLAGS (sizeof table / sizeof table[0])

static unsigned char was_set[NFLAGS];

void mcp_flags_defaults(void) {
  for (size_t i = 0; i < NFLAGS; i++) {
    const mcp_flag *f = &table[i];
    switch (f->kind) {
    case MCP_KIND_SECONDS: *(double *)f->var = f->def; break;
    case MCP_KIND_BYTES: *(size_t *)f->var = (size_t)(f->def * f->unit); break;
    case MCP_KIND_COUNT: case MCP_KIND_ENUM: *(int *)f->var = (int)f->def; break;
    case MCP_KIND_HOSTPORT: ((mcp_hostport *)f->var)->port = -1; break;
    default: break;
    }
  }
}

const mcp_flag *mcp_flag_find(const char *arg, int *no) {
  *no = 0;
  if (strcmp(arg, "-h") == 0) arg = "--help";
  if (strcmp(arg, "-o") == 0) arg = "--output";
  if (strncmp(arg, "--", 2) != 0) return NULL;
  arg += 2;
  for (size_t i = 0; i < NFLAGS; i++)
    if (strcmp(arg, table[i].name) == 0) return &table[i];
  if (strncmp(arg, "no-", 3) != 0) return NULL;
  for (size_t i = 0; i < NFLAGS; i++)
    if (table[i].kind == MCP_KIND_BOOL && strcmp(arg + 3, table[i].name) == 0) return *no = 1, &table[i];
  return NULL;
}

int mcp_flag_takes_value(const char *arg) {
  int no;
  const mcp_flag *f = mcp_flag_find(arg, &no);
  return f != NULL && f->kind != MCP_KIND_BOOL && f->kind != MCP_KIND_ACTION;
}

int mcp_flag_given(const mcp_flag *f, int argc, char **argv, int first) {
  int no;
  for (int i = first; i < argc; i += 1 + mcp_flag_takes_value(argv[i]))
    if (mcp_flag_find(argv[i], &no) == f) return 1;
  return 0;
}

int mcp_flag_was_set(const mcp_flag *f) {
  return was_set[f - table];
}

/* The parsers, one per kind: 1 if v is one, with the value in *out. */

/* A number written whole (no "1x", no "inf"), in f's bounds. */
static int parse_number(const mcp_flag *f, const char *v, double *out) {
  char *end;
  double d = strtod(v, &end);
  if (*v == '\0' || *end != '\0' || !isfinite(d) || d > f->hi) return 0;
  if ((f->flags & MCP_FLAG_ABOVE) ? d <= f->lo : d < f->lo) return 0;
  *out = d;
  return 1;
}

static int parse_whole(const mcp_flag *f, const char *v, double *out) {
  return parse_number(f, v, out) && *out == floor(*out);
}

/* SCHEME://REST, REST not empty, SCHEME one of f's. */
static int parse_url(const mcp_flag *f, const char *v) {
  const char *sep = strstr(v, "://");
  if (sep == NULL || sep[3] == '\0') return 0;
  for (int i = 0; f->choices[i] != NULL; i++)
    if (strlen(f->choices[i]) == (size_t)(sep - v) && strncmp(v, f->choices[i], (size_t)(sep - v)) == 0)
      return 1;
  return 0;
}

static int parse_enum(const mcp_flag *f, const char *v) {
  for (int i = 0; f->choices[i] != NULL; i++)
    if (strcmp(v, f->choices[i]) == 0) return i;
  return -1;
}

static void list_add(mcp_flag_list *l, const char *v) {
  if (l->n + 1 >= l->cap) {
    l->cap = l->cap ? 2 * l->cap : 8;
    if ((l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v)) == NULL) abort();
  }
  l->v[l->n++] = v;
  l->v[l->n] = NULL;
}

/* Parse v by f's kind and store it: 1, or 0 if it is not one. */
static int set(const mcp_flag *f, int no, const char *v) {
  double d;
  int i;
  switch (f->kind) {
  case MCP_KIND_ACTION: return 1;
  case MCP_KIND_BOOL: *(int *)f->var = !no; return 1;
  case MCP_KIND_STRING:
    if (strlen(v) < f->lo) return 0;
    *(const char **)f->var = v;
    return 1;
  case MCP_KIND_LIST: list_add(f->var, v); return 1;
  case MCP_KIND_HOSTS: return mcp_allow_add(mcp_allow_server(1), v) == 0;
  case MCP_KIND_SECONDS:
    if (!parse_number(f, v, &d)) return 0;
    *(double *)f->var = d;
    return 1;
  case MCP_KIND_BYTES:
    if (!parse_whole(f, v, &d)) return 0;
    *(size_t *)f->var = (size_t)(d * f->unit);
    return 1;
  case MCP_KIND_COUNT:
    if (!parse_whole(f, v, &d)) return 0;
    *(int *)f->var = (int)d;
    return 1;
  case MCP_KIND_HOSTPORT: {
    mcp_hostport *hp = f->var;
    return mcp_parse_hostport(v, hp->host, sizeof hp->host, &hp->port);
  }
  case MCP_KIND_URL:
    if (!parse_url(f, v)) return 0;
    *(const char **)f->var = v;
    return 1;
  case MCP_KIND_ENUM:
    if ((i = parse_enum(f, v)) < 0) return 0;
    *(int *)f->var = i;
    return 1;
  }
  return 0;
}

/* What f wants, for an error: " (want SECONDS >= 0)". */
static void want(const mcp_flag *f, char *out, size_t cap) {
  size_t n;
  switch (f->kind) {
  case MCP_KIND_SECONDS: case MCP_KIND_BYTES: case MCP_KIND_COUNT:
    snprintf(out, cap, " (want %s, a %snumber %s %g)", f->arg, f->kind == MCP_KIND_SECONDS ? "" : "whole ",
             (f->flags & MCP_FLAG_ABOVE) ? ">" : ">=", f->lo);
    return;
  case MCP_KIND_STRING:
    snprintf(out, cap, f->lo > 0 ? " (want a %s)" : "", f->arg);
    return;
  case MCP_KIND_URL:
    if (f->choices[1] == NULL) {
      snprintf(out, cap, " (want %s)", f->arg);
      return;
    }
    /* fall through */
  case MCP_KIND_ENUM:
    n = (size_t)snprintf(out, cap, " (want ");
    for (int i = 0; f->choices[i] != NULL && n < cap; i++)
      n += (size_t)snprintf(out + n, cap - n, "%s%s%s", i == 0 ? "" : f->choices[i + 1] ? ", " : " or ",
                            f->choices[i], f->kind == MCP_KIND_URL ? "://..." : "");
    if (n < cap) snprintf(out + n, cap - n, ")");
    return;
  default:
    snprintf(out, cap, f->arg ? " (want %s)" : "", f->arg);
  }
}

int mcp_flag_apply(const mcp_flag *f, int no, const char *value, const char *where, const char *usage) {
  char w[160], what[400];
  if (set(f, no, value)) {
    was_set[f - table] = 1;
    return 0;
  }
  want(f, w, sizeof w);
  if (where != NULL) return mcp_conffile_bad(where, f->name, w);
  snprintf(what, sizeof what, "bad --%s%s: %.200s", f->name, w, value);
  return mcp_usage_error(usage, "%s", what);
}

int mcp_flags_apply_file(const mcp_conffile *conf, unsigned scope, int argc, char **argv, int first) {
  int no, r;
  for (int i = 0; i < conf->n; i++) {
    const mcp_conffile_opt *o = &conf->opt[i];
    const mcp_flag *f = mcp_flag_find(o->flag, &no);
    if (f == NULL || !(f->flags & scope) || mcp_flag_given(f, argc, argv, first)) continue;
    if ((r = mcp_flag_apply(f, no, o->value, o->where, NULL)) != 0) return r;
  }
  return 0;
}

/* The help text. */

static void addf(mcp_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) mcp_buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

#define HELP_COL 22
#define WIDTH 80

/* text's words from column col (where the first goes), wrapped at WIDTH
 * under column HELP_COL. */
static void add_wrapped(mcp_buf *b, const char *text, int col) {
  int first = 1;
  while (*text != '\0') {
    size_t w = strcspn(text, " ");
    if (!first && col + 1 + (int)w > WIDTH) {
      addf(b, "\n%*s", HELP_COL, "");
      col = HELP_COL;
    } else if (!first) {
      mcp_buf_add(b, " ", 1);
      col++;
    }
    mcp_buf_add(b, text, w);
    col += (int)w;
    text += w;
    first = 0;
    while (*text == ' ') text++;
  }
  mcp_buf_add(b, "\n", 1);
}

static void add_default(const mcp_flag *f, char *out, size_t cap) {
  out[0] = '\0';
  if (f->kind == MCP_KIND_SECONDS || f->kind == MCP_KIND_BYTES || f->kind == MCP_KIND_COUNT)
    snprintf(out, cap, " (%.15g)", f->def);
  else if (f->kind == MCP_KIND_ENUM)
    snprintf(out, cap, " (%s)", f->choices[(int)f->def]);
}

static void add_flag_line(mcp_buf *b, const mcp_flag *f) {
  char text[600], def[64];
  int col;
  size_t start = b->len;
  addf(b, "  --%s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
  col = (int)(b->len - start);
  if (col < HELP_COL) addf(b, "%*s", HELP_COL - col, "");
  else addf(b, "\n%*s", HELP_COL, "");
  col = HELP_COL;
  add_default(f, def, sizeof def);
  if (f->kind == MCP_KIND_ENUM) {
    size_t n = (size_t)snprintf(text, sizeof text, "%s:", f->help);
    for (int i = 0; f->choices[i] != NULL && n < sizeof text; i++)
      n += (size_t)snprintf(text + n, sizeof text - n, " %s", f->choices[i]);
    if (n < sizeof text) snprintf(text + n, sizeof text - n, "%s", def);
  } else {
    snprintf(text, sizeof text, "%s%s", f->help, def);
  }
  add_wrapped(b, text, col);
}

static void add_synopsis(mcp_buf *b, unsigned scope) {
  int col = (int)strlen("usage: luamcp");
  mcp_buf_adds(b, "usage: luamcp");
  for (size_t i = 0; i < NFLAGS; i++) {
    const mcp_flag *f = &table[i];
    char item[80];
    if (!(f->flags & scope)) continue;
    int n = snprintf(item, sizeof item, "[--%s%s%s]%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "",
                     (f->flags & MCP_FLAG_REPEAT) ? "..." : "");
    if (col + 1 + n > WIDTH + 20) {
      addf(b, "\n%14s", "");
      col = 14;
    } else {
      mcp_buf_add(b, " ", 1);
      col++;
    }
    mcp_buf_add(b, item, (size_t)n);
    col += n;
  }
  mcp_buf_add(b, "\n", 1);
}

const char *mcp_flags_usage(unsigned scope, const char *head) {
  static mcp_buf text[2];
  mcp_buf *b = &text[scope == MCP_FLAG_SERVER ? 0 : 1];
  if (b->len > 0) return b->data;
  if (scope == MCP_FLAG_SERVER) add_synopsis(b, scope);
  mcp_buf_add(b, head, strlen(head));
  for (size_t i = 0; i < NFLAGS; i++)
    if (table[i].flags & scope) add_flag_line(b, &table[i]);
  for (size_t i = 0; i < NFLAGS; i++)
    if ((table[i].flags & scope) && table[i].kind == MCP_KIND_BOOL) {
      addf(b, "--no-FLAG turns a flag without a value off (--no-%s).\n", table[i].name);
      break;
    }
  mcp_buf_add(b, "", 1);          /* the terminating NUL */
  return b->data;
}

void mcp_flags_free(void) {
  free(mcp_flags.plugins.v);
  free(mcp_flags.origins.v);
  free(mcp_flags.sandbox.v);
  free(mcp_flags.env.v);
  memset(&mcp_flags.env, 0, sizeof mcp_flags.env);
  memset(&mcp_flags.sandbox, 0, sizeof mcp_flags.sandbox);
  memset(&mcp_flags.plugins, 0, sizeof mcp_flags.plugins);
  memset(&mcp_flags.origins, 0, sizeof mcp_flags.origins);
}

/* The type of a key's value in the configuration file. */
static const char *file_type(const mcp_flag *f) {
  if (f->flags & MCP_FLAG_REPEAT) return "list";
  switch (f->kind) {
  case MCP_KIND_BOOL: return "boolean";
  case MCP_KIND_SECONDS: case MCP_KIND_BYTES: case MCP_KIND_COUNT: return "number";
  default: return "string";
  }
}

int luaopen_mcp_flags(lua_State *L) {
  lua_createtable(L, 0, (int)NFLAGS);
  for (size_t i = 0; i < NFLAGS; i++) {
    if (table[i].key == NULL) continue;
    lua_pushstring(L, file_type(&table[i]));
    lua_setfield(L, -2, table[i].key);
  }
  return 1;
}
