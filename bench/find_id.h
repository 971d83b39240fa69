/* What the two ceilings share: finding a request's id without parsing. */
#ifndef BENCH_FIND_ID_H
#define BENCH_FIND_ID_H

#include <string.h>

/* the raw token after "id": (number or string), or NULL */
static const char *find_id(const char *p, const char *end, size_t *len)
{
    while ((p = memmem(p, (size_t)(end - p), "\"id\"", 4)) != NULL) {
        p += 4;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p >= end || *p != ':')
            continue;
        p++;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        const char *q = p;
        if (q < end && *q == '"') {
            q++;
            while (q < end && *q != '"') {
                if (*q == '\\')
                    q++;
                q++;
            }
            q++;
        } else {
            while (q < end && *q != ',' && *q != '}' && *q != ' ' && *q != ']')
                q++;
        }
        if (q > end)
            return NULL;
        *len = (size_t)(q - p);
        return p;
    }

#endif
