/*
 * api.c - what the REST endpoints share (api.h): the front door's verdict and errors as
 * {"error": ...} JSON.
 */
#include "api.h"

#include "rpc.h"

#include <stdio.h>

void ing_api_error(ing_resp_t *resp, int status, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    resp->status = status;
    resp->content_type = "application/json";
    resp->body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!resp->body)
        resp->status = 500;
}

cJSON *ing_api_json(ing_req_t *req, ing_resp_t *resp)
{
    const char *why = NULL;
    cJSON *o = rpc_parse(req->body.data ? req->body.data : "", req->body.len, &why);
    if (!o) {
        char msg[160];
        snprintf(msg, sizeof(msg), "the body is not accepted JSON: %s", why ? why : "parse error");
        ing_api_error(resp, 400, msg);
    }
    return o;
}

void ing_api_body(ing_resp_t *resp, int status, cJSON *o)
{
    resp->status = status;
    resp->content_type = "application/json";
    resp->body = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!resp->body)
        ing_api_error(resp, 500, "out of memory");
}

/* Fills resp with 429, Retry-After and {"error": msg, "retryAfterMs": retry_after_ms}. */
static void too_many(ing_resp_t *resp, const char *msg, long long retry_after_ms)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddNumberToObject(o, "retryAfterMs", (double)retry_after_ms);
    ing_api_body(resp, 429, o);
    resp->retry_after_s = (retry_after_ms + 999) / 1000;
}

void ing_api_refused(const ing_door_t *door, ing_resp_t *resp)
{
    if (door->verdict == ING_DOOR_LIMITED) {
        too_many(resp, door->why, door->retry_after_ms);
        return;
    }
    ing_api_error(resp, door->status, door->why);
    snprintf(resp->www_auth, sizeof(resp->www_auth), "%s", door->www_auth);
}

const ing_tenant_t *ing_api_front(ing_req_t *req, ing_registry_t **reg, ing_resp_t *resp)
{
    *reg = NULL;
    /* Before auth: a signature over a body that was cut off could not verify anyway. */
    if (req->too_big) {
        ing_api_error(resp, 413, "request body too large");
        return NULL;
    }
    ing_door_t door;
    const ing_tenant_t *t = NULL;
    if (ing_frontdoor_enter(req, ING_DOOR_TENANT, &door) == ING_DOOR_IN)
        t = door.tenant;
    else
        ing_api_refused(&door, resp);
    *reg = door.reg; /* the caller drops it */
    return t;
}
