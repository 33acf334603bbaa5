#include "subscribe.h"

#include "access.h"
#include "err.h"
#include "kinds.h"
#include "log.h"
#include "rsub.h"
#include "toolcall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URI_MAX KINDS_URI_MAX /* a resource uri's longest (the config schema's bound) */

/* The object serving uri on the request's server that the caller may watch: a published
 * resource, or a template matching it (*vars its variables, the caller frees them), that its
 * access rules let it see; NULL when none. */
static const ing_tool_t *watched(const ing_mcp_t *m, const char *uri, cJSON **vars)
{
    const ing_tool_t *obj = ing_registry_resource(m->server, uri);
    *vars = NULL;
    if (!obj)
        obj = ing_registry_template_match(m->server, uri, vars);
    if (obj &&
        ing_access_check(m->reg, m->who, m->server->name, obj->name, NULL, 0) != ING_ACCESS_OK)
        obj = NULL;
    if (!obj) {
        cJSON_Delete(*vars);
        *vars = NULL;
    }
    return obj;
}

static int watchable(const ing_mcp_t *m, const char *uri)
{
    cJSON *vars = NULL;
    const ing_tool_t *obj = watched(m, uri, &vars);
    cJSON_Delete(vars);
    return obj != NULL;
}

int ing_subscribe_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp, int on)
{
    const ing_ctx_t *ctx = m->req->ctx;
    const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, "uri"));
    if (!uri || !*uri || strlen(uri) > URI_MAX) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS,
                              "params.uri must be a resource uri (a string of 1 to 2048 bytes)",
                              NULL);
        return 0;
    }
    if (!m->has_session) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_REQUEST,
                              "resources/subscribe needs a session (the Mcp-Session-Id of "
                              "initialize): updates are sent on the session's GET stream",
                              NULL);
        return 0;
    }
    cJSON *vars = NULL;
    const ing_tool_t *obj = watched(m, uri, &vars);
    if (on && !obj) {
        ing_mcpreq_resp_not_found(m, resp, msg->id, uri); /* -32002: legacy only */
        return 0;
    }
    long long max = ctx->set->max_resource_subscriptions;
    int rc = on ? ing_rsub_add(ctx->kv, m->session.id, m->server->name, uri,
                               ctx->set->session_ttl_s, max)
                : ing_rsub_remove(ctx->kv, m->session.id, m->server->name, uri);
    if (rc == MCPQ_ETOOBIG) {
        char buf[200];
        snprintf(buf, sizeof(buf),
                 "a session may subscribe to at most %lld resources (MCPQ_MAX_RESOURCE_"
                 "SUBSCRIPTIONS); unsubscribe from one first",
                 max);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, buf, NULL);
    } else if (rc < 0) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR,
                              "subscription store (Redis) unavailable; try again", NULL);
    } else if (on && obj && cJSON_GetObjectItemCaseSensitive(obj->version, "executor")) {
        /* A worker serves it: the job tells the worker (which subscribes upstream and
         * publishes the upstream's updates); its answer is the client's. An unsubscribe sends
         * no job (subscribe.h). */
        int parked = ing_toolcall_object(m, msg, resp, obj, vars);
        cJSON_Delete(vars);
        return parked;
    } else {
        ing_mcpreq_resp_json(resp, 200, rpc_result_str(msg->id, "{}"));
    }
    cJSON_Delete(vars);
    return 0;
}

int ing_subscribe_listen_uris(ing_mcp_t *m, const cJSON *filter, const char ***uris, size_t *n,
                              char *why, size_t why_size)
{
    const cJSON *subs = cJSON_GetObjectItemCaseSensitive(filter, "resourceSubscriptions");
    long long max = m->req->ctx->set->max_resource_subscriptions;
    *uris = NULL;
    *n = 0;
    if (!subs)
        return 0;
    int count = cJSON_GetArraySize(subs);
    if (!cJSON_IsArray(subs) || count > max) {
        snprintf(why, why_size,
                 "params.notifications.resourceSubscriptions must be an array of at most %lld "
                 "resource uris",
                 max);
        return -1;
    }
    const cJSON *u;
    cJSON_ArrayForEach(u, subs)
    {
        if (!cJSON_IsString(u) || !*u->valuestring || strlen(u->valuestring) > URI_MAX) {
            snprintf(why, why_size,
                     "params.notifications.resourceSubscriptions must hold uris (strings of 1 "
                     "to 2048 bytes)");
            return -1;
        }
    }
    *uris = count ? calloc((size_t)count, sizeof(**uris)) : NULL;
    if (count && !*uris) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    cJSON_ArrayForEach(u, subs)
    {
        int dup = 0;
        for (size_t i = 0; i < *n && !dup; i++)
            dup = strcmp((*uris)[i], u->valuestring) == 0;
        if (!dup && watchable(m, u->valuestring))
            (*uris)[(*n)++] = u->valuestring;
    }
    return 0;
}

size_t ing_subscribe_listen_jobs(ing_mcp_t *m, const rpc_msg_t *msg, const char *const *uris,
                                 size_t n)
{
    size_t sent = 0;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(msg->params, "_meta");
    for (size_t i = 0; i < n; i++) {
        cJSON *vars = NULL;
        const ing_tool_t *obj = watched(m, uris[i], &vars);
        cJSON *params = obj && cJSON_GetObjectItemCaseSensitive(obj->version, "executor")
                            ? cJSON_CreateObject()
                            : NULL;
        if (params) {
            /* The job a legacy resources/subscribe of the uri sends, with the stream's
             * _meta (its trace). */
            char why[256];
            rpc_msg_t sub = {.kind = RPC_REQUEST,
                             .id = msg->id,
                             .method = "resources/subscribe",
                             .params = params};
            cJSON_AddStringToObject(params, "uri", uris[i]);
            if (meta)
                cJSON_AddItemReferenceToObject(params, "_meta", (cJSON *)meta);
            if (ing_toolcall_detached(m, &sub, obj, vars, why, sizeof(why)) == 0)
                sent++;
            else
                log_event(LOG_WARN,
                          "subscriptions/listen: the worker serving a resource was not told to "
                          "subscribe (its updates will not come)",
                          "tenant", obj->tenant, "server", obj->server, "uri", uris[i], "error",
                          why, (char *)NULL);
        }
        cJSON_Delete(params);
        cJSON_Delete(vars);
    }
    return sent;
}
