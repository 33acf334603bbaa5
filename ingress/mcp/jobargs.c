#include "jobargs.h"

#include <stdio.h>
#include <string.h>

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* An optional member that must be an object when present (null counts as absent). */
static int object_or_absent(const cJSON *v)
{
    return !v || cJSON_IsNull(v) || cJSON_IsObject(v);
}

static int check_complete(const cJSON *params, char *why, size_t why_size)
{
    const cJSON *ref = get(params, "ref"), *arg = get(params, "argument");
    const char *type = cJSON_GetStringValue(get(ref, "type"));
    if (!cJSON_IsObject(ref) || !type) {
        snprintf(why, why_size, "params.ref must be an object with a string type");
        return -1;
    }
    if (!cJSON_IsObject(arg) || !cJSON_IsString(get(arg, "name")) ||
        !cJSON_IsString(get(arg, "value"))) {
        snprintf(why, why_size, "params.argument must be an object with string name and value");
        return -1;
    }
    const cJSON *ctx = get(params, "context");
    if (!object_or_absent(ctx) || !object_or_absent(get(ctx, "arguments"))) {
        snprintf(why, why_size, "params.context.arguments must be an object");
        return -1;
    }
    return 0;
}

int ing_jobargs_check(kinds_method_t method, const cJSON *params, char *why, size_t why_size)
{
    switch (method) {
    case KINDS_METHOD_READ:
    case KINDS_METHOD_SUBSCRIBE:
    case KINDS_METHOD_UNSUBSCRIBE:
        if (!cJSON_IsString(get(params, "uri"))) {
            snprintf(why, why_size, "params.uri must be a string");
            return -1;
        }
        return 0;
    case KINDS_METHOD_PROMPT:
        if (!cJSON_IsString(get(params, "name"))) {
            snprintf(why, why_size, "params.name must be a string");
            return -1;
        }
        if (!object_or_absent(get(params, "arguments"))) {
            snprintf(why, why_size, "params.arguments must be an object");
            return -1;
        }
        return 0;
    case KINDS_METHOD_COMPLETE:
        return check_complete(params, why, why_size);
    default:
        return 0;
    }
}

/* Adds a copy of v (or an empty object when v is absent or null) to o as name. */
static int add_object(cJSON *o, const char *name, const cJSON *v)
{
    cJSON *c = v && !cJSON_IsNull(v) ? cJSON_Duplicate(v, 1) : cJSON_CreateObject();
    if (c && cJSON_AddItemToObject(o, name, c))
        return 0;
    cJSON_Delete(c);
    return -1;
}

static cJSON *copy_or_empty(const cJSON *v)
{
    return v && !cJSON_IsNull(v) ? cJSON_Duplicate(v, 1) : cJSON_CreateObject();
}

cJSON *ing_jobargs_build(kinds_method_t method, const cJSON *params, const cJSON *vars)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    switch (method) {
    case KINDS_METHOD_READ:
        ok = ok && cJSON_AddStringToObject(o, "uri", cJSON_GetStringValue(get(params, "uri"))) &&
             add_object(o, "variables", vars) == 0;
        break;
    case KINDS_METHOD_SUBSCRIBE:
    case KINDS_METHOD_UNSUBSCRIBE:
        ok = ok && cJSON_AddStringToObject(o, "uri", cJSON_GetStringValue(get(params, "uri")));
        break;
    case KINDS_METHOD_PROMPT:
        ok = ok && cJSON_AddStringToObject(o, "name", cJSON_GetStringValue(get(params, "name"))) &&
             add_object(o, "arguments", get(params, "arguments")) == 0;
        break;
    case KINDS_METHOD_COMPLETE:
        ok = ok && add_object(o, "ref", get(params, "ref")) == 0 &&
             add_object(o, "argument", get(params, "argument")) == 0;
        if (ok && object_or_absent(get(params, "context")) && get(params, "context") &&
            !cJSON_IsNull(get(params, "context")))
            ok = add_object(o, "context", get(params, "context")) == 0;
        break;
    default: /* tools/call: its arguments as they are */
        cJSON_Delete(o);
        return copy_or_empty(get(params, "arguments"));
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

char *ing_jobargs_route_key(kinds_method_t method, const char *tenant, const char *server,
                            const cJSON *args)
{
    const char *uri = cJSON_GetStringValue(get(args, "uri"));
    if ((method != KINDS_METHOD_SUBSCRIBE && method != KINDS_METHOD_UNSUBSCRIBE) || !uri)
        return NULL;
    /* A JSON array: unambiguous whatever the three strings hold. */
    cJSON *a = cJSON_CreateArray();
    char *key = NULL;
    if (a && cJSON_AddItemToArray(a, cJSON_CreateString(tenant)) &&
        cJSON_AddItemToArray(a, cJSON_CreateString(server)) &&
        cJSON_AddItemToArray(a, cJSON_CreateString(uri))) {
        char *s = cJSON_PrintUnformatted(a);
        key = s ? strdup(s) : NULL;
        cJSON_free(s);
    }
    cJSON_Delete(a);
    return key;
}
