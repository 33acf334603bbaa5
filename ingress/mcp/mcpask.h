/*
 * mcpask.h - asking the client mid-call, the MCP layer's half (docs/internals.md, "Asking the
 * client"; docs/protocol.md, "Asking the user"):
 *   - what the client can be asked: the capabilities it declared (elicitation, sampling,
 *     roots), kept in its session at initialize (legacy) or read from each request's
 *     params._meta["io.modelcontextprotocol/clientCapabilities"] (2026-07-28), and put into
 *     the job envelope as "client";
 *   - the legacy input hook (pending.h): a question becomes one JSON-RPC request per key on
 *     the call's SSE stream, id "mcpq-in/<n>/<key>/<job_id>";
 *   - the client's responses to those requests, POSTed to any replica, handed to
 *     ing_answer_submit (answer.h).
 * Used by mcp.c (initialize, POSTed responses) and toolcall.c / mcptasks.c (the envelope, the
 * hook). Thread-safe: pure functions of their arguments, and answer.h's Redis calls.
 */
#ifndef MCPQ_ING_MCPASK_H
#define MCPQ_ING_MCPASK_H

#include "mcpreq.h"
#include "pending.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* The prefix of the ids of the requests mcpq sends its clients. */
#define ING_MCPASK_ID_PREFIX "mcpq-in/"
/* The 2026-07-28 per-request client capabilities (params._meta member). */
#define ING_MCPASK_META_CAPS "io.modelcontextprotocol/clientCapabilities"
/* Bound on the capabilities kept (JSON bytes): beyond it each one is kept as {} (declared,
 * without its details). */
#define ING_MCPASK_CAPS_MAX 1024

/* The capabilities of caps (a ClientCapabilities object, may be NULL) that a tool may use:
 * elicitation, sampling and roots, each kept when it is an object; a new object ({} when none),
 * at most ING_MCPASK_CAPS_MAX bytes of JSON. NULL only when memory runs out. */
cJSON *ing_mcpask_caps(const cJSON *caps);

/* The job envelope's "client" for the request msg of m: {"protocol_version": m->version,
 * "capabilities": ...} from the session (legacy; m->session.caps) or from msg's
 * params._meta (2026-07-28). A new object; NULL when memory runs out. */
cJSON *ing_mcpask_envelope_client(const ing_mcp_t *m, const rpc_msg_t *msg);

/* The legacy input hook (pending.h, ing_call_input_fn): POST, with one JSON-RPC request per
 * key of data's requests (id "mcpq-in/<n>/<key>/<job_id>"; a tasks/result call's carry the
 * related-task _meta), when the call (a batch element: its batch) streams SSE; else
 * UNREACHABLE. */
ing_input_t ing_mcpask_hook_legacy(ing_call_t *call, const char *job_id, const cJSON *data,
                                   cJSON **msgs);

/* 1 when a JSON-RPC response's id is one of mcpq's requests ("mcpq-in/..."). */
int ing_mcpask_is_answer(const cJSON *id);

/* A POST whose body (root: one response, or a 2025-03-26 batch of responses) holds the
 * client's responses to mcpq's requests: each is submitted (answer.h) as the caller m->who,
 * its tenant and its Mcp-Session-Id. resp: 202 when every one was taken (responses with other
 * ids are accepted and ignored); 400 with a JSON-RPC error without id (data.reason
 * "input_lost": the question is gone, answered by someone else, or not the caller's;
 * "invalid_answer": the answer is malformed or an accepted elicitation does not match its
 * requestedSchema, and the tool gets the -32602 error answer instead); 413 when the body is
 * larger than MCPQ_INPUT_MAX_BYTES; 503 when Redis is unreachable. */
void ing_mcpask_post(ing_mcp_t *m, const cJSON *root, ing_resp_t *resp);

/* One response of a batch that also holds requests (mcp.c): submitted as above; the outcome
 * is only logged (the batch answers its requests). */
void ing_mcpask_answer_one(ing_mcp_t *m, const cJSON *item);

#endif
