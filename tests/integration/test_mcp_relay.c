/*
 * test_mcp_relay.c - the mcp executor relays its upstream's questions to the calling client
 * (docs/executors.md, "Questions from upstreams"), at the worker: redis-server, mcpq-devbroker
 * and one mcpq-worker (tests/fixture.c), real upstreams built with the official SDKs
 * (tests/clients/lib/asking.mjs: ask_name, ask_sample, ask_roots, ask_twice) and no ingress:
 * the test produces each job straight to Kafka with the envelope's "client" capabilities and
 * plays the replica that holds the call, through the contract of docs/internals.md, "Asking the
 * client" (it reads the question from {mcpq}:ask:<job_id> and the `input` entry on the reply
 * stream, stores the answers as a:<key> and publishes the job id on mcpq:answer). Checked:
 *   - an SDK 1.x HTTP upstream (2025-11-25 session): its elicitation/create on the call's
 *     SSE stream reaches the ask API with its message and requestedSchema; the answer reaches
 *     the upstream and the tool's result says what the user answered; sampling/createMessage
 *     and roots/list the same; two requests at once are asked one after the other; a
 *     capability the client did not declare reaches the upstream as the ask API's error
 *     (never asked); a silent client's timeout reaches the upstream as -32001; a job
 *     cancelled while the upstream waits sends notifications/cancelled upstream and drops the
 *     question;
 *   - an SDK 1.x stdio upstream: the same over stdin/stdout (limits.concurrency 1); and
 *     @modelcontextprotocol/server-everything over stdio: its trigger-elicitation-request
 *     (registered because the session declared elicitation) asks, and its result names what
 *     the user answered;
 *   - SDK 2.x upstreams in 2026-07-28 (HTTP and stdio): input_required asked, the request
 *     sent again with inputResponses (two rounds, the first answer carried in requestState),
 *     sampling, the calling client's capabilities in each request (undeclared sampling: the
 *     upstream asks nothing), and a silent client ending the call with an isError result
 *     that names the timeout;
 *   - a stdio server of our own (tests/unit/worker/stdio_server.py) for what the SDKs do not
 *     do on demand: a 2026-07-28 request carries the caller's elicitation/sampling/roots in its
 *     _meta clientCapabilities (a legacy one none: its session declared everything at
 *     initialize); a requestState-only input_required is retried at once with the state; the
 *     17th input_required of a call ends it; an inputRequests mcpq cannot relay ends it with
 *     an isError naming it.
 */
#include "check.h"
#include "fixture.h"
#include "names.h"

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKEN "relay-token"
#define REPLY NAMES_KEY_REPLY "relay-test"
#define ALL_CAPS "{\"elicitation\":{\"form\":{},\"url\":{}},\"sampling\":{},\"roots\":{}}"
#define INPUT_TIMEOUT_MS 3000

static fx_stack_t fx;
static redisContext *rc;
static char repo[400];
static int sdk_port, sdk2_port;
static long long last_n; /* the number of the question last seen */

static cJSON *at(const cJSON *j, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    const cJSON *cur = j;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && cur;
         tok = strtok_r(NULL, ".", &save)) {
        char *end;
        long i = strtol(tok, &end, 10);
        cur = *end == '\0' && cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, (int)i)
                                                 : cJSON_GetObjectItemCaseSensitive(cur, tok);
    }
    return (cJSON *)cur;
}

static const char *str(const cJSON *j, const char *path)
{
    const char *s = cJSON_GetStringValue(at(j, path));
    return s ? s : "";
}

static void produce(const char *job_id, const char *executor, const char *caps)
{
    char envelope[8192];
    snprintf(envelope, sizeof(envelope),
             "{\"v\":1,\"job_id\":\"%s\",\"tenant\":\"r\",\"server\":\"default\",\"tool\":"
             "\"asker\",\"tool_version\":\"1\",\"arguments\":{},\"executor\":%s,\"mode\":\"sync\","
             "\"timeout_ms\":40000,\"deadline_ms\":%lld,\"created_ms\":%lld,\"reply_to\":\"" REPLY
             "\",\"owner\":\"key:k\",\"client\":{\"protocol_version\":\"2025-11-25\","
             "\"capabilities\":%s}}",
             job_id, executor, fx_now_ms() + 40000, fx_now_ms(), caps);
    rd_kafka_t *p = fx_kafka_new(&fx, NULL, NULL);
    CHECK(p != NULL);
    CHECK_INT_EQ(rd_kafka_producev(p, RD_KAFKA_V_TOPIC("mcpq.jobs"),
                                   RD_KAFKA_V_KEY(job_id, strlen(job_id)),
                                   RD_KAFKA_V_VALUE((void *)envelope, strlen(envelope)),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_HEADER("job_id", job_id, -1), RD_KAFKA_V_END),
                 0);
    CHECK_INT_EQ(rd_kafka_flush(p, 10000), 0);
    rd_kafka_destroy(p);
}

static char *hget(const char *key, const char *field)
{
    redisReply *r = redisCommand(rc, "HGET %s %s", key, field);
    CHECK(r != NULL);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

/* The next question of job_id (a number above the last one seen): its requests (owned). */
static cJSON *wait_question(const char *job_id)
{
    char key[256];
    snprintf(key, sizeof(key), NAMES_KEY_ASK "%s", job_id);
    for (long long end = fx_now_ms() + 30000; fx_now_ms() < end; fx_sleep_ms(50)) {
        char *n = hget(key, "n"), *reqs = n ? hget(key, "reqs") : NULL;
        long long num = n ? strtoll(n, NULL, 10) : 0;
        free(n);
        if (reqs && num > last_n) {
            last_n = num;
            cJSON *q = cJSON_Parse(reqs);
            free(reqs);
            CHECK(cJSON_IsObject(q));
            return q;
        }
        free(reqs);
    }
    fprintf(stderr, "no question from job %s in 30 s\n", job_id);
    CHECK(0);
    return NULL;
}

/* Answers key of job_id's open question with answer (JSON text), as a replica does. */
static void answer(const char *job_id, const char *key, const char *ans)
{
    char hkey[256], field[128];
    snprintf(hkey, sizeof(hkey), NAMES_KEY_ASK "%s", job_id);
    snprintf(field, sizeof(field), "a:%s", key);
    redisReply *r = redisCommand(rc, "HSET %s %s %s", hkey, field, ans);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    r = redisCommand(rc, "PUBLISH %s %s", NAMES_CHAN_ANSWER, job_id);
    CHECK(r != NULL);
    freeReplyObject(r);
}

static cJSON *wait_result(const char *job_id)
{
    cJSON *rec = fx_result_wait(rc, job_id, 40000);
    if (!rec)
        fprintf(stderr, "no result for job %s in 40 s\n", job_id);
    CHECK(rec != NULL);
    return rec;
}

/* The result's first text (and whether it is an error). */
static const char *result_text(const cJSON *rec, int *is_error)
{
    if (is_error)
        *is_error = cJSON_IsTrue(at(rec, "result.isError"));
    const char *t = str(rec, "result.content.0.text");
    if (!*t) {
        char *s = cJSON_PrintUnformatted(rec);
        fprintf(stderr, "record: %s\n", s);
        free(s);
    }
    return t;
}

/* 1 when the reply stream holds an `input` entry of job_id. */
static int input_entry(const char *job_id)
{
    redisReply *r = redisCommand(rc, "XRANGE %s - +", REPLY);
    CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY);
    int found = 0;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *f = r->element[i]->element[1];
        int job = 0, input = 0;
        for (size_t k = 0; k + 1 < f->elements; k += 2) {
            job |= strcmp(f->element[k]->str, "job") == 0 &&
                   strcmp(f->element[k + 1]->str, job_id) == 0;
            input |= strcmp(f->element[k]->str, "kind") == 0 &&
                     strcmp(f->element[k + 1]->str, "input") == 0;
        }
        found |= job && input;
    }
    freeReplyObject(r);
    return found;
}

static void http_executor(char *out, size_t size, int port, const char *tool)
{
    snprintf(out, size,
             "{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\",\"tool\":\"%s\",\"headers\":{"
             "\"Authorization\":\"Bearer " TOKEN "\"}}",
             port, tool);
}

static void stdio_executor(char *out, size_t size, const char *script, const char *tool)
{
    snprintf(
        out, size,
        "{\"type\":\"mcp\",\"command\":\"node\",\"args\":[\"--import\",\"%s/tests/clients/"
        "lib/register.mjs\",\"%s/tests/clients/%s\"],\"tool\":\"%s\",\"env\":{"
        "\"MCPQ_CLIENTS_DEPS\":{\"env\":\"MCPQ_CLIENTS_DEPS\"}},\"limits\":{\"concurrency\":1}}",
        repo, repo, script, tool);
}

/* One call of a tool that asks once: the question's method and message, the answer given,
 * the tool's text. */
static void ask_once(const char *job_id, const char *executor, const char *method,
                     const char *message, const char *ans, const char *want)
{
    last_n = 0;
    produce(job_id, executor, ALL_CAPS);
    cJSON *q = wait_question(job_id);
    CHECK(q->child != NULL && q->child->next == NULL); /* one request per question */
    CHECK_STR_EQ(str(q->child, "method"), method);
    if (message)
        CHECK_STR_EQ(str(q->child, "params.message"), message);
    CHECK(input_entry(job_id));
    char key[80];
    snprintf(key, sizeof(key), "%s", q->child->string);
    cJSON_Delete(q);
    answer(job_id, key, ans);
    cJSON *rec = wait_result(job_id);
    int err;
    CHECK_STR_EQ(result_text(rec, &err), want);
    CHECK_INT_EQ(err, 0);
    cJSON_Delete(rec);
}

/* ask_twice: two questions one after the other (whatever the era), answered by message. */
static void ask_twice(const char *job_id, const char *executor)
{
    last_n = 0;
    produce(job_id, executor, ALL_CAPS);
    for (int i = 0; i < 2; i++) {
        cJSON *q = wait_question(job_id);
        CHECK(q->child != NULL && q->child->next == NULL);
        int first = strcmp(str(q->child, "params.message"), "First?") == 0;
        char key[80];
        snprintf(key, sizeof(key), "%s", q->child->string);
        cJSON_Delete(q);
        answer(job_id, key,
               first ? "{\"result\":{\"action\":\"accept\",\"content\":{\"a\":\"A1\"}}}"
                     : "{\"result\":{\"action\":\"accept\",\"content\":{\"b\":\"B1\"}}}");
    }
    cJSON *rec = wait_result(job_id);
    CHECK_STR_EQ(result_text(rec, NULL), "a=A1 b=B1");
    cJSON_Delete(rec);
}

#define NAME_ACCEPT "{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}"
#define SAMPLE_ANSWER                                                                              \
    "{\"result\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"4\"},"          \
    "\"model\":\"test-model\",\"stopReason\":\"endTurn\"}}"
#define ROOTS_ANSWER "{\"result\":{\"roots\":[{\"uri\":\"file:///work\",\"name\":\"work\"}]}}"

static void test_legacy_http(const char *sdk_log)
{
    char ex[512];
    http_executor(ex, sizeof(ex), sdk_port, "ask_name");
    ask_once("j_http_name", ex, "elicitation/create", "Your name?", NAME_ACCEPT, "hello Ada");
    http_executor(ex, sizeof(ex), sdk_port, "ask_sample");
    ask_once("j_http_sample", ex, "sampling/createMessage", NULL, SAMPLE_ANSWER,
             "the model said: 4");
    http_executor(ex, sizeof(ex), sdk_port, "ask_roots");
    ask_once("j_http_roots", ex, "roots/list", NULL, ROOTS_ANSWER, "roots: file:///work");
    TEST_PASS("SDK 1.x HTTP upstream: elicitation, sampling and roots on the call's stream reach "
              "the ask API; the answers reach the upstream and its result");
    http_executor(ex, sizeof(ex), sdk_port, "ask_twice");
    ask_twice("j_http_twice", ex);
    TEST_PASS("SDK 1.x HTTP upstream: two requests at once are asked one after the other");

    /* the client did not declare sampling: the upstream gets the ask API's error at once */
    http_executor(ex, sizeof(ex), sdk_port, "ask_sample");
    produce("j_http_undeclared", ex, "{\"elicitation\":{}}");
    cJSON *rec = wait_result("j_http_undeclared");
    int err;
    CHECK_CONTAINS(result_text(rec, &err), "did not declare the sampling capability");
    CHECK_INT_EQ(err, 1);
    CHECK(!input_entry("j_http_undeclared"));
    cJSON_Delete(rec);
    TEST_PASS("SDK 1.x HTTP upstream: a capability the caller did not declare is answered to "
              "the upstream with the ask API's error, never asked");

    /* a silent client: the upstream gets -32001 after the input timeout */
    http_executor(ex, sizeof(ex), sdk_port, "ask_name");
    last_n = 0;
    produce("j_http_silent", ex, ALL_CAPS);
    cJSON_Delete(wait_question("j_http_silent"));
    rec = wait_result("j_http_silent");
    CHECK_CONTAINS(result_text(rec, &err), "did not answer within 3000 ms");
    CHECK_INT_EQ(err, 1);
    cJSON_Delete(rec);
    TEST_PASS("SDK 1.x HTTP upstream: a silent client's timeout reaches the upstream as an error");

    /* cancelled while the upstream waits: notifications/cancelled upstream, question gone */
    int before = fx_log_count(sdk_log, "method notifications/cancelled", NULL);
    last_n = 0;
    produce("j_http_cancel", ex, ALL_CAPS);
    cJSON_Delete(wait_question("j_http_cancel"));
    redisReply *r = redisCommand(rc, "SET %s%s 1 EX 60", NAMES_KEY_CANCEL, "j_http_cancel");
    freeReplyObject(r);
    r = redisCommand(rc, "PUBLISH %s %s", NAMES_CHAN_CANCEL, "j_http_cancel");
    freeReplyObject(r);
    int seen = 0;
    for (long long end = fx_now_ms() + 20000; !seen && fx_now_ms() < end; fx_sleep_ms(100))
        seen = fx_log_count(sdk_log, "method notifications/cancelled", NULL) > before;
    CHECK(seen);
    char key[128];
    snprintf(key, sizeof(key), NAMES_KEY_ASK "%s", "j_http_cancel");
    int gone = 0;
    for (long long end = fx_now_ms() + 10000; !gone && fx_now_ms() < end; fx_sleep_ms(100)) {
        r = redisCommand(rc, "EXISTS %s", key);
        gone = r && r->type == REDIS_REPLY_INTEGER && r->integer == 0;
        freeReplyObject(r);
    }
    CHECK(gone);
    TEST_PASS("SDK 1.x HTTP upstream: a job cancelled while its upstream waits sends "
              "notifications/cancelled upstream and drops the question");
}

static void test_legacy_stdio(void)
{
    char ex[2048];
    stdio_executor(ex, sizeof(ex), "sdk-stdio-upstream.mjs", "ask_name");
    ask_once("j_stdio_name", ex, "elicitation/create", "Your name?", NAME_ACCEPT, "hello Ada");
    stdio_executor(ex, sizeof(ex), "sdk-stdio-upstream.mjs", "ask_roots");
    ask_once("j_stdio_roots", ex, "roots/list", NULL, ROOTS_ANSWER, "roots: file:///work");
    stdio_executor(ex, sizeof(ex), "sdk-stdio-upstream.mjs", "ask_twice");
    ask_twice("j_stdio_twice", ex);
    TEST_PASS("SDK 1.x stdio upstream: its requests on stdout reach the ask API, the answers "
              "its stdin and its result");
}

/* server-everything (stdio): trigger-elicitation-request, its own tool that elicits. */
static void test_everything(const char *deps)
{
    char ex[2048], index_js[700];
    snprintf(index_js, sizeof(index_js),
             "%s/node_modules/@modelcontextprotocol/server-everything/dist/index.js", deps);
    if (access(index_js, R_OK) != 0) {
        TEST_SKIP("server-everything: no %s (tests/clients/install.sh)", index_js);
        return;
    }
    snprintf(ex, sizeof(ex),
             "{\"type\":\"mcp\",\"command\":\"node\",\"args\":[\"%s\",\"stdio\"],\"tool\":"
             "\"trigger-elicitation-request\",\"limits\":{\"concurrency\":1}}",
             index_js);
    last_n = 0;
    produce("j_everything", ex, ALL_CAPS);
    cJSON *q = wait_question("j_everything");
    CHECK_STR_EQ(str(q->child, "method"), "elicitation/create");
    CHECK_STR_EQ(str(q->child, "params.message"),
                 "Please provide inputs for the following fields:");
    CHECK_STR_EQ(str(q->child, "params.requestedSchema.required.0"), "name");
    char key[80];
    snprintf(key, sizeof(key), "%s", q->child->string);
    cJSON_Delete(q);
    answer("j_everything", key, NAME_ACCEPT);
    cJSON *rec = wait_result("j_everything");
    CHECK_CONTAINS(str(rec, "result.content.1.text"), "- Name: Ada");
    CHECK(!cJSON_IsTrue(at(rec, "result.isError")));
    cJSON_Delete(rec);
    TEST_PASS("server-everything (stdio): trigger-elicitation-request asks through the worker and "
              "its result names the answer");
}

static void test_modern(const char *label, int stdio)
{
    char ex[2048], id[64];
    int err;
    if (stdio)
        stdio_executor(ex, sizeof(ex), "stdio-upstream-v2.mjs", "ask_name");
    else
        http_executor(ex, sizeof(ex), sdk2_port, "ask_name");
    snprintf(id, sizeof(id), "j_%s_name", label);
    ask_once(id, ex, "elicitation/create", "Your name?", NAME_ACCEPT, "hello Ada");
    if (stdio)
        stdio_executor(ex, sizeof(ex), "stdio-upstream-v2.mjs", "ask_twice");
    else
        http_executor(ex, sizeof(ex), sdk2_port, "ask_twice");
    snprintf(id, sizeof(id), "j_%s_twice", label);
    ask_twice(id, ex);
    if (stdio)
        stdio_executor(ex, sizeof(ex), "stdio-upstream-v2.mjs", "ask_sample");
    else
        http_executor(ex, sizeof(ex), sdk2_port, "ask_sample");
    snprintf(id, sizeof(id), "j_%s_sample", label);
    ask_once(id, ex, "sampling/createMessage", NULL, SAMPLE_ANSWER, "the model said: 4");
    /* the request carries the caller's capabilities: no sampling, so the upstream asks nothing */
    snprintf(id, sizeof(id), "j_%s_undeclared", label);
    produce(id, ex, "{\"elicitation\":{}}");
    cJSON *rec = wait_result(id);
    CHECK(!input_entry(id));
    CHECK(cJSON_IsTrue(at(rec, "result.isError")) || at(rec, "error") != NULL);
    cJSON_Delete(rec);
    /* a silent client: the call ends with an isError result naming the timeout */
    if (stdio)
        stdio_executor(ex, sizeof(ex), "stdio-upstream-v2.mjs", "ask_name");
    else
        http_executor(ex, sizeof(ex), sdk2_port, "ask_name");
    snprintf(id, sizeof(id), "j_%s_silent", label);
    last_n = 0;
    produce(id, ex, ALL_CAPS);
    cJSON_Delete(wait_question(id));
    rec = wait_result(id);
    CHECK_STR_EQ(result_text(rec, &err),
                 "the tool's upstream MCP server asked the client (elicitation/create) and got no "
                 "answer: the client did not answer within 3000 ms");
    CHECK_INT_EQ(err, 1);
    cJSON_Delete(rec);
}

/* A job for tests/unit/worker/stdio_server.py (mode) calling tool: its result record. */
static cJSON *own_server(const char *job_id, const char *mode, const char *tool, const char *caps)
{
    char ex[1024];
    snprintf(ex, sizeof(ex),
             "{\"type\":\"mcp\",\"command\":\"python3\",\"args\":[\"%s/tests/unit/worker/"
             "stdio_server.py\",\"%s\"],\"tool\":\"%s\"}",
             repo, mode, tool);
    produce(job_id, ex, caps);
    return wait_result(job_id);
}

static void test_own_server(void)
{
    int err;
    cJSON *rec = own_server("j_own_meta", "modern", "meta", "{\"elicitation\":{\"form\":{}}}");
    cJSON *meta = cJSON_Parse(result_text(rec, &err));
    CHECK(meta != NULL);
    char *caps = cJSON_PrintUnformatted(
        cJSON_GetObjectItemCaseSensitive(meta, "io.modelcontextprotocol/clientCapabilities"));
    CHECK_STR_EQ(caps, "{\"elicitation\":{\"form\":{}}}");
    free(caps);
    cJSON_Delete(meta);
    cJSON_Delete(rec);
    rec = own_server("j_own_meta_legacy", "ok", "meta", ALL_CAPS);
    meta = cJSON_Parse(result_text(rec, &err));
    CHECK(meta != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(meta, "io.modelcontextprotocol/clientCapabilities") ==
          NULL);
    cJSON_Delete(meta);
    cJSON_Delete(rec);
    TEST_PASS("a 2026-07-28 request carries the caller's capabilities, a legacy one none");
    rec = own_server("j_own_state", "modern", "state_once", ALL_CAPS);
    CHECK_STR_EQ(result_text(rec, &err), "state abc came back");
    CHECK_INT_EQ(err, 0);
    cJSON_Delete(rec);
    rec = own_server("j_own_loop", "modern", "state_loop", ALL_CAPS);
    CHECK_STR_EQ(result_text(rec, &err),
                 "the tool's upstream MCP server asked for input more than 16 times in one call");
    CHECK_INT_EQ(err, 1);
    cJSON_Delete(rec);
    rec = own_server("j_own_bad", "modern", "bad_input", ALL_CAPS);
    CHECK_STR_EQ(result_text(rec, &err), "the tool's upstream MCP server asked the client "
                                         "something mcpq cannot relay: inputRequests.x asks "
                                         "tools/call, which mcpq does not relay");
    CHECK_INT_EQ(err, 1);
    CHECK(!input_entry("j_own_bad"));
    cJSON_Delete(rec);
    TEST_PASS("input_required: a requestState alone is echoed at once, the 17th round ends the "
              "call, a request mcpq cannot relay ends it naming the request");
}

int main(void)
{
    char deps[500], deps_env[600], sdk_log[400];
    CHECK(getcwd(repo, sizeof(repo)) != NULL); /* ctest runs tests in the source dir */
    if (fx_start(&fx, 2) < 0)
        return 1;
    sdk_port = fx_free_port();
    pid_t sdk = fx_node_upstream(&fx, "sdk-upstream", sdk_port, TOKEN,
                                 "SDK_UPSTREAM_EXTRAS=ask,stream", deps, sizeof(deps));
    if (sdk == 0) {
        TEST_SKIP("upstream questions: no node or no npm packages (tests/clients/install.sh)");
        fx_stop(&fx);
        return TEST_EXIT();
    }
    CHECK(sdk > 0);
    sdk2_port = fx_free_port();
    pid_t sdk2 = fx_node_upstream(&fx, "sdk2-upstream", sdk2_port, TOKEN, NULL, deps, sizeof(deps));
    CHECK(sdk2 > 0);
    snprintf(sdk_log, sizeof(sdk_log), "%s/sdk-upstream.log", fx.dir);
    snprintf(deps_env, sizeof(deps_env), "MCPQ_CLIENTS_DEPS=%s", deps);
    const char *wenv[] = {deps_env, "MCPQ_JOB_SIGNING_KEY=", "MCPQ_INPUT_TIMEOUT_MS=3000", NULL};
    pid_t w = fx_spawn_worker(&fx, "w1", wenv);
    CHECK(w > 0);
    rc = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(rc != NULL && !rc->err);

    test_own_server();
    test_legacy_http(sdk_log);
    test_legacy_stdio();
    test_everything(deps);
    test_modern("mrtr_http", 0);
    TEST_PASS("SDK 2.x HTTP upstream (2026-07-28): input_required asked, the request sent "
              "again with inputResponses and requestState; the caller's capabilities per "
              "request; a silent client ends the call with an isError naming the timeout");
    test_modern("mrtr_stdio", 1);
    TEST_PASS("SDK 2.x stdio upstream (2026-07-28): the same over stdio");

    redisFree(rc);
    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    fx_stop_pid(sdk, 5000);
    fx_stop_pid(sdk2, 5000);
    fx_stop(&fx);
    return TEST_EXIT();
}
