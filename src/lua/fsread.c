/* Non-blocking file system reads for handlers (ctx:read_file, ctx:list_dir,
 * ctx:realpath): libuv fs requests on the thread pool, one at a time per
 * operation, chained by their callbacks (open -> fstat -> read... -> close for
 * a file). Each is an operation of its call (op.h): the handler waits for it
 * as for any other (under mcp.all too), and a cancel of the call wakes it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <uv.h>

#include "buf.h"
#include "fail.h"
#include "fsread.h"
#include "log.h"
#include "op.h"
#include "sandbox.h"
#include "sched.h"

#define CHUNK ((size_t)1 << 20)   /* one read: a cancel waits for at most this much */

enum { OP_READ, OP_LIST, OP_REALPATH };

/* One operation: the engine (its request chain) holds it until the chain is
 * over, the Lua handle while Lua can reach it (op.h); freed by fs_free. */
typedef struct mcp_fsop {
  mcp_op op;                 /* first member */
  uv_fs_t req;
  int kind;                  /* OP_* */
  uv_file fd;                /* open file, or -1 */
  char *path;
  mcp_buf data;              /* the content; list entries as "<type><name>\0"; the real path */
  size_t max;
  int err;                   /* libuv error, 0 = none */
  char msg[96];              /* a message of our own for err, or "" for uv_strerror */
  unsigned busy : 1;         /* a request is in flight */
} mcp_fsop;

static const char *const verbs[] = { "read_file", "list_dir", "realpath" };

static void fs_free(mcp_op *o) {
  mcp_fsop *op = (mcp_fsop *)o;
  mcp_buf_free(&op->data);
  free(op->path);
  free(op);
}

static void on_fs(uv_fs_t *req);

static void op_close(mcp_fsop *op) {
  op->busy = 1;
  uv_fs_close(mcp_sched_loop(), &op->req, op->fd, on_fs);
}

/* The chain is over: the outcome is in (wake the call), the engine lets go. */
static void op_done(mcp_fsop *op) {
  mcp_op_done(&op->op);
  mcp_op_release(&op->op);
}

/* Fail with err (and a message of our own); the file is closed first. */
static void op_fail(mcp_fsop *op, int err, const char *msg) {
  if (op->err == 0) {
    op->err = err;
    snprintf(op->msg, sizeof op->msg, "%s", msg ? msg : "");
  }
  if (op->fd >= 0) op_close(op);
  else op_done(op);
}

/* Exactly cap bytes (mcp_buf_grow would round a 64 MiB file up to 128). */
static void op_reserve(mcp_fsop *op, size_t cap) {
  char *p = realloc(op->data.data, cap);
  if (p == NULL) abort();
  op->data.data = p;
  op->data.cap = cap;
}

static void op_read(mcp_fsop *op) {
  mcp_buf *b = &op->data;
  uv_buf_t buf;
  if (b->len == b->cap) {
    size_t cap = b->cap * 2;
    if (cap > op->max + 1) cap = op->max + 1;     /* one byte over max tells "too large" */
    op_reserve(op, cap);
  }
  buf = uv_buf_init(b->data + b->len,
                    (unsigned)(b->cap - b->len < CHUNK ? b->cap - b->len : CHUNK));
  op->busy = 1;
  uv_fs_read(mcp_sched_loop(), &op->req, op->fd, &buf, 1, (int64_t)b->len, on_fs);
}

static void read_step(mcp_fsop *op, uv_fs_type type, ssize_t r) {
  char msg[96];
  switch (type) {
  case UV_FS_OPEN:
    if (r < 0) { op_fail(op, (int)r, NULL); return; }
    op->fd = (uv_file)r;
    op->busy = 1;
    uv_fs_fstat(mcp_sched_loop(), &op->req, op->fd, on_fs);
    return;
  case UV_FS_FSTAT: {
    const uv_stat_t *st = &op->req.statbuf;
    size_t want;
    if (r < 0) { op_fail(op, (int)r, NULL); return; }
    if (S_ISDIR(st->st_mode)) { op_fail(op, UV_EISDIR, "is a directory"); return; }
    if (!S_ISREG(st->st_mode)) { op_fail(op, UV_EINVAL, "not a regular file"); return; }
    if (st->st_size > op->max) {
      snprintf(msg, sizeof msg, "larger than max_bytes (%zu)", op->max);
      { op_fail(op, UV_EFBIG, msg); return; }
    }
    want = st->st_size > 0 ? (size_t)st->st_size + 1 : 65536;  /* + 1: EOF in the same read */
    if (want > op->max + 1) want = op->max + 1;
    op_reserve(op, want);
    op_read(op);
    return;
  }
  case UV_FS_READ:
    if (r < 0) { op_fail(op, (int)r, NULL); return; }
    if (r == 0) { op_close(op); return; }              /* end of file */
    op->data.len += (size_t)r;
    if (op->data.len > op->max) {                 /* it grew past its size */
      snprintf(msg, sizeof msg, "larger than max_bytes (%zu)", op->max);
      { op_fail(op, UV_EFBIG, msg); return; }
    }
    op_read(op);
    return;
  case UV_FS_CLOSE:
    op->fd = -1;
    op_done(op);
    return;
  default:
    return;
  }
}

static void on_fs(uv_fs_t *req) {
  mcp_fsop *op = req->data;
  ssize_t r = req->result;
  uv_fs_type type = req->fs_type;
  uv_dirent_t ent;
  op->busy = 0;
  if (type == UV_FS_OPEN && r >= 0) op->fd = (uv_file)r;
  if (type == UV_FS_CLOSE && r != UV_ECANCELED) op->fd = -1;
  if (op->op.cancelled) {                         /* close the file, then let go */
    uv_fs_req_cleanup(req);
    if (op->fd >= 0) op_close(op);
    else mcp_op_release(&op->op);
    return;
  }
  if (type == UV_FS_SCANDIR && r >= 0) {
    while (uv_fs_scandir_next(req, &ent) != UV_EOF) {
      char t = ent.type == UV_DIRENT_FILE ? 'f' : ent.type == UV_DIRENT_DIR ? 'd'
             : ent.type == UV_DIRENT_LINK ? 'l' : 'o';
      mcp_buf_addc(&op->data, t);
      mcp_buf_add(&op->data, ent.name, strlen(ent.name) + 1);
    }
  } else if (type == UV_FS_REALPATH && r >= 0) {
    mcp_buf_add(&op->data, req->ptr, strlen(req->ptr));
  }
  uv_fs_req_cleanup(req);
  if (op->kind == OP_READ) {
    read_step(op, type, r);
  } else {
    if (r < 0) op->err = (int)r;
    op_done(op);
  }
}

/*
 * A cancel. The call stops waiting at once (mcp_op_cancel marked the op
 * done), but a request may be in the thread pool, where it cannot be stopped
 * halfway. uv_cancel takes it back if no thread has picked it up yet (its
 * callback still comes, with UV_ECANCELED); otherwise it finishes there.
 * Either way the callback sees the op cancelled, drops the result, closes a
 * file that is open (an open that completed after the cancel included), and
 * lets go of the op.
 */
static void fs_cancel(mcp_op *o) {
  mcp_fsop *op = (mcp_fsop *)o;
  if (op->busy) uv_cancel((uv_req_t *)&op->req);
}

static int push_entries(lua_State *L, mcp_fsop *op);

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

/* The outcome: the value, or nil, message, code. */
static int fs_push(lua_State *L, mcp_op *o) {
  mcp_fsop *op = (mcp_fsop *)o;
  if (op->err != 0)
    return mcp_push_fail(L, mcp_code_uv(op->err), "%s %s: %s (%s)", verbs[op->kind], op->path,
                         op->msg[0] ? op->msg : uv_strerror(op->err), uv_err_name(op->err));
  if (op->kind == OP_LIST) return push_entries(L, op);
  lua_pushlstring(L, op->data.data ? op->data.data : "", op->data.len);
  return 1;
}

static const mcp_op_type fs_type = { "fs", fs_cancel, fs_push, fs_free };

/* stack: -> {{name=, type=}, ...} sorted by name */
static int push_entries(lua_State *L, mcp_fsop *op) {
  size_t n = 0, i = 0;
  const char **v;
  for (size_t at = 0; at < op->data.len; at += strlen(op->data.data + at) + 1) n++;
  v = lua_newuserdatauv(L, (n ? n : 1) * sizeof *v, 0);  /* collected with the stack */
  for (size_t at = 0; at < op->data.len; at += strlen(op->data.data + at) + 1) v[i++] = op->data.data + at;
  qsort(v, n, sizeof *v, name_cmp);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const char *t = v[i][0] == 'f' ? "file" : v[i][0] == 'd' ? "dir" : v[i][0] == 'l' ? "link" : "other";
    lua_createtable(L, 0, 2);
    lua_pushstring(L, v[i] + 1);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, t);
    lua_setfield(L, -2, "type");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_remove(L, -2);
  return 1;
}

static int op_start(lua_State *L, mcp_call *c, int kind, const char *path, size_t max) {
  mcp_fsop *op;
  mcp_op **h;
  int r;
  if ((r = mcp_op_refuse(L, c)) != 0) return r;
  if ((r = mcp_sandbox_check(L, c, MCP_CAP_READ, path)) != 0) return r;
  h = mcp_op_reserve(L);                          /* may raise: first */
  op = calloc(1, sizeof *op);
  if (op == NULL || (op->path = strdup(path)) == NULL) abort();
  op->kind = kind;
  op->fd = -1;
  op->max = max;
  op->req.data = op;
  mcp_op_init(&op->op, &fs_type, c);
  mcp_op_attach(h, &op->op);
  if (kind == OP_READ) r = uv_fs_open(mcp_sched_loop(), &op->req, path, O_RDONLY | O_NONBLOCK, 0, on_fs);
  else if (kind == OP_LIST) r = uv_fs_scandir(mcp_sched_loop(), &op->req, path, 0, on_fs);
  else r = uv_fs_realpath(mcp_sched_loop(), &op->req, path, on_fs);
  if (r < 0) {                                    /* refused before it was queued */
    uv_fs_req_cleanup(&op->req);
    op->err = r;
    op_done(op);
  } else {
    op->busy = 1;
  }
  return mcp_op_wait(L);
}

int mcp_fsread_file(lua_State *L, mcp_call *c, const char *path, size_t max_bytes) {
  return op_start(L, c, OP_READ, path, max_bytes);
}

int mcp_fsread_dir(lua_State *L, mcp_call *c, const char *path) {
  return op_start(L, c, OP_LIST, path, 0);
}

int mcp_fsread_realpath(lua_State *L, mcp_call *c, const char *path) {
  return op_start(L, c, OP_REALPATH, path, 0);
}
