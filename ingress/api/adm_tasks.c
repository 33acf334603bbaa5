/*
 * adm_tasks.c - a tenant's tasks for the operator (adm.h; docs/api.md "Administration"):
 *
 *   GET  /admin/v1/tenants/{t}/tasks[?status=&pageSize=&pageToken=]   newest first
 *   GET  /admin/v1/tenants/{t}/tasks/{id}                              with history, deliveries
 *   POST /admin/v1/tenants/{t}/tasks/{id}:cancel
 *
 * The operator sees every task of the tenant, whoever created it. A task looks exactly as
 * GET /v1/tasks/{id} shows it (tasks.h ing_tasks_rest: one place for how a task looks); the
 * one task adds its timeline (ing_tasks_history) and its webhook deliveries as the deliveries
 * listing shows them (whapi.h). A task of another tenant answers as a missing one. Outside the
 * registry's read-modify-write loop (admin.c): tasks live in keys of their own (tasks.h).
 */
#include "adm.h"

#include "api.h"
#include "err.h"
#include "log.h"
#include "tasks.h"
#include "util.h"
#include "whapi.h"

#include <stdio.h>
#include <string.h>

#define TASK_ID_MAX 128

static int unavailable(adm_t *a)
{
    return ing_adm_fail(a, 503, "task store (Redis) unavailable; try again");
}

/* A page of the tenant's tasks: {"tasks": [...], "nextPageToken"} (null on the last page). */
static int list(adm_t *a, const char *tenant)
{
    const char *status = qarg(a, "status"), *ps = qarg(a, "pageSize"), *pt = qarg(a, "pageToken");
    long long offset = 0, size = ING_TASKS_PAGE;
    if (status && !*status)
        status = NULL;
    if (status && !ing_tasks_status_known(status))
        return ing_adm_fail(
            a, 400, "status must be working, input_required, completed, failed or cancelled");
    if (ps && *ps && util_parse_ll(ps, 1, ING_TASKS_PAGE, &size) < 0)
        return ing_adm_fail(a, 400, "pageSize must be an integer from 1 to %d", ING_TASKS_PAGE);
    if (ing_tasks_cursor(pt && *pt ? pt : NULL, &offset) < 0)
        return ing_adm_fail(a, 400, "pageToken is not one this API returned");
    ing_ctx_t *ctx = a->req->ctx;
    cJSON *page = ing_tasks_page_sized(ctx->kv, tenant, offset, 1, status,
                                       ctx->set->task_retention_s, NULL, NULL, (int)size);
    if (!page)
        return unavailable(a);
    cJSON *next = cJSON_DetachItemFromObjectCaseSensitive(page, "nextCursor");
    if (next)
        cJSON_AddItemToObject(page, "nextPageToken", next);
    else
        cJSON_AddNullToObject(page, "nextPageToken");
    ing_api_body(a->resp, 200, page);
    return DONE;
}

/* The task with its result or error, history and deliveries. */
static int show(adm_t *a, const char *tenant, const char *id)
{
    ing_ctx_t *ctx = a->req->ctx;
    ing_tasks_t t;
    int rc = ing_tasks_get(ctx->kv, tenant, id, &t);
    if (rc == MCPQ_ENOTFOUND)
        return ing_adm_fail(a, 404, "no task \"%s\" in tenant \"%.128s\"", id, tenant);
    if (rc < 0)
        return unavailable(a);
    cJSON *o = ing_tasks_rest(&t, 1, ctx->set->task_retention_s);
    cJSON_AddItemToObject(o, "history", ing_tasks_history(&t));
    ing_tasks_cleanup(&t);
    cJSON *d = ing_whapi_task_deliveries(a->req, tenant, id);
    if (!d) {
        cJSON_Delete(o);
        return ing_adm_fail(a, 503, "delivery store (Redis) unavailable; try again");
    }
    cJSON_AddItemToObject(o, "deliveries", d);
    ing_api_body(a->resp, 200, o);
    return DONE;
}

/* As POST /v1/tasks/{id}/cancel: 200 with the task, 409 once it ended, 404 unknown. */
static int cancel(adm_t *a, const char *tenant, const char *id)
{
    ing_ctx_t *ctx = a->req->ctx;
    int rc = ing_tasks_cancel(ctx->kv, tenant, id, "cancelled by the operator (admin API)",
                              ctx->set->task_retention_s);
    if (rc == MCPQ_EINVAL)
        return ing_adm_fail(a, 409, "Cannot cancel task: already in a terminal status");
    if (rc == MCPQ_ENOTFOUND)
        return ing_adm_fail(a, 404, "no task \"%s\" in tenant \"%.128s\"", id, tenant);
    if (rc < 0)
        return unavailable(a);
    log_event(LOG_INFO, "task cancelled", "tenant", tenant, "task_id", id, "by", "admin",
              (char *)NULL);
    return show(a, tenant, id);
}

int ing_adm_tasks_route(adm_t *a)
{
    const char *tenant = a->seg[1];
    if (a->nseg == 3) {
        if (a->verb)
            return ing_adm_fail(a, 404, "no such admin resource (:%s)", a->verb);
        return ing_adm_allow(a, "GET") ? list(a, tenant) : DONE;
    }
    const char *id = a->seg[3];
    if (!util_id_ok(id, strlen(id), TASK_ID_MAX, ""))
        return ing_adm_fail(a, 404, "no task \"%.128s\" in tenant \"%.128s\"", id, tenant);
    if (a->verb && strcmp(a->verb, "cancel") != 0)
        return ing_adm_fail(a, 404, "no such admin resource (tasks take :cancel)");
    if (a->verb)
        return ing_adm_allow(a, "POST") ? cancel(a, tenant, id) : DONE;
    return ing_adm_allow(a, "GET") ? show(a, tenant, id) : DONE;
}
