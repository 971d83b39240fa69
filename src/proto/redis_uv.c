/* hiredis on the loop: hiredis's own libuv adapter (hiredis/adapters/
 * libuv.h), except that a poll error (a refused connect reports one) is
 * handed to hiredis as readiness, so that its connect check sees the error
 * and says so; 0.14's adapter drops it, and a refused connection would wait
 * forever. The uvev is hiredis's (ac->ev.data): freed when the poll handle
 * closes, after hiredis's cleanup. */
#include <stdlib.h>

#include "redis_uv.h"

typedef struct {
  redisAsyncContext *ac;       /* NULL once hiredis let go */
  uv_poll_t poll;
  int events;
} uvev;

static void ev_poll(uv_poll_t *h, int status, int events) {
  uvev *e = h->data;
  if (status < 0) events = e->events;
  if (e->ac != NULL && (events & UV_READABLE)) redisAsyncHandleRead(e->ac);
  if (e->ac != NULL && (events & UV_WRITABLE)) redisAsyncHandleWrite(e->ac);
}

static void ev_set(void *p, int add, int ev) {
  uvev *e = p;
  int want = add ? e->events | ev : e->events & ~ev;
  if (want == e->events) return;
  e->events = want;
  if (want) uv_poll_start(&e->poll, want, ev_poll);
  else uv_poll_stop(&e->poll);
}

static void ev_add_read(void *p) { ev_set(p, 1, UV_READABLE); }
static void ev_del_read(void *p) { ev_set(p, 0, UV_READABLE); }
static void ev_add_write(void *p) { ev_set(p, 1, UV_WRITABLE); }
static void ev_del_write(void *p) { ev_set(p, 0, UV_WRITABLE); }

static void ev_closed(uv_handle_t *h) { free(h->data); }

static void ev_cleanup(void *p) {
  uvev *e = p;
  e->ac = NULL;
  uv_close((uv_handle_t *)&e->poll, ev_closed);
}

int mcp_redis_uv_attach(redisAsyncContext *ac, uv_loop_t *loop) {
  uvev *e = calloc(1, sizeof *e);
  if (e == NULL) abort();
  if (uv_poll_init(loop, &e->poll, ac->c.fd) != 0) {
    free(e);
    return -1;
  }
  e->ac = ac;
  e->poll.data = e;
  ac->ev.data = e;
  ac->ev.addRead = ev_add_read;
  ac->ev.delRead = ev_del_read;
  ac->ev.addWrite = ev_add_write;
  ac->ev.delWrite = ev_del_write;
  ac->ev.cleanup = ev_cleanup;
  return 0;
}
