#include "prom.h"
#include "err.h"
#include "version.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The bucket bounds in µs, the same table as PROM_BUCKETS_LE. */
static const int64_t bounds_us[PROM_NBUCKET] = {
    100,    250,    500,    1000,    2500,    5000,    10000,    25000,    50000,
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000};
static const char *const bounds_le[PROM_NBUCKET] = {PROM_BUCKETS_LE};

int prom_line(util_buf_t *out, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return 0;
    return util_buf_append(out, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

int prom_head(util_buf_t *out, const char *name, const char *type, const char *help)
{
    int rc = prom_line(out, "# HELP %s %s\n", name, help);
    return rc < 0 ? rc : prom_line(out, "# TYPE %s %s\n", name, type);
}

void prom_label_escape(const char *in, char *out, size_t size)
{
    size_t o = 0;
    if (!size)
        return;
    for (; in && *in && o + 3 <= size; in++) { /* room for an escape pair and the NUL */
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

void prom_observe_us(prom_hist_t *h, int64_t us)
{
    if (us < 0)
        us = 0;
    size_t b = 0;
    while (b < PROM_NBUCKET && us > bounds_us[b])
        b++;
    atomic_fetch_add(&h->counts[b], 1);
    atomic_fetch_add(&h->sum_us, (unsigned long long)us);
}

unsigned long long prom_hist_count(const prom_hist_t *h)
{
    unsigned long long total = 0;
    for (size_t b = 0; b <= PROM_NBUCKET; b++)
        total += atomic_load(&h->counts[b]);
    return total;
}

int prom_histogram(util_buf_t *out, const char *name, const char *labels, const prom_hist_t *h)
{
    unsigned long long counts[PROM_NBUCKET + 1], total = 0;
    for (size_t b = 0; b <= PROM_NBUCKET; b++) /* one snapshot: buckets, +Inf and count agree */
        total += counts[b] = atomic_load(&h->counts[b]);
    const char *sep = labels && *labels ? "," : "";
    labels = labels ? labels : "";
    unsigned long long run = 0;
    for (size_t b = 0; b < PROM_NBUCKET; b++) {
        run += counts[b];
        prom_line(out, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep, bounds_le[b], run);
    }
    prom_line(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, total);
    unsigned long long sum = atomic_load(&h->sum_us);
    const char *lb = *labels ? "{" : "", *rb = *labels ? "}" : "";
    prom_line(out, "%s_sum%s%s%s %llu.%06llu\n", name, lb, labels, rb, sum / 1000000ull,
              sum % 1000000ull);
    return prom_line(out, "%s_count%s%s%s %llu\n", name, lb, labels, rb, total);
}

int prom_histograms(util_buf_t *out, const char *name, const char *help, const char *label,
                    const char *const *values, const prom_hist_t *hists, size_t n, int skip_empty)
{
    int rc = prom_head(out, name, "histogram", help);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        char labels[256];
        snprintf(labels, sizeof(labels), "%s=\"%s\"", label, values[i]);
        if (!skip_empty || prom_hist_count(&hists[i]))
            rc = prom_histogram(out, name, labels, &hists[i]);
    }
    return rc;
}

int prom_proc_stat(prom_proc_t *p)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return MCPQ_EIO;
    char line[1024];
    char *ok = fgets(line, sizeof(line), f);
    fclose(f);
    char *s = ok ? strrchr(line, ')') : NULL; /* comm may hold spaces and parentheses */
    unsigned long utime, stime, vsize;
    long rss;
    /* After ") ": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
     * utime(14) stime cutime cstime priority nice num_threads itrealvalue starttime vsize(23)
     * rss(24): proc(5). */
    if (!s || sscanf(s + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d "
                     "%*d %*u %lu %ld",
                     &utime, &stime, &vsize, &rss) != 4)
        return MCPQ_EIO;
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    p->cpu_seconds = (double)(utime + stime) / (double)(tick > 0 ? tick : 100);
    p->vsize = vsize;
    p->rss = (unsigned long long)(rss > 0 ? rss : 0) * (unsigned long long)(page > 0 ? page : 4096);
    return 0;
}

int prom_proc_read(prom_proc_t *p)
{
    memset(p, 0, sizeof(*p));
    if (prom_proc_stat(p) < 0)
        return MCPQ_EIO;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return MCPQ_EIO;
    long long n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    p->open_fds = n - 1; /* not the descriptor of the listing itself */
    struct rlimit rl;
    p->max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                     ? (long long)rl.rlim_cur
                     : -1;
    return 0;
}

/* The process_* series of prom_proc_read(), left out when /proc is not readable. */
static int render_proc(util_buf_t *out)
{
    prom_proc_t p;
    if (prom_proc_read(&p) < 0)
        return 0;
    prom_head(out, "process_cpu_seconds_total", "counter",
              "Total user and system CPU time spent in seconds.");
    prom_line(out, "process_cpu_seconds_total %.2f\n", p.cpu_seconds);
    prom_head(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    prom_line(out, "process_resident_memory_bytes %llu\n", p.rss);
    prom_head(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    prom_line(out, "process_virtual_memory_bytes %llu\n", p.vsize);
    prom_head(out, "process_open_fds", "gauge", "Number of open file descriptors.");
    prom_line(out, "process_open_fds %lld\n", p.open_fds);
    if (p.max_fds < 0)
        return 0;
    prom_head(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
    return prom_line(out, "process_max_fds %lld\n", p.max_fds);
}

int prom_process(util_buf_t *out, const char *binary, int64_t start_ms, const char *mhd_version)
{
    char rk[64], hr[64], ssl[128], mhd[64];
    prom_label_escape(version_library("librdkafka"), rk, sizeof(rk));
    prom_label_escape(version_library("hiredis"), hr, sizeof(hr));
    prom_label_escape(version_library("OpenSSL"), ssl, sizeof(ssl));
    prom_label_escape(mhd_version ? mhd_version : "", mhd, sizeof(mhd));
    prom_head(out, "mcpq_build_info", "gauge",
              "Always 1; the labels say which mcpq build and binary this is, and the versions "
              "of the libraries it runs with.");
    prom_line(out,
              "mcpq_build_info{version=\"%s\",binary=\"%s\",librdkafka=\"%s\",libmicrohttpd=\"%s\","
              "hiredis=\"%s\",openssl=\"%s\"} 1\n",
              version_get(), binary, rk, mhd, hr, ssl);
    prom_head(out, "process_start_time_seconds", "gauge",
              "Start time of the process since the Unix epoch in seconds.");
    prom_line(out, "process_start_time_seconds %.3f\n", (double)start_ms / 1000.0);
    return render_proc(out);
}
