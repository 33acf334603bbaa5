/*
 * Tests ingress/mcp/system.c: the built-in "system" server driven through ing_mcp_post with
 * synthetic requests (tests/handlers/harness.h): its tools/list, each of its tools (the
 * task-mode task tools, open_channel, list_tools) and their argument errors, and what they
 * answer without Redis.
 */
#include "check.h"
#include "harness.h"

#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OTHER_KEY "other-key-0123456"

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"}]},"
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
    "  {\"kind\": \"resource\", \"tenant\": \"t\", \"server\": \"default\", \"name\": \"zdoc\","
    "   \"versions\": [{\"version\": \"1\", \"uri\": \"file:///doc\", \"text\": \"d\"}]},"
    "  {\"tenant\": \"other\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;

/* tools/call of the system server with params (a JSON object's text). */
static void sys_call(hx_ex_t *e, const char *params)
{
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":%s}", params);
    hx_mcp(&h, e, "system", body, NULL);
    CHECK(!e->parked);
    CHECK_INT_EQ(e->resp.status, 200);
}

static void expect_error(const char *params, int code, const char *text)
{
    hx_ex_t e;
    sys_call(&e, params);
    CHECK_INT_EQ(hx_rpc_code(&e), code);
    CHECK_CONTAINS(hx_rpc_message(&e), text);
    hx_ex_free(&e);
}

/* The task-mode envelope of a task tool's answer: its structuredContent. */
static const cJSON *envelope(const hx_ex_t *e)
{
    CHECK_INT_EQ(hx_rpc_code(e), 0);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(e), "structuredContent");
    CHECK(cJSON_IsObject(sc));
    return sc;
}

static int env_code(const hx_ex_t *e)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(envelope(e), "code");
    CHECK(cJSON_IsNumber(c));
    return (int)c->valuedouble;
}

static const char *env_str(const hx_ex_t *e, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(envelope(e), k));
}

static const char *data_str(const hx_ex_t *e, const char *k)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(envelope(e), "data");
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, k));
}

/* A task of the test tenant (the task-mode tool report), its id into id. */
static void new_task(char *id, size_t size)
{
    hx_ex_t e;
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
           "{\"name\":\"report\",\"arguments\":{}}}",
           NULL);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
    const char *tid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId"));
    CHECK(tid != NULL);
    snprintf(id, size, "%s", tid);
    hx_ex_free(&e);
}

static void test_list(void)
{
    hx_ex_t e;
    hx_mcp(&h, &e, "system", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", NULL);
    CHECK_INT_EQ(e.resp.status, 200);
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "tools");
    CHECK_INT_EQ(cJSON_GetArraySize(tools), 5);
    static const char *const names[] = {"workerSysGetTaskStatus", "workerSysCancelTask",
                                        "workerSysListTasks", "open_channel", "list_tools"};
    for (int i = 0; i < 5; i++) {
        const cJSON *t = cJSON_GetArrayItem(tools, i);
        CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name")), names[i]);
        CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "inputSchema")));
    }
    hx_ex_free(&e);
}

static void test_arguments(void)
{
    expect_error("{\"arguments\":{}}", RPC_INVALID_PARAMS, "params.name must be a string");
    expect_error("{\"name\":\"nope\",\"arguments\":{}}", RPC_INVALID_PARAMS, "Unknown tool: nope");
    expect_error("{\"name\":\"workerSysGetTaskStatus\",\"arguments\":{}}", RPC_INVALID_PARAMS,
                 "arguments.TaskId must be a string");
    expect_error("{\"name\":\"workerSysCancelTask\",\"arguments\":{\"TaskId\":5}}",
                 RPC_INVALID_PARAMS, "arguments.TaskId must be a string");
    expect_error("{\"name\":\"list_tools\",\"arguments\":{\"pageSize\":-1}}", RPC_INVALID_PARAMS,
                 "arguments.pageSize must be a non-negative integer");
    expect_error("{\"name\":\"list_tools\",\"arguments\":{\"filter\":5}}", RPC_INVALID_PARAMS,
                 "arguments.filter must be a string");
    expect_error("{\"name\":\"list_tools\",\"arguments\":{\"orderBy\":\"colour\"}}",
                 RPC_INVALID_PARAMS, "orderBy");
    hx_ex_t e;
    static const char *const bad[] = {"{\"PageSize\":0}", "{\"PageSize\":101}",
                                      "{\"PageToken\":\"x\"}"};
    for (size_t i = 0; i < 3; i++) {
        char params[200];
        snprintf(params, sizeof(params), "{\"name\":\"workerSysListTasks\",\"arguments\":%s}",
                 bad[i]);
        sys_call(&e, params);
        CHECK_INT_EQ(env_code(&e), 400);
        CHECK_STR_EQ(env_str(&e, "msgCode"), "param.invalid");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "isError")));
        hx_ex_free(&e);
    }
}

/* Status, cancel, cancel again, unknown and another tenant's task. */
static void test_task_tools(void)
{
    char id[64], params[300];
    new_task(id, sizeof(id));
    hx_ex_t e;
    snprintf(params, sizeof(params),
             "{\"name\":\"workerSysGetTaskStatus\",\"arguments\":{\"TaskId\":\"%s\"}}", id);
    sys_call(&e, params);
    CHECK_INT_EQ(env_code(&e), 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(envelope(&e), "success")));
    CHECK_STR_EQ(data_str(&e, "TaskId"), id);
    CHECK_STR_EQ(data_str(&e, "TaskStatus"), "waiting");
    CHECK_STR_EQ(data_str(&e, "AppId"), "report");
    hx_ex_free(&e);

    snprintf(params, sizeof(params),
             "{\"name\":\"workerSysCancelTask\",\"arguments\":{\"TaskId\":\"%s\"}}", id);
    sys_call(&e, params);
    CHECK_INT_EQ(env_code(&e), 0);
    CHECK_STR_EQ(data_str(&e, "TaskStatus"), "cancelled");
    hx_ex_free(&e);
    sys_call(&e, params); /* already finished */
    CHECK_INT_EQ(env_code(&e), 409);
    CHECK_STR_EQ(env_str(&e, "msgCode"), "task.finished");
    hx_ex_free(&e);

    sys_call(&e, "{\"name\":\"workerSysGetTaskStatus\",\"arguments\":"
                 "{\"TaskId\":\"00000000-0000-4000-8000-000000000000\"}}");
    CHECK_INT_EQ(env_code(&e), 404);
    CHECK_STR_EQ(env_str(&e, "msgCode"), "task.notFound");
    hx_ex_free(&e);

    /* another tenant's task is not found for this one, and cannot be cancelled */
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
           "{\"name\":\"report\",\"arguments\":{}}}",
           (const char *const[]){"Authorization", "Bearer " OTHER_KEY, NULL});
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
    char theirs[64];
    snprintf(theirs, sizeof(theirs), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId")));
    hx_ex_free(&e);
    CHECK(strlen(theirs) == 36);
    snprintf(params, sizeof(params),
             "{\"name\":\"workerSysCancelTask\",\"arguments\":{\"TaskId\":\"%s\"}}", theirs);
    sys_call(&e, params);
    CHECK_INT_EQ(env_code(&e), 404);
    hx_ex_free(&e);
}

/* The tenant's tasks, newest first, a page at a time. */
static void test_list_tasks(void)
{
    char a[64], b[64];
    fx_sleep_ms(5); /* created in later milliseconds than the tasks before */
    new_task(a, sizeof(a));
    fx_sleep_ms(5);
    new_task(b, sizeof(b));
    hx_ex_t e;
    sys_call(&e, "{\"name\":\"workerSysListTasks\",\"arguments\":{\"PageSize\":1}}");
    CHECK_INT_EQ(env_code(&e), 0);
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(envelope(&e), "data"), "Tasks");
    CHECK_INT_EQ(cJSON_GetArraySize(tasks), 1);
    CHECK_STR_EQ(cJSON_GetStringValue(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tasks, 0), "TaskId")),
                 b);
    const cJSON *pager = cJSON_GetObjectItemCaseSensitive(envelope(&e), "pager");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pager, "NextPageToken")),
                 "1");
    hx_ex_free(&e);
    sys_call(&e, "{\"name\":\"workerSysListTasks\",\"arguments\":{\"PageSize\":1,"
                 "\"PageToken\":\"1\"}}");
    tasks = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(envelope(&e), "data"),
                                             "Tasks");
    CHECK_STR_EQ(cJSON_GetStringValue(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tasks, 0), "TaskId")),
                 a);
    hx_ex_free(&e);
    /* the other tenant sees none of them */
    const char *hdr[] = {"Authorization", "Bearer " OTHER_KEY, NULL};
    hx_mcp(&h, &e, "system",
           "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
           "{\"name\":\"workerSysListTasks\",\"arguments\":{}}}",
           hdr);
    char *text = cJSON_PrintUnformatted(envelope(&e));
    CHECK(strstr(text, a) == NULL && strstr(text, b) == NULL);
    free(text);
    hx_ex_free(&e);
}

static void test_list_tools(void)
{
    hx_ex_t e;
    sys_call(&e, "{\"name\":\"list_tools\",\"arguments\":{\"orderBy\":\"name desc\"}}");
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(sc, "tools");
    CHECK_INT_EQ(cJSON_GetArraySize(tools), 2); /* this tenant's only, tools only (no zdoc) */
    CHECK_STR_EQ(cJSON_GetStringValue(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 0), "name")),
                 "report");
    CHECK(cJSON_GetStringValue(
              cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 1), "etag")) != NULL);
    hx_ex_free(&e);
    sys_call(&e, "{\"name\":\"list_tools\",\"arguments\":{\"pageSize\":1,"
                 "\"filter\":\"name = \\\"echo\\\"\"}}");
    sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
    tools = cJSON_GetObjectItemCaseSensitive(sc, "tools");
    CHECK_INT_EQ(cJSON_GetArraySize(tools), 1);
    CHECK_STR_EQ(cJSON_GetStringValue(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 0), "name")),
                 "echo");
    hx_ex_free(&e);
}

static void test_open_channel(void)
{
    hx_ex_t e;
    sys_call(&e, "{\"name\":\"open_channel\",\"arguments\":{}}");
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    const cJSON *r = hx_rpc_result(&e);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r, "isError")));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r, "structuredContent"), "channel_id"));
    CHECK(id != NULL && strncmp(id, "c_", 2) == 0);
    char params[300];
    snprintf(params, sizeof(params), "{\"name\":\"echo\",\"arguments\":{\"channel_id\":\"%s\"}}",
             id);
    hx_ex_free(&e);
    /* the channel is known to tools/call: the call is published and waits (no worker) */
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":%s}", params);
    hx_mcp(&h, &e, NULL, body, NULL);
    CHECK(e.parked);
    hx_ex_free(&e);
}

static void test_redis_down(void)
{
    CHECK_INT_EQ(fx_stop_pid(h.fx.redis_pid, 5000), 0);
    h.fx.redis_pid = 0;
    hx_ex_t e;
    sys_call(&e, "{\"name\":\"open_channel\",\"arguments\":{}}");
    const cJSON *r = hx_rpc_result(&e);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "isError")));
    char *text = cJSON_PrintUnformatted(r);
    CHECK_CONTAINS(text, "channel store (Redis) unavailable; try again");
    free(text);
    hx_ex_free(&e);
    sys_call(&e, "{\"name\":\"workerSysListTasks\",\"arguments\":{}}");
    CHECK_INT_EQ(env_code(&e), 503);
    CHECK_STR_EQ(env_str(&e, "msgCode"), "error.unavailable");
    hx_ex_free(&e);
    sys_call(&e, "{\"name\":\"workerSysGetTaskStatus\",\"arguments\":{\"TaskId\":\"x\"}}");
    CHECK_INT_EQ(env_code(&e), 503);
    hx_ex_free(&e);
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_list();
    test_arguments();
    test_task_tools();
    test_list_tasks();
    test_list_tools();
    test_open_channel();
    test_redis_down();
    hx_stop(&h);
    return 0;
}
