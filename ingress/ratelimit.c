#include "ratelimit.h"

#include "log.h"
#include "util.h"

#include <math.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* After Redis failed, how long the local buckets serve before Redis is tried again. */
#define RL_REDIS_RETRY_MS 1000
#define RL_NBUCKETS 1024

/*
 * KEYS[1] the bucket; ARGV: rate (tokens/s), burst, tokens wanted. Refills by Redis's clock,
 * grants min(wanted, whole tokens) and answers {granted, ms until the next token when none
 * was granted}. An idle bucket expires once it would be full again (absent means full).
 */
static const char script[] =
    "local rate = tonumber(ARGV[1])\n"
    "local burst = tonumber(ARGV[2])\n"
    "local want = tonumber(ARGV[3])\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local b = redis.call('HMGET', KEYS[1], 't', 'ts')\n"
    "local tokens = tonumber(b[1])\n"
    "local ts = tonumber(b[2])\n"
    "if tokens == nil or ts == nil then tokens = burst; ts = now end\n"
    "if now > ts then tokens = tokens + (now - ts) * rate / 1000; ts = now end\n"
    "if tokens > burst then tokens = burst end\n"
    "local grant = math.floor(math.min(want, tokens))\n"
    "if grant < 0 then grant = 0 end\n"
    "tokens = tokens - grant\n"
    "redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', ts)\n"
    "redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)\n"
    "local wait = 0\n"
    "if grant == 0 then wait = math.max(1, math.ceil((1 - tokens) * 1000 / rate)) end\n"
    "return {grant, wait}\n";

typedef struct rl_entry {
    struct rl_entry *next;
    long long leased;      /* tokens drawn from Redis, not spent yet */
    int64_t deny_until_ms; /* Redis said the bucket is empty until then */
    double local_tokens;   /* the bucket used while Redis is unreachable */
    int64_t local_ms;      /* when local_tokens was last refilled; 0: never */
    char name[];
} rl_entry_t;

struct ing_rl {
    kv_pool_t *kv;
    long long lease_ms;
    char sha1[41];
    pthread_mutex_t lock;
    int64_t redis_retry_ms; /* Redis failed: local buckets only until then */
    int degraded;           /* logged that Redis is unreachable */
    rl_entry_t *table[RL_NBUCKETS];
};

ing_rl_t *ing_rl_new(kv_pool_t *kv, long long lease_ms)
{
    ing_rl_t *rl = calloc(1, sizeof(*rl));
    if (!rl)
        return NULL;
    rl->kv = kv;
    rl->lease_ms = lease_ms > 0 ? lease_ms : 1;
    unsigned char d[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)script, strlen(script), d);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        snprintf(rl->sha1 + 2 * i, 3, "%02x", d[i]);
    pthread_mutex_init(&rl->lock, NULL);
    return rl;
}

void ing_rl_free(ing_rl_t *rl)
{
    if (!rl)
        return;
    for (size_t i = 0; i < RL_NBUCKETS; i++) {
        rl_entry_t *e = rl->table[i];
        while (e) {
            rl_entry_t *next = e->next;
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&rl->lock);
    free(rl);
}

long long ing_rl_burst(const ing_rate_t *rate)
{
    if (rate->burst >= 1)
        return rate->burst;
    double b = ceil(2 * rate->per_s);
    return b < 1 ? 1 : b > 1e15 ? 1000000000000000LL : (long long)b;
}

/* The entry for name, created when absent; NULL when out of memory. Caller holds the lock. */
static rl_entry_t *entry(ing_rl_t *rl, const char *name)
{
    size_t h = 5381;
    for (const char *p = name; *p; p++)
        h = h * 33 + (unsigned char)*p;
    rl_entry_t **slot = &rl->table[h % RL_NBUCKETS];
    for (rl_entry_t *e = *slot; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return e;
    size_t len = strlen(name);
    rl_entry_t *e = calloc(1, sizeof(*e) + len + 1);
    if (!e)
        return NULL;
    memcpy(e->name, name, len + 1);
    e->next = *slot;
    *slot = e;
    return e;
}

/* The local bucket (Redis unreachable): 1 with a token spent, else 0 and *wait_ms. */
static int take_local(rl_entry_t *e, const ing_rate_t *rate, long long burst, int64_t now,
                      long long *wait_ms)
{
    if (e->local_ms == 0) {
        e->local_tokens = (double)burst;
    } else if (now > e->local_ms) {
        e->local_tokens += (double)(now - e->local_ms) * rate->per_s / 1000.0;
        if (e->local_tokens > (double)burst)
            e->local_tokens = (double)burst;
    }
    e->local_ms = now;
    if (e->local_tokens >= 1) {
        e->local_tokens -= 1;
        return 1;
    }
    *wait_ms = (long long)ceil((1 - e->local_tokens) * 1000.0 / rate->per_s);
    if (*wait_ms < 1)
        *wait_ms = 1;
    return 0;
}

/* Draws up to want tokens from the shared bucket: 0 with *granted and *wait_ms (when none
 * was granted), or -1 when Redis could not answer. */
static int draw(ing_rl_t *rl, const char *name, const ing_rate_t *rate, long long burst,
                long long want, long long *granted, long long *wait_ms)
{
    char key[320], per_s[64], b[32], w[32], err[256];
    snprintf(key, sizeof(key), "mcpq:rl:%s", name);
    snprintf(per_s, sizeof(per_s), "%.17g", rate->per_s);
    snprintf(b, sizeof(b), "%lld", burst);
    snprintf(w, sizeof(w), "%lld", want);
    redisReply *r = kv_pool_command(rl->kv, err, sizeof(err), "EVALSHA %s 1 %s %s %s %s", rl->sha1,
                                    key, per_s, b, w);
    if (!r && strstr(err, "NOSCRIPT"))
        r = kv_pool_command(rl->kv, err, sizeof(err), "EVAL %s 1 %s %s %s %s", script, key, per_s,
                            b, w);
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_INTEGER &&
             r->element[1]->type == REDIS_REPLY_INTEGER;
    if (ok) {
        *granted = r->element[0]->integer;
        *wait_ms = r->element[1]->integer;
    } else {
        log_event(LOG_DEBUG, "rate limits: bucket draw failed", "detail", r ? "bad reply" : err,
                  (char *)NULL);
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int ing_rl_take(ing_rl_t *rl, const char *name, const ing_rate_t *rate, long long *retry_after_ms)
{
    long long burst = ing_rl_burst(rate);
    int64_t now = util_mono_ms();
    pthread_mutex_lock(&rl->lock);
    rl_entry_t *e = entry(rl, name);
    if (!e) {
        pthread_mutex_unlock(&rl->lock);
        return 1; /* out of memory: do not refuse a request over the limiter's own fault */
    }
    if (e->leased > 0) {
        e->leased--;
        pthread_mutex_unlock(&rl->lock);
        return 1;
    }
    if (now < e->deny_until_ms) {
        *retry_after_ms = e->deny_until_ms - now;
        pthread_mutex_unlock(&rl->lock);
        return 0;
    }
    int use_redis = rl->kv && now >= rl->redis_retry_ms;
    pthread_mutex_unlock(&rl->lock);

    double lease = floor(rate->per_s * (double)rl->lease_ms / 1000.0);
    long long want = lease < 1 ? 1 : lease > 1e15 ? 1000000000000000LL : (long long)lease;
    if (want > burst / 4)
        want = burst / 4 > 0 ? burst / 4 : 1;
    long long granted = 0, wait_ms = 0;
    int rc = use_redis ? draw(rl, name, rate, burst, want, &granted, &wait_ms) : -1;

    pthread_mutex_lock(&rl->lock);
    int ok;
    now = util_mono_ms();
    if (rc < 0) {
        if (use_redis) {
            rl->redis_retry_ms = now + RL_REDIS_RETRY_MS;
            if (!rl->degraded)
                log_event(LOG_WARN,
                          "rate limits: Redis unreachable; limiting per replica until it is back",
                          (char *)NULL);
            rl->degraded = 1;
        }
        ok = take_local(e, rate, burst, now, &wait_ms);
    } else {
        if (rl->degraded)
            log_event(LOG_INFO, "rate limits: Redis reachable again; limits are fleet-wide",
                      (char *)NULL);
        rl->degraded = 0;
        e->local_ms = 0;
        ok = granted > 0;
        if (ok)
            e->leased += granted - 1;
        else
            e->deny_until_ms = now + wait_ms;
    }
    pthread_mutex_unlock(&rl->lock);
    if (!ok)
        *retry_after_ms = wait_ms;
    return ok;
}

int ing_rl_admit(ing_rl_t *rl, const ing_principal_t *who, long long default_per_s,
                 long long default_burst, long long *retry_after_ms)
{
    ing_rate_t rate = who->rate;
    if (rate.per_s < 0)
        rate = (ing_rate_t){.per_s = (double)default_per_s, .burst = default_burst};
    if (!rl || !(rate.per_s > 0) || !who->tenant || !who->id)
        return 1;
    char name[300];
    snprintf(name, sizeof(name), "%s:%c:%s", who->tenant->id, who->kind, who->id);
    return ing_rl_take(rl, name, &rate, retry_after_ms);
}
