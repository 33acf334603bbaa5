/*
 * trace.h - W3C Trace Context (https://www.w3.org/TR/trace-context/) for one call: the
 * `traceparent` a client sends (HTTP header or params._meta), the one the gateway passes on
 * as a participant (same trace-id and flags, its own span id as parent-id), and the
 * `tracestate` it relays unchanged when it is sane.
 *
 *   traceparent = version "-" trace-id "-" parent-id "-" trace-flags
 *                 2 hex      32 hex       16 hex        2 hex (lowercase)
 *
 * Version 00 is exactly 55 characters; version ff and all-zero ids are invalid. A later
 * version is parsed by the version 00 rules over its first 55 characters (what follows must
 * start with "-"), as the specification asks, and is passed on as version 00.
 *
 * Pure functions apart from the random ids (OpenSSL RAND_bytes); thread-safe.
 */
#ifndef MCPQ_TRACE_H
#define MCPQ_TRACE_H

#include <stddef.h>

#define TRACE_ID_HEX 32     /* trace-id */
#define TRACE_SPAN_HEX 16   /* parent-id, a span id */
#define TRACE_PARENT_LEN 55 /* a version 00 traceparent, without the NUL */
#define TRACE_STATE_MAX 512 /* the longest tracestate relayed */

typedef struct trace_ctx {
    char trace_id[TRACE_ID_HEX + 1];
    char span_id[TRACE_SPAN_HEX + 1]; /* the parent-id of the traceparent it renders as */
    unsigned char flags;
} trace_ctx_t;

/* Parses a traceparent value into out. 0, or MCPQ_EINVAL (NULL, malformed, version ff,
 * all-zero trace-id or parent-id); out is then cleared. */
int trace_parse(const char *traceparent, trace_ctx_t *out);

/* A new trace: random trace-id and span id, flags 01 (sampled: the gateway logs every call).
 * 0 or MCPQ_EIO (no randomness). */
int trace_new(trace_ctx_t *out);

/* The context a participant passes on: parent's trace-id and flags, a new random span id.
 * parent and out may be the same. 0 or MCPQ_EIO. */
int trace_child(const trace_ctx_t *parent, trace_ctx_t *out);

/* Starts this hop's span: a child of the traceparent `in` when it parses, else a new trace
 * (W3C: an invalid traceparent is ignored, never an error). 0 or MCPQ_EIO. */
int trace_start(const char *in, trace_ctx_t *out);

/* Renders t as a version 00 traceparent (55 characters and a NUL) into out. */
void trace_format(const trace_ctx_t *t, char out[TRACE_PARENT_LEN + 1]);

/* 1 when a tracestate value may be relayed as it is: 1..TRACE_STATE_MAX bytes of printable
 * ASCII (0x20-0x7e, so no header injection). */
int trace_state_ok(const char *tracestate);

#endif
