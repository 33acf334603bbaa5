/*
 * tasksapi.c - GET /v1/tasks, GET /v1/tasks/{task_id} and POST /v1/tasks/{task_id}/cancel
 * (tasksapi.h, docs/api.md "Tasks").
 *
 * Everything a task is and does comes from tasks.h, as for MCP Tasks (mcptasks.c): the same
 * read (ing_tasks_get: by the caller's tenant, another's answering like a missing one, and so
 * does a task the caller may not see: another principal's, or of a tool hidden from it,
 * owner.h), the
 * same page and cursor as tasks/list (ing_tasks_page), the same cancel. A task is rendered as
 * the 2026-07-28 DetailedTask plus its tool and server (ing_tasks_rest).
 */
#include "tasksapi.h"

#include "api.h"
#include "err.h"
#include "log.h"
#include "owner.h"
#include "util.h"
#include "tasks.h"

#include <stdio.h>
#include <string.h>

#define BASE "/v1/tasks"
#define CANCEL "/cancel"
#define TASK_ID_MAX 128

static void unavailable(ing_resp_t *resp)
{
    ing_api_error(resp, 503, "task store (Redis) unavailable; try again");
}

static void not_found(ing_resp_t *resp)
{
    ing_api_error(resp, 404, "no such task");
}

/* 1 when the caller may see the task (owner.h): others answer as missing tasks. An
 * ing_tasks_keep_fn; door is the request's ing_door_t. */
static int visible(void *door, const ing_tasks_t *task)
{
    const ing_door_t *d = door;
    return ing_owner_may(d->reg, &d->who, ing_tasks_field(task, "owner"),
                         ing_tasks_field(task, "server"), ing_tasks_field(task, "tool"));
}

static void list(ing_req_t *req, ing_door_t *door, const char *tenant, ing_resp_t *resp)
{
    const char *cursor = ing_req_arg(req, "cursor"), *status = ing_req_arg(req, "status");
    long long offset = 0;
    if (ing_tasks_cursor(cursor && *cursor ? cursor : NULL, &offset) < 0) {
        ing_api_error(resp, 400, "cursor is not one this API returned");
        return;
    }
    if (status && !*status)
        status = NULL;
    if (status && !ing_tasks_status_known(status)) {
        ing_api_error(resp, 400,
                      "status must be working, input_required, completed, failed or cancelled");
        return;
    }
    cJSON *page = ing_tasks_page_kept(req->ctx->kv, tenant, offset, 1, status,
                                      req->ctx->set->task_retention_s, visible, door);
    if (!page) {
        unavailable(resp);
        return;
    }
    if (!cJSON_HasObjectItem(page, "nextCursor"))
        cJSON_AddNullToObject(page, "nextCursor");
    ing_api_body(resp, 200, page);
}

/* ing_tasks_get of a task the caller may see; another is MCPQ_ENOTFOUND. */
static int get_visible(ing_req_t *req, ing_door_t *door, const char *tenant, const char *id,
                       ing_tasks_t *t)
{
    int rc = ing_tasks_get(req->ctx->kv, tenant, id, t);
    if (rc == 0 && !visible(door, t)) {
        ing_tasks_cleanup(t);
        rc = MCPQ_ENOTFOUND;
    }
    return rc;
}

/* 200 with the task, or 404/503. */
static void show(ing_req_t *req, ing_door_t *door, const char *tenant, const char *id,
                 ing_resp_t *resp)
{
    ing_tasks_t t;
    int rc = get_visible(req, door, tenant, id, &t);
    if (rc == MCPQ_ENOTFOUND) {
        not_found(resp);
        return;
    }
    if (rc < 0) {
        unavailable(resp);
        return;
    }
    ing_api_body(resp, 200, ing_tasks_rest(&t, 1, req->ctx->set->task_retention_s));
    ing_tasks_cleanup(&t);
}

/* As MCP tasks/cancel (2025-11-25): a task that has ended is an error, 409 here. */
static void cancel(ing_req_t *req, ing_door_t *door, const char *tenant, const char *id,
                   ing_resp_t *resp)
{
    ing_tasks_t t;
    int rc = get_visible(req, door, tenant, id, &t);
    if (rc == 0) {
        ing_tasks_cleanup(&t);
        rc = ing_tasks_cancel(req->ctx->kv, tenant, id, "cancelled by POST /v1/tasks/{id}/cancel",
                              req->ctx->set->task_retention_s);
    }
    if (rc == MCPQ_EINVAL) {
        ing_api_error(resp, 409, "Cannot cancel task: already in a terminal status");
        return;
    }
    if (rc == MCPQ_ENOTFOUND) {
        not_found(resp);
        return;
    }
    if (rc < 0) {
        unavailable(resp);
        return;
    }
    log_event(LOG_INFO, "task cancelled", "tenant", tenant, "task_id", id, "by", "rest",
              (char *)NULL);
    show(req, door, tenant, id, resp);
}

void ing_tasksapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    const size_t bl = sizeof(BASE) - 1;
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int is_list = strcmp(url, BASE) == 0;
    const char *id = url + bl + 1, *slash = NULL;
    size_t idlen = 0;
    int cancelling = 0;
    if (!is_list) {
        if (strncmp(url, BASE "/", bl + 1) != 0 || !*id) {
            ing_api_error(resp, 404, "not found");
            return;
        }
        slash = strchr(id, '/');
        idlen = slash ? (size_t)(slash - id) : strlen(id);
        cancelling = slash != NULL;
        if (slash && (idlen == 0 || strcmp(slash, CANCEL) != 0)) {
            ing_api_error(resp, 404, "not found");
            return;
        }
    }
    if (cancelling ? strcmp(method, "POST") != 0 : !is_get) {
        ing_api_error(resp, 405, "method not allowed");
        resp->allow = cancelling ? "POST" : "GET, HEAD";
        return;
    }
    ing_door_t door;
    const ing_tenant_t *t = ing_api_front_door(req, &door, resp);
    if (t) {
        char idbuf[TASK_ID_MAX + 1];
        if (is_list) {
            list(req, &door, t->id, resp);
        } else if (!util_id_ok(id, idlen, TASK_ID_MAX, "")) {
            not_found(resp);
        } else {
            memcpy(idbuf, id, idlen);
            idbuf[idlen] = '\0';
            if (cancelling)
                cancel(req, &door, t->id, idbuf, resp);
            else
                show(req, &door, t->id, idbuf, resp);
        }
    }
    ing_registry_unref(door.reg);
}
