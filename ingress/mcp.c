#include "mcp.h"

#include "auth.h"
#include "err.h"
#include "jsonrpc.h"
#include "log.h"
#include "schema.h"
#include "session.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MCPQ_VERSION_STR "0.1.0"

static const char *const supported_versions[] = {ING_SUPPORTED_VERSIONS};
#define NVERSIONS (sizeof(supported_versions) / sizeof(supported_versions[0]))

/* Arguments the gateway consumes itself (SPEC 4.2); never passed to a tool. */
static const char *const reserved_args[] = {"idempotency_key", "attachments", "RobotId",
                                            "TaskPriority", "channel_id"};

static const char *const log_levels[] = {"debug",    "info",  "notice",    "warning",
                                         "error",    "critical", "alert", "emergency"};

typedef struct mcp_call_ctx {
    ing_req_t *req;
    ing_registry_t *reg;
    const ing_tenant_t *tenant;
    const ing_server_t *server;
    const char *version;
    ing_session_t session;
    int has_session;
} mcp_t;

static int version_supported(const char *v)
{
    for (size_t i = 0; i < NVERSIONS; i++)
        if (strcmp(v, supported_versions[i]) == 0)
            return 1;
    return 0;
}

static void set_json(ing_resp_t *resp, int status, char *body)
{
    resp->status = body ? status : 500;
    resp->body = body;
    resp->content_type = "application/json";
}

static void set_error(ing_resp_t *resp, int status, const cJSON *id, int code, const char *msg,
                      const cJSON *data)
{
    set_json(resp, status, rpc_error_str(id, code, msg, data));
}

/* A CallToolResult with isError and one text block. */
static char *tool_error_result(const char *text)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(o, "content");
    cJSON *block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "text");
    cJSON_AddStringToObject(block, "text", text);
    cJSON_AddItemToArray(content, block);
    cJSON_AddTrueToObject(o, "isError");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void set_result_owned(ing_resp_t *resp, const cJSON *id, char *result_json)
{
    if (!result_json) {
        set_error(resp, 200, id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    set_json(resp, 200, rpc_result_str(id, result_json));
    free(result_json);
}

static void set_result_obj(ing_resp_t *resp, const cJSON *id, cJSON *result)
{
    char *s = cJSON_PrintUnformatted(result);
    cJSON_Delete(result);
    set_result_owned(resp, id, s);
}

/* ---- methods ---- */

static void do_initialize(mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *asked = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(msg->params, "protocolVersion"));
    const char *v = asked && version_supported(asked) ? asked : ING_LATEST_VERSION;
    ing_session_t s;
    memset(&s, 0, sizeof(s));
    snprintf(s.tenant, sizeof(s.tenant), "%s", m->tenant->id);
    snprintf(s.version, sizeof(s.version), "%s", v);
    int rc = ing_session_create(m->req->ctx->kv, &s, m->req->ctx->set->session_ttl_s);
    if (rc < 0) {
        set_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                  "session store (Redis) unavailable; try again", NULL);
        return;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "protocolVersion", v);
    cJSON *caps = cJSON_AddObjectToObject(r, "capabilities");
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", 1);
    cJSON_AddObjectToObject(caps, "logging");
    cJSON *info = cJSON_AddObjectToObject(r, "serverInfo");
    cJSON_AddStringToObject(info, "name", "mcpq");
    cJSON_AddStringToObject(info, "version", MCPQ_VERSION_STR);
    cJSON_AddStringToObject(r, "instructions",
                            "Tools of this server run on the mcpq worker fleet.");
    set_result_obj(resp, msg->id, r);
    snprintf(resp->session_id, sizeof(resp->session_id), "%s", s.id);
}

static void do_set_level(mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *level =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "level"));
    int ok = 0;
    for (size_t i = 0; level && i < sizeof(log_levels) / sizeof(log_levels[0]); i++)
        ok |= strcmp(level, log_levels[i]) == 0;
    if (!ok) {
        set_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                  "params.level must be one of debug, info, notice, warning, error, critical, "
                  "alert, emergency",
                  NULL);
        return;
    }
    if (m->has_session) {
        snprintf(m->session.log_level, sizeof(m->session.log_level), "%s", level);
        if (ing_session_save(m->req->ctx->kv, &m->session, m->req->ctx->set->session_ttl_s) < 0) {
            set_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                      "session store (Redis) unavailable; try again", NULL);
            return;
        }
    }
    set_json(resp, 200, rpc_result_str(msg->id, "{}"));
}

/* Cursors are "c<offset>"; anything else is -32602. */
static int parse_cursor(const cJSON *params, size_t ntools, size_t *offset)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(params, "cursor");
    *offset = 0;
    if (!c || cJSON_IsNull(c))
        return 0;
    if (!cJSON_IsString(c) || c->valuestring[0] != 'c')
        return MCPQ_EINVAL;
    long long v;
    if (util_parse_ll(c->valuestring + 1, 1, (long long)ntools - 1, &v) < 0)
        return MCPQ_EINVAL;
    *offset = (size_t)v;
    return 0;
}

static void do_tools_list(mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const ing_server_t *srv = m->server;
    size_t off;
    if (parse_cursor(msg->params, srv->ntools, &off) < 0) {
        set_error(resp, 200, msg->id, RPC_INVALID_PARAMS, "invalid cursor", NULL);
        return;
    }
    size_t page = (size_t)m->req->ctx->set->page_size;
    size_t end = off + page < srv->ntools ? off + page : srv->ntools;
    util_buf_t b;
    util_buf_init(&b, (size_t)64 << 20);
    char idbuf[320];
    rpc_id_str(msg->id, idbuf, sizeof(idbuf));
    int rc = util_buf_append(&b, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
    rc |= util_buf_append(&b, idbuf, strlen(idbuf));
    rc |= util_buf_append(&b, ",\"result\":{\"tools\":[", 20);
    for (size_t i = off; i < end && rc == 0; i++) {
        if (i > off)
            rc |= util_buf_append(&b, ",", 1);
        rc |= util_buf_append(&b, srv->tools[i]->list_json, strlen(srv->tools[i]->list_json));
    }
    rc |= util_buf_append(&b, "]", 1);
    if (end < srv->ntools) {
        char cur[48];
        int n = snprintf(cur, sizeof(cur), ",\"nextCursor\":\"c%zu\"", end);
        rc |= util_buf_append(&b, cur, (size_t)n);
    }
    rc |= util_buf_append(&b, "}}", 2);
    if (rc) {
        util_buf_cleanup(&b);
        set_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "tools/list page too large", NULL);
        return;
    }
    set_json(resp, 200, b.data); /* ownership of b.data moves to resp */
}

/* The tool's own arguments: a copy of params.arguments without the reserved names. */
static cJSON *tool_arguments(const cJSON *args)
{
    cJSON *out = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
    for (size_t i = 0; out && i < sizeof(reserved_args) / sizeof(reserved_args[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(out, reserved_args[i]);
    return out;
}

static cJSON *build_envelope(mcp_t *m, const ing_tool_t *tool, const rpc_msg_t *msg,
                             cJSON *args, const char *job_id, long long timeout_ms)
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
    cJSON_AddArrayToObject(e, "attachments");
    cJSON_AddNullToObject(e, "task_id");
    char chan[40];
    if (m->has_session) {
        snprintf(chan, sizeof(chan), "c_%s", m->session.id + 2);
        cJSON_AddStringToObject(e, "session_id", m->session.id);
    } else {
        char hex[33];
        util_random_hex(hex, 16);
        snprintf(chan, sizeof(chan), "c_%s", hex);
    }
    cJSON_AddStringToObject(e, "channel_id", chan);
    const cJSON *exe = cJSON_GetObjectItemCaseSensitive(tool->version, "executor");
    cJSON_AddItemToObject(e, "executor", cJSON_Duplicate(exe, 1));
    cJSON_AddStringToObject(e, "mode", tool->task_mode ? "task" : "sync");
    cJSON_AddNumberToObject(e, "timeout_ms", (double)timeout_ms);
    cJSON_AddNumberToObject(e, "created_ms", (double)now);
    cJSON_AddNumberToObject(e, "deadline_ms", (double)(now + timeout_ms));
    cJSON_AddStringToObject(e, "reply_to", ctx->reply_key);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(msg->params, "_meta");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
    if (cJSON_IsString(tok) || cJSON_IsNumber(tok))
        cJSON_AddItemToObject(e, "progress_token", cJSON_Duplicate(tok, 1));
    const char *tp = MHD_lookup_connection_value(m->req->conn, MHD_HEADER_KIND, "traceparent");
    if (!tp)
        tp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "traceparent"));
    if (tp && strlen(tp) < 128)
        cJSON_AddStringToObject(e, "traceparent", tp);
    return e;
}

/* Returns 1 when parked. */
static int do_tools_call(mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    ing_req_t *req = m->req;
    ing_ctx_t *ctx = req->ctx;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(msg->params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(msg->params, "arguments");
    if (!cJSON_IsString(name)) {
        set_error(resp, 200, msg->id, RPC_INVALID_PARAMS, "params.name must be a string", NULL);
        return 0;
    }
    if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args)) {
        set_error(resp, 200, msg->id, RPC_INVALID_PARAMS, "params.arguments must be an object",
                  NULL);
        return 0;
    }
    if (cJSON_IsNull(args))
        args = NULL;
    const ing_tool_t *tool = ing_registry_tool(m->server, name->valuestring);
    if (!tool) {
        char buf[200];
        snprintf(buf, sizeof(buf), "Unknown tool: %.120s", name->valuestring);
        set_error(resp, 200, msg->id, RPC_INVALID_PARAMS, buf, NULL);
        return 0;
    }
    snprintf(req->tool, sizeof(req->tool), "%s", tool->name);
    cJSON *own = tool_arguments(args);
    if (!own) {
        set_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return 0;
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(tool->version, "inputSchema");
    char why[512];
    if (schema && sch_validate(schema, own, "arguments", why, sizeof(why)) < 0) {
        char text[640];
        snprintf(text, sizeof(text), "Invalid arguments for tool %s: %s", tool->name, why);
        cJSON_Delete(own);
        ing_metrics_call(ctx->metrics, ING_CALL_TOOL_ERROR);
        set_result_owned(resp, msg->id, tool_error_result(text));
        return 0;
    }
    if (tool->fake_result) {
        cJSON_Delete(own);
        ing_metrics_call(ctx->metrics, ING_CALL_FAKE);
        set_result_obj(resp, msg->id, cJSON_Duplicate(tool->fake_result, 1));
        log_event(LOG_INFO, "tool call answered in fake mode", "tenant", tool->tenant, "tool",
                  tool->name, (char *)NULL);
        return 0;
    }
    if (!mq_producer_up(ctx->producer) || !ing_pending_healthy(ctx->pending)) {
        cJSON_Delete(own);
        ing_metrics_call(ctx->metrics, ING_CALL_FAILED);
        set_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                  !mq_producer_up(ctx->producer) ? "job queue (Kafka) unavailable; try again"
                                                 : "result store (Redis) unavailable; try again",
                  NULL);
        return 0;
    }

    long long timeout_ms = tool->timeout_ms > 0 ? tool->timeout_ms : ctx->set->default_timeout_ms;
    char hex[33];
    util_random_hex(hex, 16);
    ing_call_t *call = &req->call;
    snprintf(call->job_id, sizeof(call->job_id), "j_%s", hex);
    rpc_id_str(msg->id, call->id_json, sizeof(call->id_json));
    call->conn = req->conn;
    call->deadline_mono = util_mono_ms() + timeout_ms;

    cJSON *env = build_envelope(m, tool, msg, own, call->job_id, timeout_ms);
    own = NULL; /* now owned by env */
    char *payload = cJSON_PrintUnformatted(env);
    cJSON_Delete(env);
    char *opaque = strdup(call->job_id);
    if (!payload || !opaque) {
        free(payload);
        free(opaque);
        set_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return 0;
    }
    ing_pending_add(ctx->pending, call);
    req->has_call = 1;
    int rc = mq_producer_send(ctx->producer, ctx->set->topic_jobs, call->job_id, payload,
                              strlen(payload), NULL, opaque);
    cJSON_free(payload);
    if (rc < 0) {
        free(opaque);
        ing_pending_remove(ctx->pending, call);
        req->has_call = 0;
        ing_metrics_published(ctx->metrics, 0);
        ing_metrics_call(ctx->metrics, ING_CALL_FAILED);
        set_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                  rc == MCPQ_ETOOBIG ? "arguments too large for the job queue"
                                     : "job queue (Kafka) unavailable; try again",
                  NULL);
        return 0;
    }
    log_event(LOG_INFO, "tool call published", "tenant", tool->tenant, "tool", tool->name,
              "job_id", call->job_id, (char *)NULL);
    return ing_pending_park(ctx->pending, call) ? 0 : 1;
}

void ing_mcp_delivered(void *opaque, int err, void *arg)
{
    ing_ctx_t *ctx = arg;
    char *job_id = opaque;
    ing_metrics_published(ctx->metrics, err == 0);
    if (err == MCPQ_EUNAVAIL)
        ing_pending_fail(ctx->pending, job_id, RPC_INTERNAL_ERROR,
                         "job queue (Kafka) unavailable; try again");
    free(job_id);
}

/* ---- dispatch ---- */

/* Returns 1 when parked. */
static int dispatch(mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *meth = msg->method;
    m->req->metric = ing_metrics_method(meth);
    if (msg->kind == RPC_NOTIFICATION) {
        resp->status = 202;
        return 0;
    }
    if (strcmp(meth, "initialize") == 0)
        do_initialize(m, msg, resp);
    else if (strcmp(meth, "ping") == 0)
        set_json(resp, 200, rpc_result_str(msg->id, "{}"));
    else if (strcmp(meth, "logging/setLevel") == 0)
        do_set_level(m, msg, resp);
    else if (strcmp(meth, "tools/list") == 0)
        do_tools_list(m, msg, resp);
    else if (strcmp(meth, "tools/call") == 0)
        return do_tools_call(m, msg, resp);
    else {
        char buf[200];
        snprintf(buf, sizeof(buf), "Method not found: %.120s", meth);
        set_error(resp, 200, msg->id, RPC_METHOD_NOT_FOUND, buf, NULL);
    }
    return 0;
}

/* A 2025-03-26 batch: every element answered in one array (tools/call elements excepted). */
static void do_batch(mcp_t *m, const cJSON *batch, ing_resp_t *resp)
{
    if (cJSON_GetArraySize(batch) == 0) {
        set_error(resp, 400, NULL, RPC_INVALID_REQUEST, "empty batch", NULL);
        return;
    }
    util_buf_t b;
    util_buf_init(&b, (size_t)64 << 20);
    util_buf_append(&b, "[", 1);
    int n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, batch)
    {
        rpc_msg_t msg;
        ing_resp_t one = {0};
        rpc_classify(item, &msg);
        if (msg.kind == RPC_INVALID)
            set_error(&one, 400, msg.id, RPC_INVALID_REQUEST, msg.why, NULL);
        else if (msg.kind != RPC_REQUEST)
            continue;
        else if (strcmp(msg.method, "tools/call") == 0 || strcmp(msg.method, "initialize") == 0)
            set_error(&one, 200, msg.id, RPC_INVALID_REQUEST,
                      "tools/call and initialize cannot be sent inside a batch", NULL);
        else
            dispatch(m, &msg, &one);
        if (one.body) {
            if (n++)
                util_buf_append(&b, ",", 1);
            util_buf_append(&b, one.body, strlen(one.body));
            free(one.body);
        }
    }
    util_buf_append(&b, "]", 1);
    m->req->metric = ING_M_OTHER;
    if (n == 0) {
        util_buf_cleanup(&b);
        resp->status = 202;
        return;
    }
    set_json(resp, 200, b.data);
}

static const char *header(ing_req_t *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

static int content_type_ok(const char *ct)
{
    if (!ct)
        return 0;
    while (*ct == ' ')
        ct++;
    return strncasecmp(ct, "application/json", 16) == 0 &&
           (ct[16] == '\0' || ct[16] == ';' || ct[16] == ' ');
}

static int accept_ok(const char *accept)
{
    if (!accept || !*accept)
        return 1;
    return strcasestr(accept, "application/json") || strcasestr(accept, "*/*") ||
           strcasestr(accept, "application/*") || strcasestr(accept, "text/event-stream");
}

/* Common front half of POST and DELETE: origin, auth, registry, server. 0 or resp filled. */
static int front(ing_req_t *req, const char *server, mcp_t *m, ing_resp_t *resp)
{
    ing_ctx_t *ctx = req->ctx;
    memset(m, 0, sizeof(*m));
    m->req = req;
    if (!ing_auth_origin_ok(req->conn, ctx->set->allowed_origins, ctx->set->allowed_hosts)) {
        set_error(resp, 403, NULL, RPC_INVALID_REQUEST, "Origin or Host not allowed", NULL);
        return -1;
    }
    m->reg = ing_ctx_registry(ctx);
    if (!m->reg) {
        set_error(resp, 503, NULL, RPC_INTERNAL_ERROR, "registry not loaded yet; try again",
                  NULL);
        return -1;
    }
    const char *why = NULL;
    m->tenant = ing_auth_tenant(req->conn, m->reg, &why);
    if (!m->tenant) {
        set_error(resp, 401, NULL, -32000, why, NULL);
        resp->www_auth = "Bearer realm=\"mcpq\"";
        return -1;
    }
    snprintf(req->tenant, sizeof(req->tenant), "%s", m->tenant->id);
    const char *sname = server ? server : m->tenant->default_server;
    m->server = ing_registry_server(m->reg, m->tenant->id, sname);
    if (!m->server) {
        set_error(resp, 404, NULL, RPC_INVALID_PARAMS, "server not found", NULL);
        return -1;
    }
    return 0;
}

static int load_session(mcp_t *m, const cJSON *id, ing_resp_t *resp)
{
    const char *sid = header(m->req, "Mcp-Session-Id");
    if (!sid)
        return 0;
    int rc = ing_session_get(m->req->ctx->kv, sid, m->tenant->id, m->req->ctx->set->session_ttl_s,
                             &m->session);
    if (rc == MCPQ_ENOTFOUND) {
        set_error(resp, 404, id, RPC_SESSION_NOT_FOUND, "Session not found", NULL);
        return -1;
    }
    if (rc < 0) {
        set_error(resp, 503, id, RPC_INTERNAL_ERROR,
                  "session store (Redis) unavailable; try again", NULL);
        return -1;
    }
    m->has_session = 1;
    return 0;
}

int ing_mcp_post(ing_req_t *req, const char *server, ing_resp_t *resp)
{
    mcp_t m;
    int parked = 0;
    cJSON *root = NULL;
    if (front(req, server, &m, resp) < 0)
        goto out;
    if (req->too_big) {
        char buf[96];
        snprintf(buf, sizeof(buf), "request body larger than %lld bytes",
                 req->ctx->set->max_body_bytes);
        set_error(resp, 413, NULL, RPC_INVALID_REQUEST, buf, NULL);
        goto out;
    }
    if (!content_type_ok(header(req, "Content-Type"))) {
        set_error(resp, 415, NULL, RPC_INVALID_REQUEST,
                  "Content-Type must be application/json", NULL);
        goto out;
    }
    if (!accept_ok(header(req, "Accept"))) {
        set_error(resp, 406, NULL, RPC_INVALID_REQUEST,
                  "Accept must allow application/json or text/event-stream", NULL);
        goto out;
    }
    const char *v = header(req, "MCP-Protocol-Version");
    if (v && !version_supported(v)) {
        cJSON *data = cJSON_CreateObject();
        cJSON *sup = cJSON_AddArrayToObject(data, "supported");
        for (size_t i = 0; i < NVERSIONS; i++)
            cJSON_AddItemToArray(sup, cJSON_CreateString(supported_versions[i]));
        cJSON_AddStringToObject(data, "requested", v);
        set_error(resp, 400, NULL, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
                  data);
        cJSON_Delete(data);
        goto out;
    }
    m.version = v ? v : ING_DEFAULT_VERSION;

    const char *why = NULL;
    root = rpc_parse(req->body.data ? req->body.data : "", req->body.len, &why);
    if (!root) {
        set_error(resp, 400, NULL, RPC_PARSE_ERROR, why ? why : "Parse error", NULL);
        goto out;
    }
    if (cJSON_IsArray(root)) {
        if (strcmp(m.version, "2025-03-26") != 0) {
            set_error(resp, 400, NULL, RPC_INVALID_REQUEST,
                      "JSON-RPC batches are only allowed in protocol version 2025-03-26", NULL);
            goto out;
        }
        if (load_session(&m, NULL, resp) < 0)
            goto out;
        do_batch(&m, root, resp);
        goto out;
    }
    rpc_msg_t msg;
    rpc_classify(root, &msg);
    if (msg.kind == RPC_INVALID) {
        set_error(resp, 400, msg.id, RPC_INVALID_REQUEST, msg.why, NULL);
        goto out;
    }
    if (msg.kind == RPC_RESPONSE) {
        resp->status = 202;
        goto out;
    }
    if (msg.kind == RPC_REQUEST && strcmp(msg.method, "initialize") != 0 &&
        load_session(&m, msg.id, resp) < 0)
        goto out;
    parked = dispatch(&m, &msg, resp);
out:
    cJSON_Delete(root);
    if (m.reg)
        ing_registry_unref(m.reg);
    return parked;
}

void ing_mcp_delete(ing_req_t *req, const char *server, ing_resp_t *resp)
{
    mcp_t m;
    req->metric = ING_M_SESSION_DELETE;
    if (front(req, server, &m, resp) == 0) {
        const char *sid = header(req, "Mcp-Session-Id");
        if (!sid) {
            set_error(resp, 400, NULL, RPC_INVALID_REQUEST, "Mcp-Session-Id header required",
                      NULL);
        } else {
            int rc = ing_session_delete(req->ctx->kv, sid, m.tenant->id);
            if (rc == 0)
                resp->status = 200;
            else if (rc == MCPQ_ENOTFOUND)
                set_error(resp, 404, NULL, RPC_SESSION_NOT_FOUND, "Session not found", NULL);
            else
                set_error(resp, 503, NULL, RPC_INTERNAL_ERROR,
                          "session store (Redis) unavailable; try again", NULL);
        }
    }
    if (m.reg)
        ing_registry_unref(m.reg);
}
