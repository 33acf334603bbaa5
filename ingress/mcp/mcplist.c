#include "mcplist.h"

#include "access.h"
#include "era.h"
#include "err.h"
#include "util.h"
#include "version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The member of each kind's list result: ListToolsResult, ListResourcesResult,
 * ListResourceTemplatesResult, ListPromptsResult. */
static const char *const list_key[] = {"tools", "resources", "resourceTemplates", "prompts"};

/* Cursors are "c<offset>"; anything else is -32602. */
static int parse_cursor(const cJSON *params, size_t n, size_t *offset)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(params, "cursor");
    *offset = 0;
    if (!c || cJSON_IsNull(c))
        return 0;
    if (!cJSON_IsString(c) || c->valuestring[0] != 'c')
        return MCPQ_EINVAL;
    long long v;
    if (util_parse_ll(c->valuestring + 1, 1, (long long)n - 1, &v) < 0)
        return MCPQ_EINVAL;
    *offset = (size_t)v;
    return 0;
}

/* The objects of kind of srv: *n of them. */
static ing_tool_t *const *objects_of(const ing_server_t *srv, int kind, size_t *n)
{
    switch (kind) {
    case ING_KIND_RESOURCE:
        *n = srv->nresources;
        return srv->resources;
    case ING_KIND_TEMPLATE:
        *n = srv->ntemplates;
        return srv->templates;
    case ING_KIND_PROMPT:
        *n = srv->nprompts;
        return srv->prompts;
    default:
        *n = srv->ntools;
        return srv->tools;
    }
}

void ing_mcplist_answer(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp, int kind)
{
    const ing_server_t *srv = m->server;
    size_t nobj, nshown = 0, off;
    ing_tool_t *const *objs = objects_of(srv, kind, &nobj);
    const ing_tool_t **shown = malloc((nobj + 1) * sizeof(*shown));
    if (!shown) {
        ing_mcpreq_resp_error(resp, 500, msg->id, RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    for (size_t i = 0; i < nobj; i++)
        if (ing_access_check(m->reg, m->who, srv->name, objs[i]->name, NULL, 0) == ING_ACCESS_OK)
            shown[nshown++] = objs[i];
    if (parse_cursor(msg->params, nshown, &off) < 0) {
        free(shown);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, "invalid cursor", NULL);
        return;
    }
    size_t page = (size_t)m->req->ctx->set->page_size;
    size_t end = off + page < nshown ? off + page : nshown;
    util_buf_t b;
    util_buf_init(&b, (size_t)64 << 20);
    char idbuf[320], head[64];
    rpc_id_str(msg->id, idbuf, sizeof(idbuf));
    int rc = util_buf_append(&b, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
    rc |= util_buf_append(&b, idbuf, strlen(idbuf));
    int hn = snprintf(head, sizeof(head), ",\"result\":{\"%s\":[", list_key[kind]);
    rc |= util_buf_append(&b, head, (size_t)hn);
    for (size_t i = off; i < end && rc == 0; i++) {
        if (i > off)
            rc |= util_buf_append(&b, ",", 1);
        rc |= util_buf_append(&b, shown[i]->list_json, strlen(shown[i]->list_json));
    }
    rc |= util_buf_append(&b, "]", 1);
    if (end < nshown) {
        char cur[48];
        int n = snprintf(cur, sizeof(cur), ",\"nextCursor\":\"c%zu\"", end);
        rc |= util_buf_append(&b, cur, (size_t)n);
    }
    free(shown);
    if (m->modern) {
        char tail[240];
        int n = snprintf(tail, sizeof(tail),
                         ",\"resultType\":\"complete\",\"ttlMs\":%lld,\"cacheScope\":\"%s\","
                         "\"_meta\":{\"" ING_META_SERVER_INFO "\":{\"name\":\"mcpq\","
                         "\"version\":\"%s\"}}",
                         m->req->ctx->set->list_ttl_ms, ING_LIST_CACHE_SCOPE, version_get());
        rc |= util_buf_append(&b, tail, (size_t)n);
    }
    rc |= util_buf_append(&b, "}}", 2);
    if (rc) {
        util_buf_cleanup(&b);
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "list page too large", NULL);
        return;
    }
    ing_mcpreq_resp_json(resp, 200, b.data); /* ownership of b.data moves to resp */
}
