/* See fetch.h. The work runs in the pool; the fetch is freed in after_work,
 * on the loop thread, whether it was cancelled or not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "buf.h"
#include "fetch.h"

struct mcp_fetch {
  uv_work_t work;
  char *url, *form, *userpwd;
  long timeout_ms;
  mcp_fetch_cb cb;
  void *ud;
  int cancelled;               /* set and read on the loop thread only */
  long status;                 /* the pool's results, read in after_work */
  mcp_buf body;
  char err[CURL_ERROR_SIZE];
};

static size_t on_write(char *data, size_t size, size_t n, void *ud) {
  mcp_fetch *f = ud;
  if (f->body.len + size * n > MCP_FETCH_MAX) return 0;   /* too big: the transfer fails */
  mcp_buf_add(&f->body, data, size * n);
  return size * n;
}

static void work(uv_work_t *w) {
  mcp_fetch *f = w->data;
  CURL *e = curl_easy_init();
  struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
  CURLcode rc;
  if (e == NULL) {
    snprintf(f->err, sizeof f->err, "out of memory");
    curl_slist_free_all(h);
    return;
  }
  curl_easy_setopt(e, CURLOPT_URL, f->url);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, f->err);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, f->timeout_ms);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, f->timeout_ms);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "luamcp/" LUAMCP_VERSION);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
  if (f->form != NULL) curl_easy_setopt(e, CURLOPT_POSTFIELDS, f->form);
  if (f->userpwd != NULL) {
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(e, CURLOPT_USERPWD, f->userpwd);
  }
  rc = curl_easy_perform(e);
  if (rc == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &f->status);
  else if (f->err[0] == '\0') snprintf(f->err, sizeof f->err, "%s", curl_easy_strerror(rc));
  if (rc == CURLE_WRITE_ERROR) snprintf(f->err, sizeof f->err, "answer larger than %u bytes", MCP_FETCH_MAX);
  curl_easy_cleanup(e);
  curl_slist_free_all(h);
}

static void after_work(uv_work_t *w, int status) {
  mcp_fetch *f = w->data;
  (void)status;
  if (!f->cancelled) {
    mcp_buf_addc(&f->body, '\0');
    f->cb(f->ud, f->status, f->body.data, f->body.len - 1, f->status ? NULL : f->err);
  }
  mcp_buf_free(&f->body);
  free(f->url);
  free(f->form);
  free(f->userpwd);
  free(f);
}

static char *dup(const char *s) {
  char *d = s ? strdup(s) : NULL;
  if (s && d == NULL) abort();
  return d;
}

void mcp_fetch_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }   /* counted by libcurl */
void mcp_fetch_close(void) { curl_global_cleanup(); }

mcp_fetch *mcp_fetch_start(uv_loop_t *loop, const char *url, const char *form, const char *userpwd,
                           long timeout_ms, mcp_fetch_cb cb, void *ud) {
  mcp_fetch *f = calloc(1, sizeof *f);
  if (f == NULL) abort();
  f->work.data = f;
  f->url = dup(url);
  f->form = dup(form);
  f->userpwd = dup(userpwd);
  f->timeout_ms = timeout_ms;
  f->cb = cb;
  f->ud = ud;
  if (uv_queue_work(loop, &f->work, work, after_work) != 0) abort();
  return f;
}

void mcp_fetch_cancel(mcp_fetch *f) { f->cancelled = 1; }

int mcp_fetch_escape(const char *s, char *out, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = 0;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
        strchr("-._~", ch) != NULL) {
      if (n + 1 >= cap) return -1;
      out[n++] = (char)ch;
    } else {
      if (n + 3 >= cap) return -1;
      out[n++] = '%';
      out[n++] = hex[ch >> 4];
      out[n++] = hex[ch & 15];
    }
  }
  out[n] = '\0';
  return 0;
}
