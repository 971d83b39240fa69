/* Outbound allow lists. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allow.h"

typedef struct {
  char host[256];                /* lower case; an IP literal without brackets */
  int port;                      /* 0: any */
} entry;

struct mcp_allow {
  entry *e;
  int n, cap;
};

typedef struct plugin_list {
  char *name;
  mcp_allow *list;               /* NULL while the plugin declares none */
  struct plugin_list *next;
} plugin_list;

static mcp_allow *server_list;
static plugin_list *plugins;

mcp_allow *mcp_allow_new(void) {
  mcp_allow *a = calloc(1, sizeof *a);
  if (a == NULL) abort();
  return a;
}

void mcp_allow_free(mcp_allow *a) {
  if (a == NULL) return;
  free(a->e);
  free(a);
}

void mcp_allow_clear(mcp_allow *a) { a->n = 0; }

/* The form hosts are compared in: lower case, without brackets or a
 * trailing dot, an IP literal as inet_ntop writes it. 0, or -1 when it does
 * not fit. */
static int host_key(const char *h, size_t n, char *out, size_t cap) {
  unsigned char ip[16];
  if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
    h++;
    n -= 2;
  }
  if (n > 1 && h[n - 1] == '.') n--;
  if (n == 0 || n >= cap) return -1;
  for (size_t i = 0; i < n; i++) out[i] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] + 32 : h[i]);
  out[n] = '\0';
  if (inet_pton(AF_INET6, out, ip) == 1 && inet_ntop(AF_INET6, ip, out, (socklen_t)cap) == NULL) return -1;
  return 0;
}

int mcp_allow_add(mcp_allow *a, const char *s) {
  entry x;
  const char *colon, *end;
  size_t hl;
  if (s == NULL || s[0] == '\0') return -1;
  if (s[0] == '[') {                                   /* [v6] or [v6]:port */
    if ((end = strchr(s, ']')) == NULL) return -1;
    hl = (size_t)(end - s + 1);
    if (end[1] != '\0' && end[1] != ':') return -1;
    colon = end[1] == ':' ? end + 1 : NULL;
  } else {
    colon = strchr(s, ':');
    if (colon && strchr(colon + 1, ':')) colon = NULL;  /* a bare v6 literal */
    hl = colon ? (size_t)(colon - s) : strlen(s);
  }
  if (host_key(s, hl, x.host, sizeof x.host) != 0) return -1;
  x.port = 0;
  if (colon) {
    char *stop;
    long port = strtol(colon + 1, &stop, 10);
    if (colon[1] == '\0' || *stop != '\0' || port < 1 || port > 65535) return -1;
    x.port = (int)port;
  }
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 4;
    if ((a->e = realloc(a->e, (size_t)a->cap * sizeof *a->e)) == NULL) abort();
  }
  a->e[a->n++] = x;
  return 0;
}

int mcp_allow_target(const char *host, int port, char *out, size_t cap) {
  char key[256];
  if (host_key(host, strlen(host), key, sizeof key) != 0) return -1;
  return snprintf(out, cap, strchr(key, ':') ? "[%s]:%d" : "%s:%d", key, port) < (int)cap ? 0 : -1;
}

static int special_v4(uint32_t a) {
  return (a >> 24) == 127 || (a >> 24) == 10 || (a >> 24) == 0 ||   /* loopback, private, "this" */
         (a >> 20) == 0xac1 || (a >> 16) == 0xc0a8 ||               /* 172.16/12, 192.168/16 */
         (a >> 16) == 0xa9fe ||                                     /* 169.254/16: link-local, metadata */
         (a >> 22) == 0x191 ||                                      /* 100.64/10: shared (CGNAT) */
         (a >> 28) >= 0xe;                                          /* multicast, reserved */
}

int mcp_allow_special(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return special_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
  if (sa->sa_family == AF_INET6) {
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    static const unsigned char zero[15] = { 0 };
    const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    if (memcmp(b, mapped, 12) == 0)
      return special_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15]);
    return memcmp(b, zero, 15) == 0 ||                              /* :: and ::1 */
           (b[0] & 0xfe) == 0xfc ||                                 /* fc00::/7 unique local */
           (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) ||               /* fe80::/10 link-local */
           b[0] == 0xff;                                            /* multicast */
  }
  return 1;
}

/* Does x name exactly the address sa (an IP literal), or is it localhost
 * and sa loopback? */
static int names_addr(const entry *x, const struct sockaddr *sa) {
  char ip[INET6_ADDRSTRLEN];
  const void *src;
  if (sa->sa_family == AF_INET) src = &((const struct sockaddr_in *)sa)->sin_addr;
  else if (sa->sa_family == AF_INET6) src = &((const struct sockaddr_in6 *)sa)->sin6_addr;
  else return 0;
  if (inet_ntop(sa->sa_family, src, ip, sizeof ip) == NULL) return 0;
  if (strcmp(x->host, ip) == 0) return 1;
  if (strcmp(x->host, "localhost") != 0) return 0;
  if (sa->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  return strcmp(ip, "::1") == 0;
}

int mcp_allow_check(const mcp_allow *a, const char *host, int port, const struct sockaddr *sa,
                    char *msg, size_t cap) {
  char key[256], target[300];
  if (a->n < 0) return 1;                          /* a dropped plugin list */
  if (host_key(host, strlen(host), key, sizeof key) == 0) {
    for (int i = 0; i < a->n; i++) {
      const entry *x = &a->e[i];
      if (strcmp(x->host, key) != 0 || (x->port != 0 && x->port != port)) continue;
      if (sa != NULL && mcp_allow_special(sa) && !names_addr(x, sa)) {
        snprintf(msg, cap, "%.255s resolved to a loopback, private or link-local address", key);
        return 0;
      }
      return 1;
    }
  }
  if (mcp_allow_target(host, port, target, sizeof target) != 0) snprintf(target, sizeof target, "%.255s", host);
  snprintf(msg, cap, "%s is not an allowed host", target);
  return 0;
}

mcp_allow *mcp_allow_server(int create) {
  if (server_list == NULL && create) server_list = mcp_allow_new();
  return server_list;
}

static plugin_list *find_plugin(const char *name) {
  plugin_list *p;
  for (p = plugins; p && strcmp(p->name, name) != 0; p = p->next) {}
  return p;
}

mcp_allow *mcp_allow_plugin(const char *name, int create) {
  plugin_list *p = find_plugin(name);
  if (p == NULL && create) {
    if ((p = calloc(1, sizeof *p)) == NULL || (p->name = strdup(name)) == NULL) abort();
    p->next = plugins;
    plugins = p;
  }
  if (p == NULL) return NULL;
  if (p->list == NULL && create) p->list = mcp_allow_new();
  if (p->list && p->list->n < 0) {
    if (!create) return NULL;
    p->list->n = 0;
  }
  return p->list;
}

/* The list stays allocated (a request may point at it), ignored from now on. */
void mcp_allow_plugin_drop(const char *name) {
  plugin_list *p = find_plugin(name);
  if (p == NULL || p->list == NULL) return;
  p->list->n = -1;
}

void mcp_allow_close_all(void) {
  while (plugins) {
    plugin_list *p = plugins;
    plugins = p->next;
    mcp_allow_free(p->list);
    free(p->name);
    free(p);
  }
  mcp_allow_free(server_list);
  server_list = NULL;
}
