/*
 * A frozen Redis (docs/redis.md, "The connection pool"): redis-server stopped with SIGSTOP
 * for FREEZE_MS while 16 clients keep sending requests of a session (each needs Redis on
 * the HTTP thread: the session is looked up there). What an operator and a client see:
 *   - /healthz answers 200 every time it is asked during the freeze, each within
 *     HEALTHZ_BOUND_MS (the HTTP threads are not held by requests waiting on Redis: after the
 *     first command that timed out, the pool is down and such requests fail at once);
 *   - /readyz says "redis":false during the freeze and 200 again after it;
 *   - the session's requests get a clear error (HTTP 503, JSON-RPC -32603 "session store
 *     (Redis) unavailable; try again"), never a hang;
 *   - a tools/call made during the freeze (no session: it needs no Redis on the HTTP thread)
 *     is answered once Redis thaws, within its timeout.
 * Before the pool was kept warm and marked down, every session request held an HTTP thread
 * for MCPQ_REDIS_TIMEOUT_MS (1 s), so /healthz queued behind them for seconds.
 * HEALTHZ_BOUND_MS is generous (a busy machine), far below what the 16 clients cost then.
 */
#include "check.h"
#include "fixture.h"
#include "names.h"

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY "Authorization: Bearer f-key"
#define CLIENTS 16
#define FREEZE_MS 8000
#define HEALTHZ_BOUND_MS 3000

static fx_stack_t fx;
static int port;
static char sid_header[200];
static atomic_int stopping;
static atomic_int answered, hung; /* the clients' requests during the freeze */
static atomic_int refused;        /* of which 503 "session store (Redis) unavailable" */

static void write_config(const char *path)
{
    fx_write_file(path,
                  "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
                  "\"f-key\"}]}],"
                  " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
                  " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\","
                  " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"timeout_ms\": "
                  "30000, \"inputSchema\": {\"type\": \"object\"},"
                  " \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}",
                  0600);
}

static void url_of(char *url, size_t size, const char *path)
{
    snprintf(url, size, "http://127.0.0.1:%d%s", port, path);
}

/* initialize (2025-11-25): the session's "Mcp-Session-Id: ..." header into sid_header. */
static int open_session(void)
{
    char url[96];
    url_of(url, sizeof(url), "/mcp");
    const char *h[] = {KEY, NULL};
    fx_reply_t r;
    fx_http_post(url, h,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"" NAMES_PROTO_LATEST "\",\"capabilities\":{},"
                 "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                 &r);
    if (r.status != 200 || !r.session_id[0]) {
        fprintf(stderr, "initialize: %ld %s\n", r.status, r.body);
        return -1;
    }
    snprintf(sid_header, sizeof(sid_header), "Mcp-Session-Id: %s", r.session_id);
    return 0;
}

/* A client of the session: tools/list until told to stop, counting answers and hangs
 * (no answer within the fixture's 10 s). */
static void *session_client(void *arg)
{
    (void)arg;
    char url[96];
    url_of(url, sizeof(url), "/mcp");
    const char *h[] = {KEY, sid_header, "MCP-Protocol-Version: " NAMES_PROTO_LATEST, NULL};
    while (!atomic_load(&stopping)) {
        fx_reply_t r;
        fx_http_post(url, h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &r);
        atomic_fetch_add(r.status ? &answered : &hung, 1);
        if (r.status == 503 && strstr(r.body, "session store (Redis) unavailable"))
            atomic_fetch_add(&refused, 1);
        fx_sleep_ms(20);
    }
    return NULL;
}

typedef struct call {
    fx_reply_t r;
} call_t;

/* tools/call echo without a session. */
static void *echo_call(void *arg)
{
    call_t *c = arg;
    char url[96];
    url_of(url, sizeof(url), "/mcp");
    const char *h[] = {KEY, NULL};
    fx_http_post(url, h,
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"echo\",\"arguments\":{\"text\":\"thawed\"}}}",
                 &c->r);
    return NULL;
}

static long get(const char *path, fx_reply_t *r)
{
    char url[96];
    url_of(url, sizeof(url), path);
    fx_http_request("GET", url, NULL, NULL, r);
    return r->status;
}

/* Asks /healthz every 200 ms while Redis is frozen: the slowest answer (ms), or -1 when one
 * was not 200. Also checks that /readyz said Redis is down at some point. */
static long long healthz_during_freeze(int *readyz_down)
{
    long long slowest = 0, t0 = fx_now_ms();
    while (fx_now_ms() - t0 < FREEZE_MS - 1000) {
        fx_reply_t r;
        if (get("/healthz", &r) != 200) {
            fprintf(stderr, "/healthz during the freeze: %ld %s (%lld ms)\n", r.status, r.body,
                    r.ms);
            return -1;
        }
        if (r.ms > slowest)
            slowest = r.ms;
        fx_reply_t ready;
        if (get("/readyz", &ready) == 503 && strstr(ready.body, "\"redis\":false"))
            *readyz_down = 1;
        fx_sleep_ms(200);
    }
    return slowest;
}

static void test_freeze(void)
{
    pthread_t clients[CLIENTS], caller;
    call_t call;
    for (int i = 0; i < CLIENTS; i++)
        CHECK_INT_EQ(pthread_create(&clients[i], NULL, session_client, NULL), 0);
    fx_sleep_ms(300);
    CHECK_INT_EQ(kill(fx.redis_pid, SIGSTOP), 0);
    long long frozen_at = fx_now_ms();
    fx_sleep_ms(100);
    CHECK_INT_EQ(pthread_create(&caller, NULL, echo_call, &call), 0);
    int readyz_down = 0;
    long long slowest = healthz_during_freeze(&readyz_down);
    while (fx_now_ms() - frozen_at < FREEZE_MS)
        fx_sleep_ms(50);
    kill(fx.redis_pid, SIGCONT);
    atomic_store(&stopping, 1);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(clients[i], NULL);
    pthread_join(caller, NULL);
    printf("# /healthz slowest %lld ms during an %d ms freeze; session requests answered %d "
           "(503 Redis unavailable: %d), hung %d\n",
           slowest, FREEZE_MS, atomic_load(&answered), atomic_load(&refused), atomic_load(&hung));
    CHECK(slowest >= 0 && slowest < HEALTHZ_BOUND_MS);
    CHECK(readyz_down);
    CHECK_INT_EQ(atomic_load(&hung), 0);
    CHECK(atomic_load(&refused) > 0);
    TEST_PASS("Redis frozen (SIGSTOP) under session traffic: /healthz answers 200 within the Redis "
              "timeout, "
              "/readyz says redis false, session requests get an error, none hangs");
    CHECK_INT_EQ((int)call.r.status, 200);
    CHECK(strstr(call.r.body, "thawed") != NULL || strstr(call.r.body, "\"error\"") != NULL);
    if (!strstr(call.r.body, "thawed"))
        fprintf(stderr, "the call during the freeze: %s\n", call.r.body);
    TEST_PASS("a tools/call made while Redis is frozen is answered after it thaws");
}

typedef struct text {
    char *data;
    size_t len;
} text_t;

static size_t on_text(char *p, size_t size, size_t n, void *arg)
{
    text_t *t = arg;
    char *grown = realloc(t->data, t->len + size * n + 1);
    if (!grown)
        return 0;
    memcpy(grown + t->len, p, size * n);
    t->data = grown;
    t->len += size * n;
    t->data[t->len] = '\0';
    return size * n;
}

/* The value of one series of /metrics (-1 when absent); the page is larger than fx_reply_t's
 * body. */
static long long metric(const char *series)
{
    char url[96];
    url_of(url, sizeof(url), "/metrics");
    text_t t = {0};
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_text);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    const char *p = t.data ? strstr(t.data, series) : NULL;
    long long v = p ? strtoll(p + strlen(series), NULL, 10) : -1;
    free(t.data);
    return v;
}

/* A call of a client without the 2026-07-28 headers writes the cancel map (notifications/
 * cancelled finds its job from any replica) through the pool's keeper: one write queued. */
static void test_queued(void)
{
    static const char queued[] = "mcpq_redis_pool_commands_total{how=\"queued\"} ";
    long long q0 = metric(queued);
    call_t call;
    echo_call(&call);
    CHECK(strstr(call.r.body, "thawed") != NULL);
    CHECK(q0 >= 0);
    CHECK_INT_EQ((int)(metric(queued) - q0), 1);
    TEST_PASS("a legacy tools/call queues its one Redis write (the cancel map) for the keeper "
              "(mcpq_redis_pool_commands_total{how=\"queued\"} + 1)");
}

/* After the freeze the pool comes back by itself: /readyz 200 and the session works. */
static void test_thawed(void)
{
    long long t0 = fx_now_ms();
    fx_reply_t r;
    while (get("/readyz", &r) != 200 && fx_now_ms() - t0 < 20000)
        fx_sleep_ms(100);
    CHECK_INT_EQ((int)r.status, 200);
    char url[96];
    url_of(url, sizeof(url), "/mcp");
    const char *h[] = {KEY, sid_header, "MCP-Protocol-Version: " NAMES_PROTO_LATEST, NULL};
    fx_http_post(url, h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}", &r);
    CHECK_INT_EQ((int)r.status, 200);
    CHECK(strstr(r.body, "\"echo\"") != NULL);
    TEST_PASS("after the thaw: /readyz 200 and the session's requests answered again");
}

int main(void)
{
    char cfg[300];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(cfg, sizeof(cfg), "%s/freeze.json", fx.dir);
    write_config(cfg);
    port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, NULL, NULL, 0);
    pid_t w = fx_spawn_worker(&fx, "worker", NULL);
    CHECK(ing > 0 && w > 0);
    CHECK_INT_EQ(open_session(), 0);
    test_queued();
    test_freeze();
    test_thawed();
    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 15000), 0); /* a clean stop: the keeper joined, nothing leaked */
    fx_stop(&fx);
    curl_global_cleanup();
    return TEST_EXIT();
}
