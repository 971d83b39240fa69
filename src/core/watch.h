/* Hot reload: libuv fs events on the plugins directories and their lib/
 * (and the configuration file), debounced, so that an editor's
 * write-rename-write counts once. */
#ifndef MCP_WATCH_H
#define MCP_WATCH_H

#include <uv.h>

/* on_change(lib_dirs, n): after a quiet period, the dirs whose lib/ changed
 * (n may be 0: only plugin files changed). */
typedef void (*mcp_watch_cb)(const char **lib_dirs, int n);

int mcp_watch_start(uv_loop_t *loop, const char **dirs, int ndirs, unsigned debounce_ms,
                    mcp_watch_cb on_change);
/* Also watch one file (after mcp_watch_start): the configuration, an MCP
 * App's HTML. Its changes call on_change as a plugin file's do. A file
 * watched already is not watched twice. */
int mcp_watch_file(uv_loop_t *loop, const char *path);
/* The same on the loop of mcp_watch_start; before it, kept until it starts
 * (plugins load before the watch starts). */
int mcp_watch_add(const char *path);
void mcp_watch_close(void);

#endif
