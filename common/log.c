#include "log.h"
#include "jprint.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stddef.h>
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

/* A line being written: in a stack buffer, moved to the heap when it outgrows it. Lines are
 * written straight as JSON text, never built as a cJSON tree first: a worker writes two per
 * job, and the tree's allocations were most of their cost (the workers section of
 * docs/benchmarks.md, bench/sec_workers.sh). The text is what cJSON_PrintUnformatted gave for the
 * same members. */
#define LINE_STACK 2048
typedef struct line {
    char *p;
    size_t len, cap;
    int oom;
    /* What the fields gave: the trace tail (line_end) adds no member the caller gave. */
    const char *job_id, *task_id;
    int has_request_id, has_trace_id, has_span_id;
    char stack[LINE_STACK]; /* last: line_head clears only what comes before it */
} line_t;

static void line_put(line_t *l, const char *s, size_t n)
{
    if (l->oom)
        return;
    if (l->len + n + 2 > l->cap) { /* room for the "\n" line_end adds */
        size_t cap = l->cap * 2 > l->len + n + 2 ? l->cap * 2 : l->len + n + 2;
        char *p = l->p == l->stack ? malloc(cap) : realloc(l->p, cap);
        if (!p) {
            l->oom = 1;
            return;
        }
        if (l->p == l->stack)
            memcpy(p, l->stack, l->len);
        l->p = p;
        l->cap = cap;
    }
    memcpy(l->p + l->len, s, n);
    l->len += n;
}

static void line_put_cb(void *ctx, const char *s, size_t n)
{
    line_put(ctx, s, n);
}

/* s as a JSON string, escaped as cJSON escapes (NULL: ""). */
static void line_str(line_t *l, const char *s)
{
    jprint_string(s, line_put_cb, l);
}

/* ,"key": then the value's text from the caller (line_str or printed JSON). */
static void line_key(line_t *l, const char *key)
{
    line_put(l, ",", 1);
    line_str(l, key);
    line_put(l, ":", 1);
    if (strcmp(key, "request_id") == 0)
        l->has_request_id = 1;
    else if (strcmp(key, "trace_id") == 0)
        l->has_trace_id = 1;
    else if (strcmp(key, "span_id") == 0)
        l->has_span_id = 1;
}

/* A string member; the first job_id and task_id are kept for the trace resolver. */
static void line_field(line_t *l, const char *key, const char *value)
{
    line_key(l, key);
    line_str(l, value);
    if (!l->job_id && strcmp(key, "job_id") == 0)
        l->job_id = value;
    else if (!l->task_id && strcmp(key, "task_id") == 0)
        l->task_id = value;
}

/* The line's fixed head: ts, level, component, msg. */
static void line_head(line_t *l, log_level_t level, const char *msg)
{
    /* The date and time to the second, formatted once per second and thread: gmtime_r and
     * snprintf cost more than the rest of a line (docs/benchmarks.md, section "throughput"). */
    static _Thread_local struct {
        time_t sec;
        char text[48]; /* "YYYY-MM-DDTHH:MM:SS" (room for any int, as snprintf counts) */
    } second;
    struct timeval tv;
    char ts[64];

    memset(l, 0, offsetof(line_t, stack));
    l->p = l->stack;
    l->cap = sizeof(l->stack);
    gettimeofday(&tv, NULL);
    if (!second.text[0] || second.sec != tv.tv_sec) {
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        snprintf(second.text, sizeof(second.text), "%04d-%02d-%02dT%02d:%02d:%02d",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        second.sec = tv.tv_sec;
    }
    int ms = (int)(tv.tv_usec / 1000);
    size_t n = strlen(second.text);
    memcpy(ts, second.text, n);
    memcpy(ts + n,
           (char[5]){'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10),
                     'Z'},
           5);
    ts[n + 5] = '\0';
    line_put(l, "{\"ts\":", 6);
    line_str(l, ts);
    line_put(l, ",\"level\":", 9);
    line_str(l, level_names[level]);
    line_put(l, ",\"component\":", 13);
    line_str(l, log_component);
    line_put(l, ",\"msg\":", 7);
    line_str(l, msg);
}

/* Adds the trace and request id of the line: the thread's context, else the resolver's for the
 * job it names; never over a trace_id or request_id the caller gave. Then writes the line with
 * one write(), so concurrent threads never interleave within a line. */
static void line_end(line_t *l)
{
    log_ctx_t found;
    const log_ctx_t *c = log_tls.trace_id[0] || log_tls.request_id[0] ? &log_tls : NULL;
    const char *job = l->job_id ? l->job_id : l->task_id;
    if (!c && log_resolver && job) {
        memset(&found, 0, sizeof(found));
        if (log_resolver(job, &found, log_resolver_arg) &&
            (found.trace_id[0] || found.request_id[0]))
            c = &found;
    }
    if (c && c->request_id[0] && !l->has_request_id)
        line_field(l, "request_id", c->request_id);
    if (c && c->trace_id[0] && !l->has_trace_id) {
        line_field(l, "trace_id", c->trace_id);
        if (c->span_id[0] && !l->has_span_id)
            line_field(l, "span_id", c->span_id);
    }
    line_put(l, "}", 1);
    if (!l->oom) {
        l->p[l->len++] = '\n';
        ssize_t w = write(STDERR_FILENO, l->p, l->len);
        (void)w;
    }
    if (l->p != l->stack)
        free(l->p);
}

static void log_write(log_level_t level, const char *msg, va_list ap)
{
    line_t l;
    line_head(&l, level, msg);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k)
            break;
        const char *v = va_arg(ap, const char *);
        if (v)
            line_field(&l, k, v);
    }
    line_end(&l);
}

void log_event_json(log_level_t level, const char *msg, cJSON *fields)
{
    if (level >= log_min) {
        line_t l;
        line_head(&l, level, msg);
        for (const cJSON *it = fields ? fields->child : NULL; it; it = it->next) {
            if (cJSON_IsString(it)) {
                line_field(&l, it->string, it->valuestring);
                continue;
            }
            char *v = jprint_unformatted(it); /* cJSON's text, numbers without sscanf */
            if (!v) {
                l.oom = 1;
                break;
            }
            line_key(&l, it->string);
            line_put(&l, v, strlen(v));
            cJSON_free(v);
        }
        line_end(&l);
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
