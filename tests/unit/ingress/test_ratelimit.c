/* Tests ingress/ratelimit.c without Redis: the local bucket a replica falls back to (burst,
 * refill, Retry-After), the burst default, and what ing_rl_admit takes from the config and
 * the MCPQ_RATE_LIMIT_* defaults. The shared Redis bucket is tested by
 * tests/integration/test_ratelimit.c. */
#include "check.h"
#include "ratelimit.h"

#include <time.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(void)
{
    CHECK_INT_EQ(ing_rl_burst(&(ing_rate_t){.per_s = 10, .burst = 0}), 20);
    CHECK_INT_EQ(ing_rl_burst(&(ing_rate_t){.per_s = 0.2, .burst = 0}), 1);
    CHECK_INT_EQ(ing_rl_burst(&(ing_rate_t){.per_s = 10, .burst = 3}), 3);
    TEST_PASS("burst defaults to twice the rate, at least 1");

    ing_rl_t *rl = ing_rl_new(NULL, 50);
    CHECK(rl != NULL);
    ing_rate_t r = {.per_s = 20, .burst = 5};
    long long wait = 0;
    for (int i = 0; i < 5; i++)
        CHECK_INT_EQ(ing_rl_take(rl, "t:k:a", &r, &wait), 1);
    CHECK_INT_EQ(ing_rl_take(rl, "t:k:a", &r, &wait), 0);
    CHECK(wait >= 1 && wait <= 50); /* one token at 20/s: at most 50 ms away */
    TEST_PASS("a full bucket serves its burst, then refuses with the wait for one token");

    CHECK_INT_EQ(ing_rl_take(rl, "t:k:b", &r, &wait), 1);
    CHECK_INT_EQ(ing_rl_take(rl, "u:k:a", &r, &wait), 1);
    TEST_PASS("buckets are per name: another key, another tenant's key of the same id");

    sleep_ms(wait + 10);
    CHECK_INT_EQ(ing_rl_take(rl, "t:k:a", &r, &wait), 1);
    CHECK_INT_EQ(ing_rl_take(rl, "t:k:a", &r, &wait), 0);
    TEST_PASS("after the wait one token is back");

    /* ing_rl_admit: the caller's own rate, else the defaults; 0 is no limit */
    ing_tenant_t t = {.id = "t"};
    ing_principal_t who = {.tenant = &t, .kind = 'a', .id = "app", .rate = {.per_s = -1}};
    CHECK_INT_EQ(ing_rl_admit(rl, &who, 1, 1, &wait), 1);
    CHECK_INT_EQ(ing_rl_admit(rl, &who, 1, 1, &wait), 0);
    CHECK(wait > 900 && wait <= 1000);
    for (int i = 0; i < 100; i++)
        CHECK_INT_EQ(ing_rl_admit(rl, &who, 0, 0, &wait), 1);
    who.id = "other";
    who.rate = (ing_rate_t){.per_s = 0};
    for (int i = 0; i < 100; i++)
        CHECK_INT_EQ(ing_rl_admit(rl, &who, 1, 1, &wait), 1);
    who.rate = (ing_rate_t){.per_s = 0.5, .burst = 2};
    CHECK_INT_EQ(ing_rl_admit(rl, &who, 1000, 0, &wait), 1);
    CHECK_INT_EQ(ing_rl_admit(rl, &who, 1000, 0, &wait), 1);
    CHECK_INT_EQ(ing_rl_admit(rl, &who, 1000, 0, &wait), 0);
    CHECK(wait > 1900 && wait <= 2000);
    TEST_PASS("admit: a configured rate wins over the default; 0 means unlimited");
    ing_rl_free(rl);
    return 0;
}
