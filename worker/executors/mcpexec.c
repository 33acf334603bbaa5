#include "mcpexec.h"

#include "ask.h"
#include "err.h"
#include "log.h"
#include "mcpup.h"
#include "output.h"
#include "upnotify.h"
#include "uptask.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MCP_TIMEOUT_SLACK_MS 500 /* the job's deadline timer fires first */
#define MCP_TOOL_PAGES_MAX 20    /* tools/list pages read to learn which tools run as tasks */

static void call_post(wrk_mcpup_call_t *c, const char *method, const char *name, cJSON *params);
static void call_answer(wrk_mcpup_call_t *c, cJSON *r);
static void call_end(wrk_mcpup_call_t *c, cJSON *result);
static void call_end_result(wrk_mcpup_call_t *c, cJSON *result);
static void call_end_error(wrk_mcpup_call_t *c, int code, const char *message);
static void up_negotiate(wrk_mcpexec_t *m, wrk_mcpup_t *up);

/* What uptask.c and upnotify.c may do to a call or an upstream (mcpup.h). */
static const wrk_mcpup_ops_t mcp_ops = {
    .post = call_post,
    .answer = call_answer,
    .end = call_end,
    .end_result = call_end_result,
    .end_error = call_end_error,
    .negotiate = up_negotiate,
};

wrk_mcpexec_t *wrk_mcpexec_new(wrk_httpexec_t *h)
{
    wrk_mcpexec_t *m = calloc(1, sizeof(*m));
    if (m && !(m->subs = wrk_mcpsubs_new())) {
        free(m);
        return NULL;
    }
    if (m) {
        m->http = h;
        m->ops = &mcp_ops;
    }
    return m;
}

void wrk_mcpexec_free(wrk_mcpexec_t *m)
{
    if (!m)
        return;
    wrk_mcpup_t *up = m->ups;
    while (up) {
        wrk_mcpup_t *next = up->next;
        wrk_httpexec_req_cancel(m->http, up->req);
        wrk_upnotify_cleanup(up);
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

static wrk_mcpup_t *up_get(wrk_mcpexec_t *m, const char *url, const cJSON *headers)
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
    for (wrk_mcpup_t *up = m->ups; up; up = up->next)
        if (strcmp(up->key, key) == 0) {
            free(key);
            return up;
        }
    wrk_mcpup_t *up = calloc(1, sizeof(*up));
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
    wrk_upnotify_init(up);
    util_url_host(url, up->host, sizeof(up->host));
    up->next = m->ups;
    m->ups = up;
    return up;
}

/* ---- calls ---- */

static void call_send(wrk_mcpup_call_t *c);
static void call_done(const wrk_httpexec_resp_t *resp, void *arg);
static void stdio_send(wrk_mcpup_call_t *c, wrk_mcpmethod_req_t *rq);

static void call_free(wrk_mcpup_call_t *c)
{
    wrk_mcprelay_free(c->ask); /* an open question is abandoned */
    cJSON_Delete(c->input_responses);
    free(c->request_state);
    wrk_loop_timer_stop(c->job->rt->loop, &c->poll);
    mcpw_reader_cleanup(&c->rd);
    free(c->skey);
    wrk_mcpmethod_catalog_cleanup(&c->cat);
    cJSON_Delete(c->stdio_info);
    free(c);
}

/* Ends c with a CallToolResult (owned; mapped for other methods, job.h). */
static void call_end(wrk_mcpup_call_t *c, cJSON *result)
{
    wrk_job_t *job = c->job;
    call_free(c);
    wrk_job_finish(job, result);
}

/* Ends c with the result of its job's method (owned), passed on as it is. */
static void call_end_result(wrk_mcpup_call_t *c, cJSON *result)
{
    wrk_job_t *job = c->job;
    call_free(c);
    wrk_job_finish_result(job, result);
}

static void call_end_error(wrk_mcpup_call_t *c, int code, const char *message)
{
    wrk_job_t *job = c->job;
    call_free(c);
    wrk_job_finish_error(job, code, message);
}

/* Starts or joins the handshake of c's upstream. */
static void call_wait(wrk_mcpup_call_t *c)
{
    wrk_mcpup_t *up = c->up;
    c->next = up->waiters;
    up->waiters = c;
    if (up->state != WRK_MCPUP_NEW)
        return;
    /* the handshake's spans go in the trace of the call that started it (up_send) */
    snprintf(up->neg_tp, sizeof(up->neg_tp), "%s",
             c->job->env.traceparent ? c->job->env.traceparent : "");
    snprintf(up->neg_ts, sizeof(up->neg_ts), "%s", c->job->tracestate);
    up_negotiate(c->m, up);
}

/* A notification of the upstream on the call's stream, forwarded to the job's reply stream
 * as it arrives: notifications/progress of the call's token (the job id) as a progress entry,
 * notifications/message as a log entry. Others are dropped. */
static void call_note(const cJSON *note, void *arg)
{
    wrk_mcpup_call_t *c = arg;
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
    wrk_mcpup_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    int rc = mcpw_reader_feed(&c->rd, data, len);
    wrk_job_log_leave(&saved);
    return rc;
}

/* ---- the upstream's questions to the client (mcprelay.h; docs/executors.md, "Questions from
 * upstreams") ---- */

/* The worker's ask API (worker/core/ask.h), as the relay takes it. */
static const wrk_mcprelay_api_t ask_api = {wrk_ask_open, wrk_ask_abandon};

/* The answer to an upstream's request (owned): POSTed in the call's session (HTTP), or
 * written to the stdin of the process that serves the call (stdio). */
static void call_reply(cJSON *response, void *arg)
{
    wrk_mcpup_call_t *c = arg;
    if (c->up) {
        wrk_mcpup_send(c->up, response, NULL, NULL, c->session, c->job->env.traceparent,
                       c->job->env.request_id, WRK_MCPUP_ANSWER_TIMEOUT_MS);
        cJSON_Delete(response);
    } else if (c->scall) {
        wrk_stdiopool_respond(c->m->stdio, c->scall, response);
    } else {
        cJSON_Delete(response); /* the call is no longer in flight: nobody waits for it */
    }
}

static void call_inputs(cJSON *responses, const char *failure, void *arg);

/* c's relay, made on its first question. NULL on ENOMEM. */
static wrk_mcprelay_t *call_ask(wrk_mcpup_call_t *c)
{
    if (!c->ask)
        c->ask = wrk_mcprelay_new(c->job, &ask_api, call_reply, call_inputs, c);
    return c->ask;
}

/* A request of the upstream (borrowed) during c: on the call's SSE stream or from the
 * process serving it. Out of memory, it goes unanswered (the upstream's own timeout ends it). */
static void call_upstream_request(const cJSON *request, void *arg)
{
    wrk_mcpup_call_t *c = arg;
    wrk_mcprelay_t *a = call_ask(c);
    if (a)
        wrk_mcprelay_request(a, request);
    else
        log_event(LOG_ERROR, "out of memory: an upstream's request goes unanswered", "job_id",
                  c->job->env.job_id, (char *)NULL);
}

/* A 2026-07-28 question's answers (owned; NULL with failure): the call goes upstream again
 * with them, or ends with an isError result naming why (the MRTR retry has no error slot). */
static void call_inputs(cJSON *responses, const char *failure, void *arg)
{
    wrk_mcpup_call_t *c = arg;
    if (!responses) {
        call_end(c, wrk_output_errorf("%s", failure));
        return;
    }
    cJSON_Delete(c->input_responses);
    c->input_responses = responses;
    call_send(c);
}

/* An InputRequiredResult (result, part of r, owned) for c's request: its inputRequests are
 * asked, then the request goes again with the answers and the upstream's requestState (at
 * once when it asked nothing), at most WRK_MCPUP_INPUT_ROUNDS_MAX times per call. */
static void call_input_required(wrk_mcpup_call_t *c, cJSON *r, const cJSON *result)
{
    const cJSON *ir = cJSON_GetObjectItemCaseSensitive(result, "inputRequests");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(result, "requestState");
    char why[400];
    if (++c->input_rounds > WRK_MCPUP_INPUT_ROUNDS_MAX) {
        cJSON_Delete(r);
        call_end(c, wrk_output_errorf("the tool's upstream MCP server asked for input more than "
                                      "%d times in one call",
                                      WRK_MCPUP_INPUT_ROUNDS_MAX));
        return;
    }
    if ((rs && !cJSON_IsString(rs)) || (ir && !cJSON_IsObject(ir)) || (!rs && !ir)) {
        cJSON_Delete(r);
        call_end(c, wrk_job_error_hidden(c->job, c->where,
                                         "the upstream MCP server answered a malformed "
                                         "input_required result"));
        return;
    }
    free(c->request_state);
    c->request_state = rs ? strdup(rs->valuestring) : NULL;
    cJSON_Delete(c->input_responses);
    c->input_responses = NULL;
    if (!ir || !ir->child) { /* only requestState: retry at once (mrtr.mdx, client rule 1) */
        cJSON_Delete(r);
        call_send(c);
        return;
    }
    wrk_mcprelay_t *a = call_ask(c);
    int rc = a ? wrk_mcprelay_inputs(a, ir, why, sizeof(why)) : MCPQ_ENOMEM;
    cJSON_Delete(r);
    if (rc == MCPQ_ENOMEM)
        call_end_error(c, -32603, "out of memory");
    else if (rc < 0)
        call_end(c, wrk_output_errorf("the tool's upstream MCP server asked the client something "
                                      "mcpq cannot relay: %s",
                                      why));
}

/* What c's request carries besides the job's params: the calling client's capabilities
 * (elicitation, sampling, roots from the envelope's "client") in a 2026-07-28 request's _meta,
 * where the upstream learns per request what it may ask (stdio: dropped for a legacy process,
 * whose session declared them at initialize); and a retry's inputResponses and requestState. */
static void call_params_extra(wrk_mcpup_call_t *c, cJSON *params)
{
    if (!c->up || c->up->modern) {
        const cJSON *caps = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(c->job->env.root, "client"), "capabilities");
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
        if (!cJSON_IsObject(meta)) {
            cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
            meta = cJSON_AddObjectToObject(params, "_meta");
        }
        cJSON *mine = cJSON_GetObjectItemCaseSensitive(meta, MCPW_META_CLIENT_CAPS);
        if (!mine)
            mine = cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_CAPS);
        static const char *const relayed[] = {"elicitation", "sampling", "roots"};
        for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++) {
            const cJSON *cap = cJSON_GetObjectItemCaseSensitive(caps, relayed[i]);
            if (cJSON_IsObject(cap) && !cJSON_GetObjectItemCaseSensitive(mine, relayed[i]))
                cJSON_AddItemToObject(mine, relayed[i], cJSON_Duplicate(cap, 1));
        }
    }
    if (c->input_responses) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "inputResponses");
        cJSON_AddItemToObject(params, "inputResponses", c->input_responses);
        c->input_responses = NULL;
    }
    if (c->request_state) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "requestState");
        cJSON_AddStringToObject(params, "requestState", c->request_state);
    }
}

/* Sends method with params (taken over) upstream for call c, in its session; the answer
 * comes to call_done. name: the Mcp-Name of a 2026-07-28 request (may be NULL). */
static void call_post(wrk_mcpup_call_t *c, const char *method, const char *name, cJSON *params)
{
    wrk_mcpup_t *up = c->up;
    wrk_job_t *job = c->job;
    c->id = ++c->m->next_id;
    snprintf(c->session, sizeof(c->session), "%s", up->modern ? "" : up->session);
    if (up->modern)
        wrk_mcpup_meta(params);
    /* The request's CLIENT span "<method> <tool or prompt>" (MCP semantic conventions); the
     * upstream receives its context (otel.h). */
    char tp[TRACE_PARENT_LEN + 1], span_name[OTEL_NAME_MAX];
    const char *target =
        name ? name : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "name"));
    snprintf(span_name, sizeof(span_name), "%s%s%s", method, target ? " " : "",
             target ? target : "");
    size_t len = 0;
    char *body = wrk_mcpup_body(c->id, method, params, &len);
    otel_span_t *span = otel_span_child(job->env.traceparent, span_name, OTEL_KIND_CLIENT, tp);
    otel_span_str(span, "mcp.method.name", method);
    otel_span_http(span, "POST", up->url);
    struct curl_slist *h =
        wrk_mcpup_headers(up, up->modern, up->modern ? MCPW_MODERN_VERSION : up->version, method,
                          name, c->session, tp[0] ? tp : NULL, job->env.request_id);
    if (h && tp[0] && job->tracestate[0] &&
        wrk_httpexec_header_add(&h, "tracestate", job->tracestate) < 0) {
        curl_slist_free_all(h);
        h = NULL;
    }
    if (!body || !h) {
        cJSON_free(body);
        curl_slist_free_all(h);
        otel_span_free(span);
        call_end_error(c, -32603, "out of memory");
        return;
    }
    mcpw_reader_cleanup(&c->rd);
    mcpw_reader_init(&c->rd, c->id, wrk_httpexec_max_output(c->m->http), call_note, c);
    mcpw_reader_on_request(&c->rd, call_upstream_request);
    c->req = wrk_httpexec_stream(c->m->http, up->url, h, body, len,
                                 wrk_job_remaining_ms(job) + MCP_TIMEOUT_SLACK_MS, call_chunk,
                                 call_done, c);
    wrk_httpexec_req_span(c->req, span);
    cJSON_free(body);
    if (!c->req)
        call_end_error(c, -32603, "cannot start the request to the upstream MCP server");
}

/* An mcpq/catalog call's page (result borrowed): the next request, or the end. */
static void call_catalog_page(wrk_mcpup_call_t *c, const cJSON *result)
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
static void call_method_result(wrk_mcpup_call_t *c, const cJSON *result)
{
    kinds_method_t method = c->job->env.method_id;
    if (method == KINDS_METHOD_CATALOG) {
        call_catalog_page(c, result);
        return;
    }
    if (method == KINDS_METHOD_SUBSCRIBE || method == KINDS_METHOD_UNSUBSCRIBE) {
        wrk_upnotify_answered(c);
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
static void call_answer(wrk_mcpup_call_t *c, cJSON *r)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(r, "error");
    cJSON *result = cJSON_GetObjectItemCaseSensitive(r, "result");
    int other = c->job->env.method_id != KINDS_METHOD_CALL;
    if (err) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
        char text[WRK_MCPUP_MESSAGE_MAX];
        snprintf(text, sizeof(text), "%s", msg ? msg : "error");
        int icode = cJSON_IsNumber(code) ? (int)code->valuedouble : 0;
        cJSON_Delete(r);
        if (other) {
            /* No isError result outside tools/call: the client gets the upstream's error, as
             * it would from the upstream itself (e.g. -32002 resource not found). */
            call_end_error(c, icode ? icode : -32603, text);
            return;
        }
        if (icode == -32601 && c->step == WRK_MCPUP_STEP_JOB && c->up && !c->up->modern &&
            c->up->tasks && !c->as_task) {
            /* 2025-11-25: a tool whose taskSupport is "required" answers a plain call with
             * -32601 (basic/utilities/tasks.mdx, "Tool-Level Negotiation"): call it as a task */
            c->as_task = 1;
            call_send(c);
            return;
        }
        if (icode == -32602 && c->step == WRK_MCPUP_STEP_JOB) {
            call_end_error(c, -32602, text);
            return;
        }
        call_end(c, wrk_job_error_hidden(c->job, c->where,
                                         "the upstream MCP server answered error %d: %s", icode,
                                         text));
        return;
    }
    if (c->step == WRK_MCPUP_STEP_TASK_GET) {
        wrk_uptask_state(c, r, result);
        return;
    }
    if (c->step == WRK_MCPUP_STEP_JOB && c->up && wrk_uptask_created(c, r, result))
        return;
    const char *rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "resultType"));
    if (rt && strcmp(rt, "input_required") == 0 && c->step == WRK_MCPUP_STEP_JOB &&
        c->job->env.method_id != KINDS_METHOD_CATALOG) {
        call_input_required(c, r, result);
        return;
    }
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
    wrk_mcpup_call_t *c = arg;
    wrk_mcpup_t *up = c->up;
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
    if (resp->status == 404 && !up->modern && c->session[0] && !c->retried &&
        c->step == WRK_MCPUP_STEP_JOB) {
        /* The session expired: initialize again (once) and retry. */
        log_event(LOG_INFO, "upstream MCP session expired: initializing again", "job_id",
                  c->job->env.job_id, "upstream", up->host, (char *)NULL);
        c->retried = 1;
        if (up->state == WRK_MCPUP_READY && strcmp(up->session, c->session) == 0) {
            up->state = WRK_MCPUP_NEW;
            up->session[0] = '\0';
        }
        if (up->state == WRK_MCPUP_READY)
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
    const wrk_mcpup_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    call_done_in(resp, arg);
    wrk_job_log_leave(&saved);
}

/* The next request of c: its job's method, or the catalog's next list page. 0 or
 * MCPQ_ENOMEM. */
static int call_request(wrk_mcpup_call_t *c, wrk_mcpmethod_req_t *req)
{
    const wrk_envelope_t *env = &c->job->env;
    if (env->method_id != KINDS_METHOD_CATALOG)
        return wrk_mcpmethod_request(env, req);
    if (!c->cat_started) {
        int rc = wrk_mcpmethod_catalog_start(&c->cat, c->up ? c->up->info : c->stdio_info);
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

/* The job's request upstream (or the catalog's next page), its progress token the job id. */
static void call_send(wrk_mcpup_call_t *c)
{
    wrk_job_t *job = c->job;
    wrk_mcpmethod_req_t rq;
    if (wrk_upnotify_local(c))
        return;
    if (!c->up && job->env.method_id == KINDS_METHOD_CATALOG && !c->stdio_info) {
        rq = (wrk_mcpmethod_req_t){0}; /* a stdio catalog waits for the handshake first */
        stdio_send(c, &rq);
        return;
    }
    if (call_request(c, &rq) < 0) {
        call_end_error(c, -32603, "out of memory");
        return;
    }
    if (!rq.method) {
        call_end_result(c, wrk_mcpmethod_catalog_take(&c->cat));
        return;
    }
    if (job->env.method_id != KINDS_METHOD_CATALOG)
        call_params_extra(c, rq.params);
    if (!c->up) {
        stdio_send(c, &rq);
        return;
    }
    cJSON *params = rq.params;
    if (job->env.method_id != KINDS_METHOD_CATALOG) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
        if (!meta)
            meta = cJSON_AddObjectToObject(params, "_meta");
        cJSON_AddStringToObject(meta, "progressToken", job->env.job_id);
        if (job->env.method_id == KINDS_METHOD_CALL)
            wrk_uptask_opt_in(c, params, meta, rq.name);
    }
    c->step = WRK_MCPUP_STEP_JOB;
    call_post(c, rq.method, rq.name, params);
}

/* ---- the handshake ---- */

/* A waiting call's result when its upstream's handshake failed (failure: what went wrong,
 * "unreachable: ..." when no answer came). */
static cJSON *handshake_error(const wrk_mcpup_call_t *c, const char *failure)
{
    char detail[WRK_MCPUP_HOST_MAX + 600];
    snprintf(detail, sizeof(detail), "upstream MCP server %s: %.512s", c->up->host, failure);
    if (strncmp(failure, "unreachable", 11) == 0)
        return wrk_job_error_hidden(c->job, detail,
                                    "the tool's upstream MCP server could not be reached");
    return wrk_job_error_hidden(c->job, detail,
                                "the MCP handshake with the tool's upstream MCP server failed");
}

static void up_ready(wrk_mcpexec_t *m, wrk_mcpup_t *up, const char *failure)
{
    wrk_mcpup_call_t *c = up->waiters;
    up->waiters = NULL;
    /* a later negotiation without a call (upnotify.c, a lost session) is in no trace */
    up->neg_tp[0] = up->neg_ts[0] = '\0';
    if (failure) {
        up->state = WRK_MCPUP_NEW; /* the next call tries again */
        log_event(LOG_WARN, "upstream MCP handshake failed", "upstream", up->host, "error", failure,
                  (char *)NULL);
    } else {
        up->state = WRK_MCPUP_READY;
        log_event(LOG_INFO, "upstream MCP server ready", "upstream", up->host, "version",
                  up->modern ? MCPW_MODERN_VERSION : up->version, "session",
                  up->session[0] ? "yes" : "no", (char *)NULL);
    }
    while (c) {
        wrk_mcpup_call_t *next = c->next;
        c->next = NULL;
        if (failure)
            call_end(c, handshake_error(c, failure));
        else
            call_send(c);
        c = next;
    }
}

static void up_send(wrk_mcpexec_t *m, wrk_mcpup_t *up, const char *method, cJSON *params,
                    int notify);

/* A page of the legacy upstream's tools/list (r owned): the names of the tools whose
 * execution.taskSupport is "required" or "optional" are kept; the next page is asked for,
 * or the handshake ends. */
static void up_tools_page(wrk_mcpexec_t *m, wrk_mcpup_t *up, cJSON *r)
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
static void up_keep_info(wrk_mcpup_t *up, const cJSON *r, const char *version)
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
    wrk_mcpup_t *up = arg;
    wrk_mcpexec_t *m = up->m;
    char why[512];
    up->req = NULL;
    if (resp->code != CURLE_OK) {
        snprintf(why, sizeof(why), "unreachable: %s", resp->error);
        up_ready(m, up, why);
        return;
    }
    cJSON *r =
        up->state == WRK_MCPUP_INITIALIZED
            ? NULL
            : mcpw_response(resp->content_type, resp->body, resp->len, up->neg_id, NULL, NULL);
    if (up->state == WRK_MCPUP_DISCOVER) {
        int modern = mcpw_discover_modern(resp->status, r);
        up->tasks = modern && wrk_uptask_offered(r, 1);
        if (modern)
            up_keep_info(up, r, MCPW_MODERN_VERSION);
        cJSON_Delete(r);
        if (modern) {
            up->modern = 1;
            up_ready(m, up, NULL);
            return;
        }
        up->modern = 0;
        up->state = WRK_MCPUP_INITIALIZE;
        up_send(m, up, "initialize", mcpw_initialize_params(), 0);
        return;
    }
    if (up->state == WRK_MCPUP_INITIALIZE) {
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
        up->tasks = wrk_uptask_offered(r, 0);
        up_keep_info(up, r, v);
        cJSON_Delete(r);
        up->version = v;
        snprintf(up->session, sizeof(up->session), "%s", resp->session_id);
        up->state = WRK_MCPUP_INITIALIZED;
        up_send(m, up, "notifications/initialized", NULL, 1);
        return;
    }
    if (up->state == WRK_MCPUP_TOOLS) {
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
        up->state = WRK_MCPUP_TOOLS;
        up_send(m, up, "tools/list", cJSON_CreateObject(), 0);
        return;
    }
    up_ready(m, up, NULL);
}

static void up_send(wrk_mcpexec_t *m, wrk_mcpup_t *up, const char *method, cJSON *params,
                    int notify)
{
    int modern = up->state == WRK_MCPUP_DISCOVER;
    int in_session = up->state == WRK_MCPUP_INITIALIZED || up->state == WRK_MCPUP_TOOLS;
    const char *version = modern ? MCPW_MODERN_VERSION : in_session ? up->version : NULL;
    up->neg_id = notify ? -1 : ++m->next_id;
    size_t len = 0;
    char *body = wrk_mcpup_body(up->neg_id, method, params, &len);
    /* A CLIENT span named by the method (MCP semantic conventions: "initialize"), in the trace
     * of the call that started the handshake: a trace shows why a first call is slower. */
    char tp[TRACE_PARENT_LEN + 1];
    otel_span_t *span =
        otel_span_child(up->neg_tp[0] ? up->neg_tp : NULL, method, OTEL_KIND_CLIENT, tp);
    otel_span_str(span, "mcp.method.name", method);
    otel_span_http(span, "POST", up->url);
    struct curl_slist *h =
        wrk_mcpup_headers(up, modern, version, method, NULL, in_session ? up->session : NULL,
                          tp[0] ? tp : NULL, NULL);
    if (h && tp[0] && up->neg_ts[0] && wrk_httpexec_header_add(&h, "tracestate", up->neg_ts) < 0)
        h = (curl_slist_free_all(h), NULL);
    if (body && h) {
        up->req = wrk_httpexec_post(m->http, up->url, h, body, len, WRK_MCPUP_NEGOTIATE_TIMEOUT_MS,
                                    up_done, up);
        h = NULL;
        wrk_httpexec_req_span(up->req, span);
        span = NULL;
    }
    otel_span_free(span);
    cJSON_free(body);
    curl_slist_free_all(h);
    if (!up->req)
        up_ready(m, up, "cannot start the handshake request");
}

static void up_negotiate(wrk_mcpexec_t *m, wrk_mcpup_t *up)
{
    up->state = WRK_MCPUP_DISCOVER;
    up->session[0] = '\0';
    cJSON *p = cJSON_CreateObject();
    cJSON_AddItemToObject(cJSON_AddObjectToObject(p, "_meta"), MCPW_META_CLIENT_CAPS,
                          mcpw_client_capabilities());
    up_send(m, up, "server/discover", wrk_mcpup_meta(p), 0);
}

void wrk_mcpexec_resource_updated(wrk_mcpexec_t *m, const char *upstream, const char *uri)
{
    wrk_upnotify_updated(m, upstream, uri);
}

/* ---- the stdio transport (worker/executors/stdiopool.h) ---- */

static void stdio_done(cJSON *response, const char *failure, const char *detail,
                       const wrk_stdiopool_hello_t *hello, void *arg);

/* Sends rq (its params taken over) to a process of c's stdio upstream; ends c when the pool
 * refuses it (a malformed executor, a full queue). Its notifications go to call_note as an
 * HTTP upstream's do. A request without a method (a catalog's start) only waits for the
 * handshake of a process, whose answer stdio_done keeps. */
static void stdio_send(wrk_mcpup_call_t *c, wrk_mcpmethod_req_t *rq)
{
    char why[300];
    c->scall = wrk_stdiopool_call(c->m->stdio, c->job->env.executor, rq->method, rq->params,
                                  c->job->env.job_id, call_note, stdio_done, c, why, sizeof(why));
    if (!c->scall)
        call_end(c, wrk_output_errorf("%s", why));
    else
        wrk_stdiopool_on_request(c->scall, call_upstream_request);
}

static void stdio_done(cJSON *response, const char *failure, const char *detail,
                       const wrk_stdiopool_hello_t *hello, void *arg)
{
    wrk_mcpup_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    c->scall = NULL;
    if (response)
        call_answer(c, response);
    else if (failure)
        call_end(c, wrk_job_error_hidden(c->job, detail, "%s", failure));
    else if (!(c->stdio_info = wrk_mcpmethod_info(hello->result, hello->version)))
        call_end_error(c, -32603, "out of memory");
    else
        call_send(c); /* a catalog's first list, now that the handshake is known */
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
    wrk_mcpup_call_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    c->job = job;
    c->m = m;
    m->rt = job->rt;
    wrk_uptask_init(c);
    c->where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "command"));
    if (job->env.method_id == KINDS_METHOD_SUBSCRIBE ||
        job->env.method_id == KINDS_METHOD_UNSUBSCRIBE)
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
    wrk_mcpup_t *up = up_get(m, url->valuestring, headers);
    wrk_mcpup_call_t *c = up ? calloc(1, sizeof(*c)) : NULL;
    if (!c)
        return -1;
    c->job = job;
    c->m = m;
    c->up = up;
    m->rt = job->rt;
    wrk_uptask_init(c);
    c->where = up->host;
    job->ex_state = c;
    if (up->state == WRK_MCPUP_READY)
        call_send(c);
    else
        call_wait(c);
    return 0;
}

/* notifications/cancelled for a call in a legacy session, fire-and-forget. */
static void send_cancelled(wrk_mcpup_call_t *c)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "requestId", (double)c->id);
    cJSON_AddStringToObject(p, "reason", c->job->cancelled ? "cancelled by the caller" : "timeout");
    wrk_mcpup_fire(c->up, -1, "notifications/cancelled", NULL, p, c->session,
                   c->job->env.traceparent, c->job->env.request_id,
                   WRK_MCPUP_CANCEL_NOTE_TIMEOUT_MS);
}

static void mcp_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    wrk_mcpup_call_t *c = job->ex_state;
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
        for (wrk_mcpup_call_t **pp = &c->up->waiters; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
        for (wrk_mcpup_call_t **pp = &c->up->ev_waiters; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
    }
    /* an upstream task outlives its request: cancel it too (also when this worker stops and
     * the job goes to another one, which starts its own) */
    if (c->task_id[0])
        wrk_uptask_cancel(c);
    call_end(c, NULL);
}

const wrk_executor_t wrk_mcpexec_executor = {
    .type = "mcp",
    .start = mcp_start,
    .cancel = mcp_cancel,
};
