/*
 * mcp.h - the MCP endpoint (docs/protocol.md): POST and DELETE on /mcp and /mcp/{server}.
 *
 * ing_mcp_post() authenticates, checks the protocol version, parses JSON-RPC and runs the
 * method: initialize, ping, logging/setLevel, tools/list, tools/call, subscriptions/listen
 * and notifications.
 * A tools/call whose tool runs on a worker is published to Kafka and parked without a
 * thread (pending.h); everything else is answered at once.
 */
#ifndef MCPQ_ING_MCP_H
#define MCPQ_ING_MCP_H

#include "req.h"

/* 0: resp holds the answer. 1: the request is parked; its answer arrives in req->call. */
int ing_mcp_post(ing_req_t *req, const char *server, ing_resp_t *resp);
/* DELETE with Mcp-Session-Id ends the session (and its GET streams). Always fills resp. */
void ing_mcp_delete(ing_req_t *req, const char *server, ing_resp_t *resp);
/* GET with Accept: text/event-stream and a live Mcp-Session-Id opens the session's
 * notification stream (listen.h): req->has_call is set and the caller queues the stream.
 * Otherwise resp holds the answer (405 without that Accept or under 2026-07-28). */
void ing_mcp_get(ing_req_t *req, const char *server, ing_resp_t *resp);
/* 405 for a method the MCP endpoint does not take. */
void ing_mcp_method_not_allowed(ing_resp_t *resp);

#endif
