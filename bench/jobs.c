/*
 * jobs.c - bench-jobs: how many jobs per second the workers run, with no ingress in the way.
 *
 * Injector mode produces N job envelopes straight to the jobs topic, exactly as the ingress
 * publishes them (schemas/job.schema.json, built as ingress/mcp/toolcall.c build_envelope does;
 * sent through common/mq.c, so each record is signed with MCPQ_JOB_SIGNING_KEY as
 * common/jobsig.c does, keyed by its job id, which spreads the jobs over the partitions). Every
 * job names a reply stream of its own run ({mcpq}:reply:bench-jobs-<pid>-<random>) and carries
 * its executor, so the worker needs nothing from the registry. A reader on the main thread
 * follows that stream in Redis (XREAD BLOCK) until the result entry of every job is there, then
 * deletes the stream.
 *
 *   bench-jobs --brokers HOST:PORT --redis HOST:PORT [-n 10000] [--tool echo|http]
 *              [--url URL] [--rate R] [--topic mcpq.jobs] [--timeout-s 120]
 *
 * --tool echo runs the builtin echo; --tool http the http executor against --url (bench-jobs
 * --serve below). --rate R paces the jobs at R per second (0, the default: all at once).
 * Output: "key=value" lines (bench/sec_workers.sh reads them): jobs, sent, send_failures,
 * completed, errors (a result whose status is not ok or whose isError is true), duplicates,
 * produce_s, complete_s (first send to last result), jobs_per_s (completed / complete_s),
 * injector_cpu_s (its own CPU) and latency_p50_ms/p99/max (send to result read). Exit status
 * 0 when every job completed without an error, 1 otherwise, 2 on a usage error.
 *
 * Server mode is the 100 ms tool's HTTP service:
 *
 *   bench-jobs --serve PORT [--delay-ms 100]
 *
 * A libmicrohttpd server on 127.0.0.1:PORT that answers every POST after delay-ms with a
 * CallToolResult. A waiting request holds no thread: its connection is suspended and a timer
 * thread resumes it when it is due, so thousands wait at once (up to the fd limit). Prints
 * "READY http://127.0.0.1:PORT" once listening; SIGINT or SIGTERM stops it.
 */
#include "err.h"
#include "jobsig.h"
#include "mq.h"
#include "names.h"
#include "util.h"

#include <cJSON.h>
#include <hiredis/hiredis.h>
#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define JOBS_MAX 1000000
#define SERVE_CONN_MAX 19000u /* under this machine's 20000 fds per process */

static const char http_answer[] =
    "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}],\"isError\":false}";

typedef struct opts {
    const char *brokers, *redis, *tool, *url, *topic;
    long long n, rate, timeout_s, serve_port, delay_ms;
} opts_t;

typedef struct run {
    const opts_t *o;
    mq_producer_t *prod;
    char prefix[64];  /* job ids are <prefix><index> */
    char stream[128]; /* the reply stream */
    int64_t *sent_us; /* per job: when it was handed to the producer (0: not sent) */
    atomic_long sent, send_failures, acked, nack;
    atomic_int producing;
    int64_t t_first_us, t_produced_us;
} run_t;

static void sleep_us(int64_t us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------------ server mode */

typedef struct waiter {
    struct MHD_Connection *conn;
    int64_t due_us;
    int state; /* 0: reading the body, 1: suspended, 2: due: answer */
    struct waiter *next;
} waiter_t;

typedef struct server {
    pthread_mutex_t mu;
    waiter_t *head, *tail; /* suspended, in due order (one delay for all) */
    long delay_us;
    atomic_int stop;
} server_t;

static enum MHD_Result on_serve(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    server_t *s = cls;
    waiter_t *w = *con_cls;
    (void)url, (void)method, (void)version, (void)upload_data;
    if (!w) {
        if (!(w = calloc(1, sizeof(*w))))
            return MHD_NO;
        w->conn = conn;
        *con_cls = w;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* the envelope is not read */
        return MHD_YES;
    }
    if (w->state == 0) {
        w->state = 1;
        w->due_us = util_now_us() + s->delay_us;
        pthread_mutex_lock(&s->mu);
        if (s->tail)
            s->tail->next = w;
        else
            s->head = w;
        s->tail = w;
        pthread_mutex_unlock(&s->mu);
        MHD_suspend_connection(conn);
        return MHD_YES;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(
        sizeof(http_answer) - 1, (void *)http_answer, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static void on_serve_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                          enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

/* Resumes the suspended connections whose time has come (every 0.5 ms). */
static void *serve_timer(void *arg)
{
    server_t *s = arg;
    while (!atomic_load(&s->stop)) {
        int64_t now = util_now_us();
        pthread_mutex_lock(&s->mu);
        while (s->head && s->head->due_us <= now) {
            waiter_t *w = s->head;
            if (!(s->head = w->next))
                s->tail = NULL;
            w->next = NULL;
            w->state = 2;
            MHD_resume_connection(w->conn);
        }
        pthread_mutex_unlock(&s->mu);
        sleep_us(500);
    }
    return NULL;
}

static int serve(const opts_t *o)
{
    server_t s = {.delay_us = o->delay_ms * 1000};
    pthread_mutex_init(&s.mu, NULL);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->serve_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_serve, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_serve_done, &s, MHD_OPTION_CONNECTION_LIMIT, SERVE_CONN_MAX,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)8192, MHD_OPTION_CONNECTION_TIMEOUT, 120u,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench-jobs: cannot listen on 127.0.0.1:%lld\n", o->serve_port);
        return 1;
    }
    pthread_t timer;
    if (pthread_create(&timer, NULL, serve_timer, &s) != 0) {
        MHD_stop_daemon(d);
        return 1;
    }
    printf("READY http://127.0.0.1:%lld\n", o->serve_port);
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    atomic_store(&s.stop, 1);
    pthread_join(timer, NULL);
    /* libmicrohttpd stops only a daemon without suspended connections: answer them now. */
    pthread_mutex_lock(&s.mu);
    for (waiter_t *w = s.head, *next; w; w = next) {
        next = w->next; /* w is freed once its answer is sent */
        w->state = 2;
        MHD_resume_connection(w->conn);
    }
    s.head = s.tail = NULL;
    pthread_mutex_unlock(&s.mu);
    MHD_stop_daemon(d);
    return 0;
}

/* ------------------------------------------------------------------ injector mode */

static void on_delivery(void *opaque, int err, void *cb_arg)
{
    run_t *r = cb_arg;
    (void)opaque;
    atomic_fetch_add(err ? &r->nack : &r->acked, 1);
}

/* Job i's envelope as the ingress builds it; the caller frees it. */
static char *envelope(const run_t *r, long i, char *job_id, size_t idsz, char *tp)
{
    const opts_t *o = r->o;
    int64_t now = util_now_ms();
    char hex[33];
    snprintf(job_id, idsz, "%s%ld", r->prefix, i);
    util_random_hex(hex, 16);
    snprintf(tp, 56, "00-%s-%.16s-01", hex, hex + 8);
    cJSON *e = cJSON_CreateObject(), *ex = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "v", 1);
    cJSON_AddStringToObject(e, "job_id", job_id);
    cJSON_AddNumberToObject(e, "call_id", (double)i);
    cJSON_AddStringToObject(e, "tenant", "bench");
    cJSON_AddStringToObject(e, "server", "default");
    cJSON_AddStringToObject(e, "tool", o->tool);
    cJSON_AddStringToObject(e, "tool_version", "1");
    cJSON_AddItemToObject(e, "arguments", cJSON_CreateObject());
    cJSON_AddStringToObject(cJSON_GetObjectItem(e, "arguments"), "text", "hello");
    cJSON_AddItemToObject(e, "attachments", cJSON_CreateArray());
    cJSON_AddNullToObject(e, "task_id");
    cJSON_AddStringToObject(e, "channel_id", job_id);
    cJSON_AddNumberToObject(e, "channel_ttl_ms", 3600000);
    if (strcmp(o->tool, "http") == 0) {
        cJSON_AddStringToObject(ex, "type", "http");
        cJSON_AddStringToObject(ex, "url", o->url);
    } else {
        cJSON_AddStringToObject(ex, "type", "builtin");
        cJSON_AddStringToObject(ex, "name", "echo");
    }
    cJSON_AddItemToObject(e, "executor", ex);
    cJSON_AddStringToObject(e, "mode", "sync");
    cJSON_AddNumberToObject(e, "timeout_ms", 60000);
    cJSON_AddNumberToObject(e, "created_ms", (double)now);
    cJSON_AddNumberToObject(e, "sent_us", (double)util_now_us());
    cJSON_AddNumberToObject(e, "deadline_ms", (double)(now + 60000));
    cJSON_AddStringToObject(e, "reply_to", r->stream);
    cJSON_AddStringToObject(e, "traceparent", tp);
    cJSON_AddStringToObject(e, "request_id", job_id);
    cJSON_AddStringToObject(e, "owner", "key:bench-k1");
    char *out = cJSON_PrintUnformatted(e);
    cJSON_Delete(e);
    return out;
}

/* Sends job i; a full local queue is waited out (the producer drains it). */
static void send_one(run_t *r, long i)
{
    char job_id[96], tp[64];
    char *payload = envelope(r, i, job_id, sizeof(job_id), tp);
    int rc = MCPQ_ENOMEM;
    for (int tries = 0; payload && tries < 2000; tries++) {
        r->sent_us[i] = util_now_us();
        rc = mq_producer_send(r->prod, r->o->topic, job_id, NULL, payload, strlen(payload), tp,
                              NULL, NULL);
        if (rc != MCPQ_EIO)
            break;
        sleep_us(1000);
    }
    free(payload);
    if (rc == 0) {
        atomic_fetch_add(&r->sent, 1);
    } else {
        r->sent_us[i] = 0;
        atomic_fetch_add(&r->send_failures, 1);
    }
}

static void *producer_thread(void *arg)
{
    run_t *r = arg;
    int64_t t0 = util_now_us();
    r->t_first_us = t0;
    for (long i = 0; i < r->o->n; i++) {
        if (r->o->rate > 0) {
            int64_t due = t0 + (int64_t)((double)i * 1e6 / (double)r->o->rate);
            int64_t now = util_now_us();
            if (due > now)
                sleep_us(due - now);
        }
        send_one(r, i);
    }
    r->t_produced_us = util_now_us();
    atomic_store(&r->producing, 0);
    return NULL;
}

/* ------------------------------------------------------------------ the reply stream */

typedef struct tally {
    long completed, errors, duplicates;
    int64_t t_last_us;
    int64_t *lat_us; /* per completed job, in arrival order */
    unsigned char *seen;
} tally_t;

/* 1 when a result record says the call failed (status not ok, or isError true). */
static int record_failed(const char *data, size_t len)
{
    cJSON *rec = cJSON_ParseWithLength(data, len);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(rec, "result");
    int failed = !rec || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "status")) ||
                 strcmp(cJSON_GetObjectItemCaseSensitive(rec, "status")->valuestring, "ok") != 0 ||
                 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError"));
    cJSON_Delete(rec);
    return failed;
}

/* One stream entry: its fields job, kind, data (worker/core/store.c append_xadd). */
static void on_entry(const run_t *r, tally_t *t, const redisReply *f)
{
    const char *job = NULL, *kind = NULL, *data = NULL;
    size_t data_len = 0;
    for (size_t k = 0; f && f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2) {
        const redisReply *name = f->element[k], *v = f->element[k + 1];
        if (name->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(name->str, "job") == 0)
            job = v->str;
        else if (strcmp(name->str, "kind") == 0)
            kind = v->str;
        else if (strcmp(name->str, "data") == 0)
            data = v->str, data_len = v->len;
    }
    size_t pl = strlen(r->prefix);
    long long i = -1;
    if (!job || !kind || strcmp(kind, "result") != 0 || strncmp(job, r->prefix, pl) != 0 ||
        util_parse_ll(job + pl, 0, r->o->n - 1, &i) < 0)
        return; /* progress, logs, or not ours */
    if (t->seen[i]) {
        t->duplicates++;
        return;
    }
    t->seen[i] = 1;
    t->t_last_us = util_now_us();
    t->lat_us[t->completed++] = t->t_last_us - r->sent_us[i];
    if (!data || record_failed(data, data_len))
        t->errors++;
}

/* 1 while results may still come: producing, or fewer results than sent before the timeout. */
static int waiting(run_t *r, const tally_t *t)
{
    if (atomic_load(&r->producing))
        return 1;
    if (t->completed >= atomic_load(&r->sent))
        return 0;
    return util_now_us() < r->t_produced_us + (int64_t)r->o->timeout_s * 1000000;
}

/* Follows the reply stream until every sent job has its result (or the timeout). 0 or -1. */
static int read_results(run_t *r, redisContext *c, tally_t *t)
{
    char last[64] = "0";
    while (waiting(r, t)) {
        redisReply *rep =
            redisCommand(c, "XREAD COUNT 2000 BLOCK 200 STREAMS %s %s", r->stream, last);
        if (!rep) {
            fprintf(stderr, "bench-jobs: redis: %s\n", c->errstr);
            return -1;
        }
        /* [[stream, [[id, [fields]], ...]]] or nil after the block */
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1) {
            const redisReply *entries = rep->element[0]->element[1];
            for (size_t k = 0; k < entries->elements; k++) {
                const redisReply *e = entries->element[k];
                snprintf(last, sizeof(last), "%s", e->element[0]->str);
                on_entry(r, t, e->element[1]);
            }
        }
        freeReplyObject(rep);
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(run_t *r, tally_t *t)
{
    long n = (long)r->o->n, sent = atomic_load(&r->sent);
    double complete_s = t->completed ? (double)(t->t_last_us - r->t_first_us) / 1e6 : 0;
    printf("jobs=%ld\ntool=%s\nsent=%ld\nsend_failures=%ld\nnacked=%ld\n", n, r->o->tool, sent,
           atomic_load(&r->send_failures), atomic_load(&r->nack));
    printf("completed=%ld\nerrors=%ld\nduplicates=%ld\nmissing=%ld\n", t->completed, t->errors,
           t->duplicates, n - t->completed);
    printf("produce_s=%.3f\ncomplete_s=%.3f\njobs_per_s=%.1f\n",
           (double)(r->t_produced_us - r->t_first_us) / 1e6, complete_s,
           complete_s > 0 ? (double)t->completed / complete_s : 0.0);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) /* this injector's own CPU, both threads */
        printf("injector_cpu_s=%.3f\n",
               (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    qsort(t->lat_us, (size_t)t->completed, sizeof(int64_t), cmp_i64);
    if (t->completed) {
        printf("latency_p50_ms=%.3f\nlatency_p99_ms=%.3f\nlatency_max_ms=%.3f\n",
               (double)t->lat_us[t->completed / 2] / 1e3,
               (double)t->lat_us[(t->completed * 99) / 100] / 1e3,
               (double)t->lat_us[t->completed - 1] / 1e3);
    }
}

static redisContext *redis_open(const char *hostport)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    long long port = 0;
    if (!colon || (size_t)(colon - hostport) >= sizeof(host) ||
        util_parse_ll(colon + 1, 1, 65535, &port) < 0) {
        fprintf(stderr, "bench-jobs: --redis wants HOST:PORT\n");
        return NULL;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
    struct timeval tv = {.tv_sec = 5};
    redisContext *c = redisConnectWithTimeout(host, (int)port, tv);
    if (!c || c->err) {
        fprintf(stderr, "bench-jobs: redis %s: %s\n", hostport, c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    return c;
}

/* The signing key of MCPQ_JOB_SIGNING_KEY into key; 0 (none: unsigned jobs) or 1, -1 when bad. */
static int signing_key(jobsig_key_t *key)
{
    const char *k = getenv("MCPQ_JOB_SIGNING_KEY");
    if (!k || !*k)
        return 0;
    size_t len = strlen(k);
    if (len < JOBSIG_KEY_MIN || len > JOBSIG_KEY_MAX) {
        fprintf(stderr, "bench-jobs: MCPQ_JOB_SIGNING_KEY must be %d to %d bytes\n", JOBSIG_KEY_MIN,
                JOBSIG_KEY_MAX);
        return -1;
    }
    memcpy(key->bytes, k, len);
    key->len = len;
    return 1;
}

static int inject(const opts_t *o)
{
    static jobsig_key_t key;
    int signed_jobs = signing_key(&key);
    redisContext *c = signed_jobs < 0 ? NULL : redis_open(o->redis);
    if (!c)
        return 2;
    run_t r = {.o = o};
    tally_t t = {0};
    char hex[9], errstr[512];
    util_random_hex(hex, 4);
    snprintf(r.prefix, sizeof(r.prefix), "bj_%ld_%s_", (long)getpid(), hex);
    snprintf(r.stream, sizeof(r.stream), "%sbench-jobs-%ld-%s", NAMES_KEY_REPLY, (long)getpid(),
             hex);
    r.sent_us = calloc((size_t)o->n, sizeof(int64_t));
    t.lat_us = calloc((size_t)o->n, sizeof(int64_t));
    t.seen = calloc((size_t)o->n, 1);
    r.prod = mq_producer_new(o->brokers, 30000, NULL, signed_jobs ? &key : NULL, on_delivery, &r,
                             errstr, sizeof(errstr));
    int rc = 1;
    pthread_t th;
    if (!r.sent_us || !t.lat_us || !t.seen || !r.prod) {
        fprintf(stderr, "bench-jobs: %s\n", r.prod ? "out of memory" : errstr);
        goto out;
    }
    atomic_store(&r.producing, 1);
    if (pthread_create(&th, NULL, producer_thread, &r) != 0)
        goto out;
    int rd = read_results(&r, c, &t);
    pthread_join(th, NULL);
    report(&r, &t);
    rc = rd == 0 && t.completed == o->n && t.errors == 0 ? 0 : 1;
    freeReplyObject(redisCommand(c, "DEL %s", r.stream));
out:
    mq_producer_free(r.prod, 10000);
    redisFree(c);
    free(r.sent_us);
    free(t.lat_us);
    free(t.seen);
    return rc;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --brokers HOST:PORT --redis HOST:PORT [-n N] [--tool echo|http] [--url URL]"
            "\n          [--rate R] [--topic T] [--timeout-s S]\n"
            "       %s --serve PORT [--delay-ms MS]\n",
            argv0, argv0);
    return 2;
}

/* One option with its value into o; 0, or -1 for an unknown option or a bad value. */
static int parse_opt(opts_t *o, const char *a, const char *v)
{
    if (!v)
        return -1;
    if (strcmp(a, "--brokers") == 0)
        o->brokers = v;
    else if (strcmp(a, "--redis") == 0)
        o->redis = v;
    else if (strcmp(a, "--tool") == 0 && (strcmp(v, "echo") == 0 || strcmp(v, "http") == 0))
        o->tool = v;
    else if (strcmp(a, "--url") == 0)
        o->url = v;
    else if (strcmp(a, "--topic") == 0)
        o->topic = v;
    else if (strcmp(a, "-n") == 0)
        return util_parse_ll(v, 1, JOBS_MAX, &o->n);
    else if (strcmp(a, "--rate") == 0)
        return util_parse_ll(v, 0, 10000000, &o->rate);
    else if (strcmp(a, "--timeout-s") == 0)
        return util_parse_ll(v, 1, 86400, &o->timeout_s);
    else if (strcmp(a, "--serve") == 0)
        return util_parse_ll(v, 1, 65535, &o->serve_port);
    else if (strcmp(a, "--delay-ms") == 0)
        return util_parse_ll(v, 0, 600000, &o->delay_ms);
    else
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = {
        .tool = "echo", .topic = "mcpq.jobs", .n = 10000, .timeout_s = 120, .delay_ms = 100};
    for (int i = 1; i < argc; i += 2)
        if (parse_opt(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL) < 0)
            return usage(argv[0]);
    if (o.serve_port)
        return serve(&o);
    if (!o.brokers || !o.redis || (strcmp(o.tool, "http") == 0 && !o.url))
        return usage(argv[0]);
    return inject(&o);
}
