/*
 * Tests ingress/api/adm_tasks.c (GET /admin/v1/tenants/{t}/tasks, GET .../tasks/{id},
 * POST .../tasks/{id}:cancel) through ing_admin_api with synthetic requests
 * (tests/handlers/harness.h), over tasks made by MCP tools/call of task-mode tools and run by a
 * real worker: the listing newest first, by status, in pages; one task with its result, its
 * history (created, started by the worker, the end with its message and fault) and its webhook
 * deliveries; cancel 200, 409, 404; another tenant's task 404; no token 401; bad queries 400.
 */
#include "check.h"
#include "harness.h"

#include "admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OTHER_KEY "other-key-0123456"
#define NO_TASK "00000000-0000-4000-8000-000000000000"

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"}],"
    "   \"webhooks\": [{\"id\": \"wh\", \"url\": \"http://127.0.0.1:9/hook\","
    "    \"secret\": \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\","
    "    \"events\": [\"task.running\", \"task.completed\"]}]},"
    "  {\"id\": \"other\", \"api_keys\": [{\"id\": \"k2\", \"key\": \"" OTHER_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"
    "  {\"tenant\": \"other\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"slow\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\", \"timeout_ms\": 200,"
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"sleep\"}}]},"
    "  {\"tenant\": \"other\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;

static void new_task(char *id, size_t size, const char *tool, const char *args,
                     const char *const hdrs[])
{
    hx_task_call(&h, tool, args, hdrs, id, size);
}

static const cJSON *item(const hx_ex_t *e, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(e->json, k);
}

/* The status of the listing's i-th task's member k. */
static const char *listed(const hx_ex_t *e, int i, const char *k)
{
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(item(e, "tasks"), i), k));
}

/* GET of the task until its status is not working (15 s at most); e holds the answer. */
static void wait_ended(hx_ex_t *e, const char *url)
{
    for (int i = 0; i < 300; i++) {
        CHECK_INT_EQ(hx_admin(&h, e, "GET", url, NULL, NULL), 200);
        if (strcmp(hx_str(e, "status"), "working") != 0)
            return;
        hx_ex_free(e);
        fx_sleep_ms(50);
    }
    fprintf(stderr, "%s did not end\n", url);
    exit(1);
}

/* The i-th event of the task's history, checked to be named event with an RFC 3339 time. */
static const cJSON *event(const hx_ex_t *e, int i, const char *name)
{
    const cJSON *ev = cJSON_GetArrayItem(item(e, "history"), i);
    CHECK(ev != NULL);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "event")), name);
    const char *at = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "at"));
    CHECK(at != NULL && strlen(at) == 24 && at[10] == 'T' && at[23] == 'Z');
    return ev;
}

static char task_a[64], task_b[64], task_slow[64], task_other[64];

/* The count of tasks url lists (200), and that it is the last page. */
static int listed_count(const char *url)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", url, NULL, NULL), 200);
    int n = cJSON_GetArraySize(item(&e, "tasks"));
    CHECK(cJSON_IsNull(item(&e, "nextPageToken")));
    hx_ex_free(&e);
    return n;
}

/* pageSize at its bounds and empty, an empty status or pageToken (the first page), a token
 * past the end (an empty last page), and each malformed form of the two (400). */
static void test_list_bounds(void)
{
    CHECK_INT_EQ(listed_count("/admin/v1/tenants/t/tasks?pageSize=50"), 2);
    CHECK_INT_EQ(listed_count("/admin/v1/tenants/t/tasks?pageSize="), 2);
    CHECK_INT_EQ(listed_count("/admin/v1/tenants/t/tasks?status=&pageToken="), 2);
    CHECK_INT_EQ(listed_count("/admin/v1/tenants/t/tasks?pageToken=t2"), 0);
    CHECK_INT_EQ(listed_count("/admin/v1/tenants/t/tasks?pageSize=1&pageToken=t1000"), 0);
    static const char *const sizes[] = {"-1", "abc", "1.5", "2x", "%201", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char url[160];
        snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks?pageSize=%s", sizes[i]);
        hx_admin_expect(&h, "GET", url, NULL, NULL, 400,
                        "pageSize must be an integer from 1 to 50");
    }
    static const char *const tokens[] = {"t", "t0",  "t-1",   "T1",
                                         "1", "t1x", "t%201", "t99999999999999999999999"};
    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        char url[160];
        snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks?pageToken=%s", tokens[i]);
        hx_admin_expect(&h, "GET", url, NULL, NULL, 400, "pageToken is not one this API returned");
    }
    TEST_PASS("pageSize 1..50 (empty: the default); a malformed pageSize or pageToken is 400; a "
              "token past the end an empty last page");
}

static void test_list(void)
{
    new_task(task_a, sizeof(task_a), "report", "{\"text\":\"a\"}", NULL);
    fx_sleep_ms(2); /* distinct created_ms: newest first is well defined */
    new_task(task_b, sizeof(task_b), "report", "{\"text\":\"b\"}", NULL);
    new_task(task_other, sizeof(task_other), "report", "{}", HX_BEARER(OTHER_KEY));
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/t/tasks", NULL, NULL), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 2);
    CHECK_STR_EQ(listed(&e, 0, "taskId"), task_b);
    CHECK_STR_EQ(listed(&e, 1, "taskId"), task_a);
    CHECK_STR_EQ(listed(&e, 0, "status"), "working");
    CHECK_STR_EQ(listed(&e, 0, "tool"), "report");
    CHECK(cJSON_IsNull(item(&e, "nextPageToken")));
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/t/tasks?pageSize=1", NULL, NULL), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK_STR_EQ(listed(&e, 0, "taskId"), task_b);
    CHECK_STR_EQ(hx_str(&e, "nextPageToken"), "t1");
    hx_ex_free(&e);
    CHECK_INT_EQ(
        hx_admin(&h, &e, "GET", "/admin/v1/tenants/t/tasks?pageSize=1&pageToken=t1", NULL, NULL),
        200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK_STR_EQ(listed(&e, 0, "taskId"), task_a);
    CHECK(cJSON_IsNull(item(&e, "nextPageToken")));
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/t/tasks?status=completed", NULL, NULL),
                 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 0);
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/other/tasks", NULL, NULL), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK_STR_EQ(listed(&e, 0, "taskId"), task_other);
    hx_ex_free(&e);
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks?status=done", NULL, NULL, 400,
                    "status must be working, input_required, completed, failed or cancelled");
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks?pageSize=0", NULL, NULL, 400,
                    "pageSize must be an integer from 1 to 50");
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks?pageSize=51", NULL, NULL, 400,
                    "pageSize must be an integer from 1 to 50");
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks?pageToken=x", NULL, NULL, 400,
                    "pageToken is not one this API returned");
    TEST_PASS("a tenant's tasks newest first, by status and in pages; another tenant's apart");
    test_list_bounds();
}

static void test_cancel(void)
{
    char url[200], curl[220];
    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s", task_a);
    snprintf(curl, sizeof(curl), "%s:cancel", url);
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", curl, NULL, NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "taskId"), task_a);
    CHECK_STR_EQ(hx_str(&e, "status"), "cancelled");
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "history")), 2);
    event(&e, 0, "created");
    const cJSON *end = event(&e, 1, "cancelled");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(end, "message")),
                 "cancelled by the operator (admin API)");
    CHECK(cJSON_IsArray(item(&e, "deliveries")));
    hx_ex_free(&e);
    hx_admin_expect(&h, "POST", curl, NULL, NULL, 409,
                    "Cannot cancel task: already in a terminal status");
    hx_admin_expect(&h, "POST", "/admin/v1/tenants/t/tasks/" NO_TASK ":cancel", NULL, NULL, 404,
                    "no task");
    /* another tenant's task is a missing one there, and stays as it was */
    snprintf(curl, sizeof(curl), "/admin/v1/tenants/t/tasks/%s:cancel", task_other);
    hx_admin_expect(&h, "POST", curl, NULL, NULL, 404, "no task");
    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s", task_other);
    hx_admin_expect(&h, "GET", url, NULL, NULL, 404, "no task");
    snprintf(url, sizeof(url), "/admin/v1/tenants/other/tasks/%s", task_other);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", url, NULL, NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "status"), "working");
    hx_ex_free(&e);
    TEST_PASS("cancel answers the cancelled task with its history; 409 once ended; 404 unknown "
              "or another tenant's");
}

/* A worker runs the tasks: a completed one with its result, start and deliveries; one that
 * timed out as failed with its fault. */
static void test_history(void)
{
    new_task(task_slow, sizeof(task_slow), "slow", "{\"ms\":5000}", NULL);
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w1", env);
    CHECK(w > 0);
    char url[200];
    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s", task_b);
    hx_ex_t e;
    wait_ended(&e, url);
    CHECK_STR_EQ(hx_str(&e, "status"), "completed");
    CHECK_STR_EQ(hx_str(&e, "result.structuredContent.text"), "b");
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "history")), 3);
    event(&e, 0, "created");
    const cJSON *st = event(&e, 1, "started");
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(st, "attempt")->valueint, 1);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "worker")), "w1");
    event(&e, 2, "completed");
    hx_ex_free(&e);
    /* its webhook deliveries (task.running, task.completed), as the deliveries list shows them */
    int n = 0;
    for (int i = 0; i < 300 && n < 2; i++) {
        CHECK_INT_EQ(hx_admin(&h, &e, "GET", url, NULL, NULL), 200);
        n = cJSON_GetArraySize(item(&e, "deliveries"));
        if (n < 2) {
            hx_ex_free(&e);
            fx_sleep_ms(50);
        }
    }
    CHECK_INT_EQ(n, 2);
    CHECK_STR_EQ(hx_str(&e, "deliveries.0.task"), task_b);
    CHECK_STR_EQ(hx_str(&e, "deliveries.1.task"), task_b);
    /* (both may be made in one millisecond: their order is then the index's, by id) */
    char events[64];
    snprintf(events, sizeof(events), "%s,%s", hx_str(&e, "deliveries.0.event"),
             hx_str(&e, "deliveries.1.event"));
    CHECK(strcmp(events, "task.completed,task.running") == 0 ||
          strcmp(events, "task.running,task.completed") == 0);
    CHECK(cJSON_IsArray(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(item(&e, "deliveries"), 0), "log")));
    hx_ex_free(&e);
    TEST_PASS("a completed task shows its result, its start by the worker and its deliveries");

    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s", task_slow);
    wait_ended(&e, url);
    CHECK_STR_EQ(hx_str(&e, "status"), "failed");
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(item(&e, "error"), "code")->valueint, -32003);
    const cJSON *end = event(&e, 2, "failed");
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(end, "fault")->valueint, -32003);
    CHECK(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(end, "message")) != NULL);
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/t/tasks?status=failed", NULL, NULL),
                 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK_STR_EQ(listed(&e, 0, "taskId"), task_slow);
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(item(&e, "tasks"), 0), "error") ==
          NULL);
    hx_ex_free(&e);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    TEST_PASS("a task that timed out is failed, its end naming the fault");
}

static void test_errors(void)
{
    hx_ex_t e;
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants/t/tasks", NULL, 0, NULL);
    ing_admin_api(&e.req, "/admin/v1/tenants/t/tasks", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 401);
    hx_ex_free(&e);
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants/t/tasks", NULL, 1, NULL); /* a tenant's key */
    ing_admin_api(&e.req, "/admin/v1/tenants/t/tasks", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 401);
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "DELETE", "/admin/v1/tenants/t/tasks", NULL, NULL), 405);
    CHECK_STR_EQ(e.resp.allow, "GET");
    hx_ex_free(&e);
    CHECK_INT_EQ(
        hx_admin(&h, &e, "GET", "/admin/v1/tenants/t/tasks/" NO_TASK ":cancel", NULL, NULL), 405);
    CHECK_STR_EQ(e.resp.allow, "POST");
    hx_ex_free(&e);
    hx_admin_expect(&h, "POST", "/admin/v1/tenants/t/tasks/" NO_TASK ":retry", NULL, NULL, 404,
                    "tasks take :cancel");
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks:x", NULL, NULL, 404, "(:x)");
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks/" NO_TASK, NULL, NULL, 404, "no task");
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks/a.b", NULL, NULL, 404, "no task");
    CHECK_INT_EQ(hx_admin(&h, &e, "PUT", "/admin/v1/tenants/t/tasks/" NO_TASK, "{}", NULL), 405);
    CHECK_STR_EQ(e.resp.allow, "GET");
    hx_ex_free(&e);
    char url[300], id[160];
    memset(id, 'a', 129); /* one over the longest task id: no task, never looked up */
    id[129] = '\0';
    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s", id);
    hx_admin_expect(&h, "GET", url, NULL, NULL, 404, "no task");
    id[128] = '\0';
    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s:cancel", id);
    hx_admin_expect(&h, "POST", url, NULL, NULL, 404, "no task");
    TEST_PASS("no token 401; wrong method 405 with Allow; unknown verb or task 404");
}

static void test_redis_down(void)
{
    CHECK_INT_EQ(fx_stop_pid(h.fx.redis_pid, 5000), 0);
    h.fx.redis_pid = 0;
    char url[200];
    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s", task_b);
    static const char msg[] = "(Redis) unavailable; try again"; /* (the registry's, first) */
    hx_admin_expect(&h, "GET", "/admin/v1/tenants/t/tasks", NULL, NULL, 503, msg);
    hx_admin_expect(&h, "GET", url, NULL, NULL, 503, msg);
    snprintf(url, sizeof(url), "/admin/v1/tenants/t/tasks/%s:cancel", task_b);
    hx_admin_expect(&h, "POST", url, NULL, NULL, 503, msg);
    TEST_PASS("Redis down: 503");
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_list();
    test_cancel();
    test_history();
    test_errors();
    test_redis_down();
    hx_stop(&h);
    return 0;
}
