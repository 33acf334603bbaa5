/*
 * job.h - one job on a worker (a tools/call, or another method, envelope.h): its envelope, its
 * executor run bounded by the deadline, its live progress/log entries, and the result record it
 * ends with.
 *
 * Life of a job (the worker drives it; docs/internals.md "Worker delivery semantics"):
 *   the worker parses the record into job->env and asks the store whether a result exists;
 *   if not, wrk_job_run() either answers at once (deadline passed: status timeout; an
 *   executor type this worker does not run: an isError result) or starts the executor with
 *   a deadline timer. The executor reports through wrk_job_progress()/wrk_job_log() and ends
 *   with wrk_job_finish(); the job then builds its result record and calls
 *   rt->on_finished, after which the worker writes the record and stores the offset.
 *   When the deadline fires the executor is cancelled (WRK_CANCEL_TIMEOUT) and the record
 *   says status "timeout"; on shutdown (WRK_CANCEL_ABORT) no record is built at all, so the
 *   record is delivered again to another worker.
 *   When the caller cancels the call (docs/internals.md "Cancellation"), the worker calls
 *   wrk_job_cancel(job, WRK_CANCEL_CALLER): the executor is stopped like a timed-out one, or
 *   a job that has not started never starts, and the job ends with job->cancelled set and
 *   no record; the worker then sends a `cancelled` entry and stores the offset.
 *
 * The runtime (wrk_rt_t) is what executors reach through job->rt: the loop, the HTTP
 * multi handle, the store, the settings. Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_JOB_H
#define MCPQ_WORKER_JOB_H

#include "envelope.h"
#include "executor.h"
#include "log.h"
#include "loop.h"
#include "offsets.h"
#include "record.h"
#include "settings.h"
#include "store.h"
#include "trace.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wrk_httpexec wrk_httpexec_t;
typedef struct wrk_agent wrk_agent_t;
typedef struct wrk_mcpexec wrk_mcpexec_t;
typedef struct wrk_ask wrk_ask_t;
typedef struct wrk_ask_q wrk_ask_q_t;

typedef struct wrk_rt {
    wrk_loop_t *loop;
    wrk_httpexec_t *http;
    wrk_agent_t *agent; /* agent calls waiting for replies (agent.h) */
    wrk_mcpexec_t *mcp; /* the mcp executor's upstream cache (worker/executors/mcpexec.h) */
    wrk_store_t *store;
    wrk_ask_t *ask; /* questions to the clients (ask.h); NULL: jobs cannot ask */
    const mcpq_settings_t *settings;
    const char *worker_id;
    /* Called once per job when its record is built (job->record) or, for an aborted job,
     * when its executor has let go (job->record NULL). */
    void (*on_finished)(wrk_job_t *job, void *arg);
    /* Called for each progress entry of a task's job (job->task), even with no reply stream:
     * the task's status message and progress live in Redis (docs/protocol.md). May be NULL. */
    void (*on_task_progress)(wrk_job_t *job, const cJSON *data, void *arg);
    /* The executor for an envelope's executor.type, or NULL when this worker does not run
     * it: the table of worker/executors/executor.h, handed down so that jobs (below the
     * executors) never name them. */
    const wrk_executor_t *(*find_executor)(const char *type);
    void *arg;
    size_t executing; /* executors started and not finished */
} wrk_rt_t;

typedef enum {
    WRK_JOB_CHECKING = 0, /* asking Redis whether the job ran already */
    WRK_JOB_RUNNING,      /* executor started */
    WRK_JOB_WRITING,      /* record (or a re-sent reply) on its way to Redis */
} wrk_job_state_t;

#define WRK_JOB_MAX_STREAMS 8

struct wrk_job {
    wrk_rt_t *rt;
    wrk_envelope_t env;
    /* The job's trace (W3C): the worker's span, a child of the ingress's traceparent (the
     * Kafka header, else the envelope's) or a new trace; env.traceparent points at its
     * rendering, which executors pass on (http, mcp and agent requests, exec's TRACEPARENT).
     * Every line logged for the job carries trace.trace_id and env.request_id
     * (wrk_job_log_enter). */
    trace_ctx_t trace;
    char traceparent[TRACE_PARENT_LEN + 1];
    /* Spans (otel.h, docs/operations.md "Traces (OpenTelemetry)"): the job's own span is
     * trace.span_id, "execute_tool <tool>" (CONSUMER), child of parent_span (the ingress's
     * PRODUCER span), from picked_us (below) until the job is freed; span is NULL when not
     * exported. Executors' outbound requests and the result write are its children. */
    char parent_span[TRACE_SPAN_HEX + 1];
    /* The record's tracestate header when trace_state_ok (W3C: relayed unchanged next to the
     * traceparent of the executor's outbound requests); "" when none. */
    char tracestate[TRACE_STATE_MAX + 1];
    struct otel_span *span;
    struct otel_span *result_span; /* the Redis write of the result (worker.c) */
    int64_t picked_us; /* Unix µs when this worker parsed the record (the queue wait's end) */
    int64_t exec_us;   /* Unix µs when the executor was started (the execute stage's start) */
    char *body;        /* the envelope as executors get it (wrk_envelope_for_executor); NULL
                        * unless the executor needs_body (executor.h) */
    size_t body_len;
    const wrk_executor_t *ex;
    void *ex_state;      /* the executor's */
    wrk_cancel_t cancel; /* how the executor was asked to stop */
    int cancelled;       /* the caller cancelled the job: it ends without a record */
    int tool_started;    /* the executor was started: the tool may have run (else "ran": false) */
    int task; /* a task claimed from a task queue (worker/core/handoff.h), no Kafka record */
    int task_pending; /* Kafka hand-off or task end not yet written to Redis: retried */
    int executing;
    int64_t deadline_ms; /* epoch ms */
    int64_t started_ms;
    int64_t started_mono_us; /* util_mono_us() when started_ms was set (the execution's start) */
    wrk_loop_timer_t deadline_timer;
    wrk_ask_q_t *ask_q; /* the open question to the client (ask.h), NULL when none */
    long long ask_n;    /* questions asked so far (the open one's number) */

    char *record; /* the result record, once built */
    size_t record_len;
    wrk_status_t status;
    int is_error;

    /* The worker's bookkeeping. */
    wrk_job_state_t state;
    int32_t partition;
    int64_t offset;
    wrk_offsets_node_t **nodes; /* one per Kafka record carrying this job id */
    size_t nnodes, nodes_cap;
    const char *streams[WRK_JOB_MAX_STREAMS]; /* reply streams; [0] points into env */
    char *extra_streams[WRK_JOB_MAX_STREAMS]; /* owned copies behind streams[1..] */
    size_t nstreams;
    wrk_store_req_t req;
    wrk_job_t *hnext;
};

/* A job with nothing parsed yet; NULL on ENOMEM. */
wrk_job_t *wrk_job_new(wrk_rt_t *rt);
/* Frees the job (its executor must have finished and its store request be done or
 * forgotten). NULL is a no-op. */
void wrk_job_free(wrk_job_t *job);

/* Parses the record value into job->env and starts the job's trace from traceparent (the
 * Kafka record's header; NULL or invalid: the envelope's). 0 or MCPQ_EINVAL (errstr filled);
 * the trace is set either way. */
int wrk_job_parse(wrk_job_t *job, const char *buf, size_t len, const char *traceparent,
                  char *errstr, size_t errstr_size);

/* While the loop thread works for job: this thread's log lines carry its trace and request id
 * (log.h). Saves the outer context in *saved for wrk_job_log_leave. */
void wrk_job_log_enter(const wrk_job_t *job, log_ctx_t *saved);
/* Puts back the context wrk_job_log_enter saved. */
void wrk_job_log_leave(const log_ctx_t *saved);

/* Adds a Kafka record's offset node and reply stream (may be NULL) to the job. 0 or
 * MCPQ_ENOMEM. */
int wrk_job_attach(wrk_job_t *job, wrk_offsets_node_t *node, const char *reply_to);

/* Runs the job (see above); a job cancelled while it was checked ends cancelled at once.
 * rt->on_finished runs exactly once afterwards, perhaps before this returns. */
void wrk_job_run(wrk_job_t *job);

/* Stops a running executor (see executor.h); a no-op when none runs. WRK_CANCEL_CALLER also
 * marks a job still in WRK_JOB_CHECKING cancelled (wrk_job_run then ends it at once); it is
 * ignored for a job stopping for another reason, finished, or writing its record. The
 * executor may finish, and rt->on_finished run, before this returns. */
void wrk_job_cancel(wrk_job_t *job, wrk_cancel_t how);

/* Builds a record with status error (a malformed envelope, an internal failure) and calls
 * rt->on_finished. */
void wrk_job_fail(wrk_job_t *job, int code, const char *message);
/* wrk_job_fail with error.data {"reason": reason} (NULL: none), e.g. "input_lost". */
void wrk_job_fail_reason(wrk_job_t *job, int code, const char *message, const char *reason);

/* For executors: the job's CallToolResult (ownership passes to the job; NULL when the
 * executor was cancelled or could not build one). Exactly once per started executor. A job
 * whose method is not tools/call gets it mapped into the method's result (mresult.h; an
 * isError result ends the job with an error record). */
void wrk_job_finish(wrk_job_t *job, cJSON *result);

/* For executors that speak the job's method themselves (mcp), instead of wrk_job_finish:
 * result (owned; NULL as for wrk_job_finish) is already the result of job->env's method
 * (ReadResourceResult, GetPromptResult, ...), passed on as it is. For tools/call it is the
 * same as wrk_job_finish. wrk_job_finish, by contrast, maps a CallToolResult into the
 * method's result (mresult.h). */
void wrk_job_finish_result(wrk_job_t *job, cJSON *result);

/* For executors, instead of wrk_job_finish: the call ends with a JSON-RPC error (record
 * status "error", code and message passed to the client as they are), e.g. an upstream MCP
 * server's -32602. message is copied. */
void wrk_job_finish_error(wrk_job_t *job, int code, const char *message);

/* For executors, the result of a failure whose details are the operator's, not the caller's
 * (docs/tools.md, "What a tool gets, and what a caller sees"): host names and ports, paths,
 * argv, library messages. The caller gets an isError result with the printf-style public
 * message and a fresh error id, "<public> (error id e_<16 hex digits>)"; one warning in the
 * log carries that error id with the job id, tenant, tool, executor, trace, the public
 * message and detail (what the caller is not told, e.g. the service's host:port and curl's
 * message; may be NULL). A new cJSON result (for wrk_job_finish), NULL on ENOMEM. */
cJSON *wrk_job_error_hidden(const wrk_job_t *job, const char *detail, const char *public_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* For executors: a live entry on the reply stream (kind "progress" or "log"); data is
 * borrowed. A no-op when nobody listens (no reply_to). */
void wrk_job_notify(wrk_job_t *job, const char *kind, const cJSON *data);

/* Milliseconds until the deadline (0 when past). */
int64_t wrk_job_remaining_ms(const wrk_job_t *job);

#endif
