#include "auth.h"
#include "names.h"

#include "err.h"
#include "jwt.h"
#include "oauth.h"
#include "owner.h"
#include "peer.h"
#include "prm.h"
#include "req.h"
#include "log.h"
#include "ratelimit.h"
#include "sig.h"
#include "util.h"

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

/* The credential of Authorization: Bearer (blanks skipped), NULL when absent, or "" with
 * *why set for another scheme. */
static const char *bearer(const ing_req_t *req, const char **why)
{
    const char *authz = ing_req_header(req, "Authorization");
    if (!authz)
        return NULL;
    if (strncasecmp(authz, "Bearer ", 7) != 0) {
        *why = "unsupported Authorization scheme (use Bearer, X-Api-Key or HMAC signing)";
        return "";
    }
    authz += 7;
    while (*authz == ' ')
        authz++;
    return authz;
}

/* The registry's API key whose value is key, or NULL. */
static const ing_apikey_t *key_of(const ing_registry_t *reg, const char *key)
{
    return reg ? ing_registry_auth_key_value(reg, key, strlen(key)) : NULL;
}

/* The registry's API key named by Authorization: Bearer or X-Api-Key, or NULL with *why set. */
static const ing_apikey_t *api_key(const ing_req_t *req, const ing_registry_t *reg,
                                   const char **why)
{
    *why = NULL;
    const char *key = bearer(req, why);
    if (key && !*key && *why) /* another scheme */
        return NULL;
    if (!key)
        key = ing_req_header(req, "X-Api-Key");
    if (!key || !*key) {
        *why = "missing credentials (Authorization: Bearer <key>, X-Api-Key, or HMAC signing "
               "with X-App-Id, X-Timestamp, X-Nonce and X-Signature)";
        return NULL;
    }
    const ing_apikey_t *k = key_of(reg, key);
    if (!k)
        *why = "invalid API key";
    return k;
}

int ing_auth_access_token(const ing_req_t *req, const ing_registry_t *reg, const char **token)
{
    const char *why = NULL;
    const char *t = bearer(req, &why);
    if (!t || !*t || ing_req_header(req, "X-App-Id") || ing_req_header(req, "X-Signature") ||
        key_of(reg, t))
        return 0;
    *token = t;
    return 1;
}

/* ---- OAuth access tokens (docs/authorization.md) ---------------------------------------- */

/* The non-empty string claim name of claims, or NULL. */
static const char *claim_str(const cJSON *claims, const char *name)
{
    const char *v =
        name ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(claims, name)) : NULL;
    return v && *v ? v : NULL;
}

/* 1 when tenant t takes a token validated against issuer with these claims: it trusts the
 * issuer and, when it names a tenant claim, the claim holds its value. */
static int tenant_takes(const ing_tenant_t *t, const char *issuer, const cJSON *claims)
{
    const ing_tenant_oauth_t *o = t->oauth;
    int trusted = 0;
    for (size_t i = 0; o && i < o->n_issuers && !trusted; i++)
        trusted = strcmp(o->issuers[i], issuer) == 0;
    if (!trusted || !o->claim_tenant)
        return trusted;
    const char *v = claim_str(claims, o->claim_tenant);
    return v && strcmp(v, o->tenant_value ? o->tenant_value : t->id) == 0;
}

/* 1 when the token's aud names this server: the resource URL req names, the base URL (with
 * or without its slash), or one of the tenant's oauth.audiences (RFC 8707). */
static int audience_ok(const ing_req_t *req, const ing_tenant_oauth_t *o, const cJSON *claims)
{
    const mcpq_settings_t *set = req->ctx->set;
    char resource[800], base[512], slash[520];
    const char *auds[3];
    size_t n = 0;
    if (ing_prm_resource(req, resource, sizeof(resource)) == 0)
        auds[n++] = resource;
    if (ing_peer_public_base(set->public_url, set->allowed_hosts, ing_req_header(req, "Host"), base,
                             sizeof(base)) == 0) {
        snprintf(slash, sizeof(slash), "%s/", base);
        auds[n++] = base;
        auds[n++] = slash;
    }
    if (n && jwt_claims_aud(claims, auds, n) == JWT_OK)
        return 1;
    return o->n_audiences && jwt_claims_aud(claims, o->audiences, o->n_audiences) == JWT_OK;
}

/* A writer of NUL-terminated strings into a fixed buffer. */
typedef struct {
    char *buf;
    size_t len, used;
    int full;
} store_t;

/* Starts a string in s; NULL when full. */
static char *store_begin(store_t *s)
{
    if (s->used >= s->len) {
        s->full = 1;
        return NULL;
    }
    s->buf[s->used] = '\0';
    return s->buf + s->used;
}

/* Appends word[0..len) to the current string str (space-separated) unless it is there. */
static void store_word(store_t *s, char *str, const char *word, size_t len)
{
    if (str && util_word_add(str, (size_t)(s->buf + s->len - str), word, len) < 0)
        s->full = 1;
}

/* Ends the current string str. */
static void store_end(store_t *s, const char *str)
{
    if (str)
        s->used = (size_t)(str - s->buf) + strlen(str) + 1;
}

static const char *store_str(store_t *s, const char *value)
{
    char *str = store_begin(s);
    if (str && value)
        store_word(s, str, value, strlen(value));
    store_end(s, str);
    return str;
}

/* The token's scopes ("scope": space-separated; "scp": a string or an array of strings) as
 * one space-separated string in s. */
static const char *token_scopes(store_t *s, const cJSON *claims)
{
    char *str = store_begin(s);
    const cJSON *scope = cJSON_GetObjectItemCaseSensitive(claims, "scope");
    const cJSON *scp = cJSON_GetObjectItemCaseSensitive(claims, "scp");
    const char *words = cJSON_IsString(scope) ? scope->valuestring
                        : cJSON_IsString(scp) ? scp->valuestring
                                              : NULL;
    for (const char *p = words; str && p && *p;) {
        size_t len = strcspn(p, " ");
        store_word(s, str, p, len);
        p += len + strspn(p + len, " ");
    }
    const cJSON *e;
    if (str && cJSON_IsArray(scp))
        cJSON_ArrayForEach(e, scp) if (cJSON_IsString(e))
            store_word(s, str, e->valuestring, strlen(e->valuestring));
    store_end(s, str);
    return str;
}

/* The permissions the granted scopes map to through the tenant's oauth.scopes (without a
 * map: the scopes themselves). */
static const char *token_perms(store_t *s, const ing_tenant_oauth_t *o, const char *granted)
{
    if (!o->scopes)
        return granted;
    char *str = store_begin(s), word[256];
    for (const char *p = granted; str && p && *p;) {
        size_t len = strcspn(p, " ");
        snprintf(word, sizeof(word), "%.*s", (int)(len < sizeof(word) ? len : 0), p);
        const cJSON *e, *perms = cJSON_GetObjectItemCaseSensitive(o->scopes, word);
        cJSON_ArrayForEach(e, perms) if (cJSON_IsString(e))
            store_word(s, str, e->valuestring, strlen(e->valuestring));
        p += len + strspn(p + len, " ");
    }
    store_end(s, str);
    return str;
}

/* The servers the token's aud binds it to (owner.h) into s; NULL: the whole tenant. */
static const char *token_servers(const ing_req_t *req, store_t *s, const ing_tenant_oauth_t *o,
                                 const cJSON *claims)
{
    const mcpq_settings_t *set = req->ctx->set;
    char base[512];
    int have = ing_peer_public_base(set->public_url, set->allowed_hosts,
                                    ing_req_header(req, "Host"), base, sizeof(base)) == 0;
    char *str = store_begin(s);
    if (!str)
        return NULL;
    int rc = ing_owner_binding(claims, have ? base : NULL, o->audiences, o->n_audiences, str,
                               (size_t)(s->buf + s->len - str));
    if (rc < 0) /* too many servers to keep, or none: fail closed */
        s->full = 1;
    if (rc < 0 || !*str)
        return NULL;
    store_end(s, str);
    return str;
}

/* Fills *who for a token of tenant t, its strings in r->store: 0, or -1 with *why. */
static int token_principal(const ing_req_t *req, const ing_tenant_t *t, const cJSON *claims,
                           ing_auth_req_t *r, ing_principal_t *who, const char **why)
{
    const ing_tenant_oauth_t *o = t->oauth;
    store_t s = {.buf = r->store, .len = r->store ? ING_AUTH_STORE : 0};
    const char *user = claim_str(claims, o->claim_user);
    const char *app = claim_str(claims, o->claim_app);
    if (!app)
        app = claim_str(claims, "client_id");
    *who = (ing_principal_t){.tenant = t, .kind = 'o', .rate = {.per_s = -1}};
    who->id = store_str(&s, user ? user : app);
    who->user = user ? who->id : NULL; /* a client id is no user (access.h) */
    who->app = app ? store_str(&s, app) : NULL;
    who->servers = token_servers(req, &s, o, claims);
    who->token_scopes = token_scopes(&s, claims);
    who->perms = token_perms(&s, o, who->token_scopes);
    if (!user && !app) {
        *why = "the token names neither a user nor a client";
        return -1;
    }
    if (s.full || !who->id || !who->token_scopes || !who->perms) {
        *why = "the token's claims are too large";
        return -1;
    }
    return 0;
}

/* The one tenant whose introspection endpoint an opaque token presented with req may be sent
 * to (docs/authorization.md "Which tenant introspects where"), chosen by the endpoint called
 * and never by the token; NULL with *why when no tenant or several introspect there. */
static const ing_tenant_t *introspector_of(const ing_req_t *req, const ing_registry_t *reg,
                                           const char **why)
{
    char name[160];
    size_t n = 0;
    const ing_tenant_t *t =
        ing_registry_introspector(reg, ing_prm_server(req, name, sizeof(name)), &n);
    if (!t)
        *why = n ? "opaque tokens are ambiguous at this endpoint (several tenants introspect "
                   "tokens here): use your tenant's own /mcp/<server> endpoint or a JWT access "
                   "token"
                 : "the token is not a JWT and no tenant introspects opaque tokens at this "
                   "endpoint";
    return t;
}

/* The tenant of an OAuth access token, or NULL with *status (401, 503) and *why. A JWT's
 * tenant is the one that trusts its iss (and matches claims.tenant); an opaque token's is the
 * one tenant that introspects at the endpoint called, whose answer must name it too. */
static const ing_tenant_t *auth_token(const ing_req_t *req, const ing_registry_t *reg,
                                      const char *token, ing_auth_req_t *r, ing_principal_t *who,
                                      int *status, const char **why)
{
    ing_oauth_token_t tok = {0};
    const ing_tenant_t *t = NULL, *intro = NULL;
    r->token = 1;
    *status = 401;
    if (!jwt_looks_like(token) && !(intro = introspector_of(req, reg, why)))
        return NULL;
    int rc = ing_oauth_check(r->oauth, token, intro ? intro->id : NULL, &tok, why);
    if (rc) {
        *status = rc == MCPQ_EUNAVAIL ? 503 : 401;
        return NULL;
    }
    if (intro) /* never another tenant's, whatever the answer says */
        t = tenant_takes(intro, tok.issuer, tok.claims) ? intro : NULL;
    for (size_t i = 0; !intro && i < ing_registry_tenant_count(reg) && !t; i++) {
        const ing_tenant_t *c = ing_registry_tenant_at(reg, i);
        if (tenant_takes(c, tok.issuer, tok.claims))
            t = c;
    }
    if (!t) {
        *why = intro ? "the introspection answer does not name this endpoint's tenant "
                       "(oauth.claims.tenant)"
                     : "no tenant takes tokens of this issuer with these claims";
    } else if (!audience_ok(req, t->oauth, tok.claims)) {
        *why = "the token was not issued for this server (aud)";
        t = NULL;
    } else if (token_principal(req, t, tok.claims, r, who, why) != 0)
        t = NULL;
    ing_oauth_token_clear(&tok);
    return t;
}

static const ing_tenant_t *auth_key(const ing_req_t *req, const ing_registry_t *reg,
                                    ing_auth_req_t *r, ing_principal_t *who, int *status,
                                    const char **why)
{
    const char *token = NULL;
    if (r->oauth && ing_registry_oauth_used(reg) && ing_auth_access_token(req, reg, &token))
        return auth_token(req, reg, token, r, who, status, why);
    const ing_apikey_t *k = api_key(req, reg, why);
    if (!k)
        return NULL;
    *who = (ing_principal_t){
        .tenant = k->tenant, .kind = 'k', .id = k->id, .perms = k->perms, .rate = k->rate};
    return k->tenant;
}

int ing_auth_prepare(const ing_req_t *req, const ing_registry_t *reg, ing_auth_req_t *r,
                     ing_oauth_wake_fn wake, void *arg)
{
    const char *token, *why;
    const ing_tenant_t *intro = NULL;
    if (!r->oauth || !ing_registry_oauth_used(reg) || !ing_auth_access_token(req, reg, &token))
        return ING_OAUTH_READY;
    if (ing_auth_fail_blocked(r, NULL, &r->retry_after_ms))
        return ING_OAUTH_READY; /* refused 429 without a request to anyone */
    if (!jwt_looks_like(token) && !(intro = introspector_of(req, reg, &why)))
        return ING_OAUTH_READY; /* refused 401: nobody may be asked */
    return ing_oauth_prepare(r->oauth, token, intro ? intro->id : NULL, wake, arg);
}

/* 1 when token looks like an access token some tenant could take at req's endpoint, from what
 * it says of itself (no signature, no request): a JWT whose iss a tenant trusts and whose
 * exp has not passed, or an opaque token where one tenant introspects. */
static int token_plausible(const ing_req_t *req, const ing_registry_t *reg, const char *token)
{
    const char *why;
    if (!jwt_looks_like(token))
        return introspector_of(req, reg, &why) != NULL;
    jwt_t *t = NULL;
    int ok = 0;
    if (jwt_parse(token, strlen(token), &t, &why) == JWT_OK && jwt_iss(t) &&
        jwt_check_time(t, (long long)(util_now_ms() / 1000), (int)req->ctx->set->oauth_clock_skew_s,
                       &why) == JWT_OK) {
        for (size_t i = 0; i < ing_registry_tenant_count(reg) && !ok; i++) {
            const ing_tenant_oauth_t *o = ing_registry_tenant_at(reg, i)->oauth;
            for (size_t j = 0; o && j < o->n_issuers && !ok; j++)
                ok = strcmp(o->issuers[j], jwt_iss(t)) == 0;
        }
    }
    jwt_free(t);
    return ok;
}

int ing_auth_known(const ing_req_t *req, const ing_registry_t *reg)
{
    const char *why, *token;
    if (!reg)
        return 0;
    if (req->ctx->oauth && ing_registry_oauth_used(reg) && ing_auth_access_token(req, reg, &token))
        return token_plausible(req, reg, token);
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
    const ing_tenant_t *t = signed_req ? auth_signed(req, reg, r, who, status, why)
                                       : auth_key(req, reg, r, who, status, why);
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
