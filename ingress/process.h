/*
 * process.h - building and tearing down the process context (ctx.h) from the settings: the
 * Redis pool, the waits, the rate limits, the Kafka producer, files and the notification
 * streams. mcpq-ingress's main() opens one; a handler test opens one against the stack of
 * tests/fixture.h and drives handlers with synthetic requests (req.h), no socket needed.
 * The HTTP server, the registry refresh thread and the webhook dispatcher are started by
 * main() on top of it.
 */
#ifndef MCPQ_ING_PROCESS_H
#define MCPQ_ING_PROCESS_H

#include "ctx.h"
#include "jobsig.h"

typedef struct ing_process_opts {
    const jobsig_keys_t *keys;     /* job signing keys (NULL or none: jobs are unsigned) */
    void (*registry_wake)(void *); /* called when Pub/Sub hears of a registry change */
    void *registry_wake_arg;
} ing_process_opts_t;

/* Fills *ctx (zeroed first) for set, taking kvt (freed by ing_process_close, also after a
 * failure). 0, or -1 with err set (2 in *exit_code for a configuration error, else 1); call
 * ing_process_close() either way. */
int ing_process_open(ing_ctx_t *ctx, const mcpq_settings_t *set, kv_target_t *kvt,
                     const ing_process_opts_t *opts, int *exit_code, char *err, size_t err_size);

/* Frees everything ing_process_open built, in the reverse order; the HTTP server must be
 * stopped first. */
void ing_process_close(ing_ctx_t *ctx);

#endif
