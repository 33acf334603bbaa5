/*
 * oauthcache.c - the bounded cache of token introspection answers (oauthcache.h).
 */
#include "oauthcache.h"

#include <stdlib.h>
#include <string.h>

typedef ing_oauthcache_entry_t entry_t;

struct ing_oauthcache {
    entry_t **b; /* buckets, a power of two of them */
    size_t nb, n, max;
    entry_t *oldest, *newest;
};

ing_oauthcache_t *ing_oauthcache_new(size_t max)
{
    ing_oauthcache_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->max = max ? max : 1;
    c->nb = 16;
    while (c->nb < c->max)
        c->nb *= 2;
    c->b = calloc(c->nb, sizeof(*c->b));
    if (!c->b) {
        free(c);
        return NULL;
    }
    return c;
}

/* The bucket of a hash: its first 16 hex digits (a SHA-256 is uniform enough). */
static size_t bucket(const ing_oauthcache_t *c, const char *hash)
{
    size_t h = 0;
    for (int i = 0; i < 16; i++)
        h = h * 16 + (size_t)(hash[i] <= '9' ? hash[i] - '0' : (hash[i] | 0x20) - 'a' + 10);
    return h & (c->nb - 1);
}

entry_t *ing_oauthcache_find(ing_oauthcache_t *c, const char *hash)
{
    for (entry_t *e = c->b[bucket(c, hash)]; e; e = e->hnext)
        if (memcmp(e->hash, hash, 64) == 0)
            return e;
    return NULL;
}

static void remove_entry(ing_oauthcache_t *c, entry_t *e)
{
    entry_t **p = &c->b[bucket(c, e->hash)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    c->n--;
    cJSON_Delete(e->claims);
    free(e->issuer);
    free(e);
}

void ing_oauthcache_put(ing_oauthcache_t *c, const char *hash, cJSON *claims, const char *issuer,
                        int64_t expires_ms, int64_t token_exp_ms)
{
    entry_t *e = ing_oauthcache_find(c, hash);
    if (e)
        remove_entry(c, e);
    while (c->n >= c->max && c->oldest)
        remove_entry(c, c->oldest);
    e = calloc(1, sizeof(*e));
    char *iss = issuer ? strdup(issuer) : NULL;
    if (!e || (issuer && !iss)) {
        free(e);
        free(iss);
        cJSON_Delete(claims);
        return;
    }
    memcpy(e->hash, hash, 64);
    e->hash[64] = '\0';
    e->active = claims != NULL;
    e->claims = claims;
    e->issuer = iss;
    e->expires_ms = expires_ms;
    e->token_exp_ms = token_exp_ms;
    size_t bi = bucket(c, hash);
    e->hnext = c->b[bi];
    c->b[bi] = e;
    e->older = c->newest;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
    c->n++;
}

size_t ing_oauthcache_count(const ing_oauthcache_t *c)
{
    return c->n;
}

void ing_oauthcache_free(ing_oauthcache_t *c)
{
    if (!c)
        return;
    while (c->oldest)
        remove_entry(c, c->oldest);
    free(c->b);
    free(c);
}
