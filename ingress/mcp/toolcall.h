/*
 * toolcall.h - tools/call: the pipeline from a JSON-RPC request to a published job and the
 * wait for its result (toolcall.c), which also runs a resources/read, prompts/get or
 * completion/complete whose object has an executor, and notifications/cancelled of a legacy
 * client.
 */
#ifndef MCPQ_ING_TOOLCALL_H
#define MCPQ_ING_TOOLCALL_H

#include "mcpreq.h"

/* tools/call (toolcall.c). 1 when the request waits for a worker (mcpreq.h), else 0 with
 * resp filled. */
int ing_toolcall_run(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);

/* The SERVER span (otel.h; docs/operations.md, "Traces (OpenTelemetry)") of a request that was
 * answered without a job (tools/list, initialize, a static resource, a call refused before its
 * tool was found, ...), given its answer resp: in the client's trace, named "<method>" (or
 * "<method> <name>" for a tool or prompt), error.type the JSON-RPC error code of an error
 * answer; server.c ends it with the response. A batch element's (m->batch) is its own span,
 * ended at once: its answer is ready, to be sent in the batch's array. Nothing when the request
 * (the batch element) has a span or a call's trace already, or when spans are not exported. */
void ing_toolcall_span(ing_mcp_t *m, const rpc_msg_t *msg, const ing_resp_t *resp);

/* resources/read, prompts/get, completion/complete, resources/subscribe or
 * resources/unsubscribe (msg->method) answered by a job: obj is the registry object of m's
 * server the caller found for it (a resource, a template whose uriTemplate matched with vars
 * its variables (borrowed; NULL otherwise), a prompt, or the prompt or template a
 * completion's ref names), whose version has an executor; the caller (mcpobj.c, subscribe.c)
 * checked what the request asks beyond its shape (a prompt's arguments against its
 * declaration). The same pipeline as tools/call (params' shape, access, job arguments
 * (jobargs.h), envelope with "method" and the object's mimeType ("mime_type"), publish,
 * park, answer) without the tool's inputSchema, reserved arguments or task mode; the worker's
 * result passes through (pending.h). Same return as ing_toolcall_run. */
int ing_toolcall_object(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp, const ing_tool_t *obj,
                        const cJSON *vars);
/* The same job as ing_toolcall_object's, published with nobody waiting for it: the envelope
 * has no reply_to (the worker answers no stream; its result record expires), the request's
 * own call is left alone (a subscriptions/listen stream keeps it), and the delivery report
 * only logs a loss. For the resources/subscribe jobs of a 2026-07-28 subscriptions/listen
 * (subscribe.h). 0 when published (or answered without a job: a fake object), or -1 with why
 * filled (the error the request would have been answered with). */
int ing_toolcall_detached(ing_mcp_t *m, const rpc_msg_t *msg, const ing_tool_t *obj,
                          const cJSON *vars, char *why, size_t why_size);
/* notifications/cancelled of a legacy client: cancels the job its requestId names. */
void ing_toolcall_cancelled(ing_mcp_t *m, const rpc_msg_t *msg);
/* Kafka delivery report for a published job (opaque: the malloc'd job id). */
void ing_toolcall_delivered(void *opaque, int err, void *ctx);

#endif
