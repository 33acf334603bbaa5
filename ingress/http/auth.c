#include "auth.h"
#include "names.h"

#include "err.h"
#include "peer.h"
#include "req.h"
#include "log.h"
#include "ratelimit.h"
#include "sig.h"
#include "util.h"

#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* When MCPQ_ALLOWED_ORIGINS is empty: the local machine on any port. */
static const char default_origins[] =
    "http://localhost:*,http://127.0.0.1:*,https://localhost:*,https://127.0.0.1:*,"
    "http://[::1]:*,https://[::1]:*";

/* Claims the nonce for its app: 1 when it was new, 0 when seen within SIG_NONCE_TTL_S,
 * MCPQ_EUNAVAIL when Redis cannot tell. */
static int nonce_claim(kv_pool_t *kv, const char *app_id, const char *nonce)
{
    char err[256];
    redisReply *r = kv_pool_command(kv, err, sizeof(err), "SET " NAMES_KEY_NONCE "%s:%s 1 NX EX %d",
                                    app_id, nonce, SIG_NONCE_TTL_S);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        log_event(LOG_ERROR, "auth: nonce store unavailable", "detail", r && r->str ? r->str : err,
                  (char *)NULL);
        if (r)
            freeReplyObject(r);
        return MCPQ_EUNAVAIL;
    }
    int fresh = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return fresh;
}

/* Parses a signed request's headers into *h and checks that X-Timestamp is fresh: 0, or -1
 * with *why set. */
static int signed_headers(const ing_req_t *req, sig_headers_t *h, const char **why)
{
    if (sig_headers_parse(ing_req_header(req, "X-App-Id"), ing_req_header(req, "X-Timestamp"),
                          ing_req_header(req, "X-Nonce"), ing_req_header(req, "X-Signature"), h,
                          why) < 0)
        return -1;
    if (!sig_ts_fresh(h->ts, util_now_ms() / 1000)) {
        *why = "X-Timestamp is more than 300 s away from the server clock";
        return -1;
    }
    return 0;
}

typedef struct hdr_list {
    sig_header_t *h;
    size_t n, cap;
} hdr_list_t;

static int collect_header(void *cls, const char *key, const char *value)
{
    hdr_list_t *l = cls;
    if (l->n < l->cap)
        l->h[l->n++] = (sig_header_t){key, value};
    return 0;
}

/* The canonical string of the request for signing version `version`: a malloc'd string,
 * or NULL with *why set (or out of memory). */
static char *canonical_of(const ing_req_t *req, const ing_auth_req_t *r, const sig_headers_t *h,
                          int version, const char **why)
{
    if (version == 1)
        return sig_canonical(r->method, r->uri, h->timestamp, h->nonce, r->body, r->body_len);
    hdr_list_t l = {.cap = ing_req_header_each(req, NULL, NULL)};
    char *out = NULL;
    l.h = calloc(l.cap + 1, sizeof(*l.h));
    if (!l.h)
        return NULL;
    ing_req_header_each(req, collect_header, &l);
    sig_canonical_v2(r->method, r->uri, h->timestamp, h->nonce, r->body, r->body_len,
                     ing_req_header(req, "X-Signed-Headers"), l.h, l.n, &out, why);
    free(l.h);
    return out;
}

static const ing_tenant_t *auth_signed(const ing_req_t *req, const ing_registry_t *reg,
                                       const ing_auth_req_t *r, ing_principal_t *who, int *status,
                                       const char **why)
{
    sig_headers_t h;
    int version;
    if (signed_headers(req, &h, why) < 0)
        return NULL;
    if (sig_version_parse(ing_req_header(req, "X-Signature-Version"), &version) < 0) {
        *why = "X-Signature-Version must be 1 or 2";
        return NULL;
    }
    if (version == 1 && ing_req_header(req, "X-Signed-Headers")) {
        *why = "X-Signed-Headers needs X-Signature-Version: 2";
        return NULL;
    }
    const char *shape = NULL;
    char *canonical = canonical_of(req, r, &h, version, &shape);
    if (!canonical && shape) {
        *why = shape;
        return NULL;
    }
    const ing_app_t *app = reg ? ing_registry_app(reg, h.app_id) : NULL;
    /* Either active secret (a rotation: docs/authentication.md "Rotating secrets"). An unknown app
     * and a wrong signature answer alike: app ids are not confirmed. */
    const char *secrets[2];
    size_t nsecrets = app ? ing_registry_secrets(app->doc, util_now_ms(), secrets) : 0;
    int ok = 0;
    for (size_t i = 0; canonical && i < nsecrets && !ok; i++)
        ok = sig_verify(secrets[i], strlen(secrets[i]), canonical, h.signature);
    free(canonical);
    if (!ok) {
        *why = "invalid signature (unknown app, wrong secret, or the request changed after "
               "signing)";
        return NULL;
    }
    /* Said only to a caller who proved the secret, so it confirms nothing to others. */
    if (version < app->sig_version) {
        *why = "this app requires X-Signature-Version: 2 (README \"Authentication\")";
        return NULL;
    }
    int fresh = nonce_claim(r->kv, h.app_id, h.nonce);
    if (fresh < 0) {
        *status = 503;
        *why = "nonce store (Redis) unavailable; try again";
        return NULL;
    }
    if (!fresh) {
        *why = "X-Nonce already used (a replayed request)";
        return NULL;
    }
    *who = (ing_principal_t){.tenant = app->tenant,
                             .kind = 'a',
                             .id = app->app_id,
                             .app = app->app_id,
                             .perms = app->perms,
                             .rate = app->rate};
    return app->tenant;
}

/* The registry's API key named by Authorization: Bearer or X-Api-Key, or NULL with *why set. */
static const ing_apikey_t *api_key(const ing_req_t *req, const ing_registry_t *reg,
                                   const char **why)
{
    const char *key = NULL;
    const char *authz = ing_req_header(req, "Authorization");
    if (authz) {
        if (strncasecmp(authz, "Bearer ", 7) != 0) {
            *why = "unsupported Authorization scheme (use Bearer, X-Api-Key or HMAC signing)";
            return NULL;
        }
        key = authz + 7;
        while (*key == ' ')
            key++;
    } else {
        key = ing_req_header(req, "X-Api-Key");
    }
    if (!key || !*key) {
        *why = "missing credentials (Authorization: Bearer <key>, X-Api-Key, or HMAC signing "
               "with X-App-Id, X-Timestamp, X-Nonce and X-Signature)";
        return NULL;
    }
    unsigned char sha[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)key, strlen(key), sha);
    const ing_apikey_t *k = reg ? ing_registry_auth_key(reg, sha) : NULL;
    if (!k)
        *why = "invalid API key";
    return k;
}

static const ing_tenant_t *auth_key(const ing_req_t *req, const ing_registry_t *reg,
                                    ing_principal_t *who, const char **why)
{
    const ing_apikey_t *k = api_key(req, reg, why);
    if (!k)
        return NULL;
    *who = (ing_principal_t){
        .tenant = k->tenant, .kind = 'k', .id = k->id, .perms = k->perms, .rate = k->rate};
    return k->tenant;
}

int ing_auth_known(const ing_req_t *req, const ing_registry_t *reg)
{
    const char *why;
    if (!reg)
        return 0;
    if (ing_req_header(req, "X-App-Id") || ing_req_header(req, "X-Signature")) {
        sig_headers_t h;
        return signed_headers(req, &h, &why) == 0 && ing_registry_app(reg, h.app_id) != NULL;
    }
    return api_key(req, reg, &why) != NULL;
}

/* The failure buckets of r's client ("a:<address>") and of app_id ("i:<app id>"; NULL:
 * none), each with its rate; how many. */
static int fail_buckets(const ing_auth_req_t *r, const char *app_id, char names[2][200],
                        ing_rate_t rates[2])
{
    const ing_authfail_t *f = r->fails;
    int n = 0;
    if (!f || !f->rl)
        return 0;
    if (f->addr_per_min > 0 && r->client) {
        snprintf(names[n], sizeof(names[n]), "a:%s", r->client);
        rates[n++] =
            (ing_rate_t){.per_s = (double)f->addr_per_min / 60.0, .burst = f->addr_per_min};
    }
    if (f->id_per_min > 0 && app_id) {
        snprintf(names[n], sizeof(names[n]), "i:%s", app_id);
        rates[n++] = (ing_rate_t){.per_s = (double)f->id_per_min / 60.0, .burst = f->id_per_min};
    }
    return n;
}

int ing_auth_fail_blocked(const ing_auth_req_t *r, const char *app_id, long long *retry_after_ms)
{
    char names[2][200];
    ing_rate_t rates[2];
    int n = fail_buckets(r, app_id, names, rates);
    for (int i = 0; i < n; i++)
        if (ing_ratelimit_blocked(r->fails->rl, names[i], &rates[i], retry_after_ms))
            return 1;
    return 0;
}

int ing_auth_fail_count(const ing_auth_req_t *r, const char *app_id, long long *retry_after_ms)
{
    char names[2][200];
    ing_rate_t rates[2];
    int n = fail_buckets(r, app_id, names, rates), over = 0;
    for (int i = 0; i < n; i++) {
        long long wait = 0;
        if (!ing_ratelimit_take(r->fails->rl, names[i], &rates[i], &wait)) {
            if (!over || wait > *retry_after_ms)
                *retry_after_ms = wait;
            over = 1;
        }
    }
    if (over)
        log_event(LOG_WARN, "auth: too many failed authentications; refusing for a while", "client",
                  r->client ? r->client : "unknown", "app", app_id ? app_id : "", (char *)NULL);
    return over;
}

const ing_tenant_t *ing_auth_tenant(const ing_req_t *req, const ing_registry_t *reg,
                                    ing_auth_req_t *r, ing_principal_t *who, int *status,
                                    const char **why)
{
    static const char too_many[] =
        "too many failed authentications from this client or against this app; retry later";
    const char *app_id = ing_req_header(req, "X-App-Id");
    int signed_req = app_id || ing_req_header(req, "X-Signature");
    int presented =
        signed_req || ing_req_header(req, "Authorization") || ing_req_header(req, "X-Api-Key");
    *status = 401;
    /* Before any work a credential costs: a lookup on this replica. */
    if (presented && ing_auth_fail_blocked(r, app_id, &r->retry_after_ms)) {
        *status = 429;
        *why = too_many;
        return NULL;
    }
    const ing_tenant_t *t =
        signed_req ? auth_signed(req, reg, r, who, status, why) : auth_key(req, reg, who, why);
    if (t || !presented || *status != 401)
        return t;
    /* Counted against the app only when it exists: names a caller makes up are not kept. */
    const char *app = app_id && reg && ing_registry_app(reg, app_id) ? app_id : NULL;
    if (ing_auth_fail_count(r, app, &r->retry_after_ms)) {
        *status = 429;
        *why = too_many;
    }
    return NULL;
}

int ing_auth_origin_ok(const ing_req_t *req, const char *allowed_origins, const char *allowed_hosts)
{
    const char *origin = ing_req_header(req, "Origin");
    if (origin) {
        const char *list = allowed_origins && *allowed_origins ? allowed_origins : default_origins;
        if (!ing_peer_listed(list, origin))
            return 0;
    }
    if (allowed_hosts && *allowed_hosts) {
        const char *host = ing_req_header(req, "Host");
        if (!host || !ing_peer_listed(allowed_hosts, host))
            return 0;
    }
    return 1;
}
