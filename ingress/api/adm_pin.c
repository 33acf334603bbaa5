/*
 * adm_pin.c - approving federated tool definitions (adm.h; pin.h, docs/security.md "Pinned
 * tool definitions"):
 *
 *   POST /admin/v1/tenants/{t}/tools/{name}:approve   {"sha256"?, "approvedBy"?}
 *   POST /admin/v1/tenants/{t}/servers/{s}:approve    {"approvedBy"?}
 *
 * Approval records the SHA-256 of the tool's published definition (and the definition, for the
 * next review's diff) in the tool document's "pinned" and lifts its quarantine, through the
 * admin API's compare-and-set like every other write. "sha256" is the hash the operator
 * reviewed (GET .../tools/{name} shows it under pin.pending): when the definition changed
 * since, nothing is approved (409). The server's :approve approves every published tool of
 * that server as it is now (those approved as they are already are left alone; the answer
 * lists the ones it approved). Only tools of a federated server take an approval (409 otherwise):
 * the others are defined by the operator in the first place.
 */
#include "adm.h"

#include "err.h"
#include "log.h"
#include "pin.h"

#include <stdio.h>
#include <string.h>

#define BY_MAX 200

/* The server document of tool (NULL when absent). */
static const cJSON *server_of(adm_t *a, const char *tenant, const char *server)
{
    char field[600];
    ing_regstore_field_server(field, sizeof(field), tenant, server ? server : "");
    return ing_regstore_get(&a->st, field);
}

/* The body's approvedBy ("operator" when absent) into by; 0 when answered 400. */
static int approved_by(adm_t *a, const char *const *allowed, char *by, size_t size)
{
    if (!ing_adm_only_members(a, a->body, allowed))
        return 0;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(a->body, "approvedBy");
    if (b && (!cJSON_IsString(b) || !b->valuestring[0] || strlen(b->valuestring) > BY_MAX)) {
        ing_adm_fail(a, 400, "$.approvedBy: a string of 1 to %d characters (who approves)", BY_MAX);
        return 0;
    }
    snprintf(by, size, "%s", b ? b->valuestring : "operator");
    return 1;
}

static void log_approved(const char *tenant, const char *name, const cJSON *tool, const char *by)
{
    log_event(LOG_INFO, "admin: tool definition approved", "tenant", tenant, "tool", name, "sha256",
              cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                  cJSON_GetObjectItemCaseSensitive(tool, "pinned"), "sha256")),
              "by", by, (char *)NULL);
}

int ing_adm_pin_approve_tool(adm_t *a, const char *tenant, const char *field, const cJSON *tool)
{
    static const char *const allowed[] = {"sha256", "approvedBy", NULL};
    char by[BY_MAX + 1];
    const char *name = str_of(tool, "name");
    if (!ing_adm_allow(a, "POST") || !approved_by(a, allowed, by, sizeof(by)))
        return DONE;
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(a->body, "sha256");
    if (sha && !cJSON_IsString(sha))
        return ing_adm_fail(a, 400, "$.sha256: a string, the hash of the definition reviewed");
    if (!ing_pin_is_tool(tool))
        return ing_adm_fail(a, 409, "\"%s\" is a %s: only tool definitions are pinned", name,
                            str_of(tool, "kind"));
    const cJSON *srv = server_of(a, tenant, str_of(tool, "server"));
    if (!cJSON_GetObjectItemCaseSensitive(srv, "federate"))
        return ing_adm_fail(a, 409,
                            "tool \"%s\" is not federated (server \"%s\" has no federate): "
                            "only an upstream's tool definitions are pinned",
                            name, str_of(tool, "server") ? str_of(tool, "server") : "");
    cJSON *copy = cJSON_Duplicate(tool, 1);
    int rc = copy ? ing_pin_approve(copy, by, a->now, sha ? sha->valuestring : NULL) : MCPQ_ENOMEM;
    if (rc != 0) {
        cJSON_Delete(copy);
        if (rc == 1)
            return ing_adm_fail(a, 409,
                                "$.sha256: the definition of tool \"%s\" is no longer the one "
                                "reviewed (%s); review it again (GET .../tools/%s)",
                                name, sha->valuestring, name);
        if (rc == MCPQ_EINVAL)
            return ing_adm_fail(a, 409, "tool \"%s\" has no published version to approve", name);
        return ing_adm_fail(a, 500, "out of memory");
    }
    ing_regstore_touch(copy, a->now);
    ing_regstore_put(&a->st, field, copy);
    a->check_tenant = tenant;
    log_approved(tenant, name, copy, by);
    return ing_adm_answer(a, 200, ing_adm_show_tool(copy));
}

int ing_adm_pin_approve_server(adm_t *a, const char *tenant, const cJSON *server)
{
    static const char *const allowed[] = {"approvedBy", NULL};
    char by[BY_MAX + 1], prefix[300], field[600];
    const char *sname = str_of(server, "name");
    if (!ing_adm_allow(a, "POST") || !approved_by(a, allowed, by, sizeof(by)))
        return DONE;
    if (!cJSON_GetObjectItemCaseSensitive(server, "federate"))
        return ing_adm_fail(a, 409,
                            "server \"%s\" is not federated: only an upstream's tool definitions "
                            "are pinned",
                            sname);
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "tenant", tenant);
    cJSON_AddStringToObject(out, "server", sname);
    cJSON *approved = cJSON_AddArrayToObject(out, "approved");
    snprintf(prefix, sizeof(prefix), "tool:%s:", tenant);
    cJSON *docs = docs_with_prefix(a, prefix), *d;
    cJSON_ArrayForEach(d, docs)
    {
        const char *ts = str_of(d, "server"), *name = str_of(d, "name");
        cJSON *copy = ts && name && strcmp(ts, sname) == 0 ? cJSON_Duplicate(d, 1) : NULL;
        if (!copy)
            continue;
        const char *had = str_of(cJSON_GetObjectItemCaseSensitive(d, "pinned"), "sha256");
        /* nothing published, or approved as it is already: nothing to write */
        if (ing_pin_approve(copy, by, a->now, NULL) != 0 ||
            (had && !ing_pin_quarantined(d) &&
             strcmp(had, str_of(cJSON_GetObjectItemCaseSensitive(copy, "pinned"), "sha256")) ==
                 0)) {
            cJSON_Delete(copy);
            continue;
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", str_of(copy, "name"));
        cJSON_AddStringToObject(e, "sha256",
                                str_of(cJSON_GetObjectItemCaseSensitive(copy, "pinned"), "sha256"));
        cJSON_AddItemToArray(approved, e);
        log_approved(tenant, str_of(copy, "name"), copy, by);
        ing_regstore_field_tool(field, sizeof(field), tenant, name);
        ing_regstore_touch(copy, a->now);
        ing_regstore_put(&a->st, field, copy);
    }
    cJSON_Delete(docs);
    a->check_tenant = tenant;
    return ing_adm_answer(a, 200, out);
}
