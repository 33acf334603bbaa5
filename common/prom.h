/*
 * prom.h - helpers for writing the Prometheus text exposition format (version 0.0.4)
 * that both binaries serve at GET /metrics: a printf-style line writer and the series every
 * mcpq process exports about itself (mcpq_build_info, process_start_time_seconds).
 *
 * Pure functions over a caller-owned buffer; thread-safe.
 */
#ifndef MCPQ_PROMTEXT_H
#define MCPQ_PROMTEXT_H

#include "util.h"

#include <stdatomic.h>
#include <stdint.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Appends one formatted line (at most 1 KiB; longer ones are cut). 0 or what
 * util_buf_append returned. */
int prom_line(util_buf_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends the HELP and TYPE lines of a metric. */
int prom_head(util_buf_t *out, const char *name, const char *type, const char *help);

/* A histogram series kept as lock-free counters: counts[i] (i < nb) holds observations at or
 * below bounds[i] and above bounds[i-1]; counts[nb] those above the largest bound. */
void prom_observe(const double *bounds, size_t nb, atomic_ullong *counts, atomic_ullong *sum_us,
                  int64_t duration_ms);

/* Appends the _bucket (cumulative, le="+Inf" last), _sum and _count lines of one series of
 * histogram name with one label (label="value"); nothing when it has no observation. */
int prom_histogram(util_buf_t *out, const char *name, const char *label, const char *value,
                   const double *bounds, size_t nb, const atomic_ullong *counts,
                   const atomic_ullong *sum_us);

/* Appends mcpq_build_info{version,binary} 1 and process_start_time_seconds (start_ms: Unix
 * epoch milliseconds when the process started). */
int prom_process(util_buf_t *out, const char *binary, int64_t start_ms);

#endif
