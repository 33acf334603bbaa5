/*
 * executor.h - the interface every executor implements (docs/executors.md), and the table
 * that maps an envelope's executor.type to one.
 *
 * An executor runs one job on the worker's loop without blocking it:
 *   start(job)         begins the work. 0: the executor now owns job->ex_state and will
 *                      call wrk_job_finish() exactly once, possibly before start returns.
 *                      < 0: nothing was started and wrk_job_finish() will not be called.
 *   cancel(job, how)   asks a started job to stop: WRK_CANCEL_TIMEOUT (the deadline passed)
 *                      or WRK_CANCEL_CALLER (the caller cancelled the call, docs/internals.md
 *                      "Cancellation"): stop gracefully, e.g. SIGTERM then SIGKILL; or
 *                      WRK_CANCEL_ABORT (the worker is shutting down): stop at once. The
 *                      executor still calls wrk_job_finish() once it has released what it
 *                      holds (a child reaped, a transfer removed); the result it passes then
 *                      is ignored. A second call may escalate a graceful stop to ABORT.
 *   needs_body         1 when start reads job->body (the envelope as executors get it,
 *                      wrk_envelope_for_executor): job.c builds it only for those, so a
 *                      builtin job never prints the envelope again (the workers
 *                      section of docs/benchmarks.md, bench/sec_workers.sh).
 *
 * Types this worker does not run (anything unknown) get no table entry;
 * the job then answers with an isError result naming the type.
 *
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_EXECUTOR_H
#define MCPQ_WORKER_EXECUTOR_H

typedef struct wrk_job wrk_job_t;

typedef enum {
    WRK_CANCEL_NONE = 0,
    WRK_CANCEL_TIMEOUT, /* graceful */
    WRK_CANCEL_ABORT,   /* at once */
    WRK_CANCEL_CALLER,  /* graceful, like TIMEOUT */
} wrk_cancel_t;

typedef struct wrk_executor {
    const char *type;
    int (*start)(wrk_job_t *job);
    void (*cancel)(wrk_job_t *job, wrk_cancel_t how);
    int needs_body;
} wrk_executor_t;

extern const wrk_executor_t wrk_builtin_executor;
extern const wrk_executor_t wrk_httpexec_executor;
extern const wrk_executor_t wrk_exec_executor;
extern const wrk_executor_t wrk_agent_executor;
extern const wrk_executor_t wrk_mcpexec_executor;

/* The executor for type, or NULL when this worker does not run that type. */
const wrk_executor_t *wrk_executor_find(const char *type);

#endif
