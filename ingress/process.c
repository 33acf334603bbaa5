/*
 * process.c - the process context built from the settings, and torn down (process.h).
 */
#include "process.h"

#include "files.h"
#include "rstate.h"
#include "kconf.h"
#include "ktopic.h"
#include "listen.h"
#include "log.h"
#include "names.h"
#include "peer.h"
#include "server.h"
#include "toolcall.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* ctx->instance (MCPQ_INSTANCE_ID, else host-pid) and this replica's reply stream. */
static void name_instance(ing_ctx_t *ctx, const mcpq_settings_t *set)
{
    if (set->instance_id) {
        snprintf(ctx->instance, sizeof(ctx->instance), "%s", set->instance_id);
    } else {
        char host[64] = "ingress";
        gethostname(host, sizeof(host) - 1);
        snprintf(ctx->instance, sizeof(ctx->instance), "%s-%d", host, (int)getpid());
    }
    char hex[17];
    util_random_hex(hex, 8);
    snprintf(ctx->reply_key, sizeof(ctx->reply_key), NAMES_KEY_REPLY "%s:%s", ctx->instance, hex);
}

/* The jobs topic made sure of, then the producer. 0 or -1 with err. */
static int open_kafka(ing_ctx_t *ctx, const mcpq_settings_t *set, const jobsig_keys_t *keys,
                      char *err, size_t err_size)
{
    kconf_t *kc = kconf_load(set->kafka_properties, (const char *const *)environ, err, err_size);
    if (!kc)
        return -1;
    /* before the producer: its first send would make the topic with broker defaults */
    const char *const topics[] = {set->topic_jobs};
    ktopic_ensure(&(ktopic_want_t){.brokers = set->kafka_brokers,
                                   .kc = kc,
                                   .topics = topics,
                                   .ntopics = 1,
                                   .partitions = (int)set->partitions,
                                   .replication = (int)set->replication_factor,
                                   .create = (int)set->topic_create});
    ctx->producer = mq_producer_new(set->kafka_brokers, (int)set->kafka_message_timeout_ms, kc,
                                    keys && keys->n ? &keys->key[0] : NULL, ing_toolcall_delivered,
                                    ctx, err, err_size);
    kconf_free(kc);
    return ctx->producer ? 0 : -1;
}

/* The services that only need Redis and the settings. */
static void open_services(ing_ctx_t *ctx, const mcpq_settings_t *set)
{
    ctx->metrics = ing_metrics_new((size_t)set->metrics_tenants_max);
    ctx->kv = kv_pool_new(ctx->kvt, (int)set->redis_timeout_ms, (int)set->redis_pool_size);
    /* No HTTP thread connects to Redis: a keeper thread does (docs/redis.md). */
    if (ctx->kv &&
        kv_pool_warm(ctx->kv, (int)set->redis_pool_min_idle, (int)set->redis_pool_wait_ms) < 0) {
        kv_pool_free(ctx->kv);
        ctx->kv = NULL;
    }
    ctx->pending = ing_pending_new(ctx->kvt, (int)set->redis_timeout_ms, ctx->reply_key,
                                   (int)set->sse_keepalive_ms);
    if (ctx->pending && ctx->kv)
        ing_pending_set_kv(ctx->pending, ctx->kv);
    if (ctx->pending)
        ing_pending_set_trim(ctx->pending, (size_t)set->memory_trim_calls);
    ctx->rl = ctx->kv ? ing_ratelimit_new(ctx->kv, NULL, set->rate_limit_lease_ms, 0) : NULL;
    const char *rkey = set->request_state_key;
    ctx->rstate = ing_rstate_new(rkey, rkey ? strlen(rkey) : 0, ctx->kv);
    ctx->authfail = (ing_authfail_t){
        .rl = ctx->kv ? ing_ratelimit_new(ctx->kv, NAMES_KEY_AUTHFAIL, 1, ING_AUTHFAIL_MAX_BUCKETS)
                      : NULL,
        .addr_per_min = set->auth_fail_per_min,
        .id_per_min = set->auth_fail_id_per_min};
}

int ing_process_open(ing_ctx_t *ctx, const mcpq_settings_t *set, kv_target_t *kvt,
                     const ing_process_opts_t *opts, int *exit_code, char *err, size_t err_size)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->set = set;
    ctx->kvt = kvt;
    pthread_mutex_init(&ctx->reg_lock, NULL);
    atomic_init(&ctx->redis_up, 0);
    atomic_init(&ctx->stopping, 0);
    name_instance(ctx, set);
    open_services(ctx, set);
    *exit_code = 2; /* a configuration error */
    ctx->trusted = ing_peer_nets_parse(set->trusted_proxies, err, err_size);
    if (!ctx->trusted || ing_server_check(set, err, err_size) < 0)
        return -1;
    *exit_code = 1;
    char why[512];
    if (open_kafka(ctx, set, opts->keys, why, sizeof(why)) < 0 || !ctx->metrics || !ctx->kv ||
        !ctx->pending || !ctx->rl || !ctx->authfail.rl || !ctx->rstate) {
        snprintf(err, err_size, "start-up failed: %s", ctx->producer ? "out of memory" : why);
        return -1;
    }
    ctx->files = ing_files_new(ctx);
    if (!ctx->files || ing_files_start(ctx->files) < 0) {
        snprintf(err, err_size, "files: cannot start");
        return -1;
    }
    ctx->listen = ing_listen_new(ctx, opts->registry_wake, opts->registry_wake_arg);
    if (!ctx->listen) {
        snprintf(err, err_size, "cannot start the registry subscriber");
        return -1;
    }
    /* No issuer yet: the refresh thread installs the registry's (ing_oauth_configure) */
    ctx->oauth = ing_oauth_new(set, ctx->metrics);
    if (!ctx->oauth) {
        snprintf(err, err_size, "cannot start the OAuth key service");
        return -1;
    }
    return 0;
}

void ing_process_close(ing_ctx_t *ctx)
{
    ing_listen_free(ctx->listen); /* after the refresh thread and HTTP, its only callers */
    ing_oauth_free(ctx->oauth);   /* likewise; wakes any request still parked on it */
    ing_files_free(ctx->files);
    /* The producer first: its flush runs the last delivery reports, which reach the calls
     * in the waiting table (ing_toolcall_delivered -> ing_pending_acked/_fail). */
    mq_producer_free(ctx->producer, 2000);
    ing_pending_free(ctx->pending);
    ing_ratelimit_free(ctx->rl);
    ing_rstate_free(ctx->rstate);
    ing_ratelimit_free(ctx->authfail.rl);
    ing_peer_nets_free(ctx->trusted);
    kv_pool_free(ctx->kv);
    kv_target_free(ctx->kvt);
    ing_metrics_free(ctx->metrics);
    ing_registry_unref(ctx->reg);
    pthread_mutex_destroy(&ctx->reg_lock);
    memset(ctx, 0, sizeof(*ctx));
}
