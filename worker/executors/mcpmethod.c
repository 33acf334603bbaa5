#include "mcpmethod.h"

#include "err.h"

#include <stdlib.h>
#include <string.h>

/* Where a 2026-07-28 result names its server (the schema's ResultMetaObject). */
#define MCPM_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"

/* The lists of a catalog: request, result member (the same in the catalog) and capability. */
static const struct {
    const char *method, *member, *capability;
} lists[] = {
    {"tools/list", "tools", "tools"},
    {"resources/list", "resources", "resources"},
    {"resources/templates/list", "resourceTemplates", "resources"},
    {"prompts/list", "prompts", "prompts"},
};
#define NLISTS ((int)(sizeof(lists) / sizeof(lists[0])))

static const char *exec_string(const wrk_envelope_t *env, const char *name)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env->executor, name));
    return s && s[0] ? s : NULL;
}

static const cJSON *arg(const wrk_envelope_t *env, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(env->arguments, name);
}

static int ref_is_prompt(const wrk_envelope_t *env)
{
    const cJSON *ref = arg(env, "ref");
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ref, "type"));
    return type && strcmp(type, "ref/prompt") == 0;
}

const char *wrk_mcpmethod_config_error(const wrk_envelope_t *env)
{
    switch (env->method_id) {
    case KINDS_METHOD_CALL:
        return exec_string(env, "tool") ? NULL : "executor.tool must name the upstream tool";
    case KINDS_METHOD_PROMPT:
        return exec_string(env, "prompt") ? NULL : "executor.prompt must name the upstream prompt";
    case KINDS_METHOD_COMPLETE:
        return !ref_is_prompt(env) || exec_string(env, "prompt")
                   ? NULL
                   : "executor.prompt must name the upstream prompt";
    default:
        return NULL;
    }
}

/* Copies env's argument name (when present) into params. */
static int copy_arg(cJSON *params, const wrk_envelope_t *env, const char *name)
{
    const cJSON *v = arg(env, name);
    if (!v)
        return 0;
    cJSON *copy = cJSON_Duplicate(v, 1);
    if (copy && cJSON_AddItemToObject(params, name, copy))
        return 0;
    cJSON_Delete(copy);
    return MCPQ_ENOMEM;
}

int wrk_mcpmethod_request(const wrk_envelope_t *env, wrk_mcpmethod_req_t *req)
{
    cJSON *p = cJSON_CreateObject();
    int rc = p ? 0 : MCPQ_ENOMEM;
    req->method = env->method;
    req->name = NULL;
    switch (env->method_id) {
    case KINDS_METHOD_CALL:
        req->name = exec_string(env, "tool");
        if (rc == 0 && !cJSON_AddStringToObject(p, "name", req->name ? req->name : ""))
            rc = MCPQ_ENOMEM;
        if (rc == 0 && !env->arguments && !cJSON_AddObjectToObject(p, "arguments"))
            rc = MCPQ_ENOMEM;
        if (rc == 0 && env->arguments) {
            cJSON *copy = cJSON_Duplicate(env->arguments, 1);
            if (!copy || !cJSON_AddItemToObject(p, "arguments", copy)) {
                cJSON_Delete(copy);
                rc = MCPQ_ENOMEM;
            }
        }
        break;
    case KINDS_METHOD_READ:
    case KINDS_METHOD_SUBSCRIBE:
    case KINDS_METHOD_UNSUBSCRIBE:
        if (rc == 0)
            rc = copy_arg(p, env, "uri");
        if (env->method_id == KINDS_METHOD_READ)
            req->name = cJSON_GetStringValue(arg(env, "uri"));
        break;
    case KINDS_METHOD_PROMPT:
        req->name = exec_string(env, "prompt");
        if (rc == 0 && !cJSON_AddStringToObject(p, "name", req->name ? req->name : ""))
            rc = MCPQ_ENOMEM;
        if (rc == 0)
            rc = copy_arg(p, env, "arguments");
        break;
    case KINDS_METHOD_COMPLETE:
        if (rc == 0)
            rc = copy_arg(p, env, "ref");
        if (rc == 0 && ref_is_prompt(env)) {
            cJSON *ref = cJSON_GetObjectItemCaseSensitive(p, "ref");
            cJSON_DeleteItemFromObjectCaseSensitive(ref, "name");
            if (!cJSON_AddStringToObject(ref, "name", exec_string(env, "prompt")))
                rc = MCPQ_ENOMEM;
        }
        if (rc == 0)
            rc = copy_arg(p, env, "argument");
        if (rc == 0)
            rc = copy_arg(p, env, "context");
        break;
    case KINDS_METHOD_CATALOG:
        break; /* wrk_mcpmethod_catalog_request */
    }
    if (rc < 0) {
        cJSON_Delete(p);
        p = NULL;
    }
    req->params = p;
    return rc;
}

static int add_copy_or_empty(cJSON *o, const char *name, const cJSON *v)
{
    cJSON *copy = cJSON_IsObject(v) ? cJSON_Duplicate(v, 1) : cJSON_CreateObject();
    if (copy && cJSON_AddItemToObject(o, name, copy))
        return 0;
    cJSON_Delete(copy);
    return MCPQ_ENOMEM;
}

cJSON *wrk_mcpmethod_info(const cJSON *result, const char *version)
{
    const cJSON *si = cJSON_GetObjectItemCaseSensitive(result, "serverInfo");
    if (!si)
        si = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(result, "_meta"),
                                              MCPM_META_SERVER_INFO);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "protocolVersion", version ? version : "") ||
        add_copy_or_empty(o, "serverInfo", si) < 0 ||
        add_copy_or_empty(o, "capabilities",
                          cJSON_GetObjectItemCaseSensitive(result, "capabilities")) < 0) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *wrk_mcpmethod_result(kinds_method_t method, const cJSON *result)
{
    if (!cJSON_IsObject(result))
        return NULL;
    const cJSON *c;
    switch (method) {
    case KINDS_METHOD_READ:
        if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(result, "contents")))
            return NULL;
        break;
    case KINDS_METHOD_PROMPT:
        if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(result, "messages")))
            return NULL;
        break;
    case KINDS_METHOD_COMPLETE:
        c = cJSON_GetObjectItemCaseSensitive(result, "completion");
        if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(c, "values")))
            return NULL;
        break;
    case KINDS_METHOD_SUBSCRIBE:
    case KINDS_METHOD_UNSUBSCRIBE:
        return cJSON_CreateObject();
    default:
        return NULL;
    }
    cJSON *copy = cJSON_Duplicate(result, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "resultType");
    return copy;
}

/* 1 when info's capabilities announce list i. */
static int announced(const cJSON *info, int i)
{
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(info, "capabilities");
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(caps, lists[i].capability);
    return cap && !cJSON_IsNull(cap) && !cJSON_IsFalse(cap);
}

/* Moves to the next list announced after cat->list: 1, or 0 when none is left. */
static int next_list(wrk_mcpmethod_catalog_t *cat)
{
    free(cat->cursor);
    cat->cursor = NULL;
    cat->pages = 0;
    while (++cat->list < NLISTS)
        if (announced(cat->result, cat->list))
            return 1;
    return 0;
}

int wrk_mcpmethod_catalog_start(wrk_mcpmethod_catalog_t *cat, const cJSON *info)
{
    memset(cat, 0, sizeof(*cat));
    cat->result = info ? cJSON_Duplicate(info, 1) : wrk_mcpmethod_info(NULL, NULL);
    if (!cat->result)
        return MCPQ_ENOMEM;
    cat->list = -1;
    return next_list(cat);
}

int wrk_mcpmethod_catalog_request(const wrk_mcpmethod_catalog_t *cat, wrk_mcpmethod_req_t *req)
{
    req->method = lists[cat->list].method;
    req->name = NULL;
    req->params = cJSON_CreateObject();
    if (!req->params ||
        (cat->cursor && !cJSON_AddStringToObject(req->params, "cursor", cat->cursor))) {
        cJSON_Delete(req->params);
        req->params = NULL;
        return MCPQ_ENOMEM;
    }
    return 0;
}

int wrk_mcpmethod_catalog_page(wrk_mcpmethod_catalog_t *cat, const cJSON *result)
{
    const char *member = lists[cat->list].member;
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(result, member);
    if (!cJSON_IsArray(items))
        return MCPQ_EINVAL;
    cJSON *all = cJSON_GetObjectItemCaseSensitive(cat->result, member);
    if (!all && !(all = cJSON_AddArrayToObject(cat->result, member)))
        return MCPQ_ENOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, items)
    {
        cJSON *copy = cJSON_Duplicate(it, 1);
        if (!copy)
            return MCPQ_ENOMEM;
        cJSON_AddItemToArray(all, copy);
    }
    cat->pages++;
    const char *next = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "nextCursor"));
    if (next && next[0] && cat->pages < WRK_MCPMETHOD_MAX_PAGES) {
        char *c = strdup(next);
        if (!c)
            return MCPQ_ENOMEM;
        free(cat->cursor);
        cat->cursor = c;
        return 1;
    }
    return next_list(cat);
}

cJSON *wrk_mcpmethod_catalog_take(wrk_mcpmethod_catalog_t *cat)
{
    cJSON *r = cat->result;
    cat->result = NULL;
    return r;
}

void wrk_mcpmethod_catalog_cleanup(wrk_mcpmethod_catalog_t *cat)
{
    cJSON_Delete(cat->result);
    free(cat->cursor);
    memset(cat, 0, sizeof(*cat));
}
