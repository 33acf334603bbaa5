/*
 * test_ask.c - a job asks its client mid-call (worker/core/ask.h, docs/internals.md "Asking
 * the client"): a real mcpq-worker, redis-server and devbroker; this test produces the job
 * envelopes and plays the ingress's part in Redis, as answer_submit.lua does (the answers as
 * fields a:<key> of {mcpq}:ask:<job_id>, then PUBLISH mcpq:answer <job_id>), reading the
 * `input` entries from the reply stream.
 *
 *   - an interactive exec tool asks twice (default key q1, then its own key) and gets both
 *     answers on stdin; the question hash holds what the ingress checks (worker, owner,
 *     tenant, session, reply_to, n) and is gone once answered; {mcpq}:asked:<id> is set;
 *   - a client that declared no elicitation: the tool gets -32601 at once, nothing is sent;
 *   - a silent client: -32001 "the client did not answer within <N> ms", the question deleted;
 *   - an answer left without its Pub/Sub message is taken at the once-a-second probe;
 *   - a changed reply_to (a 2026-07-28 retry on another replica): the result goes there;
 *   - the caller cancels while the tool asks: the process is killed, a cancelled entry, the
 *     question deleted;
 *   - a malformed question line: an error answer on stdin, the tool goes on;
 *   - redelivery: {mcpq}:asked:<id> set and no live question → the tool does not run, the
 *     result is -32603 with data.reason "input_lost"; a live question of another worker →
 *     the tool does not run and nothing is written.
 */
#include "check.h"
#include "fixture.h"
#include "names.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOPIC "mcpq.jobs"
#define REPLY NAMES_KEY_REPLY "asktest"
#define REPLY2 NAMES_KEY_REPLY "asktest2"
#define CAPS_ELICIT "{\"protocol_version\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}}}"
#define CAPS_NONE "{\"protocol_version\":\"2025-11-25\",\"capabilities\":{}}"

static fx_stack_t fx;
static rd_kafka_t *producer;
static redisContext *redis;

/* An interactive tool: asks its questions (argv[1..]: JSON of an input line each), reads each
 * answer line, prints "answers: <line>|<line>...". $ASK_PIDFILE gets its pid. */
static const char *const ASKER = "import json, os, sys\n"
                                 "env = json.loads(sys.stdin.readline())\n"
                                 "pf = os.environ.get('ASK_PIDFILE')\n"
                                 "if pf:\n"
                                 "    open(pf, 'w').write(str(os.getpid()))\n"
                                 "got = []\n"
                                 "for q in sys.argv[1:]:\n"
                                 "    print('input ' + q, flush=True)\n"
                                 "    got.append(sys.stdin.readline().strip())\n"
                                 "print('tool ' + env['tool'] + ' answers: ' + '|'.join(got))\n";

/* Produces a job envelope of tool "asker" with arguments (JSON text) and executor (JSON
 * text), from key:k1 in session s-1, whose client declared client (JSON text; NULL: none). */
static void produce_args(const char *job_id, const char *executor, const char *arguments,
                         const char *client, const char *reply_to, long long deadline_ms)
{
    char buf[16384];
    int n = snprintf(buf, sizeof(buf),
                     "{\"v\":1,\"job_id\":\"%s\",\"tenant\":\"acme\",\"server\":\"default\","
                     "\"tool\":\"asker\",\"arguments\":%s,\"executor\":%s,\"mode\":\"sync\","
                     "\"timeout_ms\":60000,\"created_ms\":%lld,\"deadline_ms\":%lld,"
                     "\"reply_to\":\"%s\",\"owner\":\"key:k1\",\"session_id\":\"s-1\""
                     "%s%s}",
                     job_id, arguments, executor, fx_now_ms(), deadline_ms, reply_to,
                     client ? ",\"client\":" : "", client ? client : "");
    CHECK(n > 0 && (size_t)n < sizeof(buf));
    CHECK_INT_EQ(rd_kafka_producev(
                     producer, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_KEY(job_id, strlen(job_id)),
                     RD_KAFKA_V_VALUE(buf, (size_t)n), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                     RD_KAFKA_V_HEADER("job_id", job_id, -1), RD_KAFKA_V_END),
                 0);
    CHECK_INT_EQ(rd_kafka_flush(producer, 10000), 0);
}

static void produce(const char *job_id, const char *executor, const char *client,
                    const char *reply_to, long long deadline_ms)
{
    produce_args(job_id, executor, "{}", client, reply_to, deadline_ms);
}

/* The exec executor JSON for ASKER with questions (JSON strings, NULL-terminated), and
 * $ASK_PIDFILE = pidfile (may be NULL). Malloc'd. */
static char *asker_executor(const char *const *questions, const char *pidfile, int interactive)
{
    cJSON *ex = cJSON_CreateObject();
    cJSON_AddStringToObject(ex, "type", "exec");
    cJSON *argv = cJSON_AddArrayToObject(ex, "argv");
    cJSON_AddItemToArray(argv, cJSON_CreateString("python3"));
    cJSON_AddItemToArray(argv, cJSON_CreateString("-c"));
    cJSON_AddItemToArray(argv, cJSON_CreateString(ASKER));
    for (int i = 0; questions[i]; i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(questions[i]));
    if (pidfile) {
        cJSON *env = cJSON_AddObjectToObject(ex, "env");
        cJSON_AddStringToObject(env, "ASK_PIDFILE", pidfile);
    }
    if (interactive)
        cJSON_AddTrueToObject(ex, "interactive");
    char *s = cJSON_PrintUnformatted(ex);
    cJSON_Delete(ex);
    return s;
}

static cJSON *wait_result(const char *job_id, int timeout_ms)
{
    long long end = fx_now_ms() + timeout_ms;
    do {
        redisReply *r = redisCommand(redis, "GET " NAMES_KEY_RESULT "%s", job_id);
        CHECK(r != NULL);
        if (r->type == REDIS_REPLY_STRING) {
            cJSON *v = cJSON_Parse(r->str);
            freeReplyObject(r);
            CHECK(v != NULL);
            return v;
        }
        freeReplyObject(r);
        fx_sleep_ms(50);
    } while (fx_now_ms() < end);
    return NULL;
}

static cJSON *need_result(const char *job_id)
{
    cJSON *v = wait_result(job_id, 40000);
    if (!v)
        fprintf(stderr, "no result for %s (logs in %s)\n", job_id, fx.dir);
    CHECK(v != NULL);
    return v;
}

/* The text of a result record's first content block. */
static const char *result_text(const cJSON *rec)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rec, "result"), "content");
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(c, 0), "text"));
}

/* The data of the k-th (from 0) entry of kind for job_id on stream, waiting up to
 * timeout_ms; NULL when none came. */
static cJSON *wait_entry(const char *stream, const char *job_id, const char *kind, int k,
                         int timeout_ms)
{
    long long end = fx_now_ms() + timeout_ms;
    do {
        redisReply *r = redisCommand(redis, "XRANGE %s - +", stream);
        CHECK(r != NULL);
        int seen = 0;
        for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
            const redisReply *f = r->element[i]->element[1];
            const char *job = NULL, *kd = NULL, *data = NULL;
            for (size_t j = 0; j + 1 < f->elements; j += 2) {
                if (strcmp(f->element[j]->str, "job") == 0)
                    job = f->element[j + 1]->str;
                else if (strcmp(f->element[j]->str, "kind") == 0)
                    kd = f->element[j + 1]->str;
                else if (strcmp(f->element[j]->str, "data") == 0)
                    data = f->element[j + 1]->str;
            }
            if (job && kd && data && strcmp(job, job_id) == 0 && strcmp(kd, kind) == 0 &&
                seen++ == k) {
                cJSON *v = cJSON_Parse(data);
                freeReplyObject(r);
                return v;
            }
        }
        freeReplyObject(r);
        fx_sleep_ms(20);
    } while (fx_now_ms() < end);
    return NULL;
}

static int count_entries(const char *stream, const char *job_id, const char *kind)
{
    int n = 0;
    for (int k = 0;; k++) {
        cJSON *e = wait_entry(stream, job_id, kind, k, 0);
        if (!e)
            return n;
        cJSON_Delete(e);
        n++;
    }
}

/* A field of {mcpq}:ask:<job_id> ("" when missing), into out. */
static const char *ask_field(const char *job_id, const char *field, char *out, size_t size)
{
    redisReply *r = redisCommand(redis, "HGET " NAMES_KEY_ASK "%s %s", job_id, field);
    CHECK(r != NULL);
    snprintf(out, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return out;
}

static long long exists(const char *prefix, const char *job_id)
{
    redisReply *r = redisCommand(redis, "EXISTS %s%s", prefix, job_id);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* What answer_submit.lua does for one key: the answer stored, then (publish) the wake-up. */
static void answer(const char *job_id, const char *key, const char *json, int publish)
{
    redisReply *r = redisCommand(redis, "HSET " NAMES_KEY_ASK "%s a:%s %s", job_id, key, json);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    if (!publish)
        return;
    r = redisCommand(redis, "PUBLISH " NAMES_CHAN_ANSWER " %s", job_id);
    CHECK(r != NULL);
    freeReplyObject(r);
}

static const char *const Q_NAME =
    "{\"method\":\"elicitation/create\",\"params\":{\"message\":\"Your name?\","
    "\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}}";
static const char *const Q_SURE =
    "{\"key\":\"sure\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"Sure?\","
    "\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}";

static void test_two_questions(void)
{
    const char *qs[] = {Q_NAME, Q_SURE, NULL};
    char *ex = asker_executor(qs, NULL, 1);
    produce("ask-1", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);

    cJSON *e1 = wait_entry(REPLY, "ask-1", "input", 0, 30000);
    CHECK(e1 != NULL);
    CHECK_INT_EQ((int)cJSON_GetObjectItem(e1, "n")->valuedouble, 1);
    const cJSON *r1 = cJSON_GetObjectItem(cJSON_GetObjectItem(e1, "requests"), "q1");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(r1, "method")), "elicitation/create");
    CHECK_STR_EQ(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(r1, "params"), "message")),
        "Your name?");
    CHECK(cJSON_GetObjectItem(e1, "expires_ms")->valuedouble > (double)fx_now_ms());
    cJSON_Delete(e1);
    char v[512];
    CHECK_STR_EQ(ask_field("ask-1", "worker", v, sizeof(v)), "w-ask");
    CHECK_STR_EQ(ask_field("ask-1", "owner", v, sizeof(v)), "key:k1");
    CHECK_STR_EQ(ask_field("ask-1", "tenant", v, sizeof(v)), "acme");
    CHECK_STR_EQ(ask_field("ask-1", "session", v, sizeof(v)), "s-1");
    CHECK_STR_EQ(ask_field("ask-1", "reply_to", v, sizeof(v)), REPLY);
    CHECK_STR_EQ(ask_field("ask-1", "method", v, sizeof(v)), "tools/call");
    CHECK_STR_EQ(ask_field("ask-1", "n", v, sizeof(v)), "1");
    CHECK_INT_EQ(exists(NAMES_KEY_ASKED, "ask-1"), 1);
    redisReply *ttl = redisCommand(redis, "PTTL " NAMES_KEY_ASK "ask-1");
    CHECK(ttl && ttl->integer > 0 && ttl->integer <= 5000);
    freeReplyObject(ttl);
    answer("ask-1", "q1", "{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}", 1);

    cJSON *e2 = wait_entry(REPLY, "ask-1", "input", 1, 30000);
    CHECK(e2 != NULL);
    CHECK_INT_EQ((int)cJSON_GetObjectItem(e2, "n")->valuedouble, 2);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(e2, "requests"), "sure") != NULL);
    cJSON_Delete(e2);
    CHECK_STR_EQ(ask_field("ask-1", "n", v, sizeof(v)), "2");
    answer("ask-1", "sure", "{\"result\":{\"action\":\"decline\"}}", 1);

    cJSON *rec = need_result("ask-1");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(rec, "status")), "ok");
    const char *text = result_text(rec);
    CHECK(text != NULL);
    CHECK_CONTAINS(text, "answers: {\"result\":{\"action\":\"accept\",\"content\":{\"name\":"
                         "\"Ada\"}}}|{\"result\":{\"action\":\"decline\"}}");
    CHECK(strstr(text, "input ") == NULL); /* the question lines are not the result */
    cJSON_Delete(rec);
    CHECK_INT_EQ(exists(NAMES_KEY_ASK, "ask-1"), 0);
    TEST_PASS("an interactive exec tool asks twice and gets both answers on stdin");
}

static void test_undeclared(void)
{
    const char *qs[] = {Q_NAME, NULL};
    char *ex = asker_executor(qs, NULL, 1);
    produce("ask-undeclared", ex, CAPS_NONE, REPLY, fx_now_ms() + 60000);
    produce("ask-noclient", ex, NULL, REPLY, fx_now_ms() + 60000);
    free(ex);
    const char *ids[] = {"ask-undeclared", "ask-noclient"};
    for (int i = 0; i < 2; i++) {
        cJSON *rec = need_result(ids[i]);
        CHECK_CONTAINS(result_text(rec),
                       "answers: {\"error\":{\"code\":-32601,\"message\":\"the client did not "
                       "declare the elicitation capability\"}}");
        cJSON_Delete(rec);
        CHECK_INT_EQ(count_entries(REPLY, ids[i], "input"), 0);
    }
    TEST_PASS("a client that did not declare elicitation is never asked: -32601 at once");
}

static void test_silent_client(void)
{
    const char *qs[] = {Q_NAME, NULL};
    char *ex = asker_executor(qs, NULL, 1);
    long long t0 = fx_now_ms();
    produce("ask-silent", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *e = wait_entry(REPLY, "ask-silent", "input", 0, 30000);
    CHECK(e != NULL);
    cJSON_Delete(e);
    cJSON *rec = need_result("ask-silent");
    CHECK_CONTAINS(result_text(rec), "answers: {\"error\":{\"code\":-32001,\"message\":\"the "
                                     "client did not answer within 3000 ms\"}}");
    CHECK(fx_now_ms() - t0 >= 3000);
    cJSON_Delete(rec);
    CHECK_INT_EQ(exists(NAMES_KEY_ASK, "ask-silent"), 0);
    TEST_PASS("a silent client: the tool gets -32001 at MCPQ_INPUT_TIMEOUT_MS");
}

static void test_probe_and_follow(void)
{
    const char *qs[] = {Q_NAME, NULL};
    char *ex = asker_executor(qs, NULL, 1);
    produce("ask-probe", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *e = wait_entry(REPLY, "ask-probe", "input", 0, 30000);
    CHECK(e != NULL);
    cJSON_Delete(e);
    /* A retry on another replica moved the call: reply_to changes with the answer, and no
     * Pub/Sub message (lost): the once-a-second probe finds both. */
    redisReply *r = redisCommand(redis, "HSET " NAMES_KEY_ASK "ask-probe reply_to %s", REPLY2);
    CHECK(r != NULL);
    freeReplyObject(r);
    answer("ask-probe", "q1", "{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"Bo\"}}}",
           0);
    cJSON *res = wait_entry(REPLY2, "ask-probe", "result", 0, 30000);
    CHECK(res != NULL);
    CHECK_CONTAINS(result_text(res), "\"name\":\"Bo\"");
    cJSON_Delete(res);
    CHECK_INT_EQ(count_entries(REPLY, "ask-probe", "result"), 0);
    TEST_PASS("answers without their Pub/Sub message are taken at the probe; a moved reply_to "
              "gets the result");
}

static void test_cancel_while_asking(void)
{
    char pidfile[512];
    snprintf(pidfile, sizeof(pidfile), "%s/asker.pid", fx.dir);
    const char *qs[] = {Q_NAME, NULL};
    char *ex = asker_executor(qs, pidfile, 1);
    produce("ask-cancel", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *e = wait_entry(REPLY, "ask-cancel", "input", 0, 30000);
    CHECK(e != NULL);
    cJSON_Delete(e);
    CHECK_INT_EQ(fx_wait_file(pidfile, 10000), 0);
    char pidtext[32];
    fx_read_file(pidfile, pidtext, sizeof(pidtext));
    pid_t pid = (pid_t)strtol(pidtext, NULL, 10);
    CHECK(pid > 0 && kill(pid, 0) == 0);
    redisReply *r = redisCommand(redis, "SET " NAMES_KEY_CANCEL "ask-cancel {\"reason\":\"bye\"}");
    freeReplyObject(r);
    r = redisCommand(redis, "PUBLISH " NAMES_CHAN_CANCEL " ask-cancel");
    freeReplyObject(r);
    cJSON *c = wait_entry(REPLY, "ask-cancel", "cancelled", 0, 30000);
    CHECK(c != NULL);
    cJSON_Delete(c);
    CHECK_INT_EQ(exists(NAMES_KEY_ASK, "ask-cancel"), 0);
    CHECK(kill(pid, 0) < 0 && errno == ESRCH);
    CHECK(wait_result("ask-cancel", 500) == NULL);
    TEST_PASS("cancelled while asking: the tool is killed, the question deleted, no result");
}

static void test_bad_lines(void)
{
    const char *qs[] = {"not json", "{\"method\":\"tools/call\"}",
                        "{\"key\":\"a b\",\"method\":\"roots/list\"}", NULL};
    char *ex = asker_executor(qs, NULL, 1);
    produce("ask-bad", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *rec = need_result("ask-bad");
    const char *text = result_text(rec);
    CHECK_CONTAINS(text, "{\"error\":{\"code\":-32602,\"message\":\"an input line is");
    CHECK_CONTAINS(text, "method must be elicitation/create, sampling/createMessage or "
                         "roots/list");
    CHECK_CONTAINS(text, "request key \\\"a b\\\" must be");
    cJSON_Delete(rec);
    CHECK_INT_EQ(count_entries(REPLY, "ask-bad", "input"), 0);
    TEST_PASS("malformed question lines get an error answer; the tool goes on");
}

static void test_not_interactive(void)
{
    const char *qs[] = {Q_NAME, NULL};
    char *ex = asker_executor(qs, NULL, 0);
    produce("ask-plain", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *rec = need_result("ask-plain");
    /* stdin is closed after the envelope: the tool reads EOF, its line stays in the result */
    CHECK_CONTAINS(result_text(rec), "input {\"method\"");
    CHECK_CONTAINS(result_text(rec), "\ntool asker answers: ");
    cJSON_Delete(rec);
    CHECK_INT_EQ(count_entries(REPLY, "ask-plain", "input"), 0);
    TEST_PASS("a tool that is not interactive is unchanged (stdin closed, no questions)");
}

static void test_redelivery(void)
{
    char marker[512];
    snprintf(marker, sizeof(marker), "%s/ran.marker", fx.dir);
    char ex[1024];
    snprintf(ex, sizeof(ex), "{\"type\":\"exec\",\"argv\":[\"sh\",\"-c\",\"touch %s; echo ran\"]}",
             marker);

    redisReply *r = redisCommand(redis, "SET " NAMES_KEY_ASKED "ask-lost w-dead EX 120");
    freeReplyObject(r);
    produce("ask-lost", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    cJSON *rec = need_result("ask-lost");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(rec, "status")), "error");
    const cJSON *err = cJSON_GetObjectItem(rec, "error");
    CHECK_INT_EQ((int)cJSON_GetObjectItem(err, "code")->valuedouble, -32603);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(err, "message")),
                 "the call's worker stopped while it waited for the client's answer; call the "
                 "tool again");
    CHECK_STR_EQ(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(err, "data"), "reason")),
        "input_lost");
    cJSON_Delete(rec);
    CHECK(access(marker, F_OK) != 0);
    TEST_PASS("redelivered after its worker died while asking: input_lost, the tool not run");

    r = redisCommand(redis, "SET " NAMES_KEY_ASKED "ask-alive w-other EX 120");
    freeReplyObject(r);
    r = redisCommand(redis, "HSET " NAMES_KEY_ASK "ask-alive n 1 worker w-other");
    freeReplyObject(r);
    r = redisCommand(redis, "PEXPIRE " NAMES_KEY_ASK "ask-alive 60000");
    freeReplyObject(r);
    produce("ask-alive", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    char log[512];
    snprintf(log, sizeof(log), "%s/w-ask.log", fx.dir);
    long long end = fx_now_ms() + 30000;
    while (fx_now_ms() < end &&
           !fx_log_line(log, "another worker waits for its client", "ask-alive", NULL, 0))
        fx_sleep_ms(50);
    CHECK(fx_log_line(log, "another worker waits for its client", "ask-alive", NULL, 0));
    CHECK(wait_result("ask-alive", 300) == NULL);
    CHECK(access(marker, F_OK) != 0);
    CHECK_INT_EQ(count_entries(REPLY, "ask-alive", "result"), 0);
    TEST_PASS("redelivered while another worker waits for the answer: not run, nothing written");
}

/* The request "q" of the k-th input entry of job_id (a new object). */
static cJSON *entry_request(const char *job_id, int k)
{
    cJSON *e = wait_entry(REPLY, job_id, "input", k, 30000);
    CHECK(e != NULL);
    cJSON *q = cJSON_DetachItemFromObjectCaseSensitive(cJSON_GetObjectItem(e, "requests"), "q");
    cJSON_Delete(e);
    CHECK(q != NULL);
    return q;
}

static const char *params_str(const cJSON *req, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(req, "params"), name));
}

#define CAPS_BOTH "{\"capabilities\":{\"elicitation\":{},\"sampling\":{}}}"
#define BUILTIN(name) "{\"type\":\"builtin\",\"name\":\"" name "\"}"

/* Runs builtin tool name with arguments: checks its question's method, answers result
 * (JSON text of the client's result) and returns the result text (malloc'd). The request is
 * handed to check (may be NULL) first. */
static char *builtin_round(const char *job_id, const char *name, const char *arguments,
                           const char *method, void (*check)(const cJSON *req), const char *result)
{
    char ex[256];
    snprintf(ex, sizeof(ex), "{\"type\":\"builtin\",\"name\":\"%s\"}", name);
    produce_args(job_id, ex, arguments, CAPS_BOTH, REPLY, fx_now_ms() + 60000);
    cJSON *q = entry_request(job_id, 0);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(q, "method")), method);
    if (check)
        check(q);
    cJSON_Delete(q);
    char a[4096];
    snprintf(a, sizeof(a), "{\"result\":%s}", result);
    answer(job_id, "q", a, 1);
    cJSON *rec = need_result(job_id);
    CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "result"), "isError")));
    char *text = strdup(result_text(rec));
    cJSON_Delete(rec);
    return text;
}

static void check_elicitation(const cJSON *req)
{
    CHECK_STR_EQ(params_str(req, "message"), "Please provide your information");
    const cJSON *schema =
        cJSON_GetObjectItem(cJSON_GetObjectItem(req, "params"), "requestedSchema");
    char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(schema, "required"));
    CHECK_STR_EQ(s, "[\"username\",\"email\"]");
    free(s);
}

static void check_sampling(const cJSON *req)
{
    const cJSON *p = cJSON_GetObjectItem(req, "params");
    CHECK_INT_EQ((int)cJSON_GetObjectItem(p, "maxTokens")->valuedouble, 100);
    char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(p, "messages"));
    CHECK_STR_EQ(s, "[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"Test prompt for "
                    "sampling\"}}]");
    free(s);
}

static const cJSON *prop(const cJSON *req, const char *name)
{
    return cJSON_GetObjectItem(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(req, "params"), "requestedSchema"),
            "properties"),
        name);
}

static void check_sep1034(const cJSON *req)
{
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(prop(req, "name"), "default")),
                 "John Doe");
    CHECK(cJSON_GetObjectItem(prop(req, "age"), "default")->valuedouble == 30);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(prop(req, "age"), "type")), "integer");
    CHECK(cJSON_GetObjectItem(prop(req, "score"), "default")->valuedouble == 95.5);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(prop(req, "status"), "default")),
                 "active");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(prop(req, "verified"), "default")));
}

static void check_sep1330(const cJSON *req)
{
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(prop(req, "untitledSingle"), "enum")), 3);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(prop(req, "titledSingle"), "oneOf")), 3);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(prop(req, "legacyEnum"), "enumNames")), 3);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(prop(req, "untitledMulti"), "items"), "enum") !=
          NULL);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(prop(req, "titledMulti"), "items"), "anyOf") !=
          NULL);
}

static void test_builtins(void)
{
    char *t = builtin_round("b-elicit", "test_elicitation",
                            "{\"message\":\"Please provide your information\"}",
                            "elicitation/create", check_elicitation,
                            "{\"action\":\"accept\",\"content\":{\"username\":\"testuser\"}}");
    CHECK_STR_EQ(t, "User response: <action: accept, content: {\"username\":\"testuser\"}>");
    free(t);
    t = builtin_round("b-sample", "test_sampling", "{\"prompt\":\"Test prompt for sampling\"}",
                      "sampling/createMessage", check_sampling,
                      "{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"hi "
                      "there\"},\"model\":\"m\"}");
    CHECK_STR_EQ(t, "LLM response: hi there");
    free(t);
    t = builtin_round("b-1034", "test_elicitation_sep1034_defaults", "{}", "elicitation/create",
                      check_sep1034, "{\"action\":\"decline\"}");
    CHECK_STR_EQ(t, "Elicitation completed: action=decline, content={}");
    free(t);
    t = builtin_round("b-1330", "test_elicitation_sep1330_enums", "{}", "elicitation/create",
                      check_sep1330,
                      "{\"action\":\"accept\",\"content\":{\"untitledMulti\":[\"option1\"]}}");
    CHECK_STR_EQ(t,
                 "Elicitation completed: action=accept, content={\"untitledMulti\":[\"option1\"]}");
    free(t);
    t = builtin_round("b-confirm", "confirm", "{\"question\":\"Deploy?\"}", "elicitation/create",
                      NULL, "{\"action\":\"accept\",\"content\":{\"confirmed\":true}}");
    CHECK_STR_EQ(t, "You said yes.");
    free(t);
    TEST_PASS("builtin asking tools: the conformance fixtures' questions and texts, confirm");

    produce_args("b-nosample", BUILTIN("test_sampling"), "{\"prompt\":\"p\"}", CAPS_ELICIT, REPLY,
                 fx_now_ms() + 60000);
    cJSON *rec = need_result("b-nosample");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "result"), "isError")));
    CHECK_CONTAINS(result_text(rec), "the client did not declare the sampling capability");
    cJSON_Delete(rec);
    produce_args("b-noarg", BUILTIN("test_elicitation"), "{}", CAPS_BOTH, REPLY,
                 fx_now_ms() + 60000);
    rec = need_result("b-noarg");
    CHECK_CONTAINS(result_text(rec), "arguments.message must be a string");
    cJSON_Delete(rec);
    TEST_PASS(
        "builtin asking tools: an undeclared capability or bad arguments is an isError result");

    produce_args("b-cancel", BUILTIN("confirm"), "{}", CAPS_BOTH, REPLY, fx_now_ms() + 60000);
    cJSON *q = entry_request("b-cancel", 0);
    CHECK_STR_EQ(params_str(q, "message"), "Proceed?");
    cJSON_Delete(q);
    redisReply *r = redisCommand(redis, "SET " NAMES_KEY_CANCEL "b-cancel {}");
    freeReplyObject(r);
    r = redisCommand(redis, "PUBLISH " NAMES_CHAN_CANCEL " b-cancel");
    freeReplyObject(r);
    cJSON *c = wait_entry(REPLY, "b-cancel", "cancelled", 0, 30000);
    CHECK(c != NULL);
    cJSON_Delete(c);
    CHECK_INT_EQ(exists(NAMES_KEY_ASK, "b-cancel"), 0);
    TEST_PASS("a builtin cancelled while it asks: cancelled entry, question deleted");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (fx_start(&fx, 2) < 0)
        return 1;
    redis = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(redis && !redis->err);
    producer = fx_kafka_new(&fx, NULL, NULL);
    const char *env[] = {"MCPQ_JOB_SIGNING_KEY=", "MCPQ_INPUT_TIMEOUT_MS=3000",
                         "MCPQ_KILL_GRACE_MS=500", NULL};
    pid_t w = fx_spawn_worker(&fx, "w-ask", env);
    CHECK(w > 0);
    test_two_questions();
    test_undeclared();
    test_silent_client();
    test_probe_and_follow();
    test_cancel_while_asking();
    test_bad_lines();
    test_not_interactive();
    test_redelivery();
    test_builtins();
    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    rd_kafka_destroy(producer);
    redisFree(redis);
    fx_stop(&fx);
    return 0;
}
