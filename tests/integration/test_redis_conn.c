/*
 * test_redis_conn.c - the Redis deployments cloud users run (docs/production.md, "Redis"),
 * each a real redis-server on loopback with a real mcpq-ingress and mcpq-worker against it
 * (the devbroker from tests/fixture.c carries the jobs). Certificates are made here with the
 * openssl command line: a CA, a server certificate for localhost and 127.0.0.1, a client
 * certificate, and a second CA that signed none of them. As users see it:
 *   a. rediss:// with MCPQ_REDIS_TLS_CA_FILE (the server has no plain port): calls answered;
 *   b. mutual TLS (--tls-auth-clients yes): with MCPQ_REDIS_TLS_CERT_FILE/KEY_FILE calls are
 *      answered; without a client certificate, or trusting the wrong CA, or expecting another
 *      server name, the ingress says why in its log and /readyz is 503 within seconds;
 *   c. an ACL user restricted to the rule of deploy/redis/mcpq.acl (default user off),
 *      logging in with a percent-encoded password: session, tools/list, a call and a task run,
 *      and Redis's ACL LOG records no refusal; a wrong password gives /readyz 503 and
 *      "AUTH failed";
 *   d. unix:///path/redis.sock?db=3 with MCPQ_REDIS_PASSWORD_FILE: calls answered, and mcpq's
 *      keys are in database 3; redis://[::1]:port/2 with MCPQ_REDIS_PASSWORD the same over
 *      IPv6 (skipped when the machine has no ::1);
 *   e. bad settings stop the ingress at start-up with a message naming them;
 *   f. MCPQ_REDIS_CLUSTER=1 against a Redis Cluster of three primaries and three replicas, the
 *      URL naming a primary that does not serve {mcpq}: every key lands on the one that does;
 *      when it is killed, its replica takes over and calls and tasks are answered again.
 * Each part uses its own consumer group, so its worker starts without waiting for the
 * previous one's to leave.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "kv.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY "Authorization: Bearer conn-key"
/* "p@ss:w/rd" percent-encoded, as a URL must carry it. */
#define ACL_PASS "p@ss:w/rd"
#define ACL_PASS_URL "p%40ss%3Aw%2Frd"

static fx_stack_t fx;
static char cfg[300];
static int part; /* a group per part */

static void sh(const char *fmt, const char *arg)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), fmt, arg, arg, arg, arg, arg, arg, arg, arg);
    if (system(cmd) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(1);
    }
}

/* CA, server (localhost, 127.0.0.1), client, and an unrelated CA in fx.dir. */
static void make_certs(void)
{
    const char *d = fx.dir;
    sh("cd %s && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext && "
       "for ca in ca other; do openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
       "-nodes -keyout $ca.key -out $ca.crt -days 2 -subj /CN=mcpq-test-$ca 2>/dev/null; done && "
       "for who in server client; do openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
       "-nodes -keyout $who.key -out $who.csr -subj /CN=$who 2>/dev/null && "
       "openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 "
       "-out $who.crt $( [ $who = server ] && echo -extfile san.ext ) 2>/dev/null; done",
       d);
}

/* Starts redis-server with args (a string of options) logging to <dir>/<name>.log; waits
 * until it is ready. */
static pid_t start_redis(const char *name, const char *args)
{
    char cmd[2048], log[300];
    snprintf(log, sizeof(log), "%s/%s.log", fx.dir, name);
    snprintf(cmd, sizeof(cmd),
             "exec redis-server --save '' --appendonly no --dir %s --logfile %s %s", fx.dir, log,
             args);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    CHECK(pid > 0);
    for (int i = 0; i < 200 && !fx_log_line(log, "eady to accept connections", NULL, NULL, 0); i++)
        fx_sleep_ms(50);
    if (!fx_log_line(log, "eady to accept connections", NULL, NULL, 0)) {
        fprintf(stderr, "redis %s did not start; see %s\n", name, log);
        exit(1);
    }
    return pid;
}

/* POST body to /mcp<path>; the JSON answer (NULL when none) and its HTTP status. */
static cJSON *post(int port, const char *path, const char *body, long *status)
{
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp%s", port, path);
    const char *hdrs[] = {KEY, NULL};
    fx_reply_t r;
    fx_http_post(url, hdrs, body, &r);
    *status = r.status;
    return cJSON_Parse(r.body);
}

static const char *path_str(const cJSON *j, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, a), b);
    return cJSON_GetStringValue(x);
}

/* tools/call of hello; 0 when its text came back. */
static int call_hello(int port)
{
    long st;
    cJSON *j = post(port, "",
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"hello\",\"arguments\":{}}}",
                    &st);
    const cJSON *c = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "result"), "content"),
        0);
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "text"));
    int ok = st == 200 && text && strstr(text, "hello from the worker");
    if (!ok) {
        char *dump = j ? cJSON_PrintUnformatted(j) : NULL;
        fprintf(stderr, "hello: status %ld, %s\n", st, dump ? dump : "(none)");
        free(dump);
    }
    cJSON_Delete(j);
    return ok ? 0 : -1;
}

/* initialize (2025-11-25, a session), then tools/list in it, and a resource subscription
 * made and dropped (rsub.h's commands); 0 when hello is listed and both answer {}. */
static int session_list(int port)
{
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    const char *h1[] = {KEY, NULL};
    fx_reply_t r;
    fx_http_post(url, h1,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"" NAMES_PROTO_LATEST
                 "\",\"capabilities\":{},\"clientInfo\":{"
                 "\"name\":\"t\",\"version\":\"1\"}}}",
                 &r);
    if (r.status != 200 || !r.session_id[0]) {
        fprintf(stderr, "initialize: %ld %s\n", r.status, r.body);
        return -1;
    }
    char sid[200];
    snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", r.session_id);
    const char *h2[] = {KEY, sid, "MCP-Protocol-Version: " NAMES_PROTO_LATEST, NULL};
    fx_http_post(url, h2, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r);
    fx_http_post(url, h2, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &r);
    if (r.status != 200 || !strstr(r.body, "\"hello\"")) {
        fprintf(stderr, "tools/list: %ld %s\n", r.status, r.body);
        return -1;
    }
    static const char *const subs[] = {"resources/subscribe", "resources/unsubscribe"};
    for (int i = 0; i < 2; i++) {
        char body[200];
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"%s\",\"params\":{\"uri\":"
                 "\"file:///readme\"}}",
                 subs[i]);
        fx_http_post(url, h2, body, &r);
        if (r.status != 200 || !strstr(r.body, "\"result\":{}")) {
            fprintf(stderr, "%s: %ld %s\n", subs[i], r.status, r.body);
            return -1;
        }
    }
    return 0;
}

/* A task of slow_task run to its end through workerSysGetTaskStatus; 0 when completed. */
static int run_task(int port)
{
    long st;
    cJSON *j = post(port, "",
                    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                    "{\"name\":\"task_job\",\"arguments\":{}}}",
                    &st);
    const char *id =
        path_str(cJSON_GetObjectItemCaseSensitive(j, "result"), "structuredContent", "TaskId");
    if (st != 200 || !id) {
        char *dump = j ? cJSON_PrintUnformatted(j) : NULL;
        fprintf(stderr, "task_job: status %ld, %s\n", st, dump ? dump : "(none)");
        free(dump);
    }
    CHECK(st == 200 && id != NULL);
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"workerSysGetTaskStatus\",\"arguments\":{\"TaskId\":\"%s\"}}}",
             id);
    cJSON_Delete(j);
    for (int i = 0; i < 100; i++) {
        cJSON *s = post(port, "/system", body, &st);
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(s, "result"), "structuredContent");
        const char *state = path_str(sc, "data", "TaskStatus");
        int done = state && strcmp(state, "complete") == 0;
        if (i == 99) {
            char *text = s ? cJSON_PrintUnformatted(s) : NULL;
            fprintf(stderr, "task: %s\n", text ? text : "(none)");
            free(text);
        }
        cJSON_Delete(s);
        if (done)
            return 0;
        fx_sleep_ms(100);
    }
    return -1;
}

/* The HTTP status of GET /readyz (0: no answer). */
static long readyz(int port)
{
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", port);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 3000L);
    long st = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_cleanup(c);
    return st;
}

typedef struct pair {
    pid_t ing, w;
    int port;
} pair_t;

/* Ingress + worker (a consumer group of their own) against the Redis env describes. */
static pair_t pair_start(const char *const env[])
{
    char name[64], group[64];
    snprintf(name, sizeof(name), "ing-%d", part);
    snprintf(group, sizeof(group), "MCPQ_GROUP_ID=conn-%d", part);
    const char *wenv[16] = {group};
    size_t n = 1;
    for (size_t i = 0; env[i] && n < 15; i++)
        wenv[n++] = env[i];
    pair_t p = {.port = fx_free_port()};
    p.ing = fx_spawn_ingress(&fx, name, p.port, cfg, env, NULL, 0);
    CHECK(p.ing > 0);
    snprintf(name, sizeof(name), "wrk-%d", part++);
    p.w = fx_spawn_worker(&fx, name, wenv);
    CHECK(p.w > 0);
    return p;
}

static void pair_stop(const pair_t *p)
{
    fx_stop_pid(p->w, 10000);
    fx_stop_pid(p->ing, 10000);
}

/* Ingress + worker against the Redis env describes; both are ready and a call and a task
 * come back. */
static void stack_works(const char *what, const char *const env[], int with_task)
{
    pair_t p = pair_start(env);
    int port = p.port;
    CHECK_INT_EQ(readyz(port), 200);
    CHECK_INT_EQ(call_hello(port), 0);
    if (with_task) {
        CHECK_INT_EQ(session_list(port), 0);
        CHECK_INT_EQ(run_task(port), 0);
    }
    pair_stop(&p);
    TEST_PASS(what);
}

/* An ingress against the Redis env describes: /readyz 503 within 10 s and its log names
 * the reason. */
static void ingress_refused(const char *what, const char *const env[], const char *reason)
{
    char name[64], log[300];
    snprintf(name, sizeof(name), "bad-%d", part++);
    int port = fx_free_port();
    long long t0 = fx_now_ms();
    pid_t ing = fx_spawn_ingress(&fx, name, port, cfg, env, log, sizeof(log));
    CHECK(ing > 0);
    long st = 0;
    while (fx_now_ms() - t0 < 10000 && (st = readyz(port)) != 503)
        fx_sleep_ms(100);
    CHECK_INT_EQ(st, 503);
    while (fx_now_ms() - t0 < 10000 && !fx_log_line(log, reason, NULL, NULL, 0))
        fx_sleep_ms(100);
    if (!fx_log_line(log, reason, NULL, NULL, 0)) {
        fprintf(stderr, "%s: no \"%s\" in %s\n", what, reason, log);
        CHECK(0);
    }
    long long ms = fx_now_ms() - t0;
    fx_stop_pid(ing, 10000);
    printf("  (/readyz 503 and the reason logged %lld ms after the start)\n", ms);
    TEST_PASS(what);
}

/* The ingress refuses to start: exit status 2 and msg on stderr. */
static void start_refused(const char *what, const char *const env[], const char *msg)
{
    char text[4096];
    int st = fx_ingress_exit(&fx, "refused", cfg, env, text, sizeof(text), NULL, 0);
    CHECK_INT_EQ(st, 2);
    if (!strstr(text, msg)) {
        fprintf(stderr, "%s: wanted \"%s\" in:\n%s\n", what, msg, text);
        CHECK(0);
    }
    TEST_PASS(what);
}

static void test_tls(void)
{
    char args[1024], url[128], ca[300], other[300], cert[300], key[300];
    int p1 = fx_free_port(), p2 = fx_free_port();
    snprintf(args, sizeof(args),
             "--port 0 --tls-port %d --tls-cert-file %s/server.crt --tls-key-file %s/server.key "
             "--tls-ca-cert-file %s/ca.crt --tls-auth-clients no",
             p1, fx.dir, fx.dir, fx.dir);
    pid_t r1 = start_redis("redis-tls", args);
    snprintf(ca, sizeof(ca), "MCPQ_REDIS_TLS_CA_FILE=%s/ca.crt", fx.dir);
    snprintf(other, sizeof(other), "MCPQ_REDIS_TLS_CA_FILE=%s/other.crt", fx.dir);
    snprintf(cert, sizeof(cert), "MCPQ_REDIS_TLS_CERT_FILE=%s/client.crt", fx.dir);
    snprintf(key, sizeof(key), "MCPQ_REDIS_TLS_KEY_FILE=%s/client.key", fx.dir);
    snprintf(url, sizeof(url), "MCPQ_REDIS_URL=rediss://localhost:%d/0", p1);
    const char *tls[] = {url, ca, NULL};
    stack_works("rediss:// with a CA file: a call and a task answered over TLS", tls, 1);
    const char *wrong_ca[] = {url, other, NULL};
    ingress_refused("rediss:// trusting another CA: /readyz 503, certificate verify failed",
                    wrong_ca, "certificate verify failed");
    const char *wrong_name[] = {url, ca, "MCPQ_REDIS_TLS_SERVER_NAME=redis.example.com", NULL};
    ingress_refused("rediss:// expecting another server name: /readyz 503", wrong_name,
                    "certificate verify failed");
    fx_stop_pid(r1, 5000);

    snprintf(args, sizeof(args),
             "--port 0 --tls-port %d --tls-cert-file %s/server.crt --tls-key-file %s/server.key "
             "--tls-ca-cert-file %s/ca.crt --tls-auth-clients yes",
             p2, fx.dir, fx.dir, fx.dir);
    pid_t r2 = start_redis("redis-mtls", args);
    snprintf(url, sizeof(url), "MCPQ_REDIS_URL=rediss://127.0.0.1:%d/0", p2);
    const char *mtls[] = {url, ca, cert, key, NULL};
    stack_works("mutual TLS with a client certificate: a call answered", mtls, 0);
    const char *no_cert[] = {url, ca, NULL};
    ingress_refused("mutual TLS without a client certificate: /readyz 503, the TLS alert logged",
                    no_cert, "redis TLS connection closed");
    fx_stop_pid(r2, 5000);
}

/* A connection to c logged in as user with password (user NULL: AUTH password), on database
 * db; exits the test when any step is refused, so a probe never reads a refusal as an empty
 * answer. */
static redisContext *logged_in(redisContext *c, const char *user, const char *password, int db)
{
    CHECK(c != NULL && !c->err);
    redisReply *r =
        user ? redisCommand(c, "AUTH %s %s", user, password) : redisCommand(c, "AUTH %s", password);
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(c, "SELECT %d", db);
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    return c;
}

/* ACL LOG of the admin user: the number of entries, each printed. */
static long long acl_log_entries(int port)
{
    redisContext *c = logged_in(redisConnect("127.0.0.1", port), "admin", "adminpw", 0);
    redisReply *r = redisCommand(c, "ACL LOG");
    CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    for (size_t i = 0; i < r->elements; i++) { /* what was refused, for whoever fixes the rule */
        const redisReply *e = r->element[i];
        for (size_t k = 0; e->type == REDIS_REPLY_ARRAY && k + 1 < e->elements; k += 2)
            if (e->element[k + 1]->type == REDIS_REPLY_STRING)
                fprintf(stderr, "# ACL LOG %zu: %s=%s\n", i, e->element[k]->str,
                        e->element[k + 1]->str);
    }
    freeReplyObject(r);
    redisFree(c);
    return n;
}

static void test_acl(void)
{
    char acl[300], args[600], url[160], bad[160];
    int p = fx_free_port();
    snprintf(acl, sizeof(acl), "%s/users.acl", fx.dir);
    FILE *f = fopen(acl, "w");
    CHECK(f != NULL);
    char rule[4096];
    CHECK_INT_EQ(fx_acl_user(ACL_PASS, rule, sizeof(rule)), 0);
    fprintf(f, "user default off\nuser admin on >adminpw ~* &* +@all\n%s\n", rule);
    fclose(f);
    snprintf(args, sizeof(args), "--port %d --bind 127.0.0.1 --aclfile %s", p, acl);
    pid_t r = start_redis("redis-acl", args);
    snprintf(url, sizeof(url), "MCPQ_REDIS_URL=redis://mcpq:%s@127.0.0.1:%d/0", ACL_PASS_URL, p);
    const char *env[] = {url, NULL};
    stack_works("ACL user restricted to the documented rule, percent-encoded password: session, "
                "call and task",
                env, 1);
    CHECK_INT_EQ(acl_log_entries(p), 0);
    TEST_PASS("the documented ACL rule: Redis refused no command or key (ACL LOG empty)");
    snprintf(bad, sizeof(bad), "MCPQ_REDIS_URL=redis://mcpq:wrong@127.0.0.1:%d/0", p);
    const char *wrong[] = {bad, NULL};
    ingress_refused("ACL user with a wrong password: /readyz 503, AUTH failed", wrong,
                    "AUTH failed");
    fx_stop_pid(r, 5000);
}

static void test_unix_v6(void)
{
    char args[600], url[400], pwfile[300], pwenv[340], cmd[600];
    snprintf(pwfile, sizeof(pwfile), "%s/redis-password", fx.dir);
    fx_write_file(pwfile, "s3cret pass\n", 0600);
    snprintf(args, sizeof(args),
             "--port 0 --unixsocket %s/redis.sock --unixsocketperm 700 --requirepass 's3cret pass'",
             fx.dir);
    pid_t r = start_redis("redis-unix", args);
    snprintf(url, sizeof(url), "MCPQ_REDIS_URL=unix://%s/redis.sock?db=3", fx.dir);
    snprintf(pwenv, sizeof(pwenv), "MCPQ_REDIS_PASSWORD_FILE=%s", pwfile);
    const char *env[] = {url, pwenv, NULL};
    stack_works("unix:// socket, db 3, password from MCPQ_REDIS_PASSWORD_FILE: a call answered",
                env, 0);
    snprintf(cmd, sizeof(cmd), "%s/redis.sock", fx.dir);
    redisContext *c = logged_in(redisConnectUnix(cmd), NULL, "s3cret pass", 3);
    redisReply *keys = redisCommand(c, "SCAN 0 MATCH %s COUNT 100000", NAMES_KEY_TAG ":*");
    CHECK(keys != NULL && keys->type == REDIS_REPLY_ARRAY && keys->elements == 2);
    CHECK(keys->element[1]->type == REDIS_REPLY_ARRAY && keys->element[1]->elements > 0);
    freeReplyObject(keys);
    redisFree(c);
    TEST_PASS("unix:// ?db=3: mcpq's keys are in database 3");
    fx_stop_pid(r, 5000);

    if (system("ip -6 addr show dev lo 2>/dev/null | grep -q '::1'") != 0) {
        TEST_SKIP("redis://[::1]: this machine has no IPv6 loopback address");
        return;
    }
    int p = fx_free_port();
    snprintf(args, sizeof(args), "--port %d --bind ::1 --requirepass from-env", p);
    pid_t r6 = start_redis("redis-v6", args);
    snprintf(url, sizeof(url), "MCPQ_REDIS_URL=redis://[::1]:%d/2", p);
    const char *v6[] = {url, "MCPQ_REDIS_PASSWORD=from-env", NULL};
    stack_works("redis://[::1]:port/2 (IPv6 literal), password from MCPQ_REDIS_PASSWORD: a call "
                "answered",
                v6, 0);
    fx_stop_pid(r6, 5000);
}

/* A command on the node at port (default user); the reply, or exits the test. */
static redisReply *node_cmd(int port, const char *cmd)
{
    redisContext *c = redisConnect("127.0.0.1", port);
    CHECK(c != NULL && !c->err);
    redisReply *r = redisCommand(c, cmd);
    CHECK(r != NULL);
    redisFree(c);
    return r;
}

/* Every client connection to Redis dropped (the reply reader's blocked XREAD among them) and
 * Redis paused for 400 ms in the same transaction, so the reader is still reconnecting when a
 * call arrives: the call waits for it and is answered, not refused with "result store
 * (Redis) unavailable" (docs/redis.md, "What clients see during a failover"). */
static void test_reader_reconnect(void)
{
    /* db 1: a new connection sends SELECT, which the pause holds, so reconnecting takes the
     * 400 ms (with db 0 and no password a connection sends nothing before its first read). */
    char url[128];
    snprintf(url, sizeof(url), "MCPQ_REDIS_URL=redis://127.0.0.1:%d/1", fx.redis_port);
    const char *env[] = {url, NULL};
    pair_t p = pair_start(env);
    CHECK_INT_EQ(readyz(p.port), 200);
    CHECK_INT_EQ(call_hello(p.port), 0);
    redisContext *c = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(c != NULL && !c->err);
    redisAppendCommand(c, "MULTI");
    redisAppendCommand(c, "CLIENT KILL TYPE normal SKIPME yes");
    redisAppendCommand(c, "CLIENT PAUSE 400 ALL");
    redisAppendCommand(c, "EXEC");
    for (int i = 0; i < 4; i++) {
        redisReply *r = NULL;
        CHECK(redisGetReply(c, (void **)&r) == REDIS_OK && r && r->type != REDIS_REPLY_ERROR);
        freeReplyObject(r);
    }
    redisFree(c);
    fx_sleep_ms(50); /* the reader has seen its connection go and is reconnecting */
    CHECK_INT_EQ(call_hello(p.port), 0);
    pair_stop(&p);
    TEST_PASS("every Redis connection dropped and Redis paused: a call made while the reply "
              "reader reconnects is answered");
}

/* The port of the primary that serves the slot of mcpq's keys, asked of the node at port. */
static int slot_owner(int port)
{
    redisReply *ks = node_cmd(port, "CLUSTER KEYSLOT {mcpq}");
    redisReply *r = node_cmd(port, "CLUSTER SLOTS");
    int owner = -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->element[0]->integer <= ks->integer && ks->integer <= e->element[1]->integer)
            owner = (int)e->element[2]->element[1]->integer;
    }
    freeReplyObject(ks);
    freeReplyObject(r);
    return owner;
}

static long long dbsize(int port)
{
    redisReply *r = node_cmd(port, "DBSIZE");
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* Six nodes, three primaries with a replica each (redis-cli --cluster create). */
static void cluster_start(int ports[6], pid_t pids[6])
{
    char args[600], cmd[1200] = "redis-cli --cluster create";
    for (int i = 0; i < 6; i++) {
        ports[i] = fx_free_port();
        /* The bus port explicitly: port + 10000 may be taken or past 65535. */
        snprintf(args, sizeof(args),
                 "--port %d --cluster-port %d --bind 127.0.0.1 --cluster-enabled yes "
                 "--cluster-config-file nodes-%d.conf --cluster-node-timeout 1000 "
                 "--cluster-replica-validity-factor 0",
                 ports[i], fx_free_port(), ports[i]);
        char name[32];
        snprintf(name, sizeof(name), "redis-node-%d", i);
        pids[i] = start_redis(name, args);
        snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " 127.0.0.1:%d", ports[i]);
    }
    snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd),
             " --cluster-replicas 1 --cluster-yes > %s/cluster-create.log 2>&1", fx.dir);
    sh("%s", cmd);
    /* Every node sees the cluster up, and every replica has its primary's data. */
    for (int i = 0; i < 6; i++) {
        long long end = fx_now_ms() + 20000;
        for (;;) {
            redisReply *r = node_cmd(ports[i], "CLUSTER INFO");
            redisReply *repl = node_cmd(ports[i], "INFO replication");
            int ok =
                strstr(r->str, "cluster_state:ok") != NULL &&
                (strstr(repl->str, "role:master") || strstr(repl->str, "master_link_status:up"));
            freeReplyObject(r);
            freeReplyObject(repl);
            if (ok)
                break;
            CHECK(fx_now_ms() < end);
            fx_sleep_ms(100);
        }
    }
}

static void test_cluster(void)
{
    int ports[6];
    pid_t pids[6];
    cluster_start(ports, pids);
    int owner = slot_owner(ports[0]), seed = -1;
    for (int i = 0; i < 3 && seed < 0; i++) /* the first three are the primaries */
        if (ports[i] != owner)
            seed = ports[i];
    CHECK(owner > 0 && seed > 0);
    char url[128];
    snprintf(url, sizeof(url), "MCPQ_REDIS_URL=redis://127.0.0.1:%d/0", seed);
    const char *env[] = {url, "MCPQ_REDIS_CLUSTER=1", NULL};
    pair_t p = pair_start(env);
    CHECK_INT_EQ(readyz(p.port), 200);
    CHECK_INT_EQ(call_hello(p.port), 0);
    CHECK_INT_EQ(run_task(p.port), 0);
    CHECK(dbsize(owner) > 0);
    CHECK_INT_EQ(dbsize(seed), 0);
    TEST_PASS("Redis Cluster: the URL names another primary, every key lands on the one that "
              "serves {mcpq}; a call and a task answered");

    /* A pool of our own (nothing else uses it) with an idle connection to the primary. */
    mcpq_settings_t set = {.redis_url = url + strlen("MCPQ_REDIS_URL="), .redis_cluster = 1};
    char err[256];
    kv_target_t *kvt = kv_target_new(&set, err, sizeof(err));
    CHECK(kvt != NULL);
    kv_pool_t *pool = kv_pool_new(kvt, 2000, 2);
    redisReply *set_r =
        kv_pool_command(pool, err, sizeof(err), "SET %s 1", NAMES_KEY_RESULT "pool-probe");
    CHECK(set_r != NULL);
    freeReplyObject(set_r);

    /* A manual failover: the replica takes the slot while the old primary stays up as its
     * replica, so mcpq's open connections get -MOVED and must go to the new one. */
    redisReply *info = node_cmd(owner, "INFO replication");
    const char *sl = strstr(info->str, "slave0:ip=");
    const char *pp = sl ? strstr(sl, ",port=") : NULL;
    int replica = pp ? atoi(pp + 6) : -1;
    freeReplyObject(info);
    CHECK(replica > 0);
    freeReplyObject(node_cmd(replica, "CLUSTER FAILOVER"));
    long long t1 = fx_now_ms();
    while (slot_owner(seed) != replica && fx_now_ms() - t1 < 10000)
        fx_sleep_ms(50);
    CHECK_INT_EQ(slot_owner(seed), replica);
    /* The pool's idle connection goes to the old primary, which answers -MOVED: the command
     * is sent again to the new one, and the caller sees only the value. */
    redisReply *get_r =
        kv_pool_command(pool, err, sizeof(err), "GET %s", NAMES_KEY_RESULT "pool-probe");
    if (!get_r)
        fprintf(stderr, "pooled GET after the failover: %s\n", err);
    CHECK(get_r != NULL && get_r->type == REDIS_REPLY_STRING && strcmp(get_r->str, "1") == 0);
    freeReplyObject(get_r);
    kv_pool_free(pool);
    kv_target_free(kvt);
    CHECK_INT_EQ(call_hello(p.port), 0);
    CHECK_INT_EQ(run_task(p.port), 0);
    TEST_PASS("Redis Cluster: a manual failover (the old primary answers -MOVED now): a pooled "
              "command is sent again to the new primary; calls and tasks answered");
    owner = replica;

    /* The primary dies: its replica takes the slot, and mcpq follows (lost connections).
     * Every call gets an answer meanwhile. */
    int owner_idx = -1;
    for (int i = 0; i < 6; i++)
        if (ports[i] == owner)
            owner_idx = i;
    CHECK(kill(pids[owner_idx], SIGKILL) == 0);
    long long t0 = fx_now_ms(), back = -1;
    int calls = 0, failed = 0;
    while (fx_now_ms() - t0 < 30000 && back < 0) {
        calls++;
        if (call_hello(p.port) == 0)
            back = fx_now_ms() - t0;
        else
            failed++;
        fx_sleep_ms(200);
    }
    CHECK(back >= 0);
    int now_owner = slot_owner(seed);
    CHECK(now_owner > 0 && now_owner != owner);
    CHECK_INT_EQ(run_task(p.port), 0);
    printf("  (primary killed: %d calls, %d answered with an error, answered again after %lld "
           "ms, served by :%d now)\n",
           calls, failed, back, now_owner);
    TEST_PASS("Redis Cluster: the primary of {mcpq} killed, its replica promoted, calls and "
              "tasks answered again");
    pair_stop(&p);
    for (int i = 0; i < 6; i++)
        if (i != owner_idx)
            fx_stop_pid(pids[i], 5000);
    fx_wait_exit(pids[owner_idx], 5000);
}

static void test_bad_settings(void)
{
    char ca[300];
    snprintf(ca, sizeof(ca), "MCPQ_REDIS_TLS_CA_FILE=%s/nonexistent.crt", fx.dir);
    const char *no_ca[] = {"MCPQ_REDIS_URL=rediss://localhost:6380/0", ca, NULL};
    start_refused("a missing CA file stops start-up naming MCPQ_REDIS_TLS_CA_FILE", no_ca,
                  "cannot load MCPQ_REDIS_TLS_CA_FILE");
    const char *bad_url[] = {"MCPQ_REDIS_URL=redis://host:99999/0", NULL};
    start_refused("a malformed MCPQ_REDIS_URL stops start-up naming it", bad_url,
                  "MCPQ_REDIS_URL: bad Redis URL");
    const char *tls_plain[] = {"MCPQ_REDIS_URL=redis://localhost:6379/0", ca, NULL};
    start_refused("TLS files with a redis:// URL stop start-up", tls_plain,
                  "MCPQ_REDIS_URL is not rediss://");
    const char *pw_twice[] = {"MCPQ_REDIS_URL=redis://:pw@localhost:6379/0",
                              "MCPQ_REDIS_PASSWORD_FILE=/dev/null", NULL};
    start_refused("a password in the URL and in a file stops start-up", pw_twice,
                  "a password is set more than once");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 1) < 0)
        return 1;
    make_certs();
    snprintf(cfg, sizeof(cfg), "%s/conn.json", fx.dir);
    fx_write_file(
        cfg,
        "{\"tenants\":[{\"id\":\"t\",\"api_keys\":[{\"id\":\"k\",\"key\":\"conn-key\"}]}],"
        "\"servers\":[{\"tenant\":\"t\",\"name\":\"default\"}],\"tools\":["
        "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"hello\",\"versions\":[{"
        "\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},\"timeout_ms\":10000,"
        "\"executor\":{\"type\":\"exec\",\"argv\":[\"/bin/echo\","
        "\"hello from the worker\"]}}]},"
        "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"task_job\",\"versions\":[{"
        "\"version\":\"1\",\"mode\":\"task\",\"inputSchema\":{\"type\":\"object\"},"
        "\"timeout_ms\":10000,\"executor\":{\"type\":\"exec\",\"argv\":[\"/bin/sh\","
        "\"-c\",\"sleep 0.2; echo done\"]}}]},"
        "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"readme\",\"kind\":\"resource\","
        "\"versions\":[{\"version\":\"1\",\"uri\":\"file:///readme\",\"text\":\"hi\"}]}]}",
        0600);
    test_bad_settings();
    test_tls();
    test_acl();
    test_unix_v6();
    test_reader_reconnect();
    test_cluster();
    fx_stop(&fx);
    curl_global_cleanup();
    return TEST_EXIT();
}
