/* The benchmark's HTTP ceiling: the least a Streamable HTTP server can do.
 *
 *   http-ceiling HOST:PORT
 *
 * One thread, epoll, non-blocking sockets, HTTP/1.1 keep-alive and
 * pipelining.  Every POST with a body holding an "id" is answered
 *   200, Content-Type: application/json, Content-Length,
 *   {"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"hello"}]}}
 * whatever the method; a body without an "id" (a notification) gets 202 with
 * an empty body.  No session, no JSON parsing beyond finding the "id" token,
 * no header checks beyond Content-Length.  All answers to one read(2) go out
 * in one write(2).  Exits on SIGTERM/SIGINT.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
    int fd;
    char *ib;
    size_t ilen, icap;
    char *ob;
    size_t olen, opos, ocap;
    int want_out; /* EPOLLOUT registered */
} conn_t;

static void put(conn_t *c, const char *s, size_t n)
{
    if (c->olen + n > c->ocap) {
        while (c->olen + n > c->ocap)
            c->ocap = c->ocap ? c->ocap * 2 : 16384;
        c->ob = realloc(c->ob, c->ocap);
        if (!c->ob)
            _exit(1);
    }
    memcpy(c->ob + c->olen, s, n);
    c->olen += n;
}

#include "find_id.h"

    return NULL;
}

static const char B1[] = "{\"jsonrpc\":\"2.0\",\"id\":";
static const char B2[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}";
static const char ACCEPTED[] = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";

/* Answer every complete request in the input buffer; returns -1 on a
 * request it cannot frame. */
static int serve(conn_t *c)
{
    size_t pos = 0;
    for (;;) {
        char *s = c->ib + pos, *end = c->ib + c->ilen;
        char *hend = memmem(s, (size_t)(end - s), "\r\n\r\n", 4);
        if (!hend)
            break;
        size_t clen = 0;
        for (char *l = memchr(s, '\n', (size_t)(hend - s)); l && l < hend;
             l = memchr(l + 1, '\n', (size_t)(hend - l))) {
            if ((size_t)(hend - l) > 16 && strncasecmp(l + 1, "content-length:", 15) == 0)
                clen = strtoul(l + 16, NULL, 10);
        }
        char *body = hend + 4;
        if ((size_t)(end - body) < clen)
            break;
        size_t n;
        const char *id = find_id(body, body + clen, &n);
        if (id) {
            char head[128];
            int hl = snprintf(head, sizeof head,
                              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                              sizeof B1 - 1 + n + sizeof B2 - 1);
            put(c, head, (size_t)hl);
            put(c, B1, sizeof B1 - 1);
            put(c, id, n);
            put(c, B2, sizeof B2 - 1);
        } else {
            put(c, ACCEPTED, sizeof ACCEPTED - 1);
        }
        pos = (size_t)(body + clen - c->ib);
    }
    if (pos) {
        memmove(c->ib, c->ib + pos, c->ilen - pos);
        c->ilen -= pos;
    }
    if (c->ilen > (1u << 24))
        return -1;
    return 0;
}

static int flush(conn_t *c)
{
    while (c->opos < c->olen) {
        ssize_t n = write(c->fd, c->ob + c->opos, c->olen - c->opos);
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

static void drop(int ep, conn_t *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->ib);
    free(c->ob);
    free(c);
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !strchr(argv[1], ':')) {
        fprintf(stderr, "usage: http-ceiling HOST:PORT\n");
        return 2;
    }
    char host[256];
    snprintf(host, sizeof host, "%s", argv[1]);
    char *colon = strrchr(host, ':');
    *colon = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "http-ceiling: bad address %s\n", argv[1]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction act = {.sa_handler = on_signal};
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);

    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 512) < 0) {
        fprintf(stderr, "http-ceiling: bind/listen %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);

    struct epoll_event evs[256];
    while (!stop) {
        int k = epoll_wait(ep, evs, 256, -1);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        for (int i = 0; i < k; i++) {
            conn_t *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conn_t *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event e = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
                }
                continue;
            }
            int dead = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                for (;;) {
                    if (c->icap - c->ilen < 16384) {
                        c->icap = c->icap ? c->icap * 2 : 65536;
                        c->ib = realloc(c->ib, c->icap);
                        if (!c->ib)
                            return 1;
                    }
                    ssize_t n = read(c->fd, c->ib + c->ilen, c->icap - c->ilen);
                    if (n > 0) {
                        c->ilen += (size_t)n;
                        if (c->ilen < c->icap)
                            break; /* drained */
                        continue;
                    }
                    if (n < 0 && errno == EINTR)
                        continue;
                    if (n < 0 && errno == EAGAIN)
                        break;
                    dead = 1; /* EOF or error */
                    break;
                }
                if (!dead && serve(c) < 0)
                    dead = 1;
            }
            if (!dead && flush(c) < 0)
                dead = 1;
            if (dead) {
                drop(ep, c);
                continue;
            }
            int want = c->olen > c->opos;
            if (want != c->want_out) {
                struct epoll_event e = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
                c->want_out = want;
            }
        }
    }
    return 0;
}
