/* keycache.h: a small cache from a presented secret (an API key's value) to what it opened, so
 * that a request with a known key costs a keyed hash and a constant-time compare instead of a
 * SHA-256 of the key (docs/security.md, the front door).
 *
 * Direct-mapped: ING_KEYCACHE_SLOTS slots, the slot chosen by SipHash-2-4 of the value under a
 * random 128-bit key drawn when the cache is made, so a client cannot aim many values at one
 * slot. A slot keeps the value itself and is a hit only when the length is equal and the
 * bytes compare equal in constant time (CRYPTO_memcmp); the hash alone never decides. Only
 * values that opened something are put (a wrong key is hashed with SHA-256 every time), and
 * values longer than ING_KEYCACHE_MAX_KEY bytes are never kept. The cache lives in one registry
 * snapshot (registry.c): a new snapshot starts empty, so a revoked key stops opening anything
 * at the next refresh. Freeing the cache wipes the values it kept.
 *
 * Thread-safe: every call may come from any thread (one mutex per cache). */
#ifndef MCPQ_INGRESS_KEYCACHE_H
#define MCPQ_INGRESS_KEYCACHE_H

#include <stddef.h>

#define ING_KEYCACHE_SLOTS 256
#define ING_KEYCACHE_MAX_KEY 128

typedef struct ing_keycache ing_keycache_t;

/* A new empty cache (free with ing_keycache_free), or NULL out of memory or when no random
 * key could be drawn. */
ing_keycache_t *ing_keycache_new(void);

/* Wipes the kept values and frees kc; NULL does nothing. */
void ing_keycache_free(ing_keycache_t *kc);

/* The pointer put for the value key (len bytes), or NULL when it is not in kc (kc NULL: NULL).
 * The pointer is the caller's: the cache never reads through it. */
const void *ing_keycache_get(ing_keycache_t *kc, const char *key, size_t len);

/* Keeps what (not NULL) for the value key (len bytes), replacing whatever shared its slot;
 * does nothing when kc is NULL or len is 0 or over ING_KEYCACHE_MAX_KEY. */
void ing_keycache_put(ing_keycache_t *kc, const char *key, size_t len, const void *what);

#endif
