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
 *   - a malformed question line (no JSON, a field besides method/params/key, a bad or 65-char
 *     key, an unknown method): an error answer on stdin, the tool goes on;
 *   - a second question before the first answer: -32600 at once, the first still answered;
 *   - an answer that is neither {"result"} nor {"error"}, a question deleted under the worker:
 *     the tool is told its answer could not be read / the question expired;
 *   - an answer larger than the pipe, a last line without newline, more than
 *     MCPQ_MAX_OUTPUT_BYTES printed by an interactive tool;
 *   - three calls asking at once, answered out of order; a question Redis refuses;
 *   - redelivery: {mcpq}:asked:<id> set and no live question → the tool does not run, the
 *     result is -32603 with data.reason "input_lost"; a live question of another worker →
 *     the tool does not run and nothing is written.
 */
#include "check.h"
#include "fixture.h"
#include "names.h"
#include "task.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <microhttpd.h>
#include <pthread.h>
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

/* An interactive tool that writes its two questions (argv[1], argv[2]) in one write, before
 * it reads anything, then reads two lines and prints "answers: <line>|<line>". */
static const char *const EAGER = "import sys\n"
                                 "sys.stdin.readline()\n"
                                 "sys.stdout.write('input ' + sys.argv[1] + '\\ninput ' + "
                                 "sys.argv[2] + '\\n')\n"
                                 "sys.stdout.flush()\n"
                                 "got = [sys.stdin.readline().strip() for _ in range(2)]\n"
                                 "print('answers: ' + '|'.join(got))\n";

/* The exec executor JSON for python3 script with arguments (JSON strings, NULL-terminated),
 * and $ASK_PIDFILE = pidfile (may be NULL). Malloc'd. */
static char *script_executor(const char *script, const char *const *questions, const char *pidfile,
                             int interactive)
{
    cJSON *ex = cJSON_CreateObject();
    cJSON_AddStringToObject(ex, "type", "exec");
    cJSON *argv = cJSON_AddArrayToObject(ex, "argv");
    cJSON_AddItemToArray(argv, cJSON_CreateString("python3"));
    cJSON_AddItemToArray(argv, cJSON_CreateString("-c"));
    cJSON_AddItemToArray(argv, cJSON_CreateString(script));
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

/* The exec executor JSON for ASKER with questions (see script_executor). Malloc'd. */
static char *asker_executor(const char *const *questions, const char *pidfile, int interactive)
{
    return script_executor(ASKER, questions, pidfile, interactive);
}

static cJSON *need_result(const char *job_id)
{
    cJSON *v = fx_result_wait(redis, job_id, 40000);
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

/* Starts the asker with one question (Q_NAME) as job_id for a client that declared
 * elicitation, and waits until the question is on the reply stream. */
static void asker_asks(const char *job_id, const char *pidfile)
{
    const char *qs[] = {Q_NAME, NULL};
    char *ex = asker_executor(qs, pidfile, 1);
    produce(job_id, ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *e = wait_entry(REPLY, job_id, "input", 0, 30000);
    CHECK(e != NULL);
    cJSON_Delete(e);
}

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
    long long t0 = fx_now_ms();
    asker_asks("ask-silent", NULL);
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
    asker_asks("ask-probe", NULL);
    /* and a Redis that forgot the scripts (a restart): the probe loads them again */
    redisReply *f = redisCommand(redis, "SCRIPT FLUSH");
    CHECK(f != NULL);
    freeReplyObject(f);
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
    TEST_PASS("answers without their Pub/Sub message are taken at the probe (scripts flushed); a "
              "moved reply_to gets the result");
}

static void test_cancel_while_asking(void)
{
    char pidfile[512];
    snprintf(pidfile, sizeof(pidfile), "%s/asker.pid", fx.dir);
    asker_asks("ask-cancel", pidfile);
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
    CHECK(fx_result_wait(redis, "ask-cancel", 500) == NULL);
    TEST_PASS("cancelled while asking: the tool is killed, the question deleted, no result");
}

static void test_bad_lines(void)
{
    const char *qs[] = {
        "not json",
        "{\"method\":\"tools/call\"}",
        "{\"key\":\"a b\",\"method\":\"roots/list\"}",
        "{\"method\":\"roots/list\",\"id\":7}",
        "{\"key\":\"k2345678901234567890123456789012345678901234567890123456789012345\","
        "\"method\":\"roots/list\"}",
        NULL};
    char *ex = asker_executor(qs, NULL, 1);
    produce("ask-bad", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *rec = need_result("ask-bad");
    const char *text = result_text(rec);
    CHECK_CONTAINS(text, "{\"error\":{\"code\":-32602,\"message\":\"an input line is");
    CHECK_CONTAINS(text, "method must be elicitation/create, sampling/createMessage or "
                         "roots/list");
    CHECK_CONTAINS(text, "request key \\\"a b\\\" must be");
    /* a field besides method, params and key: the same answer as a line that is no JSON */
    const char *second = strstr(strstr(text, "an input line is") + 1, "an input line is");
    CHECK(second != NULL);
    CHECK(strstr(second + 1, "an input line is") == NULL);
    CHECK_CONTAINS(text, "request key must be 1 to 64 characters of [A-Za-z0-9_.-]");
    cJSON_Delete(rec);
    CHECK_INT_EQ(count_entries(REPLY, "ask-bad", "input"), 0);
    TEST_PASS("malformed question lines get an error answer; the tool goes on");
}

/* A tool that asks again before it read the first answer: the second question gets -32600 at
 * once, the first one is still asked and answered. */
static void test_ask_before_answer(void)
{
    const char *qs[] = {Q_NAME, Q_SURE, NULL};
    char *ex = script_executor(EAGER, qs, NULL, 1);
    produce("ask-eager", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *e = wait_entry(REPLY, "ask-eager", "input", 0, 30000);
    CHECK(e != NULL);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "requests"), "q1") != NULL);
    cJSON_Delete(e);
    answer("ask-eager", "q1", "{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"Eve\"}}}",
           1);
    cJSON *rec = need_result("ask-eager");
    const char *text = result_text(rec);
    CHECK_CONTAINS(text, "answers: {\"error\":{\"code\":-32600,\"message\":\"a question of this "
                         "call is open: read its answer before asking again\"");
    CHECK_CONTAINS(text, "|{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"Eve\"}}}");
    cJSON_Delete(rec);
    CHECK_INT_EQ(count_entries(REPLY, "ask-eager", "input"), 1);
    TEST_PASS("a second question before the first answer: -32600 at once, the first answered");
}

/* An answer that is neither {"result"} nor {"error"}: the tool gets a -32603 error answer
 * (unreadable); a question deleted under the worker: a -32603 error answer (expired). */
static void test_lost_answers(void)
{
    asker_asks("ask-junk", NULL);
    answer("ask-junk", "q1", "{\"foo\":1}", 1);
    cJSON *rec = need_result("ask-junk");
    CHECK_CONTAINS(result_text(rec), "{\"error\":{\"code\":-32603,\"message\":\"the client's "
                                     "answer could not be read");
    CHECK(strstr(result_text(rec), "foo") == NULL);
    cJSON_Delete(rec);
    CHECK_INT_EQ(exists(NAMES_KEY_ASK, "ask-junk"), 0);
    TEST_PASS("an answer without result or error: the tool is told it could not be read");

    asker_asks("ask-gone", NULL);
    redisReply *r = redisCommand(redis, "DEL " NAMES_KEY_ASK "ask-gone");
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);
    r = redisCommand(redis, "PUBLISH " NAMES_CHAN_ANSWER " ask-gone");
    CHECK(r != NULL);
    freeReplyObject(r);
    rec = need_result("ask-gone");
    CHECK_CONTAINS(result_text(rec), "{\"error\":{\"code\":-32603,\"message\":\"the question "
                                     "expired before the client answered");
    cJSON_Delete(rec);
    TEST_PASS("a question gone from Redis while the tool waits: the tool is told it expired");
}

/* Three calls ask at once; answered middle first, each tool gets its own answer. */
static void test_three_open(void)
{
    const char *ids[] = {"ask-m1", "ask-m2", "ask-m3"};
    for (int i = 0; i < 3; i++)
        asker_asks(ids[i], NULL);
    const int order[] = {1, 0, 2};
    for (int k = 0; k < 3; k++) {
        const char *id = ids[order[k]];
        char a[256], want[320];
        snprintf(a, sizeof(a), "{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"%s\"}}}",
                 id);
        answer(id, "q1", a, 1);
        cJSON *rec = need_result(id);
        snprintf(want, sizeof(want), "tool asker answers: %s", a);
        CHECK_STR_EQ(result_text(rec), want);
        cJSON_Delete(rec);
        for (int j = k + 1; j < 3; j++) /* the others still wait */
            CHECK_INT_EQ(exists(NAMES_KEY_ASK, ids[order[j]]), 1);
    }
    TEST_PASS("three calls ask at once: each gets its own answer, in any order");
}

/* Redis refuses a question (ask_open.lua: another question n of the job is open there): the
 * tool gets an error answer at once, the other question is left alone, nothing is sent. */
static void test_refused(void)
{
    redisReply *r =
        redisCommand(redis, "HSET " NAMES_KEY_ASK "ask-refused n 99 worker w-other reqs {}");
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    const char *qs[] = {Q_NAME, NULL};
    char *ex = asker_executor(qs, NULL, 1);
    produce("ask-refused", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    cJSON *rec = need_result("ask-refused");
    CHECK_CONTAINS(result_text(rec),
                   "another attempt of this call has a question open; this one cannot ask");
    cJSON_Delete(rec);
    char v[64];
    CHECK_STR_EQ(ask_field("ask-refused", "n", v, sizeof(v)), "99");
    CHECK_STR_EQ(ask_field("ask-refused", "worker", v, sizeof(v)), "w-other");
    CHECK_INT_EQ(count_entries(REPLY, "ask-refused", "input"), 0);
    r = redisCommand(redis, "DEL " NAMES_KEY_ASK "ask-refused");
    freeReplyObject(r);
    TEST_PASS("a question Redis refuses (another one of the job open): an error answer at once");
}

/* A python3 script as an interactive exec tool (no questions), as job_id; its result. */
static cJSON *interactive_run(const char *job_id, const char *script)
{
    const char *none[] = {NULL};
    char *ex = script_executor(script, none, NULL, 1);
    produce(job_id, ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    free(ex);
    return need_result(job_id);
}

/* The interactive line protocol at its edges: an answer larger than the pipe (written as the
 * tool reads), a last line without its newline, more than MCPQ_MAX_OUTPUT_BYTES printed. */
static void test_interactive_io(void)
{
    asker_asks("ask-huge", NULL);
    size_t n = 300000;
    char *a = malloc(n + 128);
    CHECK(a != NULL);
    int off = snprintf(a, 128, "{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"");
    memset(a + off, 'x', n);
    snprintf(a + off + n, 128 - (size_t)off, "\"}}}");
    answer("ask-huge", "q1", a, 1);
    cJSON *rec = need_result("ask-huge");
    char *want = malloc(n + 256);
    CHECK(want != NULL);
    snprintf(want, n + 256, "tool asker answers: %s", a);
    CHECK_STR_EQ(result_text(rec), want);
    free(want);
    free(a);
    cJSON_Delete(rec);
    TEST_PASS("an answer larger than the pipe reaches the tool whole");

    rec = interactive_run("ask-nonl", "import sys\nsys.stdin.readline()\n"
                                      "sys.stdout.write('first\\nlast')\n");
    CHECK_STR_EQ(result_text(rec), "first\nlast");
    cJSON_Delete(rec);
    TEST_PASS("an interactive tool's last line without its newline is in the result");

    rec = interactive_run("ask-flood", "import sys\nsys.stdin.readline()\n"
                                       "line = 'x' * 999 + '\\n'\n"
                                       "for _ in range(6000):\n"
                                       "    sys.stdout.write(line)\n");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "result"), "isError")));
    CHECK_CONTAINS(result_text(rec), "output too large: the tool printed more than 4194304 bytes");
    cJSON_Delete(rec);
    TEST_PASS("an interactive tool that prints more than MCPQ_MAX_OUTPUT_BYTES: an isError result");
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
    CHECK(fx_result_wait(redis, "ask-alive", 300) == NULL);
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
    t = builtin_round("b-decline", "confirm", "{}", "elicitation/create", NULL,
                      "{\"action\":\"decline\"}");
    CHECK_STR_EQ(t, "You declined to answer.");
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
    produce_args("b-noprompt", BUILTIN("test_sampling"), "{\"prompt\":3}", CAPS_BOTH, REPLY,
                 fx_now_ms() + 60000);
    rec = need_result("b-noprompt");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "result"), "isError")));
    CHECK_CONTAINS(result_text(rec), "test_sampling: arguments.prompt must be a string");
    cJSON_Delete(rec);
    CHECK_INT_EQ(count_entries(REPLY, "b-noprompt", "input"), 0);
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

/* ---- an HTTP tool that asks (input-required rounds) ---- */

static pthread_mutex_t http_mu = PTHREAD_MUTEX_INITIALIZER;
static char http_last[8192]; /* the last body with inputResponses */
static int http_posts;

/* /ask: without inputResponses, input_required (a name, state "s1"); with them, the greeting
 * (and the inputResponses it got). /loop: requestState only, forever. /bad: an invalid
 * question. /nostate: input_required with a requestState that is no string. /big: 5 MiB, more
 * than MCPQ_MAX_OUTPUT_BYTES (4 MiB). */
static enum MHD_Result on_http(struct MHD_Connection *conn, const char *url, const char *method,
                               const util_buf_t *b)
{
    (void)method;
    cJSON *env = cJSON_ParseWithLength(b->data ? b->data : "", b->len);
    const cJSON *resp = cJSON_GetObjectItem(env, "inputResponses");
    const char *rs = cJSON_GetStringValue(cJSON_GetObjectItem(env, "requestState"));
    char out[4096];
    pthread_mutex_lock(&http_mu);
    http_posts++;
    if (resp || cJSON_GetObjectItem(env, "input_responses"))
        snprintf(http_last, sizeof(http_last), "%.*s", (int)b->len, b->data);
    pthread_mutex_unlock(&http_mu);
    const char *mid = cJSON_GetStringValue(cJSON_GetObjectItem(env, "message_id"));
    const cJSON *ir = cJSON_GetObjectItem(env, "input_responses");
    if (strcmp(url, "/big") == 0) {
        cJSON_Delete(env);
        size_t n = (size_t)5 << 20;
        char *big = malloc(n);
        CHECK(big != NULL);
        memset(big, ' ', n);
        memcpy(big, "{\"content\":[]}", 14);
        struct MHD_Response *m3 = MHD_create_response_from_buffer(n, big, MHD_RESPMEM_MUST_FREE);
        MHD_add_response_header(m3, "Content-Type", "application/json");
        enum MHD_Result ret3 = MHD_queue_response(conn, 200, m3);
        MHD_destroy_response(m3);
        return ret3;
    }
    if (strcmp(url, "/agent202") == 0) {
        snprintf(out, sizeof(out), "{}");
        cJSON_Delete(env);
        struct MHD_Response *m2 =
            MHD_create_response_from_buffer(strlen(out), out, MHD_RESPMEM_MUST_COPY);
        enum MHD_Result ret2 = MHD_queue_response(conn, 202, m2);
        MHD_destroy_response(m2);
        return ret2;
    }
    if (strcmp(url, "/agent") == 0 && !ir) {
        snprintf(out, sizeof(out),
                 "{\"type\":\"agent_reply\",\"in_reply_to\":\"%s\",\"input_requests\":"
                 "{\"ok\":{\"method\":\"elicitation/create\",\"params\":{\"message\":\"Go?\","
                 "\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}}}",
                 mid ? mid : "");
    } else if (strcmp(url, "/agent") == 0) {
        char *r = cJSON_PrintUnformatted(ir);
        cJSON *reply = cJSON_CreateObject();
        cJSON_AddStringToObject(reply, "type", "agent_reply");
        cJSON_AddStringToObject(reply, "in_reply_to", mid ? mid : "");
        cJSON_AddStringToObject(reply, "text", r ? r : "");
        char *t = cJSON_PrintUnformatted(reply);
        snprintf(out, sizeof(out), "%s", t ? t : "");
        free(t);
        free(r);
        cJSON_Delete(reply);
    } else if (strcmp(url, "/loop") == 0) {
        snprintf(out, sizeof(out), "{\"resultType\":\"input_required\",\"requestState\":\"r\"}");
    } else if (strcmp(url, "/nostate") == 0) {
        snprintf(out, sizeof(out), "{\"resultType\":\"input_required\",\"requestState\":5}");
    } else if (strcmp(url, "/bad") == 0) {
        snprintf(out, sizeof(out),
                 "{\"resultType\":\"input_required\",\"inputRequests\":"
                 "{\"x\":{\"method\":\"tools/list\"}}}");
    } else if (!resp) {
        snprintf(out, sizeof(out),
                 "{\"resultType\":\"input_required\",\"requestState\":\"s1\",\"inputRequests\":"
                 "{\"name\":{\"method\":\"elicitation/create\",\"params\":{\"message\":\"Name?\","
                 "\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
                 "\"string\"}}}}}}}");
    } else {
        char *r = cJSON_PrintUnformatted(resp);
        snprintf(out, sizeof(out),
                 "{\"content\":[{\"type\":\"text\",\"text\":\"state=%s responses=%s\"}]}",
                 rs ? rs : "", r ? "see body" : "");
        free(r);
    }
    cJSON_Delete(env);
    struct MHD_Response *mr =
        MHD_create_response_from_buffer(strlen(out), out, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(mr, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, 200, mr);
    MHD_destroy_response(mr);
    return ret;
}

/* Waits (10 s) until the test service got n POSTs. */
static int wait_posts(int n)
{
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&http_mu);
        int got = http_posts;
        pthread_mutex_unlock(&http_mu);
        if (got >= n)
            return 1;
        fx_sleep_ms(10);
    }
    return 0;
}

/* What the ingress does with an agent's POSTed agent_reply (channels_reply.lua): stored under
 * its message id, then announced. members: the reply's members after type and in_reply_to. */
static void agent_reply_stored(const char *message_id, const char *members)
{
    char reply[1024];
    snprintf(reply, sizeof(reply), "{\"type\":\"agent_reply\",\"in_reply_to\":\"%s\",%s}",
             message_id, members);
    redisReply *r =
        redisCommand(redis, "SET " NAMES_KEY_AGENTREPLY "%s %s NX PX 60000", message_id, reply);
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(redis, "PUBLISH " NAMES_CHAN_AGENTREPLY " %s", message_id);
    freeReplyObject(r);
}

static void test_http_tool(void)
{
    int port = fx_free_port();
    struct MHD_Daemon *d = fx_server_start(port, on_http);
    CHECK(d != NULL);
    char ex[256];
    snprintf(ex, sizeof(ex), "{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/ask\"}", port);
    produce("h-ask", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    cJSON *e = wait_entry(REPLY, "h-ask", "input", 0, 30000);
    CHECK(e != NULL);
    const cJSON *q = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "requests"), "name");
    CHECK_STR_EQ(params_str(q, "message"), "Name?");
    cJSON_Delete(e);
    answer("h-ask", "name", "{\"result\":{\"action\":\"accept\",\"content\":{\"n\":\"Ada\"}}}", 1);
    cJSON *rec = need_result("h-ask");
    CHECK_STR_EQ(result_text(rec), "state=s1 responses=see body");
    cJSON_Delete(rec);
    pthread_mutex_lock(&http_mu);
    cJSON *last = cJSON_Parse(http_last);
    pthread_mutex_unlock(&http_mu);
    char *r = cJSON_PrintUnformatted(cJSON_GetObjectItem(last, "inputResponses"));
    CHECK_STR_EQ(r, "{\"name\":{\"action\":\"accept\",\"content\":{\"n\":\"Ada\"}}}");
    free(r);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(last, "job_id")), "h-ask");
    cJSON_Delete(last);
    TEST_PASS("an HTTP tool answering input_required is called again with inputResponses and "
              "its requestState");

    /* A client that cannot be asked: the service gets the error answer as the response. */
    produce("h-noelicit", ex, CAPS_NONE, REPLY, fx_now_ms() + 60000);
    rec = need_result("h-noelicit");
    cJSON_Delete(rec);
    pthread_mutex_lock(&http_mu);
    last = cJSON_Parse(http_last);
    pthread_mutex_unlock(&http_mu);
    r = cJSON_PrintUnformatted(cJSON_GetObjectItem(last, "inputResponses"));
    CHECK_STR_EQ(r, "{\"name\":{\"error\":{\"code\":-32601,\"message\":\"the client did not "
                    "declare the elicitation capability\"}}}");
    free(r);
    cJSON_Delete(last);
    TEST_PASS("an HTTP tool gets an error answer as {\"error\": ...} in inputResponses");

    snprintf(ex, sizeof(ex), "{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/loop\"}", port);
    pthread_mutex_lock(&http_mu);
    http_posts = 0;
    pthread_mutex_unlock(&http_mu);
    produce("h-loop", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    rec = need_result("h-loop");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "result"), "isError")));
    CHECK_CONTAINS(result_text(rec), "asked for input more than 16 times");
    cJSON_Delete(rec);
    pthread_mutex_lock(&http_mu);
    CHECK_INT_EQ(http_posts, 17);
    pthread_mutex_unlock(&http_mu);
    snprintf(ex, sizeof(ex), "{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/bad\"}", port);
    produce("h-bad", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    rec = need_result("h-bad");
    CHECK_CONTAINS(result_text(rec), "the tool's HTTP service asked an invalid question: request "
                                     "\"x\": method must be");
    cJSON_Delete(rec);
    snprintf(ex, sizeof(ex), "{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/nostate\"}", port);
    produce("h-nostate", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    rec = need_result("h-nostate");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "result"), "isError")));
    CHECK_CONTAINS(result_text(rec), "answered input_required without inputRequests or a string "
                                     "requestState");
    cJSON_Delete(rec);
    CHECK_INT_EQ(count_entries(REPLY, "h-nostate", "input"), 0);
    TEST_PASS("an HTTP tool: at most 16 input rounds; an invalid question is an isError result");

    snprintf(ex, sizeof(ex), "{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/big\"}", port);
    produce("h-big", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    rec = need_result("h-big");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "result"), "isError")));
    CHECK_CONTAINS(result_text(rec), "output too large: the tool answered more than 4194304 bytes");
    cJSON_Delete(rec);
    TEST_PASS("an HTTP tool that answers more than MCPQ_MAX_OUTPUT_BYTES: an isError result");

    snprintf(ex, sizeof(ex), "{\"type\":\"agent\",\"url\":\"http://127.0.0.1:%d/agent\"}", port);
    produce("a-ask", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    cJSON *e2 = wait_entry(REPLY, "a-ask", "input", 0, 30000);
    CHECK(e2 != NULL);
    CHECK_STR_EQ(
        params_str(cJSON_GetObjectItem(cJSON_GetObjectItem(e2, "requests"), "ok"), "message"),
        "Go?");
    cJSON_Delete(e2);
    answer("a-ask", "ok", "{\"result\":{\"action\":\"accept\",\"content\":{}}}", 1);
    rec = need_result("a-ask");
    CHECK_STR_EQ(result_text(rec), "{\"ok\":{\"action\":\"accept\",\"content\":{}}}");
    cJSON_Delete(rec);
    TEST_PASS("an agent replying input_requests: the caller is asked, the agent gets "
              "input_responses in the chat_message again");

    /* The same through the ingress's reply path (202, then the reply stored and announced, as
     * channels_reply.lua does): the question's reply is taken away, so the next one fits. */
    snprintf(ex, sizeof(ex), "{\"type\":\"agent\",\"url\":\"http://127.0.0.1:%d/agent202\"}", port);
    pthread_mutex_lock(&http_mu);
    http_posts = 0;
    pthread_mutex_unlock(&http_mu);
    produce("a-202", ex, CAPS_ELICIT, REPLY, fx_now_ms() + 60000);
    CHECK(wait_posts(1));
    agent_reply_stored("a-202", "\"input_requests\":{\"ok\":{\"method\":\"elicitation/create\","
                                "\"params\":{\"message\":\"Sure?\"}}}");
    e2 = wait_entry(REPLY, "a-202", "input", 0, 30000);
    CHECK(e2 != NULL);
    cJSON_Delete(e2);
    answer("a-202", "ok", "{\"result\":{\"action\":\"decline\"}}", 1);
    CHECK(wait_posts(2));
    CHECK_INT_EQ(exists(NAMES_KEY_AGENTREPLY, "a-202"), 0);
    pthread_mutex_lock(&http_mu);
    CHECK_CONTAINS(http_last, "\"input_responses\":{\"ok\":{\"action\":\"decline\"}}");
    pthread_mutex_unlock(&http_mu);
    agent_reply_stored("a-202", "\"text\":\"declined, fine\"");
    rec = need_result("a-202");
    CHECK_STR_EQ(result_text(rec), "declined, fine");
    cJSON_Delete(rec);
    TEST_PASS("an agent answering 202 asks through its stored reply; it can reply again after");
    MHD_stop_daemon(d);
}

/* The events of acme's webhook deliveries, in order, joined by spaces, into out. */
static const char *wh_events(char *out, size_t size)
{
    out[0] = '\0';
    redisReply *r = redisCommand(redis, "ZRANGE " NAMES_KEY_WH_INDEX "acme 0 -1");
    CHECK(r != NULL);
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *e =
            redisCommand(redis, "HGET " NAMES_KEY_WH_DELIVERY "%s event", r->element[i]->str);
        if (e && e->type == REDIS_REPLY_STRING) {
            size_t n = strlen(out);
            snprintf(out + n, size - n, "%s%s", n ? " " : "", e->str);
        }
        freeReplyObject(e);
    }
    freeReplyObject(r);
    return out;
}

/* How many space-separated words of list are word. */
static int count_words(const char *list, const char *word)
{
    int n = 0;
    size_t wl = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        n += len == wl && strncmp(p, word, wl) == 0;
        p += len;
        p += *p == ' ';
    }
    return n;
}

static const char *task_field(const char *id, const char *field, char *out, size_t size)
{
    redisReply *r = redisCommand(redis, "HGET " NAMES_KEY_TASK "%s %s", id, field);
    CHECK(r != NULL);
    snprintf(out, size, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return out;
}

static void test_task(void)
{
    const char *id = "0b7f6c1e-aaaa-4bbb-8ccc-0123456789ab";
    redisReply *r = redisCommand(
        redis, "HSET " NAMES_KEY_REGISTRY " tenant:acme %s",
        "{\"id\":\"acme\",\"webhooks\":[{\"id\":\"w1\",\"url\":\"http://127.0.0.1:9/h\","
        "\"events\":[\"task.running\",\"task.input_required\",\"task.completed\"]}]}");
    freeReplyObject(r);
    char env[4096];
    snprintf(env, sizeof(env),
             "{\"v\":1,\"job_id\":\"%s\",\"task_id\":\"%s\",\"mode\":\"task\",\"tenant\":\"acme\","
             "\"server\":\"default\",\"tool\":\"confirm\",\"arguments\":{},"
             "\"executor\":{\"type\":\"builtin\",\"name\":\"confirm\"},\"timeout_ms\":60000,"
             "\"created_ms\":%lld,\"deadline_ms\":%lld,\"owner\":\"key:k1\",\"client\":%s}",
             id, id, fx_now_ms(), fx_now_ms() + 60000, CAPS_ELICIT);
    const char *argv[] = {id,  "acme", "default", "confirm", "1", "{}", "",      "50",
                          env, "600",  "60000",   "ext",     "",  "0",  "key:k1"};
    char err[256];
    r = task_script_run(redis, TASK_SCRIPT_CREATE, 15, argv, err, sizeof(err));
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0);
    freeReplyObject(r);
    r = redisCommand(redis, "SADD " NAMES_KEY_TASK "%s" NAMES_SUFFIX_WAITERS " %s", id, REPLY2);
    freeReplyObject(r);
    CHECK_INT_EQ(rd_kafka_producev(
                     producer, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_KEY(id, strlen(id)),
                     RD_KAFKA_V_VALUE(env, strlen(env)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                     RD_KAFKA_V_HEADER("job_id", id, -1), RD_KAFKA_V_END),
                 0);
    CHECK_INT_EQ(rd_kafka_flush(producer, 10000), 0);

    cJSON *e = wait_entry(REPLY2, id, "input", 0, 30000);
    CHECK(e != NULL);
    cJSON_Delete(e);
    char v[1024], ev[512];
    CHECK_STR_EQ(task_field(id, "state", v, sizeof(v)), "running");
    CHECK_STR_EQ(task_field(id, "input_n", v, sizeof(v)), "1");
    CHECK_CONTAINS(task_field(id, "input", v, sizeof(v)), "\"method\":\"elicitation/create\"");
    /* (deliveries made in the same millisecond are in no set order) */
    CHECK_INT_EQ(count_words(wh_events(ev, sizeof(ev)), "task.input_required"), 1);
    CHECK_INT_EQ(count_words(ev, "task.running"), 1);
    CHECK_STR_EQ(ask_field(id, "task", v, sizeof(v)), id);
    answer(id, "q", "{\"result\":{\"action\":\"accept\",\"content\":{\"confirmed\":false}}}", 1);
    long long end = fx_now_ms() + 30000;
    while (fx_now_ms() < end && strcmp(task_field(id, "state", v, sizeof(v)), "complete") != 0)
        fx_sleep_ms(50);
    CHECK_STR_EQ(task_field(id, "state", v, sizeof(v)), "complete");
    CHECK_CONTAINS(task_field(id, "result", v, sizeof(v)), "You said no.");
    CHECK_STR_EQ(task_field(id, "input", v, sizeof(v)), "");
    CHECK_STR_EQ(task_field(id, "input_n", v, sizeof(v)), "");
    CHECK_INT_EQ(count_words(wh_events(ev, sizeof(ev)), "task.input_required"), 1);
    CHECK_INT_EQ(count_words(ev, "task.running"), 2);
    CHECK_INT_EQ(count_words(ev, "task.completed"), 1);
    TEST_PASS("a task that asks: input fields and task.input_required while it waits, the input "
              "entry to its waiters, task.running again once answered");
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
    test_ask_before_answer();
    test_lost_answers();
    test_interactive_io();
    test_three_open();
    test_refused();
    test_not_interactive();
    test_redelivery();
    test_builtins();
    test_http_tool();
    test_task();
    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    rd_kafka_destroy(producer);
    redisFree(redis);
    fx_stop(&fx);
    return 0;
}
