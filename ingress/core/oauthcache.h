/*
 * oauthcache.h - the token introspection answers the OAuth service (oauth.h) keeps: a hash
 * table keyed by the hex SHA-256 of a token (never the token), bounded to max entries, the
 * oldest dropped first when a new one would pass the bound. Not thread-safe: oauth.c holds its
 * lock around every call.
 */
#ifndef MCPQ_ING_OAUTHCACHE_H
#define MCPQ_ING_OAUTHCACHE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ing_oauthcache_entry {
    struct ing_oauthcache_entry *hnext, *older, *newer;
    char hash[65];
    int active;
    cJSON *claims;        /* the answer (active ones only) */
    char *issuer;         /* the issuer of the source that answered (active ones only) */
    int64_t expires_ms;   /* wall clock: the answer is asked for again from then on */
    int64_t token_exp_ms; /* the answer's exp (0: none) */
} ing_oauthcache_entry_t;

typedef struct ing_oauthcache ing_oauthcache_t;

/* An empty cache of at most max (>= 1) entries; NULL when out of memory. */
ing_oauthcache_t *ing_oauthcache_new(size_t max);
void ing_oauthcache_free(ing_oauthcache_t *c);

/* The entry of hash (64 hex digits), expired or not, or NULL; valid until the next put. */
ing_oauthcache_entry_t *ing_oauthcache_find(ing_oauthcache_t *c, const char *hash);

/* Stores an answer for hash, replacing any: active with claims (taken over) and issuer
 * (copied), or inactive (claims and issuer NULL). Drops the oldest entries to stay within max.
 * Out of memory: nothing is stored (claims freed). */
void ing_oauthcache_put(ing_oauthcache_t *c, const char *hash, cJSON *claims, const char *issuer,
                        int64_t expires_ms, int64_t token_exp_ms);

/* The number of entries. */
size_t ing_oauthcache_count(const ing_oauthcache_t *c);

#endif
