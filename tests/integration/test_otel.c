/*
 * test_otel.c - OpenTelemetry spans over OTLP/HTTP JSON end to end (docs/operations.md, "Traces
 * (OpenTelemetry)"): redis-server, mcpq-devbroker, mcpq-ingress and mcpq-worker
 * (tests/fixture.c), and an in-process HTTP server that is at once the OTLP/HTTP receiver
 * (/v1/traces: it keeps every span it is sent; /slow: the same after 3 s) and the upstream of
 * the http tools (/tool answers, /fail answers 500), recording the traceparent and tracestate
 * each tool request carried. Checked, as an operator's collector sees it:
 *   - one call is one trace: client traceparent -> ingress SERVER "tools/call web" -> PRODUCER
 *     "send <topic>" -> worker "queue wait" and CONSUMER "execute_tool web" -> CLIENT "POST"
 *     (whose span id is the parent-id the upstream received) and "result"; the tracestate
 *     reaches the upstream; attributes by name; children inside their parents in time; the
 *     queue wait starts when the ingress built the job;
 *   - a client's unsampled traceparent records nothing and stays unsampled;
 *   - a failed call's spans carry error status and error.type;
 *   - an mcp executor's request to its upstream (/mcp) is a CLIENT span, its context sent; so
 *     are the session negotiation's initialize and notifications/initialized of the first call;
 *   - a task's webhook delivery (/hook) is a CLIENT span of the task's trace; the task's tool
 *     gets the client's tracestate (kept with the task through the task queue);
 *   - requests answered without a job (tools/list, an unknown tool) have SERVER spans;
 *   - each element of a 2025-03-26 batch has its own SERVER span, each call's job its own
 *     PRODUCER span under it;
 *   - --print-config says whether export is on and where to;
 *   - every body decodes against the OTLP protobuf schema (tests/clients/otlp-check.mjs, when
 *     the client packages are installed);
 *   - collector down: calls still work and mcpq_otel_spans_dropped_total{reason="export_failed"}
 *     grows; a queue of 2 behind a slow collector drops spans (queue_full) and calls still
 *     answer; export off (OTEL_SDK_DISABLED) sends nothing;
 *   - a collector answering 503 with Retry-After once: the batch is sent again, its spans
 *     arrive and nothing is counted dropped.
 */
#include "check.h"
#include "fixture.h"
#include "trace.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T1 "4bf92f3577b34da6a3ce929d0e0e4736"
#define T2 "0af7651916cd43dd8448eb211c80319c"
#define P "00f067aa0ba902b7"
#define T3 "11112222333344445555666677778888"
#define T4 "99998888777766665555444433332222"
#define T5 "5555aaaa5555aaaa5555aaaa5555aaaa"
#define T6 "6666bbbb6666bbbb6666bbbb6666bbbb"
#define T7 "7777cccc7777cccc7777cccc7777cccc"
#define T8 "8888dddd8888dddd8888dddd8888dddd"
#define T9 "9999eeee9999eeee9999eeee9999eeee"
#define T10 "aaaa0000aaaa0000aaaa0000aaaa0000"
#define STATE "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
#define PRIVATE "MCPQ_WEBHOOK_ALLOW_PRIVATE=1" /* the webhook receiver is on loopback */
#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwTest0001"

static fx_stack_t fx;
static int srv_port;
static char ilog[400], wlog[400]; /* the main ingress's and worker's logs */

/* ---- the server: spans received, tool requests seen ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cJSON *spans; /* every span received, each with "service" (its resource's service.name) */
static int bodies;   /* OTLP bodies received */
static int flaky;    /* /flaky requests answered 503 so far */

typedef struct seen {
    char path[32];
    char text[64];
    char traceparent[128];
    char tracestate[256];
} seen_t;
#define MAXSEEN 64
static seen_t seen[MAXSEEN];
static int nseen;

static enum MHD_Result answer(struct MHD_Connection *conn, int status, const char *body)
{
    return fx_server_reply(conn, status, "application/json", body, NULL, NULL);
}

/* A 2025-11-25 upstream MCP server: server/discover unknown (-32601), so the worker initializes
 * a session; initialize, notifications, tools/call answered "up". */
static enum MHD_Result mcp_answer(struct MHD_Connection *conn, const cJSON *j)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "method"));
    char body[600], idj[64] = "null";
    if (!id)
        return answer(conn, 202, "");
    if (cJSON_IsNumber(id))
        snprintf(idj, sizeof(idj), "%d", id->valueint);
    if (m && strcmp(m, "server/discover") == 0) /* a 2025-11-25 server does not know it */
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":"
                 "\"Method not found\"}}",
                 idj);
    else if (m && strcmp(m, "initialize") == 0)
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-11-25\","
                 "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"up\",\"version\":"
                 "\"1\"}}}",
                 idj);
    else
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
                 "\"text\":\"up\"}]}}",
                 idj);
    return fx_server_reply(conn, 200, "application/json", body, "Mcp-Session-Id", "s-1");
}

static const char *service_of(const cJSON *rs)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(cJSON_GetObjectItem(rs, "resource"), "attributes"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(a, "key")), "service.name") == 0)
            return cJSON_GetStringValue(
                cJSON_GetObjectItem(cJSON_GetObjectItem(a, "value"), "stringValue"));
    }
    return "?";
}

/* Keeps the spans of an OTLP body, and the body itself as <dir>/otlp-<n>.json. */
static void keep_body(const util_buf_t *b)
{
    cJSON *doc = cJSON_Parse(b->data ? b->data : "");
    CHECK(doc != NULL);
    /* a batch is never empty: the exporter sends only when it has spans */
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "resourceSpans")) == 1);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "resourceSpans"), 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(
              cJSON_GetArrayItem(cJSON_GetObjectItem(first, "scopeSpans"), 0), "spans")) > 0);
    pthread_mutex_lock(&mu);
    char path[400];
    snprintf(path, sizeof(path), "%s/otlp/otlp-%d.json", fx.dir, bodies++);
    fx_write_file(path, b->data, 0600);
    const cJSON *rs, *ss, *sp;
    cJSON_ArrayForEach(rs, cJSON_GetObjectItem(doc, "resourceSpans"))
    {
        const char *svc = service_of(rs);
        cJSON_ArrayForEach(ss, cJSON_GetObjectItem(rs, "scopeSpans"))
        {
            cJSON_ArrayForEach(sp, cJSON_GetObjectItem(ss, "spans"))
            {
                cJSON *copy = cJSON_Duplicate(sp, 1);
                cJSON_AddStringToObject(copy, "service", svc);
                cJSON_AddItemToArray(spans, copy);
            }
        }
    }
    pthread_mutex_unlock(&mu);
    cJSON_Delete(doc);
}

static enum MHD_Result on_req(struct MHD_Connection *conn, const char *url, const char *method,
                              const util_buf_t *b)
{
    (void)method;
    if (strcmp(url, "/flaky") == 0) { /* a collector busy once: 503, Retry-After: 1 */
        pthread_mutex_lock(&mu);
        int busy = flaky++ == 0;
        pthread_mutex_unlock(&mu);
        if (busy)
            return fx_server_reply(conn, 503, "application/json", "{}", "Retry-After", "1");
        keep_body(b);
        return answer(conn, 200, "{}");
    }
    if (strcmp(url, "/v1/traces") == 0 || strcmp(url, "/slow") == 0) {
        if (strcmp(url, "/slow") == 0)
            sleep(3);
        const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
        CHECK_STR_EQ(ct ? ct : "", "application/json");
        keep_body(b);
        return answer(conn, 200, "{}");
    }
    cJSON *j = cJSON_Parse(b->data ? b->data : "");
    const char *text = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "arguments"), "text"));
    if (strcmp(url, "/mcp") == 0) /* the upstream MCP server: its requests by method */
        text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "method"));
    const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent");
    const char *ts = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "tracestate");
    pthread_mutex_lock(&mu);
    if (nseen < MAXSEEN) {
        seen_t *s = &seen[nseen++];
        snprintf(s->path, sizeof(s->path), "%s", url);
        snprintf(s->text, sizeof(s->text), "%s", text ? text : "");
        snprintf(s->traceparent, sizeof(s->traceparent), "%s", tp ? tp : "");
        snprintf(s->tracestate, sizeof(s->tracestate), "%s", ts ? ts : "");
    }
    pthread_mutex_unlock(&mu);
    if (strcmp(url, "/mcp") == 0) {
        enum MHD_Result ret = mcp_answer(conn, j);
        cJSON_Delete(j);
        return ret;
    }
    cJSON_Delete(j);
    if (strcmp(url, "/fail") == 0)
        return answer(conn, 500, "{\"error\":\"down\"}");
    return answer(conn, 200, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}");
}

/* What the server got on path (NULL: any) for the request with text; waits up to 30 s. */
static seen_t wait_seen_at(const char *path, const char *text)
{
    for (long long until = fx_now_ms() + 30000; fx_now_ms() < until; fx_sleep_ms(50)) {
        pthread_mutex_lock(&mu);
        for (int i = 0; i < nseen; i++) {
            if (strcmp(seen[i].text, text) == 0 && (!path || strcmp(seen[i].path, path) == 0)) {
                seen_t s = seen[i];
                pthread_mutex_unlock(&mu);
                return s;
            }
        }
        pthread_mutex_unlock(&mu);
    }
    fprintf(stderr, "the tool never saw %s; it saw:\n", text);
    for (int i = 0; i < nseen; i++)
        fprintf(stderr, "  %s %s\n", seen[i].path, seen[i].text);
    exit(1);
}

static seen_t wait_seen(const char *text)
{
    return wait_seen_at(NULL, text);
}

/* ---- spans ---- */

static const char *field(const cJSON *span, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(span, key));
    return s ? s : "";
}

static const char *attr(const cJSON *span, const char *key)
{
    static char buf[256];
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(span, "attributes"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(a, "key")), key) != 0)
            continue;
        const cJSON *v = cJSON_GetObjectItem(a, "value");
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(v, "stringValue"));
        if (!s)
            s = cJSON_GetStringValue(cJSON_GetObjectItem(v, "intValue"));
        snprintf(buf, sizeof(buf), "%s", s ? s : "?");
        return buf;
    }
    return "(absent)";
}

static const char *attr(const cJSON *span, const char *key);

/* A copy of the span of trace_id named name (prefix match) whose attribute key (or, for
 * "parentSpanId", that field) is value (key NULL: any), waiting up to 30 s; the caller frees
 * it. */
static cJSON *span_where(const char *trace_id, const char *name, const char *key, const char *value)
{
    for (long long until = fx_now_ms() + 30000; fx_now_ms() < until; fx_sleep_ms(100)) {
        cJSON *found = NULL;
        const cJSON *s;
        pthread_mutex_lock(&mu);
        cJSON_ArrayForEach(s, spans)
        {
            if (!found && strcmp(field(s, "traceId"), trace_id) == 0 &&
                strncmp(field(s, "name"), name, strlen(name)) == 0 &&
                (!key || strcmp(strcmp(key, "parentSpanId") == 0 ? field(s, key) : attr(s, key),
                                value) == 0))
                found = cJSON_Duplicate(s, 1);
        }
        pthread_mutex_unlock(&mu);
        if (found)
            return found;
    }
    fprintf(stderr, "no span %s in trace %s\n", name, trace_id);
    exit(1);
}

static cJSON *span_named(const char *trace_id, const char *name)
{
    return span_where(trace_id, name, NULL, NULL);
}

static long long nanos(const cJSON *span, const char *key)
{
    return strtoll(field(span, key), NULL, 10);
}

/* child's parent is parent; with inside, child lies within parent in time. */
static void check_child(const cJSON *child, const cJSON *parent, int inside)
{
    CHECK_STR_EQ(field(child, "parentSpanId"), field(parent, "spanId"));
    CHECK_STR_EQ(field(child, "traceId"), field(parent, "traceId"));
    if (inside) {
        CHECK(nanos(child, "startTimeUnixNano") >= nanos(parent, "startTimeUnixNano"));
        CHECK(nanos(child, "endTimeUnixNano") <= nanos(parent, "endTimeUnixNano"));
    }
}

static int kind(const cJSON *span)
{
    return cJSON_GetObjectItem(span, "kind")->valueint;
}

static int status_code(const cJSON *span)
{
    const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(span, "status"), "code");
    return c ? c->valueint : 0;
}

/* ---- the gateway side ---- */

static void write_config(const char *path)
{
    char cfg[4096];
    snprintf(
        cfg, sizeof(cfg),
        "{\"tenants\":[{\"id\":\"ot\",\"api_keys\":[{\"id\":\"k\",\"key\":\"otel-key\"}],"
        "\"webhooks\":[{\"id\":\"wh\",\"url\":\"http://127.0.0.1:%d/hook\",\"secret\":\"" SECRET
        "\",\"events\":[\"task.completed\"]}]}],"
        "\"servers\":[{\"tenant\":\"ot\",\"name\":\"default\"}],\"tools\":["
        "{\"tenant\":\"ot\",\"server\":\"default\",\"name\":\"web\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
        "\"executor\":{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/tool?k=secret\"}}]},"
        "{\"tenant\":\"ot\",\"server\":\"default\",\"name\":\"bad\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
        "\"executor\":{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/fail\"}}]},"
        "{\"tenant\":\"ot\",\"server\":\"default\",\"name\":\"up\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
        "\"executor\":{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\",\"tool\":"
        "\"echo\"}}]},"
        "{\"tenant\":\"ot\",\"server\":\"default\",\"name\":\"job\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"mode\":\"task\",\"inputSchema\":{\"type\":"
        "\"object\"},\"executor\":{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/tool\"}}]}]}",
        srv_port, srv_port, srv_port, srv_port, srv_port);
    fx_write_file(path, cfg, 0600);
}

/* A tools/call of tool with {"text": text} through the ingress on port, with an extra header
 * pair (may be NULL); the HTTP status. */
static long call(int port, const char *tool, const char *text, const char *h1, const char *h2)
{
    char url[96], body[512];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":\"c-%s\",\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":{\"text\":\"%s\"}}}",
             text, tool, text);
    const char *hdrs[] = {"Authorization: Bearer otel-key", "X-Request-Id: rq-otel-1", h1, h2,
                          NULL};
    if (!h1)
        hdrs[2] = NULL;
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, &r), 0);
    if (r.status != 200 || !strstr(r.body, "\"result\""))
        fprintf(stderr, "answer %ld: %s\n", r.status, r.body);
    CHECK(strstr(r.body, "\"result\"") != NULL);
    return r.status;
}

/* The value of series (exact line prefix) on the ingress's /metrics at port. */
static long long metric(int port, const char *series)
{
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
    char *text = fx_http_text(url);
    CHECK(text != NULL);
    CHECK_INT_EQ(fx_promtool_check(text), 0); /* the exporter's series are valid exposition */
    char want[200];
    snprintf(want, sizeof(want), "\n%s ", series);
    const char *p = strstr(text, want);
    long long v = p ? strtoll(p + strlen(want), NULL, 10) : -1;
    free(text);
    return v;
}

/* Waits up to 30 s for series on port to reach at least min; its value. */
static long long metric_wait(int port, const char *series, long long min)
{
    long long v = -1;
    for (long long until = fx_now_ms() + 30000; fx_now_ms() < until; fx_sleep_ms(100))
        if ((v = metric(port, series)) >= min)
            return v;
    fprintf(stderr, "%s stayed at %lld (wanted >= %lld)\n", series, v, min);
    exit(1);
}

/* ---- the cases ---- */

static void check_tree(void)
{
    seen_t s = wait_seen("tree");
    trace_ctx_t up;
    CHECK_INT_EQ(trace_parse(s.traceparent, &up), 0);
    CHECK_STR_EQ(up.trace_id, T1);
    CHECK_STR_EQ(s.tracestate, STATE);

    cJSON *server = span_named(T1, "tools/call web");
    cJSON *producer = span_named(T1, "send ");
    cJSON *wait = span_named(T1, "queue wait");
    cJSON *exec = span_named(T1, "execute_tool web");
    cJSON *client = span_named(T1, "POST");
    cJSON *result = span_named(T1, "result");
    CHECK_STR_EQ(field(server, "parentSpanId"), P);
    CHECK_INT_EQ(kind(server), 2);
    CHECK_STR_EQ(field(server, "service"), "mcpq-ingress");
    check_child(producer, server, 1);
    CHECK_INT_EQ(kind(producer), 4);
    check_child(wait, producer, 0);
    check_child(exec, producer, 0);
    CHECK_INT_EQ(kind(exec), 5);
    CHECK_STR_EQ(field(exec, "service"), "mcpq-worker");
    check_child(client, exec, 1);
    CHECK_INT_EQ(kind(client), 3);
    check_child(result, exec, 1);
    /* the upstream's parent-id is the CLIENT span */
    CHECK_STR_EQ(up.span_id, field(client, "spanId"));
    /* the queue wait starts when the ingress stamped the job (envelope sent_us): inside the
     * SERVER span, before the PRODUCER span ended; it ends where the job's span starts */
    CHECK(nanos(wait, "startTimeUnixNano") >= nanos(server, "startTimeUnixNano"));
    CHECK(nanos(wait, "startTimeUnixNano") <= nanos(producer, "endTimeUnixNano"));
    CHECK_INT_EQ(nanos(wait, "endTimeUnixNano"), nanos(exec, "startTimeUnixNano"));
    CHECK(nanos(exec, "endTimeUnixNano") >= nanos(result, "endTimeUnixNano"));
    TEST_PASS("one trace: client -> SERVER -> PRODUCER -> queue wait + execute -> CLIENT, result");

    CHECK_STR_EQ(attr(server, "mcp.method.name"), "tools/call");
    CHECK_STR_EQ(attr(server, "gen_ai.tool.name"), "web");
    CHECK_STR_EQ(attr(server, "gen_ai.operation.name"), "execute_tool");
    CHECK_STR_EQ(attr(server, "jsonrpc.request.id"), "c-tree");
    CHECK_STR_EQ(attr(server, "mcpq.tenant"), "ot");
    CHECK_STR_EQ(attr(server, "mcpq.request_id"), "rq-otel-1");
    CHECK_STR_EQ(attr(server, "http.response.status_code"), "200");
    CHECK_INT_EQ(status_code(server), 0);
    CHECK_STR_EQ(attr(producer, "messaging.system"), "kafka");
    CHECK_STR_EQ(attr(producer, "messaging.operation.type"), "send");
    CHECK_STR_EQ(attr(producer, "messaging.destination.name"), field(producer, "name") + 5);
    CHECK(strncmp(attr(producer, "mcpq.job_id"), "j_", 2) == 0);
    CHECK_STR_EQ(attr(exec, "mcpq.job_id"), attr(producer, "mcpq.job_id"));
    CHECK_STR_EQ(attr(exec, "messaging.operation.type"), "process");
    CHECK_STR_EQ(attr(exec, "gen_ai.tool.name"), "web");
    CHECK_STR_EQ(attr(exec, "mcpq.request_id"), "rq-otel-1");
    CHECK_STR_EQ(attr(client, "http.request.method"), "POST");
    CHECK_STR_EQ(attr(client, "http.response.status_code"), "200");
    CHECK_STR_EQ(attr(client, "server.address"), "127.0.0.1");
    char full[128];
    snprintf(full, sizeof(full), "http://127.0.0.1:%d/tool", srv_port);
    CHECK_STR_EQ(attr(client, "url.full"), full); /* no query: it may hold secrets */
    CHECK_STR_EQ(attr(result, "db.system.name"), "redis");
    TEST_PASS("the spans' attributes by name (MCP, messaging and HTTP conventions)");

    /* the access line of the request names its SERVER span; the worker's job lines, its span */
    char want[80];
    snprintf(want, sizeof(want), "\"span_id\":\"%s\"", field(server, "spanId"));
    CHECK(fx_log_count(ilog, "\"msg\":\"access\"", want) == 1);
    snprintf(want, sizeof(want), "\"span_id\":\"%s\"", field(exec, "spanId"));
    CHECK(fx_log_count(wlog, "\"msg\":\"job start\"", want) == 1);
    TEST_PASS("the access line carries the SERVER span's id, the job's lines the job span's");
    cJSON_Delete(server);
    cJSON_Delete(producer);
    cJSON_Delete(wait);
    cJSON_Delete(exec);
    cJSON_Delete(client);
    cJSON_Delete(result);
}

static void check_failed(void)
{
    wait_seen("boom");
    cJSON *server = span_named(T2, "tools/call bad");
    cJSON *exec = span_named(T2, "execute_tool bad");
    cJSON *client = span_named(T2, "POST");
    CHECK_INT_EQ(status_code(client), 2);
    CHECK_STR_EQ(attr(client, "http.response.status_code"), "500");
    CHECK_STR_EQ(attr(client, "error.type"), "500");
    CHECK_INT_EQ(status_code(exec), 2);
    CHECK_INT_EQ(status_code(server), 2);
    CHECK(strcmp(attr(server, "error.type"), "(absent)") != 0);
    TEST_PASS("a failed call's spans carry error status and error.type");
    cJSON_Delete(server);
    cJSON_Delete(exec);
    cJSON_Delete(client);
}

/* client is a CLIENT span of trace_id answered 200, and s (what its receiver got) carries
 * its context: the same trace, client's span id as parent-id. */
static void check_received(const seen_t *s, const char *trace_id, const cJSON *client)
{
    trace_ctx_t t;
    CHECK_INT_EQ(kind(client), 3);
    CHECK_STR_EQ(attr(client, "http.response.status_code"), "200");
    CHECK_INT_EQ(trace_parse(s->traceparent, &t), 0);
    CHECK_STR_EQ(t.trace_id, trace_id);
    CHECK_STR_EQ(t.span_id, field(client, "spanId"));
}

/* An mcp executor's call to its upstream: a CLIENT span "tools/call echo" of the job's span;
 * the upstream's tools/call names it as parent-id and gets the tracestate. */
static void check_mcp(void)
{
    seen_t s = wait_seen_at("/mcp", "tools/call");
    cJSON *exec = span_named(T4, "execute_tool up");
    cJSON *up = span_named(T4, "tools/call echo");
    check_child(up, exec, 1);
    check_received(&s, T4, up);
    CHECK_STR_EQ(attr(up, "mcp.method.name"), "tools/call");
    CHECK_STR_EQ(s.tracestate, STATE);
    TEST_PASS("an mcp upstream's tools/call is a CLIENT span whose context the upstream gets");
    /* The first call to the upstream negotiated its session: initialize and the
     * notifications/initialized after it are CLIENT spans of that call's job, before its
     * tools/call, and the upstream received their contexts. */
    seen_t si = wait_seen_at("/mcp", "initialize");
    seen_t sn = wait_seen_at("/mcp", "notifications/initialized");
    cJSON *init = span_named(T4, "initialize");
    cJSON *note = span_named(T4, "notifications/initialized");
    check_child(init, exec, 1);
    check_child(note, exec, 1);
    check_received(&si, T4, init);
    CHECK_STR_EQ(attr(init, "mcp.method.name"), "initialize");
    CHECK_STR_EQ(si.tracestate, STATE);
    CHECK_INT_EQ(trace_parse(sn.traceparent, &(trace_ctx_t){0}), 0);
    CHECK_STR_EQ(attr(note, "http.response.status_code"), "202");
    CHECK(nanos(init, "endTimeUnixNano") <= nanos(up, "startTimeUnixNano"));
    TEST_PASS("the upstream's session negotiation (initialize) is CLIENT spans of the first call");
    cJSON_Delete(init);
    cJSON_Delete(note);
    cJSON_Delete(exec);
    cJSON_Delete(up);
}

/* A task's tool gets the client's tracestate; its webhook delivery is a CLIENT span in the
 * task's trace, child of the creating call's SERVER span; the receiver's traceparent names it. */
static void check_webhook(void)
{
    seen_t tool = wait_seen("task");
    CHECK_STR_EQ(tool.tracestate, STATE); /* kept with the task, relayed when it is claimed */
    TEST_PASS("a task-mode call's tracestate reaches its tool (stored with the task)");
    seen_t hook = wait_seen_at("/hook", "");
    cJSON *server = span_named(T3, "tools/call job");
    cJSON *post = span_where(T3, "POST", "mcpq.event", "task.completed");
    check_child(post, server, 0);
    check_received(&hook, T3, post);
    CHECK_STR_EQ(attr(post, "mcpq.webhook"), "wh");
    CHECK_STR_EQ(attr(post, "mcpq.attempt"), "1");
    TEST_PASS("a webhook delivery is a CLIENT span of the task's trace, its context sent along");
    cJSON_Delete(server);
    cJSON_Delete(post);
}

/* A client's unsampled traceparent (flags 00): with the default sampler (parentbased_always_on)
 * nothing of its trace is recorded, and the tool still gets the trace with flags 00. Spans
 * leave each process in the order they end, so once a later call's ingress and worker spans
 * arrived, the unsampled call's would have too. */
static void check_unsampled(int port)
{
    CHECK_INT_EQ(call(port, "web", "unsampled", "traceparent: 00-" T5 "-" P "-00", NULL), 200);
    seen_t s = wait_seen("unsampled");
    trace_ctx_t t;
    CHECK_INT_EQ(trace_parse(s.traceparent, &t), 0);
    CHECK_STR_EQ(t.trace_id, T5);
    CHECK_INT_EQ(t.flags, 0);
    CHECK_INT_EQ(call(port, "web", "sampled", "traceparent: 00-" T6 "-" P "-01", NULL), 200);
    cJSON_Delete(span_named(T6, "tools/call web"));
    cJSON_Delete(span_named(T6, "execute_tool web"));
    pthread_mutex_lock(&mu);
    const cJSON *sp;
    cJSON_ArrayForEach(sp, spans) CHECK(strcmp(field(sp, "traceId"), T5) != 0);
    pthread_mutex_unlock(&mu);
    TEST_PASS("an unsampled client trace records nothing and stays unsampled downstream");
}

/* mcpq-worker --print-config with extra_env: its output into out. */
static void print_config(const char *const extra_env[], char *out, size_t size)
{
    char bin[400], log[400];
    static int n;
    snprintf(bin, sizeof(bin), "%s/mcpq-worker", fx_bin_dir());
    snprintf(log, sizeof(log), "%s/print-config-%d.log", fx.dir, n++);
    const char *argv[] = {bin, "--print-config", NULL};
    pid_t pid = fx_spawn(argv, extra_env, log);
    CHECK(pid > 0);
    CHECK_INT_EQ(fx_wait_exit(pid, 20000), 0);
    fx_read_file(log, out, size);
}

/* Requests answered without a job have SERVER spans too: tools/list, and a call of a tool that
 * does not exist (error.type: its JSON-RPC code). */
static void check_plain(int port)
{
    char url[96];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    const char *list[] = {"Authorization: Bearer otel-key", "traceparent: 00-" T7 "-" P "-01",
                          NULL};
    CHECK_INT_EQ(
        fx_http_post(url, list, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}", &r), 0);
    CHECK_INT_EQ(r.status, 200);
    const char *nosuch[] = {"Authorization: Bearer otel-key", "traceparent: 00-" T8 "-" P "-01",
                            NULL};
    CHECK_INT_EQ(fx_http_post(url, nosuch,
                              "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":"
                              "{\"name\":\"nosuch\",\"arguments\":{}}}",
                              &r),
                 0);
    CHECK(strstr(r.body, "\"error\"") != NULL);
    cJSON *ls = span_named(T7, "tools/list");
    CHECK_INT_EQ(kind(ls), 2);
    CHECK_STR_EQ(field(ls, "parentSpanId"), P);
    CHECK_STR_EQ(attr(ls, "mcp.method.name"), "tools/list");
    CHECK_STR_EQ(attr(ls, "jsonrpc.request.id"), "5");
    CHECK_INT_EQ(status_code(ls), 0);
    cJSON *bad = span_named(T8, "tools/call nosuch");
    CHECK_INT_EQ(status_code(bad), 2);
    CHECK(strncmp(attr(bad, "error.type"), "-326", 4) == 0); /* -32602: invalid params */
    TEST_PASS("requests answered without a job (tools/list, an unknown tool) have SERVER spans");
    cJSON_Delete(ls);
    cJSON_Delete(bad);
}

/* --print-config says whether spans are exported and where to. */
static void check_print_config(void)
{
    static char out[65536];
    const char *on[] = {"MCPQ_KAFKA_BROKERS=127.0.0.1:1",
                        "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", NULL};
    print_config(on, out, sizeof(out));
    CHECK_CONTAINS(out, "# trace export (OpenTelemetry): on, OTLP/HTTP JSON to "
                        "http://collector:4318/v1/traces as mcpq-worker");
    const char *off[] = {"MCPQ_KAFKA_BROKERS=127.0.0.1:1", "OTEL_EXPORTER_OTLP_ENDPOINT=",
                         "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", NULL};
    print_config(off, out, sizeof(out));
    CHECK_CONTAINS(out, "# trace export (OpenTelemetry): off");
    TEST_PASS("--print-config says whether spans are exported and where to");
}

/* Every OTLP body received decodes against the OTLP protobuf schema (otlp-check.mjs). */
static void check_proto(void)
{
    char cmd[1200];
    const char *deps = getenv("MCPQ_CLIENTS_DEPS");
    snprintf(cmd, sizeof(cmd),
             "MCPQ_CLIENTS_DEPS=$(realpath %s) node --import ./tests/clients/lib/register.mjs "
             "tests/clients/otlp-check.mjs %s/otlp",
             deps && *deps ? deps : "build/clients", fx.dir);
    int rc = system(cmd);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        TEST_SKIP("OTLP protobuf check: the client packages are not installed "
                  "(tests/clients/install.sh)");
        return;
    }
    CHECK_INT_EQ(rc, 0);
    TEST_PASS("every body decodes against the OTLP trace protobuf schema");
}

/* Another ingress (config cfg) on a free port (*port) exporting to this server's path, with
 * one more OTEL_ variable (extra) and OTEL_SERVICE_NAME=service; its pid. */
static pid_t spawn_exporting(const char *cfg, const char *path, const char *extra,
                             const char *service, int *port)
{
    char endpoint[160], svc[96];
    snprintf(endpoint, sizeof(endpoint), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:%d%s",
             srv_port, path);
    snprintf(svc, sizeof(svc), "OTEL_SERVICE_NAME=%s", service);
    *port = fx_free_port();
    const char *env[] = {endpoint, extra, svc, PRIVATE, NULL};
    pid_t pid = fx_spawn_ingress(&fx, service, *port, cfg, env, NULL, 0);
    CHECK(pid > 0);
    return pid;
}

/* A collector that answers 503 (Retry-After: 1) to the first batch and 200 after: the batch is
 * retried, its spans arrive, nothing is dropped. */
static void check_retry(const char *cfg)
{
    int p;
    pid_t i = spawn_exporting(cfg, "/flaky", "OTEL_BSP_SCHEDULE_DELAY=100", "flaky", &p);
    CHECK_INT_EQ(call(p, "web", "retried", "traceparent: 00-" T9 "-" P "-01", NULL), 200);
    cJSON *server = span_named(T9, "tools/call web");
    CHECK_STR_EQ(field(server, "service"), "flaky");
    metric_wait(p, "mcpq_otel_spans_exported_total", 1);
    pthread_mutex_lock(&mu);
    CHECK(flaky >= 2);
    pthread_mutex_unlock(&mu);
    CHECK_INT_EQ(metric(p, "mcpq_otel_spans_dropped_total{reason=\"export_failed\"}"), 0);
    CHECK_INT_EQ(fx_stop_pid(i, 15000), 0);
    TEST_PASS("a collector answering 503 + Retry-After once: the batch is retried, none dropped");
    cJSON_Delete(server);
}

/* A 2025-03-26 batch of two tools/call and a tools/list: each element has a SERVER span of its
 * own (children of the client's span), and each call's job is sent under its own element's:
 * its PRODUCER span is that span's child. */
static void check_batch(int port)
{
    char url[96];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    const char *body =
        "[{\"jsonrpc\":\"2.0\",\"id\":\"b-1\",\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"web\",\"arguments\":{\"text\":\"batch1\"}}},{\"jsonrpc\":\"2.0\",\"id\":\"b-2\","
        "\"method\":\"tools/call\",\"params\":{\"name\":\"web\",\"arguments\":{\"text\":"
        "\"batch2\"}}},{\"jsonrpc\":\"2.0\",\"id\":\"b-3\",\"method\":\"tools/list\"}]";
    const char *hdrs[] = {"Authorization: Bearer otel-key", "traceparent: 00-" T10 "-" P "-01",
                          NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, &r), 0);
    CHECK_INT_EQ(r.status, 200);
    CHECK(strstr(r.body, "\"b-1\"") && strstr(r.body, "\"b-2\"") && strstr(r.body, "\"b-3\""));
    cJSON *server[3];
    static const char *const ids[] = {"b-1", "b-2", "b-3"};
    for (int i = 0; i < 3; i++) {
        server[i] =
            span_where(T10, i < 2 ? "tools/call web" : "tools/list", "jsonrpc.request.id", ids[i]);
        CHECK_INT_EQ(kind(server[i]), 2);
        CHECK_STR_EQ(field(server[i], "parentSpanId"), P);
        if (i < 2) /* the calls' end with the response; tools/list's when it was answered */
            CHECK_STR_EQ(attr(server[i], "http.response.status_code"), "200");
    }
    CHECK(strcmp(field(server[0], "spanId"), field(server[1], "spanId")) != 0);
    for (int i = 0; i < 2; i++) {
        cJSON *send = span_where(T10, "send", "parentSpanId", field(server[i], "spanId"));
        CHECK_INT_EQ(kind(send), 4);
        cJSON_Delete(send);
    }
    wait_seen("batch1");
    wait_seen("batch2");
    TEST_PASS("a batch: each element its own SERVER span, each call's job sent under its own");
    for (int i = 0; i < 3; i++)
        cJSON_Delete(server[i]);
}

/* Collector down, tiny queue behind a slow collector, export off: calls answer either way. */
static void check_degraded(const char *cfg)
{
    char down[128];
    snprintf(down, sizeof(down), "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", fx_free_port());
    int p1 = fx_free_port();
    const char *e1[] = {down, "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_EXPORTER_OTLP_TIMEOUT=2000",
                        PRIVATE, NULL};
    pid_t i1 = fx_spawn_ingress(&fx, "down", p1, cfg, e1, NULL, 0);
    CHECK(i1 > 0);
    long long before = metric(p1, "mcpq_otel_spans_dropped_total{reason=\"export_failed\"}");
    CHECK_INT_EQ(call(p1, "web", "down", NULL, NULL), 200);
    metric_wait(p1, "mcpq_otel_spans_dropped_total{reason=\"export_failed\"}", before + 1);
    CHECK_INT_EQ(fx_stop_pid(i1, 15000), 0);
    TEST_PASS("collector down: the call answers, export_failed drops are counted");

    int p2;
    pid_t i2 = spawn_exporting(cfg, "/slow", "OTEL_BSP_MAX_QUEUE_SIZE=2", "tiny-queue", &p2);
    for (int i = 0; i < 6; i++) {
        char text[16];
        snprintf(text, sizeof(text), "burst%d", i);
        CHECK_INT_EQ(call(p2, "web", text, NULL, NULL), 200);
    }
    CHECK(metric(p2, "mcpq_otel_spans_dropped_total{reason=\"queue_full\"}") >= 1);
    CHECK(metric(p2, "mcpq_otel_queue_spans") <= 2);
    CHECK_INT_EQ(fx_stop_pid(i2, 30000), 0);
    TEST_PASS("a queue of 2 behind a slow collector: calls answer, queue_full drops counted");

    int p3 = fx_free_port();
    char on[128];
    snprintf(on, sizeof(on), "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", srv_port);
    const char *e3[] = {on, "OTEL_SDK_DISABLED=true", "OTEL_SERVICE_NAME=disabled", PRIVATE, NULL};
    char log[400];
    pid_t i3 = fx_spawn_ingress(&fx, "off", p3, cfg, e3, log, sizeof(log));
    CHECK(i3 > 0);
    CHECK_INT_EQ(call(p3, "web", "off", NULL, NULL), 200);
    wait_seen("off");
    CHECK_INT_EQ(fx_stop_pid(i3, 15000), 0); /* a stop flushes whatever was queued */
    CHECK_INT_EQ(fx_log_count(log, "exporting spans", NULL), 0);
    pthread_mutex_lock(&mu);
    const cJSON *s;
    cJSON_ArrayForEach(s, spans) CHECK(strcmp(field(s, "service"), "disabled") != 0);
    pthread_mutex_unlock(&mu);
    TEST_PASS("OTEL_SDK_DISABLED=true: nothing is exported");
}

int main(void)
{
    char cfg[300], dir[400];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    spans = cJSON_CreateArray();
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(dir, sizeof(dir), "%s/otlp", fx.dir);
    CHECK_INT_EQ(mkdir(dir, 0700), 0);
    srv_port = fx_free_port();
    struct MHD_Daemon *srv = fx_server_start(srv_port, on_req);
    CHECK(srv != NULL);
    snprintf(cfg, sizeof(cfg), "%s/otel.json", fx.dir);
    write_config(cfg);
    char endpoint[128];
    snprintf(endpoint, sizeof(endpoint), "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d/",
             srv_port);
    const char *env[] = {endpoint, "OTEL_BSP_SCHEDULE_DELAY=100", NULL};
    const char *ienv[] = {endpoint, "OTEL_BSP_SCHEDULE_DELAY=100",
                          "MCPQ_WEBHOOK_RETRY_SCHEDULE=0,1,1", PRIVATE, NULL};
    int port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, ienv, ilog, sizeof(ilog));
    CHECK(ing > 0);
    pid_t w = fx_spawn_worker(&fx, "w1", env);
    CHECK(w > 0);
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);

    CHECK_INT_EQ(call(port, "web", "tree", "traceparent: 00-" T1 "-" P "-01", "tracestate: " STATE),
                 200);
    check_tree();
    CHECK_INT_EQ(call(port, "bad", "boom", "traceparent: 00-" T2 "-" P "-01", NULL), 200);
    check_failed();
    CHECK_INT_EQ(call(port, "up", "mcp", "traceparent: 00-" T4 "-" P "-01", "tracestate: " STATE),
                 200);
    check_mcp();
    CHECK_INT_EQ(call(port, "job", "task", "traceparent: 00-" T3 "-" P "-01", "tracestate: " STATE),
                 200);
    check_webhook();
    check_unsampled(port);
    check_plain(port);
    check_batch(port);
    check_print_config();
    check_degraded(cfg);
    check_retry(cfg);
    metric_wait(port, "mcpq_otel_spans_exported_total", 2);

    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 15000), 0);
    check_proto();
    MHD_stop_daemon(srv);
    fx_stop(&fx);
    cJSON_Delete(spans);
    curl_global_cleanup();
    return TEST_EXIT();
}
