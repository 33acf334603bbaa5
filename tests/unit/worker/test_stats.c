/* Tests worker/core/stats.c: the worker's series, /readyz's rule and the listen address. */
#include "check.h"
#include "err.h"
#include "stats.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char *render(wrk_stats_t *m)
{
    util_buf_t b;
    util_buf_init(&b, (size_t)1 << 20);
    CHECK_INT_EQ(wrk_stats_render(m, &b), 0);
    CHECK(b.data != NULL);
    return b.data;
}

static void test_counters(void)
{
    wrk_stats_t *m = wrk_stats_new();
    CHECK(m != NULL);
    wrk_stats_job(m, "builtin", WRK_OUT_OK, 90); /* µs */
    wrk_stats_job(m, "builtin", WRK_OUT_OK, 2000000);
    wrk_stats_job(m, "exec", WRK_OUT_TIMEOUT, 60000000);
    wrk_stats_queue_wait(m, 1000000, 1000250); /* 250 µs */
    wrk_stats_queue_wait(m, 1000000, 999000);  /* clock skew: 0 */
    wrk_stats_queue_wait(m, 0, 999000);        /* an older ingress: not observed */
    wrk_stats_result_write(m, 1500);
    wrk_stats_task_finished(m, WRK_TASK_TERMINATED);
    wrk_stats_job(m, "weird", WRK_OUT_ERROR, -1); /* never ran: not in the histogram */
    wrk_stats_released(m);
    wrk_stats_redelivered(m, WRK_REDELIVERED_RESENT);
    wrk_stats_rejected(m, WRK_REJECTED_SIGNATURE);
    wrk_stats_rejected(m, WRK_REJECTED_SIGNATURE);
    wrk_stats_gauges_t g = {.running = 2,
                            .inflight = 5,
                            .results_written = 7,
                            .results_retried = 1,
                            .kafka_up = 1,
                            .redis_up = 1,
                            .assigned = 2,
                            .redis_lost_left = 1,
                            .redis_lost_leaves = 3};
    wrk_stats_gauges(m, &g);
    int32_t parts[] = {0, 3};
    int64_t lags[] = {0, 42};
    wrk_stats_lag(m, "mcpq.jobs", parts, lags, 2);
    char *text = render(m);
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"builtin\",outcome=\"ok\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"exec\",outcome=\"timeout\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"other\",outcome=\"error\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_jobs_total{executor=\"http\",outcome=\"ok\"} 0\n");
    CHECK_CONTAINS(
        text, "mcpq_worker_job_duration_seconds_bucket{executor=\"builtin\",le=\"0.0001\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_job_duration_seconds_sum{executor=\"builtin\"} 2.000090\n");
    CHECK_CONTAINS(text, "mcpq_worker_queue_wait_seconds_bucket{le=\"0.0001\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_queue_wait_seconds_bucket{le=\"0.00025\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_queue_wait_seconds_sum 0.000250\n");
    CHECK_CONTAINS(text, "mcpq_worker_queue_wait_seconds_count 2\n");
    CHECK_CONTAINS(text, "mcpq_worker_result_write_seconds_bucket{le=\"0.001\"} 0\n");
    CHECK_CONTAINS(text, "mcpq_worker_result_write_seconds_bucket{le=\"0.0025\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_tasks_finished_total{state=\"terminated\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_tasks_finished_total{state=\"complete\"} 0\n");
    CHECK_CONTAINS(text, "process_resident_memory_bytes ");
    CHECK_CONTAINS(text, ",binary=\"worker\",librdkafka=\"");
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
    CHECK_CONTAINS(text, "mcpq_worker_redis_lost_left 1\n");
    CHECK_CONTAINS(text, "mcpq_worker_redis_lost_leaves_total 3\n");
    CHECK_CONTAINS(text, "mcpq_build_info{version=\"");
    CHECK_CONTAINS(text, "process_start_time_seconds ");
    free(text);
    /* A new table replaces the old one (partitions revoked). */
    wrk_stats_lag(m, "mcpq.jobs", NULL, NULL, 0);
    text = render(m);
    CHECK(strstr(text, "mcpq_worker_kafka_consumer_lag{") == NULL);
    free(text);
    wrk_stats_free(m);
    TEST_PASS("counters, histogram, gauges and lag render");
}

static void test_ready(void)
{
    wrk_stats_t *m = wrk_stats_new();
    CHECK_INT_EQ(wrk_stats_ready(m), 0); /* nothing reachable yet */
    wrk_stats_gauges_t g = {.kafka_up = 1, .redis_up = 1};
    wrk_stats_gauges(m, &g);
    CHECK_INT_EQ(wrk_stats_ready(m), 1);
    g.redis_up = 0;
    wrk_stats_gauges(m, &g);
    CHECK_INT_EQ(wrk_stats_ready(m), 0);
    g.redis_up = 1;
    wrk_stats_gauges(m, &g);
    wrk_stats_stopping(m);
    CHECK_INT_EQ(wrk_stats_ready(m), 0);
    wrk_stats_free(m);
    TEST_PASS("ready while Kafka and Redis are up and not stopping");
}

static void test_serve(void)
{
    char err[256];
    wrk_stats_t *m = wrk_stats_new();
    CHECK_INT_EQ(wrk_stats_serve(m, "", err, sizeof(err)), 0); /* off */
    CHECK_INT_EQ(wrk_stats_serve(m, "nonsense", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "MCPQ_METRICS_LISTEN");
    CHECK_INT_EQ(wrk_stats_serve(m, "127.0.0.1:0", err, sizeof(err)), 0);
    wrk_stats_free(m); /* stops the server */
    wrk_stats_free(NULL);
    TEST_PASS("listen address parsed; server starts and stops");
}

/* A port free on [::] (IPv6 and IPv4) a moment ago, or -1 when this machine has no IPv6. */
static int free_port6(void)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0), port = -1, off = 0;
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any};
    socklen_t len = sizeof(a);
    if (fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == 0 &&
        bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin6_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* The status line of GET /healthz at family's loopback address and port ("" when no answer). */
static void get_healthz(int family, int port, char *line, size_t size)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (family == AF_INET) {
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        in6->sin6_addr = in6addr_loopback;
    }
    line[0] = '\0';
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0)
        return;
    static const char req[] = "GET /healthz HTTP/1.0\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&ss, family == AF_INET ? sizeof(*in) : sizeof(*in6)) == 0 &&
        write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1)) {
        ssize_t n = read(fd, line, size - 1);
        line[n > 0 ? n : 0] = '\0';
        char *eol = strstr(line, "\r\n");
        if (eol)
            *eol = '\0';
    }
    close(fd);
}

static void test_serve_ipv6(void)
{
    int port = free_port6();
    if (port < 0) {
        TEST_SKIP("no IPv6 on this machine (socket on [::] refused): "
                  "MCPQ_METRICS_LISTEN=[::]:port not tested");
        return;
    }
    char err[256], listen[32], line[128];
    wrk_stats_t *m = wrk_stats_new();
    snprintf(listen, sizeof(listen), "[::]:%d", port);
    CHECK_INT_EQ(wrk_stats_serve(m, listen, err, sizeof(err)), 0);
    get_healthz(AF_INET6, port, line, sizeof(line));
    CHECK_STR_EQ(line, "HTTP/1.1 200 OK");
    get_healthz(AF_INET, port, line, sizeof(line)); /* dual stack: IPv4 clients too */
    CHECK_STR_EQ(line, "HTTP/1.1 200 OK");
    wrk_stats_free(m);

    m = wrk_stats_new();
    snprintf(listen, sizeof(listen), "[::1]:%d", port);
    CHECK_INT_EQ(wrk_stats_serve(m, listen, err, sizeof(err)), 0);
    get_healthz(AF_INET6, port, line, sizeof(line));
    CHECK_STR_EQ(line, "HTTP/1.1 200 OK");
    get_healthz(AF_INET, port, line, sizeof(line)); /* ::1 is IPv6 only */
    CHECK_STR_EQ(line, "");
    wrk_stats_free(m);
    TEST_PASS("MCPQ_METRICS_LISTEN=[::]:port answers over IPv6 and IPv4, [::1]:port over IPv6");
}

int main(void)
{
    test_counters();
    test_ready();
    test_serve();
    test_serve_ipv6();
    return TEST_EXIT();
}
