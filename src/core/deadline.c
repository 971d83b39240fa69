/* Deadlines: a binary min-heap and one uv_timer (see deadline.h). */
#include <stdlib.h>

#include "deadline.h"

static struct {
  uv_timer_t timer;
  mcp_deadline **heap;
  int n, cap;
  uint64_t (*clock)(void);
  void (*cb)(mcp_deadline *d);
  uint64_t armed_for;        /* the due the timer is set for; 0 = stopped */
} D;

/* The entries' own callbacks, numbered from 1 (kept across close). */
static void (*fires[8])(mcp_deadline *d);
static uint32_t nfires;

void mcp_deadline_init(mcp_deadline *d, void (*fire)(mcp_deadline *d)) {
  uint32_t i = 0;
  d->due = 0;
  d->index = -1;
  if (fire != NULL) {
    while (i < nfires && fires[i] != fire) i++;
    if (i == nfires) {
      if (nfires == sizeof fires / sizeof fires[0]) abort();
      fires[nfires++] = fire;
    }
    i++;
  }
  d->fire = i;
}

static void place(int i, mcp_deadline *d) {
  D.heap[i] = d;
  d->index = i;
}

static void sift_up(int i) {
  mcp_deadline *d = D.heap[i];
  while (i > 0 && D.heap[(i - 1) / 2]->due > d->due) {
    place(i, D.heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  place(i, d);
}

static void sift_down(int i) {
  mcp_deadline *d = D.heap[i];
  for (;;) {
    int c = 2 * i + 1;
    if (c >= D.n) break;
    if (c + 1 < D.n && D.heap[c + 1]->due < D.heap[c]->due) c++;
    if (D.heap[c]->due >= d->due) break;
    place(i, D.heap[c]);
    i = c;
  }
  place(i, d);
}

static void heap_remove(mcp_deadline *d) {
  int i = d->index;
  mcp_deadline *last = D.heap[--D.n];
  d->index = -1;
  if (last == d) return;
  place(i, last);
  sift_up(i);
  sift_down(last->index);
}

static void on_timer(uv_timer_t *t);

/* The timer is armed for the earliest entry, or for an earlier time: an
 * entry that was the earliest and left (or moved later) leaves it as it is,
 * to wake once for nothing and arm again, so that 10,000 entries cleared at
 * once restart no timer. Stopped when no entry is left (the loop may end). */
static void rearm(void) {
  uint64_t due, now;
  if (D.n == 0) {
    uv_timer_stop(&D.timer);
    D.armed_for = 0;
    return;
  }
  due = D.heap[0]->due;
  if (D.armed_for != 0 && D.armed_for <= due) return;
  now = D.clock();
  D.armed_for = due;
  uv_timer_start(&D.timer, on_timer, due > now ? (due - now + 999999) / 1000000 : 0, 0);
}

void mcp_deadline_set(mcp_deadline *d, uint64_t due) {
  if (d->index >= 0 ? due == d->due : due == 0) {   /* no change: the timer is as it should be */
    d->due = due;
    return;
  }
  if (d->index >= 0) heap_remove(d);
  d->due = due;
  if (due != 0) {
    if (D.n == D.cap) {
      D.cap = D.cap ? 2 * D.cap : 64;
      if ((D.heap = realloc(D.heap, (size_t)D.cap * sizeof *D.heap)) == NULL) abort();
    }
    D.heap[D.n] = d;
    d->index = D.n++;
    sift_up(d->index);
  }
  rearm();
}

void mcp_deadlines_run(void) {
  uint64_t now = D.clock();
  while (D.n > 0 && D.heap[0]->due <= now) {
    mcp_deadline *d = D.heap[0];
    heap_remove(d);
    if (d->fire) fires[d->fire - 1](d);  /* may set it, or others, again */
    else D.cb(d);
  }
  D.armed_for = 0;            /* the clock may have jumped (--test-clock): arm anew */
  rearm();                    /* stops the timer when nothing is left */
}

static void on_timer(uv_timer_t *t) {
  (void)t;
  D.armed_for = 0;
  mcp_deadlines_run();
}

void mcp_deadlines_init(uv_loop_t *loop, uint64_t (*clock)(void), void (*cb)(mcp_deadline *d)) {
  D.clock = clock;
  D.cb = cb;
  D.armed_for = 0;
  uv_timer_init(loop, &D.timer);
}

void mcp_deadlines_close(void) {
  uv_close((uv_handle_t *)&D.timer, NULL);
  free(D.heap);
  D.heap = NULL;
  D.n = D.cap = 0;
}
