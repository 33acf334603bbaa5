/*
 * envelope.h - the job envelope parser: a Kafka record value, untrusted, into the fields a
 * worker uses (docs/internals.md "Kafka", schemas/job.schema.json).
 *
 * wrk_envelope_parse() accepts only a JSON object (UTF-8, no trailing bytes) with v == 1,
 * a job_id of 1..128 characters [A-Za-z0-9_.:-], tenant and tool strings, an executor
 * object with a type, and optional arguments (object), reply_to (a key under
 * "{mcpq}:reply:", so a record cannot make the worker write elsewhere), deadline_ms,
 * created_ms, timeout_ms and traceparent. When it fails, job_id and reply_to are still
 * set if they were valid, so the caller can answer the waiting ingress with an error.
 *
 * "method" (absent: "tools/call") says which MCP request the job answers (docs/executors.md,
 * "Methods"); an unknown one fails the parse, and so do arguments missing what the method
 * needs: a string "uri" for resources/read, resources/subscribe and resources/unsubscribe, a
 * string "name" for prompts/get, objects "ref" and "argument" for completion/complete.
 * "mime_type" (optional) is the registry object's mimeType, used when a read's result is
 * mapped (mresult.h). "owner", "session_id" and "client" (optional) say who called and what
 * it can be asked mid-call (worker/core/ask.h); a "client" that is not an object, or whose
 * capabilities are not objects, fails the parse.
 *
 * The envelope owns its cJSON tree; every pointer in it points into that tree. The tree is
 * read-only after parsing. Pure functions (no I/O), thread-safe on distinct envelopes.
 */
#ifndef MCPQ_WORKER_ENVELOPE_H
#define MCPQ_WORKER_ENVELOPE_H

#include "kinds.h"
#include "names.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define WRK_ID_MAX 128
#define WRK_REPLY_PREFIX NAMES_KEY_REPLY
#define WRK_REPLY_MAX 256
#define WRK_NAME_MAX 255
#define WRK_OWNER_MAX 600

typedef struct wrk_envelope {
    cJSON *root;
    const char *job_id;   /* NULL when missing or invalid */
    const char *reply_to; /* NULL when absent (nobody waits live) */
    const char *tenant;   /* NULL only after a failed parse */
    const char *tool;
    const char *tool_version; /* NULL when absent */
    const char *traceparent;  /* NULL when absent or not W3C-shaped; the job may point it at
                               * its own span's (job.h), which executors then get */
    const char *request_id;   /* the HTTP request's X-Request-Id; NULL when absent or invalid
                               * (log.h log_request_id_valid: then ignored, as a traceparent) */
    const char *mode;         /* "task" for a task (docs/protocol.md); NULL or "sync" otherwise */
    const char *task_id;      /* the task's id when mode is "task" (a valid id), else NULL */
    const cJSON *arguments;   /* an object; NULL when absent */
    const cJSON *executor;    /* an object with a string "type" */
    const char *exec_type;
    kinds_method_t method_id;
    const char *method;     /* the method's name; "tools/call" when absent (a static string) */
    const char *mime_type;  /* NULL when absent */
    const char *owner;      /* the caller's owner string (ingress/core/owner.h); NULL: absent */
    const char *session_id; /* the caller's legacy session; NULL: absent */
    const cJSON *client;    /* {"protocol_version", "capabilities": {...}} of the caller, which
                             * says what it can be asked (worker/core/ask.h); NULL: nothing */
    int64_t deadline_ms;    /* epoch ms; 0 when absent */
    int64_t created_ms;     /* 0 when absent */
    int64_t timeout_ms;     /* 0 when absent */
    int64_t result_ttl_s;   /* how long the result record must be kept at least (an idempotent
                             * call, ingress/core/idem.h); 0 when absent */
} wrk_envelope_t;

/* Parses buf[0..len) into env (which the caller then cleans up either way).
 * 0, or MCPQ_EINVAL with a reason in errstr. */
int wrk_envelope_parse(wrk_envelope_t *env, const char *buf, size_t len, char *errstr,
                       size_t errstr_size);
/* Frees env's tree and zeroes env (every pointer into the tree is gone). NULL is a no-op. */
void wrk_envelope_cleanup(wrk_envelope_t *env);

/* The method named s (NULL: tools/call) in *out: 0, or MCPQ_EINVAL when unknown. */
int wrk_envelope_method(const char *s, kinds_method_t *out);

/* 1 when s is a valid job id (used for keys and logs). */
int wrk_envelope_id_valid(const char *s);

/* The envelope as executors receive it: compact JSON of every member except "executor"
 * (which may hold secrets and headers meant for the worker only), with "traceparent" set to
 * env->traceparent (left out when NULL). Malloc'd, NUL-terminated, *len set; NULL on ENOMEM. */
char *wrk_envelope_for_executor(const wrk_envelope_t *env, size_t *len);

#endif
