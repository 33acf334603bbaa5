/*
 * adm_tenants.c - /admin/v1/tenants[/{t}] (adm.h): creating a tenant creates its default
 * server; deleting it deletes its servers and tools; a robot belongs to one tenant.
 */
#include "adm.h"

#include "cfgsecret.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

/* 1 when no tenant but id declares a robot of robots (the tenant's "robots"), else answers 409
 * naming it: a robot belongs to one tenant. */
static int robots_free(adm_t *a, const char *id, const cJSON *robots)
{
    const cJSON *r;
    int i = 0;
    cJSON_ArrayForEach(r, robots)
    {
        const char *owner =
            cJSON_IsString(r) ? ing_regstore_robot_owner(&a->st, r->valuestring, id) : NULL;
        if (owner) {
            ing_adm_fail(a, 409,
                         "$.robots[%d]: robot \"%s\" is already declared by tenant \"%s\" (a robot "
                         "belongs to one tenant)",
                         i, r->valuestring, owner);
            return 0;
        }
        i++;
    }
    return 1;
}

/* 1 when the body's "oauth" may be stored (stored: the tenant's document, or NULL), else
 * answers 400: the introspection secret is literal ("(hidden)" keeps the stored one); cfg.c
 * checks the rest when the tenant is validated, issuers_agree what it shares with others. */
static int oauth_ok(adm_t *a, const cJSON *stored)
{
    cJSON *oauth = cJSON_GetObjectItemCaseSensitive(a->body, "oauth");
    cJSON *intro = cJSON_GetObjectItemCaseSensitive(oauth, "introspection");
    if (!cJSON_IsObject(oauth))
        return 1;
    if (cJSON_IsObject(intro) && !ing_adm_no_env_refs(a, intro, "$.oauth.introspection"))
        return 0;
    const char *secret = str_of(intro, "client_secret");
    if (secret && strcmp(secret, CFG_HIDDEN) == 0) {
        const char *kept =
            str_of(cJSON_GetObjectItemCaseSensitive(
                       cJSON_GetObjectItemCaseSensitive(stored, "oauth"), "introspection"),
                   "client_secret");
        if (!kept) {
            ing_adm_fail(a, 400,
                         "$.oauth.introspection.client_secret: \"" CFG_HIDDEN "\" stands for the "
                         "stored value, but none is stored: give the value");
            return 0;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(intro, "client_secret", cJSON_CreateString(kept));
    }
    return 1;
}

/* 1 when tenant t (its document as it would be stored) agrees with every other stored tenant
 * on the issuers they share (regstore.h, ing_regstore_issuers_check), else answers 409 naming
 * the field, as for a robot. */
static int issuers_agree(adm_t *a, const cJSON *t)
{
    char err[1024];
    if (ing_regstore_issuers_check(&a->st, t, "$", err, sizeof(err)) == 0)
        return 1;
    ing_adm_fail(a, 409, "%s", err);
    return 0;
}

static int create_server_doc(adm_t *a, const char *tenant, const char *name, const char *desc)
{
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, name);
    if (ing_regstore_get(&a->st, field))
        return 0;
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "tenant", tenant);
    cJSON_AddStringToObject(s, "name", name);
    if (desc)
        cJSON_AddStringToObject(s, "description", desc);
    ing_regstore_touch(s, a->now);
    return ing_regstore_put(&a->st, field, s);
}

int ing_adm_tenants_collection(adm_t *a)
{
    static const ing_listing_field_t fields[] = {{"name", "id"}, {"create_time", "createTime"}};
    if (strcmp(a->method, "GET") == 0) {
        cJSON *items = cJSON_CreateArray(), *docs = docs_with_prefix(a, "tenant:"), *d;
        cJSON_ArrayForEach(d, docs)
        {
            cJSON_AddItemToArray(items, ing_adm_show_tenant(d));
        }
        cJSON_Delete(docs);
        return ing_adm_answer_list(a, items, fields, 2, "tenants");
    }
    static const char *const allowed[] = {"id",     "default_server", "rate_limits", "robots",
                                          "quotas", "oauth",          NULL};
    if (!ing_adm_only_members(a, a->body, allowed) || !ing_adm_body_valid(a, a->body, "tenant"))
        return DONE;
    const char *id = str_of(a->body, "id");
    if (ing_adm_is_system(str_of(a->body, "default_server")))
        return ing_adm_system_refused(a, "$.default_server");
    if (tenant_doc(a, id))
        return ing_adm_fail(a, 409, "tenant \"%s\" exists already", id);
    if (!oauth_ok(a, NULL))
        return DONE;
    if (!robots_free(a, id, cJSON_GetObjectItemCaseSensitive(a->body, "robots")))
        return DONE;
    cJSON *t = cJSON_Duplicate(a->body, 1);
    if (!issuers_agree(a, t)) {
        cJSON_Delete(t);
        return DONE;
    }
    if (!str_of(t, "default_server"))
        cJSON_AddStringToObject(t, "default_server", "default");
    ing_regstore_touch(t, a->now);
    if (create_server_doc(a, id, str_of(t, "default_server"), NULL) < 0 ||
        ing_regstore_put(&a->st, a->tenant_field, t) < 0)
        return ing_adm_fail(a, 500, "out of memory");
    a->check_tenant = id;
    return ing_adm_answer(a, 201, ing_adm_show_tenant(t));
}

int ing_adm_tenants_one(adm_t *a, const char *id)
{
    cJSON *t = tenant_doc(a, id);
    if (!t)
        return ing_adm_fail(a, 404, "no tenant \"%s\"", id);
    int rc;
    if (!ing_adm_read_or_check(a, ing_adm_show_tenant(t), &rc))
        return rc;
    if (strcmp(a->method, "DELETE") == 0) {
        char sp[300], tp[300];
        snprintf(sp, sizeof(sp), "server:%s:", id);
        snprintf(tp, sizeof(tp), "tool:%s:", id);
        cJSON *gone = cJSON_CreateArray();
        for (const cJSON *d = a->st.docs->child; d; d = d->next)
            if (strncmp(d->string, sp, strlen(sp)) == 0 || strncmp(d->string, tp, strlen(tp)) == 0)
                cJSON_AddItemToArray(gone, cJSON_CreateString(d->string));
        cJSON *g;
        cJSON_ArrayForEach(g, gone)
        {
            ing_regstore_put(&a->st, g->valuestring, NULL);
        }
        cJSON_Delete(gone);
        ing_regstore_put(&a->st, a->tenant_field, NULL);
        log_event(LOG_INFO, "admin: tenant deleted", "tenant", id, (char *)NULL);
        return ing_adm_no_content(a);
    }
    static const char *const allowed[] = {"default_server", "rate_limits", "robots",
                                          "quotas",         "oauth",       NULL};
    if (ing_adm_is_system(str_of(a->body, "default_server")))
        return ing_adm_system_refused(a, "$.default_server");
    if (!ing_adm_only_members(a, a->body, allowed) ||
        !robots_free(a, id, cJSON_GetObjectItemCaseSensitive(a->body, "robots")) || !oauth_ok(a, t))
        return DONE;
    cJSON *copy = ing_adm_stage_tenant(a, t);
    merge_patch(copy, a->body);
    if (!issuers_agree(a, copy)) /* (nothing is committed after a refusal) */
        return DONE;
    if (!str_of(copy, "default_server"))
        cJSON_AddStringToObject(copy, "default_server", "default");
    ing_regstore_touch(copy, a->now);
    return ing_adm_answer(a, 200, ing_adm_show_tenant(copy));
}
