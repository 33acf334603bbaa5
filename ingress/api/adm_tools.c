/*
 * adm_tools.c - /admin/v1/tenants/{t}/tools[/{name}] (adm.h): a tool is created with its first
 * version (POST .../tools {"name", "server"?, "version", "publish"?}) and disappears with its
 * last one, so there is no DELETE of a tool; :rename while no version is published. Also the
 * listing of a tenant's tools the system server shares (admin.h, ing_admin_list_tools).
 */
#include "adm.h"

#include "api.h"
#include "kinds.h"
#include "log.h"
#include "sch.h"

#include <stdio.h>
#include <string.h>

/* The tool name rule (config.schema.json: 1-50 characters of [A-Za-z0-9_.-], starting
 * with a letter); 1 when name follows it, else answers 400. */
static int name_valid(adm_t *a, const char *name)
{
    char msg[512];
    cJSON *schema = cJSON_CreateObject(), *v = cJSON_CreateString(name);
    cJSON_AddStringToObject(schema, "$ref", "config.schema.json#/$defs/tool/properties/name");
    int rc = sch_validate(schema, v, "$.name", msg, sizeof(msg));
    cJSON_Delete(schema);
    cJSON_Delete(v);
    if (rc == 0)
        return 1;
    ing_adm_fail(a, 400,
                 "%s (tool names are 1-50 characters of [A-Za-z0-9_.-], starting with a letter)",
                 msg);
    return 0;
}

cJSON *ing_adm_tools_list(const char *tenant, const cJSON *tool_docs, const char *page_size,
                          const char *page_token, const char *filter, const char *order_by,
                          char *err, size_t err_size)
{
    static const ing_listing_field_t fields[] = {{"name", "name"},
                                                 {"kind", "kind"},
                                                 {"server", "server"},
                                                 {"published", "published"},
                                                 {"create_time", "createTime"},
                                                 {"update_time", "updateTime"}};
    cJSON *items = cJSON_CreateArray();
    const cJSON *d;
    cJSON_ArrayForEach(d, tool_docs)
    {
        const char *t = str_of(d, "tenant");
        if (t && strcmp(t, tenant) == 0 && str_of(d, "name") &&
            cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(d, "versions")))
            cJSON_AddItemToArray(items, ing_adm_show_tool(d));
    }
    cJSON *o = ing_adm_list_page(items, fields, sizeof(fields) / sizeof(fields[0]), page_size,
                                 page_token, filter, order_by, "tools", err, err_size);
    cJSON_Delete(items);
    return o;
}

int ing_adm_tools_collection(adm_t *a, const cJSON *t)
{
    const char *tenant = str_of(t, "id");
    char prefix[300], field[600];
    if (strcmp(a->method, "GET") == 0) {
        char err[512];
        snprintf(prefix, sizeof(prefix), "tool:%s:", tenant);
        cJSON *docs = docs_with_prefix(a, prefix);
        cJSON *o = ing_adm_tools_list(tenant, docs, qarg(a, "pageSize"), qarg(a, "pageToken"),
                                      qarg(a, "filter"), qarg(a, "orderBy"), err, sizeof(err));
        cJSON_Delete(docs);
        if (!o)
            return ing_adm_fail(a, 400, "%s", err);
        ing_api_body(a->resp, 200, o);
        return DONE;
    }
    static const char *const allowed[] = {"name",    "kind",   "server", "version",
                                          "publish", "access", NULL};
    int publish = 0;
    if (!ing_adm_only_members(a, a->body, allowed) ||
        !ing_adm_versions_publish_flag(a, a->body, &publish))
        return DONE;
    const char *name = str_of(a->body, "name");
    const char *server = str_of(a->body, "server");
    const cJSON *kj = cJSON_GetObjectItemCaseSensitive(a->body, "kind");
    int kind = kj && !cJSON_IsString(kj) ? -1 : kinds_parse(kj ? kj->valuestring : NULL);
    if (kind < 0)
        return ing_adm_fail(a, 400,
                            "$.kind: must be one of tool, resource, resource_template, prompt");
    const cJSON *vb = cJSON_GetObjectItemCaseSensitive(a->body, "version");
    if (!server)
        server = str_of(t, "default_server");
    if (!name)
        return ing_adm_fail(a, 400,
                            "$.name: required (1-50 characters of [A-Za-z0-9_.-], starting with "
                            "a letter)");
    if (!cJSON_IsObject(vb))
        return ing_adm_fail(a, 400, "$.version: required, an object (the tool's first version)");
    if (cJSON_HasObjectItem(vb, "from_version"))
        return ing_adm_fail(a, 400, "$.version.from_version: a new tool has no other version");
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    if (ing_regstore_get(&a->st, field))
        return ing_adm_fail(a, 409, "$.name: tenant \"%s\" has a tool \"%s\" already", tenant,
                            name);
    char sfield[600];
    ing_regstore_field_server(sfield, sizeof(sfield), tenant, server ? server : "");
    if (ing_adm_is_system(server))
        return ing_adm_system_refused(a, "$.server");
    if (!server || !ing_regstore_get(&a->st, sfield))
        return ing_adm_fail(a, 400, "$.server: tenant \"%s\" has no server \"%s\"", tenant,
                            server ? server : "");
    cJSON *v = ing_adm_versions_from_body(a, NULL, kind, vb);
    if (!v)
        return DONE;
    ing_regstore_touch(v, a->now);
    cJSON *tool = cJSON_CreateObject();
    if (kind != KINDS_TOOL)
        cJSON_AddStringToObject(tool, "kind", kinds_name(kind));
    cJSON_AddStringToObject(tool, "tenant", tenant);
    cJSON_AddStringToObject(tool, "server", server);
    cJSON_AddStringToObject(tool, "name", name);
    if (publish)
        cJSON_AddStringToObject(tool, "published", str_of(v, "version"));
    else
        cJSON_AddNullToObject(tool, "published");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(tool, "versions"), v);
    copy_member(tool, a->body, "access");
    ing_regstore_touch(tool, a->now);
    if (!name_valid(a, name)) {
        cJSON_Delete(tool);
        return DONE;
    }
    ing_regstore_put(&a->st, field, tool);
    a->check_tenant = tenant;
    log_event(LOG_INFO, "admin: tool created", "tenant", tenant, "tool", name, "version",
              str_of(v, "version"), "published", publish ? "true" : "false", (char *)NULL);
    return ing_adm_answer(a, 201, ing_adm_show_tool(tool));
}

/* PATCH of a tool: its "access" rule only (null removes it), checked against If-Match when
 * given; the tenant's validation (cfg.c) checks the keys and apps it names. */
static int patch_access(adm_t *a, const char *tenant, const char *field, const cJSON *tool,
                        cJSON *shown)
{
    static const char *const allowed[] = {"access", NULL};
    int ok = ing_adm_precondition(a, shown);
    cJSON_Delete(shown);
    if (!ok || !ing_adm_only_members(a, a->body, allowed))
        return DONE;
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(a->body, "access");
    if (acc && !cJSON_IsNull(acc) && !ing_adm_body_valid_at(a, acc, "access", "$.access"))
        return DONE;
    cJSON *copy = cJSON_Duplicate(tool, 1);
    merge_patch(copy, a->body);
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    return ing_adm_answer(a, 200, ing_adm_show_tool(copy));
}

int ing_adm_tools_one(adm_t *a, const cJSON *t, const char *name)
{
    const char *tenant = str_of(t, "id");
    char field[600];
    ing_regstore_field_tool(field, sizeof(field), tenant, name);
    cJSON *tool = ing_regstore_get(&a->st, field);
    if (!tool)
        return ing_adm_fail(a, 404, "tenant \"%s\" has no tool \"%s\"", tenant, name);
    if (a->verb && strcmp(a->verb, "rename") != 0)
        return ing_adm_fail(a, 404, "no such admin resource (tools take :rename)");
    cJSON *shown = ing_adm_show_tool(tool);
    if (strcmp(a->method, "GET") == 0 && !a->verb)
        return ing_adm_answer(a, 200, shown);
    if (!a->verb && strcmp(a->method, "PATCH") == 0)
        return patch_access(a, tenant, field, tool, shown);
    if (!a->verb || strcmp(a->method, "POST") != 0) {
        cJSON_Delete(shown);
        a->resp->allow = a->verb ? "POST" : "GET, PATCH";
        return ing_adm_fail(a, 405,
                            "a tool is changed through its versions (PATCH takes its access "
                            "rule); rename with POST .../tools/%s:rename",
                            name);
    }
    int ok = ing_adm_precondition(a, shown);
    cJSON_Delete(shown);
    if (!ok)
        return DONE;
    static const char *const allowed[] = {"name", NULL};
    const char *to = str_of(a->body, "name");
    if (!ing_adm_only_members(a, a->body, allowed))
        return DONE;
    if (!to)
        return ing_adm_fail(a, 400, "$.name: required, the new name");
    if (str_of(tool, "published"))
        return ing_adm_fail(
            a, 409,
            "tool \"%s\" has a published version (%s): offline every version before "
            "renaming",
            name, str_of(tool, "published"));
    char nfield[600];
    ing_regstore_field_tool(nfield, sizeof(nfield), tenant, to);
    if (strcmp(to, name) != 0 && ing_regstore_get(&a->st, nfield))
        return ing_adm_fail(a, 409, "$.name: tenant \"%s\" has a tool \"%s\" already", tenant, to);
    if (!name_valid(a, to))
        return DONE;
    cJSON *copy = cJSON_Duplicate(tool, 1);
    cJSON_ReplaceItemInObjectCaseSensitive(copy, "name", cJSON_CreateString(to));
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, NULL);
    ing_regstore_put(&a->st, nfield, copy);
    a->check_tenant = tenant;
    log_event(LOG_INFO, "admin: tool renamed", "tenant", tenant, "tool", name, "to", to,
              (char *)NULL);
    return ing_adm_answer(a, 200, ing_adm_show_tool(copy));
}
