/*
 * whapi.c - the tenant API over webhook deliveries (webhook.h, docs/webhooks.md):
 * GET /v1/webhooks/deliveries and POST /v1/webhooks/deliveries/{id}/redeliver.
 *
 * A caller authenticates as for /mcp (API key, HMAC signing or OAuth token) and sees only its
 * own tenant's deliveries, and of those only the ones it may see by their task (owner.h: the
 * task's creator, or a caller holding tasks:all, and only for tools it may see and servers
 * its token is bound to; each delivery keeps its task's owner, server and tool). Another
 * tenant's delivery id, and one the caller may not see, answers exactly like a missing one,
 * and the listing leaves it out. The operator's admin API (ing_whapi_deliveries) sees all.
 * Listing walks the tenant's index ({mcpq}:whd:idx:<tenant>, newest first) in one Lua script
 * that filters by task and status and examines at most SCAN_MAX entries per request, so a
 * request's cost is bounded however rare the filter's matches; the cursor is
 * "<created_ms>.<id>" of the last entry examined. Neither the url nor the secret of a
 * webhook, nor a signature, is returned.
 */
#include "webhook.h"
#include "whapi.h"
#include "rscript.h"

#include "api.h"
#include "names.h"
#include "owner.h"
#include "listing.h"
#include "err.h"
#include "log.h"
#include "util.h"
#include "whq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

#define LIMIT_DEFAULT 50
#define LIMIT_MAX 200
#define SCAN_MAX 1000
#define TASK_MAX 256
#define TASK_SCAN_PAGES 5 /* a task's deliveries: among the tenant's newest 5 * SCAN_MAX */
#define NFIELDS 11        /* the fields a delivery shows */
#define ROW 14            /* a listed delivery: NFIELDS, then owner, server and tool */

#define FIELDS                                                                                     \
    "'id', 'webhook', 'event', 'task', 'status', 'attempts', 'last_status', 'last_error', "        \
    "'created_ms', 'next_ms', 'log'"

static const char *str_at(redisReply **f, int i)
{
    return f[i]->type == REDIS_REPLY_STRING ? f[i]->str : "";
}

static void add_num_or_null(cJSON *o, const char *name, const char *v)
{
    long long n;
    if (*v && util_parse_ll(v, -1, 1LL << 53, &n) == 0)
        cJSON_AddNumberToObject(o, name, (double)n);
    else
        cJSON_AddNullToObject(o, name);
}

/* A delivery as the API shows it, from NFIELDS reply strings (FIELDS order). */
static cJSON *delivery_json(redisReply **f)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", str_at(f, 0));
    cJSON_AddStringToObject(o, "webhook", str_at(f, 1));
    cJSON_AddStringToObject(o, "event", str_at(f, 2));
    cJSON_AddStringToObject(o, "task", str_at(f, 3));
    cJSON_AddStringToObject(o, "status", str_at(f, 4));
    long long att = 0;
    util_parse_ll(str_at(f, 5), 0, 1LL << 40, &att);
    cJSON_AddNumberToObject(o, "attempts", (double)att);
    add_num_or_null(o, "last_status", str_at(f, 6));
    if (*str_at(f, 7))
        cJSON_AddStringToObject(o, "last_error", str_at(f, 7));
    else
        cJSON_AddNullToObject(o, "last_error");
    add_num_or_null(o, "created_ms", str_at(f, 8));
    add_num_or_null(o, "next_ms", str_at(f, 9));
    cJSON *log = cJSON_Parse(str_at(f, 10));
    if (!cJSON_IsArray(log)) {
        cJSON_Delete(log);
        log = cJSON_CreateArray();
    }
    cJSON_AddItemToObject(o, "log", log);
    return o;
}

static const char *arg(ing_req_t *req, const char *name)
{
    return ing_req_arg(req, name);
}

/* The filter (task and status equalities, in q, which must outlive *task and *status) and
 * orderBy (newest first only) of the listing names: 1, or 0 when answered 400. */
static int list_filter(ing_req_t *req, ing_listing_query_t *q, const char **task,
                       const char **status, ing_resp_t *resp)
{
    char ferr[256];
    static const ing_listing_field_t fields[] = {{"task", "task"}, {"status", "status"}};
    static const ing_listing_field_t order[] = {{"create_time", "created_ms"}};
    const char *filter = arg(req, "filter"), *order_by = arg(req, "orderBy");
    if (ing_listing_parse(q, NULL, NULL, filter, NULL, fields, 2, order, 1, 1, 1, ferr,
                          sizeof(ferr)) < 0) {
        ing_api_error(resp, 400, ferr);
        return 0;
    }
    for (size_t i = 0; i < q->nclauses; i++) {
        if (q->clause[i].negate) {
            ing_api_error(resp, 400, "filter: deliveries filter on task and status with = only");
            return 0;
        }
        if (strcmp(q->clause[i].json_key, "task") == 0)
            *task = q->clause[i].value;
        else
            *status = q->clause[i].value;
    }
    if (order_by && *order_by && strcmp(order_by, "create_time desc") != 0) {
        ing_api_error(resp, 400, "orderBy: deliveries are listed newest first (create_time desc)");
        return 0;
    }
    return 1;
}

/* A cursor this API returned ("<created_ms>.<id>") into cs (24 bytes) and cid; 0 or -1. */
static int cursor_parse(const char *cursor, char cs[24], char cid[WHQ_ID_MAX + 1])
{
    const char *dot = strchr(cursor, '.');
    size_t sl = dot ? (size_t)(dot - cursor) : 0;
    long long n;
    if (!dot || sl == 0 || sl >= 24 || !util_id_ok(dot + 1, strlen(dot + 1), WHQ_ID_MAX, ""))
        return -1;
    memcpy(cs, cursor, sl);
    cs[sl] = '\0';
    if (util_parse_ll(cs, 0, 1LL << 53, &n) < 0)
        return -1;
    snprintf(cid, WHQ_ID_MAX + 1, "%s", dot + 1);
    return 0;
}

/* The list's arguments: limit (or pageSize), cursor (or pageToken: into cs and cid), task and
 * status (or a filter of them, parsed into q). 1, or 0 when answered 400. */
static int list_args(ing_req_t *req, ing_listing_query_t *q, long long *limit, const char **task,
                     const char **status, char cs[24], char cid[WHQ_ID_MAX + 1], ing_resp_t *resp)
{
    static const char *const statuses[] = {"pending", "delivered", "failed", "disabled"};
    const char *l = arg(req, "limit"), *cursor = arg(req, "cursor");
    *task = arg(req, "task");
    *status = arg(req, "status");
    /* The listing names too (the admin API's lists all take them): pageSize, pageToken, and a
     * filter of task/status equalities; the order is fixed, newest first. */
    l = l ? l : arg(req, "pageSize");
    cursor = cursor ? cursor : arg(req, "pageToken");
    if (!list_filter(req, q, task, status, resp))
        return 0;
    if (l && util_parse_ll(l, 1, LIMIT_MAX, limit) < 0) {
        ing_api_error(resp, 400, "limit must be an integer from 1 to " STR(LIMIT_MAX));
        return 0;
    }
    if (cursor && *cursor && cursor_parse(cursor, cs, cid) < 0) {
        ing_api_error(resp, 400, "cursor is not one this API returned");
        return 0;
    }
    if (*task && strlen(*task) > TASK_MAX) {
        ing_api_error(resp, 400, "task is too long");
        return 0;
    }
    if (*status && **status) {
        int known = 0;
        for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
            known |= strcmp(*status, statuses[i]) == 0;
        if (!known) {
            ing_api_error(resp, 400, "status must be pending, delivered, failed or disabled");
            return 0;
        }
    }
    return 1;
}

/* 200 {deliveries, next_cursor, nextPageToken?} from the list script's reply r: the
 * deliveries door's caller may see (door NULL: the operator, all). */
static void list_answer(const redisReply *r, const ing_door_t *door, ing_resp_t *resp)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "deliveries");
    for (size_t i = 2; i + ROW <= r->elements; i += ROW) {
        redisReply **f = &r->element[i];
        if (!door || ing_owner_may(door->reg, &door->who, str_at(f, NFIELDS),
                                   str_at(f, NFIELDS + 1), str_at(f, NFIELDS + 2)))
            cJSON_AddItemToArray(arr, delivery_json(f));
    }
    const char *ns = str_at(r->element, 0), *nid = str_at(r->element, 1);
    if (*ns && *nid) {
        char next[24 + WHQ_ID_MAX + 2];
        snprintf(next, sizeof(next), "%s.%s", ns, nid);
        cJSON_AddStringToObject(o, "next_cursor", next);
        cJSON_AddStringToObject(o, "nextPageToken", next);
    } else {
        cJSON_AddNullToObject(o, "next_cursor");
    }
    ing_api_body(resp, 200, o);
}

/* The owner the list script keeps ("" all): the caller's own, unless it holds tasks:all or
 * is the operator (door NULL). mine holds ING_OWNER_MAX bytes. */
static const char *owner_filter(const ing_door_t *door, char *mine)
{
    mine[0] = '\0';
    if (door &&
        !util_word_in(door->who.perms, ING_OWNER_PERM_ALL, sizeof(ING_OWNER_PERM_ALL) - 1) &&
        ing_owner_of(&door->who, mine, ING_OWNER_MAX) < 0)
        snprintf(mine, ING_OWNER_MAX, " "); /* no owner string: matches no delivery */
    return mine;
}

/* The list script's reply for argv (ARGV of whapi_list.lua), checked; NULL (logged) when
 * Redis failed. */
static redisReply *list_run(ing_req_t *req, const char *const argv[7])
{
    char err[256];
    redisReply *r = rscript_pool_run(req->ctx->kv, rscript_get("whapi_list"), 0, 7, argv, NULL, err,
                                     sizeof(err));
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 || (r->elements - 2) % ROW != 0) {
        log_event(LOG_ERROR, "webhook deliveries: list failed", "tenant", argv[0], "error",
                  r ? "unexpected reply" : err, (char *)NULL);
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    return r;
}

static void list(ing_req_t *req, const char *tenant, const ing_door_t *door, ing_resp_t *resp)
{
    long long limit = LIMIT_DEFAULT;
    const char *task = NULL, *status = NULL;
    char cs[24] = "", cid[WHQ_ID_MAX + 1] = "";
    ing_listing_query_t q; /* holds the filter's values task and status may point to */
    if (!list_args(req, &q, &limit, &task, &status, cs, cid, resp))
        return;
    char lim[16], mine[ING_OWNER_MAX];
    snprintf(lim, sizeof(lim), "%lld", limit);
    const char *argv[] = {
        tenant, lim, cs, cid, task ? task : "", status ? status : "", owner_filter(door, mine)};
    redisReply *r = list_run(req, argv);
    if (!r) {
        ing_api_error(resp, 503, "delivery store (Redis) unavailable; try again");
        return;
    }
    list_answer(r, door, resp);
    freeReplyObject(r);
}

cJSON *ing_whapi_task_deliveries(ing_req_t *req, const char *tenant, const char *task)
{
    char lim[16], cs[24] = "", cid[WHQ_ID_MAX + 1] = "";
    cJSON *arr = cJSON_CreateArray();
    snprintf(lim, sizeof(lim), "%d", LIMIT_MAX);
    for (int page = 0; page < TASK_SCAN_PAGES && cJSON_GetArraySize(arr) < LIMIT_MAX; page++) {
        const char *argv[] = {tenant, lim, cs, cid, task, "", ""};
        redisReply *r = list_run(req, argv);
        if (!r) {
            cJSON_Delete(arr);
            return NULL;
        }
        for (size_t i = 2; i + ROW <= r->elements && cJSON_GetArraySize(arr) < LIMIT_MAX; i += ROW)
            cJSON_AddItemToArray(arr, delivery_json(&r->element[i]));
        snprintf(cs, sizeof(cs), "%s", str_at(r->element, 0));
        snprintf(cid, sizeof(cid), "%s", str_at(r->element, 1));
        freeReplyObject(r);
        if (!*cs || !*cid)
            break; /* the end of the tenant's index */
    }
    return arr;
}

/* 1 when door's caller may see delivery id of tenant (owner.h; door NULL: the operator), 0
 * when not (or it is missing), MCPQ_EUNAVAIL. */
static int may_see(ing_req_t *req, const char *tenant, const ing_door_t *door, const char *id)
{
    char err[256];
    if (!door)
        return 1;
    redisReply *r =
        kv_pool_command(req->ctx->kv, err, sizeof(err),
                        "HMGET " NAMES_KEY_WH_DELIVERY "%s tenant owner server tool", id);
    if (!r)
        return MCPQ_EUNAVAIL;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
             strcmp(str_at(r->element, 0), tenant) == 0 &&
             ing_owner_may(door->reg, &door->who, str_at(r->element, 1), str_at(r->element, 2),
                           str_at(r->element, 3));
    freeReplyObject(r);
    return ok;
}

static void redeliver(ing_req_t *req, const char *tenant, const ing_door_t *door, const char *id,
                      ing_resp_t *resp)
{
    char err[256];
    int seen = may_see(req, tenant, door, id);
    if (seen <= 0) {
        if (seen < 0)
            ing_api_error(resp, 503, "delivery store (Redis) unavailable; try again");
        else
            ing_api_error(resp, 404, "no such delivery");
        return;
    }
    const char *argv[] = {tenant, id};
    redisReply *r = rscript_pool_run(req->ctx->kv, rscript_get("whapi_redeliver"), 0, 2, argv, NULL,
                                     err, sizeof(err));
    if (!r) {
        log_event(LOG_ERROR, "webhook deliveries: redeliver failed", "tenant", tenant, "error", err,
                  (char *)NULL);
        ing_api_error(resp, 503, "delivery store (Redis) unavailable; try again");
        return;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == NFIELDS) {
        log_event(LOG_INFO, "webhook redelivery queued", "tenant", tenant, "delivery", id,
                  (char *)NULL);
        ing_api_body(resp, 202, delivery_json(r->element));
    } else {
        ing_api_error(resp, 404, "no such delivery");
    }
    freeReplyObject(r);
}

void ing_whapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    static const char base[] = "/v1/webhooks/deliveries";
    static const char tail[] = "/redeliver";
    const size_t bl = sizeof(base) - 1, tl = sizeof(tail) - 1;
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    size_t ul = strlen(url);
    const char *id = NULL;
    size_t idlen = 0;
    int is_list = strcmp(url, base) == 0 || strcmp(url, "/v1/webhooks/deliveries/") == 0;
    if (!is_list) {
        if (ul <= bl + 1 + tl || strncmp(url, base, bl) != 0 || url[bl] != '/' ||
            strcmp(url + ul - tl, tail) != 0) {
            ing_api_error(resp, 404, "not found");
            return;
        }
        id = url + bl + 1;
        idlen = ul - bl - 1 - tl;
    }
    if (is_list ? !is_get : strcmp(method, "POST") != 0) {
        ing_api_error(resp, 405, "method not allowed");
        resp->allow = is_list ? "GET, HEAD" : "POST";
        return;
    }
    ing_door_t door;
    const ing_tenant_t *t = ing_api_front_door(req, &door, resp);
    if (t) {
        char idbuf[WHQ_ID_MAX + 1];
        if (is_list) {
            list(req, t->id, &door, resp);
        } else if (!util_id_ok(id, idlen, WHQ_ID_MAX, "")) {
            ing_api_error(resp, 404, "no such delivery");
        } else {
            memcpy(idbuf, id, idlen);
            idbuf[idlen] = '\0';
            redeliver(req, t->id, &door, idbuf, resp);
        }
    }
    ing_registry_unref(door.reg);
}

void ing_whapi_deliveries(ing_req_t *req, const char *tenant, const char *id, ing_resp_t *resp)
{
    if (!id)
        list(req, tenant, NULL, resp);
    else if (!util_id_ok(id, strlen(id), WHQ_ID_MAX, ""))
        ing_api_error(resp, 404, "no such delivery");
    else
        redeliver(req, tenant, NULL, id, resp);
}
