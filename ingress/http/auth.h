/*
 * auth.h - who is calling (docs/authentication.md "Authentication"): API keys from `Authorization:
 * Bearer <key>` or `X-Api-Key`, hashed with SHA-256 and compared in constant time against the
 * registry's key hashes; HMAC request signing (X-App-Id, X-Timestamp, X-Nonce, X-Signature; sig.h;
 * version 2 with X-Signature-Version and X-Signed-Headers also covers Host and the MCP
 * headers, and an app with "signature_version": 2 accepts only that) with each nonce claimed
 * once per app in Redis for SIG_NONCE_TTL_S, so a request replayed at any replica is
 * refused; Origin and Host allow-lists against DNS rebinding (docs/protocol.md). A request
 * that carries X-App-Id or X-Signature is judged by its signature alone (an API key next to
 * a bad signature does not rescue it). Nothing here logs or returns a credential, a
 * signature or a nonce. Thread-safe.
 */
#ifndef MCPQ_ING_AUTH_H
#define MCPQ_ING_AUTH_H

#include "access.h"
#include "kv.h"
#include "oauth.h"
#include "registry.h"

typedef struct ing_req ing_req_t; /* req.h */

typedef struct ing_ratelimit ing_ratelimit_t; /* ratelimit.h */

/* The most client addresses and app ids one replica keeps failure counts of. */
#define ING_AUTHFAIL_MAX_BUCKETS 65536

/* The limits on failed authentications (docs/authentication.md "Authentication"). */
typedef struct ing_authfail {
    ing_ratelimit_t *rl;    /* buckets per client address and per app id (NULL: no limits) */
    long long addr_per_min; /* failures one client address may make a minute (0: no limit) */
    long long id_per_min;   /* failures against one app id a minute (0: no limit) */
} ing_authfail_t;

/* What a signature covers: the request as received; and who sends it. */
typedef struct ing_auth_req {
    const char *method;
    const char *uri; /* path and query exactly as sent */
    const void *body;
    size_t body_len;
    kv_pool_t *kv;               /* where nonces are claimed */
    const ing_authfail_t *fails; /* NULL: failures are not limited */
    const char *client;          /* the client's address (peer.h) */
    ing_oauth_t *oauth;          /* the access token checks (NULL: tokens are not taken) */
    char *store;                 /* room for an OAuth principal's strings (ING_AUTH_STORE) */
    long long retry_after_ms;    /* out: with *status 429 */
    int token;                   /* out: the credential was an OAuth access token */
} ing_auth_req_t;

/* The room ing_auth_req_t.store must have. */
#define ING_AUTH_STORE 3072

/*
 * The authenticated tenant with *who filled, or NULL with *status (401; 503 when the nonce
 * store is unreachable; 429 with r->retry_after_ms when the client or the app named has
 * failed too often) and *why (a message for the client) set. A Bearer credential that is no
 * API key is an OAuth access token when a tenant takes them (docs/authorization.md): checked
 * from the key service's cache (oauth.h; 503 when its issuer's keys or introspection could
 * not be fetched), then the tenant (an issuer it trusts, its tenant claim), the audience
 * (the resource URL the request names, the base URL, or one of the tenant's
 * oauth.audiences), and the principal ('o': the user and app claims, the token's scopes and
 * the permissions they map to, kept in r->store); r->token says so. A request that presents a
 * credential (X-App-Id, X-Signature, Authorization, X-Api-Key) is refused 429 before any
 * work when its client address or app id is over its failure budget on this replica; a
 * presented credential that fails is counted against both (the app id only when it names a
 * configured app), and the failure that exhausts a budget is answered 429 too.
 */
const ing_tenant_t *ing_auth_tenant(const ing_req_t *req, const ing_registry_t *reg,
                                    ing_auth_req_t *r, ing_principal_t *who, int *status,
                                    const char **why);

/*
 * 1 with *token set when req carries `Authorization: Bearer <token>` that is no API key of
 * reg and is not part of a signed request: an OAuth access token to check (oauth.h). 0
 * otherwise. *token is valid for the request's lifetime.
 */
int ing_auth_access_token(const ing_req_t *req, const ing_registry_t *reg, const char **token);

/*
 * Before the body of a request that carries an OAuth access token is routed (server.c, the
 * gate): starts what the token's check will need (oauth.h, ing_oauth_prepare: its issuer's
 * keys, or its introspection at the one tenant that introspects at the endpoint req names) and
 * returns ING_OAUTH_WAIT when wake(arg) will follow; ING_OAUTH_READY when the front door can
 * decide now: no token, a client or app over its failure budget (ing_auth_fail_blocked:
 * checked first, so a client being refused causes no request to any authorization server), an
 * opaque token where no tenant or several introspect (refused 401 with no request), or nothing
 * to fetch. r as for ing_auth_tenant (fails, client, oauth).
 */
int ing_auth_prepare(const ing_req_t *req, const ing_registry_t *reg, ing_auth_req_t *r,
                     ing_oauth_wake_fn wake, void *arg);

/*
 * 1 when the headers alone name a credential the registry knows: an API key (Authorization:
 * Bearer or X-Api-Key) of a tenant, or, for a signed request, a known X-App-Id with a
 * well-formed X-Nonce and X-Signature and an X-Timestamp within SIG_WINDOW_S; for an OAuth
 * access token, a cheap and lenient look that needs no key and no request: a JWT whose iss
 * a tenant trusts and whose exp has not passed (not its signature: a key rotation must not
 * make a large request 413, and a stranger must not get a signature check before the failure
 * limits), or an opaque token at an endpoint where one tenant introspects. The signature, the
 * token and the introspection are checked by ing_auth_tenant once the body is in; this only
 * decides how much body the ingress reads before that (server.c, MCPQ_PREAUTH_BODY_BYTES), at
 * most MCPQ_MAX_BODY_BYTES. Claims no nonce. reg may be NULL (0).
 */
int ing_auth_known(const ing_req_t *req, const ing_registry_t *reg);
/* 1 when r->client, or app_id (may be NULL), is over its failure budget, with
 * *retry_after_ms: a lookup on this replica, no Redis. */
int ing_auth_fail_blocked(const ing_auth_req_t *r, const char *app_id, long long *retry_after_ms);

/* Counts one failed authentication of r->client and of app_id (NULL: the client only), in
 * Redis for the fleet (per replica while Redis is down). 1 when that went over a budget,
 * with *retry_after_ms (logged once per refusal, with the client and app id). */
int ing_auth_fail_count(const ing_auth_req_t *r, const char *app_id, long long *retry_after_ms);

/* 1 when the request's Origin and Host pass MCPQ_ALLOWED_ORIGINS / MCPQ_ALLOWED_HOSTS. */
int ing_auth_origin_ok(const ing_req_t *req, const char *allowed_origins,
                       const char *allowed_hosts);

#endif
