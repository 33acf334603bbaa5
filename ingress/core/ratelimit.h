/*
 * ratelimit.h - per-API-key and per-app request rate limits (issue 4; config in the tenant's
 * `rate_limits`, docs/config-file.md; docs/api.md "Limits on what a client may send").
 *
 * Each API key and each app has a token bucket in Redis (`{mcpq}:rl:<tenant>:<k|a>:<id>`, a
 * hash {t: tokens, ts: ms}) that every ingress replica draws from, so the limit holds for
 * the fleet, not per replica. The bucket is refilled and drawn by one Lua script using
 * Redis's clock (replicas' clocks do not matter).
 *
 * So that a request does not cost a Redis round trip, a replica draws a lease of tokens at
 * a time (MCPQ_RATE_LIMIT_LEASE_MS worth of the rate, at least 1, at most a quarter of the
 * burst) and spends it locally; when the bucket is empty Redis says how long until the next
 * token and the replica refuses locally until then. The price is accuracy: each replica
 * may hold up to one lease unspent, so a key can briefly exceed its burst by
 * replicas x lease tokens. Leased tokens are not returned.
 *
 * When Redis cannot be reached the replica keeps limiting with a local bucket of the same
 * rate and burst (a limit per replica rather than per fleet) and logs that once; requests
 * are not refused because the store of the limits is down.
 *
 * Thread-safe. The request limiter creates buckets for authenticated keys and apps only, so
 * their number is bounded by the configured credentials. A limiter with max_entries (the one
 * counting failed authentications per client address, whose names a caller chooses) keeps
 * at most that many: when full it forgets buckets that are idle (full again, nothing
 * pending), at most once a second, and a name it cannot track is counted in Redis alone
 * (and not at all while Redis is down).
 */
#ifndef MCPQ_ING_RATELIMIT_H
#define MCPQ_ING_RATELIMIT_H

#include "auth.h"
#include "kv.h"
#include "registry.h"

typedef struct ing_ratelimit ing_ratelimit_t;

/* A limiter drawing from Redis through kv (NULL: local buckets only), its buckets the keys
 * prefix + name (NULL: "{mcpq}:rl:"). lease_ms: how much of the rate one replica leases at a
 * time. max_entries: the most buckets kept on this replica (0: no bound). */
ing_ratelimit_t *ing_ratelimit_new(kv_pool_t *kv, const char *prefix, long long lease_ms,
                                   size_t max_entries);
void ing_ratelimit_free(ing_ratelimit_t *rl);

/*
 * Spends one token of the bucket named `name` ("<tenant>:k:<key id>" or
 * "<tenant>:a:<app id>") limited to rate (per_s > 0; burst 0: twice per_s, at least 1).
 * Returns 1 when the request may go on, 0 when it is over its limit, with *retry_after_ms
 * set to when the next token is due (>= 1).
 */
int ing_ratelimit_take(ing_ratelimit_t *rl, const char *name, const ing_rate_t *rate,
                       long long *retry_after_ms);

/* 1 when this replica knows name's bucket is empty (Redis refused it a token, or its local
 * bucket is empty while Redis is down), with *retry_after_ms; 0 otherwise. Spends nothing,
 * creates nothing and never asks Redis, so it costs a lookup: the check before a request's
 * expensive work. */
int ing_ratelimit_blocked(ing_ratelimit_t *rl, const char *name, const ing_rate_t *rate,
                          long long *retry_after_ms);

/* ing_ratelimit_take for the caller who: its configured rate, else default_per_s and
 * default_burst (the MCPQ_RATE_LIMIT_* settings); a rate of 0 is no limit. */
int ing_ratelimit_admit(ing_ratelimit_t *rl, const ing_principal_t *who, long long default_per_s,
                        long long default_burst, long long *retry_after_ms);

/* The limiter's clock: milliseconds that never go back. ing_ratelimit_new uses util_mono_ms; a
 * test sets a clock of its own (now_ms NULL: back to util_mono_ms) before its first take, so
 * that what it asserts about refills and waits does not depend on how fast it runs. Call it
 * before the limiter is shared with other threads. */
typedef int64_t (*ing_ratelimit_clock_fn)(void *arg);
void ing_ratelimit_set_clock(ing_ratelimit_t *rl, ing_ratelimit_clock_fn now_ms, void *arg);

/* The bucket size rate gives (burst, or twice per_s, at least 1). */
long long ing_ratelimit_burst(const ing_rate_t *rate);

#endif
