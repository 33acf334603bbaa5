#include "federate.h"

#include "err.h"
#include "kinds.h"
#include "kv.h"
#include "log.h"
#include "metrics.h"
#include "mq.h"
#include "names.h"
#include "pin.h"
#include "regstore.h"
#include "sch.h"
#include "util.h"
#include "whq.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FED_BACKOFF_MIN_MS 1000
#define FED_BACKOFF_MAX_MS 60000
#define FED_TICK_MS 100
#define FED_NAME_MAX 50
#define FED_APPLY_TRIES 5

typedef struct fed_entry {
    cJSON *server;    /* the registry's server document (a copy) */
    long long due_ms; /* monotonic */
    long long backoff_ms;
    int failures; /* in a row; logged at the first */
} fed_entry_t;

struct ing_federate {
    ing_ctx_t *ctx;
    fed_entry_t *entries; /* the registry's federated servers */
    size_t n;
    long long rev;     /* the registry revision entries were read at (-1: never) */
    long long scan_ms; /* monotonic: when the revision is looked at next */
    pthread_t thread;
    volatile sig_atomic_t stop;
};

/* ---- the registry documents (pure) ---- */

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* A character of a registry name: [A-Za-z0-9_.-]. */
static int name_char(char c)
{
    return util_id_ok(&c, 1, 1, ".");
}

/* The registry's rule for a name: 1-50 of [A-Za-z0-9_.-], a letter first. */
static int name_valid(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= FED_NAME_MAX &&
           ((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')) &&
           util_id_ok(s, n, FED_NAME_MAX, ".");
}

/* One import's state: the server, its upstream, and what it decided so far. */
typedef struct fed_plan {
    const cJSON *server;
    const char *tenant, *sname, *now;
    const cJSON *fed;
    int pin; /* federate.pin: tool definitions are checked against the approved ones (pin.h) */
    const cJSON *docs;
    char prefix[64];
    cJSON *out;   /* field -> document or null */
    cJSON *names; /* name -> true: imported in this round */
    cJSON *uris;  /* resource uri -> true */
    ing_federate_counts_t c;
} fed_plan_t;

static void skip(fed_plan_t *p, const char *kind, const char *upstream_name, const char *why)
{
    p->c.skipped++;
    log_event(LOG_WARN, "federation: upstream object skipped", "tenant", p->tenant, "server",
              p->sname, "kind", kind, "name", upstream_name, "reason", why, (char *)NULL);
}

/* 1 when d is an object this server imported ("federated": true, same tenant and server). */
static int mine(const fed_plan_t *p, const cJSON *d)
{
    const char *t = str_of(d, "tenant"), *s = str_of(d, "server");
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "federated")) && t && s &&
           strcmp(t, p->tenant) == 0 && strcmp(s, p->sname) == 0;
}

/* The executor of every imported object: {"type": "mcp"} with the upstream's members. */
static cJSON *upstream_executor(const cJSON *fed)
{
    static const char *const copy[] = {"url", "headers", "command", "args", "env", "cwd", "limits"};
    cJSON *ex = cJSON_CreateObject();
    cJSON_AddStringToObject(ex, "type", "mcp");
    for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(fed, copy[i]);
        if (x)
            cJSON_AddItemToObject(ex, copy[i], cJSON_Duplicate(x, 1));
    }
    return ex;
}

static void copy_members(cJSON *v, const cJSON *up, const char *const *names)
{
    for (; *names; names++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(up, *names);
        if (x)
            cJSON_AddItemToObject(v, *names, cJSON_Duplicate(x, 1));
    }
}

/* A version body (no "version" yet) with the upstream object's members and the executor;
 * call_key/call_name ("tool"/"prompt" and the upstream name) may be NULL. */
static cJSON *version_body(const fed_plan_t *p, const cJSON *up, const char *const *members,
                           const char *call_key, const char *call_name)
{
    cJSON *v = cJSON_CreateObject();
    copy_members(v, up, members);
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(p->fed, "timeout_ms");
    if (cJSON_IsNumber(timeout))
        cJSON_AddNumberToObject(v, "timeout_ms", timeout->valuedouble);
    cJSON *ex = upstream_executor(p->fed);
    if (call_key)
        cJSON_AddStringToObject(ex, call_key, call_name);
    cJSON_AddItemToObject(v, "executor", ex);
    return v;
}

/* The definition of a stored version: the version without its id and timestamps. */
static cJSON *definition_of(const cJSON *version)
{
    cJSON *d = cJSON_Duplicate(version, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(d, "version");
    ing_regstore_strip_meta_one(d);
    return d;
}

/* The version an import wrote last (the newest), or NULL. */
static const cJSON *newest_version(const cJSON *doc)
{
    const cJSON *versions = cJSON_GetObjectItemCaseSensitive(doc, "versions");
    return cJSON_GetArrayItem(versions, cJSON_GetArraySize(versions) - 1);
}

/*
 * Where a refreshed definition is written: old is this server's earlier import of the object,
 * v the definition the upstream lists now (consumed), which differs from old's newest version.
 * Returns the new document: old with v as a new version (the highest numeric id + 1), the
 * oldest versions beyond FED_VERSIONS_KEPT dropped, and published unless an operator took the
 * object offline (no published version: it stays offline). A tool then also passes
 * fed_tool_check.
 */
static cJSON *fed_definition_changed(const fed_plan_t *p, const cJSON *old, const char *kind,
                                     cJSON *v)
{
    cJSON *doc = cJSON_Duplicate(old, 1);
    const char *old_kind = str_of(old, "kind");
    int same_kind = strcmp(old_kind ? old_kind : "tool", kind) == 0;
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "kind");
    if (strcmp(kind, "tool") != 0)
        cJSON_AddStringToObject(doc, "kind", kind);
    cJSON *versions = cJSON_GetObjectItemCaseSensitive(doc, "versions");
    if (!cJSON_IsArray(versions)) {
        cJSON_DeleteItemFromObjectCaseSensitive(doc, "versions");
        versions = cJSON_AddArrayToObject(doc, "versions");
    }
    long next = 1;
    const cJSON *x;
    cJSON_ArrayForEach(x, versions)
    {
        const char *id = str_of(x, "version");
        char *end = NULL;
        long n = id ? strtol(id, &end, 10) : 0;
        if (id && *id && end && !*end && n >= next)
            next = n + 1;
    }
    if (!same_kind) /* every version of an object is of its kind: the others go */
        while (cJSON_GetArraySize(versions) > 0)
            cJSON_DeleteItemFromArray(versions, 0);
    char id[24];
    snprintf(id, sizeof(id), "%ld", next);
    cJSON_AddStringToObject(v, "version", id);
    ing_regstore_touch(v, p->now);
    cJSON_AddItemToArray(versions, v);
    while (cJSON_GetArraySize(versions) > FED_VERSIONS_KEPT)
        cJSON_DeleteItemFromArray(versions, 0);
    if (str_of(old, "published"))
        cJSON_ReplaceItemInObjectCaseSensitive(doc, "published", cJSON_CreateString(id));
    ing_regstore_touch(doc, p->now);
    return doc;
}

/* A new imported object: name of kind with definition v (consumed) as its version "1". */
static cJSON *object_new(const fed_plan_t *p, const char *kind, const char *name, cJSON *v)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "tenant", p->tenant);
    cJSON_AddStringToObject(doc, "server", p->sname);
    cJSON_AddStringToObject(doc, "name", name);
    if (strcmp(kind, "tool") != 0)
        cJSON_AddStringToObject(doc, "kind", kind);
    cJSON_AddTrueToObject(doc, "federated");
    cJSON_AddStringToObject(doc, "published", "1");
    cJSON_AddStringToObject(v, "version", "1");
    ing_regstore_touch(v, p->now);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "versions"), v);
    ing_regstore_touch(doc, p->now);
    return doc;
}

/*
 * Where every imported tool's document passes before it is written, changed or not: stored is
 * its registry document (NULL when new), doc the one this import would write (consumed; stored
 * itself, copied, when the definition did not change). Returns the document to write. This is
 * the place for a pinned upstream's check (federate.pin, docs/security.md: a definition that
 * is not the approved one is quarantined, pin.h's ing_pin_refresh); without pinning the
 * approval is carried and any quarantine lifted. NULL on ENOMEM.
 */
static cJSON *fed_tool_check(const fed_plan_t *p, const cJSON *stored, cJSON *doc)
{
    cJSON *out = ing_pin_refresh(stored, doc, p->pin, p->now, NULL);
    if (out && stored && !cJSON_Compare(out, stored, 1))
        ing_regstore_touch(out, p->now);
    return out;
}

/* Records the object name of kind with definition v (consumed): created, updated or left. */
static void put_object(fed_plan_t *p, const char *kind, const char *name, cJSON *v)
{
    char field[300];
    ing_regstore_field_tool(field, sizeof(field), p->tenant, name);
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(p->docs, field);
    cJSON_AddItemToObject(p->names, name, cJSON_CreateTrue());
    cJSON *doc;
    if (!old) {
        doc = object_new(p, kind, name, v);
    } else {
        const char *ok = str_of(old, "kind");
        const cJSON *pv = newest_version(old);
        cJSON *def = pv ? definition_of(pv) : NULL;
        int same = def && cJSON_Compare(def, v, 1) && strcmp(ok ? ok : "tool", kind) == 0;
        cJSON_Delete(def);
        if (same) {
            cJSON_Delete(v);
            doc = cJSON_Duplicate(old, 1);
        } else {
            doc = fed_definition_changed(p, old, kind, v);
        }
    }
    if (strcmp(kind, "tool") == 0)
        doc = fed_tool_check(p, old, doc);
    if (!doc || (old && cJSON_Compare(doc, old, 1))) {
        cJSON_Delete(doc);
        return;
    }
    cJSON_AddItemToObject(p->out, field, doc);
    if (old)
        p->c.updated++;
    else
        p->c.created++;
}

/* The registry name of upstream name un (sanitize: characters outside [A-Za-z0-9_.-] become
 * '_') into out; 0, or -1 when it cannot be made valid or is taken (skipped, logged). */
static int object_name(fed_plan_t *p, const char *kind, const char *un, int sanitize, char *out,
                       size_t size)
{
    if (!un || !un[0]) {
        skip(p, kind, "", "no name");
        return -1;
    }
    int n = snprintf(out, size, "%s%s", p->prefix, un);
    if (sanitize)
        for (char *c = out + strlen(p->prefix); *c; c++)
            if (!name_char(*c))
                *c = '_';
    if (n < 0 || (size_t)n >= size || !name_valid(out)) {
        skip(p, kind, un,
             "not a valid name with the prefix (1-50 of [A-Za-z0-9_.-], a letter "
             "first)");
        return -1;
    }
    char field[300];
    ing_regstore_field_tool(field, sizeof(field), p->tenant, out);
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(p->docs, field);
    if (cJSON_GetObjectItemCaseSensitive(p->names, out)) {
        skip(p, kind, un, "another object of this upstream has the same name");
        return -1;
    }
    if (old && !mine(p, old)) {
        skip(p, kind, un, "the tenant already has an object of that name");
        return -1;
    }
    return 0;
}

/* Why upstream tool up cannot be imported, or NULL. */
static const char *tool_unusable(fed_plan_t *p, const cJSON *up)
{
    char msg[512];
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(up, "inputSchema");
    const cJSON *os = cJSON_GetObjectItemCaseSensitive(up, "outputSchema");
    (void)p;
    if (!cJSON_IsObject(in) || sch_schema_check(in, "inputSchema", msg, sizeof(msg)) != 0 ||
        (os && sch_schema_check(os, "outputSchema", msg, sizeof(msg)) != 0))
        return "a schema the gateway cannot use";
    return NULL;
}

static const char *prompt_unusable(fed_plan_t *p, const cJSON *up)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(up, "arguments");
    (void)p;
    return args && !cJSON_IsArray(args) ? "arguments is not an array" : NULL;
}

/* A resource's uri is kept unique among this import's (recorded once it is taken). */
static const char *resource_unusable(fed_plan_t *p, const cJSON *up)
{
    const char *uri = str_of(up, "uri");
    if (!uri || !uri[0] || strlen(uri) > KINDS_URI_MAX)
        return "no uri, or longer than 2048 bytes";
    if (cJSON_GetObjectItemCaseSensitive(p->uris, uri))
        return "another resource of this upstream has the same uri";
    cJSON_AddItemToObject(p->uris, uri, cJSON_CreateTrue());
    return NULL;
}

static const char *template_unusable(fed_plan_t *p, const cJSON *up)
{
    const char *t = str_of(up, "uriTemplate");
    char err[200];
    (void)p;
    if (!t || !t[0] || strlen(t) > KINDS_URI_MAX)
        return "no uriTemplate, or longer than 2048 bytes";
    if (kinds_template_check(t, err, sizeof(err)) < 0)
        return "not a template mcpq serves (RFC 6570 level 1, {var} only: common/kinds.h)";
    return NULL;
}

/* How one kind of the catalog becomes registry objects. */
typedef struct fed_kind {
    const char *kind;           /* the registry kind */
    const char *list;           /* the catalog's member */
    const char *const *members; /* copied into the version */
    const char *call_key;       /* the executor member naming the upstream object, or NULL */
    const char *mode;           /* the version's "mode", or NULL */
    int sanitize;               /* names made valid (object_name) */
    const char *(*unusable)(fed_plan_t *p, const cJSON *up);
} fed_kind_t;

static const char *const tool_members[] = {"title",        "description", "inputSchema",
                                           "outputSchema", "annotations", NULL};
static const char *const prompt_members[] = {"title", "description", "arguments", NULL};
static const char *const resource_members[] = {"uri",         "title", "description", "mimeType",
                                               "annotations", "size",  NULL};
static const char *const template_members[] = {"uriTemplate", "title",       "description",
                                               "mimeType",    "annotations", NULL};

/* In import order: tools first keep today's names when a resource or prompt would take one. */
static const fed_kind_t fed_kinds[] = {
    {"tool", "tools", tool_members, "tool", "sync", 0, tool_unusable},
    {"prompt", "prompts", prompt_members, "prompt", NULL, 0, prompt_unusable},
    {"resource", "resources", resource_members, NULL, NULL, 1, resource_unusable},
    {"resource_template", "resourceTemplates", template_members, NULL, NULL, 1, template_unusable},
};

/* The objects of kind k that the catalog lists; the number imported. */
static int plan_kind(fed_plan_t *p, const fed_kind_t *k, const cJSON *catalog)
{
    char name[160];
    int n = 0;
    const cJSON *up;
    cJSON_ArrayForEach(up, cJSON_GetObjectItemCaseSensitive(catalog, k->list))
    {
        const char *un = str_of(up, "name");
        if (object_name(p, k->kind, un, k->sanitize, name, sizeof(name)) < 0)
            continue;
        const char *why = k->unusable(p, up);
        if (why) {
            skip(p, k->kind, un, why);
            continue;
        }
        cJSON *v = version_body(p, up, k->members, k->call_key, un);
        if (k->mode)
            cJSON_AddStringToObject(v, "mode", k->mode);
        put_object(p, k->kind, name, v);
        n++;
    }
    return n;
}

/* This server's earlier imports that this round did not import are deleted. */
static void plan_prune(fed_plan_t *p)
{
    for (const cJSON *d = p->docs ? p->docs->child : NULL; d; d = d->next) {
        const char *name = str_of(d, "name");
        if (strncmp(d->string, "tool:", 5) != 0 || !mine(p, d) || !name ||
            cJSON_GetObjectItemCaseSensitive(p->names, name))
            continue;
        cJSON_AddItemToObject(p->out, d->string, cJSON_CreateNull());
        p->c.deleted++;
        log_event(LOG_INFO, "federation: object the upstream no longer lists deleted", "tenant",
                  p->tenant, "server", p->sname, "name", name, (char *)NULL);
    }
}

cJSON *ing_federate_plan(const cJSON *server, const cJSON *catalog, const cJSON *docs,
                         const char *now, ing_federate_counts_t *counts)
{
    fed_plan_t p = {
        .server = server,
        .tenant = str_of(server, "tenant"),
        .sname = str_of(server, "name"),
        .now = now,
        .fed = cJSON_GetObjectItemCaseSensitive(server, "federate"),
        .pin = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(server, "federate"), "pin")),
        .docs = docs,
    };
    if (!p.tenant || !p.sname || !cJSON_IsObject(p.fed))
        return NULL;
    const char *prefix = str_of(p.fed, "prefix");
    if (prefix)
        snprintf(p.prefix, sizeof(p.prefix), "%s", prefix);
    else
        snprintf(p.prefix, sizeof(p.prefix), "%s_", p.sname);
    p.out = cJSON_CreateObject();
    p.names = cJSON_CreateObject();
    p.uris = cJSON_CreateObject();
    if (p.out && p.names && p.uris) {
        p.c.tools = plan_kind(&p, &fed_kinds[0], catalog);
        p.c.prompts = plan_kind(&p, &fed_kinds[1], catalog);
        p.c.resources = plan_kind(&p, &fed_kinds[2], catalog);
        p.c.templates = plan_kind(&p, &fed_kinds[3], catalog);
        plan_prune(&p);
    } else {
        cJSON_Delete(p.out);
        p.out = NULL;
    }
    cJSON_Delete(p.names);
    cJSON_Delete(p.uris);
    if (counts)
        *counts = p.c;
    return p.out;
}

/* ---- the catalog job ---- */

/* The mcpq/catalog envelope (schemas/job.schema.json) for e's upstream; text to cJSON_free. */
static char *catalog_envelope(const fed_entry_t *e, const char *job_id, long long timeout_ms)
{
    const cJSON *fed = cJSON_GetObjectItemCaseSensitive(e->server, "federate");
    int64_t now = util_now_ms();
    cJSON *env = cJSON_CreateObject();
    cJSON_AddNumberToObject(env, "v", 1);
    cJSON_AddStringToObject(env, "job_id", job_id);
    cJSON_AddStringToObject(env, "method", "mcpq/catalog");
    cJSON_AddStringToObject(env, "tenant", str_of(e->server, "tenant"));
    cJSON_AddStringToObject(env, "server", str_of(e->server, "name"));
    cJSON_AddStringToObject(env, "tool", str_of(e->server, "name"));
    cJSON_AddStringToObject(env, "tool_version", "catalog");
    cJSON_AddObjectToObject(env, "arguments");
    cJSON_AddArrayToObject(env, "attachments");
    cJSON_AddNullToObject(env, "task_id");
    cJSON_AddItemToObject(env, "executor", upstream_executor(fed));
    cJSON_AddStringToObject(env, "mode", "sync");
    cJSON_AddNumberToObject(env, "timeout_ms", (double)timeout_ms);
    cJSON_AddNumberToObject(env, "created_ms", (double)now);
    cJSON_AddNumberToObject(env, "deadline_ms", (double)(now + timeout_ms));
    char *s = cJSON_PrintUnformatted(env);
    cJSON_Delete(env);
    return s;
}

/* GET key on the thread's connection *rc (made when NULL): the reply (string or nil) to free,
 * or NULL when Redis failed (the connection is dropped, made again next time). */
static redisReply *fed_get(ing_federate_t *f, redisContext **rc, const char *key)
{
    char err[256];
    if (!*rc)
        *rc = kv_connect(f->ctx->kvt, (int)f->ctx->set->redis_timeout_ms, err, sizeof(err));
    redisReply *r = *rc ? redisCommand(*rc, "GET %s", key) : NULL;
    if (r && r->type != REDIS_REPLY_ERROR)
        return r;
    if (r)
        freeReplyObject(r);
    redisFree(*rc);
    *rc = NULL;
    return NULL;
}

/* Waits for job_id's result record; the catalog (new) or NULL with why filled. */
static cJSON *catalog_wait(ing_federate_t *f, redisContext **rc, const char *job_id,
                           long long until_mono, char *why, size_t why_size)
{
    char key[300];
    snprintf(key, sizeof(key), "%s%s", NAMES_KEY_RESULT, job_id);
    while (!f->stop && util_mono_ms() < until_mono) {
        redisReply *r = fed_get(f, rc, key); /* NULL (Redis failed) or nil: poll again */
        if (r && r->type == REDIS_REPLY_STRING) {
            cJSON *rec = cJSON_ParseWithLength(r->str, r->len);
            freeReplyObject(r);
            const char *status = str_of(rec, "status");
            cJSON *res = cJSON_DetachItemFromObjectCaseSensitive(rec, "result");
            if (status && strcmp(status, "ok") == 0 && cJSON_IsObject(res)) {
                cJSON_Delete(rec);
                return res;
            }
            const char *msg = str_of(cJSON_GetObjectItemCaseSensitive(rec, "error"), "message");
            snprintf(why, why_size, "the catalog job failed (%s): %.300s",
                     status ? status : "no status", msg ? msg : "no error message");
            cJSON_Delete(res);
            cJSON_Delete(rec);
            return NULL;
        }
        if (r)
            freeReplyObject(r);
        usleep(FED_POLL_MS * 1000);
    }
    snprintf(why, why_size, "no worker answered the catalog job %s in time", job_id);
    return NULL;
}

/* Publishes the catalog job of e and waits for its result: the catalog or NULL (why filled). */
static cJSON *fed_catalog(ing_federate_t *f, fed_entry_t *e, redisContext **rc, char *why,
                          size_t why_size)
{
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(e->server, "federate"), "timeout_ms");
    long long timeout_ms =
        cJSON_IsNumber(timeout) ? (long long)timeout->valuedouble : FED_CATALOG_TIMEOUT_MS;
    char hex[33], job_id[40];
    util_random_hex(hex, 16);
    snprintf(job_id, sizeof(job_id), "j_%s", hex);
    char *payload = catalog_envelope(e, job_id, timeout_ms);
    char *opaque = strdup(job_id); /* freed by the delivery callback (toolcall.h) */
    if (!payload || !opaque) {
        cJSON_free(payload);
        free(opaque);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    int rc0 = mq_producer_send(f->ctx->producer, f->ctx->set->topic_jobs, job_id, NULL, payload,
                               strlen(payload), NULL, NULL, opaque);
    cJSON_free(payload);
    if (rc0 < 0) {
        free(opaque);
        snprintf(why, why_size, "cannot publish the catalog job: %s",
                 rc0 == MCPQ_EUNAVAIL  ? "the job queue (Kafka) is unavailable"
                 : rc0 == MCPQ_ETOOBIG ? "the envelope is too large"
                                       : "the producer's queue refused it");
        return NULL;
    }
    return catalog_wait(f, rc, job_id, util_mono_ms() + timeout_ms + FED_RESULT_SLACK_MS, why,
                        why_size);
}

/* Writes the plan of catalog for e (compare-and-set, retried). 0 or a negative code, err set. */
static int fed_store(ing_federate_t *f, fed_entry_t *e, redisContext *c, const cJSON *catalog,
                     ing_federate_counts_t *counts, cJSON **events, char *err, size_t err_size)
{
    char field[300], now[32];
    for (int attempt = 0; attempt < FED_APPLY_TRIES; attempt++) {
        cJSON_Delete(*events);
        *events = cJSON_CreateArray();
        ing_regstore_state_t st;
        int rc = ing_regstore_load(c, &st, err, err_size);
        if (rc < 0) {
            ing_regstore_free(&st);
            return rc;
        }
        ing_regstore_field_server(field, sizeof(field), str_of(e->server, "tenant"),
                                  str_of(e->server, "name"));
        if (!ing_regstore_get(&st, field)) {
            ing_regstore_free(&st);
            snprintf(err, err_size, "the server is not in the registry");
            return MCPQ_EINVAL;
        }
        ing_regstore_now(now, sizeof(now));
        cJSON *plan = ing_federate_plan(e->server, catalog, st.docs, now, counts);
        rc = plan ? 0 : MCPQ_ENOMEM;
        for (cJSON *x = plan ? plan->child : NULL; x && rc == 0; x = x->next) {
            /* what this write does to a tool's pin state, reported once it is committed */
            cJSON *ev = ing_pin_transition(ing_regstore_get(&st, x->string), x);
            if (ev)
                cJSON_AddItemToArray(*events, ev);
            rc = ing_regstore_put(&st, x->string, cJSON_IsNull(x) ? NULL : cJSON_Duplicate(x, 1));
        }
        cJSON_Delete(plan);
        long long rev;
        if (rc == 0)
            rc = ing_regstore_commit(c, &st, &rev, err, err_size);
        else
            snprintf(err, err_size, "out of memory");
        ing_regstore_free(&st);
        if (rc != RS_CONFLICT)
            return rc;
    }
    snprintf(err, err_size, "the registry kept changing under %d attempts", FED_APPLY_TRIES);
    return MCPQ_EUNAVAIL;
}

/* After a committed import: each tool it quarantined (ing_pin_transition) is counted, logged
 * and sent to the tenant's webhooks as tool.changed; each it restored is logged. */
static void pin_report(ing_federate_t *f, const char *tenant, const char *server,
                       const cJSON *events)
{
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        const char *tool = str_of(ev, "tool");
        const char *old = str_of(ev, "old_sha256");
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev, "quarantined"))) {
            log_event(LOG_INFO, "federation: tool definition is the approved one again", "tenant",
                      tenant, "server", server, "tool", tool, (char *)NULL);
            continue;
        }
        char *changed = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(ev, "changed"));
        log_event(LOG_WARN,
                  "federation: tool quarantined: its definition is not the approved one (approve "
                  "it through the admin API)",
                  "tenant", tenant, "server", server, "tool", tool, "reason", str_of(ev, "reason"),
                  "old_sha256", old ? old : "", "new_sha256", str_of(ev, "new_sha256"), "changed",
                  changed ? changed : "[]", (char *)NULL);
        cJSON_free(changed);
        ing_metrics_tool_quarantined(f->ctx->metrics);
        cJSON *data = cJSON_Duplicate(ev, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(data, "quarantined");
        cJSON_AddStringToObject(data, "tenant", tenant);
        cJSON_AddStringToObject(data, "server", server);
        char *json = data ? cJSON_PrintUnformatted(data) : NULL, err[256];
        cJSON_Delete(data);
        if (json &&
            whq_event(f->ctx->kv, tenant, WHQ_EVENT_TOOL_CHANGED, "", json, err, sizeof(err)) < 0)
            log_event(LOG_WARN, "federation: cannot queue the tool.changed event", "tenant", tenant,
                      "tool", tool, "error", err, (char *)NULL);
        cJSON_free(json);
    }
}

static void fed_failed(fed_entry_t *e, const char *what, const char *why)
{
    if (!e->failures++)
        log_event(LOG_WARN, what, "tenant", str_of(e->server, "tenant"), "server",
                  str_of(e->server, "name"), "error", why, (char *)NULL);
}

/* One import of e; 0 or a negative code (logged). */
static int fed_import(ing_federate_t *f, fed_entry_t *e, redisContext **rc)
{
    char why[512] = "";
    cJSON *catalog = fed_catalog(f, e, rc, why, sizeof(why));
    if (!catalog) {
        if (!f->stop)
            fed_failed(e, "federation: cannot list the upstream (will retry)", why);
        return MCPQ_EUNAVAIL;
    }
    ing_federate_counts_t n = {0};
    cJSON *events = NULL;
    int code = *rc ? fed_store(f, e, *rc, catalog, &n, &events, why, sizeof(why)) : MCPQ_EUNAVAIL;
    if (code < 0) {
        fed_failed(e, "federation: cannot store the imported objects (will retry)",
                   why[0] ? why : "Redis unavailable");
        redisFree(*rc);
        *rc = NULL;
    } else {
        char num[8][16];
        const int vals[8] = {n.tools,   n.resources, n.templates, n.prompts,
                             n.created, n.updated,   n.deleted,   n.skipped};
        for (int i = 0; i < 8; i++)
            snprintf(num[i], sizeof(num[i]), "%d", vals[i]);
        const char *version = str_of(catalog, "protocolVersion");
        log_event(LOG_INFO, "federation: upstream imported", "tenant", str_of(e->server, "tenant"),
                  "server", str_of(e->server, "name"), "version", version ? version : "", "tools",
                  num[0], "resources", num[1], "templates", num[2], "prompts", num[3], "created",
                  num[4], "updated", num[5], "deleted", num[6], "skipped", num[7], (char *)NULL);
        e->failures = 0;
        pin_report(f, str_of(e->server, "tenant"), str_of(e->server, "name"), events);
    }
    cJSON_Delete(events);
    cJSON_Delete(catalog);
    return code;
}

/* The entry of server's tenant and name among f's, or NULL. */
static fed_entry_t *entry_find(ing_federate_t *f, const cJSON *server)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->entries[i].server &&
            strcmp(str_of(f->entries[i].server, "tenant"), str_of(server, "tenant")) == 0 &&
            strcmp(str_of(f->entries[i].server, "name"), str_of(server, "name")) == 0)
            return &f->entries[i];
    return NULL;
}

/* Follows the registry: when its revision moved, the federated servers are read again. A
 * server kept with the same federate keeps its schedule; a new or changed one is due now; one
 * gone (or without federate now) is dropped, its imports left as they are. */
static void fed_scan(ing_federate_t *f, redisContext **rc)
{
    char err[256];
    redisReply *r = fed_get(f, rc, NAMES_KEY_REGISTRY_REV);
    if (!r)
        return;
    long long rev = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    if (rev == f->rev)
        return;
    ing_regstore_state_t st;
    if (ing_regstore_load(*rc, &st, err, sizeof(err)) < 0) {
        ing_regstore_free(&st);
        return;
    }
    size_t n = 0;
    for (const cJSON *d = st.docs->child; d; d = d->next)
        n += strncmp(d->string, "server:", 7) == 0 &&
             cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(d, "federate"));
    fed_entry_t *entries = n ? calloc(n, sizeof(*entries)) : NULL;
    if (n && !entries) {
        ing_regstore_free(&st);
        return;
    }
    size_t k = 0;
    for (const cJSON *d = st.docs->child; d && k < n; d = d->next) {
        if (strncmp(d->string, "server:", 7) != 0 ||
            !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(d, "federate")) ||
            !str_of(d, "tenant") || !str_of(d, "name"))
            continue;
        fed_entry_t *old = entry_find(f, d);
        if (old && cJSON_Compare(cJSON_GetObjectItemCaseSensitive(old->server, "federate"),
                                 cJSON_GetObjectItemCaseSensitive(d, "federate"), 1)) {
            entries[k++] = *old; /* the same upstream: its schedule goes on */
            old->server = NULL;
            continue;
        }
        entries[k].server = cJSON_Duplicate(d, 1);
        if (entries[k].server)
            k++;
    }
    for (size_t i = 0; i < f->n; i++)
        cJSON_Delete(f->entries[i].server);
    free(f->entries);
    f->entries = entries;
    f->n = k;
    f->rev = st.rev;
    ing_regstore_free(&st);
}

static void *fed_thread(void *arg)
{
    ing_federate_t *f = arg;
    redisContext *rc = NULL;
    while (!f->stop) {
        if ((long long)util_mono_ms() >= f->scan_ms) {
            fed_scan(f, &rc);
            f->scan_ms = (long long)util_mono_ms() + FED_SCAN_MS;
        }
        long long now = (long long)util_mono_ms();
        for (size_t i = 0; i < f->n && !f->stop; i++) {
            fed_entry_t *e = &f->entries[i];
            if (e->due_ms > now)
                continue;
            if (fed_import(f, e, &rc) == 0) {
                e->backoff_ms = 0;
                e->due_ms = (long long)util_mono_ms() + f->ctx->set->federate_refresh_ms;
            } else {
                e->backoff_ms = e->backoff_ms ? e->backoff_ms * 2 : FED_BACKOFF_MIN_MS;
                if (e->backoff_ms > FED_BACKOFF_MAX_MS)
                    e->backoff_ms = FED_BACKOFF_MAX_MS;
                e->due_ms = (long long)util_mono_ms() + e->backoff_ms;
            }
        }
        usleep(FED_TICK_MS * 1000);
    }
    redisFree(rc);
    return NULL;
}

ing_federate_t *ing_federate_start(ing_ctx_t *ctx)
{
    ing_federate_t *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->ctx = ctx;
    f->rev = -1;
    if (pthread_create(&f->thread, NULL, fed_thread, f) != 0) {
        log_event(LOG_ERROR, "federation: cannot start its thread", (char *)NULL);
        free(f);
        return NULL;
    }
    return f;
}

void ing_federate_stop(ing_federate_t *f)
{
    if (!f)
        return;
    f->stop = 1;
    pthread_join(f->thread, NULL);
    for (size_t i = 0; i < f->n; i++)
        cJSON_Delete(f->entries[i].server);
    free(f->entries);
    free(f);
}
