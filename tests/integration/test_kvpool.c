/*
 * The warm Redis pool (common/kv.h, kv_pool_warm; docs/redis.md, "The connection pool")
 * against a real redis-server:
 *   - kv_pool_warm connects min_idle connections before anything is asked (CLIENT LIST);
 *   - takers beyond the idle ones are served by connections the keeper makes;
 *   - Redis stopped (SIGSTOP): the command running then fails, the next ones fail at once with
 *     "redis unavailable" and kv_pool_up says 0; after SIGCONT the pool comes up by itself;
 *   - kv_pool_send's writes reach Redis without the caller waiting for them, and after
 *     kv_pool_sync a read sees every write queued before it (a cancel right after its call);
 *   - a pool started while Redis is down is down, and comes up when Redis does.
 */
#include "check.h"
#include "fixture.h"
#include "kv.h"
#include "names.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fx_stack_t fx;

/* Connections redis-server holds now (CLIENT LIST), this probe's own excluded. */
static int clients(void)
{
    redisContext *c = redisConnect("127.0.0.1", fx.redis_port);
    redisReply *r = c && !c->err ? redisCommand(c, "CLIENT LIST") : NULL;
    int n = -1; /* the probe itself */
    for (const char *p = r && r->type == REDIS_REPLY_STRING ? r->str : NULL; p && *p;
         p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n++;
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);
    return n;
}

/* Polls kv_pool_up until it says want (at most 20 s); 1 when it did. */
static int wait_up(kv_pool_t *pool, int want)
{
    long long t0 = fx_now_ms();
    while (kv_pool_up(pool) != want && fx_now_ms() - t0 < 20000)
        fx_sleep_ms(20);
    return kv_pool_up(pool) == want;
}

static void test_warm(kv_pool_t *pool)
{
    long long t0 = fx_now_ms();
    while (clients() < 3 && fx_now_ms() - t0 < 10000)
        fx_sleep_ms(20);
    CHECK_INT_EQ(clients(), 3);
    char err[256];
    redisContext *held[5];
    for (int i = 0; i < 5; i++) {
        held[i] = kv_pool_get(pool, err, sizeof(err));
        if (!held[i])
            fprintf(stderr, "get %d: %s\n", i, err);
        CHECK(held[i] != NULL);
    }
    CHECK(clients() >= 5);
    for (int i = 0; i < 5; i++)
        kv_pool_put(pool, held[i], 0);
    TEST_PASS("a warm pool has its 3 idle connections before any request; 5 takers served by "
              "the keeper's connections");
}

static void test_frozen(kv_pool_t *pool)
{
    char err[256] = "";
    CHECK_INT_EQ(kill(fx.redis_pid, SIGSTOP), 0);
    redisReply *r = kv_pool_command(pool, err, sizeof(err), "PING");
    CHECK(r == NULL);
    CHECK(wait_up(pool, 0));
    r = kv_pool_command(pool, err, sizeof(err), "PING");
    CHECK(r == NULL);
    CHECK(strncmp(err, "redis unavailable", 17) == 0);
    if (strncmp(err, "redis unavailable", 17) != 0)
        fprintf(stderr, "while frozen: %s\n", err);
    const char *argv[] = {"SET", NAMES_KEY_RESULT "kvpool-lost", "1"};
    CHECK(kv_pool_send(pool, 3, argv, NULL) < 0);
    kill(fx.redis_pid, SIGCONT);
    CHECK(wait_up(pool, 1));
    r = kv_pool_command(pool, err, sizeof(err), "PING");
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    TEST_PASS("Redis stopped: the pool is down, commands fail at once with \"redis "
              "unavailable\", queued writes are refused; after SIGCONT it is up again");
}

static void test_send(kv_pool_t *pool)
{
    const char *argv[] = {"SET", NAMES_KEY_RESULT "kvpool-sent", "queued"};
    CHECK_INT_EQ(kv_pool_send(pool, 3, argv, NULL), 0);
    char err[256];
    redisReply *r = NULL;
    long long t0 = fx_now_ms();
    for (;;) {
        r = kv_pool_command(pool, err, sizeof(err), "GET %s", NAMES_KEY_RESULT "kvpool-sent");
        if ((r && r->type == REDIS_REPLY_STRING) || fx_now_ms() - t0 > 10000)
            break;
        if (r)
            freeReplyObject(r);
        fx_sleep_ms(10);
    }
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, "queued") == 0);
    if (r)
        freeReplyObject(r);
    TEST_PASS("kv_pool_send: the queued SET reaches Redis");
}

/* A write queued and read back at once, 300 times: after kv_pool_sync the read always sees it
 * (without the sync the GET usually overtakes the keeper). */
static void test_sync(kv_pool_t *pool)
{
    char err[256], val[32];
    int seen = 0;
    for (int i = 0; i < 300; i++) {
        snprintf(val, sizeof(val), "v%d", i);
        const char *argv[] = {"SET", NAMES_KEY_RESULT "kvpool-sync", val};
        CHECK_INT_EQ(kv_pool_send(pool, 3, argv, NULL), 0);
        CHECK_INT_EQ(kv_pool_sync(pool, 5000), 0);
        redisReply *r =
            kv_pool_command(pool, err, sizeof(err), "GET %s", NAMES_KEY_RESULT "kvpool-sync");
        seen += r && r->type == REDIS_REPLY_STRING && strcmp(r->str, val) == 0;
        if (r)
            freeReplyObject(r);
    }
    CHECK_INT_EQ(seen, 300);
    CHECK_INT_EQ(kv_pool_sync(NULL, 10), 0);
    TEST_PASS("kv_pool_sync: a read after it sees every write queued before it (300 of 300)");
}

/* A pool whose Redis is not there yet: down, then up once it answers. */
static void test_late_redis(kv_target_t *t)
{
    CHECK_INT_EQ(kill(fx.redis_pid, SIGSTOP), 0);
    kv_pool_t *pool = kv_pool_new(t, 300, 2);
    CHECK_INT_EQ(kv_pool_warm(pool, 1, 50), 0);
    CHECK(wait_up(pool, 0)); /* its connect may pass (the kernel accepts), its PING cannot */
    char err[256];
    CHECK(kv_pool_get(pool, err, sizeof(err)) == NULL);
    kill(fx.redis_pid, SIGCONT);
    CHECK(wait_up(pool, 1));
    redisContext *c = kv_pool_get(pool, err, sizeof(err));
    CHECK(c != NULL);
    kv_pool_put(pool, c, 0);
    kv_pool_free(pool);
    TEST_PASS("a warm pool started while Redis does not answer is down, and up once it does");
}

int main(void)
{
    if (fx_start(&fx, 1) < 0)
        return 1;
    mcpq_settings_t set = {.redis_url = fx.redis_url};
    char err[256];
    kv_target_t *t = kv_target_new(&set, err, sizeof(err));
    CHECK(t != NULL);
    kv_pool_t *pool = kv_pool_new(t, 500, 8);
    CHECK(pool != NULL);
    CHECK_INT_EQ(kv_pool_warm(pool, 3, 2000), 0);
    CHECK_INT_EQ(kv_pool_up(pool), 1);
    test_warm(pool);
    test_frozen(pool);
    test_send(pool);
    test_sync(pool);
    kv_pool_free(pool);
    test_late_redis(t);
    kv_target_free(t);
    fx_stop(&fx);
    return TEST_EXIT();
}
