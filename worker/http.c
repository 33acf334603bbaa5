#include "http.h"

#include "err.h"
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

#define HTTP_TIMEOUT_SLACK_MS 500 /* the job's deadline timer fires first */
#define HTTP_HEADER_MAX 8192

struct wrk_http {
    wrk_loop_t *loop;
    CURLM *multi;
    wrk_timer_t timer;
    size_t max_output;
};

struct wrk_http_xfer {
    wrk_job_t *job;
    CURL *easy;
    struct curl_slist *headers;
    util_buf_t body;
    int too_big;
    wrk_http_done_fn done;
    void *arg;
    char errbuf[CURL_ERROR_SIZE];
};
typedef struct wrk_http_xfer http_xfer_t;

static void xfer_free(wrk_http_t *h, http_xfer_t *x)
{
    if (x->easy) {
        curl_multi_remove_handle(h->multi, x->easy);
        curl_easy_cleanup(x->easy);
    }
    curl_slist_free_all(x->headers);
    util_buf_cleanup(&x->body);
    free(x);
}

/* What a finished transfer answered, for its done callback. */
static void xfer_resp(wrk_http_t *h, http_xfer_t *x, CURLcode code, wrk_http_resp_t *resp)
{
    memset(resp, 0, sizeof(*resp));
    resp->max_output = h->max_output;
    if (code == CURLE_OK) {
        char *ctype = NULL;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &resp->status);
        curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ctype);
        resp->ctype = ctype;
        resp->body = x->body.data;
        resp->len = x->body.len;
        return;
    }
    resp->too_big = x->too_big;
    resp->error = x->errbuf[0] ? x->errbuf : curl_easy_strerror(code);
}

static void http_check_done(wrk_http_t *h)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(h->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        http_xfer_t *x = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        wrk_http_resp_t resp;
        xfer_resp(h, x, msg->data.result, &resp);
        /* The callback may finish the job but must not cancel x: it is freed right after. */
        x->done(x->job, &resp, x->arg);
        xfer_free(h, x);
    }
}

static void http_on_io(wrk_io_t *io, int fd, uint32_t events, void *arg)
{
    wrk_http_t *h = arg;
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

static void http_on_timer(wrk_timer_t *t, void *arg)
{
    wrk_http_t *h = arg;
    (void)t;
    int running = 0;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    http_check_done(h);
}

static int http_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    wrk_http_t *h = userp;
    wrk_io_t *io = socketp;
    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        wrk_io_free(h->loop, io);
        curl_multi_assign(h->multi, s, NULL);
        return 0;
    }
    uint32_t events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (!io) {
        io = wrk_io_new(h->loop, s, events, http_on_io, h);
        if (!io)
            return -1;
        curl_multi_assign(h->multi, s, io);
        return 0;
    }
    return wrk_io_set(h->loop, io, events) < 0 ? -1 : 0;
}

static int http_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    wrk_http_t *h = userp;
    (void)multi;
    if (timeout_ms < 0) {
        wrk_timer_stop(h->loop, &h->timer);
        return 0;
    }
    return wrk_timer_start(h->loop, &h->timer, timeout_ms) < 0 ? -1 : 0;
}

wrk_http_t *wrk_http_new(wrk_loop_t *loop, size_t max_output)
{
    wrk_http_t *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->loop = loop;
    h->max_output = max_output;
    wrk_timer_init(&h->timer, http_on_timer, h);
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

void wrk_http_free(wrk_http_t *h)
{
    if (!h)
        return;
    curl_multi_cleanup(h->multi);
    wrk_timer_stop(h->loop, &h->timer);
    free(h);
}

static size_t http_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    http_xfer_t *x = userdata;
    size_t n = size * nmemb;
    if (util_buf_append(&x->body, ptr, n) < 0) {
        x->too_big = 1;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    return n;
}

static int header_name_valid(const char *s)
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

static int header_value_valid(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\t')
            return 0;
    return 1;
}

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

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
    char line[HTTP_HEADER_MAX];
    int n = snprintf(line, sizeof(line), "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof(line))
        return MCPQ_ETOOBIG;
    struct curl_slist *l = curl_slist_append(*list, line);
    if (!l)
        return MCPQ_ENOMEM;
    *list = l;
    return 0;
}

/* Builds the request headers (signing body when the executor has a secret); a message for
 * the caller in why when the config is bad. */
static int build_headers(wrk_job_t *job, http_xfer_t *x, const char *body, size_t len,
                         const char **why)
{
    const cJSON *ex = job->env.executor;
    *why = NULL;
    /* "Expect:" with no value stops curl from waiting for 100-continue on large bodies. */
    struct curl_slist *l = curl_slist_append(NULL, "Expect:");
    if (!l)
        return MCPQ_ENOMEM;
    x->headers = l;
    if (add_header(&x->headers, "Content-Type", "application/json") < 0)
        return MCPQ_ENOMEM;
    const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(ex, "headers");
    if (hdrs && !cJSON_IsNull(hdrs)) {
        if (!cJSON_IsObject(hdrs)) {
            *why = "executor.headers must be an object of strings";
            return MCPQ_EINVAL;
        }
        for (const cJSON *it = hdrs->child; it; it = it->next) {
            if (!cJSON_IsString(it) || !header_name_valid(it->string) ||
                !header_value_valid(it->valuestring)) {
                *why = "executor.headers holds an invalid header name or value";
                return MCPQ_EINVAL;
            }
            if (header_reserved(it->string))
                continue;
            if (add_header(&x->headers, it->string, it->valuestring) < 0) {
                *why = "executor.headers holds a header that is too long";
                return MCPQ_EINVAL;
            }
        }
    }
    if (job->env.traceparent && add_header(&x->headers, "traceparent", job->env.traceparent) < 0)
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
        if (add_header(&x->headers, "webhook-id", job->env.job_id) < 0 ||
            add_header(&x->headers, "webhook-timestamp", ts) < 0 ||
            add_header(&x->headers, "webhook-signature", sig) < 0)
            return MCPQ_ENOMEM;
    }
    return 0;
}

static int url_valid(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

wrk_http_xfer_t *wrk_http_post(wrk_job_t *job, const char *body, size_t len, wrk_http_done_fn done,
                               void *arg, const char **why)
{
    wrk_http_t *h = job->rt->http;
    *why = NULL;
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(job->env.executor, "url");
    if (!cJSON_IsString(url) || !url_valid(url->valuestring)) {
        *why = "executor.url must be an http:// or https:// URL";
        return NULL;
    }
    http_xfer_t *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->job = job;
    x->done = done;
    x->arg = arg;
    util_buf_init(&x->body, h->max_output);
    if (build_headers(job, x, body, len, why) < 0) {
        xfer_free(h, x);
        return NULL;
    }
    x->easy = curl_easy_init();
    if (!x->easy) {
        xfer_free(h, x);
        return NULL;
    }
    CURL *e = x->easy;
    curl_easy_setopt(e, CURLOPT_URL, url->valuestring);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "mcpq-worker");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                     (long)(wrk_job_remaining_ms(job) + HTTP_TIMEOUT_SLACK_MS));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
        log_event(LOG_ERROR, "curl_multi_add_handle failed", "job_id", job->env.job_id,
                  (char *)NULL);
        xfer_free(h, x);
        return NULL;
    }
    return x;
}

void wrk_http_xfer_cancel(wrk_http_t *h, wrk_http_xfer_t *x)
{
    if (x)
        xfer_free(h, x);
}

static void http_done(wrk_job_t *job, const wrk_http_resp_t *resp, void *arg)
{
    (void)arg;
    cJSON *res;
    if (resp->status)
        res = wrk_output_from_http(resp->status, resp->ctype, resp->body, resp->len);
    else if (resp->too_big)
        res = wrk_output_errorf("output too large: the tool answered more than %zu bytes",
                                resp->max_output);
    else
        res = wrk_output_errorf("HTTP request failed: %s", resp->error);
    job->ex_state = NULL;
    wrk_job_finish(job, res);
}

static int http_start(wrk_job_t *job)
{
    const char *why = NULL;
    http_xfer_t *x = wrk_http_post(job, job->body, job->body_len, http_done, NULL, &why);
    if (!x) {
        if (!why)
            return -1;
        wrk_job_finish(job, wrk_output_errorf("%s", why));
        return 0;
    }
    job->ex_state = x;
    return 0;
}

static void http_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    (void)how;
    http_xfer_t *x = job->ex_state;
    if (!x)
        return;
    xfer_free(job->rt->http, x);
    job->ex_state = NULL;
    wrk_job_finish(job, NULL);
}

const wrk_executor_t wrk_http_executor = {
    .type = "http",
    .start = http_start,
    .cancel = http_cancel,
};
