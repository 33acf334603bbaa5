#include "mcpexec.h"

#include "err.h"
#include "job.h"
#include "log.h"
#include "mcpmethod.h"
#include "mcpw.h"
#include "output.h"
#include "stdiopool.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MCP_TIMEOUT_SLACK_MS 500       /* the job's deadline timer fires first */
#define MCP_NEGOTIATE_TIMEOUT_MS 10000 /* each handshake request */
#define MCP_CANCEL_NOTE_TIMEOUT_MS 2000
#define MCP_MESSAGE_MAX 1024 /* bytes of an upstream error message passed on */
#define MCP_HOST_MAX 300

typedef enum { UP_NEW = 0, UP_DISCOVER, UP_INITIALIZE, UP_INITIALIZED, UP_READY } up_state_t;

typedef struct mcp_call mcp_call_t;

/* One upstream (url + headers) as this worker negotiated it. */
typedef struct mcp_up {
    struct wrk_mcpexec *m;
    char *key; /* url "\n" compact headers */
    char *url;
    cJSON *headers; /* the configured headers (a copy) */
    char host[MCP_HOST_MAX];
    up_state_t state;
    int modern;
    const char *version; /* legacy: the version settled on */
    char session[WRK_HTTP_SESSION_MAX];
    long neg_id;
    wrk_httpexec_req_t *req; /* the handshake request in flight */
    mcp_call_t *waiters;     /* calls waiting for the handshake */
    cJSON *info;             /* what the handshake told (wrk_mcpmethod_info), for mcpq/catalog */
    struct mcp_up *next;
} mcp_up_t;

struct wrk_mcpexec {
    wrk_httpexec_t *http;
    mcp_up_t *ups;
    long next_id;
    wrk_stdiopool_t *stdio; /* stdio upstreams, made on the first stdio call */
};

struct mcp_call {
    wrk_job_t *job;
    wrk_mcpexec_t *m;
    mcp_up_t *up;
    wrk_httpexec_req_t *req;
    wrk_stdiopool_call_t *scall; /* a stdio upstream's call in flight (up is NULL) */
    const char *where;           /* for the log: the upstream's host, or the stdio command */
    long id;
    int retried;                        /* re-initialized once after a 404 */
    char session[WRK_HTTP_SESSION_MAX]; /* the session the call was sent in */
    int cat_started;                    /* mcpq/catalog: cat holds the lists read so far */
    int cat_barrier;                    /* mcpq/catalog of a stdio upstream: ping sent first */
    wrk_mcpmethod_catalog_t cat;
    mcp_call_t *next; /* in up->waiters */
};

wrk_mcpexec_t *wrk_mcpexec_new(wrk_httpexec_t *h)
{
    wrk_mcpexec_t *m = calloc(1, sizeof(*m));
    if (m)
        m->http = h;
    return m;
}

void wrk_mcpexec_free(wrk_mcpexec_t *m)
{
    if (!m)
        return;
    mcp_up_t *up = m->ups;
    while (up) {
        mcp_up_t *next = up->next;
        wrk_httpexec_req_cancel(m->http, up->req);
        free(up->key);
        free(up->url);
        cJSON_Delete(up->headers);
        cJSON_Delete(up->info);
        free(up);
        up = next;
    }
    wrk_stdiopool_free(m->stdio);
    free(m);
}

static int url_valid(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

/* The configured headers: NULL (none) or an object of valid headers; *bad set otherwise. */
static const cJSON *config_headers(const cJSON *ex, int *bad)
{
    const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(ex, "headers");
    *bad = 0;
    if (!hdrs || cJSON_IsNull(hdrs))
        return NULL;
    if (!cJSON_IsObject(hdrs)) {
        *bad = 1;
        return NULL;
    }
    for (const cJSON *it = hdrs->child; it; it = it->next)
        if (!cJSON_IsString(it) || !wrk_httpexec_header_name_valid(it->string) ||
            !wrk_httpexec_header_value_valid(it->valuestring) ||
            strlen(it->string) + strlen(it->valuestring) + 3 > WRK_HTTP_HEADER_MAX)
            *bad = 1;
    return hdrs;
}

static mcp_up_t *up_get(wrk_mcpexec_t *m, const char *url, const cJSON *headers)
{
    char *hs = headers ? cJSON_PrintUnformatted(headers) : NULL;
    size_t n = strlen(url) + (hs ? strlen(hs) : 0) + 2;
    char *key = malloc(n);
    if (!key) {
        cJSON_free(hs);
        return NULL;
    }
    snprintf(key, n, "%s\n%s", url, hs ? hs : "");
    cJSON_free(hs);
    for (mcp_up_t *up = m->ups; up; up = up->next)
        if (strcmp(up->key, key) == 0) {
            free(key);
            return up;
        }
    mcp_up_t *up = calloc(1, sizeof(*up));
    if (!up || !(up->url = strdup(url)) ||
        (headers && !(up->headers = cJSON_Duplicate(headers, 1)))) {
        if (up)
            free(up->url);
        free(up);
        free(key);
        return NULL;
    }
    up->key = key;
    up->m = m;
    util_url_host(url, up->host, sizeof(up->host));
    up->next = m->ups;
    m->ups = up;
    return up;
}

/* Request headers for up; method/name for 2026-07-28 requests (modern), session for legacy
 * ones after initialize. NULL on ENOMEM. */
static struct curl_slist *up_headers(const mcp_up_t *up, int modern, const char *version,
                                     const char *method, const char *name, const char *session,
                                     const char *traceparent)
{
    struct curl_slist *l = curl_slist_append(NULL, "Expect:");
    if (!l)
        return NULL;
    int rc = wrk_httpexec_header_add(&l, "Content-Type", "application/json");
    if (!rc)
        rc = wrk_httpexec_header_add(&l, "Accept", "application/json, text/event-stream");
    if (!rc && version)
        rc = wrk_httpexec_header_add(&l, "MCP-Protocol-Version", version);
    if (!rc && modern && method)
        rc = wrk_httpexec_header_add(&l, "Mcp-Method", method);
    if (!rc && modern && name)
        rc = wrk_httpexec_header_add(&l, "Mcp-Name", name);
    if (!rc && session && session[0])
        rc = wrk_httpexec_header_add(&l, "Mcp-Session-Id", session);
    if (!rc && traceparent)
        rc = wrk_httpexec_header_add(&l, "traceparent", traceparent);
    if (up->headers)
        for (const cJSON *it = up->headers->child; it && !rc; it = it->next)
            if (!mcpw_header_reserved(it->string))
                rc = wrk_httpexec_header_add(&l, it->string, it->valuestring);
    if (rc < 0) {
        curl_slist_free_all(l);
        return NULL;
    }
    return l;
}

/* A JSON-RPC request body; params is taken over. NULL on ENOMEM. */
static char *rpc_body(long id, const char *method, cJSON *params, size_t *len)
{
    cJSON *o = mcpw_request(id, method, params);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (s)
        *len = strlen(s);
    return s;
}

/* params with the 2026-07-28 _meta envelope every request carries: the version, the
 * (empty) client capabilities and who the client is. */
static cJSON *modern_meta(cJSON *params)
{
    cJSON *meta = cJSON_AddObjectToObject(params, "_meta");
    cJSON_AddStringToObject(meta, MCPW_META_VERSION, MCPW_MODERN_VERSION);
    cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_CAPS);
    cJSON *ci = cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_INFO);
    cJSON_AddStringToObject(ci, "name", "mcpq-worker");
    cJSON_AddStringToObject(ci, "version", "1.0.0");
    return params;
}

/* ---- calls ---- */

static void call_send(mcp_call_t *c);
static void stdio_send(mcp_call_t *c, wrk_mcpmethod_req_t *rq);
static void up_negotiate(wrk_mcpexec_t *m, mcp_up_t *up);

static void call_free(mcp_call_t *c)
{
    wrk_mcpmethod_catalog_cleanup(&c->cat);
    free(c);
}

/* Ends c with a CallToolResult (owned; mapped for other methods, job.h). */
static void call_end(mcp_call_t *c, cJSON *result)
{
    wrk_job_t *job = c->job;
    call_free(c);
    wrk_job_finish(job, result);
}

/* Ends c with the result of its job's method (owned), passed on as it is. */
static void call_end_result(mcp_call_t *c, cJSON *result)
{
    wrk_job_t *job = c->job;
    call_free(c);
    wrk_job_finish_result(job, result);
}

static void call_end_error(mcp_call_t *c, int code, const char *message)
{
    wrk_job_t *job = c->job;
    call_free(c);
    wrk_job_finish_error(job, code, message);
}

/* Starts or joins the handshake of c's upstream. */
static void call_wait(mcp_call_t *c)
{
    mcp_up_t *up = c->up;
    c->next = up->waiters;
    up->waiters = c;
    if (up->state == UP_NEW)
        up_negotiate(c->m, up);
}

static void call_note(const cJSON *note, void *arg)
{
    mcp_call_t *c = arg;
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(note, "method"));
    if (!method || strcmp(method, "notifications/progress") != 0)
        return;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(note, "params");
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(p, "progress");
    if (!cJSON_IsNumber(done))
        return;
    cJSON *data = cJSON_CreateObject();
    cJSON_AddNumberToObject(data, "progress", done->valuedouble);
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(p, "total");
    if (cJSON_IsNumber(total))
        cJSON_AddNumberToObject(data, "total", total->valuedouble);
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "message"));
    if (msg)
        cJSON_AddStringToObject(data, "message", msg);
    wrk_job_notify(c->job, "progress", data);
    cJSON_Delete(data);
}

/* An mcpq/catalog call's page (result borrowed): the next request, or the end. */
static void call_catalog_page(mcp_call_t *c, const cJSON *result)
{
    int rc = wrk_mcpmethod_catalog_page(&c->cat, result);
    if (rc == 1) {
        call_send(c);
        return;
    }
    if (rc == 0) {
        call_end_result(c, wrk_mcpmethod_catalog_take(&c->cat));
        return;
    }
    if (rc == MCPQ_ENOMEM)
        call_end_error(c, -32603, "out of memory");
    else
        call_end(c, wrk_job_error_hidden(c->job, c->where,
                                         "the upstream MCP server answered a list request with "
                                         "something that is not a list result"));
}

/* Ends call c, whose method is not tools/call, with the upstream's result (borrowed): passed
 * on when it has the method's shape (mcpmethod.h). */
static void call_method_result(mcp_call_t *c, const cJSON *result)
{
    wrk_method_t method = c->job->env.method_id;
    if (method == WRK_METHOD_CATALOG) {
        call_catalog_page(c, result);
        return;
    }
    cJSON *out = wrk_mcpmethod_result(method, result);
    if (out) {
        call_end_result(c, out);
        return;
    }
    call_end(c, wrk_job_error_hidden(c->job, c->where,
                                     "the upstream MCP server answered %s with something that is "
                                     "not its result",
                                     c->job->env.method));
}

/* Ends call c with the upstream's JSON-RPC response r (owned, freed here): its result when
 * it is a complete CallToolResult (or, for another method, that method's result), else an
 * error. */
static void call_answer(mcp_call_t *c, cJSON *r)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(r, "error");
    cJSON *result = cJSON_GetObjectItemCaseSensitive(r, "result");
    int other = c->job->env.method_id != WRK_METHOD_CALL;
    if (c->job->env.method_id == WRK_METHOD_CATALOG && !c->cat_started) {
        /* the answer to a stdio catalog's ping, whatever it says: the handshake is done */
        cJSON_Delete(r);
        call_send(c);
        return;
    }
    if (err) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
        char text[MCP_MESSAGE_MAX];
        snprintf(text, sizeof(text), "%s", msg ? msg : "error");
        int icode = cJSON_IsNumber(code) ? (int)code->valuedouble : 0;
        cJSON_Delete(r);
        if (other) {
            /* No isError result outside tools/call: the client gets the upstream's error, as
             * it would from the upstream itself (e.g. -32002 resource not found). */
            call_end_error(c, icode ? icode : -32603, text);
            return;
        }
        if (icode == -32602) {
            call_end_error(c, -32602, text);
            return;
        }
        call_end(c, wrk_job_error_hidden(c->job, c->where,
                                         "the upstream MCP server answered error %d: %s", icode,
                                         text));
        return;
    }
    const char *rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "resultType"));
    if (rt && strcmp(rt, "complete") != 0) {
        cJSON_Delete(r);
        call_end(c, wrk_job_error_hidden(
                        c->job, c->where,
                        "the upstream MCP server answered a \"%.64s\" result, which the mcp "
                        "executor does not follow",
                        rt));
        return;
    }
    if (other) {
        call_method_result(c, result);
        cJSON_Delete(r);
        return;
    }
    if (!wrk_output_is_result(result)) {
        cJSON_Delete(r);
        call_end(c, wrk_job_error_hidden(c->job, c->where,
                                         "the upstream MCP server answered something that is not a "
                                         "CallToolResult"));
        return;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(result, "resultType");
    cJSON_DetachItemViaPointer(r, result);
    cJSON_Delete(r);
    call_end(c, result);
}

static void call_done_in(const wrk_httpexec_resp_t *resp, void *arg)
{
    mcp_call_t *c = arg;
    mcp_up_t *up = c->up;
    c->req = NULL;
    if (resp->code != CURLE_OK) {
        if (resp->too_big)
            call_end(c, wrk_output_errorf("output too large: the upstream MCP server answered "
                                          "more than %zu bytes",
                                          wrk_httpexec_max_output(c->m->http)));
        else
            call_end(c, wrk_httpexec_failure(c->job, resp, "the tool's upstream MCP server"));
        return;
    }
    if (resp->status == 404 && !up->modern && c->session[0] && !c->retried) {
        /* The session expired: initialize again (once) and retry. */
        log_event(LOG_INFO, "upstream MCP session expired: initializing again", "job_id",
                  c->job->env.job_id, "upstream", up->host, (char *)NULL);
        c->retried = 1;
        if (up->state == UP_READY && strcmp(up->session, c->session) == 0) {
            up->state = UP_NEW;
            up->session[0] = '\0';
        }
        if (up->state == UP_READY)
            call_send(c);
        else
            call_wait(c);
        return;
    }
    cJSON *r = mcpw_response(resp->content_type, resp->body, resp->len, c->id, call_note, c);
    if (!r) {
        call_end(c,
                 resp->status >= 200 && resp->status <= 299
                     ? wrk_job_error_hidden(c->job, up->host,
                                            "the upstream MCP server sent no response to the call")
                     : wrk_job_error_hidden(c->job, up->host,
                                            "the upstream MCP server answered HTTP %ld",
                                            resp->status));
        return;
    }
    call_answer(c, r);
}

/* The upstream's answer to the call, logged in the job's trace. */
static void call_done(const wrk_httpexec_resp_t *resp, void *arg)
{
    const mcp_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    call_done_in(resp, arg);
    wrk_job_log_leave(&saved);
}

/* The next request of c: its job's method, or the catalog's next list page. 0 or
 * MCPQ_ENOMEM. */
static int call_request(mcp_call_t *c, wrk_mcpmethod_req_t *req)
{
    const wrk_envelope_t *env = &c->job->env;
    if (env->method_id != WRK_METHOD_CATALOG)
        return wrk_mcpmethod_request(env, req);
    if (!c->cat_started) {
        cJSON *stdio_info = NULL;
        const cJSON *info = c->up ? c->up->info : NULL;
        if (!c->up) {
            const char *version = NULL;
            const cJSON *hs = wrk_stdiopool_handshake(c->m->stdio, env->executor, &version);
            if (!hs && !c->cat_barrier) {
                /* No process of this stdio upstream has opened yet: a ping waits for one,
                 * after which its handshake is known (call_answer). */
                c->cat_barrier = 1;
                req->method = "ping";
                req->params = NULL;
                req->name = NULL;
                return 0;
            }
            info = stdio_info = hs ? wrk_mcpmethod_info(hs, version) : NULL;
            if (hs && !stdio_info)
                return MCPQ_ENOMEM;
        }
        int rc = wrk_mcpmethod_catalog_start(&c->cat, info);
        cJSON_Delete(stdio_info);
        if (rc < 0)
            return rc;
        c->cat_started = 1;
        if (rc == 0) {
            req->method = NULL; /* nothing announced: the catalog is complete */
            return 0;
        }
    }
    return wrk_mcpmethod_catalog_request(&c->cat, req);
}

static void call_send(mcp_call_t *c)
{
    mcp_up_t *up = c->up;
    wrk_job_t *job = c->job;
    wrk_mcpmethod_req_t rq;
    if (call_request(c, &rq) < 0) {
        call_end_error(c, -32603, "out of memory");
        return;
    }
    if (!rq.method) {
        call_end_result(c, wrk_mcpmethod_catalog_take(&c->cat));
        return;
    }
    if (!up) {
        stdio_send(c, &rq);
        return;
    }
    cJSON *params = rq.params;
    c->id = ++c->m->next_id;
    snprintf(c->session, sizeof(c->session), "%s", up->modern ? "" : up->session);
    if (up->modern)
        modern_meta(params);
    if (job->env.method_id != WRK_METHOD_CATALOG) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
        cJSON_AddStringToObject(meta ? meta : cJSON_AddObjectToObject(params, "_meta"),
                                "progressToken", job->env.job_id);
    }
    size_t len = 0;
    char *body = rpc_body(c->id, rq.method, params, &len);
    struct curl_slist *h =
        up_headers(up, up->modern, up->modern ? MCPW_MODERN_VERSION : up->version, rq.method,
                   rq.name, c->session, job->env.traceparent);
    if (!body || !h) {
        cJSON_free(body);
        curl_slist_free_all(h);
        call_end_error(c, -32603, "out of memory");
        return;
    }
    c->req = wrk_httpexec_post(c->m->http, up->url, h, body, len,
                               wrk_job_remaining_ms(job) + MCP_TIMEOUT_SLACK_MS, call_done, c);
    cJSON_free(body);
    if (!c->req)
        call_end_error(c, -32603, "cannot start the request to the upstream MCP server");
}

/* ---- the handshake ---- */

/* A waiting call's result when its upstream's handshake failed (failure: what went wrong,
 * "unreachable: ..." when no answer came). */
static cJSON *handshake_error(const mcp_call_t *c, const char *failure)
{
    char detail[MCP_HOST_MAX + 600];
    snprintf(detail, sizeof(detail), "upstream MCP server %s: %.512s", c->up->host, failure);
    if (strncmp(failure, "unreachable", 11) == 0)
        return wrk_job_error_hidden(c->job, detail,
                                    "the tool's upstream MCP server could not be reached");
    return wrk_job_error_hidden(c->job, detail,
                                "the MCP handshake with the tool's upstream MCP server failed");
}

static void up_ready(wrk_mcpexec_t *m, mcp_up_t *up, const char *failure)
{
    mcp_call_t *c = up->waiters;
    up->waiters = NULL;
    if (failure) {
        up->state = UP_NEW; /* the next call tries again */
        log_event(LOG_WARN, "upstream MCP handshake failed", "upstream", up->host, "error", failure,
                  (char *)NULL);
    } else {
        up->state = UP_READY;
        log_event(LOG_INFO, "upstream MCP server ready", "upstream", up->host, "version",
                  up->modern ? MCPW_MODERN_VERSION : up->version, "session",
                  up->session[0] ? "yes" : "no", (char *)NULL);
    }
    while (c) {
        mcp_call_t *next = c->next;
        c->next = NULL;
        if (failure)
            call_end(c, handshake_error(c, failure));
        else
            call_send(c);
        c = next;
    }
}

static void up_send(wrk_mcpexec_t *m, mcp_up_t *up, const char *method, cJSON *params, int notify);

/* Keeps what the handshake's response r (borrowed) told about the upstream. */
static void up_keep_info(mcp_up_t *up, const cJSON *r, const char *version)
{
    cJSON *info = wrk_mcpmethod_info(cJSON_GetObjectItemCaseSensitive(r, "result"), version);
    if (!info)
        return; /* out of memory: a catalog then lists nothing */
    cJSON_Delete(up->info);
    up->info = info;
}

/* Each handshake step's answer; the handshake goes on even when every waiting call has
 * gone, which warms the cache for the next ones. */
static void up_done(const wrk_httpexec_resp_t *resp, void *arg)
{
    mcp_up_t *up = arg;
    wrk_mcpexec_t *m = up->m;
    char why[512];
    up->req = NULL;
    if (resp->code != CURLE_OK) {
        snprintf(why, sizeof(why), "unreachable: %s", resp->error);
        up_ready(m, up, why);
        return;
    }
    cJSON *r = up->state == UP_INITIALIZED ? NULL
                                           : mcpw_response(resp->content_type, resp->body,
                                                           resp->len, up->neg_id, NULL, NULL);
    if (up->state == UP_DISCOVER) {
        int modern = mcpw_discover_modern(resp->status, r);
        if (modern)
            up_keep_info(up, r, MCPW_MODERN_VERSION);
        cJSON_Delete(r);
        if (modern) {
            up->modern = 1;
            up_ready(m, up, NULL);
            return;
        }
        up->modern = 0;
        up->state = UP_INITIALIZE;
        up_send(m, up, "initialize", mcpw_initialize_params(), 0);
        return;
    }
    if (up->state == UP_INITIALIZE) {
        const char *v = mcpw_legacy_version(r);
        if (!v) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
            const char *em = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
            if (em)
                snprintf(why, sizeof(why), "initialize failed: %.300s", em);
            else if (r)
                snprintf(why, sizeof(why),
                         "initialize settled on no protocol version this gateway speaks");
            else
                snprintf(why, sizeof(why), "initialize failed: HTTP %ld", resp->status);
            cJSON_Delete(r);
            up_ready(m, up, why);
            return;
        }
        up_keep_info(up, r, v);
        cJSON_Delete(r);
        up->version = v;
        snprintf(up->session, sizeof(up->session), "%s", resp->session_id);
        up->state = UP_INITIALIZED;
        up_send(m, up, "notifications/initialized", NULL, 1);
        return;
    }
    /* notifications/initialized: 202 expected; an upstream that refuses it may still serve
     * calls, and a call's own answer will tell. */
    up_ready(m, up, NULL);
}

static void up_send(wrk_mcpexec_t *m, mcp_up_t *up, const char *method, cJSON *params, int notify)
{
    int modern = up->state == UP_DISCOVER;
    const char *version = modern                        ? MCPW_MODERN_VERSION
                          : up->state == UP_INITIALIZED ? up->version
                                                        : NULL;
    up->neg_id = notify ? -1 : ++m->next_id;
    size_t len = 0;
    char *body = rpc_body(up->neg_id, method, params, &len);
    struct curl_slist *h = up_headers(up, modern, version, method, NULL,
                                      up->state == UP_INITIALIZED ? up->session : NULL, NULL);
    if (body && h) {
        up->req = wrk_httpexec_post(m->http, up->url, h, body, len, MCP_NEGOTIATE_TIMEOUT_MS,
                                    up_done, up);
        h = NULL;
    }
    cJSON_free(body);
    curl_slist_free_all(h);
    if (!up->req)
        up_ready(m, up, "cannot start the handshake request");
}

static void up_negotiate(wrk_mcpexec_t *m, mcp_up_t *up)
{
    up->state = UP_DISCOVER;
    up->session[0] = '\0';
    up_send(m, up, "server/discover", modern_meta(cJSON_CreateObject()), 0);
}

/* ---- the stdio transport (worker/executors/stdiopool.h) ---- */

static void stdio_note(const cJSON *note, void *arg);
static void stdio_done(cJSON *response, const char *failure, const char *detail, void *arg);

/* Sends rq (its params taken over) to a process of c's stdio upstream; ends c when the pool
 * refuses it (a malformed executor, a full queue). */
static void stdio_send(mcp_call_t *c, wrk_mcpmethod_req_t *rq)
{
    char why[300];
    c->scall = wrk_stdiopool_call(c->m->stdio, c->job->env.executor, rq->method, rq->params,
                                  c->job->env.job_id, stdio_note, stdio_done, c, why, sizeof(why));
    if (!c->scall)
        call_end(c, wrk_output_errorf("%s", why));
}

/* A notification of a stdio call: progress as for HTTP, log messages as log entries. */
static void stdio_note(const cJSON *note, void *arg)
{
    mcp_call_t *c = arg;
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(note, "method"));
    if (!method || strcmp(method, "notifications/message") != 0) {
        call_note(note, c);
        return;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(note, "params");
    const char *level = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "level"));
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(p, "data");
    if (!level || !data)
        return;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "level", level);
    cJSON_AddItemToObject(entry, "data", cJSON_Duplicate(data, 1));
    wrk_job_notify(c->job, "log", entry);
    cJSON_Delete(entry);
}

static void stdio_done(cJSON *response, const char *failure, const char *detail, void *arg)
{
    mcp_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    c->scall = NULL;
    if (response)
        call_answer(c, response);
    else
        call_end(c, wrk_job_error_hidden(c->job, detail, "%s", failure));
    wrk_job_log_leave(&saved);
}

static int stdio_start(wrk_job_t *job)
{
    wrk_mcpexec_t *m = job->rt->mcp;
    const cJSON *ex = job->env.executor;
    if (!m)
        return -1;
    if (!m->stdio && !(m->stdio = wrk_stdiopool_new(job->rt->loop, job->rt->settings)))
        return -1;
    mcp_call_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    c->job = job;
    c->m = m;
    c->where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "command"));
    job->ex_state = c;
    call_send(c); /* up NULL: stdio_send */
    return 0;
}

/* ---- the executor ---- */

static int mcp_start(wrk_job_t *job)
{
    wrk_mcpexec_t *m = job->rt->mcp;
    const cJSON *ex = job->env.executor;
    const char *config_error = wrk_mcpmethod_config_error(&job->env);
    if (config_error) {
        wrk_job_finish(job, wrk_output_errorf("%s", config_error));
        return 0;
    }
    if (wrk_stdiopool_is_stdio(ex))
        return stdio_start(job);
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(ex, "url");
    int bad = 0;
    const cJSON *headers = config_headers(ex, &bad);
    if (!cJSON_IsString(url) || !url_valid(url->valuestring)) {
        wrk_job_finish(job, wrk_output_errorf("executor.url must be an http:// or https:// "
                                              "URL"));
        return 0;
    }
    if (bad) {
        wrk_job_finish(job, wrk_output_errorf("executor.headers holds an invalid header name "
                                              "or value"));
        return 0;
    }
    if (!m)
        return -1;
    mcp_up_t *up = up_get(m, url->valuestring, headers);
    mcp_call_t *c = up ? calloc(1, sizeof(*c)) : NULL;
    if (!c)
        return -1;
    c->job = job;
    c->m = m;
    c->up = up;
    c->where = up->host;
    job->ex_state = c;
    if (up->state == UP_READY)
        call_send(c);
    else
        call_wait(c);
    return 0;
}

/* notifications/cancelled for a call in a legacy session, fire-and-forget. */
static void send_cancelled(mcp_call_t *c)
{
    mcp_up_t *up = c->up;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "requestId", (double)c->id);
    cJSON_AddStringToObject(p, "reason", c->job->cancelled ? "cancelled by the caller" : "timeout");
    size_t len = 0;
    char *body = rpc_body(-1, "notifications/cancelled", p, &len);
    struct curl_slist *h =
        up_headers(up, 0, up->version, NULL, NULL, c->session, c->job->env.traceparent);
    if (body && h) {
        wrk_httpexec_post(c->m->http, up->url, h, body, len, MCP_CANCEL_NOTE_TIMEOUT_MS, NULL,
                          NULL);
        h = NULL;
    }
    cJSON_free(body);
    curl_slist_free_all(h);
}

static void mcp_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    mcp_call_t *c = job->ex_state;
    if (!c)
        return;
    job->ex_state = NULL;
    if (c->scall) {
        wrk_stdiopool_cancel(c->m->stdio, c->scall,
                             c->job->cancelled ? "cancelled by the caller" : "timeout");
        c->scall = NULL;
    } else if (c->req) {
        wrk_httpexec_req_cancel(c->m->http, c->req);
        c->req = NULL;
        if (!c->up->modern && how != WRK_CANCEL_ABORT)
            send_cancelled(c);
    } else if (c->up) {
        for (mcp_call_t **pp = &c->up->waiters; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
    }
    call_end(c, NULL);
}

const wrk_executor_t wrk_mcpexec_executor = {
    .type = "mcp",
    .start = mcp_start,
    .cancel = mcp_cancel,
};
