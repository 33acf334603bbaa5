/*
 * access.c - per-tool authorization (access.h).
 */
#include "access.h"

#include "util.h"

#include <stdio.h>
#include <string.h>

/* 1 when the string s is in the array a. */
static int in_array(const cJSON *a, const char *s)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        if (s && cJSON_IsString(e) && strcmp(e->valuestring, s) == 0)
            return 1;
    }
    return 0;
}

/* 1 when rule names nobody (no keys, apps or users) or names who. */
static int named(const ing_principal_t *who, const cJSON *rule)
{
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(rule, "keys");
    const cJSON *apps = cJSON_GetObjectItemCaseSensitive(rule, "apps");
    const cJSON *users = cJSON_GetObjectItemCaseSensitive(rule, "users");
    if (!keys && !apps && !users)
        return 1;
    if (!who)
        return 0;
    switch (who->kind) {
    case 'k':
        return in_array(keys, who->id);
    case 'a':
        return in_array(apps, who->id);
    case 'o':
        return in_array(apps, who->app) || in_array(users, who->user);
    default:
        return 0;
    }
}

/* Appends word (len bytes) to out unless it is there already; a word that does not fit is
 * left out whole (util.h). */
static void add_word(char *out, size_t n, const char *word, size_t len)
{
    (void)util_word_add(out, n, word, len);
}

/* Adds to out the token scopes that grant perm: the keys of the tenant's oauth.scopes map
 * whose list holds it; perm itself without a map. */
static void add_granting(const ing_principal_t *who, const char *perm, char *out, size_t n)
{
    const cJSON *map = who->tenant && who->tenant->oauth ? who->tenant->oauth->scopes : NULL;
    if (!map) {
        add_word(out, n, perm, strlen(perm));
        return;
    }
    for (const cJSON *m = map->child; m; m = m->next)
        if (m->string && in_array(m, perm))
            add_word(out, n, m->string, strlen(m->string));
}

int ing_access_rules(const ing_principal_t *who, const cJSON *server_rule, const cJSON *tool_rule,
                     char *scope_out, size_t n)
{
    const cJSON *rules[2] = {server_rule, tool_rule};
    int missing = 0;
    if (scope_out && n)
        scope_out[0] = '\0';
    for (int i = 0; i < 2; i++)
        if (rules[i] && !named(who, rules[i]))
            return ING_ACCESS_HIDDEN;
    for (int i = 0; i < 2; i++) {
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(rules[i], "scopes"))
        {
            if (!cJSON_IsString(p) ||
                (who && util_word_in(who->perms, p->valuestring, strlen(p->valuestring))))
                continue;
            if (!who || who->kind != 'o')
                return ING_ACCESS_HIDDEN;
            if (!missing++ && scope_out && n) { /* the token's scopes first */
                const char *s = who->token_scopes ? who->token_scopes : "";
                while (*s) {
                    while (*s == ' ')
                        s++;
                    size_t l = strcspn(s, " ");
                    add_word(scope_out, n, s, l);
                    s += l;
                }
            }
            if (scope_out && n)
                add_granting(who, p->valuestring, scope_out, n);
        }
    }
    return missing ? ING_ACCESS_SCOPE : ING_ACCESS_OK;
}

/* The "access" rule of the tool document of tenant named name, when the snapshot has one
 * (a tool it does not serve: no published version). */
static const cJSON *doc_rule(const ing_registry_t *reg, const char *tenant, const char *name)
{
    const cJSON *d;
    cJSON_ArrayForEach(d, ing_registry_docs(reg))
    {
        const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "_field"));
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "tenant"));
        const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
        if (f && strncmp(f, "tool:", 5) == 0 && t && nm && strcmp(t, tenant) == 0 &&
            strcmp(nm, name) == 0)
            return cJSON_GetObjectItemCaseSensitive(d, "access");
    }
    return NULL;
}

int ing_access_check(const ing_registry_t *reg, const ing_principal_t *who, const char *server,
                     const char *tool, char *scope_out, size_t n)
{
    const char *tenant = who && who->tenant ? who->tenant->id : NULL;
    if (scope_out && n)
        scope_out[0] = '\0';
    if (!tenant) /* no caller: fail closed */
        return ING_ACCESS_HIDDEN;
    const ing_server_t *srv =
        reg && tenant && server ? ing_registry_server(reg, tenant, server) : NULL;
    const ing_tool_t *t = srv && tool ? ing_registry_object(srv, -1, tool) : NULL;
    const cJSON *tool_rule = t                       ? t->access
                             : reg && tenant && tool ? doc_rule(reg, tenant, tool)
                                                     : NULL;
    return ing_access_rules(who, srv ? srv->access : NULL, tool_rule, scope_out, n);
}
