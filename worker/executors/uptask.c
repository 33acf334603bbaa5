#include "uptask.h"

#include "log.h"

#include <stdio.h>
#include <string.h>

#define UPTASK_POLL_DEFAULT_MS 1000 /* an upstream task that suggests no poll interval */
#define UPTASK_POLL_MIN_MS 50       /* nor faster than this, whatever it suggests */
#define UPTASK_POLL_MAX_MS 30000
#define UPTASK_EXT "io.modelcontextprotocol/tasks"

static int task_terminal(const char *status)
{
    return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "cancelled") == 0;
}

static void task_poll_fire(wrk_loop_timer_t *t, void *arg)
{
    wrk_mcpup_call_t *c = arg;
    (void)t;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "taskId", c->task_id);
    c->step = WRK_MCPUP_STEP_TASK_GET;
    c->m->ops->post(c, "tasks/get", c->task_id, p);
    wrk_job_log_leave(&saved);
}

/* The task's state t (a Task: taskId, status, statusMessage, pollInterval[Ms]) as the upstream
 * reported it: a new status or message goes out as progress (the task's status messages are
 * the call's progress); a terminal one ends the call (a 2026-07-28 task carries its result
 * or error, a 2025-11-25 one is fetched with tasks/result); else the next tasks/get is
 * scheduled after the upstream's poll interval, within the job's deadline. Takes r, the
 * response t is part of. */
void wrk_uptask_state(wrk_mcpup_call_t *c, cJSON *r, const cJSON *t)
{
    wrk_mcpup_t *up = c->up;
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"));
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "statusMessage"));
    if (!status) {
        cJSON_Delete(r);
        c->m->ops->end(c, wrk_job_error_hidden(c->job, up->host,
                                               "the upstream MCP server answered a task without a "
                                               "status"));
        return;
    }
    char text[WRK_MCPUP_MESSAGE_MAX];
    snprintf(text, sizeof(text), "%s%s%s", status, msg ? ": " : "", msg ? msg : "");
    if (strcmp(text, c->task_note) != 0) {
        cJSON *data = cJSON_CreateObject();
        cJSON_AddNumberToObject(data, "progress", ++c->task_steps);
        cJSON_AddStringToObject(data, "message", text);
        wrk_job_notify(c->job, "progress", data);
        cJSON_Delete(data);
        snprintf(c->task_note, sizeof(c->task_note), "%s", text);
    }
    /* status and msg live in r, which is freed below */
    snprintf(c->task_status, sizeof(c->task_status), "%s", status);
    if (strcmp(c->task_status, "input_required") == 0) {
        cJSON_Delete(r);
        c->m->ops->end(c,
                       wrk_job_error_hidden(c->job, up->host,
                                            "the upstream MCP server's task asks for input, which "
                                            "the mcp executor cannot give"));
        return;
    }
    if (strcmp(c->task_status, "cancelled") == 0) {
        cJSON_Delete(r);
        c->m->ops->end(c, wrk_job_error_hidden(c->job, up->host,
                                               "the upstream MCP server cancelled the task"));
        return;
    }
    if (task_terminal(c->task_status) && up->modern) {
        /* 2026-07-28: the terminal task carries the call's result or error */
        cJSON *out = cJSON_CreateObject();
        cJSON *res = cJSON_DetachItemFromObjectCaseSensitive((cJSON *)t, "result");
        cJSON *err = cJSON_DetachItemFromObjectCaseSensitive((cJSON *)t, "error");
        cJSON_Delete(r);
        if (err)
            cJSON_AddItemToObject(out, "error", err);
        if (res)
            cJSON_AddItemToObject(out, "result", res);
        else if (!err)
            cJSON_AddObjectToObject(out, "result"); /* not a CallToolResult: refused below */
        c->step = WRK_MCPUP_STEP_TASK_RESULT;
        c->m->ops->answer(c, out);
        return;
    }
    const cJSON *iv =
        cJSON_GetObjectItemCaseSensitive(t, up->modern ? "pollIntervalMs" : "pollInterval");
    int64_t wait = cJSON_IsNumber(iv) ? (int64_t)iv->valuedouble : UPTASK_POLL_DEFAULT_MS;
    wait = wait < UPTASK_POLL_MIN_MS   ? UPTASK_POLL_MIN_MS
           : wait > UPTASK_POLL_MAX_MS ? UPTASK_POLL_MAX_MS
                                       : wait;
    cJSON_Delete(r);
    if (task_terminal(c->task_status)) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "taskId", c->task_id);
        c->step = WRK_MCPUP_STEP_TASK_RESULT;
        c->m->ops->post(c, "tasks/result", NULL, p);
        return;
    }
    int64_t left = wrk_job_remaining_ms(c->job);
    if (wait > left)
        wait = left; /* the deadline timer ends the job; a last look costs nothing */
    if (wrk_loop_timer_start(c->job->rt->loop, &c->poll, wait) < 0)
        c->m->ops->end_error(c, -32603, "out of memory");
}

/* A CreateTaskResult in result (2026-07-28: resultType "task" with the Task's members;
 * 2025-11-25: {"task": Task}): the task's id is kept and the task followed. 1 when result
 * was one (r taken), else 0. */
int wrk_uptask_created(wrk_mcpup_call_t *c, cJSON *r, const cJSON *result)
{
    const char *rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "resultType"));
    const cJSON *t = NULL;
    if (c->up->modern && rt && strcmp(rt, "task") == 0)
        t = result;
    else if (!c->up->modern && !cJSON_GetObjectItemCaseSensitive(result, "content"))
        t = cJSON_GetObjectItemCaseSensitive(result, "task");
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "taskId"));
    if (!id)
        return 0;
    if (!id[0] || strlen(id) >= sizeof(c->task_id)) {
        cJSON_Delete(r);
        c->m->ops->end(c, wrk_job_error_hidden(c->job, c->up->host,
                                               "the upstream MCP server answered a task id this "
                                               "gateway cannot follow"));
        return 1;
    }
    snprintf(c->task_id, sizeof(c->task_id), "%s", id);
    log_event(LOG_INFO, "following the upstream MCP server's task", "job_id", c->job->env.job_id,
              "upstream", c->up->host, "task_id", c->task_id, (char *)NULL);
    wrk_uptask_state(c, r, t);
    return 1;
}

/* tasks/cancel for the task c follows, fire-and-forget (cancel of the job). */
void wrk_uptask_cancel(wrk_mcpup_call_t *c)
{
    wrk_mcpup_t *up = c->up;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "taskId", c->task_id);
    wrk_mcpup_fire(up, ++c->m->next_id, "tasks/cancel", c->task_id, p, c->session,
                   c->job->env.traceparent, c->job->env.request_id,
                   WRK_MCPUP_CANCEL_NOTE_TIMEOUT_MS);
    log_event(LOG_INFO, "cancelling the upstream MCP server's task", "job_id", c->job->env.job_id,
              "upstream", up->host, "task_id", c->task_id, (char *)NULL);
}

/* A tools/call: a 2026-07-28 upstream that runs tasks is told this client follows them
 * (the extension in _meta's client capabilities); a 2025-11-25 one gets params.task when the
 * tool needs it (as_task: its taskSupport, or a -32601 to a plain call). */
void wrk_uptask_opt_in(wrk_mcpup_call_t *c, cJSON *params, cJSON *meta, const char *tool)
{
    wrk_mcpup_t *up = c->up;
    if (up->modern) {
        if (!up->tasks)
            return;
        cJSON *caps = cJSON_GetObjectItemCaseSensitive(meta, MCPW_META_CLIENT_CAPS);
        if (!caps)
            caps = cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_CAPS);
        cJSON *ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
        if (!ext)
            ext = cJSON_AddObjectToObject(caps, "extensions");
        if (!cJSON_GetObjectItemCaseSensitive(ext, UPTASK_EXT))
            cJSON_AddObjectToObject(ext, UPTASK_EXT);
        return;
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, up->task_tools)
    {
        if (tool && strcmp(t->valuestring, tool) == 0)
            c->as_task = 1;
    }
    if (c->as_task)
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(params, "task"), "ttl",
                                (double)(wrk_job_remaining_ms(c->job) + UPTASK_POLL_MAX_MS));
}

/* 1 when a handshake response's capabilities say the upstream may answer tools/call with a
 * task: 2026-07-28 (server/discover) extensions["io.modelcontextprotocol/tasks"], 2025-11-25
 * (initialize) tasks.requests.tools.call. */
int wrk_uptask_offered(const cJSON *r, int modern)
{
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r, "result"), "capabilities");
    if (modern)
        return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(caps, "extensions"), UPTASK_EXT));
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(caps, "tasks");
    t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "requests"), "tools");
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "call"));
}

void wrk_uptask_init(wrk_mcpup_call_t *c)
{
    wrk_loop_timer_init(&c->poll, task_poll_fire, c);
}
