/*
 * channels.h - conversation channels (docs/protocol.md, "Conversation channels") on the
 * ingress side: minting them for system.open_channel, checking a tools/call's channel_id,
 * and the agent reply endpoint POST /v1/channels/{channel_id}/messages.
 *
 * Redis (docs/internals.md "Conversation channels"):
 *   {mcpq}:chan:<id>          hash {tenant, created, ttl_ms}; open_channel channels expire
 *                           after MCPQ_CHANNEL_TTL_S idle (refreshed on each use); a
 *                           session's channel c_<session hex> is made by the worker
 *   {mcpq}:chan:<id>:turns    list of JSON turns, written by the agent executor (agent.h)
 *   {mcpq}:agentwait:<msg>    {"channel_id", "tenant"} while an agent call waits (worker)
 *   {mcpq}:agentreply:<msg>   the accepted agent_reply (short TTL), announced by PUBLISH
 *                           mcpq:agentreply <msg>
 *
 * Only the channel's tenant can use it: a foreign or unknown channel answers like a missing
 * one (-32602 on tools/call, 404 here), so existence does not leak. Thread-safe.
 */
#ifndef MCPQ_ING_CHANNELS_H
#define MCPQ_ING_CHANNELS_H

#include "req.h"
#include "kv.h"

#include <stddef.h>

#define ING_CHANNEL_ID_MAX 100

/* 1 when id looks like a channel id: 1..ING_CHANNEL_ID_MAX of [A-Za-z0-9_.:-]. */
int ing_channels_id_valid(const char *id);

/* A new channel of tenant, idle TTL ttl_s: its id ("c_" + 32 hex) in id[size >= 40].
 * 0 or MCPQ_EUNAVAIL. */
int ing_channels_open(kv_pool_t *kv, const char *tenant, long long ttl_s, char *id, size_t size);

/* Checks that id is a channel of tenant and refreshes its TTL (ttl_s; the channel's own
 * ttl_ms when it has one). 0, MCPQ_ENOTFOUND (unknown or another tenant's), MCPQ_EUNAVAIL.
 * *ttl_ms is the TTL applied. */
int ing_channels_use(kv_pool_t *kv, const char *tenant, const char *id, long long ttl_s,
                     long long *ttl_ms);

/* POST /v1/channels/{channel_id}/messages (url starts with /v1/channels). */
void ing_channels_api(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);

#endif
