/* Tests ingress/core/metrics.c: tools/call series per tenant, capped at tenants_max distinct
 * values (later tenants under "_other", none under "_none"), tenant ids escaped as label
 * values, and the µs histograms (request, tool call, result delivery, webhook delivery). */
#include "check.h"
#include "metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char *render(ing_metrics_t *m)
{
    util_buf_t b;
    util_buf_init(&b, (size_t)4 << 20);
    ing_metrics_now_t now = {.kafka_up = 1, .redis_up = 1};
    CHECK_INT_EQ(ing_metrics_render(m, &b, &now), 0);
    CHECK(b.data != NULL);
    return b.data;
}

static size_t count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void test_tenant_cap(void)
{
    ing_metrics_t *m = ing_metrics_new(2);
    CHECK(m != NULL);
    ing_metrics_call(m, "acme", ING_CALL_OK, 150);
    ing_metrics_call(m, "acme", ING_CALL_TOOL_ERROR, 2000);
    ing_metrics_call(m, "beta", ING_CALL_OK, 50);
    ing_metrics_call(m, "gamma", ING_CALL_OK, 50);     /* a third tenant: over the cap */
    ing_metrics_call(m, "delta", ING_CALL_FAILED, -1); /* also; counted, not observed */
    ing_metrics_call(m, NULL, ING_CALL_FAILED, 10);
    ing_metrics_call(m, "", ING_CALL_FAILED, 10);
    ing_metrics_call(m, "acme", ING_CALL_OK, 100); /* known tenants keep their slot */
    char *text = render(m);
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"acme\",outcome=\"ok\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"acme\",outcome=\"tool_error\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"acme\",outcome=\"timeout\"} 0\n");
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"beta\",outcome=\"ok\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"_other\",outcome=\"ok\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"_other\",outcome=\"failed\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"_none\",outcome=\"failed\"} 2\n");
    CHECK(strstr(text, "gamma") == NULL && strstr(text, "delta") == NULL);
    CHECK_CONTAINS(text,
                   "mcpq_tool_call_duration_seconds_bucket{tenant=\"acme\",le=\"0.0001\"} 1\n");
    CHECK_CONTAINS(text,
                   "mcpq_tool_call_duration_seconds_bucket{tenant=\"acme\",le=\"0.00025\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_tool_call_duration_seconds_sum{tenant=\"acme\"} 0.002250\n");
    CHECK_CONTAINS(text, "mcpq_tool_call_duration_seconds_count{tenant=\"_other\"} 1\n");
    /* Four tenant label values in all: acme, beta, _other, _none. */
    CHECK_INT_EQ(count(text, "mcpq_tool_call_duration_seconds_count{"), 4);
    free(text);
    ing_metrics_free(m);

    m = ing_metrics_new(0); /* no slot at all: every tenant is _other */
    ing_metrics_call(m, "acme", ING_CALL_OK, 1);
    text = render(m);
    CHECK_CONTAINS(text, "mcpq_tool_calls_total{tenant=\"_other\",outcome=\"ok\"} 1\n");
    CHECK(strstr(text, "acme") == NULL);
    free(text);
    ing_metrics_free(m);
    TEST_PASS("tenant labels: at most tenants_max values, later ones _other, none _none");
}

static void test_tenant_escape(void)
{
    ing_metrics_t *m = ing_metrics_new(10);
    ing_metrics_call(m, "we\"ird\\ten\nant", ING_CALL_OK, 1);
    char *text = render(m);
    CHECK_CONTAINS(text,
                   "mcpq_tool_calls_total{tenant=\"we\\\"ird\\\\ten\\nant\",outcome=\"ok\"} 1\n");
    free(text);
    ing_metrics_free(m);
    TEST_PASS("a tenant id is escaped as a label value");
}

typedef struct {
    ing_metrics_t *m;
    int id;
} racer_t;

static void *race(void *arg)
{
    racer_t *r = arg;
    char t[16];
    for (int i = 0; i < 2000; i++) {
        snprintf(t, sizeof(t), "t%d", (i + r->id) % 8);
        ing_metrics_call(r->m, t, ING_CALL_OK, i);
    }
    return NULL;
}

static void test_tenant_threads(void)
{
    ing_metrics_t *m = ing_metrics_new(5);
    pthread_t th[4];
    racer_t r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (racer_t){m, i};
        pthread_create(&th[i], NULL, race, &r[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    char *text = render(m);
    /* 5 tenants, _other and _none: each tenant once, every call counted once. */
    CHECK_INT_EQ(count(text, "mcpq_tool_call_duration_seconds_count{"), 6);
    unsigned long long total = 0;
    for (const char *p = text; (p = strstr(p, "mcpq_tool_call_duration_seconds_count{"));) {
        p = strchr(p, '}') + 2;
        total += strtoull(p, NULL, 10);
    }
    CHECK_INT_EQ(total, 4 * 2000);
    free(text);
    ing_metrics_free(m);
    TEST_PASS("tenant slots filled from four threads: no tenant twice, no call lost");
}

static void test_latencies(void)
{
    ing_metrics_t *m = ing_metrics_new(100);
    ing_metrics_request(m, ING_M_PING, 200, 80);
    ing_metrics_result_delivery(m, 300);
    ing_metrics_result_delivery(m, -20); /* clock skew: 0 */
    ing_metrics_webhook(m, ING_WH_DELIVERED, 4000);
    ing_metrics_webhook(m, ING_WH_RETRY, 1500000);
    ing_metrics_tasks(m, 3, 7);
    char *text = render(m);
    CHECK_CONTAINS(text, "mcpq_request_duration_seconds_bucket{method=\"ping\",le=\"0.0001\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_result_delivery_seconds_bucket{le=\"0.0001\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_result_delivery_seconds_bucket{le=\"0.0005\"} 2\n");
    CHECK_CONTAINS(text, "mcpq_result_delivery_seconds_sum 0.000300\n");
    CHECK_CONTAINS(text,
                   "mcpq_webhook_delivery_seconds_bucket{outcome=\"delivered\",le=\"0.005\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_webhook_delivery_seconds_count{outcome=\"retry\"} 1\n");
    CHECK_CONTAINS(text, "mcpq_webhook_delivery_seconds_count{outcome=\"failed\"} 0\n");
    CHECK(strstr(text, "mcpq_request_duration_seconds_count{method=\"initialize\"}") == NULL);
    CHECK_CONTAINS(text, "mcpq_webhook_delivery_seconds_sum{outcome=\"retry\"} 1.500000\n");
    CHECK(strstr(text, "mcpq_webhook_attempt_seconds_total") == NULL); /* replaced */
    CHECK_CONTAINS(text, "mcpq_tasks{state=\"running\"} 3\n");
    CHECK_CONTAINS(text, "mcpq_tasks{state=\"waiting\"} 7\n");
    CHECK_CONTAINS(text, "process_open_fds ");
    CHECK_CONTAINS(text, ",binary=\"ingress\",librdkafka=\"");
    free(text);
    ing_metrics_free(m);
    TEST_PASS("request, result delivery and webhook delivery histograms in us; task gauges");
}

int main(void)
{
    test_tenant_cap();
    test_tenant_escape();
    test_tenant_threads();
    test_latencies();
    return 0;
}
