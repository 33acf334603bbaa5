/*
 * log.h - JSON logs, one line per event (docs/operations.md "Logs and tracing").
 *
 * Every line is a JSON object written with a single write(2) to stderr:
 *   {"ts":"2026-01-01T00:00:00.123Z","level":"info","component":"ingress",
 *    "msg":"tool call","tenant":"acme","tool":"echo","job_id":"j_..."}
 * Fields are given as NULL-terminated key/value string pairs; a NULL value is skipped.
 * Callers never pass secrets (API keys, app secrets, signatures) as fields.
 *
 * Trace context (W3C, common/trace.h): each thread has a log context. While a thread handles
 * one call it sets the call's trace (log_ctx_set), and every line it writes carries
 * "trace_id" (and "span_id") until it clears or restores the context. A line that passes
 * "trace_id" itself keeps its own. A process that runs many calls on one thread (the worker)
 * may also register a resolver: a line without a trace that names a "job_id" or "task_id"
 * gets that job's trace from it.
 *
 * log_init() and log_trace_resolver_set() are called once at start-up, before any thread
 * exists; after that every function here is thread-safe (the context is thread-local).
 */
#ifndef MCPQ_LOG_H
#define MCPQ_LOG_H

typedef enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR } log_level_t;

/* component names the process ("ingress", "worker"); min_level from MCPQ_LOG_LEVEL. */
void log_init(const char *component, const char *min_level);

/* log_event(LOG_INFO, "tool call", "tenant", t, "tool", name, (char *)NULL); */
void log_event(log_level_t level, const char *msg, ...) __attribute__((sentinel));

/* A line whose fields are the members of the JSON object fields, kept with their types
 * (numbers, booleans), in order; takes fields (freed here, may be NULL). */
struct cJSON;
void log_event_json(log_level_t level, const char *msg, struct cJSON *fields);

/* A plain message, printf-style, with no extra fields. */
void log_msgf(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A thread's log context: the trace of the call it is handling and the id of the HTTP request
 * it came in (X-Request-Id, docs/operations.md "Logs and tracing"); "" when none. A line
 * written in a context with a request id carries "request_id" unless it passes its own. */
#define LOG_REQUEST_ID_MAX 128

typedef struct log_ctx {
    char trace_id[33];
    char span_id[17];
    char request_id[LOG_REQUEST_ID_MAX + 1];
} log_ctx_t;

/* 1 when id is a request id as mcpq keeps and passes it on: 1..LOG_REQUEST_ID_MAX bytes of
 * printable ASCII without space (0x21-0x7e); 0 otherwise (NULL, empty, too long, a space, a
 * control or non-ASCII byte). The one check of the ingress (X-Request-Id) and the worker (the
 * envelope's request_id). */
int log_request_id_valid(const char *id);

/* Sets this thread's trace (copied; span_id may be NULL); NULL trace_id clears the trace. The
 * request id is kept. */
void log_ctx_set(const char *trace_id, const char *span_id);
/* Sets this thread's request id (copied, cut at 128 bytes); NULL or "" clears it. */
void log_ctx_set_request(const char *request_id);
/* Clears this thread's context: its lines carry no trace and no request id. */
void log_ctx_clear(void);
/* Saves this thread's context into *saved and sets a new one (that trace, no request id): for
 * a callback nested inside another call's handling; log_ctx_restore(saved) puts the outer one
 * back. */
void log_ctx_push(const char *trace_id, const char *span_id, log_ctx_t *saved);
/* Sets this thread's context back to *saved (from log_ctx_push or log_ctx_get). */
void log_ctx_restore(const log_ctx_t *saved);
/* Copies this thread's context into *out (trace_id "" when none). */
void log_ctx_get(log_ctx_t *out);

/* Fills out with the trace (and request id) of job id (a "job_id" or "task_id" field) and returns
 * 1, or 0 when it knows none. Called on the logging thread; must not log. */
typedef int (*log_trace_fn)(const char *job_id, log_ctx_t *out, void *arg);
/* Registers fn (with arg) as the process' one resolver, NULL for none; once, before any
 * thread exists. */
void log_trace_resolver_set(log_trace_fn fn, void *arg);

#endif
