#include "executor.h"
#include "names.h"
#include "worker.h"

#include "agent.h"
#include "ask.h"
#include "cancelsub.h"
#include "consumer.h"
#include "err.h"
#include "httpexec.h"
#include "job.h"
#include "log.h"
#include "otel.h"
#include "loop.h"
#include "mcpexec.h"
#include "stats.h"
#include "record.h"
#include "store.h"
#include "handoff.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define TICK_MS 200        /* serve Kafka events at least this often */
#define POLL_BUDGET 256    /* records taken per loop round */
#define ABORT_WAIT_MS 3000 /* after aborting: how long to wait for children to go */
#define WORKER_ID_MAX 256
#define CANCEL_CHECK_MS 1000 /* EXISTS {mcpq}:cancel:<id> of every running job this often */
/* Descriptors one job may hold (an exec child's three pipes and pidfd; an HTTP transfer one
 * socket), and those kept for Kafka, Redis, the metrics server and the stdio pools. */
#define FDS_PER_JOB 4
#define FD_RESERVE 256

struct wrk_worker {
    const mcpq_settings_t *s;
    const jobsig_keys_t *keys; /* job signing keys (borrowed); n == 0: records not checked */
    kv_target_t *kvt;          /* where Redis is; every connection is made from it */
    char worker_id[WORKER_ID_MAX];
    wrk_loop_t *loop;
    wrk_rt_t rt;
    wrk_httpexec_t *http;
    wrk_agent_t *agent;
    wrk_mcpexec_t *mcp;
    wrk_store_t *store;
    wrk_consumer_t *consumer;
    wrk_cancelsub_t *cancelsub;
    wrk_ask_t *ask; /* the jobs' questions to their clients */
    wrk_handoff_t *tasks;
    wrk_stats_t *metrics; /* counters, and the /metrics server (stats.h) */
    size_t ntasks;        /* claimed tasks in the table */
    wrk_job_t *handoffs;  /* task records whose hand-off to Redis failed: retried */
    wrk_loop_io_t *kafka_io, *signal_io;
    int sigfd;
    wrk_loop_timer_t tick, cancel_tick;
    int kafka_more;
    int ready_written;
    /* Redis lost (redis_watch): since when (monotonic ms; 0 while it answers), and how often
     * the worker left the consumer group for it. */
    int64_t redis_lost_at;
    unsigned long long redis_leaves;
    /* Jobs in flight by job_id (chained hash). */
    wrk_job_t **buckets;
    size_t nbuckets, njobs;
    size_t max_jobs; /* MCPQ_MAX_INFLIGHT_JOBS: jobs run at once */
    size_t fd_jobs;     /* jobs in flight that hold descriptors (holds_fds) */
    size_t max_fd_jobs; /* and at most (fd_jobs_max) */
    /* Shutdown. */
    int stopping, aborted, exit_code;
    int64_t stop_at, abort_until;
    pthread_t loop_thread; /* the thread that runs the loop and owns the table */
};

/* ---- the table of jobs in flight ---- */

static size_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

static wrk_job_t *table_find(wrk_worker_t *w, const char *id)
{
    for (wrk_job_t *j = w->buckets[hash_id(id) & (w->nbuckets - 1)]; j; j = j->hnext)
        if (strcmp(j->env.job_id, id) == 0)
            return j;
    return NULL;
}

/* The log resolver (log.h): a line naming a job in flight here carries that job's trace,
 * whichever callback logged it. The table belongs to the loop thread: others get nothing. */
static int trace_of_job(const char *job_id, log_ctx_t *out, void *arg)
{
    wrk_worker_t *w = arg;
    if (!pthread_equal(pthread_self(), w->loop_thread) || !w->buckets)
        return 0;
    const wrk_job_t *job = table_find(w, job_id);
    if (!job || (!job->trace.trace_id[0] && !job->env.request_id))
        return 0;
    snprintf(out->trace_id, sizeof(out->trace_id), "%s", job->trace.trace_id);
    snprintf(out->span_id, sizeof(out->span_id), "%s", job->trace.span_id);
    snprintf(out->request_id, sizeof(out->request_id), "%s",
             job->env.request_id ? job->env.request_id : "");
    return 1;
}

static void table_grow(wrk_worker_t *w)
{
    size_t n = w->nbuckets * 2;
    wrk_job_t **b = calloc(n, sizeof(*b));
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < w->nbuckets; i++) {
        for (wrk_job_t *j = w->buckets[i], *next; j; j = next) {
            next = j->hnext;
            size_t k = hash_id(j->env.job_id) & (n - 1);
            j->hnext = b[k];
            b[k] = j;
        }
    }
    free(w->buckets);
    w->buckets = b;
    w->nbuckets = n;
}

/* 1 for a job whose executor holds descriptors while it runs (every type but builtin: a
 * socket, an exec child's pipes, an upstream's connection); a builtin job (echo, sleep) holds
 * none, so any number of them up to MCPQ_MAX_INFLIGHT_JOBS may wait at once. */
static int holds_fds(const wrk_job_t *job)
{
    return !job->env.exec_type || strcmp(job->env.exec_type, "builtin") != 0;
}

static void table_add(wrk_worker_t *w, wrk_job_t *job)
{
    if (w->njobs >= w->nbuckets)
        table_grow(w);
    size_t k = hash_id(job->env.job_id) & (w->nbuckets - 1);
    job->hnext = w->buckets[k];
    w->buckets[k] = job;
    w->njobs++;
    w->fd_jobs += (size_t)holds_fds(job);
}

static void table_remove(wrk_worker_t *w, wrk_job_t *job)
{
    for (wrk_job_t **pp = &w->buckets[hash_id(job->env.job_id) & (w->nbuckets - 1)]; *pp;
         pp = &(*pp)->hnext) {
        if (*pp == job) {
            *pp = job->hnext;
            w->njobs--;
            w->fd_jobs -= (size_t)holds_fds(job);
            return;
        }
    }
}

/* Calls fn on every job in flight; fn may free the job it gets. */
static void table_each(wrk_worker_t *w, void (*fn)(wrk_worker_t *, wrk_job_t *))
{
    for (size_t i = 0; i < w->nbuckets; i++) {
        for (wrk_job_t *j = w->buckets[i], *next; j; j = next) {
            next = j->hnext;
            fn(w, j);
        }
    }
}

/* ---- job completion ---- */

/* The job is over here: its records are finished (result durable) or abandoned. */
static void job_release(wrk_worker_t *w, wrk_job_t *job, int durable)
{
    if (!durable)
        wrk_stats_released(w->metrics);
    for (size_t i = 0; i < job->nnodes; i++) {
        if (durable)
            wrk_offsets_node_done(job->nodes[i]);
        else
            wrk_offsets_node_abandon(job->nodes[i]);
    }
    job->nnodes = 0;
    wrk_store_forget(w->store, &job->req);
    table_remove(w, job);
    wrk_job_free(job);
}

static void on_written(wrk_store_req_t *req, const char *record, size_t len, void *arg);
static void on_cancel_written(wrk_store_req_t *req, const char *data, size_t len, void *arg);

/* Queues the job's end for Redis: WRITE (SET NX + reply entries), REPLY (reply entries only)
 * or CANCEL (cancelled entries, no record), to the reply streams from index `from` on. */
static void write_request(wrk_job_t *job, wrk_store_op_t op, size_t from)
{
    wrk_worker_t *w = job->rt->arg;
    wrk_store_forget(w->store, &job->req); /* a cancellation probe still queued */
    job->state = WRK_JOB_WRITING;
    memset(&job->req, 0, sizeof(job->req));
    job->req.op = op;
    job->req.job_id = job->env.job_id;
    job->req.record = job->record;
    job->req.record_len = job->record_len;
    job->req.streams = job->streams + from;
    job->req.nstreams = job->nstreams - from;
    job->req.ttl_s = job->env.result_ttl_s;
    job->req.done = op == WRK_STORE_CANCEL ? on_cancel_written : on_written;
    job->req.arg = job;
    trace_ctx_t t;
    if (op == WRK_STORE_WRITE && job->span && !job->result_span &&
        trace_child(&job->trace, &t) == 0) { /* "result": the record made durable (otel.h) */
        job->result_span = otel_span_start(&t, job->trace.span_id, "result", OTEL_KIND_CLIENT, 0);
        otel_span_str(job->result_span, "db.system.name", "redis");
        otel_span_str(job->result_span, "mcpq.job_id", job->env.job_id);
        otel_span_int(job->result_span, "mcpq.reply_streams", (long long)job->req.nstreams);
    }
    wrk_store_submit(w->store, &job->req);
}

/* The cancelled entries are written: the job is finished (its offsets may be stored). */
static void on_cancel_written(wrk_store_req_t *req, const char *data, size_t len, void *arg)
{
    wrk_job_t *job = arg;
    wrk_worker_t *w = job->rt->arg;
    (void)data;
    (void)len;
    size_t sent = (size_t)(req->streams - job->streams) + req->nstreams;
    if (job->nstreams > sent) {
        /* Deliveries from other ingress replicas arrived meanwhile: they hear it too. */
        write_request(job, WRK_STORE_CANCEL, sent);
        return;
    }
    job_release(w, job, 1);
}

static void on_written(wrk_store_req_t *req, const char *record, size_t len, void *arg)
{
    wrk_job_t *job = arg;
    wrk_worker_t *w = job->rt->arg;
    if (req->op == WRK_STORE_WRITE)
        wrk_stats_result_write(w->metrics, util_mono_us() - req->submitted_us);
    int theirs = len != job->record_len || memcmp(record, job->record, len) != 0;
    otel_span_bool(job->result_span, "mcpq.result.theirs", theirs);
    otel_span_end(job->result_span, 0);
    job->result_span = NULL;
    if (theirs && req->op == WRK_STORE_WRITE)
        log_event(LOG_INFO, "another worker wrote this job's result first; kept theirs", "job_id",
                  job->env.job_id, (char *)NULL);
    size_t sent = (size_t)(req->streams - job->streams) + req->nstreams;
    if (job->nstreams > sent) {
        /* Deliveries from other ingress replicas arrived while this was being written: their
         * streams get the same durable record before any offset is stored. */
        char *copy = theirs ? malloc(len + 1) : NULL;
        if (copy) {
            memcpy(copy, record, len);
            copy[len] = '\0';
            free(job->record);
            job->record = copy;
            job->record_len = len;
        }
        write_request(job, WRK_STORE_REPLY, sent);
        return;
    }
    job_release(w, job, 1);
}

/* ---- tasks (worker/core/handoff.h) ---- */

static void task_release(wrk_worker_t *w, wrk_job_t *job)
{
    w->ntasks--;
    job_release(w, job, 1);
}

/* The run's end as the task model keeps it: complete, or terminated with a reason. 1 when
 * written (or no longer ours), 0 to retry. */
static int task_end(wrk_worker_t *w, wrk_job_t *job)
{
    cJSON *rec = cJSON_ParseWithLength(job->record, job->record_len);
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "status"));
    cJSON *result = cJSON_GetObjectItemCaseSensitive(rec, "result");
    char reason[300] = "";
    char *result_json = NULL;
    const char *fault = NULL; /* a failure outside the tool: its JSON-RPC code */
    int failed = 1;
    if (status && strcmp(status, "ok") == 0 && cJSON_IsObject(result)) {
        failed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"));
        if (failed)
            snprintf(reason, sizeof(reason), "the tool returned an error result");
        result_json = cJSON_PrintUnformatted(result);
    } else {
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(rec, "error"), "message"));
        int timeout = status && strcmp(status, "timeout") == 0;
        fault = timeout ? TASK_FAULT_TIMEOUT : TASK_FAULT_INTERNAL;
        if (timeout)
            snprintf(reason, sizeof(reason), "timed out after %lld ms",
                     (long long)(job->env.timeout_ms > 0 ? job->env.timeout_ms
                                                         : w->s->default_timeout_ms));
        else
            snprintf(reason, sizeof(reason), "%s", msg ? msg : "the worker could not run the tool");
        cJSON *r = cJSON_CreateObject();
        cJSON *content = cJSON_AddArrayToObject(r, "content");
        cJSON *block = cJSON_CreateObject();
        cJSON_AddStringToObject(block, "type", "text");
        cJSON_AddStringToObject(block, "text", reason);
        cJSON_AddItemToArray(content, block);
        cJSON_AddTrueToObject(r, "isError");
        result_json = cJSON_PrintUnformatted(r);
        cJSON_Delete(r);
    }
    cJSON_Delete(rec);
    if (!result_json)
        return 0;
    int rc = wrk_handoff_finish(w->tasks, job->env.job_id, failed ? "terminated" : "complete",
                                result_json, reason, fault);
    cJSON_free(result_json);
    if (rc >= 0)
        wrk_stats_task_finished(w->metrics, failed ? WRK_TASK_TERMINATED : WRK_TASK_COMPLETE);
    return rc >= 0;
}

/* A claimed task's job is over: its end goes to Redis (retried on the tick while Redis is
 * unreachable). A cancelled task was ended by whoever cancelled it; one aborted by a
 * shutdown goes back to waiting at once (or, with Redis down, when its lease runs out). */
static void task_finished(wrk_worker_t *w, wrk_job_t *job)
{
    if (job->cancelled)
        wrk_stats_task_finished(w->metrics, WRK_TASK_CANCELLED);
    if (!job->cancelled && !job->record) {
        wrk_handoff_handback(w->tasks, job->env.job_id);
        wrk_stats_released(w->metrics);
    }
    if (job->cancelled || !job->record || task_end(w, job)) {
        job->task_pending = 0;
        task_release(w, job);
        return;
    }
    job->task_pending = 1;
    job->state = WRK_JOB_WRITING;
}

static void on_task_progress(wrk_job_t *job, const cJSON *data, void *arg)
{
    wrk_worker_t *w = arg;
    char *s = cJSON_PrintUnformatted(data);
    if (!s)
        return;
    wrk_handoff_progress(w->tasks, job->env.job_id,
                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "message")),
                         s);
    cJSON_free(s);
}

/* Claims tasks from this worker's queue while it has free slots, and runs them. */
static void task_claim(wrk_worker_t *w)
{
    while (!w->stopping && w->ntasks < wrk_handoff_slots(w->tasks)) {
        char *env = NULL, errstr[256];
        size_t len = 0;
        int64_t begin = 0;
        long attempt = 0;
        char tracestate[TRACE_STATE_MAX + 1];
        if (wrk_handoff_claim(w->tasks, &env, &len, &begin, &attempt, tracestate) <= 0)
            return;
        wrk_job_t *job = wrk_job_new(&w->rt);
        if (!job || wrk_job_parse(job, env, len, NULL, errstr, sizeof(errstr)) < 0 ||
            table_find(w, job->env.job_id)) {
            /* Unreadable or already here: its lease runs out and the reaper decides. */
            log_event(LOG_ERROR, "claimed task cannot run here", "error",
                      job ? errstr : "out of memory", (char *)NULL);
            wrk_job_free(job);
            free(env);
            return;
        }
        free(env);
        job->task = 1;
        /* the client's tracestate, relayed as a Kafka record's (record_tracestate) */
        memcpy(job->tracestate, tracestate, sizeof(job->tracestate));
        /* A task's timeout counts from its start, not its time in the queue (docs/protocol.md). */
        int64_t timeout = job->env.timeout_ms > 0 ? job->env.timeout_ms : w->s->default_timeout_ms;
        job->deadline_ms = (begin > 0 ? begin : util_now_ms()) + timeout;
        job->nstreams = 0; /* nobody waits live on a task's job */
        char att[24];
        snprintf(att, sizeof(att), "%ld", attempt);
        log_ctx_t saved;
        wrk_job_log_enter(job, &saved);
        log_event(LOG_INFO, "task started", "task_id", job->env.job_id, "tool", job->env.tool,
                  "tenant", job->env.tenant, "attempt", att, (char *)NULL);
        wrk_job_log_leave(&saved);
        table_add(w, job);
        w->ntasks++;
        job->state = WRK_JOB_RUNNING;
        wrk_job_run(job);
    }
}

/* Task records whose hand-off failed, and task ends not yet written: tried again. */
static void task_retry(wrk_worker_t *w, wrk_job_t *job)
{
    if (job->task && job->task_pending)
        task_finished(w, job);
}

static void handoff_retry(wrk_worker_t *w)
{
    wrk_job_t **pp = &w->handoffs;
    while (*pp) {
        wrk_job_t *job = *pp;
        if (!w->stopping && wrk_handoff_enqueue(w->tasks, job->env.task_id) < 0)
            return;
        *pp = job->hnext;
        for (size_t i = 0; i < job->nnodes; i++) {
            if (w->stopping)
                wrk_offsets_node_abandon(job->nodes[i]);
            else
                wrk_offsets_node_done(job->nodes[i]);
        }
        job->nnodes = 0;
        wrk_job_free(job);
    }
}

/* A task's record from Kafka: into its robot's queue, and the offset is done. */
static void task_handoff(wrk_worker_t *w, wrk_job_t *job, wrk_offsets_node_t *node)
{
    if (wrk_job_attach(job, node, NULL) < 0) {
        wrk_offsets_node_abandon(node);
        wrk_job_free(job);
        return;
    }
    job->hnext = w->handoffs;
    w->handoffs = job;
    handoff_retry(w);
}

/* Every second: renew the leases of running tasks (before reaping, so none of ours is
 * reaped), retry pending ends and hand-offs, then reap leases that ran out anywhere. */
static void task_second(wrk_worker_t *w)
{
    const char *ids[256];
    size_t n = 0;
    for (size_t i = 0; i < w->nbuckets; i++) {
        for (wrk_job_t *j = w->buckets[i]; j; j = j->hnext) {
            if (!j->task || j->task_pending)
                continue;
            ids[n++] = j->env.job_id;
            if (n == sizeof(ids) / sizeof(ids[0])) {
                wrk_handoff_heartbeat(w->tasks, ids, n);
                n = 0;
            }
        }
    }
    if (n)
        wrk_handoff_heartbeat(w->tasks, ids, n);
    table_each(w, task_retry);
    handoff_retry(w);
    wrk_handoff_reap(w->tasks);
}

/* A job ended here: its outcome and run time for the metrics (an aborted job, without a
 * record, is counted as released when it is let go). */
static void job_count(wrk_worker_t *w, const wrk_job_t *job)
{
    wrk_outcome_t out;
    if (job->cancelled)
        out = WRK_OUT_CANCELLED;
    else if (!job->record)
        return;
    else if (job->status == WRK_STATUS_TIMEOUT)
        out = WRK_OUT_TIMEOUT;
    else if (job->status == WRK_STATUS_ERROR)
        out = WRK_OUT_ERROR;
    else
        out = job->is_error ? WRK_OUT_TOOL_ERROR : WRK_OUT_OK;
    int64_t ran = -1; /* never started: not in the histogram */
    if (job->started_ms)
        ran = util_mono_us() - job->started_mono_us;
    wrk_stats_job(w->metrics, job->env.exec_type, out, ran);
}

/* rt->on_finished: the job's record is built, or the job was cancelled by its caller, or
 * aborted. */
static void on_job_finished(wrk_job_t *job, void *arg)
{
    wrk_worker_t *w = arg;
    job_count(w, job);
    if (job->task) {
        task_finished(w, job);
        return;
    }
    if (job->cancelled) {
        write_request(job, WRK_STORE_CANCEL, 0);
        return;
    }
    if (!job->record) {
        job_release(w, job, 0);
        return;
    }
    write_request(job, WRK_STORE_WRITE, 0);
}

/* The job has no result but an attempt asked its client (docs/internals.md, "Asking the
 * client"): the tool is not run again. A question another worker keeps alive means that worker
 * runs the job still: this delivery is done (its offset stored) and writes nothing; should that
 * worker die, its question expires and the ingress tells the client the input was lost. No
 * live question: the attempt that asked died, and the job ends with the input_lost error. */
static void checked_asked(wrk_worker_t *w, wrk_job_t *job, int live)
{
    if (live) {
        log_event(LOG_INFO,
                  "job delivered again while another worker waits for its client's "
                  "answer: not running it",
                  "job_id", job->env.job_id, (char *)NULL);
        wrk_stats_redelivered(w->metrics, WRK_REDELIVERED_ATTACHED);
        job_release(w, job, 1);
        return;
    }
    log_event(LOG_WARN,
              "job delivered again after its worker stopped while it asked its client: "
              "not running it (input lost)",
              "job_id", job->env.job_id, (char *)NULL);
    wrk_job_fail_reason(job, WRK_ERR_INTERNAL, WRK_ASK_LOST_MESSAGE, WRK_ASK_LOST_REASON);
}

static void on_checked(wrk_store_req_t *req, const char *record, size_t len, void *arg)
{
    wrk_job_t *job = arg;
    wrk_worker_t *w = job->rt->arg;
    if (w->stopping) {
        job_release(w, job, 0);
        return;
    }
    if (!record && req->asked) {
        checked_asked(w, job, req->ask_live);
        return;
    }
    if (!record) {
        /* No result yet; a cancel key set meanwhile means it never starts. */
        if (req->cancelled)
            wrk_job_cancel(job, WRK_CANCEL_CALLER);
        wrk_job_run(job);
        return;
    }
    log_event(LOG_INFO, "job ran already: re-sending its result", "job_id", job->env.job_id,
              "tenant", job->env.tenant, "tool", job->env.tool, (char *)NULL);
    wrk_stats_redelivered(w->metrics, WRK_REDELIVERED_RESENT);
    job->record = malloc(len + 1);
    if (!job->record) {
        job_release(w, job, 0);
        return;
    }
    memcpy(job->record, record, len);
    job->record[len] = '\0';
    job->record_len = len;
    write_request(job, WRK_STORE_REPLY, 0);
}

/* ---- cancellation (docs/internals.md "Cancellation") ---- */

/* The caller cancelled job: a job still being checked never starts, a running one is
 * stopped like a timed-out one; either ends through on_job_finished with job->cancelled
 * set. A job already writing its end is left alone. */
static void job_cancel(wrk_job_t *job, const char *via)
{
    if (job->cancelled || job->state == WRK_JOB_WRITING)
        return;
    log_event(LOG_DEBUG, "cancellation received", "job_id", job->env.job_id, "via", via,
              (char *)NULL);
    wrk_job_cancel(job, WRK_CANCEL_CALLER); /* may release the job */
}

/* A message on {mcpq}:cancel: most name jobs of other workers. */
static void on_cancel_message(const char *job_id, void *arg)
{
    wrk_worker_t *w = arg;
    wrk_job_t *job = table_find(w, job_id);
    if (job)
        job_cancel(job, "pubsub");
}

static void on_probed(wrk_store_req_t *req, const char *record, size_t len, void *arg)
{
    wrk_job_t *job = arg;
    (void)record;
    (void)len;
    if (req->cancelled)
        job_cancel(job, "key");
}

/* Queues EXISTS {mcpq}:cancel:<id> for a running job (its request is idle while it runs). */
static void probe_job(wrk_worker_t *w, wrk_job_t *job)
{
    if (job->state != WRK_JOB_RUNNING || !job->executing || job->cancel != WRK_CANCEL_NONE ||
        wrk_store_queued(&job->req))
        return;
    memset(&job->req, 0, sizeof(job->req));
    job->req.op = WRK_STORE_PROBE;
    job->req.job_id = job->env.job_id;
    job->req.done = on_probed;
    job->req.arg = job;
    wrk_store_submit(w->store, &job->req);
}

/* Pub/Sub loses messages while its connection is down: the keys are checked too. */
static void on_cancel_tick(wrk_loop_timer_t *t, void *arg)
{
    wrk_worker_t *w = arg;
    table_each(w, probe_job);
    wrk_agent_tick(w->agent); /* agent replies whose Pub/Sub message was lost */
    wrk_ask_tick(w->ask);     /* keeps questions alive; answers whose message was lost */
    task_second(w);
    wrk_loop_timer_start(w->loop, t, CANCEL_CHECK_MS);
}

/* A message on {mcpq}:agentreply: the reply of an agent call is stored (agent.h). */
static void on_agent_reply(const char *message_id, void *arg)
{
    wrk_worker_t *w = arg;
    wrk_agent_reply_ready(w->agent, message_id);
}

/* A message on mcpq:answer: a question of a job here may be answered (ask.h). */
static void on_answer(const char *job_id, void *arg)
{
    wrk_worker_t *w = arg;
    wrk_ask_answered(w->ask, job_id);
}

/* ---- records ---- */

/* The record's traceparent header into buf (NULL when absent or too long to be one). */
static const char *record_traceparent(const rd_kafka_message_t *msg, char *buf, size_t size)
{
    rd_kafka_headers_t *hdrs = NULL;
    const void *v = NULL;
    size_t n = 0;
    if (rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(hdrs, NAMES_HDR_TRACEPARENT, &v, &n) !=
            RD_KAFKA_RESP_ERR_NO_ERROR ||
        !v || n >= size)
        return NULL;
    memcpy(buf, v, n);
    buf[n] = '\0';
    return buf;
}

/* The record's tracestate header into job->tracestate when it may be relayed (trace.h). */
static void record_tracestate(const rd_kafka_message_t *msg, wrk_job_t *job)
{
    rd_kafka_headers_t *hdrs = NULL;
    const void *v = NULL;
    size_t n = 0;
    job->tracestate[0] = '\0';
    if (rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(hdrs, NAMES_HDR_TRACESTATE, &v, &n) !=
            RD_KAFKA_RESP_ERR_NO_ERROR ||
        !v || n >= sizeof(job->tracestate))
        return;
    memcpy(job->tracestate, v, n);
    job->tracestate[n] = '\0';
    if (!trace_state_ok(job->tracestate))
        job->tracestate[0] = '\0';
}

/* The record's job id when it is a valid one, for the log line of a refused record: its
 * job_id header, else its key (a subscription's job is keyed by its resource, not its id:
 * docs/executors.md, "Resource subscriptions"). */
static const char *record_key(const rd_kafka_message_t *msg, char *buf, size_t size)
{
    rd_kafka_headers_t *hdrs = NULL;
    const void *v = NULL;
    size_t n = 0;
    if (rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(hdrs, NAMES_HDR_JOB_ID, &v, &n) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        !v) {
        v = msg->key;
        n = msg->key_len;
    }
    if (!v || n == 0 || n >= size || memchr(v, '\0', n))
        return "(none)";
    memcpy(buf, v, n);
    buf[n] = '\0';
    return wrk_envelope_id_valid(buf) ? buf : "(invalid)";
}

/* Checks the record's job signature (jobsig.h) before anything of it is read. 1: go on;
 * 0: refused, and then it is only logged, counted and its offset done. Nothing is written
 * to Redis for it: its reply_to and task_id are as unauthenticated as the rest, and
 * answering them would let any writer to the topic end other callers' calls. */
static int record_signed(wrk_worker_t *w, const rd_kafka_message_t *msg, wrk_offsets_node_t *node,
                         const char *part, const char *off)
{
    if (w->keys->n == 0)
        return 1;
    rd_kafka_headers_t *hdrs = NULL;
    const void *v = NULL;
    size_t n = 0;
    if (rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(hdrs, JOBSIG_HEADER, &v, &n) != RD_KAFKA_RESP_ERR_NO_ERROR)
        v = NULL;
    jobsig_check_t c =
        jobsig_verify(w->keys, msg->payload ? msg->payload : "", msg->len, v, v ? n : 0);
    if (c == JOBSIG_OK)
        return 1;
    char key[WRK_ID_MAX + 1];
    log_event(LOG_WARN, "job record refused: no valid job signature, nothing of it runs",
              "partition", part, "offset", off, "job_id", record_key(msg, key, sizeof(key)),
              "signature", jobsig_check_name(c), (char *)NULL);
    wrk_stats_rejected(w->metrics, WRK_REJECTED_SIGNATURE);
    wrk_offsets_node_done(node);
    return 0;
}

static void record_run(wrk_worker_t *w, wrk_job_t *job, wrk_offsets_node_t *node, int rc,
                       const char *errstr, const char *part, const char *off);

static void on_record(const rd_kafka_message_t *msg, wrk_offsets_node_t *node, void *arg)
{
    wrk_worker_t *w = arg;
    char part[16], off[24], errstr[256], tp[TRACE_PARENT_LEN + 8];
    snprintf(part, sizeof(part), "%d", (int)msg->partition);
    snprintf(off, sizeof(off), "%lld", (long long)msg->offset);
    if (!node) {
        log_event(LOG_DEBUG, "record of an untracked partition ignored", "partition", part,
                  "offset", off, (char *)NULL);
        return;
    }
    if (w->stopping || wrk_consumer_left(w->consumer)) {
        /* Fetched before the revoke was served: the next owner of the partition runs it. */
        wrk_offsets_node_abandon(node);
        wrk_stats_released(w->metrics);
        return;
    }
    if (!record_signed(w, msg, node, part, off))
        return;
    wrk_job_t *job = wrk_job_new(&w->rt);
    if (!job) {
        wrk_offsets_node_abandon(node);
        return;
    }
    job->partition = msg->partition;
    job->offset = msg->offset;
    int rc = wrk_job_parse(job, msg->payload, msg->len, record_traceparent(msg, tp, sizeof(tp)),
                           errstr, sizeof(errstr));
    record_tracestate(msg, job);
    if (rc == 0) /* every record picked up, redeliveries too: they waited as long */
        wrk_stats_queue_wait(w->metrics, job->env.sent_us, job->picked_us);
    log_ctx_t saved;
    wrk_job_log_enter(job, &saved); /* the job may be freed in record_run: saved is a copy */
    record_run(w, job, node, rc, errstr, part, off);
    wrk_job_log_leave(&saved);
}

/* The rest of on_record, in the job's trace: run the parsed job, or answer why it cannot. */
static void record_run(wrk_worker_t *w, wrk_job_t *job, wrk_offsets_node_t *node, int rc,
                       const char *errstr, const char *part, const char *off)
{
    if (rc < 0) {
        log_event(LOG_WARN, "malformed job record (it can never run)", "partition", part, "offset",
                  off, "job_id", job->env.job_id, "error", errstr, (char *)NULL);
        /* With a usable job id the error becomes its result (and, with a reply_to, the
         * waiting ingress hears it now); without one there is nobody to tell. */
        if (!job->env.job_id) {
            wrk_job_free(job);
            wrk_offsets_node_done(node);
            return;
        }
    }
    if (rc == 0 && job->env.task_id && job->env.mode && strcmp(job->env.mode, "task") == 0) {
        task_handoff(w, job, node);
        return;
    }
    wrk_job_t *running = table_find(w, job->env.job_id);
    if (running) {
        /* A redelivery of a job in flight here: one run, one result, every offset done. */
        log_event(LOG_INFO, "job delivered again while in flight: not running it twice", "job_id",
                  job->env.job_id, "partition", part, "offset", off, (char *)NULL);
        wrk_stats_redelivered(w->metrics, WRK_REDELIVERED_ATTACHED);
        if (wrk_job_attach(running, node, job->env.reply_to) < 0)
            wrk_offsets_node_abandon(node);
        wrk_job_free(job);
        return;
    }
    table_add(w, job);
    if (wrk_job_attach(job, node, NULL) < 0) {
        wrk_offsets_node_abandon(node);
        table_remove(w, job);
        wrk_job_free(job);
        return;
    }
    if (rc < 0) {
        char msgbuf[320];
        snprintf(msgbuf, sizeof(msgbuf), "malformed job envelope: %s", errstr);
        wrk_job_fail(job, WRK_ERR_INTERNAL, msgbuf);
        return;
    }
    job->state = WRK_JOB_CHECKING;
    memset(&job->req, 0, sizeof(job->req));
    job->req.op = WRK_STORE_CHECK;
    job->req.job_id = job->env.job_id;
    job->req.self = w->worker_id;
    job->req.done = on_checked;
    job->req.arg = job;
    wrk_store_submit(w->store, &job->req);
}

static int ready_file_write(const char *path, const char *content)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return MCPQ_EINVAL;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return MCPQ_EIO;
    int bad = fprintf(f, "%s\n", content) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return MCPQ_EIO;
    }
    return 0;
}

static void on_assign(int count, void *arg)
{
    wrk_worker_t *w = arg;
    (void)count;
    if (w->ready_written)
        return;
    w->ready_written = 1;
    const char *rf = w->s->ready_file;
    if (rf && *rf && ready_file_write(rf, w->worker_id) < 0)
        log_msgf(LOG_ERROR, "cannot write ready file %s: %s", rf, strerror(errno));
    log_event(LOG_INFO, "worker ready: joined the consumer group", "worker", w->worker_id,
              (char *)NULL);
}

/* ---- loop callbacks ---- */

static void on_kafka_wake(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    wrk_worker_t *w = arg;
    (void)io;
    (void)fd;
    (void)events;
    wrk_consumer_wake_clear(w->consumer);
    w->kafka_more = 1;
}

static void on_tick(wrk_loop_timer_t *t, void *arg)
{
    wrk_worker_t *w = arg;
    w->kafka_more = 1; /* also keeps max.poll.interval.ms satisfied when idle */
    task_claim(w);
    wrk_loop_timer_start(w->loop, t, TICK_MS);
}

static void abandon_waiting(wrk_worker_t *w, wrk_job_t *job)
{
    if (job->state == WRK_JOB_CHECKING)
        job_release(w, job, 0);
}

static void abort_job(wrk_worker_t *w, wrk_job_t *job)
{
    if (job->state == WRK_JOB_RUNNING && job->executing)
        wrk_job_cancel(job, WRK_CANCEL_ABORT); /* may release the job */
    else if (job->state != WRK_JOB_RUNNING)
        job_release(w, job, 0);
}

static void begin_abort(wrk_worker_t *w)
{
    if (w->aborted)
        return;
    w->aborted = 1;
    w->abort_until = util_mono_ms() + ABORT_WAIT_MS;
    if (w->njobs > 0) {
        char n[24];
        snprintf(n, sizeof(n), "%zu", w->njobs);
        log_event(LOG_WARN,
                  "shutdown grace over: abandoning unfinished jobs (they will be "
                  "delivered again)",
                  "jobs", n, (char *)NULL);
    }
    table_each(w, abort_job);
}

static void begin_stop(wrk_worker_t *w, const char *why)
{
    if (w->stopping) {
        begin_abort(w);
        return;
    }
    w->stopping = 1;
    wrk_stats_stopping(w->metrics);
    w->stop_at = util_mono_ms() + w->s->shutdown_grace_ms;
    char n[24];
    snprintf(n, sizeof(n), "%zu", w->njobs);
    log_event(LOG_INFO, "stopping: no new jobs, letting running ones finish", "reason", why, "jobs",
              n, (char *)NULL);
    wrk_consumer_pause(w->consumer, 1);
    /* Jobs that have not started yet are left for whoever gets their records next. */
    table_each(w, abandon_waiting);
    handoff_retry(w);
}

static void on_signal(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    wrk_worker_t *w = arg;
    (void)io;
    (void)events;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        begin_stop(w, si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
}

/* ---- Redis lost: leaving the consumer group (docs/reliability.md) ---- */

/* 1 while Redis answers, as the worker's gauge, readiness and group membership see it: the
 * cancel subscription (kept connected and PINGed even when no job runs) is up, and the writer
 * is not failing with requests queued. A writer whose last attempt failed says nothing about
 * now once it has nothing left to send: it only tries again when it gets a request. */
static int redis_reachable(const wrk_worker_t *w)
{
    return wrk_cancelsub_up(w->cancelsub) &&
           (wrk_store_up(w->store) || !wrk_store_pending(w->store));
}

/*
 * Once per loop round. After MCPQ_WORKER_REDIS_LOST_LEAVE_MS without Redis the worker leaves
 * the consumer group (wrk_consumer_leave), so the group gives its partitions to workers that
 * can reach Redis instead of their jobs waiting for this one; it joins again as soon as Redis
 * answers. On leaving, jobs still waiting for their result check are let go (their records
 * are delivered again to the next owner, which runs them once); jobs already running finish
 * here and their results are written when Redis is back: the next owner runs them too, and
 * the first result written is the one every caller gets (SET NX, docs/internals.md "Worker
 * delivery semantics").
 */
static void redis_watch(wrk_worker_t *w)
{
    long long leave_ms = w->s->worker_redis_lost_leave_ms;
    if (w->stopping || leave_ms <= 0)
        return;
    int64_t now = util_mono_ms();
    if (redis_reachable(w)) {
        if (wrk_consumer_left(w->consumer) && wrk_consumer_rejoin(w->consumer) == 0) {
            char away[24];
            snprintf(away, sizeof(away), "%lld", (long long)(now - w->redis_lost_at));
            log_event(LOG_INFO, "redis answers again: joining the consumer group again", "worker",
                      w->worker_id, "away_ms", away, (char *)NULL);
            w->kafka_more = 1;
        }
        if (!wrk_consumer_left(w->consumer))
            w->redis_lost_at = 0;
        return;
    }
    if (w->redis_lost_at == 0)
        w->redis_lost_at = now;
    if (wrk_consumer_left(w->consumer) || now - w->redis_lost_at < leave_ms)
        return;
    if (wrk_consumer_leave(w->consumer) < 0)
        return;
    w->redis_leaves++;
    char lost[24], n[24];
    snprintf(lost, sizeof(lost), "%lld", (long long)(now - w->redis_lost_at));
    snprintf(n, sizeof(n), "%zu", w->njobs);
    log_event(LOG_WARN,
              "redis unreachable: leaving the consumer group so that other workers take this "
              "worker's partitions; it joins again when Redis answers",
              "worker", w->worker_id, "lost_ms", lost, "jobs", n, (char *)NULL);
    table_each(w, abandon_waiting);
    w->kafka_more = 1; /* serve the revoke */
}

/* ---- metrics ---- */

static void on_lag(const char *topic, const int32_t *partitions, const int64_t *lags, size_t n,
                   void *arg)
{
    wrk_worker_t *w = arg;
    wrk_stats_lag(w->metrics, topic, partitions, lags, n);
}

/* Once per loop round: a few atomic stores for the metrics server's thread. */
static void metrics_publish(wrk_worker_t *w)
{
    wrk_stats_gauges_t g = {
        .running = w->rt.executing,
        .inflight = w->njobs,
        .kafka_up = wrk_consumer_up(w->consumer),
        .redis_up = redis_reachable(w),
        .redis_lost_left = wrk_consumer_left(w->consumer),
        .redis_lost_leaves = w->redis_leaves,
        .assigned = wrk_consumer_assigned(w->consumer),
        .topic_partitions = wrk_consumer_topic_partitions(w->consumer),
        .idle_member = wrk_consumer_idle_member(w->consumer),
    };
    wrk_store_counts(w->store, &g.results_written, &g.results_retried);
    wrk_stats_gauges(w->metrics, &g);
}

/* ---- construction ---- */

static void make_worker_id(wrk_worker_t *w)
{
    if (w->s->worker_id && *w->s->worker_id) {
        snprintf(w->worker_id, sizeof(w->worker_id), "%s", w->s->worker_id);
        return;
    }
    char host[128] = "host";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(w->worker_id, sizeof(w->worker_id), "worker-%s-%ld", host, (long)getpid());
}

/* The event loop and the services the worker's jobs use: executors' HTTP and MCP clients,
 * the Redis target and writer, agents, task handoffs, metrics and cancel notices. 0, or
 * MCPQ_EIO (or kv_target_new's reason) with errstr filled; w keeps what was made. */
static int make_services(wrk_worker_t *w, char *errstr, size_t errstr_size)
{
    const mcpq_settings_t *s = w->s;
    w->loop = wrk_loop_new();
    w->http = w->loop ? wrk_httpexec_new(w->loop, (size_t)s->max_output_bytes) : NULL;
    w->mcp = w->http ? wrk_mcpexec_new(w->http) : NULL;
    w->kvt = kv_target_new(s, errstr, errstr_size);
    if (!w->kvt)
        return MCPQ_EIO;
    w->store = wrk_store_new(w->kvt, (int)s->redis_timeout_ms, s->result_ttl_s);
    if (w->store)
        wrk_store_set_wait(w->store, (int)s->redis_wait_replicas, (int)s->redis_wait_timeout_ms);
    w->agent = wrk_agent_new(s, w->kvt);
    w->tasks = wrk_handoff_new(s, w->kvt, w->worker_id);
    w->ask = w->loop ? wrk_ask_new(s, w->kvt, w->loop, w->worker_id) : NULL;
    w->metrics = wrk_stats_new();
    w->cancelsub =
        w->loop ? wrk_cancelsub_new(w->loop, w->kvt, (int)s->redis_timeout_ms, on_cancel_message, w)
                : NULL;
    if (!w->buckets || !w->loop || !w->http || !w->mcp || !w->store || !w->cancelsub || !w->tasks ||
        !w->agent || !w->metrics || !w->ask) {
        snprintf(errstr, errstr_size, "cannot set up the event loop");
        return MCPQ_EIO;
    }
    return 0;
}

/* The runtime jobs and executors get: the services and the worker's callbacks. */
static void make_runtime(wrk_worker_t *w)
{
    w->rt.loop = w->loop;
    w->rt.http = w->http;
    w->rt.agent = w->agent;
    wrk_cancelsub_on_reply(w->cancelsub, on_agent_reply, w);
    wrk_cancelsub_on_answer(w->cancelsub, on_answer, w);
    w->rt.ask = w->ask;
    w->rt.mcp = w->mcp;
    w->rt.store = w->store;
    w->rt.settings = w->s;
    w->rt.worker_id = w->worker_id;
    w->rt.on_finished = on_job_finished;
    w->rt.find_executor = wrk_executor_find;
    w->rt.on_task_progress = on_task_progress;
    w->rt.arg = w;
}

/* SIGTERM and SIGINT read from a signalfd on the loop (the caller blocked them). 0, or
 * MCPQ_EIO with errstr filled when signalfd fails; a failed watch is found by the caller. */
static int watch_signals(wrk_worker_t *w, char *errstr, size_t errstr_size)
{
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    w->sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (w->sigfd < 0) {
        snprintf(errstr, errstr_size, "signalfd: %s", strerror(errno));
        return MCPQ_EIO;
    }
    w->signal_io = wrk_loop_io_new(w->loop, w->sigfd, EPOLLIN, on_signal, w);
    return 0;
}

/* The Kafka consumer of the jobs topic, watched on the loop (with the signals). 0, or
 * MCPQ_EIO with errstr filled. */
static int start_consumer(wrk_worker_t *w, char *errstr, size_t errstr_size)
{
    const mcpq_settings_t *s = w->s;
    int static_member = s->worker_id && *s->worker_id;
    w->consumer = wrk_consumer_new(s, w->worker_id, static_member, on_record, on_assign, w, errstr,
                                   errstr_size);
    if (!w->consumer)
        return MCPQ_EIO;
    wrk_consumer_on_lag(w->consumer, on_lag, w);
    w->kafka_io = wrk_loop_io_new(w->loop, wrk_consumer_fd(w->consumer), EPOLLIN, on_kafka_wake, w);
    if (!w->signal_io || !w->kafka_io) {
        snprintf(errstr, errstr_size, "cannot watch the Kafka queue or signals");
        return MCPQ_EIO;
    }
    return 0;
}

wrk_worker_t *wrk_worker_new(const mcpq_settings_t *s, const jobsig_keys_t *keys, char *errstr,
                             size_t errstr_size)
{
    wrk_worker_t *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    w->s = s;
    w->keys = keys;
    w->sigfd = -1;
    wrk_loop_timer_init(&w->tick, on_tick, w);
    wrk_loop_timer_init(&w->cancel_tick, on_cancel_tick, w);
    make_worker_id(w);
    w->nbuckets = 1024;
    w->buckets = calloc(w->nbuckets, sizeof(*w->buckets));
    /* Before any thread starts (log.h); wrk_worker_run names the loop thread again. */
    w->loop_thread = pthread_self();
    log_trace_resolver_set(trace_of_job, w);
    if (make_services(w, errstr, errstr_size) < 0)
        goto fail;
    make_runtime(w);
    if (watch_signals(w, errstr, errstr_size) < 0 || start_consumer(w, errstr, errstr_size) < 0)
        goto fail;
    if (wrk_stats_serve(w->metrics, s->metrics_listen, errstr, errstr_size) < 0)
        goto fail;
    wrk_loop_timer_start(w->loop, &w->tick, TICK_MS);
    wrk_loop_timer_start(w->loop, &w->cancel_tick, CANCEL_CHECK_MS);
    wrk_handoff_release_mine(w->tasks);
    return w;
fail:
    wrk_worker_free(w);
    return NULL;
}

/* ---- the loop ---- */

/* How many jobs that hold descriptors (holds_fds) run at once: MCPQ_MAX_INFLIGHT_JOBS, lowered
 * to what the descriptor limit allows, since such a job past it would fail to connect or to
 * spawn ("could not be reached") instead of waiting its turn in Kafka (docs/configuration.md;
 * the workers section of docs/benchmarks.md, bench/sec_workers.sh). Builtin jobs do not
 * count against it. Logs a warning when it lowers the setting. */
static size_t fd_jobs_max(const mcpq_settings_t *s)
{
    size_t max = (size_t)s->max_inflight_jobs;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return max;
    size_t cap = rl.rlim_cur > FD_RESERVE + FDS_PER_JOB
                     ? (size_t)(rl.rlim_cur - FD_RESERVE) / FDS_PER_JOB
                     : 1;
    if (cap >= max)
        return max;
    char want[24], got[24], fds[24];
    snprintf(want, sizeof(want), "%zu", max);
    snprintf(got, sizeof(got), "%zu", cap);
    snprintf(fds, sizeof(fds), "%llu", (unsigned long long)rl.rlim_cur);
    log_event(LOG_WARN,
              "jobs that hold descriptors (every executor but builtin) limited to what the "
              "open-file limit allows (raise ulimit -n or LimitNOFILE to run more at once)",
              "max_inflight_jobs", want, "effective", got, "open_file_limit", fds, (char *)NULL);
    return cap;
}

static void capacity_check(wrk_worker_t *w)
{
    if (w->stopping)
        return;
    size_t max = w->max_jobs, fmax = w->max_fd_jobs;
    size_t low = max - max / 10, flow = fmax - fmax / 10;
    if (low >= max)
        low = max - 1;
    if (flow >= fmax)
        flow = fmax - 1;
    int paused = wrk_consumer_paused(w->consumer);
    if (!paused && (w->njobs >= max || w->fd_jobs >= fmax)) {
        log_msgf(LOG_DEBUG, "%zu jobs in flight (%zu holding descriptors): pausing consumption",
                 w->njobs, w->fd_jobs);
        wrk_consumer_pause(w->consumer, 1);
    } else if (paused && w->njobs <= low && w->fd_jobs <= flow) {
        log_msgf(LOG_DEBUG, "%zu jobs in flight: resuming consumption", w->njobs);
        wrk_consumer_pause(w->consumer, 0);
        w->kafka_more = 1;
    }
}

/* 1 once a stopping worker has nothing left to wait for. */
static int stop_done(wrk_worker_t *w)
{
    if (!w->stopping)
        return 0;
    if (w->njobs == 0 && w->rt.executing == 0)
        return 1;
    int64_t now = util_mono_ms();
    if (!w->aborted && now >= w->stop_at)
        begin_abort(w);
    if (w->aborted && now >= w->abort_until) {
        char n[24];
        snprintf(n, sizeof(n), "%zu", w->rt.executing);
        log_event(LOG_ERROR, "executors still running after abort; exiting anyway", "executing", n,
                  (char *)NULL);
        return 1;
    }
    return 0;
}

int wrk_worker_run(wrk_worker_t *w)
{
    char maxs[24];
    w->max_jobs = (size_t)w->s->max_inflight_jobs;
    w->max_fd_jobs = fd_jobs_max(w->s);
    snprintf(maxs, sizeof(maxs), "%zu", w->max_fd_jobs);
    log_event(LOG_INFO, "worker started", "worker", w->worker_id, "topic", w->s->topic_jobs,
              "group", w->s->group_id, "robot_id", w->s->robot_id, "max_jobs_holding_fds", maxs,
              "job_signatures", w->keys->n ? "checked" : "off", (char *)NULL);
    int store_more = 0;
    w->loop_thread = pthread_self();
    for (;;) {
        int wait = (store_more || (w->kafka_more && !w->stopping)) ? 0 : -1;
        if (w->stopping && wait < 0)
            wait = 100; /* re-check the grace deadline */
        if (wrk_loop_run_once(w->loop, wait) < 0) {
            w->exit_code = 1;
            begin_stop(w, "event loop failure");
        }
        if (w->kafka_more && !w->stopping) {
            size_t room = w->max_jobs > w->njobs ? w->max_jobs - w->njobs : 0;
            size_t froom = w->max_fd_jobs > w->fd_jobs ? w->max_fd_jobs - w->fd_jobs : 0;
            if (froom < room)
                room = froom; /* the next jobs may all hold descriptors */
            int budget = room == 0 ? 16 : (int)(room < POLL_BUDGET ? room : POLL_BUDGET);
            w->kafka_more = wrk_consumer_poll(w->consumer, budget);
        }
        store_more = wrk_store_flush(w->store);
        wrk_consumer_store(w->consumer);
        capacity_check(w);
        redis_watch(w);
        metrics_publish(w);
        if (!w->stopping && wrk_consumer_fatal(w->consumer)) {
            w->exit_code = 1;
            begin_stop(w, "fatal Kafka error");
        }
        if (stop_done(w))
            break;
    }
    wrk_consumer_close(w->consumer);
    log_event(LOG_INFO, "worker stopped", "worker", w->worker_id, (char *)NULL);
    return w->exit_code;
}

static void free_job(wrk_worker_t *w, wrk_job_t *job)
{
    /* Only after an abort that timed out: the job's executor is gone with the process. */
    job_release(w, job, 0);
}

void wrk_worker_free(wrk_worker_t *w)
{
    if (!w)
        return;
    if (w->buckets && w->rt.executing == 0)
        table_each(w, free_job);
    wrk_consumer_free(w->consumer);
    log_trace_resolver_set(NULL, NULL); /* its librdkafka threads are gone */
    if (w->loop) {
        wrk_loop_timer_stop(w->loop, &w->tick);
        wrk_loop_timer_stop(w->loop, &w->cancel_tick);
        wrk_loop_io_free(w->loop, w->kafka_io);
        wrk_loop_io_free(w->loop, w->signal_io);
    }
    if (w->sigfd >= 0)
        close(w->sigfd);
    wrk_cancelsub_free(w->cancelsub);
    while (w->handoffs) {
        wrk_job_t *job = w->handoffs;
        w->handoffs = job->hnext;
        wrk_job_free(job);
    }
    wrk_handoff_free(w->tasks);
    wrk_mcpexec_free(w->mcp);
    wrk_httpexec_free(w->http);
    wrk_agent_free(w->agent);
    wrk_ask_free(w->ask); /* after the jobs: releasing one abandons its question */
    wrk_store_free(w->store);
    kv_target_free(w->kvt);
    if (w->loop && w->rt.executing == 0)
        wrk_loop_free(w->loop);
    if (w->s && w->s->ready_file && *w->s->ready_file && w->ready_written)
        unlink(w->s->ready_file);
    wrk_stats_free(w->metrics); /* last: releasing jobs above still counts */
    free(w->buckets);
    free(w);
}
