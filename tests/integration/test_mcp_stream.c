/*
 * test_mcp_stream.c - live upstream streams of the mcp executor (docs/executors.md, "mcp":
 * "Streaming" and "Upstream tasks") end to end: redis-server, mcpq-devbroker, one
 * mcpq-ingress, one mcpq-worker (tests/fixture.c) and an upstream built with the official
 * TypeScript SDK 1.x (tests/clients/sdk-upstream.mjs). The client here reads the gateway's SSE
 * answer as it arrives and notes when each frame came.
 * Checked: the upstream's progress (every 200 ms for 3 s) reaches the client as it is sent
 * (the first within 500 ms of the call, spread out, all before the result) and its log
 * message too; an upstream that answers with a 2025-11-25 task (taskSupport "required") is
 * followed to its result with its status messages as progress; a call whose deadline passes
 * while its upstream task runs cancels that task (tasks/cancel); a resources/subscribe job
 * (published to Kafka here, signed as the ingress signs) keeps the upstream session's GET
 * stream open, and a resource the SDK upstream says changed reaches a Redis SUBSCRIBE on
 * mcpq:resource:updated as {"tenant","server","uri"} for each subscribed (tenant, server);
 * resources/unsubscribe drops it (the upstream unsubscribed once the last one left); the same
 * with a 2026-07-28 upstream (SDK 2.x: subscriptions/listen) and a stdio one; and a 2026-07-28
 * upstream's task (an in-process upstream of the tasks extension) followed and cancelled.
 * Last, one worker per subscription (docs/executors.md, "Resource subscriptions"): with a
 * second worker in the group, each holding one of the two partitions, three legacy sessions
 * (resources/subscribe, GET streams) and three 2026-07-28 subscriptions/listen streams watch
 * the same upstream resource; their six subscribe jobs all run on one worker, one touch
 * upstream is one message on mcpq:resource:updated, and every client gets the update exactly
 * once (the SDK upstream tells every session subscribed to the uri, so a second worker
 * subscribed too would publish it twice).
 */
#include "check.h"
#include "fixture.h"
#include "jobsig.h"
#include "mcpw.h"
#include "names.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define TOKEN "stream-upstream-token-7"
#define SDK_EXTRAS "SDK_UPSTREAM_EXTRAS=stream" /* sdk-upstream.mjs's slow, long, touch, ... */
#define MAX_FRAMES 64
#define SHARED_URI "sdk://shared"

static fx_stack_t fx;
static int port, sdk_port, sdk2_port, task2_port;
static rd_kafka_t *producer;
static redisContext *redis;

/* One SSE frame of the gateway's answer and when it came (ms after the request was sent). */
typedef struct frame {
    long long at;
    cJSON *msg;
} frame_t;

typedef struct stream {
    mcpw_sse_t sse;
    long long t0;
    frame_t frames[MAX_FRAMES];
    int n;
    int json;       /* the answer is one JSON body (nothing was streamed before the result) */
    char raw[8192]; /* such a body */
    size_t raw_len;
} stream_t;

static int on_event(const char *event, const char *data, size_t len, void *arg)
{
    stream_t *s = arg;
    (void)event;
    if (s->n < MAX_FRAMES) {
        s->frames[s->n].at = fx_now_ms() - s->t0;
        s->frames[s->n].msg = cJSON_ParseWithLength(data, len);
        CHECK(s->frames[s->n].msg != NULL);
        s->n++;
    }
    return 0;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
    stream_t *s = arg;
    size_t n = size * nmemb;
    if (s->json) {
        CHECK(s->raw_len + n < sizeof(s->raw));
        memcpy(s->raw + s->raw_len, ptr, n);
        s->raw_len += n;
        return n;
    }
    CHECK_INT_EQ(mcpw_sse_feed(&s->sse, ptr, n, on_event, s), 0);
    return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *arg)
{
    stream_t *s = arg;
    static const char name[] = "content-type: application/json";
    if (size * nitems >= sizeof(name) - 1 && strncasecmp(buf, name, sizeof(name) - 1) == 0)
        s->json = 1;
    return size * nitems;
}

/* POSTs a tools/call of tool with args and progress token ptok, reading the SSE answer as it
 * arrives into s (frames in order, with their arrival times). */
static void call_stream(stream_t *s, const char *tool, const char *args, const char *ptok)
{
    char url[128], body[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
             "\"arguments\":%s,\"_meta\":{\"progressToken\":\"%s\"}}}",
             tool, args, ptok);
    memset(s, 0, sizeof(*s));
    mcpw_sse_init(&s->sse, 1 << 20);
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer stream-key");
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 60000L);
    s->t0 = fx_now_ms();
    CHECK_INT_EQ(curl_easy_perform(e), CURLE_OK);
    long status = 0;
    char *ctype = NULL;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &ctype);
    CHECK_INT_EQ(status, 200);
    if (s->json) /* one frame, at the end */
        on_event("message", s->raw, s->raw_len, s);
    else
        CHECK(mcpw_is_sse(ctype));
    CHECK(mcpw_sse_finish(&s->sse, on_event, s) >= 0);
    mcpw_sse_cleanup(&s->sse);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
}

static void stream_free(stream_t *s)
{
    for (int i = 0; i < s->n; i++)
        cJSON_Delete(s->frames[i].msg);
}

static const char *method_of(const frame_t *f)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f->msg, "method"));
}

static const cJSON *param(const frame_t *f, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f->msg, "params"),
                                            name);
}

/* The index of the response (the last frame, id 7). */
static int response_at(const stream_t *s)
{
    CHECK(s->n > 0);
    const frame_t *last = &s->frames[s->n - 1];
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(last->msg, "id");
    CHECK(cJSON_IsNumber(id) && id->valueint == 7);
    return s->n - 1;
}

static const char *result_text(const frame_t *f)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(f->msg, "result");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "content");
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(c, 0), "text"));
}

static void tool_json_at(char *out, size_t size, const char *name, const char *tool, int timeout_ms,
                         int up_port)
{
    snprintf(out, size,
             "{\"tenant\":\"s\",\"server\":\"default\",\"name\":\"%s\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"timeout_ms\":%d,\"executor\":{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\","
             "\"tool\":\"%s\",\"headers\":{\"Authorization\":\"Bearer " TOKEN "\"}}}]}",
             name, timeout_ms, up_port, tool);
}

/* The stdio upstream tests/clients/sdk-stdio-upstream.mjs as the worker runs it (the npm
 * packages' dir from the worker's MCPQ_CLIENTS_DEPS, an env reference). */
static char stdio_ex[1024];

static void stdio_executor(void)
{
    char *reg = realpath("tests/clients/lib/register.mjs", NULL);
    char *script = realpath("tests/clients/sdk-stdio-upstream.mjs", NULL);
    CHECK(reg && script);
    snprintf(stdio_ex, sizeof(stdio_ex),
             "{\"type\":\"mcp\",\"command\":\"node\",\"args\":[\"--import\",\"%s\",\"%s\"],"
             "\"env\":{\"MCPQ_CLIENTS_DEPS\":{\"env\":\"MCPQ_CLIENTS_DEPS\"}}",
             reg, script);
    free(reg);
    free(script);
}

static void tool_json(char *out, size_t size, const char *name, const char *tool, int timeout_ms)
{
    tool_json_at(out, size, name, tool, timeout_ms, sdk_port);
}

static void write_config(const char *path)
{
    char t[10][1280], cfg[16384];
    tool_json(t[0], sizeof(t[0]), "sdk_echo", "echo", 20000);
    tool_json(t[1], sizeof(t[1]), "sdk_slow", "slow", 20000);
    tool_json(t[2], sizeof(t[2]), "sdk_long", "long", 20000);
    tool_json(t[3], sizeof(t[3]), "sdk_long_short", "long", 2000);
    tool_json(t[4], sizeof(t[4]), "sdk_touch", "touch", 20000);
    tool_json_at(t[5], sizeof(t[5]), "m_slow", "slow", 20000, sdk2_port);
    tool_json_at(t[6], sizeof(t[6]), "m_touch", "touch", 20000, sdk2_port);
    tool_json_at(t[8], sizeof(t[8]), "t2_job", "job", 20000, task2_port);
    tool_json_at(t[9], sizeof(t[9]), "t2_stuck", "stuck", 1500, task2_port);
    snprintf(t[7], sizeof(t[7]),
             "{\"tenant\":\"s\",\"server\":\"default\",\"name\":\"stdio_touch\",\"published\":"
             "\"1\",\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"timeout_ms\":20000,\"executor\":%s,\"tool\":\"touch\"}}]}",
             stdio_ex);
    char shared[1280]; /* a resource the SDK upstream serves (test_one_worker) */
    snprintf(shared, sizeof(shared),
             "{\"tenant\":\"s\",\"server\":\"default\",\"name\":\"sdk_shared\",\"kind\":"
             "\"resource\",\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uri\":"
             "\"" SHARED_URI "\",\"timeout_ms\":20000,\"executor\":{\"type\":\"mcp\",\"url\":"
             "\"http://127.0.0.1:%d/mcp\",\"headers\":{\"Authorization\":\"Bearer " TOKEN "\"}}}]}",
             sdk_port);
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\":[{\"id\":\"s\",\"api_keys\":[{\"id\":\"k\",\"key\":\"stream-key\"}]}],"
             "\"servers\":[{\"tenant\":\"s\",\"name\":\"default\"}],"
             "\"tools\":[%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s]}",
             t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], shared);
    fx_write_file(path, cfg, 0600);
}

/* Lines "method <name>" the upstream printed for each JSON-RPC message it received. */
static int upstream_got(const char *method)
{
    char path[400], line[512], want[128];
    snprintf(path, sizeof(path), "%s/sdk-upstream.log", fx.dir);
    snprintf(want, sizeof(want), "method %s\n", method);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strcmp(line, want) == 0;
    fclose(f);
    return n;
}

static void test_live_progress(void)
{
    stream_t s;
    /* the upstream session is negotiated by a first call, so the timing below is the call's */
    call_stream(&s, "sdk_echo", "{\"text\":\"warm\"}", "p0");
    CHECK_STR_EQ(result_text(&s.frames[response_at(&s)]), "sdk echo: warm");
    stream_free(&s);

    call_stream(&s, "sdk_slow", "{}", "p1");
    int resp = response_at(&s);
    CHECK_STR_EQ(result_text(&s.frames[resp]), "slow done");
    int first = -1, last = -1, nprog = 0, log_at = -1;
    double prev = 0;
    for (int i = 0; i < resp; i++) {
        const char *m = method_of(&s.frames[i]);
        CHECK(m != NULL);
        if (strcmp(m, "notifications/message") == 0) {
            CHECK_STR_EQ(cJSON_GetStringValue(param(&s.frames[i], "data")), "slow started");
            log_at = i;
            continue;
        }
        CHECK_STR_EQ(m, "notifications/progress");
        CHECK_STR_EQ(cJSON_GetStringValue(param(&s.frames[i], "progressToken")), "p1");
        double p = param(&s.frames[i], "progress")->valuedouble;
        CHECK(p > prev);
        prev = p;
        if (first < 0)
            first = i;
        last = i;
        nprog++;
    }
    CHECK_INT_EQ(nprog, 15);
    long long t_first = s.frames[first].at, t_last = s.frames[last].at, t_resp = s.frames[resp].at;
    fprintf(stderr, "# progress: first after %lld ms, last after %lld ms, result after %lld ms\n",
            t_first, t_last, t_resp);
    /* the first progress as the upstream sends it, not at the end */
    CHECK(t_first < 500);
    /* spread out over the 3 s the tool runs (buffered, they would come together) */
    CHECK(t_last - t_first >= 1500);
    CHECK(t_resp - t_first >= 2000);
    CHECK(log_at >= 0);
    stream_free(&s);
    TEST_PASS("upstream progress and log arrive live: first within 500 ms, spread, before "
              "the result");
}

static void test_task(void)
{
    int gets_before = upstream_got("tasks/get");
    stream_t s;
    call_stream(&s, "sdk_long", "{\"ms\":1200}", "p2");
    int resp = response_at(&s);
    CHECK_STR_EQ(result_text(&s.frames[resp]), "long done after 1200 ms");
    int half = -1;
    for (int i = 0; i < resp; i++) {
        CHECK_STR_EQ(method_of(&s.frames[i]), "notifications/progress");
        const char *msg = cJSON_GetStringValue(param(&s.frames[i], "message"));
        fprintf(stderr, "# task progress after %lld ms: %s\n", s.frames[i].at, msg ? msg : "");
        if (msg && strstr(msg, "half way") && half < 0)
            half = i;
    }
    CHECK(half >= 0);
    CHECK(s.frames[resp].at - s.frames[half].at >= 300); /* live, not at the end */
    CHECK(upstream_got("tasks/get") > gets_before + 2);
    CHECK(upstream_got("tasks/result") >= 1);
    stream_free(&s);
    TEST_PASS("an upstream task (2025-11-25, taskSupport required) is followed to its result, "
              "its status messages as progress");

    CHECK_INT_EQ(upstream_got("tasks/cancel"), 0);
    call_stream(&s, "sdk_long_short", "{\"ms\":60000}", "p3");
    resp = response_at(&s);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(s.frames[resp].msg, "error");
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(err, "code")->valueint, -32003);
    stream_free(&s);
    for (int i = 0; i < 200 && upstream_got("tasks/cancel") == 0; i++)
        fx_sleep_ms(50);
    CHECK_INT_EQ(upstream_got("tasks/cancel"), 1);
    TEST_PASS("a call whose deadline passes cancels its upstream task (tasks/cancel)");
}

/* A job of method for (tenant s, server) with arguments (JSON) on the SDK upstream's mcp
 * executor, signed with the stack's key as the ingress signs; its result record's status. */
static char *run_job_ex(const char *executor, const char *job_id, const char *method,
                        const char *server, const char *args)
{
    char buf[4096];
    long long now = fx_now_ms();
    int n = snprintf(buf, sizeof(buf),
                     "{\"v\":1,\"job_id\":\"%s\",\"method\":\"%s\",\"tenant\":\"s\","
                     "\"server\":\"%s\",\"tool\":\"readme\",\"tool_version\":\"1\","
                     "\"arguments\":%s,\"executor\":%s,\"mode\":\"sync\",\"timeout_ms\":20000,"
                     "\"created_ms\":%lld,\"deadline_ms\":%lld}",
                     job_id, method, server, args, executor, now, now + 20000);
    CHECK(n > 0 && (size_t)n < sizeof(buf));
    jobsig_key_t key = {.len = strlen(fx.job_key)};
    memcpy(key.bytes, fx.job_key, key.len);
    char sig[JOBSIG_VALUE_LEN + 1];
    jobsig_sign(&key, buf, (size_t)n, sig);
    CHECK_INT_EQ(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("mcpq.jobs"),
                                   RD_KAFKA_V_KEY(job_id, strlen(job_id)),
                                   RD_KAFKA_V_VALUE(buf, (size_t)n),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_HEADER(NAMES_HDR_JOB_ID, job_id, -1),
                                   RD_KAFKA_V_HEADER(JOBSIG_HEADER, sig, -1), RD_KAFKA_V_END),
                 0);
    CHECK_INT_EQ(rd_kafka_flush(producer, 10000), 0);
    for (int i = 0; i < 300; i++) {
        redisReply *r = redisCommand(redis, "GET " NAMES_KEY_RESULT "%s", job_id);
        CHECK(r != NULL);
        if (r->type == REDIS_REPLY_STRING) {
            cJSON *rec = cJSON_Parse(r->str);
            freeReplyObject(r);
            char *status =
                strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "status")));
            cJSON_Delete(rec);
            return status;
        }
        freeReplyObject(r);
        fx_sleep_ms(50);
    }
    CHECK(!"no result record for the job");
    return NULL;
}

static char *run_job_at(int up_port, const char *job_id, const char *method, const char *server,
                        const char *args)
{
    char ex[256];
    snprintf(ex, sizeof(ex),
             "{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\",\"headers\":{"
             "\"Authorization\":\"Bearer " TOKEN "\"}}",
             up_port);
    return run_job_ex(ex, job_id, method, server, args);
}

static char *run_job(const char *job_id, const char *method, const char *server, const char *args)
{
    return run_job_at(sdk_port, job_id, method, server, args);
}

/* The next message on mcpq:resource:updated (the subscriber waits at most 20 s). */
static cJSON *next_update(redisContext *sub)
{
    redisReply *r = NULL;
    CHECK_INT_EQ(redisGetReply(sub, (void **)&r), REDIS_OK);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    CHECK_STR_EQ(r->element[0]->str, "message");
    CHECK_STR_EQ(r->element[1]->str, NAMES_CHAN_RESOURCE_UPDATED);
    cJSON *m = cJSON_Parse(r->element[2]->str);
    CHECK(m != NULL);
    freeReplyObject(r);
    return m;
}

static void check_update(redisContext *sub, const char *server, const char *uri)
{
    cJSON *m = next_update(sub);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "tenant")), "s");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "server")), server);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "uri")), uri);
    cJSON_Delete(m);
}

static void touch_with(const char *tool, const char *uri)
{
    char args[256];
    stream_t s;
    snprintf(args, sizeof(args), "{\"uri\":\"%s\"}", uri);
    call_stream(&s, tool, args, "p9");
    const char *text = result_text(&s.frames[response_at(&s)]);
    CHECK(text && strncmp(text, "touched ", 8) == 0);
    stream_free(&s);
}

static void touch(const char *uri)
{
    touch_with("sdk_touch", uri);
}

static redisContext *subscriber(int timeout_s)
{
    struct timeval tv = {timeout_s, 0};
    redisContext *sub = redisConnectWithTimeout("127.0.0.1", fx.redis_port, tv);
    CHECK(sub && !sub->err);
    redisReply *r = redisCommand(sub, "SUBSCRIBE " NAMES_CHAN_RESOURCE_UPDATED);
    CHECK(r != NULL);
    freeReplyObject(r);
    CHECK_INT_EQ(redisSetTimeout(sub, tv), REDIS_OK);
    return sub;
}

static void test_subscriptions(void)
{
    redisContext *sub = subscriber(20);
    char *st = run_job("j_sub_1", "resources/subscribe", "default", "{\"uri\":\"sdk://readme\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    st = run_job("j_sub_2", "resources/subscribe", "other", "{\"uri\":\"sdk://readme\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    CHECK_INT_EQ(upstream_got("resources/subscribe"), 2);
    touch("sdk://readme");
    /* one message per subscribed (tenant, server), newest subscriber first */
    check_update(sub, "other", "sdk://readme");
    check_update(sub, "default", "sdk://readme");
    TEST_PASS("an upstream resource update reaches the Redis channel for each subscriber");

    /* the first unsubscribe is the worker's own (another server still wants the uri) */
    st = run_job("j_unsub_1", "resources/unsubscribe", "other", "{\"uri\":\"sdk://readme\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    CHECK_INT_EQ(upstream_got("resources/unsubscribe"), 0);
    touch("sdk://readme");
    check_update(sub, "default", "sdk://readme");
    st = run_job("j_unsub_2", "resources/unsubscribe", "default", "{\"uri\":\"sdk://readme\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    CHECK_INT_EQ(upstream_got("resources/unsubscribe"), 1);
    /* nothing more for readme: the next message is the later subscription's */
    st = run_job("j_sub_3", "resources/subscribe", "default", "{\"uri\":\"sdk://other\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    touch("sdk://readme");
    touch("sdk://other");
    check_update(sub, "default", "sdk://other");
    redisFree(sub);
    TEST_PASS("resources/unsubscribe drops the subscriber; the upstream is unsubscribed with the "
              "last one");
}

/* The upstream restarts (every session gone): the worker's stream drops, is opened again in
 * a new session with its subscriptions made again, and updates flow as before. Each attempt
 * subscribes to the channel anew and touches the resource, up to a bound. */
static void test_reconnect(pid_t *sdk)
{
    char deps[500];
    CHECK_INT_EQ(fx_stop_pid(*sdk, 5000), 0);
    *sdk = fx_node_upstream(&fx, "sdk-upstream", sdk_port, TOKEN, SDK_EXTRAS, deps, sizeof(deps));
    CHECK(*sdk > 0);
    int got = 0;
    for (int i = 0; i < 30 && !got; i++) {
        redisContext *sub = subscriber(1);
        touch("sdk://other");
        redisReply *r = NULL;
        if (redisGetReply(sub, (void **)&r) == REDIS_OK) {
            CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
            CHECK(strstr(r->element[2]->str, "\"uri\":\"sdk://other\"") != NULL);
            freeReplyObject(r);
            got = 1;
        }
        redisFree(sub);
    }
    CHECK(got);
    TEST_PASS("the upstream restarted: the stream is opened again, subscriptions renewed");
}

/* A 2026-07-28 upstream (the SDK 2.x, stateless): its progress streams live too, and a
 * subscription is its subscriptions/listen stream naming the uri (the worker answers
 * resources/subscribe itself once the upstream acknowledged). */
static void test_modern(void)
{
    stream_t s;
    call_stream(&s, "m_slow", "{}", "p5");
    int resp = response_at(&s);
    CHECK_STR_EQ(result_text(&s.frames[resp]), "slow done");
    CHECK(resp >= 3);
    for (int i = 0; i < resp; i++)
        CHECK_STR_EQ(method_of(&s.frames[i]), "notifications/progress");
    CHECK(s.frames[resp - 1].at - s.frames[0].at >= 400); /* spread, not at the end */
    stream_free(&s);
    TEST_PASS("2026-07-28 upstream: progress arrives live");

    redisContext *sub = subscriber(20);
    char *st = run_job_at(sdk2_port, "j_msub_1", "resources/subscribe", "default",
                          "{\"uri\":\"m://doc\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    touch_with("m_touch", "m://doc");
    check_update(sub, "default", "m://doc");
    st = run_job_at(sdk2_port, "j_msub_2", "resources/subscribe", "default",
                    "{\"uri\":\"m://two\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    st = run_job_at(sdk2_port, "j_munsub_1", "resources/unsubscribe", "default",
                    "{\"uri\":\"m://doc\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    touch_with("m_touch", "m://doc");
    touch_with("m_touch", "m://two");
    check_update(sub, "default", "m://two"); /* m://doc is no longer listened to */
    redisFree(sub);
    TEST_PASS("2026-07-28 upstream: subscriptions/listen carries the subscribed uris' updates");
}

/* A stdio upstream: its subscriptions go to the server, and its updates (on stdout) reach
 * the channel as an HTTP upstream's do. */
static void test_stdio(void)
{
    char ex[1100];
    snprintf(ex, sizeof(ex), "%s}", stdio_ex);
    redisContext *sub = subscriber(20);
    char *st =
        run_job_ex(ex, "j_ssub_1", "resources/subscribe", "default", "{\"uri\":\"stdio://doc\"}");
    CHECK_STR_EQ(st, "ok");
    free(st);
    touch_with("stdio_touch", "stdio://doc");
    check_update(sub, "default", "stdio://doc");
    redisFree(sub);
    TEST_PASS("stdio upstream: a subscribed resource's update reaches the channel");
}

/* ---- a 2026-07-28 upstream that answers tools/call with a task (the tasks extension,
 * docs/extensions/tasks and SEP-2663 of the specification), in process: JSON answers only.
 * Tool "job" runs 3 polls (working, "step 1", "step 2") then completes; tool "stuck" never
 * ends. ---- */

static atomic_int t2_gets, t2_cancels, t2_ext_declared;

static enum MHD_Result t2_reply(struct MHD_Connection *conn, const cJSON *id, cJSON *result)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
    cJSON_AddItemToObject(o, "result", result);
    char *body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static cJSON *t2_task(const char *id, const char *status, const char *msg)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "taskId", id);
    cJSON_AddStringToObject(t, "status", status);
    if (msg)
        cJSON_AddStringToObject(t, "statusMessage", msg);
    cJSON_AddStringToObject(t, "createdAt", "2026-11-28T00:00:00Z");
    cJSON_AddStringToObject(t, "lastUpdatedAt", "2026-11-28T00:00:00Z");
    cJSON_AddNumberToObject(t, "ttlMs", 60000);
    cJSON_AddNumberToObject(t, "pollIntervalMs", 100);
    return t;
}

static enum MHD_Result t2_on_req(struct MHD_Connection *conn, const char *url, const char *method,
                                 const util_buf_t *b)
{
    (void)url;
    (void)method;
    cJSON *msg = cJSON_ParseWithLength(b->data ? b->data : "", b->len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "method"));
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    cJSON *res = NULL;
    if (m && strcmp(m, "server/discover") == 0) {
        res = cJSON_CreateObject();
        cJSON *sv = cJSON_AddArrayToObject(res, "supportedVersions");
        cJSON_AddItemToArray(sv, cJSON_CreateString(NAMES_PROTO_MODERN));
        cJSON *caps = cJSON_AddObjectToObject(res, "capabilities");
        cJSON_AddObjectToObject(caps, "tools");
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(caps, "extensions"),
                                "io.modelcontextprotocol/tasks");
    } else if (m && strcmp(m, "tools/call") == 0) {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
        const cJSON *ext = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(meta,
                                                 "io.modelcontextprotocol/clientCapabilities"),
                "extensions"),
            "io.modelcontextprotocol/tasks");
        if (ext)
            atomic_fetch_add(&t2_ext_declared, 1);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "name"));
        res = t2_task(name && strcmp(name, "stuck") == 0 ? "t-stuck" : "t-job", "working", NULL);
        cJSON_AddStringToObject(res, "resultType", "task");
    } else if (m && strcmp(m, "tasks/get") == 0) {
        const char *tid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "taskId"));
        int n = atomic_fetch_add(&t2_gets, 1) + 1;
        if (tid && strcmp(tid, "t-job") == 0 && n >= 3) {
            res = t2_task(tid, "completed", "done");
            cJSON *r = cJSON_AddObjectToObject(res, "result");
            cJSON *c = cJSON_AddArrayToObject(r, "content");
            cJSON *t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "type", "text");
            cJSON_AddStringToObject(t, "text", "task done");
            cJSON_AddItemToArray(c, t);
        } else {
            char step[32];
            snprintf(step, sizeof(step), "step %d", n);
            res = t2_task(tid ? tid : "?", "working", step);
        }
        cJSON_AddStringToObject(res, "resultType", "complete");
    } else if (m && strcmp(m, "tasks/cancel") == 0) {
        atomic_fetch_add(&t2_cancels, 1);
        res = cJSON_CreateObject();
    }
    enum MHD_Result ret;
    if (res)
        ret = t2_reply(conn, id, res);
    else {
        struct MHD_Response *r =
            MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        ret = MHD_queue_response(conn, 404, r);
        MHD_destroy_response(r);
    }
    cJSON_Delete(msg);
    return ret;
}

/* A 2026-07-28 upstream's task: the extension declared, tasks/get by its pollIntervalMs with
 * the status messages as progress, the terminal task's result passed on; a deadline cancels
 * it (tasks/cancel). */
static void test_modern_task(void)
{
    stream_t s;
    call_stream(&s, "t2_job", "{}", "p6");
    int resp = response_at(&s);
    CHECK_STR_EQ(result_text(&s.frames[resp]), "task done");
    int steps = 0;
    for (int i = 0; i < resp; i++) {
        const char *msg = cJSON_GetStringValue(param(&s.frames[i], "message"));
        steps += msg && strstr(msg, "working: step") != NULL;
    }
    CHECK(steps >= 2);
    CHECK(atomic_load(&t2_ext_declared) >= 1);
    CHECK(atomic_load(&t2_gets) >= 3);
    stream_free(&s);
    TEST_PASS("2026-07-28 upstream task (extension): followed to its result, status as progress");

    call_stream(&s, "t2_stuck", "{}", "p7");
    resp = response_at(&s);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(s.frames[resp].msg, "error");
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(err, "code")->valueint, -32003);
    stream_free(&s);
    for (int i = 0; i < 200 && atomic_load(&t2_cancels) == 0; i++)
        fx_sleep_ms(50);
    CHECK_INT_EQ(atomic_load(&t2_cancels), 1);
    TEST_PASS("2026-07-28 upstream task: a deadline sends tasks/cancel");
}

/* ---- one worker per subscription: clients on streams of their own (a thread each) ---- */

#define MODERN_META                                                                                \
    "\"_meta\":{\"" NAMES_META_PROTOCOL_VERSION "\":\"" NAMES_PROTO_MODERN "\","                   \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"itest\",\"version\":\"1\"},"               \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define CLIENTS 3 /* of each era: six subscriptions, all on one partition (1 in 32 by chance) */

/* The partitions of the worker's last assignment ("" while it holds none). */
static void assigned(const char *name, char *out, size_t size)
{
    char path[400], line[16384];
    snprintf(path, sizeof(path), "%s/%s.log", fx.dir, name);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "\"partitions\":\"");
        if (strstr(line, "\"msg\":\"partitions revoked\""))
            out[0] = '\0';
        else if (p && strstr(line, "\"msg\":\"partitions assigned\""))
            snprintf(out, size, "%.*s", (int)strcspn(p + 14, "\""), p + 14);
    }
    fclose(f);
}

/* A 2025-06-18 session subscribed to SHARED_URI, its GET stream open: l (session: its
 * Mcp-Session-Id header, kept as long as l). */
static void legacy_client(fx_stream_t *l, char session[160])
{
    char url[64];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    const char *h[] = {"Authorization: Bearer stream-key", NULL, NULL, NULL, NULL};
    CHECK_INT_EQ(fx_http_post(url, h,
                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                              "\"protocolVersion\":\"" NAMES_PROTO_2025_06_18
                              "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"itest\","
                              "\"version\":\"1\"}}}",
                              &r),
                 0);
    CHECK(r.session_id[0] != '\0');
    snprintf(session, 160, "Mcp-Session-Id: %s", r.session_id);
    h[1] = session;
    h[2] = "MCP-Protocol-Version: " NAMES_PROTO_2025_06_18;
    CHECK_INT_EQ(
        fx_http_post(url, h, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r),
        0);
    static const char *const get[] = {"Authorization: Bearer stream-key",
                                      "Accept: text/event-stream",
                                      "MCP-Protocol-Version: " NAMES_PROTO_2025_06_18, NULL, NULL};
    const char *hg[5];
    memcpy(hg, get, sizeof(hg));
    hg[3] = session;
    fx_stream_open(l, port, "/mcp", NULL, hg);
    CHECK(fx_stream_wait(l, ": listening", 1, 10000));
    CHECK_INT_EQ(fx_http_post(url, h,
                              "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/subscribe\","
                              "\"params\":{\"uri\":\"" SHARED_URI "\"}}",
                              &r),
                 0);
    CHECK_CONTAINS(r.body, "\"result\":{}"); /* the worker's answer */
}

/* A 2026-07-28 subscriptions/listen stream naming SHARED_URI, acknowledged: l. */
static void modern_client(fx_stream_t *l, int i)
{
    static const char *const h[] = {
        "Authorization: Bearer stream-key", "Accept: application/json, text/event-stream",
        "MCP-Protocol-Version: " NAMES_PROTO_MODERN, "Mcp-Method: subscriptions/listen", NULL};
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":\"sub-%d\",\"method\":\"subscriptions/listen\","
             "\"params\":{" MODERN_META
             ",\"notifications\":{\"resourceSubscriptions\":[\"" SHARED_URI "\"]}}}",
             i);
    fx_stream_open(l, port, "/mcp", body, h);
    CHECK(fx_stream_wait(l, "\"resourceSubscriptions\":[\"" SHARED_URI "\"]", 1, 10000));
}

/* Subscribe jobs of SHARED_URI finished on a worker (its log). */
static int shared_jobs(const char *name)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/%s.log", fx.dir, name);
    return fx_log_count(path, "\"msg\":\"job finish\"", "\"tool\":\"sdk_shared\"");
}

static void test_one_worker(const char *const wenv[], pid_t *w2)
{
    *w2 = fx_spawn_worker(&fx, "w2", wenv);
    CHECK(*w2 > 0);
    /* The group settles with one partition each (w1 gave one up when w2 joined). */
    char p1[64] = "", p2[64] = "";
    for (long long until = fx_now_ms() + 60000; fx_now_ms() < until; fx_sleep_ms(100)) {
        assigned("w1", p1, sizeof(p1));
        assigned("w2", p2, sizeof(p2));
        if (strlen(p1) == 1 && strlen(p2) == 1 && strcmp(p1, p2) != 0)
            break;
    }
    printf("# partitions: w1 %s, w2 %s\n", p1, p2);
    CHECK(strlen(p1) == 1 && strlen(p2) == 1 && strcmp(p1, p2) != 0);

    static fx_stream_t legacy[CLIENTS], modern[CLIENTS]; /* large: not on the stack */
    char sessions[CLIENTS][160];
    for (int i = 0; i < CLIENTS; i++) {
        legacy_client(&legacy[i], sessions[i]);
        modern_client(&modern[i], i);
    }
    /* The streams' jobs nobody waits for: finished once both logs count all six. */
    int on1 = 0, on2 = 0;
    for (long long until = fx_now_ms() + 30000;
         (on1 = shared_jobs("w1")) + (on2 = shared_jobs("w2")) < 2 * CLIENTS && fx_now_ms() < until;
         fx_sleep_ms(50))
        ;
    printf("# subscribe jobs of %s: w1 %d, w2 %d\n", SHARED_URI, on1, on2);
    CHECK_INT_EQ(on1 + on2, 2 * CLIENTS);
    CHECK(on1 == 0 || on2 == 0);

    redisContext *sub = subscriber(20);
    touch(SHARED_URI);
    check_update(sub, "default", SHARED_URI);
    static const char updated[] = "\"method\":\"notifications/resources/updated\"";
    for (int i = 0; i < CLIENTS; i++) {
        CHECK(fx_stream_wait(&legacy[i], updated, 1, 20000));
        CHECK(fx_stream_wait(&modern[i], updated, 1, 20000));
    }
    /* A second worker subscribed too would publish its copy at the same moment: a quiet
     * second on the channel and the streams says none came. */
    struct timeval quiet = {1, 0};
    CHECK_INT_EQ(redisSetTimeout(sub, quiet), REDIS_OK);
    redisReply *r = NULL;
    int second = redisGetReply(sub, (void **)&r) == REDIS_OK;
    if (second) /* the streams get it too: let it arrive, then count */
        fx_sleep_ms(500);
    redisFree(sub);
    for (int i = 0; i < CLIENTS; i++) {
        CHECK_INT_EQ(fx_stream_count(&legacy[i], updated), 1);
        CHECK_INT_EQ(fx_stream_count(&modern[i], updated), 1);
        CHECK_INT_EQ(
            fx_stream_count(&modern[i], "\"io.modelcontextprotocol/subscriptionId\":\"sub-"), 2);
        fx_stream_close(&legacy[i]);
        fx_stream_close(&modern[i]);
    }
    CHECK(!second);
    if (r)
        freeReplyObject(r);
    TEST_PASS("two workers: every subscription to one upstream resource (legacy sessions and "
              "2026-07-28 streams) runs on one worker, and each client gets an update once");
}

int main(void)
{
    char cfg[300], deps[500];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    sdk_port = fx_free_port();
    sdk2_port = fx_free_port();
    pid_t sdk =
        fx_node_upstream(&fx, "sdk-upstream", sdk_port, TOKEN, SDK_EXTRAS, deps, sizeof(deps));
    CHECK(sdk >= 0);
    const char *ci = getenv("CI");
    if (sdk == 0) {
        if (ci && strcmp(ci, "true") == 0) {
            fprintf(stderr, "no node or no npm packages in %s (scripts/test.sh installs them)\n",
                    deps);
            CHECK(sdk > 0);
        }
        TEST_SKIP("live upstream streams: no node or no npm packages in %s "
                  "(tests/clients/install.sh)",
                  deps);
        fx_stop(&fx);
        return TEST_EXIT();
    }
    pid_t sdk2 = fx_node_upstream(&fx, "sdk2-upstream", sdk2_port, TOKEN, NULL, deps, sizeof(deps));
    CHECK(sdk2 > 0);
    stdio_executor();
    task2_port = fx_free_port();
    struct MHD_Daemon *t2 = fx_server_start(task2_port, t2_on_req);
    CHECK(t2 != NULL);
    snprintf(cfg, sizeof(cfg), "%s/stream.json", fx.dir);
    write_config(cfg);
    port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, NULL, NULL, 0);
    CHECK(ing > 0);
    char depenv[600];
    snprintf(depenv, sizeof(depenv), "MCPQ_CLIENTS_DEPS=%s", deps);
    const char *wenv[] = {depenv, NULL};
    pid_t w = fx_spawn_worker(&fx, "w1", wenv);
    CHECK(w > 0);
    producer = fx_kafka_new(&fx, NULL, NULL);
    redis = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(redis && !redis->err);

    test_live_progress();
    test_task();
    test_subscriptions();
    test_reconnect(&sdk);
    test_modern();
    test_stdio();
    test_modern_task();
    pid_t w2 = 0;
    test_one_worker(wenv, &w2);

    CHECK_INT_EQ(fx_stop_pid(w2, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    fx_stop_pid(sdk, 5000);
    fx_stop_pid(sdk2, 5000);
    MHD_stop_daemon(t2);
    rd_kafka_destroy(producer);
    redisFree(redis);
    fx_stop(&fx);
    curl_global_cleanup();
    return TEST_EXIT();
}
