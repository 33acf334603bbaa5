#include "resupd.h"

#include "err.h"
#include "kinds.h"
#include "log.h"
#include "names.h"
#include "rscript.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hash of what a read of the static resource r answers: its published version id and its
 * content (text or blob, mimeType). 0, or -1 when r is no static resource (an executor's). */
static int content_hash(const ing_tool_t *r, char out[65])
{
    const cJSON *v = r->version;
    if (cJSON_GetObjectItemCaseSensitive(v, "executor"))
        return -1;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "version", r->version_id ? r->version_id : "");
    static const char *const fields[] = {"text", "blob", "mimeType"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, fields[i]);
        if (f)
            cJSON_AddItemToObject(o, fields[i], cJSON_Duplicate(f, 1));
    }
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!json)
        return -1;
    util_sha256_hex(json, strlen(json), out);
    cJSON_free(json);
    return 0;
}

/* Runs the compare-and-set for r (its new state hash at revision rev): 1 published, 0 not,
 * MCPQ_EUNAVAIL. */
static int claim(redisContext *c, const ing_server_t *srv, const ing_tool_t *r, long long rev,
                 const char *hash)
{
    char key[320], revs[24], err[256];
    snprintf(key, sizeof(key), NAMES_KEY_RESSTATE "%s:%s", srv->tenant, srv->name);
    snprintf(revs, sizeof(revs), "%lld", rev);
    char *payload = kinds_updated_message(srv->tenant, srv->name, r->uri);
    if (!payload)
        return MCPQ_ENOMEM;
    const char *argv[] = {key, r->uri, revs, hash, payload};
    redisReply *rep =
        rscript_run(c, rscript_get("resupd_claim"), 1, 5, argv, NULL, err, sizeof(err));
    cJSON_free(payload);
    if (!rep) {
        log_event(LOG_WARN, "resource update: cannot announce a changed resource (redis)", "uri",
                  r->uri, "error", err, (char *)NULL);
        return MCPQ_EUNAVAIL;
    }
    int rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    return rc;
}

/* The static resources of srv whose content differs in was (NULL: none announced). */
static int server_changes(redisContext *c, const ing_server_t *was, const ing_server_t *srv,
                          long long rev)
{
    int n = 0;
    for (size_t i = 0; was && i < srv->nresources; i++) {
        const ing_tool_t *r = srv->resources[i], *before = ing_registry_resource(was, r->uri);
        char h[65], hb[65];
        if (!before || content_hash(r, h) < 0 || content_hash(before, hb) < 0 || strcmp(h, hb) == 0)
            continue;
        int rc = claim(c, srv, r, rev, h);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            log_event(LOG_INFO, "resource updated: announced", "tenant", srv->tenant, "server",
                      srv->name, "uri", r->uri, (char *)NULL);
            n++;
        }
    }
    return n;
}

int ing_resupd_publish(redisContext *c, const ing_registry_t *old, const ing_registry_t *reg)
{
    if (!old || !reg)
        return 0;
    int n = 0;
    const cJSON *doc;
    cJSON_ArrayForEach(doc, ing_registry_docs(reg))
    {
        const char *field = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "_field"));
        const char *tenant = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "tenant"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "name"));
        if (!field || strncmp(field, "server:", 7) != 0 || !tenant || !name)
            continue;
        const ing_server_t *srv = ing_registry_server(reg, tenant, name);
        if (!srv)
            continue;
        int rc =
            server_changes(c, ing_registry_server(old, tenant, name), srv, ing_registry_rev(reg));
        if (rc < 0)
            return rc;
        n += rc;
    }
    return n;
}
