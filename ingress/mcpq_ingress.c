/*
 * mcpq_ingress.c - mcpq-ingress: settings, the registry commands (--apply, --export), start-up
 * and the wait for a signal; the registry refresh thread is refresh.c, the graceful stop
 * drain.c, the process context process.c.
 */
#include "cfg.h"
#include "drain.h"
#include "err.h"
#include "federate.h"
#include "jobsig.h"
#include "kconf.h"
#include "log.h"
#include "otel.h"
#include "mq.h"
#include "process.h"
#include "refresh.h"
#include "registry.h"
#include "regstore.h"
#include "server.h"
#include "settings.h"
#include "util.h"
#include "version.h"
#include "webhook.h"

#include <curl/curl.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READY_WAIT_MS 5000 /* longest the ready file waits for the first registry load */
#define GO_ON (-1)         /* a start-up step passed: not an exit code */

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

/* The settings (environment and flags) and the Kafka properties, checked: GO_ON, or the exit
 * code (0 after --help, --version or --print-config, 2 for a bad setting). */
static int settings_step(mcpq_settings_t *set, int argc, char **argv)
{
    char err[512];
    int rc = settings_load(set, SET_INGRESS, "mcpq-ingress", about, argc, argv, err, sizeof(err));
    if (rc == 1)
        return 0;
    if (rc == SETTINGS_VERSION) {
        const char *const libs[] = {"libmicrohttpd", MHD_get_version(), NULL};
        version_print(stdout, "mcpq-ingress", libs);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        return 2;
    }
    log_init("ingress", set->log_level);
    /* The Kafka properties first: a bad one stops the process before anything connects. */
    kconf_t *kc = kconf_load(set->kafka_properties, (const char *const *)environ, err, sizeof(err));
    if (!kc) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        log_event(LOG_ERROR, "Kafka properties rejected", "error", err, (char *)NULL);
        return 2;
    }
    if (rc == SETTINGS_PRINT) {
        settings_print(stdout, set, SET_INGRESS);
        mq_producer_conf_print(stdout, kc, set->kafka_brokers, (int)set->kafka_message_timeout_ms);
        otel_describe(stdout, "mcpq-ingress");
    }
    kconf_free(kc); /* checked; read again where the producer is made */
    return rc == SETTINGS_PRINT ? 0 : GO_ON;
}

/* The webhook retry schedule and the job signing keys (into *keys), and warnings for what is
 * insecure. 0, or -1 (printed). */
static int checks_step(const mcpq_settings_t *set, jobsig_keys_t *keys)
{
    char err[512];
    ing_whrules_schedule_t sched;
    if (ing_whrules_schedule_parse(set->webhook_retry_schedule, &sched, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        return -1;
    }
    if (jobsig_keys_load(keys, set, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        return -1;
    }
    if (keys->n == 0)
        log_event(LOG_WARN,
                  "MCPQ_JOB_SIGNING_KEY is not set: jobs are published unsigned, and a worker "
                  "without a key runs whatever any writer to the jobs topic asks "
                  "(insecure; docs/operations.md, \"Job signing and Kafka ACLs\")",
                  (char *)NULL);

    if (set->app_secret_min_bytes < CFG_APP_SECRET_MIN)
        log_event(LOG_WARN,
                  "app secrets shorter than 32 bytes are accepted (MCPQ_APP_SECRET_MIN_BYTES); "
                  "do not run a production ingress like this",
                  (char *)NULL);
    return 0;
}

/* SIGINT and SIGTERM into *sigs, blocked before any thread starts (sigwait takes them);
 * SIGPIPE ignored. */
static void signals_block(sigset_t *sigs)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGINT);
    sigaddset(sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Starts the refresh thread, the HTTP server and the webhook dispatcher, in that order. 0, or
 * -1 (printed) with what had started stopped again. */
static int threads_start(ing_ctx_t *ctx, ing_refresh_t *rf, ing_webhook_t *wh)
{
    char err[512];
    if (ing_refresh_start(rf, ctx) < 0) {
        fprintf(stderr, "mcpq-ingress: cannot start the refresh thread\n");
        return -1;
    }
    if (ing_server_start(ctx, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        log_event(LOG_ERROR, "http start failed", "error", err, (char *)NULL);
        ing_refresh_stop(rf);
        return -1;
    }
    if (ing_webhook_start(wh) < 0) {
        fprintf(stderr, "mcpq-ingress: cannot start the webhook dispatcher\n");
        ing_server_stop(ctx);
        ing_refresh_stop(rf);
        return -1;
    }
    return 0;
}

/* Logs the addresses and writes MCPQ_READY_FILE once /mcp can answer. */
static void announce(ing_ctx_t *ctx)
{
    log_event(LOG_INFO, "listening", "listen", ctx->listen_addr, "ops_listen",
              ctx->ops_addr[0] ? ctx->ops_addr : "(on listen)", "instance", ctx->instance,
              (char *)NULL);
    /* Ready once /mcp can answer: the refresh thread's first load usually lands within
     * milliseconds; a request before it would get 503 "registry not loaded yet". When Redis
     * is down at start-up the file is written anyway after READY_WAIT_MS (as /readyz says). */
    for (int64_t until = util_mono_ms() + READY_WAIT_MS; util_mono_ms() < until; usleep(5000)) {
        ing_registry_t *reg = ing_ctx_registry(ctx);
        ing_registry_unref(reg);
        if (reg)
            break;
    }
    /* The bound addresses ("[::]:8080"; port 0 resolved), the ops listener's on a second line. */
    char ready_text[200];
    snprintf(ready_text, sizeof(ready_text), "%s%s%s", ctx->listen_addr,
             ctx->ops_addr[0] ? "\n" : "", ctx->ops_addr);
    write_ready_file(ctx->set->ready_file, ready_text);
}

/*
 * The gateway: the process context (process.h) with the refresh thread, the HTTP server, the
 * webhook dispatcher and federation on top, until SIGTERM or SIGINT and the drain (drain.h).
 * Takes kvt and rf (initialized); frees keys once the producer has its copy. The exit code.
 */
static int serve(const mcpq_settings_t *set, kv_target_t *kvt, ing_refresh_t *rf,
                 jobsig_keys_t *keys, sigset_t *sigs)
{
    char err[512];
    ing_ctx_t ctx;
    int exit_code = 1;
    ing_webhook_t *wh = NULL;
    ing_federate_t *fed = NULL;
    ing_process_opts_t opts = {
        .keys = keys, .registry_wake = ing_refresh_wake, .registry_wake_arg = rf};
    int opened = ing_process_open(&ctx, set, kvt, &opts, &exit_code, err, sizeof(err));
    jobsig_keys_cleanup(keys); /* the producer has its copy */
    if (opened < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        goto out;
    }
    wh = ing_webhook_new(&ctx, err, sizeof(err));
    if (!wh) {
        fprintf(stderr, "mcpq-ingress: webhooks: %s\n", err);
        goto out;
    }
    /* Federated servers (federate.h): the registry's, imported in the background. */
    fed = ing_federate_start(&ctx);
    if (threads_start(&ctx, rf, wh) < 0)
        goto out;
    announce(&ctx);
    int sig = 0;
    sigwait(sigs, &sig);
    ing_drain_run(&ctx, wh, sigs, sig);
    ing_server_stop(&ctx);
    ing_refresh_stop(rf);
    exit_code = 0;
out:
    ing_server_stop(&ctx);
    ing_federate_stop(fed);
    ing_webhook_free(wh);
    ing_process_close(&ctx);
    return exit_code;
}

int main(int argc, char **argv)
{
    mcpq_settings_t set;
    char err[512];
    const char *apply = NULL;
    int prune = 0, export = 0;
    registry_flags(&argc, argv, &apply, &prune, &export);
    int code = settings_step(&set, argc, argv);
    if (code != GO_ON)
        return code;
    if (apply || export)
        return registry_command(&set, apply, prune);
    jobsig_keys_t keys;
    if (checks_step(&set, &keys) < 0)
        return 2;
    kv_target_t *kvt = kv_target_new(&set, err, sizeof(err));
    if (!kvt) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        jobsig_keys_cleanup(&keys);
        return 2;
    }
    ing_refresh_t rf;
    if (ing_refresh_init(&rf, &set, err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: config: %s\n", err);
        log_event(LOG_ERROR, "config rejected", "error", err, (char *)NULL);
        ing_refresh_cleanup(&rf);
        jobsig_keys_cleanup(&keys);
        kv_target_free(kvt);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT); /* before any thread: webhook deliveries use curl */
    sigset_t sigs;
    signals_block(&sigs); /* before the span exporter's thread starts: it inherits the mask */
    if (otel_init("mcpq-ingress", err, sizeof(err)) < 0) {
        fprintf(stderr, "mcpq-ingress: %s\n", err);
        ing_refresh_cleanup(&rf);
        jobsig_keys_cleanup(&keys);
        kv_target_free(kvt);
        curl_global_cleanup();
        return 2;
    }
    code = serve(&set, kvt, &rf, &keys, &sigs);
    otel_shutdown(); /* after the drain: the last calls' spans are sent */
    ing_refresh_cleanup(&rf);
    curl_global_cleanup();
    log_event(LOG_INFO, "stopped", (char *)NULL);
    return code;
}
