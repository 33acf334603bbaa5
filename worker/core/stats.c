#include "stats.h"

#include "err.h"
#include "log.h"
#include "otel.h"
#include "prom.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAG_TOPIC_MAX 256
#define LAG_MAX_PARTS 4096 /* partitions one worker reports (a topic rarely has more) */
#define RENDER_MAX ((size_t)4 << 20)

static const char *const exec_names[] = {"builtin", "http", "exec", "mcp", "agent", "other"};
#define NEXEC (sizeof(exec_names) / sizeof(exec_names[0]))

static const char *const outcome_names[WRK_OUT_COUNT] = {"ok", "tool_error", "timeout", "error",
                                                         "cancelled"};
static const char *const redelivered_names[WRK_REDELIVERED_COUNT] = {"attached", "resent"};
static const char *const rejected_names[WRK_REJECTED_COUNT] = {"signature"};

static const char *const task_state_names[WRK_TASK_COUNT] = {"complete", "terminated", "cancelled"};

struct wrk_stats {
    int64_t start_ms;
    struct MHD_Daemon *daemon;
    atomic_ullong jobs[NEXEC][WRK_OUT_COUNT];
    prom_hist_t hist[NEXEC];
    prom_hist_t queue_wait, result_write;
    atomic_ullong tasks_finished[WRK_TASK_COUNT];
    atomic_ullong released;
    atomic_ullong redelivered[WRK_REDELIVERED_COUNT];
    atomic_ullong rejected[WRK_REJECTED_COUNT];
    atomic_ullong results_written, results_retried, redis_lost_leaves;
    atomic_size_t running, inflight;
    atomic_int kafka_up, redis_up, assigned, stopping, topic_partitions, idle_member;
    atomic_int redis_lost_left;
    pthread_mutex_t lag_lock; /* guards what follows */
    char lag_topic[LAG_TOPIC_MAX];
    int32_t *lag_parts;
    int64_t *lag_values;
    size_t nlag;
};

wrk_stats_t *wrk_stats_new(void)
{
    wrk_stats_t *m = calloc(1, sizeof(*m)); /* all-zero atomics are valid */
    if (!m)
        return NULL;
    pthread_mutex_init(&m->lag_lock, NULL);
    m->start_ms = util_now_ms();
    return m;
}

void wrk_stats_free(wrk_stats_t *m)
{
    if (!m)
        return;
    if (m->daemon)
        MHD_stop_daemon(m->daemon);
    pthread_mutex_destroy(&m->lag_lock);
    free(m->lag_parts);
    free(m->lag_values);
    free(m);
}

static size_t exec_index(const char *exec_type)
{
    for (size_t i = 0; exec_type && i < NEXEC - 1; i++)
        if (strcmp(exec_type, exec_names[i]) == 0)
            return i;
    return NEXEC - 1;
}

void wrk_stats_job(wrk_stats_t *m, const char *exec_type, wrk_outcome_t outcome,
                   int64_t duration_us)
{
    size_t e = exec_index(exec_type);
    atomic_fetch_add(&m->jobs[e][outcome], 1);
    if (duration_us >= 0)
        prom_observe_us(&m->hist[e], duration_us);
}

void wrk_stats_queue_wait(wrk_stats_t *m, int64_t sent_us, int64_t picked_us)
{
    if (sent_us > 0)
        prom_observe_us(&m->queue_wait, picked_us - sent_us); /* < 0 (clock skew): 0 */
}

void wrk_stats_result_write(wrk_stats_t *m, int64_t duration_us)
{
    prom_observe_us(&m->result_write, duration_us);
}

void wrk_stats_task_finished(wrk_stats_t *m, wrk_task_state_t state)
{
    atomic_fetch_add(&m->tasks_finished[state], 1);
}

void wrk_stats_released(wrk_stats_t *m)
{
    atomic_fetch_add(&m->released, 1);
}

void wrk_stats_redelivered(wrk_stats_t *m, wrk_redelivered_t how)
{
    atomic_fetch_add(&m->redelivered[how], 1);
}

void wrk_stats_rejected(wrk_stats_t *m, wrk_rejected_t why)
{
    atomic_fetch_add(&m->rejected[why], 1);
}

void wrk_stats_gauges(wrk_stats_t *m, const wrk_stats_gauges_t *g)
{
    atomic_store(&m->running, g->running);
    atomic_store(&m->inflight, g->inflight);
    atomic_store(&m->results_written, g->results_written);
    atomic_store(&m->results_retried, g->results_retried);
    atomic_store(&m->kafka_up, g->kafka_up);
    atomic_store(&m->redis_up, g->redis_up);
    atomic_store(&m->assigned, g->assigned);
    atomic_store(&m->topic_partitions, g->topic_partitions);
    atomic_store(&m->idle_member, g->idle_member);
    atomic_store(&m->redis_lost_left, g->redis_lost_left);
    atomic_store(&m->redis_lost_leaves, g->redis_lost_leaves);
}

void wrk_stats_stopping(wrk_stats_t *m)
{
    atomic_store(&m->stopping, 1);
}

void wrk_stats_lag(wrk_stats_t *m, const char *topic, const int32_t *partitions,
                   const int64_t *lags, size_t n)
{
    if (n > LAG_MAX_PARTS)
        n = LAG_MAX_PARTS;
    int32_t *p = n ? malloc(n * sizeof(*p)) : NULL;
    int64_t *v = n ? malloc(n * sizeof(*v)) : NULL;
    if (n && (!p || !v)) {
        free(p);
        free(v);
        return; /* the previous table stays */
    }
    if (n) {
        memcpy(p, partitions, n * sizeof(*p));
        memcpy(v, lags, n * sizeof(*v));
    }
    pthread_mutex_lock(&m->lag_lock);
    snprintf(m->lag_topic, sizeof(m->lag_topic), "%s", topic ? topic : "");
    free(m->lag_parts);
    free(m->lag_values);
    m->lag_parts = p;
    m->lag_values = v;
    m->nlag = n;
    pthread_mutex_unlock(&m->lag_lock);
}

int wrk_stats_ready(wrk_stats_t *m)
{
    return atomic_load(&m->kafka_up) && atomic_load(&m->redis_up) && !atomic_load(&m->stopping);
}

/* The consumer group's series: partitions assigned and known, idle member, lag. */
static void render_kafka(wrk_stats_t *m, util_buf_t *out)
{
    prom_head(out, "mcpq_worker_kafka_assigned_partitions", "gauge",
              "Partitions of the jobs topic assigned to this worker.");
    prom_line(out, "mcpq_worker_kafka_assigned_partitions %d\n", atomic_load(&m->assigned));
    prom_head(out, "mcpq_worker_kafka_topic_partitions", "gauge",
              "Partitions of the jobs topic (0: not known yet): the most workers that consume.");
    prom_line(out, "mcpq_worker_kafka_topic_partitions %d\n", atomic_load(&m->topic_partitions));
    prom_head(out, "mcpq_worker_kafka_idle_member", "gauge",
              "1 when this worker got no partition: the group has more workers than the jobs "
              "topic has partitions.");
    prom_line(out, "mcpq_worker_kafka_idle_member %d\n", atomic_load(&m->idle_member));
    prom_head(out, "mcpq_worker_kafka_consumer_lag", "gauge",
              "Records behind the high watermark on each partition assigned to this worker.");
    pthread_mutex_lock(&m->lag_lock);
    char topic[2 * LAG_TOPIC_MAX];
    prom_label_escape(m->lag_topic, topic, sizeof(topic));
    for (size_t i = 0; i < m->nlag; i++)
        prom_line(out, "mcpq_worker_kafka_consumer_lag{topic=\"%s\",partition=\"%d\"} %lld\n",
                  topic, (int)m->lag_parts[i], (long long)m->lag_values[i]);
    pthread_mutex_unlock(&m->lag_lock);
}

/* Queue wait, result write and tasks finished. */
static void render_latency(wrk_stats_t *m, util_buf_t *out)
{
    prom_head(out, "mcpq_worker_queue_wait_seconds", "histogram",
              "From the ingress handing a job to Kafka (its sent_us) to this worker picking it "
              "up (assumes NTP-synced clocks).");
    prom_histogram(out, "mcpq_worker_queue_wait_seconds", "", &m->queue_wait);
    prom_head(out, "mcpq_worker_result_write_seconds", "histogram",
              "How long making a result record durable in Redis took (one write).");
    prom_histogram(out, "mcpq_worker_result_write_seconds", "", &m->result_write);
    prom_head(out, "mcpq_worker_tasks_finished_total", "counter",
              "Tasks whose run on this worker ended, by the state it left them in.");
    for (int i = 0; i < WRK_TASK_COUNT; i++)
        prom_line(out, "mcpq_worker_tasks_finished_total{state=\"%s\"} %llu\n", task_state_names[i],
                  atomic_load(&m->tasks_finished[i]));
}

int wrk_stats_render(wrk_stats_t *m, util_buf_t *out)
{
    prom_head(out, "mcpq_worker_jobs_total", "counter",
              "Jobs that ended on this worker, by executor type and outcome.");
    for (size_t e = 0; e < NEXEC; e++)
        for (int o = 0; o < WRK_OUT_COUNT; o++) {
            unsigned long long v = atomic_load(&m->jobs[e][o]);
            /* Every named executor's outcomes are always there (a rate over a series that
             * appears late misses its first increase); "other" only once it happened. */
            if (!v && e == NEXEC - 1)
                continue;
            prom_line(out, "mcpq_worker_jobs_total{executor=\"%s\",outcome=\"%s\"} %llu\n",
                      exec_names[e], outcome_names[o], v);
        }
    prom_histograms(out, "mcpq_worker_job_duration_seconds",
                    "How long jobs ran in their executor, by executor type (the types that ran "
                    "here).",
                    "executor", exec_names, m->hist, NEXEC, 1);
    render_latency(m, out);
    prom_head(out, "mcpq_worker_running_jobs", "gauge", "Executors running now.");
    prom_line(out, "mcpq_worker_running_jobs %zu\n", atomic_load(&m->running));
    prom_head(out, "mcpq_worker_inflight_jobs", "gauge",
              "Jobs this worker holds: checking, running or writing their result.");
    prom_line(out, "mcpq_worker_inflight_jobs %zu\n", atomic_load(&m->inflight));
    prom_head(out, "mcpq_worker_jobs_released_total", "counter",
              "Jobs let go without a result at shutdown; Kafka delivers them to another worker.");
    prom_line(out, "mcpq_worker_jobs_released_total %llu\n", atomic_load(&m->released));
    prom_head(out, "mcpq_worker_jobs_redelivered_total", "counter",
              "Records of a job that ran already (resent: its stored result was sent again) or "
              "runs here now (attached: it runs once).");
    for (int i = 0; i < WRK_REDELIVERED_COUNT; i++)
        prom_line(out, "mcpq_worker_jobs_redelivered_total{handling=\"%s\"} %llu\n",
                  redelivered_names[i], atomic_load(&m->redelivered[i]));
    prom_head(out, "mcpq_worker_jobs_rejected_total", "counter",
              "Job records refused before anything of them ran (signature: no valid job "
              "signature); their offsets are committed.");
    for (int i = 0; i < WRK_REJECTED_COUNT; i++)
        prom_line(out, "mcpq_worker_jobs_rejected_total{reason=\"%s\"} %llu\n", rejected_names[i],
                  atomic_load(&m->rejected[i]));
    prom_head(out, "mcpq_worker_results_written_total", "counter",
              "Result records made durable in Redis and announced on reply streams.");
    prom_line(out, "mcpq_worker_results_written_total %llu\n", atomic_load(&m->results_written));
    prom_head(out, "mcpq_worker_results_retried_total", "counter",
              "Redis writes that did not go through and were queued again.");
    prom_line(out, "mcpq_worker_results_retried_total %llu\n", atomic_load(&m->results_retried));
    render_kafka(m, out);
    otel_metrics_render(out); /* the span exporter's own series (otel.h) */
    prom_head(out, "mcpq_worker_dependency_up", "gauge", "1 while the dependency is reachable.");
    prom_line(out, "mcpq_worker_dependency_up{dependency=\"kafka\"} %d\n",
              atomic_load(&m->kafka_up));
    prom_line(out, "mcpq_worker_dependency_up{dependency=\"redis\"} %d\n",
              atomic_load(&m->redis_up));
    prom_head(out, "mcpq_worker_redis_lost_left", "gauge",
              "1 while this worker is out of the consumer group because Redis is unreachable.");
    prom_line(out, "mcpq_worker_redis_lost_left %d\n", atomic_load(&m->redis_lost_left));
    prom_head(out, "mcpq_worker_redis_lost_leaves_total", "counter",
              "Times this worker left the consumer group because Redis was unreachable.");
    prom_line(out, "mcpq_worker_redis_lost_leaves_total %llu\n",
              atomic_load(&m->redis_lost_leaves));
    prom_head(out, "mcpq_worker_stopping", "gauge",
              "1 once the worker was told to stop (SIGTERM): it takes no new jobs.");
    prom_line(out, "mcpq_worker_stopping %d\n", atomic_load(&m->stopping));
    return prom_process(out, "worker", m->start_ms, MHD_get_version());
}

/* ---- the HTTP server ---- */

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type,
                              char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result answer_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    char *body = strdup(text);
    return answer(conn, status, "application/json", body, body ? strlen(body) : 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
    wrk_stats_t *m = cls;
    (void)version;
    (void)upload;
    if (!*state) { /* headers only: answer once the (ignored) body is in */
        *state = m;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return answer_text(conn, 405, "{\"error\":\"method not allowed\"}");
    if (strcmp(url, "/healthz") == 0)
        return answer_text(conn, 200, "{\"status\":\"ok\"}");
    if (strcmp(url, "/readyz") == 0) {
        int kafka = atomic_load(&m->kafka_up), redis = atomic_load(&m->redis_up);
        int stopping = atomic_load(&m->stopping);
        int ok = kafka && redis && !stopping;
        char body[160];
        snprintf(body, sizeof(body), "{\"ready\":%s,\"kafka\":%s,\"redis\":%s,\"stopping\":%s}",
                 ok ? "true" : "false", kafka ? "true" : "false", redis ? "true" : "false",
                 stopping ? "true" : "false");
        return answer_text(conn, ok ? 200 : 503, body);
    }
    if (strcmp(url, "/metrics") == 0) {
        util_buf_t b;
        util_buf_init(&b, RENDER_MAX);
        wrk_stats_render(m, &b);
        char *body = b.data ? b.data : strdup("");
        return answer(conn, 200, PROM_CONTENT_TYPE, body, body ? b.len : 0);
    }
    return answer_text(conn, 404, "{\"error\":\"not found\"}");
}

int wrk_stats_serve(wrk_stats_t *m, const char *listen, char *errstr, size_t errstr_size)
{
    if (!listen || !*listen || m->daemon)
        return 0;
    util_listen_t la;
    if (util_parse_listen(listen, &la) < 0) {
        snprintf(errstr, errstr_size,
                 "MCPQ_METRICS_LISTEN: \"%s\" is not host:port, [IPv6]:port or :port", listen);
        return MCPQ_EINVAL;
    }
    unsigned family = la.addr.ss_family != AF_INET6 ? 0u
                      : la.dual_stack               ? (unsigned)MHD_USE_DUAL_STACK
                                                    : (unsigned)MHD_USE_IPv6;
    /* One internal thread polls a handful of scrape and probe connections; it never touches
     * the worker's loop or its Kafka and Redis handles, only this module's atomics. */
    m->daemon =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | family, 0, NULL, NULL,
                         on_request, m, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&la.addr,
                         MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_END);
    if (!m->daemon) {
        snprintf(errstr, errstr_size,
                 "MCPQ_METRICS_LISTEN: cannot listen on %s (address in use or not local?)", listen);
        return MCPQ_EIO;
    }
    log_event(LOG_INFO, "metrics server listening", "listen", listen, (char *)NULL);
    return 0;
}
