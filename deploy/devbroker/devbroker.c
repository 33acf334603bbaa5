/*
 * devbroker.c - mcpq-devbroker: a Kafka-protocol broker for development and tests.
 *
 * It is librdkafka's built-in mock cluster (rdkafka_mock.h) in a small program: it creates
 * the jobs topic (MCPQ_TOPIC_JOBS, default mcpq.jobs) and its dead-letter topic
 * (<topic>.dlq) with MCPQ_PARTITIONS partitions on MCPQ_BROKERS brokers (replication factor
 * 1), checks that the listener answers a metadata request for them, prints exactly one line
 * `BOOTSTRAP <host:port[,...]>` on stdout, writes the same address to MCPQ_READY_FILE when
 * set, and then serves until SIGTERM or SIGINT (exit 0).
 *
 * With MCPQ_DEVBROKER_CONTROL=<path> it also takes fault-injection commands on a Unix socket
 * at that path (control.h): brokers down and up, leader moves, request errors, round-trip time.
 *
 * Everything lives in memory: messages, consumer groups and committed offsets are lost
 * when the process exits. It is for development and tests only, never for production,
 * where the same binaries point at a real Kafka through MCPQ_KAFKA_BROKERS.
 *
 * Logs are JSON lines on stderr (common/log.h); stdout carries only the BOOTSTRAP line.
 */
#include "control.h"
#include "err.h"
#include "front.h"
#include "log.h"
#include "settings.h"
#include "version.h"

#include <errno.h>
#include <pthread.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DB_TOPIC_MAX 249 /* Kafka's own limit on topic name length */
#define DB_METADATA_TIMEOUT_MS 10000

/* Reachable for the process' life (its threads use it; leak checkers see it). */
static db_front_t *front;
static db_control_t *control;

static const char db_about[] =
    "mcpq-devbroker: a Kafka-protocol broker for development and tests (librdkafka's mock\n"
    "cluster). It creates the jobs topic and <topic>.dlq, prints one line\n"
    "`BOOTSTRAP <host:port[,...]>` on stdout once they exist (and writes the address to\n"
    "MCPQ_READY_FILE when set), then serves until SIGTERM or SIGINT.\n"
    "\n"
    "Fault injection: with MCPQ_DEVBROKER_CONTROL=<path> it listens on a Unix socket there\n"
    "(0600, removed at exit) for one command per line, each answered by one line `ok ...` or\n"
    "`error <reason>`:\n"
    "  brokers                          each broker as <id>:up|down[:<rtt>ms]\n"
    "  topics                           the topics it created, as <name>:<partitions>\n"
    "  down <id|all> / up <id|all>      a broker refuses connections / accepts them again\n"
    "  leader <topic> <partition> <id>  moves a partition's leader\n"
    "  errors <api> <count> <error>     the next <count> <api> requests (Produce, Fetch,\n"
    "                                   OffsetCommit, JoinGroup, Heartbeat, ...) fail with\n"
    "                                   <error> (NOT_COORDINATOR, _TRANSPORT, ...)\n"
    "  rtt <id|all> <ms>                delays the broker's answers\n"
    "  clear <api>                      drops the errors still queued for <api>\n"
    "Broker ids are 1..MCPQ_BROKERS. Example: echo 'down 2' | socat - UNIX-CONNECT:<path>\n"
    "\n"
    "It is IN-MEMORY ONLY: every message, consumer group and committed offset is lost when\n"
    "it exits. It is for development and tests only. Do NOT use it in production: point\n"
    "mcpq-ingress and mcpq-worker at a real Kafka with MCPQ_KAFKA_BROKERS instead.";

/* librdkafka's own log lines, as JSON lines on stderr. Runs on librdkafka threads;
 * log_msgf() is thread-safe once log_init() has run. */
static void db_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    /* syslog levels: 0-3 error, 4 warning, 5-6 notice and info, 7 debug */
    log_level_t lv = LOG_DEBUG;
    if (level <= 3)
        lv = LOG_ERROR;
    else if (level == 4)
        lv = LOG_WARN;
    else if (level <= 6)
        lv = LOG_INFO;
    log_msgf(lv, "librdkafka %s: %s", fac, buf);
}

/* The mock cluster's host handle has no bootstrap.servers on purpose: its warning about
 * that is noise, so it goes out at debug level. */
static void db_host_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    if (strcmp(fac, "CONFWARN") == 0 && strstr(buf, "bootstrap.servers"))
        level = 7;
    db_log_cb(rk, level, fac, buf);
}

/* Writes s plus a newline to path through a temporary file and rename(2), so a reader
 * never sees a partial address. 0 or MCPQ_EIO (logged). */
static int db_ready_file_write(const char *path, const char *s)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        log_msgf(LOG_ERROR, "ready file path too long: %s", path);
        return MCPQ_EIO;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        log_msgf(LOG_ERROR, "cannot write ready file %s: %s", tmp, strerror(errno));
        return MCPQ_EIO;
    }
    int bad = fprintf(f, "%s\n", s) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        log_msgf(LOG_ERROR, "cannot write ready file %s: %s", path, strerror(errno));
        unlink(tmp);
        return MCPQ_EIO;
    }
    return 0;
}

/* Asks the cluster, as an ordinary client would, for the metadata of both topics and checks
 * their partition counts: the proof that the listener is up and the topics exist. */
static int db_topics_check(const char *bootstraps, const char *const topics[], int ntopics,
                           int partitions)
{
    char errstr[512];
    int rc = MCPQ_EUNAVAIL;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "client.id", "mcpq-devbroker-check", errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
        log_msgf(LOG_ERROR, "check client config: %s", errstr);
        rd_kafka_conf_destroy(conf);
        return MCPQ_EINVAL;
    }
    rd_kafka_conf_set_log_cb(conf, db_log_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        log_msgf(LOG_ERROR, "check client: %s", errstr);
        rd_kafka_conf_destroy(conf);
        return MCPQ_EIO;
    }
    conf = NULL; /* now owned by rk */

    for (int i = 0; i < ntopics; i++) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topics[i], NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rkt ? rd_kafka_metadata(rk, 0, rkt, &md, DB_METADATA_TIMEOUT_MS)
                                      : rd_kafka_last_error();
        if (err) {
            log_msgf(LOG_ERROR, "metadata for %s: %s", topics[i], rd_kafka_err2str(err));
        } else if (md->topic_cnt != 1 || md->topics[0].err ||
                   md->topics[0].partition_cnt != partitions) {
            log_msgf(LOG_ERROR, "topic %s: unexpected metadata (%d partitions, %s)", topics[i],
                     md->topic_cnt == 1 ? md->topics[0].partition_cnt : -1,
                     md->topic_cnt == 1 ? rd_kafka_err2str(md->topics[0].err) : "no topic");
            err = RD_KAFKA_RESP_ERR__FAIL;
        }
        if (md)
            rd_kafka_metadata_destroy(md);
        if (rkt)
            rd_kafka_topic_destroy(rkt);
        if (err)
            goto out;
    }
    rc = 0;
out:
    rd_kafka_destroy(rk);
    return rc;
}

/* The host handle the mock cluster lives in. NULL when librdkafka refuses (logged). */
static rd_kafka_t *db_host_new(void)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "client.id", "mcpq-devbroker", errstr, sizeof(errstr)) !=
        RD_KAFKA_CONF_OK) {
        log_msgf(LOG_ERROR, "config: %s", errstr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, db_host_log_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        log_msgf(LOG_ERROR, "rd_kafka_new: %s", errstr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return rk; /* conf now owned by rk */
}

/* Creates the ntopics topics on the mock cluster. 0 or MCPQ_EIO (logged). */
static int db_topics_create(rd_kafka_mock_cluster_t *mcluster, const char *const topics[],
                            int ntopics, int partitions)
{
    for (int i = 0; i < ntopics; i++) {
        rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mcluster, topics[i], partitions, 1);
        if (err) {
            log_msgf(LOG_ERROR, "cannot create topic %s: %s", topics[i], rd_kafka_err2str(err));
            return MCPQ_EIO;
        }
    }
    return 0;
}

/* Starts the front (front.h) for what the mock lacks: SASL, TLS, CreateTopics, in the global
 * front. 0 or MCPQ_EINVAL / MCPQ_EIO (logged). */
static int db_front_open(rd_kafka_mock_cluster_t *mcluster, const char *bootstraps,
                         const mcpq_settings_t *s)
{
    static char user[256]; /* the front keeps pointers to these for the process' life */
    char errstr[512];
    db_front_opts_t fo = {.sasl_mechanisms = s->db_sasl_mechanisms,
                          .tls_cert = s->db_tls_cert,
                          .tls_key = s->db_tls_key,
                          .tls_ca = s->db_tls_ca,
                          .deny_create = (int)s->db_deny_create};
    if (s->db_sasl && *s->db_sasl) {
        const char *colon = strchr(s->db_sasl, ':');
        if (!colon || (size_t)(colon - s->db_sasl) >= sizeof(user)) {
            log_msgf(LOG_ERROR, "MCPQ_DEVBROKER_SASL must be user:password");
            return MCPQ_EINVAL;
        }
        snprintf(user, sizeof(user), "%.*s", (int)(colon - s->db_sasl), s->db_sasl);
        fo.sasl_user = user;
        fo.sasl_password = colon + 1;
    }
    if (fo.tls_cert && *fo.tls_cert && !(fo.tls_key && *fo.tls_key)) {
        log_msgf(LOG_ERROR, "MCPQ_DEVBROKER_TLS_CERT needs MCPQ_DEVBROKER_TLS_KEY");
        return MCPQ_EINVAL;
    }
    front = db_front_start(mcluster, bootstraps, &fo, errstr, sizeof(errstr));
    if (!front) {
        log_msgf(LOG_ERROR, "front: %s", errstr);
        return MCPQ_EIO;
    }
    log_event(LOG_INFO, "devbroker front listening", "mock", bootstraps, "front",
              db_front_bootstraps(front), "sasl", fo.sasl_user ? fo.sasl_mechanisms : "off", "tls",
              fo.tls_cert && *fo.tls_cert ? (fo.tls_ca && *fo.tls_ca ? "mutual" : "on") : "off",
              (char *)NULL);
    return 0;
}

/* Starts the control channel (control.h) at s->db_control, in the global control.
 * 0 or MCPQ_EIO (logged). */
static int db_control_open(rd_kafka_mock_cluster_t *mcluster, const mcpq_settings_t *s,
                           const char *const topics[], int ntopics)
{
    char errstr[512];
    db_control_opts_t co = {.path = s->db_control,
                            .brokers = (int)s->brokers,
                            .topics = topics,
                            .ntopics = ntopics,
                            .partitions = (int)s->partitions};
    control = db_control_start(mcluster, &co, errstr, sizeof(errstr));
    if (!control) {
        log_msgf(LOG_ERROR, "control channel: %s", errstr);
        return MCPQ_EIO;
    }
    log_event(LOG_INFO, "devbroker control channel listening", "path", s->db_control, (char *)NULL);
    return 0;
}

/* Logs that the broker is ready and prints the BOOTSTRAP line. 0 or MCPQ_EIO (logged). */
static int db_announce(const mcpq_settings_t *s, const char *bootstraps, const char *dlq)
{
    char brokers_str[16], parts_str[16];
    snprintf(brokers_str, sizeof(brokers_str), "%lld", s->brokers);
    snprintf(parts_str, sizeof(parts_str), "%lld", s->partitions);
    log_event(LOG_INFO, "devbroker ready (in-memory, development and tests only)", "bootstrap",
              bootstraps, "topic", s->topic_jobs, "dlq", dlq, "partitions", parts_str, "brokers",
              brokers_str, (char *)NULL);
    if (printf("BOOTSTRAP %s\n", bootstraps) < 0 || fflush(stdout) != 0) {
        log_msgf(LOG_ERROR, "cannot write the BOOTSTRAP line: %s", strerror(errno));
        return MCPQ_EIO;
    }
    return 0;
}

/* The settings (environment and flags): -1 to go on, or the exit code (0 after --help or
 * --version, 2 for a bad setting). */
static int db_settings(mcpq_settings_t *s, int argc, char **argv)
{
    char errstr[512];
    int rc = settings_load(s, SET_BROKER, "mcpq-devbroker", db_about, argc, argv, errstr,
                           sizeof(errstr));
    if (rc == SETTINGS_VERSION)
        version_print(stdout, "mcpq-devbroker", NULL);
    if (rc == 1 || rc == SETTINGS_VERSION)
        return 0;
    if (rc < 0) {
        fprintf(stderr, "mcpq-devbroker: %s\n", errstr);
        return 2;
    }
    log_init("devbroker", s->log_level);
    return -1;
}

int main(int argc, char **argv)
{
    mcpq_settings_t s;
    int code = db_settings(&s, argc, argv);
    if (code >= 0)
        return code;

    char dlq[DB_TOPIC_MAX + 1];
    size_t tlen = strlen(s.topic_jobs);
    if (tlen == 0 || tlen + 4 > DB_TOPIC_MAX) {
        fprintf(stderr, "mcpq-devbroker: MCPQ_TOPIC_JOBS must be 1..%d characters\n",
                DB_TOPIC_MAX - 4);
        return 2;
    }
    snprintf(dlq, sizeof(dlq), "%s.dlq", s.topic_jobs);
    const char *const topics[] = {s.topic_jobs, dlq};

    /* Block the stop signals before librdkafka starts its threads (they inherit the mask),
     * so only sigwait() below ever sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    int exit_code = 1;
    rd_kafka_mock_cluster_t *mcluster = NULL;
    rd_kafka_t *rk = db_host_new();
    if (!rk)
        goto out;
    mcluster = rd_kafka_mock_cluster_new(rk, (int)s.brokers);
    if (!mcluster) {
        log_msgf(LOG_ERROR, "cannot create the mock cluster (%lld brokers)", s.brokers);
        goto out;
    }
    int ntopics = s.db_topics ? 2 : 0;
    if (db_topics_create(mcluster, topics, ntopics, (int)s.partitions) < 0)
        goto out;
    const char *bootstraps = rd_kafka_mock_cluster_bootstraps(mcluster);
    if (db_topics_check(bootstraps, topics, ntopics, (int)s.partitions) < 0)
        goto out;
    if (s.db_control && *s.db_control && db_control_open(mcluster, &s, topics, ntopics) < 0)
        goto out;
    if (!s.db_topics || s.db_deny_create || (s.db_sasl && *s.db_sasl) ||
        (s.db_tls_cert && *s.db_tls_cert)) {
        if (db_front_open(mcluster, bootstraps, &s) < 0)
            goto out;
        bootstraps = db_front_bootstraps(front);
    }
    if (s.ready_file && *s.ready_file && db_ready_file_write(s.ready_file, bootstraps) < 0)
        goto out;
    if (db_announce(&s, bootstraps, dlq) < 0)
        goto out;

    int sig = 0;
    while (sigwait(&stop, &sig) != 0)
        ;
    log_msgf(LOG_INFO, "signal %d: stopping (all messages and offsets are discarded)", sig);
    exit_code = 0;
out:
    if (s.ready_file && *s.ready_file)
        unlink(s.ready_file);
    db_control_stop(control);
    if (front)
        db_front_stop(front, 2000);
    if (mcluster)
        rd_kafka_mock_cluster_destroy(mcluster);
    if (rk)
        rd_kafka_destroy(rk);
    return exit_code;
}
