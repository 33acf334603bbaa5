/*
 * Kafka client properties, security and topics end to end (docs/kafka.md) against
 * mcpq-devbroker's front (deploy/devbroker/front.h):
 *   a. a bad property (file) stops the ingress at start-up, exit 2, naming property and
 *      file:line; a reserved one names what to set instead;
 *   b. topics: a broker without the jobs topic; the ingress creates it with MCPQ_PARTITIONS=2;
 *      three workers on two partitions: one gets none, warns, and its /metrics says
 *      mcpq_worker_kafka_idle_member 1, mcpq_worker_kafka_topic_partitions 2;
 *   c. a broker that refuses CreateTopics (no Create ACL): one error line says what to create;
 *   d. SASL_PLAINTEXT (PLAIN): ingress and worker with a properties file and the password
 *      from a file answer a tool call; a wrong password gives the ingress /readyz 503 and a
 *      clear log line within seconds, and the worker a clear log line;
 *   e. TLS with a CA and server certificate the test makes with openssl: SSL and SASL_SSL
 *      answer a tool call; mutual TLS with a client certificate too; a wrong CA gives /readyz
 *      503 and "certificate verify failed";
 *   f. SCRAM: SASL_SSL with SCRAM-SHA-512 (as Amazon MSK, Strimzi) and SASL_PLAINTEXT with
 *      SCRAM-SHA-256 (as Redpanda) answer a tool call; a wrong SCRAM password gives /readyz
 *      503 and the message a Kafka broker sends.
 * Wherever a setting is wrong, the worker's /readyz (MCPQ_METRICS_LISTEN) answers 503 too, and
 * stays so past its statistics rounds; with good settings it answers 200.
 */
#include "check.h"
#include "consumer.h"
#include "fixture.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fx_stack_t fx;
static char cfg[300];

static size_t sink(char *p, size_t sz, size_t n, void *arg)
{
    util_buf_t *b = arg;
    util_buf_append(b, p, sz * n); /* past its maximum: cut */
    return sz * n;
}

/* GET url: the status (0: no answer), the body in out (size bytes). */
static long http_get(const char *url, char *out, size_t size)
{
    CURL *c = curl_easy_init();
    util_buf_t b;
    util_buf_init(&b, 65536);
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    snprintf(out, size, "%.*s", (int)b.len, b.data ? b.data : "");
    util_buf_cleanup(&b);
    return status;
}

/* Starts a devbroker with env (NULL-terminated); its bootstrap address in out. */
static pid_t start_broker(const char *name, const char *const env[], char *out, size_t size)
{
    char ready[400], log[400], rf[420], bin[300];
    snprintf(ready, sizeof(ready), "%s/%s.ready", fx.dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", fx.dir, name);
    snprintf(rf, sizeof(rf), "MCPQ_READY_FILE=%s", ready);
    snprintf(bin, sizeof(bin), "%s/mcpq-devbroker", fx_bin_dir());
    const char *e[16];
    int n = 0;
    e[n++] = rf;
    for (int i = 0; env && env[i] && n < 15; i++)
        e[n++] = env[i];
    e[n] = NULL;
    const char *argv[] = {bin, NULL};
    pid_t pid = fx_spawn(argv, e, log);
    CHECK(pid > 0);
    if (fx_wait_file(ready, 20000) < 0) {
        char text[4096];
        fx_read_file(log, text, sizeof(text));
        fprintf(stderr, "devbroker %s did not start:\n%s\n", name, text);
        exit(1);
    }
    fx_read_file(ready, out, size);
    out[strcspn(out, "\n")] = '\0';
    return pid;
}

/* A tools/call of the builtin echo on the ingress at port: 1 when it was answered. */
static int call_answered(int port)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    const char *hdrs[] = {"Authorization: Bearer ks-key", NULL};
    fx_reply_t r;
    fx_http_post(url, hdrs,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"echo\",\"arguments\":{\"say\":\"over-kafka\"}}}",
                 &r);
    if (r.status != 200 || !strstr(r.body, "over-kafka") || strstr(r.body, "\"error\"")) {
        fprintf(stderr, "call: %ld %s\n", r.status, r.body);
        return 0;
    }
    return 1;
}

/* Waits up to ms for /readyz of the ingress or worker (metrics server) at port to answer
 * want. */
static int readyz_becomes(int port, long want, int ms)
{
    char url[128], body[4096];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", port);
    for (long long until = fx_now_ms() + ms; fx_now_ms() < until; fx_sleep_ms(200))
        if (http_get(url, body, sizeof(body)) == want)
            return 1;
    return 0;
}

/* /readyz at port answers want every time it is asked for ms. */
static int readyz_stays(int port, long want, int ms)
{
    char url[128], body[4096];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz", port);
    for (long long until = fx_now_ms() + ms; fx_now_ms() < until; fx_sleep_ms(200)) {
        long st = http_get(url, body, sizeof(body));
        if (st != want) {
            fprintf(stderr, "/readyz at %d: %ld %s\n", port, st, body);
            return 0;
        }
    }
    return 1;
}

static int wait_log(const char *path, const char *a, const char *b, int ms)
{
    for (long long until = fx_now_ms() + ms; fx_now_ms() < until; fx_sleep_ms(100))
        if (fx_log_line(path, a, b, NULL, 0))
            return 1;
    return 0;
}

static void part_a_bad_property(void)
{
    char props[300], text[8192], env_props[330];
    snprintf(props, sizeof(props), "%s/bad.properties", fx.dir);
    fx_write_file(props, "# comment\nlingerr.ms=5\n", 0600);
    snprintf(env_props, sizeof(env_props), "MCPQ_KAFKA_PROPERTIES=%s", props);
    const char *env[] = {env_props, NULL};
    long long t0 = fx_now_ms();
    int st = fx_ingress_exit(&fx, "bad-prop", cfg, env, text, sizeof(text), NULL, 0);
    long long took = fx_now_ms() - t0;
    CHECK_INT_EQ(st, 2);
    CHECK_CONTAINS(text, "bad.properties:2");
    CHECK_CONTAINS(text, "No such configuration property: \\\"lingerr.ms\\\"");
    CHECK(took < 5000);
    const char *env2[] = {"MCPQ_KAFKA_PROP_ENABLE_IDEMPOTENCE=false", NULL};
    st = fx_ingress_exit(&fx, "reserved-prop", cfg, env2, text, sizeof(text), NULL, 0);
    CHECK_INT_EQ(st, 2);
    CHECK_CONTAINS(text, "MCPQ_KAFKA_PROP_ENABLE_IDEMPOTENCE");
    CHECK_CONTAINS(text, "is set by mcpq");
    printf("# bad property: exit 2 after %lld ms\n", took);
}

static void part_b_topics(void)
{
    /* fx's devbroker was started with MCPQ_DEVBROKER_TOPICS=0: no jobs topic yet */
    int port = fx_free_port();
    char ilog[400];
    const char *env[] = {"MCPQ_PARTITIONS=2", NULL};
    pid_t ing = fx_spawn_ingress(&fx, "ing-topics", port, cfg, env, ilog, sizeof(ilog));
    CHECK(ing > 0);
    CHECK(fx_log_line(ilog, "Kafka topic created", "\"partitions\":\"2\"", NULL, 0));
    rd_kafka_t *rk = fx_kafka_new(&fx, NULL, NULL);
    const struct rd_kafka_metadata *md = NULL;
    CHECK(rd_kafka_metadata(rk, 1, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR);
    int parts = -1;
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, "mcpq.jobs") == 0)
            parts = md->topics[i].partition_cnt;
    rd_kafka_metadata_destroy(md);
    rd_kafka_destroy(rk);
    CHECK_INT_EQ(parts, 2);
    TEST_PASS("b: the ingress creates the missing jobs topic with MCPQ_PARTITIONS partitions");

    /* three workers started at once, so the group settles in one rebalance */
    pid_t w[3];
    int mport[3];
    char menv[3][64], wid[3][32], wrf[3][340], wlogp[3][340], e_b[300], e_r[160], bin[300];
    snprintf(bin, sizeof(bin), "%s/mcpq-worker", fx_bin_dir());
    snprintf(e_b, sizeof(e_b), "MCPQ_KAFKA_BROKERS=%s", fx.brokers);
    snprintf(e_r, sizeof(e_r), "MCPQ_REDIS_URL=%s", fx.redis_url);
    for (int i = 0; i < 3; i++) {
        mport[i] = fx_free_port();
        snprintf(menv[i], sizeof(menv[i]), "MCPQ_METRICS_LISTEN=127.0.0.1:%d", mport[i]);
        snprintf(wid[i], sizeof(wid[i]), "MCPQ_WORKER_ID=wt%d", i);
        snprintf(wrf[i], sizeof(wrf[i]), "MCPQ_READY_FILE=%s/wt%d.ready", fx.dir, i);
        snprintf(wlogp[i], sizeof(wlogp[i]), "%s/wt%d.log", fx.dir, i);
        const char *wenv[] = {e_b, e_r, fx.job_key_env, menv[i], wid[i], wrf[i], NULL};
        const char *argv[] = {bin, NULL};
        w[i] = fx_spawn(argv, wenv, wlogp[i]);
        CHECK(w[i] > 0);
    }
    /* one of three has no partition once the group settled */
    int idle = -1;
    for (long long until = fx_now_ms() + 60000; idle < 0 && fx_now_ms() < until; fx_sleep_ms(300)) {
        for (int i = 0; i < 3 && idle < 0; i++) {
            char url[128], body[65536];
            snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", mport[i]);
            if (http_get(url, body, sizeof(body)) == 200 &&
                strstr(body, "\nmcpq_worker_kafka_idle_member 1\n") &&
                strstr(body, "\nmcpq_worker_kafka_topic_partitions 2\n")) {
                CHECK_INT_EQ(fx_promtool_check(body), 0);
                idle = i;
            }
        }
    }
    CHECK(idle >= 0);
    char wlog[400];
    snprintf(wlog, sizeof(wlog), "%s/wt%d.log", fx.dir, idle);
    CHECK(fx_log_line(wlog, "this worker got no partition", "\"partitions\":\"2\"", NULL, 0));
    TEST_PASS("b: three workers on two partitions: one warns, mcpq_worker_kafka_idle_member 1");
    for (int i = 0; i < 3; i++)
        fx_stop_pid(w[i], 10000);
    fx_stop_pid(ing, 10000);
}

static void part_c_deny(void)
{
    char boot[256], benv[300], ilog[400];
    const char *denv[] = {"MCPQ_DEVBROKER_TOPICS=0", "MCPQ_DEVBROKER_DENY_CREATE=1", NULL};
    pid_t b = start_broker("deny-broker", denv, boot, sizeof(boot));
    snprintf(benv, sizeof(benv), "MCPQ_KAFKA_BROKERS=%s", boot);
    const char *env[] = {benv, "MCPQ_PARTITIONS=4", NULL};
    pid_t ing = fx_spawn_ingress(&fx, "ing-deny", fx_free_port(), cfg, env, ilog, sizeof(ilog));
    CHECK(ing > 0);
    char line[4096];
    CHECK(fx_log_line(ilog, "Kafka topic missing: create it", "TOPIC_AUTHORIZATION_FAILED", line,
                      sizeof(line)));
    CHECK_CONTAINS(line, "--create --topic mcpq.jobs --partitions 4");
    TEST_PASS("c: CreateTopics refused: one error line says what to create");
    fx_stop_pid(ing, 10000);
    fx_stop_pid(b, 10000);
}

/* An ingress and a worker on broker boot with the given extra settings (NULL-terminated):
 * a tool call is answered. */
static void call_through(const char *tag, const char *boot, const char *const extra[])
{
    char benv[300], ilog[400], wname[64], iname[64];
    snprintf(benv, sizeof(benv), "MCPQ_KAFKA_BROKERS=%s", boot);
    const char *env[16];
    int n = 0;
    env[n++] = benv;
    for (int i = 0; extra[i] && n < 14; i++)
        env[n++] = extra[i];
    env[n] = NULL;
    snprintf(wname, sizeof(wname), "w-%s", tag);
    snprintf(iname, sizeof(iname), "i-%s", tag);
    int mport = fx_free_port();
    char menv[64];
    snprintf(menv, sizeof(menv), "MCPQ_METRICS_LISTEN=127.0.0.1:%d", mport);
    env[n++] = menv;
    env[n] = NULL;
    pid_t w = fx_spawn_worker(&fx, wname, env);
    CHECK(w > 0);
    CHECK(readyz_becomes(mport, 200, 15000));
    env[--n] = NULL;
    int port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, iname, port, cfg, env, ilog, sizeof(ilog));
    CHECK(ing > 0);
    CHECK(readyz_becomes(port, 200, 15000));
    CHECK(call_answered(port));
    fx_stop_pid(ing, 10000);
    fx_stop_pid(w, 10000);
}

/* An ingress whose Kafka settings are wrong: /readyz 503 within seconds, a log line holding
 * want; a worker the same: a log line holding want, and its /readyz (metrics server) 503
 * from start until well after it (past a statistics round, WRK_CONSUMER_STATS_MS). */
static void refused(const char *tag, const char *boot, const char *const extra[], const char *want)
{
    char benv[300], ilog[400], iname[64], wlog[400], bin[300], wid[80], menv[64];
    snprintf(benv, sizeof(benv), "MCPQ_KAFKA_BROKERS=%s", boot);
    const char *env[16];
    int n = 0;
    env[n++] = benv;
    for (int i = 0; extra[i] && n < 12; i++)
        env[n++] = extra[i];
    env[n] = NULL;
    snprintf(iname, sizeof(iname), "i-%s", tag);
    int port = fx_free_port();
    long long t0 = fx_now_ms();
    pid_t ing = fx_spawn_ingress(&fx, iname, port, cfg, env, ilog, sizeof(ilog));
    CHECK(ing > 0);
    CHECK(readyz_becomes(port, 503, 10000));
    CHECK(wait_log(ilog, want, NULL, 10000));
    printf("# %s: ingress /readyz 503 %lld ms after start\n", tag, fx_now_ms() - t0);
    fx_stop_pid(ing, 10000);

    snprintf(wlog, sizeof(wlog), "%s/w-%s.log", fx.dir, tag);
    snprintf(bin, sizeof(bin), "%s/mcpq-worker", fx_bin_dir());
    snprintf(wid, sizeof(wid), "MCPQ_WORKER_ID=w-%s", tag);
    char redis[200];
    snprintf(redis, sizeof(redis), "MCPQ_REDIS_URL=%s", fx.redis_url);
    int mport = fx_free_port();
    snprintf(menv, sizeof(menv), "MCPQ_METRICS_LISTEN=127.0.0.1:%d", mport);
    env[n++] = wid;
    env[n++] = redis;
    env[n++] = menv;
    env[n] = NULL;
    const char *argv[] = {bin, NULL};
    t0 = fx_now_ms();
    pid_t w = fx_spawn(argv, env, wlog);
    CHECK(w > 0);
    CHECK(readyz_becomes(mport, 503, 10000));
    CHECK(wait_log(wlog, want, NULL, 10000));
    CHECK(readyz_stays(mport, 503, 2 * WRK_CONSUMER_STATS_MS + 1000));
    printf("# %s: worker /readyz 503 throughout the %lld ms after start\n", tag, fx_now_ms() - t0);
    fx_stop_pid(w, 10000);
}

static void part_d_sasl(void)
{
    char boot[256], props[300], pw[300], bad[300], e_props[340], e_pw[340], e_bad[340];
    const char *benv[] = {"MCPQ_DEVBROKER_SASL=alice:pw-4711", NULL};
    pid_t b = start_broker("sasl-broker", benv, boot, sizeof(boot));
    snprintf(props, sizeof(props), "%s/sasl.properties", fx.dir);
    fx_write_file(props,
                  "# as a Kafka user writes it\n"
                  "security.protocol=SASL_PLAINTEXT\n"
                  "sasl.mechanisms=PLAIN\n"
                  "sasl.username=alice\n",
                  0600);
    snprintf(pw, sizeof(pw), "%s/sasl-password", fx.dir);
    fx_write_file(pw, "pw-4711\n", 0600);
    snprintf(bad, sizeof(bad), "%s/sasl-bad", fx.dir);
    fx_write_file(bad, "not-it\n", 0600);
    snprintf(e_props, sizeof(e_props), "MCPQ_KAFKA_PROPERTIES=%s", props);
    snprintf(e_pw, sizeof(e_pw), "MCPQ_KAFKA_PROP_SASL_PASSWORD_FILE=%s", pw);
    snprintf(e_bad, sizeof(e_bad), "MCPQ_KAFKA_PROP_SASL_PASSWORD_FILE=%s", bad);
    const char *good[] = {e_props, e_pw, NULL};
    call_through("sasl", boot, good);
    TEST_PASS("d: SASL_PLAINTEXT: ingress and worker authenticate, a tool call is answered");
    const char *wrong[] = {e_props, e_bad, NULL};
    refused("sasl-bad", boot, wrong, "Invalid username or password");
    TEST_PASS("d: a wrong SASL password: /readyz 503 and a clear log line within seconds");
    fx_stop_pid(b, 10000);
}

static void sh(const char *cmd)
{
    if (system(cmd) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(1);
    }
}

static void part_e_tls(void)
{
    char cmd[2048], d[300];
    snprintf(d, sizeof(d), "%s/pki", fx.dir);
    /* a CA, a server certificate for 127.0.0.1, a client certificate, and an unrelated CA */
    snprintf(cmd, sizeof(cmd),
             "set -e; mkdir -p %s; cd %s; "
             "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca "
             "-keyout ca.key -out ca.crt 2>/dev/null; "
             "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca "
             "-keyout other.key -out other.crt 2>/dev/null; "
             "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key "
             "-out server.csr 2>/dev/null; "
             "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext; "
             "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-days 2 -extfile san.ext -out server.crt 2>/dev/null; "
             "openssl req -newkey rsa:2048 -nodes -subj /CN=mcpq-client -keyout client.key "
             "-out client.csr 2>/dev/null; "
             "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             "-days 2 -out client.crt 2>/dev/null",
             d, d);
    sh(cmd);
    char e_cert[400], e_key[400], e_ca[400], p_ca[400], p_other[400], p_ccert[400], p_ckey[400];
    snprintf(e_cert, sizeof(e_cert), "MCPQ_DEVBROKER_TLS_CERT=%s/server.crt", d);
    snprintf(e_key, sizeof(e_key), "MCPQ_DEVBROKER_TLS_KEY=%s/server.key", d);
    snprintf(e_ca, sizeof(e_ca), "MCPQ_DEVBROKER_TLS_CA=%s/ca.crt", d);
    snprintf(p_ca, sizeof(p_ca), "MCPQ_KAFKA_PROP_SSL_CA_LOCATION=%s/ca.crt", d);
    snprintf(p_other, sizeof(p_other), "MCPQ_KAFKA_PROP_SSL_CA_LOCATION=%s/other.crt", d);
    snprintf(p_ccert, sizeof(p_ccert), "MCPQ_KAFKA_PROP_SSL_CERTIFICATE_LOCATION=%s/client.crt", d);
    snprintf(p_ckey, sizeof(p_ckey), "MCPQ_KAFKA_PROP_SSL_KEY_LOCATION=%s/client.key", d);
    char boot[256];

    /* SSL, then SASL_SSL on one broker */
    const char *benv[] = {e_cert, e_key, "MCPQ_DEVBROKER_SASL=bob:tls-pw", NULL};
    pid_t b = start_broker("tls-broker", benv, boot, sizeof(boot));
    const char *sasl_ssl[] = {"MCPQ_KAFKA_PROP_SECURITY_PROTOCOL=SASL_SSL",
                              "MCPQ_KAFKA_PROP_SASL_MECHANISMS=PLAIN",
                              "MCPQ_KAFKA_PROP_SASL_USERNAME=bob",
                              "MCPQ_KAFKA_PROP_SASL_PASSWORD=tls-pw",
                              p_ca,
                              NULL};
    call_through("sasl-ssl", boot, sasl_ssl);
    TEST_PASS("e: SASL_SSL (CA made here, server certificate verified): a tool call is answered");
    const char *wrong_ca[] = {"MCPQ_KAFKA_PROP_SECURITY_PROTOCOL=SASL_SSL",
                              "MCPQ_KAFKA_PROP_SASL_MECHANISMS=PLAIN",
                              "MCPQ_KAFKA_PROP_SASL_USERNAME=bob",
                              "MCPQ_KAFKA_PROP_SASL_PASSWORD=tls-pw",
                              p_other,
                              NULL};
    refused("wrong-ca", boot, wrong_ca, "certificate verify failed");
    TEST_PASS("e: a wrong CA: /readyz 503 and \"certificate verify failed\" within seconds");
    fx_stop_pid(b, 10000);

    /* mutual TLS: SSL with a client certificate */
    const char *menv[] = {e_cert, e_key, e_ca, NULL};
    b = start_broker("mtls-broker", menv, boot, sizeof(boot));
    const char *mtls[] = {"MCPQ_KAFKA_PROP_SECURITY_PROTOCOL=SSL", p_ca, p_ccert, p_ckey, NULL};
    call_through("mtls", boot, mtls);
    TEST_PASS("e: SSL with a client certificate (mutual TLS): a tool call is answered");
    fx_stop_pid(b, 10000);
}

/* The settings of a SCRAM client (NULL-terminated, static strings past the first four). */
static void scram_props(const char **out, const char *protocol, const char *mech,
                        const char *password, const char *ca)
{
    static char p[4][200];
    snprintf(p[0], sizeof(p[0]), "MCPQ_KAFKA_PROP_SECURITY_PROTOCOL=%s", protocol);
    snprintf(p[1], sizeof(p[1]), "MCPQ_KAFKA_PROP_SASL_MECHANISMS=%s", mech);
    snprintf(p[2], sizeof(p[2]), "MCPQ_KAFKA_PROP_SASL_PASSWORD=%s", password);
    snprintf(p[3], sizeof(p[3]), "%s", "MCPQ_KAFKA_PROP_SASL_USERNAME=carol");
    int n = 0;
    for (int i = 0; i < 4; i++)
        out[n++] = p[i];
    if (ca)
        out[n++] = ca;
    out[n] = NULL;
}

static void part_f_scram(void)
{
    char boot[256], e_cert[400], e_key[400], p_ca[400], blog[400], line[4096];
    const char *props[8];
    snprintf(e_cert, sizeof(e_cert), "MCPQ_DEVBROKER_TLS_CERT=%s/pki/server.crt", fx.dir);
    snprintf(e_key, sizeof(e_key), "MCPQ_DEVBROKER_TLS_KEY=%s/pki/server.key", fx.dir);
    snprintf(p_ca, sizeof(p_ca), "MCPQ_KAFKA_PROP_SSL_CA_LOCATION=%s/pki/ca.crt", fx.dir);

    /* as Amazon MSK and Strimzi: SASL_SSL, SCRAM-SHA-512 */
    const char *menv[] = {e_cert, e_key, "MCPQ_DEVBROKER_SASL=carol:scram-pw-1",
                          "MCPQ_DEVBROKER_SASL_MECHANISMS=SCRAM-SHA-512", NULL};
    pid_t b = start_broker("scram512-broker", menv, boot, sizeof(boot));
    scram_props(props, "SASL_SSL", "SCRAM-SHA-512", "scram-pw-1", p_ca);
    call_through("scram512", boot, props);
    snprintf(blog, sizeof(blog), "%s/scram512-broker.log", fx.dir);
    CHECK(fx_log_line(blog, "devbroker: SASL authenticated", "\"mechanism\":\"SCRAM-SHA-512\"",
                      NULL, 0));
    TEST_PASS("f: SASL_SSL with SCRAM-SHA-512 (MSK, Strimzi): a tool call is answered");
    fx_stop_pid(b, 10000);

    /* as Redpanda: SASL_PLAINTEXT, SCRAM-SHA-256; then a wrong password */
    const char *renv[] = {"MCPQ_DEVBROKER_SASL=carol:scram-pw-2",
                          "MCPQ_DEVBROKER_SASL_MECHANISMS=PLAIN,SCRAM-SHA-256", NULL};
    b = start_broker("scram256-broker", renv, boot, sizeof(boot));
    scram_props(props, "SASL_PLAINTEXT", "SCRAM-SHA-256", "scram-pw-2", NULL);
    call_through("scram256", boot, props);
    snprintf(blog, sizeof(blog), "%s/scram256-broker.log", fx.dir);
    CHECK(fx_log_line(blog, "devbroker: SASL authenticated", "\"mechanism\":\"SCRAM-SHA-256\"",
                      NULL, 0));
    TEST_PASS("f: SASL_PLAINTEXT with SCRAM-SHA-256 (Redpanda): a tool call is answered");
    scram_props(props, "SASL_PLAINTEXT", "SCRAM-SHA-256", "not-the-pw", NULL);
    refused("scram-bad", boot, props,
            "SASL authentication error: Authentication failed during authentication due to "
            "invalid credentials with SASL mechanism SCRAM-SHA-256");
    CHECK(fx_log_line(blog, "SASL authentication refused", "wrong password", line, sizeof(line)));
    CHECK_CONTAINS(line, "\"user\":\"carol\"");
    TEST_PASS("f: a wrong SCRAM password: ingress and worker /readyz 503, Kafka's message logged");
    fx_stop_pid(b, 10000);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    setenv("MCPQ_DEVBROKER_TOPICS", "0", 1); /* fx's broker: the jobs topic is made in b */
    if (fx_start(&fx, 6) < 0)
        return 1;
    unsetenv("MCPQ_DEVBROKER_TOPICS");
    snprintf(cfg, sizeof(cfg), "%s/ks.json", fx.dir);
    fx_write_file(cfg,
                  "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
                  "\"ks-key\"}]}],"
                  " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
                  " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\","
                  " \"published\": \"1\", \"versions\": [{\"version\": \"1\","
                  " \"inputSchema\": {\"type\": \"object\"},"
                  " \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}",
                  0600);
    part_a_bad_property();
    TEST_PASS("a: a bad or reserved Kafka property stops the ingress at start-up, named");
    part_b_topics();
    part_c_deny();
    part_d_sasl();
    part_e_tls();
    part_f_scram();
    fx_stop(&fx);
    return 0;
}
