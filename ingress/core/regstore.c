#include "regstore.h"
#include "rscript.h"
#include "names.h"

#include "cfg.h"
#include "cfgkinds.h"
#include "err.h"
#include "util.h"
#include "webhook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REG_KEY NAMES_KEY_REGISTRY
#define REG_REV_KEY NAMES_KEY_REGISTRY_REV
#define APPLY_TRIES 8
#define SEED_FIELD "meta:config"

static const char *meta_keys[] = {"createTime", "updateTime", NULL};

void ing_regstore_field_tenant(char *buf, size_t size, const char *tenant)
{
    snprintf(buf, size, "tenant:%s", tenant);
}

void ing_regstore_field_server(char *buf, size_t size, const char *tenant, const char *name)
{
    snprintf(buf, size, "server:%s:%s", tenant, name);
}

void ing_regstore_field_tool(char *buf, size_t size, const char *tenant, const char *name)
{
    snprintf(buf, size, "tool:%s:%s", tenant, name);
}

static int is_doc_field(const char *f)
{
    return strncmp(f, "tenant:", 7) == 0 || strncmp(f, "server:", 7) == 0 ||
           strncmp(f, "tool:", 5) == 0;
}

int ing_regstore_load(redisContext *c, ing_regstore_state_t *st, char *err, size_t err_size)
{
    memset(st, 0, sizeof(*st));
    st->docs = cJSON_CreateObject();
    st->raw = cJSON_CreateObject();
    st->staged = cJSON_CreateObject();
    st->replaced = cJSON_CreateArray();
    if (!st->docs || !st->raw || !st->staged || !st->replaced) {
        snprintf(err, err_size, "out of memory");
        return MCPQ_ENOMEM;
    }
    redisReply *rr = NULL, *r = NULL;
    redisAppendCommand(c, "GET %s", REG_REV_KEY);
    redisAppendCommand(c, "HGETALL %s", REG_KEY);
    if (redisGetReply(c, (void **)&rr) != REDIS_OK || redisGetReply(c, (void **)&r) != REDIS_OK) {
        snprintf(err, err_size, "redis: %s", c->errstr);
        if (rr)
            freeReplyObject(rr);
        return MCPQ_EUNAVAIL;
    }
    st->rev = rr->type == REDIS_REPLY_STRING ? strtoll(rr->str, NULL, 10) : 0;
    freeReplyObject(rr);
    if (r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, err_size, "redis: unexpected reply to HGETALL %s", REG_KEY);
        freeReplyObject(r);
        return MCPQ_EIO;
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *f = r->element[i]->str;
        const redisReply *v = r->element[i + 1];
        /* The config file's mark: its text only, which ing_regstore_seed compares and sets. */
        if (strcmp(f, SEED_FIELD) == 0) {
            cJSON_AddItemToObject(st->raw, f, cJSON_CreateString(v->str));
            continue;
        }
        if (!is_doc_field(f))
            continue;
        cJSON *doc = cJSON_ParseWithLength(v->str, v->len);
        cJSON *raw = cJSON_CreateString(v->str);
        if (!raw) {
            cJSON_Delete(doc);
            freeReplyObject(r);
            snprintf(err, err_size, "out of memory");
            return MCPQ_ENOMEM;
        }
        cJSON_AddItemToObject(st->raw, f, raw);
        /* An unreadable document is kept out of docs; writing the field still checks its
         * text, so it can be replaced. */
        if (cJSON_IsObject(doc))
            cJSON_AddItemToObject(st->docs, f, doc);
        else
            cJSON_Delete(doc);
    }
    freeReplyObject(r);
    return 0;
}

void ing_regstore_free(ing_regstore_state_t *st)
{
    cJSON_Delete(st->docs);
    cJSON_Delete(st->raw);
    cJSON_Delete(st->staged);
    cJSON_Delete(st->replaced);
    memset(st, 0, sizeof(*st));
}

cJSON *ing_regstore_get(ing_regstore_state_t *st, const char *field)
{
    return cJSON_GetObjectItemCaseSensitive(st->docs, field);
}

int ing_regstore_put(ing_regstore_state_t *st, const char *field, cJSON *doc)
{
    /* The replaced document stays alive until ing_regstore_free: callers may still hold it. */
    cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(st->docs, field);
    if (old)
        cJSON_AddItemToArray(st->replaced, old);
    if (doc)
        cJSON_AddItemToObject(st->docs, field, doc);
    if (!cJSON_HasObjectItem(st->staged, field))
        cJSON_AddItemToObject(st->staged, field, cJSON_CreateTrue());
    return cJSON_HasObjectItem(st->staged, field) ? 0 : MCPQ_ENOMEM;
}

int ing_regstore_commit(redisContext *c, ing_regstore_state_t *st, long long *rev, char *err,
                        size_t err_size)
{
    *rev = st->rev;
    int n = cJSON_GetArraySize(st->staged);
    if (n == 0)
        return 0;
    size_t argc = 3 + 3 * (size_t)n, k = 0; /* 2 KEYS, channel, triples */
    const char **argv = calloc(argc, sizeof(*argv));
    size_t *lens = calloc(argc, sizeof(*lens));
    char **owned = calloc((size_t)n + 1, sizeof(*owned));
    int rc = MCPQ_ENOMEM;
    if (!argv || !lens || !owned)
        goto out;
    argv[k++] = REG_KEY;
    argv[k++] = REG_REV_KEY;
    int i = 0;
    for (const cJSON *s = st->staged->child; s; s = s->next, i++) {
        const cJSON *doc = cJSON_GetObjectItemCaseSensitive(st->docs, s->string);
        const char *old =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st->raw, s->string));
        owned[i] = doc ? cJSON_PrintUnformatted(doc) : NULL;
        if (doc && !owned[i])
            goto out;
        argv[k++] = s->string;
        argv[k++] = old ? old : "";
        argv[k++] = owned[i] ? owned[i] : "";
    }
    /* ARGV[1] is the channel: insert it before the triples. */
    memmove(&argv[3], &argv[2], (k - 2) * sizeof(*argv));
    argv[2] = RS_CHANNEL;
    k++;
    for (size_t j = 0; j < k; j++)
        lens[j] = strlen(argv[j]);
    redisReply *r =
        rscript_run(c, rscript_get("regstore_commit"), 2, (int)k, argv, lens, err, err_size);
    if (!r) {
        rc = c->err ? MCPQ_EUNAVAIL : MCPQ_EIO; /* err: the connection's, or the error reply */
    } else if (r->type == REDIS_REPLY_INTEGER) {
        *rev = r->integer;
        rc = 0;
    } else if (r->type == REDIS_REPLY_ARRAY) {
        rc = RS_CONFLICT;
    } else {
        snprintf(err, err_size, "redis: unexpected reply");
        rc = MCPQ_EIO;
    }
    if (r)
        freeReplyObject(r);
out:
    if (rc == MCPQ_ENOMEM)
        snprintf(err, err_size, "out of memory");
    for (int j = 0; owned && j < n; j++)
        cJSON_free(owned[j]);
    free(owned);
    free(argv);
    free(lens);
    return rc;
}

void ing_regstore_now(char *buf, size_t size)
{
    util_format_utc(util_now_ms(), buf, size);
}

static void set_string(cJSON *o, const char *key, const char *val)
{
    cJSON *v = cJSON_CreateString(val);
    if (!v)
        return;
    if (cJSON_HasObjectItem(o, key))
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
    else
        cJSON_AddItemToObject(o, key, v);
}

void ing_regstore_touch(cJSON *o, const char *now)
{
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "createTime")))
        set_string(o, "createTime", now);
    set_string(o, "updateTime", now);
}

void ing_regstore_etag(const cJSON *o, const char *const *skip, char out[21])
{
    cJSON *copy = cJSON_Duplicate(o, 1);
    for (size_t i = 0; copy && skip && skip[i]; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(copy, skip[i]);
    char *s = copy ? cJSON_PrintUnformatted(copy) : NULL;
    char hex[65];
    util_sha256_hex(s ? s : "", s ? strlen(s) : 0, hex);
    memcpy(out, hex, 20);
    out[20] = '\0';
    cJSON_free(s);
    cJSON_Delete(copy);
}

void ing_regstore_strip_meta_one(cJSON *o)
{
    for (size_t i = 0; meta_keys[i]; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(o, meta_keys[i]);
}

static void strip_array(cJSON *o, const char *key)
{
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, key))
    {
        ing_regstore_strip_meta_one(e);
    }
}

void ing_regstore_strip_meta(cJSON *doc)
{
    cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(doc, "tenants"))
    {
        ing_regstore_strip_meta_one(o);
        strip_array(o, "api_keys");
        strip_array(o, "apps");
        strip_array(o, "webhooks");
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(doc, "servers"))
    {
        ing_regstore_strip_meta_one(o);
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(doc, "tools"))
    {
        ing_regstore_strip_meta_one(o);
        strip_array(o, "versions");
    }
}

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static int field_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The config document of the tenants st holds (every tenant when tenant is NULL), sorted by
 * field name (so by tenant, server and tool name), metadata removed. */
static cJSON *build_config(ing_regstore_state_t *st, const char *tenant)
{
    int n = cJSON_GetArraySize(st->docs), k = 0;
    const char **fields = calloc((size_t)n + 1, sizeof(*fields));
    cJSON *doc = cJSON_CreateObject();
    cJSON *tenants = cJSON_AddArrayToObject(doc, "tenants");
    cJSON *servers = cJSON_AddArrayToObject(doc, "servers");
    cJSON *tools = cJSON_AddArrayToObject(doc, "tools");
    if (!fields || !tools) {
        free(fields);
        cJSON_Delete(doc);
        return NULL;
    }
    for (const cJSON *d = st->docs->child; d; d = d->next)
        fields[k++] = d->string;
    qsort(fields, (size_t)k, sizeof(*fields), field_cmp);
    for (int i = 0; i < k; i++) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(st->docs, fields[i]);
        const char *owner =
            strncmp(fields[i], "tenant:", 7) == 0 ? str_of(d, "id") : str_of(d, "tenant");
        if (!owner || (tenant && strcmp(owner, tenant) != 0))
            continue;
        cJSON *into;
        if (strncmp(fields[i], "tenant:", 7) == 0)
            into = tenants;
        else if (strncmp(fields[i], "server:", 7) == 0)
            into = servers;
        else
            into = tools;
        cJSON_AddItemToArray(into, cJSON_Duplicate(d, 1));
    }
    free(fields);
    ing_regstore_strip_meta(doc);
    return doc;
}

const char *ing_regstore_robot_owner(ing_regstore_state_t *st, const char *robot,
                                     const char *except)
{
    for (const cJSON *d = st->docs->child; d; d = d->next) {
        const char *id = str_of(d, "id");
        const cJSON *r;
        if (strncmp(d->string, "tenant:", 7) != 0 || !id || (except && strcmp(id, except) == 0))
            continue;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "robots"))
        {
            if (cJSON_IsString(r) && strcmp(r->valuestring, robot) == 0)
                return id;
        }
    }
    return NULL;
}

/* Every robot the document's tenants declare is theirs alone among the stored tenants too
 * (cfg.c has checked the document within itself). 0, or MCPQ_EINVAL with err filled. */
static int check_robots(ing_regstore_state_t *st, const cJSON *config, char *err, size_t err_size)
{
    const cJSON *t, *r;
    int i = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(config, "tenants"))
    {
        int j = 0;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "robots"))
        {
            const char *owner = cJSON_IsString(r)
                                    ? ing_regstore_robot_owner(st, r->valuestring, str_of(t, "id"))
                                    : NULL;
            if (owner) {
                snprintf(err, err_size,
                         "$.tenants[%d].robots[%d]: robot \"%s\" is already declared by tenant "
                         "\"%s\" in the registry; a robot belongs to one tenant",
                         i, j, r->valuestring, owner);
                return MCPQ_EINVAL;
            }
            j++;
        }
        i++;
    }
    return 0;
}

int ing_regstore_issuers_check(ing_regstore_state_t *st, const cJSON *t, const char *path,
                               char *err, size_t err_size)
{
    const char *id = str_of(t, "id");
    for (const cJSON *d = st->docs->child; d; d = d->next) {
        const char *other = str_of(d, "id");
        if (strncmp(d->string, "tenant:", 7) != 0 || !other || (id && strcmp(id, other) == 0))
            continue;
        if (cfg_check_issuers_shared(t, path, d, NULL, err, err_size) < 0)
            return MCPQ_EINVAL;
    }
    return 0;
}

/* Every tenant of the document against the stored ones (staged: the document's own tenants
 * are among them, checked by cfg.c already). 0, or MCPQ_EINVAL with err filled. */
static int check_issuers(ing_regstore_state_t *st, const cJSON *config, char *err, size_t err_size)
{
    const cJSON *t;
    int i = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(config, "tenants"))
    {
        char path[32];
        snprintf(path, sizeof(path), "$.tenants[%d]", i++);
        if (ing_regstore_issuers_check(st, t, path, err, err_size) < 0)
            return MCPQ_EINVAL;
    }
    return 0;
}

int ing_regstore_config_check(const cJSON *cfg, const mcpq_settings_t *set, char *err,
                              size_t err_size)
{
    if (!set->webhook_allow_private && ing_whrules_config_check(cfg, err, err_size) < 0)
        return MCPQ_EINVAL;
    if (cfg_kinds_sizes(cfg, (size_t)set->resource_max_bytes, err, err_size) < 0)
        return MCPQ_EINVAL;
    return cfg_check_app_secrets(cfg, (size_t)set->app_secret_min_bytes, err, err_size);
}

int ing_regstore_check_tenant(ing_regstore_state_t *st, const char *tenant,
                              const mcpq_settings_t *set, char *err, size_t err_size)
{
    cJSON *doc = build_config(st, tenant);
    if (!doc) {
        snprintf(err, err_size, "out of memory");
        return MCPQ_ENOMEM;
    }
    int rc = 0;
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "tenants")) == 0) {
        snprintf(err, err_size, "tenant \"%s\" does not exist", tenant);
        rc = MCPQ_EINVAL;
    } else {
        char *text = cJSON_PrintUnformatted(doc);
        cJSON *ok = text ? cfg_load_string(text, strlen(text), err, err_size) : NULL;
        if (!text)
            snprintf(err, err_size, "out of memory");
        rc = ok ? 0 : text ? MCPQ_EINVAL : MCPQ_ENOMEM;
        if (ok && set && cfg_kinds_sizes(ok, (size_t)set->resource_max_bytes, err, err_size) < 0)
            rc = MCPQ_EINVAL;
        cJSON_Delete(ok);
        cJSON_free(text);
    }
    cJSON_Delete(doc);
    return rc;
}

/* Copies createTime of the stored object's sub-objects (matched by id_key) into the new one's,
 * and stamps new or changed ones with now. */
static void carry_meta_array(const cJSON *old, cJSON *neu, const char *key, const char *id_key,
                             const char *now)
{
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(neu, key))
    {
        const cJSON *o, *match = NULL;
        cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(old, key))
        {
            const char *a = str_of(o, id_key), *b = str_of(e, id_key);
            if (a && b && strcmp(a, b) == 0)
                match = o;
        }
        cJSON *cmp = match ? cJSON_Duplicate(match, 1) : NULL;
        if (cmp)
            ing_regstore_strip_meta_one(cmp);
        if (cmp && cJSON_Compare(cmp, e, 1)) {
            set_string(e, "createTime",
                       str_of(match, "createTime") ? str_of(match, "createTime") : now);
            set_string(e, "updateTime",
                       str_of(match, "updateTime") ? str_of(match, "updateTime") : now);
        } else {
            if (match && str_of(match, "createTime"))
                set_string(e, "createTime", str_of(match, "createTime"));
            ing_regstore_touch(e, now);
        }
        cJSON_Delete(cmp);
    }
}

/* Stages neu (a config-form object, consumed) at field unless it equals the stored one. */
static int apply_one(ing_regstore_state_t *st, const char *field, cJSON *neu,
                     const char *const *arrays, const char *const *ids, const char *now,
                     ing_regstore_summary_t *sum)
{
    const cJSON *old = ing_regstore_get(st, field);
    cJSON *cmp = old ? cJSON_Duplicate(old, 1) : NULL;
    if (cmp) {
        ing_regstore_strip_meta_one(cmp);
        for (size_t i = 0; arrays[i]; i++)
            strip_array(cmp, arrays[i]);
    }
    if (cmp && cJSON_Compare(cmp, neu, 1)) {
        sum->unchanged++;
        cJSON_Delete(cmp);
        cJSON_Delete(neu);
        return 0;
    }
    cJSON_Delete(cmp);
    for (size_t i = 0; arrays[i]; i++)
        carry_meta_array(old, neu, arrays[i], ids[i], now);
    if (old && str_of(old, "createTime"))
        set_string(neu, "createTime", str_of(old, "createTime"));
    ing_regstore_touch(neu, now);
    if (old)
        sum->updated++;
    else
        sum->created++;
    return ing_regstore_put(st, field, neu);
}

static int stage_config(ing_regstore_state_t *st, const cJSON *config, int prune, const char *now,
                        ing_regstore_summary_t *sum)
{
    static const char *const tenant_arrays[] = {"api_keys", "apps", "webhooks", NULL};
    static const char *const tenant_ids[] = {"id", "app_id", "id", NULL};
    static const char *const tool_arrays[] = {"versions", NULL};
    static const char *const tool_ids[] = {"version", NULL};
    static const char *const none[] = {NULL};
    char field[600];
    const cJSON *o;
    int rc = 0;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(config, "tenants"))
    {
        ing_regstore_field_tenant(field, sizeof(field), str_of(o, "id"));
        if ((rc = apply_one(st, field, cJSON_Duplicate(o, 1), tenant_arrays, tenant_ids, now,
                            sum)) < 0)
            return rc;
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(config, "servers"))
    {
        ing_regstore_field_server(field, sizeof(field), str_of(o, "tenant"), str_of(o, "name"));
        if ((rc = apply_one(st, field, cJSON_Duplicate(o, 1), none, none, now, sum)) < 0)
            return rc;
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(config, "tools"))
    {
        ing_regstore_field_tool(field, sizeof(field), str_of(o, "tenant"), str_of(o, "name"));
        if ((rc = apply_one(st, field, cJSON_Duplicate(o, 1), tool_arrays, tool_ids, now, sum)) < 0)
            return rc;
    }
    if (!prune)
        return 0;
    /* Servers and tools of the named tenants that the document does not name. */
    cJSON *named = cJSON_CreateObject();
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(config, "servers"))
    {
        ing_regstore_field_server(field, sizeof(field), str_of(o, "tenant"), str_of(o, "name"));
        cJSON_AddItemToObject(named, field, cJSON_CreateTrue());
    }
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(config, "tools"))
    {
        ing_regstore_field_tool(field, sizeof(field), str_of(o, "tenant"), str_of(o, "name"));
        cJSON_AddItemToObject(named, field, cJSON_CreateTrue());
    }
    cJSON *gone = cJSON_CreateArray();
    for (const cJSON *d = st->docs->child; d; d = d->next) {
        if (strncmp(d->string, "tenant:", 7) == 0 || cJSON_HasObjectItem(named, d->string))
            continue;
        const cJSON *t;
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(config, "tenants"))
        {
            const char *owner = str_of(d, "tenant");
            if (owner && strcmp(owner, str_of(t, "id")) == 0)
                cJSON_AddItemToArray(gone, cJSON_CreateString(d->string));
        }
    }
    cJSON_ArrayForEach(o, gone)
    {
        if ((rc = ing_regstore_put(st, o->valuestring, NULL)) < 0)
            break;
        sum->deleted++;
    }
    cJSON_Delete(gone);
    cJSON_Delete(named);
    return rc;
}

/* ing_regstore_apply, and with mark (not NULL) ing_regstore_seed: the stored mark equal to mark
 * means "already applied" (0, *applied = 0); otherwise mark is written in the same
 * compare-and-set as the documents, so of replicas racing to apply one config exactly one
 * writes and the others find the mark on their retry. */
static int apply_marked(redisContext *c, const cJSON *config, int prune, const char *mark,
                        int *applied, ing_regstore_summary_t *sum, char *err, size_t err_size)
{
    char now[32];
    *applied = 0;
    for (int attempt = 0; attempt < APPLY_TRIES; attempt++) {
        ing_regstore_state_t st;
        memset(sum, 0, sizeof(*sum));
        ing_regstore_now(now, sizeof(now));
        int rc = ing_regstore_load(c, &st, err, err_size);
        const char *cur =
            rc == 0 ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st.raw, SEED_FIELD))
                    : NULL;
        if (mark && cur && strcmp(cur, mark) == 0) {
            sum->rev = st.rev;
            ing_regstore_free(&st);
            return 0;
        }
        if (rc == 0)
            rc = stage_config(&st, config, prune, now, sum);
        if (rc == MCPQ_ENOMEM)
            snprintf(err, err_size, "out of memory");
        if (rc == 0)
            rc = check_robots(&st, config, err, err_size);
        if (rc == 0 && mark) {
            cJSON *doc = cJSON_Parse(mark);
            rc = doc ? ing_regstore_put(&st, SEED_FIELD, doc) : MCPQ_ENOMEM;
        }
        if (rc == 0)
            rc = check_issuers(&st, config, err, err_size);
        if (rc == 0)
            rc = ing_regstore_commit(c, &st, &sum->rev, err, err_size);
        ing_regstore_free(&st);
        if (rc == 0)
            *applied = 1;
        if (rc != RS_CONFLICT)
            return rc;
    }
    snprintf(err, err_size, "the registry kept changing under %d attempts; try again", APPLY_TRIES);
    return MCPQ_EUNAVAIL;
}

int ing_regstore_apply(redisContext *c, const cJSON *config, int prune, ing_regstore_summary_t *sum,
                       char *err, size_t err_size)
{
    int applied;
    return apply_marked(c, config, prune, NULL, &applied, sum, err, err_size);
}

int ing_regstore_seed(redisContext *c, const cJSON *config, int prune, int *applied,
                      ing_regstore_summary_t *sum, char *err, size_t err_size)
{
    char *text = cJSON_PrintUnformatted(config), hex[65], mark[100];
    *applied = 0;
    memset(sum, 0, sizeof(*sum));
    if (!text) {
        snprintf(err, err_size, "out of memory");
        return MCPQ_ENOMEM;
    }
    util_sha256_hex(text, strlen(text), hex);
    cJSON_free(text);
    snprintf(mark, sizeof(mark), "{\"sha256\":\"%s\"}", hex);
    return apply_marked(c, config, prune, mark, applied, sum, err, err_size);
}

cJSON *ing_regstore_export(redisContext *c, char *err, size_t err_size)
{
    ing_regstore_state_t st;
    if (ing_regstore_load(c, &st, err, err_size) < 0) {
        ing_regstore_free(&st);
        return NULL;
    }
    cJSON *doc = build_config(&st, NULL);
    ing_regstore_free(&st);
    if (!doc)
        snprintf(err, err_size, "out of memory");
    return doc;
}
