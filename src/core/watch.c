/* Hot reload: fs events on the plugins directories and their lib/, and on
 * the directories of single files (the configuration file, the HTML of an
 * MCP App): an editor may replace a file, so its directory is watched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "watch.h"

#define MAX_DIRS 32
#define MAX_FILES 64

typedef struct {
  uv_fs_event_t ev;
  int dir;                      /* index in W.dirs; -1: a single file's, W.files[file] */
  int file;
  int is_lib;
} watcher;

static struct {
  uv_timer_t debounce;
  uv_loop_t *loop;
  watcher *w[2 * MAX_DIRS + MAX_FILES];
  int nw;
  const char *dirs[MAX_DIRS];
  char *files[MAX_FILES];       /* single files (their names after the last '/') */
  int ndirs, nfiles;
  int lib_dirty[MAX_DIRS];
  int dirty;
  unsigned debounce_ms;
  mcp_watch_cb cb;
} W;

static int ends_with_lua(const char *name) {
  size_t n = name ? strlen(name) : 0;
  return n > 4 && strcmp(name + n - 4, ".lua") == 0;
}

static void on_quiet(uv_timer_t *t) {
  const char *libs[MAX_DIRS];
  int n = 0;
  (void)t;
  for (int i = 0; i < W.ndirs; i++)
    if (W.lib_dirty[i]) {
      libs[n++] = W.dirs[i];
      W.lib_dirty[i] = 0;
    }
  W.dirty = 0;
  W.cb(libs, n);
}

/* Editors save in many ways (write in place, write a temp file and rename,
 * delete and create): any event naming a .lua file marks its directory, and
 * the reload runs once events stop for debounce_ms. */
static void on_event(uv_fs_event_t *h, const char *name, int events, int status) {
  watcher *w = h->data;
  (void)events;
  if (status < 0) {
    mcp_warn("watch: %s: %s", w->dir < 0 ? W.files[w->file] : W.dirs[w->dir], uv_strerror(status));
    return;
  }
  if (w->dir < 0) {
    const char *file = W.files[w->file], *slash = strrchr(file, '/');
    if (name == NULL || strcmp(name, slash != NULL ? slash + 1 : file) != 0) return;
    mcp_debug("watch: %s changed", file);
  } else {
    if (name != NULL && !ends_with_lua(name)) return;
    mcp_debug("watch: %s%s/%s changed", W.dirs[w->dir], w->is_lib ? "/lib" : "", name ? name : "?");
  }
  if (w->is_lib) W.lib_dirty[w->dir] = 1;
  W.dirty = 1;
  uv_timer_start(&W.debounce, on_quiet, W.debounce_ms, 0);
}

/* dir: an index in W.dirs, or -1 and file: one in W.files. */
static int watch_path(uv_loop_t *loop, const char *path, int dir, int file, int is_lib) {
  watcher *w = calloc(1, sizeof *w);
  int r;
  if (w == NULL) abort();
  uv_fs_event_init(loop, &w->ev);
  w->ev.data = w;
  w->dir = dir;
  w->file = file;
  w->is_lib = is_lib;
  r = uv_fs_event_start(&w->ev, on_event, path, 0);
  if (r != 0) {
    uv_close((uv_handle_t *)&w->ev, (uv_close_cb)free);
    return r;
  }
  W.w[W.nw++] = w;
  return 0;
}

/* Watch W.files[i]'s directory, for events naming it. */
static int watch_file_at(int i) {
  char dir[4096];
  const char *path = W.files[i], *slash = strrchr(path, '/');
  int r;
  if (slash == NULL) snprintf(dir, sizeof dir, ".");
  else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  if ((r = watch_path(W.loop, dir, -1, i, 0)) != 0) {
    mcp_error("watch: %s: %s", path, uv_strerror(r));
    return r;
  }
  mcp_info("watching %s for changes", path);
  return 0;
}

int mcp_watch_start(uv_loop_t *loop, const char **dirs, int ndirs, unsigned debounce_ms,
                    mcp_watch_cb on_change) {
  char lib[4096];
  int r;
  if (ndirs > MAX_DIRS) return UV_E2BIG;
  W.cb = on_change;
  W.loop = loop;
  W.debounce_ms = debounce_ms;
  uv_timer_init(loop, &W.debounce);
  for (int i = 0; i < ndirs; i++) {
    W.dirs[W.ndirs++] = dirs[i];
    if ((r = watch_path(loop, dirs[i], i, -1, 0)) != 0) {
      mcp_error("watch: %s: %s", dirs[i], uv_strerror(r));
      return r;
    }
    snprintf(lib, sizeof lib, "%s/lib", dirs[i]);
    if (watch_path(loop, lib, i, -1, 1) == 0) mcp_debug("watch: %s", lib);
    mcp_info("watching %s for changes", dirs[i]);
  }
  for (int i = 0; i < W.nfiles; i++)       /* files named before the start (an app's HTML) */
    (void)watch_file_at(i);                 /* one that cannot be watched is logged, not fatal */
  return 0;
}

int mcp_watch_file(uv_loop_t *loop, const char *path) {
  int r;
  for (int i = 0; i < W.nfiles; i++)
    if (strcmp(W.files[i], path) == 0) return 0;
  if (W.nfiles == MAX_FILES) return UV_E2BIG;
  if ((W.files[W.nfiles] = strdup(path)) == NULL) abort();
  W.loop = loop;
  if ((r = watch_file_at(W.nfiles)) != 0) {
    free(W.files[W.nfiles]);
    return r;
  }
  W.nfiles++;
  return 0;
}

int mcp_watch_add(const char *path) {
  if (W.loop != NULL) return mcp_watch_file(W.loop, path);
  for (int i = 0; i < W.nfiles; i++)           /* kept until mcp_watch_start */
    if (strcmp(W.files[i], path) == 0) return 0;
  if (W.nfiles == MAX_FILES) return UV_E2BIG;
  if ((W.files[W.nfiles++] = strdup(path)) == NULL) abort();
  return 0;
}

void mcp_watch_close(void) {
  for (int i = 0; i < W.nw; i++) uv_close((uv_handle_t *)&W.w[i]->ev, (uv_close_cb)free);
  W.nw = 0;
  for (int i = 0; i < W.nfiles; i++) free(W.files[i]);
  W.nfiles = 0;
  W.loop = NULL;
  if (W.ndirs > 0) uv_close((uv_handle_t *)&W.debounce, NULL);
  W.ndirs = 0;
}
