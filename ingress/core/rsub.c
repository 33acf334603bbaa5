#include "rsub.h"

#include "err.h"
#include "rscript.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RSUB_BATCH 256 /* SISMEMBERs per pipeline */

/* "<server> <uri>", malloc'd, or NULL. */
static char *member(const char *server, const char *uri)
{
    char *m = NULL;
    if (asprintf(&m, "%s %s", server, uri) < 0)
        return NULL;
    return m;
}

int ing_rsub_add(kv_pool_t *kv, const char *session_id, const char *server, const char *uri,
                 long long ttl_s, long long max)
{
    char key[160], ttl[24], lim[24], err[256];
    char *m = member(server, uri);
    if (!m)
        return MCPQ_ENOMEM;
    snprintf(key, sizeof(key), ING_RSUB_KEY_PREFIX "%s", session_id);
    snprintf(ttl, sizeof(ttl), "%lld", ttl_s);
    snprintf(lim, sizeof(lim), "%lld", max);
    const char *argv[] = {key, m, ttl, lim};
    redisReply *r =
        rscript_pool_run(kv, rscript_get("rsub_add"), 1, 4, argv, NULL, err, sizeof(err));
    free(m);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = r->type != REDIS_REPLY_INTEGER ? MCPQ_EUNAVAIL : r->integer < 0 ? MCPQ_ETOOBIG : 0;
    freeReplyObject(r);
    return rc;
}

int ing_rsub_remove(kv_pool_t *kv, const char *session_id, const char *server, const char *uri)
{
    char err[256];
    char *m = member(server, uri);
    if (!m)
        return MCPQ_ENOMEM;
    redisReply *r =
        kv_pool_command(kv, err, sizeof(err), "SREM " ING_RSUB_KEY_PREFIX "%s %s", session_id, m);
    free(m);
    if (!r)
        return MCPQ_EUNAVAIL;
    freeReplyObject(r);
    return 0;
}

int ing_rsub_match(kv_pool_t *kv, const char *const *sessions, size_t n, const char *server,
                   const char *uri, int *hit)
{
    char err[256];
    int rc = 0;
    memset(hit, 0, n * sizeof(*hit));
    char *m = n ? member(server, uri) : NULL;
    if (n && !m)
        return MCPQ_ENOMEM;
    for (size_t from = 0; from < n && rc == 0; from += RSUB_BATCH) {
        size_t to = from + RSUB_BATCH < n ? from + RSUB_BATCH : n;
        redisContext *c = kv_pool_get(kv, err, sizeof(err));
        if (!c) {
            rc = MCPQ_EUNAVAIL;
            break;
        }
        for (size_t i = from; i < to; i++)
            redisAppendCommand(c, "SISMEMBER " ING_RSUB_KEY_PREFIX "%s %s", sessions[i], m);
        int broken = 0;
        for (size_t i = from; i < to && !broken; i++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
                broken = 1;
                break;
            }
            broken = kv_ctx_failover(NULL, c, r); /* a demoted master: the context goes */
            hit[i] = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
            freeReplyObject(r);
        }
        kv_pool_put(kv, c, broken);
        if (broken)
            rc = MCPQ_EUNAVAIL;
    }
    free(m);
    return rc;
}
