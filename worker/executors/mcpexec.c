#include "mcpexec.h"

#include "err.h"
#include "job.h"
#include "log.h"
#include "mcpmethod.h"
#include "mcpsubs.h"
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
#define MCP_TASK_ID_MAX 256
#define MCP_POLL_DEFAULT_MS 1000 /* an upstream task that suggests no poll interval */
#define MCP_POLL_MIN_MS 50       /* nor faster than this, whatever it suggests */
#define MCP_POLL_MAX_MS 30000
#define MCP_TOOL_PAGES_MAX 20     /* tools/list pages read to learn which tools run as tasks */
#define MCP_EV_BACKOFF_MIN_MS 500 /* re-opening a dropped notification stream */
#define MCP_EV_BACKOFF_MAX_MS 30000
#define MCP_TASKS_EXT "io.modelcontextprotocol/tasks"

typedef enum {
    UP_NEW = 0,
    UP_DISCOVER,
    UP_INITIALIZE,
    UP_INITIALIZED,
    UP_TOOLS, /* legacy with tasks: learning which tools run as tasks (tools/list) */
    UP_READY
} up_state_t;

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
    int tasks;         /* the upstream runs tools/call as tasks (its capabilities say so) */
    cJSON *task_tools; /* legacy: names of its tools whose taskSupport is required/optional */
    int tool_pages;
    long neg_id;
    wrk_httpexec_req_t *req; /* the handshake request in flight */
    mcp_call_t *waiters;     /* calls waiting for the handshake */
    cJSON *info;             /* what the handshake told (wrk_mcpmethod_info), for mcpq/catalog */
    /* The notification stream for resource subscriptions ("Resource subscriptions" in
     * docs/executors.md): a GET stream in the session (legacy) or subscriptions/listen. */
    wrk_httpexec_req_t *ev_req;
    mcpw_reader_t ev_rd;
    long ev_id;                            /* subscriptions/listen's request id */
    int ev_open;                           /* the stream is open (acknowledged) */
    char ev_session[WRK_HTTP_SESSION_MAX]; /* legacy: the session the uris were subscribed in */
    int64_t ev_backoff_ms;
    wrk_loop_timer_t ev_retry;
    mcp_call_t *ev_waiters; /* subscribe jobs waiting for the stream to open */
    struct mcp_up *next;
} mcp_up_t;

struct wrk_mcpexec {
    wrk_httpexec_t *http;
    wrk_rt_t *rt; /* the worker's runtime (loop, store), known from the first job */
    wrk_mcpsubs_t *subs;
    mcp_up_t *ups;
    long next_id;
    wrk_stdiopool_t *stdio; /* stdio upstreams, made on the first stdio call */
};

/* What the request in flight asks: the call itself, or a step of following its task. */
typedef enum { CALL_JOB = 0, CALL_TASK_GET, CALL_TASK_RESULT } call_step_t;

struct mcp_call {
    wrk_job_t *job;
    wrk_mcpexec_t *m;
    mcp_up_t *up;
    wrk_httpexec_req_t *req;
    mcpw_reader_t rd;            /* the answer read as it arrives (live while req is) */
    wrk_stdiopool_call_t *scall; /* a stdio upstream's call in flight (up is NULL) */
    char *skey;                  /* a stdio upstream's group key (wrk_stdiopool_key), owned */
    const char *where;           /* for the log: the upstream's host, or the stdio command */
    long id;
    call_step_t step;
    int retried;                        /* re-initialized once after a 404 */
    int as_task;                        /* legacy: tools/call sent with params.task */
    char session[WRK_HTTP_SESSION_MAX]; /* the session the call was sent in */
    char task_id[MCP_TASK_ID_MAX];      /* the upstream task being followed, "" when none */
    char task_status[32];
    char task_note[MCP_MESSAGE_MAX]; /* the status and message last sent as progress */
    double task_steps;               /* status changes seen, the progress forwarded */
    wrk_loop_timer_t poll;
    int cat_started; /* mcpq/catalog: cat holds the lists read so far */
    int cat_barrier; /* mcpq/catalog of a stdio upstream: ping sent first */
    wrk_mcpmethod_catalog_t cat;
    mcp_call_t *next; /* in up->waiters */
};

wrk_mcpexec_t *wrk_mcpexec_new(wrk_httpexec_t *h)
{
    wrk_mcpexec_t *m = calloc(1, sizeof(*m));
    if (m && !(m->subs = wrk_mcpsubs_new())) {
        free(m);
        return NULL;
    }
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
        wrk_httpexec_req_cancel(m->http, up->ev_req);
        mcpw_reader_cleanup(&up->ev_rd);
        if (m->rt)
            wrk_loop_timer_stop(m->rt->loop, &up->ev_retry);
        free(up->key);
        free(up->url);
        cJSON_Delete(up->headers);
        cJSON_Delete(up->task_tools);
        cJSON_Delete(up->info);
        free(up);
        up = next;
    }
    wrk_mcpsubs_free(m->subs);
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

static void ev_retry_fire(wrk_loop_timer_t *t, void *arg);

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
    wrk_loop_timer_init(&up->ev_retry, ev_retry_fire, up);
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
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    if (!meta)
        meta = cJSON_AddObjectToObject(params, "_meta");
    cJSON_AddStringToObject(meta, MCPW_META_VERSION, MCPW_MODERN_VERSION);
    if (!cJSON_GetObjectItemCaseSensitive(meta, MCPW_META_CLIENT_CAPS)) /* call_task_opt_in's */
        cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_CAPS);
    cJSON *ci = cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_INFO);
    cJSON_AddStringToObject(ci, "name", "mcpq-worker");
    cJSON_AddStringToObject(ci, "version", "1.0.0");
    return params;
}

/* A message to up that nobody waits for (best effort): a request of method with params
 * (taken over), or with id < 0 a notification; legacy ones in session (may be NULL), a
 * 2026-07-28 one with the _meta envelope and name as Mcp-Name. */
static void up_fire(mcp_up_t *up, long id, const char *method, const char *name, cJSON *params,
                    const char *session, const char *traceparent, int64_t timeout_ms)
{
    if (up->modern)
        modern_meta(params);
    size_t len = 0;
    char *body = rpc_body(id, method, params, &len);
    struct curl_slist *h =
        up_headers(up, up->modern, up->modern ? MCPW_MODERN_VERSION : up->version, method, name,
                   up->modern ? NULL : session, traceparent);
    if (body && h) {
        wrk_httpexec_post(up->m->http, up->url, h, body, len, timeout_ms, NULL, NULL);
        h = NULL;
    }
    cJSON_free(body);
    curl_slist_free_all(h);
}

/* ---- calls ---- */

static void call_send(mcp_call_t *c);
static void call_answer(mcp_call_t *c, cJSON *r);
static void call_done(const wrk_httpexec_resp_t *resp, void *arg);
static void stdio_send(mcp_call_t *c, wrk_mcpmethod_req_t *rq);
static void up_negotiate(wrk_mcpexec_t *m, mcp_up_t *up);
static int subs_local(mcp_call_t *c);
static void subs_answered(mcp_call_t *c);

static void call_free(mcp_call_t *c)
{
    wrk_loop_timer_stop(c->job->rt->loop, &c->poll);
    mcpw_reader_cleanup(&c->rd);
    free(c->skey);
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

/* A notification of the upstream on the call's stream, forwarded to the job's reply stream
 * as it arrives: notifications/progress of the call's token (the job id) as a progress entry,
 * notifications/message as a log entry. Others are dropped. */
static void call_note(const cJSON *note, void *arg)
{
    mcp_call_t *c = arg;
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(note, "method"));
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(note, "params");
    if (method && strcmp(method, "notifications/message") == 0) {
        const char *level = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "level"));
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(p, "data");
        if (!level || !data)
            return;
        cJSON *entry = cJSON_CreateObject();
        cJSON_AddStringToObject(entry, "level", level);
        cJSON_AddItemToObject(entry, "data", cJSON_Duplicate(data, 1));
        wrk_job_notify(c->job, "log", entry);
        cJSON_Delete(entry);
        return;
    }
    if (!method || strcmp(method, "notifications/progress") != 0)
        return;
    const cJSON *token = cJSON_GetObjectItemCaseSensitive(p, "progressToken");
    if (cJSON_IsString(token) && strcmp(token->valuestring, c->job->env.job_id) != 0)
        return; /* another request's */
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

/* Each piece of an SSE answer as it arrives: notifications go out at once (call_note); the
 * transfer stops when the response has come. */
static int call_chunk(const char *data, size_t len, void *arg)
{
    mcp_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    int rc = mcpw_reader_feed(&c->rd, data, len);
    wrk_job_log_leave(&saved);
    return rc;
}

/* Sends method with params (taken over) upstream for call c, in its session; the answer
 * comes to call_done. name: the Mcp-Name of a 2026-07-28 request (may be NULL). */
static void call_post(mcp_call_t *c, const char *method, const char *name, cJSON *params)
{
    mcp_up_t *up = c->up;
    wrk_job_t *job = c->job;
    c->id = ++c->m->next_id;
    snprintf(c->session, sizeof(c->session), "%s", up->modern ? "" : up->session);
    if (up->modern)
        modern_meta(params);
    size_t len = 0;
    char *body = rpc_body(c->id, method, params, &len);
    struct curl_slist *h =
        up_headers(up, up->modern, up->modern ? MCPW_MODERN_VERSION : up->version, method, name,
                   c->session, job->env.traceparent);
    if (!body || !h) {
        cJSON_free(body);
        curl_slist_free_all(h);
        call_end_error(c, -32603, "out of memory");
        return;
    }
    mcpw_reader_cleanup(&c->rd);
    mcpw_reader_init(&c->rd, c->id, wrk_httpexec_max_output(c->m->http), call_note, c);
    c->req = wrk_httpexec_stream(c->m->http, up->url, h, body, len,
                                 wrk_job_remaining_ms(job) + MCP_TIMEOUT_SLACK_MS, call_chunk,
                                 call_done, c);
    cJSON_free(body);
    if (!c->req)
        call_end_error(c, -32603, "cannot start the request to the upstream MCP server");
}

/* ---- an upstream task followed to its end ---- */

static int task_terminal(const char *status)
{
    return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "cancelled") == 0;
}

static void task_poll_fire(wrk_loop_timer_t *t, void *arg)
{
    mcp_call_t *c = arg;
    (void)t;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "taskId", c->task_id);
    c->step = CALL_TASK_GET;
    call_post(c, "tasks/get", c->task_id, p);
    wrk_job_log_leave(&saved);
}

/* The task's state t (a Task: taskId, status, statusMessage, pollInterval[Ms]) as the upstream
 * reported it: a new status or message goes out as progress (the task's status messages are
 * the call's progress); a terminal one ends the call (a 2026-07-28 task carries its result
 * or error, a 2025-11-25 one is fetched with tasks/result); else the next tasks/get is
 * scheduled after the upstream's poll interval, within the job's deadline. Takes r, the
 * response t is part of. */
static void task_state(mcp_call_t *c, cJSON *r, const cJSON *t)
{
    mcp_up_t *up = c->up;
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"));
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "statusMessage"));
    if (!status) {
        cJSON_Delete(r);
        call_end(c, wrk_job_error_hidden(c->job, up->host,
                                         "the upstream MCP server answered a task without a "
                                         "status"));
        return;
    }
    char text[MCP_MESSAGE_MAX];
    snprintf(text, sizeof(text), "%s%s%s", status, msg ? ": " : "", msg ? msg : "");
    if (strcmp(text, c->task_note) != 0) {
        cJSON *data = cJSON_CreateObject();
        cJSON_AddNumberToObject(data, "progress", ++c->task_steps);
        cJSON_AddStringToObject(data, "message", text);
        wrk_job_notify(c->job, "progress", data);
        cJSON_Delete(data);
        snprintf(c->task_note, sizeof(c->task_note), "%s", text);
    }
    /* status and msg live in r, which is freed below */
    snprintf(c->task_status, sizeof(c->task_status), "%s", status);
    if (strcmp(c->task_status, "input_required") == 0) {
        cJSON_Delete(r);
        call_end(c, wrk_job_error_hidden(c->job, up->host,
                                         "the upstream MCP server's task asks for input, which "
                                         "the mcp executor cannot give"));
        return;
    }
    if (strcmp(c->task_status, "cancelled") == 0) {
        cJSON_Delete(r);
        call_end(c, wrk_job_error_hidden(c->job, up->host,
                                         "the upstream MCP server cancelled the task"));
        return;
    }
    if (task_terminal(c->task_status) && up->modern) {
        /* 2026-07-28: the terminal task carries the call's result or error */
        cJSON *out = cJSON_CreateObject();
        cJSON *res = cJSON_DetachItemFromObjectCaseSensitive((cJSON *)t, "result");
        cJSON *err = cJSON_DetachItemFromObjectCaseSensitive((cJSON *)t, "error");
        cJSON_Delete(r);
        if (err)
            cJSON_AddItemToObject(out, "error", err);
        if (res)
            cJSON_AddItemToObject(out, "result", res);
        else if (!err)
            cJSON_AddObjectToObject(out, "result"); /* not a CallToolResult: refused below */
        c->step = CALL_TASK_RESULT;
        call_answer(c, out);
        return;
    }
    const cJSON *iv =
        cJSON_GetObjectItemCaseSensitive(t, up->modern ? "pollIntervalMs" : "pollInterval");
    int64_t wait = cJSON_IsNumber(iv) ? (int64_t)iv->valuedouble : MCP_POLL_DEFAULT_MS;
    wait = wait < MCP_POLL_MIN_MS   ? MCP_POLL_MIN_MS
           : wait > MCP_POLL_MAX_MS ? MCP_POLL_MAX_MS
                                    : wait;
    cJSON_Delete(r);
    if (task_terminal(c->task_status)) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "taskId", c->task_id);
        c->step = CALL_TASK_RESULT;
        call_post(c, "tasks/result", NULL, p);
        return;
    }
    int64_t left = wrk_job_remaining_ms(c->job);
    if (wait > left)
        wait = left; /* the deadline timer ends the job; a last look costs nothing */
    if (wrk_loop_timer_start(c->job->rt->loop, &c->poll, wait) < 0)
        call_end_error(c, -32603, "out of memory");
}

/* A CreateTaskResult in result (2026-07-28: resultType "task" with the Task's members;
 * 2025-11-25: {"task": Task}): the task's id is kept and the task followed. 1 when result
 * was one (r taken), else 0. */
static int task_created(mcp_call_t *c, cJSON *r, const cJSON *result)
{
    const char *rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "resultType"));
    const cJSON *t = NULL;
    if (c->up->modern && rt && strcmp(rt, "task") == 0)
        t = result;
    else if (!c->up->modern && !cJSON_GetObjectItemCaseSensitive(result, "content"))
        t = cJSON_GetObjectItemCaseSensitive(result, "task");
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "taskId"));
    if (!id)
        return 0;
    if (!id[0] || strlen(id) >= sizeof(c->task_id)) {
        cJSON_Delete(r);
        call_end(c, wrk_job_error_hidden(c->job, c->up->host,
                                         "the upstream MCP server answered a task id this "
                                         "gateway cannot follow"));
        return 1;
    }
    snprintf(c->task_id, sizeof(c->task_id), "%s", id);
    log_event(LOG_INFO, "following the upstream MCP server's task", "job_id", c->job->env.job_id,
              "upstream", c->up->host, "task_id", c->task_id, (char *)NULL);
    task_state(c, r, t);
    return 1;
}

/* tasks/cancel for the task c follows, fire-and-forget (cancel of the job). */
static void task_cancel(mcp_call_t *c)
{
    mcp_up_t *up = c->up;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "taskId", c->task_id);
    up_fire(up, ++c->m->next_id, "tasks/cancel", c->task_id, p, c->session, c->job->env.traceparent,
            MCP_CANCEL_NOTE_TIMEOUT_MS);
    log_event(LOG_INFO, "cancelling the upstream MCP server's task", "job_id", c->job->env.job_id,
              "upstream", up->host, "task_id", c->task_id, (char *)NULL);
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
    if (method == WRK_METHOD_SUBSCRIBE || method == WRK_METHOD_UNSUBSCRIBE) {
        subs_answered(c);
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
 * error. A CreateTaskResult is followed instead. */
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
        if (icode == -32601 && c->step == CALL_JOB && c->up && !c->up->modern && c->up->tasks &&
            !c->as_task) {
            /* 2025-11-25: a tool whose taskSupport is "required" answers a plain call with
             * -32601 (basic/utilities/tasks.mdx, "Tool-Level Negotiation"): call it as a task */
            c->as_task = 1;
            call_send(c);
            return;
        }
        if (icode == -32602 && c->step == CALL_JOB) {
            call_end_error(c, -32602, text);
            return;
        }
        call_end(c, wrk_job_error_hidden(c->job, c->where,
                                         "the upstream MCP server answered error %d: %s", icode,
                                         text));
        return;
    }
    if (c->step == CALL_TASK_GET) {
        task_state(c, r, result);
        return;
    }
    if (c->step == CALL_JOB && c->up && task_created(c, r, result))
        return;
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
    c->task_id[0] = '\0';
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
    if (resp->status == 404 && !up->modern && c->session[0] && !c->retried && c->step == CALL_JOB) {
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
    cJSON *r = resp->streamed
                   ? mcpw_reader_take(&c->rd)
                   : mcpw_response(resp->content_type, resp->body, resp->len, c->id, call_note, c);
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

/* A tools/call: a 2026-07-28 upstream that runs tasks is told this client follows them
 * (the extension in _meta's client capabilities); a 2025-11-25 one gets params.task when the
 * tool needs it (as_task: its taskSupport, or a -32601 to a plain call). */
static void call_task_opt_in(mcp_call_t *c, cJSON *params, cJSON *meta, const char *tool)
{
    mcp_up_t *up = c->up;
    if (up->modern) {
        if (!up->tasks)
            return;
        cJSON *caps = cJSON_GetObjectItemCaseSensitive(meta, MCPW_META_CLIENT_CAPS);
        if (!caps)
            caps = cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_CAPS);
        cJSON *ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
        if (!ext)
            ext = cJSON_AddObjectToObject(caps, "extensions");
        if (!cJSON_GetObjectItemCaseSensitive(ext, MCP_TASKS_EXT))
            cJSON_AddObjectToObject(ext, MCP_TASKS_EXT);
        return;
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, up->task_tools)
    {
        if (tool && strcmp(t->valuestring, tool) == 0)
            c->as_task = 1;
    }
    if (c->as_task)
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(params, "task"), "ttl",
                                (double)(wrk_job_remaining_ms(c->job) + MCP_POLL_MAX_MS));
}

/* The job's request upstream (or the catalog's next page), its progress token the job id. */
static void call_send(mcp_call_t *c)
{
    wrk_job_t *job = c->job;
    wrk_mcpmethod_req_t rq;
    if (subs_local(c))
        return;
    if (call_request(c, &rq) < 0) {
        call_end_error(c, -32603, "out of memory");
        return;
    }
    if (!rq.method) {
        call_end_result(c, wrk_mcpmethod_catalog_take(&c->cat));
        return;
    }
    if (!c->up) {
        stdio_send(c, &rq);
        return;
    }
    cJSON *params = rq.params;
    if (job->env.method_id != WRK_METHOD_CATALOG) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
        if (!meta)
            meta = cJSON_AddObjectToObject(params, "_meta");
        cJSON_AddStringToObject(meta, "progressToken", job->env.job_id);
        if (job->env.method_id == WRK_METHOD_CALL)
            call_task_opt_in(c, params, meta, rq.name);
    }
    c->step = CALL_JOB;
    call_post(c, rq.method, rq.name, params);
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

/* 1 when a handshake response's capabilities say the upstream may answer tools/call with a
 * task: 2026-07-28 (server/discover) extensions["io.modelcontextprotocol/tasks"], 2025-11-25
 * (initialize) tasks.requests.tools.call. */
static int up_runs_tasks(const cJSON *r, int modern)
{
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r, "result"), "capabilities");
    if (modern)
        return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(caps, "extensions"), MCP_TASKS_EXT));
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(caps, "tasks");
    t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "requests"), "tools");
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "call"));
}

/* A page of the legacy upstream's tools/list (r owned): the names of the tools whose
 * execution.taskSupport is "required" or "optional" are kept; the next page is asked for,
 * or the handshake ends. */
static void up_tools_page(wrk_mcpexec_t *m, mcp_up_t *up, cJSON *r)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r, "result");
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(res, "tools"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        const char *ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(t, "execution"), "taskSupport"));
        if (name && ts && (strcmp(ts, "required") == 0 || strcmp(ts, "optional") == 0))
            cJSON_AddItemToArray(up->task_tools, cJSON_CreateString(name));
    }
    const char *next = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "nextCursor"));
    if (next && next[0] && ++up->tool_pages < MCP_TOOL_PAGES_MAX) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "cursor", next);
        cJSON_Delete(r);
        up_send(m, up, "tools/list", p, 0);
        return;
    }
    cJSON_Delete(r);
    up_ready(m, up, NULL);
}

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
        up->tasks = modern && up_runs_tasks(r, 1);
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
        up->tasks = up_runs_tasks(r, 0);
        up_keep_info(up, r, v);
        cJSON_Delete(r);
        up->version = v;
        snprintf(up->session, sizeof(up->session), "%s", resp->session_id);
        up->state = UP_INITIALIZED;
        up_send(m, up, "notifications/initialized", NULL, 1);
        return;
    }
    if (up->state == UP_TOOLS) {
        up_tools_page(m, up, r);
        return;
    }
    /* notifications/initialized: 202 expected; an upstream that refuses it may still serve
     * calls, and a call's own answer will tell. A 2025-11-25 upstream that runs tasks is asked
     * which tools need them (tools/list: execution.taskSupport, basic/utilities/tasks.mdx
     * "Tool-Level Negotiation"); a failed listing only means calls go without. */
    if (up->tasks) {
        cJSON_Delete(up->task_tools);
        up->task_tools = cJSON_CreateArray();
        up->tool_pages = 0;
        up->state = UP_TOOLS;
        up_send(m, up, "tools/list", cJSON_CreateObject(), 0);
        return;
    }
    up_ready(m, up, NULL);
}

static void up_send(wrk_mcpexec_t *m, mcp_up_t *up, const char *method, cJSON *params, int notify)
{
    int modern = up->state == UP_DISCOVER;
    int in_session = up->state == UP_INITIALIZED || up->state == UP_TOOLS;
    const char *version = modern ? MCPW_MODERN_VERSION : in_session ? up->version : NULL;
    up->neg_id = notify ? -1 : ++m->next_id;
    size_t len = 0;
    char *body = rpc_body(up->neg_id, method, params, &len);
    struct curl_slist *h =
        up_headers(up, modern, version, method, NULL, in_session ? up->session : NULL, NULL);
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

/* ---- resource subscriptions: the upstream's notification stream ---- */

static void ev_start(mcp_up_t *up);

/* Ends the subscribe jobs waiting for the stream: {} once it is open, else an error. */
static void ev_release(mcp_up_t *up, const char *failure)
{
    mcp_call_t *c = up->ev_waiters;
    up->ev_waiters = NULL;
    while (c) {
        mcp_call_t *next = c->next;
        c->next = NULL;
        if (failure)
            call_end(c, wrk_job_error_hidden(c->job, up->host, "%s", failure));
        else
            call_end_result(c, cJSON_CreateObject());
        c = next;
    }
}

static void ev_opened(mcp_up_t *up)
{
    if (up->ev_open)
        return;
    up->ev_open = 1;
    up->ev_backoff_ms = 0;
    log_event(LOG_INFO, "upstream MCP notification stream open", "upstream", up->host,
              (char *)NULL);
    ev_release(up, NULL);
}

/* A message on the stream: a resource update goes to its subscribers; a 2026-07-28 stream
 * is open once the upstream acknowledged the subscription. */
static void ev_note(const cJSON *note, void *arg)
{
    mcp_up_t *up = arg;
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(note, "method"));
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(note, "params");
    if (strcmp(method, "notifications/resources/updated") == 0) {
        const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "uri"));
        if (uri)
            wrk_mcpexec_resource_updated(up->m, up->key, uri);
    } else if (up->modern && strcmp(method, "notifications/subscriptions/acknowledged") == 0) {
        ev_opened(up);
    }
}

static int ev_chunk(const char *data, size_t len, void *arg)
{
    mcp_up_t *up = arg;
    if (!data) { /* the headers of a 2xx event stream */
        if (!up->modern)
            ev_opened(up);
        return 0;
    }
    return mcpw_reader_feed(&up->ev_rd, data, len); /* 1: listen's response, a graceful end */
}

/* The stream ended (dropped, refused, or ended by the upstream): re-opened after a backoff
 * while subscriptions remain; a legacy session the upstream forgot (404) is negotiated
 * again first. */
static void ev_done(const wrk_httpexec_resp_t *resp, void *arg)
{
    mcp_up_t *up = arg;
    wrk_mcpexec_t *m = up->m;
    int was_open = up->ev_open;
    up->ev_req = NULL;
    up->ev_open = 0;
    mcpw_reader_cleanup(&up->ev_rd);
    char status[24];
    snprintf(status, sizeof(status), "%ld", resp->status);
    log_event(LOG_WARN, "upstream MCP notification stream ended", "upstream", up->host, "status",
              status, "error", resp->code == CURLE_OK ? NULL : resp->error, (char *)NULL);
    if (resp->code == CURLE_OK && resp->status == 404 && !up->modern && up->state == UP_READY &&
        strcmp(up->session, up->ev_session) == 0) {
        up->state = UP_NEW; /* the session expired */
        up->session[0] = '\0';
    }
    if (!was_open)
        ev_release(up, "the upstream MCP server's notification stream could not be opened");
    if (wrk_mcpsubs_count(m->subs, up->key) == 0)
        return;
    up->ev_backoff_ms = was_open || !up->ev_backoff_ms                  ? MCP_EV_BACKOFF_MIN_MS
                        : up->ev_backoff_ms * 2 > MCP_EV_BACKOFF_MAX_MS ? MCP_EV_BACKOFF_MAX_MS
                                                                        : up->ev_backoff_ms * 2;
    wrk_loop_timer_start(m->rt->loop, &up->ev_retry, up->ev_backoff_ms);
}

static void ev_retry_fire(wrk_loop_timer_t *t, void *arg)
{
    mcp_up_t *up = arg;
    if (up->ev_req || wrk_mcpsubs_count(up->m->subs, up->key) == 0)
        return;
    if (up->state != UP_READY) {
        if (up->state == UP_NEW)
            up_negotiate(up->m, up);
        wrk_loop_timer_start(up->m->rt->loop, t, up->ev_backoff_ms);
        return;
    }
    ev_start(up);
}

/* A legacy upstream's new session knows none of the subscriptions: resources/subscribe each
 * uri again, fire-and-forget. */
static void ev_resubscribe(mcp_up_t *up, const cJSON *uris)
{
    const cJSON *u;
    cJSON_ArrayForEach(u, uris)
    {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "uri", u->valuestring);
        up_fire(up, ++up->m->next_id, "resources/subscribe", NULL, p, up->session, NULL,
                MCP_NEGOTIATE_TIMEOUT_MS);
    }
}

static void ev_stop(mcp_up_t *up)
{
    wrk_httpexec_req_cancel(up->m->http, up->ev_req);
    up->ev_req = NULL;
    up->ev_open = 0;
    mcpw_reader_cleanup(&up->ev_rd);
    wrk_loop_timer_stop(up->m->rt->loop, &up->ev_retry);
}

/* (Re)opens the stream for the uris subscribed at up: legacy, a GET in the session; 2026-07-28,
 * subscriptions/listen naming them (basic/patterns/subscriptions.mdx). No uri left: closed. */
static void ev_start(mcp_up_t *up)
{
    wrk_mcpexec_t *m = up->m;
    ev_stop(up);
    cJSON *uris = wrk_mcpsubs_uris(m->subs, up->key);
    if (!uris || cJSON_GetArraySize(uris) == 0) {
        cJSON_Delete(uris);
        ev_release(up, uris ? NULL : "out of memory");
        return;
    }
    char *body = NULL;
    size_t len = 0;
    struct curl_slist *h;
    if (up->modern) {
        up->ev_id = ++m->next_id;
        cJSON *p = modern_meta(cJSON_CreateObject());
        cJSON_AddItemToObject(cJSON_AddObjectToObject(p, "notifications"), "resourceSubscriptions",
                              uris);
        body = rpc_body(up->ev_id, "subscriptions/listen", p, &len);
        h = up_headers(up, 1, MCPW_MODERN_VERSION, "subscriptions/listen", NULL, NULL, NULL);
    } else {
        up->ev_id = -1;
        if (strcmp(up->ev_session, up->session) != 0)
            ev_resubscribe(up, uris);
        cJSON_Delete(uris);
        snprintf(up->ev_session, sizeof(up->ev_session), "%s", up->session);
        h = up_headers(up, 0, up->version, NULL, NULL, up->session, NULL);
    }
    mcpw_reader_init(&up->ev_rd, up->ev_id, wrk_httpexec_max_output(m->http), ev_note, up);
    if (h && (body || !up->modern))
        up->ev_req = wrk_httpexec_stream(m->http, up->url, h, body, len, 0, ev_chunk, ev_done, up);
    else
        curl_slist_free_all(h);
    cJSON_free(body);
    if (!up->ev_req) {
        log_event(LOG_ERROR, "cannot open the upstream MCP notification stream", "upstream",
                  up->host, (char *)NULL);
        ev_release(up, "the upstream MCP server's notification stream could not be opened");
    }
}

/* c waits until up's stream is open (at once when it is); the stream is (re)started when
 * restart is set or none runs. */
static void ev_wait(mcp_call_t *c, int restart)
{
    mcp_up_t *up = c->up;
    c->next = up->ev_waiters;
    up->ev_waiters = c;
    if (restart || !up->ev_req)
        ev_start(up);
    else if (up->ev_open)
        ev_release(up, NULL);
}

/* The job's (server, uri) of a resources/subscribe or /unsubscribe job and the key its
 * upstream's subscriptions are kept under (an HTTP upstream's, or a stdio group's); 0 when it
 * is not one or lacks them (then it goes upstream as it is, and the upstream answers). */
static int subs_of(const mcp_call_t *c, const char **key, const char **server, const char **uri)
{
    const wrk_envelope_t *env = &c->job->env;
    *key = c->up ? c->up->key : c->skey;
    if (env->method_id != WRK_METHOD_SUBSCRIBE && env->method_id != WRK_METHOD_UNSUBSCRIBE)
        return 0;
    *server = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env->root, "server"));
    *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env->arguments, "uri"));
    return *key && *server && *uri && env->tenant;
}

/* Keeps the job's (tenant, server) as a subscriber of uri at key: wrk_mcpsubs_add's 1 or 0,
 * or < 0 with c ended (too many subscriptions, ENOMEM). */
static int subs_add(mcp_call_t *c, const char *key, const char *server, const char *uri)
{
    int rc = wrk_mcpsubs_add(c->m->subs, key, c->job->env.tenant, server, uri);
    if (rc < 0)
        call_end_error(c, -32603,
                       rc == MCPQ_ETOOBIG ? "too many resource subscriptions on this worker"
                                          : "out of memory");
    return rc;
}

/* A subscribe or unsubscribe job this worker answers without asking the upstream: every
 * subscription of a 2026-07-28 upstream (it has no resources/subscribe: its
 * subscriptions/listen filter changes), and an unsubscribe while other (tenant, server)s
 * still want the uri. 1 when c was taken. */
static int subs_local(mcp_call_t *c)
{
    const char *key, *server, *uri;
    if (!subs_of(c, &key, &server, &uri))
        return 0;
    mcp_up_t *up = c->up;
    wrk_mcpexec_t *m = c->m;
    const char *tenant = c->job->env.tenant;
    int modern = up && up->modern;
    if (c->job->env.method_id == WRK_METHOD_UNSUBSCRIBE) {
        if (!modern && wrk_mcpsubs_others(m->subs, key, tenant, server, uri) == 0)
            return 0; /* the last one: the upstream unsubscribes too (subs_answered) */
        size_t left = wrk_mcpsubs_remove(m->subs, key, tenant, server, uri);
        if (modern && left == 0) {
            if (wrk_mcpsubs_count(m->subs, key) == 0)
                ev_stop(up);
            else
                ev_start(up); /* a narrower filter */
        }
        call_end_result(c, cJSON_CreateObject());
        return 1;
    }
    if (!modern)
        return 0; /* resources/subscribe goes upstream (subs_answered) */
    int rc = subs_add(c, key, server, uri);
    if (rc < 0)
        return 1;
    ev_wait(c, rc == 1);
    return 1;
}

/* A 2025 HTTP or a stdio upstream accepted the subscribe or unsubscribe job c: its subscriber
 * is kept (and c answered once the HTTP stream is open) or dropped (the stream closed with
 * the last one). */
static void subs_answered(mcp_call_t *c)
{
    const char *key, *server, *uri;
    if (!subs_of(c, &key, &server, &uri)) {
        call_end_result(c, cJSON_CreateObject());
        return;
    }
    mcp_up_t *up = c->up;
    wrk_mcpexec_t *m = c->m;
    const char *tenant = c->job->env.tenant;
    if (c->job->env.method_id == WRK_METHOD_UNSUBSCRIBE) {
        wrk_mcpsubs_remove(m->subs, key, tenant, server, uri);
        if (up && wrk_mcpsubs_count(m->subs, key) == 0)
            ev_stop(up);
        call_end_result(c, cJSON_CreateObject());
        return;
    }
    if (subs_add(c, key, server, uri) < 0)
        return;
    if (!up) { /* stdio: the server's stdout is the stream (stdio_updated) */
        call_end_result(c, cJSON_CreateObject());
        return;
    }
    if (!up->ev_req)
        snprintf(up->ev_session, sizeof(up->ev_session), "%s", c->session);
    ev_wait(c, 0);
}

void wrk_mcpexec_resource_updated(wrk_mcpexec_t *m, const char *upstream, const char *uri)
{
    if (m->rt)
        wrk_mcpsubs_updated(m->subs, m->rt->store, upstream, uri);
}

/* ---- the stdio transport (worker/executors/stdiopool.h) ---- */

static void stdio_done(cJSON *response, const char *failure, const char *detail, void *arg);

/* Sends rq (its params taken over) to a process of c's stdio upstream; ends c when the pool
 * refuses it (a malformed executor, a full queue). Its notifications go to call_note as an
 * HTTP upstream's do. */
static void stdio_send(mcp_call_t *c, wrk_mcpmethod_req_t *rq)
{
    char why[300];
    c->scall = wrk_stdiopool_call(c->m->stdio, c->job->env.executor, rq->method, rq->params,
                                  c->job->env.job_id, call_note, stdio_done, c, why, sizeof(why));
    if (!c->scall)
        call_end(c, wrk_output_errorf("%s", why));
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

/* notifications/resources/updated from a stdio upstream's process (group key). */
static void stdio_updated(const char *key, const char *uri, void *arg)
{
    wrk_mcpexec_resource_updated(arg, key, uri);
}

static int stdio_start(wrk_job_t *job)
{
    wrk_mcpexec_t *m = job->rt->mcp;
    const cJSON *ex = job->env.executor;
    if (!m)
        return -1;
    if (!m->stdio) {
        if (!(m->stdio = wrk_stdiopool_new(job->rt->loop, job->rt->settings)))
            return -1;
        wrk_stdiopool_on_updated(m->stdio, stdio_updated, m);
    }
    mcp_call_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    c->job = job;
    c->m = m;
    m->rt = job->rt;
    wrk_loop_timer_init(&c->poll, task_poll_fire, c);
    c->where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "command"));
    if (job->env.method_id == WRK_METHOD_SUBSCRIBE || job->env.method_id == WRK_METHOD_UNSUBSCRIBE)
        c->skey = wrk_stdiopool_key(ex); /* NULL: not kept, the server answers as it is */
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
    m->rt = job->rt;
    wrk_loop_timer_init(&c->poll, task_poll_fire, c);
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
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "requestId", (double)c->id);
    cJSON_AddStringToObject(p, "reason", c->job->cancelled ? "cancelled by the caller" : "timeout");
    up_fire(c->up, -1, "notifications/cancelled", NULL, p, c->session, c->job->env.traceparent,
            MCP_CANCEL_NOTE_TIMEOUT_MS);
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
        if (!c->up->modern && !c->task_id[0] && how != WRK_CANCEL_ABORT)
            send_cancelled(c);
    } else if (c->up) {
        for (mcp_call_t **pp = &c->up->waiters; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
        for (mcp_call_t **pp = &c->up->ev_waiters; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
    }
    /* an upstream task outlives its request: cancel it too (also when this worker stops and
     * the job goes to another one, which starts its own) */
    if (c->task_id[0])
        task_cancel(c);
    call_end(c, NULL);
}

const wrk_executor_t wrk_mcpexec_executor = {
    .type = "mcp",
    .start = mcp_start,
    .cancel = mcp_cancel,
};
