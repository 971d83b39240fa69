/* The resource server: see auth.h.
 *
 * The keys are fetched once for all the requests that wait on them: a wait
 * on keys joins A.waits with on_keys set, and the end of the fetch (keys, or
 * a failure) resumes each such wait exactly once. A token with a kid the set
 * does not hold joins the fetch in flight, or starts a refetch when none
 * was started for an unknown kid in the last MCP_AUTH_REFETCH_S, and is
 * verified once more after it: a stranger sending made-up kids costs the
 * issuer one request per period, and no wait loops. An introspection is a
 * wait's own fetch.
 *
 * The cache (by the token's SHA-256) holds verified JWTs and introspection
 * answers, positive or not, for MCP_AUTH_CACHE_S at most and never past the
 * token's exp; the keys being replaced does not empty it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "auth.h"
#include "crypto.h"
#include "fetch.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "metrics.h"

#define CACHE_SLOTS 256
#define MAX_INTROSPECTIONS 8       /* at once; past it 503 (they hold pool threads) */
#define S_NS 1000000000ull

struct mcp_auth_wait {
  mcp_auth_wait *prev, *next;      /* A.waits */
  mcp_auth_cb cb;
  void *ud;
  char *token;
  mcp_fetch *fetch;                /* its introspection, or NULL */
  unsigned on_keys : 1;            /* waits for the key fetch */
  unsigned refetched : 1;          /* has waited for one already */
};

typedef struct {
  uint8_t digest[MCP_SHA256_LEN];  /* of the token */
  mcp_identity *id;                /* NULL: inactive */
  uint64_t until_ns;               /* 0: free slot */
  char why[96];
} cached;

enum { FETCH_META_8414, FETCH_META_OIDC, FETCH_JWKS };

/* /metrics: checks by outcome, requests to the authorization server. */
static const char *const outcomes[] = {
  "accepted", "missing", "invalid_request", "invalid_token", "unavailable", "insufficient_scope"
};
#define NOUTCOMES (int)(sizeof outcomes / sizeof *outcomes)
static const char *const fetch_kinds[] = { "metadata", "jwks", "introspection" };

/* Owned by this file: mcp_auth_start .. mcp_auth_close. */
static struct {
  uv_loop_t *loop;
  mcp_auth_options opt;
  int on;
  char *meta_url[2];               /* RFC 8414's, then OpenID's */
  char *jwks_url;                  /* given, or from the metadata */
  int jwks_file;                   /* the keys came from a file: never refetched */
  mcp_jwks keys;
  int have_keys;
  uint64_t keys_ns, refetch_ns, fail_ns;   /* uv_hrtime: keys got, last refetch for a kid, last failure */
  char fail_reason[200];
  mcp_fetch *fetch;                /* the keys' fetch in flight */
  int stage;
  mcp_auth_wait *waits;
  int nintrospect;
  char *metadata_url;              /* resource_metadata */
  char *metadata_path;             /* the suffixed form's path */
  cached cache[CACHE_SLOTS];
  unsigned long long checks[NOUTCOMES], fetches[3][2];   /* [kind][failed] */
} A;

static void count(const char *outcome) {
  for (int i = 0; i < NOUTCOMES; i++)
    if (strcmp(outcomes[i], outcome) == 0) A.checks[i]++;
}

void mcp_auth_count(const char *outcome) { count(outcome); }

static void count_fetch(int kind, int failed) { A.fetches[kind][failed != 0]++; }

static void collect(mcp_buf *b) {
  char labels[96];
  if (!A.on) return;
  mcp_metric_head(b, "luamcp_auth_checks_total", "counter", "Bearer token checks (--auth-*), by outcome.");
  for (int i = 0; i < NOUTCOMES; i++) {
    snprintf(labels, sizeof labels, "outcome=\"%s\"", outcomes[i]);
    mcp_metric_sample(b, "luamcp_auth_checks_total", labels, (double)A.checks[i]);
  }
  mcp_metric_head(b, "luamcp_auth_fetches_total", "counter",
                  "Requests to the authorization server (metadata, keys, introspection), by outcome.");
  for (int k = 0; k < 3; k++)
    for (int f = 0; f < 2; f++) {
      snprintf(labels, sizeof labels, "what=\"%s\",outcome=\"%s\"", fetch_kinds[k], f ? "failed" : "ok");
      mcp_metric_sample(b, "luamcp_auth_fetches_total", labels, (double)A.fetches[k][f]);
    }
}

static char *dup(const char *s) {
  char *d;
  if (s == NULL) return NULL;
  if ((d = strdup(s)) == NULL) abort();
  return d;
}

static uint64_t now_ns(void) { return uv_hrtime(); }

static double wall_s(void) {
  uv_timeval64_t tv;
  uv_gettimeofday(&tv);
  return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int mcp_auth_wanted(const mcp_auth_options *opt) {
  return opt->issuer || opt->jwks || opt->audience || opt->introspect;
}

static int is_url(const char *s) { return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0; }

/* "scheme://authority" and the path of an absolute URL. */
static int split_url(const char *url, char *origin, size_t ocap, const char **path) {
  const char *a, *p;
  if (!is_url(url)) return -1;
  a = strstr(url, "://") + 3;
  p = a + strcspn(a, "/?#");
  if (p == a || (size_t)(p - url) >= ocap || strpbrk(url, "?#") != NULL) return -1;
  memcpy(origin, url, (size_t)(p - url));
  origin[p - url] = '\0';
  *path = p;
  return 0;
}

static int load_file(const char *path, char *err, size_t cap) {
  FILE *f = fopen(path, "rb");
  mcp_buf b = MCP_BUF_INIT;
  char chunk[4096], why[160];
  size_t n;
  if (f == NULL) {
    snprintf(err, cap, "--auth-jwks %s: cannot open it", path);
    return -1;
  }
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) mcp_buf_add(&b, chunk, n);
  fclose(f);
  if (mcp_jwks_parse(&A.keys, b.data ? b.data : "", b.len, why, sizeof why) != 0) {
    snprintf(err, cap, "--auth-jwks %s: %s", path, why);
    mcp_buf_free(&b);
    return -1;
  }
  mcp_buf_free(&b);
  A.have_keys = A.jwks_file = 1;
  A.keys_ns = now_ns();
  return 0;
}

int mcp_auth_start(uv_loop_t *loop, const mcp_auth_options *opt, char *err, size_t cap) {
  char origin[512];
  const char *path;
  mcp_buf b = MCP_BUF_INIT;
  A.loop = loop;
  A.opt = *opt;
  if (opt->audience == NULL || split_url(opt->audience, origin, sizeof origin, &path) != 0) {
    snprintf(err, cap, "--auth-audience must be this server's canonical URI (http(s)://host[:port][/path], "
                       "no query or fragment)");
    return -1;
  }
  if (opt->issuer == NULL && opt->jwks == NULL && opt->introspect == NULL) {
    snprintf(err, cap, "authorization needs --auth-issuer, --auth-jwks or --auth-introspect");
    return -1;
  }
  if ((opt->issuer && !is_url(opt->issuer)) || (opt->introspect && !is_url(opt->introspect))) {
    snprintf(err, cap, "--auth-issuer and --auth-introspect take an http(s) URL");
    return -1;
  }
  if (opt->jwks != NULL && is_url(opt->jwks)) A.jwks_url = dup(opt->jwks);
  else if (opt->jwks != NULL && load_file(opt->jwks, err, cap) != 0) return -1;
  if (opt->issuer != NULL) {
    char iorigin[512];
    const char *ipath;
    if (split_url(opt->issuer, iorigin, sizeof iorigin, &ipath) != 0) {
      snprintf(err, cap, "--auth-issuer %s: not an issuer identifier (no query or fragment)", opt->issuer);
      return -1;
    }
    if (strcmp(ipath, "/") == 0) ipath = "";
    mcp_buf_printf(&b, "%s/.well-known/oauth-authorization-server%s%c", iorigin, ipath, '\0');
    A.meta_url[0] = dup(b.data);
    b.len = 0;
    mcp_buf_printf(&b, "%s%s/.well-known/openid-configuration%c", iorigin, ipath, '\0');
    A.meta_url[1] = dup(b.data);
    b.len = 0;
  }
  if (strcmp(path, "/") == 0) path = "";
  mcp_buf_printf(&b, "/.well-known/oauth-protected-resource%s%c", path, '\0');
  A.metadata_path = dup(b.data);
  b.len = 0;
  mcp_buf_printf(&b, "%s%s%c", origin, A.metadata_path, '\0');
  A.metadata_url = dup(b.data);
  mcp_buf_free(&b);
  A.on = 1;
  mcp_fetch_init();
  mcp_metrics_collector(collect);
  mcp_info("auth: resource %s; tokens from %s%s%s; metadata at %s", opt->audience,
           opt->issuer ? opt->issuer : opt->jwks ? opt->jwks : "introspection",
           opt->introspect ? ", introspected at " : "", opt->introspect ? opt->introspect : "", A.metadata_url);
  return 0;
}

/* Waits. */

static mcp_auth_wait *wait_new(const char *token, mcp_auth_cb cb, void *ud) {
  mcp_auth_wait *w = calloc(1, sizeof *w);
  if (w == NULL) abort();
  w->token = dup(token);
  w->cb = cb;
  w->ud = ud;
  w->next = A.waits;
  if (A.waits) A.waits->prev = w;
  A.waits = w;
  return w;
}

static void wait_free(mcp_auth_wait *w) {
  if (w->prev) w->prev->next = w->next; else A.waits = w->next;
  if (w->next) w->next->prev = w->prev;
  if (w->fetch) {
    mcp_fetch_cancel(w->fetch);
    A.nintrospect--;
  }
  free(w->token);
  free(w);
}

static void finish_ok(mcp_auth_wait *w, mcp_identity *id) {
  mcp_auth_cb cb = w->cb;
  void *ud = w->ud;
  wait_free(w);
  A.checks[0]++;
  mcp_debug("auth: token of %s accepted", id->subject);
  cb(ud, id, NULL);
}

static void finish_fail(mcp_auth_wait *w, int status, const char *error, const char *fmt, const char *a) {
  mcp_auth_failure f;
  mcp_auth_cb cb = w->cb;
  void *ud = w->ud;
  f.status = status;
  f.error = error;
  snprintf(f.description, sizeof f.description, fmt, a ? a : "");
  wait_free(w);
  count(status >= 500 ? "unavailable" : error ? error : "missing");
  if (status >= 500) mcp_warn("auth: %d: %s", status, f.description);
  else mcp_info("auth: %d: %s", status, f.description);
  cb(ud, NULL, &f);
}

/* The keys. */

static void keys_fetch(void);
static int resume(mcp_auth_wait *w);

static void keys_done(const char *failure) {
  mcp_auth_wait *w;
  A.fetch = NULL;
  if (failure != NULL) {
    A.fail_ns = now_ns();
    snprintf(A.fail_reason, sizeof A.fail_reason, "%s", failure);
    mcp_warn("auth: %s", failure);
  }
  /* Resume each wait once; a callback may end other waits (never a key
   * wait: those are only ended here), so the list is walked afresh. */
  for (;;) {
    for (w = A.waits; w && !w->on_keys; w = w->next) {}
    if (w == NULL) break;
    w->on_keys = 0;
    w->refetched = 1;
    resume(w);
  }
}

static void on_keys(void *ud, long status, const char *body, size_t len, const char *err) {
  char why[300];
  (void)ud;
  count_fetch(A.stage == FETCH_JWKS ? 1 : 0, status != 200);
  if (status != 200) {
    if (A.stage == FETCH_META_8414 && status != 0) {   /* it answered: then OpenID's discovery */
      A.stage = FETCH_META_OIDC;
      A.fetch = mcp_fetch_start(A.loop, A.meta_url[1], NULL, NULL, MCP_AUTH_FETCH_MS, on_keys, NULL);
      return;
    }
    if (status == 0) snprintf(why, sizeof why, "authorization server unreachable: %s: %s",
                              A.stage == FETCH_JWKS ? A.jwks_url : A.meta_url[A.stage], err ? err : "no answer");
    else snprintf(why, sizeof why, "authorization server: %s answered HTTP %ld",
                  A.stage == FETCH_JWKS ? A.jwks_url : A.meta_url[1], status);
    keys_done(why);
    return;
  }
  if (A.stage != FETCH_JWKS) {
    json_t *m = json_loadb(body, len, 0, NULL);
    const char *iss = json_string_value(json_object_get(m, "issuer"));
    const char *jwks = json_string_value(json_object_get(m, "jwks_uri"));
    if (iss == NULL || strcmp(iss, A.opt.issuer) != 0 || jwks == NULL || !is_url(jwks)) {
      snprintf(why, sizeof why, "authorization server metadata at %s: %s", A.meta_url[A.stage],
               iss == NULL || jwks == NULL ? "no issuer or jwks_uri"
               : !is_url(jwks) ? "jwks_uri is not an http(s) URL" : "issuer differs from --auth-issuer");
      json_decref(m);
      keys_done(why);
      return;
    }
    free(A.jwks_url);
    A.jwks_url = dup(jwks);
    json_decref(m);
    mcp_info("auth: discovered the keys at %s", A.jwks_url);
    A.stage = FETCH_JWKS;
    A.fetch = mcp_fetch_start(A.loop, A.jwks_url, NULL, NULL, MCP_AUTH_FETCH_MS, on_keys, NULL);
    return;
  } else {
    mcp_jwks set;
    char perr[160];
    if (mcp_jwks_parse(&set, body, len, perr, sizeof perr) != 0) {
      snprintf(why, sizeof why, "JWKS at %s: %s", A.jwks_url, perr);
      keys_done(why);
      return;
    }
    mcp_jwks_free(&A.keys);
    A.keys = set;
    A.have_keys = 1;
    A.keys_ns = now_ns();
    A.fail_ns = 0;
    mcp_info("auth: %d key(s) from %s", set.n, A.jwks_url);
    keys_done(NULL);
  }
}

static void keys_fetch(void) {
  if (A.fetch != NULL || A.jwks_file) return;
  if (A.jwks_url != NULL) {
    A.stage = FETCH_JWKS;
    A.fetch = mcp_fetch_start(A.loop, A.jwks_url, NULL, NULL, MCP_AUTH_FETCH_MS, on_keys, NULL);
  } else {
    A.stage = FETCH_META_8414;
    A.fetch = mcp_fetch_start(A.loop, A.meta_url[0], NULL, NULL, MCP_AUTH_FETCH_MS, on_keys, NULL);
  }
}

static int failed_lately(void) {
  return A.fail_ns != 0 && now_ns() - A.fail_ns < MCP_AUTH_RETRY_S * S_NS;
}

static cached *cache_find(const uint8_t *d);
static void cache_put(const uint8_t *d, mcp_identity *id, double until_wall, const char *why);

/* JWTs. Returns 0 when the wait goes on (queued for keys). A token
 * verified is remembered (by its digest) for MCP_AUTH_CACHE_S at most, and
 * not past its exp: a client sends the same one with every request. */
static int check_jwt(mcp_auth_wait *w) {
  mcp_jwt t;
  mcp_jwt_status s;
  mcp_identity *id;
  uint8_t d[MCP_SHA256_LEN];
  cached *hit;
  mcp_sha256(w->token, strlen(w->token), d);
  if ((hit = cache_find(d)) != NULL && hit->id != NULL) {
    finish_ok(w, mcp_identity_ref(hit->id));
    return 1;
  }
  if (!A.have_keys) {
    if (w->refetched || failed_lately()) {
      finish_fail(w, 503, NULL, "%s", A.fail_reason[0] ? A.fail_reason : "the authorization server's keys are not known yet");
      return 1;
    }
    w->on_keys = 1;
    keys_fetch();
    return 0;
  }
  if (A.fetch == NULL && !A.jwks_file && now_ns() - A.keys_ns > MCP_AUTH_KEYS_TTL_S * S_NS && !failed_lately())
    keys_fetch();                                /* in the background: the keys we have serve meanwhile */
  s = mcp_jwt_decode(&t, w->token, strlen(w->token));
  if (s == MCP_JWT_OK) s = mcp_jwt_verify(&t, &A.keys);
  if (s == MCP_JWT_UNKNOWN_KID && !w->refetched && !A.jwks_file && !failed_lately() &&
      (A.fetch != NULL || A.refetch_ns == 0 || now_ns() - A.refetch_ns >= MCP_AUTH_REFETCH_S * S_NS)) {
    if (A.fetch == NULL) {
      mcp_info("auth: unknown key id %.64s: the keys are fetched again", t.kid);
      A.refetch_ns = now_ns();
    }
    mcp_jwt_free(&t);
    w->on_keys = 1;
    keys_fetch();
    return 0;
  }
  if (s == MCP_JWT_UNKNOWN_KID) mcp_info("auth: unknown key id %.64s: no refetch (one per %d s)", t.kid, MCP_AUTH_REFETCH_S);
  if (s == MCP_JWT_OK) s = mcp_jwt_check_claims(&t, A.opt.issuer, A.opt.audience, wall_s(), MCP_AUTH_SKEW_S);
  if (s != MCP_JWT_OK) {
    mcp_jwt_free(&t);
    finish_fail(w, 401, "invalid_token", "%s", mcp_jwt_status_text(s));
    return 1;
  }
  id = mcp_identity_new(json_incref(t.claims), NULL);
  mcp_jwt_free(&t);
  cache_put(d, id, id->exp, NULL);
  finish_ok(w, id);
  return 1;
}

/* Introspection. */

static cached *cache_find(const uint8_t *d) {
  uint64_t now = now_ns();
  for (int i = 0; i < CACHE_SLOTS; i++)
    if (A.cache[i].until_ns > now && memcmp(A.cache[i].digest, d, MCP_SHA256_LEN) == 0) return &A.cache[i];
  return NULL;
}

static void cache_put(const uint8_t *d, mcp_identity *id, double until_wall, const char *why) {
  uint64_t now = now_ns(), ttl = MCP_AUTH_CACHE_S * S_NS;
  cached *slot = &A.cache[0];
  double left = until_wall - wall_s();
  for (int i = 0; i < CACHE_SLOTS; i++) {
    if (A.cache[i].until_ns <= now) {
      slot = &A.cache[i];
      break;
    }
    if (A.cache[i].until_ns < slot->until_ns) slot = &A.cache[i];
  }
  mcp_identity_unref(slot->id);
  if (until_wall > 0 && left < (double)MCP_AUTH_CACHE_S) ttl = left > 0 ? (uint64_t)(left * 1e9) : 0;
  memcpy(slot->digest, d, MCP_SHA256_LEN);
  slot->id = mcp_identity_ref(id);
  slot->until_ns = ttl ? now + ttl : 0;
  snprintf(slot->why, sizeof slot->why, "%s", why ? why : "");
}

static void on_introspect(void *ud, long status, const char *body, size_t len, const char *err) {
  mcp_auth_wait *w = ud;
  json_t *v, *aud, *exp;
  const char *iss, *why = NULL, *client;
  uint8_t d[MCP_SHA256_LEN];
  mcp_identity *id;
  char fallback[300];
  w->fetch = NULL;
  A.nintrospect--;
  count_fetch(2, status != 200);
  if (status != 200) {
    char m[300];
    if (status == 0) snprintf(m, sizeof m, "introspection at %s failed: %s", A.opt.introspect, err ? err : "no answer");
    else snprintf(m, sizeof m, "introspection at %s answered HTTP %ld", A.opt.introspect, status);
    finish_fail(w, 503, NULL, "%s", m);
    return;
  }
  mcp_sha256(w->token, strlen(w->token), d);
  v = json_loadb(body, len, 0, NULL);
  aud = json_object_get(v, "aud");
  exp = json_object_get(v, "exp");
  iss = json_string_value(json_object_get(v, "iss"));
  if (!json_is_object(v)) {
    json_decref(v);
    finish_fail(w, 503, NULL, "introspection at %s: the answer is not a JSON object", A.opt.introspect);
    return;
  }
  if (!json_is_true(json_object_get(v, "active"))) why = "token is not active";
  else if (json_is_number(exp) && json_number_value(exp) + MCP_AUTH_SKEW_S < wall_s()) why = "token expired";
  else if (aud != NULL && !mcp_jwt_audience_has(aud, A.opt.audience))
    why = "token not issued for this resource (audience)";
  else if (iss != NULL && A.opt.issuer != NULL && strcmp(iss, A.opt.issuer) != 0) why = "wrong issuer";
  if (why != NULL) {
    cache_put(d, NULL, 0, why);
    json_decref(v);
    finish_fail(w, 401, "invalid_token", "%s", why);
    return;
  }
  client = json_string_value(json_object_get(v, "client_id"));
  snprintf(fallback, sizeof fallback, "client:%s", client ? client : "");
  if ((id = mcp_identity_new(v, client ? fallback : NULL)) == NULL) {
    cache_put(d, NULL, 0, "the introspection names no subject (sub) or client_id");
    finish_fail(w, 401, "invalid_token", "%s", "the introspection names no subject (sub) or client_id");
    return;
  }
  cache_put(d, id, id->exp, NULL);
  finish_ok(w, id);
}

static int check_opaque(mcp_auth_wait *w) {
  uint8_t d[MCP_SHA256_LEN];
  cached *c;
  mcp_buf form = MCP_BUF_INIT;
  char esc[8192];
  if (A.opt.introspect == NULL) {
    finish_fail(w, 401, "invalid_token", "%s", "not a JWT (and no --auth-introspect to ask about it)");
    return 1;
  }
  mcp_sha256(w->token, strlen(w->token), d);
  if ((c = cache_find(d)) != NULL) {
    if (c->id != NULL) finish_ok(w, mcp_identity_ref(c->id));
    else finish_fail(w, 401, "invalid_token", "%s", c->why);
    return 1;
  }
  if (A.nintrospect >= MAX_INTROSPECTIONS) {
    finish_fail(w, 503, NULL, "%s", "too many introspections in flight; retry");
    return 1;
  }
  if (mcp_fetch_escape(w->token, esc, sizeof esc) != 0) {
    finish_fail(w, 401, "invalid_token", "%s", "token too long");
    return 1;
  }
  mcp_buf_printf(&form, "token=%s&token_type_hint=access_token%c", esc, '\0');
  A.nintrospect++;
  w->fetch = mcp_fetch_start(A.loop, A.opt.introspect, form.data, A.opt.introspect_client, MCP_AUTH_FETCH_MS,
                             on_introspect, w);
  mcp_buf_free(&form);
  return 0;
}

static int is_jwt(const char *t) {
  const char *d = strchr(t, '.');
  return d != NULL && (d = strchr(d + 1, '.')) != NULL && strchr(d + 1, '.') == NULL;
}

/* Check w's token: 1 when its callback ran (w is gone), 0 when it waits. */
static int resume(mcp_auth_wait *w) {
  if (is_jwt(w->token) && (A.opt.issuer != NULL || A.opt.jwks != NULL)) return check_jwt(w);
  return check_opaque(w);
}

/* RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static int b64token(const char *s) {
  size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/");
  return n > 0 && s[n + strspn(s + n, "=")] == '\0';
}

mcp_auth_wait *mcp_auth_check(const char *authorization, mcp_auth_cb cb, void *ud) {
  mcp_auth_wait *w;
  const char *tok;
  mcp_auth_failure f = { 401, NULL, "" };
  if (authorization == NULL || strncasecmp(authorization, "Bearer ", 7) != 0) {
    snprintf(f.description, sizeof f.description, "%s",
             authorization ? "the Authorization scheme must be Bearer" : "a bearer token is required");
    if (authorization) f.error = "invalid_request";
    count(authorization ? "invalid_request" : "missing");
    mcp_debug("auth: 401: %s", f.description);
    cb(ud, NULL, &f);
    return NULL;
  }
  tok = authorization + 7;
  tok += strspn(tok, " ");
  if (!b64token(tok) || strlen(tok) > 8192) {
    f.error = "invalid_token";
    snprintf(f.description, sizeof f.description, "malformed bearer token");
    count("invalid_token");
    mcp_info("auth: 401: %s", f.description);
    cb(ud, NULL, &f);
    return NULL;
  }
  w = wait_new(tok, cb, ud);
  return resume(w) ? NULL : w;
}

void mcp_auth_cancel(mcp_auth_wait *w) { wait_free(w); }

/* Metadata and challenges. */

int mcp_auth_is_metadata_path(const char *path) {
  return A.on && (strcmp(path, "/.well-known/oauth-protected-resource") == 0 ||
                  strcmp(path, A.metadata_path) == 0);
}

void mcp_auth_metadata(mcp_buf *out, const char *scopes) {
  mcp_buf_adds(out, "{\"resource\":");
  mcp_json_add_string(out, A.opt.audience, strlen(A.opt.audience));
  if (A.opt.issuer != NULL) {
    mcp_buf_adds(out, ",\"authorization_servers\":[");
    mcp_json_add_string(out, A.opt.issuer, strlen(A.opt.issuer));
    mcp_buf_addc(out, ']');
  }
  mcp_buf_printf(out, ",\"scopes_supported\":%s", scopes ? scopes : "[]");
  mcp_buf_adds(out, ",\"bearer_methods_supported\":[\"header\"],\"resource_name\":\"luamcp\"}");
}

/* A quoted-string's content: no quote, backslash or control character. */
static void add_quoted(mcp_buf *out, const char *s) {
  for (; *s; s++) mcp_buf_addc(out, (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) ? '\'' : *s);
}

void mcp_auth_challenge(mcp_buf *out, const mcp_auth_failure *f, const char *scope) {
  mcp_buf_adds(out, "WWW-Authenticate: Bearer ");
  if (f == NULL) mcp_buf_adds(out, "error=\"insufficient_scope\", ");
  else if (f->error != NULL) mcp_buf_printf(out, "error=\"%s\", ", f->error);
  mcp_buf_printf(out, "resource_metadata=\"%s\"", A.metadata_url);
  if (scope != NULL && *scope) {
    mcp_buf_adds(out, ", scope=\"");
    add_quoted(out, scope);
    mcp_buf_addc(out, '"');
  }
  if (f != NULL && f->error != NULL && f->description[0]) {
    mcp_buf_adds(out, ", error_description=\"");
    add_quoted(out, f->description);
    mcp_buf_addc(out, '"');
  }
  mcp_buf_adds(out, "\r\n");
}

void mcp_auth_close(void) {
  if (A.on) mcp_fetch_close();
  while (A.waits) wait_free(A.waits);
  if (A.fetch) mcp_fetch_cancel(A.fetch);
  A.fetch = NULL;
  mcp_jwks_free(&A.keys);
  for (int i = 0; i < CACHE_SLOTS; i++) {
    mcp_identity_unref(A.cache[i].id);
    A.cache[i].id = NULL;
    A.cache[i].until_ns = 0;
  }
  free(A.meta_url[0]);
  free(A.meta_url[1]);
  free(A.jwks_url);
  free(A.metadata_url);
  free(A.metadata_path);
  memset(&A, 0, sizeof A);
}
