/*
 * Tests ingress/api/tasksapi.c: GET /v1/tasks, GET /v1/tasks/{task_id} and POST
 * /v1/tasks/{task_id}/cancel on synthetic requests (tests/handlers/harness.h), over tasks made
 * by MCP tools/call of a task-mode tool and run by a real worker: the task and, once it ends,
 * its result; the listing's pages, cursor and status filter; cancel and its 409; another
 * tenant's task answering exactly like a missing one; the path, method and credential errors;
 * 503 with Redis down.
 */
#include "check.h"
#include "harness.h"

#include "names.h"
#include "tasksapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OTHER_KEY "other-key-0123456"
#define KEY_B "key-b-0123456789"
#define KEY_ALL "key-all-0123456789"
#define NO_TASK "00000000-0000-4000-8000-000000000000"

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "   {\"id\": \"k-b\", \"key\": \"" KEY_B "\"},"
    "   {\"id\": \"k-all\", \"key\": \"" KEY_ALL "\", \"scopes\": [\"tasks:all\"]}]},"
    "  {\"id\": \"other\", \"api_keys\": [{\"id\": \"k2\", \"key\": \"" OTHER_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"
    "  {\"tenant\": \"other\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;
static const char *const other[] = {"Authorization", "Bearer " OTHER_KEY, NULL};
static const char *const as_b[] = {"Authorization", "Bearer " KEY_B, NULL};
static const char *const as_all[] = {"Authorization", "Bearer " KEY_ALL, NULL};

/* One request to the route: url may carry a query (split into arguments). */
static int api(hx_ex_t *e, const char *method, const char *url, const char *const hdrs[], int auth)
{
    char path[512];
    snprintf(path, sizeof(path), "%s", url);
    hx_ex_init(&h, e, method, url, NULL, auth, hdrs);
    hx_ex_query(e, path);
    ing_tasksapi_route(&e->req, path, method, &e->resp);
    hx_ex_parse(e);
    return e->resp.status;
}

static void expect(const char *method, const char *url, const char *const hdrs[], int status,
                   const char *error)
{
    hx_ex_t e;
    CHECK_INT_EQ(api(&e, method, url, hdrs, 1), status);
    CHECK_STR_EQ(e.resp.content_type, "application/json");
    CHECK_STR_EQ(hx_str(&e, "error"), error);
    hx_ex_free(&e);
}

/* tools/call of the task-mode tool report with {"text": text}: the new task's id into id. */
static void new_task(char *id, size_t size, const char *text)
{
    char args[200];
    snprintf(args, sizeof(args), "{\"text\":\"%s\"}", text);
    hx_task_call(&h, "report", args, NULL, id, size);
}

static const cJSON *item(const hx_ex_t *e, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(e->json, k);
}

static char task_a[64], task_b[64];

static void test_get(void)
{
    new_task(task_a, sizeof(task_a), "a");
    char url[200];
    snprintf(url, sizeof(url), "/v1/tasks/%s", task_a);
    hx_ex_t e;
    CHECK_INT_EQ(api(&e, "GET", url, NULL, 1), 200);
    CHECK_STR_EQ(hx_str(&e, "taskId"), task_a);
    CHECK_STR_EQ(hx_str(&e, "status"), "working");
    CHECK_STR_EQ(hx_str(&e, "tool"), "report");
    CHECK_STR_EQ(hx_str(&e, "server"), "default");
    CHECK(hx_str(&e, "createdAt") != NULL && hx_str(&e, "lastUpdatedAt") != NULL);
    CHECK(cJSON_IsNumber(item(&e, "ttlMs")));
    CHECK(cJSON_IsNumber(item(&e, "pollIntervalMs")));
    CHECK(item(&e, "result") == NULL && item(&e, "error") == NULL);
    hx_ex_free(&e);

    /* another tenant's task answers exactly like a missing one */
    hx_ex_t mine, theirs;
    CHECK_INT_EQ(api(&mine, "GET", "/v1/tasks/" NO_TASK, NULL, 1), 404);
    CHECK_INT_EQ(api(&theirs, "GET", url, other, 1), 404);
    CHECK_STR_EQ(theirs.resp.body, mine.resp.body);
    CHECK_STR_EQ(hx_str(&theirs, "error"), "no such task");
    hx_ex_free(&mine);
    hx_ex_free(&theirs);
    expect("GET", "/v1/tasks/a.b", NULL, 404, "no such task");
}

static void test_paths_and_methods(void)
{
    expect("GET", "/v1/tasks/", NULL, 404, "not found");
    expect("GET", "/v1/tasks/x/y", NULL, 404, "not found");
    expect("POST", "/v1/tasks/x/cancel/y", NULL, 404, "not found");
    expect("POST", "/v1/tasks//cancel", NULL, 404, "not found");
    expect("GET", "/v1/tasksx", NULL, 404, "not found");
    hx_ex_t e;
    CHECK_INT_EQ(api(&e, "DELETE", "/v1/tasks/" NO_TASK, NULL, 1), 405);
    CHECK_STR_EQ(e.resp.allow, "GET, HEAD");
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "POST", "/v1/tasks", NULL, 1), 405);
    CHECK_STR_EQ(e.resp.allow, "GET, HEAD");
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks/" NO_TASK "/cancel", NULL, 1), 405);
    CHECK_STR_EQ(e.resp.allow, "POST");
    hx_ex_free(&e);
    /* no credential, or a wrong one: 401 with the challenge, before anything is looked up */
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks/" NO_TASK, NULL, 0), 401);
    CHECK(e.resp.www_auth[0] != '\0');
    hx_ex_free(&e);
    const char *wrong[] = {"Authorization", "Bearer nope-nope-nope-nope", NULL};
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks", wrong, 1), 401);
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "POST", "/v1/tasks/" NO_TASK "/cancel", NULL, 0), 401);
    hx_ex_free(&e);
}

/* The id of the listing's i-th task. */
static const char *listed(const hx_ex_t *e, int i)
{
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(item(e, "tasks"), i), "taskId"));
}

/* Newest first, 50 a page, the cursor as MCP tasks/list's; the status filter; no result in a
 * listing; another tenant sees none of them. */
static void test_list(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK_STR_EQ(listed(&e, 0), task_a);
    CHECK_STR_EQ(hx_str(&e, "tasks.0.tool"), "report");
    CHECK(cJSON_IsNull(item(&e, "nextCursor")));
    hx_ex_free(&e);
    for (int i = 0; i < 50; i++) { /* 51 with task_a */
        char id[64];
        fx_sleep_ms(1);
        new_task(id, sizeof(id), "n");
    }
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks?cursor=", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 50);
    CHECK_STR_EQ(hx_str(&e, "nextCursor"), "t50");
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks?cursor=t50", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK_STR_EQ(listed(&e, 0), task_a);
    CHECK(cJSON_IsNull(item(&e, "nextCursor")));
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks?status=working&cursor=t50", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks?status=completed", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 0);
    CHECK(cJSON_IsNull(item(&e, "nextCursor")));
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks", other, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 0);
    hx_ex_free(&e);
    expect("GET", "/v1/tasks?cursor=t0", NULL, 400, "cursor is not one this API returned");
    expect("GET", "/v1/tasks?cursor=50", NULL, 400, "cursor is not one this API returned");
    expect("GET", "/v1/tasks?status=done", NULL, 400,
           "status must be working, input_required, completed, failed or cancelled");
}

/* Cancel answers the cancelled task; again, 409; another tenant's or a missing task, 404. */
static void test_cancel(void)
{
    char url[200];
    snprintf(url, sizeof(url), "/v1/tasks/%s/cancel", task_a);
    expect("POST", url, other, 404, "no such task");
    expect("POST", "/v1/tasks/" NO_TASK "/cancel", NULL, 404, "no such task");
    hx_ex_t e;
    CHECK_INT_EQ(api(&e, "POST", url, NULL, 1), 200);
    CHECK_STR_EQ(hx_str(&e, "taskId"), task_a);
    CHECK_STR_EQ(hx_str(&e, "status"), "cancelled");
    CHECK(item(&e, "pollIntervalMs") == NULL);
    hx_ex_free(&e);
    expect("POST", url, NULL, 409, "Cannot cancel task: already in a terminal status");
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks?status=cancelled&cursor=t50", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK_STR_EQ(listed(&e, 0), task_a);
    hx_ex_free(&e);
}

/* A worker runs a task: GET shows it completed with the tool's CallToolResult. */
static void test_result(void)
{
    new_task(task_b, sizeof(task_b), "from b");
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w1", env);
    CHECK(w > 0);
    char url[200];
    snprintf(url, sizeof(url), "/v1/tasks/%s", task_b);
    hx_ex_t e;
    int done = 0;
    for (int i = 0; i < 600 && !done; i++) {
        CHECK_INT_EQ(api(&e, "GET", url, NULL, 1), 200);
        done = strcmp(hx_str(&e, "status"), "working") != 0;
        if (!done) {
            hx_ex_free(&e);
            fx_sleep_ms(50);
        }
    }
    CHECK(done);
    CHECK_STR_EQ(hx_str(&e, "status"), "completed");
    CHECK(item(&e, "pollIntervalMs") == NULL);
    const cJSON *result = item(&e, "result");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(result, "isError")));
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(result, "structuredContent"), "text")),
                 "from b");
    hx_ex_free(&e);
    /* the worker ran the other 50 too (task_a was cancelled): 51 completed of 52, newest
     * first, 50 and then 1 */
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks?status=completed", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 50);
    CHECK_STR_EQ(listed(&e, 0), task_b);
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(item(&e, "tasks"), 0), "result") ==
          NULL);
    CHECK_STR_EQ(hx_str(&e, "nextCursor"), "t50");
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks?status=completed&cursor=t50", NULL, 1), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 1);
    CHECK(cJSON_IsNull(item(&e, "nextCursor")));
    hx_ex_free(&e);
    snprintf(url, sizeof(url), "/v1/tasks/%s/cancel", task_b);
    expect("POST", url, NULL, 409, "Cannot cancel task: already in a terminal status");
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
}

/* 1 when the listing page e holds the task id. */
static int lists(const hx_ex_t *e, const char *id)
{
    for (int i = 0; i < cJSON_GetArraySize(item(e, "tasks")); i++)
        if (strcmp(listed(e, i), id) == 0)
            return 1;
    return 0;
}

/* A task belongs to the key that created it (docs/security.md "Ownership model"): another key of
 * the same tenant gets exactly what a missing task gets, and the listing leaves it out; a key
 * holding tasks:all sees it, lists it and may cancel it. */
static void test_ownership(void)
{
    char id[64], url[200], curl[240];
    new_task(id, sizeof(id), "mine");
    snprintf(url, sizeof(url), "/v1/tasks/%s", id);
    snprintf(curl, sizeof(curl), "/v1/tasks/%s/cancel", id);
    hx_ex_t e, missing;
    CHECK_INT_EQ(api(&missing, "GET", "/v1/tasks/" NO_TASK, as_b, 1), 404);
    CHECK_INT_EQ(api(&e, "GET", url, as_b, 1), 404);
    CHECK_STR_EQ(e.resp.body, missing.resp.body);
    hx_ex_free(&e);
    hx_ex_free(&missing);
    expect("POST", curl, as_b, 404, "no such task");
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks", as_b, 1), 200);
    CHECK(!lists(&e, id));
    CHECK_INT_EQ(cJSON_GetArraySize(item(&e, "tasks")), 0);
    hx_ex_free(&e);
    /* the creator and the permission see it */
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks", NULL, 1), 200);
    CHECK(lists(&e, id));
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", "/v1/tasks", as_all, 1), 200);
    CHECK(lists(&e, id));
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", url, as_all, 1), 200);
    CHECK_STR_EQ(hx_str(&e, "status"), "working");
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "POST", curl, as_all, 1), 200);
    CHECK_STR_EQ(hx_str(&e, "status"), "cancelled");
    hx_ex_free(&e);
    /* a task written before owners were recorded: the permission only */
    redisReply *r = hx_redis(&h, "HDEL " NAMES_KEY_TASK "%s owner", id);
    CHECK(r != NULL);
    freeReplyObject(r);
    CHECK_INT_EQ(api(&e, "GET", url, NULL, 1), 404);
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "GET", url, as_all, 1), 200);
    hx_ex_free(&e);
}

static void test_redis_down(void)
{
    CHECK_INT_EQ(fx_stop_pid(h.fx.redis_pid, 5000), 0);
    h.fx.redis_pid = 0;
    char url[200];
    snprintf(url, sizeof(url), "/v1/tasks/%s", task_b);
    static const char msg[] = "task store (Redis) unavailable; try again";
    expect("GET", url, NULL, 503, msg);
    expect("GET", "/v1/tasks", NULL, 503, msg);
    snprintf(url, sizeof(url), "/v1/tasks/%s/cancel", task_b);
    expect("POST", url, NULL, 503, msg);
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_get();
    test_paths_and_methods();
    test_list();
    test_cancel();
    test_result();
    test_ownership();
    test_redis_down();
    hx_stop(&h);
    return 0;
}
