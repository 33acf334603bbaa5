/*
 * toolcall.h - tools/call: the pipeline from a JSON-RPC request to a published job and the
 * wait for its result (toolcall.c), and notifications/cancelled of a legacy client.
 */
#ifndef MCPQ_ING_TOOLCALL_H
#define MCPQ_ING_TOOLCALL_H

#include "mcpreq.h"

/* tools/call (toolcall.c). 1 when the request waits for a worker (mcpreq.h), else 0 with
 * resp filled. */
int ing_toolcall_run(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);
/* notifications/cancelled of a legacy client: cancels the job its requestId names. */
void ing_toolcall_cancelled(ing_mcp_t *m, const rpc_msg_t *msg);
/* Kafka delivery report for a published job (opaque: the malloc'd job id). */
void ing_toolcall_delivered(void *opaque, int err, void *ctx);

#endif
