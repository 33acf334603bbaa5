#include "redis.h"

#include "err.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kv_url_parse(const char *url, kv_addr_t *addr)
{
    memset(addr, 0, sizeof(*addr));
    addr->port = 6379;
    const char *p = url;
    if (strncmp(p, "redis://", 8) != 0)
        return MCPQ_EINVAL;
    p += 8;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        size_t n = (size_t)(at - pw);
        if (n >= sizeof(addr->password))
            return MCPQ_EINVAL;
        memcpy(addr->password, pw, n);
        p = at + 1;
    }
    size_t hl = strcspn(p, ":/");
    if (hl == 0 || hl >= sizeof(addr->host))
        return MCPQ_EINVAL;
    memcpy(addr->host, p, hl);
    p += hl;
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port <= 0 || port > 65535)
            return MCPQ_EINVAL;
        addr->port = (int)port;
        p = end;
    }
    if (*p == '/') {
        p++;
        if (*p) {
            char *end;
            long db = strtol(p, &end, 10);
            if (end == p || *end || db < 0 || db > 1000)
                return MCPQ_EINVAL;
            addr->db = (int)db;
        }
    } else if (*p) {
        return MCPQ_EINVAL;
    }
    return 0;
}

redisContext *kv_connect(const char *url, int timeout_ms, char *errstr, size_t errstr_size)
{
    kv_addr_t addr;
    if (kv_url_parse(url, &addr) < 0) {
        snprintf(errstr, errstr_size, "bad Redis URL (want redis://host:port/db)");
        return NULL;
    }
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(addr.host, addr.port, tv);
    if (!c || c->err) {
        snprintf(errstr, errstr_size, "redis %s:%d: %s", addr.host, addr.port,
                 c ? c->errstr : "cannot allocate context");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisEnableKeepAlive(c);
    redisReply *r = NULL;
    if (addr.password[0]) {
        r = redisCommand(c, "AUTH %s", addr.password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(errstr, errstr_size, "redis %s:%d: AUTH failed", addr.host, addr.port);
            goto fail;
        }
        freeReplyObject(r);
    }
    if (addr.db) {
        r = redisCommand(c, "SELECT %d", addr.db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(errstr, errstr_size, "redis %s:%d: SELECT %d failed", addr.host, addr.port,
                     addr.db);
            goto fail;
        }
        freeReplyObject(r);
    }
    return c;
fail:
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return NULL;
}

struct kv_pool {
    pthread_mutex_t lock;
    char *url;
    int timeout_ms;
    int max_idle;
    int nidle;
    redisContext **idle;
};

kv_pool_t *kv_pool_new(const char *url, int timeout_ms, int max_idle)
{
    kv_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->url = strdup(url);
    pool->idle = calloc((size_t)max_idle, sizeof(*pool->idle));
    if (!pool->url || !pool->idle) {
        free(pool->url);
        free(pool->idle);
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pool->timeout_ms = timeout_ms;
    pool->max_idle = max_idle;
    return pool;
}

void kv_pool_free(kv_pool_t *pool)
{
    if (!pool)
        return;
    for (int i = 0; i < pool->nidle; i++)
        redisFree(pool->idle[i]);
    pthread_mutex_destroy(&pool->lock);
    free(pool->idle);
    free(pool->url);
    free(pool);
}

redisContext *kv_pool_get(kv_pool_t *pool, char *errstr, size_t errstr_size)
{
    redisContext *c = NULL;
    pthread_mutex_lock(&pool->lock);
    if (pool->nidle > 0)
        c = pool->idle[--pool->nidle];
    pthread_mutex_unlock(&pool->lock);
    if (c)
        return c;
    return kv_connect(pool->url, pool->timeout_ms, errstr, errstr_size);
}

void kv_pool_put(kv_pool_t *pool, redisContext *ctx, int broken)
{
    if (!ctx)
        return;
    if (!broken && !ctx->err) {
        pthread_mutex_lock(&pool->lock);
        if (pool->nidle < pool->max_idle) {
            pool->idle[pool->nidle++] = ctx;
            ctx = NULL;
        }
        pthread_mutex_unlock(&pool->lock);
    }
    if (ctx)
        redisFree(ctx);
}

static redisReply *check_reply(kv_pool_t *pool, redisContext *c, redisReply *r, char *errstr,
                               size_t errstr_size)
{
    if (!r) {
        snprintf(errstr, errstr_size, "redis: %s", c->err ? c->errstr : "no reply");
        kv_pool_put(pool, c, 1);
        return NULL;
    }
    kv_pool_put(pool, c, 0);
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(errstr, errstr_size, "redis: %.*s", (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

redisReply *kv_pool_command(kv_pool_t *pool, char *errstr, size_t errstr_size, const char *fmt, ...)
{
    redisContext *c = kv_pool_get(pool, errstr, errstr_size);
    if (!c)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return check_reply(pool, c, r, errstr, errstr_size);
}

redisReply *kv_pool_commandargv(kv_pool_t *pool, char *errstr, size_t errstr_size, int argc,
                                const char **argv, const size_t *argvlen)
{
    redisContext *c = kv_pool_get(pool, errstr, errstr_size);
    if (!c)
        return NULL;
    redisReply *r = redisCommandArgv(c, argc, argv, argvlen);
    return check_reply(pool, c, r, errstr, errstr_size);
}
