#include "httpexec.h"

#include "ask.h"
#include "err.h"
#include "mcpw.h"
#include "job.h"
#include "log.h"
#include "output.h"
#include "util.h"
#include "whsig.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HTTP_TIMEOUT_SLACK_MS 500    /* the job's deadline timer fires first */

struct wrk_httpexec {
    wrk_loop_t *loop;
    CURLM *multi;
    wrk_loop_timer_t timer;
    size_t max_output;
    wrk_httpexec_req_t *reqs; /* every live request, so wrk_httpexec_free can drop them */
};

struct wrk_httpexec_req {
    CURL *easy;
    struct curl_slist *headers;
    util_buf_t body;
    int too_big;
    char errbuf[CURL_ERROR_SIZE];
    char session_id[WRK_HTTP_SESSION_MAX];
    wrk_httpexec_chunk_fn chunk; /* a text/event-stream body goes here as it arrives */
    int streaming; /* a 2xx text/event-stream body (decided at the end of the headers) */
    int stopped;   /* chunk asked to stop: the exchange is over for the caller */
    wrk_httpexec_done_fn done;
    void *arg;
    otel_span_t *span; /* the request's CLIENT span (wrk_httpexec_req_span), NULL when none */
    wrk_httpexec_req_t *prev, *next;
};

static void req_free(wrk_httpexec_t *h, wrk_httpexec_req_t *r)
{
    if (r->easy) {
        curl_multi_remove_handle(h->multi, r->easy);
        curl_easy_cleanup(r->easy);
    }
    if (r->prev)
        r->prev->next = r->next;
    else if (h->reqs == r)
        h->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    curl_slist_free_all(r->headers);
    util_buf_cleanup(&r->body);
    otel_span_error(r->span, "cancelled", "the request was abandoned");
    otel_span_end(r->span, 0);
    free(r);
}

void wrk_httpexec_req_span(wrk_httpexec_req_t *r, otel_span_t *span)
{
    if (!r) {
        otel_span_error(span, "not_started", "the request could not be started");
        otel_span_end(span, 0);
        return;
    }
    otel_span_end(r->span, 0);
    r->span = span;
}

/* Ends r's CLIENT span with the response's status (or the transfer's error). */
static void req_span_end(wrk_httpexec_req_t *r, const wrk_httpexec_resp_t *resp)
{
    if (!r->span)
        return;
    if (resp->code != CURLE_OK) {
        otel_span_error(r->span,
                        resp->code == CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection_failed",
                        resp->error);
    } else {
        otel_span_int(r->span, "http.response.status_code", resp->status);
        if (resp->status >= 400) {
            char type[24];
            snprintf(type, sizeof(type), "%ld", resp->status);
            otel_span_error(r->span, type, NULL);
        }
    }
    otel_span_end(r->span, 0);
    r->span = NULL;
}

static void http_check_done(wrk_httpexec_t *h)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(h->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        wrk_httpexec_req_t *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        wrk_httpexec_resp_t resp = {.code = r->stopped ? CURLE_OK : msg->data.result,
                                    .too_big = r->too_big,
                                    .streamed = r->streaming,
                                    .body = "",
                                    .session_id = r->session_id};
        if (resp.code == CURLE_OK) {
            curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.status);
            char *ctype = NULL;
            curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ctype);
            resp.content_type = ctype;
        } else {
            resp.error = r->errbuf[0] ? r->errbuf : curl_easy_strerror(resp.code);
        }
        if (r->body.data) {
            resp.body = r->body.data;
            resp.len = r->body.len;
        }
        req_span_end(r, &resp);
        if (r->done)
            r->done(&resp, r->arg);
        req_free(h, r);
    }
}

static void http_on_io(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    wrk_httpexec_t *h = arg;
    (void)io;
    int flags = 0, running = 0;
    if (events & EPOLLIN)
        flags |= CURL_CSELECT_IN;
    if (events & EPOLLOUT)
        flags |= CURL_CSELECT_OUT;
    if (events & (EPOLLERR | EPOLLHUP))
        flags |= CURL_CSELECT_ERR;
    curl_multi_socket_action(h->multi, fd, flags, &running);
    http_check_done(h);
}

static void http_on_timer(wrk_loop_timer_t *t, void *arg)
{
    wrk_httpexec_t *h = arg;
    (void)t;
    int running = 0;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    http_check_done(h);
}

static int http_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    wrk_httpexec_t *h = userp;
    wrk_loop_io_t *io = socketp;
    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        wrk_loop_io_free(h->loop, io);
        curl_multi_assign(h->multi, s, NULL);
        return 0;
    }
    uint32_t events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (!io) {
        io = wrk_loop_io_new(h->loop, s, events, http_on_io, h);
        if (!io)
            return -1;
        curl_multi_assign(h->multi, s, io);
        return 0;
    }
    return wrk_loop_io_set(h->loop, io, events) < 0 ? -1 : 0;
}

static int http_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    wrk_httpexec_t *h = userp;
    (void)multi;
    if (timeout_ms < 0) {
        wrk_loop_timer_stop(h->loop, &h->timer);
        return 0;
    }
    return wrk_loop_timer_start(h->loop, &h->timer, timeout_ms) < 0 ? -1 : 0;
}

wrk_httpexec_t *wrk_httpexec_new(wrk_loop_t *loop, size_t max_output)
{
    wrk_httpexec_t *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->loop = loop;
    h->max_output = max_output;
    wrk_loop_timer_init(&h->timer, http_on_timer, h);
    h->multi = curl_multi_init();
    if (!h->multi) {
        log_msgf(LOG_ERROR, "curl_multi_init failed");
        free(h);
        return NULL;
    }
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, http_socket_cb);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, http_timer_cb);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    return h;
}

void wrk_httpexec_free(wrk_httpexec_t *h)
{
    if (!h)
        return;
    while (h->reqs)
        req_free(h, h->reqs);
    curl_multi_cleanup(h->multi);
    wrk_loop_timer_stop(h->loop, &h->timer);
    free(h);
}

size_t wrk_httpexec_max_output(const wrk_httpexec_t *h)
{
    return h->max_output;
}

static size_t http_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    wrk_httpexec_req_t *r = userdata;
    size_t n = size * nmemb;
    if (r->streaming) { /* decided at the end of the headers (http_header_cb) */
        int rc = r->chunk(ptr, n, r->arg);
        if (rc == 0)
            return n;
        if (rc > 0)
            r->stopped = 1;
        else
            r->too_big = 1;
        return 0; /* ends the transfer: CURLE_WRITE_ERROR, shown as CURLE_OK when stopped */
    }
    if (util_buf_append(&r->body, ptr, n) < 0) {
        r->too_big = 1;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    return n;
}

/* Keeps the response's Mcp-Session-Id (the only response header an executor needs); at the
 * end of the headers of a 2xx text/event-stream answer, tells the chunk callback the stream
 * is open (chunk(NULL, 0)). */
static size_t http_header_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
    wrk_httpexec_req_t *r = userdata;
    size_t n = size * nitems;
    mcpw_session_header(buf, n, r->session_id, sizeof(r->session_id));
    if (r->chunk && (n == 2 || n == 1) && (buf[0] == '\r' || buf[0] == '\n')) {
        long status = 0;
        char *ctype = NULL;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ctype);
        r->streaming = status >= 200 && status <= 299 && mcpw_is_sse(ctype);
        if (r->streaming && r->chunk(NULL, 0, r->arg) != 0) {
            r->stopped = 1;
            return 0;
        }
    }
    return n;
}

wrk_httpexec_req_t *wrk_httpexec_post(wrk_httpexec_t *h, const char *url,
                                      struct curl_slist *headers, const char *body, size_t len,
                                      int64_t timeout_ms, wrk_httpexec_done_fn done, void *arg)
{
    return wrk_httpexec_stream(h, url, headers, body, len, timeout_ms > 0 ? timeout_ms : 1, NULL,
                               done, arg);
}

wrk_httpexec_req_t *wrk_httpexec_stream(wrk_httpexec_t *h, const char *url,
                                        struct curl_slist *headers, const char *body, size_t len,
                                        int64_t timeout_ms, wrk_httpexec_chunk_fn chunk,
                                        wrk_httpexec_done_fn done, void *arg)
{
    wrk_httpexec_req_t *r = calloc(1, sizeof(*r));
    if (!r) {
        curl_slist_free_all(headers);
        return NULL;
    }
    r->headers = headers;
    r->chunk = chunk;
    r->done = done;
    r->arg = arg;
    util_buf_init(&r->body, h->max_output);
    r->easy = curl_easy_init();
    if (!r->easy) {
        req_free(h, r);
        return NULL;
    }
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "mcpq-worker");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 0));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
        log_event(LOG_ERROR, "curl_multi_add_handle failed", (char *)NULL);
        req_free(h, r);
        return NULL;
    }
    r->next = h->reqs;
    if (h->reqs)
        h->reqs->prev = r;
    h->reqs = r;
    return r;
}

void wrk_httpexec_req_cancel(wrk_httpexec_t *h, wrk_httpexec_req_t *req)
{
    if (req)
        req_free(h, req);
}

int wrk_httpexec_header_name_valid(const char *s)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr(tchar, *s)))
            return 0;
    return 1;
}

int wrk_httpexec_header_value_valid(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\t')
            return 0;
    return 1;
}

int wrk_httpexec_header_add(struct curl_slist **list, const char *name, const char *value)
{
    char line[WRK_HTTP_HEADER_MAX];
    int n = snprintf(line, sizeof(line), "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof(line))
        return MCPQ_ETOOBIG;
    struct curl_slist *l = curl_slist_append(*list, line);
    if (!l)
        return MCPQ_ENOMEM;
    *list = l;
    return 0;
}

/* ---- the http executor ---- */

/* Headers the worker sets itself; a configured one of these names is skipped. */
static int header_reserved(const char *name)
{
    static const char *const reserved[] = {"content-type",      "content-length",    "webhook-id",
                                           "webhook-timestamp", "webhook-signature", "expect"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return 1;
    return 0;
}

/* Builds the request headers into *list, signing body when the executor has a secret; a
 * message for the caller in why when the config is bad. */
static int build_headers(wrk_job_t *job, const char *body, size_t len, struct curl_slist **list,
                         otel_span_t **span, const char **why)
{
    const cJSON *ex = job->env.executor;
    *why = NULL;
    /* "Expect:" with no value stops curl from waiting for 100-continue on large bodies. */
    struct curl_slist *l = curl_slist_append(NULL, "Expect:");
    if (!l)
        return MCPQ_ENOMEM;
    *list = l;
    if (wrk_httpexec_header_add(list, "Content-Type", "application/json") < 0)
        return MCPQ_ENOMEM;
    const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(ex, "headers");
    if (hdrs && !cJSON_IsNull(hdrs)) {
        if (!cJSON_IsObject(hdrs)) {
            *why = "executor.headers must be an object of strings";
            return MCPQ_EINVAL;
        }
        for (const cJSON *it = hdrs->child; it; it = it->next) {
            if (!cJSON_IsString(it) || !wrk_httpexec_header_name_valid(it->string) ||
                !wrk_httpexec_header_value_valid(it->valuestring)) {
                *why = "executor.headers holds an invalid header name or value";
                return MCPQ_EINVAL;
            }
            if (header_reserved(it->string) ||
                (job->env.request_id && strcasecmp(it->string, "X-Request-Id") == 0))
                continue; /* (the job's X-Request-Id replaces the configured one) */
            if (wrk_httpexec_header_add(list, it->string, it->valuestring) < 0) {
                *why = "executor.headers holds a header that is too long";
                return MCPQ_EINVAL;
            }
        }
    }
    /* The request's CLIENT span, whose context the upstream receives (otel.h); without one, the
     * job's own traceparent. */
    char tp[TRACE_PARENT_LEN + 1];
    *span = otel_span_child(job->env.traceparent, "POST", OTEL_KIND_CLIENT, tp);
    if (tp[0] && wrk_httpexec_header_add(list, "traceparent", tp) < 0)
        return MCPQ_ENOMEM;
    if (tp[0] && job->tracestate[0] &&
        wrk_httpexec_header_add(list, "tracestate", job->tracestate) < 0)
        return MCPQ_ENOMEM;
    if (job->env.request_id &&
        wrk_httpexec_header_add(list, "X-Request-Id", job->env.request_id) < 0)
        return MCPQ_ENOMEM;
    const cJSON *secret = cJSON_GetObjectItemCaseSensitive(ex, "secret");
    if (secret && !cJSON_IsNull(secret)) {
        char sig[WHSIG_LEN], ts[24];
        long long now = (long long)(util_now_ms() / 1000);
        if (!cJSON_IsString(secret) || whsig_sign(secret->valuestring, job->env.job_id, now, body,
                                                  len, sig, sizeof(sig)) < 0) {
            *why = "executor.secret is not a Standard Webhooks secret (whsec_ + base64)";
            return MCPQ_EINVAL;
        }
        snprintf(ts, sizeof(ts), "%lld", now);
        if (wrk_httpexec_header_add(list, "webhook-id", job->env.job_id) < 0 ||
            wrk_httpexec_header_add(list, "webhook-timestamp", ts) < 0 ||
            wrk_httpexec_header_add(list, "webhook-signature", sig) < 0)
            return MCPQ_ENOMEM;
    }
    return 0;
}

static int url_valid(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

cJSON *wrk_httpexec_failure(const wrk_job_t *job, const wrk_httpexec_resp_t *resp, const char *what)
{
    char host[256], detail[CURL_ERROR_SIZE + 512];
    const char *url =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(job->env.executor, "url"));
    util_url_host(url ? url : "", host, sizeof(host));
    snprintf(detail, sizeof(detail), "request to %s failed: %s", host,
             resp->error ? resp->error : "?");
    if (resp->code == CURLE_OPERATION_TIMEDOUT)
        return wrk_job_error_hidden(job, detail, "%s did not answer in time", what);
    return wrk_job_error_hidden(job, detail, "%s could not be reached", what);
}

wrk_httpexec_req_t *wrk_httpexec_post_job(wrk_job_t *job, const char *body, size_t len,
                                          wrk_httpexec_done_fn done, void *arg, const char **why)
{
    *why = NULL;
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(job->env.executor, "url");
    if (!cJSON_IsString(url) || !url_valid(url->valuestring)) {
        *why = "executor.url must be an http:// or https:// URL";
        return NULL;
    }
    struct curl_slist *headers = NULL;
    otel_span_t *span = NULL;
    if (build_headers(job, body, len, &headers, &span, why) < 0) {
        curl_slist_free_all(headers);
        otel_span_free(span);
        return NULL;
    }
    otel_span_http(span, "POST", url->valuestring);
    wrk_httpexec_req_t *r =
        wrk_httpexec_post(job->rt->http, url->valuestring, headers, body, len,
                          wrk_job_remaining_ms(job) + HTTP_TIMEOUT_SLACK_MS, done, arg);
    wrk_httpexec_req_span(r, span);
    if (!r)
        log_event(LOG_ERROR, "cannot start the HTTP request", "job_id", job->env.job_id,
                  (char *)NULL);
    return r;
}

/* ---- the http executor: one POST, or rounds of input-required (docs/tools.md, "Asking the
 * user") ---- */

typedef struct http_call {
    wrk_job_t *job;
    wrk_httpexec_req_t *xfer; /* the POST in flight; NULL while the client is asked */
    cJSON *envelope;          /* the envelope of the next rounds (parsed once) */
    char *body;               /* this round's body (NULL: job->body) */
    size_t body_len;
    char *rstate; /* the service's requestState, sent back with the answers */
    int rounds;   /* input-required answers so far */
} http_call_t;

static void call_free(http_call_t *c)
{
    cJSON_Delete(c->envelope);
    free(c->body);
    free(c->rstate);
    free(c);
}

/* Ends the job with res (owned). */
static void call_finish(http_call_t *c, cJSON *res)
{
    wrk_job_t *job = c->job;
    call_free(c);
    job->ex_state = NULL;
    wrk_job_finish(job, res);
}

static void http_done(const wrk_httpexec_resp_t *resp, void *arg);

/* POSTs this round's body. */
static void call_post(http_call_t *c)
{
    const char *why = NULL;
    const char *body = c->body ? c->body : c->job->body;
    size_t len = c->body ? c->body_len : c->job->body_len;
    c->xfer = wrk_httpexec_post_job(c->job, body, len, http_done, c, &why);
    if (!c->xfer)
        call_finish(c, why ? wrk_output_errorf("%s", why)
                           : wrk_output_errorf("the tool's HTTP service could not be called"));
}

/* The envelope again with "inputResponses" (the client's results by key; an error answer as
 * {"error": ...}; answers NULL: none) and the service's "requestState". 0 or MCPQ_ENOMEM. */
static int call_next_body(http_call_t *c, const cJSON *answers)
{
    if (!c->envelope && !(c->envelope = cJSON_ParseWithLength(c->job->body, c->job->body_len)))
        return MCPQ_ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(c->envelope, "inputResponses");
    cJSON_DeleteItemFromObjectCaseSensitive(c->envelope, "requestState");
    if (answers)
        cJSON_AddItemToObject(c->envelope, "inputResponses", wrk_ask_responses(answers));
    if (c->rstate)
        cJSON_AddStringToObject(c->envelope, "requestState", c->rstate);
    free(c->body);
    c->body = cJSON_PrintUnformatted(c->envelope);
    c->body_len = c->body ? strlen(c->body) : 0;
    return c->body ? 0 : MCPQ_ENOMEM;
}

/* The client's answers to the service's question: the next round. */
static void call_answered(wrk_job_t *job, const cJSON *answers, void *arg)
{
    http_call_t *c = arg;
    (void)job;
    if (call_next_body(c, answers) < 0) {
        call_finish(c, NULL);
        return;
    }
    call_post(c);
}

/* A 2xx answer {"resultType": "input_required", "inputRequests"?, "requestState"?}: ask the
 * client (or, with requestState only, call again at once). 1 when it was one (the call goes
 * on or ended), 0 when the answer is a result. */
static int call_input_required(http_call_t *c, const wrk_httpexec_resp_t *resp)
{
    if (resp->status < 200 || resp->status > 299)
        return 0;
    cJSON *doc = cJSON_ParseWithLength(resp->body, resp->len);
    const char *rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "resultType"));
    if (!rt || strcmp(rt, "input_required") != 0) {
        cJSON_Delete(doc);
        return 0;
    }
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(doc, "inputRequests");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(doc, "requestState");
    char why[400] = "";
    if (++c->rounds > WRK_ASK_ROUNDS_MAX) {
        snprintf(why, sizeof(why),
                 "the tool's HTTP service asked for input more than %d times in one call",
                 WRK_ASK_ROUNDS_MAX);
    } else if ((rs && !cJSON_IsString(rs)) || (!reqs && !rs)) {
        snprintf(why, sizeof(why),
                 "the tool's HTTP service answered input_required without "
                 "inputRequests or a string requestState");
    } else {
        free(c->rstate);
        c->rstate = rs ? strdup(rs->valuestring) : NULL;
        if (!reqs) { /* requestState only: call again with it */
            if (call_next_body(c, NULL) == 0)
                call_post(c);
            else
                call_finish(c, NULL);
            cJSON_Delete(doc);
            return 1;
        }
        char err[256];
        if (wrk_ask_open(c->job, reqs, call_answered, c, err, sizeof(err)) == 0) {
            cJSON_Delete(doc);
            return 1;
        }
        snprintf(why, sizeof(why), "the tool's HTTP service asked an invalid question: %s", err);
    }
    cJSON_Delete(doc);
    call_finish(c, wrk_output_errorf("%s", why));
    return 1;
}

static void http_done_in(const wrk_httpexec_resp_t *resp, void *arg)
{
    http_call_t *c = arg;
    wrk_job_t *job = c->job;
    c->xfer = NULL; /* freed by the multi handle after this returns */
    cJSON *res;
    if (resp->code == CURLE_OK && call_input_required(c, resp))
        return;
    if (resp->code == CURLE_OK)
        res = wrk_output_from_http(resp->status, resp->content_type, resp->body, resp->len);
    else if (resp->too_big)
        res = wrk_output_errorf("output too large: the tool answered more than %zu bytes",
                                wrk_httpexec_max_output(job->rt->http));
    else
        res = wrk_httpexec_failure(job, resp, "the tool's HTTP service");
    call_finish(c, res);
}

/* The answer of the job's request, logged in the job's trace. */
static void http_done(const wrk_httpexec_resp_t *resp, void *arg)
{
    const http_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    http_done_in(resp, arg);
    wrk_job_log_leave(&saved);
}

static int http_start(wrk_job_t *job)
{
    http_call_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    c->job = job;
    job->ex_state = c;
    const char *why = NULL;
    c->xfer = wrk_httpexec_post_job(job, job->body, job->body_len, http_done, c, &why);
    if (!c->xfer) {
        call_free(c);
        job->ex_state = NULL;
        if (!why)
            return -1;
        wrk_job_finish(job, wrk_output_errorf("%s", why));
    }
    return 0;
}

static void http_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    (void)how;
    http_call_t *c = job->ex_state;
    if (!c)
        return;
    if (c->xfer)
        wrk_httpexec_req_cancel(job->rt->http, c->xfer);
    wrk_ask_abandon(job); /* job.c did already: no answer comes after this */
    call_finish(c, NULL);
}

const wrk_executor_t wrk_httpexec_executor = {
    .type = "http",
    .start = http_start,
    .needs_body = 1,
    .cancel = http_cancel,
};
