/*
 * task.h - the one task model (docs/protocol.md) as Redis keys and the Lua scripts that move
 * a task through its states, shared by the ingress (create, cancel, read) and the worker
 * (enqueue, claim, heartbeat, progress, finish, reap).
 *
 * Keys (docs/internals.md "Tasks"):
 *   {mcpq}:task:<id>          hash: id, tenant, server, tool, version, args (JSON), robot,
 *                           priority, env (the job envelope), state, msg, progress (JSON),
 *                           result (CallToolResult JSON), error, created_ms, begin_ms,
 *                           end_ms, updated_ms, attempts, worker, queued, ttl_ms, surface,
 *                           fault (the JSON-RPC code of a terminated task that failed outside
 *                           the tool, e.g. -32003 timeout, -32603 worker lost; absent when the
 *                           tool itself returned an isError result),
 *                           traceparent (W3C, the creating call's trace at the ingress; ""
 *                           when none; webhook deliveries of the task carry its trace),
 *                           tracestate (the client's W3C tracestate sent with that trace,
 *                           relayed to the tool as a Kafka record's is; "" when none),
 *                           owner (the creator's principal, ingress/core/owner.h: who may
 *                           read and act on the task; absent in tasks made before it was
 *                           recorded)
 *   {mcpq}:tasks:<tenant>     zset of the tenant's task ids by created_ms (listing, and the
 *                           count of quotas.tasks: CREATE drops ids whose hash has expired,
 *                           oldest first, before it counts)
 *   {mcpq}:tq:<robot>         zset: tasks waiting for that robot ({mcpq}:tq:_any: no RobotId),
 *                           score (100 - priority) * 1e13 + created_ms, so ZPOPMIN takes the
 *                           highest priority, oldest first
 *   {mcpq}:task:leases        zset: running task ids by lease expiry (Redis clock, ms)
 *   {mcpq}:task:<id>:waiters  set of reply streams of ingress replicas parked on tasks/result
 *   {mcpq}:result:<id>        the result record once terminal (as for a sync job)
 *
 * States: waiting -> running -> complete | terminated, and cancelled from waiting or
 * running. Every transition is one script, so a state change, its webhook deliveries
 * (common/whq.h) and the wake-up of waiting tasks/result calls happen together or not at
 * all. Times come from Redis's clock (TIME), so replicas' clocks do not matter.
 *
 * Thread safety: the functions are thread-safe; a redisContext belongs to its caller's
 * thread.
 */
#ifndef MCPQ_TASK_H
#define MCPQ_TASK_H

#include "names.h"

#include <hiredis/hiredis.h>
#include <stddef.h>

#define TASK_ID_LEN 37 /* a UUID (36 characters) and NUL */
#define TASK_ROBOT_MAX 128
/* The queue of tasks without a RobotId ({mcpq}:tq:_any): no tenant can declare it (cfg.c). */
#define TASK_ROBOT_ANY "_any"
/* The tenant's index of its task ids ({mcpq}:tasks:<tenant>). */
#define TASK_INDEX_PREFIX NAMES_KEY_TASKS

typedef enum {
    TASK_SCRIPT_CREATE = 0,
    TASK_SCRIPT_ENQUEUE,
    TASK_SCRIPT_CLAIM,
    TASK_SCRIPT_HEARTBEAT,
    TASK_SCRIPT_PROGRESS,
    TASK_SCRIPT_FINISH,
    TASK_SCRIPT_REAP,
    TASK_SCRIPT_RELEASE,
    TASK_SCRIPT_CANCEL,
    TASK_SCRIPT_HANDBACK,
    TASK_SCRIPT_ABANDON,
    TASK_SCRIPT_COUNT
} task_script_t;

/* A new unguessable task id (UUID version 4 from 122 random bits). */
void task_id_new(char out[TASK_ID_LEN]);

/* 1 when robot is a usable RobotId: 1..TASK_ROBOT_MAX of [A-Za-z0-9_.:-]. */
int task_robot_ok(const char *robot);

/*
 * Runs script s with argc string arguments (no keys; scripts derive their keys) on c:
 * EVALSHA of common/lua/task_<name>.lua (rscript.h). The reply (caller frees) or NULL with
 * errstr filled (connection failure or an error reply).
 *
 * Arguments per script (all strings):
 *   CREATE    id tenant server tool version args_json robot priority env_json retention_s
 *             ttl_ms surface traceparent max_tasks("0" = no limit) owner tracestate
 *                                                    -> created_ms, 0 when the id exists, -1
 *             when the tenant has max_tasks tasks in retention (the quota, nothing created)
 *   ENQUEUE   id                                     -> 1 queued, 0 not waiting/queued already
 *   CLAIM     robot("" = any) worker lease_ms id_base -> nil, or [id, env, begin_ms, attempts,
 *                                                       tracestate]
 *   HEARTBEAT worker lease_ms id...                  -> leases extended
 *   PROGRESS  id worker message progress_json        -> 1 or 0
 *   FINISH    id worker state result_json reason retention_s id_base fault("" = none)
 *                                                    -> 1, or 0 when no longer ours
 *   REAP      max_attempts retention_s id_base limit -> ["<id> requeued"|"<id> terminated"...]
 *   RELEASE   worker                                 -> leases of that worker expired now
 *   HANDBACK  id worker                              -> 1 when the worker's running task went
 *             back to waiting at the head of its priority (a shutdown: the attempt is not
 *             counted), 0 when it was not running there
 *   CANCEL    id tenant reason retention_s id_base   -> 1, -1 unknown/foreign, -2 finished
 *   ABANDON   id reason retention_s id_base          -> 1 when a waiting task that never
 *             reached a queue (Kafka refused its job) ended terminated
 */
redisReply *task_script_run(redisContext *c, task_script_t s, int argc, const char *const *argv,
                            char *errstr, size_t errstr_size);

/* The MCP Tasks status of a task state: working, completed, failed or cancelled. The
 * 2025-11-25 surface (ext = 0) reports every terminated task as failed; the 2026-07-28
 * extension (ext = 1) reports one that ended with the tool's own isError result (no fault) as
 * completed, carrying that result (docs/protocol.md, "Task mode"). */
const char *task_mcp_status(const char *state, const char *fault, int ext);

#define TASK_FAULT_TIMEOUT "-32003"
#define TASK_FAULT_INTERNAL "-32603"

#endif
