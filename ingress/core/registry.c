#include "registry.h"
#include "names.h"

#include "cfgkinds.h"
#include "err.h"
#include "keycache.h"
#include "log.h"
#include "pin.h"
#include "util.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REG_KEY NAMES_KEY_REGISTRY
#define REG_REV_KEY NAMES_KEY_REGISTRY_REV

struct ing_registry {
    atomic_int refs;
    long long rev;
    cJSON *docs; /* array owning every parsed document */
    ing_tenant_t *tenants;
    size_t ntenants;
    ing_server_t *servers; /* sorted by (tenant, name) */
    size_t nservers;
    ing_tool_t *tools;
    size_t ntools;
    size_t nquarantined; /* tools whose "quarantine" hides them (pin.h) */
    ing_apikey_t *keys;
    size_t nkeys;
    ing_keycache_t *keycache; /* key values seen → keys[] (ing_registry_auth_key_value) */
    ing_app_t *apps;
    size_t napps;
    ing_robot_t *robots; /* sorted by robot id */
    size_t nrobots;
    ing_tenant_oauth_t *oauth; /* one per tenant; tenants[i].oauth points here or is NULL */
    size_t noauth;             /* tenants whose oauth is set */
    /* Who introspects opaque tokens where (ing_registry_introspector): every resource that is
     * not /mcp/<server>, and per server name, sorted by name. */
    ing_introspector_t iall;
    ing_introspector_t *isrv;
    size_t nisrv;
    void **owned; /* further blocks the snapshot frees: perms, string arrays */
    size_t nowned, capowned;
};

/* Keeps p (malloc'd) to free with the snapshot; p, or NULL (p freed) when out of memory. */
static void *own(ing_registry_t *reg, void *p)
{
    if (!p)
        return NULL;
    if (reg->nowned == reg->capowned) {
        size_t cap = reg->capowned ? 2 * reg->capowned : 16;
        void **o = realloc(reg->owned, cap * sizeof(*o));
        if (!o) {
            free(p);
            return NULL;
        }
        reg->owned = o;
        reg->capowned = cap;
    }
    reg->owned[reg->nowned++] = p;
    return p;
}

/* The strings of the array o[key] (non-strings skipped) as a NULL-terminated table owned by
 * reg, with *n; NULL with *n = 0 when there is no such array. MCPQ_ENOMEM in *rc. */
static const char *const *str_array(ing_registry_t *reg, const cJSON *o, const char *key, size_t *n,
                                    int *rc)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *e;
    *n = 0;
    if (!cJSON_IsArray(a))
        return NULL;
    const char **t = own(reg, calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*t)));
    if (!t) {
        *rc = MCPQ_ENOMEM;
        return NULL;
    }
    cJSON_ArrayForEach(e, a)
    {
        if (cJSON_IsString(e))
            t[(*n)++] = e->valuestring;
    }
    return t;
}

/* The strings of the array o["scopes"] joined by spaces ("" when absent), owned by reg, or
 * NULL when out of memory. */
static const char *perms_of(ing_registry_t *reg, const cJSON *o)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "scopes"), *e;
    size_t len = 1;
    cJSON_ArrayForEach(e, a)
    {
        if (cJSON_IsString(e))
            len += strlen(e->valuestring) + 1;
    }
    char *p = own(reg, malloc(len)), *w = p;
    if (!p)
        return NULL;
    *w = '\0';
    cJSON_ArrayForEach(e, a)
    {
        if (!cJSON_IsString(e))
            continue;
        size_t l = strlen(e->valuestring);
        if (w != p)
            *w++ = ' ';
        memcpy(w, e->valuestring, l + 1);
        w += l;
    }
    return p;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int ing_registry_read_rev(redisContext *c, long long *rev)
{
    redisReply *r = redisCommand(c, "GET %s", REG_REV_KEY);
    if (!r)
        return MCPQ_EUNAVAIL;
    *rev = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    int rc = r->type == REDIS_REPLY_ERROR ? MCPQ_EIO : 0;
    freeReplyObject(r);
    return rc;
}

static int server_cmp(const void *a, const void *b)
{
    const ing_server_t *x = a, *y = b;
    int c = strcmp(x->tenant, y->tenant);
    return c ? c : strcmp(x->name, y->name);
}

static int robot_cmp(const void *a, const void *b)
{
    const ing_robot_t *x = a, *y = b;
    return strcmp(x->robot, y->robot);
}

static int tool_ptr_cmp(const void *a, const void *b)
{
    const ing_tool_t *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static const cJSON *published_version(const cJSON *tool)
{
    const char *pub = str_of(tool, "published");
    const cJSON *v;
    if (!pub)
        return NULL;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(tool, "versions"))
    {
        if (str_of(v, "version") && strcmp(str_of(v, "version"), pub) == 0)
            return v;
    }
    return NULL;
}

/* Copies the members copy (NULL-terminated) of ver that it has into o. */
static void copy_members(cJSON *o, const cJSON *ver, const char *const *copy)
{
    for (size_t i = 0; copy[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(ver, copy[i]);
        if (v)
            cJSON_AddItemToObject(o, copy[i], cJSON_Duplicate(v, 1));
    }
}

/* The entry of an object of kind in its list (MCP Tool, Resource, ResourceTemplate, Prompt):
 * tools/list: name, title, description, inputSchema, outputSchema, annotations, execution;
 * resources/list: uri, name, title, description, mimeType, annotations, size (of static
 * content when not given); resources/templates/list: uriTemplate, name, title, description,
 * mimeType, annotations; prompts/list: name, title, description, arguments. */
static char *render_list_entry(int kind, const char *name, const cJSON *ver)
{
    static const char *const tool[] = {"title",        "description", "inputSchema",
                                       "outputSchema", "annotations", NULL};
    static const char *const resource[] = {"uri",         "title", "description", "mimeType",
                                           "annotations", "size",  NULL};
    static const char *const templ[] = {"uriTemplate", "title",       "description",
                                        "mimeType",    "annotations", NULL};
    static const char *const prompt[] = {"title", "description", "arguments", NULL};
    static const char *const *const copy[] = {tool, resource, templ, prompt};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    copy_members(o, ver, copy[kind]);
    if (kind == ING_KIND_RESOURCE && !cJSON_HasObjectItem(o, "size") &&
        !cJSON_HasObjectItem(ver, "executor"))
        cJSON_AddNumberToObject(o, "size", (double)cfg_kinds_static_bytes(ver));
    if (kind == ING_KIND_TOOL && !cJSON_HasObjectItem(o, "inputSchema")) {
        cJSON *s = cJSON_AddObjectToObject(o, "inputSchema");
        cJSON_AddStringToObject(s, "type", "object");
    }
    /* Any tool may run as an MCP task (docs/protocol.md, "MCP Tasks"). */
    if (kind == ING_KIND_TOOL)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "execution"), "taskSupport", "optional");
    char *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return out;
}

static int hex_to_bytes(const char *hex, unsigned char *out, size_t n)
{
    if (!hex || strlen(hex) != 2 * n)
        return MCPQ_EINVAL;
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char ch = hex[2 * i + j];
            v <<= 4;
            if (ch >= '0' && ch <= '9')
                v |= (unsigned)(ch - '0');
            else if (ch >= 'a' && ch <= 'f')
                v |= (unsigned)(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F')
                v |= (unsigned)(ch - 'A' + 10);
            else
                return MCPQ_EINVAL;
        }
        out[i] = (unsigned char)v;
    }
    return 0;
}

/* A rate_limit object ({"per_second", "burst"}); absent: fallback, else "not configured". */
static ing_rate_t rate_of(const cJSON *o, const ing_rate_t *fallback)
{
    ing_rate_t r = {.per_s = -1, .burst = 0};
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "per_second");
    if (!cJSON_IsNumber(ps))
        return fallback ? *fallback : r;
    r.per_s = ps->valuedouble >= 0 ? ps->valuedouble : -1;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "burst");
    if (cJSON_IsNumber(b) && b->valuedouble >= 1)
        r.burst = b->valuedouble < 1e15 ? (long long)b->valuedouble : 1000000000000000LL;
    return r;
}

static const ing_tenant_t *find_tenant(const ing_registry_t *reg, const char *id)
{
    for (size_t i = 0; i < reg->ntenants; i++)
        if (strcmp(reg->tenants[i].id, id) == 0)
            return &reg->tenants[i];
    return NULL;
}

/* Adds the access rule a (NULL: none) to md as compact JSON and a NUL. 1, or 0. */
static int digest_access(EVP_MD_CTX *md, const cJSON *a)
{
    char *text = a ? cJSON_PrintUnformatted(a) : NULL;
    int ok = (!a || text) && EVP_DigestUpdate(md, text ? text : "", text ? strlen(text) + 1 : 1);
    cJSON_free(text);
    return ok;
}

/* What the tenant grants its callers against access rules: each API key's and app's id and
 * "scopes", and the oauth.scopes map. */
static int digest_grants(EVP_MD_CTX *md, const ing_tenant_t *t)
{
    static const char *const lists[][2] = {{"api_keys", "id"}, {"apps", "app_id"}};
    int ok = 1;
    for (size_t l = 0; ok && t && l < 2; l++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(t->doc, lists[l][0]))
        {
            const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, lists[l][1]));
            ok = ok && EVP_DigestUpdate(md, id ? id : "", id ? strlen(id) + 1 : 1) == 1 &&
                 digest_access(md, cJSON_GetObjectItemCaseSensitive(e, "scopes"));
        }
    }
    return ok && (!t || !t->oauth || digest_access(md, t->oauth->scopes));
}

/* A list fingerprint of server s whose objects are attached and sorted, into out: SHA-256
 * over the list_json of the n1 objects of l1 and then the n2 of l2, each followed by a NUL
 * (no entry holds one), and, when the server or an object has access rules, those rules and
 * what tenant t grants against them (a rule or a key's scopes changed changes what some
 * callers list). 0 or MCPQ_ENOMEM. */
static int list_fingerprint(const ing_server_t *s, const ing_tenant_t *t, ing_tool_t *const *l1,
                            size_t n1, ing_tool_t *const *l2, size_t n2, unsigned char *out)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1, rules = s->access != NULL;
    for (size_t i = 0; ok && i < n1 + n2; i++) {
        const ing_tool_t *o = i < n1 ? l1[i] : l2[i - n1];
        ok = EVP_DigestUpdate(md, o->list_json, strlen(o->list_json) + 1) == 1 &&
             (!o->access || digest_access(md, o->access));
        rules |= o->access != NULL;
    }
    ok = ok && (!s->access || digest_access(md, s->access));
    ok = ok && (!rules || digest_grants(md, t));
    ok = ok && EVP_DigestFinal_ex(md, out, NULL) == 1;
    EVP_MD_CTX_free(md);
    return ok ? 0 : MCPQ_ENOMEM;
}

static int server_fingerprints(ing_server_t *s, const ing_tenant_t *t)
{
    if (list_fingerprint(s, t, s->tools, s->ntools, NULL, 0, s->tools_fp) < 0 ||
        list_fingerprint(s, t, s->resources, s->nresources, s->templates, s->ntemplates,
                         s->resources_fp) < 0 ||
        list_fingerprint(s, t, s->prompts, s->nprompts, NULL, 0, s->prompts_fp) < 0)
        return MCPQ_ENOMEM;
    return 0;
}

/* Parses the documents into reg->docs, each with its field as "_field", and sizes the tenant,
 * server and tool tables. 0 or MCPQ_ENOMEM. */
static int parse_docs(ing_registry_t *reg, const char *const *fields, const size_t *lens, size_t n)
{
    reg->docs = cJSON_CreateArray();
    size_t nt = 0, ns = 0, nl = 0;
    /* fields[2i] is the hash field, fields[2i+1] its JSON document. */
    for (size_t i = 0; i + 1 < n; i += 2) {
        cJSON *doc = cJSON_ParseWithLength(fields[i + 1], lens[i + 1]);
        if (!doc || !cJSON_IsObject(doc)) {
            log_event(LOG_WARN, "registry: skipping unreadable document", "field", fields[i],
                      (char *)NULL);
            cJSON_Delete(doc);
            continue;
        }
        cJSON_AddStringToObject(doc, "_field", fields[i]);
        cJSON_AddItemToArray(reg->docs, doc);
        if (strncmp(fields[i], "tenant:", 7) == 0)
            nt++;
        else if (strncmp(fields[i], "server:", 7) == 0)
            ns++;
        else if (strncmp(fields[i], "tool:", 5) == 0)
            nl++;
    }
    reg->tenants = calloc(nt + 1, sizeof(*reg->tenants));
    reg->servers = calloc(ns + 1, sizeof(*reg->servers));
    reg->tools = calloc(nl + 1, sizeof(*reg->tools));
    if (!reg->tenants || !reg->servers || !reg->tools)
        return MCPQ_ENOMEM;
    return 0;
}

/* The tenants, and the key, app and robot tables sized for them. 0 or MCPQ_ENOMEM. */
static int index_tenants(ing_registry_t *reg)
{
    size_t nkeys = 0, napps = 0, nrobots = 0;
    cJSON *doc;
    cJSON_ArrayForEach(doc, reg->docs)
    {
        const char *f = str_of(doc, "_field");
        if (strncmp(f, "tenant:", 7) == 0 && str_of(doc, "id")) {
            ing_tenant_t *t = &reg->tenants[reg->ntenants++];
            t->id = str_of(doc, "id");
            t->default_server = str_of(doc, "default_server");
            if (!t->default_server)
                t->default_server = "default";
            t->doc = doc;
            nkeys += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "api_keys"));
            napps += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "apps"));
            nrobots += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "robots"));
        }
    }
    reg->keys = calloc(nkeys + 1, sizeof(*reg->keys));
    reg->apps = calloc(napps + 1, sizeof(*reg->apps));
    reg->robots = calloc(nrobots + 1, sizeof(*reg->robots));
    reg->oauth = calloc(reg->ntenants + 1, sizeof(*reg->oauth));
    if (!reg->keys || !reg->apps || !reg->robots || !reg->oauth)
        return MCPQ_ENOMEM;
    return 0;
}

/* The tenants' "oauth" objects (cfg.c has validated them). 0 or MCPQ_ENOMEM. */
static int index_oauth(ing_registry_t *reg)
{
    int rc = 0;
    for (size_t i = 0; i < reg->ntenants && rc == 0; i++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(reg->tenants[i].doc, "oauth");
        if (!cJSON_IsObject(o))
            continue;
        ing_tenant_oauth_t *t = &reg->oauth[i];
        const cJSON *claims = cJSON_GetObjectItemCaseSensitive(o, "claims");
        const cJSON *intro = cJSON_GetObjectItemCaseSensitive(o, "introspection");
        const cJSON *scopes = cJSON_GetObjectItemCaseSensitive(o, "scopes");
        t->issuers = str_array(reg, o, "issuers", &t->n_issuers, &rc);
        t->audiences = str_array(reg, o, "audiences", &t->n_audiences, &rc);
        t->scopes_supported = str_array(reg, o, "scopes_supported", &t->n_scopes_supported, &rc);
        t->jwks_uri = str_of(o, "jwks_uri");
        t->claim_user = str_of(claims, "user") ? str_of(claims, "user") : "sub";
        t->claim_app = str_of(claims, "app") ? str_of(claims, "app") : "azp";
        t->claim_tenant = str_of(claims, "tenant");
        t->tenant_value = !t->claim_tenant                 ? NULL
                          : str_of(claims, "tenant_value") ? str_of(claims, "tenant_value")
                                                           : reg->tenants[i].id;
        t->scopes = cJSON_IsObject(scopes) ? scopes : NULL;
        t->introspection_endpoint = str_of(intro, "endpoint");
        t->client_id = t->introspection_endpoint ? str_of(intro, "client_id") : NULL;
        t->client_secret = t->introspection_endpoint ? str_of(intro, "client_secret") : NULL;
        reg->tenants[i].oauth = t;
        reg->noauth++;
    }
    return rc;
}

/* Each tenant's API keys, apps and robots, with the rates they inherit from the tenant. 0 or
 * MCPQ_ENOMEM. */
static int index_credentials(ing_registry_t *reg)
{
    for (size_t i = 0; i < reg->ntenants; i++) {
        const cJSON *k,
            *limits = cJSON_GetObjectItemCaseSensitive(reg->tenants[i].doc, "rate_limits");
        ing_rate_t key_rate = rate_of(cJSON_GetObjectItemCaseSensitive(limits, "api_key"), NULL);
        ing_rate_t app_rate = rate_of(cJSON_GetObjectItemCaseSensitive(limits, "app"), NULL);
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(reg->tenants[i].doc, "api_keys"))
        {
            ing_apikey_t *key = &reg->keys[reg->nkeys];
            if (hex_to_bytes(str_of(k, "sha256"), key->sha256, 32) < 0)
                continue;
            key->tenant = &reg->tenants[i];
            key->id = str_of(k, "id");
            key->rate = rate_of(cJSON_GetObjectItemCaseSensitive(k, "rate_limit"), &key_rate);
            if (!(key->perms = perms_of(reg, k)))
                return MCPQ_ENOMEM;
            reg->nkeys++;
        }
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(reg->tenants[i].doc, "apps"))
        {
            ing_app_t *app = &reg->apps[reg->napps];
            app->app_id = str_of(k, "app_id");
            app->secret = str_of(k, "secret");
            app->doc = k;
            if (!app->app_id || !app->secret || !*app->secret)
                continue;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(k, "signature_version");
            app->sig_version = cJSON_IsNumber(v) && v->valuedouble == 2 ? 2 : 1;
            app->tenant = &reg->tenants[i];
            app->rate = rate_of(cJSON_GetObjectItemCaseSensitive(k, "rate_limit"), &app_rate);
            if (!(app->perms = perms_of(reg, k)))
                return MCPQ_ENOMEM;
            reg->napps++;
        }
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(reg->tenants[i].doc, "robots"))
        {
            if (!cJSON_IsString(k))
                continue;
            reg->robots[reg->nrobots].robot = k->valuestring;
            reg->robots[reg->nrobots++].tenant = &reg->tenants[i];
        }
    }
    /* Every writer keeps a robot to one tenant (cfg.c, regstore.h ing_regstore_robot_owner); were
     * two to declare it, the lookup would find one of them and refuse the other's tasks. */
    qsort(reg->robots, reg->nrobots, sizeof(*reg->robots), robot_cmp);
    return 0;
}

static void index_servers(ing_registry_t *reg)
{
    cJSON *doc;
    cJSON_ArrayForEach(doc, reg->docs)
    {
        const char *f = str_of(doc, "_field");
        if (strncmp(f, "server:", 7) == 0 && str_of(doc, "tenant") && str_of(doc, "name")) {
            ing_server_t *s = &reg->servers[reg->nservers++];
            s->tenant = str_of(doc, "tenant");
            s->name = str_of(doc, "name");
            s->description = str_of(doc, "description");
            s->access = cJSON_GetObjectItemCaseSensitive(doc, "access");
        }
    }
    qsort(reg->servers, reg->nservers, sizeof(*reg->servers), server_cmp);
}

/* Compiles tool t's inputSchema (in ver) for tools/call. A schema that does not compile
 * (stored before a rule of sch.h refused it) is left to tools/call, which reports why. */
static void compile_input_schema(ing_tool_t *t, const cJSON *ver)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(ver, "inputSchema");
    char err[512];
    if (t->kind != ING_KIND_TOOL || !s)
        return;
    t->input_schema = sch_compile(s, "inputSchema", err, sizeof(err));
    if (!t->input_schema)
        log_msgf(LOG_WARN, "tool %s/%s/%s: inputSchema not compiled: %s", t->tenant, t->server,
                 t->name, err);
}

/* The tools with a published version, of a tenant that exists. 0 or MCPQ_ENOMEM. */
static int index_tools(ing_registry_t *reg)
{
    cJSON *doc;
    cJSON_ArrayForEach(doc, reg->docs)
    {
        const char *f = str_of(doc, "_field");
        if (strncmp(f, "tool:", 5) != 0)
            continue;
        const cJSON *ver = published_version(doc);
        const char *tenant = str_of(doc, "tenant"), *server = str_of(doc, "server");
        const char *name = str_of(doc, "name");
        if (!ver || !tenant || !server || !name || !find_tenant(reg, tenant))
            continue; /* offline (no published version) or dangling: not served */
        int kind = kinds_of(doc);
        if (kind < 0)
            continue; /* a kind this build does not know: not served */
        ing_tool_t *t = &reg->tools[reg->ntools];
        t->tenant = tenant;
        t->server = server;
        t->name = name;
        t->kind = kind;
        t->uri = kind == ING_KIND_RESOURCE ? str_of(ver, "uri") : NULL;
        t->uri_template = kind == ING_KIND_TEMPLATE ? str_of(ver, "uriTemplate") : NULL;
        if ((kind == ING_KIND_RESOURCE && !t->uri) ||
            (kind == ING_KIND_TEMPLATE && !t->uri_template))
            continue;
        t->version = ver;
        t->version_id = str_of(ver, "version");
        const cJSON *tmo = cJSON_GetObjectItemCaseSensitive(ver, "timeout_ms");
        t->timeout_ms = cJSON_IsNumber(tmo) ? (long long)tmo->valuedouble : 0;
        const char *mode = str_of(ver, "mode");
        t->task_mode = mode && strcmp(mode, "task") == 0;
        const cJSON *fake = cJSON_GetObjectItemCaseSensitive(ver, "fake");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fake, "enabled")))
            t->fake_result = cJSON_GetObjectItemCaseSensitive(fake, "result");
        t->access = cJSON_GetObjectItemCaseSensitive(doc, "access");
        /* only tools are pinned (pin.h) */
        t->quarantined = kind == ING_KIND_TOOL && ing_pin_quarantined(doc);
        reg->nquarantined += (size_t)t->quarantined;
        t->list_json = render_list_entry(kind, name, ver);
        if (!t->list_json)
            return MCPQ_ENOMEM;
        compile_input_schema(t, ver);
        reg->ntools++;
    }
    return 0;
}

static int uri_ptr_cmp(const void *a, const void *b)
{
    const ing_tool_t *const *x = a, *const *y = b;
    return strcmp((*x)->uri, (*y)->uri);
}

/* The objects of kind of server s, quarantined (pin.h) or not, into a new array *out (sorted by
 * name) with *n. 0 or MCPQ_ENOMEM. */
static int attach_kind(ing_registry_t *reg, const ing_server_t *s, int kind, int quarantined,
                       ing_tool_t ***out, size_t *n)
{
    size_t cnt = 0;
    for (size_t j = 0; j < reg->ntools; j++)
        cnt += reg->tools[j].kind == kind && reg->tools[j].quarantined == quarantined &&
               !strcmp(reg->tools[j].tenant, s->tenant) && !strcmp(reg->tools[j].server, s->name);
    if (!(*out = calloc(cnt + 1, sizeof(**out))))
        return MCPQ_ENOMEM;
    for (size_t j = 0; j < reg->ntools; j++)
        if (reg->tools[j].kind == kind && reg->tools[j].quarantined == quarantined &&
            !strcmp(reg->tools[j].tenant, s->tenant) && !strcmp(reg->tools[j].server, s->name))
            (*out)[(*n)++] = &reg->tools[j];
    qsort(*out, *n, sizeof(**out), tool_ptr_cmp);
    return 0;
}

/* Attach the objects of each kind to their servers, sorted, and fingerprint each server's
 * lists. 0 or MCPQ_ENOMEM. */
static int attach_tools(ing_registry_t *reg)
{
    for (size_t i = 0; i < reg->nservers; i++) {
        ing_server_t *s = &reg->servers[i];
        /* A quarantined tool (pin.h) is neither listed nor called: it goes to its own list,
         * for the refusal that names the reason. */
        if (attach_kind(reg, s, ING_KIND_TOOL, 0, &s->tools, &s->ntools) < 0 ||
            attach_kind(reg, s, ING_KIND_TOOL, 1, &s->quarantined, &s->nquarantined) < 0 ||
            attach_kind(reg, s, ING_KIND_RESOURCE, 0, &s->resources, &s->nresources) < 0 ||
            attach_kind(reg, s, ING_KIND_TEMPLATE, 0, &s->templates, &s->ntemplates) < 0 ||
            attach_kind(reg, s, ING_KIND_PROMPT, 0, &s->prompts, &s->nprompts) < 0 ||
            !(s->by_uri = calloc(s->nresources + 1, sizeof(*s->by_uri))))
            return MCPQ_ENOMEM;
        memcpy(s->by_uri, s->resources, s->nresources * sizeof(*s->by_uri));
        qsort(s->by_uri, s->nresources, sizeof(*s->by_uri), uri_ptr_cmp);
        if (server_fingerprints(s, find_tenant(reg, s->tenant)) < 0)
            return MCPQ_ENOMEM;
    }
    return 0;
}

static int introspector_cmp(const void *a, const void *b)
{
    const ing_introspector_t *x = a, *y = b;
    return strcmp(x->server, y->server);
}

/* Which tenants introspect opaque tokens at which resource (docs/authorization.md "Which tenant
 * introspects where"): every tenant with oauth.introspection serves /mcp (its default server)
 * and /v1; /mcp/<server> is served by the tenants that have that server. 0 or MCPQ_ENOMEM. */
static int index_introspectors(ing_registry_t *reg)
{
    for (size_t i = 0; i < reg->ntenants; i++) {
        const ing_tenant_oauth_t *o = reg->tenants[i].oauth;
        if (o && o->introspection_endpoint && reg->iall.n++ == 0)
            reg->iall.tenant = &reg->tenants[i];
    }
    reg->isrv = calloc(reg->nservers + 1, sizeof(*reg->isrv));
    if (!reg->isrv)
        return MCPQ_ENOMEM;
    for (size_t i = 0; i < reg->nservers; i++) {
        const ing_tenant_t *t = find_tenant(reg, reg->servers[i].tenant);
        if (t && t->oauth && t->oauth->introspection_endpoint)
            reg->isrv[reg->nisrv++] =
                (ing_introspector_t){.server = reg->servers[i].name, .tenant = t, .n = 1};
    }
    qsort(reg->isrv, reg->nisrv, sizeof(*reg->isrv), introspector_cmp);
    size_t k = 0; /* one entry per name, counting its tenants (a tenant has a name once) */
    for (size_t i = 0; i < reg->nisrv; i++) {
        if (k && strcmp(reg->isrv[k - 1].server, reg->isrv[i].server) == 0)
            reg->isrv[k - 1].n++;
        else
            reg->isrv[k++] = reg->isrv[i];
    }
    reg->nisrv = k;
    return 0;
}

ing_registry_t *ing_registry_build(const char *const *fields, const size_t *lens, size_t n,
                                   long long rev, char *errstr, size_t errstr_size)
{
    ing_registry_t *reg = calloc(1, sizeof(*reg));
    if (!reg)
        goto nomem;
    atomic_init(&reg->refs, 1);
    reg->rev = rev;
    reg->keycache = ing_keycache_new(); /* NULL: every key value is hashed (keycache.h) */
    if (parse_docs(reg, fields, lens, n) < 0 || index_tenants(reg) < 0 ||
        index_credentials(reg) < 0 || index_oauth(reg) < 0)
        goto nomem;
    index_servers(reg);
    if (index_tools(reg) < 0 || attach_tools(reg) < 0 || index_introspectors(reg) < 0)
        goto nomem;
    return reg;
nomem:
    snprintf(errstr, errstr_size, "out of memory building the registry");
    ing_registry_unref(reg);
    return NULL;
}

ing_registry_t *ing_registry_fetch(redisContext *c, char *errstr, size_t errstr_size)
{
    long long rev = 0;
    redisReply *r = NULL, *rr = NULL;
    redisAppendCommand(c, "GET %s", REG_REV_KEY);
    redisAppendCommand(c, "HGETALL %s", REG_KEY);
    if (redisGetReply(c, (void **)&rr) != REDIS_OK || redisGetReply(c, (void **)&r) != REDIS_OK) {
        snprintf(errstr, errstr_size, "redis: %s", c->errstr);
        if (rr)
            freeReplyObject(rr);
        return NULL;
    }
    if (rr->type == REDIS_REPLY_STRING)
        rev = strtoll(rr->str, NULL, 10);
    freeReplyObject(rr);
    if (r->type != REDIS_REPLY_ARRAY) {
        snprintf(errstr, errstr_size, "redis: unexpected reply to HGETALL");
        freeReplyObject(r);
        return NULL;
    }
    const char **fields = calloc(r->elements + 1, sizeof(*fields));
    size_t *lens = calloc(r->elements + 1, sizeof(*lens));
    ing_registry_t *reg = NULL;
    if (fields && lens) {
        for (size_t i = 0; i < r->elements; i++) {
            fields[i] = r->element[i]->str;
            lens[i] = r->element[i]->len;
        }
        reg = ing_registry_build(fields, lens, r->elements, rev, errstr, errstr_size);
    } else {
        snprintf(errstr, errstr_size, "out of memory");
    }
    free(fields);
    free(lens);
    freeReplyObject(r);
    return reg;
}

long long ing_registry_rev(const ing_registry_t *reg)
{
    return reg->rev;
}

void ing_registry_ref(ing_registry_t *reg)
{
    atomic_fetch_add(&reg->refs, 1);
}

void ing_registry_unref(ing_registry_t *reg)
{
    if (!reg || atomic_fetch_sub(&reg->refs, 1) != 1)
        return;
    for (size_t i = 0; i < reg->nservers; i++) {
        free(reg->servers[i].tools);
        free(reg->servers[i].quarantined);
        free(reg->servers[i].resources);
        free(reg->servers[i].templates);
        free(reg->servers[i].prompts);
        free(reg->servers[i].by_uri);
    }
    for (size_t i = 0; i < reg->ntools; i++) {
        cJSON_free(reg->tools[i].list_json);
        sch_compiled_free(reg->tools[i].input_schema);
    }
    free(reg->servers);
    free(reg->tools);
    free(reg->tenants);
    free(reg->keys);
    ing_keycache_free(reg->keycache);
    free(reg->apps);
    free(reg->robots);
    free(reg->oauth);
    free(reg->isrv);
    for (size_t i = 0; i < reg->nowned; i++)
        free(reg->owned[i]);
    free(reg->owned);
    cJSON_Delete(reg->docs);
    free(reg);
}

const ing_apikey_t *ing_registry_auth_key(const ing_registry_t *reg, const unsigned char *sha)
{
    const ing_apikey_t *found = NULL;
    /* Every key is compared, whatever matched, so timing tells nothing about which. */
    for (size_t i = 0; i < reg->nkeys; i++) {
        unsigned diff = 0;
        for (size_t j = 0; j < 32; j++)
            diff |= (unsigned)(reg->keys[i].sha256[j] ^ sha[j]);
        if (diff == 0)
            found = &reg->keys[i];
    }
    return found;
}

const ing_apikey_t *ing_registry_auth_key_value(const ing_registry_t *reg, const char *key,
                                                size_t len)
{
    const ing_apikey_t *k = ing_keycache_get(reg->keycache, key, len);
    if (k)
        return k;
    unsigned char sha[32];
    if (!EVP_Digest(key, len, sha, NULL, EVP_sha256(), NULL))
        return NULL;
    k = ing_registry_auth_key(reg, sha);
    ing_keycache_put(reg->keycache, key, len, k); /* only a key that opened something */
    return k;
}

const ing_app_t *ing_registry_app(const ing_registry_t *reg, const char *app_id)
{
    for (size_t i = 0; i < reg->napps; i++)
        if (strcmp(reg->apps[i].app_id, app_id) == 0)
            return &reg->apps[i];
    return NULL;
}

const ing_robot_t *ing_registry_robots(const ing_registry_t *reg, size_t *n)
{
    *n = reg->nrobots;
    return reg->robots;
}

const ing_tenant_t *ing_registry_robot_owner(const ing_registry_t *reg, const char *robot)
{
    ing_robot_t key = {.robot = robot};
    const ing_robot_t *hit =
        reg && robot ? bsearch(&key, reg->robots, reg->nrobots, sizeof(*reg->robots), robot_cmp)
                     : NULL;
    return hit ? hit->tenant : NULL;
}

size_t ing_registry_tenant_count(const ing_registry_t *reg)
{
    return reg ? reg->ntenants : 0;
}

const ing_tenant_t *ing_registry_tenant_at(const ing_registry_t *reg, size_t i)
{
    return reg && i < reg->ntenants ? &reg->tenants[i] : NULL;
}

int ing_registry_oauth_used(const ing_registry_t *reg)
{
    return reg && reg->noauth > 0;
}

const ing_tenant_t *ing_registry_tenant(const ing_registry_t *reg, const char *id)
{
    return reg && id ? find_tenant(reg, id) : NULL;
}

const cJSON *ing_registry_docs(const ing_registry_t *reg)
{
    return reg->docs;
}

const ing_server_t *ing_registry_server(const ing_registry_t *reg, const char *tenant,
                                        const char *name)
{
    ing_server_t key = {.tenant = tenant, .name = name};
    return bsearch(&key, reg->servers, reg->nservers, sizeof(*reg->servers), server_cmp);
}

const ing_tool_t *ing_registry_quarantined(const ing_server_t *srv, const char *name)
{
    for (size_t i = 0; srv && name && i < srv->nquarantined; i++)
        if (strcmp(srv->quarantined[i]->name, name) == 0)
            return srv->quarantined[i];
    return NULL;
}

size_t ing_registry_quarantined_count(const ing_registry_t *reg)
{
    return reg ? reg->nquarantined : 0;
}

const ing_tool_t *ing_registry_tool(const ing_server_t *srv, const char *name)
{
    return ing_registry_object(srv, ING_KIND_TOOL, name);
}

const ing_tool_t *ing_registry_object(const ing_server_t *srv, int kind, const char *name)
{
    if (!srv || !name)
        return NULL;
    ing_tool_t *const *lists[] = {srv->tools, srv->resources, srv->templates, srv->prompts};
    const size_t ns[] = {srv->ntools, srv->nresources, srv->ntemplates, srv->nprompts};
    ing_tool_t key = {.name = name};
    const ing_tool_t *kp = &key;
    for (int k = 0; k < KINDS_COUNT; k++) {
        if (kind >= 0 && k != kind)
            continue;
        ing_tool_t **hit =
            ns[k] ? bsearch(&kp, lists[k], ns[k], sizeof(*lists[k]), tool_ptr_cmp) : NULL;
        if (hit)
            return *hit;
    }
    return NULL;
}

const ing_tool_t *ing_registry_resource(const ing_server_t *srv, const char *uri)
{
    if (!srv || !uri || !srv->nresources)
        return NULL;
    ing_tool_t key = {.uri = uri};
    const ing_tool_t *kp = &key;
    ing_tool_t **hit =
        bsearch(&kp, srv->by_uri, srv->nresources, sizeof(*srv->by_uri), uri_ptr_cmp);
    return hit ? *hit : NULL;
}

const ing_tool_t *ing_registry_template_match(const ing_server_t *srv, const char *uri,
                                              cJSON **vars)
{
    *vars = NULL;
    for (size_t i = 0; srv && uri && i < srv->ntemplates; i++) {
        int rc = kinds_template_match(srv->templates[i]->uri_template, uri, vars);
        if (rc < 0)
            return NULL;
        if (rc == 1)
            return srv->templates[i];
    }
    return NULL;
}

size_t ing_registry_secrets(const cJSON *o, int64_t now_ms, const char *out[2])
{
    const char *cur = str_of(o, "secret"), *prev = str_of(o, "previous_secret");
    const char *until = str_of(o, "previous_secret_expires");
    int64_t until_ms = 0;
    size_t n = 0;
    if (!cur || !*cur)
        return 0;
    out[n++] = cur;
    /* An expiry that does not parse (cfg.c refuses one) ends the old secret now. */
    if (prev && *prev && (!until || (util_parse_utc(until, &until_ms) == 0 && now_ms < until_ms)))
        out[n++] = prev;
    return n;
}

const ing_tenant_t *ing_registry_introspector(const ing_registry_t *reg, const char *server,
                                              size_t *n)
{
    const ing_introspector_t *at = NULL;
    if (reg && server) {
        ing_introspector_t key = {.server = server};
        at = bsearch(&key, reg->isrv, reg->nisrv, sizeof(*reg->isrv), introspector_cmp);
    } else if (reg) {
        at = &reg->iall;
    }
    if (n)
        *n = at ? at->n : 0;
    return at && at->n == 1 ? at->tenant : NULL;
}

size_t ing_registry_introspect_ambiguous(const ing_registry_t *reg, const ing_introspector_t **out,
                                         size_t max)
{
    size_t k = 0;
    if (reg && reg->iall.n > 1 && k < max)
        out[k++] = &reg->iall;
    for (size_t i = 0; reg && i < reg->nisrv && k < max; i++)
        if (reg->isrv[i].n > 1)
            out[k++] = &reg->isrv[i];
    return k;
}

void ing_registry_introspect_warning(const ing_introspector_t *a, char *out, size_t n)
{
    snprintf(out, n,
             "opaque tokens are ambiguous at %s%s: %zu tenants with oauth.introspection serve it, "
             "so opaque tokens are refused there (401); their clients must use their tenant's own "
             "/mcp/<server> endpoint or JWT access tokens (docs/authorization.md)",
             a->server ? "/mcp/" : "/mcp and /v1", a->server ? a->server : "", a->n);
}
