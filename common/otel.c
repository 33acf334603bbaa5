#include "otel.h"

#include "err.h"
#include "log.h"
#include "version.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define OTEL_BODY_MAX (64u << 20) /* one batch's JSON */
#define OTEL_WARN_EVERY_MS 60000  /* export failures: one warning a minute */
#define OTEL_RETRIES 2            /* retries of a batch answered retryably (export_send) */
#define OTEL_BACKOFF_MS 1000      /* the first retry's wait without Retry-After, doubling */

/* The process's exporter (otel.h: one per process, like the log). */
static struct {
    atomic_int on;
    otel_config_t cfg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    otel_span_t **q; /* a ring of cfg.queue_max ended spans */
    size_t head, len;
    int stopping;
    atomic_ullong exported, dropped_full, dropped_failed;
    int64_t last_warn_ms;
} ex = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- configuration (the OpenTelemetry SDK environment variables) ---- */

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int hexdigit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* s[0..n) percent-decoded and trimmed of spaces into out (cut to size). */
static void pct_decode(const char *s, size_t n, char *out, size_t size)
{
    while (n && *s == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < size; i++) {
        if (s[i] == '%' && i + 2 < n && hexdigit(s[i + 1]) >= 0 && hexdigit(s[i + 2]) >= 0) {
            out[o++] = (char)(hexdigit(s[i + 1]) << 4 | hexdigit(s[i + 2]));
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
}

/* "k=v,k2=v2" (W3C Baggage-like, percent-encoded) appended to kv (up to max). Entries without
 * "=" or with an empty key are skipped. */
static void kv_list_parse(const char *s, otel_kv_t *kv, int *n, int max)
{
    while (s && *s && *n < max) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        const char *eq = memchr(s, '=', len);
        if (eq) {
            otel_kv_t *e = &kv[*n];
            pct_decode(s, (size_t)(eq - s), e->key, sizeof(e->key));
            pct_decode(eq + 1, len - (size_t)(eq - s) - 1, e->value, sizeof(e->value));
            if (e->key[0])
                (*n)++;
        }
        s = end ? end + 1 : NULL;
    }
}

/* A non-negative integer variable (ms or a count) into *out, default def. */
static int env_long(const char *name, long def, long min, long *out, char *err, size_t errlen)
{
    const char *v = env_nonempty(name);
    *out = def;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < min) {
        snprintf(err, errlen, "%s must be an integer >= %ld, got \"%.64s\"", name, min, v);
        return MCPQ_EINVAL;
    }
    *out = x;
    return 0;
}

/* The endpoint: the traces one as it is, else the base one with "/v1/traces". 1 when set. */
static int config_url(otel_config_t *cfg)
{
    const char *t = env_nonempty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    const char *b = env_nonempty("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (t) {
        snprintf(cfg->url, sizeof(cfg->url), "%s", t);
    } else if (b) {
        size_t n = strlen(b);
        snprintf(cfg->url, sizeof(cfg->url), "%.*s/v1/traces",
                 (int)(n && b[n - 1] == '/' ? n - 1 : n), b);
    }
    return t || b;
}

static int env_true(const char *name)
{
    const char *v = env_nonempty(name);
    return v && strcasecmp(v, "true") == 0;
}

/* OTEL_TRACES_SAMPLER and its argument. */
static int config_sampler(otel_config_t *cfg, char *err, size_t errlen)
{
    const char *s = env_nonempty("OTEL_TRACES_SAMPLER");
    const char *arg = env_nonempty("OTEL_TRACES_SAMPLER_ARG");
    cfg->sampler = OTEL_SAMPLER_ON;
    cfg->parent_based = 1; /* the specification's default: parentbased_always_on */
    cfg->ratio = 1.0;
    if (!s)
        return 0;
    cfg->parent_based = strncmp(s, "parentbased_", 12) == 0;
    const char *base = cfg->parent_based ? s + 12 : s;
    if (strcmp(base, "always_on") == 0) {
        cfg->sampler = OTEL_SAMPLER_ON;
    } else if (strcmp(base, "always_off") == 0) {
        cfg->sampler = OTEL_SAMPLER_OFF;
    } else if (strcmp(base, "traceidratio") == 0) {
        cfg->sampler = OTEL_SAMPLER_RATIO;
        char *end = NULL;
        double r = arg ? strtod(arg, &end) : 1.0;
        if (arg && (*end || !(r >= 0.0 && r <= 1.0))) {
            snprintf(err, errlen,
                     "OTEL_TRACES_SAMPLER_ARG must be a number in [0, 1], got \"%.64s\"", arg);
            return MCPQ_EINVAL;
        }
        cfg->ratio = r;
    } else {
        snprintf(err, errlen,
                 "OTEL_TRACES_SAMPLER \"%.64s\" is not supported (always_on, always_off, "
                 "traceidratio, parentbased_always_on, parentbased_always_off, "
                 "parentbased_traceidratio)",
                 s);
        return MCPQ_EINVAL;
    }
    return 0;
}

/* service.name first (OTEL_SERVICE_NAME, else the resource's, else the default), then the
 * build and the instance, then the rest of OTEL_RESOURCE_ATTRIBUTES. */
static void config_resource(otel_config_t *cfg, const char *default_service)
{
    otel_kv_t given[OTEL_RES_MAX];
    int ngiven = 0;
    kv_list_parse(getenv("OTEL_RESOURCE_ATTRIBUTES"), given, &ngiven, OTEL_RES_MAX);
    const char *name = env_nonempty("OTEL_SERVICE_NAME");
    for (int i = 0; !name && i < ngiven; i++)
        if (strcmp(given[i].key, "service.name") == 0)
            name = given[i].value;
    char host[64] = "host";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    otel_kv_t *r = cfg->resource;
    snprintf(r[0].key, sizeof(r[0].key), "service.name");
    snprintf(r[0].value, sizeof(r[0].value), "%s", name ? name : default_service);
    snprintf(r[1].key, sizeof(r[1].key), "service.version");
    snprintf(r[1].value, sizeof(r[1].value), "%s", version_get());
    snprintf(r[2].key, sizeof(r[2].key), "service.instance.id");
    snprintf(r[2].value, sizeof(r[2].value), "%s-%ld", host, (long)getpid());
    cfg->nresource = 3;
    for (int i = 0; i < ngiven && cfg->nresource < OTEL_RES_MAX; i++) {
        int dup = 0;
        for (int j = 0; j < cfg->nresource; j++)
            dup |= strcmp(r[j].key, given[i].key) == 0;
        if (!dup)
            r[cfg->nresource++] = given[i];
    }
}

/* OTEL_EXPORTER_OTLP_PROTOCOL: JSON is what this exporter speaks; the other two are accepted
 * with a warning (docs/operations.md, "Traces (OpenTelemetry)"). */
static void config_protocol(otel_config_t *cfg)
{
    const char *p = env_nonempty("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    if (!p)
        p = env_nonempty("OTEL_EXPORTER_OTLP_PROTOCOL");
    if (p && strcmp(p, "http/json") != 0)
        snprintf(cfg->warning, sizeof(cfg->warning),
                 "OTEL_EXPORTER_OTLP_PROTOCOL=%.32s is not supported: spans are sent as "
                 "http/json (an OTLP/HTTP collector accepts both; a gRPC port does not)",
                 p);
}

int otel_config_load(otel_config_t *cfg, const char *default_service, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    int have = config_url(cfg);
    const char *exporter = env_nonempty("OTEL_TRACES_EXPORTER");
    cfg->enabled =
        have && !env_true("OTEL_SDK_DISABLED") && !(exporter && strcmp(exporter, "none") == 0);
    if (cfg->enabled && strncasecmp(cfg->url, "http://", 7) != 0 &&
        strncasecmp(cfg->url, "https://", 8) != 0) {
        snprintf(err, errlen,
                 "the OTLP endpoint must be an http:// or https:// URL, got \"%.200s\"", cfg->url);
        return MCPQ_EINVAL;
    }
    if (exporter && strcmp(exporter, "otlp") != 0 && strcmp(exporter, "none") != 0)
        snprintf(cfg->warning, sizeof(cfg->warning),
                 "OTEL_TRACES_EXPORTER=%.32s is not supported: exporting with otlp", exporter);
    config_protocol(cfg);
    long timeout_all;
    if (env_long("OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1, &cfg->queue_max, err, errlen) < 0 ||
        env_long("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1, &cfg->batch_max, err, errlen) < 0 ||
        env_long("OTEL_BSP_SCHEDULE_DELAY", 5000, 0, &cfg->delay_ms, err, errlen) < 0 ||
        env_long("OTEL_EXPORTER_OTLP_TIMEOUT", 10000, 1, &timeout_all, err, errlen) < 0 ||
        env_long("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", timeout_all, 1, &cfg->timeout_ms, err,
                 errlen) < 0 ||
        config_sampler(cfg, err, errlen) < 0)
        return MCPQ_EINVAL;
    if (cfg->batch_max > cfg->queue_max)
        cfg->batch_max = cfg->queue_max;
    kv_list_parse(getenv("OTEL_EXPORTER_OTLP_HEADERS"), cfg->headers, &cfg->nheaders,
                  OTEL_HEADERS_MAX);
    kv_list_parse(getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), cfg->headers, &cfg->nheaders,
                  OTEL_HEADERS_MAX);
    config_resource(cfg, default_service);
    return 0;
}

void otel_describe(FILE *out, const char *default_service)
{
    otel_config_t cfg;
    char err[300];
    if (otel_config_load(&cfg, default_service, err, sizeof(err)) < 0)
        fprintf(out, "# trace export (OpenTelemetry): invalid: %s\n", err);
    else if (!cfg.enabled)
        fprintf(out, "# trace export (OpenTelemetry): off\n");
    else
        fprintf(out, "# trace export (OpenTelemetry): on, OTLP/HTTP JSON to %s as %s\n", cfg.url,
                cfg.resource[0].value);
}

/* ---- sampling ---- */

int otel_sample(const trace_ctx_t *parent, const char *trace_id)
{
    if (!atomic_load_explicit(&ex.on, memory_order_relaxed))
        return parent ? (parent->flags & 1) : 1;
    const otel_config_t *c = &ex.cfg;
    if (parent && c->parent_based)
        return parent->flags & 1;
    if (c->sampler == OTEL_SAMPLER_ON)
        return 1;
    if (c->sampler == OTEL_SAMPLER_OFF || !trace_id || strlen(trace_id) != TRACE_ID_HEX)
        return 0;
    /* TraceIdRatioBased: the trace id's last 8 bytes as a number below ratio * 2^64. */
    unsigned long long x = strtoull(trace_id + 16, NULL, 16);
    return (long double)x < (long double)c->ratio * 18446744073709551616.0L;
}

/* ---- spans ---- */

otel_span_t *otel_span_start(const trace_ctx_t *ctx, const char *parent_id, const char *name,
                             otel_kind_t kind, int64_t start_us)
{
    if (!atomic_load_explicit(&ex.on, memory_order_relaxed) || !ctx || !ctx->trace_id[0] ||
        !(ctx->flags & 1))
        return NULL;
    otel_span_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    memcpy(s->trace_id, ctx->trace_id, sizeof(s->trace_id));
    memcpy(s->span_id, ctx->span_id, sizeof(s->span_id));
    snprintf(s->parent_id, sizeof(s->parent_id), "%s", parent_id ? parent_id : "");
    snprintf(s->name, sizeof(s->name), "%s", name ? name : "span");
    s->kind = kind;
    s->start_us = start_us > 0 ? start_us : util_now_us();
    return s;
}

otel_span_t *otel_span_child(const char *parent, const char *name, otel_kind_t kind,
                             char out[TRACE_PARENT_LEN + 1])
{
    trace_ctx_t p, c;
    out[0] = '\0';
    if (!parent || trace_parse(parent, &p) < 0)
        return NULL;
    trace_format(&p, out);
    if (!atomic_load_explicit(&ex.on, memory_order_relaxed) || !(p.flags & 1) ||
        trace_child(&p, &c) < 0)
        return NULL;
    otel_span_t *s = otel_span_start(&c, p.span_id, name, kind, 0);
    if (s)
        trace_format(&c, out);
    return s;
}

/* The attribute slot of key: the existing one, else a new one; NULL when full. */
static otel_attr_t *attr_slot(otel_span_t *s, const char *key)
{
    for (int i = 0; i < s->nattrs; i++)
        if (strncmp(s->attrs[i].key, key, OTEL_KEY_MAX - 1) == 0)
            return &s->attrs[i];
    if (s->nattrs == OTEL_ATTR_MAX)
        return NULL;
    otel_attr_t *a = &s->attrs[s->nattrs++];
    snprintf(a->key, sizeof(a->key), "%s", key);
    return a;
}

void otel_span_str(otel_span_t *s, const char *key, const char *value)
{
    otel_attr_t *a = s && key && value ? attr_slot(s, key) : NULL;
    if (!a)
        return;
    a->type = 's';
    snprintf(a->s, sizeof(a->s), "%s", value);
}

void otel_span_int(otel_span_t *s, const char *key, long long value)
{
    otel_attr_t *a = s && key ? attr_slot(s, key) : NULL;
    if (!a)
        return;
    a->type = 'i';
    a->i = value;
}

void otel_span_bool(otel_span_t *s, const char *key, int value)
{
    otel_attr_t *a = s && key ? attr_slot(s, key) : NULL;
    if (!a)
        return;
    a->type = 'b';
    a->i = value != 0;
}

void otel_span_http(otel_span_t *s, const char *method, const char *url)
{
    if (!s)
        return;
    otel_span_str(s, "http.request.method", method);
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK) {
        char full[OTEL_VALUE_MAX];
        snprintf(full, sizeof(full), "%s://%s:%s%s", scheme, host, port, path);
        otel_span_str(s, "url.full", full);
        otel_span_str(s, "server.address", host);
        otel_span_int(s, "server.port", strtol(port, NULL, 10));
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
}

void otel_span_error(otel_span_t *s, const char *type, const char *message)
{
    if (!s)
        return;
    s->status = OTEL_STATUS_ERROR;
    snprintf(s->status_msg, sizeof(s->status_msg), "%s", message ? message : "");
    otel_span_str(s, "error.type", type);
}

void otel_span_free(otel_span_t *s)
{
    free(s);
}

void otel_span_end(otel_span_t *s, int64_t end_us)
{
    if (!s)
        return;
    s->end_us = end_us > 0 ? end_us : util_now_us();
    if (s->end_us < s->start_us)
        s->end_us = s->start_us;
    int wake = 0, queued = 0;
    pthread_mutex_lock(&ex.mu);
    if (ex.q && !ex.stopping && ex.len < (size_t)ex.cfg.queue_max) {
        ex.q[(ex.head + ex.len) % (size_t)ex.cfg.queue_max] = s;
        ex.len++;
        queued = 1;
        wake = ex.len == (size_t)ex.cfg.batch_max;
    }
    pthread_mutex_unlock(&ex.mu);
    if (wake)
        pthread_cond_signal(&ex.cv);
    if (!queued) {
        atomic_fetch_add(&ex.dropped_full, 1);
        free(s);
    }
}

/* ---- OTLP/HTTP JSON (opentelemetry-proto's JSON mapping: hex ids, 64-bit integers as strings,
 * enums as numbers) ---- */

static cJSON *attr_json(const char *key, char type, long long i, const char *s)
{
    cJSON *a = cJSON_CreateObject();
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "key", key);
    cJSON_AddItemToObject(a, "value", v);
    if (type == 's') {
        cJSON_AddStringToObject(v, "stringValue", s);
    } else if (type == 'b') {
        cJSON_AddBoolToObject(v, "boolValue", i != 0);
    } else {
        char n[24];
        snprintf(n, sizeof(n), "%lld", i);
        cJSON_AddStringToObject(v, "intValue", n);
    }
    return a;
}

static void add_nanos(cJSON *o, const char *key, int64_t us)
{
    char n[32];
    snprintf(n, sizeof(n), "%lld000", (long long)us);
    cJSON_AddStringToObject(o, key, n);
}

static cJSON *span_json(const otel_span_t *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "traceId", s->trace_id);
    cJSON_AddStringToObject(o, "spanId", s->span_id);
    if (s->parent_id[0])
        cJSON_AddStringToObject(o, "parentSpanId", s->parent_id);
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddNumberToObject(o, "kind", s->kind);
    add_nanos(o, "startTimeUnixNano", s->start_us);
    add_nanos(o, "endTimeUnixNano", s->end_us);
    cJSON *attrs = cJSON_AddArrayToObject(o, "attributes");
    for (int i = 0; i < s->nattrs; i++)
        cJSON_AddItemToArray(
            attrs, attr_json(s->attrs[i].key, s->attrs[i].type, s->attrs[i].i, s->attrs[i].s));
    cJSON *st = cJSON_AddObjectToObject(o, "status");
    if (s->status != OTEL_STATUS_UNSET)
        cJSON_AddNumberToObject(st, "code", s->status);
    if (s->status_msg[0])
        cJSON_AddStringToObject(st, "message", s->status_msg);
    return o;
}

int otel_spans_json(otel_span_t *const *spans, size_t n, util_buf_t *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *rs = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "resourceSpans"), rs);
    cJSON *rattrs = cJSON_AddArrayToObject(cJSON_AddObjectToObject(rs, "resource"), "attributes");
    for (int i = 0; i < ex.cfg.nresource; i++)
        cJSON_AddItemToArray(rattrs,
                             attr_json(ex.cfg.resource[i].key, 's', 0, ex.cfg.resource[i].value));
    cJSON *ss = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(rs, "scopeSpans"), ss);
    cJSON *scope = cJSON_AddObjectToObject(ss, "scope");
    cJSON_AddStringToObject(scope, "name", "mcpq");
    cJSON_AddStringToObject(scope, "version", version_get());
    cJSON *arr = cJSON_AddArrayToObject(ss, "spans");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, span_json(spans[i]));
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text)
        return MCPQ_ENOMEM;
    int rc = util_buf_append(out, text, strlen(text));
    cJSON_free(text);
    return rc;
}

/* ---- the exporter thread ---- */

static size_t discard_body(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* One POST of body with timeout_ms: 0, or -1 with why in err and, when the answer may be
 * retried (the OTLP/HTTP specification's retryable answers: 429, 502, 503, 504; or the
 * collector refused the connection), *retry_s set to the Retry-After seconds it sent (0:
 * none), else *retry_s = -1. */
static int export_post(CURL *e, struct curl_slist *hdrs, const util_buf_t *body, long timeout_ms,
                       long *retry_s, char *err, size_t errlen)
{
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(e, CURLOPT_URL, ex.cfg.url);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body->data);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "mcpq-otlp");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    curl_off_t after = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &after);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
    *retry_s = -1;
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", ebuf[0] ? ebuf : curl_easy_strerror(cc));
        if (cc == CURLE_COULDNT_CONNECT)
            *retry_s = 0;
        return -1;
    }
    if (status < 200 || status > 299) {
        snprintf(err, errlen, "the collector answered HTTP %ld", status);
        if (status == 429 || status == 502 || status == 503 || status == 504)
            *retry_s = after > 0 ? (long)(after > 3600 ? 3600 : after) : 0;
        return -1;
    }
    return 0;
}

/* Waits ms on the exporter's condition variable; returns early when the process stops. */
static void export_wait(long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&ex.mu);
    while (!ex.stopping)
        if (pthread_cond_timedwait(&ex.cv, &ex.mu, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&ex.mu);
}

/* Sends body, retrying a retryable failure (export_post) at most OTEL_RETRIES times after the
 * collector's Retry-After, else OTEL_BACKOFF_MS doubling; every attempt and wait within one
 * export timeout from the first attempt: a wait that would end past it is not waited, the
 * batch fails. 0, or -1 with the last failure in err. */
static int export_send(CURL *e, struct curl_slist *hdrs, const util_buf_t *body, char *err,
                       size_t errlen)
{
    int64_t deadline = util_mono_ms() + ex.cfg.timeout_ms;
    long backoff = OTEL_BACKOFF_MS, retry_s;
    for (int attempt = 0;; attempt++) {
        long left = (long)(deadline - util_mono_ms());
        if (export_post(e, hdrs, body, left > 1 ? left : 1, &retry_s, err, errlen) == 0)
            return 0;
        long wait = retry_s > 0 ? retry_s * 1000 : backoff;
        if (retry_s < 0 || attempt == OTEL_RETRIES || util_mono_ms() + wait >= deadline)
            return -1;
        export_wait(wait);
        backoff *= 2;
    }
}

/* Exports batch[0..n) (and frees it): counted as exported or dropped. */
static void export_batch(CURL *e, struct curl_slist *hdrs, otel_span_t **batch, size_t n)
{
    util_buf_t body;
    char err[CURL_ERROR_SIZE + 64] = "out of memory";
    util_buf_init(&body, OTEL_BODY_MAX);
    int ok = e && otel_spans_json(batch, n, &body) == 0 &&
             export_send(e, hdrs, &body, err, sizeof(err)) == 0;
    util_buf_cleanup(&body);
    for (size_t i = 0; i < n; i++)
        free(batch[i]);
    if (ok) {
        atomic_fetch_add(&ex.exported, n);
        return;
    }
    atomic_fetch_add(&ex.dropped_failed, n);
    int64_t now = util_mono_ms();
    if (ex.last_warn_ms == 0 || now - ex.last_warn_ms >= OTEL_WARN_EVERY_MS) {
        ex.last_warn_ms = now;
        char count[24];
        snprintf(count, sizeof(count), "%zu", n);
        log_event(LOG_WARN, "span export failed: spans dropped (one warning a minute at most)",
                  "endpoint", ex.cfg.url, "error", err, "spans", count, (char *)NULL);
    }
}

/* Takes up to batch_max spans off the queue into batch once a batch is full, the schedule
 * delay passed or the process stops; 0 with nothing queued and stopping. Under ex.mu. */
static size_t batch_take(otel_span_t **batch)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ex.cfg.delay_ms / 1000;
    until.tv_nsec += (ex.cfg.delay_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!ex.stopping && ex.len < (size_t)ex.cfg.batch_max)
        if (pthread_cond_timedwait(&ex.cv, &ex.mu, &until) == ETIMEDOUT)
            break;
    size_t n = 0;
    while (ex.len && n < (size_t)ex.cfg.batch_max) {
        batch[n++] = ex.q[ex.head];
        ex.head = (ex.head + 1) % (size_t)ex.cfg.queue_max;
        ex.len--;
    }
    return n;
}

static void *export_thread(void *arg)
{
    (void)arg;
    otel_span_t **batch = calloc((size_t)ex.cfg.batch_max, sizeof(*batch));
    CURL *e = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    for (int i = 0; i < ex.cfg.nheaders; i++) {
        char line[OTEL_KEY_MAX + OTEL_VALUE_MAX + 4];
        snprintf(line, sizeof(line), "%s: %s", ex.cfg.headers[i].key, ex.cfg.headers[i].value);
        if (!strpbrk(line, "\r\n"))
            hdrs = curl_slist_append(hdrs, line);
    }
    int64_t stop_by = 0;
    pthread_mutex_lock(&ex.mu);
    for (;;) {
        size_t n = batch ? batch_take(batch) : 0;
        if (ex.stopping && !stop_by)
            stop_by = util_mono_ms() + ex.cfg.timeout_ms;
        int late = stop_by && util_mono_ms() > stop_by;
        if (n == 0 && ex.stopping)
            break;
        pthread_mutex_unlock(&ex.mu);
        if (late) /* the shutdown's bound passed: what is left is dropped, counted */
            e = (curl_easy_cleanup(e), NULL);
        if (n) /* the schedule delay passed with nothing queued: nothing to send */
            export_batch(e, hdrs, batch, n);
        pthread_mutex_lock(&ex.mu);
    }
    pthread_mutex_unlock(&ex.mu);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(e);
    free(batch);
    return NULL;
}

int otel_init(const char *default_service, char *err, size_t errlen)
{
    if (otel_config_load(&ex.cfg, default_service, err, errlen) < 0)
        return MCPQ_EINVAL;
    if (ex.cfg.warning[0])
        log_event(LOG_WARN, ex.cfg.warning, (char *)NULL);
    if (!ex.cfg.enabled)
        return 0;
    ex.q = calloc((size_t)ex.cfg.queue_max, sizeof(*ex.q));
    if (!ex.q) {
        snprintf(err, errlen, "out of memory for the span queue");
        return MCPQ_ENOMEM;
    }
    ex.stopping = 0;
    if (pthread_create(&ex.thread, NULL, export_thread, NULL) != 0) {
        free(ex.q);
        ex.q = NULL;
        snprintf(err, errlen, "cannot start the span exporter thread");
        return MCPQ_ENOMEM;
    }
    atomic_store(&ex.on, 1);
    log_event(LOG_INFO, "exporting spans (OTLP/HTTP JSON)", "endpoint", ex.cfg.url, "service",
              ex.cfg.resource[0].value, (char *)NULL);
    return 0;
}

void otel_shutdown(void)
{
    if (!atomic_exchange(&ex.on, 0))
        return;
    pthread_mutex_lock(&ex.mu);
    ex.stopping = 1;
    pthread_mutex_unlock(&ex.mu);
    pthread_cond_signal(&ex.cv);
    pthread_join(ex.thread, NULL);
    free(ex.q);
    ex.q = NULL;
    ex.len = ex.head = 0;
}

int otel_enabled(void)
{
    return atomic_load_explicit(&ex.on, memory_order_relaxed);
}

/* ---- self-metrics ---- */

int otel_metrics_render(util_buf_t *out)
{
    pthread_mutex_lock(&ex.mu);
    size_t queued = ex.len;
    pthread_mutex_unlock(&ex.mu);
    char text[1400];
    int n = snprintf(
        text, sizeof(text),
        "# HELP mcpq_otel_spans_exported_total Spans the OTLP exporter delivered to the "
        "collector.\n"
        "# TYPE mcpq_otel_spans_exported_total counter\n"
        "mcpq_otel_spans_exported_total %llu\n"
        "# HELP mcpq_otel_spans_dropped_total Spans dropped: the queue was full, or their batch "
        "could not be exported.\n"
        "# TYPE mcpq_otel_spans_dropped_total counter\n"
        "mcpq_otel_spans_dropped_total{reason=\"queue_full\"} %llu\n"
        "mcpq_otel_spans_dropped_total{reason=\"export_failed\"} %llu\n"
        "# HELP mcpq_otel_queue_spans Ended spans waiting for export.\n"
        "# TYPE mcpq_otel_queue_spans gauge\n"
        "mcpq_otel_queue_spans %zu\n",
        atomic_load(&ex.exported), atomic_load(&ex.dropped_full), atomic_load(&ex.dropped_failed),
        queued);
    return util_buf_append(out, text, (size_t)n);
}
