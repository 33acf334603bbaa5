/*
 * cfgsecret.c - the secrets of a config document (cfgsecret.h). One walk over their places,
 * used to hide them, to bring the stored ones back and to refuse a placeholder.
 */
#include "cfgsecret.h"

#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_MAX 1024    /* "tool/<tenant>/<name>/version/<v>/executor/headers/<name>" */
#define JPATH_MAX 1024 /* "$.tools[3].versions[0].executor.headers.Authorization" */

/* Called for each string at a secret's place: id names the place by object identity (NULL
 * when a name on the way is not a string or is too long), path by JSON path. Nonzero stops. */
typedef int (*visit_fn)(cJSON *item, const char *id, const char *path, void *arg);

typedef struct walk {
    visit_fn fn;
    void *arg;
} walk_t;

/* The n parts joined with '/' into buf: a place's identity. NULL when a part is NULL (a name on
 * the way is not a string) or the result does not fit. */
static const char *join(char *buf, size_t size, const char *const *parts, size_t n)
{
    size_t len = 0;
    for (size_t k = 0; k < n; k++) {
        if (!parts[k])
            return NULL;
        int w = snprintf(buf + len, size - len, "%s%s", k ? "/" : "", parts[k]);
        if (w < 0 || (size_t)w >= size - len)
            return NULL;
        len += (size_t)w;
    }
    return buf;
}

#define JOIN(buf, ...)                                                                             \
    join(buf, sizeof(buf), (const char *const[]){__VA_ARGS__},                                     \
         sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* The place holder.member (a string). */
static int visit(walk_t *w, cJSON *holder, const char *member, const char *id, const char *path)
{
    cJSON *it = cJSON_GetObjectItemCaseSensitive(holder, member);
    char i2[ID_MAX], p2[JPATH_MAX];
    if (!cJSON_IsString(it))
        return 0;
    const char *ip = JOIN(i2, id, member);
    snprintf(p2, sizeof(p2), "%s.%s", path, member);
    return w->fn(it, ip, p2, w->arg);
}

/* Every string value of the object holder.member (headers, env). */
static int visit_map(walk_t *w, cJSON *holder, const char *member, const char *id, const char *path)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(holder, member), *e;
    char i2[ID_MAX], p2[JPATH_MAX];
    int rc = 0;
    if (!cJSON_IsObject(m))
        return 0;
    for (e = m->child; e && !rc; e = e->next) {
        if (!cJSON_IsString(e) || !e->string)
            continue;
        const char *ip = JOIN(i2, id, member, e->string);
        snprintf(p2, sizeof(p2), "%s.%s.%s", path, member, e->string);
        rc = w->fn(e, ip, p2, w->arg);
    }
    return rc;
}

static int walk_executor(walk_t *w, cJSON *x, const char *id, const char *path)
{
    int rc = visit(w, x, "secret", id, path);
    if (!rc)
        rc = visit_map(w, x, "headers", id, path);
    if (!rc)
        rc = visit_map(w, x, "env", id, path);
    return rc;
}

static int walk_federate(walk_t *w, cJSON *f, const char *id, const char *path)
{
    return visit_map(w, f, "headers", id, path);
}

/* Each element of o[member] with its index. */
#define EACH(e, i, o, member)                                                                      \
    for (cJSON *e = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, member))                     \
                        ? cJSON_GetObjectItemCaseSensitive(o, member)->child                       \
                        : NULL;                                                                    \
         e; e = e->next, i++)

static int walk_tenant(walk_t *w, cJSON *t, int ti)
{
    static const struct {
        const char *array, *kind, *id_key, *member;
    } subs[] = {{"api_keys", "api_key", "id", "sha256"},
                {"apps", "app", "app_id", "secret"},
                {"apps", "app", "app_id", "previous_secret"}, /* during a rotation */
                {"webhooks", "webhook", "id", "secret"},
                {"webhooks", "webhook", "id", "previous_secret"}};
    char tid[ID_MAX], id[ID_MAX], path[JPATH_MAX];
    const char *tp = JOIN(tid, "tenant", str_of(t, "id"));
    int rc = 0;
    for (size_t k = 0; k < sizeof(subs) / sizeof(subs[0]) && !rc; k++) {
        int i = 0;
        EACH(e, i, t, subs[k].array)
        {
            const char *ip = JOIN(id, tp, subs[k].kind, str_of(e, subs[k].id_key));
            snprintf(path, sizeof(path), "$.tenants[%d].%s[%d]", ti, subs[k].array, i);
            if ((rc = visit(w, e, subs[k].member, ip, path)) != 0)
                break;
        }
    }
    if (!rc) { /* the introspection client's secret (docs/config-file.md "OAuth") */
        cJSON *intro = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(t, "oauth"), "introspection");
        snprintf(path, sizeof(path), "$.tenants[%d].oauth.introspection", ti);
        if (cJSON_IsObject(intro))
            rc = visit(w, intro, "client_secret", JOIN(id, tp, "oauth", "introspection"), path);
    }
    return rc;
}

static int walk_doc(walk_t *w, cJSON *doc)
{
    char id[ID_MAX], vid[ID_MAX], path[JPATH_MAX], vpath[JPATH_MAX];
    int rc = 0, i = 0;
    EACH(t, i, doc, "tenants")
    {
        if ((rc = walk_tenant(w, t, i)) != 0)
            return rc;
    }
    i = 0;
    EACH(s, i, doc, "servers")
    {
        const char *ip = JOIN(id, "server", str_of(s, "tenant"), str_of(s, "name"), "federate");
        snprintf(path, sizeof(path), "$.servers[%d].federate", i);
        cJSON *f = cJSON_GetObjectItemCaseSensitive(s, "federate");
        if (cJSON_IsObject(f) && (rc = walk_federate(w, f, ip, path)) != 0)
            return rc;
    }
    i = 0;
    EACH(t, i, doc, "tools")
    {
        const char *ip = JOIN(id, "tool", str_of(t, "tenant"), str_of(t, "name"));
        int j = 0;
        EACH(v, j, t, "versions")
        {
            const char *vp = JOIN(vid, ip, "version", str_of(v, "version"), "executor");
            snprintf(vpath, sizeof(vpath), "$.tools[%d].versions[%d].executor", i, j);
            cJSON *x = cJSON_GetObjectItemCaseSensitive(v, "executor");
            if (cJSON_IsObject(x) && (rc = walk_executor(w, x, vp, vpath)) != 0)
                return rc;
        }
    }
    return 0;
}

/* ---- hiding ---- */

static int hide(cJSON *item, const char *id, const char *path, void *arg)
{
    (void)id, (void)path, (void)arg;
    return cJSON_SetValuestring(item, CFG_HIDDEN) ? 0 : MCPQ_ENOMEM;
}

void cfg_secret_redact(cJSON *doc)
{
    walk_t w = {hide, NULL};
    walk_doc(&w, doc);
}

void cfg_secret_redact_executor(cJSON *executor)
{
    walk_t w = {hide, NULL};
    walk_executor(&w, executor, NULL, "");
}

void cfg_secret_redact_federate(cJSON *federate)
{
    walk_t w = {hide, NULL};
    walk_federate(&w, federate, NULL, "");
}

/* ---- refusing a placeholder ---- */

typedef struct found {
    char *err;
    size_t err_size;
} found_t;

static int is_hidden(const cJSON *item)
{
    return strcmp(item->valuestring, CFG_HIDDEN) == 0;
}

static int refuse_one(cJSON *item, const char *id, const char *path, void *arg)
{
    found_t *f = arg;
    (void)id;
    if (!is_hidden(item))
        return 0;
    snprintf(f->err, f->err_size,
             "%s: \"" CFG_HIDDEN "\" is the placeholder of a redacted export, not a value: give "
             "the value (PUT /admin/v1/config keeps the stored one in its place)",
             path);
    return MCPQ_EINVAL;
}

int cfg_secret_refuse(cJSON *doc, char *err, size_t err_size)
{
    found_t f = {err, err_size};
    walk_t w = {refuse_one, &f};
    return walk_doc(&w, doc);
}

/* ---- restoring the stored values ---- */

typedef struct entry {
    char *id;
    const char *value; /* the stored document's string */
} entry_t;

typedef struct table {
    entry_t *e;
    size_t n, cap;
} table_t;

static int collect(cJSON *item, const char *id, const char *path, void *arg)
{
    table_t *t = arg;
    (void)path;
    if (!id)
        return 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        entry_t *e = realloc(t->e, cap * sizeof(*e));
        if (!e)
            return MCPQ_ENOMEM;
        t->e = e;
        t->cap = cap;
    }
    t->e[t->n].id = strdup(id);
    if (!t->e[t->n].id)
        return MCPQ_ENOMEM;
    t->e[t->n++].value = item->valuestring;
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const entry_t *)a)->id, ((const entry_t *)b)->id);
}

typedef struct restore {
    table_t *t;
    char *err;
    size_t err_size;
} restore_t;

static int restore_one(cJSON *item, const char *id, const char *path, void *arg)
{
    restore_t *r = arg;
    if (!is_hidden(item))
        return 0;
    entry_t key = {.id = (char *)id}, *hit = NULL;
    if (id && r->t->n)
        hit = bsearch(&key, r->t->e, r->t->n, sizeof(entry_t), entry_cmp);
    if (!hit) {
        snprintf(r->err, r->err_size,
                 "%s: \"" CFG_HIDDEN "\" stands for the stored value, but the registry holds none "
                 "there (a new object, header or variable): give the value",
                 path);
        return MCPQ_EINVAL;
    }
    return cJSON_SetValuestring(item, hit->value) ? 0 : MCPQ_ENOMEM;
}

int cfg_secret_restore(cJSON *doc, const cJSON *stored, char *err, size_t err_size)
{
    table_t t = {0};
    /* The walk only reads stored: collect keeps pointers into it. */
    walk_t w = {collect, &t};
    int rc = walk_doc(&w, (cJSON *)stored);
    if (rc == 0) {
        if (t.n)
            qsort(t.e, t.n, sizeof(entry_t), entry_cmp);
        restore_t r = {&t, err, err_size};
        walk_t w2 = {restore_one, &r};
        rc = walk_doc(&w2, doc);
    }
    if (rc == MCPQ_ENOMEM)
        snprintf(err, err_size, "out of memory");
    for (size_t i = 0; i < t.n; i++)
        free(t.e[i].id);
    free(t.e);
    return rc;
}
