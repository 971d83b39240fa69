/* HTTP load driver for the luamcp benchmark (bench/run.sh).
 *
 *   http-driver --addr HOST:PORT [--scenario NAME] [options] -- CMD ARGS...
 *
 * Spawns CMD (stdin from /dev/null, stdout onto stderr), waits until
 * HOST:PORT accepts a connection, does the MCP handshake over Streamable HTTP
 * (POST /mcp initialize with protocolVersion 2025-06-18, keeping the
 * Mcp-Session-Id it returns, if any; then notifications/initialized, which must
 * get 202), runs one scenario over keep-alive connections, prints its results
 * on stdout, one "key value" per line, then stops the server with SIGTERM.
 * Every later POST carries Content-Type: application/json, Accept:
 * application/json, text/event-stream, MCP-Protocol-Version: 2025-06-18 and the
 * session id.  With --stateless, no handshake: every POST is a 2026-07-28
 * request on its own (MCP-Protocol-Version: 2026-07-28, Mcp-Method, Mcp-Name,
 * the version and client capabilities in params._meta), as a load balancer
 * may send each one to another instance (bench/run-cluster.sh).
 *
 * Scenarios (see bench/README.md for what each figure means):
 *   echo     tools/call echo over --conns connections with --depth requests in
 *            flight on each (depth > 1 is HTTP/1.1 pipelining), a warm-up
 *            then --rounds rounds of --seconds each    -> http_echo_calls_per_s
 *   latency  sequential tools/call echo on one
 *            connection                                -> http_lat_p50_us, http_lat_p99_us
 *   soak     the echo load for --seconds, sampling the server's VmRSS every
 *            --sample-ms                               -> soak_rss_*_kb, soak_rss_growth_kb
 *
 * Plain POSIX + epoll, one thread, non-blocking sockets with TCP_NODELAY.
 * Responses are framed by Content-Length or chunked transfer encoding (the
 * SDK's text/event-stream answers are chunked); a response is matched to its
 * request by the integer after the first "id": in its body (an SSE body holds
 * the JSON-RPC message on its data: line).  Answers on one connection come in
 * request order, so each connection keeps the ids it is waiting for in a ring.
 * Times come from CLOCK_MONOTONIC.  DRIVER_DUMP=PREFIX writes the latency
 * samples (in order) to PREFIX.http_lat and the RSS samples to PREFIX.soak_rss.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- utils */

#include "report.h"

static pid_t server_pid = -1;

static void stop_server(void);

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("http-driver: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    stop_server();
    exit(1);
}

static long vmrss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* CPU seconds (user + system) of a process, from /proc/PID/stat; of this
 * process and its threads for pid 0 */
static double cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/self/stat");
    else
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return NAN;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ------------------------------------------------------- the server */

static void spawn(char **argv)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(2, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "http-driver: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    server_pid = pid;
}

static void stop_server(void)
{
    if (server_pid <= 0)
        return;
    pid_t pid = server_pid;
    server_pid = -1;
    int st;
    kill(pid, SIGTERM);
    for (int stage = 0; stage < 2; stage++) {
        double end = now_s() + 3.0;
        while (now_s() < end) {
            if (waitpid(pid, &st, WNOHANG) == pid)
                return;
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (stage == 0) {
            fprintf(stderr, "http-driver: server did not exit on SIGTERM, sending SIGKILL\n");
            kill(pid, SIGKILL);
        }
    }
}

static struct sockaddr_in addr;
static char host_hdr[300];

static int try_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ----------------------------------------------------------- connection */

typedef struct {
    int fd;
    char *ob; /* pending output */
    size_t olen, opos, ocap;
    char *ib; /* input */
    size_t ilen, ipos, icap;
    char *body; /* the last response's body, de-chunked */
    size_t blen, bcap;
    int64_t *want; /* ring of the ids awaited, in request order */
    size_t wcap, whead, wn;
    int want_out; /* EPOLLOUT registered */
} hc_t;

typedef struct {
    int status;
    const char *body;
    size_t blen;
    char session[128];
} resp_t;

static int ep = -1;
static hc_t *conns;
static int nconns;
static char session_id[128];
static int64_t next_id = 1;
static int after_init; /* send MCP-Protocol-Version */
static int stateless;  /* --stateless: 2026-07-28 requests, no session */
static uint64_t bytes_in, bytes_out;

static hc_t *open_conn(hc_t *c, size_t ring)
{
    memset(c, 0, sizeof *c);
    c->fd = try_connect();
    if (c->fd < 0)
        die("connect %s: %s", host_hdr, strerror(errno));
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    c->wcap = ring;
    c->want = xrealloc(NULL, sizeof(int64_t) * ring);
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e) < 0)
        die("epoll_ctl: %s", strerror(errno));
    return c;
}

static void put(hc_t *c, const char *s, size_t n)
{
    if (c->opos == c->olen)
        c->opos = c->olen = 0;
    if (c->olen + n > c->ocap) {
        while (c->olen + n > c->ocap)
            c->ocap = c->ocap ? c->ocap * 2 : 65536;
        c->ob = xrealloc(c->ob, c->ocap);
    }
    memcpy(c->ob + c->olen, s, n);
    c->olen += n;
}

/* queue a POST /mcp carrying body (the id awaited: -1 for a notification) */
static void post(hc_t *c, const char *body, size_t blen, int64_t id)
{
    char head[768];
    const char *version = stateless    ? "MCP-Protocol-Version: 2026-07-28\r\n"
                                         "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n"
                          : after_init ? "MCP-Protocol-Version: 2025-06-18\r\n"
                                       : "";
    int n = snprintf(head, sizeof head,
                     "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n%s%s%s%s"
                     "Content-Length: %zu\r\n\r\n",
                     host_hdr, version,
                     session_id[0] ? "Mcp-Session-Id: " : "", session_id, session_id[0] ? "\r\n" : "", blen);
    put(c, head, (size_t)n);
    put(c, body, blen);
    if (c->wn == c->wcap)
        die("more requests in flight on one connection than its ring holds");
    c->want[(c->whead + c->wn) % c->wcap] = id;
    c->wn++;
}

static int64_t post_echo(hc_t *c)
{
    char body[384];
    int64_t id = next_id++;
    int n = snprintf(body, sizeof body,
                     "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}%s}}",
                     id, stateless ? ",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                                     "\"io.modelcontextprotocol/clientCapabilities\":{}}" : "");
    post(c, body, (size_t)n, id);
    return id;
}

static void flush_conn(hc_t *c)
{
    while (c->opos < c->olen) {
        ssize_t n = write(c->fd, c->ob + c->opos, c->olen - c->opos);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            die("write: %s", strerror(errno));
        }
        bytes_out += (uint64_t)n;
        c->opos += (size_t)n;
    }
    int want = c->opos < c->olen;
    if (want != c->want_out) {
        struct epoll_event e = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
        c->want_out = want;
    }
}

static void body_add(hc_t *c, const char *s, size_t n)
{
    if (c->blen + n + 1 > c->bcap) {
        while (c->blen + n + 1 > c->bcap)
            c->bcap = c->bcap ? c->bcap * 2 : 4096;
        c->body = xrealloc(c->body, c->bcap);
    }
    memcpy(c->body + c->blen, s, n);
    c->blen += n;
    c->body[c->blen] = '\0';
}

/* Parse one complete response at c->ipos: 1 (r filled, consumed), 0 (need
 * more input).  Dies on what it cannot frame. */
static int parse_resp(hc_t *c, resp_t *r)
{
    char *s = c->ib + c->ipos, *end = c->ib + c->ilen;
    char *hend = memmem(s, (size_t)(end - s), "\r\n\r\n", 4);
    if (!hend)
        return 0;
    if (end - s < 12 || strncmp(s, "HTTP/1.", 7) != 0)
        die("not an HTTP response: %.40s", s);
    r->status = atoi(s + 9);
    r->session[0] = '\0';
    long clen = -1;
    int chunked = 0;
    for (char *l = memchr(s, '\n', (size_t)(hend - s)); l && l < hend;
         l = memchr(l + 1, '\n', (size_t)(hend - l))) {
        char *h = l + 1;
        if (strncasecmp(h, "content-length:", 15) == 0)
            clen = strtol(h + 15, NULL, 10);
        else if (strncasecmp(h, "transfer-encoding:", 18) == 0) {
            char *e = memchr(h, '\r', (size_t)(hend + 2 - h));
            if (e && memmem(h, (size_t)(e - h), "chunked", 7))
                chunked = 1;
        } else if (strncasecmp(h, "mcp-session-id:", 15) == 0) {
            char *v = h + 15;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r\n");
            if (n >= sizeof r->session)
                die("session id too long");
            memcpy(r->session, v, n);
            r->session[n] = '\0';
        }
    }
    char *b = hend + 4;
    c->blen = 0;
    if (chunked) {
        char *p = b;
        for (;;) {
            char *crlf = memmem(p, (size_t)(end - p), "\r\n", 2);
            if (!crlf)
                return 0;
            size_t n = strtoul(p, NULL, 16);
            p = crlf + 2;
            if (n == 0) {
                /* no trailers expected: the last chunk is followed by CRLF */
                char *t = memmem(p, (size_t)(end - p), "\r\n", 2);
                if (!t)
                    return 0;
                p = t + 2;
                break;
            }
            if ((size_t)(end - p) < n + 2)
                return 0;
            body_add(c, p, n);
            p += n + 2;
        }
        c->ipos = (size_t)(p - c->ib);
    } else {
        if (clen < 0) {
            if (r->status == 204 || r->status == 304)
                clen = 0;
            else
                die("a response with neither Content-Length nor chunked encoding (status %d)", r->status);
        }
        if (end - b < clen)
            return 0;
        body_add(c, b, (size_t)clen);
        c->ipos = (size_t)(b + clen - c->ib);
    }
    if (c->ipos == c->ilen)
        c->ipos = c->ilen = 0;
    r->body = c->body;
    r->blen = c->blen;
    return 1;
}

/* The integer after the first "id": in s, or -1. */
static int64_t body_id(const char *p)
{
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

static int is_error(const resp_t *r)
{
    return r->status != 200 || strstr(r->body, "\"error\"") != NULL ||
           strstr(r->body, "\"isError\":true") != NULL;
}

/* Called for every response; returns nonzero to make pump() return. */
typedef int (*resp_cb)(void *ud, hc_t *c, resp_t *r, int64_t want);

static void read_conn(hc_t *c, resp_cb cb, void *ud, int *stop)
{
    if (c->icap - c->ilen < 16384) {
        if (c->ipos > 0) {
            memmove(c->ib, c->ib + c->ipos, c->ilen - c->ipos);
            c->ilen -= c->ipos;
            c->ipos = 0;
        }
        if (c->icap - c->ilen < 16384) {
            c->icap = c->icap ? c->icap * 2 : 65536;
            c->ib = xrealloc(c->ib, c->icap + 1);
        }
    }
    ssize_t n = read(c->fd, c->ib + c->ilen, c->icap - c->ilen);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return;
        die("read: %s", strerror(errno));
    }
    if (n == 0)
        die("the server closed a connection (%zu answers awaited on it)", c->wn);
    bytes_in += (uint64_t)n;
    c->ilen += (size_t)n;
    c->ib[c->ilen] = '\0';
    resp_t r;
    while (parse_resp(c, &r)) {
        if (c->wn == 0)
            die("an answer nobody asked for (status %d)", r.status);
        int64_t want = c->want[c->whead];
        c->whead = (c->whead + 1) % c->wcap;
        c->wn--;
        if (cb(ud, c, &r, want))
            *stop = 1;
    }
}

/* Run the I/O loop until cb returns nonzero (1) or deadline passes (0). */
static int pump(double deadline, resp_cb cb, void *ud)
{
    struct epoll_event evs[64];
    for (int i = 0; i < nconns; i++)
        if (conns[i].opos < conns[i].olen)
            flush_conn(&conns[i]);
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0)
            return 0;
        int k = epoll_wait(ep, evs, 64, (int)ceil(left * 1000.0));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait: %s", strerror(errno));
        }
        int stop = 0;
        for (int i = 0; i < k; i++) {
            hc_t *c = evs[i].data.ptr;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                read_conn(c, cb, ud, &stop);
        }
        for (int i = 0; i < nconns; i++)
            if (conns[i].opos < conns[i].olen)
                flush_conn(&conns[i]);
        if (stop)
            return 1;
    }
}

/* wait for the answer to one request */
typedef struct {
    int64_t id;
    resp_t r;
    int error;
    char body[512];
} one_t;

static int one_cb(void *ud, hc_t *c, resp_t *r, int64_t want)
{
    one_t *o = ud;
    (void)c;
    if (want != o->id)
        return 0;
    o->r = *r;
    o->error = is_error(r) || (want >= 0 && body_id(r->body) != want);
    snprintf(o->body, sizeof o->body, "%s", r->body);
    return 1;
}

static void handshake(double timeout)
{
    hc_t *c = &conns[0];
    one_t o = {.id = next_id++};
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"method\":\"initialize\",\"params\":"
                     "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                     "\"clientInfo\":{\"name\":\"luamcp-bench-http-driver\",\"version\":\"1\"}}}",
                     o.id);
    post(c, body, (size_t)n, o.id);
    if (pump(now_s() + timeout, one_cb, &o) != 1)
        die("no answer to initialize within %gs", timeout);
    if (o.error)
        die("initialize failed (status %d): %s", o.r.status, o.body);
    snprintf(session_id, sizeof session_id, "%s", o.r.session);
    after_init = 1;
    static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    o.id = -1;
    post(c, note, sizeof note - 1, -1);
    if (pump(now_s() + timeout, one_cb, &o) != 1)
        die("no answer to notifications/initialized within %gs", timeout);
    if (o.r.status != 202)
        die("notifications/initialized: status %d (want 202)", o.r.status);
}

/* ------------------------------------------------------------- options */

typedef struct {
    int conns;            /* connections */
    int depth;            /* requests in flight per connection */
    double seconds;       /* echo: per round; soak: the whole run */
    double warmup_s;      /* echo, soak: load before measuring */
    int rounds;           /* echo */
    long count, warmup;   /* latency */
    double max_seconds;   /* latency: give up measuring after this */
    double sample_s;      /* soak: RSS sampling interval */
    double timeout;       /* per wait */
} opts_t;

/* ------------------------------------------------------------ load */

typedef struct {
    double t_end;
    long done, errors, mismatches;
    long inflight;
    /* soak */
    double next_sample, t0, sample_s;
    long *rss;
    double *rss_t;
    long *rss_calls;
    size_t nrss, crss;
} load_t;

static int load_cb(void *ud, hc_t *c, resp_t *r, int64_t want)
{
    load_t *l = ud;
    l->inflight--;
    if (is_error(r))
        l->errors++;
    else if (body_id(r->body) != want)
        l->mismatches++;
    double t = now_s();
    if (t < l->t_end) {
        l->done++;
        post_echo(c);
        l->inflight++;
    }
    return t >= l->t_end && l->inflight == 0;
}

static void soak_sample(load_t *l, double t)
{
    if (l->nrss == l->crss) {
        l->crss = l->crss ? l->crss * 2 : 256;
        l->rss = xrealloc(l->rss, sizeof(long) * l->crss);
        l->rss_t = xrealloc(l->rss_t, sizeof(double) * l->crss);
        l->rss_calls = xrealloc(l->rss_calls, sizeof(long) * l->crss);
    }
    l->rss[l->nrss] = vmrss_kb(server_pid);
    l->rss_t[l->nrss] = t - l->t0;
    l->rss_calls[l->nrss] = l->done;
    l->nrss++;
}

/* Keep every connection at o->depth requests in flight for `seconds`; then
 * stop sending and drain.  Returns the calls answered within the time. */
static double run_load(const opts_t *o, double seconds, load_t *l)
{
    l->done = l->errors = l->mismatches = l->inflight = 0;
    double t0 = now_s();
    l->t0 = t0;
    l->t_end = t0 + seconds;
    for (int i = 0; i < nconns; i++)
        for (int d = 0; d < o->depth; d++) {
            post_echo(&conns[i]);
            l->inflight++;
        }
    if (l->sample_s > 0) {
        soak_sample(l, t0);
        l->next_sample = t0 + l->sample_s;
        for (;;) {
            double until = l->next_sample < l->t_end ? l->next_sample : l->t_end + o->timeout;
            int r = pump(until, load_cb, l);
            if (r == 1)
                break;
            double t = now_s();
            if (t >= l->t_end + o->timeout)
                die("soak: %ld answers still awaited %gs after the end", l->inflight, o->timeout);
            if (t >= l->next_sample && l->next_sample < l->t_end) {
                soak_sample(l, t);
                l->next_sample += l->sample_s;
            }
        }
        soak_sample(l, now_s());
    } else if (pump(l->t_end + o->timeout, load_cb, l) != 1) {
        die("echo: %ld answers still awaited %gs after the end of the round", l->inflight, o->timeout);
    }
    return (double)l->done / seconds;
}

static void sc_echo(const opts_t *o)
{
    load_t l = {0};
    out("http_echo_conns", "%d", o->conns);
    out("http_echo_depth", "%d", o->depth);
    if (o->warmup_s > 0)
        run_load(o, o->warmup_s, &l);
    double rate[16];
    int rounds = o->rounds < 1 ? 1 : o->rounds > 16 ? 16 : o->rounds;
    long errors = l.errors + l.mismatches, calls = 0;
    double srv0 = cpu_s(server_pid), drv0 = cpu_s(0), w0 = now_s();
    for (int i = 0; i < rounds; i++) {
        rate[i] = run_load(o, o->seconds, &l);
        errors += l.errors + l.mismatches;
        calls += l.done;
        char key[64];
        snprintf(key, sizeof key, "http_echo_round%d_calls_per_s", i + 1);
        out(key, "%.0f", rate[i]);
    }
    double wall = now_s() - w0, srv = cpu_s(server_pid) - srv0, drv = cpu_s(0) - drv0;
    out("http_echo_calls", "%ld", calls);
    /* how busy each side was: a side near 100% is the bottleneck */
    out("http_echo_server_cpu_pct", "%.0f", srv / wall * 100.0);
    out("http_echo_driver_cpu_pct", "%.0f", drv / wall * 100.0);
    if (calls > 0)
        out("http_echo_server_cpu_us_per_call", "%.2f", srv / (double)calls * 1e6);
    out("http_echo_errors", "%ld", errors);
    qsort(rate, (size_t)rounds, sizeof *rate, cmp_double);
    out("http_echo_calls_per_s", "%.0f", rate[rounds / 2]);
    out("http_echo_calls_per_s_min", "%.0f", rate[0]);
    out("http_echo_calls_per_s_max", "%.0f", rate[rounds - 1]);
}

static void sc_latency(const opts_t *o)
{
    hc_t *c = &conns[0];
    double t_stop = 0;
    for (long i = 0; i < o->warmup; i++) {
        one_t w = {.id = post_echo(c)};
        if (pump(now_s() + o->timeout, one_cb, &w) != 1)
            die("latency warm-up: no answer");
    }
    double *v = xrealloc(NULL, sizeof(double) * (size_t)(o->count > 0 ? o->count : 1));
    size_t n = 0;
    long errors = 0;
    t_stop = now_s() + o->max_seconds;
    for (long i = 0; i < o->count; i++) {
        double t0 = now_s();
        one_t w = {.id = post_echo(c)};
        int r = pump(t0 + o->timeout, one_cb, &w);
        double t1 = now_s();
        if (r != 1)
            die("latency: no answer within %gs", o->timeout);
        errors += w.error;
        v[n++] = t1 - t0;
        if (t1 > t_stop)
            break;
    }
    out("http_lat_errors", "%ld", errors);
    report_dist("http_lat", v, n);
    free(v);
}

static double mean_l(const long *v, size_t a, size_t b)
{
    double s = 0;
    for (size_t i = a; i < b; i++)
        s += (double)v[i];
    return b > a ? s / (double)(b - a) : NAN;
}

static void sc_soak(const opts_t *o)
{
    load_t l = {0};
    if (o->warmup_s > 0)
        run_load(o, o->warmup_s, &l);
    l.sample_s = o->sample_s;
    double rate = run_load(o, o->seconds, &l);
    out("soak_seconds", "%g", o->seconds);
    out("soak_conns", "%d", o->conns);
    out("soak_depth", "%d", o->depth);
    out("soak_calls", "%ld", l.done);
    out("soak_errors", "%ld", l.errors + l.mismatches);
    out("soak_calls_per_s", "%.0f", rate);
    out("soak_samples", "%zu", l.nrss);
    const char *dump = getenv("DRIVER_DUMP");
    if (dump && *dump) {
        char path[512];
        snprintf(path, sizeof path, "%s.soak_rss", dump);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "# seconds calls vmrss_kb\n");
            for (size_t i = 0; i < l.nrss; i++)
                fprintf(f, "%.2f %ld %ld\n", l.rss_t[i], l.rss_calls[i], l.rss[i]);
            fclose(f);
        }
    }
    if (l.nrss < 4)
        return;
    long lo = l.rss[0], hi = l.rss[0];
    for (size_t i = 0; i < l.nrss; i++) {
        if (l.rss[i] < lo)
            lo = l.rss[i];
        if (l.rss[i] > hi)
            hi = l.rss[i];
    }
    /* first quarter: the allocator settles; growth = mean of the last quarter
       minus mean of the second quarter */
    size_t q = l.nrss / 4;
    double m2 = mean_l(l.rss, q, 2 * q), m4 = mean_l(l.rss, l.nrss - q, l.nrss);
    long calls_between = l.rss_calls[l.nrss - 1 - q / 2] - l.rss_calls[q + q / 2];
    out("soak_rss_start_kb", "%ld", l.rss[0]);
    out("soak_rss_end_kb", "%ld", l.rss[l.nrss - 1]);
    out("soak_rss_min_kb", "%ld", lo);
    out("soak_rss_max_kb", "%ld", hi);
    out("soak_rss_q2_kb", "%.0f", m2);
    out("soak_rss_q4_kb", "%.0f", m4);
    out("soak_rss_growth_kb", "%.0f", m4 - m2);
    if (calls_between > 0)
        out("soak_rss_growth_bytes_per_kcall", "%.2f", (m4 - m2) * 1024.0 / ((double)calls_between / 1000.0));
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
    fputs("usage: http-driver --addr HOST:PORT [--scenario echo|latency|soak] [--conns N] [--depth N]\n"
          "                   [--seconds S] [--warmup-seconds S] [--rounds N] [--count N] [--warmup N]\n"
          "                   [--max-seconds S] [--sample-ms MS] [--timeout S] [--stateless]\n"
          "                   -- CMD ARGS...\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *scenario = "echo", *address = NULL;
    opts_t o = {.conns = 8, .depth = 1, .seconds = -1, .warmup_s = -1, .rounds = 3, .count = 10000,
                .warmup = 1000, .max_seconds = 20, .sample_s = 1.0, .timeout = 10.0};
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if (!strcmp(a, "--stateless")) {
            stateless = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--scenario"))
            scenario = v;
        else if (!strcmp(a, "--addr"))
            address = v;
        else if (!strcmp(a, "--conns"))
            o.conns = atoi(v);
        else if (!strcmp(a, "--depth"))
            o.depth = atoi(v);
        else if (!strcmp(a, "--seconds"))
            o.seconds = atof(v);
        else if (!strcmp(a, "--warmup-seconds"))
            o.warmup_s = atof(v);
        else if (!strcmp(a, "--rounds"))
            o.rounds = atoi(v);
        else if (!strcmp(a, "--count"))
            o.count = atol(v);
        else if (!strcmp(a, "--warmup"))
            o.warmup = atol(v);
        else if (!strcmp(a, "--max-seconds"))
            o.max_seconds = atof(v);
        else if (!strcmp(a, "--sample-ms"))
            o.sample_s = atof(v) / 1000.0;
        else if (!strcmp(a, "--timeout"))
            o.timeout = atof(v);
        else
            usage();
    }
    if (i >= argc - 1 || !address || o.conns < 1 || o.depth < 1 || o.sample_s <= 0)
        usage();
    char **cmd = argv + i + 1;

    char host[256];
    snprintf(host, sizeof host, "%s", address);
    char *colon = strrchr(host, ':');
    if (!colon)
        usage();
    *colon = '\0';
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        die("bad address %s (want IPv4:PORT)", address);
    snprintf(host_hdr, sizeof host_hdr, "%s", address);

    void (*fn)(const opts_t *) = NULL;
    if (!strcmp(scenario, "echo")) {
        fn = sc_echo;
        if (o.seconds < 0)
            o.seconds = 3;
        if (o.warmup_s < 0)
            o.warmup_s = 1;
    } else if (!strcmp(scenario, "latency")) {
        fn = sc_latency;
        o.conns = 1;
        o.depth = 1;
    } else if (!strcmp(scenario, "soak")) {
        fn = sc_soak;
        if (o.seconds < 0)
            o.seconds = 60;
        if (o.warmup_s < 0)
            o.warmup_s = 1;
    } else {
        usage();
    }

    signal(SIGPIPE, SIG_IGN);
    int fd = try_connect();
    if (fd >= 0) {
        close(fd);
        die("%s already accepts connections: another server is listening there", address);
    }
    spawn(cmd);
    double t0 = now_s();
    for (;;) {
        int st;
        if (waitpid(server_pid, &st, WNOHANG) == server_pid) {
            server_pid = -1;
            die("the server exited before listening on %s", address);
        }
        fd = try_connect();
        if (fd >= 0) {
            close(fd);
            break;
        }
        if (now_s() - t0 > 30)
            die("nothing listens on %s after 30 s", address);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    out("listen_ms", "%.1f", (now_s() - t0) * 1e3);

    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1: %s", strerror(errno));
    nconns = o.conns;
    conns = xrealloc(NULL, sizeof(hc_t) * (size_t)nconns);
    size_t ring = (size_t)o.depth + 2;
    for (int k = 0; k < nconns; k++)
        open_conn(&conns[k], ring);

    t0 = now_s();
    if (!stateless)
        handshake(30.0);
    out("scenario", "http-%s", scenario);
    out("handshake_ms", "%.2f", (now_s() - t0) * 1e3);
    out("session", "%s", stateless ? "stateless" : session_id[0] ? "yes" : "none");
    fn(&o);
    out("bytes_in", "%" PRIu64, bytes_in);
    out("bytes_out", "%" PRIu64, bytes_out);
    for (int k = 0; k < nconns; k++)
        close(conns[k].fd);
    stop_server();
    return 0;
}
