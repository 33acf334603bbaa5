/*
 * Integration test of per-API-key and per-app rate limits (issue 4, docs/api.md "Limits on what
 * a client may send"): two mcpq-ingress replicas share one real redis-server, and
 *   - a key limited by its tenant's rate_limits.api_key (2/s, burst 4) gets 4 answers at
 *     replica 0, then 429 with Retry-After and -32029 at replica 1: the bucket is in Redis,
 *     not in one replica;
 *   - after the time the 429 names, the key is served once more (one token at 2/s);
 *   - another key of the same tenant has its own bucket; a key whose own rate_limit is 0 is
 *     not limited;
 *   - a tenant with no rate_limits gets MCPQ_RATE_LIMIT_PER_S / MCPQ_RATE_LIMIT_BURST;
 *   - an app (HMAC signing) is limited by its own rate_limit;
 *   - failed authentications (MCPQ_AUTH_FAIL_PER_MIN=4, MCPQ_AUTH_FAIL_ID_PER_MIN=6, the
 *     replicas trusting 127.0.0.1 as a proxy so X-Forwarded-For names the client): the 5th
 *     failure from one address is 429 with Retry-After, counted across both replicas; then
 *     even a right key from that address is 429, other addresses are not affected and
 *     successful requests are never counted; wrong signatures for one app from many
 *     addresses make that app 429; a wrong admin token counts like a wrong key;
 *   - with Redis stopped, limits still hold per replica and answers come at once, the
 *     failure limits too.
 */
#include "check.h"
#include "fixture.h"
#include "sig.h"
#include "util.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define APP "rl-app"
#define SECRET "rl-app-secret-5f0c-0123456789abcdef"
#define ADMIN_TOKEN "rl-admin-token-0123456789"

static fx_stack_t fx;
static int ports[2];
static const char *list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";

/* POSTs tools/list to replica i at path with key, as client (X-Forwarded-For; NULL: none). */
static void post_key_at(int i, const char *path, const char *key, const char *client, fx_reply_t *r)
{
    char url[160], h[160], xff[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", ports[i], path);
    snprintf(h, sizeof(h), "Authorization: Bearer %s", key);
    snprintf(xff, sizeof(xff), "X-Forwarded-For: %s", client ? client : "");
    const char *hdrs[] = {h, client ? xff : NULL, NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, list, r), 0);
}

static void post_key(int i, const char *key, fx_reply_t *r)
{
    post_key_at(i, "/mcp", key, NULL, r);
}

/* POSTs tools/list to replica i signed as APP with secret, as client (NULL: none). */
static void post_app_as(int i, const char *secret, const char *client, fx_reply_t *r)
{
    char url[128], h[4][200], fwd[160];
    fx_sign_headers(APP, secret, "/mcp", list, h);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ports[i]);
    snprintf(fwd, sizeof(fwd), "X-Forwarded-For: %s", client ? client : "");
    const char *hdrs[] = {h[0], h[1], h[2], h[3], client ? fwd : NULL, NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, list, r), 0);
}

static void post_app(int i, fx_reply_t *r)
{
    post_app_as(i, SECRET, NULL, r);
}

/* A 429 of the failure limits: Retry-After (at most the 15 s one failure of 4 a minute takes
 * to come back), -32029 (JSON-RPC routes) and retryAfterMs. */
static void check_failures_limited(const fx_reply_t *r)
{
    CHECK_INT_EQ(r->status, 429);
    CHECK_CONTAINS(r->body, "too many failed authentications");
    CHECK(r->retry_after[0] != '\0');
    long long s = atoll(r->retry_after);
    CHECK(s >= 1 && s <= 15);
    CHECK(strstr(r->body, "\"retryAfterMs\":") != NULL);
}

/* Failed authentications, per client address and per app id, for the fleet. */
static void check_auth_failures(void)
{
    fx_reply_t r;
    const char *a = "198.51.100.1";
    for (int i = 0; i < 4; i++) {
        post_key_at(i % 2, "/mcp", "rl-wrong", a, &r);
        CHECK_INT_EQ(r.status, 401);
    }
    post_key_at(0, "/mcp", "rl-wrong", a, &r); /* the 5th failure, in Redis for both */
    check_failures_limited(&r);
    CHECK_CONTAINS(r.body, "\"code\":-32029");
    post_key_at(1, "/mcp", "rl-wrong", a, &r); /* replica 1 had not refused yet */
    check_failures_limited(&r);
    for (int i = 0; i < 2; i++) { /* now neither looks at a credential from a */
        post_key_at(i, "/mcp", "rl-free", a, &r);
        check_failures_limited(&r);
        post_key_at(i, "/v1/webhooks/deliveries/msg_x_1/redeliver", "rl-free", a, &r);
        check_failures_limited(&r);
    }
    TEST_PASS("failed authentications: the 5th from one address is 429 with Retry-After, counted "
              "across replicas; then that address is 429 before its credential is looked at");

    for (int i = 0; i < 30; i++) {
        post_key_at(i % 2, "/mcp", "rl-free", "198.51.100.2", &r);
        CHECK_INT_EQ(r.status, 200);
    }
    for (int i = 0; i < 3; i++) {
        post_key_at(i % 2, "/mcp", "rl-wrong", "198.51.100.2", &r);
        CHECK_INT_EQ(r.status, 401);
    }
    post_key_at(0, "/mcp", "rl-free", "198.51.100.2", &r);
    CHECK_INT_EQ(r.status, 200);
    post_key_at(0, "/mcp", "rl-free", NULL, &r); /* the proxy itself: another client */
    CHECK_INT_EQ(r.status, 200);
    TEST_PASS("another address is not affected; successful requests are not counted");

    char client[32];
    for (int i = 0; i < 6; i++) {
        snprintf(client, sizeof(client), "198.51.100.%d", 10 + i);
        post_app_as(i % 2, "not-the-rl-app-secret-0123456789abcdef", client, &r);
        CHECK_INT_EQ(r.status, 401);
    }
    post_app_as(0, "not-the-rl-app-secret-0123456789abcdef", "198.51.100.30", &r);
    check_failures_limited(&r);
    post_app_as(0, SECRET, "198.51.100.31", &r); /* the right secret, a fresh address */
    check_failures_limited(&r);
    TEST_PASS("wrong signatures for one app from many addresses: the 7th is 429, and so is the "
              "app's next request");

    const char *c = "198.51.100.40";
    for (int i = 0; i < 4; i++) {
        post_key_at(i % 2, "/admin/v1/tenants", "not-the-admin-token", c, &r);
        CHECK_INT_EQ(r.status, 401);
    }
    post_key_at(0, "/admin/v1/tenants", "not-the-admin-token", c, &r);
    check_failures_limited(&r);
    post_key_at(0, "/admin/v1/tenants", ADMIN_TOKEN, c, &r);
    check_failures_limited(&r);
    post_key_at(0, "/admin/v1/tenants", ADMIN_TOKEN, "198.51.100.41", &r);
    CHECK(r.status != 401 && r.status != 429); /* authenticated (the body is no tenant) */
    TEST_PASS("a wrong admin token counts against the address like a wrong API key");
}

/* A 429 as docs/api.md ("Rate limits") describes it: Retry-After in whole seconds, -32029,
 * retryAfterMs. */
static long long check_limited(const fx_reply_t *r, const char *who)
{
    CHECK_INT_EQ(r->status, 429);
    CHECK_CONTAINS(r->body, "\"code\":-32029");
    CHECK_CONTAINS(r->body, who);
    CHECK(r->retry_after[0] != '\0');
    long long s = atoll(r->retry_after);
    CHECK(s >= 1 && s <= 2);
    const char *p = strstr(r->body, "\"retryAfterMs\":");
    CHECK(p != NULL);
    long long ms = atoll(p + 15);
    CHECK(ms >= 1 && ms <= 1000 * s);
    return ms;
}

static void write_config(const char *path)
{
    fx_write_file(
        path,
        "{\"tenants\": ["
        " {\"id\": \"t1\", \"rate_limits\": {\"api_key\": {\"per_second\": 2, \"burst\": 4}},"
        "  \"api_keys\": [{\"id\": \"slow\", \"key\": \"rl-slow\"},"
        "                {\"id\": \"other\", \"key\": \"rl-other\"},"
        "                {\"id\": \"free\", \"key\": \"rl-free\", \"rate_limit\": {\"per_second\": "
        "0}},"
        "                {\"id\": \"down\", \"key\": \"rl-down\"}],"
        "  \"apps\": [{\"app_id\": \"" APP "\", \"secret\": \"" SECRET "\","
        "             \"rate_limit\": {\"per_second\": 1, \"burst\": 2}}]},"
        " {\"id\": \"t2\", \"api_keys\": [{\"id\": \"plain\", \"key\": \"rl-plain\"}]}],"
        " \"servers\": [{\"tenant\": \"t1\", \"name\": \"default\"},"
        "              {\"tenant\": \"t2\", \"name\": \"default\"}]}",
        0600);
}

int main(void)
{
    fx_reply_t r;
    char cfg[300];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(cfg, sizeof(cfg), "%s/rl.json", fx.dir);
    write_config(cfg);
    ports[0] = fx_free_port();
    do
        ports[1] = fx_free_port();
    while (ports[1] == ports[0]);
    const char *env[] = {"MCPQ_RATE_LIMIT_PER_S=3",
                         "MCPQ_RATE_LIMIT_BURST=3",
                         "MCPQ_AUTH_FAIL_PER_MIN=4",
                         "MCPQ_AUTH_FAIL_ID_PER_MIN=6",
                         "MCPQ_TRUSTED_PROXIES=127.0.0.1",
                         "MCPQ_ADMIN_TOKEN=" ADMIN_TOKEN,
                         NULL};
    pid_t ing[2];
    ing[0] = fx_spawn_ingress(&fx, "rl-0", ports[0], cfg, env, NULL, 0);
    ing[1] = fx_spawn_ingress(&fx, "rl-1", ports[1], cfg, env, NULL, 0);
    CHECK(ing[0] > 0 && ing[1] > 0);

    for (int i = 0; i < 4; i++) {
        post_key(0, "rl-slow", &r);
        CHECK_INT_EQ(r.status, 200);
    }
    post_key(1, "rl-slow", &r);
    long long wait_ms = check_limited(&r, "API key");
    TEST_PASS("burst 4 served at replica 0, the 5th request is 429 at replica 1 (shared bucket)");

    fx_sleep_ms((int)wait_ms + 20);
    post_key(0, "rl-slow", &r);
    CHECK_INT_EQ(r.status, 200);
    post_key(0, "rl-slow", &r);
    check_limited(&r, "API key");
    TEST_PASS("after retryAfterMs one more token is there, and only one");

    post_key(1, "rl-other", &r);
    CHECK_INT_EQ(r.status, 200);
    for (int i = 0; i < 40; i++) {
        post_key(i % 2, "rl-free", &r);
        CHECK_INT_EQ(r.status, 200);
    }
    TEST_PASS("another key of the tenant has its own bucket; rate_limit 0 is unlimited");

    for (int i = 0; i < 3; i++) {
        post_key(i % 2, "rl-plain", &r);
        CHECK_INT_EQ(r.status, 200);
    }
    post_key(0, "rl-plain", &r);
    check_limited(&r, "API key");
    TEST_PASS("a tenant without rate_limits gets MCPQ_RATE_LIMIT_PER_S and _BURST (3)");

    post_app(0, &r);
    CHECK_INT_EQ(r.status, 200);
    post_app(1, &r);
    CHECK_INT_EQ(r.status, 200);
    post_app(0, &r);
    check_limited(&r, "app");
    TEST_PASS("an app's own rate_limit (burst 2) holds across replicas");

    check_auth_failures();

    CHECK_INT_EQ(fx_stop_pid(fx.redis_pid, 5000), 0);
    fx.redis_pid = 0;
    for (int i = 0; i < 4; i++) {
        post_key(0, "rl-down", &r);
        CHECK_INT_EQ(r.status, 200);
        CHECK(r.ms < 3000);
    }
    post_key(0, "rl-down", &r);
    check_limited(&r, "API key");
    CHECK(r.ms < 3000);
    post_key(0, "rl-free", &r);
    CHECK_INT_EQ(r.status, 200);
    TEST_PASS("Redis down: the limit still holds at the replica, answers come at once");
    for (int i = 0; i < 4; i++) {
        post_key_at(0, "/mcp", "rl-wrong", "198.51.100.50", &r);
        CHECK_INT_EQ(r.status, 401);
    }
    post_key_at(0, "/mcp", "rl-wrong", "198.51.100.50", &r);
    check_failures_limited(&r);
    CHECK(r.ms < 3000);
    TEST_PASS("Redis down: failed authentications are still limited, per replica");

    for (int i = 0; i < 2; i++)
        CHECK_INT_EQ(fx_stop_pid(ing[i], 10000), 0);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
