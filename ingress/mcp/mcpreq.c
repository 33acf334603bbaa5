/*
 * mcpreq.c - one MCP request being answered (mcpreq.h): its JSON-RPC answers and its wait
 * for a worker, shared by the method handlers (mcp.c, toolcall.c, mcptasks.c, system.c).
 */
#include "mcpreq.h"

#include "owner.h"
#include "batch.h"
#include "err.h"
#include "era.h"
#include "pending.h"
#include "version.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

void ing_mcpreq_resp_json(ing_resp_t *resp, int status, char *body)
{
    resp->status = body ? status : 500;
    resp->body = body;
    resp->content_type = "application/json";
}

void ing_mcpreq_resp_error(ing_resp_t *resp, int status, const cJSON *id, int code, const char *msg,
                           const cJSON *data)
{
    ing_mcpreq_resp_json(resp, status, rpc_error_str(id, code, msg, data));
}

void ing_mcpreq_resp_quota(ing_resp_t *resp, const cJSON *id, ing_quota_t q, long long limit)
{
    char msg[160];
    ing_quota_message(q, limit, msg, sizeof(msg));
    cJSON *data = ing_quota_data(q, limit);
    ing_mcpreq_resp_error(resp, 429, id, RPC_RATE_LIMITED, msg, data);
    cJSON_Delete(data);
}

void ing_mcpreq_resp_not_found(const ing_mcp_t *m, ing_resp_t *resp, const cJSON *id,
                               const char *uri)
{
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "uri", uri);
    ing_mcpreq_resp_error(resp, 200, id, m->modern ? RPC_INVALID_PARAMS : RPC_RESOURCE_NOT_FOUND,
                          "Resource not found", data);
    cJSON_Delete(data);
}

/* Fills resp with a JSON-RPC result (takes result_json; NULL: -32603 out of memory). */
static void resp_result_owned(ing_resp_t *resp, const cJSON *id, char *result_json)
{
    if (!result_json) {
        ing_mcpreq_resp_error(resp, 200, id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    ing_mcpreq_resp_json(resp, 200, rpc_result_str(id, result_json));
    free(result_json);
}

cJSON *ing_mcpreq_server_info(void)
{
    cJSON *info = cJSON_CreateObject();
    cJSON_AddStringToObject(info, "name", "mcpq");
    cJSON_AddStringToObject(info, "version", version_get());
    return info;
}

/* resultType and _meta serverInfo, which every 2026-07-28 result carries. */
void ing_mcpreq_modern_result(cJSON *result)
{
    if (!cJSON_GetObjectItemCaseSensitive(result, "resultType"))
        cJSON_AddStringToObject(result, "resultType", "complete");
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");
    if (!cJSON_IsObject(meta)) {
        cJSON_DeleteItemFromObjectCaseSensitive(result, "_meta");
        meta = cJSON_AddObjectToObject(result, "_meta");
    }
    if (meta && !cJSON_GetObjectItemCaseSensitive(meta, ING_META_SERVER_INFO))
        cJSON_AddItemToObject(meta, ING_META_SERVER_INFO, ing_mcpreq_server_info());
}

void ing_mcpreq_resp_result_obj(ing_mcp_t *m, ing_resp_t *resp, const cJSON *id, cJSON *result)
{
    if (m->modern && result)
        ing_mcpreq_modern_result(result);
    char *s = result ? cJSON_PrintUnformatted(result) : NULL;
    cJSON_Delete(result);
    resp_result_owned(resp, id, s);
}

ing_call_t *ing_mcpreq_call(ing_mcp_t *m)
{
    return m->batch ? ing_batch_call(m->batch, m->elem) : &m->req->call;
}

int ing_mcpreq_enqueue(ing_mcp_t *m, ing_call_t *call)
{
    call->group = m->batch ? &m->req->call : NULL;
    int rc = ing_pending_add(m->req->ctx->pending, call);
    if (rc == 0 && !m->batch)
        m->req->has_call = 1;
    return rc;
}

int ing_mcpreq_dequeue(ing_mcp_t *m, ing_call_t *call)
{
    int was = ing_pending_remove(m->req->ctx->pending, call);
    if (!m->batch)
        m->req->has_call = 0;
    return was;
}

int ing_mcpreq_park(ing_mcp_t *m, ing_call_t *call)
{
    if (m->batch)
        return 1; /* the batch parks once, when every element is dispatched */
    return ing_pending_park(m->req->ctx->pending, call);
}

int ing_mcpreq_task_visible(void *arg, const ing_tasks_t *task)
{
    const ing_mcp_t *m = arg;
    return ing_owner_may(m->reg, m->who, ing_tasks_field(task, "owner"),
                         ing_tasks_field(task, "server"), ing_tasks_field(task, "tool"));
}

int ing_mcpreq_task_get(const ing_mcp_t *m, const char *id, ing_tasks_t *task)
{
    int rc = ing_tasks_get(m->req->ctx->kv, m->tenant->id, id, task);
    if (rc == 0 && !ing_mcpreq_task_visible((void *)m, task)) {
        ing_tasks_cleanup(task);
        return MCPQ_ENOTFOUND;
    }
    return rc;
}
