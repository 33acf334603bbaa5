/*
 * Integration test of the OAuth key and introspection service (ingress/core/oauth.h), driven
 * directly (no HTTP thread of the ingress): a small authorization server on loopback
 * (libmicrohttpd in this process) serves metadata discovery, a JWKS of EC P-256 keys this test
 * generates and signs ES256 tokens with, and RFC 7662 introspection. Covered:
 *   - the first token of an issuer: WAIT, one wake, then the check accepts it (discovery by
 *     RFC 8414 path insertion for one issuer, by OpenID path appending for another);
 *   - an unknown kid: WAIT once (a refetch), a second one within MCPQ_OAUTH_JWKS_MIN_REFRESH_S
 *     is READY and refused (401); after a key rotation on the server the new kid is accepted
 *     after one refetch; an expired token is refused;
 *   - Cache-Control max-age: the keys are fetched again after it, not before (fetches counted);
 *     Expires and the clamps of the lifetime;
 *   - the server down at start: the check says 503 (MCPQ_EUNAVAIL); down later: the old keys
 *     are still accepted;
 *   - discovery whose metadata names another issuer is refused (no JWKS fetched, 503);
 *   - a jwks_uri learned from metadata on another origin than its issuer is fetched only under
 *     the webhook SSRF guard: one on a loopback port of its own (a second server here) or at the
 *     link-local metadata address is refused, logged, and never asked; configured, the same
 *     URL is fetched;
 *   - introspection: active → accepted and cached (a second check makes no request), HTTP Basic
 *     with the client id and secret form-urlencoded first; inactive → 401; an endpoint error
 *     → 503; the cache bound (MCPQ_OAUTH_INTROSPECTION_CACHE=4) evicts the oldest;
 *   - ing_oauth_free with requests waiting wakes each exactly once;
 *   - the metrics (mcpq_oauth_*) count fetches, keys and introspection.
 */
#include "check.h"
#include "err.h"
#include "fixture.h"
#include "metrics.h"
#include "oauth.h"
#include "oauthhttp.h"
#include "settings.h"
#include "util.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The tenant every source of this test belongs to: its introspection endpoint is asked. */
#define TEN "t"

/* ---- keys and tokens ---- */

typedef fx_es256_t key_t_;

/* An ES256 token signed by k with these claims (iss, sub, exp relative to now). */
static char *token_make(const key_t_ *k, const char *iss, const char *sub, long exp_in_s)
{
    char payload[1024];
    long long now = (long long)(util_now_ms() / 1000);
    snprintf(payload, sizeof(payload),
             "{\"iss\":\"%s\",\"sub\":\"%s\",\"aud\":\"api://mcpq\",\"iat\":%lld,\"exp\":%lld}",
             iss, sub, now - 5, now + exp_in_s);
    return fx_es256_jwt(k, payload);
}

/* ---- the authorization server ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int port, port2; /* port2: a second server, another origin on loopback */
static struct {
    char jwks[4096];        /* the key set /jwks/a serves */
    char cache_control[64]; /* its Cache-Control ("" none) */
    int down;               /* 1: every answer is 503 */
    int delay_ms;           /* every answer waits this long first */
    int jwks_hits, b_hits, disc_hits, intro_hits, bad_jwks_hits, other_origin_hits;
    char auth_seen[256]; /* the last introspection Authorization header */
} srv;

typedef struct upload {
    char body[8192];
    size_t len;
} upload_t;

static enum MHD_Result answer(struct MHD_Connection *c, int status, const char *body,
                              const char *cache_control)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (cache_control && *cache_control)
        MHD_add_response_header(r, "Cache-Control", cache_control);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* The metadata of issuer base+path with jwks_uri base+jwks. */
static void metadata(char *out, size_t n, const char *iss_path, const char *jwks_path)
{
    snprintf(out, n,
             "{\"issuer\":\"http://127.0.0.1:%d%s\",\"jwks_uri\":\"http://127.0.0.1:%d%s\"}", port,
             iss_path, port, jwks_path);
}

/* token=<t>: active for opaque-active-*, inactive otherwise. */
static void introspect(const upload_t *u, char *out, size_t n)
{
    char tok[256] = "";
    const char *p = strstr(u->body, "token=");
    if (p) {
        size_t l = strcspn(p + 6, "&");
        if (l < sizeof(tok)) {
            memcpy(tok, p + 6, l);
            tok[l] = '\0';
        }
    }
    long long now = (long long)(util_now_ms() / 1000);
    if (strncmp(tok, "opaque-active-", 14) == 0 && strstr(u->body, "token_type_hint=access_token"))
        snprintf(out, n,
                 "{\"active\":true,\"sub\":\"%s\",\"client_id\":\"app1\",\"scope\":\"mcp:tools\","
                 "\"exp\":%lld}",
                 tok + 14, now + 3600);
    else if (strcmp(tok, "opaque-expired") == 0) /* active, but its exp has passed */
        snprintf(out, n, "{\"active\":true,\"sub\":\"old\",\"exp\":%lld}", now - 10);
    else
        snprintf(out, n, "{\"active\":false}");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
    if (strcmp(method, "POST") == 0) {
        upload_t *u = *con_cls;
        if (!u) {
            *con_cls = calloc(1, sizeof(upload_t));
            return *con_cls ? MHD_YES : MHD_NO;
        }
        if (*data_size) {
            size_t take = *data_size < sizeof(u->body) - 1 - u->len ? *data_size
                                                                    : sizeof(u->body) - 1 - u->len;
            memcpy(u->body + u->len, data, take);
            u->len += take;
            *data_size = 0;
            return MHD_YES;
        }
    }
    pthread_mutex_lock(&mu);
    int down = srv.down, delay = srv.delay_ms;
    pthread_mutex_unlock(&mu);
    if (delay)
        usleep((useconds_t)delay * 1000);
    if (down)
        return answer(c, 503, "{}", NULL);
    char body[4096], cc[64] = "";
    int status = 200;
    pthread_mutex_lock(&mu);
    if (strcmp(url, "/.well-known/oauth-authorization-server/realms/a") == 0) {
        srv.disc_hits++;
        metadata(body, sizeof(body), "/realms/a", "/jwks/a");
    } else if (strcmp(url, "/realms/b/.well-known/openid-configuration") == 0) {
        srv.disc_hits++;
        metadata(body, sizeof(body), "/realms/b", "/jwks/b");
    } else if (strcmp(url, "/.well-known/oauth-authorization-server/bad") == 0) {
        srv.disc_hits++;
        metadata(body, sizeof(body), "/other", "/jwks/bad");
    } else if (strcmp(url, "/.well-known/oauth-authorization-server/ssrf") == 0) {
        srv.disc_hits++; /* keys on another origin: a private (loopback) address */
        snprintf(
            body, sizeof(body),
            "{\"issuer\":\"http://127.0.0.1:%d/ssrf\",\"jwks_uri\":\"http://127.0.0.1:%d/jwks\"}",
            port, port2);
    } else if (strcmp(url, "/.well-known/oauth-authorization-server/imds") == 0) {
        srv.disc_hits++; /* keys at the cloud metadata address */
        snprintf(body, sizeof(body),
                 "{\"issuer\":\"http://127.0.0.1:%d/imds\",\"jwks_uri\":"
                 "\"https://169.254.169.254/latest/jwks\"}",
                 port);
    } else if (strcmp(url, "/jwks/a") == 0) {
        srv.jwks_hits++;
        snprintf(body, sizeof(body), "%s", srv.jwks);
        snprintf(cc, sizeof(cc), "%s", srv.cache_control);
    } else if (strcmp(url, "/jwks/b") == 0) {
        srv.b_hits++;
        snprintf(body, sizeof(body), "%s", srv.jwks);
    } else if (strcmp(url, "/jwks/bad") == 0) {
        srv.bad_jwks_hits++;
        snprintf(body, sizeof(body), "%s", srv.jwks);
    } else if (strcmp(url, "/introspect") == 0 && *con_cls) {
        srv.intro_hits++;
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        snprintf(srv.auth_seen, sizeof(srv.auth_seen), "%s", auth ? auth : "");
        introspect(*con_cls, body, sizeof(body));
    } else {
        status = 404;
        snprintf(body, sizeof(body), "{\"error\":\"not found\"}");
    }
    pthread_mutex_unlock(&mu);
    return answer(c, status, body, cc);
}

/* The second server: its /jwks serves the key set, counted. */
static enum MHD_Result on_request2(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *data,
                                   size_t *data_size, void **con_cls)
{
    char body[4096];
    pthread_mutex_lock(&mu);
    srv.other_origin_hits++;
    snprintf(body, sizeof(body), "%s", srv.jwks);
    pthread_mutex_unlock(&mu);
    return answer(c, strcmp(url, "/jwks") == 0 ? 200 : 404, body, NULL);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    free(*con_cls);
    *con_cls = NULL;
}

static int hits(int *counter)
{
    pthread_mutex_lock(&mu);
    int n = *counter;
    pthread_mutex_unlock(&mu);
    return n;
}

static void serve_keys(const key_t_ *a, const key_t_ *b, const char *cache_control)
{
    pthread_mutex_lock(&mu);
    snprintf(srv.jwks, sizeof(srv.jwks), "{\"keys\":[%s%s%s]}", a ? a->jwk : "", a && b ? "," : "",
             b ? b->jwk : "");
    snprintf(srv.cache_control, sizeof(srv.cache_control), "%s", cache_control);
    pthread_mutex_unlock(&mu);
}

static void set_down(int down)
{
    pthread_mutex_lock(&mu);
    srv.down = down;
    pthread_mutex_unlock(&mu);
}

static void set_delay(int ms)
{
    pthread_mutex_lock(&mu);
    srv.delay_ms = ms;
    pthread_mutex_unlock(&mu);
}

/* ---- waiting for wake() ---- */

typedef struct waker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
} waker_t;

static waker_t wk = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void on_wake(void *arg)
{
    waker_t *w = arg;
    pthread_mutex_lock(&w->mu);
    w->n++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int wakes(void)
{
    pthread_mutex_lock(&wk.mu);
    int n = wk.n;
    pthread_mutex_unlock(&wk.mu);
    return n;
}

/* Waits (at most 5 s) until wake() was called n times in all; returns the count. */
static int wait_wakes(int n)
{
    struct timespec until = util_deadline_realtime(5000);
    pthread_mutex_lock(&wk.mu);
    while (wk.n < n && pthread_cond_timedwait(&wk.cv, &wk.mu, &until) == 0)
        ;
    int got = wk.n;
    pthread_mutex_unlock(&wk.mu);
    return got;
}

/* prepare must say WAIT, then exactly one wake follows. */
static void prepare_wait(ing_oauth_t *o, const char *token)
{
    int before = wakes();
    CHECK_INT_EQ(ing_oauth_prepare(o, token, TEN, on_wake, &wk), ING_OAUTH_WAIT);
    CHECK_INT_EQ(wait_wakes(before + 1), before + 1);
}

static int check(ing_oauth_t *o, const char *token, const char *want_sub, const char **why)
{
    ing_oauth_token_t t;
    int rc = ing_oauth_check(o, token, TEN, &t, why);
    if (rc == 0 && want_sub) {
        const cJSON *sub = cJSON_GetObjectItemCaseSensitive(t.claims, "sub");
        CHECK_STR_EQ(cJSON_GetStringValue(sub), want_sub);
    }
    ing_oauth_token_clear(&t);
    return rc;
}

static mcpq_settings_t settings(void)
{
    mcpq_settings_t s;
    memset(&s, 0, sizeof(s));
    s.oauth_clock_skew_s = 60;
    s.oauth_fetch_timeout_ms = 2000;
    s.oauth_jwks_min_refresh_s = 1;
    s.oauth_jwks_max_age_s = 3600;
    s.oauth_introspection_cache = 4;
    s.oauth_introspection_ttl_s = 60;
    return s;
}

static char iss_a[128], iss_b[128], iss_bad[128], iss_dead[128], jwks_a[128], intro[128];
static key_t_ k1, k2;

/* WAIT then one wake, or READY: whichever the fetch under way allows. */
static void prepare_settle(ing_oauth_t *o, const char *token)
{
    int before = wakes();
    if (ing_oauth_prepare(o, token, TEN, on_wake, &wk) == ING_OAUTH_WAIT)
        CHECK_INT_EQ(wait_wakes(before + 1), before + 1);
}

static void sleep_ms(int ms)
{
    usleep((useconds_t)ms * 1000);
}

/* URL rules, discovery URLs and the lifetime clamp (oauthhttp.h). */
static void t_http_rules(void)
{
    CHECK(ing_oauthhttp_url_ok("https://idp.example.com/x", NULL, 0));
    CHECK(ing_oauthhttp_url_ok("http://localhost:1/x", NULL, 0));
    CHECK(ing_oauthhttp_url_ok("http://127.0.0.1:1/x", NULL, 0));
    CHECK(ing_oauthhttp_url_ok("http://[::1]:1/x", NULL, 0));
    CHECK(!ing_oauthhttp_url_ok("http://idp.example.com/x", NULL, 0));
    CHECK(!ing_oauthhttp_url_ok("http://127.0.0.2/x", NULL, 0));
    CHECK(!ing_oauthhttp_url_ok("ftp://idp.example.com/x", NULL, 0));
    CHECK(!ing_oauthhttp_url_ok("not a url", NULL, 0));
    char u[256];
    const char *iss = "https://idp.example.com/realms/acme/";
    CHECK_INT_EQ(ing_oauthhttp_discovery_url(iss, 0, u, sizeof(u)), 0);
    CHECK_STR_EQ(u, "https://idp.example.com/.well-known/oauth-authorization-server/realms/acme");
    CHECK_INT_EQ(ing_oauthhttp_discovery_url(iss, 1, u, sizeof(u)), 0);
    CHECK_STR_EQ(u, "https://idp.example.com/.well-known/openid-configuration/realms/acme");
    CHECK_INT_EQ(ing_oauthhttp_discovery_url(iss, 2, u, sizeof(u)), 0);
    CHECK_STR_EQ(u, "https://idp.example.com/realms/acme/.well-known/openid-configuration");
    CHECK_INT_EQ(ing_oauthhttp_discovery_url(iss, 3, u, sizeof(u)), -1);
    CHECK_INT_EQ(ing_oauthhttp_discovery_url("https://idp.example.com", 0, u, sizeof(u)), 0);
    CHECK_STR_EQ(u, "https://idp.example.com/.well-known/oauth-authorization-server");
    CHECK_INT_EQ(ing_oauthhttp_discovery_url("https://idp.example.com:8443/", 1, u, sizeof(u)), 0);
    CHECK_STR_EQ(u, "https://idp.example.com:8443/.well-known/openid-configuration");
    CHECK_INT_EQ(ing_oauthhttp_discovery_url("https://idp.example.com", 2, u, sizeof(u)), -1);
    ing_oauthhttp_t h = {.max_age_s = -1};
    int64_t now = 1700000000000LL, hour = 3600000;
    CHECK_INT_EQ(ing_oauthhttp_lifetime_ms(&h, now, 60000, hour), hour); /* nothing: the cap */
    h.expires_ms = now + 120000;
    CHECK_INT_EQ(ing_oauthhttp_lifetime_ms(&h, now, 60000, hour), 120000); /* Expires */
    h.max_age_s = 5;
    CHECK_INT_EQ(ing_oauthhttp_lifetime_ms(&h, now, 60000, hour), 60000); /* max-age first */
    CHECK_INT_EQ(ing_oauthhttp_lifetime_ms(&h, now, 1000, hour), 5000);
    h.max_age_s = 99999;
    CHECK_INT_EQ(ing_oauthhttp_lifetime_ms(&h, now, 60000, hour), hour);
    CHECK_INT_EQ(ing_oauthhttp_lifetime_ms(&h, now, 60000, 2000), 2000); /* cap below floor */
    TEST_PASS("URL rules, discovery URLs, key lifetime");
}

/* First token, a second issuer by OpenID path appending, unknown kid, rotation, expiry. */
static void t_keys(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    serve_keys(&k1, NULL, "max-age=600");
    set_delay(100); /* the first prepare surely finds the fetch under way */
    int j0 = hits(&srv.jwks_hits), d0 = hits(&srv.disc_hits);
    ing_oauth_source_t src[] = {{.tenant = TEN, .issuer = iss_a},
                                {.tenant = TEN, .issuer = iss_b},
                                {.tenant = TEN, .issuer = iss_a}};
    ing_oauth_configure(o, src, 3);
    char *ta = token_make(&k1, iss_a, "alice", 600), *tb = token_make(&k1, iss_b, "bob", 600);
    const char *why = NULL;
    CHECK_INT_EQ(check(o, ta, NULL, &why), MCPQ_EUNAVAIL); /* no keys yet */
    prepare_wait(o, ta);
    CHECK_INT_EQ(check(o, ta, "alice", &why), 0);
    ing_oauth_token_t t;
    CHECK_INT_EQ(ing_oauth_check(o, ta, TEN, &t, &why), 0);
    CHECK_STR_EQ(t.issuer, iss_a);
    ing_oauth_token_clear(&t);
    CHECK_INT_EQ(ing_oauth_prepare(o, ta, TEN, on_wake, &wk), ING_OAUTH_READY);
    prepare_settle(o, tb); /* its discovery takes three requests */
    set_delay(0);
    CHECK_INT_EQ(check(o, tb, "bob", &why), 0);
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 1); /* issuer a named twice: fetched once */
    CHECK_INT_EQ(hits(&srv.disc_hits), d0 + 2);
    CHECK_INT_EQ(hits(&srv.b_hits), 1);
    TEST_PASS("first token: WAIT, one wake, accepted (RFC 8414 and OpenID discovery)");

    char *t2 = token_make(&k2, iss_a, "carol", 600);
    sleep_ms(1100); /* MCPQ_OAUTH_JWKS_MIN_REFRESH_S=1 since the first fetch */
    prepare_wait(o, t2);
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 2);
    CHECK_INT_EQ(check(o, t2, NULL, &why), MCPQ_EAUTH);
    CHECK_INT_EQ(ing_oauth_prepare(o, t2, TEN, on_wake, &wk), ING_OAUTH_READY); /* throttled */
    CHECK_INT_EQ(check(o, t2, NULL, &why), MCPQ_EAUTH);
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 2);
    CHECK_INT_EQ(check(o, ta, "alice", &why), 0);
    TEST_PASS("unknown kid: one refetch, then READY and 401 within MIN_REFRESH");

    serve_keys(&k2, NULL, "max-age=600"); /* the server rotates to k2 only */
    sleep_ms(1100);
    prepare_wait(o, t2);
    CHECK_INT_EQ(check(o, t2, "carol", &why), 0);
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 3);
    CHECK_INT_EQ(ing_oauth_prepare(o, ta, TEN, on_wake, &wk), ING_OAUTH_READY);
    CHECK_INT_EQ(check(o, ta, NULL, &why), MCPQ_EAUTH); /* k1 is gone */
    char *texp = token_make(&k2, iss_a, "dave", -120);
    CHECK_INT_EQ(ing_oauth_prepare(o, texp, TEN, on_wake, &wk), ING_OAUTH_READY);
    CHECK_INT_EQ(check(o, texp, NULL, &why), MCPQ_EAUTH);
    char *tx = token_make(&k2, "https://elsewhere.example.com", "eve", 600);
    CHECK_INT_EQ(ing_oauth_prepare(o, tx, TEN, on_wake, &wk), ING_OAUTH_READY);
    CHECK_INT_EQ(check(o, tx, NULL, &why), MCPQ_EAUTH);
    CHECK_INT_EQ(check(o, "a.b.c", NULL, &why), MCPQ_EAUTH);
    int w = wakes();
    sleep_ms(200);
    CHECK_INT_EQ(wakes(), w); /* no wake beyond one per WAIT */
    TEST_PASS("key rotation: the new kid accepted after one refetch; expired and foreign refused");
    ing_oauth_free(o);
    free(ta);
    free(tb);
    free(t2);
    free(texp);
    free(tx);
}

/* max-age honored; the server down later: the old keys stay. */
static void t_max_age(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    serve_keys(&k1, NULL, "max-age=1");
    int j0 = hits(&srv.jwks_hits), d0 = hits(&srv.disc_hits);
    ing_oauth_source_t src = {.tenant = TEN, .issuer = iss_a, .jwks_uri = jwks_a};
    ing_oauth_configure(o, &src, 1);
    char *ta = token_make(&k1, iss_a, "alice", 600), *t2 = token_make(&k2, iss_a, "bob", 600);
    prepare_settle(o, ta);
    const char *why;
    CHECK_INT_EQ(check(o, ta, "alice", &why), 0);
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 1);
    CHECK_INT_EQ(hits(&srv.disc_hits), d0); /* jwks_uri configured: no discovery */
    serve_keys(&k1, NULL, "max-age=100");
    sleep_ms(1500); /* max-age=1 (MIN_REFRESH 1 s is the floor here): fetched again */
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 2);
    sleep_ms(1000); /* now max-age=100: not again */
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 2);
    TEST_PASS("Cache-Control max-age: fetched again after it, not before");

    set_down(1);
    prepare_wait(o, t2); /* unknown kid: a refetch, which fails */
    CHECK_INT_EQ(hits(&srv.jwks_hits), j0 + 2);
    CHECK_INT_EQ(check(o, t2, NULL, &why), MCPQ_EAUTH);
    CHECK_INT_EQ(check(o, ta, "alice", &why), 0);
    set_down(0);
    TEST_PASS("server down later: the last good keys are still accepted");
    ing_oauth_free(o);
    free(ta);
    free(t2);
}

/* The server down at start (nothing listening), and metadata naming another issuer. */
static void t_unavailable(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    int b0 = hits(&srv.bad_jwks_hits);
    ing_oauth_source_t src[] = {{.tenant = TEN, .issuer = iss_dead},
                                {.tenant = TEN, .issuer = iss_bad}};
    ing_oauth_configure(o, src, 2);
    char *td = token_make(&k1, iss_dead, "x", 600), *tb = token_make(&k1, iss_bad, "y", 600);
    prepare_settle(o, td);
    const char *why;
    CHECK_INT_EQ(check(o, td, NULL, &why), MCPQ_EUNAVAIL);
    CHECK_INT_EQ(ing_oauth_prepare(o, td, TEN, on_wake, &wk), ING_OAUTH_READY); /* throttled */
    CHECK_INT_EQ(check(o, td, NULL, &why), MCPQ_EUNAVAIL);
    TEST_PASS("server down at start: 503 (MCPQ_EUNAVAIL)");
    prepare_settle(o, tb);
    CHECK_INT_EQ(check(o, tb, NULL, &why), MCPQ_EUNAVAIL);
    CHECK_INT_EQ(hits(&srv.bad_jwks_hits), b0);
    TEST_PASS("discovery naming another issuer is refused");
    ing_oauth_free(o);
    free(td);
    free(tb);
}

/* Runs stderr (the log) into a temporary file until log_end, which returns what was written
 * (free it). */
static int log_saved = -1;
static FILE *log_file;
static void log_begin(void)
{
    log_file = tmpfile();
    CHECK(log_file != NULL);
    log_saved = dup(STDERR_FILENO);
    CHECK(dup2(fileno(log_file), STDERR_FILENO) >= 0);
}
static char *log_end(void)
{
    CHECK(dup2(log_saved, STDERR_FILENO) >= 0);
    close(log_saved);
    long n = ftell(log_file);
    char *text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    CHECK(text != NULL);
    rewind(log_file);
    size_t got = fread(text, 1, (size_t)(n > 0 ? n : 0), log_file);
    text[got] = '\0';
    fclose(log_file);
    fputs(text, stderr); /* still shown with the test's output */
    return text;
}

/* A jwks_uri learned by discovery on another origin is fetched under the SSRF guard only. */
static void t_ssrf(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    char iss_ssrf[128], iss_imds[128], jwks2[128];
    snprintf(iss_ssrf, sizeof(iss_ssrf), "http://127.0.0.1:%d/ssrf", port);
    snprintf(iss_imds, sizeof(iss_imds), "http://127.0.0.1:%d/imds", port);
    snprintf(jwks2, sizeof(jwks2), "http://127.0.0.1:%d/jwks", port2);
    CHECK(ing_oauthhttp_same_origin(iss_a, jwks_a));
    CHECK(ing_oauthhttp_same_origin("https://idp.example.com/r", "https://IDP.example.com:443/k"));
    CHECK(!ing_oauthhttp_same_origin(iss_ssrf, jwks2));
    CHECK(!ing_oauthhttp_same_origin("https://idp.example.com/r", "http://idp.example.com/k"));
    CHECK(!ing_oauthhttp_same_origin("https://idp.example.com/r", "not a url"));
    serve_keys(&k1, NULL, "max-age=600");
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    log_begin();
    ing_oauth_source_t src[] = {{.issuer = iss_ssrf}, {.issuer = iss_imds}};
    ing_oauth_configure(o, src, 2);
    char *ts = token_make(&k1, iss_ssrf, "s", 600), *ti = token_make(&k1, iss_imds, "i", 600);
    /* (no CHECK until the log is back on stderr: its message would go to the file) */
    int w0 = wakes(), waits = 0;
    waits += ing_oauth_prepare(o, ts, TEN, on_wake, &wk) == ING_OAUTH_WAIT;
    waits += ing_oauth_prepare(o, ti, TEN, on_wake, &wk) == ING_OAUTH_WAIT;
    int woken = wait_wakes(w0 + waits) - w0;
    const char *why;
    int rs = check(o, ts, NULL, &why), ri = check(o, ti, NULL, &why);
    char *log = log_end();
    CHECK_INT_EQ(woken, waits);
    CHECK_INT_EQ(rs, MCPQ_EUNAVAIL);
    CHECK_INT_EQ(ri, MCPQ_EUNAVAIL);
    CHECK_INT_EQ(hits(&srv.other_origin_hits), 0); /* never asked */
    CHECK_CONTAINS(log, jwks2);
    CHECK_CONTAINS(log, "resolves to 127.0.0.1, a loopback address");
    CHECK_CONTAINS(log, "https://169.254.169.254/latest/jwks");
    CHECK_CONTAINS(log, "resolves to 169.254.169.254, a link-local address");
    free(log);
    TEST_PASS("a jwks_uri learned from metadata at a private or link-local address: refused, "
              "logged, never fetched");
    /* configured, the same URL is the operator's choice: fetched */
    ing_oauth_source_t cfg = {.issuer = iss_ssrf, .jwks_uri = jwks2};
    ing_oauth_configure(o, &cfg, 1);
    prepare_settle(o, ts);
    CHECK_INT_EQ(check(o, ts, "s", &why), 0);
    CHECK_INT_EQ(hits(&srv.other_origin_hits), 1);
    TEST_PASS("the same jwks_uri configured is fetched (the guard is for learned URLs)");
    ing_oauth_free(o);
    free(ts);
    free(ti);
}

static void t_introspection(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    ing_oauth_source_t src = {.tenant = TEN,
                              .issuer = iss_a,
                              .jwks_uri = jwks_a,
                              .introspection_endpoint = intro,
                              .client_id = "mcpq client",
                              .client_secret = "s3cr:t&"};
    const char *why;
    ing_oauth_configure(o, &src, 0); /* none yet: an opaque token is refused */
    CHECK_INT_EQ(ing_oauth_prepare(o, "opaque-active-erin", TEN, on_wake, &wk), ING_OAUTH_READY);
    CHECK_INT_EQ(check(o, "opaque-active-erin", NULL, &why), MCPQ_EAUTH);
    ing_oauth_configure(o, &src, 1);
    int i0 = hits(&srv.intro_hits);
    prepare_wait(o, "opaque-active-erin");
    ing_oauth_token_t t;
    CHECK_INT_EQ(ing_oauth_check(o, "opaque-active-erin", TEN, &t, &why), 0);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t.claims, "sub")), "erin");
    CHECK_STR_EQ(t.issuer, iss_a);
    ing_oauth_token_clear(&t);
    const char *cred = "mcpq%20client:s3cr%3At%26"; /* form-urlencoded, then Basic */
    char b64[128], want[160];
    CHECK_INT_EQ(
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)cred, (int)strlen(cred)),
        (int)(4 * ((strlen(cred) + 2) / 3)));
    snprintf(want, sizeof(want), "Basic %s", b64);
    pthread_mutex_lock(&mu);
    CHECK_STR_EQ(srv.auth_seen, want);
    pthread_mutex_unlock(&mu);
    CHECK_INT_EQ(ing_oauth_prepare(o, "opaque-active-erin", TEN, on_wake, &wk), ING_OAUTH_READY);
    CHECK_INT_EQ(check(o, "opaque-active-erin", "erin", &why), 0);
    CHECK_INT_EQ(hits(&srv.intro_hits), i0 + 1);
    TEST_PASS("introspection: active accepted, cached (no second request), Basic client auth");

    prepare_wait(o, "opaque-inactive");
    CHECK_INT_EQ(check(o, "opaque-inactive", NULL, &why), MCPQ_EAUTH);
    CHECK_INT_EQ(ing_oauth_prepare(o, "opaque-inactive", TEN, on_wake, &wk), ING_OAUTH_READY);
    prepare_wait(o, "opaque-expired");
    CHECK_INT_EQ(check(o, "opaque-expired", NULL, &why), MCPQ_EAUTH);
    TEST_PASS("introspection: inactive, or active with its exp passed, refused (401), cached");

    char tok[64];
    for (int i = 1; i <= 4; i++) { /* 3 cached + 4 new, at most 4: the first 3 go */
        snprintf(tok, sizeof(tok), "opaque-active-f%d", i);
        prepare_wait(o, tok);
    }
    CHECK_INT_EQ(hits(&srv.intro_hits), i0 + 7);
    CHECK_INT_EQ(ing_oauth_prepare(o, "opaque-active-f1", TEN, on_wake, &wk), ING_OAUTH_READY);
    CHECK_INT_EQ(ing_oauth_prepare(o, "opaque-active-f4", TEN, on_wake, &wk), ING_OAUTH_READY);
    CHECK_INT_EQ(check(o, "opaque-active-erin", NULL, &why), MCPQ_EUNAVAIL); /* evicted */
    prepare_wait(o, "opaque-active-erin");
    CHECK_INT_EQ(hits(&srv.intro_hits), i0 + 8);
    CHECK_INT_EQ(check(o, "opaque-active-erin", "erin", &why), 0);
    TEST_PASS("introspection cache bound: the oldest answers are dropped");

    set_down(1);
    prepare_wait(o, "opaque-active-zed");
    CHECK_INT_EQ(check(o, "opaque-active-zed", NULL, &why), MCPQ_EUNAVAIL);
    set_down(0);
    prepare_wait(o, "opaque-active-zed"); /* errors are not cached */
    CHECK_INT_EQ(check(o, "opaque-active-zed", "zed", &why), 0);
    TEST_PASS("introspection endpoint failing: 503, not cached");
    ing_oauth_free(o);
}

/* Expired means expired: an active answer past MCPQ_OAUTH_INTROSPECTION_TTL_S is never used
 * again, whether the new introspection fails, finds no free slot or finds too many waiters. */
static void t_expired(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    set.oauth_introspection_ttl_s = 1;
    set.oauth_introspection_cache = 1000;
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    ing_oauth_source_t src = {
        .tenant = TEN, .issuer = iss_a, .jwks_uri = jwks_a, .introspection_endpoint = intro};
    ing_oauth_configure(o, &src, 1);
    const char *why;
    const char *tok[] = {"opaque-active-ttl1", "opaque-active-ttl2", "opaque-active-ttl3"};
    for (int i = 0; i < 3; i++) {
        prepare_wait(o, tok[i]);
        CHECK_INT_EQ(check(o, tok[i], NULL, &why), 0);
    }
    sleep_ms(1100); /* every answer's TTL has passed */

    set_down(1);
    prepare_wait(o, tok[0]);
    CHECK_INT_EQ(check(o, tok[0], NULL, &why), MCPQ_EUNAVAIL);
    set_down(0);
    TEST_PASS("an expired answer whose introspection fails: 503, not the stale answer");

    set_delay(1500);
    int w0 = wakes();
    CHECK_INT_EQ(ing_oauth_prepare(o, tok[1], TEN, on_wake, &wk), ING_OAUTH_WAIT);
    for (int i = 1; i < ING_OAUTH_MAX_WAITERS; i++)
        CHECK_INT_EQ(ing_oauth_prepare(o, tok[1], TEN, on_wake, &wk), ING_OAUTH_WAIT);
    CHECK_INT_EQ(ing_oauth_prepare(o, tok[1], TEN, on_wake, &wk), ING_OAUTH_READY); /* overflow */
    CHECK_INT_EQ(check(o, tok[1], NULL, &why), MCPQ_EUNAVAIL);
    TEST_PASS("an expired answer with too many waiters: 503, not the stale answer");

    char t[64];
    for (int i = 1; i < ING_OAUTH_MAX_INTROSPECTIONS; i++) { /* tok[1]'s holds one slot */
        snprintf(t, sizeof(t), "opaque-inactive-slot%d", i);
        CHECK_INT_EQ(ing_oauth_prepare(o, t, TEN, on_wake, &wk), ING_OAUTH_WAIT);
    }
    CHECK_INT_EQ(ing_oauth_prepare(o, tok[2], TEN, on_wake, &wk), ING_OAUTH_READY); /* no slot */
    CHECK_INT_EQ(check(o, tok[2], NULL, &why), MCPQ_EUNAVAIL);
    TEST_PASS("an expired answer with no introspection slot free: 503, not the stale answer");
    int want = w0 + ING_OAUTH_MAX_WAITERS + ING_OAUTH_MAX_INTROSPECTIONS - 1;
    CHECK_INT_EQ(wait_wakes(want), want);
    set_delay(0);
    ing_oauth_free(o);
}

/* ing_oauth_free with requests parked: each woken once. */
static void t_free_wakes(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    set_delay(1000);
    ing_oauth_source_t src = {
        .tenant = TEN, .issuer = iss_a, .jwks_uri = jwks_a, .introspection_endpoint = intro};
    ing_oauth_configure(o, &src, 1);
    char *ta = token_make(&k1, iss_a, "alice", 600);
    int w0 = wakes();
    CHECK_INT_EQ(ing_oauth_prepare(o, ta, TEN, on_wake, &wk), ING_OAUTH_WAIT);
    CHECK_INT_EQ(ing_oauth_prepare(o, ta, TEN, on_wake, &wk), ING_OAUTH_WAIT);
    CHECK_INT_EQ(ing_oauth_prepare(o, "opaque-active-gus", TEN, on_wake, &wk), ING_OAUTH_WAIT);
    CHECK_INT_EQ(ing_oauth_prepare(o, "opaque-active-gus", TEN, on_wake, &wk), ING_OAUTH_WAIT);
    sleep_ms(100);
    CHECK_INT_EQ(wakes(), w0);
    int64_t t0 = util_mono_ms();
    ing_oauth_free(o);
    CHECK_INT_EQ(wakes(), w0 + 4);
    CHECK(util_mono_ms() - t0 < 900); /* the requests under way were abandoned */
    set_delay(0);
    free(ta);
    TEST_PASS("ing_oauth_free wakes every parked request once");
}

static void t_metrics(ing_metrics_t *m)
{
    util_buf_t b;
    util_buf_init(&b, 1 << 20);
    ing_metrics_now_t now = {0};
    CHECK_INT_EQ(ing_metrics_render(m, &b, &now), 0);
    CHECK_CONTAINS(b.data, "# TYPE mcpq_oauth_fetches_total counter");
    CHECK_CONTAINS(b.data, "mcpq_oauth_keys ");
    CHECK(!strstr(b.data, "mcpq_oauth_fetches_total{result=\"ok\"} 0\n"));
    CHECK(!strstr(b.data, "mcpq_oauth_fetches_total{result=\"error\"} 0\n"));
    CHECK(!strstr(b.data, "mcpq_oauth_introspection_total{result=\"hit\"} 0\n"));
    CHECK(!strstr(b.data, "mcpq_oauth_introspection_total{result=\"miss\"} 0\n"));
    CHECK(!strstr(b.data, "mcpq_oauth_introspection_total{result=\"inactive\"} 0\n"));
    CHECK(!strstr(b.data, "mcpq_oauth_introspection_total{result=\"error\"} 0\n"));
    util_buf_cleanup(&b);
    TEST_PASS("metrics: mcpq_oauth_fetches_total, mcpq_oauth_keys, mcpq_oauth_introspection_total");
}

/* HTTP threads at once: prepare and check from 4 threads while the issuers are configured
 * again and again (issuer a kept with its keys, issuer b dropped and added back). */
typedef struct racer {
    ing_oauth_t *o;
    const char *token;
    waker_t w;
    int waits, ok;
} racer_t;

static void *race(void *arg)
{
    racer_t *r = arg;
    for (int i = 0; i < 300; i++) {
        const char *tok = i % 3 == 2 ? "opaque-active-race" : r->token;
        if (ing_oauth_prepare(r->o, tok, TEN, on_wake, &r->w) == ING_OAUTH_WAIT) {
            r->waits++;
            struct timespec until = util_deadline_realtime(5000);
            pthread_mutex_lock(&r->w.mu);
            while (r->w.n < r->waits && pthread_cond_timedwait(&r->w.cv, &r->w.mu, &until) == 0)
                ;
            pthread_mutex_unlock(&r->w.mu);
        }
        const char *why;
        r->ok += check(r->o, tok, NULL, &why) == 0;
    }
    return NULL;
}

static void t_concurrent(ing_metrics_t *m)
{
    mcpq_settings_t set = settings();
    ing_oauth_t *o = ing_oauth_new(&set, m);
    CHECK(o != NULL);
    serve_keys(&k1, NULL, "max-age=600");
    ing_oauth_source_t src[] = {
        {.tenant = TEN, .issuer = iss_a, .jwks_uri = jwks_a, .introspection_endpoint = intro},
        {.tenant = TEN, .issuer = iss_b}};
    ing_oauth_configure(o, src, 2);
    char *ta = token_make(&k1, iss_a, "alice", 600);
    prepare_settle(o, ta);
    racer_t r[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (racer_t){.o = o, .token = ta};
        pthread_mutex_init(&r[i].w.mu, NULL);
        pthread_cond_init(&r[i].w.cv, NULL);
        CHECK(pthread_create(&th[i], NULL, race, &r[i]) == 0);
    }
    for (int i = 0; i < 40; i++) {
        ing_oauth_configure(o, src, i % 2 ? 2 : 1);
        sleep_ms(5);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT_EQ(r[i].ok, 300); /* every check accepted: issuer a's keys never dropped */
        CHECK_INT_EQ(r[i].w.n, r[i].waits);
        pthread_mutex_destroy(&r[i].w.mu);
        pthread_cond_destroy(&r[i].w.cv);
    }
    ing_oauth_free(o);
    free(ta);
    TEST_PASS("4 threads prepare and check while the issuers are configured again and again");
}

/* A loopback port nothing listens on. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
    close(fd);
    return ntohs(sa.sin_port);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    CHECK(d != NULL);
    port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
    struct MHD_Daemon *d2 = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
                                                 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
                                             0, NULL, NULL, on_request2, NULL, MHD_OPTION_SOCK_ADDR,
                                             (struct sockaddr *)&sa, MHD_OPTION_END);
    CHECK(d2 != NULL);
    port2 = MHD_get_daemon_info(d2, MHD_DAEMON_INFO_BIND_PORT)->port;
    snprintf(iss_a, sizeof(iss_a), "http://127.0.0.1:%d/realms/a", port);
    snprintf(iss_b, sizeof(iss_b), "http://127.0.0.1:%d/realms/b", port);
    snprintf(iss_bad, sizeof(iss_bad), "http://127.0.0.1:%d/bad", port);
    snprintf(iss_dead, sizeof(iss_dead), "http://127.0.0.1:%d/realms/a", dead_port());
    snprintf(jwks_a, sizeof(jwks_a), "http://127.0.0.1:%d/jwks/a", port);
    snprintf(intro, sizeof(intro), "http://127.0.0.1:%d/introspect", port);
    fx_es256_new(&k1, "k1");
    fx_es256_new(&k2, "k2");
    ing_metrics_t *m = ing_metrics_new(100);
    t_http_rules();
    t_keys(m);
    t_max_age(m);
    t_unavailable(m);
    t_ssrf(m);
    t_introspection(m);
    t_expired(m);
    t_concurrent(m);
    t_free_wakes(m);
    t_metrics(m);
    ing_metrics_free(m);
    MHD_stop_daemon(d);
    MHD_stop_daemon(d2);
    fx_es256_free(&k1);
    fx_es256_free(&k2);
    curl_global_cleanup();
    return 0;
}
