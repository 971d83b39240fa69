/* The benchmark's ceiling: the least an MCP stdio server can do.
 *
 * Reads newline-delimited JSON-RPC on stdin and answers every request (a line
 * with "method" and "id") with one canned result carrying the request's id,
 * whatever the method (initialize and tools/call alike).  Notifications are
 * ignored, except notifications/cancelled, which is answered with a canned
 * "stopped" notifications/message line so that the cancel figures have a
 * floor too.  No JSON parsing beyond finding the top-level "id" token; all
 * replies to one read(2) go out in one write(2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>

static char *ob;
static size_t olen, ocap;

static void put(const char *s, size_t n)
{
    if (olen + n > ocap) {
        while (olen + n > ocap)
            ocap = ocap ? ocap * 2 : 65536;
        ob = realloc(ob, ocap);
        if (!ob)
            _exit(1);
    }
    memcpy(ob + olen, s, n);
    olen += n;
}

static void flush(void)
{
    size_t off = 0;
    while (off < olen) {
        ssize_t n = write(1, ob + off, olen - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            _exit(0);
        }
        off += (size_t)n;
    }
    olen = 0;
}

#include "find_id.h"

    return NULL;
}

static const char R1[] = "{\"jsonrpc\":\"2.0\",\"id\":";
static const char R2[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n";
static const char STOPPED[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":"
    "{\"level\":\"info\",\"logger\":\"bench\",\"data\":\"stopped\"}}\n";

static void line(const char *s, const char *end)
{
    if (!memmem(s, (size_t)(end - s), "\"method\"", 8))
        return;
    size_t n;
    const char *id = find_id(s, end, &n);
    if (id) {
        put(R1, sizeof R1 - 1);
        put(id, n);
        put(R2, sizeof R2 - 1);
    } else if (memmem(s, (size_t)(end - s), "notifications/cancelled", 23)) {
        put(STOPPED, sizeof STOPPED - 1);
    }
}

int main(void)
{
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return 1;
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf)
                return 1;
        }
        ssize_t n = read(0, buf + len, cap - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        char *s = buf, *end = buf + len, *nl;
        while ((nl = memchr(s, '\n', (size_t)(end - s))) != NULL) {
            line(s, nl);
            s = nl + 1;
        }
        len = (size_t)(end - s);
        memmove(buf, s, len);
        flush();
    }
    flush();
    return 0;
}
