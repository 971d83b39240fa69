/* Load driver for the luamcp benchmark (bench/run.sh).
 *
 *   driver [--scenario NAME] [options] -- CMD ARGS...
 *
 * Spawns CMD with its stdin/stdout on pipes (stderr is inherited), does the MCP
 * handshake (initialize with protocolVersion 2025-06-18,
 * notifications/initialized, logging/setLevel info), runs one scenario and
 * prints its results on stdout, one "key value" per line.  Times come from
 * CLOCK_MONOTONIC.  Responses are parsed minimally: a line with "method" is a
 * notification, any other line is a response whose "id":N is looked up.
 *
 * Scenarios (see bench/README.md for what each figure means):
 *   echo     N tools/call echo, W in flight, R rounds  -> echo_calls_per_s (median)
 *   latency  sequential tools/call echo                -> lat_p50_us, lat_p99_us
 *   cancel   sleep call, then notifications/cancelled,
 *            time until the "stopped" log line         -> cancel_p50_us, cancel_p99_us
 *   inflight 10,000 sleeping calls: VmRSS delta, then
 *            10,000 cancels, time until all "stopped"  -> rss_per_req_bytes, cancel_all_ms
 *   spin     a CPU-bound call, pings meanwhile         -> spin_ping_p50_us, spin_ping_p99_us
 *
 * Plain POSIX: poll(2) on the two pipes, non-blocking writes from an output
 * queue so large bursts never deadlock against the server's output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- utils */

#include "report.h"

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("driver: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* ----------------------------------------------------------- connection */

typedef struct {
    pid_t pid;
    int wfd, rfd;
    char *ob; /* pending output */
    size_t olen, opos, ocap;
    char *ib; /* input */
    size_t ilen, ipos, icap;
    int eof;
    uint64_t lines_in;
} conn_t;

/* return nonzero to make pump() return */
typedef int (*line_cb)(void *ud, char *line, size_t len);

static void queue(conn_t *c, const char *fmt, ...)
{
    for (;;) {
        size_t room = c->ocap - c->olen;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->ob + c->olen, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            die("vsnprintf");
        if ((size_t)n < room) {
            c->olen += (size_t)n;
            return;
        }
        if (c->opos > 0 && c->opos == c->olen) {
            c->opos = c->olen = 0;
            continue;
        }
        c->ocap = c->ocap ? c->ocap * 2 : 65536;
        while (c->ocap - c->olen <= (size_t)n)
            c->ocap *= 2;
        c->ob = xrealloc(c->ob, c->ocap);
    }
}

static int flush_some(conn_t *c)
{
    while (c->opos < c->olen) {
        ssize_t n = write(c->wfd, c->ob + c->opos, c->olen - c->opos);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            return -1;
        }
        c->opos += (size_t)n;
    }
    c->opos = c->olen = 0;
    return 0;
}

/* Deliver complete buffered lines; returns 1 if cb asked to stop. */
static int deliver(conn_t *c, line_cb cb, void *ud)
{
    while (c->ipos < c->ilen) {
        char *s = c->ib + c->ipos;
        char *nl = memchr(s, '\n', c->ilen - c->ipos);
        if (!nl)
            break;
        *nl = '\0';
        size_t len = (size_t)(nl - s);
        c->ipos += len + 1;
        c->lines_in++;
        if (len && cb && cb(ud, s, len))
            return 1;
    }
    if (c->ipos == c->ilen)
        c->ipos = c->ilen = 0;
    return 0;
}

/* Run the I/O loop until cb returns nonzero (1), deadline passes (0), or the
 * server closes its output (-1).  Lines already buffered are delivered first. */
static int pump(conn_t *c, double deadline, line_cb cb, void *ud)
{
    for (;;) {
        if (deliver(c, cb, ud))
            return 1;
        if (c->olen > c->opos && flush_some(c) < 0)
            die("write to server: %s", strerror(errno));
        if (c->eof)
            return -1;
        double left = deadline - now_s();
        if (left <= 0)
            return 0;
        struct pollfd pf[2] = {{c->rfd, POLLIN, 0}, {c->wfd, 0, 0}};
        if (c->olen > c->opos)
            pf[1].events = POLLOUT;
        int ms = (int)ceil(left * 1000.0);
        int r = poll(pf, c->olen > c->opos ? 2 : 1, ms);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("poll: %s", strerror(errno));
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (c->icap - c->ilen < 65536) {
                if (c->ipos > 0) {
                    memmove(c->ib, c->ib + c->ipos, c->ilen - c->ipos);
                    c->ilen -= c->ipos;
                    c->ipos = 0;
                }
                if (c->icap - c->ilen < 65536) {
                    c->icap = c->icap ? c->icap * 2 : 262144;
                    c->ib = xrealloc(c->ib, c->icap + 1);
                }
            }
            ssize_t n = read(c->rfd, c->ib + c->ilen, c->icap - c->ilen);
            if (n < 0 && errno != EINTR && errno != EAGAIN)
                die("read from server: %s", strerror(errno));
            if (n == 0)
                c->eof = 1;
            if (n > 0)
                c->ilen += (size_t)n;
        }
    }
}

static void spawn(conn_t *c, char **argv)
{
    int in[2], outp[2];
    if (pipe(in) < 0 || pipe(outp) < 0)
        die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(outp[1], 1);
        close(in[0]);
        close(in[1]);
        close(outp[0]);
        close(outp[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "driver: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    memset(c, 0, sizeof *c);
    c->pid = pid;
    c->wfd = in[1];
    c->rfd = outp[0];
    fcntl(c->wfd, F_SETFL, fcntl(c->wfd, F_GETFL) | O_NONBLOCK);
    fcntl(c->rfd, F_SETFL, fcntl(c->rfd, F_GETFL) | O_NONBLOCK);
    fcntl(c->wfd, F_SETFD, FD_CLOEXEC);
    fcntl(c->rfd, F_SETFD, FD_CLOEXEC);
}

/* Close the server's input and reap it; escalate to signals if it lingers. */
static void finish(conn_t *c, double grace)
{
    pump(c, now_s() + 0.0, NULL, NULL); /* flush what is queued, best effort */
    close(c->wfd);
    double end = now_s() + grace;
    int st;
    for (int stage = 0; stage < 3; stage++) {
        while (now_s() < end) {
            /* keep draining its output so it never blocks on a full pipe */
            char buf[65536];
            while (read(c->rfd, buf, sizeof buf) > 0) {
            }
            pid_t r = waitpid(c->pid, &st, WNOHANG);
            if (r == c->pid) {
                close(c->rfd);
                return;
            }
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (stage == 0) {
            fprintf(stderr, "driver: server did not exit on EOF, sending SIGTERM\n");
            kill(c->pid, SIGTERM);
        } else if (stage == 1) {
            fprintf(stderr, "driver: server did not exit on SIGTERM, sending SIGKILL\n");
            kill(c->pid, SIGKILL);
        }
        end = now_s() + 2.0;
    }
    close(c->rfd);
}

/* ------------------------------------------------------------- parsing */

static int is_notification(const char *line)
{
    return strstr(line, "\"method\"") != NULL;
}

/* The integer after the first "id": in the line, or -1. */
static int64_t line_id(const char *line)
{
    const char *p = line;
    while ((p = strstr(p, "\"id\"")) != NULL) {
        p += 4;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p < '0' || *p > '9')
            return -1;
        int64_t v = 0;
        while (*p >= '0' && *p <= '9')
            v = v * 10 + (*p++ - '0');
        return v;
    }
    return -1;
}

static int is_error(const char *line)
{
    return strstr(line, "\"error\"") != NULL || strstr(line, "\"isError\":true") != NULL ||
           strstr(line, "\"isError\": true") != NULL;
}

/* A handler's own stop log: the data is exactly "stopped" (a log of the
 * server's own that mentions a stopped request does not count). */
static int is_stopped_log(const char *line)
{
    return strstr(line, "notifications/message") != NULL && strstr(line, "\"data\":\"stopped\"") != NULL;
}

/* ---------------------------------------------------------- requests */

static int64_t next_id = 1;
static const char *echo_text = "hello";

static int64_t send_echo(conn_t *c)
{
    int64_t id = next_id++;
    queue(c,
          "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":\"tools/call\",\"params\":"
          "{\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"}}}\n",
          id, echo_text);
    return id;
}

static int64_t send_call(conn_t *c, const char *tool, double seconds)
{
    int64_t id = next_id++;
    queue(c,
          "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":\"tools/call\",\"params\":"
          "{\"name\":\"%s\",\"arguments\":{\"seconds\":%g}}}\n",
          id, tool, seconds);
    return id;
}

static int64_t send_ping(conn_t *c)
{
    int64_t id = next_id++;
    queue(c, "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":\"ping\"}\n", id);
    return id;
}

static void send_cancel(conn_t *c, int64_t id)
{
    queue(c,
          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
          "{\"requestId\":%" PRId64 ",\"reason\":\"bench\"}}\n",
          id);
}

/* wait for the response with a given id */
typedef struct {
    int64_t id;
    int error;
    uint64_t stopped; /* stopped logs seen meanwhile */
    uint64_t others;
} wait_t;

static int wait_cb(void *ud, char *line, size_t len)
{
    wait_t *w = ud;
    if (is_notification(line)) {
        if (is_stopped_log(line))
            w->stopped++;
        return 0;
    }
    if (line_id(line) == w->id) {
        w->error = is_error(line);
        return 1;
    }
    w->others++;
    return 0;
}

/* 1: answered; 0: timed out; -1: server gone */
static int wait_for(conn_t *c, int64_t id, double timeout, wait_t *w)
{
    wait_t local;
    if (!w)
        w = &local;
    memset(w, 0, sizeof *w);
    w->id = id;
    return pump(c, now_s() + timeout, wait_cb, w);
}

static void handshake(conn_t *c, double timeout)
{
    int64_t id = next_id++;
    queue(c,
          "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":\"initialize\",\"params\":"
          "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
          "\"clientInfo\":{\"name\":\"luamcp-bench-driver\",\"version\":\"1\"}}}\n",
          id);
    if (wait_for(c, id, timeout, NULL) != 1)
        die("no answer to initialize within %gs", timeout);
    queue(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    id = next_id++;
    queue(c,
          "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64
          ",\"method\":\"logging/setLevel\",\"params\":{\"level\":\"info\"}}\n",
          id);
    if (wait_for(c, id, timeout, NULL) != 1)
        die("no answer to logging/setLevel within %gs", timeout);
}

/* ----------------------------------------------------------- scenarios */

typedef struct {
    long count;       /* echo: calls; latency: calls; cancel: rounds; inflight: requests */
    long window;      /* echo: calls in flight */
    long warmup;      /* calls before measuring */
    long repeat;      /* echo: measured rounds */
    double spin_s;    /* spin: handler run time */
    double ping_timeout; /* spin: give up on a ping after this */
    double timeout;   /* generic per-wait timeout */
} opts_t;

/* echo throughput ---------------------------------------------------- */

typedef struct {
    conn_t *c;
    long sent, recv, total, errors;
} tp_t;

static int tp_cb(void *ud, char *line, size_t len)
{
    tp_t *t = ud;
    if (is_notification(line))
        return 0;
    t->recv++;
    if (is_error(line))
        t->errors++;
    if (t->sent < t->total) {
        send_echo(t->c);
        t->sent++;
    }
    return t->recv >= t->total;
}

static int run_window(conn_t *c, long total, long window, double timeout, tp_t *t)
{
    memset(t, 0, sizeof *t);
    t->c = c;
    t->total = total;
    while (t->sent < total && t->sent < window) {
        send_echo(c);
        t->sent++;
    }
    return pump(c, now_s() + timeout, tp_cb, t);
}

static void sc_echo(conn_t *c, const opts_t *o)
{
    tp_t t;
    if (o->warmup > 0 && run_window(c, o->warmup, o->window, o->timeout, &t) != 1)
        die("echo warmup: %ld of %ld answered", t.recv, o->warmup);
    /* o->repeat rounds of o->count calls on the same server; the median
       round is the figure */
    double rate[16];
    long rounds = o->repeat < 1 ? 1 : o->repeat > 16 ? 16 : o->repeat, errors = 0;
    out("echo_calls", "%ld", o->count);
    out("echo_window", "%ld", o->window);
    out("echo_rounds", "%ld", rounds);
    for (long i = 0; i < rounds; i++) {
        double t0 = now_s();
        int r = run_window(c, o->count, o->window, o->timeout + (double)o->count / 1000.0, &t);
        double dt = now_s() - t0;
        errors += t.errors;
        if (r != 1) {
            out("echo_incomplete", "%ld", o->count - t.recv);
            return;
        }
        rate[i] = (double)t.recv / dt;
        char key[32];
        snprintf(key, sizeof key, "echo_round%ld_calls_per_s", i + 1);
        out(key, "%.0f", rate[i]);
    }
    out("echo_errors", "%ld", errors);
    qsort(rate, (size_t)rounds, sizeof *rate, cmp_double);
    out("echo_calls_per_s", "%.0f", rate[rounds / 2]);
    out("echo_calls_per_s_min", "%.0f", rate[0]);
    out("echo_calls_per_s_max", "%.0f", rate[rounds - 1]);
}

/* sequential latency ---------------------------------------------------- */

static void sc_latency(conn_t *c, const opts_t *o)
{
    for (long i = 0; i < o->warmup; i++) {
        int64_t id = send_echo(c);
        if (wait_for(c, id, o->timeout, NULL) != 1)
            die("latency warmup: no answer");
    }
    double *v = xrealloc(NULL, sizeof(double) * (size_t)o->count);
    size_t n = 0;
    long errors = 0;
    for (long i = 0; i < o->count; i++) {
        wait_t w;
        double t0 = now_s();
        int64_t id = send_echo(c);
        int r = wait_for(c, id, o->timeout, &w);
        double t1 = now_s();
        if (r != 1) {
            out("lat_timeouts", "1");
            break;
        }
        errors += w.error;
        v[n++] = t1 - t0;
    }
    out("lat_errors", "%ld", errors);
    report_dist("lat", v, n);
    free(v);
}

/* cancel latency ------------------------------------------------------- */

typedef struct {
    uint64_t stopped, want;
    double first; /* when the first "stopped" line was read */
} stop_t;

static int stop_cb(void *ud, char *line, size_t len)
{
    stop_t *s = ud;
    if (is_notification(line) && is_stopped_log(line)) {
        if (s->first == 0)
            s->first = now_s();
        s->stopped++;
    }
    return s->stopped >= s->want;
}

static void sc_cancel(conn_t *c, const opts_t *o)
{
    long rounds = o->count + o->warmup;
    double *v = xrealloc(NULL, sizeof(double) * (size_t)rounds);
    size_t n = 0;
    long missed = 0;
    for (long i = 0; i < rounds; i++) {
        /* start a sleeping call; the ping's answer tells us it was read and
           dispatched (both servers handle lines in order) */
        int64_t id = send_call(c, "sleep", 3600);
        int64_t pid = send_ping(c);
        wait_t w;
        if (wait_for(c, pid, o->timeout, &w) != 1)
            die("cancel: no answer to ping");
        stop_t s = {w.stopped, w.stopped + 1, 0};
        double t0 = now_s();
        send_cancel(c, id);
        int r = pump(c, t0 + o->timeout, stop_cb, &s);
        double t1 = now_s();
        if (r != 1) {
            missed++;
            continue;
        }
        if (i >= o->warmup)
            v[n++] = t1 - t0;
    }
    out("cancel_missed", "%ld", missed);
    report_dist("cancel", v, n);
    free(v);
}

/* 10,000 in flight: memory, then cancel them all ----------------------- */

/* DRIVER_CALLGRIND_ZERO=S (the server runs under callgrind: the calls start
 * slowly): wait S seconds, then zero callgrind's counts, so that its total
 * is the cancels' (bench/cancel-instructions.sh). */
static void callgrind_zero(conn_t *c)
{
    const char *wait = getenv("DRIVER_CALLGRIND_ZERO");
    char cmd[128];
    if (wait == NULL)
        return;
    struct timespec ts = {atoi(wait), 0};
    nanosleep(&ts, NULL);
    snprintf(cmd, sizeof cmd, "callgrind_control -z %d >/dev/null 2>&1", (int)c->pid);
    if (system(cmd) != 0)
        die("callgrind_control -z failed");
}

static void sc_inflight(conn_t *c, const opts_t *o)
{
    /* warm up the paths a sleeping call takes, then measure the baseline */
    for (long i = 0; i < o->warmup; i++) {
        int64_t id = send_call(c, "sleep", 3600);
        int64_t pid = send_ping(c);
        if (wait_for(c, pid, o->timeout, NULL) != 1)
            die("inflight warmup: no ping answer");
        stop_t s = {0, 1, 0};
        send_cancel(c, id);
        if (pump(c, now_s() + o->timeout, stop_cb, &s) != 1)
            die("inflight warmup: no stopped log");
    }
    tp_t t;
    run_window(c, 1000, 64, o->timeout, &t);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    long rss0 = vmrss_kb(c->pid);

    int64_t first = next_id;
    double t0 = now_s();
    for (long i = 0; i < o->count; i++)
        send_call(c, "sleep", 3600);
    int64_t pid = send_ping(c);
    wait_t w;
    int r = wait_for(c, pid, o->timeout + 30, &w);
    double t1 = now_s();
    if (r != 1)
        die("inflight: no answer to the ping after %ld calls", o->count);
    out("inflight_requests", "%ld", o->count);
    out("inflight_start_ms", "%.2f", (t1 - t0) * 1e3);
    out("inflight_early_responses", "%" PRIu64, w.others);
    nanosleep(&ts, NULL);
    long rss1 = vmrss_kb(c->pid);
    out("rss_before_kb", "%ld", rss0);
    out("rss_after_kb", "%ld", rss1);
    out("rss_per_req_bytes", "%.0f", (double)(rss1 - rss0) * 1024.0 / (double)o->count);

    /* cancel them all: time from writing the first cancel until the last
       "stopped" log line; then until the answer to a ping sent after it */
    stop_t s = {w.stopped, w.stopped + (uint64_t)o->count, 0};
    callgrind_zero(c);
    t0 = now_s();
    for (long i = 0; i < o->count; i++)
        send_cancel(c, first + i);
    r = pump(c, t0 + o->timeout + 30, stop_cb, &s);
    t1 = now_s();
    out("cancel_all_stopped", "%" PRIu64, s.stopped - w.stopped);
    if (r == 1) {
        out("cancel_all_ms", "%.2f", (t1 - t0) * 1e3);
        out("cancel_all_first_stopped_ms", "%.2f", (s.first - t0) * 1e3);
    }
    pid = send_ping(c);
    r = wait_for(c, pid, o->timeout, NULL);
    double t2 = now_s();
    if (r == 1)
        out("cancel_all_then_ping_ms", "%.2f", (t2 - t0) * 1e3);
    nanosleep(&ts, NULL);
    out("rss_after_cancel_kb", "%ld", vmrss_kb(c->pid));
}

/* pings while a handler spins ------------------------------------------ */

static void sc_spin(conn_t *c, const opts_t *o)
{
    /* warm the ping path */
    for (int i = 0; i < 100; i++) {
        int64_t id = send_ping(c);
        if (wait_for(c, id, o->timeout, NULL) != 1)
            die("spin warmup: no ping answer");
    }
    double t0 = now_s();
    int64_t sid = send_call(c, "spin", o->spin_s);
    pump(c, t0 + 0.1, NULL, NULL); /* let the handler get going */
    double stop_at = t0 + o->spin_s - 0.2;
    size_t cap = 1 << 16, n = 0;
    double *v = xrealloc(NULL, sizeof(double) * cap);
    long timeouts = 0;
    int spin_done = 0;
    unsigned seed = 12345;
    while (now_s() < stop_at) {
        wait_t w;
        double p0 = now_s();
        int64_t id = send_ping(c);
        int r = wait_for(c, id, o->ping_timeout, &w);
        double p1 = now_s();
        if (w.others)
            spin_done = 1; /* the spin call answered early */
        if (r != 1) {
            timeouts++;
            break;
        }
        if (n == cap)
            v = xrealloc(v, sizeof(double) * (cap *= 2));
        v[n++] = p1 - p0;
        if (spin_done)
            break;
        /* a random pause of 0-1 ms so pings land at random phases of the
           handler's time slices */
        seed = seed * 1103515245u + 12345u;
        struct timespec ts = {0, (long)((seed >> 8) % 1000000u)};
        nanosleep(&ts, NULL);
    }
    out("spin_seconds", "%g", o->spin_s);
    out("spin_ping_timeout_s", "%g", o->ping_timeout);
    out("spin_ping_timeouts", "%ld", timeouts);
    report_dist("spin_ping", v, n);
    free(v);
    if (!spin_done) {
        int r = wait_for(c, sid, o->spin_s + o->timeout, NULL);
        if (r == 1)
            out("spin_call_s", "%.3f", now_s() - t0);
    }
}

/* soak ------------------------------------------------------------------ */

/* o->count requests, o->window echoes in flight; after every ninth echo a
 * sleep, cancelled (one request in ten): every other one at once (before it
 * starts: it ends with no message), the others once the next echo answer
 * comes (while it sleeps: its handler logs "stopped"). Only the echoes pace
 * the run. Every 1000th echo is timed. Twenty windows report
 * the server's RSS, its open fds and the p99 of the timed echoes. */
typedef struct {
    conn_t *c;
    long sent, done, total, cancelled, stopped;
    int64_t sleeping;           /* a sleep to cancel at the next answer */
    int64_t probe_id;
    double probe_t0;
    double lat[4096];
    size_t nlat;
} soak_t;

static void soak_send(soak_t *s)
{
    if (s->sent >= s->total)
        return;
    int64_t id = send_echo(s->c);
    if (s->probe_id == 0 && s->sent % 1000 == 0) {
        s->probe_id = id;
        s->probe_t0 = now_s();
    }
    if (++s->sent % 9 == 0) {
        int64_t sleep_id = send_call(s->c, "sleep", 3600);
        if (s->cancelled++ % 2 == 0)
            send_cancel(s->c, sleep_id);
        else if (s->sleeping == 0)
            s->sleeping = sleep_id;
        else
            send_cancel(s->c, sleep_id);
    }
}

static int soak_cb(void *ud, char *line, size_t len)
{
    soak_t *s = ud;
    if (is_notification(line)) {
        s->stopped += is_stopped_log(line);
        return 0;
    }
    if (s->sleeping != 0) {
        send_cancel(s->c, s->sleeping);
        s->sleeping = 0;
    }
    if (s->probe_id != 0 && line_id(line) == s->probe_id) {
        if (s->nlat < sizeof s->lat / sizeof s->lat[0])
            s->lat[s->nlat++] = now_s() - s->probe_t0;
        s->probe_id = 0;
    }
    s->done++;
    soak_send(s);
    return s->done >= s->total;
}

static void sc_soak(conn_t *c, const opts_t *o)
{
    static soak_t s;
    long windows = 20, per = o->count * 9 / 10 / windows, cancelled = 0, stopped = 0;
    double t0 = now_s();
    if (per < 1)
        per = 1;
    for (long w = 1; w <= windows; w++) {
        memset(&s, 0, sizeof s);
        s.c = c;
        s.total = per;
        while (s.sent < per && s.sent < o->window)
            soak_send(&s);
        if (pump(c, now_s() + o->timeout + (double)per / 1000.0, soak_cb, &s) != 1)
            die("soak window %ld: %ld of %ld done", w, s.done, per);
        if (s.sleeping != 0)
            send_cancel(c, s.sleeping);
        cancelled += s.cancelled;
        stopped += s.stopped;
        qsort(s.lat, s.nlat, sizeof s.lat[0], cmp_double);
        char key[32], val[160];
        snprintf(key, sizeof key, "soak_window%02ld", w);
        snprintf(val, sizeof val, "%.0f s, %ld requests: rss %ld kB, fds %ld, p99 %.0f us",
                 now_s() - t0, w * per + cancelled, vmrss_kb(c->pid), fd_count(c->pid),
                 pct(s.lat, s.nlat, 99) * 1e6);
        out(key, "%s", val);
        if (w == 2) {
            out("soak_rss_warm_kb", "%ld", vmrss_kb(c->pid));
            out("soak_fds_warm", "%ld", fd_count(c->pid));
            out("soak_p99_warm_us", "%.0f", pct(s.lat, s.nlat, 99) * 1e6);
        }
    }
    out("soak_requests", "%ld", per * windows + cancelled);
    out("soak_cancelled", "%ld", cancelled);
    out("soak_stopped_logs", "%ld", stopped);
    out("soak_rss_end_kb", "%ld", vmrss_kb(c->pid));
    out("soak_fds_end", "%ld", fd_count(c->pid));
    out("soak_p99_end_us", "%.0f", pct(s.lat, s.nlat, 99) * 1e6);
    out("soak_seconds", "%.1f", now_s() - t0);
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
    fputs("usage: driver [--scenario echo|latency|cancel|inflight|spin|soak] [--count N]\n"
          "              [--window N] [--warmup N] [--repeat N] [--spin-seconds S] [--ping-timeout S]\n"
          "              [--timeout S] -- CMD ARGS...\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *scenario = "echo";
    opts_t o = {.count = -1, .window = 64, .warmup = -1, .repeat = 3, .spin_s = 2.0, .ping_timeout = 1.0,
                .timeout = 10.0};
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if (i + 1 >= argc)
            usage();
        if (!strcmp(a, "--scenario"))
            scenario = argv[++i];
        else if (!strcmp(a, "--count"))
            o.count = atol(argv[++i]);
        else if (!strcmp(a, "--window"))
            o.window = atol(argv[++i]);
        else if (!strcmp(a, "--repeat"))
            o.repeat = atol(argv[++i]);
        else if (!strcmp(a, "--warmup"))
            o.warmup = atol(argv[++i]);
        else if (!strcmp(a, "--spin-seconds"))
            o.spin_s = atof(argv[++i]);
        else if (!strcmp(a, "--ping-timeout"))
            o.ping_timeout = atof(argv[++i]);
        else if (!strcmp(a, "--timeout"))
            o.timeout = atof(argv[++i]);
        else
            usage();
    }
    if (i >= argc - 1)
        usage();
    char **cmd = argv + i + 1;

    void (*fn)(conn_t *, const opts_t *) = NULL;
    long def_count = 0, def_warmup = 0;
    if (!strcmp(scenario, "echo"))
        fn = sc_echo, def_count = 100000, def_warmup = 2000;
    else if (!strcmp(scenario, "latency"))
        fn = sc_latency, def_count = 10000, def_warmup = 1000;
    else if (!strcmp(scenario, "cancel"))
        fn = sc_cancel, def_count = 2000, def_warmup = 200;
    else if (!strcmp(scenario, "inflight"))
        fn = sc_inflight, def_count = 10000, def_warmup = 100;
    else if (!strcmp(scenario, "spin"))
        fn = sc_spin;
    else if (!strcmp(scenario, "soak"))
        fn = sc_soak, def_count = 10000000;
    else
        usage();
    if (o.count < 0)
        o.count = def_count;
    if (o.warmup < 0)
        o.warmup = def_warmup;

    signal(SIGPIPE, SIG_IGN);
    conn_t c;
    spawn(&c, cmd);
    double t0 = now_s();
    handshake(&c, 30.0);
    out("scenario", "%s", scenario);
    out("handshake_ms", "%.2f", (now_s() - t0) * 1e3);
    fn(&c, &o);
    out("server_lines", "%" PRIu64, c.lines_in);
    finish(&c, 3.0);
    return 0;
}
