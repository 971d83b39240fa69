/* Tool policies (policy.c): a tool's cancel mode, timeout, grace and task
 * support, set from Lua when plugins load and read when a call arrives; and
 * the names (methods, tools, plugins) calls point at. */
#ifndef MCP_POLICY_H
#define MCP_POLICY_H

/* task: a tool's task support (execution.taskSupport). */
enum { MCP_TASK_FORBIDDEN, MCP_TASK_OPTIONAL, MCP_TASK_REQUIRED };
int mcp_policy_set(const char *tool, int mode, double timeout, double grace, const char *logger,
                   int task);
/* The task support of a tool (MCP_TASK_FORBIDDEN for one without a policy). */
int mcp_policy_task(const char *tool);
/* 1 for a tool with a policy; 0, leaving the outputs untouched, else. */
int mcp_policy_get(const char *tool, int *mode, double *timeout, double *grace,
                   const char **logger);
/* Method and tool names kept for the life of the process (policy.c). */
const char *mcp_name_intern(const char *text);
void mcp_name_close(void);
void mcp_policy_clear(void);
/* A plugin name kept until mcp_policy_clear (calls point at it). */
const char *mcp_policy_intern(const char *name);

#endif
