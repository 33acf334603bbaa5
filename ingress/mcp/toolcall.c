#include "mcpreq.h"
#include "names.h"
#include "toolcall.h"

#include "channels.h"
#include "era.h"
#include "err.h"
#include "idem.h"
#include "jobargs.h"
#include "jprint.h"
#include "mcpask.h"
#include "mrtr.h"
#include "owner.h"
#include "files.h"
#include "log.h"
#include "mcp.h"
#include "notify.h"
#include "sch.h"
#include "system.h"

#include "access.h"
#include "batch.h"
#include "prm.h"
#include "tasks.h"
#include "otel.h"
#include "trace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Arguments the gateway consumes itself (docs/protocol.md, "Reserved arguments"); never passed to a
 * tool. */
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

/* The longest a notifications/cancelled waits for queued request-map writes (kv_pool_sync). */
#define CANCEL_SYNC_MS 500

/* Where notifications/cancelled finds a legacy call's job: per session, else per tenant and
 * caller (owner.h), so a request id reaches only the caller's own calls. */
static void reqmap_key(const ing_mcp_t *m, const char *id_json, char *out, size_t size)
{
    char owner[ING_OWNER_MAX];
    if (m->has_session)
        snprintf(out, size, NAMES_KEY_REQMAP "s:%s:%s", m->session.id, id_json);
    else if (ing_owner_of(m->who, owner, sizeof(owner)) == 0)
        snprintf(out, size, NAMES_KEY_REQMAP "t:%s:%s:%s", m->tenant->id, owner, id_json);
    else /* no principal: a key nothing else names */
        snprintf(out, size, NAMES_KEY_REQMAP "t:%s:-:%s", m->tenant->id, id_json);
}

/* The tool's own arguments: a copy of params.arguments without the reserved names. */
static cJSON *tool_arguments(const cJSON *args)
{
    cJSON *out = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
    for (size_t i = 0; out && i < sizeof(reserved_args) / sizeof(reserved_args[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(out, reserved_args[i]);
    return out;
}

/* The call's trace (W3C trace context, docs/operations.md "Logs and tracing"): the client's
 * traceparent from the HTTP header, else from params._meta.traceparent, continued with the
 * ingress's own span as parent-id; a new trace when neither parses (an invalid one is ignored,
 * never an error). *state is the tracestate sent along with the traceparent used (the header, or
 * params._meta.tracestate) when it is sane, else NULL; borrowed from the request. parent gets
 * the client's parent-id ("" for a new trace). The sampled flag is the sampler's (otel.h). */
static void call_trace(ing_mcp_t *m, const rpc_msg_t *msg, trace_ctx_t *t, const char **state,
                       char parent[TRACE_SPAN_HEX + 1])
{
    trace_ctx_t in;
    const cJSON *meta = ing_era_meta(msg);
    const char *hdr = ing_req_header(m->req, "traceparent");
    const char *st = NULL;
    int have = 0;
    if (hdr && trace_parse(hdr, &in) == 0) {
        have = 1;
        st = ing_req_header(m->req, "tracestate");
    } else if (trace_parse(
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "traceparent")),
                   &in) == 0) {
        have = 1;
        st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "tracestate"));
    }
    *state = have && trace_state_ok(st) ? st : NULL;
    snprintf(parent, TRACE_SPAN_HEX + 1, "%s", have ? in.span_id : "");
    if ((have ? trace_child(&in, t) : trace_new(t)) < 0) {
        memset(t, 0, sizeof(*t)); /* no randomness: the call runs untraced */
        return;
    }
    t->flags =
        (unsigned char)((t->flags & ~1u) | (otel_sample(have ? &in : NULL, t->trace_id) ? 1u : 0u));
}

/* The SERVER span of a request (docs/operations.md, "Traces (OpenTelemetry)") into *slot: the
 * HTTP request's (req->span), or a batch element's own (its call's span); started when the
 * request arrived and ended by server.c when the response is complete; NULL when not exported
 * or *slot has one already. Named as the MCP semantic conventions ask: "{mcp.method.name}
 * {target}", the target being the tool or the prompt, never a resource's URI (high
 * cardinality: an attribute). */
static otel_span_t *call_span(ing_mcp_t *m, const rpc_msg_t *msg, const trace_ctx_t *t,
                              const char *parent, const char *tool, otel_span_t **slot)
{
    ing_req_t *req = m->req;
    if (*slot || !otel_enabled())
        return NULL;
    int call = strcmp(msg->method, "tools/call") == 0;
    int prompt = strcmp(msg->method, "prompts/get") == 0;
    const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "uri"));
    char name[OTEL_NAME_MAX], id[64];
    int target = (call || prompt) && tool && *tool;
    snprintf(name, sizeof(name), "%s%s%s", msg->method, target ? " " : "", target ? tool : "");
    int64_t start = util_now_us() - (req->t0_us ? util_mono_us() - req->t0_us : 0);
    otel_span_t *s = otel_span_start(t, parent, name, OTEL_KIND_SERVER, start);
    otel_span_str(s, "mcp.method.name", msg->method);
    otel_span_str(s,
                  call     ? "gen_ai.tool.name"
                  : prompt ? "gen_ai.prompt.name"
                           : "mcpq.object",
                  tool);
    if (call)
        otel_span_str(s, "gen_ai.operation.name", "execute_tool");
    otel_span_str(s, "mcp.resource.uri", uri);
    if (msg->id)
        otel_span_str(s, "jsonrpc.request.id",
                      cJSON_IsString(msg->id) ? msg->id->valuestring
                                              : rpc_id_str(msg->id, id, sizeof(id)));
    otel_span_str(s, "mcp.protocol.version", m->version);
    if (m->has_session)
        otel_span_str(s, "mcp.session.id", m->session.id);
    otel_span_str(s, "mcpq.tenant", m->tenant ? m->tenant->id : NULL);
    otel_span_str(s, "mcpq.request_id", req->request_id[0] ? req->request_id : NULL);
    otel_span_str(s, "network.transport", "tcp");
    otel_span_str(s, "network.protocol.name", "http");
    *slot = s;
    return s;
}

/* The code of a JSON-RPC error response (rpc_error_str's shape), else 0. */
static long resp_error_code(const char *body)
{
    static const char key[] = "\"error\":{\"code\":";
    const char *e = body ? strstr(body, key) : NULL;
    const char *r = body ? strstr(body, "\"result\":") : NULL;
    return e && (!r || e < r) ? strtol(e + sizeof(key) - 1, NULL, 10) : 0;
}

void ing_toolcall_span(ing_mcp_t *m, const rpc_msg_t *msg, const ing_resp_t *resp)
{
    ing_req_t *req = m->req;
    const ing_call_t *elem = m->batch ? m->batch->calls[m->elem] : NULL;
    if (msg->kind != RPC_REQUEST || !otel_enabled() ||
        (m->batch ? elem && elem->trace.trace_id[0] : req->span || req->call.trace.trace_id[0]))
        return;
    trace_ctx_t t;
    const char *state;
    char parent[TRACE_SPAN_HEX + 1], type[24];
    call_trace(m, msg, &t, &state, parent);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "name"));
    otel_span_t *own = NULL; /* a batch element answered at once: its span ends now */
    otel_span_t *s = t.trace_id[0] ? call_span(m, msg, &t, parent, name ? name : "",
                                               m->batch ? &own : &req->span)
                                   : NULL;
    long code = s ? resp_error_code(resp->body) : 0;
    if (code) {
        snprintf(type, sizeof(type), "%ld", code);
        otel_span_error(s, type, NULL);
    }
    otel_span_end(own, 0);
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
    int method = kinds_method(msg->method);
    if (method > KINDS_METHOD_CALL) { /* absent means tools/call, as for every older worker */
        const char *mime =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tool->version, "mimeType"));
        cJSON_AddStringToObject(e, "method", msg->method);
        if (mime)
            cJSON_AddStringToObject(e, "mime_type", mime);
    }
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
    /* Built right before the publish: the worker's queue wait starts here (metrics.h). */
    cJSON_AddNumberToObject(e, "sent_us", (double)util_now_us());
    cJSON_AddNumberToObject(e, "deadline_ms", (double)(now + timeout_ms));
    cJSON_AddStringToObject(e, "reply_to", ctx->reply_key);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(msg->params, "_meta");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
    if (rpc_id_valid(tok))
        cJSON_AddItemToObject(e, "progress_token", cJSON_Duplicate(tok, 1));
    if (traceparent[0])
        cJSON_AddStringToObject(e, "traceparent", traceparent);
    if (m->req->request_id[0]) /* the HTTP request's X-Request-Id: the worker logs it */
        cJSON_AddStringToObject(e, "request_id", m->req->request_id);
    /* Who may answer the job's questions, and what the client may be asked (docs/internals.md,
     * "Asking the client"). */
    char owner[ING_OWNER_MAX] = "";
    (void)ing_owner_of(m->who, owner, sizeof(owner));
    cJSON_AddStringToObject(e, "owner", owner);
    cJSON *client = ing_mcpask_envelope_client(m, msg);
    if (client)
        cJSON_AddItemToObject(e, "client", client);
    return e;
}

/* RobotId and TaskPriority (docs/protocol.md, "Reserved arguments") from the call's arguments: 0,
 * or -1 with why filled. A robot another tenant declares (config "robots") is refused without
 * saying which tenant; one the caller's tenant declares, or one nobody declares (shared), is taken
 * (docs/tools.md "Task mode, robots and priorities"). */
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
    ANSWER_TOOL,    /* structuredContent {TaskId, TaskStatus} (docs/protocol.md, "Task mode") */
    ANSWER_MCP2025, /* CreateTaskResult {task} (2025-11-25, params.task) */
    ANSWER_EXT      /* resultType "task" and the Task (2026-07-28 tasks extension) */
} task_answer_t;

/* Which answer a tools/call gets: a task (ANSWER_*) or -1 to run it synchronously. The
 * 2026-07-28 extension leaves the choice to the server: a declaring client gets a task for a
 * task-mode tool and for any tool it sends with params.task (the 2025-11-25 hint, which the
 * gateway honours on that surface too); a client that does not declare it gets the task-mode
 * answer of a task-mode tool and runs other tools synchronously. */
static int task_answer(const ing_mcp_t *m, const rpc_msg_t *msg, const ing_tool_t *tool)
{
    int hinted = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(msg->params, "task"));
    if (m->modern && ing_era_declares_tasks_ext(msg))
        return tool->task_mode || hinted ? ANSWER_EXT : -1;
    if (!m->modern && hinted)
        return ANSWER_MCP2025;
    return tool->task_mode ? ANSWER_TOOL : -1;
}

/* The task-mode answer: {TaskId, TaskStatus} as structuredContent and as text. */
static void tool_task_answer(cJSON *result, const char *id, const char *status)
{
    cJSON *sc = cJSON_CreateObject();
    cJSON_AddStringToObject(sc, "TaskId", id);
    cJSON_AddStringToObject(sc, "TaskStatus", status);
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

/*
 * tools/call as a pipeline (docs/architecture.md, "The path of one tools/call"). The call's
 * state lives in one tc_t; each step either lets the call go on (TC_NEXT), or has answered
 * it (TC_ANSWERED, resp filled), or has parked it to wait for a worker (TC_PARKED).
 * ing_toolcall_run() runs the steps in order and frees what the state holds in one place.
 */
typedef enum { TC_NEXT = 0, TC_ANSWERED, TC_PARKED } tc_status_t;

typedef struct tc {
    ing_mcp_t *m;
    const rpc_msg_t *msg;
    ing_resp_t *resp;
    ing_ctx_t *ctx;
    kinds_method_t method;   /* what the job answers (jobargs.h) */
    const ing_tool_t *given; /* not tools/call: the object the caller found */
    const cJSON *vars;       /* a template's matched variables (borrowed), or NULL */
    const cJSON *args;       /* params.arguments of a tools/call; NULL when absent or null, and for
                              * every other method (no reserved arguments there) */
    const cJSON *tok;        /* params._meta.progressToken; NULL when absent */
    const ing_tool_t *tool;
    ing_call_t *call;       /* the request's (or the batch element's) waiting call */
    const char *tracestate; /* borrowed from the request */
    /* What the job carries (envelope and Kafka header): the PRODUCER span's context when the
     * request's SERVER span is exported, else the call's trace (docs/operations.md). */
    trace_ctx_t producer;
    char traceparent[TRACE_PARENT_LEN + 1];
    char server_tp[TRACE_PARENT_LEN + 1]; /* the call's trace (the SERVER span): a task's */
    const cJSON *schema;                  /* the tool version's inputSchema */
    const char *ikey;                     /* arguments.idempotency_key, or NULL */
    char idem_id[ING_JOB_ID_LEN];
    char owner[ING_OWNER_MAX]; /* the caller's principal (owner.h): its tasks and keys */
    long long timeout_ms;
    int as_task;         /* task_answer_t, or -1: synchronous */
    cJSON *own;          /* the tool's own arguments; NULL once handed to an envelope */
    cJSON *atts;         /* resolved attachments; NULL once handed to an envelope */
    char *payload;       /* the job's envelope as JSON, while being published */
    char *key;           /* the job's Kafka record key (jobargs.h); NULL: its job id */
    int detached;        /* nobody waits for the job (ing_toolcall_detached): no reply stream */
    ing_call_t own_call; /* detached: the call that carries its job id and trace */
} tc_t;

/* Counts a call answered here, without a job's result (metrics.h). */
static void tc_count(tc_t *tc, ing_call_outcome_t outcome)
{
    const ing_req_t *req = tc->m->req;
    ing_metrics_call(tc->ctx->metrics, req->tenant, outcome, util_mono_us() - req->t0_us);
}

/* The call's SERVER span: a batch element's own, else the request's; NULL when none. */
static otel_span_t *tc_span(const tc_t *tc)
{
    return tc->call && tc->call->span ? tc->call->span : tc->m->batch ? NULL : tc->m->req->span;
}

/* Answers the call with a JSON-RPC error (HTTP 200 unless status says otherwise). */
static tc_status_t tc_error(tc_t *tc, int status, int code, const char *message)
{
    otel_span_t *span = tc_span(tc);
    if (span) { /* error.type: the JSON-RPC error code (MCP semantic conventions) */
        char type[16];
        snprintf(type, sizeof(type), "%d", code);
        otel_span_error(span, type, message);
    }
    ing_mcpreq_resp_error(tc->resp, status, tc->msg->id, code, message, NULL);
    return TC_ANSWERED;
}

/* Answers the call with a JSON-RPC error and counts it as failed. */
static tc_status_t tc_failed(tc_t *tc, const char *message)
{
    tc_count(tc, ING_CALL_FAILED);
    return tc_error(tc, 200, RPC_INTERNAL_ERROR, message);
}

/* Answers the call with result (consumed), counted as outcome. */
static tc_status_t tc_result(tc_t *tc, ing_call_outcome_t outcome, cJSON *result)
{
    tc_count(tc, outcome);
    ing_mcpreq_resp_result_obj(tc->m, tc->resp, tc->msg->id, result);
    return TC_ANSWERED;
}

/* params: name a string, arguments an object (or null), progressToken an id; for another
 * method, its own params (jobargs.h). */
static tc_status_t tc_params(tc_t *tc)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc->msg->params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(tc->msg->params, "arguments");
    char why[256];
    if (tc->method != KINDS_METHOD_CALL) {
        if (ing_jobargs_check(tc->method, tc->msg->params, why, sizeof(why)) < 0)
            return tc_error(tc, 200, RPC_INVALID_PARAMS, why);
    } else if (!cJSON_IsString(name)) {
        return tc_error(tc, 200, RPC_INVALID_PARAMS, "params.name must be a string");
    } else if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args)) {
        return tc_error(tc, 200, RPC_INVALID_PARAMS, "params.arguments must be an object");
    } else {
        tc->args = cJSON_IsNull(args) ? NULL : args;
    }
    /* Kept as rendered JSON in a fixed buffer and echoed in every progress notification:
     * held to the id rules so it is never cut (null counts as absent). */
    tc->tok = cJSON_GetObjectItemCaseSensitive(ing_era_meta(tc->msg), "progressToken");
    if (tc->tok && !cJSON_IsNull(tc->tok) && !rpc_id_valid(tc->tok))
        return tc_error(tc, 200, RPC_INVALID_PARAMS,
                        "params._meta.progressToken must be a string of at most " RPC_STR(
                            RPC_MAX_ID_LEN) " bytes as JSON or a finite number");
    return TC_NEXT;
}

/* HTTP 403 for an OAuth token lacking a permission the tool needs: the JSON-RPC error of the
 * front door's refusals and the insufficient_scope challenge naming scope. */
static tc_status_t tc_insufficient_scope(tc_t *tc, const char *scope)
{
    static const char desc[] = "the access token lacks a scope this tool requires";
    ing_resp_t *resp = tc->resp;
    tc_count(tc, ING_CALL_FAILED);
    /* -32000: the code of the front door's 401 (mcp.c) */
    ing_mcpreq_resp_error(resp, 403, tc->msg->id, -32000, desc, NULL);
    if (ing_prm_challenge(tc->m->req, "insufficient_scope", scope, desc, resp->www_auth,
                          sizeof(resp->www_auth)) < 0)
        log_event(LOG_WARN, "tools/call: the insufficient_scope challenge was cut (too long)",
                  "tool",
                  cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tc->msg->params, "name")),
                  (char *)NULL);
    return TC_ANSWERED;
}

/* The answer to a request for an object the caller may not see (or that does not exist): as
 * the method answers an unknown one (docs/protocol.md). */
static tc_status_t tc_unknown(tc_t *tc, const char *name)
{
    char buf[200];
    tc->tool = NULL;
    switch (tc->method) {
    case KINDS_METHOD_READ: /* -32002 before 2026-07-28, -32602 since */
    case KINDS_METHOD_SUBSCRIBE:
    case KINDS_METHOD_UNSUBSCRIBE:
        snprintf(buf, sizeof(buf), "Resource not found: %.120s",
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tc->msg->params, "uri")));
        return tc_error(tc, 200, tc->m->modern ? RPC_INVALID_PARAMS : -32002, buf);
    case KINDS_METHOD_PROMPT:
        snprintf(buf, sizeof(buf), "Unknown prompt: %.120s", name);
        break;
    case KINDS_METHOD_COMPLETE:
        snprintf(buf, sizeof(buf), "Unknown reference: %.120s", name);
        break;
    default:
        snprintf(buf, sizeof(buf), "Unknown tool: %.120s", name);
        break;
    }
    return tc_error(tc, 200, RPC_INVALID_PARAMS, buf);
}

/* The tool of the server by name (or the object the caller found), the call that will wait
 * for it, and the call's trace. */
static tc_status_t tc_tool(tc_t *tc)
{
    const char *name =
        tc->given ? tc->given->name
                  : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tc->msg->params, "name"));
    char scope[1024];
    tc->tool = tc->given ? tc->given : ing_registry_tool(tc->m->server, name);
    int acc = tc->tool ? ing_access_check(tc->m->reg, tc->m->who, tc->m->server->name, name, scope,
                                          sizeof(scope))
                       : ING_ACCESS_HIDDEN;
    /* A quarantined tool (pin.h) is refused with its reason to a caller that may see it. */
    const ing_tool_t *q = tc->tool ? NULL : ing_registry_quarantined(tc->m->server, name);
    if (q && ing_access_check(tc->m->reg, tc->m->who, tc->m->server->name, name, NULL, 0) ==
                 ING_ACCESS_OK) {
        char buf[400];
        snprintf(buf, sizeof(buf),
                 "Tool %.120s is quarantined: its definition is not the one an operator approved "
                 "(pinned tool definitions, docs/security.md); calls are refused until an "
                 "operator approves it",
                 name);
        return tc_error(tc, 200, RPC_INVALID_PARAMS, buf);
    }
    /* A tool the caller may not see is answered as one that does not exist (access.h); so is
     * one an OAuth token lacks scopes for inside a batch, which has no HTTP status of its
     * own. */
    if (acc == ING_ACCESS_HIDDEN || (acc == ING_ACCESS_SCOPE && tc->m->batch))
        return tc_unknown(tc, name);
    if (acc == ING_ACCESS_SCOPE) /* 403 with the scopes to ask for (docs/authorization.md) */
        return tc_insufficient_scope(tc, scope);
    tc->call = tc->detached ? &tc->own_call : ing_mcpreq_call(tc->m);
    if (!tc->call)
        return tc_error(tc, 200, RPC_INTERNAL_ERROR, "out of memory");
    /* From here on every line this thread logs for the call carries its trace (log.h); the
     * request handler clears the context when it returns. */
    char parent[TRACE_SPAN_HEX + 1];
    call_trace(tc->m, tc->msg, &tc->call->trace, &tc->tracestate, parent);
    if (tc->call->trace.trace_id[0]) {
        trace_format(&tc->call->trace, tc->server_tp);
        tc->producer = tc->call->trace;
        if (!tc->detached &&
            call_span(tc->m, tc->msg, &tc->call->trace, parent, tc->tool->name,
                      tc->m->batch ? &tc->call->span : &tc->m->req->span) &&
            trace_child(&tc->call->trace, &tc->producer) < 0)
            tc->producer = tc->call->trace;
        trace_format(&tc->producer, tc->traceparent);
        log_ctx_set(tc->call->trace.trace_id, tc->call->trace.span_id);
    }
    if (tc->method == KINDS_METHOD_CALL) {
        tc->schema = cJSON_GetObjectItemCaseSensitive(tc->tool->version, "inputSchema");
    }
    tc->timeout_ms =
        tc->tool->timeout_ms > 0 ? tc->tool->timeout_ms : tc->ctx->set->default_timeout_ms;
    return TC_NEXT;
}

/* 2026-07-28: the Mcp-Param-* headers a tool's schema declares match the arguments. */
static tc_status_t tc_headers(tc_t *tc)
{
    char why[512];
    if (tc->m->modern && tc->method == KINDS_METHOD_CALL &&
        ing_era_param_headers_check(tc->m->req, tc->schema, tc->args, why, sizeof(why)) < 0)
        return tc_error(tc, 400, RPC_HEADER_MISMATCH, why);
    if (ing_idem_key(tc->args, &tc->ikey) < 0)
        return tc_error(tc, 200, RPC_INVALID_PARAMS,
                        "arguments.idempotency_key must be a string of 1 to 255 bytes");
    return TC_NEXT;
}

/* channel_id (docs/protocol.md): a channel of this tenant from system.open_channel; an
 * unknown or foreign one answers alike, so existence does not leak. */
static tc_status_t tc_channel(tc_t *tc)
{
    ing_mcp_t *m = tc->m;
    const cJSON *chan = cJSON_GetObjectItemCaseSensitive(tc->args, "channel_id");
    m->channel[0] = '\0';
    if (!chan || cJSON_IsNull(chan))
        return TC_NEXT;
    int rc = cJSON_IsString(chan)
                 ? ing_channels_use(tc->ctx->kv, m->tenant->id, chan->valuestring,
                                    tc->ctx->set->channel_ttl_s, &m->channel_ttl_ms)
                 : MCPQ_EINVAL;
    if (rc == MCPQ_EUNAVAIL)
        return tc_error(tc, 200, RPC_INTERNAL_ERROR,
                        "channel store (Redis) unavailable; try again");
    if (rc < 0)
        return tc_error(tc, 200, RPC_INVALID_PARAMS,
                        "Unknown channel_id: open one with the open_channel tool of the system "
                        "server");
    snprintf(m->channel, sizeof(m->channel), "%s", chan->valuestring);
    return TC_NEXT;
}

/* Another method's job arguments: the request's params without _meta (jobargs.h); the
 * caller checked them (a prompt's arguments against its declaration: mcpobj.c). */
static tc_status_t tc_method_arguments(tc_t *tc)
{
    tc->own = ing_jobargs_build(tc->method, tc->msg->params, tc->vars);
    if (!tc->own)
        return tc_error(tc, 200, RPC_INTERNAL_ERROR, "out of memory");
    return TC_NEXT;
}

/* The tool's own arguments, checked against its inputSchema (a tool error when not). */
static tc_status_t tc_arguments(tc_t *tc)
{
    if (tc->method != KINDS_METHOD_CALL)
        return tc_method_arguments(tc);
    tc->own = tool_arguments(tc->args);
    if (!tc->own)
        return tc_error(tc, 200, RPC_INTERNAL_ERROR, "out of memory");
    char why[512];
    const sch_compiled_t *comp = tc->tool->input_schema;
    int rc = comp         ? sch_compiled_validate(comp, tc->own, "arguments", why, sizeof(why))
             : tc->schema ? sch_validate(tc->schema, tc->own, "arguments", why, sizeof(why))
                          : 0;
    if (rc < 0) {
        char text[640];
        snprintf(text, sizeof(text), "Invalid arguments for tool %s: %s", tc->tool->name, why);
        return tc_result(tc, ING_CALL_TOOL_ERROR, tool_error_result(text));
    }
    return TC_NEXT;
}

/* attachments (docs/protocol.md): each URL lasts the call's timeout plus
 * MCPQ_FILES_URL_TTL_S. */
static tc_status_t tc_attachments(tc_t *tc)
{
    char why[512];
    int rc = ing_files_attach(tc->ctx->files, ing_req_header(tc->m->req, "Host"), tc->tool->tenant,
                              cJSON_GetObjectItemCaseSensitive(tc->args, "attachments"),
                              tc->ctx->set->files_url_ttl_s + tc->timeout_ms / 1000 + 1, &tc->atts,
                              why, sizeof(why));
    if (rc < 0)
        return tc_error(tc, 200, rc == MCPQ_EINVAL ? RPC_INVALID_PARAMS : RPC_INTERNAL_ERROR,
                        rc == MCPQ_ENOMEM ? "out of memory" : why);
    return TC_NEXT;
}

/* A tool in fake mode answers its configured result without a worker; otherwise Kafka and
 * the result store must be up before anything is claimed or published. */
static tc_status_t tc_ready(tc_t *tc)
{
    ing_ctx_t *ctx = tc->ctx;
    if (tc->tool->fake_result) {
        log_event(LOG_INFO, "tool call answered in fake mode", "tenant", tc->tool->tenant, "tool",
                  tc->tool->name, (char *)NULL);
        return tc_result(tc, ING_CALL_FAKE, cJSON_Duplicate(tc->tool->fake_result, 1));
    }
    if (!mq_producer_up(ctx->producer))
        return tc_failed(tc, "job queue (Kafka) unavailable; try again");
    if (!ing_pending_healthy_wait(ctx->pending))
        return tc_failed(tc, "result store (Redis) unavailable; try again");
    rpc_id_str(tc->msg->id, tc->call->id_json, sizeof(tc->call->id_json));
    tc->call->modern = tc->m->modern;
    tc->call->shape = ing_era_result_shaper(tc->m->version);
    tc->call->task_result = 0;
    /* Task mode is for tools only (docs/protocol.md): a read, a prompt or a completion is
     * always answered on its request. */
    tc->as_task = tc->method == KINDS_METHOD_CALL ? task_answer(tc->m, tc->msg, tc->tool) : -1;
    tc->call->method_result = tc->method != KINDS_METHOD_CALL;
    tc->call->cacheable = tc->m->modern && tc->method == KINDS_METHOD_READ;
    if (tc->call->cacheable) {
        const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(tc->tool->version, "ttl_ms");
        const char *scope = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(tc->tool->version, "cache_scope"));
        tc->call->ttl_ms =
            cJSON_IsNumber(ttl) && ttl->valuedouble > 0 ? (long long)ttl->valuedouble : 0;
        tc->call->cache_public = scope && strcmp(scope, "public") == 0;
    }
    return TC_NEXT;
}

/* The answer of a repeat whose first call has ended: its stored record. */
static tc_status_t tc_replay(tc_t *tc, char *rec, size_t rec_len)
{
    ing_call_outcome_t outcome;
    char *out = ing_pending_record_response(tc->call, rec, rec_len, &outcome, NULL);
    free(rec);
    log_event(LOG_INFO, "idempotent repeat answered from the stored response", "tenant",
              tc->tool->tenant, "tool", tc->tool->name, "job_id", tc->idem_id, (char *)NULL);
    if (!out)
        return tc_error(tc, 200, RPC_INTERNAL_ERROR, "out of memory");
    ing_mcpreq_resp_json(tc->resp, 200, out);
    return TC_ANSWERED;
}

/* An idempotency key (idem.h): the first call's id is claimed with it; a repeat of a call
 * that has ended is answered from its stored record, here. */
static tc_status_t tc_idempotency(tc_t *tc)
{
    if (!tc->ikey)
        return TC_NEXT;
    const ing_tool_t *tool = tc->tool;
    char scope[33], proposed[ING_JOB_ID_LEN];
    ing_idem_scope(tool->tenant, tool->server, tool->name, tc->ikey, scope);
    if (tc->as_task >= 0) {
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
    cJSON_AddItemReferenceToObject(what, "arguments", tc->own);
    const cJSON *sent = cJSON_GetObjectItemCaseSensitive(tc->args, "attachments");
    if (sent)
        cJSON_AddItemReferenceToObject(what, "attachments", (cJSON *)sent);
    int st = what ? ing_idem_claim(tc->ctx->kv, tool->tenant, scope, tc->owner, what,
                                   tc->ctx->set->idempotency_ttl_s, proposed, tc->idem_id,
                                   sizeof(tc->idem_id), &rec, &rec_len)
                  : MCPQ_ENOMEM;
    cJSON_Delete(what);
    if (st < 0)
        return tc_failed(tc, "idempotency store (Redis) unavailable; try again");
    if (st == ING_IDEM_FOREIGN) /* whatever the arguments: nothing of the first call leaks */
        return tc_error(tc, 200, RPC_INVALID_PARAMS,
                        "idempotency_key is in use by another caller of this tool; use another "
                        "key");
    if (st == ING_IDEM_CONFLICT)
        return tc_error(tc, 200, RPC_INVALID_PARAMS,
                        "idempotency_key was already used for this tool with other arguments");
    if (rec && tc->as_task >= 0) {
        /* A task's record is its result, which the client reads with tasks/result: the
         * repeat of a task-mode call is answered with the task (tc_task), ended or not. */
        free(rec);
        rec = NULL;
    }
    return rec ? tc_replay(tc, rec, rec_len) : TC_NEXT;
}

/* Answers a call that became task id as tc->as_task says (see task_answer_t). task is the
 * task as read from Redis (a repeat), or NULL for the one this call has just created: then it
 * is read back for the MCP surfaces, and answered as waiting if that read fails. */
static tc_status_t answer_task(tc_t *tc, const char *id, const ing_tasks_t *task)
{
    ing_ctx_t *ctx = tc->ctx;
    cJSON *result = NULL;
    if (tc->as_task == ANSWER_TOOL) {
        result = cJSON_CreateObject();
        tool_task_answer(result, id, task ? ing_tasks_field(task, "state") : "waiting");
        return tc_result(tc, ING_CALL_OK, result);
    }
    int ext = tc->as_task == ANSWER_EXT;
    ing_tasks_t created;
    cJSON *tk;
    if (task) {
        tk = ing_tasks_mcp(task, ext, ctx->set->task_retention_s);
    } else if (ing_tasks_get(ctx->kv, tc->tool->tenant, id, &created) == 0) {
        tk = ing_tasks_mcp(&created, ext, ctx->set->task_retention_s);
        ing_tasks_cleanup(&created);
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
    return tc_result(tc, ING_CALL_OK, result);
}

/* Hands the job (payload) to Kafka under a PRODUCER span "send <topic>" (its context is what
 * the record carries); mq_producer_send's result. */
static int tc_send(tc_t *tc, const char *job_id, const char *key, const char *payload, void *opaque)
{
    ing_ctx_t *ctx = tc->ctx;
    const char *topic = ctx->set->topic_jobs;
    otel_span_t *s = NULL;
    if (tc_span(tc) && strcmp(tc->producer.span_id, tc->call->trace.span_id) != 0) {
        char name[OTEL_NAME_MAX];
        snprintf(name, sizeof(name), "send %s", topic);
        s = otel_span_start(&tc->producer, tc->call->trace.span_id, name, OTEL_KIND_PRODUCER, 0);
        otel_span_str(s, "messaging.system", "kafka");
        otel_span_str(s, "messaging.operation.type", "send");
        otel_span_str(s, "messaging.operation.name", "send");
        otel_span_str(s, "messaging.destination.name", topic);
        otel_span_str(s, "messaging.kafka.message.key", key ? key : job_id);
        otel_span_int(s, "messaging.message.body.size", (long long)strlen(payload));
        otel_span_str(s, "mcpq.job_id", job_id);
    }
    int rc = mq_producer_send(ctx->producer, topic, job_id, key, payload, strlen(payload),
                              tc->traceparent[0] ? tc->traceparent : NULL, tc->tracestate, opaque);
    if (rc < 0)
        otel_span_error(s, rc == MCPQ_ETOOBIG ? "too_big" : "unavailable",
                        "the job queue (Kafka) refused the job");
    otel_span_end(s, 0);
    return rc;
}

/* Sends task id's job (payload, its envelope) to Kafka; the delivery report knows it by
 * "t:<id>". 0 or an MCPQ_E* code. */
static int task_send(tc_t *tc, const char *id, const char *payload)
{
    ing_ctx_t *ctx = tc->ctx;
    char *opaque = malloc(strlen(id) + 3);
    if (opaque)
        snprintf(opaque, strlen(id) + 3, "t:%s", id);
    int rc = opaque ? tc_send(tc, id, NULL, payload, opaque) : MCPQ_ENOMEM;
    if (rc < 0) {
        free(opaque);
        ing_metrics_published(ctx->metrics, 0);
    }
    return rc;
}

/* The answer to a repeat of an idempotent task-mode call whose task id is id: the task
 * (TC_ANSWERED), or TC_NEXT when it does not exist yet. A repeat is never answered from what
 * cannot be read: Redis failing to say whether the task exists is -32603 "try again", not a
 * new task and not another answer. A task still waiting that no worker has queued may have
 * no job in Kafka (the ingress that created it lost Redis's answer, or died, before it
 * published): the repeat publishes its job again, as a synchronous repeat does (idem.h); a
 * worker queues a task once (common/lua/task_enqueue.lua), so a second record runs
 * nothing twice. */
static tc_status_t task_repeat(tc_t *tc, const char *id)
{
    ing_tasks_t task;
    int rc = ing_tasks_get(tc->ctx->kv, tc->tool->tenant, id, &task);
    if (rc == MCPQ_ENOTFOUND)
        return TC_NEXT;
    if (rc < 0)
        return tc_failed(tc, "task store (Redis) unavailable; try again");
    const char *env = ing_tasks_field(&task, "env");
    tc_status_t st;
    if (strcmp(ing_tasks_field(&task, "state"), "waiting") == 0 &&
        strcmp(ing_tasks_field(&task, "queued"), "1") != 0 && env[0] && task_send(tc, id, env) < 0)
        st = tc_failed(tc, "job queue (Kafka) unavailable; try again");
    else
        st = answer_task(tc, id, &task);
    ing_tasks_cleanup(&task);
    return st;
}

/* The task's job envelope (mode "task", no reply stream) into tc->payload and its
 * arguments as JSON (malloc'd, or NULL out of memory). own and atts are consumed. */
static char *task_envelope(tc_t *tc, const char *id)
{
    cJSON *env = build_envelope(tc->m, tc->tool, tc->msg, tc->own, tc->atts, id, tc->timeout_ms,
                                tc->traceparent);
    tc->own = tc->atts = NULL; /* now owned by env */
    cJSON_ReplaceItemInObjectCaseSensitive(env, "task_id", cJSON_CreateString(id));
    cJSON_DeleteItemFromObjectCaseSensitive(env, "reply_to");
    cJSON_ReplaceItemInObjectCaseSensitive(env, "mode", cJSON_CreateString("task"));
    tc->payload = jprint_unformatted(env);
    char *args_json = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(env, "arguments"));
    cJSON_Delete(env);
    return args_json;
}

/* Creates task id as waiting in Redis with its envelope. 0 or an MCPQ_E* code. */
static int task_create(tc_t *tc, const char *id, const char *robot, long long priority,
                       long long *max_tasks)
{
    ing_ctx_t *ctx = tc->ctx;
    const ing_tool_t *tool = tc->tool;
    char *args_json = task_envelope(tc, id);
    const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(tc->msg->params, "task"), "ttl");
    ing_tasks_new_t t = {
        .id = id,
        .tenant = tool->tenant,
        .server = tool->server,
        .tool = tool->name,
        .version = tool->version_id,
        .args_json = args_json ? args_json : "{}",
        .robot = robot,
        .env_json = tc->payload ? tc->payload : "",
        .traceparent = tc->server_tp,
        .tracestate = tc->tracestate,
        .owner = tc->owner,
        .surface = tc->as_task == ANSWER_EXT       ? "ext"
                   : tc->as_task == ANSWER_MCP2025 ? "mcp"
                                                   : "tool",
        .priority = priority,
        .ttl_ms = cJSON_IsNumber(ttl) && ttl->valuedouble > 0 ? (long long)ttl->valuedouble : 0,
        .retention_s = ctx->set->task_retention_s,
        .max_tasks = ing_quota_limit(tc->m->tenant, ING_QUOTA_TASKS, ctx->set),
        .wait_replicas = (int)ctx->set->redis_wait_replicas,
        .wait_timeout_ms = (int)ctx->set->redis_wait_timeout_ms};
    *max_tasks = t.max_tasks;
    long long created = 0;
    int rc = tc->payload && args_json ? ing_tasks_create(ctx->kv, &t, &created) : MCPQ_ENOMEM;
    cJSON_free(args_json);
    return rc;
}

/* Publishes the new task id's job (tc->payload); a task Kafka refused ends terminated. */
static int task_publish(tc_t *tc, const char *id)
{
    int rc = task_send(tc, id, tc->payload);
    if (rc < 0)
        ing_tasks_abandon(tc->ctx->kv, id, "the job queue (Kafka) refused the task",
                          tc->ctx->set->task_retention_s);
    return rc;
}

/* The call becomes a task (docs/protocol.md, "Task mode"): created in Redis as waiting, its job
 * published with mode "task", and answered at once as tc->as_task says. The task is durable
 * before the answer leaves (the extension's rule: tasks/get resolves as soon as the client
 * has the id). */
static tc_status_t tc_task(tc_t *tc)
{
    if (tc->as_task < 0)
        return TC_NEXT;
    const char *robot = NULL;
    char why[256], id[TASK_ID_LEN];
    long long priority = 50, max_tasks = 0;
    if (task_routing(tc->m, tc->args, &robot, &priority, why, sizeof(why)) < 0)
        return tc_error(tc, 200, RPC_INVALID_PARAMS, why);
    if (tc->ikey)
        snprintf(id, sizeof(id), "%.*s", TASK_ID_LEN - 1, tc->idem_id); /* a task id */
    else
        task_id_new(id);
    /* A repeat of an idempotent call whose task exists: the same task, nothing new. */
    tc_status_t st = tc->ikey ? task_repeat(tc, id) : TC_NEXT;
    if (st != TC_NEXT)
        return st;
    int rc = task_create(tc, id, robot, priority, &max_tasks);
    if (rc < 0 && rc != MCPQ_EQUOTA && tc->ikey) {
        /* a concurrent repeat created it first, or Redis failed: the same rule */
        st = task_repeat(tc, id);
        if (st != TC_NEXT)
            return st;
    }
    if (rc == MCPQ_EQUOTA) {
        ing_mcpreq_resp_quota(tc->resp, tc->msg->id, ING_QUOTA_TASKS, max_tasks);
        return TC_ANSWERED;
    }
    if (rc < 0)
        return tc_failed(tc, "task store (Redis) unavailable; try again");
    if (task_publish(tc, id) < 0)
        return tc_failed(tc, "job queue (Kafka) unavailable; try again");
    log_event(LOG_INFO, "task created", "tenant", tc->tool->tenant, "tool", tc->tool->name,
              "task_id", id, "robot", robot ? robot : "", (char *)NULL);
    return answer_task(tc, id, NULL);
}

/* The waiting call for job_id: what it streams, its deadline, and how a question of the job
 * reaches its client (pending.h's on_input): up to 2025-11-25 as requests on the call's SSE
 * stream (mcpask.h), in 2026-07-28 as the call's InputRequiredResult (mrtr.h). */
static void call_prepare(tc_t *tc, const char *job_id)
{
    ing_call_t *call = tc->call;
    snprintf(call->job_id, sizeof(call->job_id), "%s", job_id);
    call->conn = tc->m->req->conn;
    call->deadline_mono = util_mono_ms() + tc->timeout_ms;
    const char *accept = ing_req_header(tc->m->req, "Accept");
    call->sse_ok = accept && strcasestr(accept, "text/event-stream") != NULL;
    call->log_min = tc->m->log_min;
    call->on_input = tc->m->modern ? NULL : ing_mcpask_hook_legacy;
    call->input_n = 0; /* a retry sets the question it answers (mrtr.h) */
    if (tc->m->modern && !tc->detached && ing_mrtr_arm(tc->m, tc->msg, call) < 0)
        log_event(LOG_WARN, "out of memory: the call's questions cannot reach its client", "job_id",
                  job_id, (char *)NULL);
    snprintf(call->tool, sizeof(call->tool), "%s", tc->tool->name);
    call->progress_token[0] = '\0';
    if (rpc_id_valid(tc->tok))
        rpc_id_str(tc->tok, call->progress_token, sizeof(call->progress_token));
}

/* 2026-07-28 multi round-trip requests (mrtr.h): a retry carrying the requestState of an
 * InputRequiredResult resumes the job it names, whichever replica it reaches: its
 * inputResponses go to the waiting worker and the call waits for that job's next answer. No
 * new job is published; this runs before the idempotency claim, which would otherwise find
 * the first call's key and publish its job again. */
static tc_status_t tc_resume(tc_t *tc)
{
    ing_mrtr_retry_t r;
    int st = tc->detached ? 0 : ing_mrtr_retry_check(tc->m, tc->msg, &r, tc->resp);
    if (st == 0)
        return TC_NEXT;
    if (st == 1)
        return TC_ANSWERED;
    call_prepare(tc, r.job);
    return ing_mrtr_retry_run(tc->m, tc->msg, tc->call, &r, tc->resp) ? TC_PARKED : TC_ANSWERED;
}

/* The waiting call's job id and what it streams, and its envelope into tc->payload. */
static tc_status_t tc_envelope(tc_t *tc)
{
    ing_call_t *call = tc->call;
    char job_id[ING_JOB_ID_LEN];
    if (tc->ikey) {
        snprintf(job_id, sizeof(job_id), "%s", tc->idem_id);
    } else {
        char hex[33];
        util_random_hex(hex, 16);
        snprintf(job_id, sizeof(job_id), "j_%s", hex);
    }
    call_prepare(tc, job_id);
    tc->key = ing_jobargs_route_key(tc->method, tc->tool->tenant, tc->tool->server, tc->own);
    cJSON *env = build_envelope(tc->m, tc->tool, tc->msg, tc->own, tc->atts, call->job_id,
                                tc->timeout_ms, tc->traceparent);
    tc->own = tc->atts = NULL; /* now owned by env */
    /* the validate stage's end, the produce stage's start (stages.h) */
    call->stamps.sent_us =
        (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(env, "sent_us"));
    if (tc->detached) /* the worker answers nobody; its record expires (docs/protocol.md) */
        cJSON_DeleteItemFromObjectCaseSensitive(env, "reply_to");
    if (tc->ikey) /* the worker keeps the record as long as a repeat may replay */
        cJSON_AddNumberToObject(env, "result_ttl_s", (double)tc->ctx->set->idempotency_ttl_s);
    tc->payload = jprint_unformatted(env);
    cJSON_Delete(env);
    if (!tc->payload)
        return tc_error(tc, 200, RPC_INTERNAL_ERROR, "out of memory");
    return TC_NEXT;
}

/* So notifications/cancelled of a legacy client reaches the job from any replica. Best
 * effort: without Redis the call still runs, it just cannot be cancelled. */
static void remember_request(tc_t *tc)
{
    if (tc->m->modern)
        return;
    char key[1200], ttl[24];
    reqmap_key(tc->m, tc->call->id_json, key, sizeof(key));
    snprintf(ttl, sizeof(ttl), "%lld", tc->timeout_ms / 1000 + 60);
    const char *argv[] = {"SET", key, tc->call->job_id, "EX", ttl};
    /* Queued for the pool's keeper: no round trip on this HTTP thread (docs/redis.md). */
    kv_pool_send(tc->ctx->kv, 5, argv, NULL);
}

/* A detached job goes to Kafka and nobody waits for it; its delivery report knows it by
 * "d:<job id>". */
static tc_status_t tc_publish_detached(tc_t *tc)
{
    ing_ctx_t *ctx = tc->ctx;
    const char *job_id = tc->call->job_id;
    size_t size = strlen(job_id) + 3;
    char *opaque = malloc(size);
    if (opaque)
        snprintf(opaque, size, "d:%s", job_id);
    int rc = opaque ? tc_send(tc, job_id, tc->key, tc->payload, opaque) : MCPQ_ENOMEM;
    if (rc < 0) {
        free(opaque);
        ing_metrics_published(ctx->metrics, 0);
        return tc_failed(tc, rc == MCPQ_ENOMEM ? "out of memory"
                                               : "job queue (Kafka) unavailable; try again");
    }
    log_event(LOG_INFO, "tool call published", "tenant", tc->tool->tenant, "tool", tc->tool->name,
              "method", kinds_method_name(tc->method), "job_id", job_id, "reply", "none",
              (char *)NULL);
    return TC_ANSWERED;
}

/* The job goes to Kafka and the call waits for its result (pending.h). */
static tc_status_t tc_publish(tc_t *tc)
{
    if (tc->detached)
        return tc_publish_detached(tc);
    ing_ctx_t *ctx = tc->ctx;
    ing_call_t *call = tc->call;
    char *opaque = strdup(call->job_id);
    if (!opaque)
        return tc_error(tc, 200, RPC_INTERNAL_ERROR, "out of memory");
    remember_request(tc);
    if (ing_mcpreq_enqueue(tc->m, call) < 0) {
        free(opaque);
        return tc_error(tc, 200, RPC_INTERNAL_ERROR, "internal error; try again");
    }
    int rc = tc_send(tc, call->job_id, tc->key, tc->payload, opaque);
    if (rc < 0) {
        free(opaque);
        ing_mcpreq_dequeue(tc->m, call);
        ing_metrics_published(ctx->metrics, 0);
        return tc_failed(tc, rc == MCPQ_ETOOBIG ? "arguments too large for the job queue"
                                                : "job queue (Kafka) unavailable; try again");
    }
    log_event(LOG_INFO, "tool call published", "tenant", tc->tool->tenant, "tool", tc->tool->name,
              "method", kinds_method_name(tc->method), "job_id", call->job_id, (char *)NULL);
    return ing_mcpreq_park(tc->m, call) ? TC_PARKED : TC_ANSWERED;
}

static tc_status_t (*const pipeline[])(tc_t *) = {
    tc_params, tc_tool,   tc_headers,     tc_channel, tc_arguments, tc_attachments,
    tc_ready,  tc_resume, tc_idempotency, tc_task,    tc_envelope,  tc_publish,
};

/* Runs the pipeline over tc; frees what it holds. 1 when parked. */
static int run(tc_t *tc)
{
    (void)ing_owner_of(tc->m->who, tc->owner, sizeof(tc->owner)); /* "" when none: nobody's */
    tc_status_t st = TC_NEXT;
    for (size_t i = 0; st == TC_NEXT && i < sizeof(pipeline) / sizeof(pipeline[0]); i++)
        st = pipeline[i](tc);
    cJSON_Delete(tc->own);
    cJSON_Delete(tc->atts);
    cJSON_free(tc->payload);
    free(tc->key);
    return st == TC_PARKED;
}

int ing_toolcall_run(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    if (m->server == ing_system_server()) {
        ing_system_call(m, msg, resp);
        return 0;
    }
    tc_t tc = {.m = m, .msg = msg, .resp = resp, .ctx = m->req->ctx, .as_task = -1};
    return run(&tc);
}

/* The state of a job that answers msg for obj (with vars), or 0 when no job answers it
 * (resp filled). */
static int object_tc(tc_t *tc, ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp,
                     const ing_tool_t *obj, const cJSON *vars)
{
    int method = kinds_method(msg->method);
    if (method <= KINDS_METHOD_CALL || !obj ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(obj->version, "executor"))) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "no job answers this request",
                              NULL);
        return 0;
    }
    *tc = (tc_t){.m = m,
                 .msg = msg,
                 .resp = resp,
                 .ctx = m->req->ctx,
                 .as_task = -1,
                 .method = (kinds_method_t)method,
                 .given = obj,
                 .vars = vars};
    return 1;
}

int ing_toolcall_object(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp, const ing_tool_t *obj,
                        const cJSON *vars)
{
    tc_t tc;
    return object_tc(&tc, m, msg, resp, obj, vars) ? run(&tc) : 0;
}

int ing_toolcall_detached(ing_mcp_t *m, const rpc_msg_t *msg, const ing_tool_t *obj,
                          const cJSON *vars, char *why, size_t why_size)
{
    ing_resp_t resp = {0};
    tc_t *tc = calloc(1, sizeof(*tc)); /* an ing_call_t is large for a stack */
    int ok = tc && object_tc(tc, m, msg, &resp, obj, vars);
    if (ok) {
        tc->detached = 1;
        (void)run(tc);
    }
    /* Published, or answered without a job (fake mode): no error; refused: its message. */
    cJSON *e = resp.body ? cJSON_Parse(resp.body) : NULL;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(e, "error");
    if (!ok || err) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
        snprintf(why, why_size, "%s", text ? text : "out of memory");
        ok = 0;
    }
    cJSON_Delete(e);
    ing_resp_release(&resp);
    free(tc);
    return ok ? 0 : -1;
}

void ing_toolcall_delivered(void *opaque, int err, void *arg)
{
    ing_ctx_t *ctx = arg;
    char *job_id = opaque;
    ing_metrics_published(ctx->metrics, err == 0);
    if (strncmp(job_id, "d:", 2) == 0) {
        /* A detached job (ing_toolcall_detached): nobody waits; a loss is only logged. */
        if (err < 0)
            log_event(LOG_WARN, "a job nobody waits for was not delivered", "job_id", job_id + 2,
                      (char *)NULL);
        free(job_id);
        return;
    }
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
    else if (err == 0)
        ing_pending_acked(ctx->pending, job_id, util_now_us()); /* the produce stage's end */
    free(job_id);
}

void ing_toolcall_cancelled(ing_mcp_t *m, const rpc_msg_t *msg)
{
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(msg->params, "requestId");
    if (!cJSON_IsString(rid) && !cJSON_IsNumber(rid))
        return;
    const char *reason =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "reason"));
    char id_json[300], key[1200], err[128];
    rpc_id_str(rid, id_json, sizeof(id_json));
    reqmap_key(m, id_json, key, sizeof(key));
    /* The map of a call made just before may still be in the pool's queue (remember_request
     * queues it): let it reach Redis first. A map written by another replica's keeper is
     * a few milliseconds behind its call at most (docs/internals.md). */
    if (kv_pool_sync(m->req->ctx->kv, CANCEL_SYNC_MS) < 0)
        log_event(LOG_WARN, "request map writes still queued at a cancel", (char *)NULL);
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
