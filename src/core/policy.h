/* Tool policies (policy.c): a tool's cancel mode, timeout, grace and task
 * support, set from Lua when plugins load and read when a call arrives; and
 * the names (methods, tools, plugins) calls point at. */
#ifndef MCP_POLICY_H
#define MCP_POLICY_H

#include <stddef.h>
#include <stdint.h>

/* task: a tool's task support (execution.taskSupport). */
enum { MCP_TASK_FORBIDDEN, MCP_TASK_OPTIONAL, MCP_TASK_REQUIRED };
int mcp_policy_set(const char *tool, int mode, double timeout, double grace, const char *logger,
                   int task);
/* The task support of a tool (MCP_TASK_FORBIDDEN for one without a policy). */
int mcp_policy_task(const char *tool);
/* Does the tool (with a policy) declare x-mcp-header arguments (Mcp-Param
 * headers, 2026-07-28)? Set from Lua when its plugin loads. */
void mcp_policy_set_headers(const char *tool, int declared);
/* 1: it does, 0: it does not, -1: no policy says (ask Lua: mcp_sched_param_headers). */
int mcp_policy_headers(const char *tool);
/* For a tool with a policy: its name interned (mcp_name_intern's); NULL,
 * leaving the outputs untouched, else. */
const char *mcp_policy_get(const char *tool, int *mode, double *timeout, double *grace,
                           const char **logger);
/* Method and tool names kept for the life of the process (policy.c). */
const char *mcp_name_intern(const char *text);
void mcp_name_close(void);
void mcp_policy_clear(void);
/* A plugin name kept until mcp_policy_clear (calls point at it). */
const char *mcp_policy_intern(const char *name);

/* A sandboxed plugin's limits (issue 23), set by src/lua/sandbox.c when it
 * loads; sched.c accounts its calls' memory and CPU against them. Kept
 * until mcp_policy_clear (calls point at them); a plugin that is no longer
 * sandboxed has its budget turned off (on = 0), not freed. */
typedef struct mcp_budget {
  struct mcp_budget *next;
  const char *plugin;        /* interned */
  size_t mem_limit;          /* bytes its calls in flight may hold; 0 = none */
  size_t mem_used;           /* what they hold: sched.c's */
  /* What it keeps across calls (sandbox_mem.c measures it): what it keeps
   * cannot have grown since the last measure by more than its code
   * allocated since, whatever was freed (a free may be of garbage counted
   * before that measure, or of others'): grown, the trigger of the next. */
  size_t grown;              /* bytes its code allocated since the last measure: alloc.c's */
  size_t retained;           /* the last measure */
  uint64_t cpu_ns;           /* CPU time a call may use; 0 = none */
  int on;
} mcp_budget;

/* plugin's budget (created when asked), or NULL for a trusted plugin. */
mcp_budget *mcp_budget_of(const char *plugin, int create);
/* What it keeps (alloc.c): the step, a quarter of mem_limit (at least 1 MB);
 * is a measure due (its code allocated more than a step since the last)?;
 * a measure made (bytes held). */
size_t mcp_budget_step(const mcp_budget *b);
int mcp_budget_due(const mcp_budget *b);
void mcp_budget_measured(mcp_budget *b, size_t bytes);

#endif
