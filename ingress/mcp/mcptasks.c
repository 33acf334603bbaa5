/* MCP Tasks over the one task model (tasks.h), both surfaces of docs/protocol.md, "MCP Tasks":
 *
 * - 2025-11-25: tasks/get, tasks/result, tasks/list and tasks/cancel. tasks/result of a task
 *   still running parks the request without a thread, like a tools/call (pending.h): the
 *   task's end wakes it through this replica's reply stream.
 * - 2026-07-28, the io.modelcontextprotocol/tasks extension: tasks/get (a DetailedTask, with
 *   `result` or `error` once terminal), tasks/update and tasks/cancel (empty acknowledgements),
 *   for clients that declare the extension on the request; others get -32021.
 *
 * A task whose job asks its client something (docs/protocol.md, "Asking the user") shows
 * status input_required while the question is open (tasks.h); the extension's tasks/get
 * carries the question as inputRequests and tasks/update answers it (mrtr.h: responses to
 * keys not outstanding are ignored). A 2025-11-25 tasks/result of such a task, from a client
 * that declared a capability a tool may use and accepts text/event-stream, streams: the
 * question's requests come on it (mcpask.h's legacy hook, with the related-task _meta), the
 * client POSTs its responses, and the result ends the stream.
 *
 * A task of another tenant, or of a tool the caller may not see (access.h), is "not found"
 * exactly like a missing one, and tasks/list leaves it out.
 */
#include "mcptasks.h"
#include "mcpask.h"
#include "mrtr.h"

#include "era.h"
#include "err.h"
#include "log.h"
#include "tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESULT_WAIT_MAX_MS (3600LL * 1000) /* tasks/result waits at most this long */

static void not_found(ing_resp_t *resp, const cJSON *id)
{
    ing_mcpreq_resp_error(resp, 200, id, RPC_INVALID_PARAMS,
                          "Failed to retrieve task: Task not found", NULL);
}

static void unavailable(ing_resp_t *resp, const cJSON *id)
{
    ing_mcpreq_resp_error(resp, 200, id, RPC_INTERNAL_ERROR,
                          "task store (Redis) unavailable; try again", NULL);
}

/* Answers a failed task store call (rc < 0: not found or Redis down) and returns 1; 0 when
 * rc is a success. */
static int answered(int rc, ing_resp_t *resp, const cJSON *id)
{
    if (rc >= 0)
        return 0;
    if (rc == MCPQ_ENOTFOUND)
        not_found(resp, id);
    else
        unavailable(resp, id);
    return 1;
}

/* The terminal task's answer to tasks/result: its CallToolResult with the related-task
 * _meta, or -32800 for a cancelled task. */
static void answer_result(ing_mcp_t *m, const rpc_msg_t *msg, const ing_tasks_t *t,
                          ing_resp_t *resp)
{
    cJSON *result = ing_tasks_result(t);
    if (!result) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_REQUEST_CANCELLED,
                              "the task was cancelled; it has no result", NULL);
        return;
    }
    ing_tasks_related_meta(result, ing_tasks_field(t, "id"));
    ing_mcpreq_resp_result_obj(m, resp, msg->id, result);
}

/* Looks at the task: 0 when it still runs (nothing answered), else 1 with resp filled (its
 * result, not found, or Redis unavailable). */
static int answer_if_done(ing_mcp_t *m, const rpc_msg_t *msg, const char *task_id, ing_resp_t *resp)
{
    ing_tasks_t t;
    if (answered(ing_mcpreq_task_get(m, task_id, &t), resp, msg->id))
        return 1;
    const char *state = ing_tasks_field(&t, "state");
    int done = strcmp(state, "waiting") != 0 && strcmp(state, "running") != 0;
    if (done)
        answer_result(m, msg, &t, resp);
    else if (strlen(task_id) >= ING_JOB_ID_LEN)
        not_found(resp, msg->id);
    ing_tasks_cleanup(&t);
    return done || strlen(task_id) >= ING_JOB_ID_LEN;
}

/* A tasks/result streams (SSE) when its client accepts it and declared a capability a tool
 * may use (elicitation, sampling, roots): the task's questions can then reach it. Others get
 * one JSON answer, as before any tool could ask. */
static int may_stream(const ing_mcp_t *m, const rpc_msg_t *msg)
{
    const char *accept = ing_req_header(m->req, "Accept");
    if (!accept || !strcasestr(accept, "text/event-stream"))
        return 0;
    cJSON *client = ing_mcpask_envelope_client(m, msg);
    int any = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(client, "capabilities")) > 0;
    cJSON_Delete(client);
    return any;
}

/* A question the task's job asked before this replica waited on it (the worker hands a
 * question only to the replicas waiting then): handed to the reader now. Best effort. */
static void replay_question(ing_mcp_t *m, const char *task_id)
{
    ing_tasks_t t;
    if (ing_mcpreq_task_get(m, task_id, &t) < 0)
        return;
    if (ing_tasks_input_replay(m->req->ctx->kv, &t, m->req->ctx->reply_key) < 0)
        log_event(LOG_WARN, "could not hand a task's open question to tasks/result", "task_id",
                  task_id, (char *)NULL);
    ing_tasks_cleanup(&t);
}

/* tasks/result: 1 when parked. The call is in the pending table before this replica is
 * registered as a waiter and before the second look, so the task's end is never missed: it
 * either shows in that look, or its reply-stream entry finds the call waiting. */
static int do_result(ing_mcp_t *m, const rpc_msg_t *msg, const char *task_id, ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    if (answer_if_done(m, msg, task_id, resp))
        return 0;
    ing_req_t *req = m->req;
    ing_call_t *call = ing_mcpreq_call(m);
    if (!call) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return 0;
    }
    snprintf(call->job_id, sizeof(call->job_id), "%s", task_id);
    rpc_id_str(msg->id, call->id_json, sizeof(call->id_json));
    call->conn = req->conn;
    call->deadline_mono = util_mono_ms() + RESULT_WAIT_MAX_MS;
    call->sse_ok = may_stream(m, msg);
    call->modern = 0;
    call->log_min = -1;
    call->task_result = 1;
    call->on_input = ing_mcpask_hook_legacy; /* without SSE: UNREACHABLE */
    call->input_arg = NULL;
    snprintf(call->tool, sizeof(call->tool), "tasks/result");
    if (ing_mcpreq_enqueue(m, call) < 0) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "internal error; try again",
                              NULL);
        return 0;
    }
    if (ing_tasks_wait(ctx->kv, task_id, ctx->reply_key) < 0) {
        ing_mcpreq_dequeue(m, call);
        unavailable(resp, msg->id);
        return 0;
    }
    if (answer_if_done(m, msg, task_id, resp)) { /* it ended in between */
        if (ing_mcpreq_dequeue(m, call) || !m->batch)
            return 0;
        /* A batch element the reply stream completed meanwhile keeps that answer (a
         * streaming batch may have sent it already): one response per element. */
        return 1;
    }
    replay_question(m, task_id);
    return ing_mcpreq_park(m, call);
}

static void do_list(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg->params, "cursor");
    long long offset = 0;
    if (c && !cJSON_IsNull(c) &&
        (!cJSON_IsString(c) || ing_tasks_cursor(c->valuestring, &offset) < 0)) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, "invalid cursor", NULL);
        return;
    }
    cJSON *page =
        ing_tasks_page_kept(m->req->ctx->kv, m->tenant->id, offset, 0, NULL,
                            m->req->ctx->set->task_retention_s, ing_mcpreq_task_visible, m);
    if (!page) {
        unavailable(resp, msg->id);
        return;
    }
    ing_mcpreq_resp_result_obj(m, resp, msg->id, page);
}

/* params.taskId, or NULL after answering -32602. */
static const char *task_id_param(const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *task_id =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "taskId"));
    if (!task_id)
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "params.taskId must be a string", NULL);
    return task_id;
}

/* Cancels; a task already ended is an error for 2025-11-25 and acknowledged for the
 * extension (cancellation there is eventually consistent and may end in another terminal
 * status). 1 when answered with an error. */
static int cancel(ing_mcp_t *m, const rpc_msg_t *msg, const char *task_id, int ext,
                  ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    ing_tasks_t t;
    if (answered(ing_mcpreq_task_get(m, task_id, &t), resp, msg->id)) /* its tool hidden too */
        return 1;
    ing_tasks_cleanup(&t);
    int rc = ing_tasks_cancel(ctx->kv, m->tenant->id, task_id, "cancelled by tasks/cancel",
                              ctx->set->task_retention_s);
    if (rc == MCPQ_EINVAL && !ext) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "Cannot cancel task: already in a terminal status", NULL);
        return 1;
    }
    return answered(rc == MCPQ_EINVAL ? 0 : rc, resp, msg->id);
}

/* Answers with the task as the surface renders it (ext: the DetailedTask). */
static void answer_task(ing_mcp_t *m, const rpc_msg_t *msg, const char *task_id, int ext,
                        ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    ing_tasks_t t;
    if (answered(ing_mcpreq_task_get(m, task_id, &t), resp, msg->id))
        return;
    ing_mcpreq_resp_result_obj(m, resp, msg->id,
                               ing_tasks_mcp(&t, ext, ctx->set->task_retention_s));
    ing_tasks_cleanup(&t);
}

static void method_not_found(const rpc_msg_t *msg, int status, ing_resp_t *resp)
{
    char buf[200];
    snprintf(buf, sizeof(buf), "Method not found: %.120s", msg->method);
    ing_mcpreq_resp_error(resp, status, msg->id, RPC_METHOD_NOT_FOUND, buf, NULL);
}

int ing_mcptasks_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *meth = msg->method;
    if (strcmp(meth, "tasks/list") == 0) {
        do_list(m, msg, resp);
        return 0;
    }
    int get = strcmp(meth, "tasks/get") == 0, result = strcmp(meth, "tasks/result") == 0;
    int cancelling = strcmp(meth, "tasks/cancel") == 0;
    if (!get && !result && !cancelling) {
        method_not_found(msg, 200, resp);
        return 0;
    }
    const char *task_id = task_id_param(msg, resp);
    if (!task_id)
        return 0;
    if (result)
        return do_result(m, msg, task_id, resp);
    if (cancelling && cancel(m, msg, task_id, 0, resp))
        return 0;
    answer_task(m, msg, task_id, 0, resp);
    return 0;
}

void ing_mcptasks_ext(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *meth = msg->method;
    int get = strcmp(meth, "tasks/get") == 0, update = strcmp(meth, "tasks/update") == 0;
    int cancelling = strcmp(meth, "tasks/cancel") == 0;
    if (!get && !update && !cancelling) {
        method_not_found(msg, 404, resp);
        return;
    }
    if (!ing_era_declares_tasks_ext(msg)) {
        cJSON *data = cJSON_CreateObject();
        cJSON_AddObjectToObject(
            cJSON_AddObjectToObject(cJSON_AddObjectToObject(data, "requiredCapabilities"),
                                    "extensions"),
            ING_EXT_TASKS);
        ing_mcpreq_resp_error(resp, 400, msg->id, RPC_MISSING_CAPABILITY,
                              "Missing required client capability: declare the " ING_EXT_TASKS
                              " extension in params._meta[\"" ING_META_CLIENT_CAPS "\"].extensions",
                              data);
        cJSON_Delete(data);
        return;
    }
    const char *task_id = task_id_param(msg, resp);
    if (!task_id)
        return;
    if (get) {
        answer_task(m, msg, task_id, 1, resp);
        return;
    }
    if (update) {
        const cJSON *responses = cJSON_GetObjectItemCaseSensitive(msg->params, "inputResponses");
        if (!cJSON_IsObject(responses)) {
            ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                                  "params.inputResponses must be an object", NULL);
            return;
        }
        ing_tasks_t t;
        if (answered(ing_mcpreq_task_get(m, task_id, &t), resp, msg->id))
            return;
        int refused = ing_mrtr_task_update(m, msg, &t, resp);
        ing_tasks_cleanup(&t);
        if (refused)
            return;
    } else if (cancel(m, msg, task_id, 1, resp)) {
        return;
    }
    ing_mcpreq_resp_result_obj(m, resp, msg->id, cJSON_CreateObject());
}
