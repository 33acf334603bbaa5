/*
 * adm_config.c - /admin/v1/config (adm.h): GET exports the registry without secrets
 * (cfgsecret.h); PUT applies a whole configuration as a config file would be loaded, keeping
 * the stored secrets where the body shows "(hidden)", and with ?prune=true deletes what it
 * does not name. /config/events lists what became of the config file (MCPQ_CONFIG) each time a
 * replica applied or refused it (cfgwatch.h).
 */
#include "adm.h"

#include "api.h"
#include "cfg.h"
#include "cfgsecret.h"
#include "cfgwatch.h"
#include "err.h"
#include "log.h"
#include "registry.h"

#include <string.h>

/* The registry's warnings once a config is applied (not errors: the config stands): where
 * opaque tokens are ambiguous (registry.h, ing_registry_introspect_ambiguous). An array added
 * to o when there are any. */
static void add_warnings(redisContext *c, cJSON *o)
{
    char err[256], msg[400];
    ing_registry_t *reg = ing_registry_fetch(c, err, sizeof(err));
    const ing_introspector_t *amb[16];
    size_t n = ing_registry_introspect_ambiguous(reg, amb, 16);
    cJSON *w = n ? cJSON_AddArrayToObject(o, "warnings") : NULL;
    for (size_t i = 0; w && i < n; i++) {
        ing_registry_introspect_warning(amb[i], msg, sizeof(msg));
        cJSON_AddItemToArray(w, cJSON_CreateString(msg));
    }
    ing_registry_unref(reg);
}

/* 1 when the config document a->body declares the built-in "system" server, a tool on it or
 * a tenant whose default_server it is, having answered 403 as every change to it is (adm.h);
 * else 0 (the config loader checks the rest). */
static int touches_system(adm_t *a)
{
    static const struct {
        const char *array, *member;
    } where[] = {{"servers", "name"}, {"tools", "server"}, {"tenants", "default_server"}};
    for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
        const cJSON *e;
        int i = 0;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(a->body, where[w].array))
        {
            if (ing_adm_is_system(str_of(e, where[w].member))) {
                char path[64];
                snprintf(path, sizeof(path), "$.%s[%d].%s", where[w].array, i, where[w].member);
                ing_adm_system_refused(a, path);
                return 1;
            }
            i++;
        }
    }
    return 0;
}

int ing_adm_config_doc(adm_t *a, redisContext *c)
{
    char err[1024];
    if (strcmp(a->method, "GET") != 0 && touches_system(a))
        return DONE;
    cJSON *stored = ing_regstore_export(c, err, sizeof(err));
    if (!stored)
        return ing_adm_fail(a, 503, "%s", err);
    if (strcmp(a->method, "GET") == 0) { /* no secret: `mcpq-ingress --export` has them */
        cfg_secret_redact(stored);
        ing_api_body(a->resp, 200, stored);
        return DONE;
    }
    /* A redacted export applied back keeps the stored secrets in place of its placeholders. */
    int restored = cfg_secret_restore(a->body, stored, err, sizeof(err));
    cJSON_Delete(stored);
    if (restored < 0)
        return ing_adm_fail(a, restored == MCPQ_EINVAL ? 400 : 503, "%s", err);
    char *text = cJSON_PrintUnformatted(a->body);
    cJSON *cfg = text ? cfg_load_string(text, strlen(text), err, sizeof(err)) : NULL;
    cJSON_free(text);
    if (!cfg)
        return ing_adm_fail(a, 400, "%s", err);
    if (ing_regstore_config_check(cfg, a->req->ctx->set, err, sizeof(err)) < 0) {
        cJSON_Delete(cfg);
        return ing_adm_fail(a, 400, "%s", err);
    }
    const char *prune = qarg(a, "prune");
    ing_regstore_summary_t sum;
    int rc =
        ing_regstore_apply(c, cfg, prune && strcmp(prune, "true") == 0, &sum, err, sizeof(err));
    cJSON_Delete(cfg);
    if (rc < 0) /* MCPQ_EINVAL: a robot a stored tenant declares (regstore.h) */
        return ing_adm_fail(a, rc == MCPQ_EINVAL ? 409 : 503, "%s", err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "created", sum.created);
    cJSON_AddNumberToObject(o, "updated", sum.updated);
    cJSON_AddNumberToObject(o, "unchanged", sum.unchanged);
    cJSON_AddNumberToObject(o, "deleted", sum.deleted);
    cJSON_AddNumberToObject(o, "revision", (double)sum.rev);
    add_warnings(c, o);
    log_event(LOG_INFO, "admin: config applied", (char *)NULL);
    ing_api_body(a->resp, 200, o);
    return DONE;
}

int ing_adm_config_events(adm_t *a, redisContext *c)
{
    char err[256];
    cJSON *events = ing_cfgwatch_events(c, err, sizeof(err));
    if (!events)
        return ing_adm_fail(a, 503, "%s", err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "events", events);
    ing_api_body(a->resp, 200, o);
    return DONE;
}
