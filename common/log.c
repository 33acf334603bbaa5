#include "log.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Set once by log_init() before threads start; read-only afterwards. */
static const char *log_component = "mcpq";
static log_level_t log_min = LOG_INFO;

/* Set once at start-up (log_trace_resolver_set) before threads start; read-only afterwards. */
static log_trace_fn log_resolver;
static void *log_resolver_arg;

/* The trace of the call this thread is handling. */
static _Thread_local log_ctx_t log_tls;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_init(const char *component, const char *min_level)
{
    log_component = component;
    if (min_level) {
        for (int i = 0; i < 4; i++)
            if (strcmp(min_level, level_names[i]) == 0)
                log_min = (log_level_t)i;
    }
}

void log_ctx_set(const char *trace_id, const char *span_id)
{
    snprintf(log_tls.trace_id, sizeof(log_tls.trace_id), "%s", trace_id ? trace_id : "");
    snprintf(log_tls.span_id, sizeof(log_tls.span_id), "%s", trace_id && span_id ? span_id : "");
}

int log_request_id_valid(const char *id)
{
    size_t n = 0;
    for (; id && id[n]; n++)
        if ((unsigned char)id[n] < 0x21 || (unsigned char)id[n] > 0x7e || n >= LOG_REQUEST_ID_MAX)
            return 0;
    return n > 0;
}

void log_ctx_set_request(const char *request_id)
{
    snprintf(log_tls.request_id, sizeof(log_tls.request_id), "%s", request_id ? request_id : "");
}

void log_ctx_clear(void)
{
    log_ctx_set(NULL, NULL);
    log_ctx_set_request(NULL);
}

void log_ctx_push(const char *trace_id, const char *span_id, log_ctx_t *saved)
{
    *saved = log_tls;
    log_ctx_clear();
    log_ctx_set(trace_id, span_id);
}

void log_ctx_restore(const log_ctx_t *saved)
{
    log_tls = *saved;
}

void log_ctx_get(log_ctx_t *out)
{
    *out = log_tls;
}

void log_trace_resolver_set(log_trace_fn fn, void *arg)
{
    log_resolver = fn;
    log_resolver_arg = arg;
}

/* Adds the trace and request id of the line: the thread's context, else the resolver's for the
 * job it names; never over a trace_id or request_id the caller gave. */
static void add_trace(cJSON *o)
{
    log_ctx_t found;
    const log_ctx_t *c = log_tls.trace_id[0] || log_tls.request_id[0] ? &log_tls : NULL;
    if (!c && log_resolver) {
        const char *job = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "job_id"));
        if (!job)
            job = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "task_id"));
        memset(&found, 0, sizeof(found));
        if (job && log_resolver(job, &found, log_resolver_arg) &&
            (found.trace_id[0] || found.request_id[0]))
            c = &found;
    }
    if (!c)
        return;
    if (c->request_id[0] && !cJSON_GetObjectItemCaseSensitive(o, "request_id"))
        cJSON_AddStringToObject(o, "request_id", c->request_id);
    if (!c->trace_id[0] || cJSON_GetObjectItemCaseSensitive(o, "trace_id"))
        return;
    cJSON_AddStringToObject(o, "trace_id", c->trace_id);
    if (c->span_id[0] && !cJSON_GetObjectItemCaseSensitive(o, "span_id"))
        cJSON_AddStringToObject(o, "span_id", c->span_id);
}

/* A line's object with its fixed head: ts, level, component, msg. NULL out of memory. */
static cJSON *line_new(log_level_t level, const char *msg)
{
    struct timeval tv;
    struct tm tm;
    char ts[64];

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));

    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "ts", ts);
    cJSON_AddStringToObject(o, "level", level_names[level]);
    cJSON_AddStringToObject(o, "component", log_component);
    cJSON_AddStringToObject(o, "msg", msg);
    return o;
}

/* Adds the context's trace, writes o as one line and frees it. */
static void line_write(cJSON *o)
{
    add_trace(o);
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!line)
        return;
    size_t n = strlen(line);
    /* One write per line so concurrent threads never interleave within a line. */
    char *buf = malloc(n + 2);
    if (buf) {
        memcpy(buf, line, n);
        buf[n] = '\n';
        ssize_t w = write(STDERR_FILENO, buf, n + 1);
        (void)w;
        free(buf);
    }
    cJSON_free(line);
}

static void log_write(log_level_t level, const char *msg, va_list ap)
{
    cJSON *o = line_new(level, msg);
    if (!o)
        return;
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k)
            break;
        const char *v = va_arg(ap, const char *);
        if (v)
            cJSON_AddStringToObject(o, k, v);
    }
    line_write(o);
}

void log_event_json(log_level_t level, const char *msg, cJSON *fields)
{
    cJSON *o = level >= log_min ? line_new(level, msg) : NULL;
    if (o) {
        while (fields && fields->child) {
            cJSON *item = cJSON_DetachItemViaPointer(fields, fields->child);
            cJSON_AddItemToObject(o, item->string, item); /* copies the key, then frees it */
        }
        line_write(o);
    }
    cJSON_Delete(fields);
}

void log_event(log_level_t level, const char *msg, ...)
{
    if (level < log_min)
        return;
    va_list ap;
    va_start(ap, msg);
    log_write(level, msg, ap);
    va_end(ap);
}

static void log_plain(log_level_t level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_write(level, msg, ap);
    va_end(ap);
}

void log_msgf(log_level_t level, const char *fmt, ...)
{
    if (level < log_min)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_plain(level, msg, (char *)NULL);
}
