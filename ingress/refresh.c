/*
 * refresh.c - the registry refresh thread (refresh.h).
 */
#include "refresh.h"

#include "cfgwatch.h"
#include "err.h"
#include "kv.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "mq.h"
#include "oauth.h"
#include "registry.h"
#include "regstore.h"
#include "resupd.h"
#include "util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REFRESH_MS 250
#define PROBE_MS 1000 /* Kafka metadata probe */

/* Gives the key service (oauth.h) the issuers the tenants of reg trust: one source per
 * (tenant, issuer), the tenant's jwks_uri on each and its introspection endpoint on its
 * first issuer's, as ing_oauth_configure asks. */
static void oauth_configure(ing_ctx_t *ctx, const ing_registry_t *reg)
{
    size_t n = 0, at = 0, tenants = ing_registry_tenant_count(reg);
    if (!ctx->oauth)
        return;
    for (size_t i = 0; i < tenants; i++) {
        const ing_tenant_oauth_t *o = ing_registry_tenant_at(reg, i)->oauth;
        n += o ? o->n_issuers : 0;
    }
    ing_oauth_source_t *src = calloc(n ? n : 1, sizeof(*src));
    if (!src) {
        log_event(LOG_ERROR, "registry: out of memory configuring OAuth issuers", (char *)NULL);
        return;
    }
    for (size_t i = 0; i < tenants; i++) {
        const ing_tenant_oauth_t *o = ing_registry_tenant_at(reg, i)->oauth;
        for (size_t j = 0; o && j < o->n_issuers; j++)
            src[at++] = (ing_oauth_source_t){.tenant = ing_registry_tenant_at(reg, i)->id,
                                             .issuer = o->issuers[j],
                                             .jwks_uri = o->jwks_uri,
                                             .introspection_endpoint =
                                                 j == 0 ? o->introspection_endpoint : NULL,
                                             .client_id = j == 0 ? o->client_id : NULL,
                                             .client_secret = j == 0 ? o->client_secret : NULL};
    }
    ing_oauth_configure(ctx->oauth, src, n);
    free(src);
    const ing_introspector_t *amb[16];
    size_t namb = ing_registry_introspect_ambiguous(reg, amb, 16);
    for (size_t i = 0; i < namb; i++) {
        char msg[400];
        ing_registry_introspect_warning(amb[i], msg, sizeof(msg));
        log_event(LOG_WARN, msg, (char *)NULL);
    }
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
static int registry_lost(ing_refresh_t *rf, long long rev)
{
    ing_ctx_t *ctx = rf->ctx;
    pthread_mutex_lock(&ctx->reg_lock);
    int had = ctx->reg && ing_registry_rev(ctx->reg) > 0;
    pthread_mutex_unlock(&ctx->reg_lock);
    if (rev != 0 || !had)
        return 0;
    char err[512];
    if (ctx->set->config && !rf->config)
        rf->config = ing_cfgwatch_load(&rf->watch, err, sizeof(err));
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
void ing_refresh_wake(void *arg)
{
    ing_refresh_t *rf = arg;
    pthread_mutex_lock(&rf->lock);
    rf->kick = 1;
    pthread_cond_signal(&rf->cond);
    pthread_mutex_unlock(&rf->lock);
}

/* A change of the config file that is not applied: the log line, the metric and the event
 * (when Redis is there: c may be NULL). The running registry stays as it is. */
static void config_refused(ing_refresh_t *rf, redisContext *c, const char *why)
{
    log_event(LOG_ERROR, "config file refused: the registry stays as it is", "file",
              rf->ctx->set->config, "error", why, (char *)NULL);
    ing_metrics_config_reload(rf->ctx->metrics, ING_CFG_REFUSED);
    if (c)
        ing_cfgwatch_record(&rf->watch, c, rf->ctx->instance, "refused", why, NULL);
}

/* Stores rf->config (read at start-up, or a change the watcher saw) in the registry, once for
 * the fleet (ing_regstore_seed), with MCPQ_CONFIG_PRUNE. 0 when it is done with (applied, found
 * applied, or refused for clashing with the registry), or -1 with err set when Redis failed
 * (the config stays pending for the next round). */
static int config_store(ing_refresh_t *rf, redisContext *c, char *err, size_t err_size)
{
    ing_ctx_t *ctx = rf->ctx;
    ing_regstore_summary_t sum;
    int applied = 0;
    int rc = ing_regstore_seed(c, rf->config, (int)ctx->set->config_prune, &applied, &sum, err,
                               err_size);
    if (rc < 0 && rc != MCPQ_EINVAL)
        return -1;
    cJSON_Delete(rf->config);
    rf->config = NULL;
    int reload = rf->reload;
    rf->reload = 0;
    if (rc == MCPQ_EINVAL) {
        config_refused(rf, c, err);
        return 0;
    }
    char counts[128], revs[32];
    snprintf(counts, sizeof(counts), "created=%d updated=%d unchanged=%d deleted=%d", sum.created,
             sum.updated, sum.unchanged, sum.deleted);
    snprintf(revs, sizeof(revs), "%lld", sum.rev);
    if (applied) {
        log_event(LOG_INFO, "config applied to the registry", "file", ctx->set->config, "objects",
                  counts, "revision", revs, (char *)NULL);
        ing_cfgwatch_record(&rf->watch, c, ctx->instance, "applied", NULL, &sum);
    } else
        log_event(LOG_INFO, "config already applied: registry left as it is", "file",
                  ctx->set->config, "revision", revs, (char *)NULL);
    if (reload)
        ing_metrics_config_reload(ctx->metrics, applied ? ING_CFG_APPLIED : ING_CFG_UNCHANGED);
    return 0;
}

/* Reads the config file for a change (cfgwatch.h): a new valid config replaces any still
 * pending and is stored by the next refresh_once; a bad one is refused here. */
static void config_poll(ing_refresh_t *rf, redisContext *c)
{
    cJSON *cfg = NULL;
    char err[512];
    int rc = ing_cfgwatch_poll(&rf->watch, &cfg, err, sizeof(err));
    if (rc == ING_CFGWATCH_REFUSED) {
        config_refused(rf, c, err);
    } else if (rc == ING_CFGWATCH_CHANGED) {
        log_event(LOG_INFO, "config file changed: applying it", "file", rf->ctx->set->config,
                  (char *)NULL);
        cJSON_Delete(rf->config);
        rf->config = cfg;
        rf->reload = 1;
    }
}

static void refresh_once(ing_refresh_t *rf, redisContext **c, int *logged)
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
    if (rf->start_refused[0]) { /* the file was bad at start-up: refused now Redis is here */
        config_refused(rf, *c, rf->start_refused);
        rf->start_refused[0] = '\0';
    }
    if (rf->config && config_store(rf, *c, err, sizeof(err)) < 0)
        goto broken;
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
            ing_refresh_wake(rf); /* seed on the next round, without waiting for the poll */
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
    oauth_configure(ctx, reg); /* its issuers before its tenants can be asked for */
    pthread_mutex_lock(&ctx->reg_lock);
    ing_registry_t *old = ctx->reg;
    ctx->reg = reg;
    pthread_mutex_unlock(&ctx->reg_lock);
    ing_listen_registry_changed(ctx->listen, old, reg); /* notifications/.../list_changed */
    ing_resupd_publish(*c, old, reg); /* static resources changed: once for the fleet */
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
    ing_refresh_t *rf = arg;
    redisContext *c = NULL;
    int logged = 0;
    int64_t next_probe = 0, next_watch = util_mono_ms() + rf->ctx->set->config_watch_ms;
    while (!rf->stop) {
        if (rf->ctx->set->config && rf->ctx->set->config_watch_ms > 0 &&
            util_mono_ms() >= next_watch) {
            config_poll(rf, c);
            next_watch = util_mono_ms() + rf->ctx->set->config_watch_ms;
        }
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

int ing_refresh_init(ing_refresh_t *rf, const mcpq_settings_t *set, char *err, size_t err_size)
{
    memset(rf, 0, sizeof(*rf));
    pthread_mutex_init(&rf->lock, NULL);
    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&rf->cond, &cattr);
    pthread_condattr_destroy(&cattr);
    ing_cfgwatch_init(&rf->watch, set);
    if (set->config) {
        rf->config = ing_cfgwatch_load(&rf->watch, err, err_size);
        if (!rf->config && set->config_watch_ms > 0) /* refused; the watch applies it once fixed */
            snprintf(rf->start_refused, sizeof(rf->start_refused), "%s", err);
        else if (!rf->config)
            return -1;
    }
    return 0;
}

int ing_refresh_start(ing_refresh_t *rf, ing_ctx_t *ctx)
{
    rf->ctx = ctx;
    if (pthread_create(&rf->thread, NULL, refresh_thread, rf) != 0)
        return -1;
    rf->started = 1;
    return 0;
}

void ing_refresh_stop(ing_refresh_t *rf)
{
    if (!rf->started)
        return;
    rf->stop = 1;
    pthread_join(rf->thread, NULL);
    rf->started = 0;
}

void ing_refresh_cleanup(ing_refresh_t *rf)
{
    cJSON_Delete(rf->config);
    rf->config = NULL;
    pthread_cond_destroy(&rf->cond);
    pthread_mutex_destroy(&rf->lock);
}
