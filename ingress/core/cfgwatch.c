/*
 * cfgwatch.c - watching the config file for a change (cfgwatch.h).
 */
#include "cfgwatch.h"

#include "cfg.h"
#include "err.h"
#include "names.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

void ing_cfgwatch_init(ing_cfgwatch_t *w, const mcpq_settings_t *set)
{
    memset(w, 0, sizeof(*w));
    w->set = set;
}

cJSON *ing_cfgwatch_load(ing_cfgwatch_t *w, char *err, size_t err_size)
{
    char sha[65];
    cJSON *cfg = cfg_load_file_sha256(w->set->config, sha, err, err_size);
    if (sha[0]) { /* read: this content is seen, whatever it holds */
        memcpy(w->seen, sha, sizeof(w->seen));
        w->unreadable[0] = '\0';
    }
    if (!cfg)
        return NULL;
    char why[384];
    if (ing_regstore_config_check(cfg, w->set, why, sizeof(why)) < 0) {
        snprintf(err, err_size, "%s: %s", w->set->config, why);
        cJSON_Delete(cfg);
        return NULL;
    }
    return cfg;
}

int ing_cfgwatch_poll(ing_cfgwatch_t *w, cJSON **cfg, char *err, size_t err_size)
{
    char sha[65];
    *cfg = NULL;
    if (cfg_file_sha256(w->set->config, sha, err, err_size) < 0) {
        if (strcmp(err, w->unreadable) == 0)
            return ING_CFGWATCH_SAME; /* reported already */
        snprintf(w->unreadable, sizeof(w->unreadable), "%s", err);
        return ING_CFGWATCH_REFUSED;
    }
    w->unreadable[0] = '\0';
    if (strcmp(sha, w->seen) == 0)
        return ING_CFGWATCH_SAME; /* unchanged, or back as it was before it could not be read */
    *cfg = ing_cfgwatch_load(w, err, err_size);
    return *cfg ? ING_CFGWATCH_CHANGED : ING_CFGWATCH_REFUSED;
}

int ing_cfgwatch_record(const ing_cfgwatch_t *w, redisContext *c, const char *instance,
                        const char *result, const char *error, const ing_regstore_summary_t *sum)
{
    char now[32];
    ing_regstore_now(now, sizeof(now));
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "time", now);
    cJSON_AddStringToObject(ev, "instance", instance);
    cJSON_AddStringToObject(ev, "file", w->set->config ? w->set->config : "");
    cJSON_AddStringToObject(ev, "sha256", w->seen);
    cJSON_AddStringToObject(ev, "result", result);
    if (error)
        cJSON_AddStringToObject(ev, "error", error);
    if (sum) {
        cJSON_AddNumberToObject(ev, "revision", (double)sum->rev);
        cJSON_AddNumberToObject(ev, "created", sum->created);
        cJSON_AddNumberToObject(ev, "updated", sum->updated);
        cJSON_AddNumberToObject(ev, "deleted", sum->deleted);
    }
    char *text = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    if (!text)
        return MCPQ_ENOMEM;
    redisReply *r = NULL;
    int rc = 0;
    redisAppendCommand(c, "RPUSH %s %s", NAMES_KEY_CONFIG_EVENTS, text);
    redisAppendCommand(c, "LTRIM %s %d -1", NAMES_KEY_CONFIG_EVENTS, -ING_CFGWATCH_EVENTS);
    for (int i = 0; i < 2; i++) {
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            rc = MCPQ_EUNAVAIL;
            break;
        }
        if (r->type == REDIS_REPLY_ERROR)
            rc = MCPQ_EIO;
        freeReplyObject(r);
    }
    cJSON_free(text);
    return rc;
}

cJSON *ing_cfgwatch_events(redisContext *c, char *err, size_t err_size)
{
    redisReply *r = redisCommand(c, "LRANGE %s 0 -1", NAMES_KEY_CONFIG_EVENTS);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, err_size, "redis: %s", r ? "unexpected reply to LRANGE" : c->errstr);
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    cJSON *events = cJSON_CreateArray();
    for (size_t i = r->elements; events && i-- > 0;) {
        const redisReply *e = r->element[i];
        cJSON *ev = e->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(e->str, e->len) : NULL;
        if (cJSON_IsObject(ev))
            cJSON_AddItemToArray(events, ev);
        else
            cJSON_Delete(ev);
    }
    freeReplyObject(r);
    if (!events)
        snprintf(err, err_size, "out of memory");
    return events;
}
