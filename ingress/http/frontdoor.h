/*
 * frontdoor.h - the one front door: every route that needs a caller's identity goes through
 * ing_frontdoor_enter(), which checks the Origin and Host allow-lists, authenticates the
 * request (auth.h: an API key or an HMAC-signed app for a tenant, the operator token for the
 * admin API), resolves the tenant, applies the failed-authentication and per-key/per-app
 * rate limits, and returns a verdict as a value. Each protocol renders a refusal its own way
 * (mcp.c as JSON-RPC, api.c as {"error": ...}); the statuses, messages and challenges are
 * decided here, once (docs/security.md).
 *
 * Thread-safe: works on the request it is given.
 */
#ifndef MCPQ_ING_FRONTDOOR_H
#define MCPQ_ING_FRONTDOOR_H

#include "auth.h"
#include "req.h"

typedef enum {
    ING_DOOR_TENANT = 0, /* a tenant's credential: API key or signed app */
    ING_DOOR_OPERATOR,   /* the operator token of the admin API (MCPQ_ADMIN_TOKEN) */
} ing_door_kind_t;

typedef enum {
    ING_DOOR_IN = 0,       /* admitted */
    ING_DOOR_OFF,          /* 404: the admin API is off (no MCPQ_ADMIN_TOKEN) */
    ING_DOOR_FORBIDDEN,    /* 403: Origin or Host not allowed */
    ING_DOOR_NOT_READY,    /* 503: no registry loaded yet */
    ING_DOOR_UNAVAILABLE,  /* 503: the nonce store (Redis) is unreachable */
    ING_DOOR_UNAUTHORIZED, /* 401 with a challenge */
    ING_DOOR_LIMITED,      /* 429: failed authentications or the rate limit */
} ing_door_verdict_t;

typedef struct ing_door {
    ing_door_verdict_t verdict;
    int status;                 /* the HTTP status of the verdict (200 when admitted) */
    char why[192];              /* for the client, when refused */
    long long retry_after_ms;   /* ING_DOOR_LIMITED */
    char www_auth[1024];        /* ING_DOOR_UNAUTHORIZED: the WWW-Authenticate challenge */
    ing_registry_t *reg;        /* ING_DOOR_TENANT: a reference, dropped by ing_frontdoor_leave */
    const ing_tenant_t *tenant; /* ING_DOOR_TENANT, admitted */
    ing_principal_t who;        /* ING_DOOR_TENANT, admitted: the key, app or token */
    char who_store[ING_AUTH_STORE]; /* the strings of an OAuth principal (auth.h) */
} ing_door_t;

/* Lets req in as kind, or says why not: fills *door and returns door->verdict. An admitted
 * tenant request has req->tenant set. Call ing_frontdoor_leave() after, whatever the
 * verdict. */
ing_door_verdict_t ing_frontdoor_enter(ing_req_t *req, ing_door_kind_t kind, ing_door_t *door);

/* Before req's body is routed: what its OAuth access token's check will need is fetched
 * (auth.h, ing_auth_prepare: after the failed-authentication limits, never for a client they
 * refuse). ING_OAUTH_WAIT when wake(arg) will follow; else ING_OAUTH_READY. server.c's gate
 * calls it; ing_frontdoor_enter then decides from what is cached. */
int ing_frontdoor_prepare(ing_req_t *req, ing_oauth_wake_fn wake, void *arg);

/* Drops what the door holds (the registry reference). */
void ing_frontdoor_leave(ing_door_t *door);

/* 1 when req carries the operator token (constant-time); used before the body is read to
 * decide how much of it to accept. */
int ing_frontdoor_operator_token(const ing_req_t *req);

#endif
