#include "mcpreq.h"
#include "names.h"
#include "toolcall.h"

#include "channels.h"
#include "era.h"
#include "err.h"
#include "idem.h"
#include "files.h"
#include "log.h"
#include "mcp.h"
#include "notify.h"
#include "sch.h"
#include "system.h"
#include "tasks.h"
#include "trace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Arguments the gateway consumes itself (SPEC 4.2); never passed to a tool. */
static const char *const reserved_args[] = {"idempotency_key", "attachments", "RobotId",
                                            "TaskPriority", "channel_id"};

/* A CallToolResult with isError and one text block. */
static cJSON *tool_error_result(const char *text)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(o, "content");
    cJSON *block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "text");
    cJSON_AddStringToObject(block, "text", text);
    cJSON_AddItemToArray(content, block);
    cJSON_AddTrueToObject(o, "isError");
    return o;
}

/* Where notifications/cancelled finds a legacy call's job: per session, else per tenant. */
static void reqmap_key(const ing_mcp_t *m, const char *id_json, char *out, size_t size)
{
    if (m->has_session)
        snprintf(out, size, NAMES_KEY_REQMAP "s:%s:%s", m->session.id, id_json);
    else
        snprintf(out, size, NAMES_KEY_REQMAP "t:%s:%s", m->tenant->id, id_json);
}

/* The tool's own arguments: a copy of params.arguments without the reserved names. */
static cJSON *tool_arguments(const cJSON *args)
{
    cJSON *out = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
    for (size_t i = 0; out && i < sizeof(reserved_args) / sizeof(reserved_args[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(out, reserved_args[i]);
    return out;
}

/* The call's trace (W3C trace context, SPEC section 11): the client's traceparent from the
 * HTTP header, else from params._meta.traceparent, continued with the ingress's own span as
 * parent-id; a new trace when neither parses (an invalid one is ignored, never an error).
 * *state is the tracestate sent along with the traceparent used (the header, or
 * params._meta.tracestate) when it is sane, else NULL; borrowed from the request. */
static void call_trace(ing_mcp_t *m, const rpc_msg_t *msg, trace_ctx_t *t, const char **state)
{
    trace_ctx_t in;
    const cJSON *meta = ing_era_meta(msg);
    const char *hdr = MHD_lookup_connection_value(m->req->conn, MHD_HEADER_KIND, "traceparent");
    const char *st = NULL;
    int have = 0;
    if (hdr && trace_parse(hdr, &in) == 0) {
        have = 1;
        st = MHD_lookup_connection_value(m->req->conn, MHD_HEADER_KIND, "tracestate");
    } else if (trace_parse(
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "traceparent")),
                   &in) == 0) {
        have = 1;
        st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "tracestate"));
    }
    *state = have && trace_state_ok(st) ? st : NULL;
    if ((have ? trace_child(&in, t) : trace_new(t)) < 0)
        memset(t, 0, sizeof(*t)); /* no randomness: the call runs untraced */
}

/* The job envelope (schemas/job.schema.json); args and atts (resolved attachments, may be
 * NULL) are consumed. traceparent (the ingress's span) may be "" for none. */
static cJSON *build_envelope(ing_mcp_t *m, const ing_tool_t *tool, const rpc_msg_t *msg,
                             cJSON *args, cJSON *atts, const char *job_id, long long timeout_ms,
                             const char *traceparent)
{
    ing_ctx_t *ctx = m->req->ctx;
    int64_t now = util_now_ms();
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "v", 1);
    cJSON_AddStringToObject(e, "job_id", job_id);
    cJSON_AddItemToObject(e, "call_id", cJSON_Duplicate(msg->id, 1));
    cJSON_AddStringToObject(e, "tenant", tool->tenant);
    cJSON_AddStringToObject(e, "server", tool->server);
    cJSON_AddStringToObject(e, "tool", tool->name);
    cJSON_AddStringToObject(e, "tool_version", tool->version_id ? tool->version_id : "");
    cJSON_AddItemToObject(e, "arguments", args);
    cJSON_AddItemToObject(e, "attachments", atts ? atts : cJSON_CreateArray());
    cJSON_AddNullToObject(e, "task_id");
    char chan[sizeof(m->channel)];
    long long chan_ttl_ms = ctx->set->channel_ttl_s * 1000;
    if (m->has_session)
        cJSON_AddStringToObject(e, "session_id", m->session.id);
    if (m->channel[0]) {
        snprintf(chan, sizeof(chan), "%s", m->channel);
        chan_ttl_ms = m->channel_ttl_ms;
    } else if (m->has_session) {
        snprintf(chan, sizeof(chan), "c_%s", m->session.id + 2);
        chan_ttl_ms = ctx->set->session_ttl_s * 1000;
    } else {
        char hex[33];
        util_random_hex(hex, 16);
        snprintf(chan, sizeof(chan), "c_%s", hex);
    }
    cJSON_AddStringToObject(e, "channel_id", chan);
    cJSON_AddNumberToObject(e, "channel_ttl_ms", (double)chan_ttl_ms);
    const cJSON *exe = cJSON_GetObjectItemCaseSensitive(tool->version, "executor");
    cJSON_AddItemToObject(e, "executor", cJSON_Duplicate(exe, 1));
    cJSON_AddStringToObject(e, "mode", tool->task_mode ? "task" : "sync");
    cJSON_AddNumberToObject(e, "timeout_ms", (double)timeout_ms);
    cJSON_AddNumberToObject(e, "created_ms", (double)now);
    cJSON_AddNumberToObject(e, "deadline_ms", (double)(now + timeout_ms));
    cJSON_AddStringToObject(e, "reply_to", ctx->reply_key);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(msg->params, "_meta");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
    if (rpc_id_valid(tok))
        cJSON_AddItemToObject(e, "progress_token", cJSON_Duplicate(tok, 1));
    if (traceparent[0])
        cJSON_AddStringToObject(e, "traceparent", traceparent);
    return e;
}

/* RobotId and TaskPriority (SPEC 4.2) from the call's arguments: 0, or -1 with why filled.
 * A robot another tenant declares (config "robots") is refused without saying which tenant;
 * one the caller's tenant declares, or one nobody declares (shared), is taken (README "Task
 * mode, robots and priorities"). */
static int task_routing(const ing_mcp_t *m, const cJSON *args, const char **robot,
                        long long *priority, char *why, size_t why_size)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(args, "RobotId");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(args, "TaskPriority");
    *robot = NULL;
    *priority = 50;
    if (r && !cJSON_IsNull(r)) {
        if (!cJSON_IsString(r) || !task_robot_ok(r->valuestring)) {
            snprintf(why, why_size,
                     "arguments.RobotId must be 1-128 characters of [A-Za-z0-9_.:-]");
            return -1;
        }
        const ing_tenant_t *owner = ing_registry_robot_owner(m->reg, r->valuestring);
        if (owner && strcmp(owner->id, m->tenant->id) != 0) {
            snprintf(why, why_size,
                     "arguments.RobotId: robot \"%s\" is reserved for the tenant that declares it",
                     r->valuestring);
            return -1;
        }
        *robot = r->valuestring;
    }
    if (p && !cJSON_IsNull(p)) {
        if (!cJSON_IsNumber(p) || p->valuedouble != (double)(long long)p->valuedouble ||
            p->valuedouble < 0 || p->valuedouble > 100) {
            snprintf(why, why_size, "arguments.TaskPriority must be an integer from 0 to 100");
            return -1;
        }
        *priority = (long long)p->valuedouble;
    }
    return 0;
}

/* How a call that became a task is answered. */
typedef enum {
    ANSWER_SEED003, /* structuredContent {TaskId, TaskStatus} (SPEC 5.1) */
    ANSWER_MCP2025, /* CreateTaskResult {task} (2025-11-25, params.task) */
    ANSWER_EXT      /* resultType "task" and the Task (2026-07-28 tasks extension) */
} task_answer_t;

/* Which answer a tools/call gets: a task (ANSWER_*) or -1 to run it synchronously. The
 * 2026-07-28 extension leaves the choice to the server: a declaring client gets a task for a
 * task-mode tool and for any tool it sends with params.task (the 2025-11-25 hint, which the
 * gateway honours on that surface too); a client that does not declare it gets the SPEC 5.1
 * answer of a task-mode tool and runs other tools synchronously. */
static int task_answer(const ing_mcp_t *m, const rpc_msg_t *msg, const ing_tool_t *tool)
{
    int hinted = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg->params, "task"));
    if (m->modern && ing_era_declares_tasks_ext(msg))
        return tool->task_mode || hinted ? ANSWER_EXT : -1;
    if (!m->modern && hinted)
        return ANSWER_MCP2025;
    return tool->task_mode ? ANSWER_SEED003 : -1;
}

/* The seed-003 answer: {TaskId, TaskStatus} as structuredContent and as text. */
static void seed003_answer(cJSON *result, const char *id)
{
    cJSON *sc = cJSON_CreateObject();
    cJSON_AddStringToObject(sc, "TaskId", id);
    cJSON_AddStringToObject(sc, "TaskStatus", "waiting");
    char *text = cJSON_PrintUnformatted(sc);
    cJSON *content = cJSON_AddArrayToObject(result, "content");
    cJSON *block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "text");
    cJSON_AddStringToObject(block, "text", text ? text : "");
    cJSON_free(text);
    cJSON_AddItemToArray(content, block);
    cJSON_AddItemToObject(result, "structuredContent", sc);
    cJSON_AddFalseToObject(result, "isError");
}

/* Answers a call that became task id as `answer` says (see task_answer_t). */
static int answer_task(ing_mcp_t *m, const rpc_msg_t *msg, const ing_tool_t *tool, const char *id,
                       task_answer_t answer, ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    cJSON *result = NULL;
    if (answer == ANSWER_SEED003) {
        result = cJSON_CreateObject();
        seed003_answer(result, id);
    } else {
        int ext = answer == ANSWER_EXT;
        ing_tasks_t task;
        cJSON *tk;
        if (ing_tasks_get(ctx->kv, tool->tenant, id, &task) == 0) {
            tk = ing_tasks_mcp(&task, ext, ctx->set->task_retention_s);
            ing_tasks_cleanup(&task);
        } else {
            tk = cJSON_CreateObject();
            cJSON_AddStringToObject(tk, "taskId", id);
            cJSON_AddStringToObject(tk, "status", "working");
        }
        if (ext) { /* CreateTaskResult = Result & Task, flat */
            result = tk;
            cJSON_AddStringToObject(result, "resultType", "task");
        } else {
            result = cJSON_CreateObject();
            cJSON_AddItemToObject(result, "task", tk);
        }
    }
    ing_metrics_call(ctx->metrics, ING_CALL_OK);
    ing_mcpreq_resp_result_obj(m, resp, msg->id, result);
    return 0;
}

/* The call becomes a task (SPEC 5): created in Redis as waiting, its job published with
 * mode "task", and answered at once as `answer` says. The task is durable before the answer
 * leaves (the extension's rule: tasks/get resolves as soon as the client has the id). own
 * (the tool's arguments) is consumed. */
static int start_task(ing_mcp_t *m, const rpc_msg_t *msg, const ing_tool_t *tool, cJSON *own,
                      cJSON *atts, const cJSON *args, long long timeout_ms, task_answer_t answer,
                      const char *idem_id, const char *traceparent, const char *tracestate,
                      ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    const char *robot = NULL;
    char why[256];
    long long priority = 50;
    if (task_routing(m, args, &robot, &priority, why, sizeof(why)) < 0) {
        cJSON_Delete(own);
        cJSON_Delete(atts);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, why, NULL);
        return 0;
    }
    char id[TASK_ID_LEN];
    if (idem_id)
        snprintf(id, sizeof(id), "%s", idem_id);
    else
        task_id_new(id);
    ing_tasks_t existing;
    if (idem_id && ing_tasks_get(ctx->kv, tool->tenant, id, &existing) == 0) {
        /* A repeat of an idempotent call whose task exists: the same answer, nothing new. */
        ing_tasks_cleanup(&existing);
        cJSON_Delete(own);
        cJSON_Delete(atts);
        return answer_task(m, msg, tool, id, answer, resp);
    }
    cJSON *env = build_envelope(m, tool, msg, own, atts, id, timeout_ms, traceparent);
    cJSON_ReplaceItemInObjectCaseSensitive(env, "task_id", cJSON_CreateString(id));
    cJSON_DeleteItemFromObjectCaseSensitive(env, "reply_to");
    cJSON_ReplaceItemInObjectCaseSensitive(env, "mode", cJSON_CreateString("task"));
    char *payload = cJSON_PrintUnformatted(env);
    char *args_json = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(env, "arguments"));
    cJSON_Delete(env);
    const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(msg->params, "task"), "ttl");
    ing_tasks_new_t t = {
        .id = id,
        .tenant = tool->tenant,
        .server = tool->server,
        .tool = tool->name,
        .version = tool->version_id,
        .args_json = args_json ? args_json : "{}",
        .robot = robot,
        .env_json = payload ? payload : "",
        .traceparent = traceparent,
        .surface = answer == ANSWER_EXT       ? "ext"
                   : answer == ANSWER_MCP2025 ? "mcp"
                                              : "tool",
        .priority = priority,
        .ttl_ms = cJSON_IsNumber(ttl) && ttl->valuedouble > 0 ? (long long)ttl->valuedouble : 0,
        .retention_s = ctx->set->task_retention_s,
        .max_tasks = ing_quota_limit(m->tenant, ING_QUOTA_TASKS, ctx->set),
        .wait_replicas = (int)ctx->set->redis_wait_replicas,
        .wait_timeout_ms = (int)ctx->set->redis_wait_timeout_ms};
    long long created = 0;
    int rc = payload && args_json ? ing_tasks_create(ctx->kv, &t, &created) : MCPQ_ENOMEM;
    cJSON_free(args_json);
    if (rc < 0 && idem_id && ing_tasks_get(ctx->kv, tool->tenant, id, &existing) == 0) {
        /* A concurrent repeat created it first. */
        ing_tasks_cleanup(&existing);
        cJSON_free(payload);
        return answer_task(m, msg, tool, id, answer, resp);
    }
    if (rc == MCPQ_EQUOTA) {
        cJSON_free(payload);
        ing_mcpreq_resp_quota(resp, msg->id, ING_QUOTA_TASKS, t.max_tasks);
        return 0;
    }
    if (rc < 0) {
        cJSON_free(payload);
        ing_metrics_call(ctx->metrics, ING_CALL_FAILED);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                              "task store (Redis) unavailable; try again", NULL);
        return 0;
    }
    char *opaque = malloc(strlen(id) + 3);
    if (opaque)
        snprintf(opaque, strlen(id) + 3, "t:%s", id);
    rc = opaque
             ? mq_producer_send(ctx->producer, ctx->set->topic_jobs, id, payload, strlen(payload),
                                traceparent[0] ? traceparent : NULL, tracestate, opaque)
             : MCPQ_ENOMEM;
    cJSON_free(payload);
    if (rc < 0) {
        free(opaque);
        ing_tasks_abandon(ctx->kv, id, "the job queue (Kafka) refused the task",
                          ctx->set->task_retention_s);
        ing_metrics_published(ctx->metrics, 0);
        ing_metrics_call(ctx->metrics, ING_CALL_FAILED);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                              "job queue (Kafka) unavailable; try again", NULL);
        return 0;
    }
    log_event(LOG_INFO, "task created", "tenant", tool->tenant, "tool", tool->name, "task_id", id,
              "robot", robot ? robot : "", (char *)NULL);
    return answer_task(m, msg, tool, id, answer, resp);
}

int ing_toolcall_run(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    if (m->server == ing_system_server()) {
        ing_system_call(m, msg, resp);
        return 0;
    }
    ing_req_t *req = m->req;
    ing_ctx_t *ctx = req->ctx;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(msg->params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(msg->params, "arguments");
    if (!cJSON_IsString(name)) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "params.name must be a string", NULL);
        return 0;
    }
    if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args)) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "params.arguments must be an object", NULL);
        return 0;
    }
    if (cJSON_IsNull(args))
        args = NULL;
    /* Kept as rendered JSON in a fixed buffer and echoed in every progress notification:
     * held to the id rules so it is never cut (null counts as absent). */
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), "progressToken");
    if (tok && !cJSON_IsNull(tok) && !rpc_id_valid(tok)) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "params._meta.progressToken must be a string of at most " RPC_STR(
                                  RPC_MAX_ID_LEN) " bytes as JSON or a finite number",
                              NULL);
        return 0;
    }
    const ing_tool_t *tool = ing_registry_tool(m->server, name->valuestring);
    if (!tool) {
        char buf[200];
        snprintf(buf, sizeof(buf), "Unknown tool: %.120s", name->valuestring);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, buf, NULL);
        return 0;
    }
    /* From here on every line this thread logs for the call carries its trace (log.h); the
     * request handler clears the context when it returns. */
    ing_call_t *call = ing_mcpreq_call(m);
    if (!call) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return 0;
    }
    const char *tracestate = NULL;
    char traceparent[TRACE_PARENT_LEN + 1] = "";
    call_trace(m, msg, &call->trace, &tracestate);
    if (call->trace.trace_id[0]) {
        trace_format(&call->trace, traceparent);
        log_ctx_set(call->trace.trace_id, call->trace.span_id);
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(tool->version, "inputSchema");
    char why[512];
    if (m->modern && ing_era_param_headers_check(req->conn, schema, args, why, sizeof(why)) < 0) {
        ing_mcpreq_resp_error(resp, 400, msg->id, RPC_HEADER_MISMATCH, why, NULL);
        return 0;
    }
    const char *ikey = NULL;
    if (ing_idem_key(args, &ikey) < 0) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "arguments.idempotency_key must be a string of 1 to 255 bytes", NULL);
        return 0;
    }
    /* channel_id (SPEC 4.2): a channel of this tenant from system.open_channel; an unknown
     * or foreign one answers alike, so existence does not leak. */
    const cJSON *chan = cJSON_GetObjectItemCaseSensitive(args, "channel_id");
    m->channel[0] = '\0';
    if (chan && !cJSON_IsNull(chan)) {
        int rc = cJSON_IsString(chan)
                     ? ing_channels_use(ctx->kv, m->tenant->id, chan->valuestring,
                                        ctx->set->channel_ttl_s, &m->channel_ttl_ms)
                     : MCPQ_EINVAL;
        if (rc == MCPQ_EUNAVAIL) {
            ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                                  "channel store (Redis) unavailable; try again", NULL);
            return 0;
        }
        if (rc < 0) {
            ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                                  "Unknown channel_id: open one with the open_channel tool of the "
                                  "system server",
                                  NULL);
            return 0;
        }
        snprintf(m->channel, sizeof(m->channel), "%s", chan->valuestring);
    }
    cJSON *own = tool_arguments(args);
    if (!own) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return 0;
    }
    if (schema && sch_validate(schema, own, "arguments", why, sizeof(why)) < 0) {
        char text[640];
        snprintf(text, sizeof(text), "Invalid arguments for tool %s: %s", tool->name, why);
        cJSON_Delete(own);
        ing_metrics_call(ctx->metrics, ING_CALL_TOOL_ERROR);
        ing_mcpreq_resp_result_obj(m, resp, msg->id, tool_error_result(text));
        return 0;
    }
    /* attachments (SPEC 4.2): each URL lasts the call's timeout plus MCPQ_FILES_URL_TTL_S. */
    long long timeout_ms = tool->timeout_ms > 0 ? tool->timeout_ms : ctx->set->default_timeout_ms;
    cJSON *atts = NULL;
    int arc = ing_files_attach(
        ctx->files, req->conn, tool->tenant, cJSON_GetObjectItemCaseSensitive(args, "attachments"),
        ctx->set->files_url_ttl_s + timeout_ms / 1000 + 1, &atts, why, sizeof(why));
    if (arc < 0) {
        cJSON_Delete(own);
        ing_mcpreq_resp_error(resp, 200, msg->id,
                              arc == MCPQ_EINVAL ? RPC_INVALID_PARAMS : RPC_INTERNAL_ERROR,
                              arc == MCPQ_ENOMEM ? "out of memory" : why, NULL);
        return 0;
    }
    if (tool->fake_result) {
        cJSON_Delete(own);
        cJSON_Delete(atts);
        ing_metrics_call(ctx->metrics, ING_CALL_FAKE);
        ing_mcpreq_resp_result_obj(m, resp, msg->id, cJSON_Duplicate(tool->fake_result, 1));
        log_event(LOG_INFO, "tool call answered in fake mode", "tenant", tool->tenant, "tool",
                  tool->name, (char *)NULL);
        return 0;
    }
    if (!mq_producer_up(ctx->producer) || !ing_pending_healthy(ctx->pending)) {
        cJSON_Delete(own);
        cJSON_Delete(atts);
        ing_metrics_call(ctx->metrics, ING_CALL_FAILED);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                              !mq_producer_up(ctx->producer)
                                  ? "job queue (Kafka) unavailable; try again"
                                  : "result store (Redis) unavailable; try again",
                              NULL);
        return 0;
    }

    rpc_id_str(msg->id, call->id_json, sizeof(call->id_json));
    call->modern = m->modern;
    call->task_result = 0;
    /* An idempotency key (SPEC 4.2, idem.h): the first call's id is claimed with it; a
     * repeat of a call that has ended is answered from its stored record, here. */
    int as_task = task_answer(m, msg, tool);
    char idem_id[ING_JOB_ID_LEN] = "";
    if (ikey) {
        char scope[33], proposed[ING_JOB_ID_LEN];
        ing_idem_scope(tool->tenant, tool->server, tool->name, ikey, scope);
        if (as_task >= 0) {
            task_id_new(proposed);
        } else {
            char hex[33];
            util_random_hex(hex, 16);
            snprintf(proposed, sizeof(proposed), "j_%s", hex);
        }
        char *rec = NULL;
        size_t rec_len = 0;
        /* What a repeat must match: the tool's arguments and the attachments as sent. */
        cJSON *what = cJSON_CreateObject();
        cJSON_AddItemReferenceToObject(what, "arguments", own);
        const cJSON *sent = cJSON_GetObjectItemCaseSensitive(args, "attachments");
        if (sent)
            cJSON_AddItemReferenceToObject(what, "attachments", (cJSON *)sent);
        int st =
            what ? ing_idem_claim(ctx->kv, tool->tenant, scope, what, ctx->set->idempotency_ttl_s,
                                  proposed, idem_id, sizeof(idem_id), &rec, &rec_len)
                 : MCPQ_ENOMEM;
        cJSON_Delete(what);
        if (st < 0 || st == ING_IDEM_CONFLICT) {
            cJSON_Delete(own);
            cJSON_Delete(atts);
            if (st < 0)
                ing_metrics_call(ctx->metrics, ING_CALL_FAILED);
            ing_mcpreq_resp_error(
                resp, 200, msg->id, st < 0 ? RPC_INTERNAL_ERROR : RPC_INVALID_PARAMS,
                st < 0 ? "idempotency store (Redis) unavailable; try again"
                       : "idempotency_key was already used for this tool with other "
                         "arguments",
                NULL);
            return 0;
        }
        if (rec) {
            cJSON_Delete(own);
            cJSON_Delete(atts);
            char *out = ing_pending_record_response(call, rec, rec_len);
            free(rec);
            log_event(LOG_INFO, "idempotent repeat answered from the stored response", "tenant",
                      tool->tenant, "tool", tool->name, "job_id", idem_id, (char *)NULL);
            if (!out) {
                ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "out of memory",
                                      NULL);
                return 0;
            }
            ing_mcpreq_resp_json(resp, 200, out);
            return 0;
        }
    }
    /* A task-mode tool, or any tool a client asks to run as a task (SPEC 5.2). */
    if (as_task >= 0)
        return start_task(m, msg, tool, own, atts, args, timeout_ms, (task_answer_t)as_task,
                          ikey ? idem_id : NULL, traceparent, tracestate, resp);
    if (ikey) {
        snprintf(call->job_id, sizeof(call->job_id), "%s", idem_id);
    } else {
        char hex[33];
        util_random_hex(hex, 16);
        snprintf(call->job_id, sizeof(call->job_id), "j_%s", hex);
    }
    call->conn = req->conn;
    call->deadline_mono = util_mono_ms() + timeout_ms;
    const char *accept = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept");
    call->sse_ok = accept && strcasestr(accept, "text/event-stream") != NULL;
    call->log_min = m->log_min;
    snprintf(call->tool, sizeof(call->tool), "%s", tool->name);
    call->progress_token[0] = '\0';
    if (rpc_id_valid(tok))
        rpc_id_str(tok, call->progress_token, sizeof(call->progress_token));

    cJSON *env = build_envelope(m, tool, msg, own, atts, call->job_id, timeout_ms, traceparent);
    own = atts = NULL; /* now owned by env */
    if (ikey)          /* the worker keeps the record as long as a repeat may replay it */
        cJSON_AddNumberToObject(env, "result_ttl_s", (double)ctx->set->idempotency_ttl_s);
    char *payload = cJSON_PrintUnformatted(env);
    cJSON_Delete(env);
    char *opaque = strdup(call->job_id);
    if (!payload || !opaque) {
        free(payload);
        free(opaque);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return 0;
    }
    if (!m->modern) {
        /* So notifications/cancelled reaches the job from any replica. Best effort: without
         * Redis the call still runs, it just cannot be cancelled. */
        char key[600], ttl[24], err[128];
        reqmap_key(m, call->id_json, key, sizeof(key));
        snprintf(ttl, sizeof(ttl), "%lld", timeout_ms / 1000 + 60);
        const char *argv[] = {"SET", key, call->job_id, "EX", ttl};
        redisReply *r = kv_pool_commandargv(ctx->kv, err, sizeof(err), 5, argv, NULL);
        if (r)
            freeReplyObject(r);
    }
    if (ing_mcpreq_enqueue(m, call) < 0) {
        cJSON_free(payload);
        free(opaque);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "internal error; try again",
                              NULL);
        return 0;
    }
    int rc =
        mq_producer_send(ctx->producer, ctx->set->topic_jobs, call->job_id, payload,
                         strlen(payload), traceparent[0] ? traceparent : NULL, tracestate, opaque);
    cJSON_free(payload);
    if (rc < 0) {
        free(opaque);
        ing_mcpreq_dequeue(m, call);
        ing_metrics_published(ctx->metrics, 0);
        ing_metrics_call(ctx->metrics, ING_CALL_FAILED);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                              rc == MCPQ_ETOOBIG ? "arguments too large for the job queue"
                                                 : "job queue (Kafka) unavailable; try again",
                              NULL);
        return 0;
    }
    log_event(LOG_INFO, "tool call published", "tenant", tool->tenant, "tool", tool->name, "job_id",
              call->job_id, (char *)NULL);
    return ing_mcpreq_park(m, call);
}

void ing_toolcall_delivered(void *opaque, int err, void *arg)
{
    ing_ctx_t *ctx = arg;
    char *job_id = opaque;
    ing_metrics_published(ctx->metrics, err == 0);
    if (strncmp(job_id, "t:", 2) == 0) {
        /* A task's job: nobody waits on the connection; the task itself records it. */
        if (err == MCPQ_EUNAVAIL)
            ing_tasks_abandon(ctx->kv, job_id + 2, "the job queue (Kafka) did not take the task",
                              ctx->set->task_retention_s);
        free(job_id);
        return;
    }
    if (err == MCPQ_EUNAVAIL)
        ing_pending_fail(ctx->pending, job_id, RPC_INTERNAL_ERROR,
                         "job queue (Kafka) unavailable; try again");
    free(job_id);
}

void ing_toolcall_cancelled(ing_mcp_t *m, const rpc_msg_t *msg)
{
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(msg->params, "requestId");
    if (!cJSON_IsString(rid) && !cJSON_IsNumber(rid))
        return;
    const char *reason =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "reason"));
    char id_json[300], key[600], err[128];
    rpc_id_str(rid, id_json, sizeof(id_json));
    reqmap_key(m, id_json, key, sizeof(key));
    const char *argv[] = {"GET", key};
    redisReply *r = kv_pool_commandargv(m->req->ctx->kv, err, sizeof(err), 2, argv, NULL);
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (!r)
            log_event(LOG_WARN, "cannot look up a cancelled request", "error", err, (char *)NULL);
        if (r)
            freeReplyObject(r);
        return; /* finished already, or never ours: nothing to stop */
    }
    char job_id[ING_JOB_ID_LEN];
    snprintf(job_id, sizeof(job_id), "%s", r->str);
    freeReplyObject(r);
    ing_pending_cancel(m->req->ctx->pending, job_id, reason ? reason : "cancelled by the client");
}
