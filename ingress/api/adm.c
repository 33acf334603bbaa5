/*
 * adm.c - what every admin resource shares (adm.h): error and object answers, lists with
 * paging, If-Match preconditions and the checks of request bodies.
 */
#include "adm.h"

#include "api.h"
#include "sch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_DEFAULT 50
#define PAGE_MAX 1000

int ing_adm_fail(adm_t *a, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    free(a->resp->body);
    a->resp->body = NULL;
    ing_api_error(a->resp, status, msg);
    return DONE;
}

int ing_adm_system_refused(adm_t *a, const char *path)
{
    return ing_adm_fail(a, 403, "%s%s\"system\" is the built-in server and cannot be changed",
                        path ? path : "", path ? ": " : "");
}

int ing_adm_is_system(const char *name)
{
    return name && strcmp(name, "system") == 0;
}

/* Answers one object (consumed) with its etag as the ETag header. */
int ing_adm_answer(adm_t *a, int status, cJSON *o)
{
    const char *e = str_of(o, "etag");
    if (e)
        snprintf(a->resp->etag, sizeof(a->resp->etag), "%s", e);
    free(a->resp->body);
    a->resp->body = NULL;
    ing_api_body(a->resp, status, o);
    return status < 300 && strcmp(a->method, "GET") != 0 ? COMMIT : DONE;
}

int ing_adm_no_content(adm_t *a)
{
    free(a->resp->body);
    a->resp->body = NULL;
    a->resp->status = 204;
    return COMMIT;
}

/* 412 unless the request's If-Match (absent, "*", or a list of quoted or weak etags) names
 * shown's etag. 1 when the write may go on. */
int ing_adm_precondition(adm_t *a, const cJSON *shown)
{
    const char *im = a->if_match, *cur = str_of(shown, "etag");
    if (!im || !cur)
        return 1;
    for (const char *p = im; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (*p == '*')
            return 1;
        int q = *p == '"';
        p += q;
        size_t n = strcspn(p, q ? "\"" : ", ");
        if (n == strlen(cur) && strncmp(p, cur, n) == 0)
            return 1;
        p += n;
        p += *p == '"';
    }
    ing_adm_fail(a, 412, "If-Match: the object changed since it was read (current etag \"%s\")",
                 cur);
    return 0;
}

/* A GET (without a verb) is answered with shown (consumed); any other request is checked
 * against shown's etag (precondition). 1 when the write may go on; 0 when answered, *rc then
 * being what the handler returns. */
int ing_adm_read_or_check(adm_t *a, cJSON *shown, int *rc)
{
    if (strcmp(a->method, "GET") == 0 && !a->verb) {
        *rc = ing_adm_answer(a, 200, shown);
        return 0;
    }
    int ok = ing_adm_precondition(a, shown);
    cJSON_Delete(shown);
    *rc = DONE;
    return ok;
}

/* fields[0] is the list's "name" (the member naming its items: id, app_id, version, ...);
 * orderBy takes it and create_time. */
cJSON *ing_adm_list_page(const cJSON *items, const ing_listing_field_t *fields, size_t nfields,
                         const char *ps, const char *pt, const char *filter, const char *order_by,
                         const char *key, char *err, size_t err_size)
{
    const ing_listing_field_t order_fields[] = {fields[0], {"create_time", "createTime"}};
    /* Ties (objects created in the same millisecond) are ordered by name, so pages are stable. */
    char order[256];
    if (order_by && *order_by && !strstr(order_by, "name") && strlen(order_by) < 200) {
        snprintf(order, sizeof(order), "%s, name", order_by);
        order_by = order;
    }
    ing_listing_query_t q;
    if (ing_listing_parse(&q, ps, pt, filter, order_by, fields, nfields, order_fields, 2,
                          PAGE_DEFAULT, PAGE_MAX, err, err_size) < 0)
        return NULL;
    char *next = NULL;
    cJSON *page = ing_listing_apply(&q, items, &next);
    ing_listing_query_free(&q);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, key, page ? page : cJSON_CreateArray());
    if (next)
        cJSON_AddStringToObject(o, "nextPageToken", next);
    free(next);
    return o;
}

/* Answers the list of items (consumed) with the request's paging, filter and order. */
int ing_adm_answer_list(adm_t *a, cJSON *items, const ing_listing_field_t *fields, size_t nfields,
                        const char *key)
{
    char err[512];
    cJSON *o = ing_adm_list_page(items, fields, nfields, qarg(a, "pageSize"), qarg(a, "pageToken"),
                                 qarg(a, "filter"), qarg(a, "orderBy"), key, err, sizeof(err));
    cJSON_Delete(items);
    if (!o)
        return ing_adm_fail(a, 400, "%s", err);
    ing_api_body(a->resp, 200, o);
    return DONE;
}

/* Validates v against config.schema.json#/$defs/<def>; 1 when valid, else answers 400. */
int ing_adm_body_valid(adm_t *a, const cJSON *v, const char *def)
{
    return ing_adm_body_valid_at(a, v, def, "$");
}

int ing_adm_body_valid_at(adm_t *a, const cJSON *v, const char *def, const char *path)
{
    char ref[96], msg[768];
    snprintf(ref, sizeof(ref), "config.schema.json#/$defs/%s", def);
    cJSON *schema = cJSON_CreateObject();
    cJSON_AddStringToObject(schema, "$ref", ref);
    int rc = sch_validate(schema, v, path, msg, sizeof(msg));
    cJSON_Delete(schema);
    if (rc == 0)
        return 1;
    ing_adm_fail(a, 400, "%s", msg);
    return 0;
}

/* 1 when body has no member outside allowed (NULL-terminated), else answers 400. */
int ing_adm_only_members(adm_t *a, const cJSON *body, const char *const *allowed)
{
    for (const cJSON *m = body ? body->child : NULL; m; m = m->next) {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], m->string) != 0)
            i++;
        if (!allowed[i]) {
            ing_adm_fail(a, 400, "$.%s: unknown or read-only member", m->string);
            return 0;
        }
    }
    return 1;
}

int ing_adm_no_env_refs(adm_t *a, const cJSON *o, const char *path)
{
    static const char *const refs[] = {"secret_env", "key_env", "previous_secret_env",
                                       "client_secret_env"};
    for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
        if (cJSON_HasObjectItem(o, refs[i])) {
            ing_adm_fail(
                a, 400,
                "%s.%s: the admin API takes literal secrets; environment references belong in "
                "the config file",
                path, refs[i]);
            return 0;
        }
    return 1;
}

/* Stages a changed copy of the tenant document; returns the copy (owned by st). */
cJSON *ing_adm_stage_tenant(adm_t *a, const cJSON *t)
{
    cJSON *copy = cJSON_Duplicate(t, 1);
    if (!copy || ing_regstore_put(&a->st, a->tenant_field, copy) < 0)
        return NULL;
    a->check_tenant = str_of(copy, "id");
    return copy;
}

const cJSON *ing_adm_find_version(const cJSON *tool, const char *v)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tool, "versions"))
    {
        if (str_of(e, "version") && strcmp(str_of(e, "version"), v) == 0)
            return e;
    }
    return NULL;
}

int ing_adm_is_published(const cJSON *tool, const char *v)
{
    const char *p = str_of(tool, "published");
    return p && v && strcmp(p, v) == 0;
}

int ing_adm_allow(adm_t *a, const char *methods)
{
    char m[16];
    snprintf(m, sizeof(m), "%s", a->method);
    const char *p = strstr(methods, m);
    size_t n = strlen(m);
    if (p && (p == methods || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
        return 1;
    a->resp->allow = methods;
    ing_adm_fail(a, 405, "method %s not allowed here; allowed: %s", a->method, methods);
    return 0;
}
