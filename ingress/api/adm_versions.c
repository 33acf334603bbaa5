/*
 * adm_versions.c - /admin/v1/tenants/{t}/tools/{name}/versions[/{v}] (adm.h): the version
 * rules (docs/api.md, "Administration"): a version may start from another one
 * (from_version); a published version cannot be edited or deleted (offline it first, or add a
 * version), so a published version is exactly what callers get; a tool disappears with its
 * last version.
 */
#include "adm.h"
#include "cfg.h"

#include "kinds.h"
#include "log.h"
#include "sch.h"

#include <stdio.h>
#include <string.h>

/* Parameter names: letters, digits and underscores, starting with a letter and not
 * ending with an underscore. Checks inputSchema.properties and required. */
static int param_names_ok(adm_t *a, const cJSON *schema)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    for (const cJSON *p = props ? props->child : NULL; p; p = p->next) {
        const char *n = p->string;
        size_t len = strlen(n), i = 0;
        int ok = len > 0 && ((n[0] >= 'A' && n[0] <= 'Z') || (n[0] >= 'a' && n[0] <= 'z')) &&
                 n[len - 1] != '_';
        for (; ok && i < len; i++)
            ok = (n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= 'a' && n[i] <= 'z') ||
                 (n[i] >= '0' && n[i] <= '9') || n[i] == '_';
        if (!ok) {
            ing_adm_fail(
                a, 400,
                "$.inputSchema.properties: parameter name \"%s\" must be letters, digits and "
                "underscores, start with a letter and not end with an underscore",
                n);
            return 0;
        }
    }
    return 1;
}

/* A version body of an object of kind (already merged with its from_version) checked for
 * adding or editing: the kind's version schema (config.schema.json), and a tool's schemas. */
static int version_ok(adm_t *a, int kind, const cJSON *v)
{
    static const char *const defs[KINDS_COUNT] = {"version", "resourceVersion", "templateVersion",
                                                  "promptVersion"};
    char msg[768];
    if (cfg_check_mcp_env(cJSON_GetObjectItemCaseSensitive(v, "executor"), "$.executor", msg,
                          sizeof(msg)) < 0) {
        ing_adm_fail(a, 400, "%s", msg);
        return 0;
    }
    if (!ing_adm_no_env_refs(a, cJSON_GetObjectItemCaseSensitive(v, "executor"), "$.executor") ||
        !ing_adm_body_valid(a, v, defs[kind]))
        return 0;
    if (kind != KINDS_TOOL)
        return 1; /* the rest of its checks: cfg.c, when the tenant is checked (cfgkinds.h) */
    static const char *const schemas[] = {"inputSchema", "outputSchema"};
    for (int k = 0; k < 2; k++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, schemas[k]);
        char root[32];
        snprintf(root, sizeof(root), "$.%s", schemas[k]);
        if (s && sch_schema_check(s, root, msg, sizeof(msg)) != 0) {
            ing_adm_fail(a, 400, "%s", msg);
            return 0;
        }
    }
    return param_names_ok(a, cJSON_GetObjectItemCaseSensitive(v, "inputSchema"));
}

/* A version from a body: {version, from_version?, <version members>}; from_version's members
 * are the starting point (a new version starts from another version's information). */
cJSON *ing_adm_versions_from_body(adm_t *a, const cJSON *tool, int kind, const cJSON *body)
{
    if (tool)
        kind = kinds_of(tool);
    if (kind < 0 || kind >= KINDS_COUNT) {
        ing_adm_fail(a, 400, "$.kind: must be one of tool, resource, resource_template, prompt");
        return NULL;
    }
    const char *from = str_of(body, "from_version");
    cJSON *v;
    if (from) {
        const cJSON *src = tool ? ing_adm_find_version(tool, from) : NULL;
        if (!src) {
            ing_adm_fail(a, 400, "$.from_version: the tool has no version \"%s\"", from);
            return NULL;
        }
        v = cJSON_Duplicate(src, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(v, "createTime");
        cJSON_DeleteItemFromObjectCaseSensitive(v, "updateTime");
    } else {
        v = cJSON_CreateObject();
    }
    for (const cJSON *m = body ? body->child : NULL; m; m = m->next) {
        if (strcmp(m->string, "from_version") == 0 || strcmp(m->string, "publish") == 0)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(v, m->string);
        if (!cJSON_IsNull(m))
            cJSON_AddItemToObject(v, m->string, cJSON_Duplicate(m, 1));
    }
    if (kind == KINDS_TOOL && !str_of(v, "mode"))
        cJSON_AddStringToObject(v, "mode", "sync");
    if (!version_ok(a, kind, v)) {
        cJSON_Delete(v);
        return NULL;
    }
    return v;
}

int ing_adm_versions_publish_flag(adm_t *a, const cJSON *body, int *publish)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(body, "publish");
    if (p && !cJSON_IsBool(p)) {
        ing_adm_fail(a, 400, "$.publish: expected a boolean");
        return 0;
    }
    *publish = cJSON_IsTrue(p);
    return 1;
}

int ing_adm_versions_collection(adm_t *a, const cJSON *t, const char *name)
{
    static const ing_listing_field_t fields[] = {
        {"name", "version"}, {"published", "published"}, {"create_time", "createTime"}};
    const char *tenant = str_of(t, "id");
    char field[600];
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    cJSON *tool = ing_regstore_get(&a->st, field);
    if (!tool)
        return ing_adm_fail(a, 404, "tenant \"%s\" has no tool \"%s\"", tenant, name);
    if (strcmp(a->method, "GET") == 0) {
        cJSON *items = cJSON_CreateArray(), *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tool, "versions"))
        {
            cJSON_AddItemToArray(items, ing_adm_show_version(tool, e));
        }
        return ing_adm_answer_list(a, items, fields, 3, "versions");
    }
    int publish = 0;
    if (!ing_adm_versions_publish_flag(a, a->body, &publish))
        return DONE;
    cJSON *v = ing_adm_versions_from_body(a, tool, KINDS_TOOL, a->body);
    if (!v)
        return DONE;
    if (ing_adm_find_version(tool, str_of(v, "version"))) {
        int rc = ing_adm_fail(a, 409, "$.version: tool \"%s\" has a version \"%s\" already", name,
                              str_of(v, "version"));
        cJSON_Delete(v);
        return rc;
    }
    ing_regstore_touch(v, a->now);
    cJSON *copy = cJSON_Duplicate(tool, 1);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(copy, "versions"), v);
    if (publish)
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "published",
                                               cJSON_CreateString(str_of(v, "version")));
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    log_event(LOG_INFO, "admin: version added", "tenant", tenant, "tool", name, "version",
              str_of(v, "version"), "published", publish ? "true" : "false", (char *)NULL);
    return ing_adm_answer(a, 201, ing_adm_show_version(copy, v));
}

/* DELETE of version ver of copy (the tool document's copy, consumed): 409 while published;
 * the tool goes with its last version. */
static int version_delete(adm_t *a, const char *tenant, const char *field, cJSON *copy,
                          const char *name, const char *ver, int published)
{
    cJSON *cvs = cJSON_GetObjectItemCaseSensitive(copy, "versions");
    cJSON *cv = (cJSON *)ing_adm_find_version(copy, ver);
    if (published) {
        cJSON_Delete(copy);
        return ing_adm_fail(a, 409, "version \"%s\" of tool \"%s\" is published: offline it first",
                            ver, name);
    }
    cJSON_Delete(cJSON_DetachItemViaPointer(cvs, cv));
    log_event(LOG_INFO, "admin: version deleted", "tenant", tenant, "tool", name, "version", ver,
              (char *)NULL);
    if (cJSON_GetArraySize(cvs) == 0) { /* a tool disappears with its last version */
        cJSON_Delete(copy);
        ing_regstore_put(&a->st, field, NULL);
    } else {
        ing_regstore_touch(copy, a->now);
        ing_regstore_put(&a->st, field, copy);
    }
    a->check_tenant = tenant;
    return ing_adm_no_content(a);
}

/* PATCH of version cv (in the document's copy, of an object of kind): 1 when edited, 0 when
 * answered. */
static int version_edit(adm_t *a, int kind, cJSON *cv, const char *name, const char *ver,
                        int published)
{
    if (published) {
        ing_adm_fail(a, 409,
                     "version \"%s\" of tool \"%s\" is published and cannot be edited: offline "
                     "it or add a new version",
                     ver, name);
        return 0;
    }
    if (cJSON_HasObjectItem(a->body, "version") || cJSON_HasObjectItem(a->body, "publish") ||
        cJSON_HasObjectItem(a->body, "from_version")) {
        ing_adm_fail(a, 400, "$: version, from_version and publish cannot be edited");
        return 0;
    }
    merge_patch(cv, a->body);
    cJSON *check = cJSON_Duplicate(cv, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(check, "createTime");
    cJSON_DeleteItemFromObjectCaseSensitive(check, "updateTime");
    int ok = version_ok(a, kind, check);
    cJSON_Delete(check);
    if (!ok)
        return 0;
    ing_regstore_touch(cv, a->now);
    return 1;
}

/* :publish, :offline or PATCH of version ver in copy (the tool document's copy): what to log,
 * or NULL when answered. */
static const char *version_change(adm_t *a, cJSON *copy, const char *name, const char *ver,
                                  int published)
{
    if (a->verb && strcmp(a->verb, "publish") == 0) {
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "published", cJSON_CreateString(ver));
        return "admin: version published";
    }
    if (a->verb && strcmp(a->verb, "offline") == 0) {
        if (!published) {
            ing_adm_fail(a, 409, "version \"%s\" of tool \"%s\" is not published", ver, name);
            return NULL;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(copy, "published", cJSON_CreateNull());
        return "admin: version taken offline";
    }
    if (strcmp(a->method, "PATCH") == 0) {
        cJSON *cv = (cJSON *)ing_adm_find_version(copy, ver);
        return version_edit(a, kinds_of(copy), cv, name, ver, published) ? "admin: version edited"
                                                                         : NULL;
    }
    a->resp->allow = "GET, PATCH, DELETE";
    ing_adm_fail(a, 405, "use GET, PATCH, DELETE, or POST with :publish or :offline");
    return NULL;
}

/* The routing (admin.c) lets a verb through only with POST, and only :publish or :offline. */
int ing_adm_versions_one(adm_t *a, const cJSON *t, const char *name, const char *ver)
{
    const char *tenant = str_of(t, "id");
    char field[600];
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    cJSON *tool = ing_regstore_get(&a->st, field);
    if (!tool)
        return ing_adm_fail(a, 404, "tenant \"%s\" has no tool \"%s\"", tenant, name);
    const cJSON *v = ing_adm_find_version(tool, ver);
    if (!v)
        return ing_adm_fail(a, 404, "tool \"%s\" has no version \"%s\"", name, ver);
    int rc;
    if (!ing_adm_read_or_check(a, ing_adm_show_version(tool, v), &rc))
        return rc;
    int published = ing_adm_is_published(tool, ver);
    cJSON *copy = cJSON_Duplicate(tool, 1);
    if (!a->verb && strcmp(a->method, "DELETE") == 0)
        return version_delete(a, tenant, field, copy, name, ver, published);
    const char *what = version_change(a, copy, name, ver, published);
    if (!what) {
        cJSON_Delete(copy);
        return DONE;
    }
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    log_event(LOG_INFO, what, "tenant", tenant, "tool", name, "version", ver, (char *)NULL);
    return ing_adm_answer(a, 200, ing_adm_show_version(copy, ing_adm_find_version(copy, ver)));
}
