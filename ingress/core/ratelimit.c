#include "ratelimit.h"
#include "rscript.h"
#include "names.h"

#include "log.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* After Redis failed, how long the local buckets serve before Redis is tried again. */
#define RL_REDIS_RETRY_MS 1000
#define RL_NBUCKETS 1024

typedef struct rl_entry {
    struct rl_entry *next;
    long long leased;      /* tokens drawn from Redis, not spent yet */
    int64_t deny_until_ms; /* Redis said the bucket is empty until then */
    double local_tokens;   /* the bucket used while Redis is unreachable */
    int64_t local_ms;      /* when local_tokens was last refilled; 0: never */
    double per_s;          /* the rate and burst it was last taken with */
    long long burst;
    int busy; /* takes waiting on Redis for it */
    char name[];
} rl_entry_t;

struct ing_ratelimit {
    kv_pool_t *kv;
    char prefix[32];
    long long lease_ms;
    size_t max_entries; /* 0: no bound */
    size_t nentries;
    int64_t swept_ms; /* the last sweep of idle entries (a full table) */
    pthread_mutex_t lock;
    int64_t redis_retry_ms;        /* Redis failed: local buckets only until then */
    int degraded;                  /* logged that Redis is unreachable */
    ing_ratelimit_clock_fn now_ms; /* util_mono_ms unless a test set its own */
    void *clock_arg;
    rl_entry_t *table[RL_NBUCKETS];
};

static int64_t mono_clock(void *arg)
{
    (void)arg;
    return util_mono_ms();
}

ing_ratelimit_t *ing_ratelimit_new(kv_pool_t *kv, const char *prefix, long long lease_ms,
                                   size_t max_entries)
{
    ing_ratelimit_t *rl = calloc(1, sizeof(*rl));
    if (!rl)
        return NULL;
    rl->kv = kv;
    snprintf(rl->prefix, sizeof(rl->prefix), "%s", prefix ? prefix : NAMES_KEY_RATELIMIT);
    rl->lease_ms = lease_ms > 0 ? lease_ms : 1;
    rl->max_entries = max_entries;
    rl->now_ms = mono_clock;
    pthread_mutex_init(&rl->lock, NULL);
    return rl;
}

void ing_ratelimit_free(ing_ratelimit_t *rl)
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

void ing_ratelimit_set_clock(ing_ratelimit_t *rl, ing_ratelimit_clock_fn now_ms, void *arg)
{
    rl->now_ms = now_ms ? now_ms : mono_clock;
    rl->clock_arg = arg;
}

long long ing_ratelimit_burst(const ing_rate_t *rate)
{
    if (rate->burst >= 1)
        return rate->burst;
    double b = ceil(2 * rate->per_s);
    return b < 1 ? 1 : b > 1e15 ? 1000000000000000LL : (long long)b;
}

static rl_entry_t **slot_of(ing_ratelimit_t *rl, const char *name)
{
    size_t h = 5381;
    for (const char *p = name; *p; p++)
        h = h * 33 + (unsigned char)*p;
    return &rl->table[h % RL_NBUCKETS];
}

/* The entry for name, or NULL. Caller holds the lock. */
static rl_entry_t *find(ing_ratelimit_t *rl, const char *name)
{
    for (rl_entry_t *e = *slot_of(rl, name); e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

/* 1 when forgetting e changes nothing: no lease, no refusal pending, and its local bucket
 * (if it has one) full again. */
static int idle(const rl_entry_t *e, int64_t now)
{
    double local = e->local_tokens + (double)(now - e->local_ms) * e->per_s / 1000.0;
    return e->busy == 0 && e->leased == 0 && now >= e->deny_until_ms &&
           (e->local_ms == 0 || local >= (double)e->burst);
}

/* Frees the idle entries (at most once a second). Caller holds the lock. */
static void sweep(ing_ratelimit_t *rl, int64_t now)
{
    if (now - rl->swept_ms < 1000 && rl->swept_ms)
        return;
    rl->swept_ms = now;
    for (size_t i = 0; i < RL_NBUCKETS; i++) {
        for (rl_entry_t **pe = &rl->table[i]; *pe;) {
            rl_entry_t *e = *pe;
            if (idle(e, now)) {
                *pe = e->next;
                free(e);
                rl->nentries--;
            } else {
                pe = &e->next;
            }
        }
    }
}

/* The entry for name, created when absent; NULL when out of memory or when the table is at
 * its bound with nothing idle to forget. Caller holds the lock. */
static rl_entry_t *entry(ing_ratelimit_t *rl, const char *name, int64_t now)
{
    rl_entry_t *e = find(rl, name);
    if (e)
        return e;
    if (rl->max_entries && rl->nentries >= rl->max_entries)
        sweep(rl, now);
    if (rl->max_entries && rl->nentries >= rl->max_entries)
        return NULL;
    size_t len = strlen(name);
    rl_entry_t **slot = slot_of(rl, name);
    e = calloc(1, sizeof(*e) + len + 1);
    if (!e)
        return NULL;
    memcpy(e->name, name, len + 1);
    e->next = *slot;
    *slot = e;
    rl->nentries++;
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
static int draw(ing_ratelimit_t *rl, const char *name, const ing_rate_t *rate, long long burst,
                long long want, long long *granted, long long *wait_ms)
{
    char key[360], per_s[64], b[32], w[32], err[256];
    snprintf(key, sizeof(key), "%s%s", rl->prefix, name);
    snprintf(per_s, sizeof(per_s), "%.17g", rate->per_s);
    snprintf(b, sizeof(b), "%lld", burst);
    snprintf(w, sizeof(w), "%lld", want);
    const char *argv[] = {key, per_s, b, w};
    redisReply *r =
        rscript_pool_run(rl->kv, rscript_get("ratelimit_take"), 1, 4, argv, NULL, err, sizeof(err));
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

int ing_ratelimit_blocked(ing_ratelimit_t *rl, const char *name, const ing_rate_t *rate,
                          long long *retry_after_ms)
{
    if (!rl || !name)
        return 0;
    int64_t now = rl->now_ms(rl->clock_arg);
    int blocked = 0;
    pthread_mutex_lock(&rl->lock);
    const rl_entry_t *e = find(rl, name);
    if (e && now < e->deny_until_ms) {
        blocked = 1;
        *retry_after_ms = e->deny_until_ms - now;
    } else if (e && e->local_ms && e->leased == 0) {
        double t = e->local_tokens + (double)(now - e->local_ms) * rate->per_s / 1000.0;
        if (t < 1) {
            blocked = 1;
            *retry_after_ms = (long long)ceil((1 - t) * 1000.0 / rate->per_s);
            if (*retry_after_ms < 1)
                *retry_after_ms = 1;
        }
    }
    pthread_mutex_unlock(&rl->lock);
    return blocked;
}

/* ing_ratelimit_take without a local entry (the table is full): the shared bucket alone, and no
 * limit while Redis cannot answer. */
static int take_shared(ing_ratelimit_t *rl, const char *name, const ing_rate_t *rate,
                       long long burst, long long *retry_after_ms)
{
    long long granted = 0, wait_ms = 0;
    if (!rl->kv || draw(rl, name, rate, burst, 1, &granted, &wait_ms) < 0 || granted > 0)
        return 1;
    *retry_after_ms = wait_ms;
    return 0;
}

int ing_ratelimit_take(ing_ratelimit_t *rl, const char *name, const ing_rate_t *rate,
                       long long *retry_after_ms)
{
    long long burst = ing_ratelimit_burst(rate);
    int64_t now = rl->now_ms(rl->clock_arg);
    pthread_mutex_lock(&rl->lock);
    rl_entry_t *e = entry(rl, name, now);
    if (!e) {
        pthread_mutex_unlock(&rl->lock);
        /* Out of memory or a full table: never refuse over the limiter's own fault. */
        return take_shared(rl, name, rate, burst, retry_after_ms);
    }
    e->per_s = rate->per_s;
    e->burst = burst;
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
    e->busy++; /* not swept while the lock is let go */
    pthread_mutex_unlock(&rl->lock);

    double lease = floor(rate->per_s * (double)rl->lease_ms / 1000.0);
    long long want = lease < 1 ? 1 : lease > 1e15 ? 1000000000000000LL : (long long)lease;
    if (want > burst / 4)
        want = burst / 4 > 0 ? burst / 4 : 1;
    long long granted = 0, wait_ms = 0;
    int rc = use_redis ? draw(rl, name, rate, burst, want, &granted, &wait_ms) : -1;

    pthread_mutex_lock(&rl->lock);
    int ok;
    e->busy--;
    now = rl->now_ms(rl->clock_arg);
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

int ing_ratelimit_admit(ing_ratelimit_t *rl, const ing_principal_t *who, long long default_per_s,
                        long long default_burst, long long *retry_after_ms)
{
    ing_rate_t rate = who->rate;
    if (rate.per_s < 0)
        rate = (ing_rate_t){.per_s = (double)default_per_s, .burst = default_burst};
    if (!rl || !(rate.per_s > 0) || !who->tenant || !who->id)
        return 1;
    char name[300];
    snprintf(name, sizeof(name), "%s:%c:%s", who->tenant->id, who->kind, who->id);
    return ing_ratelimit_take(rl, name, &rate, retry_after_ms);
}
