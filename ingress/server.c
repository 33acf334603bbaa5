#include "server.h"

#include "admin.h"
#include "frontdoor.h"
#include "auth.h"
#include "batch.h"
#include "channels.h"
#include "console.h"
#include "cfg.h"
#include "cors.h"
#include "err.h"
#include "files.h"
#include "filesapi.h"
#include "rpc.h"
#include "listen.h"
#include "log.h"
#include "otel.h"
#include "mcp.h"
#include "oauth.h"
#include "openapi.h"
#include "prm.h"
#include "tasksapi.h"
#include "webhook.h"
#include "whapi.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The libmicrohttpd response of resp: its file or its body (taken from resp). */
static struct MHD_Response *mhd_response(ing_resp_t *resp, size_t *len)
{
    struct MHD_Response *r;
    if (resp->has_fd) {
        *len = (size_t)resp->fd_size;
        r = MHD_create_response_from_fd(resp->fd_size, resp->fd);
        if (r)
            resp->has_fd = 0; /* the fd is now r's */
        return r;
    }
    *len = resp->body ? strlen(resp->body) : 0;
    r = MHD_create_response_from_buffer(*len, resp->body, MHD_RESPMEM_MUST_FREE);
    if (r)
        resp->body = NULL; /* now owned by r */
    return r;
}

/* The CORS headers of an answer on the clients' plane (cors.h): Vary: Origin always, the
 * allowed Origin echoed with the headers a script may read. */
static void cors_headers(const ing_req_t *req, struct MHD_Response *r)
{
    if (!req->cors)
        return;
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
    const char *origin = ing_cors_origin(req);
    if (!origin)
        return;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    MHD_add_response_header(r, "Access-Control-Expose-Headers", ING_CORS_EXPOSE);
}

/* Sends the answer a handler built (req.h) and counts it; frees what resp holds. */
static enum MHD_Result send_resp(ing_req_t *req, ing_resp_t *resp)
{
    size_t len = 0;
    struct MHD_Response *r = mhd_response(resp, &len);
    if (!r) {
        ing_resp_release(resp);
        return MHD_NO;
    }
    if (len && resp->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
    if (resp->session_id[0])
        MHD_add_response_header(r, "Mcp-Session-Id", resp->session_id);
    if (resp->www_auth[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, resp->www_auth);
    if (resp->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, resp->allow);
    if (resp->retry_after_s > 0) {
        char ra[24];
        snprintf(ra, sizeof(ra), "%lld", resp->retry_after_s);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (resp->etag[0]) {
        char et[32];
        snprintf(et, sizeof(et), "\"%s\"", resp->etag);
        MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, et);
    }
    for (size_t i = 0; i < resp->nheaders; i++)
        MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value);
    ing_resp_release(resp);
    cors_headers(req, r);
    if (req->ctx && atomic_load(&req->ctx->stopping))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    MHD_add_response_header(r, "X-Request-Id", req->request_id);
    enum MHD_Result ret = MHD_queue_response(req->conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    if (ret == MHD_YES) {
        req->status = resp->status;
        req->bytes = strcmp(req->method, "HEAD") == 0 ? 0 : len; /* (HEAD: headers only) */
    }
    ing_metrics_request(req->ctx->metrics, req->metric, resp->status, util_mono_us() - req->t0_us);
    return ret;
}

static enum MHD_Result send_text(ing_req_t *req, int status, const char *ctype, const char *fmt,
                                 ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result send_text(ing_req_t *req, int status, const char *ctype, const char *fmt,
                                 ...)
{
    ing_resp_t resp = {.status = status, .content_type = ctype};
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&resp.body, fmt, ap) < 0)
        resp.body = NULL;
    va_end(ap);
    return send_resp(req, &resp);
}

/* Logs and counts how a call ended; response is its JSON-RPC answer (NULL: none sent). */
static void call_outcome(ing_req_t *req, const ing_call_t *call, const char *response)
{
    ing_call_outcome_t outcome = call->outcome;
    if (call->cancelled)
        outcome = ING_CALL_CANCELLED;
    else if (!response || call->timed_out)
        outcome = call->timed_out ? ING_CALL_TIMEOUT : ING_CALL_FAILED;
    static const char *const names[] = {"ok",     "tool_error", "timeout",
                                        "failed", "fake",       "cancelled"};
    int64_t us = util_mono_us() - req->t0_us;
    char ms[32];
    snprintf(ms, sizeof(ms), "%lld", (long long)(us / 1000));
    log_event(outcome == ING_CALL_OK || outcome == ING_CALL_TOOL_ERROR ? LOG_INFO : LOG_WARN,
              "tool call answered", "tenant", req->tenant, "tool", call->tool, "job_id",
              call->job_id, "outcome", names[outcome], "duration_ms", ms, "stream",
              call->streaming ? "sse" : "json", (char *)NULL);
    ing_metrics_call(req->ctx->metrics, req->tenant, outcome, us);
    if (call->stamps.finished_us > 0 && response) /* a worker's result is being handed over */
        ing_metrics_result_delivery(req->ctx->metrics, util_now_us() - call->stamps.finished_us);
    if (outcome != ING_CALL_OK && outcome != ING_CALL_FAKE) /* MCP semconv: error.type */
        otel_span_error(call->span ? call->span : req->span,
                        outcome == ING_CALL_TOOL_ERROR ? "tool_error" : names[outcome],
                        outcome == ING_CALL_TOOL_ERROR ? "the tool answered isError: true" : NULL);
}

/* call_outcome() of every element of a batch that waited. */
static void batch_outcomes(ing_req_t *req)
{
    for (size_t i = 0; i < req->batch->n; i++)
        if (req->batch->calls[i])
            call_outcome(req, req->batch->calls[i], req->batch->calls[i]->response);
}

/* The JSON answer of a call that was parked (or completed before it could be). */
static enum MHD_Result send_call(ing_req_t *req)
{
    ing_call_t *call = &req->call;
    ing_resp_t resp = {.status = 200, .content_type = "application/json"};
    if (req->batch) { /* the array of a batch whose elements waited (batch.h) */
        int oom = 0;
        resp.body = ing_batch_response(req->batch, &oom);
        if (!resp.body)
            resp.body = rpc_error_str(NULL, RPC_INTERNAL_ERROR, "internal error", NULL);
        batch_outcomes(req);
        req->has_call = 0;
        return send_resp(req, &resp);
    }
    if (call->response) {
        resp.body = call->response;
        call->response = NULL;
    } else {
        cJSON *id = cJSON_Parse(call->id_json);
        resp.body = rpc_error_str(id, RPC_INTERNAL_ERROR, "internal error", NULL);
        cJSON_Delete(id);
        call->outcome = ING_CALL_FAILED;
    }
    call_outcome(req, call, call->response ? call->response : resp.body);
    req->has_call = 0;
    return send_resp(req, &resp);
}

/* Content reader of a streamed call (SSE). */
static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ing_req_t *req = cls;
    ssize_t n = ing_pending_read(req->ctx->pending, &req->call, buf, max);
    if (n > 0)
        req->bytes += (uint64_t)n; /* the access log's bytes: the frames sent */
    if (n == MHD_CONTENT_READER_END_OF_STREAM && req->has_call) {
        if (req->batch)
            batch_outcomes(req);
        else if (!req->call.listener) /* a notification stream is no tool call */
            call_outcome(req, &req->call, req->call.response);
        req->has_call = 0;
    }
    return n;
}

/* The block size of an SSE response. libmicrohttpd 0.9.75 allocates it (zeroed) with every
 * callback response, but a chunked (HTTP/1.1) stream is written through the connection's own
 * write buffer, so only an HTTP/1.0 client's stream passes through it, in pieces of this size.
 * 4096 cost 4 KiB per waiting SSE call (docs/operations.md,
 * "Memory of waiting calls"). */
#define SSE_BLOCK_SIZE 256

/* Queues the SSE response of a call (docs/protocol.md, "Requests and responses"): its frames follow
 * as they arrive. */
static enum MHD_Result start_stream(ing_req_t *req)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK_SIZE, read_stream, req, NULL);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    cors_headers(req, r);
    if (atomic_load(&req->ctx->stopping))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    MHD_add_response_header(r, "X-Request-Id", req->request_id);
    enum MHD_Result ret = MHD_queue_response(req->conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    if (ret == MHD_YES)
        req->status = MHD_HTTP_OK;
    ing_metrics_request(req->ctx->metrics, req->metric, 200, util_mono_us() - req->t0_us);
    return ret;
}

/* A call's connection came back (or never left): answer, stream, or wait again. */
static enum MHD_Result answer_call(ing_req_t *req)
{
    switch (ing_pending_take(req->ctx->pending, &req->call)) {
    case ING_TAKE_JSON:
        return send_call(req);
    case ING_TAKE_STREAM:
        return start_stream(req);
    case ING_TAKE_WAIT:
    default:
        return MHD_YES;
    }
}

/* ---- listeners (docs/operations.md "Listen addresses and the operations port")
 * -------------------------
 *
 * Each route belongs to one plane: the operations plane is exactly the paths of ops_paths
 * (probes, metrics, the operator API); every other path is the clients' plane. With
 * MCPQ_OPS_LISTEN unset the one listener serves both; with it set, MCPQ_LISTEN serves only the
 * clients' plane and MCPQ_OPS_LISTEN only the operations plane, and a path of the other plane
 * is 404 before its headers are looked at or its body read. */

#define ING_PLANE_PUBLIC 1u
#define ING_PLANE_OPS 2u
#define OPS_MAX_CONNECTIONS 256u /* probes, scrapes and operators, not clients */

static const struct {
    const char *path;
    int prefix; /* 1: the path and everything under it ("/admin" and "/admin/...") */
} ops_paths[] = {{"/healthz", 0}, {"/readyz", 0}, {"/metrics", 0}, {"/admin", 1}, {"/console", 1}};

static unsigned route_plane(const char *url)
{
    for (size_t i = 0; i < sizeof(ops_paths) / sizeof(ops_paths[0]); i++) {
        size_t n = strlen(ops_paths[i].path);
        if (strcmp(url, ops_paths[i].path) == 0 ||
            (ops_paths[i].prefix && strncmp(url, ops_paths[i].path, n) == 0 && url[n] == '/'))
            return ING_PLANE_OPS;
    }
    return ING_PLANE_PUBLIC;
}

static int ops_split(const mcpq_settings_t *set)
{
    return set->ops_listen && *set->ops_listen;
}

static enum MHD_Result healthz(ing_req_t *req)
{
    return send_text(req, 200, "application/json", "{\"status\":\"ok\"}");
}

static enum MHD_Result readyz(ing_req_t *req)
{
    ing_ctx_t *ctx = req->ctx;
    ing_registry_t *reg = ing_ctx_registry(ctx);
    int kafka = mq_producer_up(ctx->producer);
    int redis =
        ing_pending_healthy(ctx->pending) && atomic_load(&ctx->redis_up) && kv_pool_up(ctx->kv);
    /* Draining (SIGTERM): not ready whatever the rest says, so the load balancer stops
     * sending here while the calls already in flight finish. */
    int draining = atomic_load(&ctx->stopping);
    int ok = reg && kafka && redis && !draining;
    ing_registry_unref(reg);
    return send_text(req, ok ? 200 : 503, "application/json",
                     "{\"ready\":%s,\"kafka\":%s,\"redis\":%s,\"registry\":%s,"
                     "\"draining\":%s}",
                     ok ? "true" : "false", kafka ? "true" : "false", redis ? "true" : "false",
                     reg ? "true" : "false", draining ? "true" : "false");
}

static enum MHD_Result metrics(ing_req_t *req)
{
    ing_ctx_t *ctx = req->ctx;
    util_buf_t b;
    util_buf_init(&b, (size_t)4 << 20);
    ing_metrics_now_t now = {.inflight = ing_pending_count(ctx->pending),
                             .listeners = ctx->listen ? ing_listen_count(ctx->listen) : 0,
                             .kafka_up = mq_producer_up(ctx->producer),
                             .redis_up = ing_pending_healthy(ctx->pending) && kv_pool_up(ctx->kv)};
    kv_pool_stats(ctx->kv, &now.redis_takes, &now.redis_queued);
    ing_registry_t *reg = ing_ctx_registry(ctx);
    now.quarantined = ing_registry_quarantined_count(reg);
    if (reg)
        ing_registry_unref(reg);
    ing_metrics_render(ctx->metrics, &b, &now);
    ing_resp_t resp = {
        .status = 200, .body = b.data ? b.data : strdup(""), .content_type = PROM_CONTENT_TYPE};
    return send_resp(req, &resp);
}

/* Files (files.h): the metadata and upload routes, and downloads by signed URL. */
static void files_api(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    if (!ing_filesapi_is_content(url))
        ing_filesapi_route(req, url, method, resp);
    else
        ing_filesapi_download(req, url, method, resp);
}

/* /mcp (the tenant's default server) and /mcp/{server}: the MCP endpoint (mcp.h). */
static enum MHD_Result mcp(ing_req_t *req, const char *url, const char *method)
{
    const char *server = NULL;
    char sbuf[128];
    if (strcmp(url, "/mcp") == 0 || strcmp(url, "/mcp/") == 0) {
        server = NULL;
    } else if (strncmp(url, "/mcp/", 5) == 0 && strlen(url + 5) < sizeof(sbuf) &&
               !strchr(url + 5, '/')) {
        snprintf(sbuf, sizeof(sbuf), "%s", url + 5);
        server = sbuf;
    } else {
        return send_text(req, 404, "application/json", "{\"error\":\"not found\"}");
    }
    ing_resp_t resp = {0};
    if (strcmp(method, "POST") == 0) {
        if (ing_mcp_post(req, server, &resp) == 1)
            return MHD_YES; /* parked: answered when the result arrives */
        if (req->has_call)
            return answer_call(req);
        return send_resp(req, &resp);
    }
    if (strcmp(method, "DELETE") == 0) {
        ing_mcp_delete(req, server, &resp);
        return send_resp(req, &resp);
    }
    if (strcmp(method, "GET") == 0) {
        ing_mcp_get(req, server, &resp); /* the legacy GET stream (listen.h) */
        if (req->has_call)
            return answer_call(req);
        return send_resp(req, &resp);
    }
    ing_mcp_method_not_allowed(&resp);
    return send_resp(req, &resp);
}

enum { EXACT, UNDER, TREE }; /* the path; anything starting with it; the path or path/... */

/* The routes, in order; a request no row takes goes to the MCP endpoint (mcp above). A row
 * answers either itself (ops) or through an API handler's ing_resp_t (api). Which listener
 * serves a route is route_plane's table. */
static const struct route_row {
    const char *path;
    int match;
    int get_only; /* GET and HEAD only; other methods go on down the table */
    enum MHD_Result (*ops)(ing_req_t *req);
    void (*api)(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);
} routes[] = {
    {"/healthz", EXACT, 1, healthz, NULL},
    {"/readyz", EXACT, 1, readyz, NULL},
    {"/metrics", EXACT, 1, metrics, NULL},
    {"/v1/files/", UNDER, 0, NULL, files_api},
    {"/v1/webhooks", TREE, 0, NULL, ing_whapi_route},     /* the tenant's deliveries (webhook.h) */
    {"/v1/tasks", TREE, 0, NULL, ing_tasksapi_route},     /* the tenant's tasks (tasksapi.h) */
    {"/admin", TREE, 0, NULL, ing_admin_api},             /* the operator API (admin.h) */
    {"/console", TREE, 0, NULL, ing_console_route},       /* the operator console (console.h) */
    {"/v1/channels/", UNDER, 0, NULL, ing_channels_api},  /* agent replies (channels.h) */
    {"/openapi.json", EXACT, 0, NULL, ing_openapi_route}, /* the API's description (openapi.h) */
    {"/.well-known/oauth-protected-resource", TREE, 0, NULL, ing_prm_route}, /* (prm.h) */
};

static int route_matches(const struct route_row *row, const char *url)
{
    size_t n = strlen(row->path);
    if (row->match == EXACT)
        return strcmp(url, row->path) == 0;
    if (row->match == UNDER)
        return strncmp(url, row->path, n) == 0;
    return strncmp(url, row->path, n) == 0 && (url[n] == '\0' || url[n] == '/');
}

/* The route the access log names for a path below a row's path, where it is not the row's path
 * and a star (the routes table above). */
static const struct {
    const char *path;
    const char *under;
} route_below[] = {{"/admin", "/admin/v1/*"}};

/* The route the access log names for path (no query): the pattern of the row of routes that
 * takes it (the row's path, else its path and a star, or route_below's), "/mcp" for the MCP
 * endpoint and "/mcp/" and a star for a named server, else "-": never the path itself, which
 * may hold ids. */
static const char *route_pattern(const char *path, char *out, size_t size)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route_row *row = &routes[i];
        if (!route_matches(row, path))
            continue;
        size_t n = strlen(row->path);
        if (strcmp(path, row->path) == 0)
            return row->path;
        for (size_t j = 0; j < sizeof(route_below) / sizeof(route_below[0]); j++)
            if (strcmp(row->path, route_below[j].path) == 0)
                return route_below[j].under;
        snprintf(out, size, "%s%s*", row->path, row->path[n - 1] == '/' ? "" : "/");
        return out;
    }
    if (strcmp(path, "/mcp") == 0 || strcmp(path, "/mcp/") == 0)
        return "/mcp";
    return strncmp(path, "/mcp/", 5) == 0 ? "/mcp/*" : "-";
}

static enum MHD_Result route(ing_req_t *req, const char *url, const char *method)
{
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route_row *row = &routes[i];
        if (!route_matches(row, url) || (row->get_only && !is_get))
            continue;
        if (row->ops)
            return row->ops(req);
        ing_resp_t resp = {0};
        row->api(req, url, method, &resp);
        return send_resp(req, &resp);
    }
    return mcp(req, url, method);
}

/* MHD_get_connection_values_n() iterator: stops at the first header whose name or value holds
 * a control character (a bare CR or LF, NUL, DEL; a tab is allowed in values), which RFC 9110
 * says a recipient must refuse: such bytes are how header injection and request smuggling
 * through a lenient proxy begin. The lengths come from libmicrohttpd, so a NUL inside a value
 * (which every C-string reader would see as its end) is found too (docs/security.md). */
static enum MHD_Result header_clean(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    for (size_t i = 0; key && i < key_size; i++)
        if ((unsigned char)key[i] <= ' ' || key[i] == 0x7f)
            goto bad;
    for (size_t i = 0; value && i < value_size; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < ' ' && c != '\t') || c == 0x7f)
            goto bad;
    }
    return MHD_YES;
bad:
    *(int *)cls = 1;
    return MHD_NO;
}

/* ---- request bodies (docs/api.md, "Limits on what a client may send") ----------------------
 *
 * A body is read into memory only up to a limit the headers earn: MCPQ_PREAUTH_BODY_BYTES
 * while they name no credential the ingress knows, MCPQ_MAX_BODY_BYTES once they do (an API
 * key of a tenant, a known X-App-Id with a fresh X-Timestamp: the signature, which covers
 * the body, is checked when the body is in; an OAuth token that only looks like one a tenant
 * could take, auth.h ing_auth_known: verified once, at the front door), and CFG_MAX_BYTES for the
 * admin token on /admin/v1/config. All bodies together hold at most MCPQ_MAX_BODY_MEMORY_BYTES: a
 * request whose body would pass it gets 503 with Retry-After. The signed file upload PUT streams to
 * disk (files.h) and is counted by neither. */

static int is_admin_url(const char *url)
{
    return strcmp(url, "/admin") == 0 || strncmp(url, "/admin/", 7) == 0;
}

/* The body limit a request's headers earn (see above); pre is the limit without proof. */
static long long body_limit_earned(ing_req_t *req, const char *url, long long pre)
{
    ing_ctx_t *ctx = req->ctx;
    long long max = ctx->set->max_body_bytes;
    if (is_admin_url(url)) { /* only the operator token counts on /admin */
        if (!ing_frontdoor_operator_token(req))
            return pre;
        if (strcmp(url, "/admin/v1/config") == 0 && max < (long long)CFG_MAX_BYTES)
            return CFG_MAX_BYTES; /* a whole config applied at once */
        return max;
    }
    ing_registry_t *reg = ing_ctx_registry(ctx);
    int known = ing_auth_known(req, reg);
    ing_registry_unref(reg);
    return known ? max : pre;
}

/* Counts the body's first `total` bytes against MCPQ_MAX_BODY_MEMORY_BYTES: 0, or -1 when
 * they do not fit (nothing more is counted). */
static int body_reserve(ing_req_t *req, size_t total)
{
    if (total <= req->body_held)
        return 0;
    long long add = (long long)(total - req->body_held);
    long long now = atomic_fetch_add(&req->ctx->body_bytes, add) + add;
    if (now > req->ctx->set->max_body_memory_bytes) {
        atomic_fetch_sub(&req->ctx->body_bytes, add);
        return -1;
    }
    req->body_held = total;
    return 0;
}

/* Frees the body and gives its bytes back. */
static void body_release(ing_req_t *req)
{
    util_buf_cleanup(&req->body);
    if (req->body_held)
        atomic_fetch_sub(&req->ctx->body_bytes, (long long)req->body_held);
    req->body_held = 0;
}

/* A piece of the body: kept, or the body is dropped as too big (413) or too many bodies are
 * held (503); either is answered when the request is routed. */
static void body_take(ing_req_t *req, const char *data, size_t n)
{
    if (req->too_big || req->busy)
        return;
    if ((long long)(req->body.len + n) > req->body_limit)
        req->too_big = 1;
    else if (body_reserve(req, req->body.len + n) < 0 || util_buf_append(&req->body, data, n) < 0)
        req->busy = 1;
    if (req->too_big || req->busy)
        body_release(req);
}

/* The 503 of a body that does not fit in MCPQ_MAX_BODY_MEMORY_BYTES. */
static enum MHD_Result send_busy(ing_req_t *req)
{
    ing_resp_t resp = {.status = 503, .content_type = "application/json", .retry_after_s = 1};
    resp.body = rpc_error_str(NULL, RPC_INTERNAL_ERROR,
                              "the ingress holds too many request bodies at once "
                              "(MCPQ_MAX_BODY_MEMORY_BYTES); try again",
                              NULL);
    log_event(LOG_WARN, "request body refused: MCPQ_MAX_BODY_MEMORY_BYTES reached", (char *)NULL);
    return send_resp(req, &resp);
}

/* Sets the request's body limit once its headers are in, and refuses an announced body that
 * passes it (413) or does not fit in memory (503) before reading it (no 100 Continue):
 * MHD_YES to read on, or the answer queued. */
static enum MHD_Result body_begin(ing_req_t *req, const char *url)
{
    const mcpq_settings_t *set = req->ctx->set;
    struct MHD_Connection *conn = req->conn;
    long long pre = set->preauth_body_bytes < set->max_body_bytes ? set->preauth_body_bytes
                                                                  : set->max_body_bytes;
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
    long long n = -1;
    if (cl && util_parse_ll(cl, 0, 1LL << 62, &n) < 0)
        n = -1;
    /* The credentials are looked at only for a body that may pass the small limit. */
    int small = n >= 0 ? n <= pre : !cl && !te;
    req->body_limit = small ? pre : body_limit_earned(req, url, pre);
    util_buf_init(&req->body, (size_t)req->body_limit);
    if (n > req->body_limit) {
        req->handled = 1;
        req->too_big = 1;
        ing_resp_t resp = {.status = 413, .content_type = "application/json"};
        char buf[96];
        snprintf(buf, sizeof(buf), "request body larger than %lld bytes", req->body_limit);
        resp.body = rpc_error_str(NULL, RPC_INVALID_REQUEST, buf, NULL);
        return send_resp(req, &resp);
    }
    if (n > 0 && body_reserve(req, (size_t)n) < 0) {
        req->handled = 1;
        req->busy = 1;
        return send_busy(req);
    }
    return MHD_YES;
}

/* ---- access tokens waiting for their issuer (docs/authorization.md "JWT validation")
 *
 * An OAuth access token whose issuer's keys are not loaded yet, whose kid the keys lack, or
 * whose introspection answer is not cached is not refused at once: its connection is
 * suspended while the key service (oauth.h) fetches, with no thread waiting, and routed when
 * the service wakes it (at the latest after MCPQ_OAUTH_FETCH_TIMEOUT_MS). The front door then
 * decides from what is cached. Every gated request is on the list `gated`, under gate_lock,
 * until it is woken or its connection ends; the wake of one no longer listed is ignored. */

enum { GATE_NONE = 0, GATE_WAIT, GATE_WOKEN };
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static ing_req_t *gated;

static void gate_unlink_locked(ing_req_t *req)
{
    for (ing_req_t **p = &gated; *p; p = &(*p)->gate_next)
        if (*p == req) {
            *p = req->gate_next;
            req->gate_next = NULL;
            return;
        }
}

/* ing_oauth_wake_fn: the fetch req waited for ended (any thread). */
static void gate_wake(void *arg)
{
    pthread_mutex_lock(&gate_lock);
    for (ing_req_t *r = gated; r; r = r->gate_next) {
        if (r != arg)
            continue;
        gate_unlink_locked(r);
        r->gate = GATE_WOKEN;
        MHD_resume_connection(r->conn);
        break;
    }
    pthread_mutex_unlock(&gate_lock);
}

/* 1 when req was suspended until its token can be checked (gate_wake resumes it). */
static int gate_enter(ing_req_t *req)
{
    ing_ctx_t *ctx = req->ctx;
    const char *token = NULL;
    if (!req->cors || !ctx->oauth || !req->conn)
        return 0;
    ing_registry_t *reg = ing_ctx_registry(ctx);
    int is_token = ing_registry_oauth_used(reg) && ing_auth_access_token(req, reg, &token);
    ing_registry_unref(reg);
    if (!is_token)
        return 0;
    pthread_mutex_lock(&gate_lock); /* gate_wake, maybe called before prepare returns, waits */
    req->gate = GATE_WAIT;
    req->gate_next = gated;
    gated = req;
    /* (the failed-authentication limits first: a refused client causes no fetch) */
    int wait = ing_frontdoor_prepare(req, gate_wake, req) == ING_OAUTH_WAIT;
    if (wait) {
        MHD_suspend_connection(req->conn);
    } else {
        gate_unlink_locked(req);
        req->gate = GATE_NONE;
    }
    pthread_mutex_unlock(&gate_lock);
    return wait;
}

/* 1 (once) when req was gated and has been woken: route it now. */
static int gate_passed(ing_req_t *req)
{
    if (req->gate != GATE_WOKEN)
        return 0;
    req->gate = GATE_NONE;
    return 1;
}

/* Drops req from the gate when its connection ends. */
static void gate_leave(ing_req_t *req)
{
    if (!req->gate)
        return;
    pthread_mutex_lock(&gate_lock);
    gate_unlink_locked(req);
    pthread_mutex_unlock(&gate_lock);
}

/* Resumes every gated connection (the server stops: they are answered from the cache). */
static void gate_open_all(void)
{
    pthread_mutex_lock(&gate_lock);
    while (gated) {
        ing_req_t *r = gated;
        gated = r->gate_next;
        r->gate_next = NULL;
        r->gate = GATE_WOKEN;
        MHD_resume_connection(r->conn);
    }
    pthread_mutex_unlock(&gate_lock);
}

/* Allocates the exchange as soon as the request line is parsed, to keep its target exactly as
 * sent: HMAC signing (docs/signatures.md, "Request signing") signs the raw path and query, which
 * libmicrohttpd's url argument no longer has (unescaped, query split off). The pointer becomes
 * *con_cls. */
static void *req_new(ing_ctx_t *ctx, unsigned planes, const char *uri, struct MHD_Connection *conn)
{
    ing_req_t *req = calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    req->ctx = ctx;
    req->conn = conn;
    req->planes = planes;
    req->uri = strdup(uri ? uri : "");
    return req;
}

/* The planes each listener serves (see "listeners" above). */
static unsigned public_planes(const ing_ctx_t *ctx)
{
    return ops_split(ctx->set) ? ING_PLANE_PUBLIC : ING_PLANE_PUBLIC | ING_PLANE_OPS;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    return req_new(cls, public_planes(cls), uri, conn);
}

static void *on_uri_ops(void *cls, const char *uri, struct MHD_Connection *conn)
{
    return req_new(cls, ING_PLANE_OPS, uri, conn);
}

/* The first access-handler call of a request: its method, clocks and request id. */
static void req_begin(ing_req_t *req, const char *method)
{
    req->started = 1;
    req->method = method;
    req->t0_us = util_mono_us();
    req->metric = ING_M_NONE;
    ing_req_id_assign(req);
    log_ctx_set_request(req->request_id); /* the lines of this callback carry it too */
}

static enum MHD_Result handle_request(ing_ctx_t *ctx, unsigned planes, struct MHD_Connection *conn,
                                      const char *url, const char *method, const char *upload_data,
                                      size_t *upload_data_size, void **con_cls)
{
    ing_req_t *req = *con_cls;
    if (!req) {
        req = req_new(ctx, planes, url, conn);
        *con_cls = req;
    }
    if (!req || !req->uri)
        return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
    if (!req->started) {
        req_begin(req, method);
        int dirty = 0;
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, header_clean, &dirty);
        /* An encoded NUL in the target: libmicrohttpd's decoded url would end there, so the
         * path routed on would be shorter than the one sent (and signed). */
        int nul_target = strstr(req->uri, "%00") != NULL;
        if (dirty || nul_target) {
            req->handled = 1;
            ing_resp_t resp = {.status = 400, .content_type = "application/json"};
            resp.body = rpc_error_str(NULL, RPC_INVALID_REQUEST,
                                      dirty ? "a header holds a control character"
                                            : "the request target holds an encoded NUL (%00)",
                                      NULL);
            return send_resp(req, &resp);
        }
        if (!(req->planes & route_plane(url))) { /* served on the other listener */
            req->handled = 1;
            return send_text(req, 404, "application/json", "{\"error\":\"not found\"}");
        }
        req->cors = route_plane(url) == ING_PLANE_PUBLIC;
        ing_resp_t pre = {0};
        if (req->cors && ing_cors_preflight(req, &pre)) { /* no body, no credentials */
            req->handled = 1;
            return send_resp(req, &pre);
        }
        if (strcmp(method, "PUT") == 0 && ing_filesapi_is_content(url)) {
            /* A file upload: checked now, its body streamed to disk (files.h). */
            ing_resp_t resp = {0};
            if (ing_filesapi_upload_begin(req, url, &resp))
                return MHD_YES;
            req->handled = 1;
            return send_resp(req, &resp);
        }
        return body_begin(req, url);
    }
    if (req->upload && !req->handled) {
        if (*upload_data_size) {
            int rc = ing_filesapi_upload_data(req, upload_data, *upload_data_size);
            *upload_data_size = 0;
            return rc < 0 ? MHD_NO : MHD_YES;
        }
        req->handled = 1;
        ing_resp_t resp = {0};
        ing_filesapi_upload_end(req, &resp);
        return send_resp(req, &resp);
    }
    if (*upload_data_size) {
        body_take(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->has_call && req->handled)
        return answer_call(req);
    if (req->handled && !gate_passed(req))
        return MHD_YES;
    if (!req->handled) {
        req->handled = 1;
        if (req->busy)
            return send_busy(req);
        if (gate_enter(req))
            return MHD_YES; /* routed when the token's keys or introspection are in */
    }
    enum MHD_Result ret = route(req, url, method);
    if (req->has_call) /* a call waits: its body was read (docs/operations.md, "Memory of
                        * waiting calls"); it no longer counts in MCPQ_MAX_BODY_MEMORY_BYTES */
        body_release(req);
    return ret;
}

/* Sets this thread's log context to the request (log.h): every line logged while
 * libmicrohttpd runs a callback for it carries its request id and, for a call, its trace. */
static void call_log_ctx(const ing_req_t *req)
{
    const trace_ctx_t *t = req ? &req->call.trace : NULL;
    log_ctx_set(t && t->trace_id[0] ? t->trace_id : NULL, t ? t->span_id : NULL);
    log_ctx_set_request(req ? req->request_id : NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    call_log_ctx(*con_cls); /* tools/call sets it once it knows the trace */
    enum MHD_Result ret = handle_request(cls, public_planes(cls), conn, url, method, upload_data,
                                         upload_data_size, con_cls);
    log_ctx_clear();
    return ret;
}

/* on_request() of the MCPQ_OPS_LISTEN listener. */
static enum MHD_Result on_request_ops(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    (void)version;
    call_log_ctx(*con_cls);
    enum MHD_Result ret = handle_request(cls, ING_PLANE_OPS, conn, url, method, upload_data,
                                         upload_data_size, con_cls);
    log_ctx_clear();
    return ret;
}

/* The stages of a single tools/call a worker answered (stages.h), ended now: observed
 * (mcpq_call_stage_seconds) and, with json, returned as the access log's stages_us object;
 * NULL for any other request (a batch, a call answered without a worker's result). */
static cJSON *call_stages(ing_req_t *req, int64_t duration_us, int json)
{
    if (req->batch || !req->call.job_id[0])
        return NULL;
    ing_stamps_t st = req->call.stamps;
    st.end_us = util_now_us();
    st.start_us = st.end_us - duration_us; /* the request's start on the wall clock */
    int64_t us[ING_STAGE_COUNT];
    if (!ing_stages_split(&st, us))
        return NULL;
    cJSON *o = json ? cJSON_CreateObject() : NULL;
    for (int i = 0; i < ING_STAGE_COUNT; i++) {
        ing_metrics_stage(req->ctx->metrics, (ing_stage_t)i, us[i]);
        if (o)
            cJSON_AddNumberToObject(o, ing_stages_names[i], (double)us[i]);
    }
    return o;
}

/* The access log line of a request that ended (docs/operations.md, "Access log"): the status
 * queued (0 when none was), and "aborted" when the client did not get the whole answer;
 * a tools/call a worker answered also gets stages_us (call_stages). */
static void access_log(ing_req_t *req, enum MHD_RequestTerminationCode toe)
{
    int64_t us = util_mono_us() - req->t0_us;
    cJSON *stages = call_stages(req, us > 0 ? us : 0, req->ctx->set->access_log);
    if (!req->ctx->set->access_log)
        return;
    char path[256], rbuf[288], client[ING_PEER_LEN];
    size_t plen = strcspn(req->uri, "?");
    snprintf(path, sizeof(path), "%.*s", (int)(plen < sizeof(path) ? plen : sizeof(path) - 1),
             req->uri);
    ing_req_client(req, req->ctx->trusted, client, sizeof(client));
    cJSON *f = cJSON_CreateObject();
    if (!f) {
        cJSON_Delete(stages);
        return;
    }
    cJSON_AddStringToObject(f, "method", req->method ? req->method : "");
    cJSON_AddStringToObject(f, "route", route_pattern(path, rbuf, sizeof(rbuf)));
    cJSON_AddNumberToObject(f, "status", req->status);
    cJSON_AddNumberToObject(f, "bytes", (double)req->bytes);
    cJSON_AddNumberToObject(f, "duration_us", (double)(us > 0 ? us : 0));
    if (req->tenant[0])
        cJSON_AddStringToObject(f, "tenant", req->tenant);
    cJSON_AddStringToObject(f, "request_id", req->request_id);
    cJSON_AddStringToObject(f, "trace_id", ing_req_trace_id(req));
    if (req->call.trace.trace_id[0]) /* the ingress's span of the call: its SERVER span (otel.h) */
        cJSON_AddStringToObject(f, "span_id", req->call.trace.span_id);
    cJSON_AddStringToObject(f, "listener", req->planes == ING_PLANE_OPS ? "ops" : "clients");
    cJSON_AddStringToObject(f, "client", client);
    if (!req->status || toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        cJSON_AddBoolToObject(f, "aborted", 1);
    if (stages)
        cJSON_AddItemToObject(f, "stages_us", stages);
    log_event_json(LOG_INFO, "access", f);
}

/* Ends a SERVER span of req (its own, or a batch element's) with its response (otel.h). */
static void span_close(const ing_req_t *req, otel_span_t **span,
                       enum MHD_RequestTerminationCode toe)
{
    otel_span_t *s = *span;
    if (!s)
        return;
    otel_span_int(s, "http.response.status_code", req->status);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && s->status != OTEL_STATUS_ERROR)
        otel_span_error(s, "aborted", "the response was not completed");
    else if (req->status >= 500 && s->status != OTEL_STATUS_ERROR)
        otel_span_error(s, "http_error", NULL);
    otel_span_end(s, 0);
    *span = NULL;
}

/* The one place a request's end is handled, once, when libmicrohttpd reports it complete
 * (however it ended): its access log line. */
static void request_done(ing_req_t *req, enum MHD_RequestTerminationCode toe)
{
    if (!req->started)
        return; /* no request line was ever routed */
    access_log(req, toe);
    span_close(req, &req->span, toe);
    for (size_t i = 0; req->batch && i < req->batch->n; i++) /* each element's own */
        if (req->batch->calls[i])
            span_close(req, &req->batch->calls[i]->span, toe);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    ing_ctx_t *ctx = cls;
    ing_req_t *req = *con_cls;
    if (!req)
        return;
    (void)conn;
    call_log_ctx(req);
    request_done(req, toe);
    gate_leave(req);
    if (req->batch) {
        ing_batch_free(req->batch, ctx->pending); /* its elements leave the table */
        req->batch = NULL;
    } else if (req->has_call && ing_pending_remove(ctx->pending, &req->call) && req->call.modern &&
               !req->call.listener && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        /* 2026-07-28: closing the response stream cancels the request (docs/protocol.md, "Requests
         * and responses"). */
        ing_pending_cancel(ctx->pending, req->call.job_id, "the client closed the stream");
    }
    ing_listen_remove(ctx->listen, req->listener); /* after the call left the table */
    ing_pending_release(&req->call);
    ing_filesapi_upload_free(req->upload);
    body_release(req);
    free(req->uri);
    free(req);
    *con_cls = NULL;
    log_ctx_clear();
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_event(LOG_WARN, "http", "detail", msg, (char *)NULL);
}

/* The libmicrohttpd flag of a listen address's family: IPv4 (none), IPv6 only, or dual stack. */
static unsigned family_flags(const util_listen_t *la)
{
    if (la->addr.ss_family != AF_INET6)
        return 0;
    return la->dual_stack ? (unsigned)MHD_USE_DUAL_STACK : (unsigned)MHD_USE_IPv6;
}

/* The address a daemon is bound to ("127.0.0.1:8080", "[::]:8080") into out: the real port
 * when the setting asked for port 0. */
static void bound_addr(struct MHD_Daemon *d, const util_listen_t *la, char *out, size_t size)
{
    struct sockaddr_storage ss = la->addr;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    uint16_t port = info ? htons(info->port) : 0;
    if (ss.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&ss)->sin6_port = port;
    else
        ((struct sockaddr_in *)&ss)->sin_port = port;
    util_listen_format((const struct sockaddr *)&ss, out, size);
}

/* Parses MCPQ_LISTEN into la and MCPQ_OPS_LISTEN, when set, into lo (see server.h). */
static int parse_listeners(const mcpq_settings_t *set, util_listen_t *la, util_listen_t *lo,
                           char *errstr, size_t errstr_size)
{
    if (util_parse_listen(set->listen ? set->listen : "", la) < 0) {
        snprintf(errstr, errstr_size, "MCPQ_LISTEN: \"%s\" is not host:port, [IPv6]:port or :port",
                 set->listen ? set->listen : "");
        return MCPQ_EINVAL;
    }
    if (ops_split(set) && util_parse_listen(set->ops_listen, lo) < 0) {
        snprintf(errstr, errstr_size,
                 "MCPQ_OPS_LISTEN: \"%s\" is not host:port, [IPv6]:port or :port", set->ops_listen);
        return MCPQ_EINVAL;
    }
    return 0;
}

int ing_server_check(const mcpq_settings_t *set, char *errstr, size_t errstr_size)
{
    util_listen_t la, lo;
    return parse_listeners(set, &la, &lo, errstr, errstr_size);
}

int ing_server_start(ing_ctx_t *ctx, char *errstr, size_t errstr_size)
{
    const mcpq_settings_t *set = ctx->set;
    util_listen_t la, lo;
    int rc = parse_listeners(set, &la, &lo, errstr, errstr_size);
    if (rc < 0)
        return rc;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_TURBO | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    ctx->daemon = MHD_start_daemon(
        flags | family_flags(&la), 0, NULL, NULL, on_request, ctx, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, ctx, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&la.addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)set->threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)set->max_connections, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)set->conn_memory_limit, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)set->conn_timeout_s, MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctx, MHD_OPTION_URI_LOG_CALLBACK, on_uri, ctx,
        MHD_OPTION_END);
    if (!ctx->daemon) {
        snprintf(errstr, errstr_size,
                 "MCPQ_LISTEN: cannot listen on %s (address in use or not local?)", set->listen);
        return MCPQ_EIO;
    }
    bound_addr(ctx->daemon, &la, ctx->listen_addr, sizeof(ctx->listen_addr));
    if (!ops_split(set))
        return 0;
    /* The operations listener: one thread of its own, so probes and scrapes are answered
     * however busy the clients' threads are; same per-connection limits. */
    ctx->ops_daemon = MHD_start_daemon(
        flags | family_flags(&lo), 0, NULL, NULL, on_request_ops, ctx, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, ctx, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&lo.addr,
        MHD_OPTION_CONNECTION_LIMIT, OPS_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)set->conn_memory_limit, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)set->conn_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctx,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri_ops, ctx, MHD_OPTION_END);
    if (!ctx->ops_daemon) {
        snprintf(errstr, errstr_size,
                 "MCPQ_OPS_LISTEN: cannot listen on %s (address in use or not local?)",
                 set->ops_listen);
        MHD_stop_daemon(ctx->daemon);
        ctx->daemon = NULL;
        return MCPQ_EIO;
    }
    bound_addr(ctx->ops_daemon, &lo, ctx->ops_addr, sizeof(ctx->ops_addr));
    return 0;
}

void ing_server_quiesce(ing_ctx_t *ctx)
{
    if (ctx->daemon) {
        MHD_socket s = MHD_quiesce_daemon(ctx->daemon);
        if (s != MHD_INVALID_SOCKET)
            close(s);
    }
}

unsigned ing_server_connections(ing_ctx_t *ctx)
{
    const union MHD_DaemonInfo *info =
        ctx->daemon ? MHD_get_daemon_info(ctx->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
    return info ? info->num_connections : 0;
}

void ing_server_stop(ing_ctx_t *ctx)
{
    gate_open_all();
    if (ctx->daemon)
        MHD_stop_daemon(ctx->daemon);
    ctx->daemon = NULL;
    if (ctx->ops_daemon)
        MHD_stop_daemon(ctx->ops_daemon);
    ctx->ops_daemon = NULL;
}
