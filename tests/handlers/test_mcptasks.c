/*
 * Tests ingress/mcp/mcptasks.c: the MCP tasks methods driven through ing_mcp_post with
 * synthetic requests (tests/handlers/harness.h). The 2025-11-25 surface (tools/call with the
 * params.task hint, tasks/get, tasks/result parked until a real worker ends the task,
 * tasks/list and its cursor, tasks/cancel) and the 2026-07-28 io.modelcontextprotocol/tasks
 * extension (tasks/get, tasks/update, tasks/cancel), with their errors: an unknown task and
 * another tenant's answer alike, -32021 when the extension is not declared.
 */
#include "check.h"
#include "harness.h"

#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OTHER_KEY "other-key-0123456"
#define KEY_B "key-b-0123456789"
#define KEY_ALL "key-all-0123456789"
#define NO_TASK "00000000-0000-4000-8000-000000000000"
#define EXT_META                                                                                   \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":"                              \
    "{\"io.modelcontextprotocol/tasks\":{}}}}"
#define BARE_META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}"

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "   {\"id\": \"k-b\", \"key\": \"" KEY_B "\"},"
    "   {\"id\": \"k-all\", \"key\": \"" KEY_ALL "\", \"scopes\": [\"tasks:all\"]}]},"
    "  {\"id\": \"other\", \"api_keys\": [{\"id\": \"k2\", \"key\": \"" OTHER_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"
    "  {\"tenant\": \"other\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"other\", \"server\": \"default\", \"name\": \"echo\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;
static const char *const v1125[] = {"MCP-Protocol-Version", "2025-11-25", NULL};

/* A 2025-11-25 request of method with params (a JSON object's text). */
static void rpc(hx_ex_t *e, const char *method, const char *params, const char *const hdrs[])
{
    char body[2048];
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"%s\",\"params\":%s}",
             method, params);
    hx_mcp(&h, e, NULL, body, hdrs ? hdrs : v1125);
}

/* A 2026-07-28 request: its headers name the method and the task (Mcp-Name). */
static void modern(hx_ex_t *e, const char *method, const char *task_id, const char *params)
{
    const char *hdrs[] = {"MCP-Protocol-Version",      "2026-07-28", "Mcp-Method", method,
                          task_id ? "Mcp-Name" : NULL, task_id,      NULL};
    char body[2048];
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"%s\",\"params\":%s}",
             method, params);
    hx_mcp(&h, e, NULL, body, hdrs);
}

/* A 2026-07-28 extension tasks/get of task id as the caller of API key key. */
static void ext_get_as(hx_ex_t *e, const char *id, const char *key)
{
    char params[400], authz[128], body[800];
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"," EXT_META "}", id);
    snprintf(authz, sizeof(authz), "Bearer %s", key);
    const char *hdrs[] = {
        "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tasks/get", "Mcp-Name", id,
        "Authorization",        authz,        NULL};
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tasks/get\",\"params\":%s}", params);
    hx_mcp(&h, e, NULL, body, hdrs);
}

static const char *res_str(const hx_ex_t *e, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(e), k));
}

/* tools/call of echo with the params.task hint (2025-11-25): its task id into id. */
static void hinted_task(char *id, size_t size, const char *text, const char *const hdrs[])
{
    char params[300];
    snprintf(params, sizeof(params),
             "{\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"},\"task\":{\"ttl\":60000}}", text);
    hx_ex_t e;
    rpc(&e, "tools/call", params, hdrs);
    CHECK(!e.parked);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "task");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(task, "status")), "working");
    const char *tid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(task, "taskId"));
    CHECK(tid != NULL && strlen(tid) == 36);
    snprintf(id, size, "%s", tid);
    hx_ex_free(&e);
}

static void expect_error(const char *method, const char *params, int code, const char *text)
{
    hx_ex_t e;
    rpc(&e, method, params, NULL);
    CHECK(!e.parked);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_INT_EQ(hx_rpc_code(&e), code);
    CHECK_CONTAINS(hx_rpc_message(&e), text);
    hx_ex_free(&e);
}

static char task_a[64], task_b[64];

static void test_get_and_errors(void)
{
    hinted_task(task_a, sizeof(task_a), "a", NULL);
    hx_ex_t e;
    char params[200];
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"}", task_a);
    rpc(&e, "tasks/get", params, NULL);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_STR_EQ(res_str(&e, "taskId"), task_a);
    CHECK_STR_EQ(res_str(&e, "status"), "working");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "ttl")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "pollInterval")));
    hx_ex_free(&e);

    expect_error("tasks/get", "{}", RPC_INVALID_PARAMS, "params.taskId must be a string");
    expect_error("tasks/result", "{\"taskId\":7}", RPC_INVALID_PARAMS,
                 "params.taskId must be a string");
    expect_error("tasks/get", "{\"taskId\":\"" NO_TASK "\"}", RPC_INVALID_PARAMS,
                 "Failed to retrieve task: Task not found");
    expect_error("tasks/result", "{\"taskId\":\"" NO_TASK "\"}", RPC_INVALID_PARAMS,
                 "Task not found");
    expect_error("tasks/cancel", "{\"taskId\":\"" NO_TASK "\"}", RPC_INVALID_PARAMS,
                 "Task not found");
    expect_error("tasks/frobnicate", "{}", RPC_METHOD_NOT_FOUND,
                 "Method not found: tasks/frobnicate");
    expect_error("tasks/list", "{\"cursor\":\"x1\"}", RPC_INVALID_PARAMS, "invalid cursor");
    expect_error("tasks/list", "{\"cursor\":\"t0\"}", RPC_INVALID_PARAMS, "invalid cursor");
    expect_error("tasks/list", "{\"cursor\":5}", RPC_INVALID_PARAMS, "invalid cursor");

    /* another tenant's task answers as an unknown one, for every method */
    const char *other[] = {"MCP-Protocol-Version", "2025-11-25", "Authorization",
                           "Bearer " OTHER_KEY, NULL};
    static const char *const methods[] = {"tasks/get", "tasks/result", "tasks/cancel"};
    for (size_t i = 0; i < 3; i++) {
        rpc(&e, methods[i], params, other);
        CHECK(!e.parked);
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
        CHECK_STR_EQ(hx_rpc_message(&e), "Failed to retrieve task: Task not found");
        hx_ex_free(&e);
    }
    rpc(&e, "tasks/list", "{}", other);
    char *text = cJSON_PrintUnformatted(hx_rpc_result(&e));
    CHECK(text && !strstr(text, task_a));
    free(text);
    hx_ex_free(&e);
}

/* Newest first, 50 a page; the cursor continues where the page ended. */
static void test_list(void)
{
    hx_ex_t e;
    for (int i = 0; i < 50; i++) { /* 51 tasks with task_a */
        char id[64];
        fx_sleep_ms(1);
        hinted_task(id, sizeof(id), "n", NULL);
    }
    rpc(&e, "tasks/list", "{}", NULL);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "tasks");
    CHECK_INT_EQ(cJSON_GetArraySize(tasks), 50);
    CHECK_STR_EQ(res_str(&e, "nextCursor"), "t50");
    hx_ex_free(&e);
    rpc(&e, "tasks/list", "{\"cursor\":\"t50\"}", NULL);
    tasks = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "tasks");
    CHECK_INT_EQ(cJSON_GetArraySize(tasks), 1);
    CHECK_STR_EQ(cJSON_GetStringValue(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tasks, 0), "taskId")),
                 task_a);
    CHECK(res_str(&e, "nextCursor") == NULL);
    hx_ex_free(&e);
}

/* tasks/cancel of a working task answers the cancelled task; again it is an error, and its
 * tasks/result is -32800. */
static void test_cancel(void)
{
    hx_ex_t e;
    char params[200];
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"}", task_a);
    rpc(&e, "tasks/cancel", params, NULL);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_STR_EQ(res_str(&e, "taskId"), task_a);
    CHECK_STR_EQ(res_str(&e, "status"), "cancelled");
    hx_ex_free(&e);
    expect_error("tasks/cancel", params, RPC_INVALID_PARAMS,
                 "Cannot cancel task: already in a terminal status");
    expect_error("tasks/result", params, RPC_REQUEST_CANCELLED,
                 "the task was cancelled; it has no result");
}

/* tasks/result of a task still waiting parks; a worker that starts later runs the task and
 * its end wakes the request with the result and the related-task _meta. A finished task's
 * tasks/result answers at once, the same. */
static void test_result_waits(void)
{
    hinted_task(task_b, sizeof(task_b), "from b", NULL);
    char params[200];
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"}", task_b);
    hx_ex_t e;
    rpc(&e, "tasks/result", params, NULL);
    CHECK(e.parked);
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 300), -1); /* nothing runs it yet */
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w1", env);
    CHECK(w > 0);
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 30000), 0);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    char *text = cJSON_PrintUnformatted(hx_rpc_result(&e));
    CHECK_CONTAINS(text, "from b");
    CHECK_CONTAINS(text, "\"io.modelcontextprotocol/related-task\":{\"taskId\":\"");
    CHECK_CONTAINS(text, task_b);
    hx_ex_free(&e);
    rpc(&e, "tasks/result", params, NULL);
    CHECK(!e.parked);
    char *again = cJSON_PrintUnformatted(hx_rpc_result(&e));
    CHECK_STR_EQ(again, text);
    free(again);
    free(text);
    hx_ex_free(&e);
    rpc(&e, "tasks/get", params, NULL);
    CHECK_STR_EQ(res_str(&e, "status"), "completed");
    CHECK(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "pollInterval") == NULL);
    hx_ex_free(&e);
    expect_error("tasks/cancel", params, RPC_INVALID_PARAMS, "already in a terminal status");
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
}

/* The 2026-07-28 extension: a declaring client gets tasks for task-mode tools; tasks/get is
 * the DetailedTask, tasks/update and tasks/cancel acknowledge; -32021 without the
 * declaration. */
static void test_extension(void)
{
    hx_ex_t e;
    const char *hdrs[] = {"MCP-Protocol-Version",
                          "2026-07-28",
                          "Mcp-Method",
                          "tools/call",
                          "Mcp-Name",
                          "report",
                          NULL};
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"report\",\"arguments\":{}," EXT_META "}}",
           hdrs);
    CHECK(!e.parked);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_STR_EQ(res_str(&e, "resultType"), "task");
    CHECK_STR_EQ(res_str(&e, "status"), "working");
    char id[64], params[600];
    snprintf(id, sizeof(id), "%s", res_str(&e, "taskId"));
    CHECK(strlen(id) == 36);
    hx_ex_free(&e);

    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"," EXT_META "}", id);
    modern(&e, "tasks/get", id, params);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_STR_EQ(res_str(&e, "taskId"), id);
    CHECK_STR_EQ(res_str(&e, "status"), "working");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "ttlMs")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "pollIntervalMs")));
    hx_ex_free(&e);

    /* not declared: -32021 naming the extension */
    char bare[300];
    snprintf(bare, sizeof(bare), "{\"taskId\":\"%s\"," BARE_META "}", id);
    modern(&e, "tasks/get", id, bare);
    CHECK_INT_EQ(e.resp.status, 400);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_MISSING_CAPABILITY);
    CHECK_CONTAINS(hx_rpc_message(&e), "io.modelcontextprotocol/tasks");
    const cJSON *data =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e.json, "error"), "data");
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(data, "requiredCapabilities"), "extensions"),
        "io.modelcontextprotocol/tasks")));
    hx_ex_free(&e);

    /* tasks/update: inputResponses must be an object; then acknowledged */
    modern(&e, "tasks/update", id, params);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    CHECK_CONTAINS(hx_rpc_message(&e), "params.inputResponses must be an object");
    hx_ex_free(&e);
    char upd[600];
    snprintf(upd, sizeof(upd), "{\"taskId\":\"%s\",\"inputResponses\":{}," EXT_META "}", id);
    modern(&e, "tasks/update", id, upd);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK(hx_rpc_result(&e) != NULL);
    hx_ex_free(&e);

    /* tasks/cancel acknowledges, twice (eventually consistent); the task is cancelled */
    for (int i = 0; i < 2; i++) {
        modern(&e, "tasks/cancel", id, params);
        CHECK_INT_EQ(hx_rpc_code(&e), 0);
        CHECK(cJSON_IsObject(hx_rpc_result(&e)));
        hx_ex_free(&e);
    }
    modern(&e, "tasks/get", id, params);
    CHECK_STR_EQ(res_str(&e, "status"), "cancelled");
    hx_ex_free(&e);

    /* unknown and another tenant's task: not found */
    snprintf(params, sizeof(params), "{\"taskId\":\"" NO_TASK "\"," EXT_META "}");
    modern(&e, "tasks/get", NO_TASK, params);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    CHECK_STR_EQ(hx_rpc_message(&e), "Failed to retrieve task: Task not found");
    hx_ex_free(&e);
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"," EXT_META "}", task_b);
    modern(&e, "tasks/cancel", task_b, params); /* task_b is this tenant's: acknowledged */
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    hx_ex_free(&e);
    ext_get_as(&e, task_b, OTHER_KEY);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    CHECK_STR_EQ(hx_rpc_message(&e), "Failed to retrieve task: Task not found");
    hx_ex_free(&e);

    /* Mcp-Name must be the taskId; tasks/list and tasks/result are not extension methods */
    modern(&e, "tasks/get", NO_TASK, params);
    CHECK_INT_EQ(e.resp.status, 400);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_HEADER_MISMATCH);
    CHECK_CONTAINS(hx_rpc_message(&e), "Mcp-Name");
    hx_ex_free(&e);
    modern(&e, "tasks/list", NULL, "{" EXT_META "}");
    CHECK_INT_EQ(e.resp.status, 404);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_METHOD_NOT_FOUND);
    hx_ex_free(&e);
    modern(&e, "tasks/get", NULL, "{" EXT_META "}");
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    CHECK_CONTAINS(hx_rpc_message(&e), "params.taskId must be a string");
    hx_ex_free(&e);
}

/* A 2025-11-25 client never gets a task for a tool it did not hint (echo runs synchronously:
 * it waits), and a 2026-07-28 client that declares the extension gets one for the hint. */
static void test_hint(void)
{
    hx_ex_t e;
    rpc(&e, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"sync\"}}", NULL);
    CHECK(e.parked);
    hx_ex_free(&e);
    const char *hdrs[] = {
        "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo", NULL};
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"echo\",\"arguments\":{\"text\":\"x\"},\"task\":{}," EXT_META "}}",
           hdrs);
    CHECK(!e.parked);
    CHECK_STR_EQ(res_str(&e, "resultType"), "task");
    hx_ex_free(&e);
}

/* The body of method's answer about task id as the caller of hdrs (2025-11-25). */
static char *answer_of(const char *method, const char *id, const char *const hdrs[])
{
    char params[200];
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"}", id);
    hx_ex_t e;
    rpc(&e, method, params, hdrs);
    CHECK(!e.parked);
    char *body = strdup(e.resp.body ? e.resp.body : "");
    hx_ex_free(&e);
    return body;
}

/* A task belongs to the key that created it (docs/security.md "Ownership model"): to another key of
 * the same tenant tasks/get, tasks/result, tasks/cancel (both surfaces) and the system
 * server's workerSysGetTaskStatus answer exactly as for a missing task, and tasks/list leaves
 * it out; a key holding tasks:all sees it. */
static void test_ownership(void)
{
    static const char *const as_b[] = {"MCP-Protocol-Version", "2025-11-25", "Authorization",
                                       "Bearer " KEY_B, NULL};
    static const char *const as_all[] = {"MCP-Protocol-Version", "2025-11-25", "Authorization",
                                         "Bearer " KEY_ALL, NULL};
    char id[64];
    hinted_task(id, sizeof(id), "owned", NULL);
    static const char *const methods[] = {"tasks/get", "tasks/result", "tasks/cancel"};
    for (size_t i = 0; i < 3; i++) {
        char *missing = answer_of(methods[i], NO_TASK, as_b);
        char *theirs = answer_of(methods[i], id, as_b);
        CHECK_CONTAINS(missing, "Task not found");
        CHECK_STR_EQ(theirs, missing);
        free(missing);
        free(theirs);
    }
    hx_ex_t e;
    rpc(&e, "tasks/list", "{}", as_b);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK(strstr(e.resp.body, id) == NULL);
    hx_ex_free(&e);
    /* the 2026-07-28 extension's tasks/get */
    ext_get_as(&e, id, KEY_B);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    CHECK_CONTAINS(hx_rpc_message(&e), "Task not found");
    hx_ex_free(&e);
    /* the system server's task tools */
    char body[400], params[200];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
             "\"params\":{\"name\":\"workerSysGetTaskStatus\",\"arguments\":{\"TaskId\":"
             "\"%s\"}}}",
             id);
    hx_mcp(&h, &e, "system", body, as_b);
    CHECK_CONTAINS(e.resp.body, "task.notFound");
    hx_ex_free(&e);
    hx_mcp(&h, &e, "system", body, as_all);
    CHECK_CONTAINS(e.resp.body, "result.success");
    hx_ex_free(&e);
    /* the permission sees it and lists it */
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"}", id);
    rpc(&e, "tasks/get", params, as_all);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_STR_EQ(res_str(&e, "taskId"), id);
    hx_ex_free(&e);
    rpc(&e, "tasks/list", "{}", as_all);
    CHECK_CONTAINS(e.resp.body, id);
    hx_ex_free(&e);
    rpc(&e, "tasks/list", "{}", NULL);
    CHECK_CONTAINS(e.resp.body, id);
    hx_ex_free(&e);
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_get_and_errors();
    test_list();
    test_cancel();
    test_hint();
    test_result_waits();
    test_extension();
    test_ownership();
    hx_stop(&h);
    return 0;
}
