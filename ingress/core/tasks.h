/*
 * tasks.h - the ingress's side of the task model (common/task.h, docs/protocol.md): creating
 * a task for a tools/call, reading, listing and cancelling a tenant's tasks, and rendering a
 * task for each surface: the task-mode shape of the system server (workerSysGetTaskStatus),
 * the MCP Tasks `Task` object (2025-11-25 and the 2026-07-28 extension), and the REST API's
 * task (GET /v1/tasks, docs/api.md "Tasks"), which is the extension's DetailedTask plus the
 * tool and server it runs.
 *
 * A task of another tenant answers exactly as a missing one (docs/protocol.md, "Errors"); who
 * of the tenant may see it is owner.h's to decide (ing_tasks_page_kept's keep).
 *
 * Thread-safe (Redis through the kv pool).
 */
#ifndef MCPQ_ING_TASKS_H
#define MCPQ_ING_TASKS_H

#include "kv.h"
#include "task.h"

#include <cjson/cJSON.h>

/* A task as read from Redis: its hash fields as a cJSON object of strings. */
typedef struct ing_tasks {
    cJSON *fields;
} ing_tasks_t;

typedef struct ing_tasks_new {
    const char *id, *tenant, *server, *tool, *version;
    const char *args_json, *robot, *env_json, *surface;
    const char *traceparent; /* the creating call's (ingress span); NULL or "" for none */
    const char *owner;       /* the creator's principal (owner.h, ing_owner_of); NULL: none */
    const char *tracestate;  /* the client's, sent with its traceparent; NULL or "" for none */
    long long priority, ttl_ms, retention_s;
    long long
        max_tasks; /* the tenant's quotas.tasks: tasks it may have in retention; 0: no limit */
    int wait_replicas, wait_timeout_ms; /* MCPQ_REDIS_WAIT_*: 0 replicas, no WAIT */
} ing_tasks_new_t;

/* Creates the task (state waiting). 0 with *created_ms, MCPQ_EQUOTA (the tenant has
 * max_tasks tasks in retention: nothing created), or MCPQ_EUNAVAIL (also when fewer than
 * t->wait_replicas replicas acknowledged it: it is then ended terminated). */
int ing_tasks_create(kv_pool_t *kv, const ing_tasks_new_t *t, long long *created_ms);

/* Ends a task whose job never reached Kafka as terminated (reason). Best effort. */
void ing_tasks_abandon(kv_pool_t *kv, const char *id, const char *reason, long long retention_s);

/* Reads the tenant's task: 0 (task filled; ing_tasks_cleanup), MCPQ_ENOTFOUND (missing or
 * another tenant's), MCPQ_EUNAVAIL. */
int ing_tasks_get(kv_pool_t *kv, const char *tenant, const char *id, ing_tasks_t *task);
void ing_tasks_cleanup(ing_tasks_t *task);

/* A field ("" when absent). */
const char *ing_tasks_field(const ing_tasks_t *task, const char *name);

/* Cancels: 0, MCPQ_ENOTFOUND, MCPQ_EINVAL (already finished), MCPQ_EUNAVAIL. */
int ing_tasks_cancel(kv_pool_t *kv, const char *tenant, const char *id, const char *reason,
                     long long retention_s);

/* Up to limit ids of the tenant's tasks, newest first, starting after `after` entries
 * (offset); *more set when there are others. A cJSON array of strings, or NULL (Redis). */
cJSON *ing_tasks_list(kv_pool_t *kv, const char *tenant, long long offset, long long limit,
                      int *more);

/* The task-mode `data` object: TaskId, TaskStatus, TaskPriority, TaskDescription, RobotId,
 * AppId, AppParams [{Name, Value}], TaskResult, CallbackConfig, TaskCreateTime,
 * TaskBeginTime, TaskEndTime (epoch ms, null until known). */
cJSON *ing_tasks_data(const ing_tasks_t *task);

/* The MCP Tasks Task object: taskId, status (input_required while a question to the client is
 * open; with ext, the question as `inputRequests`), statusMessage, createdAt, lastUpdatedAt,
 * the retention as TTL, and a poll interval while it runs. ext = 0: the 2025-11-25 shape (ttl,
 * pollInterval; a terminated task is failed). ext = 1: the 2026-07-28 extension's
 * DetailedTask (ttlMs, pollIntervalMs; once terminal, `result` for completed, which includes
 * a tool's isError result, or the JSON-RPC `error` for failed). */
cJSON *ing_tasks_mcp(const ing_tasks_t *task, int ext, long long retention_s);

/* 1 when the task runs with a question open to its client (the worker's `input` and
 * `input_n` fields, docs/internals.md "Asking the client"): MCP status input_required. */
int ing_tasks_input_open(const ing_tasks_t *task);

/* Hands the task's open question to this replica's reader as the worker hands it to the
 * replicas waiting on the task: an `input` entry {"n", "requests", "expires_ms": 0} on
 * reply_key (a tasks/result that arrives while the question is open; the reader gives each
 * call a question once). 0 (also when no question is open), or MCPQ_EUNAVAIL. */
int ing_tasks_input_replay(kv_pool_t *kv, const ing_tasks_t *task, const char *reply_key);

/* The task's timeline from its hash (docs/api.md, "Administration"): [{"at": RFC 3339,
 * "event": "created"}, {"event": "started", "attempt": n, "worker"} (the last attempt's start
 * only: earlier attempts' begin_ms are not kept), {"event": completed | failed | cancelled,
 * "message"?, "fault"?} once it ended]. Owned by the caller. */
cJSON *ing_tasks_history(const ing_tasks_t *task);

/* 1 when status is one a task shows (working, input_required, completed, failed, cancelled):
 * what a listing may filter on. */
int ing_tasks_status_known(const char *status);

/* The REST API's task (docs/api.md, "Tasks"): ing_tasks_mcp(task, 1, retention_s) (the
 * DetailedTask: taskId, status, statusMessage, createdAt, lastUpdatedAt, ttlMs,
 * pollIntervalMs while it runs, `result` or `error` once terminal) plus `tool` and `server`.
 * full = 0 leaves out result and error (a listing). Owned by the caller. */
cJSON *ing_tasks_rest(const ing_tasks_t *task, int full, long long retention_s);

#define ING_TASKS_PAGE 50 /* tasks a listing page holds at most */

/* A listing cursor ("t<offset>", as ing_tasks_page makes them) into *offset: 0, or
 * MCPQ_EINVAL when it is not one. NULL is the first page (offset 0). */
int ing_tasks_cursor(const char *cursor, long long *offset);

/* One page of the tenant's tasks, newest first, from offset (ing_tasks_cursor): the object
 * {"tasks": [...], "nextCursor": "t<n>"} (nextCursor only when there may be more), each task
 * as ing_tasks_rest(task, 0) when rest, else as ing_tasks_mcp(task, 0) (tasks/list). With
 * status (NULL: all), only the tasks whose rendered status is that one. A page examines at
 * most 500 entries of the tenant's index, so a filtered one may hold fewer than
 * ING_TASKS_PAGE tasks, even none, with a nextCursor; tasks that expired meanwhile are
 * skipped. Owned by the caller; NULL when Redis is unavailable. */
cJSON *ing_tasks_page(kv_pool_t *kv, const char *tenant, long long offset, int rest,
                      const char *status, long long retention_s);

/* ing_tasks_page showing only the tasks keep(arg, task) returns 1 for (keep NULL: all), such
 * as those of tools the caller may see (access.h). */
typedef int (*ing_tasks_keep_fn)(void *arg, const ing_tasks_t *task);
cJSON *ing_tasks_page_kept(kv_pool_t *kv, const char *tenant, long long offset, int rest,
                           const char *status, long long retention_s, ing_tasks_keep_fn keep,
                           void *arg);
/* ing_tasks_page_kept with pages of size (1..ING_TASKS_PAGE) tasks at most. */
cJSON *ing_tasks_page_sized(kv_pool_t *kv, const char *tenant, long long offset, int rest,
                            const char *status, long long retention_s, ing_tasks_keep_fn keep,
                            void *arg, int size);

/* The task's CallToolResult once terminal (a copy; NULL before). */
cJSON *ing_tasks_result(const ing_tasks_t *task);

/* Adds _meta {"io.modelcontextprotocol/related-task": {"taskId": id}} to a result. */
void ing_tasks_related_meta(cJSON *result, const char *id);

/* Registers reply_key to hear when the task ends (SADD {mcpq}:task:<id>:waiters). 0 or
 * MCPQ_EUNAVAIL. */
int ing_tasks_wait(kv_pool_t *kv, const char *id, const char *reply_key);

#endif
