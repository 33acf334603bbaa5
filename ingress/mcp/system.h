/*
 * system.h - the built-in `system` server every tenant has (docs/protocol.md, "The system server"):
 * POST /mcp/system with the tools workerSysGetTaskStatus {TaskId}, workerSysCancelTask
 * {TaskId} and workerSysListTasks {PageSize, PageToken}. Their results carry the task-mode
 * envelope {requestId, success, code, msg, msgCode, data, pager, instanceId} as
 * structuredContent (and as text); a task of another tenant is "not found" like a missing
 * one. Thread-safe.
 */
#ifndef MCPQ_ING_SYSTEM_H
#define MCPQ_ING_SYSTEM_H

#include "mcpreq.h"

#define ING_SYSTEM_SERVER "system"

/* The system server (tools/list reads its tools like any server's). */
const ing_server_t *ing_system_server(void);

/* tools/call on the system server; always fills resp. */
void ing_system_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);

#endif
