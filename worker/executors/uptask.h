/*
 * uptask.h - an upstream task followed to its end, for the mcp executor (mcpexec.h, "Upstream
 * tasks"; docs/executors.md "Streams, upstream tasks and resource subscriptions").
 *
 * A tools/call may be answered with a CreateTaskResult (2025-11-25 {"task": Task}, asked for
 * with params.task for the tools whose taskSupport the upstream's tools/list gives as
 * required/optional; 2026-07-28 resultType "task", when the upstream's capabilities name the
 * tasks extension). The call then follows the task: tasks/get at the upstream's poll
 * interval (bounded, within the job's deadline), each new status or status message forwarded
 * as progress, then tasks/result (2025-11-25) or the terminal task's own result or error
 * (2026-07-28); a task that asks for input or is cancelled ends the job with an error; a
 * timeout or cancel of the job sends tasks/cancel.
 *
 * The call's requests and its end go through the executor's ops (mcpup.h); this module
 * never calls mcpexec.c. Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_UPTASK_H
#define MCPQ_WORKER_UPTASK_H

#include "mcpup.h"

#include <cjson/cJSON.h>

/* Readies c's poll timer; before c is used, once. */
void wrk_uptask_init(wrk_mcpup_call_t *c);

/* 1 when a handshake response r (borrowed) says the upstream may answer tools/call with a
 * task: 2026-07-28 (server/discover) capabilities.extensions["io.modelcontextprotocol/tasks"],
 * 2025-11-25 (initialize) capabilities.tasks.requests.tools.call. */
int wrk_uptask_offered(const cJSON *r, int modern);

/* A tools/call's params (and their _meta) for c's upstream: a 2026-07-28 upstream that runs
 * tasks is told this client follows them; a 2025-11-25 one gets params.task when tool needs
 * it (c->as_task set: its taskSupport, or already a -32601 to a plain call). */
void wrk_uptask_opt_in(wrk_mcpup_call_t *c, cJSON *params, cJSON *meta, const char *tool);

/* When result (part of the response r) is a CreateTaskResult: keeps the task's id in c and
 * follows the task (r taken over; c may have ended), returning 1. Else 0 and r untouched. */
int wrk_uptask_created(wrk_mcpup_call_t *c, cJSON *r, const cJSON *result);

/* The task's state t (a Task, part of the tasks/get response r, taken over) as the upstream
 * reported it: progress for a new status, the end of c for a terminal one, else the next
 * tasks/get scheduled. */
void wrk_uptask_state(wrk_mcpup_call_t *c, cJSON *r, const cJSON *t);

/* tasks/cancel for the task c follows (c->task_id set), fire-and-forget. */
void wrk_uptask_cancel(wrk_mcpup_call_t *c);

#endif
