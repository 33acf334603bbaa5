/*
 * refresh.h - the registry refresh thread of mcpq-ingress: it stores MCPQ_CONFIG in the
 * registry once (idempotently), polls the registry revision in Redis every 250 ms (a
 * registry change heard on Pub/Sub cuts the wait short, listen.h), swaps in a new snapshot
 * when the revision moved (announcing notifications/tools/list_changed), keeps the snapshot
 * it has and seeds the registry again when Redis lost it (docs/operations.md), reads
 * MCPQ_CONFIG again every MCPQ_CONFIG_WATCH_MS and stores a changed file once for the fleet or
 * refuses a bad one (log line, metrics, event: cfgwatch.h, docs/config-file.md "Watching the
 * file"), probes the Kafka producer's metadata every second and keeps ctx->redis_up, which
 * /readyz reports.
 *
 * The caller owns the ing_refresh_t: ing_refresh_init, then ing_refresh_start once the
 * process context is open, ing_refresh_stop before that context is closed, and
 * ing_refresh_cleanup last (also after a failed init). ing_refresh_wake is thread-safe; the
 * others are for the thread that owns the refresher.
 */
#ifndef MCPQ_ING_REFRESH_H
#define MCPQ_ING_REFRESH_H

#include "cfgwatch.h"
#include "ctx.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <signal.h>

typedef struct ing_refresh {
    ing_ctx_t *ctx;
    cJSON *config; /* normalized config still to store; NULL once stored */
    int reload;    /* config is a change of the file seen while running (counted in metrics) */
    ing_cfgwatch_t watch;    /* the config file's content last seen (cfgwatch.h) */
    char start_refused[512]; /* why the file was refused at start-up, until reported ("") */
    pthread_t thread;
    int started;
    volatile sig_atomic_t stop;
    pthread_mutex_t lock; /* guards kick */
    pthread_cond_t cond;  /* CLOCK_MONOTONIC */
    int kick;             /* refresh now: the registry may have changed (listen.h) */
    int lost_logged;      /* the registry vanished from Redis and could not be seeded again */
} ing_refresh_t;

/* Prepares rf and reads MCPQ_CONFIG (when set) into rf->config, normalized and checked. 0, or
 * -1 with err set when the file is unusable. With MCPQ_CONFIG_WATCH_MS an unusable file is not
 * fatal: it is refused as a bad change is (log line, metrics, event, once Redis is reached), the
 * ingress serves the registry Redis holds, and the watch applies the file once it is fixed, so a
 * bad ConfigMap cannot keep new replicas (a scale-up, a rescheduled pod) from starting. */
int ing_refresh_init(ing_refresh_t *rf, const mcpq_settings_t *set, char *err, size_t err_size);

/* Starts the thread on ctx. 0, or -1 when the thread cannot start. */
int ing_refresh_start(ing_refresh_t *rf, ing_ctx_t *ctx);

/* Refresh now, without waiting for the poll (arg: the ing_refresh_t); for the Pub/Sub thread
 * (ing_process_opts_t.registry_wake). */
void ing_refresh_wake(void *arg);

/* Stops the thread and waits for it (within one poll); nothing when it is not running. */
void ing_refresh_stop(ing_refresh_t *rf);

/* Frees what init made: the config not yet stored, the lock. */
void ing_refresh_cleanup(ing_refresh_t *rf);

#endif
