/*
 * mcpint.h - what the MCP endpoint's files share (mcp.c, toolcall.c): the state of one
 * request being answered and the helpers that fill its answer. Not used outside mcp*.c and
 * toolcall.c.
 */
#ifndef MCPQ_ING_MCPINT_H
#define MCPQ_ING_MCPINT_H

#include "ingress.h"
#include "jsonrpc.h"
#include "session.h"

#include <cjson/cJSON.h>

typedef struct ing_mcp {
    ing_req_t *req;
    ing_registry_t *reg;
    const ing_tenant_t *tenant;
    const ing_server_t *server;
    const char *version; /* the request's protocol version */
    int modern;          /* 2026-07-28 */
    int log_min;         /* notifications/message threshold for this request; -1: none */
    ing_session_t session;
    int has_session;
    /* tools/call: the conversation channel given by the channel_id argument (checked:
     * the caller's), else empty (the session's channel, or a fresh one); channels.h. */
    char channel[104];
    long long channel_ttl_ms;
} ing_mcp_t;

/* Fills resp with a JSON body (takes body; NULL body: 500). */
void ing_resp_json(ing_resp_t *resp, int status, char *body);
/* Fills resp with a JSON-RPC error. */
void ing_resp_error(ing_resp_t *resp, int status, const cJSON *id, int code, const char *msg,
                    const cJSON *data);
/* Fills resp with a JSON-RPC result (takes result_json; NULL: -32603 out of memory). */
void ing_resp_result_owned(ing_resp_t *resp, const cJSON *id, char *result_json);
/* Same with a cJSON result (consumed). Under 2026-07-28 adds resultType and serverInfo. */
void ing_resp_result_obj(ing_mcp_t *m, ing_resp_t *resp, const cJSON *id, cJSON *result);

/* tools/call (toolcall.c). 1 when the request is parked waiting for a worker, else 0 with
 * resp filled. */
int ing_mcp_tools_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);
/* tasks/get, tasks/result, tasks/list, tasks/cancel (MCP Tasks, 2025-11-25; mcptasks.c).
 * 1 when parked (tasks/result of a task still running), else 0 with resp filled. */
int ing_mcp_tasks(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);
/* tasks/get, tasks/update, tasks/cancel of the 2026-07-28 io.modelcontextprotocol/tasks
 * extension (mcptasks.c); -32021 for a request that does not declare it, -32601 (404) for
 * other tasks/ methods. */
void ing_mcp_tasks_ext(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);
/* notifications/cancelled of a legacy client: cancels the job its requestId names. */
void ing_mcp_cancelled(ing_mcp_t *m, const rpc_msg_t *msg);

#endif
