/*
 * mcptasks.h - the tasks methods of the MCP endpoint (mcptasks.c): MCP Tasks of 2025-11-25
 * and the io.modelcontextprotocol/tasks extension of 2026-07-28.
 */
#ifndef MCPQ_ING_MCPTASKS_H
#define MCPQ_ING_MCPTASKS_H

#include "mcpreq.h"

/* tasks/get, tasks/result, tasks/list, tasks/cancel (MCP Tasks, 2025-11-25; mcptasks.c).
 * 1 when parked (tasks/result of a task still running), else 0 with resp filled. */
int ing_mcptasks_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);
/* tasks/get, tasks/update, tasks/cancel of the 2026-07-28 io.modelcontextprotocol/tasks
 * extension (mcptasks.c); -32021 for a request that does not declare it, -32601 (404) for
 * other tasks/ methods. */
void ing_mcptasks_ext(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);
#endif
