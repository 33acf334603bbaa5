/* Tests worker/metrics.c: the worker's series, /readyz's rule and the listen address. */
#include "check.h"
#include "err.h"
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

static char *render(wrk_metrics_t *m)
{
    util_buf_t b;
    util_buf_init(&b, (size_t)1 << 20);
    CHECK_INT_EQ(wrk_metrics_render(m, &b), 0);
    CHECK(b.data != NULL);
    return b.data;
}

static void test_counters(void)
{
    wrk_metrics_t *m = wrk_metrics_new();
    CHECK(m != NULL);
    wrk_metrics_job(m, "builtin", WRK_OUT_OK, 3);
    wrk_metrics_job(m, "builtin", WRK_OUT_OK, 2000);
    wrk_metrics_job(m, "exec", WRK_OUT_TIMEOUT, 60000);
    wrk_metrics_job(m, "weird", WRK_OUT_ERROR, -1); /* never ran: not in the histogram */
    wrk_metrics_released(m);
    wrk_metrics_redelivered(m, WRK_REDELIVERED_RESENT);
    wrk_metrics_rejected(m, WRK_REJECTED_SIGNATURE);
    wrk_metrics_rejected(m, WRK_REJECTED_SIGNATURE);
    wrk_metrics_gauges_t g = {.running = 2,
                              .inflight = 5,
                              .results_written = 7,
                              .results_retried = 1,
                              .kafka_up = 1,
                              .redis_up = 1,
                              .assigned = 2};
    wrk_metrics_gauges(m, &g);
    int32_t parts[] = {0, 3};
    int64_t lags[] = {0, 42};
    wrk_metrics_lag(m, "mcpq.jobs", parts, lags, 2);
    char *text = render(m);
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"builtin\",outcome=\"ok\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"exec\",outcome=\"timeout\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"other\",outcome=\"error\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"http\",outcome=\"ok\"} 0\n");
    CHECK_CONTAINS(
        text, "mcpq_worker_job_duration_seconds_bucket{executor=\"builtin\",le=\"0.005\"} 1\n");
    CHECK_CONTAINS(text,
                   "mcpq_worker_job_duration_seconds_bucket{executor=\"builtin\",le=\"2.5\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_job_duration_seconds_count{executor=\"builtin\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_job_duration_seconds_sum{executor=\"exec\"} 60.000000\n");
    CHECK(strstr(text, "duration_seconds_count{executor=\"other\"}") == NULL);
    CHECK_CONTAINS(text, "mcpq_worker_running_jobs 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_inflight_jobs 5\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_released_total 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_redelivered_total{handling=\"resent\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_rejected_total{reason=\"signature\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_results_written_total 7\n");
    CHECK_CONTAINS(text, "mcpq_worker_results_retried_total 1\n");
    CHECK_CONTAINS(text,
                   "mcpq_worker_kafka_consumer_lag{topic=\"mcpq.jobs\",partition=\"3\"} 42\n");
    CHECK_CONTAINS(text, "mcpq_worker_kafka_assigned_partitions 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_dependency_up{dependency=\"kafka\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_build_info{version=\"");
    CHECK_CONTAINS(text, "process_start_time_seconds ");
    free(text);
    /* A new table replaces the old one (partitions revoked). */
    wrk_metrics_lag(m, "mcpq.jobs", NULL, NULL, 0);
    text = render(m);
    CHECK(strstr(text, "mcpq_worker_kafka_consumer_lag{") == NULL);
    free(text);
    wrk_metrics_free(m);
    TEST_PASS("counters, histogram, gauges and lag render");
}

static void test_ready(void)
{
    wrk_metrics_t *m = wrk_metrics_new();
    CHECK_INT_EQ(wrk_metrics_ready(m), 0); /* nothing reachable yet */
    wrk_metrics_gauges_t g = {.kafka_up = 1, .redis_up = 1};
    wrk_metrics_gauges(m, &g);
    CHECK_INT_EQ(wrk_metrics_ready(m), 1);
    g.redis_up = 0;
    wrk_metrics_gauges(m, &g);
    CHECK_INT_EQ(wrk_metrics_ready(m), 0);
    g.redis_up = 1;
    wrk_metrics_gauges(m, &g);
    wrk_metrics_stopping(m);
    CHECK_INT_EQ(wrk_metrics_ready(m), 0);
    wrk_metrics_free(m);
    TEST_PASS("ready while Kafka and Redis are up and not stopping");
}

static void test_serve(void)
{
    char err[256];
    wrk_metrics_t *m = wrk_metrics_new();
    CHECK_INT_EQ(wrk_metrics_serve(m, "", err, sizeof(err)), 0); /* off */
    CHECK_INT_EQ(wrk_metrics_serve(m, "nonsense", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "MCPQ_METRICS_LISTEN");
    CHECK_INT_EQ(wrk_metrics_serve(m, "127.0.0.1:0", err, sizeof(err)), 0);
    wrk_metrics_free(m); /* stops the server */
    wrk_metrics_free(NULL);
    TEST_PASS("listen address parsed; server starts and stops");
}

int main(void)
{
    test_counters();
    test_ready();
    test_serve();
    return 0;
}
