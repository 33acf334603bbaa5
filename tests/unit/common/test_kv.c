/* Unit tests of common/kv.c without a server: the Redis URLs users write
 * (docs/production.md, "Redis"), and the settings around them that must stop start-up. */
#include "check.h"
#include "err.h"
#include "kv.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void test_urls(void)
{
    kv_url_t u;
    char err[256];
    CHECK_INT_EQ(kv_url_parse("redis://127.0.0.1:6379/0", &u, err, sizeof(err)), 0);
    CHECK_STR_EQ(u.host, "127.0.0.1");
    CHECK_INT_EQ(u.port, 6379);
    CHECK_INT_EQ(u.db, 0);
    CHECK_INT_EQ(u.tls, 0);
    CHECK_STR_EQ(u.user, "");
    CHECK_STR_EQ(u.password, "");

    CHECK_INT_EQ(kv_url_parse("redis://cache.internal", &u, err, sizeof(err)), 0);
    CHECK_STR_EQ(u.host, "cache.internal");
    CHECK_INT_EQ(u.port, 6379);

    /* A password alone (the default user), as before ACLs. */
    CHECK_INT_EQ(kv_url_parse("redis://:s3cret@h:7000/5", &u, err, sizeof(err)), 0);
    CHECK_STR_EQ(u.user, "");
    CHECK_STR_EQ(u.password, "s3cret");
    CHECK_INT_EQ(u.port, 7000);
    CHECK_INT_EQ(u.db, 5);

    /* An ACL user with a percent-encoded password; TLS; an IPv6 literal. */
    CHECK_INT_EQ(kv_url_parse("rediss://mcpq:p%40ss%3Aw%2Frd@[::1]:6380/2", &u, err, sizeof(err)),
                 0);
    CHECK_INT_EQ(u.tls, 1);
    CHECK_STR_EQ(u.user, "mcpq");
    CHECK_STR_EQ(u.password, "p@ss:w/rd");
    CHECK_STR_EQ(u.host, "::1");
    CHECK_INT_EQ(u.port, 6380);
    CHECK_INT_EQ(u.db, 2);

    CHECK_INT_EQ(kv_url_parse("unix:///var/run/redis/redis.sock?db=3", &u, err, sizeof(err)), 0);
    CHECK_INT_EQ(u.unix_socket, 1);
    CHECK_STR_EQ(u.path, "/var/run/redis/redis.sock");
    CHECK_INT_EQ(u.db, 3);
    CHECK_INT_EQ(kv_url_parse("unix:///tmp/r.sock", &u, err, sizeof(err)), 0);
    CHECK_STR_EQ(u.path, "/tmp/r.sock");
    CHECK_INT_EQ(u.db, 0);
    TEST_PASS("redis://, rediss://, unix://, ACL user, percent-encoding, [::1], db");

    const char *bad[] = {"",
                         "http://h:6379",
                         "redis://",
                         "redis://h:0",
                         "redis://h:99999",
                         "redis://h:6379/x",
                         "redis://h:6379/-1",
                         "redis://h:6379/0?x=1",
                         "redis://a b:6379",
                         "redis://:p%00w@h",
                         "unix://",
                         "unix:///",
                         "unix:///tmp/r.sock?db=x",
                         "unix:///tmp/r.sock?foo=1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = 0;
        if (kv_url_parse(bad[i], &u, err, sizeof(err)) != MCPQ_EINVAL || !err[0]) {
            fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
            CHECK(0);
        }
        CHECK(strstr(err, "p%00w") == NULL); /* never echoes a password */
    }
    TEST_PASS("malformed URLs are refused with a reason");
}

static void expect_refused(const mcpq_settings_t *s, const char *msg)
{
    char err[512] = "";
    kv_target_t *t = kv_target_new(s, err, sizeof(err));
    if (t || !strstr(err, msg)) {
        fprintf(stderr, "wanted \"%s\", got %s \"%s\"\n", msg, t ? "a target" : "error", err);
        CHECK(0);
    }
}

static void test_targets(void)
{
    char err[256], pwfile[] = "/tmp/mcpq-test-redis-pw-XXXXXX";
    int fd = mkstemp(pwfile);
    CHECK(fd >= 0);
    CHECK(write(fd, "from-file\n", 10) == 10);
    close(fd);

    mcpq_settings_t s = {.redis_url = "redis://h:1/0", .redis_password_file = pwfile};
    kv_target_t *t = kv_target_new(&s, err, sizeof(err));
    CHECK(t != NULL);
    CHECK_STR_EQ(kv_target_describe(t), "h:1");
    kv_target_free(t);

    mcpq_settings_t v6 = {.redis_url = "redis://[::1]:7/0"};
    t = kv_target_new(&v6, err, sizeof(err));
    CHECK(t != NULL);
    CHECK_STR_EQ(kv_target_describe(t), "[::1]:7");
    kv_target_free(t);

    mcpq_settings_t sen = {.redis_url = "redis://:pw@mymaster/0",
                           .redis_sentinels = "127.0.0.1:26379,[::1]:26380,s3"};
    t = kv_target_new(&sen, err, sizeof(err));
    CHECK(t != NULL);
    CHECK_STR_EQ(kv_target_describe(t), "sentinel master mymaster");
    kv_target_free(t);
    TEST_PASS("password file, IPv6 and sentinel targets");

    mcpq_settings_t both = {.redis_url = "redis://:pw@h/0", .redis_password_file = pwfile};
    expect_refused(&both, "a password is set more than once (MCPQ_REDIS_URL, "
                          "MCPQ_REDIS_PASSWORD_FILE)");
    mcpq_settings_t env_file = {
        .redis_url = "redis://h/0", .redis_password = "x", .redis_password_file = pwfile};
    expect_refused(&env_file, "(MCPQ_REDIS_PASSWORD, MCPQ_REDIS_PASSWORD_FILE)");
    mcpq_settings_t missing = {.redis_url = "redis://h/0",
                               .redis_password_file = "/nonexistent/pw"};
    expect_refused(&missing, "MCPQ_REDIS_PASSWORD_FILE: cannot open /nonexistent/pw");
    mcpq_settings_t tls_plain = {.redis_url = "redis://h/0", .redis_tls_ca_file = "/x"};
    expect_refused(&tls_plain, "MCPQ_REDIS_URL is not rediss://");
    mcpq_settings_t no_ca = {.redis_url = "rediss://h/0", .redis_tls_ca_file = "/nonexistent"};
    expect_refused(&no_ca, "cannot load MCPQ_REDIS_TLS_CA_FILE");
    mcpq_settings_t half = {.redis_url = "rediss://h/0", .redis_tls_cert_file = pwfile};
    expect_refused(&half, "MCPQ_REDIS_TLS_CERT_FILE and MCPQ_REDIS_TLS_KEY_FILE go together");
    mcpq_settings_t master = {.redis_url = "redis://h/0", .redis_master = "m"};
    expect_refused(&master, "MCPQ_REDIS_MASTER needs MCPQ_REDIS_SENTINELS");
    mcpq_settings_t badsen = {.redis_url = "redis://m/0", .redis_sentinels = "a:1,,b:2"};
    expect_refused(&badsen, "MCPQ_REDIS_SENTINELS");
    mcpq_settings_t sen_unix = {.redis_url = "unix:///tmp/s", .redis_sentinels = "a:1"};
    expect_refused(&sen_unix, "MCPQ_REDIS_SENTINELS needs a redis://");
    mcpq_settings_t cl_db = {.redis_url = "redis://h/1", .redis_cluster = 1};
    expect_refused(&cl_db, "MCPQ_REDIS_CLUSTER: needs database 0");
    mcpq_settings_t cl_sen = {
        .redis_url = "redis://m/0", .redis_cluster = 1, .redis_sentinels = "a:1"};
    expect_refused(&cl_sen, "MCPQ_REDIS_CLUSTER: not together with MCPQ_REDIS_SENTINELS");
    mcpq_settings_t badurl = {.redis_url = "redis://h:70000"};
    expect_refused(&badurl, "MCPQ_REDIS_URL: bad Redis URL");
    unlink(pwfile);
    TEST_PASS("settings that cannot work stop start-up with a message naming them");
}

/* The replies that send a connection elsewhere break it; other errors do not. */
static void test_failover_replies(void)
{
    char err[256];
    mcpq_settings_t s = {.redis_url = "redis://h/0"};
    kv_target_t *t = kv_target_new(&s, err, sizeof(err));
    CHECK(t != NULL);
    const char *moved[] = {"READONLY You can't write against a read only replica.",
                           "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381",
                           "UNBLOCKED force unblock from blocking operation, instance state "
                           "changed (master -> replica?)"};
    const char *other[] = {"ERR wrong number of arguments", "NOPERM this user has no permissions",
                           "MOVEDX", "READONLY"};
    for (size_t i = 0; i < 4; i++) {
        redisContext c = {0};
        redisReply r = {
            .type = REDIS_REPLY_ERROR, .str = (char *)moved[i], .len = strlen(moved[i])};
        CHECK_INT_EQ(kv_ctx_failover(t, &c, &r), 1);
        CHECK(c.err != 0);
        redisContext d = {0};
        redisReply o = {
            .type = REDIS_REPLY_ERROR, .str = (char *)other[i], .len = strlen(other[i])};
        CHECK_INT_EQ(kv_ctx_failover(t, &d, &o), 0);
        CHECK_INT_EQ(d.err, 0);
    }
    CHECK_INT_EQ(kv_ctx_failover(t, NULL, NULL), 0);
    kv_target_free(t);
    TEST_PASS("-READONLY, -MOVED, -ASK and -UNBLOCKED break the connection; other errors do not");
}

/* A target whose server does not exist fails within its timeout with the address. */
static void test_unreachable(void)
{
    char err[256];
    mcpq_settings_t s = {.redis_url = "redis://127.0.0.1:1/0"};
    kv_target_t *t = kv_target_new(&s, err, sizeof(err));
    CHECK(t != NULL);
    redisContext *c = kv_connect(t, 500, err, sizeof(err));
    CHECK(c == NULL);
    CHECK_CONTAINS(err, "127.0.0.1:1");
    kv_target_free(t);

    mcpq_settings_t tls = {.redis_url = "rediss://127.0.0.1:1/0"};
    t = kv_target_new(&tls, err, sizeof(err));
    CHECK(t != NULL);
    c = kv_connect(t, 500, err, sizeof(err));
    CHECK(c == NULL);
    CHECK_CONTAINS(err, "127.0.0.1:1");
    kv_target_free(t);
    TEST_PASS("an unreachable server: NULL with its address in the error");
}

int main(void)
{
    test_urls();
    test_targets();
    test_failover_replies();
    test_unreachable();
    return 0;
}
