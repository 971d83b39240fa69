/* libcurl's multi interface on the loop (curl_loop.h): curl says which
 * sockets to watch and when to time out; we tell it what happened. */
#include <stdlib.h>

#include "curl_loop.h"

typedef struct {
  uv_poll_t poll;
  curl_socket_t fd;
  mcp_curl_loop *cl;
} curl_sock;

static void act(mcp_curl_loop *cl, curl_socket_t fd, int flags) {
  cl->depth++;
  curl_multi_socket_action(cl->multi, fd, flags, &cl->running);
  cl->depth--;
  if (cl->depth == 0 && cl->done) cl->done(cl);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  curl_sock *s = h->data;
  int flags = 0;
  if (status < 0) flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  act(s->cl, s->fd, flags);
}

static void on_timeout(uv_timer_t *h) {
  act(h->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *m, long ms, void *ud) {
  mcp_curl_loop *cl = ud;
  (void)m;
  if (ms < 0) uv_timer_stop(&cl->timer);
  else uv_timer_start(&cl->timer, on_timeout, (uint64_t)ms, 0);
  return 0;
}

static void sock_closed(uv_handle_t *h) { free(h->data); }

static int on_curl_socket(CURL *e, curl_socket_t fd, int what, void *ud, void *sockp) {
  mcp_curl_loop *cl = ud;
  curl_sock *s = sockp;
  int events = 0;
  (void)e;
  if (what == CURL_POLL_REMOVE) {
    if (s) {
      uv_poll_stop(&s->poll);
      uv_close((uv_handle_t *)&s->poll, sock_closed);
      curl_multi_assign(cl->multi, fd, NULL);
    }
    return 0;
  }
  if (s == NULL) {
    if ((s = calloc(1, sizeof *s)) == NULL) abort();
    s->fd = fd;
    s->cl = cl;
    if (uv_poll_init_socket(cl->loop, &s->poll, fd) != 0) {
      free(s);
      return -1;
    }
    s->poll.data = s;
    curl_multi_assign(cl->multi, fd, s);
  }
  if (what & CURL_POLL_IN) events |= UV_READABLE;
  if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
  uv_poll_start(&s->poll, events, on_poll);
  return 0;
}

void mcp_curl_loop_init(mcp_curl_loop *cl, uv_loop_t *loop, void (*done)(mcp_curl_loop *cl)) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  cl->loop = loop;
  cl->done = done;
  cl->running = cl->depth = 0;
  if ((cl->multi = curl_multi_init()) == NULL) abort();
  curl_multi_setopt(cl->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
  curl_multi_setopt(cl->multi, CURLMOPT_SOCKETDATA, cl);
  curl_multi_setopt(cl->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(cl->multi, CURLMOPT_TIMERDATA, cl);
  uv_timer_init(loop, &cl->timer);
  cl->timer.data = cl;
}

void mcp_curl_loop_close(mcp_curl_loop *cl) {
  curl_multi_cleanup(cl->multi);
  cl->multi = NULL;
  uv_close((uv_handle_t *)&cl->timer, NULL);
  curl_global_cleanup();
}
