/*
 * Tests ingress/api/whapi.c: GET /v1/webhooks/deliveries and POST
 * /v1/webhooks/deliveries/{id}/redeliver on synthetic requests (tests/handlers/harness.h),
 * over deliveries a real worker's task made: who may list and redeliver them
 * (docs/security.md "Ownership model"). A delivery belongs to its task: the key that created the
 * task lists and redelivers it, a key holding tasks:all too; another key of the same tenant
 * sees none of them and its redelivery answers exactly as for a missing delivery.
 */
#include "check.h"
#include "harness.h"

#include "names.h"
#include "whapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_B "key-b-0123456789"
#define KEY_ALL "key-all-0123456789"
#define NO_DELIVERY "msg_0000000000000000_1"

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "   {\"id\": \"k-b\", \"key\": \"" KEY_B "\"},"
    "   {\"id\": \"k-all\", \"key\": \"" KEY_ALL "\", \"scopes\": [\"tasks:all\"]}],"
    "   \"webhooks\": [{\"id\": \"wh\", \"url\": \"http://127.0.0.1:9/hook\","
    "    \"secret\": \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\","
    "    \"events\": [\"task.running\", \"task.completed\"]}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;
static const char *const as_b[] = {"Authorization", "Bearer " KEY_B, NULL};
static const char *const as_all[] = {"Authorization", "Bearer " KEY_ALL, NULL};

static int api(hx_ex_t *e, const char *method, const char *url, const char *const hdrs[])
{
    char path[512];
    snprintf(path, sizeof(path), "%s", url);
    hx_ex_init(&h, e, method, url, NULL, 1, hdrs);
    hx_ex_query(e, path);
    ing_whapi_route(&e->req, path, method, &e->resp);
    hx_ex_parse(e);
    return e->resp.status;
}

/* How many deliveries of task the listing as hdrs holds (its first one's id into first). */
static int deliveries_of(const char *task, const char *const hdrs[], char *first, size_t n)
{
    char url[200];
    snprintf(url, sizeof(url), "/v1/webhooks/deliveries?task=%s", task);
    hx_ex_t e;
    CHECK_INT_EQ(api(&e, "GET", url, hdrs), 200);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(e.json, "deliveries");
    int count = cJSON_GetArraySize(arr);
    if (first && n) {
        const char *id = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, 0), "id"));
        snprintf(first, n, "%s", id ? id : "");
    }
    hx_ex_free(&e);
    return count;
}

static void test_ownership(void)
{
    hx_ex_t e;
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"report\",\"arguments\":{\"text\":\"secret result\"}}}",
           NULL);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
    char task[64];
    snprintf(task, sizeof(task), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId"))
                 ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId"))
                 : "");
    CHECK_INT_EQ((int)strlen(task), 36);
    hx_ex_free(&e);
    const char *const env[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w1", env);
    CHECK(w > 0);
    char id[64] = "";
    int mine = 0;
    for (int i = 0; i < 400 && mine < 2; i++) { /* task.running and task.completed */
        mine = deliveries_of(task, NULL, id, sizeof(id));
        if (mine < 2)
            fx_sleep_ms(50);
    }
    CHECK_INT_EQ(mine, 2);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);

    /* another key of the tenant: none listed, by task or at all; redelivery as missing */
    CHECK_INT_EQ(deliveries_of(task, as_b, NULL, 0), 0);
    CHECK_INT_EQ(api(&e, "GET", "/v1/webhooks/deliveries", as_b), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e.json, "deliveries")), 0);
    hx_ex_free(&e);
    char url[200];
    snprintf(url, sizeof(url), "/v1/webhooks/deliveries/%s/redeliver", id);
    hx_ex_t missing;
    CHECK_INT_EQ(api(&missing, "POST", "/v1/webhooks/deliveries/" NO_DELIVERY "/redeliver", as_b),
                 404);
    CHECK_INT_EQ(api(&e, "POST", url, as_b), 404);
    CHECK_STR_EQ(e.resp.body, missing.resp.body);
    hx_ex_free(&e);
    hx_ex_free(&missing);
    /* the creator and the permission */
    CHECK_INT_EQ(deliveries_of(task, as_all, NULL, 0), 2);
    CHECK_INT_EQ(api(&e, "POST", url, NULL), 202);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e.json, "status")),
                 "pending");
    hx_ex_free(&e);
    CHECK_INT_EQ(api(&e, "POST", url, as_all), 202);
    hx_ex_free(&e);

    /* a delivery made before owners were recorded: the permission only */
    redisReply *r = hx_redis(&h, "HDEL " NAMES_KEY_WH_DELIVERY "%s owner", id);
    CHECK(r != NULL);
    freeReplyObject(r);
    CHECK_INT_EQ(deliveries_of(task, NULL, NULL, 0), 1);
    CHECK_INT_EQ(api(&e, "POST", url, NULL), 404);
    hx_ex_free(&e);
    CHECK_INT_EQ(deliveries_of(task, as_all, NULL, 0), 2);
}

int main(void)
{
    const char *const args[] = {"--webhook-allow-private", "1", NULL};
    hx_start(&h, config, args);
    test_ownership();
    hx_stop(&h);
    return 0;
}
