/*
 * worker.h - mcpq-worker's event-driven core: one loop thread that consumes jobs from
 * Kafka, runs them through executors, writes results to Redis and stores offsets.
 *
 * Design (docs/executors.md, docs/benchmarks.md; docs/internals.md "Worker delivery semantics"):
 *   - One thread runs the epoll loop (loop.h). It watches the Kafka consumer queue's
 *     wake-up pipe, libcurl's sockets, child pipes and pidfds, a signalfd, the Redis
 *     connection subscribed to cancellations, and a timer heap (sleeps, deadlines, curl,
 *     kill grace, a 200 ms tick, a 1 s cancellation check). librdkafka keeps its own
 *     internal threads; nothing else is started, whatever the number of jobs.
 *   - With a job signing key (jobsig.h), a record whose mcpq-sig header does not verify is
 *     refused before anything else happens: nothing of it is parsed or run, nothing is
 *     written to Redis (its reply_to and task are unauthenticated too, so the caller times
 *     out), one warning names its partition, offset and key, it is counted in
 *     mcpq_worker_jobs_rejected_total{reason="signature"}, and its offset is done.
 *   - Each record becomes a job (job.h) keyed by job_id: a second record with the id of a
 *     job still in flight (a redelivery) attaches to it instead of running again. A job
 *     first checks {mcpq}:result:<id>; if present the result is re-sent, else it runs.
 *   - Results go to Redis through the batching store (store.h); only once a result is
 *     durable is its offset marked done, and offsets are stored per partition up to the
 *     finished prefix (offsets.h, consumer.h).
 *   - Cancellation (docs/internals.md "Cancellation"): a message on mcpq:cancel
 *     (cancelsub.h) naming a job in flight here, or its key {mcpq}:cancel:<id> (checked with
 *     the result before a job starts, then once a second for every running job), cancels
 *     it: it never starts or its executor is stopped like a timed-out one, it writes no
 *     result, a `cancelled` entry goes to its reply streams, and then its offset is done
 *     like any finished job's.
 *   - At MCPQ_MAX_INFLIGHT_JOBS jobs in flight all partitions are paused; below 90% of it
 *     they resume.
 *   - SIGTERM/SIGINT: stop consuming, let running jobs finish for MCPQ_SHUTDOWN_GRACE_MS,
 *     then abort the rest (exec children are killed and reaped; their records are not
 *     stored, so another worker gets them), store offsets, close the consumer. A second
 *     signal skips the grace period.
 *
 * Thread safety: a worker belongs to the thread that calls wrk_worker_run().
 */
#ifndef MCPQ_WORKER_WORKER_H
#define MCPQ_WORKER_WORKER_H

#include "jobsig.h"
#include "settings.h"

#include <stddef.h>

typedef struct wrk_worker wrk_worker_t;

/*
 * Builds a worker from the settings and the job signing keys (keys->n == 0: records are not
 * checked), both of which must outlive it. SIGTERM and SIGINT must be blocked in every thread
 * before (the worker reads them from a signalfd), and curl_global_init() must have run. NULL
 * with errstr filled on failure.
 */
wrk_worker_t *wrk_worker_new(const mcpq_settings_t *s, const jobsig_keys_t *keys, char *errstr,
                             size_t errstr_size);

/* Runs until stopped by a signal (or a fatal Kafka error). 0 after a clean stop, else 1. */
int wrk_worker_run(wrk_worker_t *w);

/* Frees the worker. NULL is a no-op. */
void wrk_worker_free(wrk_worker_t *w);

#endif
