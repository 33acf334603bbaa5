/*
 * test_cancel.c - cancellation on mcpq-worker (docs/internals.md "Cancellation") against a
 * real redis-server and mcpq-devbroker (tests/fixture.c), with the ingress's side played by
 * this test: SET {mcpq}:cancel:<job_id> and/or PUBLISH mcpq:cancel <job_id>.
 *
 *   - SET + PUBLISH while an exec job runs: the tool gets SIGTERM, its process group is gone
 *     within seconds, a `cancelled` entry with the key's reason arrives, no result is written.
 *   - PUBLISH alone: the Pub/Sub path by itself stops the job (default reason).
 *   - SET alone, with a tool that ignores SIGTERM: the per-second key check finds it and the
 *     group is SIGKILLed after MCPQ_KILL_GRACE_MS.
 *   - an http job: the transfer is aborted (the server sees the connection closed).
 *   - the key set before the job is published: the job never starts, a `cancelled` entry
 *     arrives and its Kafka offset is committed.
 *   - Redis restarted: the subscriber comes back by itself (without spinning meanwhile) and a
 *     PUBLISH cancels again; the worker then exits 0 on SIGTERM.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TOPIC "mcpq.jobs"
#define GROUP "itest-cancel"
#define REPLY NAMES_KEY_REPLY "itest-cancel"
#define CHANNEL NAMES_CHAN_CANCEL
#define DEFAULT_REASON "{\"reason\":\"cancelled by the caller\"}"

static fx_stack_t fx;
static rd_kafka_t *producer, *offsets_reader;
static redisContext *redis;
static char script[512], worker_log[512];
static int32_t last_partition = -1;
static int64_t last_offset = -1;

/* ---- Kafka ---- */

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (msg->err)
        return;
    last_partition = msg->partition;
    last_offset = msg->offset;
}

/* Produces an envelope for job_id (executor is JSON text) and waits for its delivery:
 * last_partition/last_offset say where it went. */
static void produce_job(const char *job_id, const char *executor)
{
    char buf[8192];
    long long now = fx_now_ms();
    int n = snprintf(buf, sizeof(buf),
                     "{\"v\":1,\"job_id\":\"%s\",\"call_id\":1,\"tenant\":\"acme\","
                     "\"server\":\"default\",\"tool\":\"slow\",\"tool_version\":\"1\","
                     "\"arguments\":{},\"attachments\":[],\"task_id\":null,"
                     "\"channel_id\":\"c_1\",\"executor\":%s,\"mode\":\"sync\","
                     "\"timeout_ms\":60000,\"created_ms\":%lld,\"deadline_ms\":%lld,"
                     "\"reply_to\":\"" REPLY "\"}",
                     job_id, executor, now, now + 60000);
    CHECK(n > 0 && (size_t)n < sizeof(buf));
    last_partition = -1;
    last_offset = -1;
    CHECK_INT_EQ(rd_kafka_producev(
                     producer, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_KEY(job_id, strlen(job_id)),
                     RD_KAFKA_V_VALUE(buf, (size_t)n), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                     RD_KAFKA_V_HEADER("job_id", job_id, -1), RD_KAFKA_V_END),
                 0);
    CHECK_INT_EQ(rd_kafka_flush(producer, 10000), 0);
    CHECK(last_partition >= 0 && last_offset >= 0);
}

/* ---- Redis ---- */

static redisReply *rcmd(const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(redis, fmt, a, b);
    CHECK(r != NULL);
    return r;
}

static void cancel_key_set(const char *job_id, const char *reason_json)
{
    char key[256];
    snprintf(key, sizeof(key), NAMES_KEY_CANCEL "%s", job_id);
    redisReply *r = redisCommand(redis, "SET %s %s EX 86400", key, reason_json);
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* PUBLISH mcpq:cancel job_id; returns how many subscribers got it. */
static long long cancel_publish(const char *job_id)
{
    redisReply *r = rcmd("PUBLISH %s %s", CHANNEL, job_id);
    CHECK(r->type == REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

static int result_exists(const char *job_id)
{
    char key[256];
    snprintf(key, sizeof(key), NAMES_KEY_RESULT "%s", job_id);
    redisReply *r = rcmd("EXISTS %s", key, NULL);
    int n = (int)r->integer;
    freeReplyObject(r);
    return n;
}

/* Reply-stream entries of job_id with that kind; the data of the first one in *data. */
static int count_entries(const char *job_id, const char *kind, char *data, size_t size)
{
    redisReply *r = rcmd("XRANGE %s - +", REPLY, NULL);
    int n = 0;
    if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *f = r->element[i]->element[1];
            CHECK(f->elements == 6 || f->elements == 8); /* a result: with stored_us */
            if (strcmp(f->element[1]->str, job_id) != 0 || strcmp(f->element[3]->str, kind) != 0)
                continue;
            if (n++ == 0 && data)
                snprintf(data, size, "%s", f->element[f->elements - 1]->str);
        }
    }
    freeReplyObject(r);
    return n;
}

/* Waits for job_id's `cancelled` entry; its data in data. */
static void need_cancelled(const char *job_id, int timeout_ms, char *data, size_t size)
{
    long long end = fx_now_ms() + timeout_ms;
    while (count_entries(job_id, "cancelled", data, size) == 0) {
        if (fx_now_ms() >= end) {
            fprintf(stderr, "no cancelled entry for %s within %d ms (logs in %s)\n", job_id,
                    timeout_ms, fx.dir);
            CHECK(0);
        }
        fx_sleep_ms(20);
    }
}

/* Subscribers of mcpq:cancel. */
static long long subscribers(void)
{
    redisReply *r = rcmd("PUBSUB NUMSUB %s", CHANNEL, NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    long long n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
}

static void wait_subscribed(int timeout_ms)
{
    long long end = fx_now_ms() + timeout_ms;
    while (subscribers() < 1) {
        if (fx_now_ms() >= end) {
            fprintf(stderr, "the worker did not subscribe to %s (logs in %s)\n", CHANNEL, fx.dir);
            CHECK(0);
        }
        fx_sleep_ms(50);
    }
}

static void redis_connect(void)
{
    if (redis)
        redisFree(redis);
    long long end = fx_now_ms() + 10000;
    for (;;) {
        redis = redisConnect("127.0.0.1", fx.redis_port);
        if (redis && !redis->err) {
            redisReply *r = redisCommand(redis, "PING");
            int ok = r && r->type == REDIS_REPLY_STATUS;
            if (r)
                freeReplyObject(r);
            if (ok)
                return;
        }
        redisFree(redis);
        redis = NULL;
        CHECK(fx_now_ms() < end);
        fx_sleep_ms(50);
    }
}

/* ---- processes and files ---- */

static pid_t start_worker(const char *id)
{
    char bin[512], ready[512], e_b[300], e_r[200], e_id[100], e_rf[600];
    snprintf(bin, sizeof(bin), "%s/mcpq-worker", fx_bin_dir());
    snprintf(worker_log, sizeof(worker_log), "%s/%s.log", fx.dir, id);
    snprintf(ready, sizeof(ready), "%s/%s.ready", fx.dir, id);
    unlink(ready);
    snprintf(e_b, sizeof(e_b), "MCPQ_KAFKA_BROKERS=%s", fx.brokers);
    snprintf(e_r, sizeof(e_r), "MCPQ_REDIS_URL=%s", fx.redis_url);
    snprintf(e_id, sizeof(e_id), "MCPQ_WORKER_ID=%s", id);
    snprintf(e_rf, sizeof(e_rf), "MCPQ_READY_FILE=%s", ready);
    const char *env[] = {e_b, e_r, e_id, e_rf, "MCPQ_GROUP_ID=" GROUP, "MCPQ_KILL_GRACE_MS=500",
                         NULL};
    const char *argv[] = {bin, NULL};
    pid_t pid = fx_spawn(argv, env, worker_log);
    CHECK(pid > 0);
    if (fx_wait_file(ready, 60000) < 0) {
        fprintf(stderr, "worker %s not ready (log %s)\n", id, worker_log);
        CHECK(0);
    }
    return pid;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* 1 while pid exists and is not a zombie. */
/* CPU time (user + system) pid has used, in ms. */
static long long cpu_ms(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    CHECK(p != NULL);
    unsigned long long ut = 0, st = 0;
    /* After ")": state, then fields 4..13, then utime (14) and stime (15). */
    CHECK(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2);
    return (long long)(ut + st) * 1000 / sysconf(_SC_CLK_TCK);
}

/* The worker's log line with msg and job_id (NULL when none) in line. */
static int log_line(const char *msg, const char *job_id, char *line, size_t size)
{
    char want_msg[128], want_id[192];
    snprintf(want_msg, sizeof(want_msg), "\"msg\":\"%s\"", msg);
    snprintf(want_id, sizeof(want_id), "\"job_id\":\"%s\"", job_id);
    return fx_log_line(worker_log, want_msg, want_id, line, size);
}

/* The exec tool: "$1.started", then its pid and a background sleep's in "$1.pids", then it
 * waits for the sleep (30 s) and would write "$1.finished". $2 = "stubborn": SIGTERM is
 * ignored (by the sleep too); otherwise SIGTERM writes "$1.term" and exits. */
static void write_script(void)
{
    snprintf(script, sizeof(script), "%s/tool.sh", fx.dir);
    fx_write_file(script,
                  "#!/bin/sh\n"
                  "if [ \"$2\" = stubborn ]; then trap '' TERM;\n"
                  "else trap 'echo term > \"$1.term\"; exit 143' TERM; fi\n"
                  "echo started > \"$1.started\"\n"
                  "sleep 30 &\n"
                  "echo $$ > \"$1.tmp\"\n"
                  "echo $! >> \"$1.tmp\"\n"
                  "mv \"$1.tmp\" \"$1.pids\"\n"
                  "wait\n"
                  "echo finished > \"$1.finished\"\n",
                  0755);
}

typedef struct tool_run {
    char prefix[512], path[600];
    pid_t pids[2];
} tool_run_t;

static void exec_executor(const tool_run_t *t, const char *mode, char *out, size_t size)
{
    snprintf(out, size, "{\"type\":\"exec\",\"argv\":[\"%s\",\"%s\",\"%s\"]}", script, t->prefix,
             mode);
}

/* Publishes an exec job running the tool and waits until both its processes run. */
static void start_tool(tool_run_t *t, const char *job_id, const char *mode)
{
    char exec[2048];
    snprintf(t->prefix, sizeof(t->prefix), "%s/%s", fx.dir, job_id);
    exec_executor(t, mode, exec, sizeof(exec));
    produce_job(job_id, exec);
    snprintf(t->path, sizeof(t->path), "%s.pids", t->prefix);
    if (fx_wait_file(t->path, 30000) < 0) {
        fprintf(stderr, "%s did not start (logs in %s)\n", job_id, fx.dir);
        CHECK(0);
    }
    FILE *f = fopen(t->path, "r");
    CHECK(f != NULL);
    int a = 0, b = 0;
    CHECK(fscanf(f, "%d %d", &a, &b) == 2);
    fclose(f);
    t->pids[0] = a;
    t->pids[1] = b;
    CHECK(fx_alive(a) && fx_alive(b));
}

/* Milliseconds from t0 until both processes of the tool are gone (fails after limit_ms). */
static long long wait_tool_gone(const tool_run_t *t, long long t0, int limit_ms)
{
    while (fx_alive(t->pids[0]) || fx_alive(t->pids[1])) {
        if (fx_now_ms() - t0 > limit_ms) {
            fprintf(stderr, "tool %s still running %d ms after the cancellation (logs in %s)\n",
                    t->prefix, limit_ms, fx.dir);
            CHECK(0);
        }
        fx_sleep_ms(10);
    }
    return fx_now_ms() - t0;
}

static int tool_file(const tool_run_t *t, const char *suffix)
{
    char path[600];
    snprintf(path, sizeof(path), "%s.%s", t->prefix, suffix);
    return file_exists(path);
}

/* After the cancelled entry: no result, now or a little later, and no result entry. */
static void expect_no_result(const char *job_id)
{
    CHECK_INT_EQ(result_exists(job_id), 0);
    fx_sleep_ms(300);
    CHECK_INT_EQ(result_exists(job_id), 0);
    CHECK_INT_EQ(count_entries(job_id, "result", NULL, 0), 0);
    CHECK_INT_EQ(count_entries(job_id, "cancelled", NULL, 0), 1);
}

/* ---- the cases ---- */

static void test_set_and_publish(void)
{
    tool_run_t t;
    start_tool(&t, "j_c_pubsub", "polite");
    cancel_key_set("j_c_pubsub", "{\"reason\":\"user pressed stop\"}");
    long long t0 = fx_now_ms();
    CHECK(cancel_publish("j_c_pubsub") >= 1); /* the worker is subscribed */
    long long took = wait_tool_gone(&t, t0, 3000);
    CHECK(tool_file(&t, "term"));      /* SIGTERM first: the tool could clean up */
    CHECK(!tool_file(&t, "finished")); /* it never got to the end */
    char data[512];
    need_cancelled("j_c_pubsub", 5000, data, sizeof(data));
    CHECK_STR_EQ(data, "{\"reason\":\"user pressed stop\"}");
    expect_no_result("j_c_pubsub");
    char line[4096];
    CHECK(log_line("job cancelled", "j_c_pubsub", line, sizeof(line)));
    CHECK_CONTAINS(line, "\"tool\":\"slow\"");
    CHECK_CONTAINS(line, "\"started\":\"true\"");
    CHECK_CONTAINS(line, "\"duration_ms\":\"");
    printf("# SET+PUBLISH: tool gone after %lld ms\n", took);
    TEST_PASS("SET+PUBLISH: SIGTERM to the group, cancelled entry with the reason, no result");
}

static void test_publish_only(void)
{
    tool_run_t t;
    start_tool(&t, "j_c_pubonly", "polite");
    long long t0 = fx_now_ms();
    CHECK(cancel_publish("j_c_pubonly") >= 1);
    wait_tool_gone(&t, t0, 3000);
    char data[512];
    need_cancelled("j_c_pubonly", 5000, data, sizeof(data));
    CHECK_STR_EQ(data, DEFAULT_REASON); /* no key: the default reason */
    expect_no_result("j_c_pubonly");
    TEST_PASS("PUBLISH alone (no key): the Pub/Sub message stops the job");
}

static void test_key_only(void)
{
    tool_run_t t;
    start_tool(&t, "j_c_keyonly", "stubborn");
    long long t0 = fx_now_ms();
    cancel_key_set("j_c_keyonly", "{\"reason\":\"missed message\"}");
    /* At most a second until the check, then SIGTERM (ignored), SIGKILL 500 ms later. */
    long long took = wait_tool_gone(&t, t0, 3500);
    CHECK(!tool_file(&t, "finished"));
    char data[512];
    need_cancelled("j_c_keyonly", 5000, data, sizeof(data));
    CHECK_STR_EQ(data, "{\"reason\":\"missed message\"}");
    expect_no_result("j_c_keyonly");
    printf("# key only: tool gone after %lld ms\n", took);
    TEST_PASS("key without PUBLISH: the per-second check stops it (SIGKILL after the grace)");
}

/* ---- http: a server that accepts and never answers ---- */

static pthread_mutex_t http_lock = PTHREAD_MUTEX_INITIALIZER;
static int http_accepted, http_closed;

static void *http_hold(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    pthread_mutex_lock(&http_lock);
    http_accepted = 1;
    pthread_mutex_unlock(&http_lock);
    char buf[4096];
    while (read(fd, buf, sizeof(buf)) > 0)
        ; /* the request; then nothing until the worker hangs up */
    pthread_mutex_lock(&http_lock);
    http_closed = 1;
    pthread_mutex_unlock(&http_lock);
    close(fd);
    return NULL;
}

static int http_flag(const int *flag)
{
    pthread_mutex_lock(&http_lock);
    int v = *flag;
    pthread_mutex_unlock(&http_lock);
    return v;
}

static void test_http(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    CHECK(bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
    CHECK(listen(lfd, 4) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)&a, &alen) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, http_hold, (void *)(intptr_t)lfd) == 0);
    char exec[256];
    snprintf(exec, sizeof(exec), "{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/hold\"}",
             ntohs(a.sin_port));
    produce_job("j_c_http", exec);
    long long end = fx_now_ms() + 30000;
    while (!http_flag(&http_accepted) && fx_now_ms() < end)
        fx_sleep_ms(20);
    CHECK(http_flag(&http_accepted));
    fx_sleep_ms(200);
    CHECK(!http_flag(&http_closed));
    cancel_key_set("j_c_http", "{\"reason\":\"no longer needed\"}");
    long long t0 = fx_now_ms();
    CHECK(cancel_publish("j_c_http") >= 1);
    while (!http_flag(&http_closed) && fx_now_ms() - t0 < 3000)
        fx_sleep_ms(10);
    CHECK(http_flag(&http_closed)); /* the transfer was aborted */
    char data[512];
    need_cancelled("j_c_http", 5000, data, sizeof(data));
    CHECK_STR_EQ(data, "{\"reason\":\"no longer needed\"}");
    expect_no_result("j_c_http");
    pthread_join(th, NULL);
    close(lfd);
    TEST_PASS("http: the transfer is aborted, cancelled entry, no result");
}

static void test_cancelled_before_start(void)
{
    tool_run_t t;
    char exec[2048];
    snprintf(t.prefix, sizeof(t.prefix), "%s/j_c_before", fx.dir);
    exec_executor(&t, "polite", exec, sizeof(exec));
    cancel_key_set("j_c_before", "{\"reason\":\"changed my mind\"}");
    produce_job("j_c_before", exec);
    int32_t part = last_partition;
    int64_t off = last_offset;
    char data[512];
    need_cancelled("j_c_before", 30000, data, sizeof(data));
    CHECK_STR_EQ(data, "{\"reason\":\"changed my mind\"}");
    expect_no_result("j_c_before");
    CHECK(!tool_file(&t, "started")); /* it never ran */
    CHECK(!log_line("job start", "j_c_before", NULL, 0));
    char line[4096];
    CHECK(log_line("job cancelled", "j_c_before", line, sizeof(line)));
    CHECK_CONTAINS(line, "\"started\":\"false\"");
    CHECK_CONTAINS(line, "\"duration_ms\":\"0\"");
    /* Its offset is stored like any finished job's (auto-commit runs every second). */
    long long end = fx_now_ms() + 15000, c;
    while ((c = fx_committed(offsets_reader, TOPIC, part)) < off + 1 && fx_now_ms() < end)
        fx_sleep_ms(200);
    if (c < off + 1)
        fprintf(stderr, "partition %d: committed %lld, want >= %lld (logs in %s)\n", (int)part, c,
                (long long)off + 1, fx.dir);
    CHECK(c >= off + 1);
    TEST_PASS("cancel key set before the job: it never runs, cancelled entry, offset committed");
}

static void test_redis_restart(pid_t worker)
{
    CHECK(kill(fx.redis_pid, SIGKILL) == 0);
    CHECK(fx_wait_exit(fx.redis_pid, 5000) == 128 + SIGKILL);
    /* Redis is away: the worker retries with a backoff, it does not spin. */
    long long cpu0 = cpu_ms(worker), t0 = fx_now_ms();
    fx_sleep_ms(3000);
    long long used = cpu_ms(worker) - cpu0, wall = fx_now_ms() - t0;
    printf("# redis down: the worker used %lld ms CPU in %lld ms\n", used, wall);
    CHECK(used * 2 < wall);
    CHECK(fx_alive(worker));

    char port[16], log[512];
    snprintf(port, sizeof(port), "%d", fx.redis_port);
    snprintf(log, sizeof(log), "%s/redis2.log", fx.dir);
    const char *argv[] = {"redis-server", "--port", port,    "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no",     "--dir", fx.dir,   NULL};
    fx.redis_pid = fx_spawn(argv, NULL, log);
    CHECK(fx.redis_pid > 0);
    redis_connect();
    wait_subscribed(15000);

    tool_run_t t;
    start_tool(&t, "j_c_after_restart", "polite");
    long long t1 = fx_now_ms();
    CHECK(cancel_publish("j_c_after_restart") >= 1);
    wait_tool_gone(&t, t1, 3000);
    char data[512];
    need_cancelled("j_c_after_restart", 5000, data, sizeof(data));
    CHECK_STR_EQ(data, DEFAULT_REASON);
    expect_no_result("j_c_after_restart");
    TEST_PASS("redis restarted: the subscriber reconnects by itself and cancels again");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (fx_start(&fx, 2) < 0)
        return 1;
    redis_connect();
    producer = fx_kafka_new(&fx, NULL, on_delivery);
    /* Reads the workers' committed offsets (it never subscribes, so never joins). */
    offsets_reader = fx_kafka_new(&fx, GROUP, NULL);
    write_script();
    pid_t w = start_worker("w-cancel");
    wait_subscribed(10000);

    test_set_and_publish();
    test_publish_only();
    test_key_only();
    test_http();
    test_cancelled_before_start();
    test_redis_restart(w);

    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    TEST_PASS("the worker exits 0 on SIGTERM");

    rd_kafka_destroy(producer);
    rd_kafka_consumer_close(offsets_reader);
    rd_kafka_destroy(offsets_reader);
    redisFree(redis);
    fx_stop(&fx);
    return 0;
}
