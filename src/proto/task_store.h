/* Tasks in the shared store (--store): task_store.c writes a local task's
 * record on every change and answers the extension's tasks/get, tasks/update
 * and tasks/cancel from the store. Opening it registers its row into task.c
 * and its store hooks into store.h's client. */
#ifndef MCP_TASK_STORE_H
#define MCP_TASK_STORE_H

#include <stddef.h>

/* --store URL: so that every instance answers for every task. 0, or -1
 * with why in err. */
int mcp_task_store_open(const char *url, char *err, size_t cap);

#endif
