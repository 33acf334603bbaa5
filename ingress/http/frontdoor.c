/*
 * frontdoor.c - the one front door (frontdoor.h).
 */
#include "frontdoor.h"

#include "prm.h"
#include "ratelimit.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

static const char too_many_failures[] =
    "too many failed authentications from this client; retry later";

static ing_door_verdict_t refuse(ing_door_t *door, ing_door_verdict_t verdict, int status,
                                 const char *why)
{
    door->verdict = verdict;
    door->status = status;
    snprintf(door->why, sizeof(door->why), "%s", why);
    return verdict;
}

/* The authentication request of req (auth.h): its method, URI as sent, body, the nonce
 * store, the failed-authentication limits, the token checks and its client's address,
 * written to client (ING_PEER_LEN bytes, which must outlive ar); an OAuth principal's
 * strings go to store (ING_AUTH_STORE bytes; NULL: none). */
static void auth_req(const ing_req_t *req, ing_auth_req_t *ar, char *client, char *store)
{
    ing_ctx_t *ctx = req->ctx;
    ing_req_client(req, ctx->trusted, client, ING_PEER_LEN);
    *ar = (ing_auth_req_t){.method = req->method,
                           .uri = req->uri,
                           .body = req->body.data,
                           .body_len = req->body.len,
                           .kv = ctx->kv,
                           .fails = &ctx->authfail,
                           .client = client,
                           .oauth = ctx->oauth,
                           .store = store};
}

int ing_frontdoor_operator_token(const ing_req_t *req)
{
    const char *token = req->ctx->set->admin_token;
    if (!token || !*token)
        return 0;
    const char *h = ing_req_header(req, "Authorization");
    unsigned char want[65], got[65];
    util_sha256_hex(token, strlen(token), (char *)want);
    int ok = h && strncmp(h, "Bearer ", 7) == 0;
    util_sha256_hex(ok ? h + 7 : "", ok ? strlen(h + 7) : 0, (char *)got);
    return util_ct_equal(want, got, 64) && ok;
}

/* The operator token; a wrong one counts against the client address like a wrong API key. */
static ing_door_verdict_t enter_operator(ing_req_t *req, ing_door_t *door)
{
    const char *h = ing_req_header(req, "Authorization");
    char client[ING_PEER_LEN];
    ing_auth_req_t ar;
    auth_req(req, &ar, client, NULL);
    if (h && ing_auth_fail_blocked(&ar, NULL, &door->retry_after_ms))
        return refuse(door, ING_DOOR_LIMITED, 429, too_many_failures);
    if (ing_frontdoor_operator_token(req)) {
        door->verdict = ING_DOOR_IN;
        door->status = 200;
        return ING_DOOR_IN;
    }
    if (h && ing_auth_fail_count(&ar, NULL, &door->retry_after_ms))
        return refuse(door, ING_DOOR_LIMITED, 429, too_many_failures);
    snprintf(door->www_auth, sizeof(door->www_auth), "Bearer realm=\"mcpq-admin\"");
    return refuse(door, ING_DOOR_UNAUTHORIZED, 401,
                  "the admin API needs Authorization: Bearer <MCPQ_ADMIN_TOKEN>");
}

/* The per-key or per-app rate limit of an authenticated caller. */
static ing_door_verdict_t rate_limit(ing_req_t *req, ing_door_t *door)
{
    ing_ctx_t *ctx = req->ctx;
    long long wait_ms = 0;
    if (ing_ratelimit_admit(ctx->rl, &door->who, ctx->set->rate_limit_per_s,
                            ctx->set->rate_limit_burst, &wait_ms)) {
        door->verdict = ING_DOOR_IN;
        door->status = 200;
        return ING_DOOR_IN;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "rate limit of this %s exceeded; retry after %lld ms",
             door->who.kind == 'a'   ? "app"
             : door->who.kind == 'o' ? "token's user"
                                     : "API key",
             wait_ms);
    door->retry_after_ms = wait_ms;
    return refuse(door, ING_DOOR_LIMITED, 429, msg);
}

/* A tenant's API key or signed app, then its rate limit. */
static ing_door_verdict_t enter_tenant(ing_req_t *req, ing_door_t *door)
{
    door->reg = ing_ctx_registry(req->ctx);
    if (!door->reg)
        return refuse(door, ING_DOOR_NOT_READY, 503, "registry not loaded yet; try again");
    const char *why = NULL;
    int status = 401;
    char client[ING_PEER_LEN];
    ing_auth_req_t ar;
    auth_req(req, &ar, client, door->who_store);
    door->tenant = ing_auth_tenant(req, door->reg, &ar, &door->who, &status, &why);
    if (!door->tenant) {
        if (status == 429) {
            door->retry_after_ms = ar.retry_after_ms;
            return refuse(door, ING_DOOR_LIMITED, 429, why ? why : too_many_failures);
        }
        if (status == 503)
            return refuse(door, ING_DOOR_UNAVAILABLE, 503, why ? why : "unavailable");
        why = why ? why : "unauthorized";
        ing_prm_unauthorized(req, door->reg, ar.token, why, door->www_auth, sizeof(door->www_auth));
        return refuse(door, ING_DOOR_UNAUTHORIZED, 401, why);
    }
    snprintf(req->tenant, sizeof(req->tenant), "%s", door->tenant->id);
    return rate_limit(req, door);
}

int ing_frontdoor_prepare(ing_req_t *req, ing_oauth_wake_fn wake, void *arg)
{
    ing_registry_t *reg = ing_ctx_registry(req->ctx);
    char client[ING_PEER_LEN];
    ing_auth_req_t ar;
    auth_req(req, &ar, client, NULL);
    int rc = reg ? ing_auth_prepare(req, reg, &ar, wake, arg) : ING_OAUTH_READY;
    ing_registry_unref(reg);
    return rc;
}

ing_door_verdict_t ing_frontdoor_enter(ing_req_t *req, ing_door_kind_t kind, ing_door_t *door)
{
    const mcpq_settings_t *set = req->ctx->set;
    memset(door, 0, sizeof(*door));
    if (kind == ING_DOOR_OPERATOR && (!set->admin_token || !*set->admin_token))
        return refuse(door, ING_DOOR_OFF, 404,
                      "the admin API is off: start the ingress with MCPQ_ADMIN_TOKEN");
    if (!ing_auth_origin_ok(req, set->allowed_origins, set->allowed_hosts))
        return refuse(door, ING_DOOR_FORBIDDEN, 403, "Origin or Host not allowed");
    ing_door_verdict_t v =
        kind == ING_DOOR_OPERATOR ? enter_operator(req, door) : enter_tenant(req, door);
    if (v == ING_DOOR_IN) /* the http_auth stage's end (stages.h) */
        req->call.stamps.door_us = util_now_us();
    return v;
}

void ing_frontdoor_leave(ing_door_t *door)
{
    ing_registry_unref(door->reg);
    door->reg = NULL;
}
