/* Tool policies (cancel mode, timeout, grace, task support, Mcp-Param
 * headers declared or not), registered from
 * Lua when plugins load and read by the scheduler when a tools/call arrives
 * (and by rev2026.c, which refuses a task-only tool to a client without the
 * tasks extension before the call starts). */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "policy.h"

#define NBUCKETS 256

typedef struct policy {
  struct policy *next;
  char *tool;
  int mode;
  int task;              /* MCP_TASK_FORBIDDEN, _OPTIONAL, _REQUIRED */
  int headers;           /* it declares x-mcp-header arguments (mcp_policy_set_headers) */
  double timeout, grace;
  const char *logger;    /* interned: calls in flight keep pointing at it */
  const char *name;      /* tool, interned (mcp_name_intern) when first asked for, or NULL */
} policy;

static policy *buckets[NBUCKETS];
static char **loggers;
static size_t nloggers;
static mcp_budget *budgets;

/* Plugin names are few; keep each once, until mcp_policy_clear. */
const char *mcp_policy_intern(const char *name) {
  for (size_t i = 0; i < nloggers; i++)
    if (strcmp(loggers[i], name) == 0) return loggers[i];
  loggers = realloc(loggers, (nloggers + 1) * sizeof *loggers);
  if (loggers == NULL || (loggers[nloggers] = strdup(name)) == NULL) abort();
  return loggers[nloggers++];
}

static unsigned name_hash(const char *s) {
  unsigned h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h % NBUCKETS;
}

int mcp_policy_set(const char *tool, int mode, double timeout, double grace, const char *logger,
                   int task) {
  policy **slot = &buckets[name_hash(tool)], *p;
  for (p = *slot; p; p = p->next)
    if (strcmp(p->tool, tool) == 0) break;
  if (p == NULL) {
    p = calloc(1, sizeof *p);
    if (p == NULL || (p->tool = strdup(tool)) == NULL) abort();
    p->next = *slot;
    *slot = p;
  }
  p->mode = mode;
  p->task = task;
  p->timeout = timeout;
  p->grace = grace;
  p->logger = logger ? mcp_policy_intern(logger) : NULL;
  return 0;
}

static policy *find(const char *tool) {
  for (policy *p = buckets[name_hash(tool)]; p; p = p->next)
    if (strcmp(p->tool, tool) == 0) return p;
  return NULL;
}

void mcp_policy_set_headers(const char *tool, int declared) {
  policy *p = find(tool);
  if (p != NULL) p->headers = declared != 0;
}

int mcp_policy_headers(const char *tool) {
  const policy *p = find(tool);
  return p != NULL ? p->headers : -1;
}

const char *mcp_policy_get(const char *tool, int *mode, double *timeout, double *grace,
                           const char **logger) {
  for (policy *p = buckets[name_hash(tool)]; p; p = p->next)
    if (strcmp(p->tool, tool) == 0) {
      *mode = p->mode;
      *timeout = p->timeout;
      *grace = p->grace;
      *logger = p->logger;
      if (p->name == NULL) p->name = mcp_name_intern(tool);
      return p->name;
    }
  return NULL;
}

/* Names of methods and declared tools: few, so each is kept once for the
 * life of the process and calls point at it (a copy per call cost 32 bytes
 * of each call's memory). */
typedef struct name { struct name *next; char text[]; } name;
static name *names[NBUCKETS];

const char *mcp_name_intern(const char *text) {
  name **b = &names[name_hash(text)], *n;
  size_t len = strlen(text);
  for (n = *b; n; n = n->next)
    if (strcmp(n->text, text) == 0) return n->text;
  if ((n = malloc(sizeof *n + len + 1)) == NULL) abort();
  memcpy(n->text, text, len + 1);
  n->next = *b;
  *b = n;
  return n->text;
}

void mcp_name_close(void) {
  for (int i = 0; i < NBUCKETS; i++)
    for (policy *p = buckets[i]; p; p = p->next) p->name = NULL;
  for (int i = 0; i < NBUCKETS; i++)
    while (names[i]) {
      name *n = names[i];
      names[i] = n->next;
      free(n);
    }
}

int mcp_policy_task(const char *tool) {
  for (policy *p = buckets[name_hash(tool)]; p; p = p->next)
    if (strcmp(p->tool, tool) == 0) return p->task;
  return MCP_TASK_FORBIDDEN;
}

mcp_budget *mcp_budget_of(const char *plugin, int create) {
  mcp_budget *b;
  if (plugin == NULL) return NULL;
  for (b = budgets; b; b = b->next)
    if (strcmp(b->plugin, plugin) == 0) return b->on || create ? b : NULL;
  if (!create) return NULL;
  if ((b = calloc(1, sizeof *b)) == NULL) abort();
  b->plugin = mcp_policy_intern(plugin);
  b->next = budgets;
  budgets = b;
  return b;
}

void mcp_policy_clear(void) {
  while (budgets) {
    mcp_budget *next = budgets->next;
    free(budgets);
    budgets = next;
  }
  for (int i = 0; i < NBUCKETS; i++) {
    policy *p = buckets[i], *next;
    for (; p; p = next) {
      next = p->next;
      free(p->tool);
      free(p);
    }
    buckets[i] = NULL;
  }
  for (size_t i = 0; i < nloggers; i++) free(loggers[i]);
  free(loggers);
  loggers = NULL;
  nloggers = 0;
}
