#include "session.h"
#include "names.h"

#include "err.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define SESSION_INDEX_PREFIX NAMES_KEY_SESSIONS /* + tenant: its session ids (quotas.sessions) */

/*
 * Creates a session under its tenant's quota. KEYS[1] the session, KEYS[2] the tenant's
 * index; ARGV: id value ttl_s max ("0": no limit). 1 created, -1 the tenant holds max live
 * sessions. Sessions expire on their own (sliding TTL), so the index keeps ids whose key is
 * gone: the members with the lowest scores are checked first, the gone removed and the live
 * re-scored to now (the next check looks at others); 16 on every call, up to 1000 more when
 * the index is at the quota, before it counts.
 */
static const char create_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local function prune(n)\n"
    "  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, n - 1)) do\n"
    "    if redis.call('EXISTS', '" ING_SESSION_KEY_PREFIX "' .. id) == 1 then\n"
    "      redis.call('ZADD', KEYS[2], now, id)\n"
    "    else\n"
    "      redis.call('ZREM', KEYS[2], id)\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local max = tonumber(ARGV[4])\n"
    "prune(16)\n"
    "if max > 0 and redis.call('ZCARD', KEYS[2]) >= max then\n"
    "  prune(1000)\n"
    "  if redis.call('ZCARD', KEYS[2]) >= max then return -1 end\n"
    "end\n"
    "redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])\n"
    "redis.call('ZADD', KEYS[2], now, ARGV[1])\n"
    "return 1\n";

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

/* The session's value: {"tenant","version","log_level","created_ms"} (caller frees). */
static char *session_json(const ing_session_t *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tenant", s->tenant);
    cJSON_AddStringToObject(o, "version", s->version);
    cJSON_AddStringToObject(o, "log_level", s->log_level);
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
    const char *argv[] = {"EVAL", create_lua, "2", key, idx, s->id, json, ttl, lim};
    redisReply *r = kv_pool_commandargv(kv, err, sizeof(err), 9, argv, NULL);
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
    char err[256];
    if (!ing_session_id_valid(id))
        return MCPQ_ENOTFOUND;
    redisReply *r = kv_pool_command(kv, err, sizeof(err),
                                    "GETEX " ING_SESSION_KEY_PREFIX "%s EX %lld", id, ttl_s);
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
    redisReply *r = kv_pool_command(kv, err, sizeof(err), "DEL " ING_SESSION_KEY_PREFIX "%s", id);
    if (!r)
        return MCPQ_EUNAVAIL;
    freeReplyObject(r);
    /* Best effort: a member left behind is dropped by the next create's check. */
    r = kv_pool_command(kv, err, sizeof(err), "ZREM " SESSION_INDEX_PREFIX "%s %s", tenant, id);
    if (r)
        freeReplyObject(r);
    return 0;
}
