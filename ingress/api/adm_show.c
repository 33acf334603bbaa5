/*
 * adm_show.c - the admin API's objects as it shows them (adm.h): the members a reader may
 * see, the metadata createTime and updateTime, and an etag computed over the object as shown.
 * No view shows a secret or a key's hash (admin.c says why).
 */
#include "adm.h"

#include "kinds.h"

#include "cfgsecret.h"

#include <stdio.h>
#include <string.h>

static void copy_meta(cJSON *to, const cJSON *from)
{
    copy_member(to, from, "createTime");
    copy_member(to, from, "updateTime");
}

/* Adds the etag computed over o as shown. */
static cJSON *with_etag(cJSON *o)
{
    char e[21];
    ing_regstore_etag(o, NULL, e);
    cJSON_AddStringToObject(o, "etag", e);
    return o;
}

/* The members keys (NULL-terminated) of src with its metadata and etag. */
static cJSON *show_members(const cJSON *src, const char *const *keys)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; keys[i]; i++)
        copy_member(o, src, keys[i]);
    copy_meta(o, src);
    return with_etag(o);
}

cJSON *ing_adm_show_tenant(const cJSON *t)
{
    static const char *const keys[] = {"id",     "default_server", "rate_limits",
                                       "robots", "quotas",         NULL};
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; keys[i]; i++)
        copy_member(o, t, keys[i]);
    const cJSON *oauth = cJSON_GetObjectItemCaseSensitive(t, "oauth");
    if (oauth) { /* its introspection client_secret is hidden (cfgsecret.h) */
        cJSON *c = cJSON_Duplicate(oauth, 1);
        cJSON *intro = cJSON_GetObjectItemCaseSensitive(c, "introspection");
        if (cJSON_HasObjectItem(intro, "client_secret"))
            cJSON_ReplaceItemInObjectCaseSensitive(intro, "client_secret",
                                                   cJSON_CreateString(CFG_HIDDEN));
        cJSON_AddItemToObject(o, "oauth", c);
    }
    copy_meta(o, t);
    return with_etag(o);
}

/* An API key: never its hash. */
cJSON *ing_adm_show_key(const cJSON *k)
{
    static const char *const keys[] = {"id", "rate_limit", "scopes", NULL};
    return show_members(k, keys);
}

/* An app: never its secret. */
cJSON *ing_adm_show_app(const cJSON *k)
{
    static const char *const keys[] = {
        "app_id", "rate_limit", "signature_version", "previous_secret_expires", "scopes", NULL};
    return show_members(k, keys);
}

/* A webhook: never its secret. */
cJSON *ing_adm_show_webhook(const cJSON *w)
{
    static const char *const keys[] = {"id", "url", "events", "previous_secret_expires", NULL};
    return show_members(w, keys);
}

cJSON *ing_adm_show_server(const cJSON *s)
{
    cJSON *o = cJSON_CreateObject();
    copy_member(o, s, "tenant");
    copy_member(o, s, "name");
    copy_member(o, s, "description");
    const cJSON *fed = cJSON_GetObjectItemCaseSensitive(s, "federate");
    if (fed) { /* header values may be credentials: hidden (cfgsecret.h) */
        cJSON *f = cJSON_Duplicate(fed, 1);
        cfg_secret_redact_federate(f);
        cJSON_AddItemToObject(o, "federate", f);
    }
    copy_member(o, s, "access");
    copy_meta(o, s);
    return with_etag(o);
}

cJSON *ing_adm_show_tool(const cJSON *t)
{
    cJSON *o = cJSON_CreateObject();
    copy_member(o, t, "tenant");
    copy_member(o, t, "name");
    copy_member(o, t, "server");
    const char *pub = str_of(t, "published");
    const cJSON *pv = pub ? ing_adm_find_version(t, pub) : NULL;
    cJSON_AddBoolToObject(o, "published", pv != NULL);
    if (pv) {
        cJSON_AddStringToObject(o, "publishedVersion", pub);
        copy_member(o, pv, "description");
    } else {
        cJSON_AddNullToObject(o, "publishedVersion");
    }
    cJSON_AddStringToObject(o, "kind", kinds_name(kinds_of(t)));
    cJSON *vs = cJSON_AddArrayToObject(o, "versions");
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(t, "versions"))
    {
        cJSON_AddItemToArray(vs,
                             cJSON_CreateString(str_of(e, "version") ? str_of(e, "version") : ""));
    }
    copy_member(o, t, "access");
    copy_meta(o, t);
    return with_etag(o);
}

cJSON *ing_adm_show_version(const cJSON *tool, const cJSON *v)
{
    /* every kind's members (config.schema.json); a version has those of its kind */
    static const char *const keys[] = {"version",      "title",       "description", "inputSchema",
                                       "outputSchema", "annotations", "uri",         "uriTemplate",
                                       "mimeType",     "size",        "text",        "blob",
                                       "arguments",    "messages",    "completions", "ttl_ms",
                                       "cache_scope",  "timeout_ms",  "mode",        "fake"};
    cJSON *o = cJSON_CreateObject();
    copy_member(o, tool, "name");
    cJSON_AddItemToObject(o, "tool", cJSON_DetachItemFromObject(o, "name"));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        copy_member(o, v, keys[i]);
    cJSON_AddBoolToObject(o, "published", ing_adm_is_published(tool, str_of(v, "version")));
    const cJSON *exe = cJSON_GetObjectItemCaseSensitive(v, "executor");
    if (exe) { /* its secret, header and env values are hidden (cfgsecret.h) */
        cJSON *x = cJSON_Duplicate(exe, 1);
        cfg_secret_redact_executor(x);
        cJSON_AddItemToObject(o, "executor", x);
    }
    copy_meta(o, v);
    return with_etag(o);
}
