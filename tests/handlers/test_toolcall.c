/*
 * Tests ingress/mcp/toolcall.c: tools/call driven through ing_mcp_post with synthetic
 * requests, every error path a client can reach, the task answers and a call that waits
 * for a real worker (tests/handlers/harness.h).
 */
#include "check.h"
#include "harness.h"

#include "idem.h"
#include "mq.h"
#include "names.h"
#include "pending.h"
#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_B "key-b-0123456789"

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "   {\"id\": \"k-b\", \"key\": \"" KEY_B "\", \"scopes\": [\"tasks:all\"]}],"
    "   \"quotas\": {\"tasks\": 2}},"
    "  {\"id\": \"other\", \"api_keys\": [{\"id\": \"k2\", \"key\": \"other-key-0123456\"}],"
    "   \"robots\": [\"robot-of-other\"]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"
    "  {\"tenant\": \"other\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"timeout_ms\": 20000,"
    "    \"inputSchema\": {\"type\": \"object\", \"required\": [\"text\"],"
    "     \"properties\": {\"text\": {\"type\": \"string\", \"x-mcp-header\": \"Text\"}}},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"shaped\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\","
    "     \"properties\": {\"kind\": {\"enum\": [\"a\", \"b\"]}},"
    "     \"if\": {\"properties\": {\"kind\": {\"const\": \"a\"}}},"
    "     \"then\": {\"required\": [\"x\"], \"properties\": {\"x\": {\"multipleOf\": 0.5}}},"
    "     \"unevaluatedProperties\": false},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"quick\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"timeout_ms\": 1000,"
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"fake\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"fake\": {\"enabled\": true, \"result\": {\"content\": [{\"type\": \"text\","
    "     \"text\": \"canned\"}]}},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"nap\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"timeout_ms\": 20000,"
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"sleep\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"other\", \"server\": \"default\", \"name\": \"report\","
    "   \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"other\", \"server\": \"default\", \"name\": \"echo\","
    "   \"published\": \"1\", \"versions\": [{\"version\": \"1\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;

/* tools/call of name with the params' remaining members (JSON text after "name"). */
static void call(hx_ex_t *e, const char *params, const char *const headers[])
{
    char body[4096];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":%s}", params);
    hx_mcp(&h, e, NULL, body, headers);
}

/* Expects the JSON-RPC error code with HTTP status and a message containing text. */
static void expect_error(const char *params, int status, int code, const char *text)
{
    hx_ex_t e;
    call(&e, params, NULL);
    CHECK(!e.parked);
    CHECK_INT_EQ(e.resp.status, status);
    CHECK_INT_EQ(hx_rpc_code(&e), code);
    CHECK_CONTAINS(hx_rpc_message(&e), text);
    hx_ex_free(&e);
}

static void test_params(void)
{
    expect_error("{\"name\":5}", 200, RPC_INVALID_PARAMS, "params.name must be a string");
    expect_error("{\"name\":\"echo\",\"arguments\":[1]}", 200, RPC_INVALID_PARAMS,
                 "params.arguments must be an object");
    expect_error("{\"name\":\"echo\",\"arguments\":{},\"_meta\":{\"progressToken\":{}}}", 200,
                 RPC_INVALID_PARAMS, "params._meta.progressToken must be a string");
    expect_error("{\"name\":\"nope\",\"arguments\":{}}", 200, RPC_INVALID_PARAMS,
                 "Unknown tool: nope");
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"idempotency_key\":\"\"}}", 200,
                 RPC_INVALID_PARAMS, "idempotency_key must be a string of 1 to 255 bytes");
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"idempotency_key\":5}}", 200,
                 RPC_INVALID_PARAMS, "idempotency_key must be a string");
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"channel_id\":\"c_nope\"}}",
                 200, RPC_INVALID_PARAMS, "Unknown channel_id");
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"channel_id\":3}}", 200,
                 RPC_INVALID_PARAMS, "Unknown channel_id");
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"attachments\":{}}}", 200,
                 RPC_INVALID_PARAMS, "attachments must be an array");
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"attachments\":"
                 "[{\"file_id\":\"f_0123456789abcdef0123456789abcdef\"}]}}",
                 200, RPC_INVALID_PARAMS, "attachments[0]");
}

/* Arguments that fail the tool's inputSchema are a tool error, not a protocol error. */
static void test_schema(void)
{
    hx_ex_t e;
    call(&e, "{\"name\":\"echo\",\"arguments\":{\"text\":5}}", NULL);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    const cJSON *r = hx_rpc_result(&e);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "isError")));
    const cJSON *block = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "content"), 0);
    CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "text")),
                   "Invalid arguments for tool echo");
    hx_ex_free(&e);
}

/* The tool error a call of tool name with arguments args gets: its text contains text. */
static void expect_tool_error(const char *name, const char *args, const char *text)
{
    hx_ex_t e;
    char params[512];
    snprintf(params, sizeof(params), "{\"name\":\"%s\",\"arguments\":%s}", name, args);
    call(&e, params, NULL);
    CHECK(!e.parked);
    const cJSON *r = hx_rpc_result(&e);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "isError")));
    const cJSON *block = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "content"), 0);
    CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "text")), text);
    hx_ex_free(&e);
}

/* A JSON Schema 2020-12 inputSchema (if/then, multipleOf, unevaluatedProperties), compiled
 * with the registry snapshot, checks tools/call arguments. */
static void test_schema_2020(void)
{
    expect_tool_error("shaped", "{\"kind\":\"a\",\"x\":0.75}",
                      "Invalid arguments for tool shaped: arguments.x: must be a multiple of 0.5 "
                      "(multipleOf)");
    expect_tool_error("shaped", "{\"kind\":\"a\"}", "arguments: missing required property \"x\"");
    /* kind b: "then" does not apply, so nothing evaluates x */
    expect_tool_error("shaped", "{\"kind\":\"b\",\"x\":1}",
                      "arguments: unknown property \"x\" (unevaluatedProperties)");
}

static void test_fake(void)
{
    hx_ex_t e;
    call(&e, "{\"name\":\"fake\",\"arguments\":{}}", NULL);
    CHECK(!e.parked);
    const cJSON *block =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "content"), 0);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "text")), "canned");
    hx_ex_free(&e);
}

/* 2026-07-28: Mcp-Name and the Mcp-Param-* header a schema declares must match the body. */
static void test_modern_headers(void)
{
    const char *params = "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"},"
                         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}";
    const char *wrong[] = {"MCP-Protocol-Version", "2026-07-28", "Mcp-Method",
                           "tools/call",           "Mcp-Name",   "echo",
                           "Mcp-Param-Text",       "bye",        NULL};
    hx_ex_t e;
    call(&e, params, wrong);
    CHECK_INT_EQ(e.resp.status, 400);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_HEADER_MISMATCH);
    CHECK_CONTAINS(hx_rpc_message(&e), "Mcp-Param-Text");
    hx_ex_free(&e);
    const char *no_name[] = {"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
                             NULL};
    call(&e, params, no_name);
    CHECK_INT_EQ(e.resp.status, 400);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_HEADER_MISMATCH);
    CHECK_CONTAINS(hx_rpc_message(&e), "Mcp-Name");
    hx_ex_free(&e);
}

/* A task-mode tool answers at once with the task; its routing arguments are checked. */
static void test_tasks(void)
{
    expect_error("{\"name\":\"report\",\"arguments\":{\"RobotId\":\"bad robot!\"}}", 200,
                 RPC_INVALID_PARAMS, "arguments.RobotId must be");
    expect_error("{\"name\":\"report\",\"arguments\":{\"TaskPriority\":101}}", 200,
                 RPC_INVALID_PARAMS, "TaskPriority must be an integer from 0 to 100");
    expect_error("{\"name\":\"report\",\"arguments\":{\"RobotId\":\"robot-of-other\"}}", 200,
                 RPC_INVALID_PARAMS, "is reserved for the tenant that declares it");
    hx_ex_t e;
    for (int i = 0; i < 2; i++) {
        call(&e, "{\"name\":\"report\",\"arguments\":{}}", NULL);
        CHECK(!e.parked);
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
        CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskStatus")),
                     "waiting");
        CHECK(strlen(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId"))) == 36);
        hx_ex_free(&e);
    }
    /* quotas.tasks is 2: the third task is refused with the quota error */
    call(&e, "{\"name\":\"report\",\"arguments\":{}}", NULL);
    CHECK_INT_EQ(e.resp.status, 429);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_RATE_LIMITED);
    hx_ex_free(&e);
}

/* A call waits for a real worker; an idempotent repeat is answered from the stored record;
 * the same key with other arguments is refused. */
static void test_publish_and_idempotency(void)
{
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w1", env);
    CHECK(w > 0);
    const char *params =
        "{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\",\"idempotency_key\":\"k-1\"}}";
    hx_ex_t e;
    call(&e, params, NULL);
    CHECK(e.parked);
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
    char *first = cJSON_PrintUnformatted(hx_rpc_result(&e));
    CHECK(first != NULL);
    CHECK_CONTAINS(first, "hello");
    hx_ex_free(&e);
    call(&e, params, NULL); /* the repeat: answered at once, the same result */
    CHECK(!e.parked);
    char *again = cJSON_PrintUnformatted(hx_rpc_result(&e));
    CHECK_STR_EQ(again, first);
    hx_ex_free(&e);
    free(first);
    free(again);
    expect_error(
        "{\"name\":\"echo\",\"arguments\":{\"text\":\"other\",\"idempotency_key\":\"k-1\"}}", 200,
        RPC_INVALID_PARAMS, "idempotency_key was already used");
    /* Another principal of the tenant (even one holding tasks:all) never gets the first
     * answer: the key is in use by someone else, with the same arguments or others alike
     * (docs/security.md "Ownership model"). */
    static const char *const as_b[] = {"Authorization", "Bearer " KEY_B, NULL};
    const char *others[] = {params, "{\"name\":\"echo\",\"arguments\":{\"text\":\"other\","
                                    "\"idempotency_key\":\"k-1\"}}"};
    char *answers[2];
    for (int i = 0; i < 2; i++) {
        call(&e, others[i], as_b);
        CHECK(!e.parked);
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
        CHECK_STR_EQ(hx_rpc_message(&e), "idempotency_key is in use by another caller of this "
                                         "tool; use another key");
        CHECK(strstr(e.resp.body, "hello") == NULL);
        answers[i] = strdup(e.resp.body);
        hx_ex_free(&e);
    }
    CHECK_STR_EQ(answers[0], answers[1]);
    free(answers[0]);
    free(answers[1]);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
}

/* A job that waited in the queue past its deadline (no worker ran, as during a rebalance after
 * a worker died) ends with -32003 and never runs; a repeat with the same idempotency_key then
 * runs the tool afresh instead of replaying that timeout (docs/internals.md "Result record").
 */
static void test_idempotent_repeat_after_expiry(void)
{
    const char *params = "{\"name\":\"quick\",\"arguments\":{\"text\":\"late\","
                         "\"idempotency_key\":\"k-expired\"}}";
    hx_ex_t e;
    call(&e, params, NULL); /* no worker runs: the wait ends at the tool's 1 s deadline */
    CHECK(e.parked);
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 10000), 0);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_REPLY_TIMEOUT);
    hx_ex_free(&e);
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w-late", env);
    CHECK(w > 0);
    /* the worker drops the expired job unrun and writes its record ("ran": false) */
    int seen = 0;
    for (int i = 0; i < 200 && !seen; i++) {
        redisReply *r = hx_redis(&h, "KEYS %s*", NAMES_KEY_RESULT);
        for (size_t k = 0; r && k < r->elements; k++) {
            redisReply *v = hx_redis(&h, "GET %s", r->element[k]->str);
            seen |= v && v->type == REDIS_REPLY_STRING && strstr(v->str, "\"ran\":false");
            freeReplyObject(v);
        }
        freeReplyObject(r);
        if (!seen)
            usleep(50 * 1000);
    }
    CHECK(seen);
    call(&e, params, NULL); /* the repeat runs the tool now */
    CHECK(e.parked);
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
    char *res = cJSON_PrintUnformatted(hx_rpc_result(&e));
    CHECK(res != NULL);
    CHECK_CONTAINS(res, "late");
    free(res);
    hx_ex_free(&e);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
}

/* tools/call as tenant "other" (no task quota) with MCP-Protocol-Version version: answered at
 * once. */
static void call_other(hx_ex_t *e, const char *params, const char *version)
{
    const char *hdrs[] = {"Authorization", "Bearer other-key-0123456", "MCP-Protocol-Version",
                          version, NULL};
    call(e, params, hdrs);
    CHECK(!e->parked);
}

/* Waits (at most 20 s) until task id is in state; 1 when it is. */
static int task_reaches(const char *id, const char *state)
{
    int in = 0;
    for (int t = 0; t < 400 && !in; t++) {
        redisReply *r = hx_redis(&h, "HGET %s%s state", NAMES_KEY_TASK, id);
        in = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, state) == 0;
        freeReplyObject(r);
        if (!in)
            fx_sleep_ms(50);
    }
    return in;
}

/* The task id a task answer names: structuredContent.TaskId (task-mode tool) or
 * task.taskId (2025-11-25 params.task); "" when the answer names none. */
static const char *named_task(const hx_ex_t *e)
{
    const cJSON *r = hx_rpc_result(e);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r, "structuredContent"), "TaskId"));
    if (!id)
        id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r, "task"), "taskId"));
    return id ? id : "";
}

/* A repeat of an idempotent call that became a task names the same task, also once the task
 * has ended and its result is stored (the result is read with tasks/result); a repeat that
 * cannot read the task from Redis is -32603 "try again", never another answer. Both task
 * surfaces: a task-mode tool, and a 2025-11-25 client's params.task. Tenant "other": no task
 * quota. */
static void test_task_repeat_after_end(void)
{
    static const struct {
        const char *params, *version;
    } calls[] = {
        {"{\"name\":\"report\",\"arguments\":{\"n\":1,\"idempotency_key\":\"k-task-end\"}}",
         "2025-06-18"},
        {"{\"name\":\"echo\",\"arguments\":{\"text\":\"t\",\"idempotency_key\":\"k-hint-end\"},"
         "\"task\":{}}",
         "2025-11-25"},
    };
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w-tasks", env);
    CHECK(w > 0);
    char ids[2][64];
    for (size_t i = 0; i < 2; i++) {
        hx_ex_t e;
        call_other(&e, calls[i].params, calls[i].version);
        snprintf(ids[i], sizeof(ids[i]), "%s", named_task(&e));
        CHECK_INT_EQ((int)strlen(ids[i]), 36);
        hx_ex_free(&e);
        /* the worker runs it to its end: the task's result record is stored */
        CHECK(task_reaches(ids[i], "complete"));
        call_other(&e, calls[i].params, calls[i].version);
        CHECK_INT_EQ(hx_rpc_code(&e), 0);
        CHECK_STR_EQ(named_task(&e), ids[i]);
        hx_ex_free(&e);
    }
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    /* Redis takes the claim but cannot say whether the task exists (HGETALL refused). */
    redisReply *r = hx_redis(&h, "ACL SETUSER default -hgetall");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    for (size_t i = 0; i < 2; i++) {
        hx_ex_t e;
        call_other(&e, calls[i].params, calls[i].version);
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_INTERNAL_ERROR);
        CHECK_CONTAINS(hx_rpc_message(&e), "try again");
        hx_ex_free(&e);
    }
    r = hx_redis(&h, "ACL SETUSER default +hgetall");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* A task whose creating ingress stopped between creating it and publishing its job (it lost
 * Redis's answer, or died): its claim and its task exist, its job is in no queue. A repeat
 * with the key names it and publishes its job, so it runs. Made here by copying a real task
 * (its job in Kafka, no worker yet) under a new claim and id, with no job of its own. */
static void test_task_repeat_unpublished(void)
{
    hx_ex_t e;
    call_other(&e, "{\"name\":\"report\",\"arguments\":{\"n\":2,\"idempotency_key\":\"k-model\"}}",
               "2025-06-18");
    char model[64], orphan[] = "0badc0de-0000-4000-8000-000000000001";
    snprintf(model, sizeof(model), "%s", named_task(&e));
    CHECK_INT_EQ((int)strlen(model), 36);
    hx_ex_free(&e);
    /* the orphan's claim, as tc_idempotency makes it for the arguments {"n":2} and the API
     * key k2 (its owner string, owner.h) */
    char scope[33], id[64], *rec = NULL;
    size_t rec_len = 0;
    ing_idem_scope("other", "default", "report", "k-orphan", scope);
    cJSON *what = cJSON_Parse("{\"arguments\":{\"n\":2}}");
    CHECK_INT_EQ(ing_idem_claim(h.ctx.kv, "other", scope, "key:k2", what, 3600, orphan, id,
                                sizeof(id), &rec, &rec_len),
                 ING_IDEM_NEW);
    cJSON_Delete(what);
    /* the orphan's task: the model's fields, its ids replaced */
    redisReply *f = hx_redis(&h, "HGETALL %s%s", NAMES_KEY_TASK, model);
    CHECK(f && f->type == REDIS_REPLY_ARRAY && f->elements > 2);
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        char *v = strdup(f->element[i + 1]->str);
        for (char *p = strstr(v, model); p; p = strstr(p, model))
            memcpy(p, orphan, strlen(orphan));
        redisReply *r =
            hx_redis(&h, "HSET %s%s %s %s", NAMES_KEY_TASK, orphan, f->element[i]->str, v);
        freeReplyObject(r);
        free(v);
    }
    freeReplyObject(f);
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w-orphan", env);
    CHECK(w > 0);
    CHECK(task_reaches(model, "complete"));
    call_other(&e, "{\"name\":\"report\",\"arguments\":{\"n\":2,\"idempotency_key\":\"k-orphan\"}}",
               "2025-06-18");
    CHECK_STR_EQ(named_task(&e), orphan);
    hx_ex_free(&e);
    CHECK(task_reaches(orphan, "complete"));
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
}

/* Arguments larger than the job queue takes: refused, and nothing is left waiting. */
/* tools/call of nap (ms) with request id rid as the caller of hdrs, without a session:
 * parked in e. */
static void nap(hx_ex_t *e, int rid, int ms, const char *const hdrs[])
{
    char body[300];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"nap\",\"arguments\":{\"ms\":%d}}}",
             rid, ms);
    hx_mcp(&h, e, NULL, body, hdrs);
    CHECK(e->parked);
}

/* notifications/cancelled of request id rid as the caller of hdrs: 202. */
static void cancel_request(int rid, const char *const hdrs[])
{
    char body[200];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
             "\"requestId\":%d,\"reason\":\"stop\"}}",
             rid);
    hx_ex_t e;
    hx_mcp(&h, &e, NULL, body, hdrs);
    CHECK_INT_EQ(e.resp.status, 202);
    hx_ex_free(&e);
}

/* Without a session, notifications/cancelled names a call by its request id: it reaches the
 * caller's own call, never another principal's call of the same id (docs/security.md
 * "Ownership model"). */
static void test_cancel_is_per_principal(void)
{
    static const char *const as_b[] = {"Authorization", "Bearer " KEY_B, NULL};
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w-cancel", env);
    CHECK(w > 0);
    static const char *const json[] = {"Accept", "application/json", NULL};
    hx_ex_t e;
    nap(&e, 41, 1500, json);
    cancel_request(41, as_b); /* another key: the same request id, not its call */
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "isError")));
    CHECK_CONTAINS(e.resp.body, "slept 1500 ms");
    hx_ex_free(&e);
    nap(&e, 42, 15000, json);
    cancel_request(42, NULL); /* its own caller: stopped */
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_REQUEST_CANCELLED);
    hx_ex_free(&e);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
}

static void test_too_large(void)
{
    size_t n = 2u << 20;
    char *text = malloc(n + 1);
    CHECK(text != NULL);
    memset(text, 'a', n);
    text[n] = '\0';
    size_t len = n + 200;
    char *body = malloc(len);
    snprintf(
        body, len,
        "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
        "\"arguments\":{\"text\":\"%s\"}}}",
        text);
    hx_ex_t e;
    hx_mcp(&h, &e, NULL, body, NULL);
    CHECK(!e.parked);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INTERNAL_ERROR);
    CHECK_CONTAINS(hx_rpc_message(&e), "arguments too large for the job queue");
    CHECK_INT_EQ((int)ing_pending_count(h.ctx.pending), 0);
    hx_ex_free(&e);
    free(body);
    free(text);
}

/* Without Kafka: the call (a task too) is refused before anything is claimed or published,
 * and nothing is left waiting. */
static void test_kafka_down(void)
{
    CHECK_INT_EQ(fx_stop_pid(h.fx.broker_pid, 5000), 0);
    h.fx.broker_pid = 0;
    for (int i = 0; i < 20 && mq_producer_probe(h.ctx.producer, 500); i++)
        fx_sleep_ms(100);
    CHECK(!mq_producer_up(h.ctx.producer));
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}}", 200, RPC_INTERNAL_ERROR,
                 "job queue (Kafka) unavailable; try again");
    expect_error("{\"name\":\"report\",\"arguments\":{}}", 200, RPC_INTERNAL_ERROR,
                 "job queue (Kafka) unavailable; try again");
    CHECK_INT_EQ((int)ing_pending_count(h.ctx.pending), 0);
}

/* Without Redis: the call is refused before anything is published. */
static void test_redis_down(void)
{
    CHECK_INT_EQ(fx_stop_pid(h.fx.redis_pid, 5000), 0);
    h.fx.redis_pid = 0;
    for (int i = 0; i < 300 && ing_pending_healthy(h.ctx.pending); i++)
        fx_sleep_ms(20);
    CHECK(!ing_pending_healthy(h.ctx.pending));
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}}", 200, RPC_INTERNAL_ERROR,
                 "result store (Redis) unavailable; try again");
    expect_error("{\"name\":\"echo\",\"arguments\":{\"text\":\"x\",\"channel_id\":\"c_x\"}}", 200,
                 RPC_INTERNAL_ERROR, "channel store (Redis) unavailable; try again");
}

int main(void)
{
    /* A job queue that takes at most 1 MB a record (test_too_large). */
    setenv("MCPQ_KAFKA_PROP_MESSAGE_MAX_BYTES", "1000000", 1);
    hx_start(&h, config, NULL);
    test_params();
    test_schema();
    test_schema_2020();
    test_fake();
    test_modern_headers();
    test_tasks();
    test_publish_and_idempotency();
    test_idempotent_repeat_after_expiry();
    test_task_repeat_after_end();
    test_task_repeat_unpublished();
    test_cancel_is_per_principal();
    test_too_large();
    test_redis_down();
    test_kafka_down(); /* last: Kafka is checked before Redis */
    hx_stop(&h);
    return 0;
}
