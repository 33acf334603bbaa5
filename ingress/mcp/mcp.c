#include "mcp.h"
#include "toolcall.h"

#include "access.h"

#include "frontdoor.h"
#include "batch.h"
#include "era.h"
#include "err.h"
#include "listen.h"
#include "log.h"
#include "mcpreq.h"
#include "mcpask.h"
#include "mcplist.h"
#include "subscribe.h"
#include "mcptasks.h"
#include "mcpobj.h"
#include "notify.h"
#include "peer.h"
#include "system.h"
#include "version.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define INSTRUCTIONS "Tools of this server run on the mcpq worker fleet."

static const char *const supported_versions[] = {ING_SUPPORTED_VERSIONS};
#define NVERSIONS (sizeof(supported_versions) / sizeof(supported_versions[0]))

static int version_supported(const char *v)
{
    for (size_t i = 0; i < NVERSIONS; i++)
        if (strcmp(v, supported_versions[i]) == 0)
            return 1;
    return 0;
}

/* ---- methods ---- */

/* The server features srv announces, in initialize and server/discover alike
 * (docs/protocol.md "Capabilities"): tools and logging always; resources (subscribe and
 * list_changed) when it publishes resources or templates, prompts (list_changed) when it
 * publishes prompts, completions when it has either prompts or templates. A server of tools
 * only announces tools only, as before resources existed; the methods of the other kinds are
 * answered whatever was announced (empty lists), and a legacy session keeps what its
 * initialize announced while the registry changes under it. */
static void add_server_caps(cJSON *caps, const ing_server_t *srv)
{
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", 1);
    if (srv && srv->nresources + srv->ntemplates > 0) {
        cJSON *res = cJSON_AddObjectToObject(caps, "resources");
        cJSON_AddBoolToObject(res, "subscribe", 1);
        cJSON_AddBoolToObject(res, "listChanged", 1);
    }
    if (srv && srv->nprompts > 0)
        cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "prompts"), "listChanged", 1);
    if (srv && srv->nprompts + srv->ntemplates > 0)
        cJSON_AddObjectToObject(caps, "completions");
    cJSON_AddObjectToObject(caps, "logging");
}

static void do_initialize(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *asked =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "protocolVersion"));
    /* initialize is the legacy handshake: a modern or unknown version gets the latest
     * legacy one (the client may then disconnect). */
    const char *v = asked && version_supported(asked) && strcmp(asked, ING_MODERN_VERSION) != 0
                        ? asked
                        : ING_LATEST_VERSION;
    ing_session_t s;
    memset(&s, 0, sizeof(s));
    snprintf(s.tenant, sizeof(s.tenant), "%s", m->tenant->id);
    snprintf(s.version, sizeof(s.version), "%s", v);
    /* What a tool may ask this client (docs/protocol.md, "Asking the user"). */
    cJSON *ccaps = ing_mcpask_caps(cJSON_GetObjectItemCaseSensitive(msg->params, "capabilities"));
    char *cj = ccaps && ccaps->child ? cJSON_PrintUnformatted(ccaps) : NULL;
    if (cj && strlen(cj) < sizeof(s.caps))
        snprintf(s.caps, sizeof(s.caps), "%s", cj);
    cJSON_free(cj);
    cJSON_Delete(ccaps);
    const mcpq_settings_t *set = m->req->ctx->set;
    long long max = ing_quota_limit(m->tenant, ING_QUOTA_SESSIONS, set);
    int rc = ing_session_create(m->req->ctx->kv, &s, set->session_ttl_s, max);
    if (rc == MCPQ_EQUOTA) {
        ing_mcpreq_resp_quota(resp, msg->id, ING_QUOTA_SESSIONS, max);
        return;
    }
    if (rc < 0) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                              "session store (Redis) unavailable; try again", NULL);
        return;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "protocolVersion", v);
    cJSON *caps = cJSON_AddObjectToObject(r, "capabilities");
    /* list_changed notifications: the GET stream (listen.h) */
    add_server_caps(caps, m->server);
    /* MCP Tasks (2025-11-25): tools/call may be task-augmented; tasks/list and cancel. */
    cJSON *tasks = cJSON_AddObjectToObject(caps, "tasks");
    cJSON_AddObjectToObject(tasks, "list");
    cJSON_AddObjectToObject(tasks, "cancel");
    cJSON_AddObjectToObject(
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(tasks, "requests"), "tools"), "call");
    cJSON_AddItemToObject(r, "serverInfo", ing_mcpreq_server_info());
    cJSON_AddStringToObject(r, "instructions", INSTRUCTIONS);
    ing_mcpreq_resp_result_obj(m, resp, msg->id, r);
    snprintf(resp->session_id, sizeof(resp->session_id), "%s", s.id);
}

/* server/discover (2026-07-28; answered in every era). */
static void do_discover(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *sup = cJSON_AddArrayToObject(r, "supportedVersions");
    for (size_t i = 0; i < NVERSIONS; i++)
        cJSON_AddItemToArray(sup, cJSON_CreateString(supported_versions[i]));
    cJSON *caps = cJSON_AddObjectToObject(r, "capabilities");
    /* list_changed notifications: subscriptions/listen, or the GET stream of an older
     * version (listen.h) */
    add_server_caps(caps, m->server);
    /* The tasks extension (docs/protocol.md, "MCP Tasks"): task-mode tools answer with a task to
     * clients that declare it on the request. */
    cJSON_AddObjectToObject(cJSON_AddObjectToObject(caps, "extensions"), ING_EXT_TASKS);
    cJSON_AddItemToObject(r, "serverInfo", ing_mcpreq_server_info());
    cJSON_AddStringToObject(r, "instructions", INSTRUCTIONS);
    /* a cacheable result (2026-07-28 server/utilities/caching.mdx) */
    cJSON_AddNumberToObject(r, "ttlMs", (double)m->req->ctx->set->list_ttl_ms);
    cJSON_AddStringToObject(r, "cacheScope", ING_LIST_CACHE_SCOPE);
    int modern = m->modern;
    m->modern = 1; /* resultType and _meta serverInfo whatever the era of the request */
    ing_mcpreq_resp_result_obj(m, resp, msg->id, r);
    m->modern = modern;
}

static void do_set_level(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *level =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "level"));
    if (ing_notify_level_index(level) < 0) {
        ing_mcpreq_resp_error(
            resp, 200, msg->id, RPC_INVALID_PARAMS,
            "params.level must be one of debug, info, notice, warning, error, critical, "
            "alert, emergency",
            NULL);
        return;
    }
    if (m->has_session) {
        snprintf(m->session.log_level, sizeof(m->session.log_level), "%s", level);
        if (ing_session_save(m->req->ctx->kv, &m->session, m->req->ctx->set->session_ttl_s) < 0) {
            ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                                  "session store (Redis) unavailable; try again", NULL);
            return;
        }
    }
    ing_mcpreq_resp_json(resp, 200, rpc_result_str(msg->id, "{}"));
}

static const char *header(ing_req_t *req, const char *name)
{
    return ing_req_header(req, name);
}

/* Streams that cannot open (ing_listen_open's errors, spec its request) as an HTTP answer. */
static void listen_refused(ing_resp_t *resp, const cJSON *id, int rc, const ing_listen_spec_t *spec)
{
    if (rc == MCPQ_EQUOTA) {
        ing_mcpreq_resp_quota(resp, id, ING_QUOTA_STREAMS, spec->tenant_max);
    } else if (rc == MCPQ_EUNAVAIL || rc == MCPQ_ETOOBIG) {
        ing_mcpreq_resp_error(resp, 503, id, RPC_INTERNAL_ERROR,
                              rc == MCPQ_EUNAVAIL
                                  ? "server shutting down; listen on another replica"
                                  : "too many notification streams open on this replica; try again",
                              NULL);
        resp->retry_after_s = 5;
    } else {
        ing_mcpreq_resp_error(resp, 500, id, RPC_INTERNAL_ERROR,
                              "cannot open the stream: out of memory", NULL);
    }
}

/* subscriptions/listen (2026-07-28; listen.h says what of the specification this follows):
 * an SSE stream that stays open, acknowledged first, carrying the list_changed notifications
 * the filter asks for and notifications/resources/updated for its resourceSubscriptions that
 * the server serves (subscribe.h), ended by the client closing it or by this server with the
 * listen request's response. */
static void do_listen(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const cJSON *filter = cJSON_GetObjectItemCaseSensitive(msg->params, "notifications");
    if (!cJSON_IsObject(filter)) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "params.notifications must be an object naming the notifications to "
                              "receive, e.g. {\"toolsListChanged\": true}",
                              NULL);
        return;
    }
    const char *accept = header(m->req, "Accept");
    if (!accept || !strcasestr(accept, "text/event-stream")) {
        ing_mcpreq_resp_error(
            resp, 406, msg->id, RPC_INVALID_REQUEST,
            "subscriptions/listen answers with an SSE stream: Accept must include "
            "text/event-stream",
            NULL);
        return;
    }
    /* The response that ends the stream gracefully (SubscriptionsListenResult). */
    cJSON *end = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(end, "_meta");
    cJSON_AddItemToObject(meta, ING_META_SUBSCRIPTION_ID, cJSON_Duplicate(msg->id, 1));
    ing_mcpreq_modern_result(end);
    char *end_result = cJSON_PrintUnformatted(end);
    cJSON_Delete(end);
    char *end_json = end_result ? rpc_result_str(msg->id, end_result) : NULL;
    cJSON_free(end_result);
    char idbuf[320], why[200];
    const char **uris = NULL;
    size_t nuris = 0;
    if (ing_subscribe_listen_uris(m, filter, &uris, &nuris, why, sizeof(why)) < 0) {
        free(end_json);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, why, NULL);
        return;
    }
    ing_listen_spec_t spec = {
        .tenant = m->tenant->id,
        .server = m->server->name,
        .sub_id_json = rpc_id_str(msg->id, idbuf, sizeof(idbuf)),
        .tools = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(filter, "toolsListChanged")),
        .resources = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(filter, "resourcesListChanged")),
        .prompts = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(filter, "promptsListChanged")),
        .uris = uris,
        .nuris = nuris,
        .end_json = end_json,
        .tenant_max = ing_quota_limit(m->tenant, ING_QUOTA_STREAMS, m->req->ctx->set)};
    int rc = end_json ? ing_listen_open(m->req->ctx->listen, m->req, &spec) : MCPQ_ENOMEM;
    free(end_json);
    if (rc < 0)
        listen_refused(resp, msg->id, rc, &spec);
    else /* the stream is there to hear the updates the workers will publish */
        ing_subscribe_listen_jobs(m, msg, uris, nuris);
    free(uris);
}

/* ---- dispatch ---- */

/* HTTP 400 with -32022, data.supported and data.requested. */
static void unsupported_version(ing_resp_t *resp, const cJSON *id, const char *asked)
{
    cJSON *data = cJSON_CreateObject();
    cJSON *sup = cJSON_AddArrayToObject(data, "supported");
    for (size_t i = 0; i < NVERSIONS; i++)
        cJSON_AddItemToArray(sup, cJSON_CreateString(supported_versions[i]));
    cJSON_AddStringToObject(data, "requested", asked);
    ing_mcpreq_resp_error(resp, 400, id, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
                          data);
    cJSON_Delete(data);
}

/* Returns 1 when parked. */
static int dispatch(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *meth = msg->method;
    m->req->metric = ing_metrics_method(meth);
    if (msg->kind == RPC_NOTIFICATION) {
        if (!m->modern && strcmp(meth, "notifications/cancelled") == 0)
            ing_toolcall_cancelled(m, msg);
        resp->status = 202;
        return 0;
    }
    /* 2026-07-28 removed initialize, ping and logging/setLevel. */
    int legacy_only = strcmp(meth, "initialize") == 0 || strcmp(meth, "ping") == 0 ||
                      strcmp(meth, "logging/setLevel") == 0;
    if (m->modern && legacy_only) {
        /* fall through to "not found" */
    } else if (strcmp(meth, "initialize") == 0) {
        do_initialize(m, msg, resp);
        return 0;
    } else if (strcmp(meth, "ping") == 0) {
        ing_mcpreq_resp_json(resp, 200, rpc_result_str(msg->id, "{}"));
        return 0;
    } else if (strcmp(meth, "logging/setLevel") == 0) {
        do_set_level(m, msg, resp);
        return 0;
    } else if (strcmp(meth, "server/discover") == 0) {
        do_discover(m, msg, resp);
        return 0;
    } else if (strcmp(meth, "tools/list") == 0) {
        ing_mcplist_answer(m, msg, resp, ING_KIND_TOOL);
        return 0;
    } else if (strcmp(meth, "resources/list") == 0) {
        ing_mcplist_answer(m, msg, resp, ING_KIND_RESOURCE);
        return 0;
    } else if (strcmp(meth, "resources/templates/list") == 0) {
        ing_mcplist_answer(m, msg, resp, ING_KIND_TEMPLATE);
        return 0;
    } else if (strcmp(meth, "prompts/list") == 0) {
        ing_mcplist_answer(m, msg, resp, ING_KIND_PROMPT);
        return 0;
    } else if (strcmp(meth, "resources/read") == 0 || strcmp(meth, "prompts/get") == 0 ||
               strcmp(meth, "completion/complete") == 0) {
        return ing_mcpobj_call(m, msg, resp);
    } else if (strcmp(meth, "tools/call") == 0) {
        return ing_toolcall_run(m, msg, resp);
    } else if (m->modern && strcmp(meth, "subscriptions/listen") == 0) {
        do_listen(m, msg, resp);
        return 0;
    } else if (!m->modern && (strcmp(meth, "resources/subscribe") == 0 ||
                              strcmp(meth, "resources/unsubscribe") == 0)) {
        /* 2026-07-28 replaced them by subscriptions/listen's resourceSubscriptions. */
        return ing_subscribe_call(m, msg, resp, strcmp(meth, "resources/subscribe") == 0);
    } else if (!m->modern && strncmp(meth, "tasks/", 6) == 0) {
        return ing_mcptasks_call(m, msg, resp);
    } else if (strncmp(meth, "tasks/", 6) == 0) {
        ing_mcptasks_ext(m, msg, resp);
        return 0;
    }
    char buf[200];
    snprintf(buf, sizeof(buf), "Method not found: %.120s", meth);
    ing_mcpreq_resp_error(resp, m->modern ? 404 : 200, msg->id, RPC_METHOD_NOT_FOUND, buf, NULL);
    return 0;
}

/* One element of a batch into slot m->elem: its immediate response, or its call left
 * waiting. */
static void batch_element(ing_mcp_t *m, const cJSON *item)
{
    ing_batch_t *b = m->batch;
    rpc_msg_t msg;
    ing_resp_t one = {0};
    int waits = 0;
    rpc_classify(item, &msg);
    if (msg.kind == RPC_INVALID)
        ing_mcpreq_resp_error(&one, 400, msg.id, RPC_INVALID_REQUEST, msg.why, NULL);
    else if (msg.kind == RPC_NOTIFICATION)
        dispatch(m, &msg, &one); /* notifications/cancelled; nothing to answer */
    else if (msg.kind != RPC_REQUEST) {
        ing_mcpask_answer_one(m, item); /* a response: an answer to mcpq's request, or none */
        return;                         /* nothing to answer */
    } else if (strcmp(msg.method, "initialize") == 0)
        ing_mcpreq_resp_error(&one, 200, msg.id, RPC_INVALID_REQUEST,
                              "initialize cannot be sent inside a batch", NULL);
    else
        waits = dispatch(m, &msg, &one);
    if (!waits) {
        if (msg.kind == RPC_REQUEST)
            ing_toolcall_span(m, &msg, &one); /* answered without a job: its own span */
        ing_batch_call_drop(b, m->elem);      /* made, but answered at once (its span ends) */
        b->bodies[m->elem] = one.body;
    } else {
        free(one.body);
    }
}

/* A 2025-03-26 batch (docs/internals.md, "Batches"): every element is dispatched as if sent
 * alone, those that wait (tools/call, tasks/result) each on a call of their own. With none
 * waiting the array is answered at once; otherwise the request's call becomes the batch's
 * group, which streams every response as it comes (a client that accepts
 * text/event-stream) or answers the array when the last element is done. 1 when parked. */
static int do_batch(ing_mcp_t *m, const cJSON *batch, ing_resp_t *resp)
{
    ing_req_t *req = m->req;
    int n = cJSON_GetArraySize(batch);
    if (n == 0) {
        ing_mcpreq_resp_error(resp, 400, NULL, RPC_INVALID_REQUEST, "empty batch", NULL);
        return 0;
    }
    if (n > ING_BATCH_MAX) {
        char buf[120];
        snprintf(buf, sizeof(buf), "a batch holds at most %d messages; this one has %d",
                 ING_BATCH_MAX, n);
        ing_mcpreq_resp_error(resp, 400, NULL, RPC_INVALID_REQUEST, buf, NULL);
        return 0;
    }
    ing_batch_t *b = ing_batch_new((size_t)n);
    if (!b) {
        ing_mcpreq_resp_error(resp, 500, NULL, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return 0;
    }
    ing_call_t *group = &req->call;
    group->conn = req->conn;
    const char *accept = header(req, "Accept");
    group->sse_ok = accept && strcasestr(accept, "text/event-stream") != NULL;
    snprintf(group->id_json, sizeof(group->id_json), "null");
    snprintf(group->tool, sizeof(group->tool), "batch");
    ing_pending_group_init(req->ctx->pending, group);
    m->batch = b;
    const cJSON *item;
    cJSON_ArrayForEach(item, batch)
    {
        batch_element(m, item);
        m->elem++;
    }
    m->batch = NULL;
    req->metric = ING_M_OTHER;
    if (!ing_batch_waits(b)) {
        int oom = 0;
        char *arr = ing_batch_response(b, &oom);
        ing_batch_free(b, NULL);
        if (oom)
            ing_mcpreq_resp_error(resp, 500, NULL, RPC_INTERNAL_ERROR, "out of memory", NULL);
        else if (!arr)
            resp->status = 202; /* only notifications and responses */
        else
            ing_mcpreq_resp_json(resp, 200, arr);
        return 0;
    }
    req->batch = b;
    req->has_call = 1;
    ing_pending_group_seal(req->ctx->pending, group, b->bodies, b->n);
    return ing_pending_park(req->ctx->pending, group);
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

/* resp: 429 with Retry-After and -32029 (data.retryAfterMs). */
static void too_many(ing_resp_t *resp, const char *msg, long long wait_ms)
{
    cJSON *data = cJSON_CreateObject();
    cJSON_AddNumberToObject(data, "retryAfterMs", (double)wait_ms);
    ing_mcpreq_resp_error(resp, 429, NULL, RPC_RATE_LIMITED, msg, data);
    cJSON_Delete(data);
    resp->retry_after_s = (wait_ms + 999) / 1000;
}

/* A refusal of the front door (frontdoor.h) as a JSON-RPC error without an id. */
static void refused(const ing_door_t *door, ing_resp_t *resp)
{
    switch (door->verdict) {
    case ING_DOOR_LIMITED:
        too_many(resp, door->why, door->retry_after_ms);
        return;
    case ING_DOOR_FORBIDDEN:
        ing_mcpreq_resp_error(resp, 403, NULL, RPC_INVALID_REQUEST, door->why, NULL);
        return;
    case ING_DOOR_UNAUTHORIZED:
        ing_mcpreq_resp_error(resp, 401, NULL, -32000, door->why, NULL);
        snprintf(resp->www_auth, sizeof(resp->www_auth), "%s", door->www_auth);
        return;
    default: /* 503: no registry yet, or the nonce store is unreachable */
        ing_mcpreq_resp_error(resp, door->status, NULL, RPC_INTERNAL_ERROR, door->why, NULL);
        return;
    }
}

/* Common front half of POST and DELETE: the front door, then the server. 0 or resp filled;
 * m->reg holds the door's registry reference either way (the caller drops it). */
static int front(ing_req_t *req, const char *server, ing_mcp_t *m, ing_resp_t *resp)
{
    memset(m, 0, sizeof(*m));
    m->req = req;
    ing_door_verdict_t v = ing_frontdoor_enter(req, ING_DOOR_TENANT, &m->door);
    m->reg = m->door.reg;
    if (v != ING_DOOR_IN) {
        refused(&m->door, resp);
        return -1;
    }
    m->tenant = m->door.tenant;
    m->who = &m->door.who;
    m->endpoint = server;
    const char *sname = server ? server : m->tenant->default_server;
    m->server = strcmp(sname, ING_SYSTEM_SERVER) == 0
                    ? ing_system_server()
                    : ing_registry_server(m->reg, m->tenant->id, sname);
    if (!m->server) {
        ing_mcpreq_resp_error(resp, 404, NULL, RPC_INVALID_PARAMS, "server not found", NULL);
        return -1;
    }
    return 0;
}

static int load_session(ing_mcp_t *m, const cJSON *id, ing_resp_t *resp)
{
    const char *sid = header(m->req, "Mcp-Session-Id");
    if (!sid)
        return 0;
    int rc = ing_session_get(m->req->ctx->kv, sid, m->tenant->id, m->req->ctx->set->session_ttl_s,
                             &m->session);
    if (rc == MCPQ_ENOTFOUND) {
        ing_mcpreq_resp_error(resp, 404, id, RPC_SESSION_NOT_FOUND, "Session not found", NULL);
        return -1;
    }
    if (rc < 0) {
        ing_mcpreq_resp_error(resp, 503, id, RPC_INTERNAL_ERROR,
                              "session store (Redis) unavailable; try again", NULL);
        return -1;
    }
    m->has_session = 1;
    return 0;
}

/* The request's body as JSON once its headers say it is: 415 without Content-Type
 * application/json, 406 when Accept allows neither answer, 400 (-32700) when it does not
 * parse. NULL with resp filled. */
static cJSON *post_body(ing_req_t *req, ing_resp_t *resp)
{
    if (!content_type_ok(header(req, "Content-Type"))) {
        ing_mcpreq_resp_error(resp, 415, NULL, RPC_INVALID_REQUEST,
                              "Content-Type must be application/json", NULL);
        return NULL;
    }
    if (!accept_ok(header(req, "Accept"))) {
        ing_mcpreq_resp_error(resp, 406, NULL, RPC_INVALID_REQUEST,
                              "Accept must allow application/json or text/event-stream", NULL);
        return NULL;
    }
    const char *why = NULL;
    cJSON *root = rpc_parse(req->body.data ? req->body.data : "", req->body.len, &why);
    if (!root)
        ing_mcpreq_resp_error(resp, 400, NULL, RPC_PARSE_ERROR, why ? why : "Parse error", NULL);
    return root;
}

/* The protocol version of the request (the header, else params._meta's): m->version and
 * m->modern. -1 with resp filled when it is one this server does not speak. */
static int post_version(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *v = header(m->req, "MCP-Protocol-Version");
    const char *meta_v =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), ING_META_VERSION));
    const char *asked = v ? v : meta_v;
    if (asked && !version_supported(asked)) {
        unsupported_version(resp, msg->id, asked);
        return -1;
    }
    m->version = v ? v : ING_DEFAULT_VERSION;
    m->modern = asked && strcmp(asked, ING_MODERN_VERSION) == 0;
    return 0;
}

/* 2026-07-28 is stateless: the headers must mirror the body; Mcp-Session-Id is ignored.
 * -1 with resp filled on a mismatch. */
static int post_modern(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    char mismatch[400];
    if (msg->kind == RPC_REQUEST &&
        ing_era_modern_headers_check(m->req, msg, header(m->req, "MCP-Protocol-Version"), mismatch,
                                     sizeof(mismatch)) < 0) {
        ing_mcpreq_resp_error(resp, 400, msg->id, RPC_HEADER_MISMATCH, mismatch, NULL);
        return -1;
    }
    m->log_min = ing_notify_level_index(cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), ING_META_LOG_LEVEL)));
    return 0;
}

/* Earlier versions: a version named twice must agree, and the session (Mcp-Session-Id) is
 * loaded for everything but initialize. -1 with resp filled. */
static int post_legacy(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *v = header(m->req, "MCP-Protocol-Version");
    const char *meta_v =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), ING_META_VERSION));
    if (meta_v && v && strcmp(meta_v, v) != 0) {
        char mismatch[200];
        snprintf(mismatch, sizeof(mismatch),
                 "Header mismatch: MCP-Protocol-Version '%.40s' does not match "
                 "params._meta version '%.40s'",
                 v, meta_v);
        ing_mcpreq_resp_error(resp, 400, msg->id, RPC_HEADER_MISMATCH, mismatch, NULL);
        return -1;
    }
    if (strcmp(msg->method, "initialize") != 0 && load_session(m, msg->id, resp) < 0) {
        if (msg->kind == RPC_REQUEST)
            return -1;
        /* A notification of an unknown session is still accepted (nothing to run). */
        ing_resp_release(resp);
        memset(resp, 0, sizeof(*resp));
    }
    /* Legacy: the session's logging/setLevel level, "info" until one is set. */
    m->log_min = m->has_session && m->session.log_level[0]
                     ? ing_notify_level_index(m->session.log_level)
                     : ing_notify_level_index("info");
    return 0;
}

/* A 2025-03-26 JSON-RPC batch (batch.h); 1 when it parks. */
static int post_batch(ing_mcp_t *m, const cJSON *root, ing_resp_t *resp)
{
    if (strcmp(m->version, ING_DEFAULT_VERSION) != 0) {
        ing_mcpreq_resp_error(
            resp, 400, NULL, RPC_INVALID_REQUEST,
            "JSON-RPC batches are only allowed in protocol version " ING_DEFAULT_VERSION, NULL);
        return 0;
    }
    if (load_session(m, NULL, resp) < 0)
        return 0;
    return do_batch(m, root, resp);
}

/* One JSON-RPC message: its shape, its era's rules, then its method; 1 when it parks. */
static int post_message(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    if (msg->kind == RPC_INVALID) {
        ing_mcpreq_resp_error(resp, 400, msg->id, RPC_INVALID_REQUEST, msg->why, NULL);
        return 0;
    }
    if (msg->kind == RPC_RESPONSE) {
        /* Not an answer to a request of mcpq's (those were taken before: answers_only):
         * accepted and ignored. */
        resp->status = 202;
        return 0;
    }
    if ((m->modern ? post_modern(m, msg, resp) : post_legacy(m, msg, resp)) < 0)
        return 0;
    int waits = dispatch(m, msg, resp);
    ing_toolcall_span(m, msg, resp); /* a request answered without a job: its own span */
    return waits;
}

/* 1 when root is a response to one of mcpq's requests, or a batch of responses holding one:
 * POSTed answers (mcpask.h). */
static int answers_only(const cJSON *root)
{
    int ours = 0;
    const cJSON *item;
    int one = !cJSON_IsArray(root);
    for (item = one ? root : root->child; item; item = one ? NULL : item->next) {
        rpc_msg_t msg;
        rpc_classify(item, &msg);
        if (msg.kind != RPC_RESPONSE)
            return 0;
        ours |= ing_mcpask_is_answer(msg.id);
    }
    return ours;
}

int ing_mcp_post(ing_req_t *req, const char *server, ing_resp_t *resp)
{
    ing_mcp_t m = {0};
    int parked = 0;
    cJSON *root = NULL;
    /* Before auth, as for an announced Content-Length (server.c): a signature over a body that
     * was cut off could not verify anyway. */
    if (req->too_big) {
        char buf[96];
        snprintf(buf, sizeof(buf), "request body larger than %lld bytes", req->body_limit);
        ing_mcpreq_resp_error(resp, 413, NULL, RPC_INVALID_REQUEST, buf, NULL);
        return 0;
    }
    if (front(req, server, &m, resp) < 0 || !(root = post_body(req, resp)))
        goto out;
    rpc_msg_t msg;
    memset(&msg, 0, sizeof(msg));
    if (!cJSON_IsArray(root))
        rpc_classify(root, &msg);
    if (post_version(&m, &msg, resp) < 0)
        goto out;
    if (answers_only(root)) { /* the client's answers to mcpq's requests (mcpask.h) */
        ing_mcpask_post(&m, root, resp);
        goto out;
    }
    parked = cJSON_IsArray(root) ? post_batch(&m, root, resp) : post_message(&m, &msg, resp);
out:
    cJSON_Delete(root);
    ing_registry_unref(m.reg);
    return parked;
}

void ing_mcp_delete(ing_req_t *req, const char *server, ing_resp_t *resp)
{
    ing_mcp_t m;
    req->metric = ING_M_SESSION_DELETE;
    if (front(req, server, &m, resp) == 0) {
        const char *sid = header(req, "Mcp-Session-Id");
        if (!sid) {
            ing_mcpreq_resp_error(resp, 400, NULL, RPC_INVALID_REQUEST,
                                  "Mcp-Session-Id header required", NULL);
        } else {
            int rc = ing_session_delete(req->ctx->kv, sid, m.tenant->id);
            if (rc == 0) {
                resp->status = 200;
                ing_listen_session_ended(req->ctx->listen, sid); /* its GET streams end */
            } else if (rc == MCPQ_ENOTFOUND)
                ing_mcpreq_resp_error(resp, 404, NULL, RPC_SESSION_NOT_FOUND, "Session not found",
                                      NULL);
            else
                ing_mcpreq_resp_error(resp, 503, NULL, RPC_INTERNAL_ERROR,
                                      "session store (Redis) unavailable; try again", NULL);
        }
    }
    if (m.reg)
        ing_registry_unref(m.reg);
}

void ing_mcp_method_not_allowed(ing_resp_t *resp)
{
    ing_mcpreq_resp_error(
        resp, 405, NULL, RPC_INVALID_REQUEST,
        "Method not allowed: the MCP endpoint takes POST, DELETE, and GET with Accept: "
        "text/event-stream (the notification stream of protocol versions up to " ING_LATEST_VERSION
        ")",
        NULL);
    resp->allow = "GET, POST, DELETE";
}

void ing_mcp_get(ing_req_t *req, const char *server, ing_resp_t *resp)
{
    ing_mcp_t m = {0};
    req->metric = ING_M_OTHER;
    /* Streamable HTTP of 2025-03-26 to 2025-11-25, "Listening for Messages from the Server":
     * the client MUST list text/event-stream in Accept, and the server answers with an SSE
     * stream or 405. 2026-07-28 removed the GET endpoint (405; subscriptions/listen instead). */
    const char *accept = header(req, "Accept");
    const char *v = header(req, "MCP-Protocol-Version");
    if (!accept || !strcasestr(accept, "text/event-stream")) {
        ing_mcp_method_not_allowed(resp);
        return;
    }
    if (v && !version_supported(v)) {
        unsupported_version(resp, NULL, v);
        return;
    }
    if (v && strcmp(v, ING_MODERN_VERSION) == 0) {
        ing_mcpreq_resp_error(resp, 405, NULL, RPC_INVALID_REQUEST,
                              "Method not allowed: protocol version " ING_MODERN_VERSION
                              " has no GET stream; send "
                              "subscriptions/listen",
                              NULL);
        resp->allow = "POST";
        return;
    }
    if (front(req, server, &m, resp) < 0)
        goto out;
    if (!header(req, "Mcp-Session-Id")) {
        ing_mcpreq_resp_error(resp, 400, NULL, RPC_INVALID_REQUEST,
                              "Mcp-Session-Id header required: the GET stream belongs to a session "
                              "(initialize first)",
                              NULL);
        goto out;
    }
    if (load_session(&m, NULL, resp) < 0)
        goto out;
    ing_listen_spec_t spec = {.tenant = m.tenant->id,
                              .server = m.server->name,
                              .session_id = m.session.id,
                              .tenant_max =
                                  ing_quota_limit(m.tenant, ING_QUOTA_STREAMS, req->ctx->set)};
    int rc = ing_listen_open(req->ctx->listen, req, &spec);
    if (rc == MCPQ_EEXIST)
        ing_mcpreq_resp_error(resp, 409, NULL, RPC_INVALID_REQUEST,
                              "Conflict: this session already has a GET stream open", NULL);
    else if (rc < 0)
        listen_refused(resp, NULL, rc, &spec);
out:
    if (m.reg)
        ing_registry_unref(m.reg);
}
