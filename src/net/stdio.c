/* The stdio transport: newline-delimited JSON-RPC on stdin and stdout.
 * stdin and stdout may each be a pipe, a TTY or a regular file; libuv cannot
 * poll a regular file, so files are read with uv_fs_read and written with
 * plain blocking writes. */
#define _GNU_SOURCE          /* F_SETPIPE_SZ */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "rpc.h"
#include "session.h"
#include "stdio_transport.h"

/* A read takes up to 2,500 short lines (libuv reads again, up to 32 times,
 * while a read fills the buffer). */
#define READ_CHUNK ((size_t)256 << 10)
/* A pipe's size asked for at start (Linux: the default pipe-max-size): a
 * burst of lines crosses in fewer reads and writes. */
#define PIPE_SIZE (1 << 20)

typedef union {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_pipe_t pipe;
  uv_tty_t tty;
} stream_u;

typedef struct {
  uv_write_t req;
  uv_buf_t buf;
} write_req;

static struct {
  mcp_session session;
  uv_loop_t *loop;
  uv_handle_type in_type, out_type;
  int in_fd, out_fd;            /* the protocol's stdin and stdout; fd 0 is now /dev/null,
                                   fd 1 stderr */
  stream_u in, out;
  uv_fs_t fs_read;              /* stdin is a regular file */
  char *fs_buf;
  int64_t fs_off;
  uv_prepare_t flusher;         /* writes what a loop turn produced before polling */
  uv_timer_t eof_timer;         /* EOF is handled after the queued calls started; then
                                   the deadline of the writes left at shutdown */
  mcp_buf line;                 /* a partial line */
  mcp_buf pend;                 /* output not yet handed to the kernel */
  size_t next_try;              /* pend's length at which a long turn next tries to write */
  size_t writing;               /* writes in flight */
  int skipping;                 /* discarding the rest of an over-long line */
  int reading, closing, close_pending;
  int paused;                   /* stdin not read while the client is behind on stdout */
  int gone;                     /* the client read nothing for OUT_MAX bytes: output dropped */
  void (*on_eof)(void);
  void (*on_closed)(void);
} T;

#define DRAIN_MS 2000                 /* writes left at shutdown: how long they may take */
/* Output the client has not read yet (a pipe or TTY): past OUT_PAUSE, stdin
 * is not read (no new requests) until it is below OUT_RESUME; when more is
 * written while OUT_MAX is still unread (calls already read kept writing),
 * the client is taken for gone, as after a write error: its output is
 * dropped and the server shuts down. Output is handed over at least every
 * OUT_CHUNK, so what is held stays within OUT_MAX + OUT_CHUNK + one message. */
#define OUT_PAUSE ((size_t)4 << 20)
#define OUT_RESUME ((size_t)1 << 20)
#define OUT_MAX ((size_t)64 << 20)
#define OUT_CHUNK ((size_t)1 << 20)
/* A loop turn that writes much (10,000 handlers woken by their cancels)
 * hands its output over every OUT_STEP when the kernel takes it, so that
 * the client reads while the rest runs. */
#define OUT_STEP ((size_t)64 << 10)

static void close_handles(void);
static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void write_cb(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  T.writing--;
  if (status < 0 && status != UV_ECANCELED) {
    mcp_warn("stdout: %s; the client is gone", uv_strerror(status));
    if (T.on_eof) T.on_eof();
  }
  free(w->buf.base);
  free(w);
  if (T.paused && T.out.stream.write_queue_size < OUT_RESUME) {
    T.paused = 0;
    if (T.reading) uv_read_start(&T.in.stream, alloc_cb, read_cb);
  }
  if (T.writing == 0 && T.close_pending) close_handles();
}

static void on_gone(uv_timer_t *t) {
  (void)t;
  if (T.on_eof) T.on_eof();
}

/* Before more output is queued: give the client up. */
static int gone(void) {
  size_t q = T.out.stream.write_queue_size;
  if (T.gone) return 1;
  if (q <= OUT_MAX) return 0;
  T.gone = 1;
  mcp_warn("stdout: the client has not read %zu bytes; taken for gone, its output dropped", q);
  if (!T.close_pending) uv_timer_start(&T.eof_timer, on_gone, 0, 0);   /* not under a writer */
  return 1;
}

/* After a write was queued: pause stdin. */
static void check_backlog(void) {
  size_t q = T.out.stream.write_queue_size;
  if (q > OUT_PAUSE && !T.paused && T.reading && T.in_type != UV_FILE) {
    T.paused = 1;
    mcp_debug("stdout: %zu bytes not read by the client; stdin paused", q);
    uv_read_stop(&T.in.stream);
  }
}

static void flush(void) {
  size_t off = 0;
  T.next_try = OUT_STEP;
  if (T.pend.len == 0) return;
  if (T.out_type != UV_FILE && gone()) {
    T.pend.len = 0;
    return;
  }
  if (T.out_type == UV_FILE) {
    while (off < T.pend.len) {
      ssize_t n = write(T.out_fd, T.pend.data + off, T.pend.len - off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        mcp_warn("stdout: %s; output dropped", strerror(errno));
        break;
      }
      off += (size_t)n;
    }
    T.pend.len = 0;
    return;
  }
  if (T.writing == 0) {            /* keep order: only try when nothing is queued */
    uv_buf_t b = uv_buf_init(T.pend.data, (unsigned)T.pend.len);
    int n = uv_try_write(&T.out.stream, &b, 1);
    if (n > 0) off = (size_t)n;
  }
  if (off < T.pend.len) {
    write_req *w = malloc(sizeof *w);
    if (w == NULL) abort();
    w->buf.len = T.pend.len - off;
    w->buf.base = malloc(w->buf.len);
    if (w->buf.base == NULL) abort();
    memcpy(w->buf.base, T.pend.data + off, w->buf.len);
    T.writing++;
    uv_buf_t b = w->buf;
    int r = uv_write(&w->req, &T.out.stream, &b, 1, write_cb);
    if (r < 0) {
      T.writing--;
      free(w->buf.base);
      free(w);
      mcp_warn("stdout: %s; the client is gone", uv_strerror(r));
    } else {
      check_backlog();
    }
  }
  T.pend.len = 0;
}

static void on_prepare(uv_prepare_t *h) {
  (void)h;
  flush();
}

/* In the middle of a turn: what the kernel takes now, with no copy; the
 * rest stays pending. Nothing queued in libuv, or order would break. */
static void write_early(void) {
  T.next_try = T.pend.len + OUT_STEP;
  if (T.writing > 0 || gone()) return;
  uv_buf_t b = uv_buf_init(T.pend.data, (unsigned)T.pend.len);
  int n = uv_try_write(&T.out.stream, &b, 1);
  if (n <= 0) return;
  T.pend.len -= (size_t)n;
  memmove(T.pend.data, T.pend.data + n, T.pend.len);
  T.next_try = T.pend.len + OUT_STEP;
}

static void session_write(mcp_session *s, void *stream, const char *data, size_t len, int last) {
  (void)s; (void)stream; (void)last;
  if (data == NULL || T.gone) return;
  mcp_buf_add(&T.pend, data, len);
  mcp_buf_addc(&T.pend, '\n');
  if (T.out_type == UV_FILE || T.closing) return;
  if (T.pend.len >= OUT_CHUNK) flush();
  else if (T.pend.len >= T.next_try) write_early();
}

static void message(const char *p, size_t n) {
  while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
  if (n == 0) return;                    /* blank lines are not messages */
  mcp_session_input(&T.session, p, n, NULL);
}

static void too_long(void) {
  char msg[128];
  snprintf(msg, sizeof msg, "Invalid Request: message longer than %zu bytes (--max-line)",
           mcp_cfg.max_line);
  mcp_warn("stdin: %s; skipped", msg);
  mcp_session_reject(&T.session, MCP_RPC_INVALID_REQUEST, msg, NULL);
}

/* Split input into lines; a line that fits is handed over without a copy
 * when it arrives whole. */
static void feed(const char *p, size_t n) {
  while (n > 0) {
    const char *nl = memchr(p, '\n', n);
    size_t chunk = nl ? (size_t)(nl - p) : n;
    if (T.skipping) {
      if (nl) T.skipping = 0;
    } else if (T.line.len + chunk > mcp_cfg.max_line) {
      too_long();
      T.line.len = 0;
      T.skipping = (nl == NULL);
    } else if (nl && T.line.len == 0) {
      message(p, chunk);
    } else {
      mcp_buf_add(&T.line, p, chunk);
      if (nl) {
        message(T.line.data, T.line.len);
        T.line.len = 0;
      }
    }
    if (nl == NULL) break;
    p = nl + 1;
    n -= chunk + 1;
  }
}

static void on_eof_timer(uv_timer_t *t) {
  (void)t;
  if (T.on_eof) T.on_eof();
}

static void at_eof(void) {
  if (T.line.len > 0 && !T.skipping) message(T.line.data, T.line.len);
  T.line.len = 0;
  T.reading = 0;
  mcp_info("stdin: end of input");
  /* Let the calls read in this turn start (and quick ones finish) first. */
  uv_timer_start(&T.eof_timer, on_eof_timer, 0, 0);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char chunk[READ_CHUNK];
  (void)h; (void)hint;
  buf->base = chunk;
  buf->len = sizeof chunk;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  if (n > 0) {
    feed(buf->base, (size_t)n);
    flush();         /* answer now, before the queue runs a CPU-bound slice */
    return;
  }
  if (n == 0) return;
  if (n != UV_EOF) mcp_warn("stdin: %s", uv_strerror((int)n));
  uv_read_stop(s);
  at_eof();
}

static void fs_read_cb(uv_fs_t *req) {
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  if (n > 0 && T.reading) {
    feed(T.fs_buf, (size_t)n);
    T.fs_off += n;
    uv_buf_t b = uv_buf_init(T.fs_buf, READ_CHUNK);
    uv_fs_read(T.loop, &T.fs_read, T.in_fd, &b, 1, T.fs_off, fs_read_cb);
    return;
  }
  if (n < 0) mcp_warn("stdin: %s", uv_strerror((int)n));
  if (T.reading) at_eof();
}

static int open_stream(int fd, uv_handle_type type, stream_u *s, int readable) {
  if (type == UV_TTY) return uv_tty_init(T.loop, &s->tty, fd, readable);
#ifdef F_SETPIPE_SZ
  if (fcntl(fd, F_GETPIPE_SZ) < PIPE_SIZE) (void)fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE);  /* not a pipe: fails */
#endif
  int r = uv_pipe_init(T.loop, &s->pipe, 0);
  if (r == 0) r = uv_pipe_open(&s->pipe, fd);
  return r;
}

/* stdin and stdout are the protocol's: the transport keeps a duplicate of
 * each for itself; fd 1 points at stderr, so that nothing else (print,
 * io.write, C libraries, children) can reach the client, and fd 0 at
 * /dev/null, so that nothing else (io.read, a child that reads) takes the
 * client's messages. Before any plugin loads. */
int mcp_stdio_set_aside(void) {
  int null;
  fflush(stdout);
  T.in_fd = fcntl(0, F_DUPFD_CLOEXEC, 3);        /* children must not inherit them */
  T.out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (T.in_fd < 0 || T.out_fd < 0 || (null = open("/dev/null", O_RDONLY)) < 0) {
    mcp_error("stdio: cannot set aside: %s", strerror(errno));
    return -1;
  }
  if (dup2(null, 0) < 0 || dup2(2, 1) < 0) {
    mcp_error("stdio: cannot set aside: %s", strerror(errno));
    close(null);
    return -1;
  }
  close(null);
  setvbuf(stdout, NULL, _IOLBF, 0);              /* C's stdout is now a log stream */
  return 0;
}

int mcp_stdio_start(uv_loop_t *loop, void (*on_eof)(void)) {
  int r;
  T.loop = loop;
  T.on_eof = on_eof;
  T.in_type = uv_guess_handle(T.in_fd);
  T.out_type = uv_guess_handle(T.out_fd);
  T.next_try = OUT_STEP;
  mcp_session_init(&T.session, session_write, NULL);
  strcpy(T.session.name, "stdio");
  uv_prepare_init(loop, &T.flusher);
  uv_prepare_start(&T.flusher, on_prepare);
  uv_timer_init(loop, &T.eof_timer);
  if (T.out_type != UV_FILE) {
    if (T.out_type != UV_TTY) T.out_type = UV_NAMED_PIPE;
    if ((r = open_stream(T.out_fd, T.out_type, &T.out, 0)) < 0) {
      mcp_error("stdout: %s", uv_strerror(r));
      return r;
    }
  }
  T.reading = 1;
  if (T.in_type == UV_FILE) {
    T.fs_buf = malloc(READ_CHUNK);
    if (T.fs_buf == NULL) abort();
    uv_buf_t b = uv_buf_init(T.fs_buf, READ_CHUNK);
    return uv_fs_read(loop, &T.fs_read, T.in_fd, &b, 1, 0, fs_read_cb);
  }
  if (T.in_type != UV_TTY) T.in_type = UV_NAMED_PIPE;
  if ((r = open_stream(T.in_fd, T.in_type, &T.in, 1)) < 0 ||
      (r = uv_read_start(&T.in.stream, alloc_cb, read_cb)) < 0) {
    mcp_error("stdin: %s", uv_strerror(r));
    return r;
  }
  return 0;
}

void mcp_stdio_stop_reading(void) {
  if (!T.reading) return;
  T.reading = 0;
  T.paused = 0;
  if (T.in_type != UV_FILE) uv_read_stop(&T.in.stream);
}

static void closed_cb(uv_handle_t *h) {
  (void)h;
  if (--T.closing == 0 && T.on_closed) T.on_closed();
}

/* A client that reads nothing more cannot hold the server forever. */
static void on_drain_deadline(uv_timer_t *t) {
  size_t left = T.out.stream.write_queue_size;   /* a pipe or TTY: files are written at once */
  (void)t;
  if (!T.close_pending) return;
  mcp_warn("stdout: the client reads nothing; %zu bytes of output dropped at shutdown", left);
  close_handles();                          /* cancels the writes */
}

/* Flush what is left, wait for the writes (DRAIN_MS at most), then close
 * every handle; on_closed runs at the end. */
void mcp_stdio_close(void (*on_closed)(void)) {
  T.on_closed = on_closed;
  flush();
  if (T.writing > 0) {                      /* uv_close would cancel them */
    T.close_pending = 1;
    uv_timer_start(&T.eof_timer, on_drain_deadline, DRAIN_MS, 0);
  } else {
    close_handles();
  }
}

static void close_handles(void) {
  T.close_pending = 0;
  T.closing = 3;
  uv_close((uv_handle_t *)&T.flusher, closed_cb);
  uv_close((uv_handle_t *)&T.eof_timer, closed_cb);
  if (T.in_type != UV_FILE) uv_close(&T.in.handle, closed_cb);
  else T.closing--;
  if (T.out_type != UV_FILE) {
    T.closing++;
    uv_close(&T.out.handle, closed_cb);   /* pending writes complete or cancel first */
  }
  if (T.closing == 0 && T.on_closed) T.on_closed();
}

void mcp_stdio_free(void) {
  if (T.out_type == UV_FILE && T.out_fd >= 0) close(T.out_fd);
  if (T.in_type == UV_FILE && T.in_fd >= 0) close(T.in_fd);
  mcp_session_close(&T.session);
  mcp_buf_free(&T.line);
  mcp_buf_free(&T.pend);
  free(T.fs_buf);
  T.fs_buf = NULL;
}
