/*
 * whq.h - the webhook delivery queue in Redis (docs/webhooks.md): how a task event becomes
 * one delivery per subscribed endpoint, atomically with the state change that caused it.
 *
 * common/lua/lib_whq.lua is Lua source that defines (does not call)
 *     local function whq_enqueue(tenant, event, task_id, data_json, iso_ts, now_ms, id_base)
 * Task-transition scripts (common/lua/task_*.lua) prepend it and call it inside the same
 * script, so
 * a state change and its deliveries happen together or not at all. It reads the tenant's
 * document (`HGET {mcpq}:registry tenant:<tenant>`) and, for every webhook whose `events`
 * holds `event`, creates delivery `msg_<id_base>_<n>` (n from 1), which is also the
 * Standard Webhooks `webhook-id` on every attempt and redelivery. The body is built by
 * string concatenation, so data_json (which the caller builds and must be valid JSON)
 * reaches the receiver byte for byte:
 *     {"type":"<event>","timestamp":"<iso_ts>","data":<data_json>}
 * The url and secret are not copied: the dispatcher (ingress/core/webhook.c) resolves them from
 * the registry at send time. It returns the number of deliveries created and touches only
 * keys derived from its arguments:
 *
 *   {mcpq}:whd:<id>            hash: id, tenant, webhook, event, task, body, created_ms,
 *                            attempts ("0"), status ("pending"), next_ms, last_status,
 *                            last_error, log ("[]", a JSON array of attempts),
 *                            traceparent (the task's, {mcpq}:task:<task_id> field, "" when
 *                            none: every attempt is sent in that trace); the
 *                            dispatcher adds sched_base and claim. EXPIRE WHQ_RETENTION_S
 *                            (refreshed on every attempt and redelivery).
 *   {mcpq}:wh:due              zset: deliveries to attempt, scored by when (epoch ms).
 *   {mcpq}:whd:idx:<tenant>    zset: the tenant's deliveries by created_ms (the listing);
 *                            entries older than WHQ_RETENTION_S and beyond the newest
 *                            WHQ_INDEX_MAX are trimmed here.
 *   {mcpq}:wh:disabled:<tenant>:<webhook>  string: the endpoint answered 410 (value: its url
 *                            then); set and read by the dispatcher, cleared by redelivery.
 *
 * Statuses: pending, delivered, failed (retries exhausted or the webhook is gone), disabled
 * (the endpoint answered 410, or was disabled when the delivery came due).
 *
 * Thread safety: whq_event() is thread-safe (kv_pool_t is).
 */
#ifndef MCPQ_WHQ_H
#define MCPQ_WHQ_H

#include "kv.h"
#include "names.h"

#include <stddef.h>

/* How long a delivery record is kept after its creation or its last attempt (7 days). A
 * constant, not a setting: the enqueue function runs inside other components' scripts. */
#define WHQ_RETENTION_S 604800
/* The newest deliveries per tenant that GET /v1/webhooks/deliveries can list. */
#define WHQ_INDEX_MAX 100000

#define WHQ_DUE_KEY NAMES_KEY_WH_DUE
#define WHQ_DELIVERY_PREFIX NAMES_KEY_WH_DELIVERY
#define WHQ_INDEX_PREFIX NAMES_KEY_WH_INDEX
#define WHQ_DISABLED_PREFIX NAMES_KEY_WH_DISABLED

/* The longest delivery id: "msg_" + id_base (at most 64 characters) + "_" + n. */
#define WHQ_ID_MAX 96

/* A federated tool's definition is no longer the approved one (ingress/core/pin.h): a tenant
 * event without a task (task id ""); its data names tenant, server and tool. */
#define WHQ_EVENT_TOOL_CHANGED "tool.changed"

/* 1 when event is one of task.running, task.input_required, task.completed, task.terminated,
 * task.cancelled, tool.changed. */
int whq_event_known(const char *event);

/*
 * Creates the deliveries of one event outside any other script: common/lua/whq_event.lua
 * (lib_whq.lua plus a call with Redis's clock) with a random id base. data_json must be a
 * JSON object.
 * task_id is "" for an event that is not a task's (tool.changed).
 * Returns the number of deliveries created (>= 0, 0 when the tenant is unknown or nothing
 * subscribes to event), MCPQ_EINVAL for bad arguments, MCPQ_EUNAVAIL when Redis failed
 * (errstr filled).
 */
int whq_event(kv_pool_t *kv, const char *tenant, const char *event, const char *task_id,
              const char *data_json, char *errstr, size_t errstr_size);

#endif
