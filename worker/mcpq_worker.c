/*
 * mcpq_worker.c - mcpq-worker: settings, logging, process set-up; the work is in worker.c.
 */
#include "consumer.h"
#include "names.h"
#include "err.h"
#include "jobsig.h"
#include "log.h"
#include "otel.h"
#include "settings.h"
#include "version.h"
#include "worker.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

static const char worker_about[] =
    "mcpq-worker: runs the tools behind mcpq's MCP gateway. It is a member of the Kafka\n"
    "consumer group MCPQ_GROUP_ID on MCPQ_TOPIC_JOBS: each record is one tools/call job,\n"
    "which it runs through its executor (builtin echo/sleep/fail, http: POST to a service,\n"
    "exec: a local program with the call on stdin), bounded by the call's deadline. Results\n"
    "are written once per job to Redis (" NAMES_KEY_RESULT
    "<job_id>) and announced on the waiting\n"
    "ingress's reply stream, with live progress and log entries; the Kafka offset is stored\n"
    "only after the result is durable, so a worker that dies mid-job loses nothing.\n"
    "With MCPQ_JOB_SIGNING_KEY set, a record without a valid signature of the ingress "
    "(the\n" NAMES_HDR_JOBSIG " header) is refused before anything of it runs.\n"
    "\n"
    "A call its caller cancelled (the ingress sets " NAMES_KEY_CANCEL
    "<job_id> and publishes the id\n"
    "on the Redis channel " NAMES_CHAN_CANCEL ") never starts or is stopped like a timed-out one\n"
    "(SIGTERM, then SIGKILL after MCPQ_KILL_GRACE_MS; HTTP transfers aborted): it writes no\n"
    "result, sends a `cancelled` reply entry, and its offset is stored. Running jobs'\n"
    "cancel keys are also checked once a second, in case a Pub/Sub message was missed.\n"
    "\n"
    "One event-loop thread runs thousands of jobs at once. SIGTERM or SIGINT stops taking\n"
    "jobs, lets running ones finish for MCPQ_SHUTDOWN_GRACE_MS, then exits; unfinished jobs\n"
    "go to another worker. Logs are JSON lines on stderr.";

/* Children and pipes must never land on fds 0-2 by accident: keep them open. */
static void keep_std_fds_open(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int n = open("/dev/null", O_RDWR);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

/* Thousands of jobs may each hold a socket or a child's four fds. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* The Kafka properties first: a bad one stops the process before anything connects (the
 * consumer reads them again when it is made). With print (--print-config) also prints the
 * settings and the consumer's effective properties. 0, or MCPQ_EINVAL after printing the
 * reason to stderr. */
static int kafka_props_check(const mcpq_settings_t *s, int print)
{
    char errstr[512];
    kconf_t *kc =
        kconf_load(s->kafka_properties, (const char *const *)environ, errstr, sizeof(errstr));
    if (!kc) {
        fprintf(stderr, "mcpq-worker: %s\n", errstr);
        return MCPQ_EINVAL;
    }
    if (print) {
        settings_print(stdout, s, SET_WORKER);
        wrk_consumer_conf_print(
            stdout, s, s->worker_id && *s->worker_id ? s->worker_id : "worker-<host>-<pid>", kc);
        otel_describe(stdout, "mcpq-worker");
    }
    kconf_free(kc);
    return 0;
}

/* Keeps tools, which run as the worker's user, out of its secrets where it can, and warns of
 * what it cannot (logged). */
static void guard_secrets(const jobsig_keys_t *keys)
{
    /* Tools run as the worker's user: without this, one could read the worker's environment
     * (its credentials, MCPQ_JOB_SIGNING_KEY) from /proc/<pid>/environ, its memory from
     * /proc/<pid>/mem, or ptrace it. A process that is not dumpable has its /proc files
     * owned by root. The cost: no core dumps of mcpq-worker. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        log_event(LOG_WARN, "cannot make the worker non-dumpable: tools may read its environment",
                  "error", strerror(errno), (char *)NULL);
    if (keys->n == 0)
        log_event(LOG_WARN,
                  "MCPQ_JOB_SIGNING_KEY is not set: this worker runs every record on the jobs "
                  "topic, signed or not, so anyone who can write to the topic can run programs "
                  "here (insecure; docs/operations.md, \"Job signing and Kafka ACLs\")",
                  (char *)NULL);
}

/* Blocked before any thread starts (librdkafka's inherit the mask): the worker reads
 * them from a signalfd. Children get the defaults back (exec.c). */
static void block_stop_signals(void)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
    keep_std_fds_open();
    mcpq_settings_t s;
    char errstr[512];
    int rc = settings_load(&s, SET_WORKER, "mcpq-worker", worker_about, argc, argv, errstr,
                           sizeof(errstr));
    if (rc == 1)
        return 0;
    if (rc == SETTINGS_VERSION) { /* libmicrohttpd: the MCPQ_METRICS_LISTEN listener */
        const char *const libs[] = {"libmicrohttpd", MHD_get_version(), NULL};
        version_print(stdout, "mcpq-worker", libs);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "mcpq-worker: %s\n", errstr);
        return 2;
    }
    if (!s.kafka_brokers || !*s.kafka_brokers) {
        fprintf(stderr, "mcpq-worker: MCPQ_KAFKA_BROKERS (--kafka-brokers) is required\n");
        return 2;
    }
    if (kafka_props_check(&s, rc == SETTINGS_PRINT) < 0)
        return 2;
    if (rc == SETTINGS_PRINT)
        return 0;
    jobsig_keys_t keys;
    if (jobsig_keys_load(&keys, &s, errstr, sizeof(errstr)) < 0) {
        fprintf(stderr, "mcpq-worker: %s\n", errstr);
        return 2;
    }
    log_init("worker", s.log_level);
    guard_secrets(&keys);
    block_stop_signals();
    raise_fd_limit();

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_msgf(LOG_ERROR, "curl_global_init failed");
        jobsig_keys_cleanup(&keys);
        return 1;
    }
    if (otel_init("mcpq-worker", errstr, sizeof(errstr)) < 0) {
        fprintf(stderr, "mcpq-worker: %s\n", errstr);
        curl_global_cleanup();
        jobsig_keys_cleanup(&keys);
        return 2;
    }
    int exit_code = 1;
    wrk_worker_t *w = wrk_worker_new(&s, &keys, errstr, sizeof(errstr));
    if (!w) {
        log_event(LOG_ERROR, "cannot start the worker", "error", errstr, (char *)NULL);
    } else {
        exit_code = wrk_worker_run(w);
        wrk_worker_free(w);
    }
    otel_shutdown(); /* after the drain: the last jobs' spans are sent */
    curl_global_cleanup();
    jobsig_keys_cleanup(&keys);
    return exit_code;
}
