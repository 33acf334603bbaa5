/*
 * mcpreq.h - one MCP request being answered: its state (ing_mcp_t), the helpers that fill
 * its JSON-RPC answer, and its wait for a worker. Shared by the method handlers of the MCP
 * layer (mcp.c dispatches to toolcall.c, mcptasks.c and system.c); not used above it.
 */
#ifndef MCPQ_ING_MCPREQ_H
#define MCPQ_ING_MCPREQ_H

#include "frontdoor.h"
#include "req.h"
#include "rpc.h"
#include "quota.h"
#include "session.h"
#include "tasks.h"

#include <cjson/cJSON.h>

typedef struct ing_mcp {
    ing_req_t *req;
    ing_registry_t *reg;
    const ing_tenant_t *tenant;
    const ing_server_t *server;
    const char *endpoint; /* the server the URL names (/mcp/{server}); NULL for /mcp */
    /* the front door's verdict (its registry reference is reg's) and the caller it admitted:
     * who points into it, for access.h's checks */
    ing_door_t door;
    const ing_principal_t *who;
    const char *version; /* the request's protocol version */
    int modern;          /* 2026-07-28 */
    int log_min;         /* notifications/message threshold for this request; -1: none */
    ing_session_t session;
    int has_session;
    /* tools/call: the conversation channel given by the channel_id argument (checked:
     * the caller's), else empty (the session's channel, or a fresh one); channels.h. */
    char channel[104];
    long long channel_ttl_ms;
    /* a 2025-03-26 batch (batch.h): the element being dispatched; NULL for one request */
    struct ing_batch *batch;
    size_t elem;
} ing_mcp_t;

/* ing_tasks_get for the caller: a task it may not see (owner.h: another principal's, one its
 * token is not bound to, or of a tool hidden from it) is MCPQ_ENOTFOUND, like a missing one. */
int ing_mcpreq_task_get(const ing_mcp_t *m, const char *id, ing_tasks_t *task);
/* 1 when the caller may see the task (owner.h; an ing_tasks_keep_fn; arg is the ing_mcp_t). */
int ing_mcpreq_task_visible(void *m, const ing_tasks_t *task);

/* {"name": "mcpq", "version": version_get()}, the serverInfo every era reports. */
cJSON *ing_mcpreq_server_info(void);
/* Adds what a 2026-07-28 result carries besides its fields (resultType, _meta serverInfo). */
void ing_mcpreq_modern_result(cJSON *result);

/* Fills resp with a JSON body (takes body; NULL body: 500). */
void ing_mcpreq_resp_json(ing_resp_t *resp, int status, char *body);
/* Fills resp with a JSON-RPC error. */
void ing_mcpreq_resp_error(ing_resp_t *resp, int status, const cJSON *id, int code, const char *msg,
                           const cJSON *data);
/* Fills resp with HTTP 429 and -32029 naming the tenant's quota q and its limit (quota.h). */
void ing_mcpreq_resp_quota(ing_resp_t *resp, const cJSON *id, ing_quota_t q, long long limit);
/* Fills resp with "Resource not found" for uri, data {"uri"}: -32002 up to 2025-11-25, -32602
 * in 2026-07-28 (m->modern), which changed the code (server/resources.mdx "Error Handling"). */
void ing_mcpreq_resp_not_found(const ing_mcp_t *m, ing_resp_t *resp, const cJSON *id,
                               const char *uri);
/* Same with a cJSON result (consumed). Under 2026-07-28 adds resultType and serverInfo. */
void ing_mcpreq_resp_result_obj(ing_mcp_t *m, ing_resp_t *resp, const cJSON *id, cJSON *result);

/* Waiting for an answer without a thread (pending.h), the same for one request and for an
 * element of a batch. A method that may wait fills the call ing_mcpreq_call() gives (the
 * request's own, or the element's), adds it with ing_mcpreq_enqueue() (0, or < 0 when the
 * table refused it: answer -32603), takes it back with ing_mcpreq_dequeue() if its request
 * fails after all, and returns ing_mcpreq_park(): 1 when it waits (one request: parked; a batch
 * element: the batch parks once every element is dispatched), 0 when the answer is there
 * already (the HTTP layer takes it from the call). */
ing_call_t *ing_mcpreq_call(ing_mcp_t *m);
int ing_mcpreq_enqueue(ing_mcp_t *m, ing_call_t *call);
int ing_mcpreq_dequeue(ing_mcp_t *m, ing_call_t *call); /* 1 when it was still waiting */
int ing_mcpreq_park(ing_mcp_t *m, ing_call_t *call);

#endif
