/* What a handler's child (ctx:spawn, spawn.c) and a long-lived child
 * (mcp.proc, proc.c) share: their spawn options, the read buffer of their
 * output pipes, signalling, and the strings of their argv kept alive. Each
 * file owns its own struct and lifetime; these are plain helpers. */
#ifndef MCP_CHILD_H
#define MCP_CHILD_H

#include <lua.h>
#include <uv.h>

/* The string (or number) at idx, copied into the anchor table at index
 * anchor so it lives as long as that table; raises "<who>: <what> must be a
 * string" for anything else. */
const char *mcp_child_anchored(lua_State *L, int anchor, int idx, const char *who, const char *what);

/* The environment of opts.env (opts at index opts): the server's, with the
 * names it maps to a string set and those it maps to false removed; NULL
 * (inherit) without opts.env. The array and its strings live in the anchor
 * table. Raises "<who>: opts.env ..." for a bad table. confined (a
 * sandboxed plugin's child): of the server's environment only PATH, and
 * none of the variables the dynamic loader or libc read (LD_*, ...). */
const char **mcp_child_env(lua_State *L, int opts, int anchor, const char *who, int confined);

/* Options to run argv[0] with argv, envp (NULL: the server's) and cwd (NULL:
 * the server's) in a process group of its own, with the three stdio
 * containers in stdio (zeroed here: the caller sets them). */
void mcp_child_options(uv_process_options_t *o, uv_stdio_container_t stdio[3], const char **argv,
                       const char **envp, const char *cwd, uv_exit_cb on_exit);

/* Signal the child's process group, or the child itself if that fails.
 * Never call it once the child was reaped: its pid may be reused. */
void mcp_child_kill(uv_process_t *proc, int sig);

/* The alloc callback of a child's output pipe: one buffer for all, since
 * the loop reads into it at once and the read callback copies it out. */
void mcp_child_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);

#endif
