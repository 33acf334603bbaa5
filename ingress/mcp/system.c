#include "system.h"

#include "access.h"
#include "admin.h"
#include "channels.h"
#include "err.h"
#include "log.h"
#include "tasks.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_DEFAULT 20
#define LIST_MAX 100

static const char *const tool_json[] = {
    "{\"name\":\"workerSysGetTaskStatus\",\"description\":\"The status and result of a task by "
    "its TaskId: waiting, running, complete, terminated or cancelled, with begin and end "
    "times in epoch milliseconds.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"TaskId\":{\"type\":\"string\"}},\"required\":[\"TaskId\"]}}",
    "{\"name\":\"workerSysCancelTask\",\"description\":\"Cancels a waiting or running task by "
    "its TaskId (a running exec task's process group is stopped).\",\"inputSchema\":{\"type\":"
    "\"object\",\"properties\":{\"TaskId\":{\"type\":\"string\"}},\"required\":[\"TaskId\"]}}",
    "{\"name\":\"workerSysListTasks\",\"description\":\"This tenant's tasks, newest first, "
    "PageSize (1-100, default 20) at a time; pass the NextPageToken of a page to get the "
    "next.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"PageSize\":{\"type\":"
    "\"integer\",\"minimum\":1,\"maximum\":100},\"PageToken\":{\"type\":\"string\"}}}}",
    "{\"name\":\"open_channel\",\"description\":\"Opens a conversation channel: pass its "
    "channel_id as an argument of later tools/call requests so they share conversation context "
    "(what Mcp-Session-Id gives older clients). It expires after a period without use.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}},\"outputSchema\":{\"type\":"
    "\"object\",\"properties\":{\"channel_id\":{\"type\":\"string\"}},\"required\":["
    "\"channel_id\"]}}",
    "{\"name\":\"list_tools\",\"description\":\"This tenant's tools on every server, published "
    "or not (the admin API's listing): pageSize (default 50, at most 1000) and pageToken (a "
    "nextPageToken) page it; filter takes name, server, published, create_time and update_time "
    "with = and != joined by AND (name = \\\"echo\\\" AND published = true); orderBy is name or "
    "create_time, optionally followed by desc. Each tool has createTime, updateTime and "
    "etag.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"pageSize\":{\"type\":"
    "\"integer\",\"minimum\":0},\"pageToken\":{\"type\":\"string\"},\"filter\":{\"type\":"
    "\"string\"},\"orderBy\":{\"type\":\"string\"}}}}",
};
#define NTOOLS (sizeof(tool_json) / sizeof(tool_json[0]))

static ing_tool_t tools[NTOOLS];
static ing_tool_t *tool_ptrs[NTOOLS];
static ing_server_t server;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
    static const char *const names[] = {"workerSysGetTaskStatus", "workerSysCancelTask",
                                        "workerSysListTasks", "open_channel", "list_tools"};
    for (size_t i = 0; i < NTOOLS; i++) {
        tools[i].server = ING_SYSTEM_SERVER;
        tools[i].name = names[i];
        tools[i].list_json = (char *)tool_json[i];
        tool_ptrs[i] = &tools[i];
    }
    server.name = ING_SYSTEM_SERVER;
    server.description = "built-in task tools, open_channel and list_tools";
    server.tools = tool_ptrs;
    server.ntools = NTOOLS;
}

const ing_server_t *ing_system_server(void)
{
    pthread_once(&once, build);
    return &server;
}

/* The task-mode envelope around data (consumed), as a CallToolResult. */
static cJSON *envelope(int ok, int code, const char *msg, const char *msg_code, cJSON *data,
                       cJSON *pager)
{
    char uuid[TASK_ID_LEN];
    task_id_new(uuid);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "requestId", uuid);
    cJSON_AddBoolToObject(o, "success", ok);
    cJSON_AddNumberToObject(o, "code", code);
    cJSON_AddStringToObject(o, "msg", msg);
    cJSON_AddStringToObject(o, "msgCode", msg_code);
    cJSON_AddItemToObject(o, "data", data ? data : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "pager", pager ? pager : cJSON_CreateNull());
    cJSON_AddNullToObject(o, "instanceId");
    cJSON *r = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(r, "content");
    cJSON *block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "text");
    char *text = cJSON_PrintUnformatted(o);
    cJSON_AddStringToObject(block, "text", text ? text : "");
    cJSON_free(text);
    cJSON_AddItemToArray(content, block);
    cJSON_AddItemToObject(r, "structuredContent", o);
    cJSON_AddBoolToObject(r, "isError", !ok);
    return r;
}

static cJSON *failure(int rc)
{
    if (rc == MCPQ_EUNAVAIL)
        return envelope(0, 503, "task store (Redis) unavailable; try again", "error.unavailable",
                        NULL, NULL);
    if (rc == MCPQ_EINVAL)
        return envelope(0, 409, "the task has already finished", "task.finished", NULL, NULL);
    return envelope(0, 404, "task not found", "task.notFound", NULL, NULL);
}

static cJSON *get_status(ing_mcp_t *m, const char *id)
{
    ing_tasks_t t;
    int rc = ing_mcpreq_task_get(m, id, &t);
    if (rc < 0)
        return failure(rc);
    cJSON *r = envelope(1, 0, "success", "result.success", ing_tasks_data(&t), NULL);
    ing_tasks_cleanup(&t);
    return r;
}

static cJSON *cancel(ing_mcp_t *m, const char *id)
{
    ing_tasks_t t;
    int rc = ing_mcpreq_task_get(m, id, &t); /* a task of a tool the caller may not see */
    if (rc < 0)
        return failure(rc);
    ing_tasks_cleanup(&t);
    rc = ing_tasks_cancel(m->req->ctx->kv, m->tenant->id, id, "cancelled by workerSysCancelTask",
                          m->req->ctx->set->task_retention_s);
    return rc < 0 ? failure(rc) : get_status(m, id);
}

static cJSON *list(ing_mcp_t *m, const cJSON *args)
{
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(args, "PageSize");
    const char *token = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "PageToken"));
    long long size = cJSON_IsNumber(ps) ? (long long)ps->valuedouble : LIST_DEFAULT;
    long long offset = 0;
    if (size < 1 || size > LIST_MAX ||
        (token && *token && util_parse_ll(token, 0, 1000000000LL, &offset) < 0))
        return envelope(0, 400, "PageSize must be 1-100 and PageToken one this tool returned",
                        "param.invalid", NULL, NULL);
    int more = 0;
    cJSON *ids = ing_tasks_list(m->req->ctx->kv, m->tenant->id, offset, size, &more);
    if (!ids)
        return failure(MCPQ_EUNAVAIL);
    cJSON *data = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(data, "Tasks");
    const cJSON *id;
    cJSON_ArrayForEach(id, ids)
    {
        ing_tasks_t t;
        if (ing_mcpreq_task_get(m, id->valuestring, &t) == 0) {
            cJSON_AddItemToArray(arr, ing_tasks_data(&t));
            ing_tasks_cleanup(&t);
        }
    }
    cJSON_Delete(ids);
    cJSON *pager = cJSON_CreateObject();
    cJSON_AddNumberToObject(pager, "PageSize", (double)size);
    if (more) {
        char next[32];
        snprintf(next, sizeof(next), "%lld", offset + size);
        cJSON_AddStringToObject(pager, "NextPageToken", next);
    } else {
        cJSON_AddNullToObject(pager, "NextPageToken");
    }
    return envelope(1, 0, "success", "result.success", data, pager);
}

/* A CallToolResult with o (consumed) as structuredContent and its JSON as the text. */
static cJSON *structured(cJSON *o)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "text");
    char *text = cJSON_PrintUnformatted(o);
    cJSON_AddStringToObject(block, "text", text ? text : "");
    cJSON_free(text);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "content"), block);
    cJSON_AddItemToObject(r, "structuredContent", o);
    cJSON_AddBoolToObject(r, "isError", 0);
    return r;
}

/* list_tools: the listing of the caller's tools from the registry snapshot (the same
 * listing as the admin API's GET .../tools, admin.h), without those it may not see. NULL with err
 * for bad arguments. */
static cJSON *list_tools(ing_mcp_t *m, const cJSON *args, char *err, size_t err_size)
{
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(args, "pageSize");
    char size[32] = "";
    static const char *const strs[] = {"pageToken", "filter", "orderBy"};
    for (size_t i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, strs[i]);
        if (v && !cJSON_IsString(v)) {
            snprintf(err, err_size, "arguments.%s must be a string", strs[i]);
            return NULL;
        }
    }
    if (ps && !(cJSON_IsNumber(ps) && ps->valuedouble >= 0 && ps->valuedouble < 1e9)) {
        snprintf(err, err_size, "arguments.pageSize must be a non-negative integer");
        return NULL;
    }
    if (ps)
        snprintf(size, sizeof(size), "%lld", (long long)ps->valuedouble);
    /* Only the tools (no other kind) the caller may see (access.h), published or not. */
    cJSON *docs = cJSON_CreateArray();
    const cJSON *d;
    cJSON_ArrayForEach(d, ing_registry_docs(m->reg))
    {
        const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "_field"));
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "tenant"));
        const char *srv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "server"));
        if (!f || strncmp(f, "tool:", 5) != 0 || !t || strcmp(t, m->tenant->id) != 0 || !srv ||
            kinds_of(d) != ING_KIND_TOOL)
            continue;
        const ing_server_t *s = ing_registry_server(m->reg, t, srv);
        if (ing_access_rules(m->who, s ? s->access : NULL,
                             cJSON_GetObjectItemCaseSensitive(d, "access"), NULL,
                             0) == ING_ACCESS_OK)
            cJSON_AddItemReferenceToArray(docs, (cJSON *)d);
    }
    cJSON *o = ing_admin_list_tools(
        m->tenant->id, docs, ps ? size : NULL,
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "pageToken")),
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "filter")),
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "orderBy")), err, err_size);
    cJSON_Delete(docs);
    return o ? structured(o) : NULL;
}

/* {channel_id} as structuredContent and text (channels.h). */
static cJSON *open_channel(ing_mcp_t *m)
{
    char id[64];
    if (ing_channels_open(m->req->ctx->kv, m->tenant->id, m->req->ctx->set->channel_ttl_s, id,
                          sizeof(id)) < 0) {
        const char *text = "channel store (Redis) unavailable; try again";
        cJSON *r = cJSON_CreateObject();
        cJSON *block = cJSON_CreateObject();
        cJSON_AddStringToObject(block, "type", "text");
        cJSON_AddStringToObject(block, "text", text);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "content"), block);
        cJSON_AddBoolToObject(r, "isError", 1);
        return r;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "channel_id", id);
    cJSON *r = structured(o);
    log_event(LOG_INFO, "channel opened", "tenant", m->tenant->id, "channel", id, (char *)NULL);
    return r;
}

void ing_system_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "name"));
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(msg->params, "arguments");
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "TaskId"));
    cJSON *result = NULL;
    if (!name) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "params.name must be a string", NULL);
        return;
    }
    if (strcmp(name, "open_channel") == 0) {
        result = open_channel(m);
    } else if (strcmp(name, "list_tools") == 0) {
        char err[512];
        if (!(result = list_tools(m, args, err, sizeof(err)))) {
            ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, err, NULL);
            return;
        }
    } else if (strcmp(name, "workerSysListTasks") == 0) {
        result = list(m, args);
    } else if (strcmp(name, "workerSysGetTaskStatus") == 0 ||
               strcmp(name, "workerSysCancelTask") == 0) {
        if (!id) {
            ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                                  "arguments.TaskId must be a string", NULL);
            return;
        }
        result = name[9] == 'G' ? get_status(m, id) : cancel(m, id);
    } else {
        char buf[200];
        snprintf(buf, sizeof(buf), "Unknown tool: %.120s", name);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, buf, NULL);
        return;
    }
    ing_mcpreq_resp_result_obj(m, resp, msg->id, result);
}
