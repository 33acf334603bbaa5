/*
 * mcpsubs.h - who subscribed to which resource of an upstream MCP server through this worker
 * (docs/executors.md, "mcp": "Resource subscriptions"), and the fan-out of the upstream's
 * notifications/resources/updated to them.
 *
 * A resources/subscribe job that succeeds adds its (tenant, server) as a subscriber of its
 * uri at its upstream (a key naming the upstream: the mcp executor's url + headers, or a stdio
 * upstream's key); a resources/unsubscribe job removes it. When the upstream says a uri
 * changed (its GET stream, its subscriptions/listen stream, or a stdio server's stdout), every
 * subscriber of that uri at that upstream gets one message {"tenant","server","uri"} on the
 * Redis channel mcpq:resource:updated (common/names.h NAMES_CHAN_RESOURCE_UPDATED), which
 * every ingress replica delivers to its clients subscribed to that uri of that server. Sizes
 * are bounded: at most WRK_MCPSUBS_MAX subscriptions per worker, strings as the envelope's.
 *
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_MCPSUBS_H
#define MCPQ_WORKER_MCPSUBS_H

#include "store.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define WRK_MCPSUBS_MAX 10000

typedef struct wrk_mcpsubs wrk_mcpsubs_t;

/* An empty table; NULL on ENOMEM. */
wrk_mcpsubs_t *wrk_mcpsubs_new(void);
/* NULL is a no-op. */
void wrk_mcpsubs_free(wrk_mcpsubs_t *s);

/* Adds (tenant, server) as a subscriber of uri at upstream (strings copied). 1 when it is
 * new, 0 when it was there already, MCPQ_ENOMEM, or MCPQ_ETOOBIG past WRK_MCPSUBS_MAX. */
int wrk_mcpsubs_add(wrk_mcpsubs_t *s, const char *upstream, const char *tenant, const char *server,
                    const char *uri);
/* Removes (tenant, server) as a subscriber of uri at upstream (a no-op when it is not one).
 * Returns how many subscribers of uri at upstream remain. */
size_t wrk_mcpsubs_remove(wrk_mcpsubs_t *s, const char *upstream, const char *tenant,
                          const char *server, const char *uri);
/* Subscribers of uri at upstream other than (tenant, server). */
size_t wrk_mcpsubs_others(const wrk_mcpsubs_t *s, const char *upstream, const char *tenant,
                          const char *server, const char *uri);
/* The distinct uris subscribed at upstream, as a new JSON array of strings (NULL on ENOMEM);
 * empty when none. */
cJSON *wrk_mcpsubs_uris(const wrk_mcpsubs_t *s, const char *upstream);
/* How many subscriptions upstream has. */
size_t wrk_mcpsubs_count(const wrk_mcpsubs_t *s, const char *upstream);

/* upstream says uri changed: queues one PUBLISH per subscriber of uri at upstream on st
 * (wrk_store_publish). Returns the number of messages queued. */
size_t wrk_mcpsubs_updated(const wrk_mcpsubs_t *s, wrk_store_t *st, const char *upstream,
                           const char *uri);

#endif
