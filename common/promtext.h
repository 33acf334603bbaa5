/*
 * promtext.h - helpers for writing the Prometheus text exposition format (version 0.0.4)
 * that both binaries serve at GET /metrics: a printf-style line writer and the series every
 * mcpq process exports about itself (mcpq_build_info, process_start_time_seconds).
 *
 * Pure functions over a caller-owned buffer; thread-safe.
 */
#ifndef MCPQ_PROMTEXT_H
#define MCPQ_PROMTEXT_H

#include "util.h"

#include <stdint.h>

#ifndef MCPQ_VERSION
#define MCPQ_VERSION "0.0.0-dev"
#endif

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Appends one formatted line (at most 1 KiB; longer ones are cut). 0 or what
 * util_buf_append returned. */
int prom_line(util_buf_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends the HELP and TYPE lines of a metric. */
int prom_head(util_buf_t *out, const char *name, const char *type, const char *help);

/* Appends mcpq_build_info{version,binary} 1 and process_start_time_seconds (start_ms: Unix
 * epoch milliseconds when the process started). */
int prom_process(util_buf_t *out, const char *binary, int64_t start_ms);

#endif
