/*
 * Integration test of HMAC request signing (docs/signatures.md) across ingress replicas: two
 * mcpq-ingress processes share one real redis-server (and a real devbroker), and
 *   - a signed tools/list is accepted at replica 0 as the app's tenant;
 *   - the same request replayed at replica 1 is refused (401): the nonce is claimed in Redis,
 *     not in one replica's memory;
 *   - a fresh nonce is accepted at replica 1, a stale timestamp is refused at either;
 *   - signature version 2 covers Host and the headers that change a request's meaning: a
 *     covered header added after signing, another Host or a changed signed header is 401;
 *     an app with "signature_version": 2 refuses version 1;
 *   - during a rotation the previous secret signs too, until previous_secret_expires;
 *   - an app secret under 32 bytes is refused at start-up (MCPQ_APP_SECRET_MIN_BYTES);
 *   - Redis losing its data (FLUSHALL, as a restart without persistence would): both replicas
 *     keep serving the registry they have, and the registry is seeded again from the config
 *     file (a wiped registry would otherwise answer every client 401);
 *   - with Redis stopped, a signed request is answered 503 with -32603 at once (the nonce
 *     cannot be claimed, so the request is not let through), never hung;
 *   - neither replica's log holds the app secret, a signature or a nonce.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "sig.h"
#include "util.h"

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define APP "it-app"
#define SECRET "it-app-secret-7c1d0b-0123456789abcdef"
#define OLD_SECRET "it-app-old-secret-being-rotated-out-0"
#define APP2 "it-app-v2"
#define OLD_SECRET2 "it-app-v2-old-secret-expired-in-2001"
#define SECRET2 "it-app-v2-secret-5e2a-0123456789abcdef"

static fx_stack_t fx;
static int ports[2];
static pid_t ingress[2];
static char logs[2][300];

/* POSTs body to replica i at uri with the four signing headers of app (version 1), and
 * extra ("Name: value" or NULL). */
static void post_signed_as(int i, const char *app, const char *secret, const char *uri,
                           const char *body, long long ts, const char *nonce, const char *extra,
                           fx_reply_t *r)
{
    char tsbuf[32], url[256], h[4][160], sig[65];
    snprintf(tsbuf, sizeof(tsbuf), "%lld", ts);
    char *canonical = sig_canonical("POST", uri, tsbuf, nonce, body, strlen(body));
    CHECK(canonical != NULL);
    util_hmac_sha256_hex(secret, strlen(secret), canonical, strlen(canonical), sig);
    free(canonical);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", ports[i], uri);
    snprintf(h[0], sizeof(h[0]), "X-App-Id: %s", app);
    snprintf(h[1], sizeof(h[1]), "X-Timestamp: %s", tsbuf);
    snprintf(h[2], sizeof(h[2]), "X-Nonce: %s", nonce);
    snprintf(h[3], sizeof(h[3]), "X-Signature: %s", sig);
    const char *hdrs[] = {h[0], h[1], h[2], h[3], extra, NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, r), 0);
}

static void post_signed(int i, const char *uri, const char *body, long long ts, const char *nonce,
                        fx_reply_t *r)
{
    post_signed_as(i, APP, SECRET, uri, body, ts, nonce, NULL, r);
}

/*
 * POSTs body to replica i's /mcp signed with version 2 by app/secret. lines are the
 * canonical string's "name:value" lines (in the order of list, the X-Signed-Headers value),
 * computed here independently of sig_canonical_v2; sent are the headers sent besides the
 * signing ones ("Name: value", NULL-terminated), which a test may make differ from lines.
 */
static void post_v2(int i, const char *app, const char *secret, const char *body, const char *list,
                    const char *const *lines, const char *const *sent, fx_reply_t *r)
{
    char tsbuf[32], nonce[40], url[256], h[6][300], sig[65], canonical[4096];
    snprintf(tsbuf, sizeof(tsbuf), "%lld", (long long)(util_now_ms() / 1000));
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    char *v1 = sig_canonical("POST", "/mcp", tsbuf, nonce, body, strlen(body));
    CHECK(v1 != NULL);
    int n = snprintf(canonical, sizeof(canonical), "%s\n%s", v1, list);
    free(v1);
    for (size_t k = 0; lines[k]; k++)
        n += snprintf(canonical + n, sizeof(canonical) - (size_t)n, "\n%s", lines[k]);
    util_hmac_sha256_hex(secret, strlen(secret), canonical, strlen(canonical), sig);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ports[i]);
    snprintf(h[0], sizeof(h[0]), "X-App-Id: %s", app);
    snprintf(h[1], sizeof(h[1]), "X-Timestamp: %s", tsbuf);
    snprintf(h[2], sizeof(h[2]), "X-Nonce: %s", nonce);
    snprintf(h[3], sizeof(h[3]), "X-Signature: %s", sig);
    snprintf(h[4], sizeof(h[4]), "X-Signature-Version: 2");
    snprintf(h[5], sizeof(h[5]), "X-Signed-Headers: %s", list);
    const char *hdrs[20] = {h[0], h[1], h[2], h[3], h[4], h[5]};
    size_t k = 6;
    for (size_t j = 0; sent && sent[j] && k < 19; j++)
        hdrs[k++] = sent[j];
    hdrs[k] = NULL;
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, r), 0);
}

/* Version 2: Host and the headers that change a request's meaning are signed. */
static void check_v2(void)
{
    static const char body[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
        "\"" NAMES_META_PROTOCOL_VERSION "\":\"" NAMES_PROTO_MODERN "\"}}}";
    static const char list[] = "host;mcp-method;mcp-protocol-version";
    char host[64];
    fx_reply_t r;
    snprintf(host, sizeof(host), "host:127.0.0.1:%d", ports[1]);
    const char *lines[] = {host, "mcp-method:tools/list",
                           "mcp-protocol-version:" NAMES_PROTO_MODERN, NULL};
    const char *sent[] = {"MCP-Protocol-Version: " NAMES_PROTO_MODERN, "Mcp-Method: tools/list",
                          NULL, NULL};
    post_v2(1, APP, SECRET, body, list, lines, sent, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "only_t1");
    post_v2(1, APP2, SECRET2, body, list, lines, sent, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "only_t1");
    TEST_PASS("v2: a request with Host, Mcp-Method and MCP-Protocol-Version signed is served");

    sent[2] = "Mcp-Session-Id: added-after-signing";
    post_v2(1, APP, SECRET, body, list, lines, sent, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "not in X-Signed-Headers");
    sent[2] = "Mcp-Param-Region: eu";
    post_v2(1, APP, SECRET, body, list, lines, sent, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "not in X-Signed-Headers");
    sent[2] = "Host: other.example:80";
    post_v2(1, APP, SECRET, body, list, lines, sent, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "invalid signature");
    sent[2] = NULL;
    lines[1] = "mcp-method:tools/call"; /* signed one method, sent another */
    post_v2(1, APP, SECRET, body, list, lines, sent, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "invalid signature");
    lines[1] = "mcp-method:tools/list";
    post_v2(1, APP, SECRET, body, "host;mcp-method", lines, sent, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "not in X-Signed-Headers");
    TEST_PASS("v2: an added covered header, another Host, a changed signed header, or a covered "
              "header left out of the list -> 401");

    static const char v1body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
    char nonce[40];
    long long now = util_now_ms() / 1000;
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed_as(0, APP2, SECRET2, "/mcp", v1body, now, nonce, NULL, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "requires X-Signature-Version: 2");
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed_as(0, APP2, "not-the-secret", "/mcp", v1body, now, nonce, NULL, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "invalid signature"); /* the requirement is not told to strangers */
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed_as(0, APP, SECRET, "/mcp", v1body, now, nonce, "X-Signed-Headers: host", &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "needs X-Signature-Version: 2");
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed_as(0, APP, SECRET, "/mcp", v1body, now, nonce, "X-Signature-Version: 3", &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "must be 1 or 2");
    TEST_PASS("v1 to an app with signature_version 2 -> 401 naming the version (only to a "
              "caller with the secret); X-Signed-Headers without version 2, version 3 -> 401");
}

/* An ingress started on a config whose app secret is 31 bytes (literally, then from
 * secret_env) exits 2 naming the app; with MCPQ_APP_SECRET_MIN_BYTES=31 it starts. */
static void check_short_secret(void)
{
    static const char *const apps[] = {
        "{\"app_id\": \"short-app\", \"secret\": \"0123456789012345678901234567890\"}",
        "{\"app_id\": \"short-app\", \"secret_env\": \"SHORT_APP_SECRET\"}"};
    char cfg[300], doc[600], name[32], text[4096];
    snprintf(cfg, sizeof(cfg), "%s/short.json", fx.dir);
    for (int i = 0; i < 2; i++) {
        snprintf(doc, sizeof(doc),
                 "{\"tenants\": [{\"id\": \"t9\", \"apps\": [%s]}], \"servers\": [], "
                 "\"tools\": []}",
                 apps[i]);
        fx_write_file(cfg, doc, 0600);
        snprintf(name, sizeof(name), "short-%d", i);
        const char *env[] = {"SHORT_APP_SECRET=0123456789012345678901234567890", NULL};
        CHECK_INT_EQ(fx_ingress_exit(&fx, name, cfg, env, text, sizeof(text), NULL, 0), 2);
        CHECK_CONTAINS(text, "$.tenants[0].apps[0]: the secret of app \"short-app\" is 31 bytes; "
                             "app secrets must be at least 32 bytes");
        CHECK(strstr(text, "0123456789012345678901234567890") == NULL);
    }
    const char *lower[] = {"MCPQ_APP_SECRET_MIN_BYTES=31",
                           "SHORT_APP_SECRET=0123456789012345678901234567890", NULL};
    pid_t pid = fx_spawn_ingress(&fx, "short-ok", fx_free_port(), cfg, lower, NULL, 0);
    CHECK(pid > 0);
    CHECK_INT_EQ(fx_stop_pid(pid, 10000), 0);
    TEST_PASS("an app secret under 32 bytes (literal or from secret_env) is refused at "
              "start-up, naming the app and not the secret; MCPQ_APP_SECRET_MIN_BYTES lowers "
              "the minimum");
}

static void start_ingress(int i)
{
    char cfg[300], name[32];
    snprintf(cfg, sizeof(cfg), "%s/hmac.json", fx.dir);
    snprintf(name, sizeof(name), "hmac-%d", i);
    ingress[i] = fx_spawn_ingress(&fx, name, ports[i], cfg, NULL, logs[i], sizeof(logs[i]));
    CHECK(ingress[i] > 0);
}

static void write_config(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/hmac.json", fx.dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"tenants\": [{\"id\": \"t1\", \"api_keys\": [{\"id\": \"k\", \"key\": \"it-key\"}],"
          " \"apps\": [{\"app_id\": \"" APP "\", \"secret\": \"" SECRET "\","
          " \"previous_secret\": \"" OLD_SECRET "\","
          " \"previous_secret_expires\": \"2099-01-01T00:00:00Z\"},"
          " {\"app_id\": \"" APP2 "\", \"secret\": \"" SECRET2 "\", \"signature_version\": 2,"
          " \"previous_secret\": \"" OLD_SECRET2 "\","
          " \"previous_secret_expires\": \"2001-01-01T00:00:00Z\"}]}],"
          " \"servers\": [{\"tenant\": \"t1\", \"name\": \"default\"}],"
          " \"tools\": [{\"tenant\": \"t1\", \"server\": \"default\", \"name\": \"only_t1\","
          " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\": "
          "{\"type\": \"object\"}, \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}",
          f);
    fclose(f);
}

/* 1 when needle occurs in the file at path. */
static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

int main(void)
{
    const char *list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
    fx_reply_t r;
    char nonce[40], used[40];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    write_config();
    ports[0] = fx_free_port();
    do
        ports[1] = fx_free_port();
    while (ports[1] == ports[0]);
    start_ingress(0);
    start_ingress(1);
    long long now = util_now_ms() / 1000;

    CHECK_INT_EQ(util_random_hex(used, 12), 0);
    post_signed(0, "/mcp?x=1", list, now, used, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "only_t1");
    TEST_PASS("a signed request is served at replica 0 as the app's tenant");

    post_signed(1, "/mcp?x=1", list, now, used, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "already used");
    CHECK(strstr(r.body, "only_t1") == NULL);
    post_signed(0, "/mcp?x=1", list, now, used, &r);
    CHECK_INT_EQ(r.status, 401);
    TEST_PASS("the same request replayed at replica 1 (and at 0) is refused with 401");

    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed(1, "/mcp", list, now, nonce, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed(1, "/mcp", list, now - 301, nonce, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "300 s");
    post_signed(0, "/mcp", list, now + 400, nonce, &r);
    CHECK_INT_EQ(r.status, 401);
    TEST_PASS("a fresh nonce is served at replica 1; timestamps outside 300 s are refused");

    check_v2();

    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed_as(1, APP, OLD_SECRET, "/mcp", list, now, nonce, NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "only_t1");
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed_as(1, APP, SECRET, "/mcp", list, now, nonce, NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    /* APP2's previous secret expired: it is no secret of the app any more ("invalid
     * signature", where its right secret would be told that APP2 wants version 2). */
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    post_signed_as(1, APP2, OLD_SECRET2, "/mcp", list, now, nonce, NULL, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "invalid signature");
    TEST_PASS("a rotation: the current secret and the previous one both sign until "
              "previous_secret_expires, then only the current one");

    check_short_secret(); /* its ingress adds tenant t9; the flush below wipes it */

    redisContext *rc = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(rc && !rc->err);
    redisReply *rep = redisCommand(rc, "FLUSHALL");
    CHECK(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    int seeded = 0;
    for (long long until = util_mono_ms() + 10000; !seeded && util_mono_ms() < until;) {
        rep = redisCommand(rc, "HEXISTS " NAMES_KEY_REGISTRY " tenant:t1");
        seeded = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
        freeReplyObject(rep);
        if (!seeded)
            fx_sleep_ms(50);
    }
    CHECK(seeded);
    redisFree(rc);
    for (int i = 0; i < 2; i++) {
        char url[128];
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ports[i]);
        const char *hdrs[] = {"Authorization: Bearer it-key", NULL};
        CHECK_INT_EQ(fx_http_post(url, hdrs, list, &r), 0);
        CHECK_INT_EQ(r.status, 200);
        CHECK_CONTAINS(r.body, "only_t1");
    }
    CHECK(file_contains(logs[0], "seeding it again") || file_contains(logs[1], "seeding it again"));
    TEST_PASS("Redis lost its data: the registry is seeded again and both replicas still serve");

    CHECK_INT_EQ(fx_stop_pid(fx.redis_pid, 5000), 0);
    fx.redis_pid = 0;
    CHECK_INT_EQ(util_random_hex(nonce, 12), 0);
    long long t0 = util_mono_ms();
    post_signed(0, "/mcp", list, now, nonce, &r);
    CHECK_INT_EQ(r.status, 503);
    CHECK_CONTAINS(r.body, "-32603");
    CHECK(util_mono_ms() - t0 < 5000);
    TEST_PASS("Redis down: a signed request gets 503 -32603 at once, not a pass");

    for (int i = 0; i < 2; i++) {
        CHECK_INT_EQ(fx_stop_pid(ingress[i], 10000), 0);
        CHECK(!file_contains(logs[i], SECRET));
        CHECK(!file_contains(logs[i], OLD_SECRET));
        CHECK(!file_contains(logs[i], used));
    }
    TEST_PASS("no app secret or nonce in either replica's log");
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
