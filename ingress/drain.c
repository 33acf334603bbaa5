/*
 * drain.c - the graceful stop of mcpq-ingress (drain.h).
 */
#include "drain.h"

#include "listen.h"
#include "log.h"
#include "pending.h"
#include "server.h"
#include "util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_MS 2000 /* at shutdown: longest the last answers wait for their connections */

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
 *   2. the listen socket closes and notification streams end; calls whose client was asked
 *      a question still open end -32603 ING_DRAIN_ASK_REASON and their jobs are cancelled
 *      (as is every call asked from now on);
 *   3. grace (MCPQ_SHUTDOWN_GRACE_MS): the calls in flight may finish;
 *   4. the rest are answered -32603 (a streamed call gets it as its last event), and their
 *      connections get up to FLUSH_MS to take the answer before the server stops.
 */
void ing_drain_run(ing_ctx_t *ctx, ing_webhook_t *wh, const sigset_t *sigs, int sig)
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
    /* A legacy call waiting for its client's answer could outlast any grace, and no other
     * replica can deliver its result: its job is cancelled, so its worker is released, and
     * its client told (docs/internals.md, "Asking the client"; so is a question asked from
     * now on). */
    size_t asked = ing_pending_stop_asking(ctx->pending, ING_DRAIN_ASK_REASON);
    if (asked > 0) {
        snprintf(n, sizeof(n), "%zu", asked);
        log_event(LOG_WARN, "calls waiting for their client's answer ended, their jobs cancelled",
                  "calls", n, (char *)NULL);
    }
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
