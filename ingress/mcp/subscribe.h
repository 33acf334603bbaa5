/*
 * subscribe.h - resource subscriptions (docs/protocol.md "Resource subscriptions"): the legacy
 * resources/subscribe and resources/unsubscribe of a session (2025-03-26 to 2025-11-25,
 * server/resources.mdx "Subscriptions"), and the resourceSubscriptions filter of a 2026-07-28
 * subscriptions/listen (basic/patterns/subscriptions.mdx). Updates reach the streams through
 * listen.h, on whatever replica holds them.
 *
 * What may be watched: a uri that is a published resource of the server (registry.h,
 * ing_registry_resource) or matches one of its resource templates, the caller's access rules
 * (access.h) allowing that registry object; anything else is "Resource not found" (legacy:
 * -32002 with data.uri, what those versions answer resources/read with) or, in a
 * subscriptions/listen filter, left out of the acknowledgement (the subset honoured). A
 * session, or one stream, watches at most MCPQ_MAX_RESOURCE_SUBSCRIPTIONS uris (then -32602).
 *
 * A resource (or template) with an executor is served by a worker: resources/subscribe of
 * it, once recorded, also runs as a job (toolcall.h, ing_toolcall_object; method
 * resources/subscribe, jobargs.h), so the worker subscribes upstream and publishes the
 * upstream's updates for the (tenant, server); the worker's answer (`{}`, or its error) is the
 * client's. resources/unsubscribe sends no job: the worker keeps one subscription per
 * (tenant, server, uri) for every session of the tenant, so one session's unsubscribe must not
 * end the others' updates; an update nobody listens to any more reaches no stream. A 2026-07-28
 * stream's resourceSubscriptions of such a resource send the same resources/subscribe job once
 * the stream is acknowledged, with nobody waiting for its answer (toolcall.h,
 * ing_toolcall_detached; docs/protocol.md "Resource subscriptions" says why); closing the
 * stream sends none, as an unsubscribe does not. Every subscribe job of one (tenant, server,
 * uri) reaches one worker (jobargs.h, ing_jobargs_route_key).
 */
#ifndef MCPQ_ING_SUBSCRIBE_H
#define MCPQ_ING_SUBSCRIBE_H

#include "mcpreq.h"
#include "rpc.h"

#include <stddef.h>

/* resources/subscribe (on = 1) or resources/unsubscribe (on = 0) of the legacy session:
 * `{}`, or a JSON-RPC error (no session: -32600; params.uri missing, too long, or one
 * subscription too many: -32602; an unknown uri: -32002; Redis down: -32603). Unsubscribing
 * a uri never subscribed answers `{}` too. 1 when the request waits for a worker's answer
 * (a subscription to a resource served by a worker, see above; mcpreq.h), else 0 with resp
 * filled. */
int ing_subscribe_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp, int on);

/* The uris of a subscriptions/listen filter's resourceSubscriptions the stream will honour
 * (those that may be watched, each once, in order): *uris (malloc'd array of pointers into
 * filter; the caller frees the array) and *n. 0 (absent: none), or -1 with why filled
 * (not an array of strings, or more than MCPQ_MAX_RESOURCE_SUBSCRIPTIONS): answer -32602. */
int ing_subscribe_listen_uris(ing_mcp_t *m, const cJSON *filter, const char ***uris, size_t *n,
                              char *why, size_t why_size);

/* After an acknowledged subscriptions/listen stream (msg its request) honouring uris (from
 * ing_subscribe_listen_uris): a resources/subscribe job for each uri a worker serves, published
 * with nobody waiting (see above); one that cannot be published is logged. How many were
 * published. */
size_t ing_subscribe_listen_jobs(ing_mcp_t *m, const rpc_msg_t *msg, const char *const *uris,
                                 size_t n);

#endif
