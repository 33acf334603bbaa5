/*
 * listen.h - clients listening for notifications/{tools,resources,prompts}/list_changed and
 * notifications/resources/updated (docs/protocol.md): the long-lived notification streams of
 * both MCP eras, and what feeds them.
 *
 * Both kinds are calls of the pending table with `listener` set (pending.h "Listeners"): the
 * same SSE writer as a streamed tools/call, no thread per stream, a keep-alive comment after
 * MCPQ_LISTEN_KEEPALIVE_MS without a frame, at most MCPQ_MAX_LISTENERS per process (then 503)
 * and at most the tenant's quotas.notification_streams of them per tenant (then 429, quota.h).
 *
 * Legacy GET stream (2025-03-26, 2025-06-18, 2025-11-25; Streamable HTTP "Listening for
 * Messages from the Server"): GET /mcp[/{server}] with Accept: text/event-stream, the same
 * credentials as a POST, and the Mcp-Session-Id of a live session of the caller's tenant
 * (mcp.h checks them). The stream carries `{"jsonrpc":"2.0","method":
 * "notifications/tools/list_changed"}` frames (and resources/, prompts/ ones: every GET stream
 * hears of the three lists, as the capabilities announce), `notifications/resources/updated`
 * `{"uri"}` for the uris its session subscribed to (resources/subscribe, rsub.h, on any
 * replica), and never a response. One per session per
 * replica (another gets 409, as the TypeScript SDK answers). DELETE of the session ends it on
 * every replica; an open stream keeps its session alive (its TTL is refreshed every 30 s,
 * and a stream whose session is gone ends then). Either kind follows the server it was
 * opened on: a later change of the tenant's default_server does not move it.
 *
 * 2026-07-28 subscriptions/listen, as the 2026-07-28 specification defines it
 * (schema/2026-07-28/schema.ts "subscriptions/listen" and NotificationMetaObject;
 * basic/patterns/subscriptions; basic/transports/streamable-http "Receiving Messages"):
 *  - request: POST {"method":"subscriptions/listen","params":{"_meta":{...},
 *    "notifications":{"toolsListChanged":true, "promptsListChanged", "resourcesListChanged",
 *    "resourceSubscriptions":[uri...]}}}; every field of the filter is opt-in and the server
 *    MUST NOT send a type the client did not ask for;
 *  - the response is an SSE stream that stays open; its first message MUST be
 *    notifications/subscriptions/acknowledged, params {"_meta":
 *    {"io.modelcontextprotocol/subscriptionId": <request id>}, "notifications": <the subset
 *    the server honours>} (the three list_changed flags asked for, and the
 *    resourceSubscriptions the caller (mcp.c) kept: uris of resources the server serves, at
 *    most MCPQ_MAX_RESOURCE_SUBSCRIPTIONS);
 *  - every notification on it carries the same subscriptionId in params._meta;
 *    progress and log notifications never travel on it;
 *  - the client ends it by closing the stream; the server ends it gracefully with the
 *    response to the listen request, {"resultType":"complete","_meta":{subscriptionId, ...}}
 *    (SubscriptionsListenResult), which the gateway sends at shutdown, and at once when the
 *    filter asks for nothing it honours (the stream would carry nothing).
 *
 * Changes: the refresh thread (mcpq_ingress.c) calls ing_listen_registry_changed() with the
 * snapshot it replaces and the new one; every stream whose (tenant, server) tools/list fingerprint
 * (ing_server_t.tools_fp) differs gets one tools notification, resources_fp (resources and
 * templates) one resources notification, prompts_fp one prompts notification, each only when
 * the stream listens for it; a server added or removed counts as a change of all three.
 * Resource updates arrive on ING_CHANNEL_RESOURCE_UPDATED (`{"tenant","server","uri"}`,
 * published once for the fleet by the replica that saw a static resource change (resupd.h)
 * or by a worker): ing_listen_resource_updated() hands each to the streams of that tenant and
 * server that listen to the uri. The revision poll (every 250 ms) bounds how late a change is seen;
 * Pub/Sub only makes it sooner: one thread per process subscribes to `mcpq:registry:changed`
 * (published after a revision bump) and wakes the refresh thread, to `mcpq:session:ended` (a
 * session id, published by DELETE), and to `mcpq:resource:updated`. Pub/Sub is at-most-once: the
 * first two are backed by the poll and the sweep; a resource update published while a
 * replica is reconnecting to Redis is lost for its streams (a client re-reads the resource
 * when it reconnects).
 *
 * Thread safety: every function is thread-safe.
 */
#ifndef MCPQ_ING_LISTEN_H
#define MCPQ_ING_LISTEN_H

#include "names.h"
#include "req.h"
#include "regstore.h"

#include <stddef.h>

#define ING_CHANNEL_REGISTRY RS_CHANNEL /* regstore.h: every registry write publishes here */
#define ING_CHANNEL_SESSION_ENDED NAMES_CHAN_SESSION_ENDED
#define ING_CHANNEL_RESOURCE_UPDATED NAMES_CHAN_RESOURCE_UPDATED
#define ING_META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

typedef struct ing_listen ing_listen_t;
typedef struct ing_listener ing_listener_t;

/* Starts the Pub/Sub thread. wake(wake_arg) (may be NULL) runs on it whenever the registry may have
 * changed (a message on ING_CHANNEL_REGISTRY, or a new subscription that may have missed one). NULL
 * on failure (logged). */
ing_listen_t *ing_listen_new(ing_ctx_t *ctx, void (*wake)(void *), void *wake_arg);
/* Stops the thread and frees what is left; call after the HTTP server has stopped. NULL is a
 * no-op. */
void ing_listen_free(ing_listen_t *l);

/* What a stream listens for. */
typedef struct ing_listen_spec {
    const char *tenant;
    const char *server;      /* the server's name (a tenant's default resolved) */
    const char *session_id;  /* legacy GET stream: its Mcp-Session-Id; NULL: 2026-07-28 */
    const char *sub_id_json; /* 2026-07-28: the subscriptions/listen request's id, rendered */
    int tools;               /* 2026-07-28: the filter asks for toolsListChanged */
    int resources;           /* 2026-07-28: resourcesListChanged */
    int prompts;             /* 2026-07-28: promptsListChanged */
    const char *const *uris; /* 2026-07-28: the resourceSubscriptions honoured (copied) */
    size_t nuris;
    const char *end_json; /* 2026-07-28: the response that ends the stream gracefully */
    long long tenant_max; /* streams the tenant may hold open here (quota.h); 0: no limit */
} ing_listen_spec_t;

/* Opens a stream on req: req->call joins the pending table as a listener with its first
 * bytes queued (a comment, or the acknowledgement), req->has_call and req->listener are set;
 * the caller then queues its SSE response (server.c answer_call). 0, MCPQ_EUNAVAIL (shutting
 * down), MCPQ_ETOOBIG (MCPQ_MAX_LISTENERS are open), MCPQ_EEXIST (this session has a GET
 * stream on this replica), MCPQ_EQUOTA (the tenant has spec->tenant_max streams open here)
 * or MCPQ_ENOMEM. */
int ing_listen_open(ing_listen_t *l, ing_req_t *req, const ing_listen_spec_t *spec);
/* Forgets a listener whose request is over (server.c, once its call has left the table). */
void ing_listen_remove(ing_listen_t *l, ing_listener_t *lr);

/* The refresh thread replaced old (NULL on the first load: nothing is sent) with reg. */
void ing_listen_registry_changed(ing_listen_t *l, const ing_registry_t *old,
                                 const ing_registry_t *reg);
/* Sends notifications/resources/updated {uri} to the streams of (tenant, server) listening to
 * it: 2026-07-28 ones naming it in resourceSubscriptions, GET streams whose session subscribed
 * to it (asked of Redis, rsub.h). Called by the Pub/Sub thread for each message of
 * ING_CHANNEL_RESOURCE_UPDATED. */
void ing_listen_resource_updated(ing_listen_t *l, const char *tenant, const char *server,
                                 const char *uri);
/* DELETE ended session_id: its GET streams end here, and on the other replicas through
 * ING_CHANNEL_SESSION_ENDED (best effort; the sweep catches a lost message). */
void ing_listen_session_ended(ing_listen_t *l, const char *session_id);
/* Graceful shutdown (after ctx->stopping is set, so no stream opens any more): ends every
 * stream, 2026-07-28 ones with their response. */
void ing_listen_close_all(ing_listen_t *l);
/* Streams open now. */
size_t ing_listen_count(ing_listen_t *l);

#endif
