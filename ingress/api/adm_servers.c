/*
 * adm_servers.c - /admin/v1/tenants/{t}/servers[/{name}] (adm.h): "system" is built in and
 * cannot be changed; a server is deleted only once it has no tools and is not the tenant's
 * default_server.
 */
#include "adm.h"

#include <stdio.h>
#include <string.h>

static int tools_of_server(adm_t *a, const char *tenant, const char *server)
{
    char tp[300];
    int n = 0;
    snprintf(tp, sizeof(tp), "tool:%s:", tenant);
    for (const cJSON *d = a->st.docs->child; d; d = d->next)
        if (strncmp(d->string, tp, strlen(tp)) == 0 && str_of(d, "server") &&
            strcmp(str_of(d, "server"), server) == 0)
            n++;
    return n;
}

int ing_adm_servers_collection(adm_t *a, const char *tenant)
{
    static const ing_listing_field_t fields[] = {{"name", "name"}, {"create_time", "createTime"}};
    char prefix[300];
    if (strcmp(a->method, "GET") == 0) {
        snprintf(prefix, sizeof(prefix), "server:%s:", tenant);
        cJSON *items = cJSON_CreateArray(), *docs = docs_with_prefix(a, prefix), *d;
        cJSON_ArrayForEach(d, docs)
        {
            cJSON_AddItemToArray(items, ing_adm_show_server(d));
        }
        cJSON_Delete(docs);
        return ing_adm_answer_list(a, items, fields, 2, "servers");
    }
    static const char *const allowed[] = {"name", "description", "federate", "access", NULL};
    if (!ing_adm_only_members(a, a->body, allowed))
        return DONE;
    cJSON *s = cJSON_Duplicate(a->body, 1);
    cJSON_AddStringToObject(s, "tenant", tenant);
    const char *name = str_of(s, "name");
    if (!ing_adm_body_valid(a, s, "server")) {
        cJSON_Delete(s);
        return DONE;
    }
    if (ing_adm_is_system(name)) {
        cJSON_Delete(s);
        return ing_adm_system_refused(a, "$.name");
    }
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, name);
    if (ing_regstore_get(&a->st, field)) {
        ing_adm_fail(a, 409, "$.name: server \"%s\" exists already", name);
        cJSON_Delete(s);
        return DONE;
    }
    ing_regstore_touch(s, a->now);
    ing_regstore_put(&a->st, field, s);
    a->check_tenant = tenant;
    return ing_adm_answer(a, 201, ing_adm_show_server(s));
}

int ing_adm_servers_one(adm_t *a, const cJSON *t, const char *name)
{
    const char *tenant = str_of(t, "id");
    if (ing_adm_is_system(name) && strcmp(a->method, "GET") != 0)
        return ing_adm_system_refused(a, NULL);
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, name);
    cJSON *s = ing_regstore_get(&a->st, field);
    if (!s)
        return ing_adm_fail(a, 404, "tenant \"%s\" has no server \"%s\"", tenant, name);
    int rc;
    if (!ing_adm_read_or_check(a, ing_adm_show_server(s), &rc))
        return rc;
    if (strcmp(a->method, "DELETE") == 0) {
        int n = tools_of_server(a, tenant, name);
        if (n)
            return ing_adm_fail(
                a, 409, "server \"%s\" still has %d tool(s); delete their versions first", name, n);
        if (str_of(t, "default_server") && strcmp(str_of(t, "default_server"), name) == 0)
            return ing_adm_fail(
                a, 409, "server \"%s\" is the tenant's default_server; change it first", name);
        ing_regstore_put(&a->st, field, NULL);
        return ing_adm_no_content(a);
    }
    static const char *const allowed[] = {"description", "federate", "access", NULL};
    if (!ing_adm_only_members(a, a->body, allowed))
        return DONE;
    cJSON *copy = cJSON_Duplicate(s, 1);
    merge_patch(copy, a->body);
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    return ing_adm_answer(a, 200, ing_adm_show_server(copy));
}

int ing_adm_servers_verb(adm_t *a, const cJSON *t, const char *name)
{
    const char *tenant = str_of(t, "id");
    if (strcmp(a->verb, "approve") != 0)
        return ing_adm_fail(a, 404, "no such admin resource (servers take :approve)");
    if (ing_adm_is_system(name))
        return ing_adm_system_refused(a, NULL);
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, name);
    const cJSON *s = ing_regstore_get(&a->st, field);
    if (!s)
        return ing_adm_fail(a, 404, "tenant \"%s\" has no server \"%s\"", tenant, name);
    return ing_adm_pin_approve_server(a, tenant, s);
}
