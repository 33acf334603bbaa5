/*
 * agent.h - the agent executor (docs/executors.md, "agent"): the tools/call becomes a
 * chat_message (schemas/chat-message.schema.json) POSTed to the agent's url, and the
 * matching agent_reply (schemas/agent-reply.schema.json) becomes the MCP content.
 *
 * The executor config is {"type": "agent", "url": ..., "headers": {...}, "secret"?}: the
 * POST goes through the http executor's transfer machinery (httpexec.h wrk_httpexec_post), signed
 * with Standard Webhooks headers when a secret is set. message_id is the job id (stable
 * across redeliveries); channel_id comes from the envelope.
 *
 *   200 + agent_reply body      the reply is the result at once
 *   202                         the call waits for the agent to POST its agent_reply to the
 *                               ingress (/v1/channels/{channel_id}/messages), which stores it
 *                               under {mcpq}:agentreply:<message_id> and PUBLISHes the id on
 *                               mcpq:agentreply (cancelsub.h); the key is also polled once a
 *                               second (wrk_agent_tick) for messages lost by Pub/Sub
 *   other status, unreachable   an isError result with an error id; the agent's host[:port]
 *                               and curl's message go to the log (wrk_job_error_hidden)
 *   deadline                    the job times out (record status timeout → -32003)
 *
 * While a call waits, {mcpq}:agentwait:<message_id> holds {"channel_id", "tenant"} (expiring
 * shortly after the deadline): the ingress accepts replies only for such a message.
 *
 * Turns: before sending, the channel's earlier turns ({mcpq}:chan:<id>:turns) go into the
 * chat_message; when the agent answered (a reply or an agent failure, not a timeout or a
 * cancel), the call appends its turn {"in": {message_id, tool, arguments, at_ms}, "out":
 * {content, isError}} and the list is trimmed, oldest first, to MCPQ_CHANNEL_MAX_TURNS and
 * MCPQ_CHANNEL_MAX_BYTES in one Lua script, refreshing the channel's TTL (the envelope's
 * channel_ttl_ms). Only agent calls append turns: a channel is the conversation with the
 * agent (docs/internals.md "Conversation channels").
 *
 * The Redis commands here are few per call (one pipeline at start, one GET per wake-up, one
 * at the end) and run on a blocking context bounded by MCPQ_REDIS_TIMEOUT_MS, like the
 * store's flush (store.h). Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_AGENT_H
#define MCPQ_WORKER_AGENT_H

#include "envelope.h"
#include "names.h"
#include "kv.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <stdint.h>

#define WRK_CHAN_PREFIX NAMES_KEY_CHAN
#define WRK_AGENTWAIT_PREFIX NAMES_KEY_AGENTWAIT
#define WRK_AGENTREPLY_PREFIX NAMES_KEY_AGENTREPLY

typedef struct wrk_agent wrk_agent_t;

/* NULL on ENOMEM. The settings must outlive it. */
wrk_agent_t *wrk_agent_new(const mcpq_settings_t *s, kv_target_t *kvt);
/* Every agent call must have finished before. NULL is a no-op. */
void wrk_agent_free(wrk_agent_t *a);

/* A Pub/Sub message said the reply to message_id is stored: a waiting call here takes it. */
void wrk_agent_reply_ready(wrk_agent_t *a, const char *message_id);
/* Once a second: looks for the stored replies of every waiting call. */
void wrk_agent_tick(wrk_agent_t *a);

/* Pure helpers (tests/unit/worker/test_agent.c). */

/* The chat_message for env; turns (an array, consumed; NULL: none). NULL on ENOMEM. */
cJSON *wrk_agent_chat_message(const wrk_envelope_t *env, const char *message_id,
                              const char *channel_id, cJSON *turns);

/* The CallToolResult of an agent_reply answering message_id, or NULL with why filled when
 * reply is not one (wrong type, in_reply_to, neither text nor a content array of blocks). */
cJSON *wrk_agent_reply_result(const cJSON *reply, const char *message_id, char *why,
                              size_t why_size);

/* A turn of the channel: the call in, its result out (borrowed). NULL on ENOMEM. */
cJSON *wrk_agent_turn(const wrk_envelope_t *env, const char *message_id, int64_t at_ms,
                      const cJSON *result);

#endif
