/* The Lua state's allocator and what it enforces: the server's
 * --memory-limit while handler code runs (inside a resume: the core's own
 * allocations on the main thread never fail on it), the fail_alloc test
 * hook, and the memory budgets of sandboxed plugins (policy.h). sched.c
 * tells it which call's code runs (mcp__alloc_running) and is told, through
 * the callback it registered, when a call passes its budget. What the
 * plugin's code allocates is also counted across calls, nothing taken back
 * for what is freed: src/lua/sandbox_mem.c measures what the plugin keeps
 * when that passes a step (mcp_budget_due). */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "sched_int.h"
#include "slab.h"

#define SLAB MCP_SLAB_ON

#define MB ((size_t)1 << 20)

static struct {
  size_t used;                      /* the state's bytes */
  int enforced;                     /* inside a resume: --memory-limit holds */
  /* Test hook (--test-clock: notifications/luamcp/fail_alloc): the Nth
   * allocation inside a resume from now fails, and every one after it until
   * that resume ends (Lua retries a failed one after an emergency collection). */
  unsigned long fail_at, fail_count;
  mcp_call *running;                /* the call whose code runs now, or NULL */
  mcp_budget *account;              /* outside calls: a sandboxed plugin's file loading */
  size_t account_held;              /* what its file allocated and holds */
  mcp_budget *budget;               /* what allocations count to now: running's, or account */
} A;

void (*mcp__alloc_over_cb)(mcp_call *c);

void mcp_sched_fail_alloc(unsigned long n) {
  A.fail_at = n;
  A.fail_count = 0;
}

/* Memory of a sandboxed plugin: what the code of its calls (or of its file,
 * loading) allocates is counted to its budget, what that code frees is taken
 * back up to what it holds (the collector, running in its call, frees others'
 * garbage too). Past the limit the allocation fails and the call is ended. */
static int budget_refuses(mcp_budget *b, size_t grow) {
  if (b->mem_limit == 0 || b->mem_used + grow <= b->mem_limit) return 0;
  if (A.running != NULL && mcp__alloc_over_cb) mcp__alloc_over_cb(A.running);
  return 1;
}

static void budget_take(mcp_budget *b, size_t old, size_t nsize) {
  size_t *held = A.running ? &A.running->mem_held : &A.account_held;
  if (nsize >= old) {
    b->grown += nsize - old;
    b->mem_used += nsize - old;
    *held += nsize - old;
  } else {
    size_t back = old - nsize < *held ? old - nsize : *held;
    b->mem_used -= back;
    *held -= back;
  }
}

/* realloc's contract for Lua's blocks: small ones in the slab (slab.h). */
static void block_free(void *p, size_t n) {
  if (SLAB && n <= MCP_SLAB_MAX) mcp_slab_free(p, n);
  else free(p);
}

static void *block_realloc(void *p, size_t old, size_t n) {
  void *q;
  if (!SLAB || (old > MCP_SLAB_MAX && n > MCP_SLAB_MAX)) return realloc(p, n);
  if (p == NULL) return n <= MCP_SLAB_MAX ? mcp_slab_alloc(n) : malloc(n);
  if (old <= MCP_SLAB_MAX && n <= MCP_SLAB_MAX && mcp_slab_same(old, n)) return p;
  q = n <= MCP_SLAB_MAX ? mcp_slab_alloc(n) : malloc(n);
  if (q == NULL) return n < old ? p : NULL;   /* Lua's shrink never fails: the block is large enough */
  memcpy(q, p, old < n ? old : n);
  block_free(p, old);
  return q;
}

/* Any block, with what it counts and what may refuse it. Not inlined: the
 * fast path below keeps a light frame. */
__attribute__((noinline)) static void *alloc_any(void *ptr, size_t osize, size_t nsize) {
  size_t old = ptr ? osize : 0;
  mcp_budget *b = A.budget;
  void *p;
  if (nsize == 0) {
    if (ptr != NULL) block_free(ptr, old);
    A.used -= old;
    if (b) budget_take(b, old, 0);
    return NULL;
  }
  if (nsize > old) {
    if (b && budget_refuses(b, nsize - old)) return NULL;
    if (A.enforced && mcp_cfg.memory_limit && A.used + (nsize - old) > mcp_cfg.memory_limit) return NULL;
    if (A.enforced && A.fail_at && ++A.fail_count >= A.fail_at) return NULL;
  }
  p = block_realloc(ptr, old, nsize);
  if (p == NULL) return NULL;
  A.used = A.used - old + nsize;
  if (b) budget_take(b, old, nsize);
  return p;
}

/* Most of Lua's calls: a small block made or freed with no budget to count
 * it to and no limit it passes, straight from the slab; the rest, alloc_any. */
void *mcp_sched_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (SLAB && A.budget == NULL) {
    if (nsize == 0) {
      if (ptr == NULL) return NULL;              /* an empty part of a table: Lua frees it too */
      if (osize <= MCP_SLAB_MAX) {
        mcp_slab_free(ptr, osize);
        A.used -= osize;
        return NULL;
      }
    } else if (ptr == NULL && nsize <= MCP_SLAB_MAX &&
               !(A.enforced && (A.fail_at || (mcp_cfg.memory_limit && A.used + nsize > mcp_cfg.memory_limit)))) {
      void *p = mcp_slab_alloc(nsize);
      if (p != NULL) A.used += nsize;
      return p;
    }
  }
  return alloc_any(ptr, osize, nsize);
}

size_t mcp_sched_memory(void) { return A.used; }

mcp_budget *mcp_sched_budget(void) { return A.budget; }

mcp_budget *mcp_sched_budget_swap(mcp_budget *b) {
  mcp_budget *was = A.budget;
  A.budget = b;
  return was;
}

void mcp__alloc_running(mcp_call *c, int resume) {
  A.running = c;
  A.budget = c != NULL ? c->budget : A.account;
  if (c != NULL && resume) A.enforced = 1;
  if (c == NULL && A.enforced) {
    A.enforced = 0;
    if (A.fail_at && A.fail_count >= A.fail_at) A.fail_at = 0;   /* the test hook fired */
  }
}

void mcp_call_set_budget(mcp_call *c, mcp_budget *b) {
  c->budget = b;
  if (c == A.running) A.budget = b;
}

/* The growth past the last measure that asks for a new one: a quarter of
 * memory_mb, at least 1 MB. */
size_t mcp_budget_step(const mcp_budget *b) { return b->mem_limit / 4 > MB ? b->mem_limit / 4 : MB; }

/* Allocated, not net of what was freed: garbage counted before the last
 * measure and freed after it would hide as much growth. */
int mcp_budget_due(const mcp_budget *b) { return b->on && b->mem_limit && b->grown > mcp_budget_step(b); }

void mcp_budget_measured(mcp_budget *b, size_t bytes) {
  b->grown = 0;
  b->retained = bytes;
}

void mcp_sched_account(mcp_budget *b) {
  if (A.account) A.account->mem_used -= A.account_held;
  A.account = b;
  A.account_held = 0;
  if (A.running == NULL) A.budget = b;
}
