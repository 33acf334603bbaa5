#include "prom.h"
#include "version.h"

#include <stdarg.h>
#include <stdio.h>

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

int prom_process(util_buf_t *out, const char *binary, int64_t start_ms)
{
    prom_head(out, "mcpq_build_info", "gauge",
              "Always 1; the labels say which mcpq build and binary this is.");
    prom_line(out, "mcpq_build_info{version=\"%s\",binary=\"%s\"} 1\n", version_get(), binary);
    prom_head(out, "process_start_time_seconds", "gauge",
              "Start time of the process since the Unix epoch in seconds.");
    return prom_line(out, "process_start_time_seconds %.3f\n", (double)start_ms / 1000.0);
}

void prom_observe(const double *bounds, size_t nb, atomic_ullong *counts, atomic_ullong *sum_us,
                  int64_t duration_ms)
{
    if (duration_ms < 0)
        duration_ms = 0;
    double s = (double)duration_ms / 1000.0;
    size_t b = 0;
    while (b < nb && s > bounds[b])
        b++;
    atomic_fetch_add(&counts[b], 1);
    atomic_fetch_add(sum_us, (unsigned long long)duration_ms * 1000ull);
}

int prom_histogram(util_buf_t *out, const char *name, const char *label, const char *value,
                   const double *bounds, size_t nb, const atomic_ullong *counts,
                   const atomic_ullong *sum_us)
{
    unsigned long long total = 0;
    for (size_t b = 0; b <= nb; b++)
        total += atomic_load(&counts[b]);
    if (!total)
        return 0;
    unsigned long long run = 0;
    for (size_t b = 0; b < nb; b++) {
        run += atomic_load(&counts[b]);
        prom_line(out, "%s_bucket{%s=\"%s\",le=\"%g\"} %llu\n", name, label, value, bounds[b], run);
    }
    prom_line(out, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n", name, label, value, total);
    prom_line(out, "%s_sum{%s=\"%s\"} %.6f\n", name, label, value,
              (double)atomic_load(sum_us) / 1e6);
    return prom_line(out, "%s_count{%s=\"%s\"} %llu\n", name, label, value, total);
}
