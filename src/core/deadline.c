/* Deadlines: a binary min-heap and one uv_timer (see deadline.h). */
#include <stdlib.h>

#include "deadline.h"

/* A slot holds its entry's due, so that ordering reads the array, not the
 * entries spread over memory. An entry removed leaves its slot empty (d NULL,
 * the due kept: the order holds): it goes when it reaches the root, or when
 * empty slots are half the heap and the live ones are heaped again. So
 * 10,000 entries cleared one by one (a cancel storm's sleeps) cost a write
 * each and a compaction's share, not a sift through entries each. */
typedef struct {
  uint64_t due;
  mcp_deadline *d;
} slot;

static struct {
  uv_timer_t timer;
  slot *heap;
  int n, cap, empty;         /* slots, of which empty */
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

static void place(int i, slot s) {
  D.heap[i] = s;
  if (s.d != NULL) s.d->index = i;
}

static void sift_up(int i) {
  slot s = D.heap[i];
  while (i > 0 && D.heap[(i - 1) / 2].due > s.due) {
    place(i, D.heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  place(i, s);
}

static void sift_down(int i) {
  slot s = D.heap[i];
  for (;;) {
    int c = 2 * i + 1;
    if (c >= D.n) break;
    if (c + 1 < D.n && D.heap[c + 1].due < D.heap[c].due) c++;
    if (D.heap[c].due >= s.due) break;
    place(i, D.heap[c]);
    i = c;
  }
  place(i, s);
}

/* The live slots heaped again, the empty ones gone. */
static void compact(void) {
  int n = 0;
  for (int i = 0; i < D.n; i++)
    if (D.heap[i].d != NULL) D.heap[n++] = D.heap[i];
  D.n = n;
  D.empty = 0;
  for (int i = 0; i < n; i++) D.heap[i].d->index = i;
  for (int i = n / 2 - 1; i >= 0; i--) sift_down(i);
}

static void pop_root(void) {
  if (D.heap[0].d != NULL) D.heap[0].d->index = -1;
  else D.empty--;
  if (--D.n > 0) {
    place(0, D.heap[D.n]);
    sift_down(0);
  }
}

static void heap_remove(mcp_deadline *d) {
  int i = d->index;
  d->index = -1;
  if (i == D.n - 1) {
    D.n--;
    return;
  }
  D.heap[i].d = NULL;
  if (++D.empty > D.n / 2 && D.n >= 64) compact();
}

static void on_timer(uv_timer_t *t);

/* The timer is armed for the earliest entry, or for an earlier time: an
 * entry that was the earliest and left (or moved later) leaves it as it is,
 * to wake once for nothing and arm again, so that 10,000 entries cleared at
 * once restart no timer. Stopped when no entry is left (the loop may end). */
static void rearm(void) {
  uint64_t due, now;
  if (D.n == D.empty) {
    D.n = D.empty = 0;
    uv_timer_stop(&D.timer);
    D.armed_for = 0;
    return;
  }
  due = D.heap[0].due;                    /* an empty slot's may be earlier than any entry's */
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
    D.heap[D.n] = (slot){ due, d };
    d->index = D.n++;
    sift_up(d->index);
  }
  rearm();
}

void mcp_deadlines_run(void) {
  uint64_t now = D.clock();
  while (D.n > 0 && D.heap[0].due <= now) {
    mcp_deadline *d = D.heap[0].d;
    pop_root();
    if (d == NULL) continue;
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
  D.n = D.cap = D.empty = 0;
}
