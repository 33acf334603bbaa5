#include "channels.h"
#include "rscript.h"
#include "names.h"

#include "err.h"
#include "log.h"
#include "registry.h"
#include "sch.h"
#include "util.h"
#include "api.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHAN_PREFIX NAMES_KEY_CHAN
#define WAIT_PREFIX NAMES_KEY_AGENTWAIT
#define REPLY_PREFIX NAMES_KEY_AGENTREPLY
#define REPLY_CHANNEL NAMES_CHAN_AGENTREPLY
#define REPLY_TTL_MIN_MS_STR "60000" /* a stored reply lives at least this long (ms) */
#define MSG_ID_MAX 128
#define KEY_MAX 256

/* A channel id: [A-Za-z0-9_.:-]. */
#define ID_EXTRA ".:"

int ing_channels_id_valid(const char *id)
{
    return id && util_id_ok(id, strlen(id), ING_CHANNEL_ID_MAX, ID_EXTRA);
}

int ing_channels_open(kv_pool_t *kv, const char *tenant, long long ttl_s, char *id, size_t size)
{
    char hex[33], key[KEY_MAX], now[24], ttl[24], err[256];
    util_random_hex(hex, 16);
    snprintf(id, size, "c_%s", hex);
    snprintf(key, sizeof(key), CHAN_PREFIX "%s", id);
    snprintf(now, sizeof(now), "%lld", (long long)util_now_ms());
    snprintf(ttl, sizeof(ttl), "%lld", ttl_s * 1000);
    const char *argv[] = {"HSET", key, "tenant", tenant, "created", now, "ttl_ms", ttl};
    redisReply *r = kv_pool_commandargv(kv, err, sizeof(err), 8, argv, NULL);
    if (!r)
        return MCPQ_EUNAVAIL;
    freeReplyObject(r);
    const char *ex[] = {"PEXPIRE", key, ttl};
    r = kv_pool_commandargv(kv, err, sizeof(err), 3, ex, NULL);
    if (!r)
        return MCPQ_EUNAVAIL;
    freeReplyObject(r);
    return 0;
}

int ing_channels_use(kv_pool_t *kv, const char *tenant, const char *id, long long ttl_s,
                     long long *ttl_ms)
{
    char ckey[KEY_MAX], tkey[KEY_MAX], ttl[24], err[256];
    if (!ing_channels_id_valid(id))
        return MCPQ_ENOTFOUND;
    snprintf(ckey, sizeof(ckey), CHAN_PREFIX "%s", id);
    snprintf(tkey, sizeof(tkey), CHAN_PREFIX "%s" NAMES_SUFFIX_TURNS, id);
    snprintf(ttl, sizeof(ttl), "%lld", ttl_s * 1000);
    const char *argv[] = {ckey, tkey, tenant, ttl};
    redisReply *r =
        rscript_pool_run(kv, rscript_get("channels_use"), 2, 4, argv, NULL, err, sizeof(err));
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? 0 : MCPQ_ENOTFOUND;
    if (rc == 0 && ttl_ms)
        *ttl_ms = r->integer;
    freeReplyObject(r);
    return rc;
}

/* Stores the agent_reply body for the channel (see channels.h); resp filled. */
static void post_message(ing_req_t *req, const ing_tenant_t *t, const char *chan, ing_resp_t *resp)
{
    cJSON *reply = ing_api_json(req, resp);
    char why[300], msg[400];
    if (!reply)
        return;
    const cJSON *schema = sch_builtin("agent-reply.schema.json");
    if (!schema || sch_validate(schema, reply, "body", why, sizeof(why)) < 0) {
        snprintf(msg, sizeof(msg), "not an agent_reply: %s", schema ? why : "schema missing");
        ing_api_error(resp, 400, msg);
        cJSON_Delete(reply);
        return;
    }
    const char *rc_chan =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "channel_id"));
    if (rc_chan && strcmp(rc_chan, chan) != 0) {
        ing_api_error(resp, 400, "channel_id in the body differs from the one in the path");
        cJSON_Delete(reply);
        return;
    }
    const char *mid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "in_reply_to"));
    char wkey[KEY_MAX], rkey[KEY_MAX], err[256], midbuf[MSG_ID_MAX + 1];
    snprintf(midbuf, sizeof(midbuf), "%s", mid); /* mid points into reply */
    char *json = cJSON_PrintUnformatted(reply);
    cJSON_Delete(reply);
    if (!json) {
        ing_api_error(resp, 500, "out of memory");
        return;
    }
    snprintf(wkey, sizeof(wkey), WAIT_PREFIX "%s", midbuf);
    snprintf(rkey, sizeof(rkey), REPLY_PREFIX "%s", midbuf);
    const char *argv[] = {wkey, rkey, t->id, chan, json, midbuf};
    redisReply *r = rscript_pool_run(req->ctx->kv, rscript_get("channels_reply"), 2, 6, argv, NULL,
                                     err, sizeof(err));
    free(json);
    if (!r) {
        ing_api_error(resp, 503, "channel store (Redis) unavailable; try again");
        return;
    }
    const char *st = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ? r->str : "";
    if (strcmp(st, "ok") == 0) {
        log_event(LOG_INFO, "agent reply accepted", "tenant", t->id, "channel", chan, "message",
                  midbuf, (char *)NULL);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", "accepted");
        cJSON_AddStringToObject(o, "channel_id", chan);
        cJSON_AddStringToObject(o, "in_reply_to", midbuf);
        ing_api_body(resp, 200, o);
    } else if (strcmp(st, "duplicate") == 0) {
        ing_api_error(resp, 409, "a reply to this message was already accepted");
    } else {
        ing_api_error(resp, 404,
                      "no message waiting for a reply on this channel (unknown, "
                      "finished or timed out)");
    }
    freeReplyObject(r);
}

void ing_channels_api(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    static const char base[] = "/v1/channels/";
    static const char tail[] = "/messages";
    const size_t bl = sizeof(base) - 1, tl = sizeof(tail) - 1;
    size_t ul = strlen(url);
    if (ul <= bl + tl || strncmp(url, base, bl) != 0 || strcmp(url + ul - tl, tail) != 0 ||
        !util_id_ok(url + bl, ul - bl - tl, ING_CHANNEL_ID_MAX, ID_EXTRA)) {
        ing_api_error(resp, 404, "not found");
        return;
    }
    if (strcmp(method, "POST") != 0) {
        ing_api_error(resp, 405, "method not allowed");
        resp->allow = "POST";
        return;
    }
    char chan[ING_CHANNEL_ID_MAX + 1];
    memcpy(chan, url + bl, ul - bl - tl);
    chan[ul - bl - tl] = '\0';
    ing_registry_t *reg = NULL;
    const ing_tenant_t *t = ing_api_front(req, &reg, resp);
    if (t)
        post_message(req, t, chan, resp);
    ing_registry_unref(reg);
}
