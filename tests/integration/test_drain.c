/*
 * Graceful drain on SIGTERM (docs/operations.md "Stopping: SIGTERM drains") on a real stack:
 * redis-server, mcpq-devbroker, mcpq-ingress replicas and workers that are dynamic group
 * members (no MCPQ_WORKER_ID, as the Kubernetes worker Deployment runs them). What a client
 * sees:
 *   a. ingress with MCPQ_DRAIN_DELAY_MS=1500: after SIGTERM /readyz is 503 with
 *      "draining":true while a new tools/call is still accepted and answered; after the delay
 *      a new connection is refused; the call in flight before the signal and the one accepted
 *      during the delay both get their real results; exit 0;
 *   c1. a worker stopped with MCPQ_SHUTDOWN_GRACE_MS shorter than its job exits 0, releasing
 *      the job: it left the group (the other worker is asked to rebalance within seconds, not
 *      after the 10 s session timeout), the other worker runs the job again and the client's
 *      call gets exactly one result;
 *   c2. a worker stopped with a grace longer than its job finishes it: the client gets the
 *      result, the worker exits 0, the group's committed offsets cover the job (rd_kafka_committed
 *      against the broker) and a worker started afterwards does not run it again;
 *   b. ingress with MCPQ_SHUTDOWN_GRACE_MS=1000 and 10 s calls in flight: a plain JSON call and
 *      an SSE call (with a progress event already sent) each get a complete HTTP response
 *      holding JSON-RPC error -32603, not a dropped connection; with MCPQ_DRAIN_DELAY_MS=60000
 *      a second SIGTERM skips the rest of the delay; exit 0.
 * Durations are only hang guards, except c1's bound on when the rebalance begins (5 s, half
 * the session timeout a member that does not leave would hold its partitions for). The
 * devbroker's group takes ~9 s to settle after a member leaves (librdkafka's mock cluster
 * waits session timeout - 1 s), hence the few worker starts and stops.
 */
#include "check.h"
#include "fixture.h"

#include <curl/curl.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY "Authorization: Bearer d-key"
#define TOPIC "mcpq.jobs"
#define GROUP "mcpq-workers"
#define PARTITIONS 2

static fx_stack_t fx;

/* ---- HTTP exchanges ---- */

typedef struct exchange {
    char url[160];
    char body[1024]; /* POST body; "" for a GET */
    int sse;         /* Accept: text/event-stream too */
    pthread_t th;
    pthread_mutex_t lock; /* guards resp and len while the thread runs */
    /* outcome */
    CURLcode rc;
    long status;
    char ctype[64];
    char resp[16384];
    size_t len;
} exchange_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    exchange_t *x = arg;
    pthread_mutex_lock(&x->lock);
    size_t k = size * n, room = sizeof(x->resp) - 1 - x->len, c = k < room ? k : room;
    memcpy(x->resp + x->len, p, c);
    x->len += c;
    x->resp[x->len] = '\0';
    pthread_mutex_unlock(&x->lock);
    return k;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    exchange_t *x = arg;
    size_t k = size * n;
    if (k > 13 && strncasecmp(p, "Content-Type:", 13) == 0)
        snprintf(x->ctype, sizeof(x->ctype), "%.*s", (int)(k - 13), p + 13);
    return k;
}

static void *exchange_run(void *arg)
{
    exchange_t *x = arg;
    struct curl_slist *hl = curl_slist_append(NULL, KEY);
    hl = curl_slist_append(hl, x->sse ? "Accept: application/json, text/event-stream"
                                      : "Accept: application/json");
    if (x->body[0])
        hl = curl_slist_append(hl, "Content-Type: application/json");
    CURL *c = curl_easy_init();
    CHECK(c != NULL && hl != NULL);
    curl_easy_setopt(c, CURLOPT_URL, x->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    if (x->body[0])
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, x->body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L); /* a hang guard */
    x->rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return NULL;
}

static void exchange_init(exchange_t *x, int port, const char *path, const char *body, int sse)
{
    memset(x, 0, sizeof(*x));
    snprintf(x->url, sizeof(x->url), "http://127.0.0.1:%d%s", port, path);
    snprintf(x->body, sizeof(x->body), "%s", body ? body : "");
    x->sse = sse;
    pthread_mutex_init(&x->lock, NULL);
}

/* 1 when what the exchange received so far holds needle. */
static int exchange_has(exchange_t *x, const char *needle)
{
    pthread_mutex_lock(&x->lock);
    int has = strstr(x->resp, needle) != NULL;
    pthread_mutex_unlock(&x->lock);
    return has;
}

/* The exchange, run to its end on this thread. */
static void exchange(exchange_t *x, int port, const char *path, const char *body)
{
    exchange_init(x, port, path, body, 0);
    exchange_run(x);
    pthread_mutex_destroy(&x->lock);
}

/* A tools/call of tool with arguments args (JSON object text), started on a thread. */
static void call_start(exchange_t *x, int port, const char *tool, const char *args, int sse)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
             "\"arguments\":%s%s}}",
             tool, args, sse ? ",\"_meta\":{\"progressToken\":\"p1\"}" : "");
    exchange_init(x, port, "/mcp", body, sse);
    CHECK_INT_EQ(pthread_create(&x->th, NULL, exchange_run, x), 0);
}

static void call_join(exchange_t *x)
{
    pthread_join(x->th, NULL);
    pthread_mutex_destroy(&x->lock);
}

/* A complete 200 answer holding the tool's result text (no JSON-RPC error). */
static void check_result(const exchange_t *x, const char *text)
{
    if (x->rc != CURLE_OK || x->status != 200 || !strstr(x->resp, text) ||
        strstr(x->resp, "\"error\""))
        fprintf(stderr, "call %s: curl %d, status %ld, body: %s\n", x->body, (int)x->rc, x->status,
                x->resp);
    CHECK_INT_EQ(x->rc, CURLE_OK);
    CHECK_INT_EQ(x->status, 200);
    CHECK_CONTAINS(x->resp, "\"result\":");
    CHECK_CONTAINS(x->resp, text);
    CHECK(strstr(x->resp, "\"error\"") == NULL);
}

/* ---- logs ---- */

static void worker_log(const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s.log", fx.dir, name);
}

/* Polls the logs of the named workers for a "job start" of tool until one has at least
 * times of them: its index, or -1 after ms. */
static int job_started(const char *const names[], int n, const char *tool, int times, int ms)
{
    char needle[160], path[300];
    snprintf(needle, sizeof(needle), "\"tool\":\"%s\"", tool);
    long long until = fx_now_ms() + ms;
    do {
        for (int i = 0; i < n; i++) {
            worker_log(names[i], path, sizeof(path));
            if (fx_log_count(path, "\"job start\"", needle) >= times)
                return i;
        }
        fx_sleep_ms(20);
    } while (fx_now_ms() < until);
    return -1;
}

/* Starts the named workers at once (one join, one rebalance of the devbroker's group instead
 * of one per worker) as dynamic group members: no MCPQ_WORKER_ID, as the Kubernetes worker
 * Deployment runs them. Waits until each has its partitions (its ready file). */
static void workers_start(const char *const names[], pid_t pids[], int n, const char *grace)
{
    char bin[300], e_b[300], e_r[160], e_grace[64], e_rf[4][340], ready[4][300], log[300];
    CHECK(n <= 4);
    snprintf(bin, sizeof(bin), "%s/mcpq-worker", fx_bin_dir());
    snprintf(e_b, sizeof(e_b), "MCPQ_KAFKA_BROKERS=%s", fx.brokers);
    snprintf(e_r, sizeof(e_r), "MCPQ_REDIS_URL=%s", fx.redis_url);
    snprintf(e_grace, sizeof(e_grace), "MCPQ_SHUTDOWN_GRACE_MS=%s", grace);
    for (int i = 0; i < n; i++) {
        snprintf(ready[i], sizeof(ready[i]), "%s/%s.ready", fx.dir, names[i]);
        snprintf(e_rf[i], sizeof(e_rf[i]), "MCPQ_READY_FILE=%s/%s.ready", fx.dir, names[i]);
        snprintf(log, sizeof(log), "%s/%s.log", fx.dir, names[i]);
        const char *env[] = {e_b, e_r, e_grace, e_rf[i], "MCPQ_KILL_GRACE_MS=500", fx.job_key_env,
                             NULL};
        const char *argv[] = {bin, NULL};
        pids[i] = fx_spawn(argv, env, log);
        CHECK(pids[i] > 0);
    }
    for (int i = 0; i < n; i++)
        if (fx_wait_file(ready[i], 60000) < 0) {
            fprintf(stderr, "worker %s not ready in 60 s\n", names[i]);
            exit(1);
        }
}

/* ---- Kafka: the group's committed offsets ---- */

/* 1 when, for every partition of the jobs topic, the committed offset of the workers' group is
 * its high watermark (every record consumed was committed). */
static int offsets_all_committed(void)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    CHECK(rd_kafka_conf_set(conf, "bootstrap.servers", fx.brokers, errstr, sizeof(errstr)) ==
          RD_KAFKA_CONF_OK);
    CHECK(rd_kafka_conf_set(conf, "group.id", GROUP, errstr, sizeof(errstr)) == RD_KAFKA_CONF_OK);
    CHECK(rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr)) ==
          RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    CHECK(rk != NULL); /* conf now owned by rk */
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(PARTITIONS);
    for (int p = 0; p < PARTITIONS; p++)
        rd_kafka_topic_partition_list_add(list, TOPIC, p);
    CHECK_INT_EQ(rd_kafka_committed(rk, list, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    int ok = 1, records = 0;
    for (int i = 0; i < list->cnt; i++) {
        int64_t lo = 0, hi = 0;
        CHECK_INT_EQ(
            rd_kafka_query_watermark_offsets(rk, TOPIC, list->elems[i].partition, &lo, &hi, 10000),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        int64_t committed = list->elems[i].offset;
        records += (int)(hi - lo);
        if (committed != hi && !(hi == lo && committed < 0)) {
            fprintf(stderr, "partition %d: committed %lld, high watermark %lld\n",
                    (int)list->elems[i].partition, (long long)committed, (long long)hi);
            ok = 0;
        }
    }
    CHECK(records > 0);
    rd_kafka_topic_partition_list_destroy(list);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return ok;
}

/* ---- the stack ---- */

static char config_path[300], script_path[300];

static const char script[] = "#!/bin/sh\n"
                             "cat >/dev/null\n"
                             "echo 'progress 1 2 working' >&2\n"
                             "sleep 10\n"
                             "printf '{\"content\":[{\"type\":\"text\",\"text\":\"done\"}],"
                             "\"isError\":false}'\n";

static void write_config(void)
{
    static const char *const sleepers[] = {"nap", "napc1", "napc2", "nap10"};
    char tools[4096] = "";
    size_t off = 0;
    for (size_t i = 0; i < sizeof(sleepers) / sizeof(sleepers[0]); i++)
        off += (size_t)snprintf(
            tools + off, sizeof(tools) - off,
            "{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"%s\", \"published\": "
            "\"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"}, "
            "\"executor\": {\"type\": \"builtin\", \"name\": \"sleep\"}}]},",
            sleepers[i]);
    snprintf(tools + off, sizeof(tools) - off,
             "{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"prog\", \"published\": "
             "\"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"}, "
             "\"executor\": {\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"%s\"]}}]}",
             script_path);
    char cfg[6144];
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"d-key\"}]}],"
             " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}], \"tools\": [%s]}",
             tools);
    fx_write_file(config_path, cfg, 0600);
}

static pid_t ingress(const char *name, int port, const char *const env[], char *log,
                     size_t log_size)
{
    pid_t pid = fx_spawn_ingress(&fx, name, port, config_path, env, log, log_size);
    CHECK(pid > 0);
    return pid;
}

/* 1 when a connection to port is refused (the listen socket is closed). */
static int refused(int port)
{
    exchange_t x;
    exchange(&x, port, "/healthz", NULL);
    return x.rc == CURLE_COULDNT_CONNECT;
}

static int new_port(void)
{
    int p = fx_free_port();
    CHECK(p > 0);
    return p;
}

/* ---- a. drain delay, then grace: calls in flight finish ---- */

static void scenario_a(const char *const workers[])
{
    int port = new_port();
    char log[300];
    const char *env[] = {"MCPQ_DRAIN_DELAY_MS=1500", "MCPQ_SHUTDOWN_GRACE_MS=8000", NULL};
    pid_t pid = ingress("ingress-a", port, env, log, sizeof(log));

    exchange_t ready;
    exchange(&ready, port, "/readyz", NULL);
    CHECK_INT_EQ(ready.status, 200);
    CHECK_CONTAINS(ready.resp, "\"draining\":false");

    exchange_t slow, during;
    call_start(&slow, port, "nap", "{\"ms\":2500}", 0);
    CHECK(job_started(workers, 2, "nap", 1, 20000) >= 0);
    CHECK_INT_EQ(kill(pid, SIGTERM), 0);
    fx_sleep_ms(100);

    /* The delay: not ready, still serving. */
    exchange(&ready, port, "/readyz", NULL);
    CHECK_INT_EQ(ready.rc, CURLE_OK);
    CHECK_INT_EQ(ready.status, 503);
    CHECK_CONTAINS(ready.resp, "\"draining\":true");
    CHECK_CONTAINS(ready.resp, "\"ready\":false");
    CHECK_CONTAINS(ready.resp, "\"kafka\":true");
    TEST_PASS("a: during the drain delay /readyz is 503 with draining:true");
    call_start(&during, port, "nap", "{\"ms\":300}", 0);

    /* After the delay: refused, while the first call is still running. */
    long long until = fx_now_ms() + 15000;
    while (!refused(port) && fx_now_ms() < until)
        fx_sleep_ms(50);
    CHECK(refused(port));
    TEST_PASS("a: after the drain delay a new connection is refused");

    call_join(&during);
    check_result(&during, "slept 300 ms");
    TEST_PASS("a: a tools/call sent during the drain delay is accepted and answered");
    call_join(&slow);
    check_result(&slow, "slept 2500 ms");
    TEST_PASS("a: the call in flight at SIGTERM gets its result within the grace");
    CHECK_INT_EQ(fx_wait_exit(pid, 20000), 0);
    CHECK(fx_log_count(log, "draining: /readyz fails", "\"in_flight\":\"1\"") == 1);
    CHECK(fx_log_count(log, "no longer accepting", NULL) == 1);
    CHECK(fx_log_count(log, "every call in flight answered", NULL) == 1);
    TEST_PASS("a: the ingress exits 0 after logging each drain phase");
}

/* ---- c1. a worker's grace is shorter than its job: released, redelivered ---- */

static int scenario_c1(pid_t pids[2], const char *const names[2], int port)
{
    exchange_t x;
    call_start(&x, port, "napc1", "{\"ms\":3000}", 0);
    int runner = job_started(names, 2, "napc1", 1, 20000);
    CHECK(runner >= 0);
    int other = 1 - runner;
    char rlog[300], olog[300];
    worker_log(names[runner], rlog, sizeof(rlog));
    worker_log(names[other], olog, sizeof(olog));
    int revoked = fx_log_count(olog, "\"partitions revoked\"", NULL);

    CHECK_INT_EQ(fx_stop_pid(pids[runner], 20000), 0); /* grace 500 ms < the job's 3 s */
    pids[runner] = 0;
    CHECK(fx_log_count(rlog, "abandoning unfinished jobs", "\"jobs\":\"1\"") == 1);
    CHECK(fx_log_count(rlog, "worker stopped", NULL) == 1);
    TEST_PASS("c1: a worker whose job outlasts its grace releases it and exits 0");

    /* The stopped worker left the group: the other one is asked to rebalance at its next
     * heartbeat (1 s), not after the 10 s session timeout a member that just vanished gets. */
    long long t0 = fx_now_ms();
    while (fx_log_count(olog, "\"partitions revoked\"", NULL) == revoked &&
           fx_now_ms() - t0 < 20000)
        fx_sleep_ms(20);
    long long rebalance_ms = fx_now_ms() - t0;
    CHECK(fx_log_count(olog, "\"partitions revoked\"", NULL) > revoked);
    CHECK(job_started(&names[other], 1, "napc1", 1, 30000) == 0);
    printf("# c1: rebalance began %lld ms after the worker exited; redelivered after %lld ms\n",
           rebalance_ms, fx_now_ms() - t0);
    CHECK(rebalance_ms < 5000);
    TEST_PASS("c1: the stopped worker left the group; the job is redelivered to the other worker");

    call_join(&x);
    check_result(&x, "slept 3000 ms");
    CHECK(strstr(strstr(x.resp, "slept 3000 ms") + 1, "slept 3000 ms") == NULL);
    TEST_PASS("c1: the client's call gets exactly one result");
    return other;
}

/* ---- c2. a worker's grace is longer than its job: finished, committed ---- */

static void scenario_c2(pid_t *pid, const char *name, int port)
{
    exchange_t x;
    const char *names[] = {name};
    call_start(&x, port, "napc2", "{\"ms\":2000}", 0);
    CHECK(job_started(names, 1, "napc2", 1, 20000) == 0);
    char rlog[300];
    worker_log(name, rlog, sizeof(rlog));

    CHECK_INT_EQ(fx_stop_pid(*pid, 30000), 0); /* grace 8000 ms > the job's 2 s */
    *pid = 0;
    CHECK(fx_log_count(rlog, "abandoning unfinished jobs", NULL) == 0);
    call_join(&x);
    check_result(&x, "slept 2000 ms");
    TEST_PASS("c2: a worker whose job fits its grace finishes it, the client gets the result, "
              "exit 0");
    CHECK(offsets_all_committed());
    TEST_PASS("c2: the group's committed offsets cover the job (rd_kafka_committed)");
}

/* ---- b. grace over: -32603, as JSON and as the last SSE event ---- */

static void scenario_b(const char *const workers[], int nworkers)
{
    int port = new_port();
    char log[300];
    const char *env[] = {"MCPQ_DRAIN_DELAY_MS=60000", "MCPQ_SHUTDOWN_GRACE_MS=1000", NULL};
    pid_t pid = ingress("ingress-b", port, env, log, sizeof(log));

    exchange_t json, sse;
    call_start(&json, port, "nap10", "{\"ms\":10000}", 0);
    call_start(&sse, port, "prog", "{}", 1);
    CHECK(job_started(workers, nworkers, "nap10", 1, 20000) >= 0);
    CHECK(job_started(workers, nworkers, "prog", 1, 20000) >= 0);
    /* The SSE response has begun: its progress event arrived (or a keep-alive comment). */
    long long until = fx_now_ms() + 20000;
    while (!exchange_has(&sse, "notifications/progress") && fx_now_ms() < until)
        fx_sleep_ms(20);
    CHECK(exchange_has(&sse, "notifications/progress"));

    long long t0 = fx_now_ms();
    CHECK_INT_EQ(kill(pid, SIGTERM), 0);
    fx_sleep_ms(200);
    exchange_t ready;
    exchange(&ready, port, "/readyz", NULL);
    CHECK_INT_EQ(ready.status, 503);
    CHECK_CONTAINS(ready.resp, "\"draining\":true");
    CHECK_INT_EQ(kill(pid, SIGTERM), 0); /* skips the rest of the 60 s delay */

    call_join(&json);
    call_join(&sse);
    printf("# b: both calls answered %lld ms after SIGTERM\n", fx_now_ms() - t0);
    if (json.rc != CURLE_OK || sse.rc != CURLE_OK)
        fprintf(stderr, "json: curl %d %s\nsse: curl %d %s\n", (int)json.rc, json.resp, (int)sse.rc,
                sse.resp);
    CHECK_INT_EQ(json.rc, CURLE_OK);
    CHECK_INT_EQ(json.status, 200);
    CHECK_CONTAINS(json.ctype, "application/json");
    CHECK_CONTAINS(json.resp, "\"code\":-32603");
    CHECK_CONTAINS(json.resp, "server shutting down");
    CHECK_CONTAINS(json.resp, "\"id\":7");
    TEST_PASS("b: a JSON call still running after the grace gets a complete -32603 response");
    CHECK_INT_EQ(sse.rc, CURLE_OK); /* the chunked stream ended properly, no cut */
    CHECK_INT_EQ(sse.status, 200);
    CHECK_CONTAINS(sse.ctype, "text/event-stream");
    const char *err = strstr(sse.resp, "\"code\":-32603");
    CHECK(err != NULL);
    CHECK(strstr(sse.resp, "notifications/progress") < err);
    CHECK_CONTAINS(err, "\n\n"); /* the event is complete */
    TEST_PASS("b: an SSE call still running after the grace gets -32603 as its last event");

    CHECK_INT_EQ(fx_wait_exit(pid, 20000), 0);
    CHECK(fx_log_count(log, "drain delay cut short by a second signal", NULL) == 1);
    CHECK(fx_log_count(log, "shutdown grace over", "\"in_flight\":\"2\"") == 1);
    TEST_PASS("b: a second SIGTERM cuts the drain delay short; the ingress exits 0");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, PARTITIONS) < 0)
        return 1;
    snprintf(config_path, sizeof(config_path), "%s/drain.json", fx.dir);
    snprintf(script_path, sizeof(script_path), "%s/prog.sh", fx.dir);
    fx_write_file(script_path, script, 0700);
    write_config();

    /* a and c1: two workers with a short grace, one partition each. */
    const char *names[] = {"worker-1", "worker-2", "worker-3", "worker-4"};
    pid_t pids[4] = {0};
    workers_start(names, pids, 2, "500");
    scenario_a(names);

    int port = new_port();
    pid_t ing = ingress("ingress-c", port, NULL, NULL, 0);
    int left = scenario_c1(pids, names, port);

    /* c2: the worker left (idle) leaves; one with a long grace takes every partition. */
    CHECK_INT_EQ(fx_stop_pid(pids[left], 20000), 0);
    workers_start(&names[2], &pids[2], 1, "8000");
    scenario_c2(&pids[2], names[2], port);
    CHECK_INT_EQ(fx_stop_pid(ing, 20000), 0);

    /* A fresh worker starts from the committed offsets: it does not run the job again. */
    workers_start(&names[3], &pids[3], 1, "500");
    char log4[300];
    worker_log(names[3], log4, sizeof(log4));
    fx_sleep_ms(2000);
    CHECK_INT_EQ(fx_log_count(log4, "\"tool\":\"napc2\"", NULL), 0);
    CHECK_INT_EQ(fx_log_count(log4, "\"job start\"", NULL), 0);
    TEST_PASS("c2: a worker started afterwards does not run the finished job again");

    /* b: that worker runs the 10 s jobs; -32603 reaches their clients. */
    scenario_b(&names[3], 1);

    /* Its jobs outlast its grace: released, exit 0. */
    CHECK_INT_EQ(fx_stop_pid(pids[3], 20000), 0);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
