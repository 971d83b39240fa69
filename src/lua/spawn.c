/* Child processes for handlers (ctx:spawn).
 *
 * A call starts a child with uv_spawn (an argv, no shell) as an operation of
 * the call (op.h) and waits for it (under mcp.all too); the child's exit,
 * once its stdout and stderr are closed, completes the op with {code,
 * signal, stdout, stderr, pid}. Output is captured (up to max_bytes),
 * ignored, or handed line by line to a Lua function on the main thread.
 * Whatever cancels the op (a cancel of the call, an abort, the end of the
 * call) detaches the child: it gets SIGTERM, then SIGKILL after the call's
 * grace, and is reaped by the loop. The child runs in its own process group,
 * and signals go to the group. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <uv.h>

#include "buf.h"
#include "child.h"
#include "fail.h"
#include "log.h"
#include "op.h"
#include "sched.h"
#include "sandbox.h"
#include "spans.h"
#include "spawn.h"
#include "trace.h"

enum { OUT_CAPTURE, OUT_IGNORE, OUT_LINES };

typedef struct mcp_spawn mcp_spawn;

/* One child, an op: the engine holds it until the close callback of its
 * last handle, the Lua handle while Lua can reach it; freed by sp_free. The
 * process handle is closed only once the child is reaped *and* detached, so
 * a call that ends first leaves the child to the loop for at most its grace. */
struct mcp_spawn {
  mcp_op op;                 /* first member */
  uv_process_t proc;
  uv_timer_t timer;          /* opts.timeout, then SIGKILL after the grace */
  uv_pipe_t in;              /* the child's stdin, when opts.stdin was given */
  uv_write_t write_req;
  struct {
    uv_pipe_t pipe;
    int mode;                /* OUT_* */
    int fn_ref;              /* the line function (OUT_LINES), or LUA_NOREF */
    mcp_buf buf;             /* captured output, or the partial line */
    unsigned on : 1;         /* the pipe is open */
  } out[2];                  /* stdout, stderr */
  char *input;               /* opts.stdin */
  size_t input_len, max_bytes;
  double grace, timeout;
  char *error;               /* why the child was stopped while the call waited */
  const char *why;           /* error's code: "timeout", "too_large" */
  int spawn_err;             /* uv_spawn's error, 0 = none */
  int64_t code;
  int signal, pid;
  int open;                  /* handles not closed yet */
  char name[64];             /* the command, for logs */
  char key[72];              /* the request's id, for logs after the call is gone */
  unsigned in_on : 1, exited : 1, detached : 1, terminating : 1;
};

static const char *const out_names[2] = { "stdout", "stderr" };

static void sp_free(mcp_op *op) {
  mcp_spawn *sp = (mcp_spawn *)op;
  mcp_buf_free(&sp->out[0].buf);
  mcp_buf_free(&sp->out[1].buf);
  free(sp->input);
  free(sp->error);
  free(sp);
}

static void on_closed(uv_handle_t *h) {
  mcp_spawn *sp = h->data;
  if (--sp->open == 0) mcp_op_release(&sp->op);
}

static void close_handle(mcp_spawn *sp, uv_handle_t *h) {
  (void)sp;
  if (!uv_is_closing(h)) uv_close(h, on_closed);
}

static void close_out(mcp_spawn *sp, int i) {
  if (!sp->out[i].on) return;
  sp->out[i].on = 0;
  close_handle(sp, (uv_handle_t *)&sp->out[i].pipe);
}

static void close_in(mcp_spawn *sp) {
  if (!sp->in_on) return;
  sp->in_on = 0;
  close_handle(sp, (uv_handle_t *)&sp->in);       /* cancels a pending write */
}

static void set_error(mcp_spawn *sp, const char *code, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void set_error(mcp_spawn *sp, const char *code, const char *fmt, ...) {
  mcp_buf b = MCP_BUF_INIT;
  va_list ap;
  char msg[256];
  if (sp->error) return;                          /* the first reason stays */
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mcp_buf_printf(&b, "%s", msg);
  mcp_buf_addc(&b, '\0');
  sp->error = b.data;
  sp->why = code;
}

/* Signal the child's process group (the child itself if that fails). Never
 * after the child was reaped: its pid may be reused. */
static void sp_kill(mcp_spawn *sp, int sig) {
  if (!sp->exited) mcp_child_kill(&sp->proc, sig);
}

static void on_kill_timer(uv_timer_t *t) {
  mcp_spawn *sp = t->data;
  if (sp->exited) return;
  mcp_info("request %s: %s (pid %d) outlived its grace of %g s: SIGKILL", sp->key, sp->name,
           sp->pid, sp->grace);
  sp_kill(sp, SIGKILL);
}

/* SIGTERM now, SIGKILL when the grace is over. */
static void sp_terminate(mcp_spawn *sp, const char *why) {
  if (sp->exited || sp->terminating) return;
  sp->terminating = 1;
  mcp_info("request %s: %s (pid %d) is stopped: %s: SIGTERM", sp->key, sp->name, sp->pid, why);
  sp_kill(sp, SIGTERM);
  uv_timer_start(&sp->timer, on_kill_timer, (uint64_t)(sp->grace * 1000.0), 0);
}

static void unref_fns(mcp_spawn *sp) {
  lua_State *L = mcp_sched_lua();
  for (int i = 0; i < 2; i++)
    if (sp->out[i].fn_ref != LUA_NOREF) {
      luaL_unref(L, LUA_REGISTRYINDEX, sp->out[i].fn_ref);
      sp->out[i].fn_ref = LUA_NOREF;
    }
}

/*
 * Detach the child from its call. This is the one way the op ends: either
 * its outcome is in (the child is reaped and its output closed), or it is
 * cancelled (a cooperative cancel, an abort, shutdown or the end of a
 * session stop the call; a function of mcp.all fails). From here on nothing
 * reaches the call:
 * output is no longer read (the pipes close; a child that still writes gets
 * SIGPIPE), line functions are released, and the child is stopped if it still
 * runs. The handles stay open until the child is reaped, since closing a
 * process handle before its exit would leave a zombie; the exit callback then
 * closes them, and the last close callback frees the struct. A child that
 * ignores SIGTERM gets SIGKILL from the timer after the grace, so the loop
 * (and shutdown) waits at most that long for it.
 */
static void sp_detach(mcp_spawn *sp, const char *why) {
  sp->detached = 1;
  unref_fns(sp);
  close_out(sp, 0);
  close_out(sp, 1);
  close_in(sp);
  if (sp->exited) {
    close_handle(sp, (uv_handle_t *)&sp->timer);
    close_handle(sp, (uv_handle_t *)&sp->proc);
  } else {
    sp_terminate(sp, why);
  }
}

static void spawn_cancel(mcp_op *op) {
  mcp_spawn *sp = (mcp_spawn *)op;
  if (!sp->detached) sp_detach(sp, op->reason);
}

/* The outcome is complete when the child was reaped and its output pipes are
 * closed: the op is done, and the child's handles close. */
static void sp_check(mcp_spawn *sp) {
  if (sp->detached || !sp->exited || sp->out[0].on || sp->out[1].on) return;
  if (sp->op.span) mcp_span_process_end(&sp->op, (long long)sp->code, sp->signal);
  mcp_op_done(&sp->op);
  sp_detach(sp, NULL);                /* reaped: this only closes the handles */
}

static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal) {
  mcp_spawn *sp = p->data;
  sp->exited = 1;
  sp->code = status;
  sp->signal = term_signal;
  uv_timer_stop(&sp->timer);
  mcp_debug("request %s: %s (pid %d) exited: code %lld, signal %d", sp->key, sp->name, sp->pid,
            (long long)status, term_signal);
  if (sp->detached) {                             /* nothing waits for output */
    close_handle(sp, (uv_handle_t *)&sp->timer);
    close_handle(sp, (uv_handle_t *)&sp->proc);
    return;
  }
  if (sp->terminating) {                          /* stopped: do not wait for a grandchild's EOF */
    close_out(sp, 0);
    close_out(sp, 1);
  }
  sp_check(sp);
}

static void on_timeout(uv_timer_t *t) {
  mcp_spawn *sp = t->data;
  set_error(sp, "timeout", "%s ran longer than %g s (timeout)", sp->name, sp->timeout);
  sp_terminate(sp, "timeout");
}

/* Hand line (without its newline) to the stream's function, on the main
 * thread, on behalf of the call. Returns 0 when the call went away. */
static int emit_line(mcp_spawn *sp, int i, const char *line, size_t len) {
  lua_State *L = mcp_sched_lua();
  lua_rawgeti(L, LUA_REGISTRYINDEX, sp->out[i].fn_ref);
  lua_pushlstring(L, line, len);
  if (mcp_call_pcall(sp->op.call, 1, 0) != LUA_OK) {
    mcp_warn("request %s: the %s function of %s failed: %s", sp->key, out_names[i], sp->name,
             lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  return !sp->detached;               /* a function may end the call (its session closes) */
}

static void emit_lines(mcp_spawn *sp, int i) {
  mcp_buf *b = &sp->out[i].buf;
  size_t start = 0;
  char *nl;
  while ((nl = memchr(b->data + start, '\n', b->len - start)) != NULL) {
    size_t end = (size_t)(nl - b->data);
    if (!emit_line(sp, i, b->data + start, end - start)) return;
    start = end + 1;
  }
  memmove(b->data, b->data + start, b->len - start);
  b->len -= start;
}

/* Past the limit: stop reading that stream and stop the child. */
static void overflow(mcp_spawn *sp, int i) {
  set_error(sp, "too_large", "%s of %s exceeded max_bytes (%zu)%s", out_names[i], sp->name, sp->max_bytes,
            sp->out[i].mode == OUT_LINES ? " in one line" : "");
  close_out(sp, i);
  sp_terminate(sp, "too much output");
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  mcp_spawn *sp = s->data;
  int i = s == (uv_stream_t *)&sp->out[0].pipe ? 0 : 1;
  mcp_buf *b = &sp->out[i].buf;
  if (n == 0) return;
  if (n < 0) {                                    /* EOF, or the pipe broke */
    if (!sp->detached && sp->out[i].mode == OUT_LINES && b->len > 0) {
      size_t len = b->len;
      b->len = 0;
      if (!emit_line(sp, i, b->data, len)) return;
    }
    close_out(sp, i);
    sp_check(sp);
    return;
  }
  if (sp->detached) return;
  if (sp->out[i].mode == OUT_CAPTURE && b->len + (size_t)n > sp->max_bytes) {
    overflow(sp, i);
    return;
  }
  mcp_buf_add(b, buf->base, (size_t)n);
  if (sp->out[i].mode != OUT_LINES) return;
  emit_lines(sp, i);
  if (!sp->detached && b->len > sp->max_bytes) overflow(sp, i);
}

static void on_written(uv_write_t *w, int status) {
  mcp_spawn *sp = w->data;
  (void)status;                       /* EPIPE: the child did not read it all; fine */
  close_in(sp);
}

/* The outcome: {code=, signal=, pid=, stdout=, stderr=}; stopped by its
 * timeout or max_bytes, nil, message, code and that table; not started,
 * nil, message, code. */
static int spawn_push(lua_State *L, mcp_op *op) {
  mcp_spawn *sp = (mcp_spawn *)op;
  if (sp->spawn_err != 0)
    return mcp_push_fail(L, mcp_code_uv(sp->spawn_err), "spawn %s: %s (%s)", sp->name,
                         uv_strerror(sp->spawn_err), uv_err_name(sp->spawn_err));
  if (sp->error) mcp_push_fail(L, sp->why, "%s", sp->error);
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, (lua_Integer)sp->code);
  lua_setfield(L, -2, "code");
  lua_pushinteger(L, sp->signal);
  lua_setfield(L, -2, "signal");
  lua_pushinteger(L, sp->pid);
  lua_setfield(L, -2, "pid");
  for (int i = 0; i < 2; i++)
    if (sp->out[i].mode == OUT_CAPTURE) {
      lua_pushlstring(L, sp->out[i].buf.data ? sp->out[i].buf.data : "", sp->out[i].buf.len);
      lua_setfield(L, -2, out_names[i]);
    }
  return sp->error ? 4 : 1;
}

static const mcp_op_type spawn_type = { "spawn", spawn_cancel, spawn_push, sp_free };

/* Options. */

static int out_mode(lua_State *L, int opts, const char *name) {
  int t = lua_getfield(L, opts, name), mode = -1;
  if (t == LUA_TNIL) mode = OUT_CAPTURE;
  else if (t == LUA_TFUNCTION) mode = OUT_LINES;
  else if (t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "capture") == 0) mode = OUT_CAPTURE;
  else if (t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "ignore") == 0) mode = OUT_IGNORE;
  if (mode < 0)
    return mcp_raise(L, "spawn: opts.%s must be \"capture\", \"ignore\" or a function", name);
  if (mode != OUT_LINES) lua_pop(L, 1);           /* a function stays for luaL_ref */
  return mode;
}

extern char **environ;

/* The old form's env replaced the environment: as the new one's, every name
 * of the server's it does not set is removed (false). stack: new -> new */
static void old_env(lua_State *L, int t) {
  if (lua_getfield(L, t, "env") != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_newtable(L);                                /* stack: new env copy */
  for (lua_pushnil(L); lua_next(L, -3); ) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_settable(L, -4);
  }
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (eq == NULL) continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    if (lua_rawget(L, -2) == LUA_TNIL) {
      lua_pushlstring(L, *e, (size_t)(eq - *e));
      lua_pushboolean(L, 0);
      lua_rawset(L, -4);
    }
    lua_pop(L, 1);
  }
  lua_setfield(L, t, "env");
  lua_pop(L, 1);
}

/* The old form spawn(cmd, args, opts) as the new one's table: {command =
 * {cmd, args...}, max_bytes = opts.max_output, env replacing the
 * environment, the rest of opts}. stack: cmd args opts -> {...} */
static void old_form(lua_State *L) {
  lua_settop(L, 3);
  lua_newtable(L);                                /* stack: cmd args opts new */
  if (lua_istable(L, 3))
    for (lua_pushnil(L); lua_next(L, 3); ) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_settable(L, 4);
    }
  if (lua_getfield(L, 4, "max_output") != LUA_TNIL) {
    lua_setfield(L, 4, "max_bytes");
    lua_pushnil(L);
    lua_setfield(L, 4, "max_output");
  } else {
    lua_pop(L, 1);
  }
  lua_newtable(L);                                /* stack: cmd args opts new command */
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, 1);
  if (lua_istable(L, 2))
    for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, 2); i++) {
      lua_rawgeti(L, 2, i);
      lua_rawseti(L, -2, i + 1);
    }
  lua_setfield(L, 4, "command");
  old_env(L, 4);
  lua_replace(L, 1);
  lua_settop(L, 1);
}

/* Strings are kept alive in the anchor table for as long as the stack lives. */
int mcp_spawn_start(lua_State *L, mcp_call *c) {
  const char *cwd = NULL, **argv, **envp = NULL, *input = NULL;
  size_t nargs = 0, input_len = 0, max_bytes = MCP_SPAWN_MAX_BYTES;
  double timeout = 0;
  int modes[2], refs[2], anchor, r;
  uv_process_options_t o;
  uv_stdio_container_t stdio[3];
  mcp_op **h;
  mcp_spawn *sp;

  if (lua_type(L, 1) == LUA_TSTRING) old_form(L);   /* the deprecated mcp.spawn(cmd, args, opts) */
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if ((r = mcp_op_refuse(L, c)) != 0) return r;
  lua_newtable(L);                                /* stack: opts anchor */
  anchor = 2;

  if (lua_getfield(L, 1, "command") != LUA_TTABLE || (nargs = lua_rawlen(L, -1)) == 0)
    return mcp_raise(L, "spawn: opts.command must be a non-empty list of strings");
  argv = lua_newuserdatauv(L, (nargs + 1) * sizeof *argv, 0);
  lua_rawseti(L, anchor, -1);
  for (size_t i = 1; i <= nargs; i++) {
    char what[40];
    snprintf(what, sizeof what, "opts.command[%zu]", i);
    lua_rawgeti(L, -1, (lua_Integer)i);
    argv[i - 1] = mcp_child_anchored(L, anchor, -1, "spawn", what);
    lua_pop(L, 1);
  }
  argv[nargs] = NULL;
  lua_pop(L, 1);
  if ((r = mcp_sandbox_check(L, c, MCP_CAP_EXEC, argv[0])) != 0) return r;

  if (lua_getfield(L, 1, "cwd") != LUA_TNIL) cwd = mcp_child_anchored(L, anchor, -1, "spawn", "opts.cwd");
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "stdin") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING) return mcp_raise(L, "spawn: opts.stdin must be a string");
    input = lua_tolstring(L, -1, &input_len);
  }
  lua_pop(L, 1);                                  /* input stays alive in opts */
  if (lua_getfield(L, 1, "timeout") != LUA_TNIL) {
    if (!lua_isnumber(L, -1) || (timeout = lua_tonumber(L, -1)) < 0)
      return mcp_raise(L, "spawn: opts.timeout must be a number of seconds >= 0");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "max_bytes") != LUA_TNIL) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
      return mcp_raise(L, "spawn: opts.max_bytes must be an integer >= 1");
    max_bytes = (size_t)lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "max_output") != LUA_TNIL)
    return mcp_raise(L, "spawn: opts.max_output is now opts.max_bytes");
  lua_pop(L, 1);
  envp = mcp_child_env(L, 1, anchor, "spawn", mcp_sandbox_plugin(c) != NULL);
  modes[0] = out_mode(L, 1, "stdout");            /* a function is left on the stack */
  modes[1] = out_mode(L, 1, "stderr");
  for (int i = 1; i >= 0; i--)                    /* stderr's function is on top */
    refs[i] = modes[i] == OUT_LINES ? luaL_ref(L, LUA_REGISTRYINDEX) : LUA_NOREF;

  h = mcp_op_reserve(L);                          /* may raise: before the child exists */
  /* Nothing below raises. */
  sp = calloc(1, sizeof *sp);
  if (sp == NULL) abort();
  sp->max_bytes = max_bytes;
  sp->grace = c->grace;
  sp->timeout = timeout;
  snprintf(sp->name, sizeof sp->name, "%s", argv[0]);
  snprintf(sp->key, sizeof sp->key, "%.64s", c->req.key);
  for (int i = 0; i < 2; i++) {
    sp->out[i].mode = modes[i];
    sp->out[i].fn_ref = refs[i];
  }
  if (input != NULL && input_len > 0) {
    sp->input = malloc(input_len);
    if (sp->input == NULL) abort();
    memcpy(sp->input, input, input_len);
    sp->input_len = input_len;
  }

  mcp_child_options(&o, stdio, argv, envp, cwd, on_exit_cb);
  stdio[0].flags = UV_IGNORE;                     /* /dev/null, never the protocol's stdin */
  if (input != NULL) {
    uv_pipe_init(mcp_sched_loop(), &sp->in, 0);
    sp->in.data = sp;
    sp->in_on = 1;
    sp->open++;
    stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    stdio[0].data.stream = (uv_stream_t *)&sp->in;
  }
  for (int i = 0; i < 2; i++) {
    stdio[i + 1].flags = UV_IGNORE;
    if (modes[i] == OUT_IGNORE) continue;
    uv_pipe_init(mcp_sched_loop(), &sp->out[i].pipe, 0);
    sp->out[i].pipe.data = sp;
    sp->out[i].on = 1;
    sp->open++;
    stdio[i + 1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[i + 1].data.stream = (uv_stream_t *)&sp->out[i].pipe;
  }
  uv_timer_init(mcp_sched_loop(), &sp->timer);
  sp->timer.data = sp;
  sp->proc.data = sp;
  sp->open += 2;                                  /* timer and process */
  mcp_op_init(&sp->op, &spawn_type, c);
  mcp_op_attach(h, &sp->op);
  r = uv_spawn(mcp_sched_loop(), &sp->proc, &o);
  if (r != 0) {
    sp->exited = 1;                               /* nothing to reap */
    sp->spawn_err = r;
    mcp_op_done(&sp->op);
    sp_detach(sp, NULL);
    return mcp_op_wait(L);
  }
  sp->pid = sp->proc.pid;
  if (mcp_trace_on) mcp_span_process(&sp->op, sp->name, sp->pid);
  mcp_debug("request %s: spawned %s (pid %d)", sp->key, sp->name, sp->pid);
  for (int i = 0; i < 2; i++)
    if (sp->out[i].on) uv_read_start((uv_stream_t *)&sp->out[i].pipe, mcp_child_alloc, on_read);
  if (sp->in_on) {
    uv_buf_t b = uv_buf_init(sp->input, (unsigned)sp->input_len);
    sp->write_req.data = sp;
    if (sp->input_len == 0 || uv_write(&sp->write_req, (uv_stream_t *)&sp->in, &b, 1, on_written) != 0)
      close_in(sp);
  }
  if (timeout > 0) uv_timer_start(&sp->timer, on_timeout, (uint64_t)(timeout * 1000.0), 0);
  return mcp_op_wait(L);
}
