/*
 * prom.h - helpers for writing the Prometheus text exposition format (version 0.0.4)
 * that both binaries serve at GET /metrics: a printf-style line writer, label escaping, the
 * one histogram bucket table of mcpq (docs/operations.md "Metrics"), and the series every mcpq
 * process exports about itself (mcpq_build_info, process_*).
 *
 * Histograms: every mcpq histogram has the same buckets, in seconds from 100 µs to 60 s
 * (PROM_BUCKETS_LE), and is observed in microseconds: bucket placement compares integers, so
 * an observation of exactly 100 µs is in le="0.0001" and one of exactly 60 s in le="60". The
 * sum is kept in µs and rendered in seconds with six decimals (µs precision, never rounded).
 *
 * Pure functions over a caller-owned buffer or lock-free atomics; thread-safe.
 */
#ifndef MCPQ_PROMTEXT_H
#define MCPQ_PROMTEXT_H

#include "util.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Appends one formatted line (at most 1 KiB; longer ones are cut). 0 or what
 * util_buf_append returned. */
int prom_line(util_buf_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends the HELP and TYPE lines of a metric. */
int prom_head(util_buf_t *out, const char *name, const char *type, const char *help);

/* Writes in as a label value as the exposition format wants it: \ as \\, " as \", newline as
 * \n; cut (never in the middle of an escape) to fit size with its terminating NUL. */
void prom_label_escape(const char *in, char *out, size_t size);

/* The bucket table: upper bounds in seconds as rendered (le="..."), 100 µs to 60 s. */
#define PROM_NBUCKET 18
#define PROM_BUCKETS_LE                                                                            \
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",     \
        "0.25", "0.5", "1", "2.5", "5", "10", "30", "60"

/* One histogram series as lock-free counters: counts[i] (i < PROM_NBUCKET) holds observations
 * at or below bound i and above bound i-1, counts[PROM_NBUCKET] those above 60 s; sum_us the
 * sum of every observation in µs. All-zero (calloc) is an empty histogram. */
typedef struct prom_hist {
    atomic_ullong counts[PROM_NBUCKET + 1];
    atomic_ullong sum_us;
} prom_hist_t;

/* Observes one duration in microseconds (a negative one counts as 0). */
void prom_observe_us(prom_hist_t *h, int64_t us);

/* Observations so far. */
unsigned long long prom_hist_count(const prom_hist_t *h);

/* Appends the _bucket (cumulative, le="+Inf" last), _sum (seconds) and _count lines of one
 * series of histogram name; labels are the series' label pairs without braces, already
 * escaped (`method="ping"`, `a="x",b="y"`, or "" for none). An empty histogram is written
 * too (all zero), so a rate over it sees its first observation; a caller that leaves out
 * empty series checks prom_hist_count() first. */
int prom_histogram(util_buf_t *out, const char *name, const char *labels, const prom_hist_t *h);

/* Appends one series per value, name{label="values[i]"} of hists[i] (values: label values as
 * they go in the text, already safe), and its HELP and TYPE lines first; with skip_empty the
 * series without an observation are left out. */
int prom_histograms(util_buf_t *out, const char *name, const char *help, const char *label,
                    const char *const *values, const prom_hist_t *hists, size_t n, int skip_empty);

/* What /proc/self says about this process (Linux). */
typedef struct prom_proc {
    double cpu_seconds;       /* user + system CPU time (utime + stime of stat) */
    unsigned long long rss;   /* resident memory, bytes */
    unsigned long long vsize; /* virtual memory, bytes */
    long long open_fds;       /* entries of /proc/self/fd */
    long long max_fds;        /* RLIMIT_NOFILE soft limit (-1: unlimited) */
} prom_proc_t;

/* Fills cpu_seconds, rss and vsize of p from /proc/self/stat alone (cheap: no walk of the
 * descriptors); the other members are left as they are. 0, or MCPQ_EIO. */
int prom_proc_stat(prom_proc_t *p);

/* Fills p from /proc/self/stat, /proc/self/fd and getrlimit. 0, or MCPQ_EIO when /proc is not
 * readable (p zeroed). */
int prom_proc_read(prom_proc_t *p);

/* Appends mcpq_build_info{version,binary,librdkafka,libmicrohttpd,hiredis,openssl} 1 (the
 * library versions the process runs with; mhd_version: MHD_get_version() of the caller, which
 * links libmicrohttpd; common/ does not), process_start_time_seconds (start_ms: Unix epoch ms
 * when the process started) and the process_* series of prom_proc_read(): cpu, resident and
 * virtual memory, open and max file descriptors (left out when /proc is not readable). */
int prom_process(util_buf_t *out, const char *binary, int64_t start_ms, const char *mhd_version);

#endif
