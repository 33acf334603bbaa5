/*
 * api.c - the front door of the tenant REST endpoints (api.h).
 */
#include "api.h"

#include "auth.h"
#include "rpc.h"
#include "peer.h"

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

void ing_api_auth_req(ing_req_t *req, ing_auth_req_t *ar, char *client)
{
    ing_ctx_t *ctx = req->ctx;
    ing_peer_of(req->conn, ctx->trusted, client, ING_PEER_LEN);
    *ar = (ing_auth_req_t){.method = req->method,
                           .uri = req->uri,
                           .body = req->body.data,
                           .body_len = req->body.len,
                           .kv = ctx->kv,
                           .fails = &ctx->authfail,
                           .client = client};
}

void ing_api_too_many(ing_resp_t *resp, const char *msg, long long retry_after_ms)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddNumberToObject(o, "retryAfterMs", (double)retry_after_ms);
    ing_api_body(resp, 429, o);
    resp->retry_after_s = (retry_after_ms + 999) / 1000;
}

const ing_tenant_t *ing_api_front(ing_req_t *req, ing_registry_t **reg, ing_resp_t *resp)
{
    ing_ctx_t *ctx = req->ctx;
    if (!ing_auth_origin_ok(req->conn, ctx->set->allowed_origins, ctx->set->allowed_hosts)) {
        ing_api_error(resp, 403, "Origin or Host not allowed");
        return NULL;
    }
    *reg = ing_ctx_registry(ctx);
    if (!*reg) {
        ing_api_error(resp, 503, "registry not loaded yet; try again");
        return NULL;
    }
    const char *why = NULL;
    int status = 401;
    char client[ING_PEER_LEN];
    ing_auth_req_t ar;
    ing_api_auth_req(req, &ar, client);
    ing_principal_t who = {0};
    const ing_tenant_t *t = ing_auth_tenant(req->conn, *reg, &ar, &who, &status, &why);
    if (!t && status == 429) {
        ing_api_too_many(resp, why, ar.retry_after_ms);
        return NULL;
    }
    if (!t) {
        ing_api_error(resp, status == 503 ? 503 : 401, why ? why : "unauthorized");
        if (status != 503)
            resp->www_auth = "Bearer realm=\"mcpq\"";
        return NULL;
    }
    snprintf(req->tenant, sizeof(req->tenant), "%s", t->id);
    long long wait_ms = 0;
    if (!ing_ratelimit_admit(ctx->rl, &who, ctx->set->rate_limit_per_s, ctx->set->rate_limit_burst,
                             &wait_ms)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "rate limit of this %s exceeded; retry after %lld ms",
                 who.kind == 'a' ? "app" : "API key", wait_ms);
        ing_api_too_many(resp, msg, wait_ms);
        return NULL;
    }
    return t;
}
