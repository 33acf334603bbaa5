/*
 * admin.c - the operator API (admin.h): routing, the read-modify-write loop over the registry
 * (regstore.h), the seed-003 version rules and the objects as the API shows them.
 *
 * Decisions (README "Administration" says the same to users):
 *   - Created API keys, app secrets and webhook secrets are returned once, in the answer to
 *     the request that created (or :rotateSecret replaced) them; keys are stored as SHA-256
 *     only, and no read shows a secret or a key's hash: the export (GET /admin/v1/config) and
 *     the version and server views show "(hidden)" in their place (cfgsecret.h), the key, app
 *     and webhook views leave them out. A PUT of the export keeps the stored secret where it
 *     finds "(hidden)"; the CLI's `mcpq-ingress --export` (run with the operator's own access
 *     to Redis) is the export with secrets, for backups. :rotateSecret keeps the old secret as
 *     previous_secret for a grace (README "Rotating secrets"). Bodies take literal secrets
 *     only: `*_env` references belong in the config file, where the process that reads them
 *     has the environment.
 *   - A tool is created with its first version (POST .../tools {"name", "server"?, "version",
 *     "publish"?}); it disappears with its last version, so there is no DELETE of a tool.
 *   - A published version cannot be edited (offline it or add a version), so a published
 *     version is exactly what callers get; calls in flight finish on the version they
 *     started with because the job carries its executor.
 *   - Creating a tenant creates its default server ("default" unless named); deleting a
 *     tenant deletes its servers and tools.
 *   - Etags are computed over the object as shown (metadata included) and change with every
 *     write to it; a tool's etag also changes when a version is added, published or
 *     taken offline.
 */
#include "admin.h"

#include "api.h"
#include "auth.h"
#include "cfgsecret.h"
#include "cfg.h"
#include "err.h"
#include "listing.h"
#include "log.h"
#include "peer.h"
#include "regstore.h"
#include "sch.h"
#include "util.h"
#include "webhook.h"
#include "whapi.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEGS 8
#define TRIES 8
#define PAGE_DEFAULT 50
#define PAGE_MAX 1000
#define ADM_ROTATE_GRACE_S 86400       /* :rotateSecret keeps the old secret this long */
#define ADM_ROTATE_GRACE_MAX_S 2592000 /* at most 30 days */

typedef struct adm {
    ing_req_t *req;
    ing_resp_t *resp;
    const char *method;
    char *path; /* copy of the url after /admin/v1/, split in place */
    char *seg[MAX_SEGS];
    int nseg;
    const char *verb; /* "publish" for .../versions/1:publish, else NULL */
    cJSON *body;      /* POST/PATCH/PUT body, or NULL */
    const char *if_match;
    ing_regstore_state_t st;
    char now[32];
    char tenant_field[200];
    const char *check_tenant; /* the tenant to validate before committing, or NULL */
} adm_t;

enum { DONE = 0, COMMIT = 1 };

/* ---- answers ---------------------------------------------------------------------------- */

static int fail(adm_t *a, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(adm_t *a, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    free(a->resp->body);
    a->resp->body = NULL;
    ing_api_error(a->resp, status, msg);
    return DONE;
}

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void copy_member(cJSON *to, const cJSON *from, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, k);
    if (v)
        cJSON_AddItemToObject(to, k, cJSON_Duplicate(v, 1));
}

static void copy_meta(cJSON *to, const cJSON *from)
{
    copy_member(to, from, "createTime");
    copy_member(to, from, "updateTime");
}

/* Adds the etag computed over o as shown. */
static cJSON *with_etag(cJSON *o)
{
    char e[21];
    ing_regstore_etag(o, NULL, e);
    cJSON_AddStringToObject(o, "etag", e);
    return o;
}

/* Answers one object (consumed) with its etag as the ETag header. */
static int answer(adm_t *a, int status, cJSON *o)
{
    const char *e = str_of(o, "etag");
    if (e)
        snprintf(a->resp->etag, sizeof(a->resp->etag), "%s", e);
    free(a->resp->body);
    a->resp->body = NULL;
    ing_api_body(a->resp, status, o);
    return status < 300 && strcmp(a->method, "GET") != 0 ? COMMIT : DONE;
}

static int no_content(adm_t *a)
{
    free(a->resp->body);
    a->resp->body = NULL;
    a->resp->status = 204;
    return COMMIT;
}

/* 412 unless the request's If-Match (absent, "*", or a list of quoted or weak etags) names
 * shown's etag. 1 when the write may go on. */
static int precondition(adm_t *a, const cJSON *shown)
{
    const char *im = a->if_match, *cur = str_of(shown, "etag");
    if (!im || !cur)
        return 1;
    for (const char *p = im; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (*p == '*')
            return 1;
        int q = *p == '"';
        p += q;
        size_t n = strcspn(p, q ? "\"" : ", ");
        if (n == strlen(cur) && strncmp(p, cur, n) == 0)
            return 1;
        p += n;
        p += *p == '"';
    }
    fail(a, 412, "If-Match: the object changed since it was read (current etag \"%s\")", cur);
    return 0;
}

/* A GET (without a verb) is answered with shown (consumed); any other request is checked
 * against shown's etag (precondition). 1 when the write may go on; 0 when answered, *rc then
 * being what the handler returns. */
static int read_or_check(adm_t *a, cJSON *shown, int *rc)
{
    if (strcmp(a->method, "GET") == 0 && !a->verb) {
        *rc = answer(a, 200, shown);
        return 0;
    }
    int ok = precondition(a, shown);
    cJSON_Delete(shown);
    *rc = DONE;
    return ok;
}

/* A JSON merge patch (RFC 7396, one level): each member of patch replaces into's, null
 * removes it. */
static void merge_patch(cJSON *into, const cJSON *patch)
{
    for (const cJSON *m = patch ? patch->child : NULL; m; m = m->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(into, m->string);
        if (!cJSON_IsNull(m))
            cJSON_AddItemToObject(into, m->string, cJSON_Duplicate(m, 1));
    }
}

/* ---- objects as shown ------------------------------------------------------------------- */

/* The members keys (NULL-terminated) of src with its metadata and etag. */
static cJSON *show_members(const cJSON *src, const char *const *keys)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; keys[i]; i++)
        copy_member(o, src, keys[i]);
    copy_meta(o, src);
    return with_etag(o);
}

static cJSON *show_tenant(const cJSON *t)
{
    static const char *const keys[] = {"id",     "default_server", "rate_limits",
                                       "robots", "quotas",         NULL};
    return show_members(t, keys);
}

/* An API key: never its hash. */
static cJSON *show_key(const cJSON *k)
{
    static const char *const keys[] = {"id", "rate_limit", NULL};
    return show_members(k, keys);
}

/* An app: never its secret. */
static cJSON *show_app(const cJSON *k)
{
    static const char *const keys[] = {"app_id", "rate_limit", "signature_version",
                                       "previous_secret_expires", NULL};
    return show_members(k, keys);
}

/* A webhook: never its secret. */
static cJSON *show_webhook(const cJSON *w)
{
    static const char *const keys[] = {"id", "url", "events", "previous_secret_expires", NULL};
    return show_members(w, keys);
}

static cJSON *show_server(const cJSON *s)
{
    cJSON *o = cJSON_CreateObject();
    copy_member(o, s, "tenant");
    copy_member(o, s, "name");
    copy_member(o, s, "description");
    const cJSON *fed = cJSON_GetObjectItemCaseSensitive(s, "federate");
    if (fed) { /* header values may be credentials: hidden (cfgsecret.h) */
        cJSON *f = cJSON_Duplicate(fed, 1);
        cfg_secret_redact_federate(f);
        cJSON_AddItemToObject(o, "federate", f);
    }
    copy_meta(o, s);
    return with_etag(o);
}

static const cJSON *find_version(const cJSON *tool, const char *v)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tool, "versions"))
    {
        if (str_of(e, "version") && strcmp(str_of(e, "version"), v) == 0)
            return e;
    }
    return NULL;
}

static int is_published(const cJSON *tool, const char *v)
{
    const char *p = str_of(tool, "published");
    return p && v && strcmp(p, v) == 0;
}

static cJSON *show_tool(const cJSON *t)
{
    cJSON *o = cJSON_CreateObject();
    copy_member(o, t, "tenant");
    copy_member(o, t, "name");
    copy_member(o, t, "server");
    const char *pub = str_of(t, "published");
    const cJSON *pv = pub ? find_version(t, pub) : NULL;
    cJSON_AddBoolToObject(o, "published", pv != NULL);
    if (pv) {
        cJSON_AddStringToObject(o, "publishedVersion", pub);
        copy_member(o, pv, "description");
    } else {
        cJSON_AddNullToObject(o, "publishedVersion");
    }
    cJSON *vs = cJSON_AddArrayToObject(o, "versions");
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(t, "versions"))
    {
        cJSON_AddItemToArray(vs,
                             cJSON_CreateString(str_of(e, "version") ? str_of(e, "version") : ""));
    }
    copy_meta(o, t);
    return with_etag(o);
}

static cJSON *show_version(const cJSON *tool, const cJSON *v)
{
    static const char *const keys[] = {"version",     "title",        "description",
                                       "inputSchema", "outputSchema", "annotations",
                                       "timeout_ms",  "mode",         "fake"};
    cJSON *o = cJSON_CreateObject();
    copy_member(o, tool, "name");
    cJSON_AddItemToObject(o, "tool", cJSON_DetachItemFromObject(o, "name"));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        copy_member(o, v, keys[i]);
    cJSON_AddBoolToObject(o, "published", is_published(tool, str_of(v, "version")));
    const cJSON *exe = cJSON_GetObjectItemCaseSensitive(v, "executor");
    if (exe) { /* its secret, header and env values are hidden (cfgsecret.h) */
        cJSON *x = cJSON_Duplicate(exe, 1);
        cfg_secret_redact_executor(x);
        cJSON_AddItemToObject(o, "executor", x);
    }
    copy_meta(o, v);
    return with_etag(o);
}

/* ---- listing ---------------------------------------------------------------------------- */

/* fields[0] is the list's "name" (the member naming its items: id, app_id, version, ...);
 * orderBy takes it and create_time. */
static cJSON *list_page(const cJSON *items, const ing_listing_field_t *fields, size_t nfields,
                        const char *ps, const char *pt, const char *filter, const char *order_by,
                        const char *key, char *err, size_t err_size)
{
    const ing_listing_field_t order_fields[] = {fields[0], {"create_time", "createTime"}};
    /* Ties (objects created in the same millisecond) are ordered by name, so pages are stable. */
    char order[256];
    if (order_by && *order_by && !strstr(order_by, "name") && strlen(order_by) < 200) {
        snprintf(order, sizeof(order), "%s, name", order_by);
        order_by = order;
    }
    ing_listing_query_t q;
    if (ing_listing_parse(&q, ps, pt, filter, order_by, fields, nfields, order_fields, 2,
                          PAGE_DEFAULT, PAGE_MAX, err, err_size) < 0)
        return NULL;
    char *next = NULL;
    cJSON *page = ing_listing_apply(&q, items, &next);
    ing_listing_query_free(&q);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, key, page ? page : cJSON_CreateArray());
    if (next)
        cJSON_AddStringToObject(o, "nextPageToken", next);
    free(next);
    return o;
}

cJSON *ing_admin_list_tools(const char *tenant, const cJSON *tool_docs, const char *page_size,
                            const char *page_token, const char *filter, const char *order_by,
                            char *err, size_t err_size)
{
    static const ing_listing_field_t fields[] = {{"name", "name"},
                                                 {"server", "server"},
                                                 {"published", "published"},
                                                 {"create_time", "createTime"},
                                                 {"update_time", "updateTime"}};
    cJSON *items = cJSON_CreateArray();
    const cJSON *d;
    cJSON_ArrayForEach(d, tool_docs)
    {
        const char *t = str_of(d, "tenant");
        if (t && strcmp(t, tenant) == 0 && str_of(d, "name") &&
            cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(d, "versions")))
            cJSON_AddItemToArray(items, show_tool(d));
    }
    cJSON *o = list_page(items, fields, sizeof(fields) / sizeof(fields[0]), page_size, page_token,
                         filter, order_by, "tools", err, err_size);
    cJSON_Delete(items);
    return o;
}

static const char *qarg(adm_t *a, const char *name)
{
    return ing_req_arg(a->req, name);
}

/* Answers the list of items (consumed) with the request's paging, filter and order. */
static int answer_list(adm_t *a, cJSON *items, const ing_listing_field_t *fields, size_t nfields,
                       const char *key)
{
    char err[512];
    cJSON *o = list_page(items, fields, nfields, qarg(a, "pageSize"), qarg(a, "pageToken"),
                         qarg(a, "filter"), qarg(a, "orderBy"), key, err, sizeof(err));
    cJSON_Delete(items);
    if (!o)
        return fail(a, 400, "%s", err);
    ing_api_body(a->resp, 200, o);
    return DONE;
}

/* ---- body checks ------------------------------------------------------------------------ */

/* Validates v against config.schema.json#/$defs/<def>; 1 when valid, else answers 400. */
static int body_valid(adm_t *a, const cJSON *v, const char *def)
{
    char ref[96], msg[768];
    snprintf(ref, sizeof(ref), "config.schema.json#/$defs/%s", def);
    cJSON *schema = cJSON_CreateObject();
    cJSON_AddStringToObject(schema, "$ref", ref);
    int rc = sch_validate(schema, v, "$", msg, sizeof(msg));
    cJSON_Delete(schema);
    if (rc == 0)
        return 1;
    fail(a, 400, "%s", msg);
    return 0;
}

/* Seed 003's tool name rule (config.schema.json: 1-50 characters of [A-Za-z0-9_.-], starting
 * with a letter); 1 when name follows it, else answers 400. */
static int name_valid(adm_t *a, const char *name)
{
    char msg[512];
    cJSON *schema = cJSON_CreateObject(), *v = cJSON_CreateString(name);
    cJSON_AddStringToObject(schema, "$ref", "config.schema.json#/$defs/tool/properties/name");
    int rc = sch_validate(schema, v, "$.name", msg, sizeof(msg));
    cJSON_Delete(schema);
    cJSON_Delete(v);
    if (rc == 0)
        return 1;
    fail(a, 400, "%s (tool names are 1-50 characters of [A-Za-z0-9_.-], starting with a letter)",
         msg);
    return 0;
}

/* 1 when body has no member outside allowed (NULL-terminated), else answers 400. */
static int only_members(adm_t *a, const cJSON *body, const char *const *allowed)
{
    for (const cJSON *m = body ? body->child : NULL; m; m = m->next) {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], m->string) != 0)
            i++;
        if (!allowed[i]) {
            fail(a, 400, "$.%s: unknown or read-only member", m->string);
            return 0;
        }
    }
    return 1;
}

static int no_env_refs(adm_t *a, const cJSON *o, const char *path)
{
    static const char *const refs[] = {"secret_env", "key_env", "previous_secret_env"};
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
        if (cJSON_HasObjectItem(o, refs[i])) {
            fail(a, 400,
                 "%s.%s: the admin API takes literal secrets; environment references belong in "
                 "the config file",
                 path, refs[i]);
            return 0;
        }
    return 1;
}

/* Seed 003's parameter names: letters, digits and underscores, starting with a letter and not
 * ending with an underscore. Checks inputSchema.properties and required. */
static int param_names_ok(adm_t *a, const cJSON *schema)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    for (const cJSON *p = props ? props->child : NULL; p; p = p->next) {
        const char *n = p->string;
        size_t len = strlen(n), i = 0;
        int ok = len > 0 && ((n[0] >= 'A' && n[0] <= 'Z') || (n[0] >= 'a' && n[0] <= 'z')) &&
                 n[len - 1] != '_';
        for (; ok && i < len; i++)
            ok = (n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= 'a' && n[i] <= 'z') ||
                 (n[i] >= '0' && n[i] <= '9') || n[i] == '_';
        if (!ok) {
            fail(a, 400,
                 "$.inputSchema.properties: parameter name \"%s\" must be letters, digits and "
                 "underscores, start with a letter and not end with an underscore",
                 n);
            return 0;
        }
    }
    return 1;
}

/* A version body (already merged with its from_version) checked for adding or editing. */
static int version_ok(adm_t *a, const cJSON *v)
{
    char msg[768];
    if (!no_env_refs(a, cJSON_GetObjectItemCaseSensitive(v, "executor"), "$.executor") ||
        !body_valid(a, v, "version"))
        return 0;
    static const char *const schemas[] = {"inputSchema", "outputSchema"};
    for (int k = 0; k < 2; k++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, schemas[k]);
        char root[32];
        snprintf(root, sizeof(root), "$.%s", schemas[k]);
        if (s && sch_schema_check(s, root, msg, sizeof(msg)) != 0) {
            fail(a, 400, "%s", msg);
            return 0;
        }
    }
    return param_names_ok(a, cJSON_GetObjectItemCaseSensitive(v, "inputSchema"));
}

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
    fail(a, 400, "%s", err);
    return 0;
}

/* ---- lookups ---------------------------------------------------------------------------- */

static cJSON *tenant_doc(adm_t *a, const char *id)
{
    ing_regstore_field_tenant(a->tenant_field, sizeof(a->tenant_field), id);
    return ing_regstore_get(&a->st, a->tenant_field);
}

static cJSON *by_id(const cJSON *arr, const char *id_key, const char *id)
{
    cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (str_of(e, id_key) && strcmp(str_of(e, id_key), id) == 0)
            return e;
    }
    return NULL;
}

/* Every document of st whose field starts with prefix, in a new array of references. */
static cJSON *docs_with_prefix(adm_t *a, const char *prefix)
{
    cJSON *out = cJSON_CreateArray();
    size_t n = strlen(prefix);
    for (const cJSON *d = a->st.docs->child; d; d = d->next)
        if (strncmp(d->string, prefix, n) == 0)
            cJSON_AddItemReferenceToArray(out, (cJSON *)d);
    return out;
}

/* Stages a changed copy of the tenant document; returns the copy (owned by st). */
static cJSON *stage_tenant(adm_t *a, const cJSON *t)
{
    cJSON *copy = cJSON_Duplicate(t, 1);
    if (!copy || ing_regstore_put(&a->st, a->tenant_field, copy) < 0)
        return NULL;
    a->check_tenant = str_of(copy, "id");
    return copy;
}

/* ---- tenants ---------------------------------------------------------------------------- */

/* 1 when no tenant but id declares a robot of robots (the tenant's "robots"), else answers 409
 * naming it: a robot belongs to one tenant. */
static int robots_free(adm_t *a, const char *id, const cJSON *robots)
{
    const cJSON *r;
    int i = 0;
    cJSON_ArrayForEach(r, robots)
    {
        const char *owner =
            cJSON_IsString(r) ? ing_regstore_robot_owner(&a->st, r->valuestring, id) : NULL;
        if (owner) {
            fail(a, 409,
                 "$.robots[%d]: robot \"%s\" is already declared by tenant \"%s\" (a robot "
                 "belongs to one tenant)",
                 i, r->valuestring, owner);
            return 0;
        }
        i++;
    }
    return 1;
}

static int create_server_doc(adm_t *a, const char *tenant, const char *name, const char *desc)
{
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, name);
    if (ing_regstore_get(&a->st, field))
        return 0;
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "tenant", tenant);
    cJSON_AddStringToObject(s, "name", name);
    if (desc)
        cJSON_AddStringToObject(s, "description", desc);
    ing_regstore_touch(s, a->now);
    return ing_regstore_put(&a->st, field, s);
}

static int tenants(adm_t *a)
{
    static const ing_listing_field_t fields[] = {{"name", "id"}, {"create_time", "createTime"}};
    if (strcmp(a->method, "GET") == 0) {
        cJSON *items = cJSON_CreateArray(), *docs = docs_with_prefix(a, "tenant:"), *d;
        cJSON_ArrayForEach(d, docs)
        {
            cJSON_AddItemToArray(items, show_tenant(d));
        }
        cJSON_Delete(docs);
        return answer_list(a, items, fields, 2, "tenants");
    }
    static const char *const allowed[] = {"id",     "default_server", "rate_limits",
                                          "robots", "quotas",         NULL};
    if (!only_members(a, a->body, allowed) || !body_valid(a, a->body, "tenant"))
        return DONE;
    const char *id = str_of(a->body, "id");
    if (tenant_doc(a, id))
        return fail(a, 409, "tenant \"%s\" exists already", id);
    if (!robots_free(a, id, cJSON_GetObjectItemCaseSensitive(a->body, "robots")))
        return DONE;
    cJSON *t = cJSON_Duplicate(a->body, 1);
    if (!str_of(t, "default_server"))
        cJSON_AddStringToObject(t, "default_server", "default");
    ing_regstore_touch(t, a->now);
    if (create_server_doc(a, id, str_of(t, "default_server"), NULL) < 0 ||
        ing_regstore_put(&a->st, a->tenant_field, t) < 0)
        return fail(a, 500, "out of memory");
    a->check_tenant = id;
    return answer(a, 201, show_tenant(t));
}

static int tenant_one(adm_t *a, const char *id)
{
    cJSON *t = tenant_doc(a, id);
    if (!t)
        return fail(a, 404, "no tenant \"%s\"", id);
    int rc;
    if (!read_or_check(a, show_tenant(t), &rc))
        return rc;
    if (strcmp(a->method, "DELETE") == 0) {
        char sp[300], tp[300];
        snprintf(sp, sizeof(sp), "server:%s:", id);
        snprintf(tp, sizeof(tp), "tool:%s:", id);
        cJSON *gone = cJSON_CreateArray();
        for (const cJSON *d = a->st.docs->child; d; d = d->next)
            if (strncmp(d->string, sp, strlen(sp)) == 0 || strncmp(d->string, tp, strlen(tp)) == 0)
                cJSON_AddItemToArray(gone, cJSON_CreateString(d->string));
        cJSON *g;
        cJSON_ArrayForEach(g, gone)
        {
            ing_regstore_put(&a->st, g->valuestring, NULL);
        }
        cJSON_Delete(gone);
        ing_regstore_put(&a->st, a->tenant_field, NULL);
        log_event(LOG_INFO, "admin: tenant deleted", "tenant", id, (char *)NULL);
        return no_content(a);
    }
    static const char *const allowed[] = {"default_server", "rate_limits", "robots", "quotas",
                                          NULL};
    if (!only_members(a, a->body, allowed) ||
        !robots_free(a, id, cJSON_GetObjectItemCaseSensitive(a->body, "robots")))
        return DONE;
    cJSON *copy = stage_tenant(a, t);
    merge_patch(copy, a->body);
    if (!str_of(copy, "default_server"))
        cJSON_AddStringToObject(copy, "default_server", "default");
    ing_regstore_touch(copy, a->now);
    return answer(a, 200, show_tenant(copy));
}

/* ---- API keys, apps, webhooks: arrays of the tenant document ---------------------------- */

typedef struct sub_kind {
    const char *path;  /* URL segment */
    const char *array; /* member of the tenant document */
    const char *id_key;
    const char *what;
    cJSON *(*show)(const cJSON *);
    const char *def; /* config schema definition */
} sub_kind_t;

static const sub_kind_t sub_kinds[] = {
    {"apiKeys", "api_keys", "id", "API key", show_key, "apiKey"},
    {"apps", "apps", "app_id", "app", show_app, "app"},
    {"webhooks", "webhooks", "id", "webhook", show_webhook, "webhook"},
};

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
        fail(a, 409, "$.app_id: app \"%s\" exists already (app ids are unique across tenants)",
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
    fail(a, 400, "%s", err);
    return 0;
}

/* Fills a new sub-object from the body; *shown_secret receives what is shown once. */
static cJSON *sub_new(adm_t *a, const sub_kind_t *k, char *secret, size_t secret_size)
{
    cJSON *o = cJSON_Duplicate(a->body, 1);
    secret[0] = '\0';
    if (!no_env_refs(a, o, "$")) {
        cJSON_Delete(o);
        return NULL;
    }
    if (k->show == show_key) {
        static const char *const allowed[] = {"id", "sha256", "rate_limit", NULL};
        if (!only_members(a, o, allowed)) {
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
    } else if (k->show == show_app) {
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
    if (!body_valid(a, o, k->def) || (k->show == show_app && !app_secrets_ok(a, o))) {
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
        return answer_list(a, items, fields, 2, k->path);
    }
    char secret[128];
    cJSON *o = sub_new(a, k, secret, sizeof(secret));
    if (!o)
        return DONE;
    const char *id = str_of(o, k->id_key);
    if (by_id(arr, k->id_key, id)) {
        fail(a, 409, "$.%s: %s \"%s\" exists already", k->id_key, k->what, id);
        cJSON_Delete(o);
        return DONE;
    }
    if ((k->show == show_app && !app_id_free(a, id)) ||
        (k->show == show_webhook && !webhook_url_ok(a, str_of(t, "id"), o))) {
        cJSON_Delete(o);
        return DONE;
    }
    ing_regstore_touch(o, a->now);
    cJSON *copy = stage_tenant(a, t);
    cJSON *carr = cJSON_GetObjectItemCaseSensitive(copy, k->array);
    if (!carr)
        carr = cJSON_AddArrayToObject(copy, k->array);
    cJSON_AddItemToArray(carr, o);
    cJSON *shown = k->show(o);
    if (secret[0]) /* shown once: only this answer carries it */
        cJSON_AddStringToObject(shown, k->show == show_key ? "key" : "secret", secret);
    log_event(LOG_INFO, "admin: created", "tenant", str_of(t, "id"), "kind", k->what, "id", id,
              (char *)NULL);
    return answer(a, 201, shown);
}

/*
 * :rotateSecret of app or webhook ce: a new secret (shown once, written to secret), the old
 * one kept as previous_secret for the body's grace_s (default ADM_ROTATE_GRACE_S; 0 drops it
 * at once), README "Rotating secrets". A previous secret still in its grace is replaced. 1,
 * or 0 with the answer (400) made.
 */
static int rotate_secret(adm_t *a, const sub_kind_t *k, cJSON *ce, char *secret, size_t size)
{
    static const char *const allowed[] = {"grace_s", NULL};
    long long grace_s = ADM_ROTATE_GRACE_S;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(a->body, "grace_s");
    if (!only_members(a, a->body, allowed))
        return 0;
    if (g && (!cJSON_IsNumber(g) || g->valuedouble != (double)(long long)g->valuedouble ||
              g->valuedouble < 0 || g->valuedouble > ADM_ROTATE_GRACE_MAX_S)) {
        fail(a, 400, "$.grace_s: must be an integer from 0 to %d (seconds)",
             ADM_ROTATE_GRACE_MAX_S);
        return 0;
    }
    if (g)
        grace_s = (long long)g->valuedouble;
    if (k->show == show_app) {
        util_random_hex(secret, 32);
    } else if (whsec_new(secret, size) < 0) {
        fail(a, 500, "no random bytes for a new secret");
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
        return fail(a, 404, "tenant \"%s\" has no %s \"%s\"", str_of(t, "id"), k->what, id);
    int rc;
    if (!read_or_check(a, k->show(e), &rc))
        return rc;
    cJSON *copy = stage_tenant(a, t);
    cJSON *carr = cJSON_GetObjectItemCaseSensitive(copy, k->array);
    cJSON *ce = by_id(carr, k->id_key, id);
    if (strcmp(a->method, "DELETE") == 0) {
        cJSON_Delete(cJSON_DetachItemViaPointer(carr, ce));
        log_event(LOG_INFO, "admin: deleted", "tenant", str_of(t, "id"), "kind", k->what, "id", id,
                  (char *)NULL);
        return no_content(a);
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
                                               NULL};
        static const char *const wh_keys[] = {
            "url", "events", "secret", "previous_secret", "previous_secret_expires", NULL};
        if (!no_env_refs(a, a->body, "$") ||
            !only_members(a, a->body, k->show == show_app ? app_keys : wh_keys))
            return DONE;
        merge_patch(ce, a->body);
        cJSON *bare = cJSON_Duplicate(ce, 1); /* the schema does not know the metadata */
        ing_regstore_strip_meta_one(bare);
        int new_secret = cJSON_HasObjectItem(a->body, "secret") ||
                         cJSON_HasObjectItem(a->body, "previous_secret");
        int ok = body_valid(a, bare, k->def) &&
                 (k->show != show_webhook || webhook_url_ok(a, str_of(t, "id"), bare)) &&
                 (k->show != show_app || !new_secret || app_secrets_ok(a, bare));
        cJSON_Delete(bare);
        if (!ok)
            return DONE;
    }
    ing_regstore_touch(ce, a->now);
    cJSON *shown = k->show(ce);
    if (secret[0])
        cJSON_AddStringToObject(shown, "secret", secret);
    return answer(a, 200, shown);
}

/* ---- servers ---------------------------------------------------------------------------- */

static int tools_of_server(adm_t *a, const char *tenant, const char *server)
{
    char tp[300];
    int n = 0;
    snprintf(tp, sizeof(tp), "tool:%s:", tenant);
    for (const cJSON *d = a->st.docs->child; d; d = d->next)
        if (strncmp(d->string, tp, strlen(tp)) == 0 && str_of(d, "server") &&
            strcmp(str_of(d, "server"), server) == 0)
            n++;
    return n;
}

static int servers(adm_t *a, const char *tenant)
{
    static const ing_listing_field_t fields[] = {{"name", "name"}, {"create_time", "createTime"}};
    char prefix[300];
    if (strcmp(a->method, "GET") == 0) {
        snprintf(prefix, sizeof(prefix), "server:%s:", tenant);
        cJSON *items = cJSON_CreateArray(), *docs = docs_with_prefix(a, prefix), *d;
        cJSON_ArrayForEach(d, docs)
        {
            cJSON_AddItemToArray(items, show_server(d));
        }
        cJSON_Delete(docs);
        return answer_list(a, items, fields, 2, "servers");
    }
    static const char *const allowed[] = {"name", "description", "federate", NULL};
    if (!only_members(a, a->body, allowed))
        return DONE;
    cJSON *s = cJSON_Duplicate(a->body, 1);
    cJSON_AddStringToObject(s, "tenant", tenant);
    const char *name = str_of(s, "name");
    if (!body_valid(a, s, "server")) {
        cJSON_Delete(s);
        return DONE;
    }
    if (strcmp(name, "system") == 0) {
        cJSON_Delete(s);
        return fail(a, 403, "$.name: \"system\" is the built-in server and cannot be changed");
    }
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, name);
    if (ing_regstore_get(&a->st, field)) {
        fail(a, 409, "$.name: server \"%s\" exists already", name);
        cJSON_Delete(s);
        return DONE;
    }
    ing_regstore_touch(s, a->now);
    ing_regstore_put(&a->st, field, s);
    a->check_tenant = tenant;
    return answer(a, 201, show_server(s));
}

static int server_one(adm_t *a, const cJSON *t, const char *name)
{
    const char *tenant = str_of(t, "id");
    if (strcmp(name, "system") == 0 && strcmp(a->method, "GET") != 0)
        return fail(a, 403, "\"system\" is the built-in server and cannot be changed");
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, name);
    cJSON *s = ing_regstore_get(&a->st, field);
    if (!s)
        return fail(a, 404, "tenant \"%s\" has no server \"%s\"", tenant, name);
    int rc;
    if (!read_or_check(a, show_server(s), &rc))
        return rc;
    if (strcmp(a->method, "DELETE") == 0) {
        int n = tools_of_server(a, tenant, name);
        if (n)
            return fail(a, 409, "server \"%s\" still has %d tool(s); delete their versions first",
                        name, n);
        if (str_of(t, "default_server") && strcmp(str_of(t, "default_server"), name) == 0)
            return fail(a, 409, "server \"%s\" is the tenant's default_server; change it first",
                        name);
        ing_regstore_put(&a->st, field, NULL);
        return no_content(a);
    }
    static const char *const allowed[] = {"description", "federate", NULL};
    if (!only_members(a, a->body, allowed))
        return DONE;
    cJSON *copy = cJSON_Duplicate(s, 1);
    merge_patch(copy, a->body);
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    return answer(a, 200, show_server(copy));
}

/* ---- tools and versions ----------------------------------------------------------------- */

/* A version from a body: {version, from_version?, <version members>}; from_version's members
 * are the starting point (seed 003: "use another version's information"). */
static cJSON *version_from_body(adm_t *a, const cJSON *tool, const cJSON *body)
{
    const char *from = str_of(body, "from_version");
    cJSON *v;
    if (from) {
        const cJSON *src = tool ? find_version(tool, from) : NULL;
        if (!src) {
            fail(a, 400, "$.from_version: the tool has no version \"%s\"", from);
            return NULL;
        }
        v = cJSON_Duplicate(src, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(v, "createTime");
        cJSON_DeleteItemFromObjectCaseSensitive(v, "updateTime");
    } else {
        v = cJSON_CreateObject();
    }
    for (const cJSON *m = body ? body->child : NULL; m; m = m->next) {
        if (strcmp(m->string, "from_version") == 0 || strcmp(m->string, "publish") == 0)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(v, m->string);
        if (!cJSON_IsNull(m))
            cJSON_AddItemToObject(v, m->string, cJSON_Duplicate(m, 1));
    }
    if (!str_of(v, "mode"))
        cJSON_AddStringToObject(v, "mode", "sync");
    if (!version_ok(a, v)) {
        cJSON_Delete(v);
        return NULL;
    }
    return v;
}

static int publish_flag(adm_t *a, const cJSON *body, int *publish)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(body, "publish");
    if (p && !cJSON_IsBool(p)) {
        fail(a, 400, "$.publish: expected a boolean");
        return 0;
    }
    *publish = cJSON_IsTrue(p);
    return 1;
}

static int tools(adm_t *a, const cJSON *t)
{
    const char *tenant = str_of(t, "id");
    char prefix[300], field[600];
    if (strcmp(a->method, "GET") == 0) {
        char err[512];
        snprintf(prefix, sizeof(prefix), "tool:%s:", tenant);
        cJSON *docs = docs_with_prefix(a, prefix);
        cJSON *o = ing_admin_list_tools(tenant, docs, qarg(a, "pageSize"), qarg(a, "pageToken"),
                                        qarg(a, "filter"), qarg(a, "orderBy"), err, sizeof(err));
        cJSON_Delete(docs);
        if (!o)
            return fail(a, 400, "%s", err);
        ing_api_body(a->resp, 200, o);
        return DONE;
    }
    static const char *const allowed[] = {"name", "server", "version", "publish", NULL};
    int publish = 0;
    if (!only_members(a, a->body, allowed) || !publish_flag(a, a->body, &publish))
        return DONE;
    const char *name = str_of(a->body, "name");
    const char *server = str_of(a->body, "server");
    const cJSON *vb = cJSON_GetObjectItemCaseSensitive(a->body, "version");
    if (!server)
        server = str_of(t, "default_server");
    if (!name)
        return fail(a, 400,
                    "$.name: required (1-50 characters of [A-Za-z0-9_.-], starting with "
                    "a letter)");
    if (!cJSON_IsObject(vb))
        return fail(a, 400, "$.version: required, an object (the tool's first version)");
    if (cJSON_HasObjectItem(vb, "from_version"))
        return fail(a, 400, "$.version.from_version: a new tool has no other version");
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    if (ing_regstore_get(&a->st, field))
        return fail(a, 409, "$.name: tenant \"%s\" has a tool \"%s\" already", tenant, name);
    char sfield[600];
    ing_regstore_field_server(sfield, sizeof(sfield), tenant, server ? server : "");
    if (server && strcmp(server, "system") == 0)
        return fail(a, 400, "$.server: tools cannot be added to the built-in \"system\" server");
    if (!server || !ing_regstore_get(&a->st, sfield))
        return fail(a, 400, "$.server: tenant \"%s\" has no server \"%s\"", tenant,
                    server ? server : "");
    cJSON *v = version_from_body(a, NULL, vb);
    if (!v)
        return DONE;
    ing_regstore_touch(v, a->now);
    cJSON *tool = cJSON_CreateObject();
    cJSON_AddStringToObject(tool, "tenant", tenant);
    cJSON_AddStringToObject(tool, "server", server);
    cJSON_AddStringToObject(tool, "name", name);
    if (publish)
        cJSON_AddStringToObject(tool, "published", str_of(v, "version"));
    else
        cJSON_AddNullToObject(tool, "published");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(tool, "versions"), v);
    ing_regstore_touch(tool, a->now);
    if (!name_valid(a, name)) {
        cJSON_Delete(tool);
        return DONE;
    }
    ing_regstore_put(&a->st, field, tool);
    a->check_tenant = tenant;
    log_event(LOG_INFO, "admin: tool created", "tenant", tenant, "tool", name, "version",
              str_of(v, "version"), "published", publish ? "true" : "false", (char *)NULL);
    return answer(a, 201, show_tool(tool));
}

static int tool_one(adm_t *a, const cJSON *t, const char *name)
{
    const char *tenant = str_of(t, "id");
    char field[600];
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    cJSON *tool = ing_regstore_get(&a->st, field);
    if (!tool)
        return fail(a, 404, "tenant \"%s\" has no tool \"%s\"", tenant, name);
    cJSON *shown = show_tool(tool);
    if (strcmp(a->method, "GET") == 0 && !a->verb)
        return answer(a, 200, shown);
    if (!a->verb || strcmp(a->verb, "rename") != 0 || strcmp(a->method, "POST") != 0) {
        cJSON_Delete(shown);
        a->resp->allow = "GET";
        return fail(a, 405,
                    "a tool is changed through its versions; rename with POST "
                    ".../tools/%s:rename",
                    name);
    }
    int ok = precondition(a, shown);
    cJSON_Delete(shown);
    if (!ok)
        return DONE;
    static const char *const allowed[] = {"name", NULL};
    const char *to = str_of(a->body, "name");
    if (!only_members(a, a->body, allowed))
        return DONE;
    if (!to)
        return fail(a, 400, "$.name: required, the new name");
    if (str_of(tool, "published"))
        return fail(a, 409,
                    "tool \"%s\" has a published version (%s): offline every version before "
                    "renaming",
                    name, str_of(tool, "published"));
    char nfield[600];
    ing_regstore_field_tool(nfield, sizeof(nfield), tenant, to);
    if (strcmp(to, name) != 0 && ing_regstore_get(&a->st, nfield))
        return fail(a, 409, "$.name: tenant \"%s\" has a tool \"%s\" already", tenant, to);
    if (!name_valid(a, to))
        return DONE;
    cJSON *copy = cJSON_Duplicate(tool, 1);
    cJSON_ReplaceItemInObjectCaseSensitive(copy, "name", cJSON_CreateString(to));
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, NULL);
    ing_regstore_put(&a->st, nfield, copy);
    a->check_tenant = tenant;
    log_event(LOG_INFO, "admin: tool renamed", "tenant", tenant, "tool", name, "to", to,
              (char *)NULL);
    return answer(a, 200, show_tool(copy));
}

static int versions(adm_t *a, const cJSON *t, const char *name)
{
    static const ing_listing_field_t fields[] = {
        {"name", "version"}, {"published", "published"}, {"create_time", "createTime"}};
    const char *tenant = str_of(t, "id");
    char field[600];
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    cJSON *tool = ing_regstore_get(&a->st, field);
    if (!tool)
        return fail(a, 404, "tenant \"%s\" has no tool \"%s\"", tenant, name);
    if (strcmp(a->method, "GET") == 0) {
        cJSON *items = cJSON_CreateArray(), *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tool, "versions"))
        {
            cJSON_AddItemToArray(items, show_version(tool, e));
        }
        return answer_list(a, items, fields, 3, "versions");
    }
    int publish = 0;
    if (!publish_flag(a, a->body, &publish))
        return DONE;
    cJSON *v = version_from_body(a, tool, a->body);
    if (!v)
        return DONE;
    if (find_version(tool, str_of(v, "version"))) {
        int rc = fail(a, 409, "$.version: tool \"%s\" has a version \"%s\" already", name,
                      str_of(v, "version"));
        cJSON_Delete(v);
        return rc;
    }
    ing_regstore_touch(v, a->now);
    cJSON *copy = cJSON_Duplicate(tool, 1);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(copy, "versions"), v);
    if (publish)
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "published",
                                               cJSON_CreateString(str_of(v, "version")));
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    log_event(LOG_INFO, "admin: version added", "tenant", tenant, "tool", name, "version",
              str_of(v, "version"), "published", publish ? "true" : "false", (char *)NULL);
    return answer(a, 201, show_version(copy, v));
}

static int version_one(adm_t *a, const cJSON *t, const char *name, const char *ver)
{
    const char *tenant = str_of(t, "id");
    char field[600];
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    cJSON *tool = ing_regstore_get(&a->st, field);
    if (!tool)
        return fail(a, 404, "tenant \"%s\" has no tool \"%s\"", tenant, name);
    const cJSON *v = find_version(tool, ver);
    if (!v)
        return fail(a, 404, "tool \"%s\" has no version \"%s\"", name, ver);
    int rc;
    if (!read_or_check(a, show_version(tool, v), &rc))
        return rc;
    int published = is_published(tool, ver);
    cJSON *copy = cJSON_Duplicate(tool, 1);
    cJSON *cvs = cJSON_GetObjectItemCaseSensitive(copy, "versions");
    cJSON *cv = (cJSON *)find_version(copy, ver);
    const char *what = NULL;
    if (a->verb && strcmp(a->verb, "publish") == 0) {
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "published", cJSON_CreateString(ver));
        what = "admin: version published";
    } else if (a->verb && strcmp(a->verb, "offline") == 0) {
        if (!published) {
            cJSON_Delete(copy);
            return fail(a, 409, "version \"%s\" of tool \"%s\" is not published", ver, name);
        }
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "published", cJSON_CreateNull());
        what = "admin: version taken offline";
    } else if (strcmp(a->method, "DELETE") == 0) {
        if (published) {
            cJSON_Delete(copy);
            return fail(a, 409, "version \"%s\" of tool \"%s\" is published: offline it first", ver,
                        name);
        }
        cJSON_Delete(cJSON_DetachItemViaPointer(cvs, cv));
        log_event(LOG_INFO, "admin: version deleted", "tenant", tenant, "tool", name, "version",
                  ver, (char *)NULL);
        if (cJSON_GetArraySize(cvs) == 0) { /* a tool disappears with its last version */
            cJSON_Delete(copy);
            ing_regstore_put(&a->st, field, NULL);
        } else {
            ing_regstore_touch(copy, a->now);
            ing_regstore_put(&a->st, field, copy);
        }
        a->check_tenant = tenant;
        return no_content(a);
    } else if (strcmp(a->method, "PATCH") == 0) {
        if (published) {
            cJSON_Delete(copy);
            return fail(a, 409,
                        "version \"%s\" of tool \"%s\" is published and cannot be edited: offline "
                        "it or add a new version",
                        ver, name);
        }
        if (cJSON_HasObjectItem(a->body, "version") || cJSON_HasObjectItem(a->body, "publish") ||
            cJSON_HasObjectItem(a->body, "from_version")) {
            cJSON_Delete(copy);
            return fail(a, 400, "$: version, from_version and publish cannot be edited");
        }
        merge_patch(cv, a->body);
        cJSON *check = cJSON_Duplicate(cv, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(check, "createTime");
        cJSON_DeleteItemFromObjectCaseSensitive(check, "updateTime");
        int ok = version_ok(a, check);
        cJSON_Delete(check);
        if (!ok) {
            cJSON_Delete(copy);
            return DONE;
        }
        ing_regstore_touch(cv, a->now);
        what = "admin: version edited";
    } else {
        cJSON_Delete(copy);
        a->resp->allow = "GET, PATCH, DELETE";
        return fail(a, 405, "use GET, PATCH, DELETE, or POST with :publish or :offline");
    }
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    log_event(LOG_INFO, what, "tenant", tenant, "tool", name, "version", ver, (char *)NULL);
    return answer(a, 200, show_version(copy, find_version(copy, ver)));
}

/* ---- export and apply ------------------------------------------------------------------- */

static int config_doc(adm_t *a, redisContext *c)
{
    char err[1024];
    cJSON *stored = ing_regstore_export(c, err, sizeof(err));
    if (!stored)
        return fail(a, 503, "%s", err);
    if (strcmp(a->method, "GET") == 0) { /* no secret: `mcpq-ingress --export` has them */
        cfg_secret_redact(stored);
        ing_api_body(a->resp, 200, stored);
        return DONE;
    }
    /* A redacted export applied back keeps the stored secrets in place of its placeholders. */
    int restored = cfg_secret_restore(a->body, stored, err, sizeof(err));
    cJSON_Delete(stored);
    if (restored < 0)
        return fail(a, restored == MCPQ_EINVAL ? 400 : 503, "%s", err);
    char *text = cJSON_PrintUnformatted(a->body);
    cJSON *cfg = text ? cfg_load_string(text, strlen(text), err, sizeof(err)) : NULL;
    cJSON_free(text);
    if (!cfg)
        return fail(a, 400, "%s", err);
    if (ing_regstore_config_check(cfg, a->req->ctx->set, err, sizeof(err)) < 0) {
        cJSON_Delete(cfg);
        return fail(a, 400, "%s", err);
    }
    const char *prune = qarg(a, "prune");
    ing_regstore_summary_t sum;
    int rc =
        ing_regstore_apply(c, cfg, prune && strcmp(prune, "true") == 0, &sum, err, sizeof(err));
    cJSON_Delete(cfg);
    if (rc < 0) /* MCPQ_EINVAL: a robot a stored tenant declares (regstore.h) */
        return fail(a, rc == MCPQ_EINVAL ? 409 : 503, "%s", err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "created", sum.created);
    cJSON_AddNumberToObject(o, "updated", sum.updated);
    cJSON_AddNumberToObject(o, "unchanged", sum.unchanged);
    cJSON_AddNumberToObject(o, "deleted", sum.deleted);
    cJSON_AddNumberToObject(o, "revision", (double)sum.rev);
    log_event(LOG_INFO, "admin: config applied", (char *)NULL);
    ing_api_body(a->resp, 200, o);
    return DONE;
}

/* ---- routing ---------------------------------------------------------------------------- */

static const sub_kind_t *sub_kind(const char *seg)
{
    for (size_t i = 0; i < sizeof(sub_kinds) / sizeof(sub_kinds[0]); i++)
        if (strcmp(sub_kinds[i].path, seg) == 0)
            return &sub_kinds[i];
    return NULL;
}

static int allow(adm_t *a, const char *methods)
{
    char m[16];
    snprintf(m, sizeof(m), "%s", a->method);
    const char *p = strstr(methods, m);
    size_t n = strlen(m);
    if (p && (p == methods || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
        return 1;
    a->resp->allow = methods;
    fail(a, 405, "method %s not allowed here; allowed: %s", a->method, methods);
    return 0;
}

/* One pass over the loaded state: DONE (answered, nothing to write) or COMMIT. */
static int dispatch(adm_t *a)
{
    char **s = a->seg;
    int n = a->nseg;
    if (n >= 1 && strcmp(s[0], "tenants") != 0)
        return fail(a, 404, "no such admin resource");
    if (n == 1)
        return allow(a, "GET, POST") ? tenants(a) : DONE;
    cJSON *t = tenant_doc(a, s[1]);
    if (n == 2)
        return allow(a, "GET, PATCH, DELETE") ? tenant_one(a, s[1]) : DONE;
    if (!t)
        return fail(a, 404, "no tenant \"%s\"", s[1]);
    const sub_kind_t *k = sub_kind(s[2]);
    if (k && n == 3)
        return allow(a, "GET, POST") ? sub_list_or_create(a, k, t) : DONE;
    if (k && n == 4) {
        if (a->verb && (k->show == show_key || strcmp(a->verb, "rotateSecret") != 0))
            return fail(a, 404, "no such admin resource");
        if (a->verb)
            return allow(a, "POST") ? sub_one(a, k, t, s[3]) : DONE;
        return allow(a, k->show == show_key ? "GET, DELETE" : "GET, PATCH, DELETE")
                   ? sub_one(a, k, t, s[3])
                   : DONE;
    }
    if (strcmp(s[2], "servers") == 0 && n == 3)
        return allow(a, "GET, POST") ? servers(a, s[1]) : DONE;
    if (strcmp(s[2], "servers") == 0 && n == 4)
        return allow(a, "GET, PATCH, DELETE") ? server_one(a, t, s[3]) : DONE;
    if (strcmp(s[2], "tools") == 0 && n == 3)
        return allow(a, "GET, POST") ? tools(a, t) : DONE;
    if (strcmp(s[2], "tools") == 0 && n == 4)
        return tool_one(a, t, s[3]);
    if (strcmp(s[2], "tools") == 0 && n == 5 && strcmp(s[4], "versions") == 0)
        return allow(a, "GET, POST") ? versions(a, t, s[3]) : DONE;
    if (strcmp(s[2], "tools") == 0 && n == 6 && strcmp(s[4], "versions") == 0) {
        if (a->verb && strcmp(a->verb, "publish") != 0 && strcmp(a->verb, "offline") != 0)
            return fail(a, 404, "no such admin resource (versions take :publish and :offline)");
        if (a->verb)
            return allow(a, "POST") ? version_one(a, t, s[3], s[5]) : DONE;
        return allow(a, "GET, PATCH, DELETE") ? version_one(a, t, s[3], s[5]) : DONE;
    }
    return fail(a, 404, "no such admin resource");
}

static int split_path(adm_t *a, const char *rest)
{
    a->path = strdup(rest);
    if (!a->path)
        return MCPQ_ENOMEM;
    char *save = NULL;
    for (char *p = strtok_r(a->path, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
        if (a->nseg == MAX_SEGS)
            return MCPQ_EINVAL;
        a->seg[a->nseg++] = p;
    }
    if (a->nseg) {
        char *colon = strchr(a->seg[a->nseg - 1], ':');
        if (colon) {
            *colon = '\0';
            a->verb = colon + 1;
        }
    }
    return 0;
}

/* 1 when the request carries the operator token, else answers. */
static int operator_ok(ing_req_t *req, ing_resp_t *resp)
{
    ing_door_t door;
    int in = ing_frontdoor_enter(req, ING_DOOR_OPERATOR, &door) == ING_DOOR_IN;
    if (!in)
        ing_api_refused(&door, resp);
    ing_frontdoor_leave(&door);
    return in;
}

static int parse_body(adm_t *a)
{
    ing_req_t *req = a->req;
    int writes = strcmp(a->method, "POST") == 0 || strcmp(a->method, "PATCH") == 0 ||
                 strcmp(a->method, "PUT") == 0;
    if (!writes)
        return 1;
    if (req->too_big) {
        ing_api_error(a->resp, 413, "request body too large");
        return 0;
    }
    if (req->body.len == 0) {
        a->body = cJSON_CreateObject();
        return 1;
    }
    const char *ct = ing_req_header(req, "Content-Type");
    if (!ct || strncmp(ct, "application/json", 16) != 0) {
        ing_api_error(a->resp, 415, "Content-Type must be application/json");
        return 0;
    }
    a->body = ing_api_json(req, a->resp);
    if (!a->body)
        return 0;
    if (!cJSON_IsObject(a->body)) {
        ing_api_error(a->resp, 400, "the body must be a JSON object");
        return 0;
    }
    return 1;
}

void ing_admin_api(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    adm_t a = {.req = req, .resp = resp, .method = method};
    static const char base[] = "/admin/v1";
    if (!operator_ok(req, resp))
        return;
    if (strncmp(url, base, sizeof(base) - 1) != 0 ||
        (url[sizeof(base) - 1] != '/' && url[sizeof(base) - 1] != '\0')) {
        ing_api_error(resp, 404, "no such admin resource (the API is under /admin/v1)");
        return;
    }
    if (strcmp(method, "HEAD") == 0)
        a.method = "GET";
    a.if_match = ing_req_header(req, "If-Match");
    char err[512];
    redisContext *c = NULL;
    if (split_path(&a, url + sizeof(base) - 1) < 0 || a.nseg == 0) {
        ing_api_error(resp, 404, "no such admin resource");
        goto out;
    }
    if (!parse_body(&a))
        goto out;
    c = kv_pool_get(req->ctx->kv, err, sizeof(err));
    if (!c) {
        ing_api_error(resp, 503, "registry store (Redis) unavailable; try again");
        goto out;
    }
    int broken = 0;
    if (a.nseg == 1 && strcmp(a.seg[0], "config") == 0 && !a.verb) {
        if (allow(&a, "GET, PUT"))
            config_doc(&a, c);
        kv_pool_put(req->ctx->kv, c, 0);
        goto out;
    }
    if (a.nseg == 4 && strcmp(a.seg[0], "tenants") == 0 && strcmp(a.seg[2], "deliveries") == 0) {
        kv_pool_put(req->ctx->kv, c, 0);
        if (!a.verb || strcmp(a.verb, "redeliver") != 0)
            fail(&a, 404, "no such admin resource (deliveries take :redeliver)");
        else if (allow(&a, "POST"))
            ing_whapi_deliveries(req, a.seg[1], a.seg[3], resp);
        goto out;
    }
    if (a.nseg == 3 && strcmp(a.seg[0], "tenants") == 0 && strcmp(a.seg[2], "deliveries") == 0) {
        kv_pool_put(req->ctx->kv, c, 0);
        if (allow(&a, "GET"))
            ing_whapi_deliveries(req, a.seg[1], NULL, resp);
        goto out;
    }
    for (int attempt = 0;; attempt++) {
        a.check_tenant = NULL;
        ing_regstore_now(a.now, sizeof(a.now));
        if (ing_regstore_load(c, &a.st, err, sizeof(err)) < 0) {
            ing_regstore_free(&a.st);
            broken = 1;
            ing_api_error(resp, 503, "registry store (Redis) unavailable; try again");
            break;
        }
        int what = dispatch(&a);
        if (what == COMMIT && a.check_tenant &&
            ing_regstore_check_tenant(&a.st, a.check_tenant, err, sizeof(err)) < 0) {
            fail(&a, 400, "%s", err);
            what = DONE;
        }
        long long rev = 0;
        int rc = what == COMMIT ? ing_regstore_commit(c, &a.st, &rev, err, sizeof(err)) : 0;
        ing_regstore_free(&a.st);
        if (rc == RS_CONFLICT && attempt + 1 < TRIES) {
            free(resp->body);
            memset(resp, 0, sizeof(*resp));
            continue;
        }
        if (rc != 0) {
            free(resp->body);
            memset(resp, 0, sizeof(*resp));
            broken = rc < 0;
            ing_api_error(resp, 503,
                          rc == RS_CONFLICT ? "the registry kept changing; try again"
                                            : "registry store (Redis) unavailable; try again");
        }
        break;
    }
    kv_pool_put(req->ctx->kv, c, broken);
out:
    cJSON_Delete(a.body);
    free(a.path);
}
