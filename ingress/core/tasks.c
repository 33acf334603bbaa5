#include "tasks.h"
#include "names.h"

#include "err.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_INTERVAL_MS 1000 /* suggested to pollers of a task that has not ended */

/* Runs a task script on a pooled connection; with replicas > 0, then WAIT on it: *waited is
 * set to 0 when fewer replicas than that acknowledged within timeout_ms (or the connection
 * broke), else 1. */
static redisReply *run_wait(kv_pool_t *kv, task_script_t s, int argc, const char *const *argv,
                            int replicas, int timeout_ms, int *waited)
{
    char err[256];
    redisContext *c = kv_pool_get(kv, err, sizeof(err));
    if (!c) {
        log_event(LOG_WARN, "tasks: Redis unavailable", "error", err, (char *)NULL);
        return NULL;
    }
    redisReply *r = task_script_run(c, s, argc, argv, err, sizeof(err));
    if (r && waited)
        *waited = kv_wait(c, replicas, timeout_ms) == 0;
    kv_pool_put(kv, c, c->err != 0);
    if (!r)
        log_event(LOG_WARN, "tasks: script failed", "error", err, (char *)NULL);
    return r;
}

static redisReply *run(kv_pool_t *kv, task_script_t s, int argc, const char *const *argv)
{
    return run_wait(kv, s, argc, argv, 0, 0, NULL);
}

int ing_tasks_create(kv_pool_t *kv, const ing_tasks_new_t *t, long long *created_ms)
{
    char prio[24], ttl[24], ret[24], max[24];
    snprintf(prio, sizeof(prio), "%lld", t->priority);
    snprintf(ttl, sizeof(ttl), "%lld", t->ttl_ms);
    snprintf(ret, sizeof(ret), "%lld", t->retention_s);
    snprintf(max, sizeof(max), "%lld", t->max_tasks);
    const char *argv[] = {t->id,
                          t->tenant,
                          t->server,
                          t->tool,
                          t->version ? t->version : "",
                          t->args_json,
                          t->robot ? t->robot : "",
                          prio,
                          t->env_json,
                          ret,
                          ttl,
                          t->surface,
                          t->traceparent ? t->traceparent : "",
                          max,
                          t->owner ? t->owner : "",
                          t->tracestate ? t->tracestate : ""};
    int waited = 1;
    redisReply *r =
        run_wait(kv, TASK_SCRIPT_CREATE, 16, argv, t->wait_replicas, t->wait_timeout_ms, &waited);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = r->type != REDIS_REPLY_INTEGER ? MCPQ_EUNAVAIL
             : r->integer > 0               ? 0
             : r->integer == -1             ? MCPQ_EQUOTA
                                            : MCPQ_EUNAVAIL;
    if (rc == 0)
        *created_ms = r->integer;
    freeReplyObject(r);
    if (rc == 0 && !waited) {
        /* Not on enough replicas: the client is told to try again and the task, which no
         * job will ever run, ends terminated where it is (docs/redis.md). */
        log_event(LOG_WARN, "task not created: too few Redis replicas acknowledged it", "task_id",
                  t->id, (char *)NULL);
        ing_tasks_abandon(kv, t->id, "not replicated in time (MCPQ_REDIS_WAIT_REPLICAS)",
                          t->retention_s);
        rc = MCPQ_EUNAVAIL;
    }
    return rc;
}

void ing_tasks_abandon(kv_pool_t *kv, const char *id, const char *reason, long long retention_s)
{
    char ret[24], base[20];
    snprintf(ret, sizeof(ret), "%lld", retention_s);
    util_random_hex(base, 8);
    const char *argv[] = {id, reason, ret, base};
    redisReply *r = run(kv, TASK_SCRIPT_ABANDON, 4, argv);
    if (r)
        freeReplyObject(r);
}

int ing_tasks_get(kv_pool_t *kv, const char *tenant, const char *id, ing_tasks_t *task)
{
    char err[256];
    task->fields = NULL;
    if (!id || !*id || strlen(id) > 128)
        return MCPQ_ENOTFOUND;
    redisReply *r = kv_pool_command(kv, err, sizeof(err), "HGETALL " NAMES_KEY_TASK "%s", id);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = MCPQ_ENOTFOUND;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
        cJSON *f = cJSON_CreateObject();
        for (size_t i = 0; f && i + 1 < r->elements; i += 2)
            cJSON_AddItemToObject(
                f, r->element[i]->str ? r->element[i]->str : "",
                cJSON_CreateString(r->element[i + 1]->str ? r->element[i + 1]->str : ""));
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "tenant"));
        if (f && t && strcmp(t, tenant) == 0) {
            task->fields = f;
            rc = 0;
        } else {
            cJSON_Delete(f);
        }
    }
    freeReplyObject(r);
    return rc;
}

void ing_tasks_cleanup(ing_tasks_t *task)
{
    cJSON_Delete(task->fields);
    task->fields = NULL;
}

const char *ing_tasks_field(const ing_tasks_t *task, const char *name)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(task->fields, name));
    return v ? v : "";
}

int ing_tasks_cancel(kv_pool_t *kv, const char *tenant, const char *id, const char *reason,
                     long long retention_s)
{
    char ret[24], base[20];
    snprintf(ret, sizeof(ret), "%lld", retention_s);
    util_random_hex(base, 8);
    const char *argv[] = {id, tenant, reason, ret, base};
    redisReply *r = run(kv, TASK_SCRIPT_CANCEL, 5, argv);
    if (!r)
        return MCPQ_EUNAVAIL;
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v == 1 ? 0 : v == -2 ? MCPQ_EINVAL : MCPQ_ENOTFOUND;
}

cJSON *ing_tasks_list(kv_pool_t *kv, const char *tenant, long long offset, long long limit,
                      int *more)
{
    char err[256];
    redisReply *r =
        kv_pool_command(kv, err, sizeof(err), "ZREVRANGE " TASK_INDEX_PREFIX "%s %lld %lld", tenant,
                        offset, offset + limit);
    if (!r)
        return NULL;
    cJSON *ids = cJSON_CreateArray();
    *more = 0;
    for (size_t i = 0; ids && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        if ((long long)i == limit) {
            *more = 1;
            break;
        }
        cJSON_AddItemToArray(ids, cJSON_CreateString(r->element[i]->str ? r->element[i]->str : ""));
    }
    freeReplyObject(r);
    return ids;
}

/* A field holding JSON, parsed (NULL when absent or not JSON). */
static cJSON *json_field(const ing_tasks_t *task, const char *name)
{
    const char *v = ing_tasks_field(task, name);
    return *v ? cJSON_Parse(v) : NULL;
}

/* A time field as a number, or null while unknown. */
static cJSON *time_field(const ing_tasks_t *task, const char *name)
{
    const char *v = ing_tasks_field(task, name);
    return *v ? cJSON_CreateNumber((double)strtoll(v, NULL, 10)) : cJSON_CreateNull();
}

static int terminal(const char *state)
{
    return strcmp(state, "complete") == 0 || strcmp(state, "terminated") == 0 ||
           strcmp(state, "cancelled") == 0;
}

cJSON *ing_tasks_data(const ing_tasks_t *task)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "TaskId", ing_tasks_field(task, "id"));
    cJSON_AddStringToObject(d, "TaskStatus", ing_tasks_field(task, "state"));
    cJSON_AddNumberToObject(d, "TaskPriority",
                            (double)strtoll(ing_tasks_field(task, "priority"), NULL, 10));
    const char *msg = ing_tasks_field(task, "msg");
    const char *why = ing_tasks_field(task, "error");
    const char *desc = *why ? why : msg;
    cJSON_AddItemToObject(d, "TaskDescription",
                          *desc ? cJSON_CreateString(desc) : cJSON_CreateNull());
    const char *robot = ing_tasks_field(task, "robot");
    cJSON_AddItemToObject(d, "RobotId", *robot ? cJSON_CreateString(robot) : cJSON_CreateNull());
    cJSON_AddStringToObject(d, "AppId", ing_tasks_field(task, "tool"));
    cJSON *params = cJSON_AddArrayToObject(d, "AppParams");
    cJSON *args = json_field(task, "args");
    const cJSON *a;
    cJSON_ArrayForEach(a, args)
    {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "Name", a->string ? a->string : "");
        cJSON_AddItemToObject(p, "Value", cJSON_Duplicate(a, 1));
        cJSON_AddItemToArray(params, p);
    }
    cJSON_Delete(args);
    cJSON *result = json_field(task, "result");
    cJSON_AddItemToObject(d, "TaskResult", result ? result : cJSON_CreateNull());
    cJSON_AddNullToObject(d, "CallbackConfig");
    cJSON_AddItemToObject(d, "TaskCreateTime", time_field(task, "created_ms"));
    cJSON_AddItemToObject(d, "TaskBeginTime", time_field(task, "begin_ms"));
    cJSON_AddItemToObject(d, "TaskEndTime", time_field(task, "end_ms"));
    const char *progress = ing_tasks_field(task, "progress");
    if (*progress)
        cJSON_AddItemToObject(d, "TaskProgress", json_field(task, "progress"));
    cJSON_AddNumberToObject(d, "Attempts",
                            (double)strtoll(ing_tasks_field(task, "attempts"), NULL, 10));
    return d;
}

static cJSON *iso_time(long long ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char buf[96];
    gmtime_r(&s, &tm);
    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    return cJSON_CreateString(buf);
}

int ing_tasks_input_open(const ing_tasks_t *task)
{
    return strcmp(ing_tasks_field(task, "state"), "running") == 0 &&
           *ing_tasks_field(task, "input") && *ing_tasks_field(task, "input_n");
}

int ing_tasks_input_replay(kv_pool_t *kv, const ing_tasks_t *task, const char *reply_key)
{
    if (!ing_tasks_input_open(task))
        return 0;
    cJSON *reqs = json_field(task, "input");
    long long n = strtoll(ing_tasks_field(task, "input_n"), NULL, 10);
    if (!cJSON_IsObject(reqs) || n < 1) {
        cJSON_Delete(reqs);
        return 0;
    }
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "n", (double)n);
    cJSON_AddItemToObject(d, "requests", reqs);
    cJSON_AddNumberToObject(d, "expires_ms", 0);
    char *data = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    if (!data)
        return MCPQ_ENOMEM;
    char err[128];
    const char *argv[] = {"XADD",   reply_key, "MAXLEN", "~",
                          "100000", "*",       "job",    ing_tasks_field(task, "id"),
                          "kind",   "input",   "data",   data};
    redisReply *r = kv_pool_commandargv(kv, err, sizeof(err), 12, argv, NULL);
    cJSON_free(data);
    int rc = r && r->type == REDIS_REPLY_STRING ? 0 : MCPQ_EUNAVAIL;
    if (r)
        freeReplyObject(r);
    return rc;
}

cJSON *ing_tasks_mcp(const ing_tasks_t *task, int ext, long long retention_s)
{
    cJSON *t = cJSON_CreateObject();
    const char *state = ing_tasks_field(task, "state");
    const char *fault = ing_tasks_field(task, "fault");
    int asking = ing_tasks_input_open(task);
    const char *status = asking ? "input_required" : task_mcp_status(state, fault, ext);
    cJSON_AddStringToObject(t, "taskId", ing_tasks_field(task, "id"));
    cJSON_AddStringToObject(t, "status", status);
    if (asking && ext) { /* the extension: the question, answered with tasks/update */
        cJSON *reqs = json_field(task, "input");
        if (reqs)
            cJSON_AddItemToObject(t, "inputRequests", reqs);
    }
    const char *msg = *ing_tasks_field(task, "error") ? ing_tasks_field(task, "error")
                                                      : ing_tasks_field(task, "msg");
    if (*msg)
        cJSON_AddStringToObject(t, "statusMessage", msg);
    cJSON_AddItemToObject(t, "createdAt",
                          iso_time(strtoll(ing_tasks_field(task, "created_ms"), NULL, 10)));
    cJSON_AddItemToObject(t, "lastUpdatedAt",
                          iso_time(strtoll(ing_tasks_field(task, "updated_ms"), NULL, 10)));
    /* The retention the gateway keeps a task for, whatever TTL the client asked for. */
    cJSON_AddNumberToObject(t, ext ? "ttlMs" : "ttl", (double)retention_s * 1000.0);
    if (!terminal(state)) {
        cJSON_AddNumberToObject(t, ext ? "pollIntervalMs" : "pollInterval", POLL_INTERVAL_MS);
        return t;
    }
    if (ext && strcmp(status, "completed") == 0) {
        cJSON *result = json_field(task, "result");
        cJSON_AddItemToObject(t, "result", result ? result : cJSON_CreateObject());
    } else if (ext && strcmp(status, "failed") == 0) {
        cJSON *err = cJSON_AddObjectToObject(t, "error");
        cJSON_AddNumberToObject(err, "code", (double)strtol(fault, NULL, 10));
        cJSON_AddStringToObject(err, "message", *msg ? msg : "the task failed");
    }
    return t;
}

/* An event of a task's history at ms (a field's value), or NULL when the field is empty. */
static cJSON *history_event(cJSON *arr, const ing_tasks_t *task, const char *field,
                            const char *event)
{
    const char *v = ing_tasks_field(task, field);
    if (!*v)
        return NULL;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToObject(e, "at", iso_time(strtoll(v, NULL, 10)));
    cJSON_AddStringToObject(e, "event", event);
    cJSON_AddItemToArray(arr, e);
    return e;
}

cJSON *ing_tasks_history(const ing_tasks_t *task)
{
    cJSON *arr = cJSON_CreateArray();
    history_event(arr, task, "created_ms", "created");
    cJSON *start = history_event(arr, task, "begin_ms", "started");
    if (start) {
        long long attempts = strtoll(ing_tasks_field(task, "attempts"), NULL, 10);
        cJSON_AddNumberToObject(start, "attempt", (double)(attempts > 0 ? attempts : 1));
        if (*ing_tasks_field(task, "worker"))
            cJSON_AddStringToObject(start, "worker", ing_tasks_field(task, "worker"));
    }
    const char *state = ing_tasks_field(task, "state");
    const char *fault = ing_tasks_field(task, "fault");
    cJSON *end = terminal(state)
                     ? history_event(arr, task, "end_ms", task_mcp_status(state, fault, 1))
                     : NULL;
    const char *msg = *ing_tasks_field(task, "error") ? ing_tasks_field(task, "error")
                                                      : ing_tasks_field(task, "msg");
    if (end && *msg)
        cJSON_AddStringToObject(end, "message", msg);
    if (end && *fault)
        cJSON_AddNumberToObject(end, "fault", (double)strtol(fault, NULL, 10));
    return arr;
}

int ing_tasks_status_known(const char *status)
{
    static const char *const statuses[] = {"working", "input_required", "completed", "failed",
                                           "cancelled"};
    for (size_t i = 0; status && i < sizeof(statuses) / sizeof(statuses[0]); i++)
        if (strcmp(status, statuses[i]) == 0)
            return 1;
    return 0;
}

cJSON *ing_tasks_rest(const ing_tasks_t *task, int full, long long retention_s)
{
    cJSON *t = ing_tasks_mcp(task, 1, retention_s);
    if (!full) {
        cJSON_DeleteItemFromObjectCaseSensitive(t, "result");
        cJSON_DeleteItemFromObjectCaseSensitive(t, "error");
    }
    cJSON_AddStringToObject(t, "tool", ing_tasks_field(task, "tool"));
    cJSON_AddStringToObject(t, "server", ing_tasks_field(task, "server"));
    return t;
}

#define CURSOR_MAX 1000000000LL
#define SCAN_MAX 500 /* index entries a page examines at most */

int ing_tasks_cursor(const char *cursor, long long *offset)
{
    *offset = 0;
    if (!cursor)
        return 0;
    if (cursor[0] != 't' || util_parse_ll(cursor + 1, 1, CURSOR_MAX, offset) < 0)
        return MCPQ_EINVAL;
    return 0;
}

/* Renders the tenant's task id into arr when it matches status (NULL: any): 0, or
 * MCPQ_EUNAVAIL. A task gone meanwhile is skipped. */
static int page_add(kv_pool_t *kv, const char *tenant, const char *id, int rest, const char *status,
                    long long retention_s, ing_tasks_keep_fn keep, void *arg, cJSON *arr)
{
    ing_tasks_t t;
    int rc = ing_tasks_get(kv, tenant, id, &t);
    if (rc == MCPQ_EUNAVAIL)
        return rc;
    if (rc < 0)
        return 0;
    if (keep && !keep(arg, &t)) {
        ing_tasks_cleanup(&t);
        return 0;
    }
    cJSON *o = rest ? ing_tasks_rest(&t, 0, retention_s) : ing_tasks_mcp(&t, 0, retention_s);
    ing_tasks_cleanup(&t);
    const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "status"));
    if (status && (!st || strcmp(st, status) != 0))
        cJSON_Delete(o);
    else
        cJSON_AddItemToArray(arr, o);
    return 0;
}

cJSON *ing_tasks_page(kv_pool_t *kv, const char *tenant, long long offset, int rest,
                      const char *status, long long retention_s)
{
    return ing_tasks_page_kept(kv, tenant, offset, rest, status, retention_s, NULL, NULL);
}

cJSON *ing_tasks_page_kept(kv_pool_t *kv, const char *tenant, long long offset, int rest,
                           const char *status, long long retention_s, ing_tasks_keep_fn keep,
                           void *arg)
{
    return ing_tasks_page_sized(kv, tenant, offset, rest, status, retention_s, keep, arg,
                                ING_TASKS_PAGE);
}

cJSON *ing_tasks_page_sized(kv_pool_t *kv, const char *tenant, long long offset, int rest,
                            const char *status, long long retention_s, ing_tasks_keep_fn keep,
                            void *arg, int size)
{
    cJSON *page = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(page, "tasks");
    long long pos = offset, next = -1;
    while (next < 0) {
        int more = 0;
        cJSON *ids = ing_tasks_list(kv, tenant, pos, size, &more);
        if (!ids)
            goto unavailable;
        int n = cJSON_GetArraySize(ids);
        for (int i = 0; i < n && next < 0; i++) {
            const char *id = cJSON_GetStringValue(cJSON_GetArrayItem(ids, i));
            if (page_add(kv, tenant, id, rest, status, retention_s, keep, arg, arr) < 0) {
                cJSON_Delete(ids);
                goto unavailable;
            }
            /* A full page: the next one starts after this task, if there is one. */
            if (cJSON_GetArraySize(arr) == size)
                next = i + 1 < n || more ? pos + i + 1 : 0;
        }
        cJSON_Delete(ids);
        if (next >= 0)
            break;
        pos += n;
        if (!more)
            next = 0;
        else if (pos - offset >= SCAN_MAX)
            next = pos; /* examined enough for one request: the caller goes on */
    }
    if (next > 0 && next <= CURSOR_MAX) {
        char cur[32];
        snprintf(cur, sizeof(cur), "t%lld", next);
        cJSON_AddStringToObject(page, "nextCursor", cur);
    }
    return page;
unavailable:
    cJSON_Delete(page);
    return NULL;
}

cJSON *ing_tasks_result(const ing_tasks_t *task)
{
    if (!terminal(ing_tasks_field(task, "state")))
        return NULL;
    return json_field(task, "result");
}

int ing_tasks_wait(kv_pool_t *kv, const char *id, const char *reply_key)
{
    char err[256];
    redisReply *r =
        kv_pool_command(kv, err, sizeof(err),
                        "SADD " NAMES_KEY_TASK "%s" NAMES_SUFFIX_WAITERS " %s", id, reply_key);
    if (!r)
        return MCPQ_EUNAVAIL;
    freeReplyObject(r);
    r = kv_pool_command(kv, err, sizeof(err),
                        "EXPIRE " NAMES_KEY_TASK "%s" NAMES_SUFFIX_WAITERS " 86400", id);
    if (r)
        freeReplyObject(r);
    return 0;
}

void ing_tasks_related_meta(cJSON *result, const char *id)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");
    if (!cJSON_IsObject(meta)) {
        cJSON_DeleteItemFromObjectCaseSensitive(result, "_meta");
        meta = cJSON_AddObjectToObject(result, "_meta");
    }
    cJSON *rel = cJSON_CreateObject();
    cJSON_AddStringToObject(rel, "taskId", id);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "io.modelcontextprotocol/related-task");
    cJSON_AddItemToObject(meta, "io.modelcontextprotocol/related-task", rel);
}
