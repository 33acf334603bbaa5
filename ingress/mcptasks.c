/* MCP Tasks, 2025-11-25 surface (SPEC 5.2): tasks/get, tasks/result, tasks/list and
 * tasks/cancel over the one task model (tasks.h). A task of another tenant is "not found"
 * exactly like a missing one. tasks/result of a task still running parks the request without
 * a thread, like a tools/call (pending.h): the task's end wakes it through this replica's
 * reply stream. */
#include "mcpint.h"

#include "err.h"
#include "tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_PAGE 50
#define RESULT_WAIT_MAX_MS (3600LL * 1000) /* tasks/result waits at most this long */

static void not_found(ing_resp_t *resp, const cJSON *id)
{
    ing_resp_error(resp, 200, id, RPC_INVALID_PARAMS, "Failed to retrieve task: Task not found",
                   NULL);
}

static void unavailable(ing_resp_t *resp, const cJSON *id)
{
    ing_resp_error(resp, 200, id, RPC_INTERNAL_ERROR, "task store (Redis) unavailable; try again",
                   NULL);
}

/* The terminal task's answer to tasks/result: its CallToolResult with the related-task
 * _meta, or -32800 for a cancelled task. */
static void answer_result(ing_mcp_t *m, const rpc_msg_t *msg, const ing_task_t *t, ing_resp_t *resp)
{
    cJSON *result = ing_task_result(t);
    if (!result) {
        ing_resp_error(resp, 200, msg->id, RPC_REQUEST_CANCELLED,
                       "the task was cancelled; it has no result", NULL);
        return;
    }
    ing_task_related_meta(result, ing_task_field(t, "id"));
    ing_resp_result_obj(m, resp, msg->id, result);
}

/* tasks/result: 1 when parked. */
static int do_result(ing_mcp_t *m, const rpc_msg_t *msg, const char *task_id, ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    ing_task_t t;
    for (int round = 0; round < 2; round++) {
        int rc = ing_task_get(ctx->kv, m->tenant->id, task_id, &t);
        if (rc == MCPQ_ENOTFOUND) {
            not_found(resp, msg->id);
            return 0;
        }
        if (rc < 0) {
            unavailable(resp, msg->id);
            return 0;
        }
        const char *state = ing_task_field(&t, "state");
        int done = strcmp(state, "waiting") != 0 && strcmp(state, "running") != 0;
        if (done || strlen(task_id) >= ING_JOB_ID_LEN) {
            if (done)
                answer_result(m, msg, &t, resp);
            else
                not_found(resp, msg->id);
            ing_task_cleanup(&t);
            return 0;
        }
        ing_task_cleanup(&t);
        /* Register, then look again: a task that ended in between is answered now. */
        if (round == 0 && ing_task_wait(ctx->kv, task_id, ctx->reply_key) < 0) {
            unavailable(resp, msg->id);
            return 0;
        }
    }
    ing_req_t *req = m->req;
    ing_call_t *call = &req->call;
    snprintf(call->job_id, sizeof(call->job_id), "%s", task_id);
    rpc_id_str(msg->id, call->id_json, sizeof(call->id_json));
    call->conn = req->conn;
    call->deadline_mono = util_mono_ms() + RESULT_WAIT_MAX_MS;
    call->sse_ok = 0;
    call->modern = 0;
    call->log_min = -1;
    call->task_result = 1;
    snprintf(call->tool, sizeof(call->tool), "tasks/result");
    ing_pending_add(ctx->pending, call);
    req->has_call = 1;
    return ing_pending_park(ctx->pending, call) ? 0 : 1;
}

static void do_list(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg->params, "cursor");
    long long offset = 0;
    if (c && !cJSON_IsNull(c) &&
        (!cJSON_IsString(c) || c->valuestring[0] != 't' ||
         util_parse_ll(c->valuestring + 1, 1, 1000000000LL, &offset) < 0)) {
        ing_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, "invalid cursor", NULL);
        return;
    }
    int more = 0;
    cJSON *ids = ing_task_list(m->req->ctx->kv, m->tenant->id, offset, LIST_PAGE, &more);
    if (!ids) {
        unavailable(resp, msg->id);
        return;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(r, "tasks");
    const cJSON *id;
    cJSON_ArrayForEach(id, ids)
    {
        ing_task_t t;
        if (ing_task_get(m->req->ctx->kv, m->tenant->id, id->valuestring, &t) == 0) {
            cJSON_AddItemToArray(arr, ing_task_mcp(&t));
            ing_task_cleanup(&t);
        }
    }
    cJSON_Delete(ids);
    if (more) {
        char next[32];
        snprintf(next, sizeof(next), "t%lld", offset + LIST_PAGE);
        cJSON_AddStringToObject(r, "nextCursor", next);
    }
    ing_resp_result_obj(m, resp, msg->id, r);
}

int ing_mcp_tasks(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *meth = msg->method;
    ing_ctx_t *ctx = m->req->ctx;
    if (strcmp(meth, "tasks/list") == 0) {
        do_list(m, msg, resp);
        return 0;
    }
    int get = strcmp(meth, "tasks/get") == 0, result = strcmp(meth, "tasks/result") == 0;
    int cancel = strcmp(meth, "tasks/cancel") == 0;
    if (!get && !result && !cancel) {
        char buf[200];
        snprintf(buf, sizeof(buf), "Method not found: %.120s", meth);
        ing_resp_error(resp, 200, msg->id, RPC_METHOD_NOT_FOUND, buf, NULL);
        return 0;
    }
    const char *task_id =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "taskId"));
    if (!task_id) {
        ing_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, "params.taskId must be a string",
                       NULL);
        return 0;
    }
    if (result)
        return do_result(m, msg, task_id, resp);
    if (cancel) {
        int rc = ing_task_cancel(ctx->kv, m->tenant->id, task_id, "cancelled by tasks/cancel",
                                 ctx->set->task_retention_s);
        if (rc == MCPQ_EINVAL) {
            ing_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                           "Cannot cancel task: already in a terminal status", NULL);
            return 0;
        }
        if (rc == MCPQ_ENOTFOUND) {
            not_found(resp, msg->id);
            return 0;
        }
        if (rc < 0) {
            unavailable(resp, msg->id);
            return 0;
        }
    }
    ing_task_t t;
    int rc = ing_task_get(ctx->kv, m->tenant->id, task_id, &t);
    if (rc == MCPQ_ENOTFOUND) {
        not_found(resp, msg->id);
        return 0;
    }
    if (rc < 0) {
        unavailable(resp, msg->id);
        return 0;
    }
    ing_resp_result_obj(m, resp, msg->id, ing_task_mcp(&t));
    ing_task_cleanup(&t);
    return 0;
}
