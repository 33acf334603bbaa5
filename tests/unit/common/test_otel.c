/* Tests common/otel.c: the OTEL_* environment, the sampler, the OTLP/HTTP JSON of a span (fixed
 * ids and times), the HTTP client attributes, --print-config's line, the bounded queue
 * (queue_full) and a failed export (export_failed). */
#include "check.h"
#include "err.h"
#include "otel.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define T "4bf92f3577b34da6a3ce929d0e0e4736"
#define P "00f067aa0ba902b7"

static const char *const vars[] = {"OTEL_EXPORTER_OTLP_ENDPOINT",
                                   "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                   "OTEL_TRACES_EXPORTER",
                                   "OTEL_SDK_DISABLED",
                                   "OTEL_SERVICE_NAME",
                                   "OTEL_RESOURCE_ATTRIBUTES",
                                   "OTEL_EXPORTER_OTLP_HEADERS",
                                   "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                                   "OTEL_TRACES_SAMPLER",
                                   "OTEL_TRACES_SAMPLER_ARG",
                                   "OTEL_BSP_MAX_QUEUE_SIZE",
                                   "OTEL_BSP_SCHEDULE_DELAY",
                                   "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
                                   "OTEL_EXPORTER_OTLP_TIMEOUT",
                                   "OTEL_EXPORTER_OTLP_PROTOCOL",
                                   NULL};

static void env_clear(void)
{
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
}

static void config_cases(void)
{
    otel_config_t c;
    char err[300];
    env_clear();
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(c.enabled, 0);
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(c.enabled, 1);
    CHECK_STR_EQ(c.url, "http://collector:4318/v1/traces");
    CHECK_INT_EQ(c.queue_max, 2048);
    CHECK_INT_EQ(c.batch_max, 512);
    CHECK_INT_EQ(c.delay_ms, 5000);
    CHECK_INT_EQ(c.timeout_ms, 10000);
    CHECK_STR_EQ(c.resource[0].key, "service.name");
    CHECK_STR_EQ(c.resource[0].value, "mcpq-test");
    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://x.example/otlp/traces", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_STR_EQ(c.url, "https://x.example/otlp/traces");
    TEST_PASS("the endpoint: the traces one as is, else the base one + /v1/traces");

    setenv("OTEL_TRACES_EXPORTER", "none", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(c.enabled, 0);
    unsetenv("OTEL_TRACES_EXPORTER");
    setenv("OTEL_SDK_DISABLED", "TRUE", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(c.enabled, 0);
    unsetenv("OTEL_SDK_DISABLED");
    TEST_PASS("OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true turn export off");

    setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b%3Dc, x-tenant = t1 ,bad", 1);
    setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,service.name=gw", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(c.nheaders, 2);
    CHECK_STR_EQ(c.headers[0].key, "api-key");
    CHECK_STR_EQ(c.headers[0].value, "a b=c");
    CHECK_STR_EQ(c.headers[1].key, "x-tenant");
    CHECK_STR_EQ(c.headers[1].value, "t1");
    CHECK_STR_EQ(c.resource[0].value, "gw");
    CHECK_STR_EQ(c.resource[3].key, "deployment.environment");
    CHECK_INT_EQ(c.nresource, 4);
    setenv("OTEL_SERVICE_NAME", "edge", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_STR_EQ(c.resource[0].value, "edge");
    TEST_PASS(
        "headers and resource attributes: k=v lists, percent-decoded; OTEL_SERVICE_NAME wins");

    setenv("OTEL_BSP_MAX_QUEUE_SIZE", "ten", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "OTEL_BSP_MAX_QUEUE_SIZE");
    setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(c.batch_max, 4);
    setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio", 1);
    setenv("OTEL_TRACES_SAMPLER_ARG", "1.5", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "OTEL_TRACES_SAMPLER_ARG");
    setenv("OTEL_TRACES_SAMPLER", "sometimes", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "not supported");
    unsetenv("OTEL_TRACES_SAMPLER");
    unsetenv("OTEL_TRACES_SAMPLER_ARG");
    setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), 0);
    CHECK_CONTAINS(c.warning, "http/json");
    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318", 1);
    CHECK_INT_EQ(otel_config_load(&c, "mcpq-test", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "http://");
    TEST_PASS("bad values are refused with the variable's name; grpc warns and sends JSON");
}

/* The sampler of the running exporter, for a root and for parents sampled or not. */
static void sampler_cases(void)
{
    trace_ctx_t on, off;
    CHECK_INT_EQ(trace_parse("00-" T "-" P "-01", &on), 0);
    CHECK_INT_EQ(trace_parse("00-" T "-" P "-00", &off), 0);
    CHECK_INT_EQ(otel_sample(NULL, T), 1); /* off: W3C alone */
    CHECK_INT_EQ(otel_sample(&off, T), 0);
    char err[300];
    env_clear();
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
    setenv("OTEL_TRACES_SAMPLER", "traceidratio", 1);
    setenv("OTEL_TRACES_SAMPLER_ARG", "0.5", 1);
    CHECK_INT_EQ(otel_init("mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(otel_sample(NULL, "0000000000000000"
                                   "0000000000000001"),
                 1);
    CHECK_INT_EQ(otel_sample(NULL, "0000000000000000"
                                   "ffffffffffffffff"),
                 0);
    CHECK_INT_EQ(otel_sample(&off, "0000000000000000"
                                   "0000000000000001"),
                 1); /* not parentbased */
    otel_shutdown();
    setenv("OTEL_TRACES_SAMPLER", "parentbased_always_off", 1);
    CHECK_INT_EQ(otel_init("mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(otel_sample(NULL, T), 0);
    CHECK_INT_EQ(otel_sample(&on, T), 1);
    CHECK_INT_EQ(otel_sample(&off, T), 0);
    otel_shutdown();
    unsetenv("OTEL_TRACES_SAMPLER");
    unsetenv("OTEL_TRACES_SAMPLER_ARG");
    CHECK_INT_EQ(otel_init("mcpq-test", err, sizeof(err)), 0);
    CHECK_INT_EQ(otel_sample(NULL, T), 1);
    CHECK_INT_EQ(otel_sample(&off, T), 0); /* the default: parentbased_always_on */
    otel_shutdown();
    TEST_PASS("samplers: traceidratio on the id's low 8 bytes, parentbased follows the parent");
}

static const char *attr_value(const cJSON *attrs, const char *key, const char *type)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, attrs)
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(a, "key")), key) == 0) {
            const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "value"), type);
            return cJSON_IsString(v) ? v->valuestring : cJSON_IsTrue(v) ? "true" : "?";
        }
    }
    return "(absent)";
}

/* A span's attribute as text ("(absent)" when it has none). */
static const char *attr_of(const otel_span_t *s, const char *key)
{
    static char buf[OTEL_VALUE_MAX];
    for (int i = 0; i < s->nattrs; i++) {
        if (strcmp(s->attrs[i].key, key) != 0)
            continue;
        if (s->attrs[i].type == 's')
            return s->attrs[i].s;
        snprintf(buf, sizeof(buf), "%lld", s->attrs[i].i);
        return buf;
    }
    return "(absent)";
}

/* What otel_describe prints for the environment as it is. */
static void describe(char *out, size_t size)
{
    FILE *f = fmemopen(out, size, "w");
    CHECK(f != NULL);
    otel_describe(f, "mcpq-test");
    fclose(f);
}

static void describe_cases(void)
{
    char out[600];
    env_clear();
    describe(out, sizeof(out));
    CHECK_STR_EQ(out, "# trace export (OpenTelemetry): off\n");
    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/t", 1);
    setenv("OTEL_SERVICE_NAME", "gw", 1);
    describe(out, sizeof(out));
    CHECK_STR_EQ(out,
                 "# trace export (OpenTelemetry): on, OTLP/HTTP JSON to http://c:4318/t as gw\n");
    setenv("OTEL_BSP_SCHEDULE_DELAY", "-1", 1);
    describe(out, sizeof(out));
    CHECK_CONTAINS(out, "invalid: OTEL_BSP_SCHEDULE_DELAY");
    env_clear();
    TEST_PASS("--print-config's line: off, on with where to, or why the environment is invalid");
}

static void json_cases(void)
{
    char err[300];
    env_clear();
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
    setenv("OTEL_SERVICE_NAME", "svc", 1);
    setenv("OTEL_BSP_SCHEDULE_DELAY", "600000", 1);
    CHECK_INT_EQ(otel_init("mcpq-test", err, sizeof(err)), 0);
    trace_ctx_t ctx;
    CHECK_INT_EQ(trace_parse("00-" T "-" P "-01", &ctx), 0);
    otel_span_t *s = otel_span_start(&ctx, "1111111111111111", "tools/call echo", OTEL_KIND_SERVER,
                                     1700000000123456);
    CHECK(s != NULL);
    otel_span_str(s, "gen_ai.tool.name", "echo");
    otel_span_int(s, "jsonrpc.request.id", 7);
    otel_span_bool(s, "mcpq.replay", 1);
    otel_span_str(s, "gen_ai.tool.name", "echo2"); /* replaced */
    otel_span_error(s, "-32603", "boom \"quoted\"");
    s->end_us = 1700000000223456;
    util_buf_t b;
    util_buf_init(&b, 1 << 20);
    CHECK_INT_EQ(otel_spans_json(&s, 1, &b), 0);
    cJSON *doc = cJSON_Parse(b.data);
    CHECK(doc != NULL);
    cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "resourceSpans"), 0);
    cJSON *rattrs = cJSON_GetObjectItem(cJSON_GetObjectItem(rs, "resource"), "attributes");
    CHECK_STR_EQ(attr_value(rattrs, "service.name", "stringValue"), "svc");
    cJSON *ss = cJSON_GetArrayItem(cJSON_GetObjectItem(rs, "scopeSpans"), 0);
    CHECK_STR_EQ(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(ss, "scope"), "name")),
        "mcpq");
    cJSON *sp = cJSON_GetArrayItem(cJSON_GetObjectItem(ss, "spans"), 0);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(sp, "traceId")), T);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(sp, "spanId")), P);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(sp, "parentSpanId")), "1111111111111111");
    CHECK_INT_EQ(cJSON_GetObjectItem(sp, "kind")->valueint, 2);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(sp, "startTimeUnixNano")),
                 "1700000000123456000");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(sp, "endTimeUnixNano")),
                 "1700000000223456000");
    cJSON *attrs = cJSON_GetObjectItem(sp, "attributes");
    CHECK_INT_EQ(cJSON_GetArraySize(attrs), 4);
    CHECK_STR_EQ(attr_value(attrs, "gen_ai.tool.name", "stringValue"), "echo2");
    CHECK_STR_EQ(attr_value(attrs, "jsonrpc.request.id", "intValue"), "7");
    CHECK_STR_EQ(attr_value(attrs, "mcpq.replay", "boolValue"), "true");
    CHECK_STR_EQ(attr_value(attrs, "error.type", "stringValue"), "-32603");
    cJSON *st = cJSON_GetObjectItem(sp, "status");
    CHECK_INT_EQ(cJSON_GetObjectItem(st, "code")->valueint, 2);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(st, "message")), "boom \"quoted\"");
    cJSON_Delete(doc);
    util_buf_cleanup(&b);
    otel_span_free(s);

    char tp[TRACE_PARENT_LEN + 1];
    otel_span_t *c = otel_span_child("00-" T "-" P "-01", "POST", OTEL_KIND_CLIENT, tp);
    CHECK(c != NULL);
    CHECK_STR_EQ(c->parent_id, P);
    CHECK_INT_EQ(strncmp(tp, "00-" T "-", 36), 0);
    CHECK_INT_EQ(strncmp(tp + 36, c->span_id, 16), 0);
    otel_span_free(c);
    CHECK(otel_span_child("00-" T "-" P "-00", "POST", OTEL_KIND_CLIENT, tp) == NULL);
    CHECK_STR_EQ(tp, "00-" T "-" P "-00");
    CHECK(otel_span_child("junk", "POST", OTEL_KIND_CLIENT, tp) == NULL);
    CHECK_STR_EQ(tp, "");
    otel_span_t *h = otel_span_child("00-" T "-" P "-01", "POST", OTEL_KIND_CLIENT, tp);
    otel_span_http(h, "POST", "https://user:pw@example.com:8443/hook/x?token=secret#frag");
    CHECK_STR_EQ(attr_of(h, "url.full"), "https://example.com:8443/hook/x");
    CHECK_STR_EQ(attr_of(h, "server.address"), "example.com");
    CHECK_STR_EQ(attr_of(h, "server.port"), "8443");
    CHECK_STR_EQ(attr_of(h, "http.request.method"), "POST");
    otel_span_free(h);
    h = otel_span_child("00-" T "-" P "-01", "POST", OTEL_KIND_CLIENT, tp);
    otel_span_http(h, "POST", "http://plain.example/");
    CHECK_STR_EQ(attr_of(h, "url.full"), "http://plain.example:80/");
    otel_span_http(h, "POST", "not a url");
    CHECK_STR_EQ(attr_of(h, "url.full"), "http://plain.example:80/"); /* left as it was */
    otel_span_free(h);
    otel_shutdown();
    TEST_PASS("a span renders as OTLP JSON: hex ids, nanos as strings, kind and status numbers");
    TEST_PASS("HTTP client attributes: url.full without user info, query or fragment");
}

static unsigned long long metric(const char *text, const char *series)
{
    const char *p = strstr(text, series);
    return p ? strtoull(p + strlen(series), NULL, 10) : 999999;
}

/* A queue of 2 under a burst of 1000 spans: most are dropped (queue_full) and nothing blocks;
 * what was queued goes to a port nobody listens on (export_failed); every span is counted once. */
static void queue_cases(void)
{
    char err[300];
    env_clear();
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
    setenv("OTEL_BSP_MAX_QUEUE_SIZE", "2", 1);
    setenv("OTEL_BSP_SCHEDULE_DELAY", "600000", 1);
    setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000", 1);
    CHECK_INT_EQ(otel_init("mcpq-test", err, sizeof(err)), 0);
    trace_ctx_t ctx;
    CHECK_INT_EQ(trace_new(&ctx), 0);
    for (int i = 0; i < 1000; i++)
        otel_span_end(otel_span_start(&ctx, NULL, "s", OTEL_KIND_INTERNAL, 0), 0);
    util_buf_t b;
    util_buf_init(&b, 1 << 16);
    CHECK_INT_EQ(otel_metrics_render(&b), 0);
    CHECK(metric(b.data, "mcpq_otel_queue_spans ") <= 2);
    CHECK(metric(b.data, "mcpq_otel_spans_dropped_total{reason=\"queue_full\"} ") >= 990);
    util_buf_cleanup(&b);
    otel_shutdown();
    util_buf_init(&b, 1 << 16);
    CHECK_INT_EQ(otel_metrics_render(&b), 0);
    CHECK_INT_EQ(metric(b.data, "mcpq_otel_queue_spans "), 0);
    CHECK_INT_EQ(metric(b.data, "mcpq_otel_spans_exported_total "), 0);
    unsigned long long failed =
        metric(b.data, "mcpq_otel_spans_dropped_total{reason=\"export_failed\"} ");
    CHECK(failed >= 1);
    CHECK_INT_EQ(failed + metric(b.data, "mcpq_otel_spans_dropped_total{reason=\"queue_full\"} "),
                 1000);
    util_buf_cleanup(&b);
    CHECK(otel_span_start(&ctx, NULL, "s", OTEL_KIND_INTERNAL, 0) == NULL); /* off again */
    TEST_PASS("a full queue drops and counts; a failed export drops and counts; shutdown flushes");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    config_cases();
    sampler_cases();
    json_cases();
    describe_cases();
    queue_cases();
    curl_global_cleanup();
    return TEST_EXIT();
}
