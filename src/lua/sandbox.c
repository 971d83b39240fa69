/* Sandboxed plugins' grants and the checks of their operations (sandbox.h).
 * lua/mcp/sandbox.lua builds their environment; this file owns what they
 * may reach. Paths are compared after realpath(3), both the grant's and the
 * operation's, so a symlink inside a granted prefix that points out of it
 * leads out of it, and is refused. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "fail.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "sandbox.h"

#define DENIED "luamcp_sandbox_denied_total"

static const char *const cap_names[MCP_CAP_N + 1] = { "http", "read", "write", "exec", "sqlite", "connect", "env", NULL };

/* A sandboxed plugin's grants. Owned by the list below, kept for the
 * process's life (a reload empties and refills it in place): an HTTP
 * transfer in flight points at its allow list. */
typedef struct grant {
  struct grant *next;
  const char *plugin;              /* interned (policy.h) */
  int on;                          /* still sandboxed */
  mcp_allow *http;
  char **list[MCP_CAP_N];          /* NULL-terminated; paths already resolved */
} grant;

static grant *grants;
static const char *loading;        /* the sandboxed plugin whose file runs now */

static grant *grant_of(const char *plugin) {
  for (grant *g = grants; g; g = g->next)
    if (g->on && strcmp(g->plugin, plugin) == 0) return g;
  return NULL;
}

const char *mcp_sandbox_plugin(const mcp_call *c) {
  const char *p = c != NULL ? c->logger : loading;
  return p != NULL && grant_of(p) ? p : NULL;
}

static void list_free(char **l) {
  for (size_t i = 0; l && l[i]; i++) free(l[i]);
  free(l);
}

static void grant_clear(grant *g) {
  for (int i = 0; i < MCP_CAP_N; i++) {
    list_free(g->list[i]);
    g->list[i] = NULL;
  }
  if (g->http) mcp_allow_clear(g->http);
}

/* path resolved: realpath, or for a file not there yet its directory's
 * realpath and its name. 0, or -1 (no such directory). */
static int resolve(const char *path, char *out) {
  char dir[PATH_MAX];
  const char *slash;
  if (realpath(path, out) != NULL) return 0;
  if (errno != ENOENT || (slash = strrchr(path, '/')) == NULL || slash[1] == '\0') return -1;
  if ((size_t)(slash - path) >= sizeof dir) return -1;
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = '\0';
  if (realpath(slash == path ? "/" : dir, out) == NULL) return -1;
  if (strlen(out) + strlen(slash) >= PATH_MAX) return -1;
  if (strcmp(out, "/") != 0) strcat(out, slash);
  else strcat(out, slash + 1);
  return 0;
}

static int under(const char *path, const char *prefix) {
  size_t n = strlen(prefix);
  if (strcmp(prefix, "/") == 0) return 1;
  return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Is url the URL prefix or under it? A prefix ends where a path, query or
 * fragment starts, so "http://api.example" grants neither
 * "http://api.example.DATA.evil" nor "http://api.example@evil". */
/* Dot segments (curl removes them before sending: "/v1/../admin") and their
 * percent-encoded forms would leave a URL prefix: such a URL is not under one. */
static int has_dot_segment(const char *url) {
  const char *path = strstr(url, "://"), *end;
  if (path == NULL || (path = strchr(path + 3, '/')) == NULL) return 0;
  end = path + strcspn(path, "?#");
  for (const char *p = path; p < end; p++) {
    if (*p != '/') continue;
    const char *s = p + 1;
    int dots = 0;
    for (;;) {
      if (*s == '.') s++, dots++;
      else if (s[0] == '%' && s[1] == '2' && (s[2] == 'e' || s[2] == 'E')) s += 3, dots++;
      else break;
    }
    if ((dots == 1 || dots == 2) && (s == end || *s == '/')) return 1;
  }
  return 0;
}

static int url_under(const char *url, const char *prefix) {
  size_t n = strlen(prefix);
  if (strstr(prefix, "://") == NULL || strncmp(url, prefix, n) != 0 || has_dot_segment(url)) return 0;
  return n > 0 && (prefix[n - 1] == '/' || url[n] == '\0' || strchr("/?#", url[n]) != NULL);
}

static int is_path_cap(mcp_cap cap) {
  return cap == MCP_CAP_READ || cap == MCP_CAP_WRITE || cap == MCP_CAP_SQLITE || cap == MCP_CAP_EXEC;
}

/* Does g grant cap on what (resolved already for a path)? */
static int granted(const grant *g, mcp_cap cap, const char *what) {
  char **l = g->list[cap];
  for (size_t i = 0; l && l[i]; i++) {
    if (cap == MCP_CAP_EXEC || cap == MCP_CAP_ENV) {
      if (strcmp(l[i], what) == 0) return 1;
    } else if (is_path_cap(cap)) {
      if (under(what, l[i])) return 1;
    } else if (strcmp(l[i], what) == 0 || url_under(what, l[i])) {
      return 1;                    /* connect: the command, or a URL or its prefix */
    }
  }
  return 0;
}

void mcp_sandbox_denied(const char *plugin, mcp_cap cap, const char *msg) {
  mcp_sandbox_denied_as(plugin, cap_names[cap], msg);
}

void mcp_sandbox_denied_as(const char *plugin, const char *capability, const char *msg) {
  mcp_buf labels = MCP_BUF_INIT;
  mcp_metric_label(&labels, 0, "plugin", plugin);
  mcp_metric_label(&labels, 1, "capability", capability);
  mcp_buf_addc(&labels, '\0');
  mcp_counter_add(DENIED, labels.data, 1);
  mcp_buf_free(&labels);
  mcp_log_as(MCP_LOG_WARNING, plugin, "%s", msg);
}

int mcp_sandbox_check(lua_State *L, const mcp_call *c, mcp_cap cap, const char *what) {
  const char *plugin = mcp_sandbox_plugin(c);
  char resolved[PATH_MAX], msg[PATH_MAX + 200];
  const grant *g;
  const char *shown = what;
  if (plugin == NULL) return 0;
  g = grant_of(plugin);
  if (cap == MCP_CAP_SQLITE && (what[0] == '\0' || strcmp(what, ":memory:") == 0)) return 0;
  if (is_path_cap(cap)) {
    if (cap == MCP_CAP_EXEC && what[0] != '/') {
      snprintf(msg, sizeof msg, "sandbox: %s may run programs only by an absolute path (not %s)", plugin, what);
      goto deny;
    }
    if (resolve(what, resolved) == 0) {
      if (granted(g, cap, resolved)) return 0;
      shown = resolved;
    }
  } else if (granted(g, cap, what)) {
    return 0;
  }
  snprintf(msg, sizeof msg, "sandbox: %s may not %s%.1500s (grant %s = {\"%.1500s\"})", plugin,
           cap == MCP_CAP_READ ? "read " : cap == MCP_CAP_WRITE ? "write " : cap == MCP_CAP_EXEC ? "run " :
           cap == MCP_CAP_SQLITE ? "open the database " : cap == MCP_CAP_CONNECT ? "connect to " : "read $",
           shown, cap_names[cap], shown);
deny:
  mcp_sandbox_denied(plugin, cap, msg);
  return mcp_push_fail(L, "denied", "%s", msg);
}

const mcp_allow *mcp_sandbox_http(const mcp_call *c) {
  const mcp_allow *http = NULL;
  const char *plugin = mcp_sandbox_plugin(c);
  if (plugin) mcp_sandbox_of(plugin, &http);
  return http;
}

const char *mcp_sandbox_of(const char *plugin, const mcp_allow **http) {
  grant *g = grant_of(plugin);
  if (g == NULL) return NULL;
  if (g->http == NULL) g->http = mcp_allow_new();
  *http = g->http;
  return g->plugin;
}

/* stack: ... list(at idx) -> ...; the strings of list (resolved paths for
 * the path capabilities), NULL-terminated. */
static char **read_list(lua_State *L, int idx, mcp_cap cap) {
  size_t n = lua_rawlen(L, idx);
  char **l = calloc(n + 1, sizeof *l), resolved[PATH_MAX];
  if (l == NULL) abort();
  for (size_t i = 0; i < n; i++) {
    const char *s;
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    s = lua_tostring(L, -1);
    if (s == NULL) s = "";
    if (is_path_cap(cap) && resolve(s, resolved) == 0) s = resolved;
    if ((l[i] = strdup(s)) == NULL) abort();
    lua_pop(L, 1);
  }
  return l;
}

/* The host[:port] of a URL grant of connect, for its HTTP requests. */
static void allow_url(mcp_allow *a, const char *url) {
  char host[300];
  const char *p = strstr(url, "://");
  size_t n;
  if (p == NULL) return;
  p += 3;
  n = strcspn(p, "/?#");
  if (n == 0 || n >= sizeof host) return;
  memcpy(host, p, n);
  host[n] = '\0';
  if (strchr(host, ':') == NULL && strncmp(url, "https:", 6) == 0) strcat(host, ":443");
  else if (strchr(host, ':') == NULL) strcat(host, ":80");
  mcp_allow_add(a, host);
}

/* sandbox_set(plugin, grants | nil): plugin is sandboxed with these grants
 * ({http = {...}, read = {...}, ..., memory_mb =, cpu_ms =}, checked by
 * lua/mcp/config.lua), or no longer (nil). */
static int l_sandbox_set(lua_State *L) {
  const char *plugin = mcp_policy_intern(luaL_checkstring(L, 1));
  mcp_budget *b;
  grant *g;
  for (g = grants; g && g->plugin != plugin; g = g->next) {}
  if (lua_isnoneornil(L, 2)) {
    if (g) g->on = 0;
    if ((b = mcp_budget_of(plugin, 0)) != NULL) b->on = 0;
    return 0;
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  if (g == NULL) {
    if ((g = calloc(1, sizeof *g)) == NULL) abort();
    g->plugin = plugin;
    g->next = grants;
    grants = g;
  }
  grant_clear(g);
  g->on = 1;
  if (g->http == NULL) g->http = mcp_allow_new();
  for (int i = 0; i < MCP_CAP_N; i++) {
    if (lua_getfield(L, 2, cap_names[i]) == LUA_TTABLE) {
      g->list[i] = read_list(L, lua_gettop(L), (mcp_cap)i);
      for (size_t k = 0; g->list[i][k]; k++) {
        if (i == MCP_CAP_HTTP && mcp_allow_add(g->http, g->list[i][k]) != 0)
          return luaL_error(L, "sandbox: grants.%s.http[%d] must be HOST or HOST:PORT", plugin, (int)k + 1);
        if (i == MCP_CAP_CONNECT) allow_url(g->http, g->list[i][k]);
      }
    }
    lua_pop(L, 1);
  }
  b = mcp_budget_of(plugin, 1);
  b->on = 1;
  lua_getfield(L, 2, "memory_mb");
  b->mem_limit = (size_t)(luaL_optnumber(L, -1, 16) * (1 << 20));
  lua_getfield(L, 2, "cpu_ms");
  b->cpu_ns = (uint64_t)(luaL_optnumber(L, -1, 1000) * 1e6);
  return 0;
}

/* sandbox_check(cap, what): true, or nil, message, "denied" (for checks
 * made in Lua: mcp.connect, os.getenv of a sandboxed plugin). */
static int l_sandbox_check(lua_State *L) {
  int cap = luaL_checkoption(L, 1, NULL, cap_names);
  const char *what = luaL_checkstring(L, 2);
  int r = mcp_sandbox_check(L, mcp_call_current(L), (mcp_cap)cap, what);
  if (r != 0) return r;
  lua_pushboolean(L, 1);
  return 1;
}

/* sandbox_loading(plugin | nil): the sandboxed plugin whose file runs now
 * (its checks and its memory), or none. */
static int l_sandbox_loading(lua_State *L) {
  loading = lua_isnoneornil(L, 1) ? NULL : mcp_policy_intern(luaL_checkstring(L, 1));
  mcp_sched_account(loading ? mcp_budget_of(loading, 0) : NULL);
  return 0;
}

/* sandbox_memory(plugin): the bytes its calls in flight hold. */
static int l_sandbox_memory(lua_State *L) {
  mcp_budget *b = mcp_budget_of(luaL_checkstring(L, 1), 0);
  lua_pushinteger(L, b ? (lua_Integer)b->mem_used : 0);
  return 1;
}

void mcp_sandbox_open(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"sandbox_set", l_sandbox_set},
    {"sandbox_check", l_sandbox_check},
    {"sandbox_loading", l_sandbox_loading},
    {"sandbox_memory", l_sandbox_memory},
    {NULL, NULL}
  };
  luaL_setfuncs(L, fns, 0);
  mcp_sandbox_lib_open(L);
  mcp_counter_family(DENIED, "Operations of sandboxed plugins refused, by plugin and capability not granted.");
}

void mcp_sandbox_close(void) {
  while (grants) {
    grant *next = grants->next;
    grant_clear(grants);
    mcp_allow_free(grants->http);
    free(grants);
    grants = next;
  }
  loading = NULL;
}
