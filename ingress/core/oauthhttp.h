/*
 * oauthhttp.h - the requests the OAuth service (oauth.h) makes to authorization servers, as
 * libcurl easy handles its fetch thread runs: which URLs may be fetched (https, or http to a
 * loopback host), the metadata discovery URLs of an issuer, the response (body capped at
 * ING_OAUTH_RESPONSE_MAX bytes, its lifetime from Cache-Control max-age or Expires), and the
 * introspection POST with HTTP Basic client authentication. A URL learned from a metadata
 * document rather than configured (a discovered jwks_uri on another origin than its issuer) is
 * fetched under the webhook SSRF guard (webhook.h, ing_whrules_socket): the address connected
 * to, after DNS, must be public, and no proxy is used. No state of its own; every function is
 * thread-safe (curl_global_init() must have run).
 */
#ifndef MCPQ_ING_OAUTHHTTP_H
#define MCPQ_ING_OAUTHHTTP_H

#include "util.h"
#include "webhook.h"

#include <curl/curl.h>
#include <stdint.h>

/* 1 when url may be fetched: https://, or http:// to localhost, 127.0.0.1 or [::1]; else 0.
 * When proto is not NULL it receives "https" or "http" (size >= 6). */
int ing_oauthhttp_url_ok(const char *url, char *proto, size_t size);

/*
 * The step-th metadata discovery URL of issuer (docs/authorization.md, the MCP authorization
 * page's order) into out: with a path component /p (a trailing '/' dropped):
 *   0 https://h/.well-known/oauth-authorization-server/p
 *   1 https://h/.well-known/openid-configuration/p
 *   2 https://h/p/.well-known/openid-configuration
 * without one, 0 and 1 without /p. 0, or -1 when there is no such step or issuer is no URL.
 */
int ing_oauthhttp_discovery_url(const char *issuer, int step, char *out, size_t size);

/* One request and what came back. */
typedef struct ing_oauthhttp {
    CURL *easy;
    struct curl_slist *hdrs;
    char *post; /* the POST body (wiped when freed: it holds a token) */
    util_buf_t body;
    long max_age_s;            /* Cache-Control max-age; -1: none; 0 also for no-store / no-cache */
    int64_t expires_ms;        /* the Expires header (Unix ms); 0: none */
    ing_whrules_guard_t guard; /* a learned URL's SSRF guard; guard.refused: why it refused */
    char errbuf[CURL_ERROR_SIZE];
} ing_oauthhttp_t;

/* A GET of url (ing_oauthhttp_url_ok must hold) with a timeout; NULL when out of memory or the
 * URL is refused. private is set as CURLOPT_PRIVATE. learned: url came from a metadata
 * document, so it is fetched under the SSRF guard (above; a refused address fails the
 * transfer, with guard.refused saying why). */
ing_oauthhttp_t *ing_oauthhttp_get(const char *url, long timeout_ms, void *private, int learned);

/* 1 when URLs a and b have the same origin (scheme, host and port, as libcurl parses them;
 * the default port when none is given), else 0. */
int ing_oauthhttp_same_origin(const char *a, const char *b);

/* An RFC 7662 introspection POST of token to endpoint, client_id and secret form-urlencoded
 * then HTTP Basic (RFC 6749 section 2.3.1); NULL as above. */
ing_oauthhttp_t *ing_oauthhttp_introspect(const char *endpoint, const char *client_id,
                                          const char *secret, const char *token, long timeout_ms,
                                          void *private);

/* The response's lifetime in ms: max-age, else Expires - now_ms, else max_ms; then clamped to
 * [min(floor_ms, max_ms), max_ms]. */
int64_t ing_oauthhttp_lifetime_ms(const ing_oauthhttp_t *h, int64_t now_ms, int64_t floor_ms,
                                  int64_t max_ms);

/* Frees h and its handle (which must no longer be in a multi handle); NULL does nothing. */
void ing_oauthhttp_free(ing_oauthhttp_t *h);

#endif
