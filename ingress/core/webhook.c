#include "webhook.h"
#include "rscript.h"
#include "task.h"

#include "err.h"
#include "log.h"
#include "otel.h"
#include "trace.h"
#include "whq.h"
#include "whsig.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)

#define ERR_MAX 256         /* last_error and log entries keep at most this many bytes */
#define SNIPPET_MAX 120     /* bytes of a non-2xx answer's body quoted in last_error */
#define RESP_BODY_MAX 65536 /* a longer answer body is cut off (the status is what counts) */
#define USER_AGENT "mcpq-webhooks/0.1"

/* ---- Redis scripts (common/lua/webhook_*.lua) ---- */

/* The strings per claimed delivery of webhook_claim.lua. */
#define CLAIM_FIELDS 10

/* ---- the dispatcher ---- */

typedef struct wh_xfer {
    struct wh_xfer *prev, *next;
    ing_webhook_t *wh;
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    char id[WHQ_ID_MAX + 1];
    char tenant[128];
    char webhook[128];
    char event[32];
    char token[96];
    trace_ctx_t trace; /* the task's trace with this attempt's span; trace_id "" if none */
    char parent_span[TRACE_SPAN_HEX + 1]; /* the task's span (the creating call's) */
    otel_span_t *span;         /* this attempt's CLIENT span (otel.h); NULL when not exported */
    char *url;                 /* for the 410 mark only; never logged */
    long long attempt;         /* this attempt's number within its round (1-based) */
    int64_t t0_us;             /* util_mono_us() when the attempt started */
    ing_whrules_guard_t guard; /* the SSRF guard; its refused says why it refused */
    char retry_after[64];
    char snippet[SNIPPET_MAX + 1];
    size_t body_seen;
    char errbuf[CURL_ERROR_SIZE];
} wh_xfer_t;

struct ing_webhook {
    ing_ctx_t *ctx;
    ing_whrules_schedule_t sched;
    int allow_private;
    int max_inflight;
    CURLM *multi;
    pthread_t thread;
    int started;
    atomic_int quiescing;
    atomic_llong drain_until; /* monotonic ms */
    /* the thread's own */
    wh_xfer_t *xfers;
    int inflight;
    unsigned long long seq;
    char tok_base[40];
    int redis_down_logged;
};

static redisReply *eval(ing_webhook_t *wh, const char *script, int argc, const char **args,
                        char *err, size_t errsize)
{
    return rscript_pool_run(wh->ctx->kv, rscript_get(script), 0, argc, args, NULL, err, errsize);
}

static void xfer_free(wh_xfer_t *x)
{
    if (!x)
        return;
    if (x->easy) {
        curl_multi_remove_handle(x->wh->multi, x->easy);
        curl_easy_cleanup(x->easy);
    }
    curl_slist_free_all(x->headers);
    free(x->body);
    free(x->url);
    otel_span_error(x->span, "not_sent", "the attempt was not completed");
    otel_span_end(x->span, 0);
    free(x);
}

static void xfer_unlink(wh_xfer_t *x)
{
    ing_webhook_t *wh = x->wh;
    if (x->prev)
        x->prev->next = x->next;
    else
        wh->xfers = x->next;
    if (x->next)
        x->next->prev = x->prev;
    wh->inflight--;
}

/*
 * Records an outcome: status pending (delay_ms until the next attempt), delivered, failed
 * or disabled, after an attempt of us microseconds. counted: an HTTP attempt was made (attempts+1,
 * a log entry).
 */
static void record(ing_webhook_t *wh, const wh_xfer_t *x, const char *status, long http_status,
                   const char *error, long long us, long long delay_ms, int counted,
                   const char *disable_url)
{
    long long ms = us / 1000; /* the attempt log keeps ms (webhooks.md) */
    char hs[24] = "", mss[24], ds[24], err[512];
    if (http_status > 0)
        snprintf(hs, sizeof(hs), "%ld", http_status);
    snprintf(mss, sizeof(mss), "%lld", ms);
    snprintf(ds, sizeof(ds), "%lld", delay_ms < 0 ? 0 : delay_ms);
    const char *args[] = {x->id,
                          x->token,
                          status,
                          hs,
                          error ? error : "",
                          mss,
                          ds,
                          counted ? "1" : "0",
                          disable_url ? disable_url : ""};
    redisReply *r = eval(wh, "webhook_outcome", 9, args, err, sizeof(err));
    int ours = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r)
        freeReplyObject(r);
    char att[24];
    snprintf(att, sizeof(att), "%lld", x->attempt);
    int ok = strcmp(status, "delivered") == 0;
    if (counted && wh->ctx->metrics)
        ing_metrics_webhook(wh->ctx->metrics,
                            ok                                ? ING_WH_DELIVERED
                            : strcmp(status, "pending") == 0  ? ING_WH_RETRY
                            : strcmp(status, "disabled") == 0 ? ING_WH_DISABLED
                                                              : ING_WH_FAILED,
                            us);
    log_event(ok ? LOG_INFO : LOG_WARN, "webhook attempt", "tenant", x->tenant, "webhook",
              x->webhook, "delivery", x->id, "trace_id",
              x->trace.trace_id[0] ? x->trace.trace_id : NULL, "span_id",
              x->trace.trace_id[0] ? x->trace.span_id : NULL, "event", x->event, "attempt",
              counted ? att : NULL, "http_status", hs[0] ? hs : NULL, "status", status,
              "duration_ms", counted ? mss : NULL, "error", error && *error ? error : NULL, "note",
              !r     ? "outcome not recorded (Redis); the delivery will be retried"
              : ours ? NULL
                     : "claim lost (redelivered or taken over); outcome ignored",
              "redis_error", !r ? err : NULL, (char *)NULL);
}

static size_t on_header(char *buf, size_t size, size_t n, void *userdata)
{
    wh_xfer_t *x = userdata;
    size_t len = size * n;
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) { /* a new response (after 1xx) */
        x->retry_after[0] = '\0';
        x->snippet[0] = '\0';
        x->body_seen = 0;
    } else if (len > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
        size_t vl = len - 12;
        if (vl >= sizeof(x->retry_after))
            vl = sizeof(x->retry_after) - 1;
        memcpy(x->retry_after, buf + 12, vl);
        x->retry_after[vl] = '\0';
    }
    return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *userdata)
{
    wh_xfer_t *x = userdata;
    size_t len = size * n;
    size_t have = strlen(x->snippet);
    for (size_t i = 0; i < len && have < SNIPPET_MAX; i++) {
        unsigned char c = (unsigned char)buf[i];
        x->snippet[have++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
    }
    x->snippet[have] = '\0';
    x->body_seen += len;
    return x->body_seen > RESP_BODY_MAX ? 0 : len; /* stop reading a huge answer */
}

static const cJSON *find_webhook(const ing_registry_t *reg, const char *tenant, const char *id)
{
    const ing_tenant_t *t = ing_registry_tenant(reg, tenant);
    const cJSON *list = t ? cJSON_GetObjectItemCaseSensitive(t->doc, "webhooks") : NULL;
    const cJSON *w;
    cJSON_ArrayForEach(w, list)
    {
        const char *wid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "id"));
        if (wid && strcmp(wid, id) == 0)
            return w;
    }
    return NULL;
}

static int subscribed(const cJSON *w, const char *event)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(w, "events"))
    {
        if (cJSON_IsString(e) && strcmp(e->valuestring, event) == 0)
            return 1;
    }
    return 0;
}

static int add_header(wh_xfer_t *x, const char *name, const char *value)
{
    char line[256];
    snprintf(line, sizeof(line), "%s: %s", name, value);
    struct curl_slist *l = curl_slist_append(x->headers, line);
    if (!l)
        return MCPQ_ENOMEM;
    x->headers = l;
    return 0;
}

/* Builds and adds the POST of x to url signed with each of the n secrets (one signature per
 * secret during a rotation); 0 or an error message. */
static const char *start_post(ing_webhook_t *wh, wh_xfer_t *x, const char *url,
                              const char *const *secrets, size_t n)
{
    char sig[WHSIG_MAX_SECRETS * WHSIG_LEN], ts[24];
    int64_t now_ms = util_now_ms();
    long long now_s = (long long)(now_ms / 1000);
    if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)
        return "refused: only http and https webhook urls are allowed";
    if (whsig_sign_all(secrets, n, x->id, now_s, x->body, strlen(x->body), sig, sizeof(sig)) < 0)
        return "the webhook's secret is not a Standard Webhooks secret (whsec_ + base64)";
    snprintf(ts, sizeof(ts), "%lld", now_s);
    if (add_header(x, "Content-Type", "application/json") < 0 ||
        add_header(x, "webhook-id", x->id) < 0 || add_header(x, "webhook-timestamp", ts) < 0 ||
        add_header(x, "webhook-signature", sig) < 0 || add_header(x, "Expect", "") < 0)
        return "out of memory";
    if (x->trace.trace_id[0]) {
        char tp[TRACE_PARENT_LEN + 1];
        trace_format(&x->trace, tp);
        if (add_header(x, "traceparent", tp) < 0)
            return "out of memory";
    }
    x->url = strdup(url);
    x->easy = curl_easy_init();
    if (!x->url || !x->easy)
        return "out of memory";
    CURL *e = x->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(x->body));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)ING_WH_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* no proxy from the environment: the guard
                                               judges the address really connected to */
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    x->guard = (ing_whrules_guard_t){
        .off = wh->allow_private,
        .subject = "the webhook host",
        .hint = "private targets are not allowed; MCPQ_WEBHOOK_ALLOW_PRIVATE=0"};
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, ing_whrules_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &x->guard);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    if (curl_multi_add_handle(wh->multi, e) != CURLM_OK)
        return "cannot start the request";
    x->t0_us = util_mono_us();
    x->span = otel_span_start(&x->trace, x->parent_span, "POST", OTEL_KIND_CLIENT, 0);
    otel_span_http(x->span, "POST", url);
    otel_span_str(x->span, "mcpq.tenant", x->tenant);
    otel_span_str(x->span, "mcpq.webhook", x->webhook);
    otel_span_str(x->span, "mcpq.delivery", x->id);
    otel_span_str(x->span, "mcpq.event", x->event);
    otel_span_int(x->span, "mcpq.attempt", x->attempt);
    return NULL;
}

/* Ends the attempt's CLIENT span: the status code, an error from anything but a 2xx. */
static void span_finish(wh_xfer_t *x, long code, CURLcode rc)
{
    char type[24];
    if (!x->span)
        return;
    if (code > 0)
        otel_span_int(x->span, "http.response.status_code", code);
    if (x->guard.refused[0]) {
        otel_span_error(x->span, "refused", x->guard.refused);
    } else if (code > 0 && (code < 200 || code > 299)) {
        snprintf(type, sizeof(type), "%ld", code);
        otel_span_error(x->span, type, NULL);
    } else if (code <= 0) {
        otel_span_error(x->span, rc == CURLE_OPERATION_TIMEDOUT ? "timeout" : "connection_failed",
                        x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
    }
    otel_span_end(x->span, 0);
    x->span = NULL;
}

/* Takes one claimed delivery (CLAIM_FIELDS reply strings): sends it, or records why it is
 * not sent. */
static void dispatch(ing_webhook_t *wh, const ing_registry_t *reg, redisReply **f)
{
    wh_xfer_t *x = calloc(1, sizeof(*x));
    if (!x)
        return; /* the claim comes back after the visibility timeout */
    x->wh = wh;
    snprintf(x->id, sizeof(x->id), "%s", f[0]->str);
    snprintf(x->tenant, sizeof(x->tenant), "%s", f[1]->str);
    snprintf(x->webhook, sizeof(x->webhook), "%s", f[2]->str);
    snprintf(x->event, sizeof(x->event), "%s", f[3]->str);
    snprintf(x->token, sizeof(x->token), "%s", f[7]->str);
    long long att = strtoll(f[5]->str, NULL, 10), base = strtoll(f[6]->str, NULL, 10);
    x->attempt = att - base + 1;
    if (x->attempt < 1)
        x->attempt = 1;
    x->body = strdup(f[4]->str);
    const char *disabled = f[8]->str;
    /* The task's trace, continued with a span per attempt (an unparsable one: none). */
    trace_ctx_t task_trace;
    if (trace_parse(f[9]->str, &task_trace) < 0 || trace_child(&task_trace, &x->trace) < 0)
        memset(&x->trace, 0, sizeof(x->trace));
    else
        snprintf(x->parent_span, sizeof(x->parent_span), "%s", task_trace.span_id);
    const cJSON *w = reg ? find_webhook(reg, x->tenant, x->webhook) : NULL;
    const char *url = w ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "url")) : NULL;
    const char *secrets[2];
    size_t nsecrets = w ? ing_registry_secrets(w, util_now_ms(), secrets) : 0;
    char why[160];
    if (!x->body) {
        xfer_free(x);
        return;
    }
    if (!reg) {
        /* No registry yet: hand the claim back for later. */
        record(wh, x, "pending", 0, "registry not loaded yet", 0, 1000, 0, NULL);
    } else if (!w || !url || !nsecrets) {
        record(wh, x, "failed", 0, "webhook no longer configured", 0, 0, 0, NULL);
    } else if (*disabled && (strcmp(disabled, "1") == 0 || strcmp(disabled, url) == 0)) {
        record(wh, x, "disabled", 0,
               "endpoint disabled: it answered 410 Gone to an earlier delivery (a redelivery "
               "re-enables it)",
               0, 0, 0, NULL);
    } else if (!subscribed(w, x->event)) {
        snprintf(why, sizeof(why), "webhook no longer subscribed to %s", x->event);
        record(wh, x, "failed", 0, why, 0, 0, 0, NULL);
    } else {
        const char *err = start_post(wh, x, url, secrets, nsecrets);
        if (!err) {
            x->next = wh->xfers;
            if (wh->xfers)
                wh->xfers->prev = x;
            wh->xfers = x;
            wh->inflight++;
            return;
        }
        long long d = ing_whrules_next_delay_ms(&wh->sched, x->attempt, -1);
        record(wh, x, d < 0 ? "failed" : "pending", 0, err, 0, d, 1, NULL);
    }
    xfer_free(x);
}

/* Claims up to n due deliveries and starts them; the number claimed, or -1 (Redis). */
static int claim(ing_webhook_t *wh, int n)
{
    char lim[16], vis[24], first[24], tok[64], err[256];
    snprintf(lim, sizeof(lim), "%d", n);
    snprintf(vis, sizeof(vis), "%d", ING_WH_VISIBILITY_MS);
    snprintf(first, sizeof(first), "%lld", wh->sched.s[0] * 1000);
    snprintf(tok, sizeof(tok), "%s:%llu", wh->tok_base, ++wh->seq);
    const char *args[] = {lim, vis, tok, first};
    redisReply *r = eval(wh, "webhook_claim", 4, args, err, sizeof(err));
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % CLAIM_FIELDS != 0) {
        if (!wh->redis_down_logged++)
            log_event(LOG_ERROR, "webhook dispatcher: cannot claim deliveries", "error",
                      r ? "unexpected reply" : err, (char *)NULL);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    if (wh->redis_down_logged) {
        log_event(LOG_INFO, "webhook dispatcher: Redis reachable again", (char *)NULL);
        wh->redis_down_logged = 0;
    }
    int got = (int)(r->elements / CLAIM_FIELDS);
    ing_registry_t *reg = got ? ing_ctx_registry(wh->ctx) : NULL;
    for (size_t i = 0; i < r->elements; i += CLAIM_FIELDS) {
        int ok = 1;
        for (size_t j = 0; j < CLAIM_FIELDS; j++)
            ok &= r->element[i + j]->type == REDIS_REPLY_STRING;
        if (ok)
            dispatch(wh, reg, &r->element[i]);
    }
    ing_registry_unref(reg);
    freeReplyObject(r);
    return got;
}

/* Records the outcome of a finished transfer. */
static void finish(ing_webhook_t *wh, wh_xfer_t *x, CURLcode rc)
{
    long code = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    span_finish(x, code, rc);
    long long us = util_mono_us() - x->t0_us;
    char err[ERR_MAX];
    if (x->guard.refused[0]) {
        snprintf(err, sizeof(err), "%s", x->guard.refused);
        code = 0;
    } else if (code >= 200 && code < 300) {
        record(wh, x, "delivered", code, "", us, 0, 1, NULL);
        return;
    } else if (code == 410) {
        record(wh, x, "disabled", code,
               "HTTP 410 Gone: the endpoint is disabled (a redelivery re-enables it)", us, 0, 1,
               x->url);
        return;
    } else if (code > 0) {
        if (x->snippet[0])
            snprintf(err, sizeof(err), "HTTP %ld: %s", code, x->snippet);
        else
            snprintf(err, sizeof(err), "HTTP %ld", code);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(err, sizeof(err), "no answer within %d s", ING_WH_TIMEOUT_MS / 1000);
    } else {
        snprintf(err, sizeof(err), "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
    }
    long long ra = -1;
    if ((code == 429 || code == 503) && x->retry_after[0])
        ra = ing_whrules_retry_after_ms(x->retry_after, util_now_ms());
    long long d = ing_whrules_next_delay_ms(&wh->sched, x->attempt, ra);
    record(wh, x, d < 0 ? "failed" : "pending", code, err, us, d, 1, NULL);
}

static void reap(ing_webhook_t *wh)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(wh->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        char *priv = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        wh_xfer_t *x = (wh_xfer_t *)priv;
        CURLcode rc = m->data.result;
        if (!x)
            continue;
        finish(wh, x, rc);
        xfer_unlink(x);
        xfer_free(x);
    }
}

/* The queue's depth for /metrics (metrics.h): ZCARD and ZCOUNT of {mcpq}:wh:due, here on the
 * dispatcher's thread every ING_METRICS_WH_QUEUE_MS, so a scrape never waits on Redis. */
static void queue_depth(ing_webhook_t *wh)
{
    char err[256], upto[24];
    snprintf(upto, sizeof(upto), "%lld", (long long)util_now_ms());
    redisReply *all = kv_pool_command(wh->ctx->kv, err, sizeof(err), "ZCARD " WHQ_DUE_KEY);
    redisReply *due =
        all ? kv_pool_command(wh->ctx->kv, err, sizeof(err), "ZCOUNT " WHQ_DUE_KEY " -inf %s", upto)
            : NULL;
    if (all && due && all->type == REDIS_REPLY_INTEGER && due->type == REDIS_REPLY_INTEGER)
        ing_metrics_webhook_queue(wh->ctx->metrics, all->integer, due->integer);
    if (all)
        freeReplyObject(all);
    if (due)
        freeReplyObject(due);
}

/* The task gauges for /metrics (metrics.h), sampled with the queue's depth: running tasks are
 * the members of {mcpq}:task:leases, waiting ones those of the task queues of the robots the
 * registry declares and of {mcpq}:tq:_any (tasks naming an undeclared, shared robot are not
 * counted). One ZCARD per queue, never a scan. */
static void task_counts(ing_webhook_t *wh)
{
    char err[256];
    redisReply *r = kv_pool_command(wh->ctx->kv, err, sizeof(err), "ZCARD " NAMES_KEY_TASK_LEASES);
    long long running = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1, waiting = 0;
    if (r)
        freeReplyObject(r);
    ing_registry_t *reg = running >= 0 ? ing_ctx_registry(wh->ctx) : NULL;
    size_t n = 0;
    const ing_robot_t *robots = reg ? ing_registry_robots(reg, &n) : NULL;
    for (size_t i = 0; running >= 0 && i <= n; i++) {
        const char *robot = i < n ? robots[i].robot : TASK_ROBOT_ANY;
        r = kv_pool_command(wh->ctx->kv, err, sizeof(err), "ZCARD %s%s", NAMES_KEY_TASK_QUEUE,
                            robot);
        if (!r || r->type != REDIS_REPLY_INTEGER)
            running = -1; /* not this time */
        else
            waiting += r->integer;
        if (r)
            freeReplyObject(r);
    }
    ing_registry_unref(reg);
    if (running >= 0)
        ing_metrics_tasks(wh->ctx->metrics, running, waiting);
}

static void *wh_thread(void *arg)
{
    ing_webhook_t *wh = arg;
    int64_t next_claim = 0, next_depth = 0;
    for (;;) {
        int quiescing = atomic_load(&wh->quiescing);
        int64_t now = util_mono_ms();
        if (quiescing && (wh->inflight == 0 || now >= atomic_load(&wh->drain_until)))
            break;
        if (!quiescing && now >= next_depth && wh->ctx->metrics) {
            queue_depth(wh);
            task_counts(wh);
            next_depth = now + ING_METRICS_WH_QUEUE_MS;
        }
        if (!quiescing && now >= next_claim && wh->inflight < wh->max_inflight) {
            int want = wh->max_inflight - wh->inflight;
            int got = claim(wh, want);
            next_claim = now + (got < 0 ? 1000 : got == want ? 0 : ING_WH_POLL_MS);
        }
        int running = 0;
        curl_multi_perform(wh->multi, &running);
        reap(wh);
        long long wait = quiescing || wh->inflight >= wh->max_inflight
                             ? ING_WH_POLL_MS
                             : next_claim - util_mono_ms();
        if (wait > ING_WH_POLL_MS)
            wait = ING_WH_POLL_MS;
        if (wait > 0)
            curl_multi_poll(wh->multi, NULL, 0, (int)wait, NULL);
    }
    /* Still in flight: abort, and hand the claims back so any replica sends them now. */
    while (wh->xfers) {
        wh_xfer_t *x = wh->xfers;
        char err[256];
        const char *args[] = {x->id, x->token};
        redisReply *r = eval(wh, "webhook_release", 2, args, err, sizeof(err));
        if (r)
            freeReplyObject(r);
        log_event(LOG_INFO, "webhook attempt aborted at shutdown; handed back", "tenant", x->tenant,
                  "delivery", x->id, "trace_id", x->trace.trace_id[0] ? x->trace.trace_id : NULL,
                  (char *)NULL);
        xfer_unlink(x);
        xfer_free(x);
    }
    return NULL;
}

ing_webhook_t *ing_webhook_new(ing_ctx_t *ctx, char *errstr, size_t errstr_size)
{
    ing_webhook_t *wh = calloc(1, sizeof(*wh));
    if (!wh) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    wh->ctx = ctx;
    if (ing_whrules_schedule_parse(ctx->set->webhook_retry_schedule, &wh->sched, errstr,
                                   errstr_size) < 0) {
        free(wh);
        return NULL;
    }
    wh->allow_private = ctx->set->webhook_allow_private != 0;
    wh->max_inflight = (int)ctx->set->webhook_max_inflight;
    if (wh->max_inflight < 1)
        wh->max_inflight = 1;
    atomic_init(&wh->quiescing, 0);
    atomic_init(&wh->drain_until, 0);
    char hex[9];
    util_random_hex(hex, 4);
    snprintf(wh->tok_base, sizeof(wh->tok_base), "%.24s-%s", ctx->instance, hex);
    wh->multi = curl_multi_init();
    if (!wh->multi) {
        snprintf(errstr, errstr_size, "cannot create a libcurl multi handle");
        free(wh);
        return NULL;
    }
    curl_multi_setopt(wh->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)wh->max_inflight);
    return wh;
}

int ing_webhook_start(ing_webhook_t *wh)
{
    if (pthread_create(&wh->thread, NULL, wh_thread, wh) != 0)
        return MCPQ_EIO;
    wh->started = 1;
    return 0;
}

void ing_webhook_quiesce(ing_webhook_t *wh, long long grace_ms)
{
    if (!wh)
        return;
    atomic_store(&wh->drain_until, util_mono_ms() + grace_ms);
    atomic_store(&wh->quiescing, 1);
    curl_multi_wakeup(wh->multi);
}

void ing_webhook_free(ing_webhook_t *wh)
{
    if (!wh)
        return;
    if (wh->started) {
        if (!atomic_load(&wh->quiescing))
            ing_webhook_quiesce(wh, 0);
        atomic_store(&wh->drain_until, 0);
        curl_multi_wakeup(wh->multi);
        pthread_join(wh->thread, NULL);
    }
    curl_multi_cleanup(wh->multi);
    free(wh);
}
