/*
 * test_fixture.c - tests the integration fixture (tests/fixture.c) itself, and the parts of
 * the Kafka protocol mcpq relies on against mcpq-devbroker: metadata of both topics, an
 * idempotent producer, a consumer group whose committed offsets survive the consumer.
 */
#include "check.h"
#include "fixture.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PARTITIONS 3
#define NMSG 10
#define TOPIC "mcpq.jobs"

static void test_redis(const fx_stack_t *fx)
{
    CHECK(strncmp(fx->redis_url, "redis://127.0.0.1:", 18) == 0);
    redisContext *c = redisConnect("127.0.0.1", fx->redis_port);
    CHECK(c && !c->err);
    redisReply *r = redisCommand(c, "PING");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    CHECK_STR_EQ(r->str, "PONG");
    freeReplyObject(r);
    /* no persistence: the local stack and tests must not write dump files */
    r = redisCommand(c, "CONFIG GET save");
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    CHECK_STR_EQ(r->element[1]->str, "");
    freeReplyObject(r);
    redisFree(c);
    TEST_PASS("redis answers PING, no RDB");
}

static rd_kafka_t *new_client(rd_kafka_type_t type, const fx_stack_t *fx, const char *const kv[])
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    CHECK(rd_kafka_conf_set(conf, "bootstrap.servers", fx->brokers, errstr, sizeof(errstr)) ==
          RD_KAFKA_CONF_OK);
    for (int i = 0; kv && kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "%s: %s\n", kv[i], errstr);
            CHECK(0);
        }
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
    if (!rk)
        fprintf(stderr, "rd_kafka_new: %s\n", errstr);
    CHECK(rk);
    return rk;
}

static void test_metadata(const fx_stack_t *fx)
{
    rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, fx, NULL);
    const struct rd_kafka_metadata *md = NULL;
    CHECK_INT_EQ(rd_kafka_metadata(rk, 1, NULL, &md, 10000), 0);
    int seen = 0;
    for (int i = 0; i < md->topic_cnt; i++) {
        const char *name = md->topics[i].topic;
        if (strcmp(name, TOPIC) == 0 || strcmp(name, TOPIC ".dlq") == 0) {
            CHECK_INT_EQ(md->topics[i].partition_cnt, PARTITIONS);
            seen++;
        }
    }
    CHECK_INT_EQ(seen, 2);
    CHECK(md->broker_cnt >= 1);
    rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
    TEST_PASS("broker metadata: jobs topic and dlq");
}

static int delivered, delivery_errors;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    if (m->err)
        delivery_errors++;
    else
        delivered++;
}

static void test_idempotent_producer(const fx_stack_t *fx)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    CHECK(rd_kafka_conf_set(conf, "bootstrap.servers", fx->brokers, errstr, sizeof(errstr)) ==
          RD_KAFKA_CONF_OK);
    CHECK(rd_kafka_conf_set(conf, "enable.idempotence", "true", errstr, sizeof(errstr)) ==
          RD_KAFKA_CONF_OK);
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    CHECK(rk);
    for (int i = 0; i < NMSG; i++) {
        char key[16], val[32];
        snprintf(key, sizeof(key), "j_%d", i);
        snprintf(val, sizeof(val), "{\"n\":%d}", i);
        CHECK_INT_EQ(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(TOPIC),
                                       RD_KAFKA_V_KEY(key, strlen(key)),
                                       RD_KAFKA_V_VALUE(val, strlen(val)),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                       RD_KAFKA_V_HEADER("job_id", key, -1), RD_KAFKA_V_END),
                     0);
    }
    CHECK_INT_EQ(rd_kafka_flush(rk, 10000), 0);
    CHECK_INT_EQ(delivery_errors, 0);
    CHECK_INT_EQ(delivered, NMSG);
    rd_kafka_destroy(rk);
    TEST_PASS("idempotent producer delivers");
}

/* Consumes until NMSG messages arrived, storing offsets by hand (the worker's way), commits,
 * closes; returns how many it got. */
static int consume_all(const fx_stack_t *fx, int want, int timeout_ms)
{
    const char *const kv[] = {"group.id",
                              "fixture-test",
                              "auto.offset.reset",
                              "earliest",
                              "enable.auto.offset.store",
                              "false",
                              "session.timeout.ms",
                              "6000",
                              NULL};
    rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, fx, kv);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, TOPIC, RD_KAFKA_PARTITION_UA);
    CHECK_INT_EQ(rd_kafka_subscribe(rk, topics), 0);
    rd_kafka_topic_partition_list_destroy(topics);
    int got = 0;
    for (int waited = 0; got < want && waited < timeout_ms; waited += 100) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (!m->err) {
            got++;
            rd_kafka_topic_partition_list_t *st = rd_kafka_topic_partition_list_new(1);
            rd_kafka_topic_partition_list_add(st, TOPIC, m->partition)->offset = m->offset + 1;
            CHECK_INT_EQ(rd_kafka_offsets_store(rk, st), 0);
            rd_kafka_topic_partition_list_destroy(st);
        }
        rd_kafka_message_destroy(m);
    }
    if (got > 0)
        CHECK_INT_EQ(rd_kafka_commit(rk, NULL, 0), 0);

    /* The committed offsets, as the broker reports them, add up to what we consumed. */
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(PARTITIONS);
    for (int p = 0; p < PARTITIONS; p++)
        rd_kafka_topic_partition_list_add(parts, TOPIC, p);
    CHECK_INT_EQ(rd_kafka_committed(rk, parts, 10000), 0);
    long long sum = 0;
    for (int p = 0; p < parts->cnt; p++)
        if (parts->elems[p].offset > 0)
            sum += parts->elems[p].offset;
    rd_kafka_topic_partition_list_destroy(parts);
    CHECK_INT_EQ(sum, NMSG);
    CHECK_INT_EQ(rd_kafka_consumer_close(rk), 0);
    rd_kafka_destroy(rk);
    return got;
}

static void test_consumer_group(const fx_stack_t *fx)
{
    CHECK_INT_EQ(consume_all(fx, NMSG, 30000), NMSG);
    /* A new member of the same group starts from the committed offsets: nothing left. */
    CHECK_INT_EQ(consume_all(fx, 1, 8000), 0);
    TEST_PASS("consumer group commits offsets; a new member resumes from them");
}

static void test_spawn(const fx_stack_t *fx)
{
    char log[512];
    snprintf(log, sizeof(log), "%s/spawn.log", fx->dir);
    const char *argv[] = {"/bin/sh", "-c", "echo out; echo \"err $FX_TEST_VAR\" >&2; exit 3", NULL};
    const char *env[] = {"FX_TEST_VAR=hello", NULL};
    pid_t pid = fx_spawn(argv, env, log);
    CHECK(pid > 0);
    CHECK_INT_EQ(fx_wait_exit(pid, 10000), 3);
    FILE *f = fopen(log, "r");
    CHECK(f);
    char buf[256];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    CHECK_CONTAINS(buf, "out\n");
    CHECK_CONTAINS(buf, "err hello\n");

    /* Own process group; fx_stop_pid reports death by SIGTERM. */
    const char *sleeper[] = {"sleep", "60", NULL};
    pid = fx_spawn(sleeper, NULL, log);
    CHECK(pid > 0);
    CHECK_INT_EQ(getpgid(pid), pid);
    CHECK_INT_EQ(fx_stop_pid(pid, 5000), 128 + SIGTERM);

    const char *missing[] = {"/nonexistent/binary", NULL};
    pid = fx_spawn(missing, NULL, log);
    CHECK(pid > 0);
    CHECK_INT_EQ(fx_wait_exit(pid, 5000), 127);
    CHECK(fx_free_port() > 0);
    TEST_PASS("fx_spawn: env, log, process group, exit status");
}

/* Ports a test takes one after the other are all different, even when the kernel would
 * hand the same free port out twice. */
static void test_free_ports(void)
{
    int ports[64];
    for (int i = 0; i < 64; i++) {
        ports[i] = fx_free_port();
        CHECK(ports[i] > 0);
        for (int j = 0; j < i; j++)
            CHECK(ports[i] != ports[j]);
    }
    TEST_PASS("fx_free_port: 64 ports, all different");
}

int main(void)
{
    test_free_ports();
    fx_stack_t fx;
    CHECK_INT_EQ(fx_start(&fx, PARTITIONS), 0);
    CHECK(fx.redis_pid > 0 && fx.broker_pid > 0);
    CHECK(fx.brokers[0] != '\0');
    TEST_PASS("fx_start");

    test_redis(&fx);
    test_metadata(&fx);
    test_idempotent_producer(&fx);
    test_consumer_group(&fx);
    test_spawn(&fx);

    char dir[256];
    snprintf(dir, sizeof(dir), "%s", fx.dir);
    pid_t redis = fx.redis_pid, broker = fx.broker_pid;
    CHECK_INT_EQ(fx_stop_pid(fx.broker_pid, 10000), 0); /* the devbroker exits 0 on SIGTERM */
    fx.broker_pid = 0;
    fx_stop(&fx);
    CHECK(kill(redis, 0) < 0 && errno == ESRCH);
    CHECK(kill(broker, 0) < 0 && errno == ESRCH);
    const char *keep = getenv("FX_KEEP");
    struct stat st;
    if (!keep || strcmp(keep, "1") != 0)
        CHECK(stat(dir, &st) < 0);
    fx_stop(&fx); /* twice is harmless */
    TEST_PASS("fx_stop");
    return 0;
}
