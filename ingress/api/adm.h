/*
 * adm.h - the admin API's private header (admin.h is the public one): the state of one admin
 * request, the answers and checks every resource shares (adm.c), and the resources, one file
 * per concept:
 *
 *   admin.c         routing /admin/v1/..., the operator token, the read-modify-write loop
 *   adm.c           answers (errors, objects with their etag, lists), If-Match, body checks
 *   adm_show.c      objects as the API shows them (never a secret)
 *   adm_tenants.c   tenants
 *   adm_subs.c      API keys, apps and webhooks: the arrays of a tenant document
 *   adm_servers.c   servers
 *   adm_tools.c     tools (created with their first version, renamed)
 *   adm_versions.c  tool versions: adding, editing, publishing, taking offline, deleting
 *   adm_config.c    the whole configuration: export and apply; the config file's events
 *   adm_pin.c       approving federated tool definitions (:approve; pin.h)
 *   adm_tasks.c     a tenant's tasks: listing, one with its history and deliveries, :cancel
 *
 * A resource handler runs on the registry state loaded for this attempt (a->st) and returns
 * DONE (answered, nothing to write) or COMMIT (answered; commit a->st). Not
 * thread-safe: an adm_t belongs to one request.
 */
#ifndef MCPQ_ING_ADM_H
#define MCPQ_ING_ADM_H

#include "listing.h"
#include "regstore.h"
#include "req.h"

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <string.h>

#define MAX_SEGS 8

typedef struct adm {
    ing_req_t *req;
    ing_resp_t *resp;
    const char *method;
    char *path; /* copy of the url after /admin/v1/, split in place */
    char *seg[MAX_SEGS];
    int nseg;
    const char *verb; /* "publish" for .../versions/1:publish, else NULL */
    cJSON *body;      /* POST/PATCH/PUT body, or NULL */
    const char *if_match;
    ing_regstore_state_t st;
    char now[32];
    char tenant_field[200];
    const char *check_tenant; /* the tenant to validate before committing, or NULL */
} adm_t;

enum { DONE = 0, COMMIT = 1 };

/* ---- small accessors --------------------------------------------------------------------- */

static inline const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static inline void copy_member(cJSON *to, const cJSON *from, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, k);
    if (v)
        cJSON_AddItemToObject(to, k, cJSON_Duplicate(v, 1));
}

static inline const char *qarg(adm_t *a, const char *name)
{
    return ing_req_arg(a->req, name);
}

/* A JSON merge patch (RFC 7396, one level): each member of patch replaces into's, null
 * removes it. */
static inline void merge_patch(cJSON *into, const cJSON *patch)
{
    for (const cJSON *m = patch ? patch->child : NULL; m; m = m->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(into, m->string);
        if (!cJSON_IsNull(m))
            cJSON_AddItemToObject(into, m->string, cJSON_Duplicate(m, 1));
    }
}

/* The tenant document id of a->st (NULL when none); a->tenant_field names it afterwards. */
static inline cJSON *tenant_doc(adm_t *a, const char *id)
{
    ing_regstore_field_tenant(a->tenant_field, sizeof(a->tenant_field), id);
    return ing_regstore_get(&a->st, a->tenant_field);
}

static inline cJSON *by_id(const cJSON *arr, const char *id_key, const char *id)
{
    cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (str_of(e, id_key) && strcmp(str_of(e, id_key), id) == 0)
            return e;
    }
    return NULL;
}

/* Every document of st whose field starts with prefix, in a new array of references. */
static inline cJSON *docs_with_prefix(adm_t *a, const char *prefix)
{
    cJSON *out = cJSON_CreateArray();
    size_t n = strlen(prefix);
    for (const cJSON *d = a->st.docs->child; d; d = d->next)
        if (strncmp(d->string, prefix, n) == 0)
            cJSON_AddItemReferenceToArray(out, (cJSON *)d);
    return out;
}

/* ---- adm.c: answers and checks ----------------------------------------------------------- */

/* Answers status with an error message (printf format); returns DONE. */
int ing_adm_fail(adm_t *a, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Answers one object (consumed) with its etag as the ETag header; COMMIT for a successful
 * write, else DONE. */
int ing_adm_answer(adm_t *a, int status, cJSON *o);
/* Answers 204; returns COMMIT. */
int ing_adm_no_content(adm_t *a);
/* 412 unless the request's If-Match names shown's etag. 1 when the write may go on. */
int ing_adm_precondition(adm_t *a, const cJSON *shown);
/* A GET (without a verb) is answered with shown (consumed); any other request is checked
 * against shown's etag. 1 when the write may go on; 0 when answered, *rc then being what the
 * handler returns. */
int ing_adm_read_or_check(adm_t *a, cJSON *shown, int *rc);
/* One page of items: fields[0] is the list's "name" (id, app_id, version, ...); orderBy takes
 * it and create_time. {key: [...], "nextPageToken"?}, or NULL with err set. */
cJSON *ing_adm_list_page(const cJSON *items, const ing_listing_field_t *fields, size_t nfields,
                         const char *ps, const char *pt, const char *filter, const char *order_by,
                         const char *key, char *err, size_t err_size);
/* Answers the list of items (consumed) with the request's paging, filter and order. */
int ing_adm_answer_list(adm_t *a, cJSON *items, const ing_listing_field_t *fields, size_t nfields,
                        const char *key);
/* 1 when v is valid against config.schema.json#/$defs/<def>, else answers 400. */
int ing_adm_body_valid(adm_t *a, const cJSON *v, const char *def);
/* The same with errors naming v as path ("$.access"). */
int ing_adm_body_valid_at(adm_t *a, const cJSON *v, const char *def, const char *path);
/* 1 when body has no member outside allowed (NULL-terminated), else answers 400. */
int ing_adm_only_members(adm_t *a, const cJSON *body, const char *const *allowed);
/* 1 when o has no *_env secret reference, else answers 400 (path names o). */
int ing_adm_no_env_refs(adm_t *a, const cJSON *o, const char *path);
/* The one answer to any change of the built-in "system" server (docs/api.md): creating,
 * changing or deleting it, adding a tool to it, naming it a tenant's default_server, declaring
 * either in PUT /admin/v1/config. 403 naming path (NULL: the URL names it). Returns DONE. */
int ing_adm_system_refused(adm_t *a, const char *path);
/* 1 when name (may be NULL) is the built-in "system" server's. */
int ing_adm_is_system(const char *name);
/* Stages a changed copy of the tenant document; returns the copy (owned by a->st). */
cJSON *ing_adm_stage_tenant(adm_t *a, const cJSON *t);
/* The version v of a tool document, or NULL. */
const cJSON *ing_adm_find_version(const cJSON *tool, const char *v);
/* 1 when v is the tool's published version. */
int ing_adm_is_published(const cJSON *tool, const char *v);
/* 1 when the request's method is one of methods ("GET, POST"), else answers 405. */
int ing_adm_allow(adm_t *a, const char *methods);

/* ---- adm_show.c: objects as shown, with their metadata and etag (new objects) ------------ */

cJSON *ing_adm_show_tenant(const cJSON *t);
cJSON *ing_adm_show_key(const cJSON *k);     /* never its hash */
cJSON *ing_adm_show_app(const cJSON *k);     /* never its secret */
cJSON *ing_adm_show_webhook(const cJSON *w); /* never its secret */
cJSON *ing_adm_show_server(const cJSON *s);
cJSON *ing_adm_show_tool(const cJSON *t);
cJSON *ing_adm_show_version(const cJSON *tool, const cJSON *v);

/* ---- the resources: each returns DONE or COMMIT -------------------------------------------- */

/* adm_tenants.c: /tenants (GET, POST) and /tenants/{id} (GET, PATCH, DELETE). */
int ing_adm_tenants_collection(adm_t *a);
int ing_adm_tenants_one(adm_t *a, const char *id);

/* adm_subs.c: 1 when seg is apiKeys, apps or webhooks; then ing_adm_subs_route answers
 * /tenants/{t}/<seg>[/{id}[:rotateSecret]] of tenant document t. */
int ing_adm_subs_is_path(const char *seg);
int ing_adm_subs_route(adm_t *a, cJSON *t);

/* adm_servers.c: /tenants/{t}/servers (GET, POST) and .../servers/{name}. */
int ing_adm_servers_collection(adm_t *a, const char *tenant);
int ing_adm_servers_one(adm_t *a, const cJSON *t, const char *name);
/* .../servers/{name}:<verb> (a->verb set): :approve (adm_pin.c). */
int ing_adm_servers_verb(adm_t *a, const cJSON *t, const char *name);

/* adm_tools.c: /tenants/{t}/tools (GET, POST) and .../tools/{name}[:rename]: registry objects
 * of every kind (a "kind" member when creating one, kinds.h; listings filter on kind);
 * ing_adm_tools_list is ing_admin_list_tools (admin.h). */
cJSON *ing_adm_tools_list(const char *tenant, const cJSON *tool_docs, const char *page_size,
                          const char *page_token, const char *filter, const char *order_by,
                          char *err, size_t err_size);
int ing_adm_tools_collection(adm_t *a, const cJSON *t);
int ing_adm_tools_one(adm_t *a, const cJSON *t, const char *name);

/* adm_versions.c: .../tools/{name}/versions (GET, POST) and .../versions/{v}[:publish|:offline];
 * a version of an object of kind (the object tool's kind when tool is not NULL) from a body,
 * checked against that kind's version schema (NULL when answered 400), and the body's
 * "publish" flag (0 when answered 400), which creating an object uses too. */
int ing_adm_versions_collection(adm_t *a, const cJSON *t, const char *name);
int ing_adm_versions_one(adm_t *a, const cJSON *t, const char *name, const char *ver);
cJSON *ing_adm_versions_from_body(adm_t *a, const cJSON *tool, int kind, const cJSON *body);
int ing_adm_versions_publish_flag(adm_t *a, const cJSON *body, int *publish);

/* adm_pin.c: POST .../tools/{name}:approve of tool (its document at field) and POST
 * .../servers/{s}:approve of server (docs/security.md, "Pinned tool definitions"). */
int ing_adm_pin_approve_tool(adm_t *a, const char *tenant, const char *field, const cJSON *tool);
int ing_adm_pin_approve_server(adm_t *a, const char *tenant, const cJSON *server);

/* adm_tasks.c: /tenants/{t}/tasks (GET) and .../tasks/{id} (GET) and .../tasks/{id}:cancel
 * (POST), outside the read-modify-write loop (a->st is not loaded); answers, returns DONE. */
int ing_adm_tasks_route(adm_t *a);

/* adm_config.c: /config, GET (export without secrets) and PUT (apply; ?prune=true), on c. */
int ing_adm_config_doc(adm_t *a, redisContext *c);
/* adm_config.c: /config/events, GET: {"events": [...]} newest first (cfgwatch.h), on c. */
int ing_adm_config_events(adm_t *a, redisContext *c);

#endif
