/*
 * adm_subs.c - the arrays of a tenant document (adm.h): /admin/v1/tenants/{t}/apiKeys,
 * /apps and /webhooks [/{id}], and :rotateSecret of an app or a webhook. Created keys and
 * secrets are returned once, in the answer to the request that made them; keys are stored as
 * SHA-256 only (docs/api.md, "Administration: the admin API").
 */
#include "adm.h"

#include "cfg.h"
#include "err.h"
#include "log.h"
#include "util.h"
#include "webhook.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#define ADM_ROTATE_GRACE_S 86400       /* :rotateSecret keeps the old secret this long */
#define ADM_ROTATE_GRACE_MAX_S 2592000 /* at most 30 days */

typedef struct sub_kind {
    const char *path;  /* URL segment */
    const char *array; /* member of the tenant document */
    const char *id_key;
    const char *what;
    cJSON *(*show)(const cJSON *);
    const char *def; /* config schema definition */
} sub_kind_t;

static const sub_kind_t sub_kinds[] = {
    {"apiKeys", "api_keys", "id", "API key", ing_adm_show_key, "apiKey"},
    {"apps", "apps", "app_id", "app", ing_adm_show_app, "app"},
    {"webhooks", "webhooks", "id", "webhook", ing_adm_show_webhook, "webhook"},
};

/* ---- secrets ---------------------------------------------------------------------------- */

static int whsec_new(char *out, size_t size)
{
    unsigned char raw[32];
    unsigned char b64[48];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return MCPQ_EIO;
    EVP_EncodeBlock(b64, raw, sizeof(raw));
    snprintf(out, size, "whsec_%s", (const char *)b64);
    return 0;
}

/* The SSRF guard of the config load (webhook.h) for one webhook w of tenant; 1 when it
 * passes, else answers 400. */
static int webhook_url_ok(adm_t *a, const char *tenant, const cJSON *w)
{
    char err[512];
    if (a->req->ctx->set->webhook_allow_private)
        return 1;
    cJSON *doc = cJSON_CreateObject(), *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "id", tenant);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(t, "webhooks"), cJSON_Duplicate(w, 1));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "tenants"), t);
    int rc = ing_whrules_config_check(doc, err, sizeof(err));
    cJSON_Delete(doc);
    if (rc == 0)
        return 1;
    ing_adm_fail(a, 400, "%s", err);
    return 0;
}

/* 1 when app_id is free in every tenant, else answers 409. */
static int app_id_free(adm_t *a, const char *app_id)
{
    cJSON *docs = docs_with_prefix(a, "tenant:"), *d;
    const char *owner = NULL;
    cJSON_ArrayForEach(d, docs)
    {
        if (by_id(cJSON_GetObjectItemCaseSensitive(d, "apps"), "app_id", app_id))
            owner = str_of(d, "id");
    }
    cJSON_Delete(docs);
    if (owner)
        ing_adm_fail(a, 409,
                     "$.app_id: app \"%s\" exists already (app ids are unique across tenants)",
                     app_id);
    return owner == NULL;
}

/* Gives o an "id" of prefix-<8 hex> when it has none. */
static void default_id(cJSON *o, const char *prefix)
{
    char hex[17], id[32];
    if (str_of(o, "id"))
        return;
    util_random_hex(hex, 4);
    snprintf(id, sizeof(id), "%s-%s", prefix, hex);
    cJSON_AddStringToObject(o, "id", id);
}

/* 1 when app's literal secrets are long enough (MCPQ_APP_SECRET_MIN_BYTES), else answers
 * 400 naming the app. */
static int app_secrets_ok(adm_t *a, const cJSON *app)
{
    char err[400];
    if (cfg_check_app(app, (size_t)a->req->ctx->set->app_secret_min_bytes, "$", err, sizeof(err)) ==
        0)
        return 1;
    ing_adm_fail(a, 400, "%s", err);
    return 0;
}

/* Fills a new sub-object from the body; *shown_secret receives what is shown once. */
static cJSON *sub_new(adm_t *a, const sub_kind_t *k, char *secret, size_t secret_size)
{
    cJSON *o = cJSON_Duplicate(a->body, 1);
    secret[0] = '\0';
    if (!ing_adm_no_env_refs(a, o, "$")) {
        cJSON_Delete(o);
        return NULL;
    }
    if (k->show == ing_adm_show_key) {
        static const char *const allowed[] = {"id", "sha256", "rate_limit", "scopes", NULL};
        if (!ing_adm_only_members(a, o, allowed)) {
            cJSON_Delete(o);
            return NULL;
        }
        default_id(o, "k");
        if (!str_of(o, "sha256")) {
            char hex[49], sha[65];
            util_random_hex(hex, 24);
            snprintf(secret, secret_size, "mcpq_%s", hex);
            util_sha256_hex(secret, strlen(secret), sha);
            cJSON_AddStringToObject(o, "sha256", sha);
        }
    } else if (k->show == ing_adm_show_app) {
        if (!cJSON_HasObjectItem(o, "secret")) {
            util_random_hex(secret, 32);
            cJSON_AddStringToObject(o, "secret", secret);
        }
    } else {
        default_id(o, "wh");
        if (!cJSON_HasObjectItem(o, "secret")) {
            whsec_new(secret, secret_size);
            cJSON_AddStringToObject(o, "secret", secret);
        }
    }
    if (!ing_adm_body_valid(a, o, k->def) ||
        (k->show == ing_adm_show_app && !app_secrets_ok(a, o))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int sub_list_or_create(adm_t *a, const sub_kind_t *k, cJSON *t)
{
    const ing_listing_field_t fields[] = {{"name", k->id_key}, {"create_time", "createTime"}};
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(t, k->array);
    if (strcmp(a->method, "GET") == 0) {
        cJSON *items = cJSON_CreateArray(), *e;
        cJSON_ArrayForEach(e, arr)
        {
            cJSON_AddItemToArray(items, k->show(e));
        }
        return ing_adm_answer_list(a, items, fields, 2, k->path);
    }
    char secret[128];
    cJSON *o = sub_new(a, k, secret, sizeof(secret));
    if (!o)
        return DONE;
    const char *id = str_of(o, k->id_key);
    if (by_id(arr, k->id_key, id)) {
        ing_adm_fail(a, 409, "$.%s: %s \"%s\" exists already", k->id_key, k->what, id);
        cJSON_Delete(o);
        return DONE;
    }
    if ((k->show == ing_adm_show_app && !app_id_free(a, id)) ||
        (k->show == ing_adm_show_webhook && !webhook_url_ok(a, str_of(t, "id"), o))) {
        cJSON_Delete(o);
        return DONE;
    }
    ing_regstore_touch(o, a->now);
    cJSON *copy = ing_adm_stage_tenant(a, t);
    cJSON *carr = cJSON_GetObjectItemCaseSensitive(copy, k->array);
    if (!carr)
        carr = cJSON_AddArrayToObject(copy, k->array);
    cJSON_AddItemToArray(carr, o);
    cJSON *shown = k->show(o);
    if (secret[0]) /* shown once: only this answer carries it */
        cJSON_AddStringToObject(shown, k->show == ing_adm_show_key ? "key" : "secret", secret);
    log_event(LOG_INFO, "admin: created", "tenant", str_of(t, "id"), "kind", k->what, "id", id,
              (char *)NULL);
    return ing_adm_answer(a, 201, shown);
}

/*
 * :rotateSecret of app or webhook ce: a new secret (shown once, written to secret), the old
 * one kept as previous_secret for the body's grace_s (default ADM_ROTATE_GRACE_S; 0 drops it
 * at once), docs/authentication.md "Rotating secrets". A previous secret still in its grace is
 * replaced. 1, or 0 with the answer (400) made.
 */
static int rotate_secret(adm_t *a, const sub_kind_t *k, cJSON *ce, char *secret, size_t size)
{
    static const char *const allowed[] = {"grace_s", NULL};
    long long grace_s = ADM_ROTATE_GRACE_S;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(a->body, "grace_s");
    if (!ing_adm_only_members(a, a->body, allowed))
        return 0;
    if (g && (!cJSON_IsNumber(g) || g->valuedouble != (double)(long long)g->valuedouble ||
              g->valuedouble < 0 || g->valuedouble > ADM_ROTATE_GRACE_MAX_S)) {
        ing_adm_fail(a, 400, "$.grace_s: must be an integer from 0 to %d (seconds)",
                     ADM_ROTATE_GRACE_MAX_S);
        return 0;
    }
    if (g)
        grace_s = (long long)g->valuedouble;
    if (k->show == ing_adm_show_app) {
        util_random_hex(secret, 32);
    } else if (whsec_new(secret, size) < 0) {
        ing_adm_fail(a, 500, "no random bytes for a new secret");
        return 0;
    }
    cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(ce, "secret");
    cJSON_DeleteItemFromObjectCaseSensitive(ce, "previous_secret");
    cJSON_DeleteItemFromObjectCaseSensitive(ce, "previous_secret_expires");
    if (old && grace_s > 0) {
        char until[40];
        util_format_utc(util_now_ms() + grace_s * 1000, until, sizeof(until));
        cJSON_AddItemToObject(ce, "previous_secret", old);
        cJSON_AddStringToObject(ce, "previous_secret_expires", until);
    } else {
        cJSON_Delete(old);
    }
    cJSON_AddStringToObject(ce, "secret", secret);
    return 1;
}

static int sub_one(adm_t *a, const sub_kind_t *k, cJSON *t, const char *id)
{
    cJSON *e = by_id(cJSON_GetObjectItemCaseSensitive(t, k->array), k->id_key, id);
    if (!e)
        return ing_adm_fail(a, 404, "tenant \"%s\" has no %s \"%s\"", str_of(t, "id"), k->what, id);
    int rc;
    if (!ing_adm_read_or_check(a, k->show(e), &rc))
        return rc;
    cJSON *copy = ing_adm_stage_tenant(a, t);
    cJSON *carr = cJSON_GetObjectItemCaseSensitive(copy, k->array);
    cJSON *ce = by_id(carr, k->id_key, id);
    if (strcmp(a->method, "DELETE") == 0) {
        cJSON_Delete(cJSON_DetachItemViaPointer(carr, ce));
        log_event(LOG_INFO, "admin: deleted", "tenant", str_of(t, "id"), "kind", k->what, "id", id,
                  (char *)NULL);
        return ing_adm_no_content(a);
    }
    char secret[128] = "";
    if (a->verb) { /* apps/{id}:rotateSecret, webhooks/{id}:rotateSecret */
        if (!rotate_secret(a, k, ce, secret, sizeof(secret)))
            return DONE;
    } else {
        static const char *const app_keys[] = {"rate_limit",
                                               "secret",
                                               "signature_version",
                                               "previous_secret",
                                               "previous_secret_expires",
                                               "scopes",
                                               NULL};
        static const char *const key_keys[] = {"rate_limit", "scopes", NULL};
        static const char *const wh_keys[] = {
            "url", "events", "secret", "previous_secret", "previous_secret_expires", NULL};
        if (!ing_adm_no_env_refs(a, a->body, "$") ||
            !ing_adm_only_members(a, a->body,
                                  k->show == ing_adm_show_app   ? app_keys
                                  : k->show == ing_adm_show_key ? key_keys
                                                                : wh_keys))
            return DONE;
        merge_patch(ce, a->body);
        cJSON *bare = cJSON_Duplicate(ce, 1); /* the schema does not know the metadata */
        ing_regstore_strip_meta_one(bare);
        int new_secret = cJSON_HasObjectItem(a->body, "secret") ||
                         cJSON_HasObjectItem(a->body, "previous_secret");
        int ok = ing_adm_body_valid(a, bare, k->def) &&
                 (k->show != ing_adm_show_webhook || webhook_url_ok(a, str_of(t, "id"), bare)) &&
                 (k->show != ing_adm_show_app || !new_secret || app_secrets_ok(a, bare));
        cJSON_Delete(bare);
        if (!ok)
            return DONE;
    }
    ing_regstore_touch(ce, a->now);
    cJSON *shown = k->show(ce);
    if (secret[0])
        cJSON_AddStringToObject(shown, "secret", secret);
    return ing_adm_answer(a, 200, shown);
}

static const sub_kind_t *sub_kind(const char *seg)
{
    for (size_t i = 0; i < sizeof(sub_kinds) / sizeof(sub_kinds[0]); i++)
        if (strcmp(sub_kinds[i].path, seg) == 0)
            return &sub_kinds[i];
    return NULL;
}

int ing_adm_subs_is_path(const char *seg)
{
    return sub_kind(seg) != NULL;
}

int ing_adm_subs_route(adm_t *a, cJSON *t)
{
    char **s = a->seg;
    int n = a->nseg;
    const sub_kind_t *k = sub_kind(s[2]);
    if (n == 3)
        return ing_adm_allow(a, "GET, POST") ? sub_list_or_create(a, k, t) : DONE;
    if (n == 4) {
        if (a->verb && (k->show == ing_adm_show_key || strcmp(a->verb, "rotateSecret") != 0))
            return ing_adm_fail(a, 404, "no such admin resource");
        if (a->verb)
            return ing_adm_allow(a, "POST") ? sub_one(a, k, t, s[3]) : DONE;
        return ing_adm_allow(a, "GET, PATCH, DELETE") ? sub_one(a, k, t, s[3]) : DONE;
    }
    return ing_adm_fail(a, 404, "no such admin resource");
}
