/*
 * Redis Sentinel failover under load (docs/redis.md) on a real stack: mcpq-devbroker, a Redis
 * master, one replica (--replicaof) and three redis-sentinel processes on loopback, an
 * mcpq-ingress and an mcpq-worker that find the master through the sentinels
 * (MCPQ_REDIS_SENTINELS, MCPQ_REDIS_MASTER; the sentinels have a password of their own,
 * MCPQ_REDIS_SENTINEL_PASSWORD_FILE) and wait for one replica (MCPQ_REDIS_WAIT_REPLICAS=1).
 *
 * Two client threads call continuously: synchronous tools/call of a short exec tool, and
 * tools/call of a task-mode tool (each answer a TaskId). The master is killed with SIGKILL;
 * then:
 *   - the sentinels promote the replica (SENTINEL get-master-addr-by-name names it);
 *   - the killed master comes back as a replica of the new one (so WAIT can be met again);
 *   - synchronous calls are answered with their results again within a bound after the
 *     promotion;
 *   - every call got an answer: a result or a JSON-RPC error, none without (printed: sent,
 *     ok, error, unanswered; unanswered must be 0);
 *   - then a master is demoted while it stays reachable (REPLICAOF by hand, the sentinels
 *     told afterwards): the connections that get -READONLY are made again through the
 *     sentinels and synchronous calls are answered with results again;
 *   - every task that was accepted reaches a terminal status readable by tasks/get.
 * Durations are hang guards; the whole test is bounded (~60 s).
 */
#include "check.h"
#include "fixture.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KEY "Authorization: Bearer sentinel-key"
#define NSENTINELS 3
#define SENTINEL_PASSWORD "sentinel-pw"
#define MAX_TASKS 2000
#define PROMOTE_MS 30000   /* the sentinels agree and promote (down-after is 1 s) */
#define RECOVER_MS 15000   /* a synchronous call succeeds again after the promotion */
#define AFTER_MS 8000      /* load kept on after the promotion */
#define TASKS_END_MS 30000 /* accepted tasks reach a terminal status */

static fx_stack_t fx;
static int ing_port;
static char dir[300];

static const char tool_sh[] = "#!/bin/sh\n"
                              "cat >/dev/null\n"
                              "printf '{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],"
                              "\"isError\":false}'\n";

/* ---- Redis processes ---- */

static pid_t redis_start(int port, int replicaof, const char *name)
{
    char port_s[16], of[64], rdir[400], log[400];
    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(rdir, sizeof(rdir), "%s/%s", dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", dir, name);
    CHECK(mkdir(rdir, 0700) == 0 || errno == EEXIST);
    snprintf(of, sizeof(of), "127.0.0.1 %d", replicaof);
    /* No 5 s diskless-sync delay: a replica that joins is synced at once. */
    const char *argv[] = {"redis-server",
                          "--port",
                          port_s,
                          "--bind",
                          "127.0.0.1",
                          "--save",
                          "",
                          "--dir",
                          rdir,
                          "--appendonly",
                          "no",
                          "--loglevel",
                          "warning",
                          "--repl-diskless-sync-delay",
                          "0",
                          replicaof ? "--replicaof" : NULL,
                          of,
                          NULL};
    pid_t pid = fx_spawn(argv, NULL, log);
    CHECK(pid > 0);
    long long until = fx_now_ms() + 10000;
    while (fx_now_ms() < until) {
        redisContext *c = redisConnect("127.0.0.1", port);
        redisReply *r = c && !c->err ? redisCommand(c, "PING") : NULL;
        int up = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        redisFree(c);
        if (up)
            return pid;
        fx_sleep_ms(50);
    }
    fprintf(stderr, "%s on port %d did not answer PING\n", name, port);
    exit(1);
}

/* A reply to one command on 127.0.0.1:port (NULL when it does not answer); freeReplyObject. */
static redisReply *ask(int port, const char *fmt, const char *arg)
{
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (strncmp(fmt, "SENTINEL", 8) == 0) { /* the sentinels have a password of their own */
        redisReply *a = redisCommand(c, "AUTH %s", SENTINEL_PASSWORD);
        if (a)
            freeReplyObject(a);
    }
    redisReply *r = redisCommand(c, fmt, arg);
    redisFree(c);
    return r;
}

/* The port the sentinel on sport names as master m (0 when it does not answer). */
static int master_port(int sport)
{
    redisReply *r = ask(sport, "SENTINEL get-master-addr-by-name %s", "m");
    int port = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return port;
}

/* An integer field of SENTINEL MASTER m on sport (-1 when absent). */
static long master_field(int sport, const char *name)
{
    redisReply *r = ask(sport, "SENTINEL MASTER %s", "m");
    long v = -1;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, name) == 0)
            v = atol(r->element[i + 1]->str);
    if (r)
        freeReplyObject(r);
    return v;
}

/* 1 when the replica on port has its link to the master up. */
static int replica_synced(int port)
{
    redisReply *r = ask(port, "INFO %s", "replication");
    int up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");
    if (r)
        freeReplyObject(r);
    return up;
}

/* ---- client load ---- */

typedef struct load {
    atomic_int stop;
    pthread_mutex_t lock;
    long sync_sent, sync_ok, sync_err, sync_none;
    long task_sent, task_ok, task_err, task_none;
    long long last_sync_ok; /* fx_now_ms() of the latest successful synchronous result */
    char *tasks[MAX_TASKS];
    int ntasks;
    char first_err[300];
} load_t;

static load_t ld = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Posts a tools/call; 1 result, 0 JSON-RPC error or error result, -1 no answer. The parsed
 * response in *out (caller frees) when answered. */
static int call(const char *body, cJSON **out)
{
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ing_port);
    const char *hdrs[] = {KEY, NULL};
    fx_reply_t *r = calloc(1, sizeof(*r));
    CHECK(r != NULL);
    int rc = -1;
    *out = NULL;
    if (fx_http_post(url, hdrs, body, r) == 0) {
        cJSON *j = cJSON_Parse(r->body);
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "result");
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (cJSON_IsObject(res))
            rc = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError")) ? 0 : 1;
        else if (cJSON_IsObject(err))
            rc = 0;
        if (rc == 0) {
            pthread_mutex_lock(&ld.lock);
            if (!ld.first_err[0])
                snprintf(ld.first_err, sizeof(ld.first_err), "%.*s", 290, r->body);
            pthread_mutex_unlock(&ld.lock);
        }
        if (rc >= 0)
            *out = j;
        else
            cJSON_Delete(j);
    }
    if (rc < 0)
        fprintf(stderr, "no answer: HTTP %ld after %lld ms: %.200s\n", r->status, r->ms, r->body);
    free(r);
    return rc;
}

static void *sync_thread(void *arg)
{
    (void)arg;
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                       "{\"name\":\"echo\",\"arguments\":{}}}";
    while (!atomic_load(&ld.stop)) {
        cJSON *j = NULL;
        int rc = call(body, &j);
        cJSON_Delete(j);
        pthread_mutex_lock(&ld.lock);
        ld.sync_sent++;
        if (rc > 0) {
            ld.sync_ok++;
            ld.last_sync_ok = fx_now_ms();
        } else if (rc == 0) {
            ld.sync_err++;
        } else {
            ld.sync_none++;
        }
        pthread_mutex_unlock(&ld.lock);
        fx_sleep_ms(20);
    }
    return NULL;
}

static void *task_thread(void *arg)
{
    (void)arg;
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                       "{\"name\":\"job\",\"arguments\":{}}}";
    while (!atomic_load(&ld.stop)) {
        cJSON *j = NULL;
        int rc = call(body, &j);
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "result"), "structuredContent");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId"));
        pthread_mutex_lock(&ld.lock);
        ld.task_sent++;
        if (rc > 0 && id && ld.ntasks < MAX_TASKS) {
            ld.task_ok++;
            ld.tasks[ld.ntasks++] = strdup(id);
        } else if (rc >= 0) {
            ld.task_err++;
        } else {
            ld.task_none++;
        }
        pthread_mutex_unlock(&ld.lock);
        cJSON_Delete(j);
        fx_sleep_ms(100);
    }
    return NULL;
}

/* The task's status through tasks/get ("" when there is no answer). */
static void task_status(const char *id, char *out, size_t size)
{
    char body[300];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/get\",\"params\":{\"taskId\":"
             "\"%s\"}}",
             id);
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ing_port);
    const char *hdrs[] = {KEY, NULL};
    fx_reply_t *r = calloc(1, sizeof(*r));
    CHECK(r != NULL);
    out[0] = 0;
    if (fx_http_post(url, hdrs, body, r) == 0) {
        cJSON *j = cJSON_Parse(r->body);
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "result"), "status"));
        snprintf(out, size, "%s", s ? s : "");
        cJSON_Delete(j);
    }
    free(r);
}

static int terminal(const char *status)
{
    return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "cancelled") == 0;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(dir, sizeof(dir), "%s", fx.dir);

    /* Master, replica, three sentinels. */
    int pm = fx_free_port(), pr = fx_free_port();
    pid_t master = redis_start(pm, 0, "master");
    pid_t replica = redis_start(pr, pm, "replica");
    long long until = fx_now_ms() + 15000;
    while (!replica_synced(pr) && fx_now_ms() < until)
        fx_sleep_ms(100);
    CHECK(replica_synced(pr));
    int sp[NSENTINELS];
    pid_t spid[NSENTINELS];
    char sentinels[200] = "";
    for (int i = 0; i < NSENTINELS; i++) {
        sp[i] = fx_free_port();
        char conf[400], text[600], log[400];
        snprintf(conf, sizeof(conf), "%s/sentinel%d.conf", dir, i);
        snprintf(log, sizeof(log), "%s/sentinel%d.log", dir, i);
        snprintf(text, sizeof(text),
                 "port %d\nbind 127.0.0.1\ndir %s\n"
                 "requirepass " SENTINEL_PASSWORD "\nsentinel sentinel-pass " SENTINEL_PASSWORD "\n"
                 "sentinel monitor m 127.0.0.1 %d 2\n"
                 "sentinel down-after-milliseconds m 1000\n"
                 "sentinel failover-timeout m 5000\n"
                 "sentinel parallel-syncs m 1\n",
                 sp[i], dir, pm);
        fx_write_file(conf, text, 0600);
        const char *argv[] = {"redis-sentinel", conf, NULL};
        spid[i] = fx_spawn(argv, NULL, log);
        CHECK(spid[i] > 0);
        size_t n = strlen(sentinels);
        snprintf(sentinels + n, sizeof(sentinels) - n, "%s127.0.0.1:%d", i ? "," : "", sp[i]);
    }
    /* Each sentinel knows the replica and the two others (hello messages every 2 s). */
    until = fx_now_ms() + 30000;
    int ready = 0;
    while (!ready && fx_now_ms() < until) {
        ready = 1;
        for (int i = 0; i < NSENTINELS; i++)
            if (master_port(sp[i]) != pm || master_field(sp[i], "num-other-sentinels") != 2 ||
                master_field(sp[i], "num-slaves") < 1)
                ready = 0;
        if (!ready)
            fx_sleep_ms(200);
    }
    CHECK(ready);
    printf("sentinels ready: master :%d, replica :%d, sentinels %s\n", pm, pr, sentinels);

    /* Ingress and worker through the sentinels. */
    char tool[400], cfg_path[400], cfg[2048];
    snprintf(tool, sizeof(tool), "%s/tool.sh", dir);
    fx_write_file(tool, tool_sh, 0755);
    snprintf(cfg_path, sizeof(cfg_path), "%s/config.json", dir);
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
             "\"sentinel-key\"}]}],"
             " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
             " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\","
             " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"timeout_ms\": 5000,"
             " \"inputSchema\": {\"type\": \"object\"},"
             " \"executor\": {\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"%s\"]}}]},"
             " {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"job\","
             " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
             " \"timeout_ms\": 10000, \"inputSchema\": {\"type\": \"object\"},"
             " \"executor\": {\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"%s\"]}}]}]}",
             tool, tool);
    fx_write_file(cfg_path, cfg, 0600);
    char e_sent[256], spw[400], e_spw[440];
    snprintf(e_sent, sizeof(e_sent), "MCPQ_REDIS_SENTINELS=%s", sentinels);
    snprintf(spw, sizeof(spw), "%s/sentinel-password", dir);
    fx_write_file(spw, SENTINEL_PASSWORD "\n", 0600);
    snprintf(e_spw, sizeof(e_spw), "MCPQ_REDIS_SENTINEL_PASSWORD_FILE=%s", spw);
    const char *env[] = {"MCPQ_REDIS_URL=redis://m/0",
                         e_sent,
                         e_spw,
                         "MCPQ_REDIS_MASTER=m",
                         "MCPQ_REDIS_WAIT_REPLICAS=1",
                         "MCPQ_REDIS_WAIT_TIMEOUT_MS=300",
                         "MCPQ_TASK_LEASE_MS=2000",
                         NULL};
    ing_port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", ing_port, cfg_path, env, NULL, 0);
    CHECK(ing > 0);
    pid_t wrk = fx_spawn_worker(&fx, "w1", env);
    CHECK(wrk > 0);

    /* Load, then the master dies. */
    pthread_t ts, tt;
    CHECK_INT_EQ(pthread_create(&ts, NULL, sync_thread, NULL), 0);
    CHECK_INT_EQ(pthread_create(&tt, NULL, task_thread, NULL), 0);
    fx_sleep_ms(3000);
    pthread_mutex_lock(&ld.lock);
    long ok_before = ld.sync_ok, tasks_before = ld.task_ok;
    pthread_mutex_unlock(&ld.lock);
    printf("before the kill: %ld synchronous results, %ld tasks accepted\n", ok_before,
           tasks_before);
    CHECK(ok_before > 0 && tasks_before > 0);
    long long t_kill = fx_now_ms();
    CHECK_INT_EQ(kill(master, SIGKILL), 0);
    fx_wait_exit(master, 5000);

    /* The sentinels promote the replica. */
    int promoted = 0;
    while (!promoted && fx_now_ms() < t_kill + PROMOTE_MS) {
        promoted = 1;
        for (int i = 0; i < NSENTINELS; i++)
            if (master_port(sp[i]) != pr)
                promoted = 0;
        if (!promoted)
            fx_sleep_ms(100);
    }
    CHECK(promoted);
    long long t_promo = fx_now_ms();
    printf("replica promoted %lld ms after the kill\n", t_promo - t_kill);
    /* The old master comes back as a replica of the new one (WAIT 1 can be met again). */
    master = redis_start(pm, pr, "master-again");
    until = fx_now_ms() + 15000;
    while (!replica_synced(pm) && fx_now_ms() < until)
        fx_sleep_ms(100);
    CHECK(replica_synced(pm));
    printf("old master back as a replica %lld ms after the promotion\n", fx_now_ms() - t_promo);

    /* Synchronous calls succeed again after the promotion. */
    long long first_ok = 0;
    until = t_promo + RECOVER_MS;
    while (!first_ok && fx_now_ms() < until) {
        pthread_mutex_lock(&ld.lock);
        if (ld.last_sync_ok > t_promo)
            first_ok = ld.last_sync_ok;
        pthread_mutex_unlock(&ld.lock);
        fx_sleep_ms(50);
    }
    CHECK(first_ok > 0);
    printf("a synchronous call succeeded %lld ms after the promotion\n", first_ok - t_promo);
    long long load_end = t_promo + AFTER_MS;
    while (fx_now_ms() < load_end)
        fx_sleep_ms(100);
    pthread_mutex_lock(&ld.lock);
    long long last_ok = ld.last_sync_ok;
    pthread_mutex_unlock(&ld.lock);
    CHECK(last_ok > fx_now_ms() - 3000); /* still being answered */

    /* A master demoted while it stays reachable: switched by hand (REPLICAOF, which closes
     * no client connection, unlike a Sentinel failover), the sentinels told afterwards.
     * Connections to the old master now get -READONLY on writes; they must be dropped and
     * made again through the sentinels, else results are never written and calls time out. */
    for (int i = 0; i < NSENTINELS; i++) {
        redisReply *r = ask(sp[i], "SENTINEL REMOVE %s", "m");
        if (!r || r->type != REDIS_REPLY_STATUS)
            fprintf(stderr, "SENTINEL REMOVE on :%d: %s\n", sp[i],
                    r ? (r->str ? r->str : "?") : "no answer");
        CHECK(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    redisReply *r = ask(pm, "REPLICAOF NO %s", "ONE");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    char of[32];
    snprintf(of, sizeof(of), "%d", pm);
    struct timeval tv = {1, 0};
    redisContext *pc = redisConnectWithTimeout("127.0.0.1", pr, tv);
    CHECK(pc && !pc->err);
    r = redisCommand(pc, "REPLICAOF 127.0.0.1 %s", of);
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(pc);
    for (int i = 0; i < NSENTINELS; i++) {
        r = ask(sp[i], "SENTINEL MONITOR m 127.0.0.1 %s 2", of);
        CHECK(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        r = ask(sp[i], "SENTINEL SET m down-after-milliseconds %s", "1000");
        if (r)
            freeReplyObject(r);
    }
    long long t_switch = fx_now_ms();
    until = t_switch + 15000;
    while (!replica_synced(pr) && fx_now_ms() < until)
        fx_sleep_ms(100);
    CHECK(replica_synced(pr));
    /* Calls made after the switch are answered with results. */
    fx_sleep_ms(500);
    pthread_mutex_lock(&ld.lock);
    long ok_switch = ld.sync_ok;
    pthread_mutex_unlock(&ld.lock);
    long long ok_after = 0;
    until = t_switch + RECOVER_MS;
    while (!ok_after && fx_now_ms() < until) {
        pthread_mutex_lock(&ld.lock);
        if (ld.sync_ok >= ok_switch + 5)
            ok_after = ld.last_sync_ok;
        pthread_mutex_unlock(&ld.lock);
        fx_sleep_ms(50);
    }
    CHECK(ok_after > 0);
    printf("after a hand-made switch (old master demoted, reachable): synchronous results "
           "again %lld ms after it\n",
           ok_after - t_switch);
    atomic_store(&ld.stop, 1);
    pthread_join(ts, NULL);
    pthread_join(tt, NULL);

    /* Every accepted task ends, readable through tasks/get. */
    int nterm = 0, nleft = 0;
    char status[64] = "";
    until = fx_now_ms() + TASKS_END_MS;
    for (int i = 0; i < ld.ntasks; i++) {
        for (;;) {
            task_status(ld.tasks[i], status, sizeof(status));
            if (terminal(status) || fx_now_ms() >= until)
                break;
            fx_sleep_ms(200);
        }
        if (terminal(status)) {
            nterm++;
        } else {
            nleft++;
            fprintf(stderr, "task %s: status \"%s\" at the end\n", ld.tasks[i], status);
        }
    }
    printf("synchronous calls: sent %ld, answered ok %ld, answered with an error %ld, "
           "unanswered %ld\n",
           ld.sync_sent, ld.sync_ok, ld.sync_err, ld.sync_none);
    printf("task calls: sent %ld, accepted %ld, answered with an error %ld, unanswered %ld; "
           "accepted tasks terminal %d, not terminal %d\n",
           ld.task_sent, ld.task_ok, ld.task_err, ld.task_none, nterm, nleft);
    if (ld.first_err[0])
        printf("first error answer: %s\n", ld.first_err);
    CHECK_INT_EQ(ld.sync_none, 0);
    CHECK_INT_EQ(ld.task_none, 0);
    CHECK_INT_EQ(nleft, 0);
    CHECK(ld.sync_ok > ok_before);

    for (int i = 0; i < ld.ntasks; i++)
        free(ld.tasks[i]);
    fx_stop_pid(wrk, 10000);
    fx_stop_pid(ing, 10000);
    fx_stop_pid(master, 5000);
    fx_stop_pid(replica, 5000);
    for (int i = 0; i < NSENTINELS; i++)
        fx_stop_pid(spid[i], 5000);
    fx_stop(&fx);
    curl_global_cleanup();
    printf("ok\n");
    return 0;
}
