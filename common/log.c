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

/* The context whose ids a line gets: the thread's, else the resolver's for the job the line
 * names (job: its job_id, else its task_id; may be NULL), filled into *found; NULL for none. */
static const log_ctx_t *line_ctx(const char *job, log_ctx_t *found)
{
    if (log_tls.trace_id[0] || log_tls.request_id[0])
        return &log_tls;
    memset(found, 0, sizeof(*found));
    if (job && log_resolver && log_resolver(job, found, log_resolver_arg) &&
        (found->trace_id[0] || found->request_id[0]))
        return found;
    return NULL;
}

/* Adds the trace and request id of the line (line_ctx), never over a trace_id or request_id
 * the caller gave. */
static void add_trace(cJSON *o)
{
    log_ctx_t found;
    const char *job = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "job_id"));
    if (!job)
        job = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "task_id"));
    const log_ctx_t *c = line_ctx(job, &found);
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

/* A line is built as text: the head and the string fields of log_event and log_msgf without a
 * cJSON object (several lines per tools/call at the default level: docs/benchmarks.md, section
 * "throughput"); only log_event_json prints its typed fields with cJSON. The text is what cJSON
 * prints for the same members: the same order, the same escapes (\" \\ \b \f \n \r \t,
 * other bytes below 0x20 as \u00xx, the rest as they are), and the trace and request id
 * members of add_trace (line_trace for log_event). */
typedef struct {
    char *data;
    size_t len, cap;
    int failed; /* out of memory or over LINE_MAX_BYTES: the line is dropped */
} line_t;

#define LINE_MAX_BYTES (1u << 20)

static void line_put(line_t *l, const char *s, size_t n)
{
    if (l->failed)
        return;
    if (l->len + n + 2 > l->cap) { /* + 2: the newline and a NUL */
        size_t cap = l->cap ? l->cap : 512;
        while (cap < l->len + n + 2)
            cap *= 2;
        char *d = cap <= LINE_MAX_BYTES ? realloc(l->data, cap) : NULL;
        if (!d) {
            l->failed = 1;
            return;
        }
        l->data = d;
        l->cap = cap;
    }
    memcpy(l->data + l->len, s, n);
    l->len += n;
}

static void line_str(line_t *l, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    line_put(l, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        line_put(l, run, (size_t)(s - run));
        run = s + 1;
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '"': case '\\': break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        line_put(l, esc, n);
    }
    line_put(l, run, (size_t)(s - run));
    line_put(l, "\"", 1);
}

static void line_field(line_t *l, const char *k, const char *v)
{
    line_put(l, ",", 1);
    line_str(l, k);
    line_put(l, ":", 1);
    line_str(l, v);
}

/* The first value of field k among the (key, value) pairs of ap, NULL when none. */
static const char *field_of(va_list ap, const char *k)
{
    va_list aq;
    va_copy(aq, ap);
    const char *found = NULL, *key;
    while (!found && (key = va_arg(aq, const char *))) {
        const char *v = va_arg(aq, const char *);
        if (v && strcmp(key, k) == 0)
            found = v;
    }
    va_end(aq);
    return found;
}

/* The trace and request id members add_trace would add to a line with the fields of ap. */
static void line_trace(line_t *l, va_list ap)
{
    log_ctx_t found;
    const char *job = field_of(ap, "job_id");
    const log_ctx_t *c = line_ctx(job ? job : field_of(ap, "task_id"), &found);
    if (!c)
        return;
    if (c->request_id[0] && !field_of(ap, "request_id"))
        line_field(l, "request_id", c->request_id);
    if (!c->trace_id[0] || field_of(ap, "trace_id"))
        return;
    line_field(l, "trace_id", c->trace_id);
    if (c->span_id[0] && !field_of(ap, "span_id"))
        line_field(l, "span_id", c->span_id);
}

/* The line's fixed head: {"ts":...,"level":...,"component":...,"msg":... */
static void line_head(line_t *l, log_level_t level, const char *msg)
{
    struct timeval tv;
    struct tm tm;
    char head[160];
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(head, sizeof(head),
                     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\",\"level\":\"%s\",\"component\":",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), level_names[level]);
    line_put(l, head, n > 0 && (size_t)n < sizeof(head) ? (size_t)n : 0);
    line_str(l, log_component);
    line_put(l, ",\"msg\":", 7);
    line_str(l, msg);
}

/* Closes the line, writes it and frees its text. */
static void line_end(line_t *l)
{
    line_put(l, "}\n", 2);
    if (!l->failed) {
        /* One write per line so concurrent threads never interleave within a line. */
        ssize_t w = write(STDERR_FILENO, l->data, l->len);
        (void)w;
    }
    free(l->data);
}

static void log_write(log_level_t level, const char *msg, va_list ap)
{
    line_t l = {0};
    line_head(&l, level, msg);
    va_list aq;
    va_copy(aq, ap);
    const char *k;
    while ((k = va_arg(aq, const char *))) {
        const char *v = va_arg(aq, const char *);
        if (v)
            line_field(&l, k, v);
    }
    va_end(aq);
    line_trace(&l, ap);
    line_end(&l);
}

void log_event_json(log_level_t level, const char *msg, cJSON *fields)
{
    if (level >= log_min && (fields || (fields = cJSON_CreateObject()))) {
        line_t l = {0};
        line_head(&l, level, msg);
        add_trace(fields); /* after the caller's members, as on a line of log_event */
        char *text = cJSON_PrintUnformatted(fields);
        size_t n = text ? strlen(text) : 0;
        if (n > 2) { /* the members, without the braces */
            line_put(&l, ",", 1);
            line_put(&l, text + 1, n - 2);
        }
        l.failed |= !text;
        cJSON_free(text);
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
