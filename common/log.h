/*
 * log.h - JSON logs, one line per event (SPEC section 11).
 *
 * Every line is a JSON object written with a single write(2) to stderr:
 *   {"ts":"2026-01-01T00:00:00.123Z","level":"info","component":"ingress",
 *    "msg":"tool call","tenant":"acme","tool":"echo","job_id":"j_..."}
 * Fields are given as NULL-terminated key/value string pairs; a NULL value is skipped.
 * Callers never pass secrets (API keys, app secrets, signatures) as fields.
 *
 * log_init() is called once at start-up, before any thread exists; after that every
 * function here is thread-safe.
 */
#ifndef MCPQ_LOG_H
#define MCPQ_LOG_H

typedef enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR } log_level_t;

/* component names the process ("ingress", "worker"); min_level from MCPQ_LOG_LEVEL. */
void log_init(const char *component, const char *min_level);

/* log_event(LOG_INFO, "tool call", "tenant", t, "tool", name, (char *)NULL); */
void log_event(log_level_t level, const char *msg, ...) __attribute__((sentinel));

/* A plain message, printf-style, with no extra fields. */
void log_msgf(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int log_enabled(log_level_t level);

#endif
