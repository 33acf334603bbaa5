/*
 * tasksapi.h - a tenant's tasks over plain HTTP (tasksapi.c, docs/api.md "Tasks"), for a
 * webhook receiver or a backend that does not speak MCP: the same reads and cancel as MCP
 * tasks/get, tasks/list and tasks/cancel (mcptasks.h), over the same task store (tasks.h).
 */
#ifndef MCPQ_ING_TASKSAPI_H
#define MCPQ_ING_TASKSAPI_H

#include "req.h"

/*
 * For url /v1/tasks and under it, authenticated like /mcp (API key or HMAC app signing) and
 * rate-limited per key or app:
 *   GET  /v1/tasks[?cursor=&status=]     the caller's tenant's tasks, newest first
 *   GET  /v1/tasks/{task_id}             the task, with its result or error once terminal
 *   POST /v1/tasks/{task_id}/cancel      cancels it: 200 with the task, 409 when it has ended
 * Another tenant's task, or one of a tool the caller may not see (access.h), answers exactly
 * like a missing one (404) and is not listed; Redis out of reach is 503.
 * Fills resp (JSON body). Thread-safe.
 */
void ing_tasksapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);

#endif
