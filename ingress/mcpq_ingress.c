/*
 * mcpq_ingress.c - mcpq-ingress: settings, start-up, the registry refresh thread and graceful stop.
 */
#include "cfg.h"
#include "names.h"
#include "peer.h"
#include "process.h"
#include "err.h"
#include "federate.h"
#include "server.h"
#include "ctx.h"
#include "jobsig.h"
#include "mq.h"
#include "kconf.h"
#include "ktopic.h"
#include "listen.h"
#include "log.h"
#include "mcp.h"
#include "toolcall.h"
#include "regstore.h"
#include "settings.h"
#include "files.h"
#include "webhook.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REFRESH_MS 250
#define PROBE_MS 1000      /* Kafka metadata probe */
#define READY_WAIT_MS 5000 /* longest the ready file waits for the first registry load */
#define FLUSH_MS 2000      /* at shutdown: longest the last answers wait for their connections */

static const char about[] =
    "mcpq-ingress: the MCP Streamable HTTP endpoint of mcpq. It authenticates clients,\n"
    "validates tools/call arguments, publishes each call as a job to Kafka and answers\n"
    "when a worker's result arrives through Redis. Stateless: run as many replicas as\n"
    "needed behind a load balancer; sessions, registry and results live in Redis.\n"
    "\n"
    "SIGTERM (or SIGINT) drains: /readyz answers 503 at once while requests are still served\n"
    "for MCPQ_DRAIN_DELAY_MS (a second signal cuts that short); then the listen socket closes,\n"
    "calls in flight get MCPQ_SHUTDOWN_GRACE_MS to finish, the rest are answered -32603 (a\n"
    "streamed call as its last event), and the process exits 0.\n"
    "\n"
    "Registry commands (run once and exit; they use MCPQ_REDIS_URL):\n"
    "  mcpq-ingress --apply FILE [--prune]   apply a config file to the running gateway's\n"
    "                                        registry, idempotently (--prune deletes the servers\n"
    "                                        and tools of its tenants that FILE does not name)\n"
    "  mcpq-ingress --export                 print the registry as a config file";

typedef struct refresher {
    ing_ctx_t *ctx;
    cJSON *config; /* normalized config still to store; NULL once stored */
    pthread_t thread;
    volatile sig_atomic_t stop;
    pthread_mutex_t lock; /* guards kick */
    pthread_cond_t cond;  /* CLOCK_MONOTONIC */
    int kick;             /* refresh now: the registry may have changed (listen.h) */
    int lost_logged;      /* the registry vanished from Redis and could not be seeded again */
} refresher_t;

/* MCPQ_CONFIG read, normalized and checked (ing_regstore_config_check: the SSRF guard at load time,
 * a webhook url naming a private address literally, and the app secret minimum). NULL with err set
 * when the file is unusable. */
static cJSON *config_read(const mcpq_settings_t *set, char *err, size_t err_size)
{
    cJSON *cfg = cfg_load_file(set->config, err, err_size);
    if (!cfg)
        return NULL;
    char why[384];
    if (ing_regstore_config_check(cfg, set, why, sizeof(why)) < 0) {
        snprintf(err, err_size, "%s: %s", set->config, why);
        cJSON_Delete(cfg);
        return NULL;
    }
    return cfg;
}

/*
 * The registry revision is 0 (no key) only before the first write or after Redis lost its data
 * (a restart without persistence, a flush): every registry write bumps it. Swapping to the
 * empty registry would answer every client 401, so the replica keeps serving the snapshot it
 * has and seeds the registry again from MCPQ_CONFIG (the write is idempotent and
 * compare-and-set, so replicas racing to do it agree); objects created only through the admin
 * API are gone with the data and must be applied again (docs/operations.md). Returns 1 when
 * the caller should keep its snapshot.
 */
static int registry_lost(refresher_t *rf, long long rev)
{
    ing_ctx_t *ctx = rf->ctx;
    pthread_mutex_lock(&ctx->reg_lock);
    int had = ctx->reg && ing_registry_rev(ctx->reg) > 0;
    pthread_mutex_unlock(&ctx->reg_lock);
    if (rev != 0 || !had)
        return 0;
    char err[512];
    if (ctx->set->config && !rf->config)
        rf->config = config_read(ctx->set, err, sizeof(err));
    if (rf->config) {
        log_event(LOG_WARN, "registry gone from Redis: seeding it again from the config file",
                  "file", ctx->set->config, (char *)NULL);
        rf->lost_logged = 0;
    } else if (!rf->lost_logged++) {
        log_event(LOG_ERROR,
                  "registry gone from Redis: serving the last one loaded until it is applied "
                  "again (mcpq-ingress --apply)",
                  "error", ctx->set->config ? err : "no MCPQ_CONFIG to seed it from", (char *)NULL);
    }
    return 1;
}

/* The Pub/Sub thread heard of a registry change: refresh without waiting for the poll. */
static void refresh_wake(void *arg)
{
    refresher_t *rf = arg;
    pthread_mutex_lock(&rf->lock);
    rf->kick = 1;
    pthread_cond_signal(&rf->cond);
    pthread_mutex_unlock(&rf->lock);
}

static void refresh_once(refresher_t *rf, redisContext **c, int *logged)
{
    ing_ctx_t *ctx = rf->ctx;
    char err[256];
    if (!*c) {
        *c = kv_connect(ctx->kvt, (int)ctx->set->redis_timeout_ms, err, sizeof(err));
        if (!*c) {
            atomic_store(&ctx->redis_up, 0);
            if (!(*logged)++)
                log_event(LOG_ERROR, "redis unreachable", "error", err, (char *)NULL);
            return;
        }
    }
    if (rf->config) {
        ing_regstore_summary_t sum;
        int applied = 0;
        if (ing_regstore_seed(*c, rf->config, &applied, &sum, err, sizeof(err)) < 0)
            goto broken;
        cJSON_Delete(rf->config);
        rf->config = NULL;
        char counts[96];
        snprintf(counts, sizeof(counts), "created=%d updated=%d unchanged=%d", sum.created,
                 sum.updated, sum.unchanged);
        log_event(LOG_INFO,
                  applied ? "config applied to the registry"
                          : "config already applied: registry left as it is",
                  "file", ctx->set->config, "objects", counts, (char *)NULL);
    }
    long long rev = 0;
    if (ing_registry_read_rev(*c, &rev) < 0) {
        snprintf(err, sizeof(err), "redis: %s", (*c)->err ? (*c)->errstr : "GET failed");
        goto broken;
    }
    atomic_store(&ctx->redis_up, 1);
    if (*logged) {
        log_event(LOG_INFO, "redis reachable again", (char *)NULL);
        *logged = 0;
    }
    if (registry_lost(rf, rev)) {
        if (rf->config)
            refresh_wake(rf); /* seed on the next round, without waiting for the poll */
        return;
    }
    pthread_mutex_lock(&ctx->reg_lock);
    int stale = !ctx->reg || ing_registry_rev(ctx->reg) != rev;
    pthread_mutex_unlock(&ctx->reg_lock);
    if (!stale)
        return;
    ing_registry_t *reg = ing_registry_fetch(*c, err, sizeof(err));
    if (!reg)
        goto broken;
    pthread_mutex_lock(&ctx->reg_lock);
    ing_registry_t *old = ctx->reg;
    ctx->reg = reg;
    pthread_mutex_unlock(&ctx->reg_lock);
    ing_listen_registry_changed(ctx->listen, old, reg); /* notifications/tools/list_changed */
    ing_registry_unref(old);
    char revs[32];
    snprintf(revs, sizeof(revs), "%lld", rev);
    log_event(LOG_INFO, "registry loaded", "revision", revs, (char *)NULL);
    return;
broken:
    atomic_store(&ctx->redis_up, 0);
    if (!(*logged)++)
        log_event(LOG_ERROR, "registry refresh failed", "error", err, (char *)NULL);
    redisFree(*c);
    *c = NULL;
}

static void *refresh_thread(void *arg)
{
    refresher_t *rf = arg;
    redisContext *c = NULL;
    int logged = 0;
    int64_t next_probe = 0;
    while (!rf->stop) {
        refresh_once(rf, &c, &logged);
        if (util_mono_ms() >= next_probe) {
            mq_producer_probe(rf->ctx->producer, 500);
            next_probe = util_mono_ms() + PROBE_MS;
        }
        /* The revision poll; a kick (Pub/Sub) cuts the wait short. */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)REFRESH_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_mutex_lock(&rf->lock);
        while (!rf->kick && !rf->stop && pthread_cond_timedwait(&rf->cond, &rf->lock, &until) == 0)
            ;
        rf->kick = 0;
        pthread_mutex_unlock(&rf->lock);
    }
    redisFree(c);
    return NULL;
}

static const char *sig_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

/* The tool calls in flight, as a log field. */
static const char *in_flight(ing_ctx_t *ctx, char *buf, size_t size)
{
    snprintf(buf, size, "%zu", ing_pending_count(ctx->pending));
    return buf;
}

/*
 * Graceful stop after SIGTERM or SIGINT (sig), each phase logged with the calls in flight:
 *   1. drain delay (MCPQ_DRAIN_DELAY_MS): /readyz answers 503 but everything is served as
 *      usual, responses carrying Connection: close, while the load balancer takes the replica
 *      out of rotation; a second SIGTERM or SIGINT (from sigs) ends it early;
 *   2. the listen socket closes and notification streams end;
 *   3. grace (MCPQ_SHUTDOWN_GRACE_MS): the calls in flight may finish;
 *   4. the rest are answered -32603 (a streamed call gets it as its last event), and their
 *      connections get up to FLUSH_MS to take the answer before the server stops.
 */
static void drain(ing_ctx_t *ctx, ing_webhook_t *wh, const sigset_t *sigs, int sig)
{
    const mcpq_settings_t *set = ctx->set;
    char n[24], ms[24];
    atomic_store(&ctx->stopping, 1);
    snprintf(ms, sizeof(ms), "%lld", set->drain_delay_ms);
    log_event(LOG_INFO, "draining: /readyz fails, still accepting", "signal", sig_name(sig),
              "in_flight", in_flight(ctx, n, sizeof(n)), "drain_delay_ms", ms, (char *)NULL);
    for (int64_t until = util_mono_ms() + set->drain_delay_ms, left;
         (left = until - util_mono_ms()) > 0;) {
        struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
        int again = sigtimedwait(sigs, NULL, &ts);
        if (again > 0) {
            log_event(LOG_INFO, "drain delay cut short by a second signal", "signal",
                      sig_name(again), (char *)NULL);
            break;
        }
    }

    ing_server_quiesce(ctx);
    /* Notification streams never finish on their own: end them now (no new one opens). */
    ing_listen_close_all(ctx->listen);
    /* Webhook attempts in flight may finish meanwhile; the rest go back to the queue. */
    ing_webhook_quiesce(wh, set->shutdown_grace_ms < ING_WH_TIMEOUT_MS ? set->shutdown_grace_ms
                                                                       : ING_WH_TIMEOUT_MS);
    snprintf(ms, sizeof(ms), "%lld", set->shutdown_grace_ms);
    log_event(LOG_INFO, "no longer accepting: waiting for the calls in flight", "in_flight",
              in_flight(ctx, n, sizeof(n)), "shutdown_grace_ms", ms, (char *)NULL);

    int64_t until = util_mono_ms() + set->shutdown_grace_ms;
    while (ing_pending_count(ctx->pending) > 0 && util_mono_ms() < until)
        usleep(50 * 1000);
    if (ing_pending_count(ctx->pending) > 0)
        log_event(LOG_WARN, "shutdown grace over: answering the unfinished calls -32603",
                  "in_flight", in_flight(ctx, n, sizeof(n)), (char *)NULL);
    else
        log_event(LOG_INFO, "every call in flight answered", (char *)NULL);
    ing_pending_fail_all(ctx->pending, "server shutting down; try again");

    /* Resumed connections send their answers and close (Connection: close); an idle
     * keep-alive connection would wait for its timeout, hence the bound. */
    until = util_mono_ms() + FLUSH_MS;
    unsigned open;
    while ((open = ing_server_connections(ctx)) > 0 && util_mono_ms() < until)
        usleep(20 * 1000);
    snprintf(n, sizeof(n), "%u", open);
    log_event(open ? LOG_WARN : LOG_INFO, "stopping the HTTP server", "connections_open", n,
              (char *)NULL);
}

static int write_ready_file(const char *path, const char *text)
{
    if (!path)
        return 0;
    FILE *f = fopen(path, "w");
    if (!f)
        return MCPQ_EIO;
    fprintf(f, "%s\n", text);
    fclose(f);
    return 0;
}

/* Takes --apply FILE, --prune and --export out of argv (the rest are settings). */
static void registry_flags(int *argc, char **argv, const char **apply, int *prune, int *export)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--apply") == 0 && i + 1 < *argc)
            *apply = argv[++i];
        else if (strncmp(argv[i], "--apply=", 8) == 0)
            *apply = argv[i] + 8;
        else if (strcmp(argv[i], "--prune") == 0)
            *prune = 1;
        else if (strcmp(argv[i], "--export") == 0)
            *export = 1;
        else
            argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
}

/* mcpq-ingress --apply FILE / --export: one registry command against MCPQ_REDIS_URL. */
static int registry_command(const mcpq_settings_t *set, const char *apply, int prune)
{
    char err[1024];
    kv_target_t *kvt = kv_target_new(set, err, sizeof(err));
    redisContext *c = kvt ? kv_connect(kvt, (int)set->redis_timeout_ms, err, sizeof(err)) : NULL;
    if (!c) {
        fprintf(stderr, "mcpq-ingress: redis: %s\n", err);
        kv_target_free(kvt);
        return 1;
    }
    int code = 1;
    cJSON *cfg = NULL;
    ing_regstore_summary_t sum;
    if (!apply) {
        cJSON *doc = ing_regstore_export(c, err, sizeof(err));
        char *text = doc ? cJSON_Print(doc) : NULL;
        if (text)
            printf("%s\n", text);
        else
            fprintf(stderr, "mcpq-ingress: export: %s\n", doc ? "out of memory" : err);
        code = text ? 0 : 1;
        cJSON_free(text);
        cJSON_Delete(doc);
    } else if (!(cfg = cfg_load_file(apply, err, sizeof(err)))) {
        fprintf(stderr, "mcpq-ingress: config: %s\n", err);
        code = 2;
    } else if (ing_regstore_config_check(cfg, set, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: config: %s: %s\n", apply, err);
        code = 2;
    } else if (ing_regstore_apply(c, cfg, prune, &sum, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: apply: %s\n", err);
    } else {
        printf("applied %s: created %d, updated %d, unchanged %d, deleted %d (revision %lld)\n",
               apply, sum.created, sum.updated, sum.unchanged, sum.deleted, sum.rev);
        code = 0;
    }
    cJSON_Delete(cfg);
    redisFree(c);
    kv_target_free(kvt);
    return code;
}

int main(int argc, char **argv)
{
    mcpq_settings_t set;
    char err[512];
    const char *apply = NULL;
    int prune = 0, export = 0;
    registry_flags(&argc, argv, &apply, &prune, &export);
    int rc = settings_load(&set, SET_INGRESS, "mcpq-ingress", about, argc, argv, err, sizeof(err));
    if (rc == 1)
        return 0;
    if (rc < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        return 2;
    }
    log_init("ingress", set.log_level);
    /* The Kafka properties first: a bad one stops the process before anything connects. */
    kconf_t *kc = kconf_load(set.kafka_properties, (const char *const *)environ, err, sizeof(err));
    if (!kc) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        log_event(LOG_ERROR, "Kafka properties rejected", "error", err, (char *)NULL);
        return 2;
    }
    if (rc == SETTINGS_PRINT) {
        settings_print(stdout, &set, SET_INGRESS);
        mq_producer_conf_print(stdout, kc, set.kafka_brokers, (int)set.kafka_message_timeout_ms);
    }
    kconf_free(kc); /* checked; read again where the producer is made */
    if (rc == SETTINGS_PRINT)
        return 0;
    if (apply || export)
        return registry_command(&set, apply, prune);
    ing_whrules_schedule_t sched;
    if (ing_whrules_schedule_parse(set.webhook_retry_schedule, &sched, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        return 2;
    }
    jobsig_keys_t keys;
    if (jobsig_keys_load(&keys, &set, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        return 2;
    }
    if (keys.n == 0)
        log_event(LOG_WARN,
                  "MCPQ_JOB_SIGNING_KEY is not set: jobs are published unsigned, and a worker "
                  "without a key runs whatever any writer to the jobs topic asks "
                  "(insecure; docs/operations.md, \"Job signing and Kafka ACLs\")",
                  (char *)NULL);

    if (set.app_secret_min_bytes < CFG_APP_SECRET_MIN)
        log_event(LOG_WARN,
                  "app secrets shorter than 32 bytes are accepted (MCPQ_APP_SECRET_MIN_BYTES); "
                  "do not run a production ingress like this",
                  (char *)NULL);
    kv_target_t *kvt = kv_target_new(&set, err, sizeof(err));
    if (!kvt) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        jobsig_keys_cleanup(&keys);
        return 2;
    }
    refresher_t rf = {0};
    pthread_mutex_init(&rf.lock, NULL);
    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&rf.cond, &cattr);
    pthread_condattr_destroy(&cattr);
    if (set.config) {
        rf.config = config_read(&set, err, sizeof(err));
        if (!rf.config) {
            fprintf(stderr, "mcpq-ingress: config: %s\n", err);
            log_event(LOG_ERROR, "config rejected", "error", err, (char *)NULL);
            jobsig_keys_cleanup(&keys);
            kv_target_free(kvt);
            return 2;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT); /* before any thread: webhook deliveries use curl */

    /* Signals are taken by sigwait below: block them before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    ing_ctx_t ctx;
    int exit_code = 1;
    ing_webhook_t *wh = NULL;
    ing_federate_t *fed = NULL;
    rf.ctx = &ctx;
    ing_process_opts_t opts = {
        .keys = &keys, .registry_wake = refresh_wake, .registry_wake_arg = &rf};
    int opened = ing_process_open(&ctx, &set, kvt, &opts, &exit_code, err, sizeof(err));
    jobsig_keys_cleanup(&keys); /* the producer has its copy */
    if (opened < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        goto out;
    }
    wh = ing_webhook_new(&ctx, err, sizeof(err));
    if (!wh) {
        fprintf(stderr, "mcpq-ingress: webhooks: %s\n", err);
        goto out;
    }
    /* Federated servers (federate.h): imported in the background; before the refresh thread
     * starts, which frees rf.config once stored. */
    if (rf.config)
        fed = ing_federate_start(&set, ctx.kvt, rf.config);
    if (pthread_create(&rf.thread, NULL, refresh_thread, &rf) != 0) {
        fprintf(stderr, "mcpq-ingress: cannot start the refresh thread\n");
        goto out;
    }
    if (ing_server_start(&ctx, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        log_event(LOG_ERROR, "http start failed", "error", err, (char *)NULL);
        rf.stop = 1;
        pthread_join(rf.thread, NULL);
        goto out;
    }
    if (ing_webhook_start(wh) < 0) {
        fprintf(stderr, "mcpq-ingress: cannot start the webhook dispatcher\n");
        ing_server_stop(&ctx);
        rf.stop = 1;
        pthread_join(rf.thread, NULL);
        goto out;
    }
    log_event(LOG_INFO, "listening", "listen", ctx.listen_addr, "ops_listen",
              ctx.ops_addr[0] ? ctx.ops_addr : "(on listen)", "instance", ctx.instance,
              (char *)NULL);
    /* Ready once /mcp can answer: the refresh thread's first load usually lands within
     * milliseconds; a request before it would get 503 "registry not loaded yet". When Redis
     * is down at start-up the file is written anyway after READY_WAIT_MS (as /readyz says). */
    for (int64_t until = util_mono_ms() + READY_WAIT_MS; util_mono_ms() < until; usleep(5000)) {
        ing_registry_t *reg = ing_ctx_registry(&ctx);
        ing_registry_unref(reg);
        if (reg)
            break;
    }
    /* The bound addresses ("[::]:8080"; port 0 resolved), the ops listener's on a second line. */
    char ready_text[200];
    snprintf(ready_text, sizeof(ready_text), "%s%s%s", ctx.listen_addr, ctx.ops_addr[0] ? "\n" : "",
             ctx.ops_addr);
    write_ready_file(set.ready_file, ready_text);

    int sig = 0;
    sigwait(&sigs, &sig);
    drain(&ctx, wh, &sigs, sig);
    ing_server_stop(&ctx);
    rf.stop = 1;
    pthread_join(rf.thread, NULL);
    exit_code = 0;
out:
    ing_server_stop(&ctx);
    ing_federate_stop(fed);
    ing_webhook_free(wh);
    ing_process_close(&ctx);
    cJSON_Delete(rf.config);
    pthread_cond_destroy(&rf.cond);
    pthread_mutex_destroy(&rf.lock);
    curl_global_cleanup();
    log_event(LOG_INFO, "stopped", (char *)NULL);
    return exit_code;
}
