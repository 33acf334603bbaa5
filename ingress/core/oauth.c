/*
 * oauth.c - the keys and introspection answers behind OAuth bearer tokens (oauth.h).
 *
 * One lock guards everything below; the fetch thread alone touches the curl multi handle and
 * the transfers (oauthhttp.h), the HTTP threads only mark what they need (an issuer's "want",
 * a new introspection job) and wake it with curl_multi_wakeup. A key set is shared by
 * reference count so that jwt_verify runs outside the lock.
 */
#include "oauth.h"

#include "err.h"
#include "jwt.h"
#include "log.h"
#include "oauthcache.h"
#include "oauthhttp.h"
#include "util.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 1000 /* the fetch thread looks at its schedule at least this often */
#define TOKEN_MAX JWT_TOKEN_MAX

/* Parked requests, each woken once; a list so that handing them over never allocates. */
typedef struct waiter {
    struct waiter *next;
    ing_oauth_wake_fn fn;
    void *arg;
} waiter_t;

typedef struct wlist {
    waiter_t *head, *tail;
    size_t n;
} wlist_t;

typedef struct keys {
    int refs; /* under the lock */
    jwt_keyset_t *ks;
} keys_t;

typedef enum { X_DISCOVER, X_JWKS, X_INTRO } xkind_t;

struct iss;
struct ijob;

typedef struct xfer {
    xkind_t kind;
    int step; /* X_DISCOVER: the discovery URL tried (ing_oauthhttp_discovery_url) */
    struct iss *iss;
    struct ijob *job;
    ing_oauthhttp_t *h;
    char url[2048];
} xfer_t;

/* One trusted issuer. */
typedef struct iss {
    struct iss *next;
    char *issuer;
    char *jwks_cfg;     /* the configured jwks_uri, or NULL */
    char *jwks_found;   /* the discovered one (NULL: discover first) */
    keys_t *keys;       /* the last good keys, or NULL */
    int want;           /* a fetch is asked for */
    int attempted;      /* a fetch has ended at least once */
    int failing;        /* the last fetch failed (warned once) */
    int64_t started_ms; /* monotonic start of the last fetch */
    int64_t refresh_ms; /* monotonic time of the next background fetch (0: none yet) */
    wlist_t waiters;
    xfer_t *x; /* the fetch under way, or NULL */
} iss_t;

/* One tenant's introspection endpoint: the only one its opaque tokens are sent to (oauth.h).
 * Shared by the list and the jobs that use it. */
typedef struct isrc {
    int refs;     /* under the lock */
    size_t njobs; /* its introspections under way (at most ING_OAUTH_MAX_INTROSPECTIONS) */
    char *tenant, *issuer, *endpoint, *client_id, *secret;
} isrc_t;

/* One opaque token being introspected at one tenant's endpoint. */
typedef struct ijob {
    struct ijob *next;
    char hash[65]; /* the cache key (token_key) */
    char *token;   /* wiped and freed when the job ends */
    isrc_t *src;
    wlist_t waiters;
    xfer_t *x;
} ijob_t;

struct ing_oauth {
    int skew_s;
    long timeout_ms;
    int64_t min_refresh_ms, max_age_ms, ttl_ms;
    ing_metrics_t *metrics;
    pthread_mutex_t lock;
    pthread_t thread;
    int started;
    CURLM *multi;
    int stop;
    iss_t *issuers, *retired;
    isrc_t **srcs; /* one per tenant that introspects */
    size_t nsrcs;
    ijob_t *jobs;
    size_t njobs; /* all tenants' (at most ING_OAUTH_MAX_INTROSPECTIONS_ALL) */
    ing_oauthcache_t *cache;
};

/* ---- waiters ---- */

static int wlist_add(wlist_t *l, ing_oauth_wake_fn fn, void *arg)
{
    if (!fn)
        return 0; /* nobody to wake: still worth the fetch */
    waiter_t *w = l->n < ING_OAUTH_MAX_WAITERS ? malloc(sizeof(*w)) : NULL;
    if (!w)
        return -1;
    *w = (waiter_t){NULL, fn, arg};
    if (l->tail)
        l->tail->next = w;
    else
        l->head = w;
    l->tail = w;
    l->n++;
    return 0;
}

/* Moves src's waiters to the end of dst. */
static void wlist_take(wlist_t *dst, wlist_t *src)
{
    if (!src->head)
        return;
    if (dst->tail)
        dst->tail->next = src->head;
    else
        dst->head = src->head;
    dst->tail = src->tail;
    dst->n += src->n;
    *src = (wlist_t){0};
}

/* Calls every waiter once; never with the lock held. */
static void wlist_wake(wlist_t *l)
{
    for (waiter_t *w = l->head, *next; w; w = next) {
        next = w->next;
        w->fn(w->arg);
        free(w);
    }
    *l = (wlist_t){0};
}

/* ---- keys, issuers, sources ---- */

static void keys_unref(keys_t *k)
{
    if (k && --k->refs == 0) {
        jwt_keyset_free(k->ks);
        free(k);
    }
}

static void xfer_free(ing_oauth_t *o, xfer_t *x)
{
    if (!x)
        return;
    if (x->h && x->h->easy)
        curl_multi_remove_handle(o->multi, x->h->easy);
    ing_oauthhttp_free(x->h);
    free(x);
}

/* Frees an issuer, its waiters handed to wake. Fetch thread (its transfer) or free. */
static void iss_free(ing_oauth_t *o, iss_t *is, wlist_t *wake)
{
    xfer_free(o, is->x);
    wlist_take(wake, &is->waiters);
    keys_unref(is->keys);
    free(is->issuer);
    free(is->jwks_cfg);
    free(is->jwks_found);
    free(is);
}

static iss_t *iss_find(iss_t *l, const char *issuer)
{
    for (; l; l = l->next)
        if (strcmp(l->issuer, issuer) == 0)
            return l;
    return NULL;
}

static void isrc_unref(isrc_t *s)
{
    if (!s || --s->refs > 0)
        return;
    free(s->tenant);
    free(s->issuer);
    free(s->endpoint);
    free(s->client_id);
    if (s->secret) {
        explicit_bzero(s->secret, strlen(s->secret));
        free(s->secret);
    }
    free(s);
}

static void isrcs_free(isrc_t **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        isrc_unref(l[i]);
    free(l);
}

/* The source of tenant among l[0..n), or NULL. */
static isrc_t *isrc_find(isrc_t *const *l, size_t n, const char *tenant)
{
    for (size_t i = 0; i < n && tenant; i++)
        if (strcmp(l[i]->tenant, tenant) == 0)
            return l[i];
    return NULL;
}

/* The cache and job key of token at source s: hex(HMAC-SHA256(SHA-256(token), tenant, endpoint,
 * client id)), so that an answer is reused only for the source that gave it. */
static void token_key(const isrc_t *s, const char *token, char out[65])
{
    char th[65], id[4096];
    util_sha256_hex(token, strlen(token), th);
    int n = snprintf(id, sizeof(id), "%s\n%s\n%s", s->tenant, s->endpoint,
                     s->client_id ? s->client_id : "");
    util_hmac_sha256_hex(th, 64, id,
                         n < 0                    ? 0
                         : (size_t)n < sizeof(id) ? (size_t)n
                                                  : sizeof(id) - 1,
                         out);
    explicit_bzero(th, sizeof(th));
}

static void job_free(ing_oauth_t *o, ijob_t *j, wlist_t *wake)
{
    xfer_free(o, j->x);
    wlist_take(wake, &j->waiters);
    if (j->token) {
        explicit_bzero(j->token, strlen(j->token));
        free(j->token);
    }
    isrc_unref(j->src);
    free(j);
}

static void count_keys(ing_oauth_t *o)
{
    long long n = 0;
    for (iss_t *is = o->issuers; is; is = is->next)
        n += is->keys ? (long long)jwt_keyset_count(is->keys->ks) : 0;
    ing_metrics_oauth_keys(o->metrics, n);
}

/* ---- the fetch thread: key fetches ---- */

static void fetch_failed(ing_oauth_t *o, iss_t *is, const char *url, const char *why)
{
    if (!is->failing)
        log_event(LOG_WARN,
                  "oauth: cannot fetch the issuer's keys (the last good keys, if any, "
                  "stay in use; retried)",
                  "issuer", is->issuer, "url", url, "error", why, (char *)NULL);
    is->failing = 1;
    free(is->jwks_found); /* discover again next time */
    is->jwks_found = NULL;
    is->refresh_ms = util_mono_ms() + o->min_refresh_ms;
    ing_metrics_oauth_fetch(o->metrics, 0);
}

/* Adds x's request to the multi handle; 0, or -1 (x->h freed). */
static int xfer_add(ing_oauth_t *o, xfer_t *x)
{
    if (!x->h || curl_multi_add_handle(o->multi, x->h->easy) != CURLM_OK) {
        ing_oauthhttp_free(x->h);
        x->h = NULL;
        return -1;
    }
    return 0;
}

/* Starts the next request of an issuer's fetch: discovery URL `step`, or the JWKS when its URL
 * is known (step < 0). 0, or -1 with *why when nothing could be started. */
static int fetch_step(ing_oauth_t *o, iss_t *is, int step, const char **why)
{
    xfer_t *x = calloc(1, sizeof(*x));
    *why = "out of memory";
    if (!x)
        return -1;
    x->iss = is;
    const char *jwks = is->jwks_cfg ? is->jwks_cfg : is->jwks_found;
    if (step < 0 && jwks) {
        x->kind = X_JWKS;
        snprintf(x->url, sizeof(x->url), "%s", jwks);
    } else {
        x->kind = X_DISCOVER;
        x->step = step < 0 ? 0 : step;
        if (ing_oauthhttp_discovery_url(is->issuer, x->step, x->url, sizeof(x->url)) < 0) {
            *why = "no authorization server metadata found (RFC 8414 and OpenID discovery)";
            free(x);
            return -1;
        }
    }
    /* a jwks_uri learned by discovery, elsewhere than its issuer: under the SSRF guard */
    int learned =
        x->kind == X_JWKS && !is->jwks_cfg && !ing_oauthhttp_same_origin(jwks, is->issuer);
    x->h = ing_oauthhttp_get(x->url, o->timeout_ms, x, learned);
    if (xfer_add(o, x) < 0) {
        *why = "cannot start the request (a URL that is not https, or out of memory)";
        free(x);
        return -1;
    }
    is->x = x;
    return 0;
}

/* The end of an issuer's fetch, either way: its waiters go to wake. */
static void fetch_end(iss_t *is, wlist_t *wake)
{
    is->x = NULL;
    is->attempted = 1;
    wlist_take(wake, &is->waiters);
}

/* A metadata document: its jwks_uri when its issuer is is->issuer exactly, else NULL with why. */
static char *metadata_jwks(const iss_t *is, const char *body, size_t len, const char **why)
{
    cJSON *doc = cJSON_ParseWithLength(body, len);
    const char *iss = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "issuer"));
    const char *jwks = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "jwks_uri"));
    char *out = NULL;
    if (!cJSON_IsObject(doc))
        *why = "the metadata is not a JSON object";
    else if (!iss || strcmp(iss, is->issuer) != 0)
        *why = "the metadata names another issuer (refused: mix-up protection)";
    else if (!jwks || !ing_oauthhttp_url_ok(jwks, NULL, 0))
        *why = "the metadata has no usable jwks_uri (https, or http to a loopback host)";
    else if (!(out = strdup(jwks)))
        *why = "out of memory";
    cJSON_Delete(doc);
    return out;
}

/* A discovery answer (lock held): the JWKS next, the next discovery URL, or failure. */
static void discovered(ing_oauth_t *o, xfer_t *x, const char *err, long status, wlist_t *wake)
{
    iss_t *is = x->iss;
    const char *why = err;
    if (!err && status != 200) {
        if (fetch_step(o, is, x->step + 1, &why) == 0)
            return;
    } else if (!err) {
        free(is->jwks_found);
        is->jwks_found = metadata_jwks(is, x->h->body.data, x->h->body.len, &why);
        if (is->jwks_found && fetch_step(o, is, -1, &why) == 0)
            return;
    }
    fetch_failed(o, is, x->url, why);
    fetch_end(is, wake);
}

/* A JWKS answer (lock held; ks parsed outside it, NULL with why on failure): the new keys. */
static void jwks_fetched(ing_oauth_t *o, xfer_t *x, jwt_keyset_t *ks, const char *why,
                         wlist_t *wake)
{
    iss_t *is = x->iss;
    keys_t *k = ks ? calloc(1, sizeof(*k)) : NULL;
    if (!k) {
        jwt_keyset_free(ks);
        fetch_failed(o, is, x->url, why ? why : "out of memory");
        return fetch_end(is, wake);
    }
    k->refs = 1;
    k->ks = ks;
    keys_unref(is->keys);
    is->keys = k;
    int64_t now = util_mono_ms();
    int64_t life = ing_oauthhttp_lifetime_ms(x->h, util_now_ms(),
                                             o->min_refresh_ms < ING_OAUTH_LIFETIME_FLOOR_S * 1000
                                                 ? o->min_refresh_ms
                                                 : ING_OAUTH_LIFETIME_FLOOR_S * 1000,
                                             o->max_age_ms);
    is->refresh_ms = now + life - life / 10; /* a little before the keys' lifetime ends */
    if (is->failing)
        log_event(LOG_INFO, "oauth: the issuer's keys are fetched again", "issuer", is->issuer,
                  (char *)NULL);
    is->failing = 0;
    ing_metrics_oauth_fetch(o->metrics, 1);
    count_keys(o);
    fetch_end(is, wake);
}

/* ---- the fetch thread: introspection ---- */

/* Starts the request of job j to its tenant's endpoint (lock held); -1 when it could not. */
static int intro_start(ing_oauth_t *o, ijob_t *j)
{
    const isrc_t *s = j->src;
    xfer_t *x = calloc(1, sizeof(*x));
    if (!x)
        return -1;
    x->kind = X_INTRO;
    x->job = j;
    snprintf(x->url, sizeof(x->url), "%s", s->endpoint);
    x->h =
        ing_oauthhttp_introspect(s->endpoint, s->client_id, s->secret, j->token, o->timeout_ms, x);
    if (xfer_add(o, x) < 0) {
        free(x);
        return -1;
    }
    j->x = x;
    return 0;
}

/* An introspection answer: the claims when active (and its exp not passed), else NULL; *err
 * set when the answer is no RFC 7662 answer at all. Outside the lock. */
static cJSON *intro_parse(const xfer_t *x, const char *cerr, long status, int64_t *exp_ms,
                          const char **err)
{
    *exp_ms = 0;
    *err = cerr;
    if (cerr)
        return NULL;
    cJSON *doc = status == 200 ? cJSON_ParseWithLength(x->h->body.data, x->h->body.len) : NULL;
    const cJSON *active = cJSON_GetObjectItemCaseSensitive(doc, "active");
    if (!cJSON_IsBool(active)) {
        *err = status == 200 ? "the answer is not an RFC 7662 introspection answer"
                             : "the endpoint answered an HTTP error";
        cJSON_Delete(doc);
        return NULL;
    }
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(doc, "exp");
    if (cJSON_IsNumber(exp)) { /* (bounded before the cast: any number may come) */
        double v = exp->valuedouble;
        *exp_ms = v < 1 ? 1 : v > 4e12 ? (int64_t)4e15 : (int64_t)(v * 1000);
    }
    if (!cJSON_IsTrue(active) || (*exp_ms && *exp_ms <= util_now_ms())) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

static void job_unlink(ing_oauth_t *o, ijob_t *j)
{
    ijob_t **p = &o->jobs;
    while (*p != j)
        p = &(*p)->next;
    *p = j->next;
    j->src->njobs--;
    o->njobs--;
}

/* An introspection answer (lock held): cached (an error is not) and the job done. */
static void introspected(ing_oauth_t *o, xfer_t *x, cJSON *claims, int64_t exp_ms, const char *err,
                         wlist_t *wake)
{
    ijob_t *j = x->job;
    const isrc_t *s = j->src;
    j->x = NULL;
    int64_t now = util_now_ms();
    if (claims) {
        int64_t until = now + o->ttl_ms;
        ing_metrics_oauth_introspection(o->metrics, ING_OI_ACTIVE);
        ing_oauthcache_put(o->cache, j->hash, claims, s->issuer,
                           exp_ms && exp_ms < until ? exp_ms : until, exp_ms);
    } else if (err) { /* not cached: the check answers 503, a retry asks again */
        log_event(LOG_WARN, "oauth: token introspection failed", "tenant", s->tenant, "url",
                  s->endpoint, "error", err, (char *)NULL);
        ing_metrics_oauth_introspection(o->metrics, ING_OI_ERROR);
    } else {
        ing_metrics_oauth_introspection(o->metrics, ING_OI_INACTIVE);
        ing_oauthcache_put(o->cache, j->hash, NULL, NULL, now + ING_OAUTH_INACTIVE_TTL_S * 1000, 0);
    }
    job_unlink(o, j);
    job_free(o, j, wake);
}

/* ---- the fetch thread ---- */

/* One finished request, handled and its waiters woken. */
static void finished(ing_oauth_t *o, CURLMsg *msg)
{
    char *priv = NULL;
    long status = 0;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
    xfer_t *x = (xfer_t *)priv;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
    const char *err = NULL;
    if (msg->data.result != CURLE_OK)
        err = x->h->guard.refused[0] ? x->h->guard.refused
              : x->h->errbuf[0]      ? x->h->errbuf
                                     : curl_easy_strerror(msg->data.result);
    curl_multi_remove_handle(o->multi, x->h->easy);
    jwt_keyset_t *ks = NULL;
    cJSON *claims = NULL;
    int64_t exp_ms = 0;
    if (x->kind == X_JWKS && !err && status != 200)
        err = "the JWKS URL answered an HTTP error";
    if (x->kind == X_JWKS && !err)
        ks = jwt_keyset_parse(x->h->body.data ? x->h->body.data : "", x->h->body.len, &err);
    if (x->kind == X_INTRO)
        claims = intro_parse(x, err, status, &exp_ms, &err);
    wlist_t wake = {0};
    pthread_mutex_lock(&o->lock);
    if (x->kind == X_DISCOVER)
        discovered(o, x, err, status, &wake);
    else if (x->kind == X_JWKS)
        jwks_fetched(o, x, ks, err, &wake);
    else
        introspected(o, x, claims, exp_ms, err, &wake);
    pthread_mutex_unlock(&o->lock);
    wlist_wake(&wake);
    ing_oauthhttp_free(x->h);
    free(x);
}

/* Starts what is due (lock held): asked-for and scheduled key fetches, new introspections;
 * dropped issuers go (their waiters to wake). Returns how long the thread may sleep. */
static int start_due(ing_oauth_t *o, wlist_t *wake)
{
    while (o->retired) {
        iss_t *is = o->retired;
        o->retired = is->next;
        iss_free(o, is, wake);
    }
    int64_t now = util_mono_ms(), sleep = POLL_MS;
    for (iss_t *is = o->issuers; is; is = is->next) {
        if (is->x)
            continue;
        if (is->want || (is->refresh_ms && now >= is->refresh_ms)) {
            const char *why;
            is->want = 0;
            is->started_ms = now;
            if (fetch_step(o, is, -1, &why) < 0) {
                fetch_failed(o, is, is->issuer, why);
                fetch_end(is, wake);
            }
        } else if (is->refresh_ms && is->refresh_ms - now < sleep)
            sleep = is->refresh_ms - now;
    }
    for (ijob_t *j = o->jobs, *next; j; j = next) {
        next = j->next;
        if (j->x || intro_start(o, j) == 0)
            continue;
        ing_metrics_oauth_introspection(o->metrics, ING_OI_ERROR);
        job_unlink(o, j);
        job_free(o, j, wake);
    }
    return (int)(sleep > 0 ? sleep : 0);
}

static void *fetch_thread(void *arg)
{
    ing_oauth_t *o = arg;
    for (;;) {
        wlist_t wake = {0};
        pthread_mutex_lock(&o->lock);
        int stop = o->stop, sleep_ms = stop ? 0 : start_due(o, &wake);
        pthread_mutex_unlock(&o->lock);
        wlist_wake(&wake);
        if (stop)
            break;
        int running = 0, left = 0;
        curl_multi_perform(o->multi, &running);
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(o->multi, &left)))
            if (msg->msg == CURLMSG_DONE)
                finished(o, msg);
        curl_multi_poll(o->multi, NULL, 0, sleep_ms, NULL);
    }
    return NULL;
}

/* ---- the service ---- */

ing_oauth_t *ing_oauth_new(const mcpq_settings_t *set, ing_metrics_t *metrics)
{
    ing_oauth_t *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->skew_s = (int)set->oauth_clock_skew_s;
    o->timeout_ms = (long)set->oauth_fetch_timeout_ms;
    o->min_refresh_ms = set->oauth_jwks_min_refresh_s * 1000;
    o->max_age_ms = set->oauth_jwks_max_age_s * 1000;
    o->ttl_ms = set->oauth_introspection_ttl_s * 1000;
    o->metrics = metrics;
    o->cache = ing_oauthcache_new((size_t)set->oauth_introspection_cache);
    o->multi = curl_multi_init();
    pthread_mutex_init(&o->lock, NULL);
    if (!o->cache || !o->multi || pthread_create(&o->thread, NULL, fetch_thread, o) != 0) {
        log_msgf(LOG_ERROR, "oauth: cannot start the key service");
        ing_oauth_free(o);
        return NULL;
    }
    o->started = 1;
    return o;
}

void ing_oauth_free(ing_oauth_t *o)
{
    if (!o)
        return;
    if (o->started) {
        pthread_mutex_lock(&o->lock);
        o->stop = 1;
        pthread_mutex_unlock(&o->lock);
        curl_multi_wakeup(o->multi);
        pthread_join(o->thread, NULL);
    }
    wlist_t wake = {0}; /* the thread is gone: nothing else touches o now */
    while (o->retired) {
        iss_t *is = o->retired;
        o->retired = is->next;
        iss_free(o, is, &wake);
    }
    while (o->issuers) {
        iss_t *is = o->issuers;
        o->issuers = is->next;
        iss_free(o, is, &wake);
    }
    while (o->jobs) {
        ijob_t *j = o->jobs;
        o->jobs = j->next;
        job_free(o, j, &wake);
    }
    wlist_wake(&wake);
    ing_oauthcache_free(o->cache);
    isrcs_free(o->srcs, o->nsrcs);
    if (o->multi)
        curl_multi_cleanup(o->multi);
    pthread_mutex_destroy(&o->lock);
    free(o);
}

/* The issuer of src for the new list (lock held): taken over from the old list when it names
 * the same issuer and jwks_uri, else new (its keys fetched at once). NULL when out of memory. */
static iss_t *iss_adopt(ing_oauth_t *o, const ing_oauth_source_t *src)
{
    for (iss_t **p = &o->issuers; *p; p = &(*p)->next) {
        iss_t *is = *p;
        if (strcmp(is->issuer, src->issuer) == 0 &&
            (is->jwks_cfg ? src->jwks_uri && strcmp(is->jwks_cfg, src->jwks_uri) == 0
                          : !src->jwks_uri)) {
            *p = is->next;
            is->next = NULL;
            return is;
        }
    }
    iss_t *is = calloc(1, sizeof(*is));
    if (!is)
        return NULL;
    is->issuer = strdup(src->issuer);
    is->jwks_cfg = src->jwks_uri ? strdup(src->jwks_uri) : NULL;
    is->want = 1;
    if (!is->issuer || (src->jwks_uri && !is->jwks_cfg)) {
        wlist_t none = {0};
        iss_free(o, is, &none);
        return NULL;
    }
    return is;
}

/* 1 when src may be installed (else logged): the issuer fits ing_oauth_token_t and every URL is
 * one the service may fetch. */
static int source_ok(const ing_oauth_source_t *src)
{
    const char *why = NULL;
    if (!src->issuer || strlen(src->issuer) >= sizeof(((ing_oauth_token_t *)0)->issuer))
        why = "the issuer is missing or too long";
    else if (!ing_oauthhttp_url_ok(src->issuer, NULL, 0))
        why = "the issuer is not an https URL (http only for a loopback host)";
    else if (src->jwks_uri && !ing_oauthhttp_url_ok(src->jwks_uri, NULL, 0))
        why = "jwks_uri is not an https URL (http only for a loopback host)";
    else if (src->introspection_endpoint &&
             !ing_oauthhttp_url_ok(src->introspection_endpoint, NULL, 0))
        why = "the introspection endpoint is not an https URL (http only for a loopback host)";
    if (why)
        log_event(LOG_ERROR, "oauth: issuer ignored", "issuer", src->issuer, "error", why,
                  (char *)NULL);
    return why == NULL;
}

static int str_eq(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* A new source for src (one reference), or NULL when out of memory. */
static isrc_t *isrc_new(const ing_oauth_source_t *src)
{
    isrc_t *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->refs = 1;
    d->tenant = strdup(src->tenant);
    d->issuer = strdup(src->issuer);
    d->endpoint = strdup(src->introspection_endpoint);
    d->client_id = src->client_id ? strdup(src->client_id) : NULL;
    d->secret = src->client_secret ? strdup(src->client_secret) : NULL;
    if (!d->tenant || !d->issuer || !d->endpoint || (src->client_id && !d->client_id) ||
        (src->client_secret && !d->secret)) {
        isrc_unref(d);
        return NULL;
    }
    return d;
}

/* The introspection sources of src[0..n), one per tenant (the first entry of a tenant that names
 * an endpoint), into *out and *nout (lock held: one unchanged since the last call is kept, with
 * its count of introspections under way). -1 when out of memory (nothing changed). */
static int isrcs_build(ing_oauth_t *o, const ing_oauth_source_t *src, size_t n, isrc_t ***out,
                       size_t *nout)
{
    isrc_t **l = calloc(n ? n : 1, sizeof(*l));
    size_t k = 0;
    if (!l)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const ing_oauth_source_t *c = &src[i];
        if (!c->introspection_endpoint || !c->tenant || isrc_find(l, k, c->tenant) || !source_ok(c))
            continue;
        isrc_t *d = isrc_find(o->srcs, o->nsrcs, c->tenant);
        if (d && str_eq(d->issuer, c->issuer) && str_eq(d->endpoint, c->introspection_endpoint) &&
            str_eq(d->client_id, c->client_id) && str_eq(d->secret, c->client_secret))
            d->refs++;
        else if (!(d = isrc_new(c))) {
            isrcs_free(l, k);
            return -1;
        }
        l[k++] = d;
    }
    *out = l;
    *nout = k;
    return 0;
}

void ing_oauth_configure(ing_oauth_t *o, const ing_oauth_source_t *src, size_t n)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    isrc_t **srcs;
    size_t nsrcs;
    if (isrcs_build(o, src, n, &srcs, &nsrcs) < 0) {
        pthread_mutex_unlock(&o->lock);
        log_msgf(LOG_ERROR, "oauth: out of memory: the trusted issuers are not changed");
        return;
    }
    iss_t *list = NULL, **tail = &list;
    for (size_t i = 0; i < n; i++) {
        if (!src[i].issuer || iss_find(list, src[i].issuer) || !source_ok(&src[i]))
            continue;
        iss_t *is = iss_adopt(o, &src[i]);
        if (!is) {
            log_msgf(LOG_ERROR, "oauth: out of memory: an issuer is left out");
            continue;
        }
        *tail = is;
        tail = &is->next;
    }
    int had = o->issuers != NULL;
    iss_t **rt = &o->retired; /* what is left of the old list goes, on the fetch thread */
    while (*rt)
        rt = &(*rt)->next;
    *rt = o->issuers;
    o->issuers = list;
    isrcs_free(o->srcs, o->nsrcs);
    o->srcs = srcs;
    o->nsrcs = nsrcs;
    if (n || had)
        count_keys(o);
    pthread_mutex_unlock(&o->lock);
    curl_multi_wakeup(o->multi);
}

/* ---- prepare and check ---- */

/* Whether a fetch of is can change the answer for a token with kid (lock held). */
static int jwt_needs_fetch(const ing_oauth_t *o, const iss_t *is, const char *kid)
{
    int unknown = !is->keys || (kid && !jwt_keyset_has_kid(is->keys->ks, kid));
    if (!unknown)
        return 0;
    if (is->x || is->want)
        return 1; /* a fetch is under way */
    if (!is->attempted)
        return 1;
    return util_mono_ms() - is->started_ms >= o->min_refresh_ms;
}

static int prepare_jwt(ing_oauth_t *o, const char *token, ing_oauth_wake_fn wake, void *arg)
{
    jwt_t *t = NULL;
    const char *why;
    if (jwt_parse(token, strlen(token), &t, &why) != JWT_OK)
        return ING_OAUTH_READY;
    int rc = ING_OAUTH_READY, poke = 0;
    pthread_mutex_lock(&o->lock);
    iss_t *is = jwt_iss(t) ? iss_find(o->issuers, jwt_iss(t)) : NULL;
    if (is && jwt_needs_fetch(o, is, jwt_kid(t)) && wlist_add(&is->waiters, wake, arg) == 0) {
        poke = !is->x && !is->want;
        if (!is->x)
            is->want = 1;
        rc = wake ? ING_OAUTH_WAIT : ING_OAUTH_READY;
    }
    pthread_mutex_unlock(&o->lock);
    jwt_free(t);
    if (poke)
        curl_multi_wakeup(o->multi);
    return rc;
}

static int prepare_opaque(ing_oauth_t *o, const char *token, const char *tenant,
                          ing_oauth_wake_fn wake, void *arg)
{
    char hash[65];
    int rc = ING_OAUTH_READY, start = 0;
    pthread_mutex_lock(&o->lock);
    isrc_t *s = isrc_find(o->srcs, o->nsrcs, tenant);
    if (!s) { /* nobody to ask: the check refuses it */
        pthread_mutex_unlock(&o->lock);
        return rc;
    }
    token_key(s, token, hash);
    ing_oauthcache_entry_t *e = ing_oauthcache_find(o->cache, hash);
    ijob_t *j = o->jobs;
    while (j && strcmp(j->hash, hash) != 0)
        j = j->next;
    if (e && e->expires_ms > util_now_ms()) {
        ing_metrics_oauth_introspection(o->metrics, ING_OI_HIT);
    } else if (j) {
        if (wlist_add(&j->waiters, wake, arg) == 0 && wake)
            rc = ING_OAUTH_WAIT;
    } else if (s->njobs < ING_OAUTH_MAX_INTROSPECTIONS &&
               o->njobs < ING_OAUTH_MAX_INTROSPECTIONS_ALL && (j = calloc(1, sizeof(*j)))) {
        memcpy(j->hash, hash, sizeof(hash));
        j->token = strdup(token);
        j->src = s;
        s->refs++;
        if (!j->token || wlist_add(&j->waiters, wake, arg) < 0) {
            wlist_t none = {0};
            job_free(o, j, &none);
        } else {
            j->next = o->jobs;
            o->jobs = j;
            s->njobs++;
            o->njobs++;
            ing_metrics_oauth_introspection(o->metrics, ING_OI_MISS);
            rc = wake ? ING_OAUTH_WAIT : ING_OAUTH_READY;
            start = 1;
        }
    }
    pthread_mutex_unlock(&o->lock);
    if (start)
        curl_multi_wakeup(o->multi);
    return rc;
}

int ing_oauth_prepare(ing_oauth_t *o, const char *token, const char *tenant, ing_oauth_wake_fn wake,
                      void *arg)
{
    if (!o || !token || !*token || strlen(token) > TOKEN_MAX)
        return ING_OAUTH_READY;
    if (jwt_looks_like(token))
        return prepare_jwt(o, token, wake, arg);
    return prepare_opaque(o, token, tenant, wake, arg);
}

static int check_jwt(ing_oauth_t *o, const char *token, ing_oauth_token_t *out, const char **why)
{
    jwt_t *t = NULL;
    if (jwt_parse(token, strlen(token), &t, why) != JWT_OK)
        return MCPQ_EAUTH;
    int rc = MCPQ_EAUTH;
    const char *iss = jwt_iss(t);
    keys_t *k = NULL;
    pthread_mutex_lock(&o->lock);
    iss_t *is = iss ? iss_find(o->issuers, iss) : NULL;
    if (is && (k = is->keys))
        k->refs++;
    pthread_mutex_unlock(&o->lock);
    if (!is) {
        *why = iss ? "the token's issuer is not trusted" : "the token names no issuer";
    } else if (!k) {
        *why = "the issuer's signing keys could not be fetched";
        rc = MCPQ_EUNAVAIL;
    } else if (jwt_verify(t, k->ks, why) == JWT_OK &&
               jwt_check_time(t, (long long)(util_now_ms() / 1000), o->skew_s, why) == JWT_OK) {
        out->claims = cJSON_Duplicate(jwt_claims(t), 1);
        snprintf(out->issuer, sizeof(out->issuer), "%s", iss);
        rc = out->claims ? 0 : MCPQ_EUNAVAIL;
        if (!out->claims)
            *why = "out of memory";
    }
    if (k) {
        pthread_mutex_lock(&o->lock);
        keys_unref(k);
        pthread_mutex_unlock(&o->lock);
    }
    jwt_free(t);
    return rc;
}

static int check_opaque(ing_oauth_t *o, const char *token, const char *tenant,
                        ing_oauth_token_t *out, const char **why)
{
    char hash[65];
    int rc = MCPQ_EUNAVAIL;
    int64_t now = util_now_ms();
    *why = "token introspection is unavailable (the authorization server failed or is busy); "
           "try again";
    pthread_mutex_lock(&o->lock);
    isrc_t *s = isrc_find(o->srcs, o->nsrcs, tenant);
    ing_oauthcache_entry_t *e = NULL;
    if (s) {
        token_key(s, token, hash);
        e = ing_oauthcache_find(o->cache, hash);
        if (e && e->expires_ms <= now) /* expired means expired, whatever the refetch did */
            e = NULL;
    }
    if (!s) {
        *why = "the token is not a JWT and no token introspection is configured here";
        rc = MCPQ_EAUTH;
    } else if (e && !e->active) {
        *why = "the token is not active";
        rc = MCPQ_EAUTH;
    } else if (e && e->token_exp_ms && e->token_exp_ms <= now) {
        *why = "the token has expired";
        rc = MCPQ_EAUTH;
    } else if (e) {
        out->claims = cJSON_Duplicate(e->claims, 1);
        snprintf(out->issuer, sizeof(out->issuer), "%s", e->issuer);
        rc = out->claims ? 0 : MCPQ_EUNAVAIL;
        if (!out->claims)
            *why = "out of memory";
    }
    pthread_mutex_unlock(&o->lock);
    return rc;
}

int ing_oauth_check(ing_oauth_t *o, const char *token, const char *tenant, ing_oauth_token_t *out,
                    const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    memset(out, 0, sizeof(*out));
    *why = "no token";
    if (!o || !token || !*token)
        return MCPQ_EAUTH;
    if (strlen(token) > TOKEN_MAX) {
        *why = "the token is too long";
        return MCPQ_EAUTH;
    }
    if (jwt_looks_like(token))
        return check_jwt(o, token, out, why);
    return check_opaque(o, token, tenant, out, why);
}

void ing_oauth_token_clear(ing_oauth_token_t *t)
{
    if (!t)
        return;
    cJSON_Delete(t->claims);
    memset(t, 0, sizeof(*t));
}
