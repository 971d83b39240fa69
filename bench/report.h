/* What the two load drivers share: timing, results printed as "key value"
 * lines, latency distributions, and the server's RSS and fds. Each driver
 * defines die(). */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/types.h>
#include <time.h>

static void die(const char *fmt, ...);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p)
        die("out of memory");
    return p;
}

/* VmRSS of a process, from /proc/PID/status; -1 if it is gone */
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

/* open descriptors of a process; -1 if it is gone */
static long fd_count(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    long n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 2;
}

static void out(const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", key);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    va_end(ap);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* nearest-rank percentile of a sorted array */
static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static void report_dist(const char *prefix, double *v, size_t n)
{
    char key[128];
    const char *dump = getenv("DRIVER_DUMP");
    if (dump && *dump) {
        char path[512];
        snprintf(path, sizeof path, "%s.%s", dump, prefix);
        FILE *f = fopen(path, "w");
        if (f) {
            for (size_t i = 0; i < n; i++)
                fprintf(f, "%.1f\n", v[i] * 1e6);
            fclose(f);
        }
    }
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    snprintf(key, sizeof key, "%s_n", prefix);
    out(key, "%zu", n);
    if (n == 0)
        return;
    static const struct {
        const char *name;
        double p;
    } ps[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p999", 99.9}};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        snprintf(key, sizeof key, "%s_%s_us", prefix, ps[i].name);
        out(key, "%.1f", pct(v, n, ps[i].p) * 1e6);
    }
    snprintf(key, sizeof key, "%s_mean_us", prefix);
    out(key, "%.1f", sum / (double)n * 1e6);
    snprintf(key, sizeof key, "%s_max_us", prefix);
    out(key, "%.1f", v[n - 1] * 1e6);
}

#endif
