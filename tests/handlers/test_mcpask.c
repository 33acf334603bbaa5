/*
 * Tests ingress/mcp/mcpask.c (with ingress/core/answer.c and the `input` entries of
 * ingress/http/pending.c) against a real Redis and the devbroker (tests/handlers/harness.h):
 * asking a legacy client mid-call (docs/internals.md, "Asking the client"; docs/protocol.md,
 * "Asking the user"). The worker's side is played by the test: it writes the question
 * (`{mcpq}:ask:<job_id>`, as ask_open.lua does) and the `input` entry of the reply stream.
 *   - initialize keeps the client's elicitation/sampling/roots capabilities in the session;
 *     the job envelope carries them as "client", with "owner";
 *   - an `input` entry becomes JSON-RPC requests on a streamed call (a batch element: its
 *     batch's stream); a call without SSE gets every key answered with -32601;
 *   - the client's responses POSTed: accepted (202, stored), another principal or session
 *     (400 input_lost, nothing stored), an answer not matching requestedSchema (400, the tool
 *     gets -32602), another id (202, ignored), a batch of responses;
 *   - malformed answers refused with what is wrong, Redis unreachable (503, Retry-After), and
 *     a question the store's script reads otherwise than the gateway (never stored);
 *   - a stopping replica cancels the job of a call whose question is open.
 */
#include "check.h"
#include "harness.h"
#include "names.h"

#include "answer.h"
#include "batch.h"
#include "err.h"
#include "kv.h"
#include "mcpask.h"
#include "pending.h"
#include "sch.h"
#include "rpc.h"
#include "util.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY2 "mcpq_test_other_key_0123456789abcdef"

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "                                {\"id\": \"k2\", \"key\": \"" KEY2 "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"timeout_ms\": 20000,"
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;

/* The question reqs (JSON text) of job, number n, asked by the test key's caller in session
 * (may be ""), as the worker's ask_open.lua writes it. */
static void question(const char *job, int n, const char *reqs, const char *session)
{
    redisReply *r = hx_redis(&h,
                             "HSET " NAMES_KEY_ASK "%s n %d reqs %s tenant t owner key:k session "
                             "%s worker w1 expires_ms 0",
                             job, n, reqs, session);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    r = hx_redis(&h, "PEXPIRE " NAMES_KEY_ASK "%s 60000", job);
    freeReplyObject(r);
}

/* The answer stored for key of job's question (caller frees), or NULL. */
static cJSON *stored(const char *job, const char *key)
{
    redisReply *r = hx_redis(&h, "HGET " NAMES_KEY_ASK "%s a:%s", job, key);
    CHECK(r != NULL);
    cJSON *o = r->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(r->str, r->len) : NULL;
    freeReplyObject(r);
    return o;
}

/* The member at path of the answer stored for key of job's question is want. */
static void stored_is(const char *job, const char *key, const char *path, const char *want)
{
    cJSON *a = stored(job, key);
    CHECK_STR_EQ(hx_str(&(hx_ex_t){.json = a}, path), want);
    cJSON_Delete(a);
}

/* Polls for the answer of key (up to ms). */
static cJSON *stored_wait(const char *job, const char *key, int ms)
{
    cJSON *o = NULL;
    for (long long until = fx_now_ms() + ms; !(o = stored(job, key)) && fx_now_ms() < until;)
        fx_sleep_ms(20);
    return o;
}

static void entry(const char *job, const char *kind, const char *data)
{
    redisReply *r =
        hx_redis(&h, "XADD %s * job %s kind %s data %s", h.ctx.reply_key, job, kind, data);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
}

/* A synthetic legacy call of job, in the table and parked, with the legacy hook. */
static void start(ing_call_t *c, const char *job, int sse)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->job_id, sizeof(c->job_id), "%s", job);
    snprintf(c->id_json, sizeof(c->id_json), "42");
    snprintf(c->tool, sizeof(c->tool), "echo");
    c->deadline_mono = util_mono_ms() + 20000;
    c->log_min = -1;
    c->sse_ok = sse;
    c->on_input = ing_mcpask_hook_legacy;
    CHECK_INT_EQ(ing_pending_add(h.ctx.pending, c), 0);
    CHECK_INT_EQ(ing_pending_park(h.ctx.pending, c), 1);
}

/* What the streamed call c has to send now (malloc'd); *ended: its stream ended. */
static char *drain(ing_call_t *c, int *ended)
{
    util_buf_t b;
    util_buf_init(&b, 1 << 20);
    char buf[512];
    *ended = 0;
    for (;;) {
        ssize_t n = ing_pending_read(h.ctx.pending, c, buf, sizeof(buf));
        if (n == MHD_CONTENT_READER_END_OF_STREAM) {
            *ended = 1;
            break;
        }
        if (n == 0)
            break;
        CHECK(util_buf_append(&b, buf, (size_t)n) == 0);
    }
    CHECK(util_buf_append(&b, "", 1) == 0);
    return b.data;
}

#define ELICIT                                                                                     \
    "{\"method\":\"elicitation/create\",\"params\":{\"message\":\"Your name?\","                   \
    "\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"    \
    "\"required\":[\"name\"]}}}"
#define SAMPLE                                                                                     \
    "{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],\"maxTokens\":5}}"
#define INPUT(REQS) "{\"n\":1,\"requests\":" REQS ",\"expires_ms\":0}"

/* initialize keeps elicitation, sampling and roots (nothing else) in the session. */
static void test_session_caps(char sid[80])
{
    const char *hdrs[] = {"MCP-Protocol-Version", "2025-06-18", NULL};
    hx_ex_t e;
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
           "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"elicitation\":{},"
           "\"sampling\":{},\"roots\":{\"listChanged\":true},\"experimental\":{\"x\":{}}},"
           "\"clientInfo\":{\"name\":\"hx\",\"version\":\"1\"}}}",
           hdrs);
    CHECK_INT_EQ(e.resp.status, 200);
    snprintf(sid, 80, "%s", e.resp.session_id);
    hx_ex_free(&e);
    redisReply *r = hx_redis(&h, "GET " NAMES_KEY_SESSION "%s", sid);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    cJSON *s = cJSON_Parse(r->str);
    freeReplyObject(r);
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(s, "caps");
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "elicitation")));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "sampling")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(caps, "roots"), "listChanged")));
    CHECK(!cJSON_GetObjectItemCaseSensitive(caps, "experimental"));
    cJSON_Delete(s);
    TEST_PASS("initialize keeps the client's elicitation, sampling and roots in the session");

    /* a session without them has no caps, and logging/setLevel keeps what is there */
    hx_era_rpc(&h, &e, NULL, "2025-06-18", sid, "logging/setLevel", NULL, "{\"level\":\"debug\"}",
               NULL);
    CHECK_INT_EQ(e.resp.status, 200);
    hx_ex_free(&e);
    r = hx_redis(&h, "GET " NAMES_KEY_SESSION "%s", sid);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    CHECK_CONTAINS(r->str, "\"elicitation\":{}");
    freeReplyObject(r);
    TEST_PASS("the session's capabilities survive a logging/setLevel");

    /* declared with more than 1 KiB of details: each kept as {} */
    char body[4096], pad[2000];
    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"elicitation\":{\"pad\":"
             "\"%s\"},\"roots\":{}},\"clientInfo\":{\"name\":\"hx\",\"version\":\"1\"}}}",
             pad);
    hx_mcp(&h, &e, NULL, body, hdrs);
    CHECK_INT_EQ(e.resp.status, 200);
    r = hx_redis(&h, "GET " NAMES_KEY_SESSION "%s", e.resp.session_id);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    CHECK_CONTAINS(r->str, "\"caps\":{\"elicitation\":{},\"roots\":{}}");
    freeReplyObject(r);
    hx_ex_free(&e);
    TEST_PASS("capabilities with more than 1 KiB of details are kept declared, without them");
}

/* The envelope of job_id on the job topic (read from the start by a group of its own;
 * caller frees), or NULL after ms. */
static cJSON *envelope_of(const char *job_id, int ms)
{
    rd_kafka_t *rk = hx_jobs_reader(&h, "test-mcpask-reader");
    cJSON *found = NULL;
    for (long long until = fx_now_ms() + ms; !found && fx_now_ms() < until;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        cJSON *env = m->err ? NULL : cJSON_ParseWithLength(m->payload, m->len);
        const char *j = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "job_id"));
        if (j && strcmp(j, job_id) == 0)
            found = env;
        else
            cJSON_Delete(env);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return found;
}

/* tools/call: the envelope says who called (owner) and what the client can be asked. */
static void test_envelope(const char *sid)
{
    hx_ex_t e;
    hx_era_rpc(&h, &e, NULL, "2025-06-18", sid, "tools/call", NULL,
               "{\"name\":\"echo\",\"arguments\":{}}", NULL);
    CHECK(e.parked);
    cJSON *env = envelope_of(e.req.call.job_id, 20000);
    CHECK(env != NULL);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "owner")), "key:k");
    const cJSON *client = cJSON_GetObjectItemCaseSensitive(env, "client");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(client, "protocol_version")),
                 "2025-06-18");
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(client, "capabilities");
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "elicitation")));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "roots")));
    CHECK(!cJSON_GetObjectItemCaseSensitive(caps, "experimental"));
    char err[256];
    CHECK_INT_EQ(sch_validate(sch_builtin("job.schema.json"), env, "envelope", err, sizeof(err)),
                 0);
    cJSON_Delete(env);
    hx_ex_free(&e);
    TEST_PASS("a legacy tools/call's envelope carries owner and the session's capabilities");

    /* 2026-07-28: the request's own _meta clientCapabilities */
    const char *modern[] = {
        "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo", NULL};
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"echo\",\"arguments\":{},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
           "\"2026-07-28\",\"" ING_MCPASK_META_CAPS "\":{\"sampling\":{},\"tools\":{}}}}}",
           modern);
    CHECK(e.parked);
    env = envelope_of(e.req.call.job_id, 20000);
    CHECK(env != NULL);
    client = cJSON_GetObjectItemCaseSensitive(env, "client");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(client, "protocol_version")),
                 "2026-07-28");
    caps = cJSON_GetObjectItemCaseSensitive(client, "capabilities");
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "sampling")));
    CHECK(!cJSON_GetObjectItemCaseSensitive(caps, "elicitation"));
    CHECK(!cJSON_GetObjectItemCaseSensitive(caps, "tools"));
    cJSON_Delete(env);
    hx_ex_free(&e);
    TEST_PASS("a 2026-07-28 tools/call's envelope carries its _meta clientCapabilities");
}

/* An input entry on a streamed call: one JSON-RPC request per key, ids mcpq-in/<n>/<key>/<job>. */
static void test_input_stream(void)
{
    ing_call_t c;
    start(&c, "hx-ask-s1", 1);
    entry("hx-ask-s1", "input", INPUT("{\"q1\":" ELICIT ",\"q2\":" SAMPLE "}"));
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, &c, 5000), 1);
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, &c), ING_TAKE_STREAM);
    int ended;
    char *out = drain(&c, &ended);
    CHECK_INT_EQ(ended, 0); /* the call keeps waiting for its result */
    CHECK_CONTAINS(out,
                   "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-s1\","
                   "\"method\":\"elicitation/create\",\"params\":{\"message\":\"Your name?\"");
    CHECK_CONTAINS(out, "\"id\":\"mcpq-in/1/q2/hx-ask-s1\",\"method\":\"sampling/createMessage\"");
    free(out);
    CHECK_INT_EQ(c.asking, 1);
    CHECK(!c.done);
    ing_pending_remove(h.ctx.pending, &c);
    ing_pending_release(&c);
    TEST_PASS("an input entry posts one JSON-RPC request per key on the call's SSE stream");
}

/* A call that cannot stream: every key is answered -32601 for the tool; the call waits on. */
static void test_input_unreachable(void)
{
    ing_call_t c;
    question("hx-ask-u1", 1, "{\"q1\":" ELICIT ",\"q2\":" SAMPLE "}", "");
    start(&c, "hx-ask-u1", 0);
    entry("hx-ask-u1", "input", INPUT("{\"q1\":" ELICIT ",\"q2\":" SAMPLE "}"));
    cJSON *a1 = stored_wait("hx-ask-u1", "q1", 5000), *a2 = stored_wait("hx-ask-u1", "q2", 5000);
    CHECK(a1 && a2);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(a1, "error");
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(err, "code")->valuedouble,
                 RPC_METHOD_NOT_FOUND);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message")),
                 "the client cannot be asked on this call (it does not accept text/event-stream)");
    CHECK(cJSON_GetObjectItemCaseSensitive(a2, "error") != NULL);
    cJSON_Delete(a1);
    cJSON_Delete(a2);
    CHECK(!c.done && c.asking == 0);
    ing_pending_remove(h.ctx.pending, &c);
    ing_pending_release(&c);
    TEST_PASS("a question for a call without SSE is answered -32601 for every key");

    /* a call without a hook is unreachable too; a job without a call here is left alone */
    question("hx-ask-u2", 1, "{\"q1\":" ELICIT "}", "");
    start(&c, "hx-ask-u2", 1);
    c.on_input = NULL;
    entry("hx-ask-nobody", "input", INPUT("{\"q1\":" ELICIT "}"));
    entry("hx-ask-u2", "input", INPUT("{\"q1\":" ELICIT "}"));
    a1 = stored_wait("hx-ask-u2", "q1", 5000);
    CHECK(a1 && cJSON_GetObjectItemCaseSensitive(a1, "error"));
    cJSON_Delete(a1);
    ing_pending_remove(h.ctx.pending, &c);
    ing_pending_release(&c);
    TEST_PASS("a call without an input hook cannot be asked: its question is answered with errors");

    /* a tasks/result call only watches its task: the question stays open for the task's
     * other ways to answer */
    question("hx-ask-u3", 1, "{\"q1\":" ELICIT "}", "");
    start(&c, "hx-ask-u3", 0);
    c.task_result = 1;
    entry("hx-ask-u3", "input", INPUT("{\"q1\":" ELICIT "}"));
    ing_call_t later; /* the stream is read in order: once its entry is handled, u3's was */
    question("hx-ask-u4", 1, "{\"q1\":" ELICIT "}", "");
    start(&later, "hx-ask-u4", 0);
    entry("hx-ask-u4", "input", INPUT("{\"q1\":" ELICIT "}"));
    a1 = stored_wait("hx-ask-u4", "q1", 5000);
    CHECK(a1 != NULL);
    cJSON_Delete(a1);
    CHECK(c.input_n == 1);
    CHECK(stored("hx-ask-u3", "q1") == NULL);
    ing_pending_remove(h.ctx.pending, &c);
    ing_pending_release(&c);
    ing_pending_remove(h.ctx.pending, &later);
    ing_pending_release(&later);
    TEST_PASS("a tasks/result call's question is not answered with errors");
}

/* A 2025-03-26 batch element: its requests are frames of the batch's stream. */
static void test_input_batch(void)
{
    const char *hdrs[] = {"MCP-Protocol-Version", "2025-03-26", "Accept",
                          "application/json, text/event-stream", NULL};
    hx_ex_t e;
    hx_mcp(&h, &e, NULL,
           "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
           "\"arguments\":{}}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]",
           hdrs);
    CHECK(e.parked || e.req.batch);
    ing_call_t *a = e.req.batch->calls[0], *g = &e.req.call;
    CHECK(a && a->group == g);
    char job[ING_JOB_ID_LEN];
    snprintf(job, sizeof(job), "%s", a->job_id);
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, g, 5000), 1);
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, g), ING_TAKE_STREAM);
    int ended;
    char *out = drain(g, &ended);
    free(out); /* the ping's answer */
    entry(job, "input", INPUT("{\"confirm\":" ELICIT "}"));
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, g, 5000), 1);
    out = drain(g, &ended);
    char want[200];
    snprintf(want, sizeof(want), "\"id\":\"mcpq-in/1/confirm/%s\"", job);
    CHECK_CONTAINS(out, want);
    CHECK_INT_EQ(ended, 0);
    free(out);
    hx_ex_free(&e);
    TEST_PASS("a batch element's question is posted on its batch's SSE stream");
}

/* POSTs body (a response or a batch) as hdrs' caller; its status. */
static int post(hx_ex_t *e, const char *body, const char *const hdrs[])
{
    hx_mcp(&h, e, NULL, body, hdrs);
    CHECK(!e->parked);
    return e->resp.status;
}

static const char *reason_of(const hx_ex_t *e)
{
    return hx_str(e, "error.data.reason");
}

static void test_answers(void)
{
    hx_ex_t e;
    question("hx-ask-a1", 1, "{\"q1\":" ELICIT ",\"q2\":" SAMPLE "}", "");
    /* another principal of the tenant: as if there were no question */
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a1\",\"result\":{"
                      "\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}",
                      HX_BEARER(KEY2)),
                 400);
    CHECK_STR_EQ(reason_of(&e), "input_lost");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e.json, "id")));
    hx_ex_free(&e);
    CHECK(stored("hx-ask-a1", "q1") == NULL);
    TEST_PASS("a response from another principal is refused 400 input_lost, nothing stored");

    /* an answer that does not match requestedSchema: 400, and the tool gets -32602 */
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a1\",\"result\":{"
                      "\"action\":\"accept\",\"content\":{\"name\":5}}}",
                      NULL),
                 400);
    CHECK_STR_EQ(reason_of(&e), "invalid_answer");
    CHECK_CONTAINS(hx_rpc_message(&e), "does not match the requested schema: content.name");
    hx_ex_free(&e);
    cJSON *a = stored("hx-ask-a1", "q1");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(a, "error");
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(err, "code")->valuedouble, -32602);
    CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message")),
                   ING_ANSWER_SCHEMA_MSG "content.name");
    cJSON_Delete(a);
    TEST_PASS("an accepted elicitation not matching requestedSchema: 400, the tool gets -32602");

    /* the right caller: 202, the answer stored as {"result"} */
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a1\",\"result\":{"
                      "\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}",
                      NULL),
                 202);
    hx_ex_free(&e);
    a = stored("hx-ask-a1", "q1");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "result"),
                                                      "content"),
                     "name")),
                 "Ada");
    cJSON_Delete(a);
    /* an error response is the tool's error answer */
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q2/hx-ask-a1\",\"error\":{"
                      "\"code\":-1,\"message\":\"User rejected sampling request\"}}",
                      NULL),
                 202);
    hx_ex_free(&e);
    stored_is("hx-ask-a1", "q2", "error.message", "User rejected sampling request");
    TEST_PASS(
        "the caller's responses are stored (202): a result, and an error as the tool's error");

    /* another n, a key the question lacks, a malformed id: gone; another id: 202 as before */
    const char *gone[] = {"mcpq-in/2/q1/hx-ask-a1", "mcpq-in/1/zz/hx-ask-a1", "mcpq-in/x",
                          "mcpq-in/1/q1/hx-ask-none"};
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        char body[300];
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"cancel\"}}", gone[i]);
        CHECK_INT_EQ(post(&e, body, NULL), 400);
        CHECK_STR_EQ(reason_of(&e), "input_lost");
        hx_ex_free(&e);
    }
    CHECK_INT_EQ(post(&e, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", NULL), 202);
    CHECK(e.resp.body == NULL);
    hx_ex_free(&e);
    TEST_PASS("a response to no open question is 400 input_lost; one with another id is 202");

    /* the question's session must be the caller's */
    question("hx-ask-a2", 1, "{\"q1\":" ELICIT "}", "s_0123456789abcdef");
    const char *other_sid[] = {"Mcp-Session-Id", "s_fedcba9876543210", NULL};
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a2\",\"result\":{"
                      "\"action\":\"decline\"}}",
                      other_sid),
                 400);
    CHECK_STR_EQ(reason_of(&e), "input_lost");
    hx_ex_free(&e);
    CHECK(stored("hx-ask-a2", "q1") == NULL);
    const char *sid[] = {"Mcp-Session-Id", "s_0123456789abcdef", NULL};
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a2\",\"result\":{"
                      "\"action\":\"decline\"}}",
                      sid),
                 202);
    hx_ex_free(&e);
    a = stored("hx-ask-a2", "q1");
    CHECK(a != NULL);
    cJSON_Delete(a);
    TEST_PASS("a question asked in a session is answered only with that Mcp-Session-Id");

    /* a 2025-03-26 batch of responses */
    question("hx-ask-a3", 1, "{\"q1\":" ELICIT ",\"q2\":" SAMPLE "}", "");
    const char *v0325[] = {"MCP-Protocol-Version", "2025-03-26", NULL};
    CHECK_INT_EQ(post(&e,
                      "[{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a3\",\"result\":{"
                      "\"action\":\"accept\",\"content\":{\"name\":\"Bo\"}}},"
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q2/hx-ask-a3\",\"result\":{"
                      "\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"hi\"},"
                      "\"model\":\"m\"}}]",
                      v0325),
                 202);
    hx_ex_free(&e);
    cJSON *a1 = stored("hx-ask-a3", "q1"), *a2 = stored("hx-ask-a3", "q2");
    CHECK(a1 && a2);
    cJSON_Delete(a1);
    cJSON_Delete(a2);
    TEST_PASS("a batch of responses answers every key it names (202)");

    /* a batch of a request and an answer: the request is answered, the answer taken */
    question("hx-ask-a4", 1, "{\"q1\":" ELICIT "}", "");
    hx_mcp(&h, &e, NULL,
           "[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"},"
           "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a4\",\"result\":{"
           "\"action\":\"decline\"}}]",
           (const char *const[]){"MCP-Protocol-Version", "2025-03-26", "Accept", "application/json",
                                 NULL});
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_INT_EQ(cJSON_GetArraySize(e.json), 1);
    hx_ex_free(&e);
    a1 = stored("hx-ask-a4", "q1");
    CHECK(a1 != NULL);
    cJSON_Delete(a1);
    TEST_PASS("an answer inside a batch with requests is taken; the requests are answered");

    /* larger than MCPQ_INPUT_MAX_BYTES: 413, nothing stored */
    question("hx-ask-a5", 1, "{\"q1\":" ELICIT "}", "");
    long long max = h.set.input_max_bytes;
    h.set.input_max_bytes = 64;
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-a5\",\"result\":{"
                      "\"action\":\"accept\",\"content\":{\"name\":\"a long enough name\"}}}",
                      NULL),
                 413);
    CHECK_CONTAINS(hx_rpc_message(&e), "MCPQ_INPUT_MAX_BYTES");
    hx_ex_free(&e);
    h.set.input_max_bytes = max;
    CHECK(stored("hx-ask-a5", "q1") == NULL);
    TEST_PASS("an answer larger than MCPQ_INPUT_MAX_BYTES is refused 413");
}

/* ing_answer_submit's own contract: open_out, reply_to, and the gateway's answers. */
static void test_submit(void)
{
    question("hx-ask-b1", 1, "{\"q1\":" ELICIT ",\"q2\":" SAMPLE "}", "");
    ing_answer_who_t who = {.tenant = "t", .owner = "key:k", .session = NULL};
    cJSON *ans = cJSON_Parse("{\"q2\":{\"result\":{\"model\":\"m\"}}}");
    cJSON *open = NULL;
    char err[256];
    CHECK_INT_EQ(ing_answer_submit(h.ctx.kv, "hx-ask-b1", 0, &who, ans, NAMES_KEY_REPLY "elsewhere",
                                   &open, err, sizeof(err)),
                 ING_ANSWER_OK);
    CHECK(cJSON_GetObjectItemCaseSensitive(open, "q1") &&
          !cJSON_GetObjectItemCaseSensitive(open, "q2"));
    cJSON_Delete(open);
    cJSON_Delete(ans);
    redisReply *r = hx_redis(&h, "HGET " NAMES_KEY_ASK "hx-ask-b1 reply_to");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    CHECK_STR_EQ(r->str, NAMES_KEY_REPLY "elsewhere");
    freeReplyObject(r);
    ans = cJSON_Parse("{\"q1\":{\"result\":{\"action\":\"accept\",\"content\":{}}}}");
    CHECK_INT_EQ(
        ing_answer_submit(h.ctx.kv, "hx-ask-b1", 1, &who, ans, NULL, &open, err, sizeof(err)),
        ING_ANSWER_INVALID);
    CHECK_CONTAINS(err, "content: missing required property \"name\"");
    cJSON_Delete(ans);
    ans = cJSON_Parse("{\"q1\":{\"result\":\"yes\"}}");
    CHECK_INT_EQ(
        ing_answer_submit(h.ctx.kv, "hx-ask-b1", 1, &who, ans, NULL, NULL, err, sizeof(err)),
        ING_ANSWER_INVALID);
    cJSON_Delete(ans);
    ans = cJSON_Parse("{\"q1\":{\"result\":{\"action\":\"decline\"}}}");
    CHECK_INT_EQ(
        ing_answer_submit(h.ctx.kv, "hx-ask-b1", 1, &who, ans, NULL, &open, err, sizeof(err)),
        ING_ANSWER_OK);
    CHECK(open && open->child == NULL); /* complete */
    cJSON_Delete(open);
    cJSON_Delete(ans);
    TEST_PASS("ing_answer_submit: what is still open, reply_to moved, malformed answers refused");
}

/* Malformed answers, a question of the wrong shape, and Redis gone: what the client sees. */
static void test_submit_errors(void)
{
    question("hx-ask-c1", 1,
             "{\"q1\":" ELICIT ",\"u1\":{\"method\":\"elicitation/create\",\"params\":{"
             "\"mode\":\"url\",\"message\":\"m\",\"url\":\"https://example.com/x\","
             "\"elicitationId\":\"e1\"}}}",
             "");
    ing_answer_who_t who = {.tenant = "t", .owner = "key:k", .session = NULL};
    char err[256];
    struct {
        const char *answers, *says;
    } bad[] = {
        {"[1]", "answers must be an object of at most 64 requests"},
        {"{\"q1\":{\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}}",
         "answer q1: expected an object with either \"result\" or \"error\""},
        {"{\"q1\":{}}", "answer q1: expected an object with either \"result\" or \"error\""},
        {"{\"q1\":{\"error\":{\"code\":1.5,\"message\":\"m\"}}}",
         "answer q1: error must hold an integer code and a string message"},
        {"{\"q1\":{\"error\":{\"code\":1}}}",
         "answer q1: error must hold an integer code and a string message"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *ans = cJSON_Parse(bad[i].answers);
        CHECK(ans != NULL);
        CHECK_INT_EQ(
            ing_answer_submit(h.ctx.kv, "hx-ask-c1", 1, &who, ans, NULL, NULL, err, sizeof(err)),
            ING_ANSWER_INVALID);
        CHECK_STR_EQ(err, bad[i].says);
        cJSON_Delete(ans);
    }
    CHECK(stored("hx-ask-c1", "q1") == NULL);
    /* a URL-mode elicitation has no requestedSchema: any accepted content is stored */
    cJSON *ans = cJSON_Parse("{\"u1\":{\"result\":{\"action\":\"accept\"}}}");
    CHECK_INT_EQ(
        ing_answer_submit(h.ctx.kv, "hx-ask-c1", 1, &who, ans, NULL, NULL, err, sizeof(err)),
        ING_ANSWER_OK);
    cJSON_Delete(ans);
    stored_is("hx-ask-c1", "u1", "result.action", "accept");
    TEST_PASS("malformed answers are refused with what is wrong; a URL-mode accept is stored");

    ans = cJSON_Parse("{\"q1\":{\"result\":{}}}");
    /* Redis unreachable: unavailable */
    kv_target_t *t;
    kv_pool_t *dead = hx_dead_kv(&h, &t);
    CHECK_INT_EQ(ing_answer_submit(dead, "hx-ask-c1", 1, &who, ans, NULL, NULL, err, sizeof(err)),
                 MCPQ_EUNAVAIL);
    cJSON_Delete(ans);
    TEST_PASS("ing_answer_submit with Redis unreachable: unavailable");

    /* ids that are not ours in shape; an error response's data; another response in a batch */
    hx_ex_t e;
    const char *notours[] = {
        "mcpq-in/1/q!/hx-ask-c1", "mcpq-in/1//hx-ask-c1", "mcpq-in/0/q1/hx-ask-c1",
        "mcpq-in/1/"
        "k12345678901234567890123456789012345678901234567890123456789012345/hx-ask-c1"};
    for (size_t i = 0; i < sizeof(notours) / sizeof(notours[0]); i++) {
        char body[300];
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"cancel\"}}",
                 notours[i]);
        CHECK_INT_EQ(post(&e, body, NULL), 400);
        CHECK_STR_EQ(reason_of(&e), "input_lost");
        CHECK_CONTAINS(hx_rpc_message(&e), "no question of this gateway has the id mcpq-in/");
        hx_ex_free(&e);
    }
    question("hx-ask-c3", 1, "{\"q1\":" ELICIT ",\"q2\":" SAMPLE "}", "");
    const char *v0325[] = {"MCP-Protocol-Version", "2025-03-26", NULL};
    CHECK_INT_EQ(post(&e,
                      "[{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}},"
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q2/hx-ask-c3\",\"error\":{"
                      "\"code\":-2,\"message\":\"no model\",\"data\":{\"why\":\"quota\"}}}]",
                      v0325),
                 202);
    hx_ex_free(&e);
    stored_is("hx-ask-c3", "q2", "error.data.why", "quota");
    TEST_PASS("ids of another shape are input_lost; an error's data reaches the tool");

    /* Redis unreachable while the client answers: 503 with Retry-After, try again */
    kv_pool_t *live = h.ctx.kv;
    h.ctx.kv = dead;
    CHECK_INT_EQ(post(&e,
                      "{\"jsonrpc\":\"2.0\",\"id\":\"mcpq-in/1/q1/hx-ask-c3\",\"result\":{"
                      "\"action\":\"decline\"}}",
                      NULL),
                 503);
    h.ctx.kv = live;
    CHECK_INT_EQ(e.resp.retry_after_s, 1);
    CHECK_CONTAINS(hx_rpc_message(&e), "answer store (Redis) unavailable");
    hx_ex_free(&e);
    CHECK(stored("hx-ask-c3", "q1") == NULL);
    kv_pool_free(dead);
    kv_target_free(t);
    TEST_PASS("an answer while Redis is unreachable: 503, Retry-After 1, nothing stored");
}

/* A question the gateway reads one way and the store's script another: never stored. */
static void test_store_disagrees(void)
{
    ing_answer_who_t who = {.tenant = "t", .owner = "key:k", .session = NULL};
    char err[256];
    cJSON *ans = cJSON_Parse("{\"q1\":{\"result\":{\"action\":\"decline\"}}}");
    /* n "01": 1 to the gateway, not "1" to the script: gone */
    redisReply *r = hx_redis(&h,
                             "HSET " NAMES_KEY_ASK "hx-ask-e1 n 01 reqs %s tenant t owner key:k "
                             "session %s",
                             "{\"q1\":" ELICIT "}", "");
    freeReplyObject(r);
    CHECK_INT_EQ(
        ing_answer_submit(h.ctx.kv, "hx-ask-e1", 1, &who, ans, NULL, NULL, err, sizeof(err)),
        ING_ANSWER_GONE);
    CHECK(stored("hx-ask-e1", "q1") == NULL);
    /* requests with trailing text: the script cannot decode them: unavailable, nothing stored */
    question("hx-ask-e2", 1, "{\"q1\":" ELICIT "} trailing", "");
    CHECK_INT_EQ(
        ing_answer_submit(h.ctx.kv, "hx-ask-e2", 1, &who, ans, NULL, NULL, err, sizeof(err)),
        MCPQ_EUNAVAIL);
    CHECK(stored("hx-ask-e2", "q1") == NULL);
    cJSON_Delete(ans);
    /* a request key with a NUL: "q1" to the gateway, "q1\0x" to the script: no such request */
    question("hx-ask-e3", 1, "{\"q1\\u0000x\":" ELICIT "}", "");
    ans = cJSON_Parse("{\"q1\":{\"result\":{\"action\":\"decline\"}}}");
    CHECK_INT_EQ(
        ing_answer_submit(h.ctx.kv, "hx-ask-e3", 1, &who, ans, NULL, NULL, err, sizeof(err)),
        ING_ANSWER_INVALID);
    CHECK_STR_EQ(err, "no request q1 in the question");
    CHECK(stored("hx-ask-e3", "q1") == NULL);
    cJSON_Delete(ans);
    TEST_PASS("a question the store reads otherwise (n 01, trailing text, a NUL key): not stored");
}

/* A stopping replica cancels the job of each call whose question is still open. */
static void test_stop_asking(void)
{
    ing_call_t c, d;
    question("hx-ask-d1", 1, "{\"q1\":" ELICIT "}", "");
    start(&c, "hx-ask-d1", 1);
    start(&d, "hx-ask-d2", 1); /* asked, but its question was answered meanwhile */
    entry("hx-ask-d1", "input", INPUT("{\"q1\":" ELICIT "}"));
    entry("hx-ask-d2", "input", INPUT("{\"q1\":" ELICIT "}"));
    for (long long until = fx_now_ms() + 5000; !(c.asking && d.asking) && fx_now_ms() < until;)
        fx_sleep_ms(20);
    CHECK(c.asking && d.asking);
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, &c), ING_TAKE_STREAM);
    int ended;
    free(drain(&c, &ended));
    const char *reason = "the gateway replica holding the call stopped while the tool waited "
                         "for the client's answer";
    CHECK_INT_EQ((int)ing_pending_stop_asking(h.ctx.pending, reason), 1);
    CHECK(c.done && !d.done);
    char *out = drain(&c, &ended);
    CHECK_INT_EQ(ended, 1);
    CHECK_CONTAINS(out, "\"error\":{\"code\":-32603,\"message\":\"the gateway replica holding");
    free(out);
    redisReply *r = hx_redis(&h, "GET " NAMES_KEY_CANCEL "hx-ask-d1");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    CHECK_CONTAINS(r->str, "stopped while the tool waited");
    freeReplyObject(r);
    r = hx_redis(&h, "EXISTS " NAMES_KEY_CANCEL "hx-ask-d2");
    CHECK(r && r->integer == 0);
    freeReplyObject(r);
    TEST_PASS("stopping: a call with an open question ends -32603 and its job is cancelled");

    /* from now on, a question ends its call the same way */
    entry("hx-ask-d2", "input", "{\"n\":2,\"requests\":{\"q1\":" ELICIT "},\"expires_ms\":0}");
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, &d, 5000), 1);
    for (long long until = fx_now_ms() + 5000; !d.done && fx_now_ms() < until;)
        fx_sleep_ms(20);
    CHECK(d.done);
    for (long long until = fx_now_ms() + 5000; fx_now_ms() < until; fx_sleep_ms(20)) {
        r = hx_redis(&h, "EXISTS " NAMES_KEY_CANCEL "hx-ask-d2");
        int there = r && r->integer == 1;
        freeReplyObject(r);
        if (there)
            break;
    }
    r = hx_redis(&h, "EXISTS " NAMES_KEY_CANCEL "hx-ask-d2");
    CHECK(r && r->integer == 1);
    freeReplyObject(r);
    ing_pending_release(&c);
    ing_pending_release(&d);
    TEST_PASS("stopping: a question that arrives later ends its call and cancels its job");
}

int main(void)
{
    hx_start(&h, config, NULL);
    char sid[80];
    test_session_caps(sid);
    test_envelope(sid);
    test_input_stream();
    test_input_unreachable();
    test_input_batch();
    test_answers();
    test_submit();
    test_submit_errors();
    test_store_disagrees();
    test_stop_asking(); /* last: the table stays stopping */
    hx_stop(&h);
    return TEST_EXIT();
}
