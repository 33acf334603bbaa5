/* Tests ingress/core/ratelimit.c without Redis: the local bucket a replica falls back to (burst,
 * refill, Retry-After), the burst default, what ing_ratelimit_admit takes from the config and the
 * MCPQ_RATE_LIMIT_* defaults, ing_ratelimit_blocked (the check before a credential is looked at)
 * and the bound on buckets of the failed-authentication limiter. The shared Redis bucket is
 * tested by tests/integration/test_ratelimit.c. Every limiter here runs on a fake clock
 * (ing_ratelimit_set_clock) that moves only when the test says, so the waits and refills it
 * asserts hold however slowly the test runs. */
#include "check.h"
#include "names.h"
#include "ratelimit.h"

/* The fake clock: starts at an arbitrary 10^6 ms, moved by advance(). */
static int64_t fake_ms = 1000000;

static int64_t fake_clock(void *arg)
{
    (void)arg;
    return fake_ms;
}

static void advance(long long ms)
{
    fake_ms += ms;
}

static ing_ratelimit_t *limiter(const char *prefix, long long lease_ms, size_t max_entries)
{
    ing_ratelimit_t *rl = ing_ratelimit_new(NULL, prefix, lease_ms, max_entries);
    CHECK(rl != NULL);
    ing_ratelimit_set_clock(rl, fake_clock, NULL);
    return rl;
}

int main(void)
{
    CHECK_INT_EQ(ing_ratelimit_burst(&(ing_rate_t){.per_s = 10, .burst = 0}), 20);
    CHECK_INT_EQ(ing_ratelimit_burst(&(ing_rate_t){.per_s = 0.2, .burst = 0}), 1);
    CHECK_INT_EQ(ing_ratelimit_burst(&(ing_rate_t){.per_s = 10, .burst = 3}), 3);
    TEST_PASS("burst defaults to twice the rate, at least 1");

    ing_ratelimit_t *rl = limiter(NULL, 50, 0);
    ing_rate_t r = {.per_s = 20, .burst = 5};
    long long wait = 0;
    for (int i = 0; i < 5; i++)
        CHECK_INT_EQ(ing_ratelimit_take(rl, "t:k:a", &r, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_take(rl, "t:k:a", &r, &wait), 0);
    CHECK_INT_EQ(wait, 50); /* one token at 20/s */
    TEST_PASS("a full bucket serves its burst, then refuses with the wait for one token");

    CHECK_INT_EQ(ing_ratelimit_take(rl, "t:k:b", &r, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_take(rl, "u:k:a", &r, &wait), 1);
    TEST_PASS("buckets are per name: another key, another tenant's key of the same id");

    advance(wait - 10); /* not yet: still about 10 ms to wait */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "t:k:a", &r, &wait), 0);
    CHECK(wait >= 10 && wait <= 11);
    advance(wait);
    CHECK_INT_EQ(ing_ratelimit_take(rl, "t:k:a", &r, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_take(rl, "t:k:a", &r, &wait), 0);
    TEST_PASS("after the wait one token is back");

    /* ing_ratelimit_admit: the caller's own rate, else the defaults; 0 is no limit */
    ing_tenant_t t = {.id = "t"};
    ing_principal_t who = {.tenant = &t, .kind = 'a', .id = "app", .rate = {.per_s = -1}};
    CHECK_INT_EQ(ing_ratelimit_admit(rl, &who, 1, 1, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_admit(rl, &who, 1, 1, &wait), 0);
    CHECK_INT_EQ(wait, 1000);
    for (int i = 0; i < 100; i++)
        CHECK_INT_EQ(ing_ratelimit_admit(rl, &who, 0, 0, &wait), 1);
    who.id = "other";
    who.rate = (ing_rate_t){.per_s = 0};
    for (int i = 0; i < 100; i++)
        CHECK_INT_EQ(ing_ratelimit_admit(rl, &who, 1, 1, &wait), 1);
    who.rate = (ing_rate_t){.per_s = 0.5, .burst = 2};
    CHECK_INT_EQ(ing_ratelimit_admit(rl, &who, 1000, 0, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_admit(rl, &who, 1000, 0, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_admit(rl, &who, 1000, 0, &wait), 0);
    CHECK_INT_EQ(wait, 2000);
    TEST_PASS("admit: a configured rate wins over the default; 0 means unlimited");
    ing_ratelimit_free(rl);

    /* ing_ratelimit_blocked: a lookup that spends nothing and creates nothing. */
    rl = limiter(NAMES_KEY_AUTHFAIL, 1, 0);
    ing_rate_t f = {.per_s = 20.0 / 60.0, .burst = 3}; /* 3 failures, then one per 3 s */
    CHECK_INT_EQ(ing_ratelimit_blocked(rl, "a:192.0.2.1", &f, &wait), 0);
    for (int i = 0; i < 3; i++) {
        CHECK_INT_EQ(ing_ratelimit_blocked(rl, "a:192.0.2.1", &f, &wait), 0);
        CHECK_INT_EQ(ing_ratelimit_take(rl, "a:192.0.2.1", &f, &wait), 1);
    }
    CHECK_INT_EQ(ing_ratelimit_blocked(rl, "a:192.0.2.1", &f, &wait), 1);
    CHECK_INT_EQ(wait, 3000);
    CHECK_INT_EQ(ing_ratelimit_blocked(rl, "a:192.0.2.1", &f, &wait), 1); /* still: nothing spent */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "a:192.0.2.1", &f, &wait), 0);
    CHECK_INT_EQ(ing_ratelimit_blocked(rl, "a:192.0.2.2", &f, &wait), 0);
    CHECK_INT_EQ(ing_ratelimit_blocked(NULL, "a:192.0.2.1", &f, &wait), 0);
    ing_ratelimit_free(rl);
    TEST_PASS("blocked: true once the bucket is empty, without spending or creating buckets");

    /* A bounded limiter: a full table forgets idle buckets (at most once a second), and a
     * name it cannot track is not limited (no Redis here). */
    rl = limiter(NAMES_KEY_AUTHFAIL, 1, 2);
    ing_rate_t fast = {.per_s = 10, .burst = 1}; /* full again 100 ms after a take */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "a", &fast, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_take(rl, "b", &fast, &wait), 1);
    CHECK_INT_EQ(ing_ratelimit_take(rl, "a", &fast, &wait), 0); /* tracked: empty */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "c", &fast, &wait), 1); /* full, nothing idle: untracked */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "c", &fast, &wait), 1);
    advance(999); /* a and b full again, but not a second since the last sweep */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "d", &fast, &wait), 1); /* still untracked */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "d", &fast, &wait), 1);
    advance(1);                                                 /* a second since the last sweep */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "c", &fast, &wait), 1); /* a and b forgotten, c tracked */
    CHECK_INT_EQ(ing_ratelimit_take(rl, "c", &fast, &wait), 0);
    CHECK_INT_EQ(ing_ratelimit_blocked(rl, "c", &fast, &wait), 1);
    ing_ratelimit_free(rl);
    TEST_PASS("a bounded limiter keeps at most max_entries buckets, forgetting idle ones");
    return 0;
}
