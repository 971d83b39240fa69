/* Long-lived child processes (core.proc): the stdio upstreams of MCP
 * clients. Unlike ctx:spawn's children (spawn.c), they belong to no call:
 * a client made at a plugin's top level shares one among every call, and it
 * lives until the client stops it, its Lua handle is collected, or the
 * server shuts down.
 *
 *   local p = core.proc{ argv = {"prog", "arg"}, env = {NAME = "value" or false},
 *                        cwd = dir, max_line = bytes,
 *                        on_line = function(line), on_stderr = function(line),
 *                        on_exit = function(code, signal) }
 *   p:write(text, ...)  p:close_stdin()  p:kill([signal])  p:stop([grace])  p:pid()  p:alive()
 *
 * Writes are batched: what a loop turn writes goes out in one write before
 * the loop polls again (a prepare handle), as the server's own stdout does.
 * stdout is read line by line; each line goes to on_line, on the main
 * thread, outside any call (mcp_call_pcall(NULL, ...)); errors are logged.
 * stderr goes to on_stderr the same way, or, without it, to the server's
 * stderr as is. on_exit runs once the child was reaped and its stdout and
 * stderr are drained. The child runs in its own process group, and signals
 * go to the group. The callbacks live in the handle (its user value), so a
 * client that is dropped lets its handle be collected, and the collection
 * stops the child. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <uv.h>

#include "buf.h"
#include "child.h"
#include "fail.h"
#include "log.h"
#include "proc.h"
#include "sandbox.h"
#include "sched.h"
#include "weak.h"

#define PROC_MT "mcp.proc"
#define MAX_LINE (16u << 20)           /* default longest line of stdout or stderr */
#define DRAIN_MS 250                   /* after the exit, how long its pipes may stay open */
#define SHUTDOWN_GRACE 2.0             /* seconds between SIGTERM and SIGKILL at shutdown */



/* The Lua handle: a full userdata, user value 1 the table of callbacks. */
typedef struct {
  mcp_proc *p;                         /* NULL once the child is reaped and reported */
  int pid;
} proc_handle;

/* One child. It owns itself: created by l_proc, freed in the close callback
 * of its last handle (proc_closed), after it was reaped, nowhere else. The
 * Lua handle and the struct point at each other until either goes. */
struct mcp_proc {
  mcp_proc *prev, *next;               /* P.all: every child not freed */
  proc_handle *ud;                     /* the Lua handle; NULL once collected */
  uv_process_t proc;
  uv_pipe_t in;
  uv_prepare_t flusher;                /* writes pend before the loop polls */
  mcp_buf pend;                        /* what this turn wrote to stdin */
  uv_shutdown_t shut;
  struct {
    uv_pipe_t pipe;
    mcp_buf buf;                       /* the partial line */
    unsigned on : 1;                   /* open */
  } out[2];                            /* stdout, stderr */
  uv_timer_t timer;                    /* SIGKILL after the grace; then the drain */
  size_t max_line;
  int64_t code;
  int signal, pid;
  int open;                            /* handles not closed yet */
  double grace;
  char name[64];
  void *fwd;                           /* the forward path's state (forward.c), or NULL */
  unsigned in_on : 1, in_closing : 1, exited : 1, reported : 1, terminating : 1;
};

static struct {
  mcp_proc *all;
  int shutting;                        /* mcp_proc_close_all ran: no new children */
} P;

/* registry[&P]: {[lightuserdata proc] = handle}, weak values. */
static void push_weak(lua_State *L) { lua_rawgetp(L, LUA_REGISTRYINDEX, &P); }

static const char *const stream_names[2] = { "stdout", "stderr" };

/* The forward path's hooks (mcp_proc_set_fwd). */
static int (*fwd_line)(void *fwd, const char *line, size_t len);
static void (*fwd_free)(void *fwd);

void mcp_proc_set_fwd(int (*line)(void *fwd, const char *line, size_t len), void (*free_fn)(void *fwd)) {
  fwd_line = line;
  fwd_free = free_fn;
}

static void proc_free(mcp_proc *p) {
  if (p->fwd != NULL) fwd_free(p->fwd);
  if (p->prev) p->prev->next = p->next; else P.all = p->next;
  if (p->next) p->next->prev = p->prev;
  if (p->ud) p->ud->p = NULL;
  mcp_buf_free(&p->pend);
  mcp_buf_free(&p->out[0].buf);
  mcp_buf_free(&p->out[1].buf);
  free(p);
}

static void proc_closed(uv_handle_t *h) {
  mcp_proc *p = h->data;
  if (--p->open == 0) proc_free(p);
}

static void close_handle(uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, proc_closed);
}

static void close_in(mcp_proc *p) {
  if (!p->in_on) return;
  p->in_on = 0;
  p->pend.len = 0;
  uv_prepare_stop(&p->flusher);
  close_handle((uv_handle_t *)&p->in);           /* cancels pending writes */
}

static void close_out(mcp_proc *p, int i) {
  if (!p->out[i].on) return;
  p->out[i].on = 0;
  close_handle((uv_handle_t *)&p->out[i].pipe);
}

/* Signal the child's process group (the child itself if that fails). Never
 * after it was reaped: its pid may be reused. */
static void proc_kill(mcp_proc *p, int sig) {
  if (!p->exited) mcp_child_kill(&p->proc, sig);
}

/* Callbacks. */

/* Push the handle's callback `name`; 0 (nothing pushed) when the handle was
 * collected or has none. */
static int push_callback(lua_State *L, mcp_proc *p, const char *name) {
  push_weak(L);
  if (lua_rawgetp(L, -1, p) != LUA_TUSERDATA) {
    lua_pop(L, 2);
    return 0;
  }
  /* stack: weak handle */
  lua_getiuservalue(L, -1, 1);
  if (lua_getfield(L, -1, name) != LUA_TFUNCTION) {
    lua_pop(L, 4);
    return 0;
  }
  /* stack: weak handle callbacks fn */
  lua_replace(L, -4);
  lua_pop(L, 2);
  return 1;
}

static void run_callback(lua_State *L, mcp_proc *p, const char *name, int nargs) {
  if (mcp_call_pcall(NULL, nargs, 0) != LUA_OK) {
    mcp_warn("%s (pid %d): its %s function failed: %s", p->name, p->pid, name, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
}

static void emit_line(mcp_proc *p, int i, const char *line, size_t len) {
  lua_State *L = mcp_sched_lua();
  const char *name = i == 0 ? "on_line" : "on_stderr";
  if (len > 0 && line[len - 1] == '\r') len--;
  if (i == 0 && p->fwd != NULL && fwd_line(p->fwd, line, len)) return;   /* a forwarded call's answer */
  if (!push_callback(L, p, name)) return;
  lua_pushlstring(L, line, len);
  run_callback(L, p, name, 1);
}

/* Writes: each owns a copy of its bytes, freed in its callback. */
typedef struct {
  uv_write_t req;
  char data[];
} proc_write;

static void on_written(uv_write_t *w, int status) {
  (void)status;                        /* EPIPE or ECANCELED: the child is going; on_exit tells */
  free(w);
}

/* What this turn wrote, in one write. */
static void flush_input(mcp_proc *p) {
  proc_write *w;
  uv_buf_t b;
  size_t len = p->pend.len;
  uv_prepare_stop(&p->flusher);
  if (len == 0 || !p->in_on) return;
  p->pend.len = 0;
  w = malloc(sizeof *w + len);
  if (w == NULL) abort();
  memcpy(w->data, p->pend.data, len);
  b = uv_buf_init(w->data, (unsigned)len);
  if (uv_write(&w->req, (uv_stream_t *)&p->in, &b, 1, on_written) != 0) free(w);
}

static void on_flush(uv_prepare_t *h) { flush_input(h->data); }

static void on_shutdown(uv_shutdown_t *r, int status) {
  mcp_proc *p = r->data;
  (void)status;
  close_in(p);
}

/* End of input for the child, once what is queued is written. */
static void end_input(mcp_proc *p) {
  if (!p->in_on || p->in_closing) return;
  flush_input(p);
  p->in_closing = 1;
  p->shut.data = p;
  if (uv_shutdown(&p->shut, (uv_stream_t *)&p->in, on_shutdown) != 0) close_in(p);
}

static void on_kill_timer(uv_timer_t *t) {
  mcp_proc *p = t->data;
  if (p->exited) return;
  mcp_info("%s (pid %d) outlived its grace of %g s: SIGKILL", p->name, p->pid, p->grace);
  proc_kill(p, SIGKILL);
}

/* Stop the child: end of input, SIGTERM now, SIGKILL when grace is over. */
static void stop(mcp_proc *p, double grace, const char *why) {
  end_input(p);
  if (p->exited || p->terminating) return;
  p->terminating = 1;
  p->grace = grace;
  mcp_debug("%s (pid %d) is stopped: %s: SIGTERM", p->name, p->pid, why);
  proc_kill(p, SIGTERM);
  uv_timer_start(&p->timer, on_kill_timer, (uint64_t)(grace * 1000.0), 0);
}

/* The child was reaped and its output drained (or given up on): the rest of
 * its output, on_exit, then every handle closes. */
static void report(mcp_proc *p) {
  lua_State *L = mcp_sched_lua();
  if (p->reported) return;
  p->reported = 1;
  for (int i = 0; i < 2; i++) {
    if (p->out[i].buf.len > 0) {
      size_t len = p->out[i].buf.len;
      p->out[i].buf.len = 0;
      emit_line(p, i, p->out[i].buf.data, len);
    }
    close_out(p, i);
  }
  close_in(p);
  uv_timer_stop(&p->timer);
  if (p->ud) p->ud->p = NULL;          /* the handle now only knows the pid */
  p->ud = NULL;
  if (push_callback(L, p, "on_exit")) {
    lua_pushinteger(L, (lua_Integer)p->code);
    lua_pushinteger(L, p->signal);
    run_callback(L, p, "on_exit", 2);
  }
  push_weak(L);
  lua_pushnil(L);
  lua_rawsetp(L, -2, p);
  lua_pop(L, 1);
  close_handle((uv_handle_t *)&p->timer);
  close_handle((uv_handle_t *)&p->flusher);
  close_handle((uv_handle_t *)&p->proc);
}

static void check_done(mcp_proc *p) {
  if (p->exited && !p->out[0].on && !p->out[1].on) report(p);
}

static void on_drain_timer(uv_timer_t *t) {
  mcp_proc *p = t->data;
  mcp_debug("%s (pid %d) exited but its output stays open: not waiting for it", p->name, p->pid);
  report(p);
}

static void on_exit_cb(uv_process_t *h, int64_t status, int term_signal) {
  mcp_proc *p = h->data;
  p->exited = 1;
  p->code = status;
  p->signal = term_signal;
  close_in(p);
  uv_timer_stop(&p->timer);
  mcp_debug("%s (pid %d) exited: code %lld, signal %d", p->name, p->pid, (long long)status,
            term_signal);
  if (p->out[0].on || p->out[1].on) uv_timer_start(&p->timer, on_drain_timer, DRAIN_MS, 0);
  else report(p);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  mcp_proc *p = s->data;
  int i = s == (uv_stream_t *)&p->out[0].pipe ? 0 : 1;
  mcp_buf *b = &p->out[i].buf;
  size_t start = 0;
  char *nl;
  if (n == 0) return;
  if (n < 0) {                         /* EOF, or the pipe broke */
    if (b->len > 0) {
      size_t len = b->len;
      b->len = 0;
      emit_line(p, i, b->data, len);
    }
    close_out(p, i);
    check_done(p);
    return;
  }
  mcp_buf_add(b, buf->base, (size_t)n);
  /* A callback cannot free p (that takes a close callback, on a later turn). */
  while ((nl = memchr(b->data + start, '\n', b->len - start)) != NULL) {
    size_t end = (size_t)(nl - b->data);
    emit_line(p, i, b->data + start, end - start);
    start = end + 1;
  }
  memmove(b->data, b->data + start, b->len - start);
  b->len -= start;
  if (b->len > p->max_line) {
    mcp_warn("%s (pid %d): a line of its %s is longer than %zu bytes: stopping it", p->name, p->pid,
             stream_names[i], p->max_line);
    b->len = 0;
    close_out(p, i);
    stop(p, SHUTDOWN_GRACE, "line too long");
    check_done(p);
  }
}

/* The handle's methods. */

static proc_handle *check_handle(lua_State *L) {
  return luaL_checkudata(L, 1, PROC_MT);
}

static int writable(const mcp_proc *p) {
  return p != NULL && p->in_on && !p->in_closing && !p->exited;
}

static void queue(mcp_proc *p, const char *s, size_t len) {
  if (len == 0) return;
  if (p->pend.len == 0) uv_prepare_start(&p->flusher, on_flush);
  mcp_buf_add(&p->pend, s, len);
}

mcp_proc *mcp_proc_get(lua_State *L, int idx) {
  proc_handle *h = luaL_testudata(L, idx, PROC_MT);
  return h != NULL && writable(h->p) ? h->p : NULL;
}

int mcp_proc_write(mcp_proc *p, const char *s, size_t len) {
  if (!writable(p)) return -1;
  queue(p, s, len);
  return 0;
}

void **mcp_proc_fwd(mcp_proc *p) { return &p->fwd; }

/* p:write(text, ...): each queued in turn (written before the loop polls
 * again; a line and its "\n" without a concatenation); false when stdin is
 * closed or the child is gone. */
static int h_write(lua_State *L) {
  proc_handle *h = check_handle(L);
  int top = lua_gettop(L);
  mcp_proc *p = h->p;
  luaL_checkstring(L, 2);
  for (int i = 3; i <= top; i++) luaL_checkstring(L, i);
  if (!writable(p)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  for (int i = 2; i <= top; i++) {
    size_t len;
    const char *s = lua_tolstring(L, i, &len);
    queue(p, s, len);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* p:close_stdin(): end of input for the child, once what is queued is written. */
static int h_close_stdin(lua_State *L) {
  mcp_proc *p = check_handle(L)->p;
  if (p != NULL) end_input(p);
  return 0;
}

static const struct { const char *name; int sig; } signals[] = {
  {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP},
  {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT},
  {NULL, 0}
};

static int check_signal(lua_State *L, int idx) {
  const char *name;
  if (lua_isnoneornil(L, idx)) return SIGTERM;
  if (lua_type(L, idx) == LUA_TNUMBER) return (int)luaL_checkinteger(L, idx);
  name = luaL_checkstring(L, idx);
  if (strncmp(name, "SIG", 3) == 0) name += 3;
  for (int i = 0; signals[i].name; i++)
    if (strcmp(name, signals[i].name) == 0) return signals[i].sig;
  return luaL_argerror(L, idx, "unknown signal");
}

/* p:kill([signal]): one signal (default SIGTERM) to the child's group;
 * false when it is gone. */
static int h_kill(lua_State *L) {
  mcp_proc *p = check_handle(L)->p;
  int sig = check_signal(L, 2);
  lua_pushboolean(L, p != NULL && !p->exited);
  if (p != NULL) proc_kill(p, sig);
  return 1;
}

/* p:stop([grace]): stdin closed, SIGTERM, SIGKILL after grace seconds (2). */
static int h_stop(lua_State *L) {
  mcp_proc *p = check_handle(L)->p;
  double grace = luaL_optnumber(L, 2, SHUTDOWN_GRACE);
  if (grace < 0) return luaL_argerror(L, 2, "grace must be >= 0");
  if (p != NULL) stop(p, grace, "stopped by its owner");
  return 0;
}

static int h_pid(lua_State *L) {
  lua_pushinteger(L, check_handle(L)->pid);
  return 1;
}

/* p:alive(): not reaped yet. */
static int h_alive(lua_State *L) {
  mcp_proc *p = check_handle(L)->p;
  lua_pushboolean(L, p != NULL && !p->exited);
  return 1;
}

static int h_gc(lua_State *L) {
  proc_handle *h = check_handle(L);
  mcp_proc *p = h->p;
  if (p == NULL) return 0;
  h->p = NULL;
  p->ud = NULL;
  if (!p->exited) stop(p, SHUTDOWN_GRACE, "its handle was collected");
  return 0;
}

static int h_tostring(lua_State *L) {
  proc_handle *h = check_handle(L);
  lua_pushfstring(L, "mcp.proc(%d%s)", h->pid, h->p && !h->p->exited ? "" : ", exited");
  return 1;
}

/* core.proc{...} */

static void init_pipe(mcp_proc *p, uv_pipe_t *pipe) {
  uv_pipe_init(mcp_sched_loop(), pipe, 0);
  pipe->data = p;
  p->open++;
}

static int l_proc(lua_State *L) {
  const char **argv, **envp, *cwd = NULL;
  size_t nargs, max_line = MAX_LINE;
  int anchor, r, with_stderr;
  uv_process_options_t o;
  uv_stdio_container_t stdio[3];
  proc_handle *h;
  mcp_proc *p;

  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if (P.shutting || mcp_sched_loop() == NULL)
    return mcp_push_fail(L, P.shutting ? "closed" : "unsupported", "%s",
                         P.shutting ? "the server is shutting down" : "no event loop here");
  lua_newtable(L);                     /* stack: opts anchor */
  anchor = 2;
  if (lua_getfield(L, 1, "argv") != LUA_TTABLE || (nargs = lua_rawlen(L, -1)) == 0)
    return luaL_error(L, "proc: opts.argv must be a non-empty list of strings");
  argv = lua_newuserdatauv(L, (nargs + 1) * sizeof *argv, 0);
  lua_rawseti(L, anchor, -1);
  for (size_t i = 1; i <= nargs; i++) {
    char what[32];
    snprintf(what, sizeof what, "argv[%zu]", i);
    lua_rawgeti(L, -1, (lua_Integer)i);
    argv[i - 1] = mcp_child_anchored(L, anchor, -1, "proc", what);
    lua_pop(L, 1);
  }
  argv[nargs] = NULL;
  lua_pop(L, 1);
  if ((r = mcp_sandbox_check(L, mcp_call_current(L), MCP_CAP_CONNECT, argv[0])) != 0) return r;
  if (lua_getfield(L, 1, "cwd") != LUA_TNIL) cwd = mcp_child_anchored(L, anchor, -1, "proc", "opts.cwd");
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "max_line") != LUA_TNIL) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
      return luaL_error(L, "proc: opts.max_line must be an integer >= 1");
    max_line = (size_t)lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  envp = mcp_child_env(L, 1, anchor, "proc", mcp_sandbox_plugin(mcp_call_current(L)) != NULL);

  /* The handle, its callbacks as its user value. stack: opts anchor handle */
  h = lua_newuserdatauv(L, sizeof *h, 1);
  h->p = NULL;
  h->pid = 0;
  luaL_setmetatable(L, PROC_MT);
  lua_createtable(L, 0, 3);
  for (int i = 0; i < 3; i++) {
    static const char *const names[] = { "on_line", "on_stderr", "on_exit" };
    int t = lua_getfield(L, 1, names[i]);
    if (t != LUA_TNIL && t != LUA_TFUNCTION) return luaL_error(L, "proc: opts.%s must be a function", names[i]);
    lua_setfield(L, -2, names[i]);
  }
  with_stderr = lua_getfield(L, -1, "on_stderr") == LUA_TFUNCTION;
  lua_pop(L, 1);
  lua_setiuservalue(L, -2, 1);

  /* Nothing below raises. */
  p = calloc(1, sizeof *p);
  if (p == NULL) abort();
  p->max_line = max_line;
  p->grace = SHUTDOWN_GRACE;
  snprintf(p->name, sizeof p->name, "%s", argv[0]);
  mcp_child_options(&o, stdio, argv, envp, cwd, on_exit_cb);
  init_pipe(p, &p->in);
  p->in_on = 1;
  stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
  stdio[0].data.stream = (uv_stream_t *)&p->in;
  for (int i = 0; i < 2; i++) {
    if (i == 1 && !with_stderr) {
      stdio[2].flags = UV_INHERIT_FD;
      stdio[2].data.fd = 2;
      continue;
    }
    init_pipe(p, &p->out[i].pipe);
    p->out[i].on = 1;
    stdio[i + 1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[i + 1].data.stream = (uv_stream_t *)&p->out[i].pipe;
  }
  uv_timer_init(mcp_sched_loop(), &p->timer);
  p->timer.data = p;
  uv_prepare_init(mcp_sched_loop(), &p->flusher);
  p->flusher.data = p;
  p->proc.data = p;
  p->open += 3;                        /* timer, flusher and process */
  p->next = P.all;
  if (P.all) P.all->prev = p;
  P.all = p;
  r = uv_spawn(mcp_sched_loop(), &p->proc, &o);
  if (r != 0) {
    p->exited = p->reported = 1;       /* nothing to reap, nothing to report */
    close_in(p);
    close_out(p, 0);
    close_out(p, 1);
    close_handle((uv_handle_t *)&p->timer);
    close_handle((uv_handle_t *)&p->flusher);
    close_handle((uv_handle_t *)&p->proc);
    return mcp_push_fail(L, mcp_code_uv(r), "cannot start %s: %s (%s)", argv[0], uv_strerror(r),
                         uv_err_name(r));
  }
  p->pid = h->pid = p->proc.pid;
  h->p = p;
  p->ud = h;
  mcp_debug("started %s (pid %d)", p->name, p->pid);
  for (int i = 0; i < 2; i++)
    if (p->out[i].on) uv_read_start((uv_stream_t *)&p->out[i].pipe, mcp_child_alloc, on_read);
  /* stack: opts anchor handle */
  push_weak(L);
  lua_pushvalue(L, -2);
  lua_rawsetp(L, -2, p);
  lua_pop(L, 1);
  return 1;
}

void mcp_proc_close_all(void) {
  P.shutting = 1;
  for (mcp_proc *p = P.all; p != NULL; p = p->next)
    if (!p->exited) stop(p, SHUTDOWN_GRACE, "shutdown");
}

static const luaL_Reg handle_methods[] = {
  {"write", h_write},
  {"close_stdin", h_close_stdin},
  {"kill", h_kill},
  {"stop", h_stop},
  {"pid", h_pid},
  {"alive", h_alive},
  {NULL, NULL}
};

void mcp_proc_open_lib(lua_State *L) {
  if (luaL_newmetatable(L, PROC_MT)) {
    luaL_newlib(L, handle_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, h_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, h_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &P) == LUA_TNIL) {
    mcp_weak_table(L, "v");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &P);
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_proc);
  lua_setfield(L, -2, "proc");
}
