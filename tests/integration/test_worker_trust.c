/*
 * test_worker_trust.c - the worker's trust boundaries (docs/tools.md, "What a tool gets, and what a
 * caller sees"; docs/operations.md, "Job signing and Kafka ACLs") end to end: redis-server,
 * mcpq-devbroker, one mcpq-ingress and one mcpq-worker (tests/fixture.c), both with the
 * fixture's job signing key, the worker started with cloud and Kafka credentials in its
 * environment.
 *
 *   - environment: an exec tool that prints its environment, called through the ingress,
 *     sees neither AWS_SECRET_ACCESS_KEY nor KAFKA_PASSWORD nor any MCPQ_* of the worker,
 *     but the variable its env_pass names, its own env, MCPQ_JOB_ID and the fixed PATH;
 *     nor can it read the worker's environment from /proc/<worker pid>/environ (the worker
 *     runs as nobody when the test runs as root, who could read it whatever the worker does);
 *   - signatures: job records produced straight to the topic, one without a signature, one
 *     signed with another key and one with a malformed signature, each an exec job that
 *     would create a file, are not run (no file, no result), are counted in
 *     mcpq_worker_jobs_rejected_total{reason="signature"}, logged with their partition,
 *     offset and job id (never the key), and do not block the partition: a record signed
 *     with the right key behind them runs and the group's committed offset passes all four;
 *     a call through the ingress (signed there) runs;
 *   - error ids: an http tool whose host does not resolve, one whose port refuses, and an
 *     exec tool whose program does not exist answer the caller with an error id and neither
 *     host name, port, path nor argv; the worker's log line with that error id has them.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "jobsig.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOPIC "mcpq.jobs"
#define GROUP "mcpq-workers" /* the worker's default MCPQ_GROUP_ID */
#define API_KEY "trust-key"
#define LEAK_AWS "leak-aws-5f1c0e"
#define LEAK_KAFKA "leak-kafka-93ab7d"
#define INTERNAL_HOST "mcpq-internal-db.invalid"
#define MISSING_TOOL "/opt/mcpq-internal/bin/missing-tool"

static fx_stack_t fx;
static int port, metrics_port, refused_port;
static char wlog[400], marks[400];
static rd_kafka_t *producer, *offsets_reader;
static redisContext *redis;

/* ---- HTTP ---- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    util_buf_t *b = arg;
    util_buf_append(b, p, size * n);
    return size * n;
}

/* GET (body NULL) or POST url; the body of a 200 answer, malloc'd (NULL otherwise). */
static char *http(const char *url, const char *body, long timeout_ms)
{
    util_buf_t b;
    util_buf_init(&b, 1 << 20);
    CURL *c = curl_easy_init();
    CHECK(c != NULL);
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer " API_KEY);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (status != 200) {
        fprintf(stderr, "%s answered %ld: %s (logs in %s)\n", url, status, b.data ? b.data : "",
                fx.dir);
        util_buf_cleanup(&b);
        return NULL;
    }
    return b.data; /* the buffer's memory, now the caller's */
}

/* tools/call through the ingress; the JSON-RPC answer. */
static cJSON *call(const char *tool, long timeout_ms)
{
    char url[128], body[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":{}}}",
             tool);
    char *text = http(url, body, timeout_ms);
    CHECK(text != NULL);
    cJSON *j = cJSON_Parse(text);
    free(text);
    CHECK(j != NULL);
    return j;
}

static const char *text0(const cJSON *j)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "result");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "content"), 0);
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "text"));
}

static int is_error(const cJSON *j)
{
    return cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "result"), "isError"));
}

/* The value of counter line `series` in the worker's /metrics, or -1. */
static long long worker_metric(const char *series)
{
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", metrics_port);
    char *text = http(url, NULL, 5000);
    CHECK(text != NULL);
    CHECK_INT_EQ(fx_promtool_check(text), 0);
    long long v = -1;
    const char *p = strstr(text, series);
    if (p)
        v = strtoll(p + strlen(series), NULL, 10);
    free(text);
    return v;
}

/* ---- the worker's log ---- */

static int log_line(const char *a, const char *b, char *out, size_t size)
{
    return fx_log_line(wlog, a, b, out, size);
}

static int log_has(const char *needle)
{
    return log_line(needle, NULL, NULL, 0);
}

/* ---- Kafka and Redis ---- */

typedef enum { SIG_NONE, SIG_OTHER_KEY, SIG_MALFORMED, SIG_RIGHT } sig_kind_t;

static jobsig_key_t key_of(const char *text)
{
    jobsig_key_t k;
    memset(&k, 0, sizeof(k));
    k.len = strlen(text);
    CHECK(k.len <= sizeof(k.bytes));
    memcpy(k.bytes, text, k.len);
    return k;
}

/* Produces, to partition 0, a job whose exec tool creates <marks>/<job_id>, with the header
 * mcpq-sig as kind says. */
static void produce(const char *job_id, sig_kind_t kind)
{
    char buf[2048], sig[JOBSIG_VALUE_LEN + 1];
    long long now = fx_now_ms();
    int n = snprintf(buf, sizeof(buf),
                     "{\"v\":1,\"job_id\":\"%s\",\"call_id\":1,\"tenant\":\"t\","
                     "\"server\":\"default\",\"tool\":\"touch\",\"tool_version\":\"1\","
                     "\"arguments\":{},\"executor\":{\"type\":\"exec\",\"argv\":[\"/bin/sh\","
                     "\"-c\",\"touch %s/%s; echo made\"]},\"mode\":\"sync\","
                     "\"timeout_ms\":60000,\"created_ms\":%lld,\"deadline_ms\":%lld,"
                     "\"reply_to\":\"" NAMES_KEY_REPLY "itest-trust\"}",
                     job_id, marks, job_id, now, now + 60000);
    CHECK(n > 0 && (size_t)n < sizeof(buf));
    jobsig_key_t k =
        key_of(kind == SIG_RIGHT ? fx.job_key : "an-attacker-key-that-is-long-enough-0123");
    jobsig_sign(&k, buf, (size_t)n, sig);
    if (kind == SIG_MALFORMED)
        snprintf(sig, sizeof(sig), "v1=not-a-signature");
    rd_kafka_headers_t *h = rd_kafka_headers_new(2);
    rd_kafka_header_add(h, "job_id", -1, job_id, -1);
    if (kind != SIG_NONE)
        rd_kafka_header_add(h, JOBSIG_HEADER, -1, sig, -1);
    CHECK_INT_EQ(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_KEY(job_id, strlen(job_id)),
                                   RD_KAFKA_V_VALUE(buf, (size_t)n),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
                                   RD_KAFKA_V_END),
                 0);
    CHECK_INT_EQ(rd_kafka_flush(producer, 10000), 0);
}

/* The end offset of partition (the offset the next record gets). */
static long long high_watermark(int32_t partition)
{
    int64_t lo = 0, hi = 0;
    CHECK_INT_EQ(rd_kafka_query_watermark_offsets(producer, TOPIC, partition, &lo, &hi, 5000), 0);
    return hi;
}

static int result_exists(const char *job_id)
{
    redisReply *r = redisCommand(redis, "EXISTS " NAMES_KEY_RESULT "%s", job_id);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    int n = (int)r->integer;
    freeReplyObject(r);
    return n;
}

static int mark_exists(const char *job_id)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", marks, job_id);
    return access(path, F_OK) == 0;
}

/* ---- the tests ---- */

static void test_environment(void)
{
    cJSON *j = call("envdump", 15000);
    CHECK(!is_error(j));
    const char *env = text0(j);
    CHECK(env != NULL);
    CHECK(strstr(env, LEAK_AWS) == NULL);
    CHECK(strstr(env, LEAK_KAFKA) == NULL);
    CHECK(strstr(env, "AWS_SECRET_ACCESS_KEY") == NULL);
    CHECK(strstr(env, "KAFKA_PASSWORD") == NULL);
    CHECK(strstr(env, fx.job_key) == NULL);
    CHECK(strstr(env, "MCPQ_REDIS_URL") == NULL);
    CHECK(strstr(env, "MCPQ_KAFKA_BROKERS") == NULL);
    CHECK(strstr(env, "NOT_SET_ANYWHERE") == NULL); /* named by env_pass, unset on the worker */
    CHECK_CONTAINS(env, "AWS_REGION=eu-test-1\n");  /* named by env_pass */
    CHECK_CONTAINS(env, "TOOL_SETTING=from-config\n");
    CHECK_CONTAINS(env, "MCPQ_JOB_ID=");
    CHECK_CONTAINS(env, "PATH=/usr/local/bin:/usr/bin:/bin\n");
    CHECK_CONTAINS(env, "HOME=");
    CHECK_CONTAINS(env, "TRACEPARENT=00-");
    cJSON_Delete(j);
    TEST_PASS("exec: a minimal environment plus what the config names, no worker credentials");

    /* Nor through the worker's /proc files: the worker is not dumpable. Root reads every
     * process's environ whatever the flag, so the worker (and its tools) run as an ordinary
     * user: nobody when this test runs as root (main). */
    j = call("parent_env", 15000);
    const char *penv = text0(j);
    CHECK(penv != NULL);
    CHECK(strstr(penv, LEAK_AWS) == NULL);
    CHECK(strstr(penv, fx.job_key) == NULL);
    CHECK_CONTAINS(penv, "Permission denied");
    cJSON_Delete(j);
    TEST_PASS("exec: the worker's environment is not readable through /proc");
}

/* The caller's answer: an isError result with an error id and none of the forbidden texts;
 * the worker's log line with that error id holds detail. */
static void expect_hidden(const char *tool, long timeout_ms, const char *public_text,
                          const char *const forbidden[], const char *detail)
{
    cJSON *j = call(tool, timeout_ms);
    const char *text = text0(j);
    if (!text || !is_error(j)) {
        char *s = cJSON_PrintUnformatted(j);
        fprintf(stderr, "%s: not an isError result: %s\n", tool, s);
        free(s);
    }
    CHECK(is_error(j));
    CHECK_CONTAINS(text, public_text);
    for (size_t i = 0; forbidden[i]; i++) {
        if (strstr(text, forbidden[i]))
            fprintf(stderr, "%s: the caller was told \"%s\": %s\n", tool, forbidden[i], text);
        CHECK(strstr(text, forbidden[i]) == NULL);
    }
    const char *id = strstr(text, "(error id e_");
    CHECK(id != NULL);
    char eid[32];
    CHECK_INT_EQ(sscanf(id, "(error id %20[^)])", eid), 1);
    CHECK_INT_EQ((int)strlen(eid), 18);
    char needle[64], line[16384];
    snprintf(needle, sizeof(needle), "\"error_id\":\"%s\"", eid);
    int found = 0;
    for (int i = 0; i < 50 && !found; i++) {
        found = log_line(needle, detail, line, sizeof(line));
        if (!found)
            fx_sleep_ms(100);
    }
    if (!found)
        fprintf(stderr, "%s: no log line in %s with %s and %s\n", tool, wlog, needle, detail);
    CHECK(found);
    CHECK_CONTAINS(line, "\"job_id\":\"");
    cJSON_Delete(j);
}

static void test_error_ids(void)
{
    char port_s[16];
    snprintf(port_s, sizeof(port_s), ":%d", refused_port);
    const char *no_dns[] = {INTERNAL_HOST, "8081", "resolve", "/rpc", NULL};
    expect_hidden("http_down", 40000, "the tool's HTTP service could not be reached (error id e_",
                  no_dns, INTERNAL_HOST);
    const char *refused[] = {"localhost", port_s + 1, "127.0.0.1", "connect", NULL};
    expect_hidden("http_refused", 15000,
                  "the tool's HTTP service could not be reached (error id e_", refused, port_s);
    const char *no_exec[] = {"/opt",    "mcpq-internal", "missing-tool",
                             "--token", "No such file",  NULL};
    expect_hidden("exec_missing", 15000, "the tool could not be run (error id e_", no_exec,
                  MISSING_TOOL);
    TEST_PASS("unreachable host, refused port, missing program: an error id for the caller, "
              "the details in the worker's log");
}

static void test_signatures(void)
{
    const char *series = "mcpq_worker_jobs_rejected_total{reason=\"signature\"} ";
    CHECK_INT_EQ(worker_metric(series), 0);
    /* A call through the ingress is signed there, and runs. */
    cJSON *j = call("envdump", 15000);
    CHECK(!is_error(j));
    cJSON_Delete(j);

    long long first = high_watermark(0);
    produce("j_unsigned", SIG_NONE);
    produce("j_other_key", SIG_OTHER_KEY);
    produce("j_malformed", SIG_MALFORMED);
    produce("j_signed", SIG_RIGHT); /* behind them on the same partition */
    long long end = fx_now_ms() + 20000;
    while (!result_exists("j_signed") && fx_now_ms() < end)
        fx_sleep_ms(50);
    if (!result_exists("j_signed"))
        fprintf(stderr, "the signed record did not run (logs in %s)\n", fx.dir);
    CHECK(result_exists("j_signed"));
    CHECK(mark_exists("j_signed"));

    const char *refused[] = {"j_unsigned", "j_other_key", "j_malformed"};
    const char *why[] = {"\"signature\":\"missing\"", "\"signature\":\"mismatch\"",
                         "\"signature\":\"malformed\""};
    for (int i = 0; i < 3; i++) {
        char id[64], line[16384];
        if (mark_exists(refused[i]))
            fprintf(stderr, "%s ran although its signature is not valid\n", refused[i]);
        CHECK(!mark_exists(refused[i]));
        CHECK(!result_exists(refused[i])); /* nothing written for it, no answer either */
        snprintf(id, sizeof(id), "\"job_id\":\"%s\"", refused[i]);
        CHECK(log_line(id, "job record refused", line, sizeof(line)));
        CHECK_CONTAINS(line, why[i]);
        CHECK_CONTAINS(line, "\"partition\":\"0\"");
        CHECK_CONTAINS(line, "\"offset\":\"");
    }
    CHECK_INT_EQ(worker_metric(series), 3);
    /* The refused records do not hold the partition back: the committed offset passes all
     * four (the worker commits every second). */
    end = fx_now_ms() + 15000;
    long long c = fx_committed(offsets_reader, TOPIC, 0);
    while (c < first + 4 && fx_now_ms() < end) {
        fx_sleep_ms(200);
        c = fx_committed(offsets_reader, TOPIC, 0);
    }
    CHECK_INT_EQ(c, first + 4);
    TEST_PASS("records without a valid signature are refused, counted, logged and committed; "
              "signed ones run");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    port = fx_free_port();
    metrics_port = fx_free_port();
    refused_port = fx_free_port(); /* nothing listens there */
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);
    snprintf(marks, sizeof(marks), "%s/marks", fx.dir);
    CHECK(mkdir(marks, 0700) == 0);

    char cfg[300], doc[8192];
    snprintf(cfg, sizeof(cfg), "%s/trust.json", fx.dir);
    snprintf(doc, sizeof(doc),
             "{\"tenants\":[{\"id\":\"t\",\"api_keys\":[{\"id\":\"k\",\"key\":\"" API_KEY "\"}]}],"
             "\"servers\":[{\"tenant\":\"t\",\"name\":\"default\"}],\"tools\":["
             "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"envdump\",\"versions\":[{"
             "\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},\"timeout_ms\":10000,"
             "\"executor\":{\"type\":\"exec\",\"argv\":[\"/bin/sh\",\"-c\",\"env | sort\"],"
             "\"env\":{\"TOOL_SETTING\":\"from-config\"},"
             "\"env_pass\":[\"AWS_REGION\",\"NOT_SET_ANYWHERE\"]}}]},"
             "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"parent_env\",\"versions\":[{"
             "\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},\"timeout_ms\":10000,"
             "\"executor\":{\"type\":\"exec\",\"argv\":[\"/bin/sh\",\"-c\","
             "\"cat /proc/$PPID/environ 2>&1 | tr '\\\\000' '\\\\n'; "
             "grep -a AWS /proc/$PPID/task/*/environ 2>&1; true\"]}}]},"
             "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"http_down\",\"versions\":[{"
             "\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},\"timeout_ms\":30000,"
             "\"executor\":{\"type\":\"http\",\"url\":\"http://" INTERNAL_HOST ":8081/rpc\"}}]},"
             "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"http_refused\",\"versions\":[{"
             "\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},\"timeout_ms\":10000,"
             "\"executor\":{\"type\":\"http\",\"url\":\"http://localhost:%d/rpc\"}}]},"
             "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"exec_missing\",\"versions\":[{"
             "\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},\"timeout_ms\":10000,"
             "\"executor\":{\"type\":\"exec\",\"argv\":[\"" MISSING_TOOL "\","
             "\"--token-file=/etc/mcpq/token\"],\"cwd\":\"/\"}}]}]}",
             refused_port);
    fx_write_file(cfg, doc, 0600);

    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, NULL, NULL, 0);
    CHECK(ing > 0);
    char e_metrics[64];
    snprintf(e_metrics, sizeof(e_metrics), "MCPQ_METRICS_LISTEN=127.0.0.1:%d", metrics_port);
    const char *wenv[] = {"AWS_SECRET_ACCESS_KEY=" LEAK_AWS, "KAFKA_PASSWORD=" LEAK_KAFKA,
                          "AWS_REGION=eu-test-1", e_metrics, NULL};
    pid_t w = fx_spawn_worker_as(&fx, "w1", wenv, geteuid() == 0 ? FX_UNPRIVILEGED_UID : geteuid());
    CHECK(w > 0);
    redis = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(redis != NULL && !redis->err);
    producer = fx_kafka_new(&fx, NULL, NULL);
    offsets_reader = fx_kafka_new(&fx, GROUP, NULL);

    test_environment();
    test_error_ids();
    test_signatures();

    CHECK(!log_has(fx.job_key));
    TEST_PASS("the job signing key never reaches the worker's log");

    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    rd_kafka_destroy(offsets_reader);
    rd_kafka_destroy(producer);
    redisFree(redis);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
