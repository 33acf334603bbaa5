/*
 * Tests ingress/http/pending.c against a real Redis (tests/handlers/harness.h): synthetic
 * calls without a connection wait in the process's table (ing_pending_wait) and are ended
 * by what a worker would write (docs/internals.md, "Reply stream entries"): a result entry,
 * a deadline with and without the durable result, a cancelled entry (JSON: -32800; SSE: the
 * stream ends), progress frames of a streamed call, ing_pending_fail, ing_pending_remove,
 * and a 2025-03-26 batch through ing_mcp_post whose elements wait.
 */
#include "check.h"
#include "harness.h"
#include "names.h"

#include "batch.h"
#include "pending.h"
#include "rpc.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"timeout_ms\": 20000,"
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

#define RECORD(text)                                                                               \
    "{\"job_id\":\"x\",\"status\":\"ok\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":"    \
    "\"" text "\"}]}}"

static hx_t h;

/* A synthetic call of job whose deadline is wait_ms away, in the table and parked. */
static void start(ing_call_t *c, const char *job, int wait_ms, int sse)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->job_id, sizeof(c->job_id), "%s", job);
    snprintf(c->id_json, sizeof(c->id_json), "42");
    snprintf(c->tool, sizeof(c->tool), "echo");
    c->deadline_mono = util_mono_ms() + wait_ms;
    c->log_min = -1;
    c->sse_ok = sse;
    CHECK_INT_EQ(ing_pending_add(h.ctx.pending, c), 0);
    CHECK_INT_EQ(ing_pending_park(h.ctx.pending, c), 1);
}

/* What a worker sends: one entry on this replica's reply stream. */
static void entry(const char *job, const char *kind, const char *data)
{
    redisReply *r =
        hx_redis(&h, "XADD %s * job %s kind %s data %s", h.ctx.reply_key, job, kind, data);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
}

/* Waits for c and takes its JSON answer: the parsed response (caller frees). */
static cJSON *answer(ing_call_t *c, int timeout_ms)
{
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, c, timeout_ms), 1);
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, c), ING_TAKE_JSON);
    CHECK(c->done && c->response);
    cJSON *o = cJSON_Parse(c->response);
    CHECK(o != NULL);
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(o, "id")->valuedouble, 42);
    return o;
}

static int code_of(const cJSON *o)
{
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "error"), "code");
    return cJSON_IsNumber(c) ? (int)c->valuedouble : 0;
}

static const char *text_of(const cJSON *o)
{
    const cJSON *content =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "result"), "content");
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(content, 0), "text"));
}

static void test_result_entry(void)
{
    ing_call_t c;
    start(&c, "hx-job-1", 20000, 0);
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, &c, 200), 0); /* nothing yet */
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, &c), ING_TAKE_WAIT);
    entry("hx-job-other", "result", RECORD("not mine"));
    entry("hx-job-1", "log", "{\"level\":\"info\",\"data\":\"ignored without SSE\"}");
    entry("hx-job-1", "result", RECORD("done"));
    cJSON *o = answer(&c, 5000);
    CHECK_STR_EQ(text_of(o), "done");
    CHECK_INT_EQ(c.outcome, ING_CALL_OK);
    CHECK_INT_EQ(c.timed_out, 0);
    CHECK_INT_EQ(ing_pending_remove(h.ctx.pending, &c), 0); /* completed already */
    cJSON_Delete(o);
    ing_pending_release(&c);

    /* a worker's error record is the call's JSON-RPC error; isError is a tool error */
    start(&c, "hx-job-2", 20000, 0);
    entry("hx-job-2", "result",
          "{\"status\":\"error\",\"error\":{\"code\":-32602,\"message\":\"bad input\"}}");
    o = answer(&c, 5000);
    CHECK_INT_EQ(code_of(o), RPC_INVALID_PARAMS);
    CHECK_INT_EQ(c.outcome, ING_CALL_FAILED);
    cJSON_Delete(o);
    ing_pending_release(&c);
    start(&c, "hx-job-3", 20000, 0);
    entry("hx-job-3", "result", "{\"status\":\"ok\",\"result\":{\"content\":[],\"isError\":true}}");
    o = answer(&c, 5000);
    CHECK_INT_EQ(c.outcome, ING_CALL_TOOL_ERROR);
    cJSON_Delete(o);
    ing_pending_release(&c);
}

/* At the deadline the durable result key is read before -32003 is answered. */
static void test_deadline(void)
{
    ing_call_t c;
    redisReply *r = hx_redis(&h, "SET " NAMES_KEY_RESULT "hx-job-d1 %s", RECORD("durable"));
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    start(&c, "hx-job-d1", 300, 0);
    cJSON *o = answer(&c, 5000);
    CHECK_STR_EQ(text_of(o), "durable");
    CHECK_INT_EQ(c.timed_out, 0);
    CHECK_INT_EQ(c.outcome, ING_CALL_OK);
    cJSON_Delete(o);
    ing_pending_release(&c);

    int64_t t0 = util_mono_ms();
    start(&c, "hx-job-d2", 300, 0);
    o = answer(&c, 5000);
    CHECK(util_mono_ms() - t0 >= 300);
    CHECK_INT_EQ(code_of(o), RPC_REPLY_TIMEOUT);
    CHECK_INT_EQ(c.timed_out, 1);
    CHECK_INT_EQ(c.outcome, ING_CALL_TIMEOUT);
    cJSON_Delete(o);
    ing_pending_release(&c);
}

/* A cancelled entry: -32800 for a JSON answer, an empty ended stream for an SSE one. */
static void test_cancelled(void)
{
    ing_call_t c;
    start(&c, "hx-job-c1", 20000, 0);
    entry("hx-job-c1", "cancelled", "{\"reason\":\"stop\"}");
    cJSON *o = answer(&c, 5000);
    CHECK_INT_EQ(code_of(o), RPC_REQUEST_CANCELLED);
    CHECK_INT_EQ(c.cancelled, 1);
    CHECK_INT_EQ(c.outcome, ING_CALL_CANCELLED);
    cJSON_Delete(o);
    ing_pending_release(&c);

    start(&c, "hx-job-c2", 20000, 1);
    entry("hx-job-c2", "cancelled", "{\"reason\":\"stop\"}");
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, &c, 5000), 1);
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, &c), ING_TAKE_STREAM);
    char *out;
    CHECK_INT_EQ(hx_drain(&h, &c, &out), 1);
    CHECK_STR_EQ(out, ""); /* no response at all */
    CHECK(c.response == NULL);
    free(out);
    ing_pending_release(&c);
}

/* A streamed call: its progress entries are frames before the response, then it ends. */
static void test_stream(void)
{
    ing_call_t c;
    start(&c, "hx-job-s1", 20000, 1);
    snprintf(c.progress_token, sizeof(c.progress_token), "\"tok-1\"");
    entry("hx-job-s1", "progress", "{\"progress\":1,\"total\":3,\"message\":\"step 1\"}");
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, &c, 5000), 1);
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, &c), ING_TAKE_STREAM);
    char *out;
    CHECK_INT_EQ(hx_drain(&h, &c, &out), 0);
    CHECK_CONTAINS(out, "event: message\ndata: ");
    CHECK_CONTAINS(out, "notifications/progress");
    CHECK_CONTAINS(out, "\"progressToken\":\"tok-1\"");
    CHECK_CONTAINS(out, "step 1");
    free(out);
    entry("hx-job-s1", "result", RECORD("streamed"));
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, &c, 5000), 1);
    CHECK_INT_EQ(hx_drain(&h, &c, &out), 1);
    CHECK_CONTAINS(out, "{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":");
    CHECK_CONTAINS(out, "streamed");
    free(out);
    ing_pending_release(&c);
}

/* ing_pending_fail answers with the given error; a removed call is no longer completed. */
static void test_fail_and_remove(void)
{
    ing_call_t c;
    start(&c, "hx-job-f1", 20000, 0);
    ing_pending_fail(h.ctx.pending, "hx-job-f1", RPC_INTERNAL_ERROR, "job queue unavailable");
    cJSON *o = answer(&c, 1000);
    CHECK_INT_EQ(code_of(o), RPC_INTERNAL_ERROR);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(o, "error"), "message")),
                 "job queue unavailable");
    cJSON_Delete(o);
    ing_pending_release(&c);

    size_t before = ing_pending_count(h.ctx.pending);
    start(&c, "hx-job-r1", 20000, 0);
    CHECK_INT_EQ(ing_pending_count(h.ctx.pending), before + 1);
    CHECK_INT_EQ(ing_pending_remove(h.ctx.pending, &c), 1);
    CHECK_INT_EQ(ing_pending_count(h.ctx.pending), before);
    CHECK_INT_EQ(ing_pending_remove(h.ctx.pending, &c), 0);
    /* the stream is read in order: once d has its entry, r1's was seen and went nowhere */
    ing_call_t d;
    start(&d, "hx-job-r2", 20000, 0);
    entry("hx-job-r1", "result", RECORD("too late"));
    entry("hx-job-r2", "result", RECORD("second"));
    cJSON *od = answer(&d, 5000);
    CHECK_STR_EQ(text_of(od), "second");
    cJSON_Delete(od);
    CHECK(!c.done && c.response == NULL); /* the removed call was never completed */
    ing_pending_release(&c);
    ing_pending_release(&d);
}

/* ing_pending_cancel: the reader marks the job cancelled in Redis for the workers. */
static void test_cancel_request(void)
{
    ing_pending_cancel(h.ctx.pending, "hx-job-x1", "client went away");
    redisReply *r = NULL;
    for (int i = 0; i < 300; i++) {
        r = hx_redis(&h, "EXISTS " NAMES_KEY_CANCEL "hx-job-x1");
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            break;
        freeReplyObject(r);
        r = NULL;
        fx_sleep_ms(20);
    }
    CHECK(r != NULL);
    freeReplyObject(r);
}

static const char batch_body[] =
    "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"a\"}}},"
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},"
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"b\"}}}]";

/* A 2025-03-26 batch: its two tools/call elements wait on calls of their own; the array is
 * answered once both are done, in order, with the ping's answer between. */
static void test_batch(void)
{
    const char *hdrs[] = {"MCP-Protocol-Version", "2025-03-26", "Accept", "application/json", NULL};
    hx_ex_t e;
    hx_mcp(&h, &e, NULL, batch_body, hdrs);
    CHECK(e.parked);
    CHECK(e.req.batch != NULL && e.req.batch->n == 3);
    ing_call_t *a = e.req.batch->calls[0], *b = e.req.batch->calls[2];
    CHECK(a && b && e.req.batch->calls[1] == NULL);
    CHECK(a->group == &e.req.call && b->group == &e.req.call);
    entry(b->job_id, "result", RECORD("from b"));
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, &e.req.call, 300), 0); /* a still waits */
    entry(a->job_id, "result", RECORD("from a"));
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 5000), 0);
    CHECK(cJSON_IsArray(e.json));
    CHECK_INT_EQ(cJSON_GetArraySize(e.json), 3);
    CHECK_STR_EQ(text_of(cJSON_GetArrayItem(e.json, 0)), "from a");
    CHECK(
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(e.json, 1), "result")));
    CHECK_STR_EQ(text_of(cJSON_GetArrayItem(e.json, 2)), "from b");
    for (int i = 0; i < 3; i++)
        CHECK_INT_EQ(
            (int)cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(e.json, i), "id")->valuedouble,
            i + 1);
    hx_ex_free(&e);

    /* an element that leaves the table gives its reference back: the batch ends with the
     * other, and the removed element answers -32603 */
    size_t before = ing_pending_count(h.ctx.pending);
    hx_mcp(&h, &e, NULL, batch_body, hdrs);
    CHECK(e.parked);
    a = e.req.batch->calls[0];
    b = e.req.batch->calls[2];
    CHECK_INT_EQ(ing_pending_count(h.ctx.pending), before + 2);
    CHECK_INT_EQ(ing_pending_remove(h.ctx.pending, a), 1);
    CHECK_INT_EQ(ing_pending_count(h.ctx.pending), before + 1);
    entry(a->job_id, "result", RECORD("ignored"));
    entry(b->job_id, "result", RECORD("from b"));
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 5000), 0);
    CHECK_INT_EQ(cJSON_GetArraySize(e.json), 3);
    CHECK_INT_EQ(code_of(cJSON_GetArrayItem(e.json, 0)), RPC_INTERNAL_ERROR);
    CHECK_STR_EQ(text_of(cJSON_GetArrayItem(e.json, 2)), "from b");
    hx_ex_free(&e);
    CHECK_INT_EQ(ing_pending_count(h.ctx.pending), before);

    /* a batch whose elements are all still waiting when its client goes away leaves nothing
     * in the table */
    hx_mcp(&h, &e, NULL, batch_body, hdrs);
    CHECK(e.parked);
    CHECK_INT_EQ(ing_pending_count(h.ctx.pending), before + 2);
    hx_ex_free(&e);
    CHECK_INT_EQ(ing_pending_count(h.ctx.pending), before);
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_result_entry();
    test_deadline();
    test_cancelled();
    test_stream();
    test_fail_and_remove();
    test_cancel_request();
    test_batch();
    hx_stop(&h);
    return 0;
}
