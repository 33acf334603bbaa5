/*
 * upnotify.h - an upstream's notification stream for resource subscriptions, and the
 * resources/subscribe and /unsubscribe jobs of the mcp executor (mcpexec.h, "Resource
 * subscriptions"; docs/executors.md "Streams, upstream tasks and resource subscriptions").
 *
 * Subscribers are kept in the worker's table (mcpsubs.h) under the upstream's key (an HTTP
 * upstream's url + headers, a stdio group's key). For an HTTP upstream this module keeps one
 * stream open while any subscription remains: a legacy upstream's GET stream in the session
 * (after the upstream accepted resources/subscribe; a new session subscribes every uri
 * again), a 2026-07-28 upstream's subscriptions/listen naming every subscribed uri (the
 * worker answers those subscribe jobs itself once the upstream acknowledged). A dropped
 * stream is re-opened with backoff (500 ms doubling to 30 s); a legacy session the upstream
 * forgot is negotiated again first. Each notifications/resources/updated on it is published
 * for the uri's subscribers (wrk_upnotify_updated). An unsubscribe goes upstream only for
 * the uri's last subscriber.
 *
 * The calls' ends and a new handshake go through the executor's ops (mcpup.h); this module
 * never calls mcpexec.c. Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_UPNOTIFY_H
#define MCPQ_WORKER_UPNOTIFY_H

#include "mcpup.h"

/* Readies up's stream (its retry timer); once, when up is made. */
void wrk_upnotify_init(wrk_mcpup_t *up);
/* Closes up's stream and stops its retry timer (up itself is the caller's). */
void wrk_upnotify_cleanup(wrk_mcpup_t *up);

/* A subscribe or unsubscribe job the worker answers without asking the upstream: every one
 * of a 2026-07-28 upstream (its subscriptions/listen filter changes instead), and an
 * unsubscribe while other (tenant, server)s still want the uri. 1 when c was taken (answered
 * now or once the stream is open), 0 when c goes upstream. */
int wrk_upnotify_local(wrk_mcpup_call_t *c);

/* A 2025 HTTP or a stdio upstream accepted the subscribe or unsubscribe job c: its
 * subscriber is kept (c answered once the HTTP stream is open) or dropped (the stream closed
 * with the last one). c is taken. */
void wrk_upnotify_answered(wrk_mcpup_call_t *c);

/* An upstream (its key) said uri changed: one message per subscriber of uri there goes out on
 * mcpq:resource:updated (wrk_mcpsubs_updated). A no-op before the first job. */
void wrk_upnotify_updated(wrk_mcpexec_t *m, const char *upstream, const char *uri);

#endif
