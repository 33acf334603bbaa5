/*
 * stats.h - the worker's Prometheus metrics and its small HTTP server (docs/operations.md
 * "Metrics"): GET /metrics, /healthz and /readyz on MCPQ_METRICS_LISTEN (empty: no server; the
 * counters are kept anyway, they cost a few atomic adds).
 *
 * Series (all mcpq_worker_*, so they never mix with the ingress's mcpq_* ones):
 *   mcpq_worker_jobs_total{executor,outcome}     jobs that ended, by executor type and outcome
 *                                                (ok, tool_error, timeout, error, cancelled)
 *   mcpq_worker_job_duration_seconds{executor}   histogram of executor run time
 *   mcpq_worker_queue_wait_seconds               histogram: envelope sent_us to pick-up
 *   mcpq_worker_result_write_seconds             histogram: one durable result write
 *   mcpq_worker_tasks_finished_total{state}      task runs ended: complete, terminated,
 *                                                cancelled
 *   mcpq_worker_running_jobs                     executors running now
 *   mcpq_worker_inflight_jobs                    jobs held (checking, running, writing)
 *   mcpq_worker_jobs_released_total              jobs let go without a result (shutdown):
 *                                                Kafka delivers them to another worker
 *   mcpq_worker_jobs_redelivered_total{handling} records of a job that ran or runs already
 *   mcpq_worker_jobs_rejected_total{reason}      records refused before anything ran
 *                                                (signature: no valid mcpq-sig, jobsig.h)
 *   mcpq_worker_results_written_total            result records made durable in Redis
 *   mcpq_worker_results_retried_total            Redis writes that failed and were retried
 *   mcpq_worker_kafka_consumer_lag{topic,partition} records behind the high watermark on
 *                                                each partition assigned to this worker
 *   mcpq_worker_kafka_assigned_partitions        partitions assigned to this worker
 *   mcpq_worker_kafka_topic_partitions           partitions of the jobs topic (0: unknown)
 *   mcpq_worker_kafka_idle_member                1 when this worker got no partition: the
 *                                                group has more workers than partitions
 *   mcpq_worker_dependency_up{dependency}        kafka, redis
 *   mcpq_worker_redis_lost_left                  1 while this worker is out of the consumer
 *                                                group because Redis is unreachable
 *                                                (MCPQ_WORKER_REDIS_LOST_LEAVE_MS)
 *   mcpq_worker_redis_lost_leaves_total          times it left the group for that
 *   mcpq_worker_stopping                         1 once SIGTERM arrived
 * plus mcpq_build_info, process_start_time_seconds and process_* (prom.h). Histograms are
 * observed in µs into prom.h's one bucket table (100 µs to 60 s).
 *
 * /healthz answers 200 while the process runs; /readyz 200 while Kafka and Redis are
 * reachable and the worker is not stopping, else 503 with {"ready":false,...} saying which.
 *
 * Thread safety: the update functions are called by the loop thread; the server's own
 * thread (libmicrohttpd's internal polling thread) only reads. Counters and gauges are
 * atomics, the lag table is behind a mutex. Every function is thread-safe.
 */
#ifndef MCPQ_WORKER_METRICS_H
#define MCPQ_WORKER_METRICS_H

#include "util.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
    WRK_OUT_OK,         /* a result that is not an error */
    WRK_OUT_TOOL_ERROR, /* a result with isError: true */
    WRK_OUT_TIMEOUT,    /* the deadline passed */
    WRK_OUT_ERROR,      /* a JSON-RPC error (malformed job, upstream error, internal) */
    WRK_OUT_CANCELLED,  /* the caller cancelled */
    WRK_OUT_COUNT
} wrk_outcome_t;

typedef enum {
    WRK_REDELIVERED_ATTACHED, /* arrived while the job ran here: one run */
    WRK_REDELIVERED_RESENT,   /* its result was in Redis already: re-sent */
    WRK_REDELIVERED_COUNT
} wrk_redelivered_t;

typedef enum {
    WRK_REJECTED_SIGNATURE, /* no valid job signature (jobsig.h) */
    WRK_REJECTED_COUNT
} wrk_rejected_t;

/* What the loop thread publishes once per round. */
/* The state a task run left its task in (mcpq_worker_tasks_finished_total). */
typedef enum {
    WRK_TASK_COMPLETE,
    WRK_TASK_TERMINATED,
    WRK_TASK_CANCELLED,
    WRK_TASK_COUNT
} wrk_task_state_t;

typedef struct wrk_stats_gauges {
    size_t running;                                      /* executors running */
    size_t inflight;                                     /* jobs held */
    unsigned long long results_written, results_retried; /* store.h counters */
    int kafka_up, redis_up;
    int assigned;         /* partitions assigned */
    int topic_partitions; /* of the jobs topic (0: unknown) */
    int idle_member;      /* wrk_consumer_idle_member() */
    int redis_lost_left;  /* wrk_consumer_left(): out of the group, Redis unreachable */
    unsigned long long redis_lost_leaves; /* times it left the group for that */
} wrk_stats_gauges_t;

typedef struct wrk_stats wrk_stats_t;

/* Counters at zero, no server. NULL on ENOMEM. */
wrk_stats_t *wrk_stats_new(void);
/* Stops the server (waiting for its thread) and frees. NULL is a no-op. */
void wrk_stats_free(wrk_stats_t *m);

/* Starts the HTTP server on listen (util_parse_listen(): "host:port", "[v6]:port", ":port"; "" or
 * NULL: none). 0, or MCPQ_EINVAL / MCPQ_EIO with errstr filled. */
int wrk_stats_serve(wrk_stats_t *m, const char *listen, char *errstr, size_t errstr_size);

/* A job ended; exec_type may be NULL (counted as "other"); duration_us: its executor's run
 * time, < 0: it never ran (not in the histogram). */
void wrk_stats_job(wrk_stats_t *m, const char *exec_type, wrk_outcome_t outcome,
                   int64_t duration_us);
/* A job was picked up at picked_us (Unix µs, this host's clock) that the ingress sent at
 * sent_us (the envelope's; its host's clock): the difference, clamped at 0, is the queue wait.
 * sent_us <= 0 (an older ingress): not observed. */
void wrk_stats_queue_wait(wrk_stats_t *m, int64_t sent_us, int64_t picked_us);
/* A result record was made durable in Redis in duration_us. */
void wrk_stats_result_write(wrk_stats_t *m, int64_t duration_us);
/* A task run ended leaving its task in state. */
void wrk_stats_task_finished(wrk_stats_t *m, wrk_task_state_t state);
/* A job was let go without a result at shutdown (mcpq_worker_jobs_released_total). */
void wrk_stats_released(wrk_stats_t *m);
/* A record came again, handled as how (mcpq_worker_jobs_redelivered_total). */
void wrk_stats_redelivered(wrk_stats_t *m, wrk_redelivered_t how);
/* A record was refused for why (mcpq_worker_jobs_rejected_total). */
void wrk_stats_rejected(wrk_stats_t *m, wrk_rejected_t why);
/* Publishes the loop's gauges (copied). */
void wrk_stats_gauges(wrk_stats_t *m, const wrk_stats_gauges_t *g);
/* The worker is stopping: mcpq_worker_stopping becomes 1. */
void wrk_stats_stopping(wrk_stats_t *m);

/* Replaces the lag table: n partitions of topic with their lag (records). */
void wrk_stats_lag(wrk_stats_t *m, const char *topic, const int32_t *partitions,
                   const int64_t *lags, size_t n);

/* Appends the exposition text (what GET /metrics answers). 0 or MCPQ_ETOOBIG/ENOMEM. */
int wrk_stats_render(wrk_stats_t *m, util_buf_t *out);

/* 1 when /readyz would answer 200. */
int wrk_stats_ready(wrk_stats_t *m);

#endif
