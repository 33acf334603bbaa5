#include "session.h"
#include "rscript.h"
#include "rsub.h"
#include "names.h"

#include "err.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define SESSION_INDEX_PREFIX NAMES_KEY_SESSIONS /* + tenant: its session ids (quotas.sessions) */

int ing_session_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n < 8 || n >= sizeof(((ing_session_t *)0)->id))
        return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

/* The session's value: {"tenant","version","log_level","created_ms"[,"caps"]} (caller
 * frees). */
static char *session_json(const ing_session_t *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tenant", s->tenant);
    cJSON_AddStringToObject(o, "version", s->version);
    cJSON_AddStringToObject(o, "log_level", s->log_level);
    cJSON *caps = s->caps[0] ? cJSON_Parse(s->caps) : NULL;
    if (cJSON_IsObject(caps))
        cJSON_AddItemToObject(o, "caps", caps);
    else
        cJSON_Delete(caps);
    cJSON_AddNumberToObject(o, "created_ms", (double)util_now_ms());
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return json;
}

int ing_session_save(kv_pool_t *kv, const ing_session_t *s, long long ttl_s)
{
    char err[256];
    char *json = session_json(s);
    if (!json)
        return MCPQ_ENOMEM;
    redisReply *r = kv_pool_command(
        kv, err, sizeof(err), "SET " ING_SESSION_KEY_PREFIX "%s %s EX %lld", s->id, json, ttl_s);
    cJSON_free(json);
    if (!r)
        return MCPQ_EUNAVAIL;
    freeReplyObject(r);
    return 0;
}

int ing_session_create(kv_pool_t *kv, ing_session_t *s, long long ttl_s, long long max)
{
    char hex[33], key[128], idx[192], ttl[24], lim[24], err[256];
    if (util_random_hex(hex, 16) < 0)
        return MCPQ_EIO;
    snprintf(s->id, sizeof(s->id), "s_%s", hex);
    char *json = session_json(s);
    if (!json)
        return MCPQ_ENOMEM;
    snprintf(key, sizeof(key), ING_SESSION_KEY_PREFIX "%s", s->id);
    snprintf(idx, sizeof(idx), SESSION_INDEX_PREFIX "%s", s->tenant);
    snprintf(ttl, sizeof(ttl), "%lld", ttl_s);
    snprintf(lim, sizeof(lim), "%lld", max > 0 ? max : 0);
    const char *argv[] = {key, idx, s->id, json, ttl, lim};
    redisReply *r =
        rscript_pool_run(kv, rscript_get("session_create"), 2, 6, argv, NULL, err, sizeof(err));
    cJSON_free(json);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = r->type != REDIS_REPLY_INTEGER ? MCPQ_EUNAVAIL : r->integer == -1 ? MCPQ_EQUOTA : 0;
    freeReplyObject(r);
    return rc;
}

int ing_session_get(kv_pool_t *kv, const char *id, const char *tenant, long long ttl_s,
                    ing_session_t *s)
{
    char err[256], key[128], subs[128], ttl[24];
    if (!ing_session_id_valid(id))
        return MCPQ_ENOTFOUND;
    snprintf(key, sizeof(key), ING_SESSION_KEY_PREFIX "%s", id);
    snprintf(subs, sizeof(subs), ING_RSUB_KEY_PREFIX "%s", id);
    snprintf(ttl, sizeof(ttl), "%lld", ttl_s);
    const char *argv[] = {key, subs, ttl};
    redisReply *r =
        rscript_pool_run(kv, rscript_get("session_touch"), 2, 3, argv, NULL, err, sizeof(err));
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = MCPQ_ENOTFOUND;
    if (r->type == REDIS_REPLY_STRING) {
        cJSON *o = cJSON_ParseWithLength(r->str, r->len);
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "tenant"));
        if (t && strcmp(t, tenant) == 0) {
            memset(s, 0, sizeof(*s));
            snprintf(s->id, sizeof(s->id), "%s", id);
            snprintf(s->tenant, sizeof(s->tenant), "%s", t);
            const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "version"));
            const char *l = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "log_level"));
            snprintf(s->version, sizeof(s->version), "%s", v ? v : "");
            snprintf(s->log_level, sizeof(s->log_level), "%s", l ? l : "");
            const cJSON *caps = cJSON_GetObjectItemCaseSensitive(o, "caps");
            char *cj = cJSON_IsObject(caps) ? cJSON_PrintUnformatted(caps) : NULL;
            if (cj && strlen(cj) < sizeof(s->caps)) /* larger: not written by this gateway */
                snprintf(s->caps, sizeof(s->caps), "%s", cj);
            cJSON_free(cj);
            rc = 0;
        }
        cJSON_Delete(o);
    }
    freeReplyObject(r);
    return rc;
}

int ing_session_delete(kv_pool_t *kv, const char *id, const char *tenant)
{
    ing_session_t s;
    int rc = ing_session_get(kv, id, tenant, 60, &s);
    if (rc < 0)
        return rc;
    char err[256];
    redisReply *r = kv_pool_command(
        kv, err, sizeof(err), "DEL " ING_SESSION_KEY_PREFIX "%s " ING_RSUB_KEY_PREFIX "%s", id, id);
    if (!r)
        return MCPQ_EUNAVAIL;
    freeReplyObject(r);
    /* Best effort: a member left behind is dropped by the next create's check. */
    r = kv_pool_command(kv, err, sizeof(err), "ZREM " SESSION_INDEX_PREFIX "%s %s", tenant, id);
    if (r)
        freeReplyObject(r);
    return 0;
}
