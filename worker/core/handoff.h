/*
 * handoff.h - the worker's side of the task model (common/task.h, docs/protocol.md "Task mode").
 *
 * The hand-off (docs/tools.md "Task mode, robots and priorities"): a task's job arrives on Kafka
 * like any job, but the worker that polls it does not run it: it moves the task into the
 * Redis queue of its robot ({mcpq}:tq:<RobotId>, or {mcpq}:tq:_any) ordered by TaskPriority,
 * and its offset is stored at once. So a task that runs for hours never holds a partition
 * or the poll loop, and max.poll.interval.ms is never at stake. Workers then claim tasks
 * from their queue when they have a free slot: a worker started with MCPQ_ROBOT_ID claims
 * from that robot's queue, one task at a time (a pool of N such workers runs N); a worker
 * without one claims tasks without a RobotId, MCPQ_TASK_SLOTS at a time. A running task
 * holds a lease renewed every second; when a worker dies its leases run out and any
 * worker's reaper puts the task back to waiting (attempts counted) or, past
 * MCPQ_TASK_MAX_ATTEMPTS, ends it terminated with the reason.
 *
 * Calls are synchronous on one blocking hiredis context (MCPQ_REDIS_TIMEOUT_MS bounds each)
 * made on the loop thread; tasks are few and long, so this costs little. After a failure
 * the context is dropped and calls fail fast for a second (callers retry on their tick).
 *
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_TASKS_H
#define MCPQ_WORKER_TASKS_H

#include "kv.h"
#include "settings.h"
#include "task.h"
#include "trace.h"

#include <stddef.h>
#include <stdint.h>

typedef struct wrk_handoff wrk_handoff_t;

/* robot: the worker's MCPQ_ROBOT_ID or NULL. NULL on ENOMEM. */
wrk_handoff_t *wrk_handoff_new(const mcpq_settings_t *s, kv_target_t *kvt, const char *worker_id);
/* Closes its Redis connection and frees t. NULL is a no-op. */
void wrk_handoff_free(wrk_handoff_t *t);

/* Tasks this worker may run at once (1 for a robot). */
size_t wrk_handoff_slots(const wrk_handoff_t *t);

/* Moves the task into its robot's queue (a no-op unless it is waiting and not queued).
 * 0, or MCPQ_EUNAVAIL (Redis): retry later. */
int wrk_handoff_enqueue(wrk_handoff_t *t, const char *task_id);

/* Takes the next task of this worker's queue: 1 with *env (malloc'd envelope JSON, *len),
 * *begin_ms (epoch ms, Redis clock), *attempt and tracestate (the client's W3C tracestate
 * stored with the task when trace_state_ok, else "") set; 0 when none waits; MCPQ_EUNAVAIL. */
int wrk_handoff_claim(wrk_handoff_t *t, char **env, size_t *len, int64_t *begin_ms, long *attempt,
                      char tracestate[TRACE_STATE_MAX + 1]);

/* Renews the leases of the running tasks ids[0..n) (best effort). */
void wrk_handoff_heartbeat(wrk_handoff_t *t, const char *const *ids, size_t n);

/* Records a running task's status message and progress JSON (best effort). */
void wrk_handoff_progress(wrk_handoff_t *t, const char *task_id, const char *message,
                          const char *progress_json);

/* Ends a run: state "complete" or "terminated" with its CallToolResult JSON, a reason
 * ("" when none) and, for a failure outside the tool (timeout, executor fault), its JSON-RPC
 * code as fault (TASK_FAULT_*; NULL when the tool returned the result). 1 written, 0 the task
 * was no longer this worker's (cancelled, reaped), MCPQ_EUNAVAIL: retry later. */
int wrk_handoff_finish(wrk_handoff_t *t, const char *task_id, const char *state,
                       const char *result_json, const char *reason, const char *fault);

/* Puts a task this worker stopped running because it shuts down back to waiting at once
 * (another worker may take it; the attempt is not counted). 1 done, 0 not running here,
 * MCPQ_EUNAVAIL: Redis is down, and the lease will bring it back instead. */
int wrk_handoff_handback(wrk_handoff_t *t, const char *task_id);

/* Requeues or terminates tasks whose leases ran out (any worker's). Best effort. */
void wrk_handoff_reap(wrk_handoff_t *t);

/* At start-up: leases this worker id still holds (from before a restart) run out now, so
 * those tasks are requeued at once instead of after the lease. Best effort. */
void wrk_handoff_release_mine(wrk_handoff_t *t);

#endif
