/*
 * drain.h - the graceful stop of mcpq-ingress after SIGTERM or SIGINT (docs/operations.md,
 * "Stopping: SIGTERM drains"): a drain delay while the load balancer takes the replica out of
 * rotation, then the listen socket closes, calls in flight get a grace to finish and the rest are
 * answered -32603.
 */
#ifndef MCPQ_ING_DRAIN_H
#define MCPQ_ING_DRAIN_H

#include "ctx.h"
#include "webhook.h"

#include <signal.h>

/* The reason given to a call, and its job, cancelled at drain while its client was asked. */
#define ING_DRAIN_ASK_REASON                                                                       \
    "the gateway replica holding the call stopped while the tool waited for the client's answer"

/*
 * Runs the drain after signal sig, each phase logged with the calls in flight:
 *   1. drain delay (MCPQ_DRAIN_DELAY_MS): /readyz answers 503 but everything is served as
 *      usual, responses carrying Connection: close, while the load balancer takes the replica
 *      out of rotation; a second SIGTERM or SIGINT (from sigs, blocked) ends it early;
 *   2. the listen socket closes and notification streams end; webhook attempts in flight may
 *      finish, the rest go back to their queue; a legacy call whose client was asked a
 *      question still open (and every call asked from now on) ends -32603
 *      ING_DRAIN_ASK_REASON and its job is cancelled, releasing its worker;
 *   3. grace (MCPQ_SHUTDOWN_GRACE_MS): the calls in flight may finish;
 *   4. the rest are answered -32603 (a streamed call gets it as its last event), and their
 *      connections get a short while to take the answer.
 * The caller stops the HTTP server afterwards (ing_server_stop).
 */
void ing_drain_run(ing_ctx_t *ctx, ing_webhook_t *wh, const sigset_t *sigs, int sig);

#endif
