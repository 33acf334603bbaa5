#include "mcpobj.h"

#include "access.h"
#include "err.h"
#include "kinds.h"
#include "log.h"
#include "toolcall.h"
#include "util.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest string a substitution may produce, and the most completion values answered
 * (2025-06-18 server/utilities/completion.mdx: "Maximum 100 items per response"). */
#define EXPANDED_MAX ((size_t)4 << 20)
#define COMPLETE_MAX 100

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void invalid(ing_resp_t *resp, const rpc_msg_t *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void invalid(ing_resp_t *resp, const rpc_msg_t *msg, const char *fmt, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INVALID_PARAMS, buf, NULL);
}

/* obj when the caller may see it (access.h), else NULL: a hidden object, or one its token
 * lacks a scope for, is answered as one that does not exist. */
static const ing_tool_t *visible(const ing_mcp_t *m, const ing_tool_t *obj)
{
    return obj && ing_access_check(m->reg, m->who, m->server->name, obj->name, NULL, 0) ==
                       ING_ACCESS_OK
               ? obj
               : NULL;
}

/* A resources/read, prompts/get or completion/complete of an object whose version has an
 * "executor" is a job (docs/protocol.md "Resources, prompts and completion from a worker"):
 * published and answered through the tools/call pipeline (toolcall.h, ing_toolcall_object),
 * which builds the job's arguments from the request's params and vars (a template's matched
 * variables, consumed here; NULL otherwise). 1 when parked, else 0. */
static int job_path(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp, const ing_tool_t *obj,
                    cJSON *vars)
{
    int parked = ing_toolcall_object(m, msg, resp, obj, vars);
    cJSON_Delete(vars);
    return parked;
}

/* s with every open+NAME+close whose NAME is a key of values replaced by its (string) value;
 * other text as it is. A new string, or NULL (MCPQ_ETOOBIG past EXPANDED_MAX, MCPQ_ENOMEM in
 * *rc). */
static char *expand(const char *s, const char *open, const char *close, const cJSON *values,
                    int *rc)
{
    util_buf_t b;
    size_t lo = strlen(open), lc = strlen(close);
    util_buf_init(&b, EXPANDED_MAX);
    *rc = 0;
    while (*s && *rc == 0) {
        const char *at = strstr(s, open), *end = at ? strstr(at + lo, close) : NULL;
        if (!at || !end) {
            *rc = util_buf_append(&b, s, strlen(s));
            break;
        }
        char name[72];
        size_t nl = (size_t)(end - at - (ptrdiff_t)lo);
        const cJSON *v = NULL;
        if (nl > 0 && nl < sizeof(name) && !memchr(at + lo, '{', nl)) {
            memcpy(name, at + lo, nl);
            name[nl] = '\0';
            v = cJSON_GetObjectItemCaseSensitive(values, name);
        }
        if (cJSON_IsString(v)) {
            *rc = util_buf_append(&b, s, (size_t)(at - s));
            if (*rc == 0)
                *rc = util_buf_append(&b, v->valuestring, strlen(v->valuestring));
            s = end + lc;
        } else { /* not a name of values: keep the opening and go on after it */
            *rc = util_buf_append(&b, s, (size_t)(at - s) + lo);
            s = at + lo;
        }
    }
    if (*rc < 0) {
        util_buf_cleanup(&b);
        return NULL;
    }
    char *out = b.data ? b.data : strdup(""); /* nothing appended: nothing allocated */
    if (!out)
        *rc = MCPQ_ENOMEM;
    return out;
}

/* Every string of o (in place) expanded with {{name}} from values. 0 or expand's error. */
static int expand_all(cJSON *o, const cJSON *values)
{
    int rc = 0;
    for (cJSON *c = o->child; c && rc == 0; c = c->next) {
        if (cJSON_IsString(c)) {
            char *x = expand(c->valuestring, "{{", "}}", values, &rc);
            if (x && !cJSON_SetValuestring(c, x))
                rc = MCPQ_ENOMEM;
            free(x);
        } else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            rc = expand_all(c, values);
        }
    }
    return rc;
}

/* ---- resources/read ---- */

static int do_read(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg->params, "uri");
    if (!cJSON_IsString(u) || !u->valuestring[0] || strlen(u->valuestring) > KINDS_URI_MAX) {
        invalid(resp, msg, "params.uri must be a non-empty string of at most %d bytes",
                KINDS_URI_MAX);
        return 0;
    }
    const char *uri = u->valuestring;
    cJSON *vars = NULL;
    const ing_tool_t *obj = visible(m, ing_registry_resource(m->server, uri));
    if (!obj)
        obj = visible(m, ing_registry_template_match(m->server, uri, &vars));
    if (!obj) {
        cJSON_Delete(vars);
        ing_mcpreq_resp_not_found(m, resp, msg->id, uri);
        return 0;
    }
    const cJSON *ver = obj->version;
    if (cJSON_HasObjectItem(ver, "executor"))
        return job_path(m, msg, resp, obj, vars);
    cJSON *r = cJSON_CreateObject(), *c = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "contents"), c);
    cJSON_AddStringToObject(c, "uri", uri);
    if (str_of(ver, "mimeType"))
        cJSON_AddStringToObject(c, "mimeType", str_of(ver, "mimeType"));
    int rc = 0;
    if (str_of(ver, "blob")) {
        cJSON_AddStringToObject(c, "blob", str_of(ver, "blob"));
    } else {
        char *text = vars ? expand(str_of(ver, "text"), "{", "}", vars, &rc) : NULL;
        cJSON_AddStringToObject(c, "text", vars ? (text ? text : "") : str_of(ver, "text"));
        free(text);
    }
    cJSON_Delete(vars);
    if (rc < 0) {
        cJSON_Delete(r);
        invalid(resp, msg, "the resource's text with the uri's values is larger than %zu bytes",
                EXPANDED_MAX);
        return 0;
    }
    if (m->modern) { /* 2026-07-28 server/utilities/caching.mdx: a cacheable result */
        const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(ver, "ttl_ms");
        const char *scope = str_of(ver, "cache_scope");
        cJSON_AddNumberToObject(r, "ttlMs", cJSON_IsNumber(ttl) ? ttl->valuedouble : 0);
        cJSON_AddStringToObject(r, "cacheScope", scope ? scope : "private");
    }
    ing_mcpreq_resp_result_obj(m, resp, msg->id, r);
    return 0;
}

/* ---- prompts/get ---- */

/* The prompt's arguments with their values from given (checked: declared, strings, the
 * required ones present; "" for a missing optional one) into a new object, or NULL with resp
 * filled. */
static cJSON *prompt_values(const rpc_msg_t *msg, ing_resp_t *resp, const ing_tool_t *obj,
                            const cJSON *given)
{
    const cJSON *decl = cJSON_GetObjectItemCaseSensitive(obj->version, "arguments"), *a;
    cJSON *values = cJSON_CreateObject();
    cJSON_ArrayForEach(a, given)
    {
        const cJSON *d = NULL;
        cJSON_ArrayForEach(d, decl)
        {
            if (str_of(d, "name") && strcmp(str_of(d, "name"), a->string) == 0)
                break;
        }
        if (!d || !cJSON_IsString(a)) {
            invalid(resp, msg,
                    !d ? "params.arguments.%.64s: prompt \"%s\" has no such argument"
                       : "params.arguments.%.64s: expected a string (prompt \"%s\")",
                    a->string, obj->name);
            cJSON_Delete(values);
            return NULL;
        }
    }
    cJSON_ArrayForEach(a, decl)
    {
        const char *name = str_of(a, "name");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(given, name);
        if (!v && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "required"))) {
            invalid(resp, msg, "Missing required argument \"%s\" of prompt \"%s\"", name,
                    obj->name);
            cJSON_Delete(values);
            return NULL;
        }
        cJSON_AddStringToObject(values, name, v ? v->valuestring : "");
    }
    return values;
}

static int do_get(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const char *name = str_of(msg->params, "name");
    const cJSON *given = cJSON_GetObjectItemCaseSensitive(msg->params, "arguments");
    if (!name) {
        invalid(resp, msg, "params.name must be a string, the prompt's name");
        return 0;
    }
    if (given && !cJSON_IsObject(given) && !cJSON_IsNull(given)) {
        invalid(resp, msg, "params.arguments must be an object of strings");
        return 0;
    }
    const ing_tool_t *obj = visible(m, ing_registry_object(m->server, ING_KIND_PROMPT, name));
    if (!obj) {
        invalid(resp, msg, "Unknown prompt: %.120s", name);
        return 0;
    }
    cJSON *values = prompt_values(msg, resp, obj, cJSON_IsObject(given) ? given : NULL);
    if (!values)
        return 0;
    if (cJSON_HasObjectItem(obj->version, "executor")) {
        cJSON_Delete(values);
        return job_path(m, msg, resp, obj, NULL);
    }
    cJSON *r = cJSON_CreateObject();
    const char *desc = str_of(obj->version, "description");
    if (desc)
        cJSON_AddStringToObject(r, "description", desc);
    cJSON *msgs = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(obj->version, "messages"), 1);
    cJSON_AddItemToObject(r, "messages", msgs ? msgs : cJSON_CreateArray());
    int rc = msgs ? expand_all(msgs, values) : 0;
    cJSON_Delete(values);
    if (rc < 0) {
        cJSON_Delete(r);
        invalid(resp, msg,
                "a message of prompt \"%s\" with these arguments is larger than %zu "
                "bytes",
                obj->name, EXPANDED_MAX);
        return 0;
    }
    ing_mcpreq_resp_result_obj(m, resp, msg->id, r);
    return 0;
}

/* ---- completion/complete ---- */

/* The object a CompleteRequest's ref names (ref/prompt by name, ref/resource by uriTemplate),
 * among those the caller may see, or NULL with resp filled. */
static const ing_tool_t *complete_ref(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp,
                                      const cJSON *ref)
{
    const char *type = str_of(ref, "type");
    if (type && strcmp(type, "ref/prompt") == 0 && str_of(ref, "name")) {
        const char *name = str_of(ref, "name");
        const ing_tool_t *obj = visible(m, ing_registry_object(m->server, ING_KIND_PROMPT, name));
        if (!obj)
            invalid(resp, msg, "Unknown prompt: %.120s", name);
        return obj;
    }
    if (type && strcmp(type, "ref/resource") == 0 && str_of(ref, "uri")) {
        const char *uri = str_of(ref, "uri");
        for (size_t i = 0; i < m->server->ntemplates; i++)
            if (strcmp(m->server->templates[i]->uri_template, uri) == 0 &&
                visible(m, m->server->templates[i]))
                return m->server->templates[i];
        invalid(resp, msg, "Unknown resource template: %.200s", uri);
        return NULL;
    }
    invalid(resp, msg,
            "params.ref must be {\"type\": \"ref/prompt\", \"name\"} or {\"type\": "
            "\"ref/resource\", \"uri\"}");
    return NULL;
}

static int do_complete(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(msg->params, "ref");
    const cJSON *arg = cJSON_GetObjectItemCaseSensitive(msg->params, "argument");
    const char *aname = str_of(arg, "name"), *prefix = str_of(arg, "value");
    if (!aname || !prefix) {
        invalid(resp, msg, "params.argument must be {\"name\": string, \"value\": string}");
        return 0;
    }
    const ing_tool_t *obj = complete_ref(m, msg, resp, ref);
    if (!obj)
        return 0;
    /* an argument named in the static completions is answered from them, any other of an
     * executor-backed object by a job (docs/config-file.md "Kinds") */
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj->version, "completions"), aname);
    if (!all && cJSON_HasObjectItem(obj->version, "executor"))
        return job_path(m, msg, resp, obj, NULL);
    cJSON *r = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(r, "completion");
    cJSON *values = cJSON_AddArrayToObject(c, "values");
    size_t total = 0, lp = strlen(prefix);
    const cJSON *v;
    cJSON_ArrayForEach(v, all)
    {
        if (!cJSON_IsString(v) || strncmp(v->valuestring, prefix, lp) != 0)
            continue;
        if (total++ < COMPLETE_MAX)
            cJSON_AddItemToArray(values, cJSON_CreateString(v->valuestring));
    }
    cJSON_AddNumberToObject(c, "total", (double)total);
    cJSON_AddBoolToObject(c, "hasMore", total > COMPLETE_MAX);
    ing_mcpreq_resp_result_obj(m, resp, msg->id, r);
    return 0;
}

int ing_mcpobj_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp)
{
    if (msg->params && !cJSON_IsObject(msg->params)) {
        invalid(resp, msg, "params must be an object");
        return 0;
    }
    if (strcmp(msg->method, "resources/read") == 0)
        return do_read(m, msg, resp);
    if (strcmp(msg->method, "prompts/get") == 0)
        return do_get(m, msg, resp);
    return do_complete(m, msg, resp);
}
