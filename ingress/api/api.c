/*
 * api.c - what the REST endpoints share (api.h): the front door's verdict and errors as
 * {"error": ...} JSON.
 */
#include "api.h"

#include "rpc.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

const ing_tenant_t *ing_api_front_door(ing_req_t *req, ing_door_t *door, ing_resp_t *resp)
{
    door->reg = NULL;
    /* Before auth: a signature over a body that was cut off could not verify anyway. */
    if (req->too_big) {
        ing_api_error(resp, 413, "request body too large");
        return NULL;
    }
    if (ing_frontdoor_enter(req, ING_DOOR_TENANT, door) == ING_DOOR_IN)
        return door->tenant;
    ing_api_refused(door, resp);
    return NULL;
}

const ing_tenant_t *ing_api_front(ing_req_t *req, ing_registry_t **reg, ing_resp_t *resp)
{
    ing_door_t door;
    const ing_tenant_t *t = ing_api_front_door(req, &door, resp);
    *reg = door.reg; /* the caller drops it */
    return t;
}

#define ETAG_HEX 20
_Static_assert(ETAG_HEX < sizeof(((ing_resp_t *)0)->etag), "the ETag fits ing_resp_t");

/* 1 when the If-None-Match list (quoted or weak etags, or *) names etag. A quoted tag without
 * its closing quote names none (it ends the list). */
static int none_match(const char *inm, const char *etag)
{
    size_t n = strlen(etag);
    for (const char *p = inm; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        int q = *p == '"';
        p += q;
        size_t len = strcspn(p, q ? "\"" : ", ");
        if (q && p[len] != '"')
            return 0;
        if (len == n && strncmp(p, etag, n) == 0)
            return 1;
        p += len;
        p += *p == '"';
    }
    return 0;
}

void ing_api_static(ing_req_t *req, ing_resp_t *resp, const unsigned char *bytes, size_t len,
                    const char *content_type)
{
    char sha[65];
    util_sha256_hex(bytes, len, sha);
    sha[ETAG_HEX] = '\0';
    memcpy(resp->etag, sha, ETAG_HEX + 1); /* fits: ETag is 20 of its 24 bytes */
    if (none_match(ing_req_header(req, "If-None-Match"), sha)) {
        resp->status = 304;
        return;
    }
    char *body = malloc(len + 1);
    if (!body) {
        ing_resp_release(resp);
        ing_api_error(resp, 500, "out of memory");
        return;
    }
    memcpy(body, bytes, len);
    body[len] = '\0';
    resp->status = 200;
    resp->content_type = content_type;
    resp->body = body;
}
