/* Failures: one shape, nil, message, code (see fail.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <lauxlib.h>
#include <sqlite3.h>
#include <uv.h>

#include "fail.h"
#include "libdir.h"
#include "sched.h"

int mcp_push_fail(lua_State *L, const char *code, const char *fmt, ...) {
  va_list ap;
  char msg[512];
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lua_pushnil(L);
  lua_pushstring(L, msg);
  lua_pushstring(L, code);
  return 3;
}

/* Is ar a function of luamcp's own Lua library (lua/mcp/)? */
static int in_library(const lua_Debug *ar) {
  const char *dir = mcp_lua_dir();
  size_t n = strlen(dir);
  return ar->source[0] == '@' && strncmp(ar->source + 1, dir, n) == 0 &&
         strncmp(ar->source + 1 + n, "/mcp/", 5) == 0;
}

void mcp_where(lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    lua_getinfo(L, "Sl", &ar);
    if (ar.currentline > 0 && !in_library(&ar)) {
      lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
      return;
    }
  }
  lua_pushliteral(L, "");
}

int mcp_self(lua_State *L) { return lua_istable(L, 1) ? 2 : 1; }

int mcp_raise(lua_State *L, const char *fmt, ...) {
  va_list ap;
  char msg[512];
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mcp_where(L);
  lua_pushstring(L, msg);
  lua_concat(L, 2);
  return lua_error(L);
}

int mcp_push_cancelled(lua_State *L, const mcp_call *c) {
  const char *why = c != NULL && c->req.reason != NULL ? c->req.reason : "request stopped";
  return mcp_push_fail(L, "cancelled", "cancelled: %s", why);
}

const char *mcp_code_uv(int err) {
  switch (err) {
  case UV_ECANCELED: return "cancelled";
  case UV_ETIMEDOUT: return "timeout";
  case UV_ENOENT: case UV_ENOTDIR: case UV_ESRCH: return "not_found";
  case UV_EEXIST: case UV_ENOTEMPTY: return "exists";
  case UV_EACCES: case UV_EPERM: case UV_EROFS: return "denied";
  case UV_EINVAL: case UV_EISDIR: case UV_ENAMETOOLONG: case UV_ELOOP: return "invalid";
  case UV_EFBIG: case UV_E2BIG: return "too_large";
  case UV_EBUSY: case UV_EAGAIN: case UV_EMFILE: case UV_ENFILE: return "busy";
  case UV_ECONNREFUSED: case UV_EHOSTUNREACH: case UV_ENETUNREACH: case UV_EAI_NONAME:
    return "unreachable";
  case UV_EPIPE: case UV_ECONNRESET: case UV_EOF: return "closed";
  default: return "io";
  }
}

const char *mcp_code_sqlite(int rc) {
  switch (rc & 0xff) {
  case SQLITE_BUSY: case SQLITE_LOCKED: return "busy";
  case SQLITE_PERM: case SQLITE_AUTH: case SQLITE_READONLY: return "denied";
  case SQLITE_ERROR: case SQLITE_MISMATCH: case SQLITE_RANGE: case SQLITE_MISUSE: return "invalid";
  case SQLITE_TOOBIG: return "too_large";
  case SQLITE_CONSTRAINT: return "constraint";
  case SQLITE_CANTOPEN: return "not_found";
  case SQLITE_INTERRUPT: return "cancelled";
  default: return "io";
  }
}

const char *mcp_code_curl(int rc) {
  switch ((CURLcode)rc) {
  case CURLE_OPERATION_TIMEDOUT: return "timeout";
  case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY: case CURLE_COULDNT_CONNECT:
    return "unreachable";
  case CURLE_URL_MALFORMAT: case CURLE_UNSUPPORTED_PROTOCOL: return "invalid";
  case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CONNECT_ERROR: case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CERTPROBLEM: case CURLE_SSL_CIPHER: case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_ENGINE_SETFAILED: case CURLE_SSL_ENGINE_INITFAILED: case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_SHUTDOWN_FAILED: case CURLE_SSL_ISSUER_ERROR: case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS: case CURLE_SSL_CLIENTCERT:
    return "tls";
  case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_PARTIAL_FILE: return "closed";
  case CURLE_GOT_NOTHING: case CURLE_TOO_MANY_REDIRECTS: case CURLE_WEIRD_SERVER_REPLY:
  case CURLE_BAD_CONTENT_ENCODING: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
    return "protocol";
  case CURLE_FILESIZE_EXCEEDED: return "too_large";
  default: return "io";
  }
}
