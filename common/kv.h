/*
 * kv.h - Redis connections (hiredis 0.14): the target (URL, credentials, TLS, Sentinel),
 * connect with timeouts, and a small mutex-protected pool of blocking contexts for threads
 * that share them. TLS runs underneath hiredis (kvtls.h).
 *
 * hiredis 0.14 has no per-command timeout API: kv_connect() sets one socket timeout
 * (redisSetTimeout) that bounds connect, every read and every write, so an unreachable
 * Redis costs at most timeout_ms per command, never a hang. A context whose command failed
 * (reply NULL or ctx->err set) is broken: give it back with kv_pool_put(pool, ctx, 1) or
 * redisFree() it. A -READONLY reply (a failover happened under the connection) also breaks
 * it: kv_pool_* do that themselves, other callers ask kv_ctx_failover().
 *
 * Thread safety: a redisContext belongs to one thread at a time. kv_pool_* are
 * thread-safe.
 */
#ifndef MCPQ_REDIS_H
#define MCPQ_REDIS_H

#include "settings.h"
#include "names.h"

#include <hiredis/hiredis.h>
#include <stddef.h>

/* The hash tag every mcpq key starts with ("{mcpq}:task:<id>"...): one Redis Cluster slot
 * holds them all, so every script's keys share it (docs/redis.md, "Redis Cluster"). */
#define KV_KEY_TAG NAMES_KEY_TAG

/* One Redis URL, parsed (kv_url_parse). */
typedef struct kv_url {
    int tls;         /* rediss:// */
    int unix_socket; /* unix:// (path set, host empty) */
    char host[256];  /* without the brackets of an IPv6 literal */
    int port;
    char path[256];
    int db;
    char user[256]; /* percent-decoded; empty: AUTH with the password only */
    char password[256];
} kv_url_t;

/* Parses url (forms below) with libcurl's URL API; 0 or MCPQ_EINVAL with errstr saying why
 * (never echoing the password). */
int kv_url_parse(const char *url, kv_url_t *u, char *errstr, size_t errstr_size);

/* Where Redis is and how to log in: parsed once at start-up, then shared read-only. */
typedef struct kv_target kv_target_t;

/*
 * Parses MCPQ_REDIS_URL and the MCPQ_REDIS_* settings around it (password file, TLS files,
 * sentinels) into a target, loading the TLS context and reading the password file now, so a
 * bad value stops start-up with a message naming it. NULL with errstr filled.
 * URLs (parsed with libcurl's URL API; user and password percent-decoded):
 *   redis://[user[:password]@]host[:port][/db]   host may be an IPv6 literal: [::1]
 *   rediss://...                                  the same over TLS
 *   unix:///path/redis.sock[?db=N]
 */
kv_target_t *kv_target_new(const mcpq_settings_t *s, char *errstr, size_t errstr_size);
/* Only once no connection made from t is in use. NULL is ignored. */
void kv_target_free(kv_target_t *t);

/* "host:port" (or the socket path, or "sentinel master NAME") for logs; no credentials. */
const char *kv_target_describe(const kv_target_t *t);

/*
 * A connected, authenticated context with the db selected, or NULL with errstr filled.
 * With sentinels, the master is looked up first (each sentinel in turn) and checked with
 * ROLE, so a connection never lands on a replica. With MCPQ_REDIS_CLUSTER, the node the URL
 * names is asked which primary serves the slot of KV_KEY_TAG, and the connection goes there. The
 * context is blocking with every read and write bounded by timeout_ms.
 */
redisContext *kv_connect(kv_target_t *t, int timeout_ms, char *errstr, size_t errstr_size);

/*
 * 1 when r is the error a demoted master answers writes with (-READONLY). It then marks c
 * broken (c->err REDIS_ERR_OTHER, c->errstr saying why), so its holder drops it and
 * reconnects, and kv_connect() finds the new master; and it tells t, so idle pooled
 * connections made before are dropped. t may be NULL (kv_pool_put() then tells it when the
 * context comes back to a pool).
 */
int kv_ctx_failover(kv_target_t *t, redisContext *c, const redisReply *r);

/*
 * WAIT replicas timeout_ms on c: 0 when at least `replicas` replicas acknowledged every write
 * c made so far, MCPQ_EUNAVAIL when fewer did within timeout_ms, MCPQ_EIO when the connection
 * broke (c->err set). replicas <= 0: 0 at once. Keep timeout_ms below the context's socket
 * timeout (settings.c checks MCPQ_REDIS_WAIT_TIMEOUT_MS < MCPQ_REDIS_TIMEOUT_MS).
 */
int kv_wait(redisContext *c, int replicas, int timeout_ms);

/* Makes a context from kv_connect() non-blocking, for event loops that read it with
 * redisBufferRead/redisGetReply. 0 or MCPQ_EIO. */
int kv_set_nonblock(redisContext *c);

/*
 * One blocking context made on first use and again after it broke, no sooner than
 * KV_LAZY_RETRY_MS after a failed attempt: for a loop thread's few calls (the worker's agent
 * calls and questions). Caller-owned; zero it, then set kvt, timeout_ms and what (the log
 * lines' prefix). One thread.
 */
#define KV_LAZY_RETRY_MS 1000
typedef struct kv_lazy {
    kv_target_t *kvt;
    int timeout_ms;
    const char *what;
    redisContext *ctx;
    int64_t retry_at; /* monotonic ms */
} kv_lazy_t;
/* The context, connecting when there is none; NULL (logged) when Redis is unreachable. */
redisContext *kv_lazy_get(kv_lazy_t *l);
/* After a failed command: drops the context when hiredis marked it broken, or when why (a
 * reason of the caller's, e.g. an error reply) is given; logged. */
void kv_lazy_broken(kv_lazy_t *l, const char *why);
/* Closes the context. */
void kv_lazy_close(kv_lazy_t *l);

typedef struct kv_pool kv_pool_t;

/* A pool of blocking contexts to t (which must outlive it), each command bounded by
 * timeout_ms, keeping at most max_idle idle connections. NULL on ENOMEM. */
kv_pool_t *kv_pool_new(kv_target_t *t, int timeout_ms, int max_idle);
/* Closes the idle connections and frees the pool; every context got from it must have been
 * put back. NULL is a no-op. */
void kv_pool_free(kv_pool_t *pool);
/*
 * An idle context, or NULL (errstr filled) when Redis is unreachable. A pool that is not
 * kept warm connects when it has no idle context; a warm one (kv_pool_warm) never does: it
 * waits at most its wait_ms for a context to come back or be made by its keeper, and fails
 * at once while the keeper says Redis is down ("redis unavailable: <why>").
 */
redisContext *kv_pool_get(kv_pool_t *pool, char *errstr, size_t errstr_size);
/* Returns ctx to the pool; broken != 0 (or ctx->err) frees it instead. ctx may be NULL.
 * A warm pool whose context failed to reach Redis (not a failover's redirection) is down
 * from then on until its keeper's next check has Redis answer. */
void kv_pool_put(kv_pool_t *pool, redisContext *ctx, int broken);

/*
 * Keeps the pool warm so that no taker ever connects (docs/redis.md, "The connection pool"):
 * connects min_idle connections now (capped at max_idle), then starts a keeper thread that
 * PINGs Redis every KV_POOL_CHECK_MS (at once after a taker's connection failed), tops the
 * idle connections up to min_idle whenever a taker found none, and reconnects after errors,
 * through kv_connect (TLS, Sentinel, Cluster as it does). kv_pool_free stops the thread. Call
 * once, before the pool is shared. 0 or MCPQ_ENOMEM (no thread). Redis being down now is
 * not an error: the pool starts down and comes up when the keeper reaches Redis.
 */
#define KV_POOL_CHECK_MS 250
int kv_pool_warm(kv_pool_t *pool, int min_idle, int wait_ms);
/*
 * Queues one write whose reply nobody needs (argc binary-safe arguments, copied): a warm
 * pool's keeper sends what is queued as one pipeline, so the caller makes no round trip;
 * a pool not kept warm runs it at once. For best-effort writes only: the command is lost
 * when Redis is down (MCPQ_EUNAVAIL now, or logged by the keeper) or KV_POOL_SEND_MAX
 * commands wait already (MCPQ_EUNAVAIL). 0 when queued (or run). Thread-safe.
 */
#define KV_POOL_SEND_MAX 65536
int kv_pool_send(kv_pool_t *pool, int argc, const char **argv, const size_t *argvlen);
/*
 * Waits until every command kv_pool_send queued before this call has been sent and answered
 * (or dropped), at most wait_ms, so that a read made next sees what those writes wrote (the
 * cancel of a call whose request map is still queued: ingress/mcp/toolcall.c). 0, or
 * MCPQ_ETIMEDOUT. A pool not kept warm (its sends run at once) or NULL: 0 at once.
 */
int kv_pool_sync(kv_pool_t *pool, int wait_ms);
/* Counters since kv_pool_new: takes, the contexts kv_pool_get handed over (each one at least
 * one round trip its caller waited for; the keeper's own are not counted), and queued, the
 * commands kv_pool_send queued for the keeper. NULL pool: 0. Thread-safe. */
void kv_pool_stats(kv_pool_t *pool, unsigned long long *takes, unsigned long long *queued);
/* 1 while Redis answers as the pool sees it (a warm pool: its keeper's last check and the
 * takers' commands since; a pool not kept warm: always 1). Thread-safe. */
int kv_pool_up(kv_pool_t *pool);

/*
 * Runs one command on a pooled connection: the reply (caller frees with freeReplyObject)
 * or NULL when Redis could not be reached or answered with an error reply
 * (errstr filled either way). A command refused because the server no longer serves mcpq's
 * keys (MOVED, READONLY, ASK after a failover: it did not run) is sent once more on a fresh
 * connection to the server that does.
 */
redisReply *kv_pool_command(kv_pool_t *pool, char *errstr, size_t errstr_size, const char *fmt,
                            ...);
/* The same with the command as argc binary-safe arguments (redisCommandArgv). */
redisReply *kv_pool_commandargv(kv_pool_t *pool, char *errstr, size_t errstr_size, int argc,
                                const char **argv, const size_t *argvlen);

#endif
