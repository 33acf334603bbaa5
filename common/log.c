#include "log.h"
#include "jprint.h"

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

/* A line is built as text (jprint.h): the head and the string fields of log_event and log_msgf
 * without a cJSON object, the members of log_event_json spliced in (several lines per
 * tools/call at the default level: docs/benchmarks.md, section "throughput"). The text is
 * what cJSON prints for the same members, in the same order, with the trace and request id
 * members of add_trace (line_trace for log_event). This appends one string member. */
static void line_field(jprint_buf_t *l, const char *k, const char *v)
{
    jprint_put(l, ",", 1);
    jprint_put_string(l, k);
    jprint_put(l, ":", 1);
    jprint_put_string(l, v);
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
static void line_trace(jprint_buf_t *l, va_list ap)
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

/* The line's fixed head: {"ts":...,"level":...,"component":...,"msg":... The date and time
 * to the second are formatted once per second and thread (gmtime_r and snprintf cost more
 * than the rest of a line). */
static void line_head(jprint_buf_t *l, log_level_t level, const char *msg)
{
    static _Thread_local struct {
        time_t sec;
        char text[32]; /* "YYYY-MM-DDTHH:MM:SS" */
        size_t len;
    } second;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    if (!second.len || second.sec != tv.tv_sec) {
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        int n = snprintf(second.text, sizeof(second.text), "%04d-%02d-%02dT%02d:%02d:%02d",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                         tm.tm_sec);
        second.len = n > 0 && (size_t)n < sizeof(second.text) ? (size_t)n : 0;
        second.sec = tv.tv_sec;
    }
    int ms = (int)(tv.tv_usec / 1000);
    char frac[5] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10),
                    'Z'};
    jprint_put(l, "{\"ts\":\"", 7);
    jprint_put(l, second.text, second.len);
    jprint_put(l, frac, sizeof(frac));
    jprint_put(l, "\",\"level\":\"", 11);
    jprint_put(l, level_names[level], strlen(level_names[level]));
    jprint_put(l, "\",\"component\":", 14);
    jprint_put_string(l, log_component);
    jprint_put(l, ",\"msg\":", 7);
    jprint_put_string(l, msg);
}

/* Closes the line, writes it and frees its text. */
static void line_end(jprint_buf_t *l)
{
    jprint_put(l, "}\n", 2);
    char *text = jprint_buf_end(l);
    if (text) {
        /* One write per line so concurrent threads never interleave within a line. */
        ssize_t w = write(STDERR_FILENO, text, strlen(text));
        (void)w;
    }
    cJSON_free(text);
}

static void log_write(log_level_t level, const char *msg, va_list ap)
{
    jprint_buf_t l = {0};
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
        jprint_buf_t l = {0};
        line_head(&l, level, msg);
        add_trace(fields); /* after the caller's members, as on a line of log_event */
        for (const cJSON *f = fields->child; f; f = f->next) {
            jprint_put(&l, ",", 1);
            jprint_put_string(&l, f->string);
            jprint_put(&l, ":", 1);
            jprint_put_item(&l, f);
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
