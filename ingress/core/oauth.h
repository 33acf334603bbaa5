/*
 * oauth.h - the keys and introspection answers behind OAuth bearer tokens (docs/authorization.md):
 * the ingress as an OAuth 2.1 resource server checks a JWT access token against the public keys
 * of its issuer, and an opaque token by asking the issuer (token introspection, RFC 7662).
 *
 * Keys. For each trusted issuer the service finds the JWKS URL (the configured jwks_uri, else
 * authorization server metadata discovery in the order docs/authorization.md gives: RFC 8414
 * /.well-known/oauth-authorization-server with path insertion, then OpenID Connect
 * /.well-known/openid-configuration with path insertion, then appended to the issuer's path;
 * the metadata's "issuer" must be the issuer exactly, else the document is refused), fetches the
 * key set (common/jwt.h) and keeps it for the response's lifetime (Cache-Control max-age or
 * Expires, clamped to [60 s (MCPQ_OAUTH_JWKS_MIN_REFRESH_S when lower), MCPQ_OAUTH_JWKS_MAX_AGE_S];
 * neither header: the maximum), fetching it again in the background shortly before. A refresh
 * that fails keeps the last good keys (one warning per streak of failures) and is retried every
 * MCPQ_OAUTH_JWKS_MIN_REFRESH_S. A token whose kid names no known key makes its issuer's keys be
 * fetched again, at most once per MCPQ_OAUTH_JWKS_MIN_REFRESH_S (key rotation).
 *
 * Introspection. An opaque token (one that is not shaped like a JWT, jwt_looks_like) is posted
 * (token=...&token_type_hint=access_token, HTTP Basic client authentication with the client id
 * and secret form-urlencoded first) to the introspection endpoint of ONE tenant, the one the
 * caller names (ingress/http/auth.c picks the one tenant that introspects at the endpoint called,
 * ing_registry_introspector; never from the token), and to no other: a tenant's authorization
 * server never sees another tenant's tokens. An active answer is taken as issued by that
 * tenant's first issuer. An endpoint that fails is an error (503), not inactive. Answers are
 * cached per (tenant, endpoint, client id) under a keyed hash of the token's SHA-256 (the token
 * itself is kept only while its request is in flight, and never logged): active ones until the
 * token's exp, at most MCPQ_OAUTH_INTROSPECTION_TTL_S; inactive ones ING_OAUTH_INACTIVE_TTL_S; at
 * most MCPQ_OAUTH_INTROSPECTION_CACHE answers (the oldest are dropped first); errors are not
 * cached. An answer past its time is never used again: when the new introspection fails, cannot
 * start (the tenant's ING_OAUTH_MAX_INTROSPECTIONS are under way) or has too many waiters, the
 * check says 503. Each tenant has its own cap on introspections under way, so a slow endpoint
 * holds up only its own tenant's new tokens (and a process-wide bound, 16 tenants' worth, keeps
 * the memory of many tenants' bounded).
 *
 * Network. One fetch thread of its own does every request (libcurl, several at once), never an
 * HTTP thread: MCPQ_OAUTH_FETCH_TIMEOUT_MS per request, no redirects, https only (http only to
 * a loopback host: localhost, 127.0.0.1, [::1]), certificates verified, responses at most
 * ING_OAUTH_RESPONSE_MAX bytes. A jwks_uri learned by discovery on another origin than its
 * issuer is fetched under the webhook SSRF guard (oauthhttp.h; refused: the fetch fails,
 * logged) whatever MCPQ_WEBHOOK_ALLOW_PRIVATE says; configured URLs are the operator's choice.
 *
 * How a request uses it (ingress/server.c, ingress/http/auth.c): ing_oauth_prepare() first,
 * which never blocks; on ING_OAUTH_WAIT the caller parks the request and resumes it when wake()
 * is called; then ing_oauth_check(), which answers from what is cached.
 *
 * Thread-safety: every function may be called from any thread at once, except
 * ing_oauth_new/ing_oauth_free (once each, from the thread that owns the process context).
 * curl_global_init() must have run before ing_oauth_new.
 */
#ifndef MCPQ_ING_OAUTH_H
#define MCPQ_ING_OAUTH_H

#include "metrics.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define ING_OAUTH_RESPONSE_MAX                                                                     \
    (256 * 1024)                         /* bytes of one metadata, JWKS or introspection answer */
#define ING_OAUTH_MAX_WAITERS 1024       /* parked requests per issuer or introspected token */
#define ING_OAUTH_MAX_INTROSPECTIONS 256 /* introspections under way at once, per tenant */
#define ING_OAUTH_MAX_INTROSPECTIONS_ALL 4096 /* ... and of all tenants together */
#define ING_OAUTH_INACTIVE_TTL_S 10           /* an inactive answer is reused this long */
#define ING_OAUTH_LIFETIME_FLOOR_S 60         /* shortest key lifetime (see above) */

typedef struct ing_oauth ing_oauth_t;

/* One issuer a tenant trusts (ingress/core/registry.h, ing_tenant_oauth_t: one per issuer). */
typedef struct ing_oauth_source {
    const char *tenant; /* the tenant's id: its introspection endpoint answers for it alone */
    const char *issuer;
    const char *jwks_uri;               /* NULL: discovery (above) */
    const char *introspection_endpoint; /* NULL: none */
    const char *client_id, *client_secret;
} ing_oauth_source_t;

/*
 * Starts the service and its fetch thread with no issuer. metrics (may be NULL) receives the
 * ing_metrics_oauth_* counts; it must outlive the service. NULL on failure (logged).
 */
ing_oauth_t *ing_oauth_new(const mcpq_settings_t *set, ing_metrics_t *metrics);

/* Stops the fetch thread (a request in flight is abandoned), calls every pending wake() once,
 * frees everything. NULL does nothing. */
void ing_oauth_free(ing_oauth_t *o);

/*
 * Installs the issuers the registry names, src[0..n) (copied; n may be 0). The refresh thread
 * calls it whenever a registry is swapped in (also the first), with one entry per (tenant,
 * issuer) of the tenants that have "oauth" (ing_tenant_oauth_t): issuer = issuers[i];
 * jwks_uri = the tenant's jwks_uri (the config allows it only with one issuer); the tenant's
 * introspection endpoint, client_id and client_secret on its issuers[0] entry only (an active
 * answer is then taken as issued by issuers[0], one of the tenant's). Duplicates are merged (an
 * issuer's keys are fetched once; the first jwks_uri given for it wins; a tenant's first entry
 * that names an introspection endpoint is its one source); tenants sharing an issuer cannot
 * disagree on them in a registry the config loader or the admin API wrote
 * (cfg.h, cfg_check_issuers_shared). An issuer named before with the same
 * jwks_uri keeps its keys; a new one has its keys fetched at once in the background; one no
 * longer named is dropped (its waiters are woken by the fetch thread). An entry whose URLs are
 * not https (http only to a loopback host) is left out, logged. Requests prepared after this
 * returns see the new set. The keys gauge (mcpq_oauth_keys) appears once n > 0.
 */
void ing_oauth_configure(ing_oauth_t *o, const ing_oauth_source_t *src, size_t n);

typedef void (*ing_oauth_wake_fn)(void *arg);
enum { ING_OAUTH_READY = 0, ING_OAUTH_WAIT = 1 };

/*
 * tenant: for an opaque token, the id of the one tenant whose introspection endpoint may be
 * asked (NULL: none; ignored for a JWT, whose iss names its issuer). The caller must have
 * consulted the failed-authentication limits first (ingress/http/auth.c, ing_auth_prepare): this
 * starts requests to authorization servers.
 * Never blocks on the network. ING_OAUTH_READY: ing_oauth_check can decide now (also when the
 * token is not one the service can help with: unknown issuer, malformed, no introspection).
 * ING_OAUTH_WAIT: a fetch that can change the answer was started or is under way (the issuer's
 * keys not loaded yet; a kid the keys lack and the issuer's last fetch started at least
 * MCPQ_OAUTH_JWKS_MIN_REFRESH_S ago; an opaque token not in the introspection cache); wake(arg)
 * is then called exactly once, from the fetch thread after that fetch ends (or when the issuer
 * is dropped by ing_oauth_configure), or from ing_oauth_free's caller; never while the
 * service's lock is held, and possibly before ing_oauth_prepare
 * returns on another thread: the caller must be ready for it before calling. When too many
 * requests wait already (ING_OAUTH_MAX_WAITERS, the tenant's ING_OAUTH_MAX_INTROSPECTIONS,
 * ING_OAUTH_MAX_INTROSPECTIONS_ALL) the
 * answer is READY, so that the check fails at once (503) instead of queueing without bound.
 */
int ing_oauth_prepare(ing_oauth_t *o, const char *token, const char *tenant, ing_oauth_wake_fn wake,
                      void *arg);

typedef struct ing_oauth_token {
    cJSON *claims;    /* owned: the JWT payload, or the introspection answer */
    char issuer[512]; /* the configured issuer it was validated against */
} ing_oauth_token_t;

/*
 * From what is cached only: a JWT's signature (the issuer is its "iss", which must be
 * configured; jwt_verify against that issuer's keys) and exp/nbf/iat with
 * MCPQ_OAUTH_CLOCK_SKEW_S; an opaque token's introspection answer from tenant's endpoint (as for
 * ing_oauth_prepare), cached and not past its time (active, and its exp not passed). 0 with
 * *out filled (clear it with ing_oauth_token_clear); MCPQ_EAUTH with *why,
 * a static message for the client (401 invalid_token: bad signature, unknown kid, expired,
 * untrusted issuer, inactive, no introspection configured); MCPQ_EUNAVAIL with *why (503: no
 * keys could be fetched for the issuer yet, or no live introspection answer is cached because the
 * endpoint failed or was too busy). Does not check aud or the tenant (ingress/http/auth.c does).
 */
int ing_oauth_check(ing_oauth_t *o, const char *token, const char *tenant, ing_oauth_token_t *out,
                    const char **why);

/* Frees what t holds and zeroes it; NULL does nothing. */
void ing_oauth_token_clear(ing_oauth_token_t *t);

#endif
