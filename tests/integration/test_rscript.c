/*
 * Integration test of common/rscript.c against a real redis-server: a script runs by
 * EVALSHA, and after SCRIPT FLUSH (as after a Redis restart) the NOSCRIPT fallback loads it
 * again, on a pooled connection, on a blocking context and in a pipeline. With
 * FX_REDIS_ACL=1 it runs as the user of deploy/redis/mcpq.acl, which must allow EVALSHA and
 * SCRIPT LOAD (fx_stop fails the test on an ACL LOG entry).
 */
#include "check.h"
#include "fixture.h"
#include "kv.h"
#include "names.h"
#include "rscript.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

static fx_stack_t fx;
static redisContext *admin; /* the default user: SCRIPT FLUSH, SCRIPT EXISTS, setup */

static redisReply *admin_cmd(const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(admin, fmt, a, b);
    CHECK(r != NULL);
    return r;
}

static long long script_exists(const rscript_t *s)
{
    redisReply *r = admin_cmd("SCRIPT EXISTS %s", rscript_sha(s), NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    long long v = r->element[0]->integer;
    freeReplyObject(r);
    return v;
}

static void flush(void)
{
    freeReplyObject(admin_cmd("SCRIPT FLUSH", NULL, NULL));
}

/* idem_claim.lua: {0, id} the first time, then {1, id, <the result record>} where the record
 * is read from NAMES_KEY_RESULT .. id inside the script. */
static void check_claim(redisReply *r, long long want, const char *record)
{
    CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 2);
    CHECK_INT_EQ(r->element[0]->integer, want);
    CHECK_STR_EQ(r->element[1]->str, "job-1");
    if (record) {
        CHECK(r->elements == 3 && r->element[2]->type == REDIS_REPLY_STRING);
        CHECK_STR_EQ(r->element[2]->str, record);
    }
    freeReplyObject(r);
}

static void test_pool(kv_pool_t *kv)
{
    char err[256] = "";
    const rscript_t *s = rscript_get("idem_claim");
    CHECK(s != NULL);
    flush();
    CHECK_INT_EQ(script_exists(s), 0);
    const char *argv[] = {NAMES_KEY_IDEM "t:scope", "fp", "60", "job-1", "key:k"};
    check_claim(rscript_pool_run(kv, s, 0, 5, argv, NULL, err, sizeof(err)), 0, NULL);
    CHECK_INT_EQ(script_exists(s), 1);
    freeReplyObject(admin_cmd("SET " NAMES_KEY_RESULT "%s %s", "job-1", "{\"v\":1}"));
    /* Redis forgets every script (a restart, SCRIPT FLUSH): the next run loads it again. */
    flush();
    CHECK_INT_EQ(script_exists(s), 0);
    check_claim(rscript_pool_run(kv, s, 0, 5, argv, NULL, err, sizeof(err)), 1, "{\"v\":1}");
    CHECK_INT_EQ(script_exists(s), 1);
    TEST_PASS("pooled: EVALSHA, and after SCRIPT FLUSH loaded again and run");
}

static void test_blocking(kv_target_t *kvt)
{
    char err[256] = "";
    redisContext *c = kv_connect(kvt, 2000, err, sizeof(err));
    CHECK(c != NULL);
    const rscript_t *s = rscript_get("idem_claim");
    const char *argv[] = {NAMES_KEY_IDEM "t:scope", "fp", "60", "job-1", "key:k"};
    flush();
    check_claim(rscript_run(c, s, 0, 5, argv, NULL, err, sizeof(err)), 1, "{\"v\":1}");
    check_claim(rscript_run(c, s, 0, 5, argv, NULL, err, sizeof(err)), 1, "{\"v\":1}");
    /* A script error is an error, not a retry: other fingerprint -> {2}; a bad call -> NULL. */
    const char *other[] = {NAMES_KEY_IDEM "t:scope", "fp2", "60", "job-2", "key:k"};
    redisReply *r = rscript_run(c, s, 0, 5, other, NULL, err, sizeof(err));
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->integer == 2);
    freeReplyObject(r);
    CHECK(rscript_run(c, s, 0, 0, argv, NULL, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "redis: ") == err);

    /* A pipeline: its EVALSHA answers NOSCRIPT after a flush, rscript_run then loads it. */
    flush();
    CHECK(redisAppendCommand(c, "PING") == REDIS_OK);
    CHECK(rscript_append(c, s, 0, 5, argv) == REDIS_OK);
    void *p = NULL, *q = NULL;
    CHECK(redisGetReply(c, &p) == REDIS_OK && redisGetReply(c, &q) == REDIS_OK);
    CHECK(!rscript_noscript(p));
    CHECK(rscript_noscript(q));
    freeReplyObject(p);
    freeReplyObject(q);
    check_claim(rscript_run(c, s, 0, 5, argv, NULL, err, sizeof(err)), 1, "{\"v\":1}");
    CHECK_INT_EQ(script_exists(s), 1);
    redisFree(c);
    TEST_PASS("blocking context and pipeline: NOSCRIPT after SCRIPT FLUSH, loaded and run");
}

int main(void)
{
    char err[256];
    if (fx_start(&fx, 1) < 0)
        return 1;
    admin = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(admin != NULL && !admin->err);
    mcpq_settings_t set = {.redis_url = fx.redis_url};
    kv_target_t *kvt = kv_target_new(&set, err, sizeof(err));
    CHECK(kvt != NULL);
    kv_pool_t *kv = kv_pool_new(kvt, 2000, 2);
    test_pool(kv);
    test_blocking(kvt);
    kv_pool_free(kv);
    kv_target_free(kvt);
    redisFree(admin);
    fx_stop(&fx);
    return 0;
}
