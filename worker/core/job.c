#include "job.h"

#include "ask.h"
#include "err.h"
#include "log.h"
#include "mresult.h"
#include "otel.h"
#include "output.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

wrk_job_t *wrk_job_new(wrk_rt_t *rt)
{
    wrk_job_t *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->rt = rt;
    job->partition = -1;
    job->offset = -1;
    wrk_loop_timer_init(&job->deadline_timer, NULL, job);
    return job;
}

void wrk_job_free(wrk_job_t *job)
{
    if (!job)
        return;
    wrk_ask_abandon(job);
    wrk_loop_timer_stop(job->rt->loop, &job->deadline_timer);
    for (size_t i = 0; i < WRK_JOB_MAX_STREAMS; i++)
        free(job->extra_streams[i]);
    free(job->nodes);
    free(job->record);
    free(job->body);
    free(job->req.durable);
    otel_span_free(job->result_span); /* a write that never came back */
    otel_span_end(job->span, 0);
    wrk_envelope_cleanup(&job->env);
    free(job);
}

/* The worker's span: a child of the header's traceparent, else of the envelope's, else a new
 * trace. An invalid one is ignored (W3C); without randomness the job runs untraced. The
 * sampled flag is the sampler's (otel.h): with a parent-based one, the ingress's decision. */
static void job_trace(wrk_job_t *job, const char *header)
{
    trace_ctx_t in;
    const char *from = header && trace_parse(header, &in) == 0 ? header : job->env.traceparent;
    int have = from && trace_parse(from, &in) == 0;
    job->picked_us = util_now_us();
    job->env.traceparent = NULL;
    job->traceparent[0] = '\0';
    snprintf(job->parent_span, sizeof(job->parent_span), "%s", have ? in.span_id : "");
    if (trace_start(from, &job->trace) < 0) {
        memset(&job->trace, 0, sizeof(job->trace));
        return;
    }
    job->trace.flags =
        (unsigned char)((job->trace.flags & ~1u) |
                        (otel_sample(have ? &in : NULL, job->trace.trace_id) ? 1u : 0u));
    trace_format(&job->trace, job->traceparent);
    job->env.traceparent = job->traceparent;
}

/* The job's spans once it runs here: "queue wait" (INTERNAL, from when the ingress handed the
 * job to Kafka, sent_us, else when it built it, created_ms, to picked_us; assumes NTP-synced
 * clocks, clamped at 0) and the job's own span (job.h). */
static void job_spans(wrk_job_t *job)
{
    const wrk_envelope_t *env = &job->env;
    trace_ctx_t wait;
    if (job->span || !otel_enabled() || trace_child(&job->trace, &wait) < 0)
        return;
    int64_t sent = env->sent_us > 0      ? env->sent_us
                   : env->created_ms > 0 ? env->created_ms * 1000
                                         : job->picked_us;
    otel_span_t *w = otel_span_start(&wait, job->parent_span, "queue wait", OTEL_KIND_INTERNAL,
                                     sent < job->picked_us ? sent : job->picked_us);
    otel_span_str(w, "mcpq.job_id", env->job_id);
    otel_span_end(w, job->picked_us);
    char name[OTEL_NAME_MAX];
    int call = env->method_id == KINDS_METHOD_CALL;
    if (call) /* GenAI conventions: "execute_tool {gen_ai.tool.name}"; another method: its name */
        snprintf(name, sizeof(name), "execute_tool %s", env->tool ? env->tool : "");
    else
        snprintf(name, sizeof(name), "%s", env->method);
    otel_span_t *s =
        otel_span_start(&job->trace, job->parent_span, name, OTEL_KIND_CONSUMER, job->picked_us);
    otel_span_str(s, "mcp.method.name", env->method);
    otel_span_str(s, call ? "gen_ai.tool.name" : "mcpq.object", env->tool);
    if (call)
        otel_span_str(s, "gen_ai.operation.name", "execute_tool");
    otel_span_str(s, "messaging.system", "kafka");
    otel_span_str(s, "messaging.operation.type", "process");
    otel_span_str(s, "messaging.destination.name", job->rt->settings->topic_jobs);
    if (job->partition >= 0) {
        char part[16];
        snprintf(part, sizeof(part), "%d", (int)job->partition);
        otel_span_str(s, "messaging.destination.partition.id", part);
        otel_span_int(s, "messaging.kafka.offset", job->offset);
    }
    otel_span_str(s, "mcpq.job_id", env->job_id);
    otel_span_str(s, "mcpq.tenant", env->tenant);
    otel_span_str(s, "mcpq.executor", env->exec_type);
    otel_span_str(s, "mcpq.request_id", env->request_id);
    otel_span_str(s, "mcpq.worker", job->rt->worker_id);
    job->span = s;
}

void wrk_job_log_enter(const wrk_job_t *job, log_ctx_t *saved)
{
    const char *t = job && job->trace.trace_id[0] ? job->trace.trace_id : NULL;
    log_ctx_push(t, t ? job->trace.span_id : NULL, saved);
    log_ctx_set_request(job ? job->env.request_id : NULL);
}

void wrk_job_log_leave(const log_ctx_t *saved)
{
    log_ctx_restore(saved);
}

int wrk_job_parse(wrk_job_t *job, const char *buf, size_t len, const char *traceparent,
                  char *errstr, size_t errstr_size)
{
    int rc = wrk_envelope_parse(&job->env, buf, len, errstr, errstr_size);
    job_trace(job, traceparent);
    if (job->env.reply_to) {
        job->streams[0] = job->env.reply_to;
        job->nstreams = 1;
    }
    if (rc < 0)
        return rc;
    /* The effective deadline: the envelope's, else created + timeout, else now + timeout. */
    const wrk_envelope_t *env = &job->env;
    int64_t timeout = env->timeout_ms > 0 ? env->timeout_ms : job->rt->settings->default_timeout_ms;
    if (env->deadline_ms > 0)
        job->deadline_ms = env->deadline_ms;
    else if (env->created_ms > 0)
        job->deadline_ms = env->created_ms + timeout;
    else
        job->deadline_ms = util_now_ms() + timeout;
    return 0;
}

int wrk_job_attach(wrk_job_t *job, wrk_offsets_node_t *node, const char *reply_to)
{
    if (node) {
        if (job->nnodes == job->nodes_cap) {
            size_t cap = job->nodes_cap ? job->nodes_cap * 2 : 2;
            wrk_offsets_node_t **n = realloc(job->nodes, cap * sizeof(*n));
            if (!n)
                return MCPQ_ENOMEM;
            job->nodes = n;
            job->nodes_cap = cap;
        }
        job->nodes[job->nnodes++] = node;
    }
    if (!reply_to)
        return 0;
    for (size_t i = 0; i < job->nstreams; i++)
        if (strcmp(job->streams[i], reply_to) == 0)
            return 0;
    if (job->nstreams == WRK_JOB_MAX_STREAMS)
        return 0; /* that ingress finds the durable result when its wait ends */
    char *copy = strdup(reply_to);
    if (!copy)
        return MCPQ_ENOMEM;
    job->extra_streams[job->nstreams] = copy;
    job->streams[job->nstreams++] = copy;
    return 0;
}

int64_t wrk_job_remaining_ms(const wrk_job_t *job)
{
    int64_t left = job->deadline_ms - util_now_ms();
    return left > 0 ? left : 0;
}

static void job_log_finish(const wrk_job_t *job)
{
    char dur[32], part[16], off[24];
    snprintf(dur, sizeof(dur), "%lld", (long long)(util_now_ms() - job->started_ms));
    snprintf(part, sizeof(part), "%d", (int)job->partition);
    snprintf(off, sizeof(off), "%lld", (long long)job->offset);
    log_event(job->status == WRK_STATUS_OK ? LOG_INFO : LOG_WARN, "job finish", "job_id",
              job->env.job_id, "tenant", job->env.tenant, "tool", job->env.tool, "status",
              wrk_record_status_name(job->status), "is_error", job->is_error ? "true" : "false",
              "duration_ms", dur, "partition", part, "offset", off, (char *)NULL);
}

/* Builds job->record from a status and result (borrowed), then hands the job back. */
static void job_complete_data(wrk_job_t *job, wrk_status_t status, const cJSON *result, int code,
                              const char *message, const char *reason)
{
    wrk_record_t r = {
        .job_id = job->env.job_id,
        .tenant = job->env.tenant,
        .tool = job->env.tool,
        .status = status,
        .result = result,
        .err_code = code,
        .err_msg = message,
        .err_reason = reason,
        .worker = job->rt->worker_id,
        .attempt = 1,
        .started_ms = job->started_ms ? job->started_ms : util_now_ms(),
        .finished_ms = util_now_ms(),
        .picked_us = job->picked_us,
        .exec_us = job->tool_started ? job->exec_us : 0,
        .finished_us = util_now_us(),
        .never_ran = !job->tool_started, /* an idempotent repeat runs it (idem_claim.lua) */
    };
    job->status = status;
    const cJSON *is_err = result ? cJSON_GetObjectItemCaseSensitive(result, "isError") : NULL;
    job->is_error = cJSON_IsTrue(is_err);
    if (status != WRK_STATUS_OK)
        otel_span_error(job->span, wrk_record_status_name(status), message);
    else if (job->is_error)
        otel_span_error(job->span, "tool_error", "the tool answered isError: true");
    job->record = wrk_record_build(&r, &job->record_len);
    if (!job->record) {
        /* Without a record nothing can be written: treat it like an abort, so the job is
         * delivered again rather than answered wrongly. */
        log_event(LOG_ERROR, "cannot build the result record (out of memory)", "job_id",
                  job->env.job_id, (char *)NULL);
    } else {
        job_log_finish(job);
    }
    job->rt->on_finished(job, job->rt->arg);
}

static void job_complete(wrk_job_t *job, wrk_status_t status, const cJSON *result, int code,
                         const char *message)
{
    job_complete_data(job, status, result, code, message, NULL);
}

void wrk_job_fail(wrk_job_t *job, int code, const char *message)
{
    wrk_job_fail_reason(job, code, message, NULL);
}

void wrk_job_fail_reason(wrk_job_t *job, int code, const char *message, const char *reason)
{
    if (!job->started_ms) {
        job->started_ms = util_now_ms();
        job->started_mono_us = util_mono_us();
    }
    job_complete_data(job, WRK_STATUS_ERROR, NULL, code, message, reason);
}

static void job_on_deadline(wrk_loop_timer_t *t, void *arg)
{
    wrk_job_t *job = arg;
    (void)t;
    log_event(LOG_INFO, "job deadline passed: stopping the tool", "job_id", job->env.job_id,
              "tenant", job->env.tenant, "tool", job->env.tool, (char *)NULL);
    wrk_job_cancel(job, WRK_CANCEL_TIMEOUT);
}

/* Ends the job with result (owned): a CallToolResult, mapped into the result of the job's
 * method (mresult.h), or, when native, already the method's result. */
static void job_answer(wrk_job_t *job, cJSON *result, int native)
{
    if (!result) {
        job_complete(job, WRK_STATUS_ERROR, NULL, WRK_ERR_INTERNAL, "out of memory");
        return;
    }
    if (!native && job->env.method_id != KINDS_METHOD_CALL) {
        char msg[WRK_MRESULT_MESSAGE_MAX];
        int code = 0;
        cJSON *mapped = wrk_mresult_from_call(&job->env, result, &code, msg, sizeof(msg));
        cJSON_Delete(result);
        if (!mapped) {
            job_complete(job, WRK_STATUS_ERROR, NULL, code, msg);
            return;
        }
        result = mapped;
    }
    job_complete(job, WRK_STATUS_OK, result, 0, NULL);
    cJSON_Delete(result);
}

/* The job ends cancelled (no record): one log line, then back to the worker. */
static void job_end_cancelled(wrk_job_t *job)
{
    char dur[32], part[16], off[24];
    int64_t ran = job->started_ms ? util_now_ms() - job->started_ms : 0;
    snprintf(dur, sizeof(dur), "%lld", (long long)ran);
    snprintf(part, sizeof(part), "%d", (int)job->partition);
    snprintf(off, sizeof(off), "%lld", (long long)job->offset);
    log_event(LOG_INFO, "job cancelled", "job_id", job->env.job_id, "tenant", job->env.tenant,
              "tool", job->env.tool, "status", "cancelled", "started",
              job->started_ms ? "true" : "false", "duration_ms", dur, "partition", part, "offset",
              off, (char *)NULL);
    otel_span_error(job->span, "cancelled", "the caller cancelled the job");
    job->rt->on_finished(job, job->rt->arg);
}

static void job_run(wrk_job_t *job)
{
    const wrk_envelope_t *env = &job->env;
    char part[16], off[24];
    if (job->cancelled) {
        job->state = WRK_JOB_RUNNING;
        job_end_cancelled(job);
        return;
    }
    snprintf(part, sizeof(part), "%d", (int)job->partition);
    snprintf(off, sizeof(off), "%lld", (long long)job->offset);
    job_spans(job);
    log_event(LOG_INFO, "job start", "job_id", env->job_id, "tenant", env->tenant, "tool",
              env->tool, "executor", env->exec_type, "partition", part, "offset", off,
              (char *)NULL);
    job->state = WRK_JOB_RUNNING;
    job->started_ms = util_now_ms();
    job->started_mono_us = util_mono_us();
    if (job->deadline_ms <= job->started_ms) {
        job_complete(job, WRK_STATUS_TIMEOUT, NULL, WRK_ERR_TIMEOUT,
                     "Agent reply timeout: the deadline passed before the job started");
        return;
    }
    job->ex = job->rt->find_executor(env->exec_type);
    if (!job->ex) {
        job_answer(job,
                   wrk_output_errorf("executor type \"%s\" is not available on this worker",
                                     env->exec_type),
                   0);
        return;
    }
    if (job->ex->needs_body && !(job->body = wrk_envelope_for_executor(env, &job->body_len))) {
        job_complete(job, WRK_STATUS_ERROR, NULL, WRK_ERR_INTERNAL, "out of memory");
        return;
    }
    job->deadline_timer.cb = job_on_deadline;
    if (wrk_loop_timer_start(job->rt->loop, &job->deadline_timer, wrk_job_remaining_ms(job)) < 0) {
        job_complete(job, WRK_STATUS_ERROR, NULL, WRK_ERR_INTERNAL, "out of memory");
        return;
    }
    job->executing = 1;
    job->tool_started = 1;
    job->exec_us = util_now_us();
    job->rt->executing++;
    if (job->ex->start(job) < 0) {
        /* The executor logged why; nothing runs. */
        job->executing = 0;
        job->tool_started = 0;
        job->rt->executing--;
        wrk_loop_timer_stop(job->rt->loop, &job->deadline_timer);
        job_answer(
            job, wrk_output_errorf("the %s executor could not start the tool", env->exec_type), 0);
    }
}

/* Runs the job with its trace in this thread's log context (job.h). */
void wrk_job_run(wrk_job_t *job)
{
    log_ctx_t saved;
    wrk_job_log_enter(job, &saved);
    job_run(job);
    wrk_job_log_leave(&saved);
}

void wrk_job_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    if (how == WRK_CANCEL_CALLER) {
        /* A job whose deadline passed, that is being aborted, or that finished keeps that
         * outcome: only one not started yet or still running ends cancelled. */
        if (job->cancelled || job->cancel != WRK_CANCEL_NONE)
            return;
        if (job->state == WRK_JOB_CHECKING) {
            job->cancelled = 1; /* wrk_job_run() ends it */
            return;
        }
        if (!job->executing)
            return;
        job->cancelled = 1;
    }
    if (!job->executing || how == WRK_CANCEL_NONE)
        return;
    if (job->cancel == WRK_CANCEL_ABORT || (job->cancel == how))
        return;
    job->cancel = how;
    wrk_loop_timer_stop(job->rt->loop, &job->deadline_timer);
    wrk_ask_abandon(job); /* the tool stops: nobody waits for the answer */
    /* The executor may finish (and the worker free the job) inside this call. */
    job->ex->cancel(job, how);
}

static void job_finish(wrk_job_t *job, cJSON *result, int native)
{
    if (!job->executing) {
        cJSON_Delete(result);
        return;
    }
    job->executing = 0;
    job->rt->executing--;
    job->ex_state = NULL;
    wrk_loop_timer_stop(job->rt->loop, &job->deadline_timer);
    wrk_ask_abandon(job); /* a tool that ended while it asked */
    if (job->cancelled) {
        /* Even when a shutdown escalated the stop to an abort: the caller's cancellation is
         * known, so the job is finished rather than left for another worker. */
        cJSON_Delete(result);
        job_end_cancelled(job);
        return;
    }
    switch (job->cancel) {
    case WRK_CANCEL_ABORT:
        cJSON_Delete(result);
        log_event(LOG_WARN, "job abandoned at shutdown (it will be delivered again)", "job_id",
                  job->env.job_id, "tenant", job->env.tenant, "tool", job->env.tool, (char *)NULL);
        job->rt->on_finished(job, job->rt->arg);
        return;
    case WRK_CANCEL_TIMEOUT:
        cJSON_Delete(result);
        job_complete(job, WRK_STATUS_TIMEOUT, NULL, WRK_ERR_TIMEOUT, "Agent reply timeout");
        return;
    default:
        break;
    }
    if (native && job->env.method_id != KINDS_METHOD_CALL) {
        if (!cJSON_IsObject(result)) {
            cJSON_Delete(result);
            job_complete(job, WRK_STATUS_ERROR, NULL, WRK_ERR_INTERNAL,
                         "the executor returned no "
                         "result");
            return;
        }
        job_answer(job, result, 1);
        return;
    }
    if (!wrk_output_is_result(result)) {
        cJSON_Delete(result);
        result = wrk_output_errorf("the %s executor returned no result", job->env.exec_type);
    }
    job_answer(job, result, 0);
}

void wrk_job_finish(wrk_job_t *job, cJSON *result)
{
    job_finish(job, result, 0);
}

void wrk_job_finish_result(wrk_job_t *job, cJSON *result)
{
    job_finish(job, result, 1);
}

void wrk_job_finish_error(wrk_job_t *job, int code, const char *message)
{
    if (!job->executing)
        return;
    if (job->cancelled || job->cancel != WRK_CANCEL_NONE) {
        wrk_job_finish(job, NULL); /* the stop decides the outcome */
        return;
    }
    job->executing = 0;
    job->rt->executing--;
    job->ex_state = NULL;
    wrk_loop_timer_stop(job->rt->loop, &job->deadline_timer);
    wrk_ask_abandon(job);
    job_complete(job, WRK_STATUS_ERROR, NULL, code, message);
}

void wrk_job_notify(wrk_job_t *job, const char *kind, const cJSON *data)
{
    if (job->task && data && job->rt->on_task_progress && strcmp(kind, "progress") == 0 &&
        job->cancel == WRK_CANCEL_NONE)
        job->rt->on_task_progress(job, data, job->rt->arg);
    if (job->nstreams == 0 || !data || job->cancel != WRK_CANCEL_NONE)
        return;
    char *s = cJSON_PrintUnformatted(data);
    if (!s)
        return;
    size_t len = strlen(s);
    for (size_t i = 0; i < job->nstreams; i++)
        wrk_store_notify(job->rt->store, job->streams[i], job->env.job_id, kind, s, len);
    free(s);
}

cJSON *wrk_job_error_hidden(const wrk_job_t *job, const char *detail, const char *public_fmt, ...)
{
    /* Room for the error id within wrk_output_errorf's 1 KiB, however long the message. */
    char msg[960], id[2 + 16 + 1] = "e_";
    va_list ap;
    va_start(ap, public_fmt);
    vsnprintf(msg, sizeof(msg), public_fmt, ap);
    va_end(ap);
    if (util_random_hex(id + 2, 8) < 0)
        snprintf(id + 2, sizeof(id) - 2, "%016llx", (unsigned long long)util_now_ms());
    log_ctx_t saved;
    wrk_job_log_enter(job, &saved);
    log_event(LOG_WARN, "tool failed; the caller gets the error id, not the details", "job_id",
              job->env.job_id, "error_id", id, "tenant", job->env.tenant, "tool", job->env.tool,
              "executor", job->env.exec_type, "message", msg, "detail", detail ? detail : "",
              (char *)NULL);
    wrk_job_log_leave(&saved);
    return wrk_output_errorf("%s (error id %s)", msg, id);
}
