/*
 * admin.c - the operator API (admin.h): the operator token, routing /admin/v1/... to the
 * resources (one file each, listed in adm.h) and the read-modify-write loop over the registry
 * (regstore.h) every change runs in.
 *
 * Decisions (docs/api.md, "Administration", says the same to users):
 *   - Created API keys, app secrets and webhook secrets are returned once, in the answer to
 *     the request that created (or :rotateSecret replaced) them; keys are stored as SHA-256
 *     only, and no read shows a secret or a key's hash: the export (GET /admin/v1/config) and
 *     the version and server views show "(hidden)" in their place (cfgsecret.h), the key, app
 *     and webhook views leave them out. A PUT of the export keeps the stored secret where it
 *     finds "(hidden)"; the CLI's `mcpq-ingress --export` (run with the operator's own access
 *     to Redis) is the export with secrets, for backups. :rotateSecret keeps the old secret as
 *     previous_secret for a grace (docs/authentication.md "Rotating secrets"). Bodies take literal
 * secrets only: `*_env` references belong in the config file, where the process that reads them has
 * the environment.
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

#include "adm.h"
#include "api.h"
#include "err.h"
#include "whapi.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TRIES 8

/* One pass over the loaded state: DONE (answered, nothing to write) or COMMIT. */
static int dispatch(adm_t *a)
{
    char **s = a->seg;
    int n = a->nseg;
    if (n >= 1 && strcmp(s[0], "tenants") != 0)
        return ing_adm_fail(a, 404, "no such admin resource");
    /* A custom method (":verb") only where one is taken: apps and webhooks (:rotateSecret),
     * a tool (:rename, :approve), a server (:approve), a version (:publish, :offline); each
     * checks its own names. */
    int verb_taken = (n == 4 && (strcmp(s[2], "apps") == 0 || strcmp(s[2], "webhooks") == 0 ||
                                 strcmp(s[2], "tools") == 0 || strcmp(s[2], "servers") == 0)) ||
                     (n == 6 && strcmp(s[2], "tools") == 0);
    if (a->verb && !verb_taken)
        return ing_adm_fail(a, 404, "no such admin resource (:%s)", a->verb);
    if (n == 1)
        return ing_adm_allow(a, "GET, POST") ? ing_adm_tenants_collection(a) : DONE;
    cJSON *t = tenant_doc(a, s[1]);
    if (n == 2)
        return ing_adm_allow(a, "GET, PATCH, DELETE") ? ing_adm_tenants_one(a, s[1]) : DONE;
    if (!t)
        return ing_adm_fail(a, 404, "no tenant \"%s\"", s[1]);
    if (ing_adm_subs_is_path(s[2]))
        return ing_adm_subs_route(a, t);
    if (strcmp(s[2], "servers") == 0 && n == 3)
        return ing_adm_allow(a, "GET, POST") ? ing_adm_servers_collection(a, s[1]) : DONE;
    if (strcmp(s[2], "servers") == 0 && n == 4 && a->verb)
        return ing_adm_servers_verb(a, t, s[3]);
    if (strcmp(s[2], "servers") == 0 && n == 4)
        return ing_adm_allow(a, "GET, PATCH, DELETE") ? ing_adm_servers_one(a, t, s[3]) : DONE;
    if (strcmp(s[2], "tools") == 0 && n == 3)
        return ing_adm_allow(a, "GET, POST") ? ing_adm_tools_collection(a, t) : DONE;
    if (strcmp(s[2], "tools") == 0 && n == 4)
        return ing_adm_tools_one(a, t, s[3]);
    if (strcmp(s[2], "tools") == 0 && n == 5 && strcmp(s[4], "versions") == 0)
        return ing_adm_allow(a, "GET, POST") ? ing_adm_versions_collection(a, t, s[3]) : DONE;
    if (strcmp(s[2], "tools") == 0 && n == 6 && strcmp(s[4], "versions") == 0) {
        if (a->verb && strcmp(a->verb, "publish") != 0 && strcmp(a->verb, "offline") != 0)
            return ing_adm_fail(a, 404,
                                "no such admin resource (versions take :publish and :offline)");
        if (a->verb)
            return ing_adm_allow(a, "POST") ? ing_adm_versions_one(a, t, s[3], s[5]) : DONE;
        return ing_adm_allow(a, "GET, PATCH, DELETE") ? ing_adm_versions_one(a, t, s[3], s[5])
                                                      : DONE;
    }
    return ing_adm_fail(a, 404, "no such admin resource");
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

/*
 * A browser's cross-site write (docs/console.md, "Security"): the operator token travels only
 * in Authorization, which a page of another site cannot make a browser send, so this is
 * defence in depth. A write (any method but GET and HEAD) is refused when the browser says it
 * comes from another site (Sec-Fetch-Site: cross-site) or when its Origin is not the origin of
 * the request's own Host ("null" included). Clients that are not browsers send neither header.
 * Returns the reason, or NULL when the request may go on.
 */
static const char *cross_site_write(const ing_req_t *req, const char *method)
{
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        return NULL;
    const char *site = ing_req_header(req, "Sec-Fetch-Site");
    if (site && strcasecmp(site, "cross-site") == 0)
        return "cross-site write refused (Sec-Fetch-Site: cross-site)";
    const char *origin = ing_req_header(req, "Origin");
    if (!origin)
        return NULL;
    const char *host = ing_req_header(req, "Host");
    const char *rest = strncasecmp(origin, "http://", 7) == 0    ? origin + 7
                       : strncasecmp(origin, "https://", 8) == 0 ? origin + 8
                                                                 : NULL;
    if (!rest || !host || strcasecmp(rest, host) != 0)
        return "cross-site write refused (Origin is not this host)";
    return NULL;
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

/* /config: the whole configuration, outside the read-modify-write loop (adm_config.c). */
static int is_config(const adm_t *a)
{
    return a->nseg == 1 && strcmp(a->seg[0], "config") == 0 && !a->verb;
}

/* /config/events: what became of the config file (adm_config.c). */
static int is_config_events(const adm_t *a)
{
    return a->nseg == 2 && strcmp(a->seg[0], "config") == 0 && strcmp(a->seg[1], "events") == 0 &&
           !a->verb;
}

/* /tenants/{t}/deliveries[/{id}:redeliver]: webhook deliveries (whapi.h). */
static int is_deliveries(const adm_t *a)
{
    return (a->nseg == 3 || a->nseg == 4) && strcmp(a->seg[0], "tenants") == 0 &&
           strcmp(a->seg[2], "deliveries") == 0;
}

/* /tenants/{t}/tasks[/{id}[:cancel]]: the tenant's tasks (adm_tasks.c). */
static int is_tasks(const adm_t *a)
{
    return (a->nseg == 3 || a->nseg == 4) && strcmp(a->seg[0], "tenants") == 0 &&
           strcmp(a->seg[2], "tasks") == 0;
}

static void deliveries(adm_t *a)
{
    if (a->nseg == 3 && a->verb)
        ing_adm_fail(a, 404, "no such admin resource (:%s)", a->verb);
    else if (a->nseg == 4 && (!a->verb || strcmp(a->verb, "redeliver") != 0))
        ing_adm_fail(a, 404, "no such admin resource (deliveries take :redeliver)");
    else if (ing_adm_allow(a, a->nseg == 4 ? "POST" : "GET"))
        ing_whapi_deliveries(a->req, a->seg[1], a->nseg == 4 ? a->seg[3] : NULL, a->resp);
}

/* Starts over after a conflict: the answer of the attempt that lost is dropped. */
static void resp_reset(ing_resp_t *resp)
{
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
}

/*
 * The read-modify-write of the registry (regstore.h) on c: load, dispatch, validate the tenant
 * a write touched, commit; a commit that lost a race to another writer starts over on fresh
 * state, at most TRIES times. Returns 1 when c is broken.
 */
static int transact(adm_t *a, redisContext *c)
{
    char err[512];
    ing_resp_t *resp = a->resp;
    for (int attempt = 0;; attempt++) {
        a->check_tenant = NULL;
        ing_regstore_now(a->now, sizeof(a->now));
        if (ing_regstore_load(c, &a->st, err, sizeof(err)) < 0) {
            ing_regstore_free(&a->st);
            ing_api_error(resp, 503, "registry store (Redis) unavailable; try again");
            return 1;
        }
        int what = dispatch(a);
        if (what == COMMIT && a->check_tenant &&
            ing_regstore_check_tenant(&a->st, a->check_tenant, a->req->ctx->set, err, sizeof(err)) <
                0) {
            ing_adm_fail(a, 400, "%s", err);
            what = DONE;
        }
        long long rev = 0;
        int rc = what == COMMIT ? ing_regstore_commit(c, &a->st, &rev, err, sizeof(err)) : 0;
        ing_regstore_free(&a->st);
        if (rc == RS_CONFLICT && attempt + 1 < TRIES) {
            resp_reset(resp);
            continue;
        }
        if (rc != 0) {
            resp_reset(resp);
            ing_api_error(resp, 503,
                          rc == RS_CONFLICT ? "the registry kept changing; try again"
                                            : "registry store (Redis) unavailable; try again");
        }
        return rc < 0;
    }
}

void ing_admin_api(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    adm_t a = {.req = req, .resp = resp, .method = method};
    static const char base[] = "/admin/v1";
    const char *cross = cross_site_write(req, method);
    if (cross) {
        ing_api_error(resp, 403, cross);
        return;
    }
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
    if (is_config(&a)) {
        if (ing_adm_allow(&a, "GET, PUT"))
            ing_adm_config_doc(&a, c);
        kv_pool_put(req->ctx->kv, c, 0);
    } else if (is_config_events(&a)) {
        if (ing_adm_allow(&a, "GET"))
            ing_adm_config_events(&a, c);
        kv_pool_put(req->ctx->kv, c, 0);
    } else if (is_deliveries(&a)) {
        kv_pool_put(req->ctx->kv, c, 0); /* whapi takes its own */
        deliveries(&a);
    } else if (is_tasks(&a)) {
        kv_pool_put(req->ctx->kv, c, 0); /* tasks.h takes its own */
        ing_adm_tasks_route(&a);
    } else {
        kv_pool_put(req->ctx->kv, c, transact(&a, c));
    }
out:
    cJSON_Delete(a.body);
    free(a.path);
}

cJSON *ing_admin_list_tools(const char *tenant, const cJSON *tool_docs, const char *page_size,
                            const char *page_token, const char *filter, const char *order_by,
                            char *err, size_t err_size)
{
    return ing_adm_tools_list(tenant, tool_docs, page_size, page_token, filter, order_by, err,
                              err_size);
}
