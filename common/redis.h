/*
 * redis.h - Redis connections (hiredis 0.14): URL parsing, connect with timeouts, and a
 * small mutex-protected pool of blocking contexts for threads that share them.
 *
 * hiredis 0.14 has no per-command timeout API: kv_connect() sets one socket timeout
 * (redisSetTimeout) that bounds connect, every read and every write, so an unreachable
 * Redis costs at most timeout_ms per command, never a hang. A context whose command failed
 * (reply NULL or ctx->err set) is broken: give it back with kv_pool_put(pool, ctx, 1) or
 * redisFree() it.
 *
 * Thread safety: a redisContext belongs to one thread at a time. kv_pool_* are
 * thread-safe.
 */
#ifndef MCPQ_REDIS_H
#define MCPQ_REDIS_H

#include <hiredis/hiredis.h>
#include <stddef.h>

typedef struct kv_addr {
    char host[256];
    int port;
    int db;
    char password[256];
} kv_addr_t;

/* Parses redis://[[user]:password@]host[:port][/db]; 0 or MCPQ_EINVAL. */
int kv_url_parse(const char *url, kv_addr_t *addr);

/* A connected, authenticated context with db selected, or NULL with errstr filled. */
redisContext *kv_connect(const char *url, int timeout_ms, char *errstr, size_t errstr_size);

typedef struct kv_pool kv_pool_t;

kv_pool_t *kv_pool_new(const char *url, int timeout_ms, int max_idle);
void kv_pool_free(kv_pool_t *pool);
/* An idle context or a new connection; NULL (errstr filled) when Redis is unreachable. */
redisContext *kv_pool_get(kv_pool_t *pool, char *errstr, size_t errstr_size);
/* Returns ctx to the pool; broken != 0 (or ctx->err) frees it instead. ctx may be NULL. */
void kv_pool_put(kv_pool_t *pool, redisContext *ctx, int broken);

/*
 * Runs one command on a pooled connection: the reply (caller frees with freeReplyObject)
 * or NULL when Redis could not be reached or answered with an error reply
 * (errstr filled either way).
 */
redisReply *kv_pool_command(kv_pool_t *pool, char *errstr, size_t errstr_size, const char *fmt,
                            ...);
redisReply *kv_pool_commandargv(kv_pool_t *pool, char *errstr, size_t errstr_size, int argc,
                                const char **argv, const size_t *argvlen);

#endif
